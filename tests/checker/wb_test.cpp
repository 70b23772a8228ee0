// Tests of common/wb and of the check support helpers the lab checks are built on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_compare_elements.h"

namespace {

TEST(WbCompare, UlpDistance) {
  EXPECT_EQ(wb::ulp_distance(1.0f, 1.0f), 0u);
  EXPECT_EQ(wb::ulp_distance(0.0f, -0.0f), 0u);
  EXPECT_EQ(wb::ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(wb::ulp_distance(-std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::denorm_min()), 2u);
  EXPECT_EQ(wb::ulp_distance(1.0, std::nextafter(std::nextafter(1.0, 2.0), 2.0)), 2u);
  EXPECT_EQ(wb::ulp_distance(std::nanf(""), 1.0f), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(wb::ulp_distance(std::nanf(""), std::nanf("")), 0u);
}

TEST(WbCompare, RelativePlusAbsoluteTolerance) {
  const std::vector<float> expected = {1.0f, 100.0f, 0.0f, 5.0f};
  std::vector<float> got = {1.0f + 1e-6f, 100.0f + 5e-4f, 1e-7f, 5.5f};
  const wb::Comparison c = wb::compare<float>(expected, got, {.rel = 1e-5, .abs = 1e-6});
  EXPECT_EQ(c.count, 4u);
  EXPECT_EQ(c.mismatches, 1u);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, 3u);
  const std::string text = c.describe("y");
  EXPECT_NE(text.find("1 of 4 elements of y differ"), std::string::npos) << text;
  EXPECT_NE(text.find("y[3]: expected 5, got 5.5"), std::string::npos) << text;
}

TEST(WbCompare, UlpToleranceAndSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> expected = {1.0f, inf, std::nanf(""), 2.0f};
  const std::vector<float> got = {std::nextafter(1.0f, 2.0f), inf, std::nanf(""), -inf};
  const wb::Comparison c = wb::compare<float>(expected, got, {.ulps = 1});
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first.at(0).index, 3u);
}

TEST(WbCompare, KeepsOnlyTheFirstMismatchesAndCountsAll) {
  std::vector<float> expected(100, 1.0f), got(100, 2.0f);
  const wb::Comparison c = wb::compare<float>(expected, got, {}, 3);
  EXPECT_EQ(c.mismatches, 100u);
  ASSERT_EQ(c.first.size(), 3u);
  EXPECT_EQ(c.first[2].index, 2u);
  EXPECT_THROW(wb::compare<float>(expected, std::vector<float>(99), {}), std::invalid_argument);
}

TEST(WbCompare, PerElementBound) {
  const std::vector<float> expected = {1.0f, 1000.0f};
  const std::vector<float> got = {1.0005f, 1000.5f};
  const wb::Comparison c = wb::compare_within<float>(
      expected, got, [&](std::size_t i) { return 1e-3 * std::fabs(expected[i]); }, "0.1% of |expected|");
  EXPECT_EQ(c.mismatches, 0u) << c.describe();
  EXPECT_EQ(c.tolerance, "0.1% of |expected|");
}

TEST(WbRandom, SeededAndInRange) {
  const auto a = wb::random_floats(1000, 42, -2.0f, 3.0f);
  const auto b = wb::random_floats(1000, 42, -2.0f, 3.0f);
  const auto c = wb::random_floats(1000, 43, -2.0f, 3.0f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LT(v, 3.0f);
  }
  // The generator is specified, so the stream is the same on every platform.
  wb::Random rng(0);
  EXPECT_EQ(rng.next_u64(), 0xE220A8397B1DCDAFull);
  for (float v : wb::random_integer_floats(1000, 7, -8, 8)) {
    EXPECT_EQ(v, std::round(v));
    EXPECT_LE(std::fabs(v), 8.0f);
  }
}

TEST(WbTimer, Median) {
  EXPECT_EQ(wb::median({}), 0.0);
  EXPECT_EQ(wb::median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(wb::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(wb::gb_per_s(2e9, 1000.0), 2.0);
}

// Work done on the timed stream leaves the device idle at the stop event: time_median reports the
// time it found the device still busy after it (about one cudaDeviceSynchronize) and throws
// nothing. (Work that escapes the events, TimingError, needs a GPU: cusim runs work at once.)
TEST(WbTimer, WorkOnTheTimedStreamIsAllTimed) {
  wb::DeviceBuffer<float> buffer(1 << 16);
  const wb::Timing t = wb::time_median(
      [&] { WB_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, buffer.size() * sizeof(float), 0)); },
      {.warmup = 1, .repetitions = 9});
  EXPECT_EQ(t.repetitions, 9);
  EXPECT_GE(t.after_stop_ms, 0.0);
  EXPECT_LE(t.after_stop_ms, 0.03 + 0.25 * t.median_ms);
}

TEST(WbDeviceBuffer, RoundTripAndGuards) {
  const std::vector<float> host = {1.0f, 2.0f, 3.0f, 4.0f};
  wb::DeviceBuffer<float> buffer(std::span<const float>(host), 16);
  EXPECT_EQ(buffer.download(), host);
  EXPECT_TRUE(buffer.check_guards().intact());

  // Write one element past the end and two before the start, as a faulty kernel would.
  const float junk[2] = {9.0f, 9.0f};
  WB_CUDA_CHECK(cudaMemcpy(buffer.data() + 4, junk, sizeof(float), cudaMemcpyHostToDevice));
  WB_CUDA_CHECK(cudaMemcpy(buffer.data() - 2, junk, 2 * sizeof(float), cudaMemcpyHostToDevice));
  const wb::GuardDamage damage = buffer.check_guards();
  EXPECT_EQ(damage.modified, 3u);
  EXPECT_EQ(damage.past_end, 1u);
  EXPECT_EQ(damage.before_start, 2u);
  EXPECT_EQ(damage.first_index, -2);
  EXPECT_EQ(damage.last_index, 4);

  buffer.fill_guards();
  EXPECT_TRUE(buffer.check_guards().intact());
  wb::DeviceBuffer<float> moved = std::move(buffer);
  EXPECT_EQ(moved.size(), 4u);
  EXPECT_EQ(buffer.data(), nullptr);
}

TEST(WbError, CheckThrowsWithLocationAndName) {
  try {
    WB_CUDA_CHECK(cudaErrorInvalidConfiguration);
    FAIL() << "no exception";
  } catch (const wb::CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidConfiguration);
    const std::string what = e.what();
    EXPECT_NE(what.find("wb_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidConfiguration"), std::string::npos) << what;
  }
}

