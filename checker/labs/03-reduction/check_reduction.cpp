// Checks for lab 03 (parallel reduction); what each check needs is the .passes of its WB_CHECK.
//
// Every sum is compared with the sum computed in double precision on the host.
//   - Exact data: positive integer-valued floats whose total stays <= 2^24 (for n > 2^24:
//     zeros and at most 2^24 ones). Every partial sum of any subset is then an integer
//     <= 2^24, exactly representable, so every summation order gives exactly the same float:
//     the comparison is bit-exact, and one missing or doubled element shows. Because all
//     values are positive, a wrong sum that equals the sum of the first k elements names k.
//   - Random data, uniform in [-1, 2): the float result must lie within the error bound of
//     recursive float summation in any order, |got - sum| <= gamma(n-1) * sum |x_i| with
//     gamma(k) = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical
//     Algorithms, 4.2). The bound is only finite for n < 2^24, so random data stops there;
//     it catches what integer data cannot (a float value truncated to an integer, say).
// Max and min are exact.
// Inputs are cudaMalloc-aligned, as the interface promises, so misalignment is not tested.
// Outputs and workspaces carry guard zones; the result starts as 0xFF bytes (a NaN), so a
// result never written is told apart from a wrong one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "reduction.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

#if defined(CUSIM)
#include <cusim/checker.h>
#endif

namespace {

using wb::check::fixed;
using wb::check::never_written;

constexpr std::size_t kGuard = wb::DeviceBuffer<float>::kDefaultGuard;
constexpr std::size_t kExactLimit = std::size_t(1) << 24;  // partial sums up to here are exact floats
constexpr double kUnitRoundoff = 0x1.0p-24;

// ---- inputs --------------------------------------------------------------------------------

struct Input {
  std::vector<float> values;
  bool exact = false;       // every summation order gives the same float
  std::string kind;         // "exact integer data", "random data in [-1, 2)"
  std::uint64_t seed = 0;
};

Input exact_input(std::size_t n, std::uint64_t seed) {
  Input in;
  in.exact = true;
  in.seed = seed;
  in.kind = "exact integer data";
  in.values.resize(n);
  wb::Random rng(seed * 6151 + 11);
  if (n <= kExactLimit) {
    const std::int64_t max_value = std::clamp<std::int64_t>(static_cast<std::int64_t>(kExactLimit / std::max<std::size_t>(n, 1)), 1, 1000);
    for (float& v : in.values) v = static_cast<float>(rng.next_int(1, max_value));
  } else {
    // Zeros and at most 2^24 ones: every partial sum is still an integer <= 2^24.
    std::size_t ones = 0;
    const std::uint64_t threshold = (kExactLimit * 7 / 8) * (std::uint64_t(1) << 20) / n;  // P(1) = 7/8 * 2^24 / n
    for (float& v : in.values) {
      const bool one = ones < kExactLimit && (rng.next_u64() >> 44) < threshold;
      v = one ? 1.0f : 0.0f;
      ones += one;
    }
  }
  return in;
}

Input random_input(std::size_t n, std::uint64_t seed) {
  Input in;
  in.seed = seed;
  in.kind = "random data in [-1, 2)";
  in.values = wb::random_floats(n, seed, -1.0f, 2.0f);
  return in;
}

double exact_sum(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += x;  // integers below 2^53: exact in double
  return s;
}

// Compensated (Neumaier) double sum: the reference for random data, far more accurate than
// the float tolerance.
double reference_sum(const std::vector<float>& v) {
  double sum = 0.0, c = 0.0;
  for (float xf : v) {
    const double x = xf, t = sum + x;
    c += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  return sum + c;
}

double abs_sum(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += std::fabs(x);
  return s;
}

std::string number(double v) { return wb::check::significant(v, 9); }

// ---- running student code --------------------------------------------------------------------

// The memory around d_in is filled with a poison value, so that reading outside d_in[0..n)
// changes the result visibly: NaN for sums, +3e38 for max, -3e38 for min.
constexpr float kSumPoison = std::numeric_limits<float>::quiet_NaN();
constexpr float kMaxPoison = 3.0e38f;
constexpr float kMinPoison = -3.0e38f;

// A call of the lab's code on (d_in, d_out, d_workspace).
using Launch = std::function<cudaError_t(const float*, float*, float*)>;

// Runs @p launch on guarded device copies: the input (wb_buffers.h, surrounded by @p poison), one
// result float (filled with 0xFF bytes) and, when @p with_workspace, a guarded workspace. Checks
// the status, device errors, writes out of bounds and the input; stores the result.
testing::AssertionResult run_reduction(const std::vector<float>& input, const std::string& call, const char* function,
                                       bool with_workspace, float poison, const Launch& launch, float& result) {
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    const wb::check::Input<float> in(input, "d_in", poison);
    wb::check::Output<float> out(1, "d_out");
    wb::DeviceBuffer<float> workspace;
    if (with_workspace) {
      workspace = wb::DeviceBuffer<float>(reduce_workspace_floats(static_cast<int>(input.size())), kGuard);
      workspace.fill_bytes(0xFF);
    }
    const cudaError_t status = launch(in.dev.data(), out.dev.data(), with_workspace ? workspace.data() : nullptr);
    if (auto r = wb::check::after_call(status, call, function, {}); !r) return r;
    if (const wb::GuardDamage d = out.dev.check_guards(); !d.intact()) {
      return testing::AssertionFailure() << call << " wrote " << d.modified << " float(s) next to *d_out (from d_out["
                                         << d.first_index << "] to d_out[" << d.last_index
                                         << "]): the result is one float; only one thread should store it, at d_out[0].";
    }
    if (with_workspace) {
      if (const wb::GuardDamage d = workspace.check_guards(); !d.intact()) {
        return testing::AssertionFailure()
               << call << " wrote outside d_workspace[0.." << workspace.size() << ") (index " << d.first_index << " to "
               << d.last_index << "): the workspace holds reduce_workspace_floats(n) floats, enough when every block "
               << "reduces at least 32 elements and each pass writes its partial sums after the previous pass's.";
      }
    }
    const char* advice = "it is passed as a const float*; keep partial sums in shared memory or the workspace.";
    if (auto r = in.unchanged(call, advice); !r) return r;
    result = out.dev.download()[0];
    return testing::AssertionSuccess();
  });
}

