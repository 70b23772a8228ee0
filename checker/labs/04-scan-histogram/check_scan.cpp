// Checks for lab 04, the scans; each WB_CHECK says what it runs and what passes. The histogram
// checks, and the host-code, analysis and NoIdleBlocks checks of every scan and histogram, are in
// check_histogram.cpp; what both files share is in scan_histogram_support.h.
// Outputs and workspaces carry guard zones, and outputs start as 0xCD bytes: an element never
// written is told apart from a wrong one. Inputs are surrounded by -1 (NaN for floats) and must
// come back unchanged.
// Performance on sim: cusim's analysis metrics (wb_metrics.h); on a GPU: bandwidth timed in the
// same run as a device-to-device copy and CUB (cub_baselines.cu), median of 21 runs, L2 flushed
// before each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "scan_histogram.h"
#include "scan_histogram_support.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_baseline.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_metrics.h"

#if defined(WB_HAVE_CUDA_BASELINES)
cudaError_t wb_cub_inclusive_sum(const int* d_in, int* d_out, int n, void* d_temp, std::size_t* temp_bytes);
#endif

using namespace lab04;  // what the scan and histogram checks share (scan_histogram_support.h)

// In namespace lab04: scan_ints, call_scan, check_int_scan and check_float_scan are declared in
// scan_histogram_support.h, for the host-code, analysis and NoIdleBlocks checks of
// check_histogram.cpp.
namespace lab04 {

constexpr double kUnitRoundoff = 0x1.0p-24;

std::string number(double v) { return wb::check::significant(v, 9); }

// True when @p v (an int or a float) still holds the 0xCD bytes the checker put there.
template <class T>
bool unwritten(T v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == kUnwrittenWord;
}

// ---- inputs --------------------------------------------------------------------------------

// Small integers in [-4, 12]: no prefix overflows int32 even at n = 2^26, so int scans are
// compared bit for bit with prefix sums computed on the host in 64-bit integers.
std::vector<int> scan_ints(std::size_t n, std::uint64_t seed) {
  std::vector<int> v(n);
  wb::Random rng(seed * 7919 + 3);
  for (int& x : v) x = static_cast<int>(rng.next_int(-4, 12));
  return v;
}

std::vector<std::int64_t> inclusive_prefix(const std::vector<int>& in) {
  std::vector<std::int64_t> out(in.size());
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = sum += in[i];
  return out;
}

// ---- running student code --------------------------------------------------------------------

// Runs @p launch on ScanBuffers of @p input, checks the status, device errors, writes out of bounds
// and the input (after_call), and downloads the output.
template <class T>
testing::AssertionResult run_scan(const std::vector<T>& input, const std::string& call, const char* function,
                                  bool with_workspace, const std::function<cudaError_t(const T*, T*, void*)>& launch,
                                  std::vector<T>& output) {
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    ScanBuffers<T> b(input, with_workspace);
    const cudaError_t status = launch(b.in.dev.data(), b.out.dev.data(), b.workspace.data());
    const wb::check::BufferChecks checks = {
        [&] { return b.out.in_bounds(call); }, [&] { return b.workspace_in_bounds(call); },
        [&] { return b.in.unchanged(call, "keep partial sums in shared memory, d_out or the workspace."); }};
    if (auto r = after_call(status, call, function, checks); !r) return r;
    output = b.out.dev.download();
    return testing::AssertionSuccess();
  });
}