TEST(CheckSupport, OffByOneAndMissingBoundsMessages) {
  wb::GuardDamage one;
  one.modified = one.past_end = 1;
  one.first_index = one.last_index = 10;
  const std::string off_by_one = wb::check::no_out_of_bounds_writes(one, "y", 10, "k(n=10)").message();
  EXPECT_NE(off_by_one.find("y[10] was written, one past the end"), std::string::npos) << off_by_one;

  wb::GuardDamage many;
  many.modified = many.past_end = 6;
  many.first_index = 10;
  many.last_index = 15;
  const std::string missing = wb::check::no_out_of_bounds_writes(many, "y", 10, "k(n=10)").message();
  EXPECT_NE(missing.find("6 element(s) past the end"), std::string::npos) << missing;
  EXPECT_TRUE(wb::check::no_out_of_bounds_writes({}, "y", 10, "k"));
}

TEST(CheckSupport, UnwrittenSuffixIsAGridTooSmall) {
  const std::vector<float> original = {1, 2, 3, 4, 5, 6};
  const std::vector<float> expected = {2, 3, 4, 5, 6, 7};
  const std::vector<float> suffix = {2, 3, 4, 5, 5, 6};
  const std::string text = wb::check::describe_unwritten(original, expected, suffix, "y");
  EXPECT_NE(text.find("y[4] to y[5] were never written"), std::string::npos) << text;
  EXPECT_NE(text.find("grid is too small"), std::string::npos) << text;
  const std::vector<float> holes = {1, 3, 3, 5, 6, 7};
  EXPECT_NE(wb::check::describe_unwritten(original, expected, holes, "y").find("2 element(s) of y were never written"),
            std::string::npos);
  EXPECT_EQ(wb::check::describe_unwritten(original, expected, expected, "y"), "");
}

TEST(CheckSupport, NotImplementedNamesFunctionAndFile) {
  const std::string text = wb::check::cuda_success(cudaErrorNotYetImplemented, "f(1)", "f").message();
  EXPECT_NE(text.find("not implemented yet: f in tests/checker"), std::string::npos) << text;
}

