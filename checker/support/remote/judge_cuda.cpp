// The CUDA runtime of a judge (the checks' process, which holds none of the lab's code): every
// CUDA runtime function the checks and common/wb call (and cusim's analysis and checker APIs on
// sim), implemented as requests to the process that runs the lab's code. This file replaces the
// CUDA runtime (cusim) in a check binary, which therefore never runs a kernel itself. The
// requests travel over the judge's transport, wb::remote::judge_request(): judge.cpp (a worker
// process of the check binary's own) or comm_judge.cpp (the worker of this MPI rank).
#define CUSIM_NO_SITE_MACROS 1
#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>

#if defined(CUSIM)
#include "wb_remote_analysis.h"
#endif
#include "wb_remote.h"

namespace wb::remote {
namespace {

/// The largest reply the judge accepts, but for copies to the host (their size is known).
constexpr std::uint64_t kMaxReply = std::uint64_t(64) << 20;

Reader request(Op op, const Writer& w, const char* what, std::uint64_t max_reply = kMaxReply) {
  return judge_request(op, w, what, max_reply);
}

// Releases are posted (judge_post: no round trip; an error shows at the next request). After
// the worker is gone (a DeviceBuffer's destructor after a failed check) they do nothing,
// quietly: a destructor must not throw, and the failure was already reported.
cudaError_t release(Op op, const Writer& w, const char* what) {
  try {
    judge_post(op, w, what);
    return cudaSuccess;
  } catch (const WorkerError&) {
    return cudaErrorUnknown;
  }
}

Writer args() { return Writer(); }

cudaError_t status_only(Op op, const Writer& w, const char* what) { return request(op, w, what).get<cudaError_t>(); }

// Device allocations as the worker (or the checker's own process) reported them: cudaMemcpyDefault
// needs to tell device pointers from host pointers, and cudaFree the process that made one.
struct Allocation {
  std::uint64_t bytes = 0;
  bool in_checkers_process = false;  // made in a scope of wb::check::InCheckersProcess
};

std::map<std::uint64_t, Allocation>& device_ranges() {
  static std::map<std::uint64_t, Allocation> ranges;
  return ranges;
}

bool is_device(const void* p) {
  const auto v = to_wire(p);
  auto it = device_ranges().upper_bound(v);
  if (it == device_ranges().begin()) return false;
  --it;
  return v >= it->first && v < it->first + it->second.bytes;
}

const char* cached_text(Op op, cudaError_t code) {
  static std::map<std::pair<int, int>, std::string> cache;
  const auto key = std::make_pair(static_cast<int>(op), static_cast<int>(code));
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::string text;
    try {
      Writer w;
      w.put(code);
      text = request(op, w, "cudaGetErrorString").get_string();
    } catch (const std::exception&) {
      text = "cuda error " + std::to_string(static_cast<int>(code));
    }
    it = cache.emplace(key, text).first;
  }
  return it->second.c_str();
}

// How many scopes of wb::check::InCheckersProcess this thread is in (wb_baseline.h): a
// single-process lab's judge (judge.cpp) sends their requests to the checker's own process. Here,
// because judge_cuda.cpp is in every judge (the collective labs' judges enter no scope).
thread_local int g_checkers_scopes = 0;

}  // namespace

bool in_checkers_process() { return g_checkers_scopes > 0; }
void enter_checkers_process() { ++g_checkers_scopes; }
void leave_checkers_process() {
  if (g_checkers_scopes > 0) --g_checkers_scopes;
}

}  // namespace wb::remote

using namespace wb::remote;

#if defined(CUSIM)
namespace cusim::detail {
void set_api_site(const char*, int) noexcept {}
}  // namespace cusim::detail
#endif

const char* cudaGetErrorString(cudaError_t error) { return cached_text(Op::ErrorString, error); }
const char* cudaGetErrorName(cudaError_t error) { return cached_text(Op::ErrorName, error); }
cudaError_t cudaGetLastError() { return status_only(Op::GetLastError, args(), "cudaGetLastError"); }
cudaError_t cudaPeekAtLastError() { return status_only(Op::PeekAtLastError, args(), "cudaPeekAtLastError"); }
cudaError_t cudaDeviceSynchronize() { return status_only(Op::Synchronize, args(), "cudaDeviceSynchronize"); }

