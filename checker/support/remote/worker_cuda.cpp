// The worker's CUDA runtime requests (wb_remote.h, serve_cuda): what judge_cuda.cpp asks, run
// with this process's runtime (cusim on sim), the one the lab's code uses.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "wb/bandwidth.h"
#include "wb/error.h"
#include "wb/timer.h"

#if defined(CUSIM)
#include "wb_remote_analysis.h"
#endif
#include "wb_remote.h"

namespace wb::remote {

namespace {

// The timed region of one repetition (Op::TimedBegin .. Op::TimedEnd): its events are recorded
// here, around the requests that make the timed work, so no gap between two requests is timed.
struct Region {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cudaStream_t stream = nullptr;
  bool pending = false;            // begun; the start is recorded at the next request
  bool open = false;               // the start is recorded
  cudaError_t error = cudaSuccess;  // the first error of the region's own calls
  std::unique_ptr<wb::L2Flusher> flusher;
};

Region& region() {
  static Region r;
  return r;
}

void note(cudaError_t e) {
  if (e != cudaSuccess && region().error == cudaSuccess) region().error = e;
}

bool is_region_op(Op op) { return op == Op::TimedBegin || op == Op::TimedEnd; }

void begin_region(Reader& in, Writer& out) {
  const bool flush = in.get<std::uint8_t>() != 0;
  const auto stream = from_wire<cudaStream_t>(in.get<std::uint64_t>());
  Region& r = region();
  r.error = cudaSuccess;
  r.open = false;
  r.stream = stream;
  if (r.start == nullptr) note(cudaEventCreate(&r.start));
  if (r.stop == nullptr) note(cudaEventCreate(&r.stop));
  if (flush && r.error == cudaSuccess) {
    try {
      if (!r.flusher) r.flusher = std::make_unique<wb::L2Flusher>();
      r.flusher->flush(stream);
    } catch (const wb::CudaError& e) {
      note(e.code());
    }
  }
  r.pending = true;
  out.put(r.error);
}

void end_region(Writer& out) {
  Region& r = region();
  if (!r.pending && !r.open) throw ChannelError("a timed region was ended that was never begun");
  if (r.pending) {  // nothing was asked in between: an empty region
    note(cudaEventRecord(r.start, r.stream));
    note(cudaEventRecord(r.stop, r.stream));
  }
  r.pending = r.open = false;
  cudaError_t e = r.error;
  float ms = 0.0f;
  double after_stop_ms = 0.0;
  if (e == cudaSuccess) e = cudaEventSynchronize(r.stop);
  if (e == cudaSuccess) {
    // Whatever the device still runs now is work the two events did not time (wb::time_median).
    const auto stopped = std::chrono::steady_clock::now();
    e = cudaDeviceSynchronize();
    after_stop_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopped).count();
  }
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, r.start, r.stop);
  r.error = cudaSuccess;
  out.put(e).put(ms).put(after_stop_ms);
}

