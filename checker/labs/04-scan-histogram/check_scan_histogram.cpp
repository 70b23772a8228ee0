// Checks for lab 04 (scan and histogram); each WB_CHECK says what it runs and what passes.
// Outputs, bins and workspaces carry guard zones, and outputs and bins start as 0xCD bytes: an
// element never written is told apart from a wrong one, and a histogram that does not clear its
// bins first shows. Inputs are surrounded by -1 (NaN for floats) and must come back unchanged.
// Host code (sim): cusim's device memory and fault injection (wb_host_checks.h).
// Performance on sim: cusim's analysis metrics (wb_metrics.h); on a GPU: bandwidth timed in the
// same run as a device-to-device copy and CUB (cub_baselines.cu), median of 21 runs, L2 flushed
// before each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scan_histogram.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_metrics.h"

#if defined(CUSIM)
#include <cusim/checker.h>
#endif
#include "wb_host_checks.h"

#if defined(WB_HAVE_CUDA_BASELINES)
cudaError_t wb_cub_inclusive_sum(const int* d_in, int* d_out, int n, void* d_temp, std::size_t* temp_bytes);
cudaError_t wb_cub_histogram_even(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, void* d_temp,
                                  std::size_t* temp_bytes);
#endif

namespace {

using wb::check::after_call;
using wb::check::as_written;
using wb::check::cuda_success;
using wb::check::fixed;
using wb::check::Input;
using wb::check::Output;

constexpr unsigned char kUnwrittenByte = 0xCD;
constexpr std::uint32_t kUnwrittenWord = 0xCDCDCDCDu;
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

// Guarded device buffers of a scan (wb_buffers.h): the input, the output and the workspace (none, and
// a null workspace.data(), for the block scans). Output and workspace start as 0xCD bytes (the
// workspace's contents are undefined on entry).
template <class T>
struct ScanBuffers {
  Input<T> in;
  Output<T> out;
  wb::DeviceBuffer<unsigned char> workspace;
  ScanBuffers(std::vector<T> input, bool with_workspace)
      : in(std::move(input), "d_in"), out(in.host.size(), "d_out", kUnwrittenByte) {
    if (with_workspace) {
      workspace = wb::DeviceBuffer<unsigned char>(scan_workspace_bytes(static_cast<int>(in.host.size())), 4096);
      workspace.fill_bytes(kUnwrittenByte);
    }
  }
  testing::AssertionResult workspace_in_bounds(const std::string& call) const {
    if (const wb::GuardDamage d = workspace.check_guards(); !d.intact()) {
      return testing::AssertionFailure()
             << call << " wrote outside d_workspace[0.." << workspace.size() << ") (byte " << d.first_index << " to "
             << d.last_index << "): the workspace holds scan_workspace_bytes(n) bytes, enough for tiles of at least "
             << "32 elements.";
    }
    return testing::AssertionSuccess();
  }
};

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

enum class ScanKind { kKoggeStone, kBlelloch, kReduceThenScan, kInclusive, kExclusive };

struct ScanVersion {
  const char* name;
  ScanKind kind;
  bool inclusive;
  bool workspace;
};

const ScanVersion kKoggeStone{"scan_block_kogge_stone", ScanKind::kKoggeStone, true, false};
const ScanVersion kBlelloch{"scan_block_blelloch", ScanKind::kBlelloch, false, false};
const ScanVersion kReduceThenScan{"scan_reduce_then_scan", ScanKind::kReduceThenScan, true, true};
const ScanVersion kInclusive{"inclusive_scan", ScanKind::kInclusive, true, true};
const ScanVersion kExclusive{"exclusive_scan", ScanKind::kExclusive, false, true};

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

// ---- the histograms ---------------------------------------------------------------------------

struct HistogramInput {
  std::vector<unsigned> values;
  int num_bins = 0;
  std::string kind;
  std::size_t out_of_range = 0;
  std::size_t tail = 0;  // zeros (bin 0) in memory after d_values[n - 1], not part of the input
};

// The input followed in memory by @p tail zeros: counting past n shows in bin 0.
HistogramInput with_zeros_after(HistogramInput h, std::size_t tail) {
  h.tail = tail;
  h.kind += ", " + std::to_string(tail) + " zeros after d_values[n-1]";
  return h;
}

std::size_t bins_with_values(const HistogramInput& h) {
  std::vector<bool> used(static_cast<std::size_t>(h.num_bins), false);
  for (unsigned v : h.values) {
    if (v < used.size()) used[v] = true;
  }
  return static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
}

// About 1% of the values out of range (num_bins .. 0xffffffff): they must be ignored.
HistogramInput uniform_values(std::size_t n, int num_bins, std::uint64_t seed) {
  HistogramInput h{std::vector<unsigned>(n), num_bins, "uniform, ~1% out of range", 0};
  wb::Random rng(seed * 104729 + 5);
  for (unsigned& v : h.values) {
    const std::uint64_t r = rng.next_u64();
    if (r % 100 == 0) {
      v = (r >> 32) % 2 ? 0xffffffffu : static_cast<unsigned>(num_bins) + static_cast<unsigned>((r >> 40) % 1000);
      ++h.out_of_range;
    } else {
      v = static_cast<unsigned>((r >> 8) % static_cast<std::uint64_t>(num_bins));
    }
  }
  return h;
}

// The adversarial case for atomics: every thread increments the same counter.
HistogramInput one_bin_values(std::size_t n, int num_bins, unsigned bin) {
  return HistogramInput{std::vector<unsigned>(n, bin), num_bins, "all values in bin " + std::to_string(bin), 0};
}

// The last bin and the first value out of range: v <= num_bins instead of v < num_bins counts
// every second value into d_bins[num_bins], past the end.
HistogramInput boundary_values(std::size_t n, int num_bins, std::uint64_t seed) {
  HistogramInput h{std::vector<unsigned>(n), num_bins, "values num_bins-1 and num_bins (out of range)", 0};
  wb::Random rng(seed * 7477 + 11);
  for (unsigned& v : h.values) {
    v = static_cast<unsigned>(num_bins) - (rng.next_u64() % 2 ? 1u : 0u);
    h.out_of_range += v == static_cast<unsigned>(num_bins);
  }
  return h;
}

HistogramInput edge_values(std::size_t n, int num_bins, std::uint64_t seed) {
  HistogramInput h{std::vector<unsigned>(n), num_bins, "only bins 0 and num_bins-1", 0};
  wb::Random rng(seed * 31337 + 7);
  for (unsigned& v : h.values) v = rng.next_u64() % 2 ? 0u : static_cast<unsigned>(num_bins - 1);
  return h;
}

enum class HistogramKind { kGlobalAtomics, kShared, kFinal };

struct HistogramVersion {
  const char* name;
  HistogramKind kind;
  int num_blocks = 0, block_size = 0;  // the grid histogram_shared is asked for
};

const HistogramVersion kGlobalAtomics{"histogram_global_atomics", HistogramKind::kGlobalAtomics};
const HistogramVersion kFinal{"histogram", HistogramKind::kFinal};

HistogramVersion shared_on(int num_blocks, int block_size) {
  return {"histogram_shared", HistogramKind::kShared, num_blocks, block_size};
}

cudaError_t call_histogram(const HistogramVersion& v, const unsigned* values, int n, unsigned* bins, int num_bins) {
  switch (v.kind) {
    case HistogramKind::kGlobalAtomics: return histogram_global_atomics(values, n, bins, num_bins);
    case HistogramKind::kShared: return histogram_shared(values, n, bins, num_bins, v.num_blocks, v.block_size);
    case HistogramKind::kFinal: return histogram(values, n, bins, num_bins);
  }
  return cudaErrorInvalidValue;
}

std::string histogram_call(const HistogramVersion& v, const HistogramInput& h) {
  std::string call = std::string(v.name) + "(n=" + std::to_string(h.values.size()) +
                     ", num_bins=" + std::to_string(h.num_bins);
  if (v.kind == HistogramKind::kShared) {
    call += ", num_blocks=" + std::to_string(v.num_blocks) + ", block_size=" + std::to_string(v.block_size);
  }
  return call + ") [" + h.kind + "]";
}

// Explains wrong counts @p got of @p h: the first wrong bin, and the pattern behind it.
testing::AssertionResult histogram_matches(const HistogramInput& h, const std::vector<unsigned>& got,
                                           const std::string& call) {
  const std::size_t bins = got.size();
  std::vector<std::uint64_t> expected(bins, 0);
  for (unsigned v : h.values) {
    if (v < bins) ++expected[v];
  }
  const wb::check::Mismatches m =
      wb::check::find_mismatches(bins, [&](std::size_t b) { return got[b] != expected[b]; });
  if (m.none()) return testing::AssertionSuccess();
  std::uint64_t total_got = 0, total_expected = 0;
  bool never_cleared = false;
  for (std::size_t b = 0; b < bins; ++b) {
    total_got += got[b];
    total_expected += expected[b];
    never_cleared |= static_cast<std::uint32_t>(got[b] - expected[b]) == kUnwrittenWord;
  }
  const std::size_t first = m.first;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << m.count << " of " << bins << " bins wrong; the first is bins[" << first
          << "] = " << got[first] << ", expected " << expected[first] << ".";
  if (never_cleared || got[first] == kUnwrittenWord) {
    failure << " d_bins was not set to zero before counting: it still held the 0xCD bytes the checker put there. "
               "Clear it first (cudaMemsetAsync(d_bins, 0, num_bins * sizeof(unsigned))).";
  } else if (total_got < total_expected) {
    failure << " In all, " << total_got << " values were counted instead of " << total_expected
            << ": counts were lost. Increments of one bin by several threads at the same time must be atomic "
               "(atomicAdd), in shared memory as in global memory; with all values in one bin, every thread "
               "increments the same counter.";
  } else if (h.tail > 0 && got[0] > expected[0] && total_got - total_expected <= h.tail &&
             total_got - total_expected == got[0] - expected[0]) {
    failure << " bins[0] holds " << got[0] - expected[0] << " values too many: the " << h.tail
            << " zeros after the input in memory (d_values[n..n+" << h.tail << ")) were counted. Only d_values[0..n) "
            << "is the input: test every index against n (i < n), whatever the grid covers.";
  } else if (total_got > total_expected && total_got - total_expected == h.out_of_range) {
    failure << " The " << h.out_of_range << " values >= num_bins were counted: they must be ignored.";
  } else if (total_got > total_expected) {
    failure << " In all, " << total_got << " values were counted instead of " << total_expected
            << ": some values were counted twice (overlapping ranges of two threads or blocks, or a private "
               "histogram merged twice).";
  } else {
    failure << " The total is right but values landed in the wrong bins: bin b counts the values equal to b.";
  }
  return failure;
}

// Guarded device buffers of a histogram (wb_buffers.h): @p memory (the values, and what follows
// them) as the input, and the bins, which start as 0xCD bytes.
struct HistogramBuffers {
  Input<unsigned> values;
  Output<unsigned> bins;
  HistogramBuffers(std::vector<unsigned> memory, int num_bins)
      : values(std::move(memory), "d_values"), bins(static_cast<std::size_t>(num_bins), "d_bins", kUnwrittenByte) {}
  testing::AssertionResult bins_in_bounds(const std::string& call) const {
    const wb::GuardDamage d = bins.dev.check_guards();
    if (d.intact()) return testing::AssertionSuccess();
    const auto num_bins = static_cast<std::int64_t>(bins.dev.size());
    testing::AssertionResult failure = testing::AssertionFailure();
    failure << call << " wrote outside d_bins[0.." << num_bins << ") (index " << d.first_index << " to " << d.last_index
            << ").";
    if (d.past_end > 0 && d.before_start == 0 && d.first_index == num_bins && d.last_index == num_bins) {
      failure << " d_bins[num_bins] was written, one past the last bin: the value num_bins was counted. It is the "
              << "first value out of range: test v < num_bins, not v <= num_bins.";
    } else if (d.past_end > 0) {
      failure << " Values >= num_bins must be ignored: test v < num_bins before counting v (the input has values "
              << "up to 0xffffffff).";
    }
    return failure;
  }
};

// Calls @p v on HistogramBuffers of the values followed by h.tail zeros, checks the status, device
// errors, writes out of bounds and the input (after_call), then the counts.
testing::AssertionResult run_histogram(const HistogramVersion& v, const HistogramInput& h, const std::string& call) {
  const std::size_t n = h.values.size();
  std::vector<unsigned> got;
  const testing::AssertionResult ran = wb::check::guarded(call, [&]() -> testing::AssertionResult {
    std::vector<unsigned> memory = h.values;
    memory.resize(n + h.tail, 0u);
    HistogramBuffers b(std::move(memory), h.num_bins);
    const cudaError_t status =
        call_histogram(v, b.values.dev.data(), static_cast<int>(n), b.bins.dev.data(), h.num_bins);
    const wb::check::BufferChecks checks = {[&] { return b.bins_in_bounds(call); },
                                            [&] { return b.values.unchanged(call); }};
    if (auto r = after_call(status, call, v.name, checks); !r) return r;
    got = b.bins.dev.download();
    return testing::AssertionSuccess();
  });
  if (!ran) return ran;
  return histogram_matches(h, got, call);
}

// histogram_shared is launched exactly as asked: its performance bound (num_blocks x num_bins
// global atomics) and its grid-stride loop are the learner's to get right for any grid. The
// launch log (sim) shows the grid; with n = 0 there is nothing to launch for.
testing::AssertionResult launched_as_asked(const std::string& call, std::size_t n, int num_blocks, int block_size) {
#if defined(CUSIM)
  if (n == 0) return testing::AssertionSuccess();
  const std::vector<cusim::checker::LaunchRecord> log = cusim::checker::launches();
  for (const auto& l : log) {
    if (l.blocks() == static_cast<std::uint64_t>(num_blocks) &&
        l.threads_per_block() == static_cast<std::uint64_t>(block_size)) {
      return testing::AssertionSuccess();
    }
  }
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " counted right, but no launch had " << num_blocks << " blocks of " << block_size
          << " threads: the interface asks for exactly that grid.";
  for (const auto& l : log) failure << " It launched " << l.kernel << " with " << l.shape() << ".";
  const bool capped = std::any_of(log.begin(), log.end(), [](const auto& l) { return l.blocks() == 65535; });
  if (num_blocks > 65535 && capped) {
    failure << " A grid capped at 65535 blocks: 65535 is the limit of gridDim.y and gridDim.z, but gridDim.x goes "
               "to 2^31 - 1. Launch <<<num_blocks, block_size>>> as it is.";
  }
  return failure;
#else
  (void)call, (void)n, (void)num_blocks, (void)block_size;
  return testing::AssertionSuccess();
#endif
}

testing::AssertionResult check_histogram(const HistogramVersion& v, const HistogramInput& h) {
  const std::string call = histogram_call(v, h);
  if (v.kind != HistogramKind::kShared) return run_histogram(v, h, call);
#if defined(CUSIM)
  cusim::checker::clear_launches();
#endif
  if (auto r = run_histogram(v, h, call); !r) return r;
  return launched_as_asked(call, h.values.size(), v.num_blocks, v.block_size);
}

// Every kind of input for the histogram checks, for 1, 7, 256 and 4096 bins: uniform (at each of
// @p sizes), all values in the last bin, the edge bins, the boundary; all in the first bin and in
// one in the middle; n = 0.
std::vector<HistogramInput> histogram_inputs(const std::vector<std::size_t>& sizes, std::uint64_t seed) {
  std::vector<HistogramInput> inputs;
  for (int num_bins : {1, 7, 256, kMaxHistogramBins}) {
    for (std::size_t n : sizes) inputs.push_back(uniform_values(n, num_bins, seed++));
    const std::size_t n = sizes.back();
    inputs.push_back(one_bin_values(n, num_bins, static_cast<unsigned>(num_bins - 1)));
    inputs.push_back(edge_values(n, num_bins, seed++));
    inputs.push_back(boundary_values(n, num_bins, seed++));
  }
  inputs.push_back(one_bin_values(sizes.back(), 256, 0));
  inputs.push_back(one_bin_values(sizes.back(), 256, 100));
  inputs.push_back(uniform_values(0, 256, seed++));
  return inputs;
}

}  // namespace

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