cudaError_t cudaGetDevice(int* device) {
  Reader r = request(Op::GetDevice, args(), "cudaGetDevice");
  const auto e = r.get<cudaError_t>();
  *device = r.get<int>();
  return e;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  Writer w;
  w.put(attr).put(device);
  Reader r = request(Op::DeviceGetAttribute, w, "cudaDeviceGetAttribute");
  const auto e = r.get<cudaError_t>();
  *value = r.get<int>();
  return e;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  Writer w;
  w.put(device);
  Reader r = request(Op::GetDeviceProperties, w, "cudaGetDeviceProperties");
  const auto e = r.get<cudaError_t>();
  *prop = r.get<cudaDeviceProp>();
  return e;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  Writer w;
  w.put<std::uint64_t>(size);
  Reader r = request(Op::Malloc, w, "cudaMalloc");
  const auto e = r.get<cudaError_t>();
  const auto p = r.get<std::uint64_t>();
  *ptr = from_wire<void*>(p);
  if (e == cudaSuccess && p != 0) device_ranges()[p] = {size, in_checkers_process()};
  return e;
}

cudaError_t cudaFree(void* ptr) {
  Writer w;
  w.put<std::uint64_t>(to_wire(ptr));
  // Freed where it was made, in a scope of wb::check::InCheckersProcess or not.
  bool owner_is_checkers = in_checkers_process();
  if (auto it = device_ranges().find(to_wire(ptr)); it != device_ranges().end()) {
    owner_is_checkers = it->second.in_checkers_process;
    device_ranges().erase(it);
  }
  const bool here = in_checkers_process();
  if (owner_is_checkers && !here) enter_checkers_process();
  if (!owner_is_checkers && here) leave_checkers_process();
  const cudaError_t e = release(Op::Free, w, "cudaFree");
  if (owner_is_checkers && !here) leave_checkers_process();
  if (!owner_is_checkers && here) enter_checkers_process();
  return e;
}

namespace {

cudaError_t copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind == cudaMemcpyDefault) {
    const bool d = is_device(dst), s = is_device(src);
    kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (count) std::memmove(dst, src, count);
      return cudaSuccess;
    case cudaMemcpyHostToDevice: {
      Writer w;
      w.put<std::uint64_t>(to_wire(dst)).put<std::uint64_t>(count).put_bulk(src, count);
      // Posted: the bytes have left when it returns (src may be reused), and the checks read
      // nothing back; an error shows at the next request.
      judge_post(Op::MemcpyToDevice, w, "cudaMemcpy (host to device)");
      return cudaSuccess;
    }
    case cudaMemcpyDeviceToHost: {
      Writer w;
      w.put<std::uint64_t>(to_wire(src)).put<std::uint64_t>(count);
      Reader r = request(Op::MemcpyToHost, w, "cudaMemcpy (device to host)", count + 64);
      const auto e = r.get<cudaError_t>();
      if (count) std::memcpy(dst, r.take(count), count);
      return e;
    }
    case cudaMemcpyDeviceToDevice: {
      Writer w;
      w.put<std::uint64_t>(to_wire(dst)).put<std::uint64_t>(to_wire(src)).put<std::uint64_t>(count);
      w.put<std::uint64_t>(to_wire(stream));
      return status_only(Op::MemcpyDeviceToDevice, w, "cudaMemcpy (device to device)");
    }
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy(dst, src, count, kind, stream);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(ptr)).put(value).put<std::uint64_t>(count).put<std::uint64_t>(to_wire(stream));
  return status_only(Op::Memset, w, "cudaMemset");
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) { return cudaMemsetAsync(ptr, value, count, nullptr); }

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  Reader r = request(Op::StreamCreate, args(), "cudaStreamCreate");
  const auto e = r.get<cudaError_t>();
  *stream = from_wire<cudaStream_t>(r.get<std::uint64_t>());
  return e;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(stream));
  return release(Op::StreamDestroy, w, "cudaStreamDestroy");
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(stream));
  return status_only(Op::StreamSynchronize, w, "cudaStreamSynchronize");
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  Reader r = request(Op::EventCreate, args(), "cudaEventCreate");
  const auto e = r.get<cudaError_t>();
  *event = from_wire<cudaEvent_t>(r.get<std::uint64_t>());
  return e;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event));
  return release(Op::EventDestroy, w, "cudaEventDestroy");
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event)).put<std::uint64_t>(to_wire(stream));
  return status_only(Op::EventRecord, w, "cudaEventRecord");
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Writer w;
  w.put<std::uint64_t>(to_wire(event));
  return status_only(Op::EventSynchronize, w, "cudaEventSynchronize");
}