// Explains a wrong sum of exact data: which prefix of the input it equals, if any.
std::string diagnose_exact(const std::vector<float>& v, double got, double expected) {
  if (got > expected) {
    return "The result is larger than the sum of all elements: some elements or partial sums were added twice "
           "(two threads reading the same element, or a partial sum counted in two passes).";
  }
  double prefix = 0.0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (prefix == got) {
      std::size_t last = k;  // zeros after k leave the prefix unchanged
      while (last + 1 < v.size() && v[last] == 0.0f) ++last;
      std::ostringstream out;
      out << "The result equals the sum of the first " << k << " elements only";
      if (last != k) out << " (up to " << last << ")";
      out << ": elements from index " << k << " on were not added. The grid (number of blocks) may be rounded "
          << "down, or the last, partial block skipped; its missing elements must count as 0, not be dropped.";
      return out.str();
    }
    prefix += v[k];
  }
  return "The result is smaller than the sum: some elements were not added (a bounds test that drops valid "
         "elements, a tree step that skips an element, or a missing __syncthreads() between steps).";
}

testing::AssertionResult sum_matches(const Input& input, float got, const std::string& call) {
  const std::size_t n = input.values.size();
  const std::string what = call + " [" + input.kind + ", seed " + std::to_string(input.seed) + "]";
  if (never_written(got)) {
    return testing::AssertionFailure() << what << ": *d_out was never written (still the 0xFF bytes the checker put "
                                                  "there).";
  }
  if (std::isnan(got)) {
    return testing::AssertionFailure() << what << ": the result is NaN. The checker fills the memory around d_in with "
                                                  "NaN: elements outside d_in[0..n) were read and added. Test every "
                                                  "load against n (the last block of a pass is usually partial).";
  }
  if (input.exact) {
    const double expected = exact_sum(input.values);
    if (static_cast<double>(got) == expected) return testing::AssertionSuccess();
    return testing::AssertionFailure()
           << what << ": got " << number(got) << ", expected " << number(expected)
           << " exactly (the elements are positive integers whose partial sums are all exact in float, so every "
           << "summation order gives " << number(expected) << "). " << diagnose_exact(input.values, got, expected);
  }
  const double expected = reference_sum(input.values);
  const double k = n > 0 ? static_cast<double>(n - 1) : 0.0;
  const double gamma = k * kUnitRoundoff / (1.0 - k * kUnitRoundoff);
  const double allowed = gamma * abs_sum(input.values);
  const double diff = std::fabs(static_cast<double>(got) - expected);
  if (diff <= allowed) return testing::AssertionSuccess();
  return testing::AssertionFailure() << what << ": got " << number(got) << ", expected " << number(expected)
                                     << " (difference " << number(diff) << ", allowed " << number(allowed)
                                     << " = gamma(n-1) * sum|x|, the error bound of float summation in any order).";
}

// @p launch of @p function on @p input (see run_reduction), its sum compared with the reference.
testing::AssertionResult check_sum(const Input& input, const std::string& call, const char* function,
                                   bool with_workspace, const Launch& launch) {
  float got = 0.0f;
  if (auto r = run_reduction(input.values, call, function, with_workspace, kSumPoison, launch, got); !r) return r;
  return sum_matches(input, got, call);
}

// ---- the versions ---------------------------------------------------------------------------------

using TreeFn = cudaError_t (*)(const float*, int, float*, float*, int);

struct TreeVersion {
  const char* name;
  TreeFn run;
  int elements_per_thread;  // elements a block reduces per thread: 1, or 2 with the first add
};

const TreeVersion kInterleaved{"reduce_sum_interleaved", &reduce_sum_interleaved, 1};
const TreeVersion kSequential{"reduce_sum_sequential", &reduce_sum_sequential, 1};
const TreeVersion kFirstAdd{"reduce_sum_first_add", &reduce_sum_first_add, 2};
const TreeVersion kWarpShuffle{"reduce_sum_warp_shuffle", &reduce_sum_warp_shuffle, 2};
const TreeVersion* const kTreeVersions[] = {&kInterleaved, &kSequential, &kFirstAdd, &kWarpShuffle};

std::string tree_call(const TreeVersion& v, std::size_t n, int block_size) {
  return std::string(v.name) + "(n=" + std::to_string(n) + ", block_size=" + std::to_string(block_size) + ")";
}

testing::AssertionResult check_tree(const TreeVersion& v, const Input& input, int block_size) {
  const int n = static_cast<int>(input.values.size());
  return check_sum(input, tree_call(v, input.values.size(), block_size), v.name, true,
                   [&](const float* in, float* out, float* ws) { return v.run(in, n, out, ws, block_size); });
}

std::string grid_call(std::size_t n, int num_blocks, int block_size) {
  return "reduce_sum_grid_stride(n=" + std::to_string(n) + ", num_blocks=" + std::to_string(num_blocks) +
         ", block_size=" + std::to_string(block_size) + ")";
}

testing::AssertionResult check_grid_stride(const Input& input, int num_blocks, int block_size) {
  const int n = static_cast<int>(input.values.size());
  return check_sum(input, grid_call(input.values.size(), num_blocks, block_size), "reduce_sum_grid_stride", false,
                   [&](const float* in, float* out, float*) {
                     return reduce_sum_grid_stride(in, n, out, num_blocks, block_size);
                   });
}

testing::AssertionResult check_final_sum(const Input& input) {
  const int n = static_cast<int>(input.values.size());
  return check_sum(input, "reduce_sum(n=" + std::to_string(input.values.size()) + ")", "reduce_sum", false,
                   [&](const float* in, float* out, float*) { return reduce_sum(in, n, out); });
}

// Max (is_max) or min of @p values, compared exactly.
testing::AssertionResult check_extreme(bool is_max, const std::vector<float>& values, const std::string& what) {
  const char* function = is_max ? "reduce_max" : "reduce_min";
  const std::string call = std::string(function) + "(n=" + std::to_string(values.size()) + ") [" + what + "]";
  const int n = static_cast<int>(values.size());
  const float poison = is_max ? kMaxPoison : kMinPoison;
  float got = 0.0f;
  const Launch launch = [&](const float* in, float* out, float*) {
    return is_max ? reduce_max(in, n, out) : reduce_min(in, n, out);
  };
  if (auto r = run_reduction(values, call, function, false, poison, launch, got); !r) return r;
  float expected = is_max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  std::size_t where = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (is_max ? values[i] > expected : values[i] < expected) {
      expected = values[i];
      where = i;
    }
  }
  if (std::memcmp(&got, &expected, sizeof(float)) == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": got " << (never_written(got) ? std::string("nothing (*d_out never written)") : number(got))
          << ", expected " << number(expected);
  if (values.empty()) {
    failure << " (the " << (is_max ? "max" : "min") << " of no elements is the identity of the operation, "
            << (is_max ? "-INFINITY" : "+INFINITY") << ").";
    return failure;
  }
  failure << " (in[" << where << "]).";
  if (got == poison) {
    failure << " " << number(got) << " is the value the checker puts around d_in: elements outside d_in[0..n) "
            << "were read. Test every load against n.";
  } else if (std::find(values.begin(), values.end(), got) == values.end() && !never_written(got)) {
    failure << " " << number(got) << " is not an element of the input: start every partial result at the "
            << "identity (" << (is_max ? "-INFINITY" : "+INFINITY") << "), not at 0, and pad missing elements with it.";
  } else if (!never_written(got)) {
    failure << " The result is an element of the input but not the " << (is_max ? "largest" : "smallest")
            << ": some elements were not compared (see index " << where << ").";
    if (std::signbit(got) != std::signbit(expected)) {
      failure << " Its sign differs from the expected one's: a " << (is_max ? "negative" : "positive")
              << " block result replaced a " << (is_max ? "positive" : "negative")
              << " one. Combining results with integer atomics on the float bits: non-negative floats order like "
                 "their bits as int, negative floats in reverse of their bits as unsigned, so use atomic"
              << (is_max ? "Max" : "Min") << " on int for v >= 0 and atomic" << (is_max ? "Min" : "Max")
              << " on unsigned for v < 0.";
    }
  }
  return failure;
}