void time_device_copy(Reader& in, Writer& out) {
  const auto bytes = in.get<std::uint64_t>();
  wb::TimingOptions options;
  options.warmup = in.get<int>();
  options.repetitions = in.get<int>();
  options.flush_l2 = in.get<std::uint8_t>() != 0;
  wb::Bandwidth b;
  std::string error;
  try {
    b = wb::device_copy_bandwidth(static_cast<std::size_t>(bytes), options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  out.put_string(error).put(b);
}

}  // namespace

void region_before_request(Op op) {
  Region& r = region();
  if (!r.pending || is_region_op(op)) return;
  note(cudaEventRecord(r.start, r.stream));
  r.pending = false;
  r.open = true;
}

void region_after_request(Op op) {
  Region& r = region();
  if (r.open && !is_region_op(op)) note(cudaEventRecord(r.stop, r.stream));
}

void serve_cuda(Op op, Reader& in, Writer& out) {
  switch (op) {
    case Op::TimedBegin:
      begin_region(in, out);
      return;
    case Op::TimedEnd:
      end_region(out);
      return;
    case Op::TimeDeviceCopy:
      time_device_copy(in, out);
      return;
    case Op::Malloc: {
      void* p = nullptr;
      const cudaError_t e = cudaMalloc(&p, in.get<std::uint64_t>());
      out.put(e).put<std::uint64_t>(to_wire(p));
      return;
    }
    case Op::Free:
      out.put(cudaFree(from_wire<void*>(in.get<std::uint64_t>())));
      return;
    case Op::MemcpyToDevice: {
      void* dst = from_wire<void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      out.put(cudaMemcpy(dst, in.take(n), n, cudaMemcpyHostToDevice));
      return;
    }
    case Op::MemcpyToHost: {
      const void* src = from_wire<const void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      static std::unique_ptr<char[]> staging;  // lives until the reply is sent
      staging.reset(new char[n > 0 ? n : 1]);
      const cudaError_t e = cudaMemcpy(staging.get(), src, n, cudaMemcpyDeviceToHost);
      out.put(e).put_bulk(staging.get(), n);
      return;
    }
    case Op::MemcpyDeviceToDevice: {
      void* dst = from_wire<void*>(in.get<std::uint64_t>());
      const void* src = from_wire<const void*>(in.get<std::uint64_t>());
      const auto n = in.get<std::uint64_t>();
      const auto stream = from_wire<cudaStream_t>(in.get<std::uint64_t>());
      out.put(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream));
      return;
    }
    case Op::Memset: {
      void* p = from_wire<void*>(in.get<std::uint64_t>());
      const int value = in.get<int>();
      const auto n = in.get<std::uint64_t>();
      const auto stream = from_wire<cudaStream_t>(in.get<std::uint64_t>());
      out.put(cudaMemsetAsync(p, value, n, stream));
      return;
    }
    case Op::Synchronize:
      out.put(cudaDeviceSynchronize());
      return;
    case Op::GetLastError:
      out.put(cudaGetLastError());
      return;
    case Op::PeekAtLastError:
      out.put(cudaPeekAtLastError());
      return;
    case Op::GetDevice: {
      int device = 0;
      const cudaError_t e = cudaGetDevice(&device);
      out.put(e).put(device);
      return;
    }
    case Op::DeviceGetAttribute: {
      const auto attr = in.get<cudaDeviceAttr>();
      const int device = in.get<int>();
      int value = 0;
      const cudaError_t e = cudaDeviceGetAttribute(&value, attr, device);
      out.put(e).put(value);
      return;
    }
    case Op::GetDeviceProperties: {
      cudaDeviceProp prop{};
      const cudaError_t e = cudaGetDeviceProperties(&prop, in.get<int>());
      out.put(e).put(prop);
      return;
    }
    case Op::StreamCreate: {
      cudaStream_t s = nullptr;
      const cudaError_t e = cudaStreamCreate(&s);
      out.put(e).put<std::uint64_t>(to_wire(s));
      return;
    }
    case Op::StreamDestroy:
      out.put(cudaStreamDestroy(from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    case Op::StreamSynchronize:
      out.put(cudaStreamSynchronize(from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventCreate: {
      cudaEvent_t ev = nullptr;
      const cudaError_t e = cudaEventCreate(&ev);
      out.put(e).put<std::uint64_t>(to_wire(ev));
      return;
    }
    case Op::EventDestroy:
      out.put(cudaEventDestroy(from_wire<cudaEvent_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventRecord: {
      const auto ev = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      out.put(cudaEventRecord(ev, from_wire<cudaStream_t>(in.get<std::uint64_t>())));
      return;
    }
    case Op::EventSynchronize:
      out.put(cudaEventSynchronize(from_wire<cudaEvent_t>(in.get<std::uint64_t>())));
      return;
    case Op::EventElapsedTime: {
      const auto a = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      const auto b = from_wire<cudaEvent_t>(in.get<std::uint64_t>());
      float ms = 0;
      const cudaError_t e = cudaEventElapsedTime(&ms, a, b);
      out.put(e).put(ms);
      return;
    }
    case Op::ErrorString:
      out.put_string(cudaGetErrorString(in.get<cudaError_t>()));
      return;
    case Op::ErrorName:
      out.put_string(cudaGetErrorName(in.get<cudaError_t>()));
      return;
#if defined(CUSIM)
    case Op::AnalysisAvailable:
      out.put<std::uint8_t>(cusim::analysis::available() ? 1 : 0);
      return;
    case Op::AnalysisReset:
      cusim::analysis::reset();
      return;
    case Op::AnalysisMetrics: {
      const auto all = cusim::analysis::metrics();
      out.put<std::uint64_t>(all.size());
      for (const auto& m : all) put_metrics(out, m);
      return;
    }
    case Op::AnalysisReports: {
      const auto all = cusim::analysis::reports();
      out.put<std::uint64_t>(all.size());
      for (const auto& r : all) put_report(out, r);
      return;
    }
    case Op::CheckerDeviceMemory: {
      const cusim::checker::DeviceMemory m = cusim::checker::device_memory();
      out.put(m.allocations).put(m.bytes);
      return;
    }
    case Op::CheckerLaunches: {
      const auto all = cusim::checker::launches();
      out.put<std::uint64_t>(all.size());
      for (const auto& l : all) put_launch(out, l);
      return;
    }
    case Op::CheckerClearLaunches:
      cusim::checker::clear_launches();
      return;
    case Op::CheckerBlockOrder: {
      const auto order = in.get<unsigned>();
      if (order > 2) throw ChannelError("unknown block order " + std::to_string(order));
      cusim::checker::set_block_order(static_cast<cusim::checker::BlockOrder>(order));
      return;
    }
    case Op::CheckerInjectFailure: {
      const std::string api = in.get_string();
      const auto nth = in.get<unsigned>();
      const auto error = in.get<cudaError_t>();
      out.put<std::uint8_t>(cusim::checker::inject_failure(api, nth, error) ? 1 : 0);
      return;
    }
    case Op::CheckerEndFailures: {
      const cusim::checker::InjectionOutcome o = cusim::checker::end_injected_failures();
      out.put(o.not_fired).put(o.work_after_failure).put_string(o.first_work_after_failure);
      return;
    }
#endif
    default:
      throw ChannelError("unknown request " + std::to_string(static_cast<unsigned>(op)));
  }
}

}  // namespace wb::remote