#if !defined(CUSIM)
// wb::L2Flusher calls it; a judge flushes nothing itself (its timed runs flush in the worker,
// worker_cuda.cpp), so the judge's copy of wb never reaches this.
cudaError_t cudaCtxResetPersistingL2Cache() { return cudaErrorNotSupported; }
#endif

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  Writer w;
  w.put<std::uint64_t>(to_wire(start)).put<std::uint64_t>(to_wire(end));
  Reader r = request(Op::EventElapsedTime, w, "cudaEventElapsedTime");
  const auto e = r.get<cudaError_t>();
  *ms = r.get<float>();
  return e;
}

#if defined(CUSIM)
// What cusim's analysis saw in the worker. These numbers come from the student's process: they
// are as trustworthy as that process (see docs/concepts/checking.md).
namespace cusim::analysis {

bool available() { return request(Op::AnalysisAvailable, args(), "cusim::analysis::available").get<std::uint8_t>() != 0; }

void reset() { request(Op::AnalysisReset, args(), "cusim::analysis::reset"); }

std::vector<KernelMetrics> metrics() {
  Reader r = request(Op::AnalysisMetrics, args(), "cusim::analysis::metrics");
  const auto n = r.get<std::uint64_t>();
  std::vector<KernelMetrics> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_metrics(r));
  return out;
}

std::vector<Report> reports() {
  Reader r = request(Op::AnalysisReports, args(), "cusim::analysis::reports");
  const auto n = r.get<std::uint64_t>();
  std::vector<Report> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_report(r));
  return out;
}

}  // namespace cusim::analysis

// cusim/checker.h, asked of the worker's cusim (the same caveat: these are the worker's answers).
namespace cusim::checker {

DeviceMemory device_memory() {
  Reader r = request(Op::CheckerDeviceMemory, args(), "cusim::checker::device_memory");
  DeviceMemory m;
  m.allocations = r.get<std::uint64_t>();
  m.bytes = r.get<std::uint64_t>();
  return m;
}

std::vector<LaunchRecord> launches() {
  Reader r = request(Op::CheckerLaunches, args(), "cusim::checker::launches");
  const auto n = r.get<std::uint64_t>();
  std::vector<LaunchRecord> out;
  for (std::uint64_t i = 0; i < n && r.remaining() > 0; ++i) out.push_back(get_launch(r));
  return out;
}

void clear_launches() { request(Op::CheckerClearLaunches, args(), "cusim::checker::clear_launches"); }

void set_block_order(BlockOrder order) {
  Writer w;
  w.put(static_cast<unsigned>(order));
  request(Op::CheckerBlockOrder, w, "cusim::checker::set_block_order");
}

bool inject_failure(const std::string& api, unsigned nth, cudaError_t error) {
  Writer w;
  w.put_string(api).put(nth).put(error);
  return request(Op::CheckerInjectFailure, w, "cusim::checker::inject_failure").get<std::uint8_t>() != 0;
}

InjectionOutcome end_injected_failures() {
  Reader r = request(Op::CheckerEndFailures, args(), "cusim::checker::end_injected_failures");
  InjectionOutcome o;
  o.not_fired = r.get<unsigned>();
  o.work_after_failure = r.get<std::uint64_t>();
  o.first_work_after_failure = r.get_string();
  return o;
}

}  // namespace cusim::checker
#endif