// Sizes around the warp (32) and every block size the interface allows (64 .. 1024) and their
// doubles: for each block size, n = one block and one element past it, with one or two
// elements per thread.
const std::vector<std::size_t> kTreeSizes = {0,   1,   2,   31,   32,   33,   63,   64,   65,   127,  128,  129,  255, 256,
                                             257, 511, 512, 513,  1023, 1024, 1025, 2047, 2048, 2049, 4097, 100003};
const std::vector<int> kTreeBlockSizes = {64, 128, 256, 512, 1024};
// One block past 65535 blocks in the first pass (block_size 64): 65535 is the limit of
// gridDim.y and gridDim.z, not of gridDim.x (2^31 - 1), so a grid capped there drops the
// last elements. Also the versions' largest n (three passes).
constexpr int kPastGridYBlock = 64;
constexpr std::size_t kGridYLimit = 65535;

void check_tree_version(const TreeVersion& v) {
  wb::check::Cases cases(kTreeSizes.size() * kTreeBlockSizes.size() + 3);
  std::uint64_t seed = 1;
  for (int block_size : kTreeBlockSizes) {
    for (std::size_t n : kTreeSizes) WB_ASSERT(cases(check_tree(v, exact_input(n, seed++), block_size)));
  }
  for (std::size_t n : {std::size_t(1000), std::size_t(100003)}) {
    WB_ASSERT(cases(check_tree(v, random_input(n, seed++), 256)));
  }
  const std::size_t per_block = std::size_t(kPastGridYBlock) * v.elements_per_thread;
  const std::size_t past_limit = kGridYLimit * per_block + 1;
  testing::AssertionResult result = cases(check_tree(v, exact_input(past_limit, seed++), kPastGridYBlock));
  if (!result) {
    result << " This n needs " << kGridYLimit + 1 << " blocks of " << kPastGridYBlock << " threads in the first pass ("
           << per_block << " elements per block): 65535 is the limit of gridDim.y and gridDim.z, but gridDim.x "
           << "goes to 2^31 - 1. Launch every block the pass needs along x; do not cap the grid.";
  }
  WB_ASSERT(result);
}

}  // namespace

// ---- Correctness ---------------------------------------------------------------------

// What passes, for InterleavedSum, SequentialSum, FirstAddSum, WarpShuffleSum.
constexpr char kVersionSumPasses[] = "exact sums for 26 sizes from 0 to 100003 (0, 1, 2, 31-33, 63-65, 127-129, "
                                     "255-257, 511-513, 1023-1025, 2047-2049, 4097, 100003) at block sizes 64, 128, "
                                     "256, 512 and 1024, and for one block past 65535 blocks in the first pass "
                                     "(block size 64); random data at n = 1000 and 100003 within gamma(n-1) sum|x|";

WB_CHECK(Correctness, InterleavedSum, .weight = 2,
         .passes = kVersionSumPasses,
         .hint = "Load one element per thread (0 past the end of the input), __syncthreads(), then for s "
                 "= 1, 2, 4, ...: index = 2 * s * threadIdx.x; if (index < blockDim.x) sdata[index] += "
                 "sdata[index + s]; __syncthreads().") {
  check_tree_version(kInterleaved);
}

WB_CHECK(Correctness, SequentialSum, .weight = 2,
         .passes = kVersionSumPasses,
         .hint = "for (s = blockDim.x / 2; s > 0; s >>= 1) { if (t < s) sdata[t] += sdata[t + s]; "
                 "__syncthreads(); }") {
  check_tree_version(kSequential);
}

WB_CHECK(Correctness, FirstAddSum, .weight = 2,
         .passes = kVersionSumPasses,
         .hint = "Each block covers 2 * blockDim.x elements; test both loads against n, and pass 2 * "
                 "block_size as elements per block to reduce_in_passes.") {
  check_tree_version(kFirstAdd);
}

WB_CHECK(Correctness, WarpShuffleSum, .weight = 2,
         .passes = kVersionSumPasses,
         .hint = "Stop the shared-memory tree at s > 32; then threads t < 32 add sdata[t] + sdata[t + "
                 "32] and shuffle down by 16, 8, 4, 2, 1.") {
  check_tree_version(kWarpShuffle);
}

WB_CHECK(Correctness, GridStrideSum, .weight = 2,
         .passes = "grids far smaller and larger than n: 1 x 32, 1 x 1024, 3 x 96, 4096 x 32, ..., n "
                   "= 0 to 2^20 + 7",
         .hint = "Set *d_out to 0 before the kernel (cudaMemsetAsync); grid-stride loop; block sum; one "
                 "atomicAdd per block.") {
  struct Case {
    std::size_t n;
    int num_blocks, block_size;
    bool random;
  };
  const std::vector<Case> cases = {{0, 4, 256, false},        {1, 1, 32, false},        {33, 1, 32, false},
                                   {1000, 3, 96, false},      {1000, 4096, 32, false},  {65537, 13, 128, false},
                                   {(1 << 20) + 7, 64, 256, false}, {(1 << 20) + 7, 1, 1024, false},
                                   {100003, 7, 224, true}};
  std::uint64_t seed = 100;
  WB_ASSERT(wb::check::for_each_case(cases, [&](const Case& c) {
    const Input input = c.random ? random_input(c.n, seed++) : exact_input(c.n, seed++);
    return check_grid_stride(input, c.num_blocks, c.block_size);
  }));
}