WB_CHECK(Correctness, HistogramGlobalAtomics, .weight = 2,
         .passes = "exact counts: 1, 7, 256 and 4096 bins; uniform data with ~1% values out of range "
                   "(up to 0xffffffff), all values in one bin (first, last, middle), only the edge "
                   "bins, only the values num_bins - 1 and num_bins (the first value out of range); "
                   "n = 0 .. 100003; on a GPU also 2^26 (65536 blocks of 1024 threads)",
         .hint = "Clear d_bins first (cudaMemsetAsync); one thread per value; if (v < num_bins) "
                 "atomicAdd(&d_bins[v], 1u).") {
  std::vector<HistogramInput> inputs = histogram_inputs({1, 6, 33, 1000, 100003}, 700);
#if !defined(CUSIM)
  // One thread per element: 65536 blocks of 1024 threads, past 65535 (the limit of gridDim.y and
  // z, not of x). On the sim backend this size takes too long.
  inputs.push_back(uniform_values(std::size_t(1) << 26, 256, 750));
#endif
  WB_ASSERT(
      wb::check::for_each_case(inputs, [](const HistogramInput& h) { return check_histogram(kGlobalAtomics, h); }));
}

WB_CHECK(Correctness, HistogramShared, .weight = 2,
         .passes = "the same inputs (n up to 4097) on grids 1 x 32, 3 x 96, 16 x 256, 40 x 1024, n = "
                   "2^18 + 7 on 1 x 32 and 16 x 256, and n = 2^21 + 6 on 65600 x 32 (gridDim.x goes "
                   "past 65535); on sim the launch log shows exactly num_blocks blocks of block_size "
                   "threads",
         .hint = "Clear the shared bins (all num_bins of them, in a loop over threadIdx.x), "
                 "__syncthreads(), count with shared atomicAdd in a grid-stride loop, __syncthreads(), "
                 "merge every shared bin into d_bins. Launch <<<num_blocks, block_size>>> as asked, also "
                 "past 65535 blocks (the limit of gridDim.y and z, not of x).") {
  std::vector<std::pair<HistogramVersion, HistogramInput>> cases;
  const std::vector<HistogramInput> inputs = histogram_inputs({1, 6, 33, 1000, 4097}, 800);
  for (const HistogramVersion& v : {shared_on(1, 32), shared_on(3, 96), shared_on(16, 256), shared_on(40, 1024)}) {
    for (const HistogramInput& h : inputs) cases.emplace_back(v, h);
  }
  for (const HistogramVersion& v : {shared_on(1, 32), shared_on(16, 256)}) {
    for (const HistogramInput& h : {uniform_values((1 << 18) + 7, 256, 850), one_bin_values((1 << 18) + 7, 256, 255),
                                    uniform_values((1 << 18) + 7, kMaxHistogramBins, 851)}) {
      cases.emplace_back(v, h);
    }
  }
  // Any num_blocks >= 1 is allowed, also more than 65535 (the limit of gridDim.y and z, not of x).
  cases.emplace_back(shared_on(65600, 32), uniform_values((std::size_t(1) << 21) + 6, 7, 860));
  WB_ASSERT(wb::check::for_each_case(cases, [](const auto& c) { return check_histogram(c.first, c.second); }));
}