// Explains a wrong int scan: the first wrong index, and the pattern behind it. @p look_back: the
// version is a single pass whose tiles get their offsets from a decoupled look-back.
testing::AssertionResult int_scan_matches(const std::vector<int>& in, const std::vector<int>& got, bool inclusive,
                                          bool look_back, const std::string& call, std::uint64_t seed) {
  const std::size_t n = in.size();
  const std::vector<std::int64_t> incl = inclusive_prefix(in);
  auto expected_at = [&](std::size_t i) -> std::int64_t { return inclusive ? incl[i] : incl[i] - in[i]; };
  const wb::check::Mismatches m =
      wb::check::find_mismatches(n, [&](std::size_t i) { return got[i] != expected_at(i); });
  if (m.none()) return testing::AssertionSuccess();
  const std::size_t i = m.first;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " [ints in [-4, 12], seed " << seed << "]: " << m.count << " of " << n
          << " elements wrong; the first is out[" << i << "]";
  if (unwritten(got[i])) {
    std::size_t last = i;
    while (last + 1 < n && unwritten(got[last + 1])) ++last;
    failure << ": out[" << i << ".." << last << "] were never written (still the 0xCD bytes the checker put there).";
    if (last + 1 == n) {
      failure << " The elements from index " << i << " to the end were not processed: the last, partial tile was "
              << "dropped. Round the number of blocks up ((n + tile - 1) / tile) and test every index against n.";
    } else {
      failure << " Every element of every tile must be stored.";
    }
    return failure;
  }
  failure << " = " << got[i] << ", expected " << expected_at(i) << " (in[" << i << "] = " << in[i] << ").";
  const std::int64_t g = got[i];
  if (!inclusive && g == incl[i]) {
    failure << " This looks like an inclusive scan: out[" << i << "] equals in[0] + ... + in[" << i
            << "]. An exclusive scan leaves in[i] out: out[0] = 0 and out[i] = in[0] + ... + in[i-1] (shift the "
               "inclusive result right by one, or write the running sum before adding the element).";
    return failure;
  }
  if (inclusive && in[i] != 0 && g == incl[i] - in[i]) {
    failure << " This looks like an exclusive scan: out[" << i << "] equals in[0] + ... + in[" << i - 1
            << "] without in[" << i
            << "]. An inclusive scan includes the element itself: out[i] = in[0] + ... + in[i].";
    return failure;
  }
  // The stretch from out[i] on that is off by one amount: every element got the same wrong
  // offset, the prefix of the tile that starts there (elements of one tile that disagree point
  // elsewhere). A short one is only telling when it is the last tile.
  const std::int64_t off = g - expected_at(i);
  std::size_t end = i + 1;
  while (end < n && std::int64_t(got[end]) - expected_at(end) == off) ++end;
  const bool tile_offset = i > 0 && (end - i >= 32 || end == n);
  // Does got[i] equal the sum of in[k..i] for some tile start k: were earlier tiles not added?
  // (k < i only for a whole stretch off by one amount: a single element matches some k by chance.)
  const std::int64_t as_inclusive = inclusive ? g : g + in[i];
  for (std::size_t k = i; k > 0 && i - k < 70000 && (k == i || end - i >= 32); --k) {
    if (as_inclusive == incl[i] - incl[k - 1]) {
      failure << " It equals in[" << k << "] + ... + in[" << i << "] only: the " << k << " elements before index "
              << k << " were not added. Index " << k << " starts a new tile (block): add the sum of all earlier "
              << "tiles (the scanned tile sums, or the look-back prefix) to every element of the tile.";
      return failure;
    }
  }
  if (tile_offset) {
    failure << " out[" << i << ".." << end - 1 << "] (" << end - i << (end - i == 1 ? " element" : " elements")
            << ") " << (end - i == 1 ? "is" : "are all") << " off by " << off
            << ": the prefix added to the tile that starts at index " << i << " was wrong";
    if (off == incl[end - 1] - incl[i - 1]) {
      failure << " by exactly the sum of in[" << i << ".." << end - 1 << "], the tile itself: its offset must be "
              << "the sum of the elements before the tile (the exclusive prefix), without the tile's own sum.";
    } else if (look_back) {
      failure << ". Its look-back added a wrong value for a predecessor. Look for: a tile sum taken before "
              << "every warp had written its part (a missing __syncthreads() in the block scan, of this tile or "
              << "of a predecessor); a status word read torn, its flag already visible but its value not yet (on "
              << "a GPU another block may see two stores in either order, although a CPU never shows it: pack "
              << "flag and value into one 64-bit word written by one store, or write the value, "
              << "__threadfence(), then the flag, and poll status words through a volatile pointer or with "
              << "atomics); a value taken from the wrong bits of the status word.";
    } else {
      failure << ": check the scanned tile sums, and that they are complete (a __syncthreads() after writing "
              << "them in shared memory) before the tile reads its own.";
    }
    return failure;
  }
  if (i > 0) {
    failure << " out[0.." << i - 1 << "] are right. A value that depends on the run, or elements of one tile "
            << "that disagree, usually means a missing __syncthreads() between writing and reading shared memory.";
  }
  return failure;
}