WB_CHECK(Correctness, SumAllSizes, .weight = 2,
         .passes = "`reduce_sum` for 19 sizes from 0 to 2^20 + 7, and random data at n = 3, 1025 and "
                   "2^20 + 7",
         .hint = "Handle n == 0 (the sum is 0) and the elements after the last full float4 if you load "
                 "float4s.") {
  // Every n % 4 several times: float4 loads leave 0 to 3 elements after the last whole float4.
  const std::vector<std::size_t> sizes = {0,    1,    2,    3,    4,     5,     6,     7,      31,          32,
                                          33,   1023, 1024, 1025, 4098,  4099,  65537, 100003, (1 << 20) + 7};
  wb::check::Cases cases(sizes.size() + 3);
  std::uint64_t seed = 200;
  for (std::size_t n : sizes) WB_ASSERT(cases(check_final_sum(exact_input(n, seed++))));
  for (std::size_t n : {std::size_t(3), std::size_t(1025), std::size_t(1 << 20) + 7}) {
    WB_ASSERT(cases(check_final_sum(random_input(n, seed++))));
  }
}

// The largest sizes: 2^26 - 1 on the sim backend (about 10 s with analysis instrumentation);
// 2^26 - 1 and 2^26 on a GPU.
WB_CHECK(Correctness, SumLarge, .weight = 1,
         .passes = "`reduce_sum` for n = 2^26 - 1 (sim); 2^26 - 1 and 2^26 (GPU)",
         .hint = "Use 64-bit or carefully bounded indices; every element must be read exactly once.") {
#if defined(CUSIM)
  const std::vector<std::size_t> sizes = {(std::size_t(1) << 26) - 1};
#else
  const std::vector<std::size_t> sizes = {(std::size_t(1) << 26) - 1, std::size_t(1) << 26};
#endif
  std::uint64_t seed = 300;
  WB_ASSERT(wb::check::for_each_case(sizes, [&](std::size_t n) { return check_final_sum(exact_input(n, seed++)); }));
}

WB_CHECK(Correctness, MaxMin, .weight = 2,
         .passes = "exact max and min for n = 0 to 2^20 + 7, the extremes at the first and the last "
                   "index, all-negative and all-positive inputs",
         .hint = "Start every partial result at the identity (-INFINITY for max, +INFINITY for min), not "
                 "at 0; n == 0 returns the identity.") {
  std::vector<std::pair<std::vector<float>, std::string>> inputs;
  std::uint64_t seed = 400;
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(6), std::size_t(33),
                        std::size_t(1000), std::size_t(4098), std::size_t(1 << 20) + 7}) {
    inputs.emplace_back(wb::random_floats(n, seed++), "random in [-1, 1)");
  }
  for (std::size_t n : {std::size_t(33), std::size_t(4099)}) {
    std::vector<float> v = wb::random_floats(n, seed++);
    v.front() = 5.0f;
    v.back() = -5.0f;
    inputs.emplace_back(v, "max at index 0, min at the last index");
    std::reverse(v.begin(), v.end());
    inputs.emplace_back(v, "min at index 0, max at the last index");
  }
  // All negative (for max) and all positive (for min): an accumulator started at 0 is wrong.
  inputs.emplace_back(wb::random_floats(1025, seed++, -2.0f, -1.0f), "all elements negative");
  inputs.emplace_back(wb::random_floats(1025, seed++, 1.0f, 2.0f), "all elements positive");
  // Many blocks: every block's result negative (or positive), and results of both signs, the
  // extreme's sign only at the start, so blocks combining their results (atomics on the float
  // bits, say, which order negatives in reverse) meet both orders.
  inputs.emplace_back(wb::random_floats(100003, seed++, -2.0f, -1.0f), "all elements negative");
  inputs.emplace_back(wb::random_floats(100003, seed++, 1.0f, 2.0f), "all elements positive");
  constexpr std::size_t kSignedPrefix = 4096;
  std::vector<float> mixed = wb::random_floats(std::size_t(1 << 20) + 7, seed++, -2.0f, -1.0f);
  for (std::size_t i = 0; i < kSignedPrefix; ++i) mixed[i] = -mixed[i];
  inputs.emplace_back(mixed, "positive elements only among the first 4096, the rest negative");
  for (float& x : mixed) x = -x;
  inputs.emplace_back(mixed, "negative elements only among the first 4096, the rest positive");
  wb::check::Cases cases(2 * inputs.size());
  for (const auto& [values, what] : inputs) {
    for (bool is_max : {true, false}) WB_ASSERT(cases(check_extreme(is_max, values, what)));
  }
}

// ---- Host code (sim): device memory and CUDA errors (wb_host_checks.h) ------------------

#if defined(CUSIM)
namespace {

// Every function makes CUDA calls that can fail before it returns: its launches, and in the
// reference the versions 1-4 set *d_out with cudaMemset when n == 0 (reduce_in_passes),
// reduce_sum_grid_stride clears *d_out with cudaMemsetAsync before its launch. Each is called
// with n = 0 and n = 1000, where a version of the learner's may also allocate, copy or clear
// something else.
struct HostCase {
  std::string call;
  const char* function;
  std::size_t n;
  Launch run;                                                   // on buffers the check makes
  std::function<testing::AssertionResult(const Input&)> check;  // a checked call on its own buffers
};

std::vector<HostCase> host_cases() {
  std::vector<HostCase> cases;
  for (std::size_t n : {std::size_t(0), std::size_t(1000)}) {
    const int in = static_cast<int>(n);
    for (const TreeVersion* v : kTreeVersions) {
      cases.push_back({tree_call(*v, n, 256), v->name, n,
                       [v, in](const float* d_in, float* out, float* ws) { return v->run(d_in, in, out, ws, 256); },
                       [v](const Input& input) { return check_tree(*v, input, 256); }});
    }
    cases.push_back({grid_call(n, 4, 128), "reduce_sum_grid_stride", n,
                     [in](const float* d_in, float* out, float*) { return reduce_sum_grid_stride(d_in, in, out, 4, 128); },
                     [](const Input& input) { return check_grid_stride(input, 4, 128); }});
    cases.push_back({"reduce_sum(n=" + std::to_string(n) + ")", "reduce_sum", n,
                     [in](const float* d_in, float* out, float*) { return reduce_sum(d_in, in, out); },
                     [](const Input& input) { return check_final_sum(input); }});
    for (const bool is_max : {true, false}) {
      const char* function = is_max ? "reduce_max" : "reduce_min";
      cases.push_back({std::string(function) + "(n=" + std::to_string(n) + ")", function, n,
                       [in, is_max](const float* d_in, float* out, float*) {
                         return is_max ? reduce_max(d_in, in, out) : reduce_min(d_in, in, out);
                       },
                       [is_max](const Input& input) { return check_extreme(is_max, input.values, "random"); }});
    }
  }
  return cases;
}

}  // namespace