TEST(CheckSupport, CasesCountUpToTheFirstFailure) {
  wb::check::Cases cases(3);
  EXPECT_TRUE(cases(testing::AssertionSuccess()));
  EXPECT_FALSE(cases(testing::AssertionFailure() << "case 2"));
  EXPECT_EQ(cases.passed(), 1u);
  int checked = 0;
  const std::vector<int> values = {1, 2, 3, 4};
  const testing::AssertionResult r = wb::check::for_each_case(values, [&](int v) {
    ++checked;
    return v == 3 ? testing::AssertionFailure() << "v = " << v : testing::AssertionSuccess();
  });
  EXPECT_FALSE(r);
  EXPECT_STREQ(r.message(), "v = 3");
  EXPECT_EQ(checked, 3) << "for_each_case stops at the first failing case";
  EXPECT_TRUE(wb::check::for_each_case(std::vector<int>{}, [](int) { return testing::AssertionFailure(); }));
}

TEST(CheckSupport, CompareElementsNamesTheFirstWrongElement) {
  const auto where = [](std::size_t i) { return "y[" + std::to_string(i) + "]"; };
  const std::vector<double> expected = {1.0, 2.5, 3.0, INFINITY};
  const std::vector<double> allowed = {0.0, 0.1, 0.1, 0.1};
  EXPECT_TRUE(wb::check::compare_elements("f()", "y", std::vector<float>{1, 2.55f, 3, INFINITY}, expected, allowed,
                                          where));
  const testing::AssertionResult r = wb::check::compare_elements(
      "f()", "y", std::vector<float>{1, 2, 3.5f, 1e30f}, expected, allowed, where,
      [](std::size_t i) { return "(element " + std::to_string(i) + ")"; });
  EXPECT_STREQ(r.message(),
               "f(): 3 of 4 elements of y are wrong; the first is y[1]: got 2, expected 2.5 (allowed difference "
               "0.1). (element 1)");
  float unwritten;
  std::memset(&unwritten, 0xFF, sizeof unwritten);
  const std::string exact =
      wb::check::compare_elements("f()", "y", std::vector<float>{unwritten, 2.5f, 3, INFINITY}, expected, allowed, where)
          .message();
  EXPECT_EQ(exact,
            "f(): 1 of 4 elements of y are wrong; the first is y[0]: got nothing (never written: still the 0xFF "
            "bytes the checker put there), expected 1 exactly.");
  EXPECT_FALSE(wb::check::within(NAN, 1.0, 0.5));
  EXPECT_FALSE(wb::check::within(1e30f, INFINITY, 0.5));
}

TEST(CheckSupport, GuardedNamesTheCallAroundAFailedCheckerCall) {
  EXPECT_TRUE(wb::check::guarded("f(1)", [] { return testing::AssertionSuccess(); }));
  const testing::AssertionResult r = wb::check::guarded("f(1)", []() -> testing::AssertionResult {
    throw wb::CudaError(cudaErrorMemoryAllocation, "cudaMalloc(&p, 8) failed");
  });
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("a CUDA call of the checker failed around f(1): "), std::string::npos)
      << r.message();
  std::string text;
  wb::check::append_measured(text, "a: 1");
  wb::check::append_measured(text, "b: 2");
  EXPECT_EQ(text, "a: 1; b: 2");
}

TEST(CheckSupport, SameEveryRunNamesTheFirstDifferingElement) {
  struct Got {
    std::vector<float> a, b;
  };
  const auto steady = [](Got& got, int) {
    got = {{1, 2, 3}, {4}};
    return testing::AssertionSuccess();
  };
  EXPECT_TRUE(wb::check::same_every_run<Got>("f()", steady, {{"a", &Got::a}, {"b", &Got::b}}));
  const auto drifting = [](Got& got, int run) {
    got = {{1, 2, 3}, {run == 3 ? 4.5f : 4.0f}};
    return testing::AssertionSuccess();
  };
  const testing::AssertionResult r =
      wb::check::same_every_run<Got>("f()", drifting, {{"a", &Got::a}, {"b", &Got::b}}, "No atomics.");
  EXPECT_STREQ(r.message(), "f(): run 3 gave a different b from run 1 on the same inputs (b[0]: 4.5 vs 4). No atomics.");
  const auto failing = [](Got&, int run) {
    return run == 2 ? testing::AssertionFailure() << "run 2 failed" : testing::AssertionSuccess();
  };
  EXPECT_STREQ(wb::check::same_every_run<Got>("f()", failing, {{"a", &Got::a}}).message(), "run 2 failed");
}