// Compensated double prefix sums and prefix sums of |x|, the reference of float scans.
void float_references(const std::vector<float>& in, std::vector<double>& prefix, std::vector<double>& abs_prefix) {
  prefix.resize(in.size());
  abs_prefix.resize(in.size());
  double sum = 0.0, c = 0.0, abs_sum = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double x = in[i], t = sum + x;
    c += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
    abs_sum += std::fabs(x);
    prefix[i] = sum + c;
    abs_prefix[i] = abs_sum;
  }
}

// A float scan of random data in [-1, 2): out[i] must lie within the rounding error bound of a
// float sum of i + 1 terms in any order, gamma(i) * sum_{j<=i} |x_j| with gamma(k) = k u / (1 - k u),
// u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 4.2), of the compensated
// double-precision prefix sum.
testing::AssertionResult float_scan_matches(const std::vector<float>& in, const std::vector<float>& got,
                                            const std::string& call, std::uint64_t seed) {
  std::vector<double> prefix, abs_prefix;
  float_references(in, prefix, abs_prefix);
  auto allowed = [&](std::size_t i) {
    const double k = static_cast<double>(i);
    return k * kUnitRoundoff / (1.0 - k * kUnitRoundoff) * abs_prefix[i];
  };
  auto right = [&](std::size_t i) {
    return !std::isnan(got[i]) && std::fabs(static_cast<double>(got[i]) - prefix[i]) <= allowed(i);
  };
  const wb::check::Mismatches m = wb::check::find_mismatches(in.size(), [&](std::size_t i) { return !right(i); });
  if (m.none()) return testing::AssertionSuccess();
  const std::size_t i = m.first;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " [random floats in [-1, 2), seed " << seed << "]: " << m.count << " of " << in.size()
          << " elements wrong; the first is out[" << i << "]";
  if (unwritten(got[i])) {
    failure << ", never written (still the 0xCD bytes the checker put there): every element must be stored.";
    return failure;
  }
  failure << " = " << number(got[i]) << ", expected " << number(prefix[i]) << " (difference "
          << number(std::fabs(got[i] - prefix[i])) << ", allowed " << number(allowed(i))
          << " = gamma(i) * sum |x_j|, the rounding error of a float sum of i + 1 terms in any order).";
  if (i > 0 && std::fabs(static_cast<double>(got[i]) - (prefix[i] - in[i])) <= allowed(i) + 1e-6) {
    failure << " It equals the exclusive prefix: the element itself was left out.";
  }
  return failure;
}

// ---- the scans --------------------------------------------------------------------------------

cudaError_t call_scan(const ScanVersion& v, const int* in, int* out, int n, void* ws) {
  switch (v.kind) {
    case ScanKind::kKoggeStone: return scan_block_kogge_stone(in, out, n);
    case ScanKind::kBlelloch: return scan_block_blelloch(in, out, n);
    case ScanKind::kReduceThenScan: return scan_reduce_then_scan(in, out, n, ws);
    case ScanKind::kInclusive: return inclusive_scan(in, out, n, ws);
    case ScanKind::kExclusive: return exclusive_scan(in, out, n, ws);
  }
  return cudaErrorInvalidValue;
}

testing::AssertionResult check_int_scan(const ScanVersion& v, std::size_t n, std::uint64_t seed) {
  const std::vector<int> input = scan_ints(n, seed);
  const std::string call = std::string(v.name) + "(n=" + std::to_string(n) + ")";
  std::vector<int> got;
  auto launch = [&](const int* in, int* out, void* ws) { return call_scan(v, in, out, static_cast<int>(n), ws); };
  if (auto r = run_scan<int>(input, call, v.name, v.workspace, launch, got); !r) return r;
  const bool look_back = v.kind == ScanKind::kInclusive || v.kind == ScanKind::kExclusive;
  return int_scan_matches(input, got, v.inclusive, look_back, call, seed);
}

testing::AssertionResult check_float_scan(std::size_t n, std::uint64_t seed) {
  const std::vector<float> input = wb::random_floats(n, seed, -1.0f, 2.0f);
  const std::string call = "inclusive_scan(float, n=" + std::to_string(n) + ")";
  std::vector<float> got;
  auto launch = [&](const float* in, float* out, void* ws) { return inclusive_scan(in, out, static_cast<int>(n), ws); };
  if (auto r = run_scan<float>(input, call, "inclusive_scan", true, launch, got); !r) return r;
  return float_scan_matches(input, got, call, seed);
}