WB_CHECK(Correctness, HostFreesDeviceMemory, .weight = 1, .backends = "sim",
         .passes = "after versions 1 to 5 and the final sum, max and min (n = 0 and 1000) the device "
                   "holds as many allocations and bytes as before",
         .hint = "Use the workspace the caller passes in (d_workspace); cudaFree everything you "
                 "cudaMalloc before returning, on the error paths too.") {
  std::uint64_t seed = 900;
  WB_ASSERT(wb::check::for_each_case(host_cases(), [&](const HostCase& c) {
    const Input input = exact_input(c.n, seed++);
    return wb::check::host::frees_device_memory(c.call, c.function, [&] { return c.check(input); });
  }));
}

// wb::check::host::launch_errors_returned: each call's healthy run first (a function that does not
// work yet has no error paths to test), then each of its CUDA calls fails in turn. Every call runs
// on buffers of its own, made beforehand.
WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "each `cudaMalloc`, `cudaMemcpy(Async)`, `cudaMemset(Async)` and kernel launch "
                   "that those calls make (n = 0 and 1000; the solution's: every launch, the "
                   "`cudaMemset` of `*d_out` when n == 0, version 5's `cudaMemsetAsync`) is made to "
                   "fail in turn (cusim's fault injection): the function returns that error at once "
                   "(test `cudaGetLastError()` after each launch, before the next pass), with no "
                   "launch or call after it, and frees what it had allocated",
         .hint = "Test the cudaError_t of every cudaMemset(Async), cudaMemcpy and cudaMalloc and return "
                 "it at once when it is not cudaSuccess, before any launch.") {
  struct Buffers {
    wb::DeviceBuffer<float> in, out, workspace;
  };
  std::vector<wb::check::host::ErrorPathCase> cases;
  std::uint64_t seed = 950;
  for (const HostCase& c : host_cases()) {
    const Input input = exact_input(c.n, seed++);
    const std::size_t workspace_floats = std::max<std::size_t>(reduce_workspace_floats(static_cast<int>(c.n)), 1);
    auto b = std::make_shared<Buffers>(Buffers{wb::DeviceBuffer<float>(std::span<const float>(input.values), kGuard),
                                               wb::DeviceBuffer<float>(1, kGuard),
                                               wb::DeviceBuffer<float>(workspace_floats, kGuard)});
    cases.push_back(
        {c.call, c.function, [b, run = c.run] { return run(b->in.data(), b->out.data(), b->workspace.data()); }});
  }
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}
#endif

// ---- Analysis (sim) --------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Runs every function on a few sizes and fails on any report of @p tools
// (wb::check::expect_no_analysis_reports).
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    std::uint64_t seed = 500;
    for (std::size_t n : {std::size_t(1), std::size_t(33), std::size_t(1000), std::size_t(4097)}) {
      const Input input = exact_input(n, seed++);
      for (const TreeVersion* v : kTreeVersions) {
        for (int block_size : {64, 256}) keep_first(check_tree(*v, input, block_size));
      }
      keep_first(check_grid_stride(input, 3, 96));
      keep_first(check_final_sum(input));
      keep_first(check_extreme(true, input.values, "exact integer data"));
      keep_first(check_extreme(false, input.values, "exact integer data"));
    }
  });
}

}  // namespace

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = "no memcheck/initcheck report, every function, n = 1, 33, 1000, 4097",
         .hint = "Test every load against n: the last block of a pass is usually partial.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = "no racecheck/synccheck report, same runs",
         .hint = "Every tree step reads values that other threads wrote in the step before: __syncthreads() "
                 "after the loads into shared memory and after every step. Shuffles synchronize the lanes "
                 "of a warp themselves.") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}
#endif

// ---- Performance -----------------------------------------------------------------------

#if defined(CUSIM)
namespace {

constexpr std::size_t kMetricSize = (1 << 16) + 3;

using wb::check::Traffic;

// Blocks of a multi-pass reduction with @p per_block elements per block: one partial sum
// stored per block and pass.
constexpr std::uint64_t blocks_in_passes(std::size_t n, std::size_t per_block) {
  std::uint64_t total = 0;
  for (std::size_t m = n; m > 0;) {
    const std::size_t blocks = (m + per_block - 1) / per_block;
    total += blocks;
    if (blocks == 1) break;
    m = blocks;
  }
  return total;
}

// Fails when @p function's loads touch more than @p max_sectors (the check's limit) global-memory
// sectors per request.
void expect_coalesced_loads(const char* function, double sectors, double max_sectors) {
  if (sectors > max_sectors) {
    ADD_FAILURE() << function << ": its loads touch " << fixed(sectors) << " global memory sectors per request (at most "
                  << fixed(max_sectors) << " allowed). A warp reading 32 consecutive "
                     "floats touches 4 sectors of 32 bytes; reading in[2 * i] and in[2 * i + 1] touches 8 per "
                     "request, twice the traffic. Let consecutive threads load consecutive elements: in[i] and "
                     "in[i + blockDim.x].";
  }
}

}  // namespace

WB_CHECK(Performance, SequentialNoBankConflicts, .weight = 2, .backends = "sim",
         .limits = {{"max_wavefronts", 1.0}},
         .passes = "version 2: shared-memory loads and stores <= {max_wavefronts:.2f} wavefront/request "
                   "(n = 2^16 + 3, block size 256); version 1's values are shown beside",
         .hint = "In step s, let thread t < s add sdata[t + s] into sdata[t]: a warp then accesses 32 "
                 "consecutive words, which lie in 32 different banks.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxWavefronts = WB_LIMIT("max_wavefronts");
  const Input input = exact_input(kMetricSize, 600);
  Traffic interleaved, sequential;
  WB_ASSERT(wb::check::measure([&] { return check_tree(kInterleaved, input, 256); }, interleaved, kInterleaved.name));
  WB_ASSERT(wb::check::measure([&] { return check_tree(kSequential, input, 256); }, sequential, kSequential.name));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("sequential: loads " + fixed(sequential.shared_loads()) + ", stores " +
                             fixed(sequential.shared_stores()) + " wavefronts/request (interleaved: " +
                             fixed(interleaved.shared_loads()) + ", " + fixed(interleaved.shared_stores()) + ")");
  if (sequential.shared_loads() > kMaxWavefronts || sequential.shared_stores() > kMaxWavefronts) {
    ADD_FAILURE() << "reduce_sum_sequential: shared-memory bank conflicts: loads take " << fixed(sequential.shared_loads())
                  << " and stores " << fixed(sequential.shared_stores()) << " wavefronts per request (at most "
                  << fixed(kMaxWavefronts) << " allowed). Shared memory has 32 banks of 4 bytes; "
                     "lanes whose addresses are 2 s words apart meet in the same banks. Sequential addressing "
                     "(thread t < s adds sdata[t + s] into sdata[t]) keeps a warp's accesses consecutive.";
  }
#endif
}