WB_CHECK(Correctness, Histogram, .weight = 2,
         .passes = "the same inputs, n = 0 .. 65539 (every n % 4 after a whole 16-byte load), and "
                   "2^22 + 3 (uniform and one bin)",
         .hint = "Handle n == 0, the values after the last full 16-byte load, and values >= num_bins "
                 "(ignored).") {
  std::vector<HistogramInput> inputs = histogram_inputs({1, 2, 3, 5, 6, 33, 1000, 1026, 65539}, 900);
  inputs.push_back(uniform_values((1 << 22) + 3, 256, 950));
  inputs.push_back(one_bin_values((1 << 22) + 3, 256, 200));
  WB_ASSERT(wb::check::for_each_case(inputs, [](const HistogramInput& h) { return check_histogram(kFinal, h); }));
}

// d_values may be followed by other data: a grid covers n rounded up to whole blocks, and a
// thread past n that reads anyway (i != n, or no test at all) counts whatever lies there. On
// the other inputs that memory is the buffer's guard zone, whose bytes are out of range.
WB_CHECK(Correctness, HistogramIgnoresValuesPastN, .weight = 1,
         .passes = "all three histograms with 1024 zeros in memory after `d_values[n-1]` (n = 1000, "
                   "1024, 4097, 65539; 7 and 256 bins): they are not counted",
         .hint = "Only d_values[0..n) is the input: test every index against n (i < n), in every version "
                 "and in the tail after the last 16-byte load.") {
  const HistogramVersion versions[] = {kGlobalAtomics, shared_on(3, 96), kFinal};
  std::vector<HistogramInput> inputs;
  std::uint64_t seed = 970;
  for (std::size_t n : {1000, 1024, 4097, 65539}) {
    for (int num_bins : {7, 256}) inputs.push_back(with_zeros_after(uniform_values(n, num_bins, seed++), 1024));
  }
  wb::check::Cases cases(std::size(versions) * inputs.size());
  for (const HistogramVersion& v : versions) {
    for (const HistogramInput& h : inputs) WB_ASSERT(cases(check_histogram(v, h)));
  }
}

