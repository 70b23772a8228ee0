// The worker's CUDA runtime requests (wb_remote.h, serve_cuda): what judge_cuda.cpp asks, run
// with this process's runtime (cusim on sim), the one the lab's code uses.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#if defined(CUSIM)
#include "wb_remote_analysis.h"
#endif
#include "wb_remote.h"

namespace wb::remote {

void serve_cuda(Op op, Reader& in, Writer& out) {
  switch (op) {
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