WB_CHECK(Performance, FirstAddHalvesBlocks, .weight = 2, .backends = "sim",
         .limits = {{"max_load_sectors", 4.0}, {"max_partial_sums", 130}},
         .passes = "version 3 (n = 2^16 + 3, block size 256): loads <= {max_load_sectors:.2f} "
                   "sectors/request, and at most {max_partial_sums} partial sums stored (one per block "
                   "and pass), the blocks of 2 x block_size elements that n needs",
         .hint = "Each block covers 2 * blockDim.x elements: thread t loads in[base + t] and in[base + t + "
                 "blockDim.x] (base = blockIdx.x * 2 * blockDim.x), adds them, and the launcher runs half "
                 "as many blocks.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr int kBlock = 256;
  constexpr double kMaxLoadSectors = WB_LIMIT("max_load_sectors");
  // The declared bound is the blocks that 2 * kBlock elements per block need on kMetricSize.
  static_assert(blocks_in_passes(kMetricSize, 2 * kBlock) == WB_LIMIT("max_partial_sums"),
                "max_partial_sums must be blocks_in_passes(kMetricSize, 2 * kBlock)");
  constexpr auto max_blocks = static_cast<std::uint64_t>(WB_LIMIT("max_partial_sums"));
  const Input input = exact_input(kMetricSize, 601);
  Traffic t;
  WB_ASSERT(wb::check::measure([&] { return check_tree(kFirstAdd, input, kBlock); }, t, kFirstAdd.name));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("loads " + fixed(t.loads()) + " sectors/request; " + std::to_string(t.store_requests) +
                             " partial sums stored (at most " + std::to_string(max_blocks) + ")");
  expect_coalesced_loads("reduce_sum_first_add", t.loads(), kMaxLoadSectors);
  if (t.store_requests > max_blocks) {
    ADD_FAILURE() << "reduce_sum_first_add: its blocks stored " << t.store_requests
                  << " partial sums over all passes; with 2 * block_size = " << 2 * kBlock
                  << " elements per block, n = " << kMetricSize << " needs " << max_blocks
                  << " blocks (one partial sum each). Does each block add two elements per thread while loading, "
                     "and does the launcher pass 2 * block_size as the elements per block?";
  }
#endif
}

WB_CHECK(Performance, WarpShuffleTail, .weight = 2, .backends = "sim",
         .limits = {{"block_size_divisor", 8}, {"max_load_sectors", 4.0}},
         .passes = "version 4: shared-memory requests per block <= block_size / {block_size_divisor}, "
                   "at block sizes 64 and 256 (n = 2^16 + 3); loads <= {max_load_sectors:.2f} "
                   "sectors/request",
         .hint = "Stop the shared-memory loop at s > 32; then threads t < 32 take v = sdata[t] + sdata[t + "
                 "32] and finish with five __shfl_down_sync steps (offsets 16, 8, 4, 2, 1); lane 0 holds "
                 "the sum.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kBlockSizeDivisor = WB_LIMIT("block_size_divisor");
  constexpr double kMaxLoadSectors = WB_LIMIT("max_load_sectors");
  const Input input = exact_input(kMetricSize, 602);
  std::string text;
  for (int block_size : {64, 256}) {
    Traffic t;
    WB_ASSERT(wb::check::measure([&] { return check_tree(kWarpShuffle, input, block_size); }, t, kWarpShuffle.name));
    WB_REQUIRE_ANALYSIS();
    const std::uint64_t blocks = std::max<std::uint64_t>(t.store_requests, 1);
    const double per_block = double(t.shared_requests()) / double(blocks);
    const double limit = block_size / kBlockSizeDivisor;
    // The shared-memory tree's requests (see the handout): block_size / 32 stores of the loaded
    // values, 3 per active warp and step for s >= 32, 15 for the five steps s = 16 .. 1.
    const double full_tree = block_size / 32.0 + 3 * (block_size / 32.0 - 1) + 15;
    wb::check::append_measured(text, "block_size " + std::to_string(block_size) + ": " + fixed(per_block) +
                                         " shared requests/block (limit " + fixed(limit) + "), loads " +
                                         fixed(t.loads()) + " sectors/request");
    expect_coalesced_loads("reduce_sum_warp_shuffle", t.loads(), kMaxLoadSectors);
    if (per_block > limit) {
      ADD_FAILURE() << "reduce_sum_warp_shuffle(block_size=" << block_size << "): " << fixed(per_block)
                    << " shared-memory requests per block (at most block_size / "
                    << wb::check::as_written(kBlockSizeDivisor) << " = " << fixed(limit)
                    << "). The full tree needs block_size / 8 + 12 = " << fixed(full_tree)
                    << ": its last five steps (s = 16 .. 1) still cost three requests each for fewer than 32 useful "
                       "lanes. Finish the last 32 values in registers with __shfl_down_sync instead.";
    }
  }
#endif
}

WB_CHECK(Performance, OneAtomicPerBlock, .weight = 3, .backends = "sim",
         .limits = {{"max_load_sectors", 4.0}},
         .passes = "version 5: atomic operations = number of blocks (64 x 256 and 7 x 96 on n = 2^20 "
                   "+ 7); loads <= {max_load_sectors:.2f} sectors/request",
         .hint = "Combine the threads' sums inside the block first (warp shuffles, then one value per warp "
                 "in shared memory, then warp 0), and let only thread 0 call atomicAdd(d_out, block_sum).") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxLoadSectors = WB_LIMIT("max_load_sectors");
  const Input input = exact_input((1 << 20) + 7, 603);
  std::string text;
  for (auto [num_blocks, block_size] : {std::pair{64, 256}, std::pair{7, 96}}) {
    Traffic t;
    WB_ASSERT(wb::check::measure([&] { return check_grid_stride(input, num_blocks, block_size); }, t,
                                 "reduce_sum_grid_stride"));
    WB_REQUIRE_ANALYSIS();
    const double per_block = double(t.atomics) / double(num_blocks);
    wb::check::append_measured(text, std::to_string(num_blocks) + " x " + std::to_string(block_size) + ": " +
                                         fixed(per_block) + " atomics/block, loads " + fixed(t.loads()) +
                                         " sectors/request");
    expect_coalesced_loads("reduce_sum_grid_stride", t.loads(), kMaxLoadSectors);
    if (t.atomics != static_cast<std::uint64_t>(num_blocks)) {
      ADD_FAILURE() << grid_call(input.values.size(), num_blocks, block_size) << ": " << t.atomics
                    << " atomic operations for " << num_blocks << " blocks (" << fixed(per_block)
                    << " per block; exactly 1 expected). Every atomic on the same address is serialized: "
                    << (t.atomics > static_cast<std::uint64_t>(num_blocks)
                            ? "reduce inside the block first and let one thread per block add the block's sum."
                            : "each block must add its sum to *d_out with one atomicAdd.");
    }
  }