// ---- Host code (sim): device memory and CUDA errors (wb_host_checks.h) ------------------

#if defined(CUSIM)
namespace {

// The functions whose reference makes a CUDA call that can fail before its launch: the
// single-pass scans (inclusive_scan of int and float, exclusive_scan) clear their workspace, the
// three histograms clear d_bins, each with cudaMemsetAsync. A learner's version may also
// allocate, copy or clear something else; every such call is tested.
struct HostCase {
  std::string call;
  const char* function;
  std::function<testing::AssertionResult()> checked_call;  // buffers, call, results (the correctness checks')
  std::function<void()> prepare;                            // before each injected call
  std::function<cudaError_t()> run;                         // the call alone, on buffers made beforehand
};

constexpr std::size_t kHostScanSize = 5000;  // two tiles and a partial one for tiles of 2048 and more

// The cases share their buffers between the healthy call and the injected ones.
std::vector<HostCase> host_cases(std::vector<std::shared_ptr<void>>& keep) {
  std::vector<HostCase> cases;
  const int n = static_cast<int>(kHostScanSize);
  // The block scans at their largest n; the others at 5000 (several tiles, and for
  // reduce-then-scan a recursive scan of the tile sums, whose launch can fail too).
  const std::pair<const ScanVersion*, std::size_t> int_scans[] = {
      {&kKoggeStone, 1024}, {&kBlelloch, 2048}, {&kReduceThenScan, kHostScanSize}, {&kInclusive, kHostScanSize},
      {&kExclusive, kHostScanSize}};
  for (const auto& [v, size] : int_scans) {
    auto b = std::make_shared<ScanBuffers<int>>(scan_ints(size, 1000), true);
    keep.push_back(b);
    const int vn = static_cast<int>(size);
    // The workspace is zeroed before each injected call: code that goes on after a failed clear
    // then runs on defined data, and the check reports the work, not a hang.
    cases.push_back({std::string(v->name) + "(n=" + std::to_string(vn) + ")", v->name,
                     [v, size] { return check_int_scan(*v, size, 1001); }, [b] { b->workspace.fill_bytes(0); },
                     [v, b, vn] {
                       return call_scan(*v, b->in.dev.data(), b->out.dev.data(), vn, b->workspace.data());
                     }});
  }
  {
    auto b = std::make_shared<ScanBuffers<float>>(wb::random_floats(kHostScanSize, 1002, -1.0f, 2.0f), true);
    keep.push_back(b);
    cases.push_back({"inclusive_scan(float, n=" + std::to_string(n) + ")", "inclusive_scan",
                     [] { return check_float_scan(kHostScanSize, 1003); }, [b] { b->workspace.fill_bytes(0); },
                     [b, n] { return inclusive_scan(b->in.dev.data(), b->out.dev.data(), n, b->workspace.data()); }});
  }
  std::uint64_t seed = 1010;
  for (std::size_t size : {std::size_t(0), std::size_t(1000)}) {
    const HistogramInput h = uniform_values(size, 256, seed++);
    auto b = std::make_shared<HistogramBuffers>(h.values, h.num_bins);
    keep.push_back(b);
    const int hn = static_cast<int>(size);
    for (const HistogramVersion& v : {kGlobalAtomics, shared_on(4, 128), kFinal}) {
      cases.push_back({histogram_call(v, h), v.name, [v, h] { return check_histogram(v, h); }, nullptr,
                       [v, b, hn] { return call_histogram(v, b->values.dev.data(), hn, b->bins.dev.data(), 256); }});
    }
  }
  return cases;
}

}  // namespace

