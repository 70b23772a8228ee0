// cusim's driver API outside virtual memory: error names and strings, the one virtual device and
// the runtime's primary context of it, which is current on every thread.
#include <cstdio>
#include <cstring>
#include <string>

#include "internal.h"  // before any cusim header: it turns off the call-site macros
#include "cuda.h"
#include "driver_internal.h"

namespace cusim::detail {

CUresult driver_error(CUresult err, const char* api, const std::string& detail) {
    if (!quiet()) {
        const char* name = nullptr;
        const char* text = nullptr;
        cuGetErrorName(err, &name);
        cuGetErrorString(err, &text);
        std::fprintf(stderr, "cusim: %s: %s -> %s (%s)\n", api, detail.c_str(), name ? name : "?", text ? text : "?");
        std::fflush(stderr);
    }
    return err;
}

CUresult driver_prologue() {
    // A device fault poisons the context for both APIs; the codes of those faults are equal.
    return static_cast<CUresult>(sticky_error());
}

}  // namespace cusim::detail

using namespace cusim::detail;

CUresult cuGetErrorName(CUresult error, const char** pStr) {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define CUSIM_CU_RESULT_NAME(name, value) \
    case name: *pStr = #name; return CUDA_SUCCESS;
        CUSIM_CU_RESULTS(CUSIM_CU_RESULT_NAME)
#undef CUSIM_CU_RESULT_NAME
    }
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    const char* name = nullptr;
    if (cuGetErrorName(error, &name) != CUDA_SUCCESS) {
        *pStr = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    // The driver's own wording where it differs from the runtime's or the runtime has no such code.
    switch (error) {
        case CUDA_ERROR_INVALID_CONTEXT: *pStr = "invalid device context"; return CUDA_SUCCESS;
        case CUDA_ERROR_INVALID_HANDLE: *pStr = "invalid resource handle"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_FOUND: *pStr = "named symbol not found"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_MAPPED: *pStr = "resource not mapped"; return CUDA_SUCCESS;
        case CUDA_ERROR_ALREADY_MAPPED: *pStr = "resource already mapped"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_SUPPORTED: *pStr = "operation not supported"; return CUDA_SUCCESS;
        case CUDA_ERROR_NOT_PERMITTED: *pStr = "operation not permitted"; return CUDA_SUCCESS;
        case CUDA_ERROR_UNKNOWN: *pStr = "unknown error"; return CUDA_SUCCESS;
        default: break;
    }
    // The codes the two APIs share have the same values and texts.
    const cudaError_t same = static_cast<cudaError_t>(error);
    if (std::strcmp(cudaGetErrorName(same), "cudaErrorUnknown") != 0) {
        *pStr = cudaGetErrorString(same);
        return CUDA_SUCCESS;
    }
    *pStr = name;  // a code cusim never returns: its name says what it is
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int Flags) {
    if (Flags != 0) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuInit", "Flags must be 0");
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
    if (!driverVersion) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion", "driverVersion is NULL");
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
    if (!count) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount", "count is NULL");
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
    if (!device) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet", "device is NULL");
    if (ordinal != 0)
        return driver_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet",
                            "device " + std::to_string(ordinal) + " does not exist (cusim has one device, 0)");
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
    if (!name || len <= 0) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName", "name is NULL or len <= 0");
    if (dev != 0) return driver_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetName", "no such device");
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    std::snprintf(name, static_cast<size_t>(len), "%s", p.name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    if (!bytes) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceTotalMem", "bytes is NULL");
    if (dev != 0) return driver_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceTotalMem", "no such device");
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    *bytes = p.totalGlobalMem;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    if (!pi) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute", "pi is NULL");
    if (dev != 0) return driver_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetAttribute", "no such device");
    switch (attrib) {
        // What the driver API alone answers. cusim has the virtual memory management API and
        // compressible allocations (sm_90 devices support both); it cannot export allocations
        // to other processes, has no stream memory operations, tensor maps, multicast objects,
        // RDMA or host-side virtual memory, so it says so rather than what an H100 reports.
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: *pi = 1; return CUDA_SUCCESS;
        case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER:
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
        case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1:
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS:
        case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK:
        case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH:
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED: *pi = 0; return CUDA_SUCCESS;
        default: break;
    }
    // The rest are the runtime's attributes, with the same values.
    if (!device_attribute(static_cast<cudaDeviceAttr>(attrib), pi))
        return driver_error(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute",
                            "attribute " + std::to_string(static_cast<int>(attrib)) +
                                " is not a device attribute of CUDA 13 (a reserved or unknown value)");
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
    if (CUresult e = driver_prologue()) return e;
    if (!device) return driver_error(CUDA_ERROR_INVALID_VALUE, "cuCtxGetDevice", "device is NULL");
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    if (CUresult e = driver_prologue()) return e;
    return CUDA_SUCCESS;  // work completes before the call that issued it returns
}