// @p v on each of @p sizes in order, with the seeds @p seed, @p seed + 1, ...: "k/n cases correct".
testing::AssertionResult scan_sizes(const ScanVersion& v, const std::vector<std::size_t>& sizes, std::uint64_t seed) {
  return wb::check::for_each_case(sizes, [&](std::size_t n) { return check_int_scan(v, n, seed++); });
}

}  // namespace lab04

// ---- Correctness ---------------------------------------------------------------------

WB_CHECK(Correctness, KoggeStoneBlock, .weight = 2,
         .passes = "exact inclusive scans, n = 0 .. 1024 (around 32, 64, 256, 1024; every n % 4 "
                   "after whole 16-byte loads)",
         .hint = "One block of n threads (rounded up to a multiple of 32); for d = 1, 2, 4, ...: read "
                 "values[t] and values[t - d] (if t >= d), __syncthreads(), write values[t], "
                 "__syncthreads().") {
  WB_ASSERT(scan_sizes(kKoggeStone,
                       {0, 1, 2, 31, 32, 33, 63, 64, 65, 66, 100, 255, 256, 257, 511, 1000, 1022, 1023, 1024}, 10));
}

WB_CHECK(Correctness, BlellochBlock, .weight = 2,
         .passes = "exact exclusive scans, n = 0 .. 2048 (the same, and around 2048)",
         .hint = "Pad to m = a power of two >= n with zeros, m / 2 threads; up-sweep, set the last "
                 "element to 0, down-sweep; out[0] must be 0 (exclusive).") {
  WB_ASSERT(scan_sizes(kBlelloch,
                       {0,    1,    2,    3,    31,   32,   33,   63,   64,   65,   66,  255,
                        256,  257,  1000, 1022, 1023, 1024, 1025, 1500, 2046, 2047, 2048},
                       100));
}

WB_CHECK(Correctness, ReduceThenScan, .weight = 3,
         .passes = "exact inclusive scans, 26 sizes from 0 to 2^20 + 7 around tiles of 32 to 4096 "
                   "(partial tiles; more tiles than one block scans, for tiles of 512 and 1024); on "
                   "a GPU also 2^26 (65536 tiles of 1024: a grid of one block per tile past 65535 "
                   "blocks)",
         .hint = "Round the number of tiles up; scan the tile sums exclusively (recursively when there "
                 "are more tiles than one block scans); add tile b's offset to every element of tile b.") {
  WB_ASSERT(scan_sizes(kReduceThenScan,
                       {0, 1, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1026, 2047, 2048, 2049,
                        4095, 4096, 4097, 5378, 65537, 100003, (1 << 18) + 1, (1 << 20) + 7
#if !defined(CUSIM)
                        // One block per tile: 65536 tiles of 1024 elements, past 65535 (the limit of
                        // gridDim.y and z, not of x). On the sim backend this size takes too long.
                        ,
                        std::size_t(1) << 26
#endif
                       },
                       200));
}

// The sizes of InclusiveScan and FloatScan (ExclusiveScan's leave out 4096).
const std::vector<std::size_t> kScanSizes = {0,    1,    2,    31,   32,   33,   255,  256,   257,    511,
                                             512,  513,  1023, 1024, 1025, 1026, 2047, 2048,  2049,   3839,
                                             3840, 3841, 4096, 4097, 5375, 5376, 5377, 5378,  65537,  100003,
                                             (1 << 20) + 7};

// What passes, for InclusiveScan, ExclusiveScan.
constexpr char kScanPasses[] = "exact scans, about 30 sizes from 0 to 2^20 + 7, around 32, 256, 512, 1024, 2048, "
                               "3840, 4096, 5376";

WB_CHECK(Correctness, InclusiveScan, .weight = 2,
         .passes = kScanPasses,
         .hint = "Start from scan_reduce_then_scan; every tile needs the sum of all elements before it, "
                 "and the last tile is usually partial.") {
  WB_ASSERT(scan_sizes(kInclusive, kScanSizes, 300));
}