WB_CHECK(Correctness, HostFreesDeviceMemory, .weight = 1, .backends = "sim",
         .passes = "after every scan (the block scans at n = 1024 and 2048, the others at n = 5000) "
                   "and the three histograms (n = 0 and 1000) the device holds as many allocations "
                   "and bytes as before",
         .hint = "Use the buffers the caller passes in (d_workspace, d_bins); cudaFree everything you "
                 "cudaMalloc before returning, on the error paths too.") {
  std::vector<std::shared_ptr<void>> keep;
  const std::vector<HostCase> cases = host_cases(keep);
  keep.clear();  // the buffers of the injected calls are not needed here: free them before measuring
  WB_ASSERT(wb::check::for_each_case(cases, [](const HostCase& c) {
    return wb::check::host::frees_device_memory(c.call, c.function, c.checked_call);
  }));
}

// Fault injection (wb_host_checks.h): every cudaMalloc, cudaMemcpy(Async), cudaMemset(Async),
// cudaFuncSetAttribute and kernel launch of each call fails in turn; the call must return that
// error at once, with no work after it and no leak.
WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "each `cudaMalloc`, `cudaMemcpy(Async)`, `cudaMemset(Async)` and kernel launch "
                   "that those calls make (the solution's: the `cudaMemsetAsync` that clears the "
                   "workspace or `d_bins`, and every launch, the recursive scan of the tile sums' "
                   "included) is made to fail in turn (cusim's fault injection): the function "
                   "returns that error at once, with no launch or call after it (test "
                   "`cudaGetLastError()` after each launch, and the status of the recursive call), "
                   "and frees what it had allocated",
         .hint = "Test the cudaError_t of every cudaMemset(Async), cudaMemcpy and cudaMalloc and return "
                 "it at once when it is not cudaSuccess, before any launch.") {
  std::vector<std::shared_ptr<void>> keep;
  const std::vector<HostCase> cases = host_cases(keep);
  wb::check::host::InjectionTally tally;
  for (const HostCase& c : cases) {
    wb::check::record_measured(tally.measured());
    // The healthy call first: a function that does not work yet has no error paths to test.
    if (c.prepare) c.prepare();
    WB_ASSERT(cuda_success(c.run(), c.call, c.function));
    WB_ASSERT(wb::check::device_clean_after(c.call));
    WB_ASSERT(wb::check::host::returns_injected_errors(c.call, c.function, c.prepare, c.run, tally));
  }
  wb::check::record_measured(tally.measured());
}
#endif