#endif
}

WB_CHECK(Performance, SumReadsOnce, .weight = 2, .backends = "sim",
         .limits = {{"max_read_ratio", 1.01}},
         .passes = "`reduce_sum` reads at most {max_read_ratio} x 4n bytes",
         .hint = "Read every element once: one pass with a grid-stride loop, as in version 5, rather than a "
                 "multi-pass tree that reads the input more than once.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxReadRatio = WB_LIMIT("max_read_ratio");
  const Input input = exact_input((1 << 20) + 7, 604);
  Traffic t;
  WB_ASSERT(wb::check::measure([&] { return check_final_sum(input); }, t, "reduce_sum"));
  WB_REQUIRE_ANALYSIS();
  const double read_ratio = double(t.bytes_read) / (4.0 * static_cast<double>(input.values.size()));
  wb::check::record_measured(fixed(read_ratio) + " x 4n bytes read");
  if (read_ratio > kMaxReadRatio) {
    ADD_FAILURE() << "reduce_sum read " << t.bytes_read << " bytes for n = " << input.values.size() << " floats ("
                  << fixed(read_ratio) << " x 4n; at most " << wb::check::as_written(kMaxReadRatio)
                  << " allowed): some elements are read more than once.";
  }
#endif
}

// reduce_sum's float4 loads, as Nsight Compute counts them: one request per warp instruction, a
// warp's 32 x 16 consecutive bytes being 16 sectors (cusim's GCC plugin gives every vector access
// its true width). Scalar loads of 32 consecutive floats take 4 sectors per request; float4 loads
// with lanes two float4s apart take 32. The reference measures 16.00 sectors per request at
// n = 2^20 (its few scalar tail loads are not reached: n is a multiple of 4); scalar loads measure
// 4.00 (known-wrong scalar_final_loads) and float4 loads with lanes two float4s apart 32.00
// (strided_final_float4). The window [min_sectors, max_sectors] leaves the reference's 16 a
// quarter of room below and above, and stays far from both the scalar and the strided version.
WB_CHECK(Performance, FinalLoadsVectorized, .weight = 2, .backends = "sim",
         .limits = {{"min_sectors", 12.0}, {"max_sectors", 20.0}},
         .passes = "`reduce_sum`'s global loads take {min_sectors} to {max_sectors} sectors per request "
                   "on n = 2^20 (a warp's 32 consecutive `float4`s are 16 sectors; scalar loads give 4, "
                   "lanes two `float4`s apart 32)",
         .hint = "Read the input as float4 (reinterpret_cast<const float4*>(in)), consecutive threads "
                 "reading consecutive float4s, and add the elements after the last whole float4 separately.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMinVectorLoadSectors = WB_LIMIT("min_sectors");
  constexpr double kMaxVectorLoadSectors = WB_LIMIT("max_sectors");
  const Input input = exact_input(std::size_t(1) << 20, 605);
  Traffic t;
  WB_ASSERT(wb::check::measure([&] { return check_final_sum(input); }, t, "reduce_sum"));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured(fixed(t.loads()) + " sectors/request over " + std::to_string(t.load_requests) +
                             " load requests");
  if (t.loads() < kMinVectorLoadSectors) {
    ADD_FAILURE() << "reduce_sum: its loads touch " << fixed(t.loads()) << " global memory sectors per request (at least "
                  << fixed(kMinVectorLoadSectors)
                  << " expected): a warp's float4 loads of 32 consecutive float4s are 16 sectors (512 bytes) per "
                     "request, scalar loads of 32 floats only 4. Load the input as float4.";
  } else if (t.loads() > kMaxVectorLoadSectors) {
    ADD_FAILURE() << "reduce_sum: its loads touch " << fixed(t.loads()) << " global memory sectors per request (at most "
                  << fixed(kMaxVectorLoadSectors)
                  << " allowed): consecutive float4s by consecutive threads are 16 sectors per request; more means "
                     "the lanes of a warp read float4s that are not next to each other (a stride between lanes).";
  }
#endif
}