WB_CHECK(Correctness, ExclusiveScan, .weight = 2,
         .passes = kScanPasses,
         .hint = "out[0] = 0 and out[i] = in[0] + ... + in[i-1]: write the running sum before adding the "
                 "element.") {
  std::vector<std::size_t> sizes = kScanSizes;
  std::erase(sizes, 4096);
  WB_ASSERT(scan_sizes(kExclusive, sizes, 400));
}

WB_CHECK(Correctness, FloatScan, .weight = 1,
         .passes = "`inclusive_scan(float)` within `gamma(i) sum |x_j|` per element, the int scans' "
                   "sizes from 0 to 2^20 + 7",
         .hint = "Template the scan on the element type; pad missing elements with 0.0f, and keep the "
                 "float bits intact when you store them in a status word (__float_as_uint).") {
  std::uint64_t seed = 500;
  WB_ASSERT(wb::check::for_each_case(kScanSizes, [&](std::size_t n) { return check_float_scan(n, seed++); }));
}

// The largest sizes: 2^22 + 3 on the sim backend; 2^26 - 1 and 2^26 on a GPU.
WB_CHECK(Correctness, ScanLarge, .weight = 1,
         .passes = "`inclusive_scan` and `exclusive_scan` for n = 2^22 + 3 (sim); 2^26 - 1 and 2^26 "
                   "(GPU)",
         .hint = "Use 64-bit or carefully bounded index arithmetic, and make sure the workspace (tile "
                 "sums or status words) is cleared or written before it is read in every call.") {
#if defined(CUSIM)
  const std::vector<std::size_t> sizes = {(std::size_t(1) << 22) + 3};
#else
  const std::vector<std::size_t> sizes = {(std::size_t(1) << 26) - 1, std::size_t(1) << 26};
#endif
  wb::check::Cases cases(2 * sizes.size());
  std::uint64_t seed = 600;
  for (std::size_t n : sizes) {
    for (const ScanVersion* v : {&kInclusive, &kExclusive}) WB_ASSERT(cases(check_int_scan(*v, n, seed++)));
  }
}

// ---- Performance -----------------------------------------------------------------------

#if defined(CUSIM)
namespace {

using wb::check::Traffic;

constexpr std::size_t kMetricScanSize = (1 << 18) + 3;

#if WB_HAVE_CUSIM_ANALYSIS
// The traffic of @p v's int scan of @p n elements (a correct one).
testing::AssertionResult measure_scan(const ScanVersion& v, std::size_t n, std::uint64_t seed, Traffic& t) {
  return wb::check::measure([&] { return check_int_scan(v, n, seed); }, t, v.name);
}

// Global bytes read and written per 4n bytes: a scan that reads and writes every element once moves 2.
double moved_per_4n(const Traffic& t, std::size_t n) { return double(t.bytes_read + t.bytes_written) / (4.0 * n); }
#endif

}  // namespace

WB_CHECK(Performance, ReduceThenScanTraffic, .weight = 3, .backends = "sim",
         .limits = {{"max_read", 2.1}, {"max_written", 1.1}, {"max_sectors", 4.0}},
         .passes = "`scan_reduce_then_scan` (n = 2^18 + 3): bytes read <= {max_read} x 4n, written <= "
                   "{max_written} x 4n; loads and stores <= {max_sectors:.2f} sectors/request",
         .hint = "Phase 1 reads the input once to reduce each tile; phase 3 reads it again and writes the "
                 "output once. Load and store with consecutive threads on consecutive elements (in[base + j "
                 "* blockDim.x + t]), staging the tile in shared memory when a thread scans several "
                 "consecutive elements.") {
  constexpr double kMaxRead = WB_LIMIT("max_read"), kMaxWritten = WB_LIMIT("max_written");
  constexpr double kMaxSectors = WB_LIMIT("max_sectors");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  Traffic t;
  WB_ASSERT(measure_scan(kReduceThenScan, kMetricScanSize, 1100, t));
  WB_REQUIRE_ANALYSIS();
  const double bytes = 4.0 * kMetricScanSize;
  const double read = double(t.bytes_read) / bytes, written = double(t.bytes_written) / bytes;
  wb::check::record_measured(fixed(read) + " x 4n read, " + fixed(written) + " x 4n written; loads " +
                             fixed(t.loads()) + ", stores " + fixed(t.stores()) + " sectors/request");
  if (read > kMaxRead || written > kMaxWritten) {
    ADD_FAILURE() << "scan_reduce_then_scan(n=" << kMetricScanSize << ") read " << fixed(read) << " x 4n and wrote "
                  << fixed(written) << " x 4n bytes (at most " << as_written(kMaxRead) << " and "
                  << as_written(kMaxWritten) << " allowed). Reduce-then-scan reads every element twice (once to "
                  << "reduce its tile, once to scan it) and writes it once; "
                  << (read > kMaxRead ? "reading more means passes over the whole array (a scan that adds element "
                                        "i - d in global memory reads it log2(n) times)."
                                      : "writing more means the output is written and then corrected "
                                        "(scan-then-add): reduce the tiles first instead.");
  }
  if (t.loads() > kMaxSectors || t.stores() > kMaxSectors) {
    ADD_FAILURE() << "scan_reduce_then_scan(n=" << kMetricScanSize << "): loads touch " << fixed(t.loads())
                  << " and stores " << fixed(t.stores()) << " global memory sectors per request (at most "
                  << fixed(kMaxSectors) << " allowed). A warp reading 32 consecutive "
                     "ints touches 4 sectors of 32 bytes; a thread reading in[t * items + j] makes a warp's lanes "
                     "items * 4 bytes apart. Load the tile with in[base + j * blockDim.x + t] into shared memory, "
                     "then let each thread scan its consecutive elements from there.";
  }
#endif
}