// ---- Analysis (sim) --------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Runs every function on a few sizes and fails on any report of @p tools. A report explains
// a wrong result (a race usually does), so reports come first in the failure.
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    std::uint64_t seed = 1000;
    for (std::size_t n : {std::size_t(1), std::size_t(33), std::size_t(1000)}) {
      keep_first(check_int_scan(kKoggeStone, n, seed++));
      keep_first(check_int_scan(kBlelloch, n, seed++));
    }
    keep_first(check_int_scan(kBlelloch, 2048, seed++));
    for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(5000), std::size_t(100003)}) {
      keep_first(check_int_scan(kReduceThenScan, n, seed++));
      keep_first(check_int_scan(kInclusive, n, seed++));
      keep_first(check_int_scan(kExclusive, n, seed++));
      keep_first(check_float_scan(n, seed++));
    }
    for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(40000)}) {
      for (int num_bins : {7, 256}) {
        for (const HistogramInput& h : {uniform_values(n, num_bins, seed++), one_bin_values(n, num_bins, 3)}) {
          for (const HistogramVersion& v : {kGlobalAtomics, shared_on(3, 96), kFinal}) {
            keep_first(check_histogram(v, h));
          }
        }
      }
    }
  });
}

}  // namespace

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = "no memcheck/initcheck report, every function, small and partial-tile sizes",
         .hint = "Test every load against n (tiles and grids are usually partial) and clear every "
                 "workspace word you read.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = "no racecheck/synccheck report, same runs (racecheck includes status words "
                   "published to other blocks without `__threadfence()` between value and flag)",
         .hint = "A scan step reads values that other threads overwrite in the same step: __syncthreads() "
                 "between the reads and the writes of every step, and after filling shared memory. "
                 "Shared-memory histogram bins are shared by the whole block: increment them with "
                 "atomicAdd. A tile's status word is read by other blocks: write flag and value with one "
                 "64-bit store (or the value, __threadfence(), then the flag).") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}
#endif

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

// The first launch since clear_launches() whose blocks are not whole warps, or that has more threads
// than @p n rounded up to whole blocks, explained for @p call; "" when there is none. A block past
// that has nothing to do, and a block that is not whole warps leaves lanes of its last warp idle.
std::string idle_launch(const std::string& call, std::size_t n) {
  for (const auto& l : cusim::checker::launches()) {
    const std::uint64_t block = l.threads_per_block();
    if (block % 32 != 0) {
      return call + " launched " + l.kernel + " with " + l.shape() + ": blocks of " + std::to_string(block) +
             " threads are not whole warps, so the last warp of every block runs with " +
             std::to_string(32 - block % 32) + " of its 32 lanes idle. Use a multiple of 32 threads per block.";
    }
    const std::uint64_t limit = (n + block - 1) / block * block;
    if (l.threads_per_launch() > limit) {
      return call + " launched " + l.kernel + " with " + l.shape() + ": " + std::to_string(l.threads_per_launch()) +
             " threads for " + std::to_string(n) + " elements, more than n rounded up to whole blocks (" +
             std::to_string(limit) + "). The last block has no element: round the block count up once, " +
             "(n + block - 1) / block.";
    }
  }
  return "";
}

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