// The launch configurations of versions 1-4, as cusim recorded them (cusim/checker.h). Pass
// after pass, m values need ceil(m / (elements per block)) blocks; sizes that are exact
// multiples of the elements per block show a block count rounded up once too often.
WB_CHECK(Performance, NoIdleBlocks, .weight = 2, .backends = "sim",
         .passes = "versions 1 to 4 launch no more blocks per pass than ceil(m / elements per block) "
                   "(block_size elements for versions 1 and 2, 2 x block_size for 3 and 4), on n = "
                   "2048, 2^16 (exact multiples) and 2^16 + 3, block sizes 64 and 256; no launch of "
                   "`reduce_sum`, `reduce_max` or `reduce_min` has more threads than n rounded up to "
                   "whole blocks (n = 33, 1000, 4099)",
         .hint = "Round the number of blocks of a pass up exactly once: (count + per_block - 1) / "
                 "per_block, where per_block is block_size (versions 1 and 2) or 2 * block_size (versions 3 "
                 "and 4); no more. The final versions: at most (n + block - 1) / block blocks, however many "
                 "multiprocessors there are.") {
  const std::vector<std::size_t> sizes = {2048, std::size_t(1) << 16, (std::size_t(1) << 16) + 3};
  std::ostringstream text;
  std::vector<std::string> failures;
  std::uint64_t seed = 605;
  for (const TreeVersion* v : kTreeVersions) {
    std::uint64_t version_threads = 0, version_limit = 0;
    int version_failures = 0;
    for (int block_size : {64, 256}) {
      for (std::size_t n : sizes) {
        const std::size_t per_block = std::size_t(block_size) * v->elements_per_thread;
        cusim::checker::clear_launches();
        WB_ASSERT(check_tree(*v, exact_input(n, seed++), block_size));
        const std::vector<cusim::checker::LaunchRecord> launches = cusim::checker::launches();
        ASSERT_FALSE(launches.empty()) << tree_call(*v, n, block_size) << " returned a correct sum but launched no kernel.";
        const std::uint64_t threads = cusim::checker::threads_launched(launches);
        std::ostringstream grids;
        for (std::size_t i = 0; i < launches.size(); ++i)
          grids << (i ? ", " : "") << launches[i].launches << " x " << launches[i].kernel << " " << launches[i].shape();
        const std::uint64_t limit = blocks_in_passes(n, per_block) * std::uint64_t(block_size);
        version_threads += threads;
        version_limit += limit;
        if (threads > limit && version_failures++ == 0) {  // the first case per version
          failures.push_back(tree_call(*v, n, block_size) + " launched " + std::to_string(threads) + " threads (" +
                             grids.str() + "); with " + std::to_string(per_block) +
                             " elements per block, its passes need " + std::to_string(blocks_in_passes(n, per_block)) +
                             " blocks of " + std::to_string(block_size) + " threads in all (" + std::to_string(limit) +
                             " threads): the extra blocks have no element to reduce. Round each pass's block count "
                             "up once, (count + per_block - 1) / per_block, not past the next multiple.");
        }
      }
    }
    text << (v == &kInterleaved ? "" : ", ") << v->name << " " << version_threads << " threads (limit "
         << version_limit << ")";
    if (version_failures > 1) {
      failures.back() += " (" + std::to_string(version_failures - 1) + " more case(s) of " + v->name + " too)";
    }
  }
  // The final versions choose their grid, but no launch should have more threads than n
  // rounded up to whole blocks: a block past that has no element to read.
  for (const std::string fn : {"reduce_sum", "reduce_max", "reduce_min"}) {
    for (std::size_t n : {std::size_t(33), std::size_t(1000), std::size_t(4099)}) {
      const Input input = exact_input(n, seed++);
      cusim::checker::clear_launches();
      WB_ASSERT(fn == "reduce_sum" ? check_final_sum(input)
                                   : check_extreme(fn == "reduce_max", input.values, "exact integer data"));
      for (const auto& l : cusim::checker::launches()) {
        const std::uint64_t block = l.threads_per_block();
        const std::uint64_t threads = l.threads_per_launch();
        const std::uint64_t limit = (n + block - 1) / block * block;
        if (threads > limit) {
          failures.push_back(fn + "(n=" + std::to_string(n) + ") launched " + l.kernel + " with grid " +
                             std::to_string(l.grid[0]) + " x " + std::to_string(l.grid[1]) + " x " +
                             std::to_string(l.grid[2]) + " of " + std::to_string(block) + " threads: " +
                             std::to_string(threads) + " threads for " + std::to_string(n) +
                             " elements, more than n rounded up to whole blocks (" + std::to_string(limit) +
                             "); the blocks past that have no element to read. Cap the grid at the blocks n needs, "
                             "as well as at a few blocks per multiprocessor.");
          break;
        }
      }
    }
  }
  wb::check::record_measured(text.str());
  for (const std::string& f : failures) ADD_FAILURE() << f;
}
#else
WB_CHECK(Performance, BandwidthVsDeviceCopy, .weight = 8, .backends = "cuda", .timeout_s = 180,
         .limits = {{"min_ratio", 0.80}},
         .passes = "`reduce_sum` on 2^26 floats reads at least {min_ratio:.0%} of the bandwidth of a "
                   "device-to-device `cudaMemcpy` of the same 256 MiB timed in the same run (the "
                   "solution reaches 89% on an H100, a kernel that only reads 91.5%); versions 1 to "
                   "5 are timed for the record",
         .hint = "One pass (version 5) with a grid of a few blocks per multiprocessor, 16-byte float4 loads "
                 "and several independent loads per thread per iteration; close other GPU programs.") {
  // A kernel that only reads pays for evicting the L2 flush's dirty lines, which a copy of twice
  // the bytes hides: on an H100 the best pure-read kernel reaches 0.915 x copy under the flush
  // (0.98-1.02 without it; docs/perf/gpu.md), so min_ratio leaves the reference (0.89) its 10%.
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  constexpr int n = 1 << 26;  // 256 MiB: far larger than any L2 cache
  // Correct first, then fast: a wrong kernel's speed means nothing.
  WB_ASSERT(check_final_sum(exact_input(n, 700)));
  try {
    // Exact data: every version's result is validated bit for bit before it is timed and after it
    // (wb_timed.h). The timed runs' changes move the input's own zeros and ones, 16 per run: the
    // ones stay far below 2^24, so every partial sum stays exact.
    Input input = exact_input(n, 701);
    wb::DeviceBuffer<float> in{std::span<const float>(input.values)};
    wb::DeviceBuffer<float> out(1);
    wb::DeviceBuffer<float> workspace(reduce_workspace_floats(n));
    wb::check::ChangingInput<float> changing(input.values, in.data());
    const double bytes = 4.0 * n;  // a reduction reads every element once
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * static_cast<std::size_t>(n));
    const auto verify = [&]() -> std::string {
      const float got = out.download()[0];
      const float expected = static_cast<float>(exact_sum(input.values));
      return got == expected ? "" : "wrong result " + number(got) + ", expected " + number(expected);
    };
    // Times one version; "" when it was timed, else why not.
    auto time_version = [&](const std::string& call, const std::function<cudaError_t()>& run,
                            wb::Bandwidth& b) -> std::string {
      return wb::check::failure_text(
          wb::check::timed_and_verified(call, bytes, run, [&] { changing.change(); }, verify, b));
    };
    wb::Bandwidth sum;
    const std::string call = "reduce_sum(n=" + std::to_string(n) + ")";
    if (const std::string why = time_version(call, [&] { return reduce_sum(in.data(), n, out.data()); }, sum);
        !why.empty()) {
      FAIL() << why;
    }
    const double ratio = sum.gb_per_s / copy.gb_per_s;
    std::string text = wb::check::versus(sum.gb_per_s, copy.gb_per_s, "copy");
    // The ladder, for the record (block_size 256; version 5 with 4 blocks per multiprocessor).
    int device = 0, sms = 0;
    WB_CUDA_CHECK(cudaGetDevice(&device));
    WB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::vector<std::pair<const char*, std::function<cudaError_t()>>> ladder = {
        {"v1", [&] { return reduce_sum_interleaved(in.data(), n, out.data(), workspace.data(), 256); }},
        {"v2", [&] { return reduce_sum_sequential(in.data(), n, out.data(), workspace.data(), 256); }},
        {"v3", [&] { return reduce_sum_first_add(in.data(), n, out.data(), workspace.data(), 256); }},
        {"v4", [&] { return reduce_sum_warp_shuffle(in.data(), n, out.data(), workspace.data(), 256); }},
        {"v5", [&] { return reduce_sum_grid_stride(in.data(), n, out.data(), 4 * sms, 256); }}};
    for (const auto& [name, run] : ladder) {
      wb::Bandwidth b;
      if (const std::string why = time_version(name, run, b); !why.empty()) {
        text += "; " + std::string(name) + " not timed (" + why + ")";
        continue;
      }
      text += "; " + std::string(name) + " " + fixed(b.gb_per_s / copy.gb_per_s) + " x";
    }
    wb::check::record_measured(text);
    EXPECT_GE(ratio, kMinRatio) << "reduce_sum reached " << text << "; it needs " << wb::check::as_written(kMinRatio)
                                << " x the copy bandwidth. A reduction reads every byte once and computes almost "
                                   "nothing: it should stream memory as fast as a copy does.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing reduce_sum: " << e.what();
  }
}
#endif