WB_CHECK(Performance, ScanTraffic, .weight = 2, .backends = "sim", .limits = {{"max_moved", 3.1}},
         .passes = "`inclusive_scan` (n = 2^18 + 3): bytes read + written <= {max_moved} x 4n",
         .hint = "Touch every element a bounded number of times: reduce-then-scan moves 3 x 4n bytes, a "
                 "single pass with decoupled look-back 2 x 4n; a scan with a pass over global memory per "
                 "step moves O(n log n).") {
  constexpr double kMaxMoved = WB_LIMIT("max_moved");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  Traffic t;
  WB_ASSERT(measure_scan(kInclusive, kMetricScanSize, 1101, t));
  WB_REQUIRE_ANALYSIS();
  const double moved = moved_per_4n(t, kMetricScanSize), bytes = 4.0 * kMetricScanSize;
  wb::check::record_measured(fixed(moved) + " x 4n bytes moved (" + fixed(double(t.bytes_read) / bytes) + " read, " +
                             fixed(double(t.bytes_written) / bytes) + " written)");
  if (moved > kMaxMoved) {
    ADD_FAILURE() << "inclusive_scan(n=" << kMetricScanSize << ") read and wrote " << fixed(moved)
                  << " x 4n bytes of global memory (at most " << as_written(kMaxMoved)
                  << " allowed). A scan has to read n elements and write n; "
                     "reduce-then-scan adds one more read (3 x 4n), a single pass with decoupled look-back none "
                     "(2 x 4n). On a GPU, Performance.ScanBandwidthVsDeviceCopy asks for a share of the copy "
                     "bandwidth that needs at most about 3 x 4n bytes.";
  }
#endif
}