// n: multiples of common block and tile sizes, where rounding up twice ((n + per_block) /
// per_block) adds a block.
WB_CHECK(Performance, NoIdleBlocks, .weight = 1, .backends = "sim",
         .passes = "no launch of the scans, `histogram_global_atomics` or `histogram` has more "
                   "threads than n rounded up to whole blocks, and every block is whole warps (a "
                   "multiple of 32 threads) (n = 256, 1024, 3840, 5376, 65536; cusim's launch log)",
         .hint = "Round the number of blocks up exactly once: (n + per_block - 1) / per_block; (n + "
                 "per_block) / per_block adds an idle block whenever n is a multiple of per_block. Blocks "
                 "are a multiple of 32 threads.") {
  std::vector<std::string> failures;
  std::vector<std::string> failed;  // the function of each failure: one failure per function
  auto inspect = [&](const std::string& function, const std::string& call, std::size_t n) {
    if (std::find(failed.begin(), failed.end(), function) != failed.end()) return;
    if (std::string why = idle_launch(call, n); !why.empty()) {
      failures.push_back(why);
      failed.push_back(function);
    }
  };
  std::size_t cases = 0;
  std::uint64_t seed = 1700;
  for (std::size_t n : {256, 1024, 3840, 5376, 65536}) {
    for (const ScanVersion* v : {&kKoggeStone, &kBlelloch, &kReduceThenScan, &kInclusive, &kExclusive}) {
      const bool too_large = (v == &kKoggeStone && n > std::size_t(kMaxKoggeStoneScan)) ||
                             (v == &kBlelloch && n > std::size_t(kMaxBlellochScan));
      if (too_large) continue;
      cusim::checker::clear_launches();
      WB_ASSERT(check_int_scan(*v, n, seed++));
      inspect(v->name, std::string(v->name) + "(n=" + std::to_string(n) + ")", n);
      ++cases;
    }
    const HistogramInput h = uniform_values(n, 256, seed++);
    for (const HistogramVersion& v : {kGlobalAtomics, kFinal}) {
      cusim::checker::clear_launches();
      WB_ASSERT(check_histogram(v, h));
      inspect(v.name, histogram_call(v, h), n);
      ++cases;
    }
  }
  wb::check::record_measured(std::to_string(cases) + " calls, " + std::to_string(failed.size()) +
                             " function(s) with an idle block or idle lanes");
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

WB_CHECK(Performance, HistogramPrivatized, .weight = 3, .backends = "sim", .limits = {{"max_sectors", 4.0}},
         .passes = "`histogram_shared` on 16 x 256 threads, 256 bins, n = 2^18 + 5: global atomics "
                   "<= 16 x the bins that received values (uniform: 4096; one bin: 16); loads <= "
                   "{max_sectors:.2f} sectors/request",
         .hint = "Count into a __shared__ histogram with shared-memory atomicAdd, then after a "
                 "__syncthreads() add each nonzero shared bin to d_bins with one global atomicAdd per bin "
                 "and block.") {
  constexpr double kMaxSectors = WB_LIMIT("max_sectors");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr int kBlocks = 16, kBlockSize = 256, kBins = 256;
  const HistogramVersion shared = shared_on(kBlocks, kBlockSize);
  constexpr std::size_t n = (1 << 18) + 5;
  std::string text;
  for (const HistogramInput& h : {uniform_values(n, kBins, 1200), one_bin_values(n, kBins, 255)}) {
    Traffic t;
    WB_ASSERT(wb::check::measure([&] { return check_histogram(shared, h); }, t, shared.name));
    WB_REQUIRE_ANALYSIS();
    const std::size_t used_bins = bins_with_values(h);
    const std::uint64_t limit = std::uint64_t(kBlocks) * used_bins;
    wb::check::append_measured(text, h.kind + ": " + std::to_string(t.global_atomics) + " global atomics (limit " +
                               std::to_string(limit) + "), loads " + fixed(t.loads()) + " sectors/request");
    const std::string call = histogram_call(shared, h);
    const bool empty_bins_merged =
        used_bins < std::size_t(kBins) && t.global_atomics <= std::uint64_t(kBlocks) * kBins;
    if (t.global_atomics > limit && empty_bins_merged) {
      ADD_FAILURE() << call << ": " << t.global_atomics << " atomic operations on global memory (at most num_blocks x "
                    << "the " << used_bins << " bin(s) that received values = " << limit
                    << "). Bins whose shared count is 0 were merged too: adding 0 changes nothing and costs an atomic; "
                       "merge only the nonzero bins (if (count != 0) atomicAdd(&d_bins[b], count)).";
    } else if (t.global_atomics > limit) {
      ADD_FAILURE() << call << ": " << t.global_atomics << " atomic operations on global memory (at most num_blocks x "
                    << "num_bins = " << limit << "). Every element still goes to d_bins: count into a __shared__ "
                    << "histogram of the block first, then merge it with one global atomicAdd per bin.";
    }
    if (t.loads() > kMaxSectors) {
      ADD_FAILURE() << call << ": its loads touch " << fixed(t.loads()) << " global memory sectors per request (at "
                    << "most " << fixed(kMaxSectors) << " allowed). In a grid-stride loop, let consecutive threads "
                    << "read consecutive values: i = blockIdx.x * blockDim.x + threadIdx.x, i += blockDim.x * "
                    << "gridDim.x (a contiguous chunk per thread spreads a warp's loads).";
    }
  }
#endif
}

WB_CHECK(Performance, HistogramTraffic, .weight = 2, .backends = "sim",
         .limits = {{"max_read", 1.01}, {"values_per_atomic", 16}},
         .passes = "`histogram` (256 bins, n = 2^20 + 7): bytes read <= {max_read} x 4n, global atomics "
                   "<= n / {values_per_atomic}; all values in one of 4096 bins: at most one global atomic "
                   "per block launched",
         .hint = "Read every value once, and count in shared memory (version 5) with a grid of a few blocks "
                 "per multiprocessor, so that each block merges its bins once for many values.") {
  constexpr double kMaxRead = WB_LIMIT("max_read"), kValuesPerAtomic = WB_LIMIT("values_per_atomic");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr std::size_t n = (1 << 20) + 7;
  constexpr std::uint64_t kMaxAtomics = n / static_cast<std::size_t>(kValuesPerAtomic);
  const HistogramInput h = uniform_values(n, 256, 1300);
  Traffic t;
  WB_ASSERT(wb::check::measure([&] { return check_histogram(kFinal, h); }, t, "histogram"));
  WB_REQUIRE_ANALYSIS();
  const double read = double(t.bytes_read) / (4.0 * n);
  const std::string measured = fixed(read) + " x 4n read, " + std::to_string(t.global_atomics) +
                               " global atomics (limit " + std::to_string(kMaxAtomics) + ")";
  wb::check::record_measured(measured);
  if (read > kMaxRead) {
    ADD_FAILURE() << histogram_call(kFinal, h) << " read " << fixed(read) << " x 4n bytes of global memory (at "
                  << "most " << as_written(kMaxRead) << " allowed): some values were read more than once.";
  }
  if (t.global_atomics > kMaxAtomics) {
    ADD_FAILURE() << histogram_call(kFinal, h) << ": " << t.global_atomics << " atomic operations on global "
                  << "memory (at most n / " << as_written(kValuesPerAtomic) << " = " << kMaxAtomics
                  << "). Count in shared memory first, and give each block many values (a grid of a few blocks per "
                     "multiprocessor and a grid-stride loop): each block merges num_bins counters once.";
  }
  // With every value in one of 4096 bins, a block that merges its empty bins too makes 4095
  // atomics that add 0 (the reference: one per block).
  const HistogramInput one = one_bin_values(n, kMaxHistogramBins, kMaxHistogramBins - 1);
  Traffic t1;
  cusim::checker::clear_launches();
  WB_ASSERT(wb::check::measure([&] { return check_histogram(kFinal, one); }, t1, "histogram"));
  std::uint64_t blocks = 0;
  for (const auto& l : cusim::checker::launches()) blocks += l.blocks() * l.launches;
  wb::check::record_measured(measured + "; one of 4096 bins: " + std::to_string(t1.global_atomics) +
                             " global atomics for " + std::to_string(blocks) + " blocks");
  if (t1.global_atomics > blocks) {
    ADD_FAILURE() << histogram_call(kFinal, one) << ": " << t1.global_atomics
                  << " atomic operations on global memory for " << blocks
                  << " blocks launched (at most one per block and bin that received values: " << blocks
                  << "). Bins whose shared count is 0 were merged too: adding 0 changes nothing and costs an atomic "
                     "(4095 per block here); merge only the nonzero bins (if (count != 0)).";
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
    s.prepare_cub();
    wb::Bandwidth cub;
    if (const std::string why = s.time("CUB InclusiveSum", [&] { return s.cub(); }, cub); why.empty()) {
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
    s.prepare_cub();
    // Side by side: each measurement alternates with the other's, so clock drift hits both.
    wb::Bandwidth scan, cub;
    if (const std::string why = s.time(kTimedScanCall, [&] { return s.scan(); }, scan); !why.empty()) FAIL() << why;
    if (const std::string why = s.time("the CUB baseline", [&] { return s.cub(); }, cub); !why.empty()) {
      FAIL() << why;
    }
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

WB_CHECK(Performance, HistogramBandwidthVsDeviceCopy, .weight = 6, .backends = "cuda", .timeout_s = 240,
         .limits = {{"min_ratio", 0.50}},
         .passes = "`histogram` on 2^26 values, 256 bins, reads at >= {min_ratio:.2f} x the copy bandwidth on "
                   "uniform data and on all-in-one-bin data; CUB `DeviceHistogram::HistogramEven` is "
                   "timed beside it",
         .hint = "Privatize in shared memory, size the grid to a few blocks per multiprocessor, load 16 "
                 "bytes per thread at a time, and count runs of equal values in registers so that one bin "
                 "does not serialize a warp's atomics.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  constexpr int n = 1 << 26;
  constexpr int kBins = 256;
  std::vector<HistogramInput> inputs = {uniform_values(n, kBins, 1600), one_bin_values(n, kBins, 17)};
  for (const HistogramInput& h : inputs) WB_ASSERT(check_histogram(kFinal, h));
  try {
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * static_cast<std::size_t>(n));
    std::string text;
    double worst = 1e30;
    std::string worst_kind;
    for (HistogramInput& h : inputs) {
      wb::DeviceBuffer<unsigned> values{std::span<const unsigned>(h.values)};
      wb::DeviceBuffer<unsigned> bins(kBins);
      // Validated before timing and after it, the timed runs each given changed inputs (wb_timed.h).
      wb::check::ChangingInput<unsigned> changing(h.values, values.data());
      const auto verify = [&]() -> std::string {
        std::vector<unsigned> expected(kBins, 0);
        for (unsigned v : h.values) {
          if (v < kBins) ++expected[v];
        }
        const std::vector<unsigned> got = bins.download();
        for (int b = 0; b < kBins; ++b) {
          if (got[b] != expected[b]) return "wrong result: bin " + std::to_string(b) + " holds " +
                                            std::to_string(got[b]) + ", expected " + std::to_string(expected[b]);
        }
        return "";
      };
      const double bytes = 4.0 * n;  // every value read once
      wb::Bandwidth b;
      WB_ASSERT(wb::check::timed_and_verified(
          "histogram(n=" + std::to_string(n) + ", " + h.kind + ")", bytes,
          [&] { return histogram(values.data(), n, bins.data(), kBins); }, [&] { changing.change(); }, verify, b));
      const double ratio = b.gb_per_s / copy.gb_per_s;
      if (ratio < worst) {
        worst = ratio;
        worst_kind = h.kind;
      }
      text += (text.empty() ? "" : "; ") + h.kind + ": " + fixed(ratio) + " x copy (" + fixed(b.gb_per_s) + " GB/s)";
#if defined(WB_HAVE_CUDA_BASELINES)
      std::size_t temp_bytes = 0;
      WB_CUDA_CHECK(wb_cub_histogram_even(values.data(), n, bins.data(), kBins, nullptr, &temp_bytes));
      wb::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
      wb::Bandwidth cub;
      const std::string why = wb::check::failure_text(wb::check::timed_and_verified(
          "CUB HistogramEven", bytes,
          [&] {
            std::size_t bytes_needed = temp_bytes;
            return wb_cub_histogram_even(values.data(), n, bins.data(), kBins, temp.data(), &bytes_needed);
          },
          [&] { changing.change(); }, verify, cub));
      text += why.empty() ? ", CUB HistogramEven " + fixed(cub.gb_per_s / copy.gb_per_s) + " x"
                          : ", CUB not timed (" + why + ")";
#endif
    }
    text += "; copy " + fixed(copy.gb_per_s) + " GB/s";
    wb::check::record_measured(text);
    EXPECT_GE(worst, kMinRatio) << "histogram reached " << text << "; it needs " << as_written(kMinRatio)
                                << " x the copy bandwidth on every input (slowest: " << worst_kind
                                << "). A histogram reads every value once; counting in shared memory keeps it close "
                                   "to the speed of reading.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing histogram: " << e.what();
  }
}
#endif
