// The driver API's virtual memory management on the CPU, modelled as the host's own: a
// reservation (cuMemAddressReserve) is address space mapped PROT_NONE; a physical allocation
// (cuMemCreate) is a memfd of a multiple of the granularity; cuMemMap maps the memfd over part of a
// reservation, still PROT_NONE, as a GPU's new mappings have no access; cuMemSetAccess opens it
// (mprotect) and registers it with the runtime as device memory, so kernels, copies, memsets and
// the analysis tools treat it as cudaMalloc's. Before that, or after cuMemUnmap, a kernel's access
// faults (cudaErrorIllegalAddress, or memcheck's report naming the range) and copies are refused.
//
// A physical allocation lives while a handle reference (cuMemCreate's, each
// cuMemRetainAllocationHandle's, until cuMemRelease) or a mapping holds it. Freed reservations
// stay reserved and inaccessible, as freed cudaMalloc ranges do, so a stale pointer into one is
// always reported as such and never becomes host memory; cuMemAddressReserve reuses them when its
// address hint asks for them.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "internal.h"  // before any cusim header: it turns off the call-site macros
#include "cuda.h"
#include "driver_internal.h"

namespace cusim::detail {
namespace {

// An H100's minimum and recommended granularity, compressible or not.
constexpr size_t kGranularity = size_t(2) << 20;
// Far more than a GPU's 80 GiB, far less than the host's address space.
constexpr size_t kMaxReservation = size_t(1) << 44;

const char* const kReservedLabel =
    "a virtual address range reserved by cuMemAddressReserve where no memory is mapped with access granted "
    "(cuMemMap, then cuMemSetAccess)";
const char* const kFreedLabel = "a virtual address range already released by cuMemAddressFree";

struct Physical {
    int fd = -1;
    size_t size = 0;
    CUmemAllocationProp prop{};
    unsigned handle_refs = 1;  // cuMemCreate's, plus each cuMemRetainAllocationHandle, less each cuMemRelease
    unsigned mappings = 0;
};

struct Mapping {
    size_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
    unsigned long long access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
};

// A contiguous stretch of mappings with the same access, registered with the runtime as one
// piece of device memory (a copy across two mappings is one copy).
struct Run {
    uintptr_t start;
    size_t size;
    bool read_only;
    bool operator==(const Run& o) const { return start == o.start && size == o.size && read_only == o.read_only; }
};

using MappingIt = std::map<uintptr_t, Mapping>::iterator;

struct Reservation {
    size_t size = 0;
    std::map<uintptr_t, Mapping> mappings;  // by start
    std::vector<Run> runs;                  // registered with the runtime now
};

struct Vmm {
    std::mutex mu;
    std::map<uintptr_t, Reservation> reservations;  // by start
    std::map<CUmemGenericAllocationHandle, Physical> physical;
    CUmemGenericAllocationHandle next_handle = 0x100001;  // never reused: a stale handle stays unknown
    std::map<uintptr_t, size_t> retired;                  // released reservations, still PROT_NONE
};

Vmm& vmm() {
    static Vmm* v = new Vmm;  // never destroyed, as the runtime's state
    return *v;
}

size_t host_page() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

std::string hex(uintptr_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

void* at(uintptr_t a) { return reinterpret_cast<void*>(a); }

// Address space nothing can touch, pages never committed.
bool make_inaccessible(uintptr_t start, size_t size) {
    return mmap(at(start), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) !=
           MAP_FAILED;
}

int protection(unsigned long long access) {
    if (access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return PROT_READ | PROT_WRITE;
    if (access == CU_MEM_ACCESS_FLAGS_PROT_READ) return PROT_READ;
    return PROT_NONE;
}

// The reservation holding all of [p, p + n), or nullptr.
Reservation* reservation_of(Vmm& v, uintptr_t p, size_t n, uintptr_t* start = nullptr) {
    auto it = v.reservations.upper_bound(p);
    if (it == v.reservations.begin()) return nullptr;
    --it;
    if (p + n < p || p + n > it->first + it->second.size) return nullptr;
    if (start) *start = it->first;
    return &it->second;
}

// The mappings that tile [p, p + n) exactly (whole mappings, no gap), in address order; empty if
// they do not.
std::vector<MappingIt> whole_mappings(Reservation* r, uintptr_t p, size_t n) {
    std::vector<MappingIt> out;
    if (!r || n == 0) return out;
    Reservation& rr = *r;
    auto it = rr.mappings.find(p);
    uintptr_t next = p;
    while (it != rr.mappings.end() && it->first == next && next < p + n) {
        out.push_back(it);
        next += it->second.size;
        ++it;
    }
    if (next != p + n) out.clear();
    return out;
}

// Registers the runs of accessible mappings with the runtime anew, after their access or
// mappings changed (runs that stay the same stay registered).
void refresh_runs(Reservation& r) {
    std::vector<Run> runs;
    for (const auto& [start, m] : r.mappings) {
        if (m.access == CU_MEM_ACCESS_FLAGS_PROT_NONE) continue;
        const bool read_only = m.access != CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if (!runs.empty() && runs.back().start + runs.back().size == start && runs.back().read_only == read_only)
            runs.back().size += m.size;
        else
            runs.push_back(Run{start, m.size, read_only});
    }
    for (const Run& old : r.runs)
        if (std::find(runs.begin(), runs.end(), old) == runs.end()) unregister_mapped_range(at(old.start));
    for (const Run& run : runs)
        if (std::find(r.runs.begin(), r.runs.end(), run) == r.runs.end())
            register_mapped_range(at(run.start), run.size, run.read_only);
    r.runs = std::move(runs);
}

// Frees the physical memory once no handle reference and no mapping holds it.
void release_if_unused(Vmm& v, CUmemGenericAllocationHandle handle) {
    auto it = v.physical.find(handle);
    if (it == v.physical.end() || it->second.handle_refs || it->second.mappings) return;
    close(it->second.fd);
    credit_device_memory(it->second.size);
    v.physical.erase(it);
}

// Sets one mapping's access: the page protection, and for the analysis tools a mapping that
// becomes accessible is a new allocation (its bytes uninitialized to initcheck).
void set_access(uintptr_t start, Mapping& m, unsigned long long access) {
    if (m.access == access) return;
    mprotect(at(start), m.size, protection(access));
    if (analysis_hooks::instrumented) {
        if (m.access == CU_MEM_ACCESS_FLAGS_PROT_NONE) analysis_hooks::on_alloc(at(start), m.size);
        else if (access == CU_MEM_ACCESS_FLAGS_PROT_NONE) analysis_hooks::on_unmap(at(start));
    }
    m.access = access;
}

// Unmaps one mapping: its pages go back to inaccessible address space of the reservation.
void unmap_one(Vmm& v, uintptr_t start, Mapping& m) {
    set_access(start, m, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    make_inaccessible(start, m.size);
    auto p = v.physical.find(m.handle);
    if (p != v.physical.end()) --p->second.mappings;
    release_if_unused(v, m.handle);
}

// Releases a whole reservation (cuMemAddressFree, cudaDeviceReset): its mappings end, and its
// addresses stay reserved and inaccessible, labelled as released.
void retire(Vmm& v, uintptr_t start, Reservation& r) {
    for (auto& [s, m] : r.mappings) unmap_one(v, s, m);
    r.mappings.clear();
    refresh_runs(r);
    v.retired[start] = r.size;
    label_address_range(at(start), r.size, kFreedLabel);
}

// Takes [addr, addr + size) out of the released reservations when it lies within one of them.
bool reuse_retired(Vmm& v, uintptr_t addr, size_t size) {
    auto it = v.retired.upper_bound(addr);
    if (it == v.retired.begin()) return false;
    --it;
    const uintptr_t lo = it->first, hi = it->first + it->second;
    if (addr + size > hi) return false;
    v.retired.erase(it);
    label_address_range(at(lo), 0, nullptr);
    if (addr > lo) {
        v.retired[lo] = addr - lo;
        label_address_range(at(lo), addr - lo, kFreedLabel);
    }
    if (addr + size < hi) {
        v.retired[addr + size] = hi - addr - size;
        label_address_range(at(addr + size), hi - addr - size, kFreedLabel);
    }
    return true;
}

// New inaccessible address space of `size` bytes aligned to `align`, at `hint` when it is free.
uintptr_t reserve_address_space(Vmm& v, uintptr_t hint, size_t size, size_t align) {
    if (hint && hint % align == 0) {
        if (reuse_retired(v, hint, size)) return hint;
        void* m = mmap(at(hint), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (m == at(hint)) return hint;
        if (m != MAP_FAILED) munmap(m, size);  // a kernel without MAP_FIXED_NOREPLACE placed it elsewhere
    }
    void* m = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return 0;
    const uintptr_t raw = reinterpret_cast<uintptr_t>(m);
    const uintptr_t start = (raw + align - 1) / align * align;
    if (start > raw) munmap(m, start - raw);
    if (raw + size + align > start + size) munmap(at(start + size), raw + size + align - start - size);
    return start;
}

// The checks of an allocation's properties that cuMemCreate and cuMemGetAllocationGranularity
// share: CUDA_SUCCESS, or the error (reported under `api`).
CUresult check_location(const CUmemAllocationProp* prop, const char* api) {
    if (!prop) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "prop is NULL");
    if (prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return driver_error(CUDA_ERROR_NOT_SUPPORTED, api,
                            "cusim models CU_MEM_ALLOCATION_TYPE_PINNED allocations only (use cudaMallocManaged for "
                            "managed memory)");
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "prop->type must be CU_MEM_ALLOCATION_TYPE_PINNED");
    switch (prop->location.type) {
        case CU_MEM_LOCATION_TYPE_DEVICE:
            if (prop->location.id != 0)
                return driver_error(CUDA_ERROR_INVALID_DEVICE, api,
                                    "prop->location.id " + std::to_string(prop->location.id) +
                                        " is no device (cusim has one device, 0)");
            return CUDA_SUCCESS;
        case CU_MEM_LOCATION_TYPE_HOST:
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            return driver_error(CUDA_ERROR_NOT_SUPPORTED, api,
                                "cusim models device allocations only (prop->location.type "
                                "CU_MEM_LOCATION_TYPE_DEVICE); use cudaMallocHost for host memory");
        default:
            return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                                "prop->location.type must be a device or a host location (not " +
                                    std::to_string(static_cast<int>(prop->location.type)) + ")");
    }
}

}  // namespace

void reset_virtual_memory() {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    for (auto& [start, r] : v.reservations) retire(v, start, r);
    v.reservations.clear();
    for (auto& [handle, p] : v.physical) {
        close(p.fd);
        credit_device_memory(p.size);
    }
    v.physical.clear();
}

}  // namespace cusim::detail

using namespace cusim::detail;

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
    const char* api = "cuMemGetAllocationGranularity";
    if (CUresult e = driver_prologue()) return e;
    if (!granularity) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "granularity is NULL");
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "option must be CU_MEM_ALLOC_GRANULARITY_MINIMUM or CU_MEM_ALLOC_GRANULARITY_RECOMMENDED");
    if (CUresult e = check_location(prop, api)) return e;
    *granularity = kGranularity;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
    const char* api = "cuMemAddressReserve";
    if (CUresult e = driver_prologue()) return e;
    if (!ptr) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "ptr is NULL");
    if (size == 0 || size % host_page())
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "size " + std::to_string(size) + " is not a non-zero multiple of the host page size (" +
                                std::to_string(host_page()) + ")");
    if (alignment & (alignment - 1))
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "alignment must be 0 or a power of two");
    if (addr % host_page())
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "addr " + hex(addr) + " is not a multiple of the host page size");
    if (flags != 0) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "flags must be 0");
    // Aligned to the granularity at least, so that memory can be mapped at its start.
    const size_t align = std::max(alignment, kGranularity);
    if (size > kMaxReservation || align > kMaxReservation)
        return driver_error(CUDA_ERROR_OUT_OF_MEMORY, api, std::to_string(size) + " bytes of address space requested");
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    const uintptr_t start = reserve_address_space(v, addr, size, align);
    if (!start) return driver_error(CUDA_ERROR_OUT_OF_MEMORY, api, "the host has no address space for " + std::to_string(size) + " bytes");
    v.reservations[start].size = size;
    label_address_range(at(start), size, kReservedLabel);
    *ptr = start;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    const char* api = "cuMemAddressFree";
    if (CUresult e = driver_prologue()) return e;
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    auto it = v.reservations.find(ptr);
    if (it == v.reservations.end())
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            hex(ptr) + " is not the start of a range reserved by cuMemAddressReserve");
    if (size != it->second.size)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "size " + std::to_string(size) + " is not the reserved size " + std::to_string(it->second.size));
    retire(v, it->first, it->second);
    v.reservations.erase(it);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
    const char* api = "cuMemCreate";
    if (CUresult e = driver_prologue()) return e;
    if (!handle) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "handle is NULL");
    if (CUresult e = check_location(prop, api)) return e;
    if (flags != 0) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "flags must be 0");
    if (size == 0 || size % kGranularity)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "size " + std::to_string(size) + " is not a non-zero multiple of the granularity (" +
                                std::to_string(kGranularity) + " bytes, cuMemGetAllocationGranularity)");
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return driver_error(CUDA_ERROR_NOT_SUPPORTED, api,
                            "cusim cannot export allocations to other processes: prop->requestedHandleTypes must be "
                            "CU_MEM_HANDLE_TYPE_NONE");
    if (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
        prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "prop->allocFlags.compressionType must be CU_MEM_ALLOCATION_COMP_NONE or "
                            "CU_MEM_ALLOCATION_COMP_GENERIC");
    if (prop->allocFlags.gpuDirectRDMACapable)
        return driver_error(CUDA_ERROR_NOT_SUPPORTED, api,
                            "the device does not support GPUDirect RDMA with virtual memory "
                            "(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED is 0)");
    if (prop->allocFlags.usage & ~CU_MEM_CREATE_USAGE_TILE_POOL)
        return driver_error(CUDA_ERROR_NOT_SUPPORTED, api,
                            "prop->allocFlags.usage asks for what the device does not support");
    if (!charge_device_memory(size))
        return driver_error(CUDA_ERROR_OUT_OF_MEMORY, api,
                            std::to_string(size) + " bytes requested, more than the virtual device has free");
    const int fd = memfd_create("cusim cuMemCreate", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (fd >= 0) close(fd);
        credit_device_memory(size);
        return driver_error(CUDA_ERROR_OUT_OF_MEMORY, api, "the host has no memory for " + std::to_string(size) + " bytes");
    }
    // New device memory holds what it held before, not zeros: all-ones bytes here, as cudaMalloc's.
    if (size <= kDeviceFillLimit) {
        void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            std::memset(m, 0xFF, size);
            munmap(m, size);
        }
    }
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    const CUmemGenericAllocationHandle h = v.next_handle++;
    Physical& p = v.physical[h];
    p.fd = fd;
    p.size = size;
    p.prop = *prop;  // compression is granted as asked: the device supports it, and it changes no value
    *handle = h;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    const char* api = "cuMemRelease";
    if (CUresult e = driver_prologue()) return e;
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    auto it = v.physical.find(handle);
    if (it == v.physical.end() || it->second.handle_refs == 0)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "handle " + hex(handle) + " is not a live handle from cuMemCreate (released already?)");
    --it->second.handle_refs;
    release_if_unused(v, handle);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
    const char* api = "cuMemGetAllocationPropertiesFromHandle";
    if (CUresult e = driver_prologue()) return e;
    if (!prop) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "prop is NULL");
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    auto it = v.physical.find(handle);
    if (it == v.physical.end() || it->second.handle_refs == 0)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "handle " + hex(handle) + " is not a live handle from cuMemCreate");
    *prop = it->second.prop;
    return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
    const char* api = "cuMemRetainAllocationHandle";
    if (CUresult e = driver_prologue()) return e;
    if (!handle) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "handle is NULL");
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (Reservation* r = reservation_of(v, a, 1)) {
        auto it = r->mappings.upper_bound(a);
        if (it != r->mappings.begin() && a < std::prev(it)->first + std::prev(it)->second.size) {
            const CUmemGenericAllocationHandle h = std::prev(it)->second.handle;
            ++v.physical.at(h).handle_refs;
            *handle = h;
            return CUDA_SUCCESS;
        }
    }
    return driver_error(CUDA_ERROR_INVALID_VALUE, api, hex(a) + " is not in memory mapped by cuMemMap");
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
    const char* api = "cuMemMap";
    if (CUresult e = driver_prologue()) return e;
    if (flags != 0) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "flags must be 0");
    if (offset != 0) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "offset must be 0");
    if (size == 0 || size % kGranularity || ptr % kGranularity)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "ptr " + hex(ptr) + " and size " + std::to_string(size) +
                                " must be non-zero multiples of the granularity (" + std::to_string(kGranularity) +
                                " bytes, cuMemGetAllocationGranularity)");
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    auto p = v.physical.find(handle);
    if (p == v.physical.end() || p->second.handle_refs == 0)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "handle " + hex(handle) + " is not a live handle from cuMemCreate");
    if (size > p->second.size)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "offset + size (" + std::to_string(size) + ") runs past the allocation's " +
                                std::to_string(p->second.size) + " bytes");
    Reservation* r = reservation_of(v, ptr, size);
    if (!r)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "[" + hex(ptr) + ", +" + std::to_string(size) +
                                ") is not inside one range reserved by cuMemAddressReserve");
    auto next = r->mappings.lower_bound(ptr);
    const bool overlaps_next = next != r->mappings.end() && next->first < ptr + size;
    const bool overlaps_prev =
        next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr;
    if (overlaps_next || overlaps_prev)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "[" + hex(ptr) + ", +" + std::to_string(size) +
                                ") overlaps memory mapped already (cuMemUnmap it first)");
    if (mmap(at(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->second.fd, 0) == MAP_FAILED)
        return driver_error(CUDA_ERROR_OUT_OF_MEMORY, api, "the host could not map " + std::to_string(size) + " bytes");
    ++p->second.mappings;
    Mapping& m = r->mappings[ptr];
    m.size = size;
    m.handle = handle;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    const char* api = "cuMemUnmap";
    if (CUresult e = driver_prologue()) return e;
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    Reservation* r = reservation_of(v, ptr, size);
    const std::vector<MappingIt> whole = whole_mappings(r, ptr, size);
    if (whole.empty())
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "[" + hex(ptr) + ", +" + std::to_string(size) +
                                ") is not a range of whole mappings made by cuMemMap (a part of one cannot be unmapped)");
    for (auto it : whole) {
        unmap_one(v, it->first, it->second);
        r->mappings.erase(it);
    }
    refresh_runs(*r);
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
    const char* api = "cuMemSetAccess";
    if (CUresult e = driver_prologue()) return e;
    if (!desc || count == 0) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "desc is NULL or count is 0");
    unsigned long long access = 0;
    for (size_t i = 0; i < count; ++i) {
        const CUmemAccessDesc& d = desc[i];
        if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                                "desc[" + std::to_string(i) +
                                    "].location.type must be CU_MEM_LOCATION_TYPE_DEVICE for device memory");
        if (d.location.id != 0)
            return driver_error(CUDA_ERROR_INVALID_DEVICE, api,
                                "desc[" + std::to_string(i) + "].location.id " + std::to_string(d.location.id) +
                                    " is no device (cusim has one device, 0)");
        if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                                "desc[" + std::to_string(i) + "].flags must be a CU_MEM_ACCESS_FLAGS_PROT_ value");
        access = d.flags;  // the last one for the device counts
    }
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    Reservation* r = reservation_of(v, ptr, size);
    const std::vector<MappingIt> whole = whole_mappings(r, ptr, size);
    if (whole.empty())
        return driver_error(CUDA_ERROR_INVALID_VALUE, api,
                            "[" + hex(ptr) + ", +" + std::to_string(size) +
                                ") is not fully mapped by cuMemMap (cusim grants access to whole mappings)");
    for (auto it : whole) set_access(it->first, it->second, access);
    refresh_runs(*r);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
    const char* api = "cuMemGetAccess";
    if (CUresult e = driver_prologue()) return e;
    if (!flags || !location) return driver_error(CUDA_ERROR_INVALID_VALUE, api, "flags or location is NULL");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return driver_error(CUDA_ERROR_INVALID_VALUE, api, "location->type must be CU_MEM_LOCATION_TYPE_DEVICE");
    if (location->id != 0) return driver_error(CUDA_ERROR_INVALID_DEVICE, api, "location->id is no device");
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lk(v.mu);
    if (Reservation* r = reservation_of(v, ptr, 1)) {
        auto it = r->mappings.upper_bound(ptr);
        if (it != r->mappings.begin() && ptr < std::prev(it)->first + std::prev(it)->second.size) {
            *flags = std::prev(it)->second.access;
            return CUDA_SUCCESS;
        }
    }
    return driver_error(CUDA_ERROR_INVALID_VALUE, api, hex(ptr) + " is not in memory mapped by cuMemMap");
}
