// wb::time_median() and wb::device_copy_bandwidth() in a judge (wb/timing_hooks.h). The judge runs
// no GPU work of its own: the timed work is requests to the worker (the lab's code), so the worker
// times it, beside the work (Op::TimedBegin .. Op::TimedEnd, worker_cuda.cpp), and no gap between
// two requests is timed. Those times come from the process that holds the lab's code, which may
// change them; the judge keeps its own clock of every timed run and refuses times that are
// smaller than that clock allows, once what a timed run costs without work (measured the same way
// in the checker's own CUDA process, wb_trusted_runtime) is taken off. The device-copy baseline
// runs in that process too, out of the lab's reach (docs/concepts/checking.md).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "wb/bandwidth.h"
#include "wb/error.h"
#include "wb/timer.h"
#include "wb/timing_hooks.h"
#include "wb_remote.h"
#include "wb_remote_interface.h"

namespace wb::remote {
namespace {

using Clock = std::chrono::steady_clock;

/// A reported median is refused below kBelievable x (the judge's clock of a timed run, less a
/// timed run without work) - kSlackMs: room for what the lab's call costs the worker's server and
/// for the noise of two clocks. Both clock figures are minima over their runs: a busy machine
/// (another process scheduled in between) only ever adds to a run's wall time, so the fastest run
/// of each is the one least disturbed, and the figure cannot exceed the work's own time.
/// On sim the events are host timestamps of a simulator whose two processes differ by tenths of a
/// millisecond in what a request costs them (the lab's process holds more threads and memory), and no
/// check's verdict depends on a time; on a GPU a request costs microseconds.
constexpr double kBelievable = 0.8;
#if defined(CUSIM)
constexpr double kSlackMs = 1.0;
#else
constexpr double kSlackMs = 0.05;
#endif
/// Timed runs without work in the checker's own process, before each timing.
constexpr int kCalibrationRuns = 10;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct RegionTimes {
  cudaError_t error = cudaSuccess;
  double ms = 0.0;
  double after_stop_ms = 0.0;
  double wall_ms = 0.0;  // the judge's clock, from the begin to the end's reply
};

// The requests of its lifetime go to the checker's own CUDA process (as wb_baseline.h's scope).
struct InCheckersProcess {
  InCheckersProcess() { enter_checkers_process(); }
  ~InCheckersProcess() { leave_checkers_process(); }
  InCheckersProcess(const InCheckersProcess&) = delete;
  InCheckersProcess& operator=(const InCheckersProcess&) = delete;
};

// One timed run: begins the region (the L2 flush is enqueued there, before the judge's clock
// starts), runs @p work (requests to the same process), ends it.
template <class Work>
RegionTimes timed_run(bool flush_l2, cudaStream_t stream, Work&& work) {
  Writer begin;
  begin.put<std::uint8_t>(flush_l2 ? 1 : 0).put<std::uint64_t>(to_wire(stream));
  RegionTimes t;
  t.error = judge_request(Op::TimedBegin, begin, "the start of a timed run", 64).get<cudaError_t>();
  if (t.error != cudaSuccess) return t;
  const Clock::time_point t0 = Clock::now();
  work();
  Reader r = judge_request(Op::TimedEnd, Writer(), "the end of a timed run", 64);
  t.wall_ms = ms_since(t0);
  t.error = r.get<cudaError_t>();
  t.ms = static_cast<double>(r.get<float>());
  t.after_stop_ms = r.get<double>();
  return t;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw wb::CudaError(e, std::string(what) + ": " + wb::error_text(e));
}

// What a timed run without work takes by the judge's clock: a call of the server's no-op in the
// checker's own CUDA process, with the same L2 flush.
double run_without_work_ms(bool flush_l2) {
  InCheckersProcess checkers;
  std::vector<double> walls;
  for (int i = 0; i < kCalibrationRuns; ++i) {
    const RegionTimes t = timed_run(flush_l2, nullptr, [] { call("wb.noop", Writer()); });
    check(t.error, "a timed run without work in the checker's own CUDA process");
    walls.push_back(t.wall_ms);
  }
  return *std::min_element(walls.begin(), walls.end());
}

std::string fixed(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", v);
  return buffer;
}

wb::Timing remote_time_median(const std::function<void()>& work, const wb::TimingOptions& options) {
  if (options.repetitions < 1) throw std::invalid_argument("time_median: repetitions must be at least 1");
  const double without_work_ms = in_checkers_process() ? 0.0 : run_without_work_ms(options.flush_l2);
  std::vector<double> samples, after_stop, walls;
  for (int i = 0; i < options.warmup + options.repetitions; ++i) {
    if (options.before_each) options.before_each();
    const RegionTimes t = timed_run(options.flush_l2, options.stream, work);
    check(t.error, "a timed run");
    if (i < options.warmup) continue;
    samples.push_back(t.ms);
    after_stop.push_back(t.after_stop_ms);
    walls.push_back(t.wall_ms);
  }
  const wb::Timing timing = wb::detail::summarize(std::move(samples), std::move(after_stop));
  // A baseline timed in the checker's own process (wb_baseline.h): its times are the checker's.
  if (in_checkers_process()) return timing;
  const double wall_ms = *std::min_element(walls.begin(), walls.end());
  const double at_least_ms = kBelievable * (wall_ms - without_work_ms) - kSlackMs;
  if (stats_enabled()) {  // WB_REMOTE_STATS=1: the figures the bound's constants are set from
    std::fprintf(stderr,
                 "[wb timing] reported median %.4f ms; fastest run by the judge's clock %.4f ms; a run without "
                 "work %.4f ms; reported / (clock - without work) = %.3f\n",
                 timing.median_ms, wall_ms, without_work_ms,
                 wall_ms > without_work_ms ? timing.median_ms / (wall_ms - without_work_ms) : 0.0);
  }
  if (timing.median_ms < at_least_ms) {
    throw wb::TimingError(
        "the process running the lab's code reported its timed runs at " + fixed(timing.median_ms) +
        " ms (median), less than the checker's own clock allows: the fastest run took " + fixed(wall_ms) +
        " ms from its start to its end, of which a run without work takes " + fixed(without_work_ms) +
        " ms, so the work took about " + fixed(wall_ms - without_work_ms) +
        " ms. A time the lab's process reports about itself is not believed when it is under " +
        fixed(kBelievable) + " x that. The lab's code must not change how it is timed (events, clocks, the "
        "runtime's timing calls).");
  }
  return timing;
}

wb::Bandwidth remote_device_copy_bandwidth(std::size_t bytes, const wb::TimingOptions& options) {
  if (options.before_each || options.stream != nullptr) {
    throw std::invalid_argument(
        "device_copy_bandwidth: in a check binary the baseline runs in the checker's own CUDA process, on its "
        "own buffers and default stream; it takes no before_each and no stream");
  }
  Writer w;
  w.put<std::uint64_t>(bytes).put<int>(options.warmup).put<int>(options.repetitions);
  w.put<std::uint8_t>(options.flush_l2 ? 1 : 0);
  InCheckersProcess checkers;
  Reader r = judge_request(Op::TimeDeviceCopy, w, "the device-copy baseline", 4096);
  const std::string error = r.get_string();
  const auto b = r.get<wb::Bandwidth>();
  if (!error.empty()) throw std::runtime_error("the device-copy baseline failed in the checker's own process: " + error);
  return b;
}

}  // namespace

void install_remote_timing() {
  wb::detail::TimingHooks hooks;
  hooks.time_median = &remote_time_median;
  hooks.device_copy_bandwidth = &remote_device_copy_bandwidth;
  hooks.enter_checkers_process = &enter_checkers_process;
  hooks.leave_checkers_process = &leave_checkers_process;
  wb::detail::set_timing_hooks(hooks);
}

}  // namespace wb::remote