// A single pass's look-back reads a window of status words per tile when every tile publishes
// its inclusive prefix; a tile that never does sends each successor back to tile 0, so the
// reads per element grow with the number of tiles. The reference moves 2.02 x 4n bytes at both
// sizes; that mistake 2.02 at 2^18+3 and 2.29 at 2^22+3 (1093 tiles of 3840, the reference's tile
// then). max_growth lies between.
WB_CHECK(Performance, ScanTrafficPerElement, .weight = 1, .backends = "sim", .limits = {{"max_growth", 0.05}},
         .passes = "`inclusive_scan`: bytes moved per element at n = 2^22 + 3 at most {max_growth} x 4 "
                   "bytes more than at 2^18 + 3",
         .hint = "Traffic per element must not grow with n: in a single pass, each tile publishes its "
                 "inclusive prefix (flag INCLUSIVE) as soon as it knows it, so that a successor's look-back "
                 "stops there.") {
  constexpr double kMaxGrowth = WB_LIMIT("max_growth");
  constexpr std::size_t kLarge = (std::size_t(1) << 22) + 3;
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  Traffic small, large;
  WB_ASSERT(measure_scan(kInclusive, kMetricScanSize, 1103, small));
  WB_ASSERT(measure_scan(kInclusive, kLarge, 1104, large));
  WB_REQUIRE_ANALYSIS();
  const double per_small = moved_per_4n(small, kMetricScanSize), per_large = moved_per_4n(large, kLarge);
  wb::check::record_measured(fixed(per_small) + " x 4n bytes at n = 2^18+3, " + fixed(per_large) +
                             " x 4n at n = 2^22+3");
  if (per_large > per_small + kMaxGrowth) {
    ADD_FAILURE() << "inclusive_scan moved " << fixed(per_small) << " x 4n bytes of global memory at n="
                  << kMetricScanSize << " but " << fixed(per_large) << " x 4n at n=" << kLarge << " (at most "
                  << as_written(kMaxGrowth) << " x 4n more allowed): the traffic per element grows with n. In a "
                  << "single pass with decoupled look-back, a tile that never publishes its inclusive prefix (flag "
                  << "INCLUSIVE, its prefix + its own sum) sends every later tile's look-back back to tile 0: "
                  << "publish it as soon as the tile knows its prefix.";
  }
#endif
}
#else
namespace {

using wb::check::versus;

// The timing data of the scan checks: 2^26 ints on the device, which every timed scan (the lab's,
// and CUB's once prepare_cub() has sized its temporary storage) must leave as inclusive prefix sums
// before timing and after it, the timed runs each given changed inputs (wb_timed.h: values of the
// input moved, so they stay in [-4, 12] and no prefix overflows).
struct TimedScan {
  static constexpr int n = 1 << 26;
  static constexpr double bytes = 8.0 * n;  // read n ints, write n ints
  std::vector<int> input;
  wb::DeviceBuffer<int> in, out;
  wb::DeviceBuffer<unsigned char> workspace;
  wb::check::ChangingInput<int> changing;
  explicit TimedScan(std::uint64_t seed)
      : input(scan_ints(n, seed)),
        in(std::span<const int>(input)),
        out(n),
        workspace(scan_workspace_bytes(n)),
        changing(input, in.data()) {}
  // "" when out holds the inclusive prefix sums of the current input, else where it does not.
  std::string verify() const {
    const std::vector<int> got = out.download();
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      sum += input[i];
      if (got[i] != sum) return "wrong result: out[" + std::to_string(i) + "] is " + std::to_string(got[i]) +
                                ", expected " + std::to_string(sum);
    }
    return "";
  }
  // Times @p run (validated before and after); "" when it was timed, else why not.
  std::string time(const std::string& call, const std::function<cudaError_t()>& run, wb::Bandwidth& b) {
    return wb::check::failure_text(wb::check::timed_and_verified(
        call, bytes, run, [&] { changing.change(); }, [&] { return verify(); }, b));
  }
  cudaError_t scan() { return inclusive_scan(in.data(), out.data(), n, workspace.data()); }
#if defined(WB_HAVE_CUDA_BASELINES)
  std::size_t cub_temp_bytes = 0;
  wb::DeviceBuffer<unsigned char> cub_temp;
  void prepare_cub() {
    WB_CUDA_CHECK(wb_cub_inclusive_sum(in.data(), out.data(), n, nullptr, &cub_temp_bytes));
    cub_temp = wb::DeviceBuffer<unsigned char>(std::max<std::size_t>(cub_temp_bytes, 1));
  }
  cudaError_t cub() {
    std::size_t bytes_needed = cub_temp_bytes;
    return wb_cub_inclusive_sum(in.data(), out.data(), n, cub_temp.data(), &bytes_needed);
  }
#endif
};

const std::string kTimedScanCall = "inclusive_scan(n=" + std::to_string(TimedScan::n) + ")";

}  // namespace

