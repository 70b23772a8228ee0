// The timing of a split check binary (checker/support/remote/judge_timing.cpp): the judge runs no
// GPU work, so wb::time_median() times the work in the worker, beside it, and bounds the times the
// worker reports with its own clock; wb::device_copy_bandwidth() runs in the checker's own CUDA
// process. checker_remote_timing_test runs these with an honest worker (timed_kernels.cu), and
// checker_remote_timing_forged_test runs ForgingWorker.* with a worker that patches its own
// cudaEventElapsedTime (remote_timing/forge_event_times.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "contains.h"
#include "timed_kernels.h"
#include "wb/timing_hooks.h"
#include "wb/wb.h"
#include "wb_baseline.h"
#if defined(CUSIM)
#include "cusim/checker.h"
#endif

namespace {

// busy_add_one on n elements: tens of milliseconds per call on sim.
struct BusyTiming {
  static constexpr int kIterations = 500;
  int n;
  wb::DeviceBuffer<int> in, out;
  explicit BusyTiming(int size) : n(size), in(size), out(size) {
    std::vector<int> host(size);
    for (int i = 0; i < size; ++i) host[i] = i;
    in.upload(host);
  }
  void run() { WB_CUDA_CHECK(busy_add_one(in.data(), out.data(), n, kIterations)); }
};

const wb::TimingOptions kQuick{.warmup = 1, .repetitions = 5, .flush_l2 = false};

// What wb::time_median() of @p work threw as a wb::TimingError; "(no TimingError)" when it returned.
std::string timing_error(const std::function<void()>& work, const wb::TimingOptions& options) {
  try {
    wb::time_median(work, options);
  } catch (const wb::TimingError& e) {
    return e.what();
  }
  return "(no TimingError)";
}

TEST(RemoteTiming, TheJudgesTimingsRunElsewhere) {
  EXPECT_NE(wb::detail::timing_hooks().time_median, nullptr);
  EXPECT_NE(wb::detail::timing_hooks().device_copy_bandwidth, nullptr);
}

TEST(RemoteTiming, TimesTheWorkBesideItAndBelievesHonestTimes) {
  BusyTiming t(1 << 14);
  wb::Timing timing;
  ASSERT_NO_THROW(timing = wb::time_median([&] { t.run(); }, kQuick));
  EXPECT_EQ(timing.repetitions, 5);
  EXPECT_GT(timing.median_ms, 1.0) << "the events did not time the work";
  EXPECT_GE(timing.max_ms, timing.median_ms);
}

// A gap before the call (here the judge's own, 100 ms) is not between the events, which the worker
// records at the call; the judge's clock sees it, and a timed run that took that much longer than
// its events say is not believed.
TEST(RemoteTiming, AGapBeforeTheCallIsNotTimedButTheClockSeesIt) {
  BusyTiming t(1 << 10);
  const std::string error = timing_error(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        t.run();
      },
      {.warmup = 0, .repetitions = 3, .flush_l2 = false});
  EXPECT_TRUE(contains(error, "less than the checker's own clock allows"));
}

TEST(RemoteTiming, TheDeviceCopyBaselineRunsInTheCheckersOwnProcess) {
  const wb::Bandwidth copy = wb::device_copy_bandwidth(1 << 20, kQuick);
  EXPECT_EQ(copy.timing.repetitions, 5);
  EXPECT_GT(copy.gb_per_s, 0.0);
  EXPECT_DOUBLE_EQ(copy.bytes_moved, 2.0 * (1 << 20));
  // It takes no work of the lab's: none can be given to it.
  EXPECT_THROW(wb::device_copy_bandwidth(1 << 20, {.before_each = [] {}}), std::invalid_argument);
}

#if defined(CUSIM)  // the device memory each process holds, as cusim reports it
// A baseline's buffers, calls and timings in a scope of wb::check::InCheckersProcess run in the
// checker's own process (checker_remote_timing_test_trusted, which registers the functions of
// timed_kernels.cu as a lab's baselines.cpp registers its baselines): the worker holds none of it.
TEST(RemoteTiming, ABaselineScopeRunsInTheCheckersOwnProcess) {
  const cusim::checker::DeviceMemory worker_before = cusim::checker::device_memory();
  std::optional<BusyTiming> t;
  {
    wb::check::InCheckersProcess checkers;
    const cusim::checker::DeviceMemory checkers_before = cusim::checker::device_memory();
    t.emplace(1 << 12);
    EXPECT_EQ(cusim::checker::device_memory().allocations, checkers_before.allocations + 2);
    const wb::Timing timing = wb::time_median([&] { t->run(); }, kQuick);
    EXPECT_EQ(timing.repetitions, 5);
    const std::vector<int> out = t->out.download();
    EXPECT_EQ(out[5], 6);
  }
  // Its buffers, still alive, are not the worker's.
  const cusim::checker::DeviceMemory worker_now = cusim::checker::device_memory();
  EXPECT_EQ(worker_now.allocations, worker_before.allocations);
  EXPECT_EQ(worker_now.bytes, worker_before.bytes);
  t.reset();
}

// A buffer is freed in the process that made it, wherever its destructor runs.
TEST(RemoteTiming, ABufferIsFreedWhereItWasMade) {
  std::optional<wb::DeviceBuffer<int>> made_in_checkers;
  std::size_t checkers_allocations = 0;
  {
    wb::check::InCheckersProcess checkers;
    checkers_allocations = cusim::checker::device_memory().allocations;
    made_in_checkers.emplace(1024);
  }
  const cusim::checker::DeviceMemory worker_before = cusim::checker::device_memory();
  made_in_checkers.reset();
  const cusim::checker::DeviceMemory worker_after = cusim::checker::device_memory();
  EXPECT_EQ(worker_after.allocations, worker_before.allocations);
  wb::check::InCheckersProcess checkers;
  EXPECT_EQ(cusim::checker::device_memory().allocations, checkers_allocations);
}
#endif

// With the worker of checker_remote_timing_forged_test only: every pair of events it measures
// reports 1 us.
TEST(ForgingWorker, TimesItReportsBelowTheClockAreRefused) {
  BusyTiming t(1 << 14);
  const std::string error = timing_error([&] { t.run(); }, kQuick);
  EXPECT_TRUE(contains(error, "the process running the lab's code reported its timed runs at 0.001 ms (median), less "
                              "than the checker's own clock allows"));
  EXPECT_TRUE(contains(error, "must not change how it is timed"));
}

}  // namespace
