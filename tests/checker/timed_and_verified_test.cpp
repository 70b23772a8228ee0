// The tests of wb::check::timed_and_verified (checker/support/wb_timed.h): every timed run must do
// its work. They run twice: in the lab's process (checker_wb_test, as checks run on the cuda backend
// today) and in a split check binary (checker_remote_timing_test: the judge here, the functions of
// timed_kernels.cu in its worker, timed beside them).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "contains.h"
#include "timed_kernels.h"
#include "wb/wb.h"
#include "wb_baseline.h"
#include "wb_timed.h"

namespace {

// ---- timed_and_verified: every timed run must do its work --------------------------------------

const wb::TimingOptions kQuickTiming{.warmup = 1, .repetitions = 5, .flush_l2 = false};

// The timing data of add_one; each test uses its own n, so that add_one_replaying (which keys its
// replays on the arguments) never replays another test's call on reused buffers.
struct AddOneTiming {
  int n;
  std::vector<int> in_host;
  wb::DeviceBuffer<int> in, out;
  wb::check::ChangingInput<int> changing;
  wb::Bandwidth b;
  explicit AddOneTiming(int size) : n(size), in_host(size), in(size), out(size), changing(in_host, in.data()) {
    for (int i = 0; i < n; ++i) in_host[i] = i;
    in.upload(in_host);
  }
  std::string verify() const {
    const std::vector<int> got = out.download();
    for (int i = 0; i < n; ++i) {
      if (got[i] != in_host[i] + 1) {
        return "out[" + std::to_string(i) + "] is " + std::to_string(got[i]) + ", expected " +
               std::to_string(in_host[i] + 1);
      }
    }
    return "";
  }
  // timed_and_verified() of @p run under kQuickTiming, the inputs changed before every run unless
  // @p change_inputs is false.
  testing::AssertionResult time(const std::string& call, const std::function<cudaError_t()>& run,
                                bool change_inputs = true) {
    std::function<void()> change;
    if (change_inputs) change = [this] { changing.change(); };
    return wb::check::timed_and_verified(call, 8.0 * n, run, change, [this] { return verify(); }, b, kQuickTiming);
  }
};

TEST(TimedAndVerified, AcceptsAFunctionThatWorksOnEveryRun) {
  AddOneTiming t(4096);
  const testing::AssertionResult r = t.time("add_one", [&] { return add_one(t.in.data(), t.out.data(), t.n); });
  EXPECT_TRUE(r) << r.message();
  EXPECT_EQ(t.changing.changes(), 6u);  // before the warm-up and before each of the 5 timed runs
  EXPECT_EQ(t.b.timing.repetitions, 5);
}

TEST(TimedAndVerified, NamesAResultReplayedFromAnEarlierCall) {
  AddOneTiming t(4097);
  const testing::AssertionResult r =
      t.time("add_one_replaying", [&] { return add_one_replaying(t.in.data(), t.out.data(), t.n); });
  ASSERT_FALSE(r);
  // Every timed run but the last is verified here (4 of kQuickTiming's 5): the first one names it.
  EXPECT_TRUE(contains(r.message(), "add_one_replaying: timed run 1 of 5, given changed inputs, left outputs that do "
                                    "not hold the result of its inputs (out["));
  EXPECT_TRUE(contains(r.message(), "a result cached from an earlier call"));
}

// A last run that did not do its work is named after the timing (no draw needed).
TEST(TimedAndVerified, NamesALastRunThatDidNotWork) {
  AddOneTiming t(4100);
  int calls = 0;
  const testing::AssertionResult r = t.time("add_one", [&] {
    return ++calls == 7 ? cudaSuccess : add_one(t.in.data(), t.out.data(), t.n);  // 1 + 1 + 5 calls
  });
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.message(), "add_one: after 5 timed runs, each given changed inputs, the outputs do not hold "
                                    "the result of the last run's inputs (out["));
  EXPECT_EQ(calls, 7);
}

// Why the inputs change: with the same inputs on every run, the replayed result is right.
TEST(TimedAndVerified, AReplayOfUnchangedInputsLooksRight) {
  AddOneTiming t(4098);
  const testing::AssertionResult r = t.time(
      "add_one_replaying", [&] { return add_one_replaying(t.in.data(), t.out.data(), t.n); }, false);
  EXPECT_TRUE(r) << r.message();
}

TEST(TimedAndVerified, AWrongResultIsNotTimed) {
  AddOneTiming t(4096);
  int calls = 0;
  const testing::AssertionResult r = t.time(
      "add_one",
      [&] {
        ++calls;
        return add_one(t.in.data(), t.out.data(), t.n - 1);  // misses the last element
      },
      false);
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.message(), "add_one on the timing data: out[4095] is"));
  EXPECT_EQ(calls, 1);
}

// A function that does the work of a call only when the check could see it without drawing runs:
// the validation call and the last timed run (kQuickTiming: 1 + 1 warm-up + 5 timed runs). The runs
// verified at random in between catch it.
TEST(TimedAndVerified, NamesARunThatSkippedItsWork) {
  AddOneTiming t(4099);
  const testing::AssertionResult r =
      t.time("add_one_skipping", [&] { return add_one_skipping(t.in.data(), t.out.data(), t.n); });
  ASSERT_FALSE(r);
  EXPECT_TRUE(contains(r.message(), "add_one_skipping: timed run 1 of 5, given changed inputs, left outputs that do "
                                    "not hold the result of its inputs (out["));
  EXPECT_TRUE(contains(r.message(), "a run drawn at random"));
}

TEST(TimedAndVerified, ChangingInputMovesTheInputsOwnValuesOnBothSides) {
  std::vector<int> host(1000);
  for (int i = 0; i < 1000; ++i) host[i] = 3 * i;
  wb::DeviceBuffer<int> device{std::span<const int>(host)};
  wb::check::ChangingInput<int> changing(host, device.data(), 16);
  const std::vector<int> before = host;
  for (int k = 0; k < 10; ++k) changing.change();
  EXPECT_EQ(device.download(), host);
  EXPECT_NE(host, before);
  for (int v : host) EXPECT_EQ(v % 3, 0) << "a value the input did not hold";
}

// A reference computed in the checker's own process (wb_baseline.h) follows the changes of the
// lab's input through a mirror made there: in a split binary the mirror lives in another process.
TEST(TimedAndVerified, ChangingInputMakesItsChangesInAMirrorInTheCheckersProcess) {
  std::vector<int> host(1000);
  for (int i = 0; i < 1000; ++i) host[i] = 3 * i;
  wb::DeviceBuffer<int> device{std::span<const int>(host)};
  std::optional<wb::DeviceBuffer<int>> mirror;
  {
    wb::check::InCheckersProcess checkers;
    mirror.emplace(std::span<const int>(host));
  }
  wb::check::ChangingInput<int> changing(host, device.data(), 16);
  changing.mirror_in_checkers_process(mirror->data());
  const std::vector<int> before = host;
  for (int k = 0; k < 10; ++k) changing.change();
  EXPECT_NE(host, before);
  EXPECT_EQ(device.download(), host);
  {
    wb::check::InCheckersProcess checkers;
    EXPECT_EQ(mirror->download(), host);
  }
}

}  // namespace