WB_CHECK(Performance, ScanBandwidthVsDeviceCopy, .weight = 6, .backends = "cuda", .timeout_s = 240,
         .limits = {{"min_ratio", 0.60}},
         .passes = "`inclusive_scan` on 2^26 ints moves (read n + write n) at >= {min_ratio:.2f} x the "
                   "bandwidth of a device-to-device copy timed in the same run; version 3 and CUB "
                   "`DeviceScan::InclusiveSum` are timed beside it",
         .hint = "A single pass with decoupled look-back reads and writes every element once; load tiles "
                 "with coalesced (striped) loads, give every thread a dozen or more elements, and let the "
                 "look-back run in one warp.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  constexpr int n = TimedScan::n;
  WB_ASSERT(check_int_scan(kInclusive, n, 1400));
  try {
    TimedScan s(1401);
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * static_cast<std::size_t>(n));
    wb::Bandwidth b;
    if (const std::string why = s.time(kTimedScanCall, [&] { return s.scan(); }, b); !why.empty()) FAIL() << why;
    const double ratio = b.gb_per_s / copy.gb_per_s;
    std::string text = versus(b.gb_per_s, copy.gb_per_s, "copy");
    wb::Bandwidth rts;
    if (const std::string why = s.time("scan_reduce_then_scan", [&] {
          return scan_reduce_then_scan(s.in.data(), s.out.data(), n, s.workspace.data());
        }, rts);
        why.empty()) {
      text += "; scan_reduce_then_scan " + fixed(rts.gb_per_s / copy.gb_per_s) + " x";
    } else {
      text += "; scan_reduce_then_scan not timed (" + why + ")";
    }
#if defined(WB_HAVE_CUDA_BASELINES)
    wb::Bandwidth cub;
    std::string cub_why;
    {
      // CUB on the same data, out of the lab's reach where the checks are split (wb_baseline.h).
      wb::check::InCheckersProcess checkers;
      TimedScan c(1401);
      c.prepare_cub();
      cub_why = c.time("CUB InclusiveSum", [&] { return c.cub(); }, cub);
    }
    if (const std::string& why = cub_why; why.empty()) {
      text += "; CUB InclusiveSum " + fixed(cub.gb_per_s / copy.gb_per_s) + " x copy (inclusive_scan = " +
              fixed(b.gb_per_s / cub.gb_per_s) + " x CUB)";
    } else {
      text += "; CUB not timed (" + why + ")";
    }
#endif
    wb::check::record_measured(text);
    EXPECT_GE(ratio, kMinRatio) << "inclusive_scan reached " << text << "; it needs " << as_written(kMinRatio)
                                << " x the copy bandwidth. A scan reads and writes every element once, like a copy; "
                                   "reduce-then-scan reads the input twice, which caps it near 0.67 x.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing inclusive_scan: " << e.what();
  }
}

WB_CHECK(Performance, ScanVsCub, .weight = 4, .backends = "cuda", .timeout_s = 240,
         .limits = {{"min_ratio", 0.80}},
         .passes = "`inclusive_scan` on 2^26 ints reaches >= {min_ratio:.2f} x CUB "
                   "`DeviceScan::InclusiveSum`, timed in the same run",
         .hint = "CUB uses a single pass with decoupled look-back. Tune the tile (threads x items per "
                 "thread), keep the look-back in one warp reading 32 predecessors' status words at a time, "
                 "and back off with __nanosleep while predecessors are not ready.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this build has no CUB baseline (cub_baselines.cu is compiled on the cuda backend only)");
#else
  constexpr int n = TimedScan::n;
  WB_ASSERT(check_int_scan(kInclusive, n, 1500));
  try {
    TimedScan s(1501);
    // One after the other, on the same data; CUB out of the lab's reach where the checks are split
    // (wb_baseline.h).
    wb::Bandwidth scan, cub;
    if (const std::string why = s.time(kTimedScanCall, [&] { return s.scan(); }, scan); !why.empty()) FAIL() << why;
    std::string cub_why;
    {
      wb::check::InCheckersProcess checkers;
      TimedScan c(1501);
      c.prepare_cub();
      cub_why = c.time("the CUB baseline", [&] { return c.cub(); }, cub);
    }
    if (!cub_why.empty()) FAIL() << cub_why;
    const double ratio = scan.gb_per_s / cub.gb_per_s;
    const std::string text = versus(scan.gb_per_s, cub.gb_per_s, "CUB");
    wb::check::record_measured(text);
    EXPECT_GE(ratio, kMinRatio) << "inclusive_scan reached " << text << "; it needs " << as_written(kMinRatio)
                                << " x CUB's DeviceScan::InclusiveSum, timed in the same run.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing inclusive_scan against CUB: " << e.what();
  }
#endif
}
#endif