TEST(CheckSupport, InputNamesAWriteIntoItsGuardZone) {
  wb::check::Input<float> x(std::vector<float>{1, 2, 3}, "x");
  EXPECT_TRUE(x.unchanged("f()"));
  const float v = 7.0f;
  ASSERT_EQ(cudaMemcpy(x.dev.data() + 3, &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_STREQ(x.unchanged("f()").message(),
               "f() wrote x[3], outside the input x (3 elements), which it must only read: test every index against "
               "the size of the array it writes.");
  wb::check::Input<int> before(std::vector<int>{1, 2}, "before");
  const int w = 0;
  ASSERT_EQ(cudaMemcpy(before.dev.data() - 1, &w, sizeof w, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_NE(std::string(before.unchanged("g()").message()).find("wrote before[-1]"), std::string::npos);
  ASSERT_EQ(cudaMemcpy(x.dev.data() + 3, &x.poison, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(x.dev.data(), &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_STREQ(x.unchanged("f()").message(), "f() modified x, which is an input.");
}

TEST(CheckSupport, InputTakesAdviceAndAGuardSize) {
  wb::check::Input<float> x(std::vector<float>((1 << 20) + 3, 1.0f), "x");
  EXPECT_TRUE(x.unchanged("f()", "keep partial sums elsewhere."));
  // A change past the first 2^20 elements: unchanged() compares them a chunk at a time.
  const float v = 7.0f;
  ASSERT_EQ(cudaMemcpy(x.dev.data() + (1 << 20) + 1, &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_STREQ(x.unchanged("f()", "keep partial sums elsewhere.").message(),
               "f() modified x, which is an input: keep partial sums elsewhere.");
  EXPECT_STREQ(x.unchanged("f()").message(), "f() modified x, which is an input.");
  // Guard 0: an allocation of the input's exact size, nothing around it to poison or check.
  const wb::check::Input<int> exact(std::vector<int>{1, 2, 3}, "exact", -1, 0);
  EXPECT_EQ(exact.dev.guard(), 0u);
  EXPECT_TRUE(exact.unchanged("g()"));
  // A larger guard is poisoned whole, from its first element on.
  const std::size_t guard = wb::check::kGuardElements + 3;
  const wb::check::Input<float> shifted(std::vector<float>{1, 2}, "shifted", 0.5f, guard);
  EXPECT_EQ(shifted.dev.guard(), guard);
  float first = 0.0f;
  ASSERT_EQ(cudaMemcpy(&first, shifted.dev.data() - guard, sizeof first, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(first, 0.5f);
  EXPECT_TRUE(shifted.unchanged("h()"));
}

TEST(CheckSupport, VerdictsCheckEachBufferInTheirOrder) {
  const std::string call = "f(n=2)";
  wb::check::Input<float> x(std::vector<float>{1, 2, 3}, "x");
  wb::check::Output<float> y(2, "y");
  EXPECT_EQ(wb::check::verdicts(call, y, x).size(), 2u);
  EXPECT_TRUE(wb::check::after_call(cudaSuccess, call, "f", wb::check::verdicts(call, y, x)));
  const float v = 7.0f;
  ASSERT_EQ(cudaMemcpy(x.dev.data(), &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_STREQ(wb::check::after_call(cudaSuccess, call, "f", wb::check::verdicts(call, y, x)).message(),
               "f(n=2) modified x, which is an input.");
  // With both buffers wrong, the first of them is named.
  ASSERT_EQ(cudaMemcpy(y.dev.data() + 2, &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  const std::string y_first = wb::check::after_call(cudaSuccess, call, "f", wb::check::verdicts(call, y, x)).message();
  EXPECT_NE(y_first.find("y[2] was written, one past the end"), std::string::npos) << y_first;
  EXPECT_STREQ(wb::check::after_call(cudaSuccess, call, "f", wb::check::verdicts(call, x, y)).message(),
               "f(n=2) modified x, which is an input.");
}

TEST(CheckSupport, VersusNamesTheRatioAndBothRates) {
  EXPECT_EQ(wb::check::versus(2870.1, 3376.5, "copy"), "0.85 x copy (2870.10 GB/s vs 3376.50 GB/s)");
  EXPECT_EQ(wb::check::versus(50, 40, "cuBLAS", "TFLOP/s"), "1.25 x cuBLAS (50.00 TFLOP/s vs 40.00 TFLOP/s)");
}

}  // namespace
