// Checks for lab 04 (scan and histogram).
//
// Correctness:
//   - Int scans are compared bit for bit with prefix sums computed on the host in 64-bit
//     integers. The data are small integers in [-4, 12], so no prefix overflows int32 even
//     at n = 2^26. A mismatch names the first wrong index, got and expected, how many
//     elements are wrong, and the likely mistake: an exclusive scan that returns the
//     inclusive one (or the reverse), the elements before a tile boundary not added, the
//     last partial tile never written, a tile whose every element is off by one amount (its
//     offset: the tile's own sum added, or a look-back that added a wrong value).
//   - Float scans (random data in [-1, 2)): out[i] must lie within the rounding error bound
//     of a float sum of i + 1 terms in any order, gamma(i) * sum_{j<=i} |x_j| with
//     gamma(k) = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical
//     Algorithms, 4.2), of a compensated double-precision prefix sum.
//   - Int and float scans run around the tiles a learner may choose (32 .. 5376), and with
//     every n % 4 after whole 16-byte loads. On a GPU scan_reduce_then_scan also runs 2^26
//     (65536 tiles of 1024: past 65535 blocks, the limit of gridDim.y and z but not of x).
//   - Histograms are exact. Inputs: uniform values with about 1% out-of-range values
//     (num_bins .. 0xffffffff, which must be ignored), all values in one bin (the
//     adversarial case for atomics), only the edge bins 0 and num_bins - 1, only num_bins - 1
//     and num_bins (the first value out of range). histogram_shared runs 65600 blocks too, and
//     on sim the launch log must show exactly num_blocks x block_size threads; on a GPU
//     histogram_global_atomics also counts 2^26 values (65536 blocks of 1024).
//     Each histogram is also run with zeros (bin 0) in memory after d_values[n-1]: a thread
//     past n that reads anyway counts them (elsewhere it reads the guard zone, out of range).
//   Outputs, bins and workspaces carry guard zones; outputs start as 0xCD bytes, so an
//   element never written is told apart from a wrong one, and bins start as 0xCD bytes, so
//   a histogram that does not clear them first shows.
// Host code (sim, wb_host_checks.h): the functions that make a CUDA call that can fail (the
//   single-pass scans clear their workspace, the histograms d_bins, with cudaMemsetAsync before
//   the launch) hold as much device memory after a call as before, and when each of their
//   cudaMalloc, cudaMemcpy(Async), cudaMemset(Async) calls and kernel launches fails in turn
//   (cusim's fault injection) they return that error at once: no work after it, no leak.
// Analysis (sim): cusim memcheck/initcheck and racecheck/synccheck report nothing. racecheck also
//   sees a look-back's status published without __threadfence() between value and flag (a torn
//   read on a GPU that a CPU never shows).
// Performance (sim), with cusim analysis metrics (each check's limits in its .limits):
//   - scan_reduce_then_scan: global bytes read and written per 4n bytes at most max_read and
//     max_written (the input read twice, the output written once); loads and stores at most
//     max_sectors sectors/request;
//   - inclusive_scan: global bytes read + written per 4n at most max_moved, and per element no
//     more than max_growth x 4 bytes larger at 2^22+3 than at 2^18+3 (a look-back that never
//     stops early grows);
//   - histogram_shared: global atomics <= num_blocks * bins that received values; loads at most
//     max_sectors sectors/request;
//   - histogram: global bytes read per 4n at most max_read, global atomics <= n /
//     values_per_atomic, and with all values in one of 4096 bins at most one per block launched
//     (empty bins are not merged);
//   - no launch has more threads than n rounded up to whole blocks (the launch log; n a
//     multiple of common block and tile sizes).
// Performance (cuda), timed in the same run (median of 21 runs, L2 flushed before each):
//   - inclusive_scan on 2^26 ints: bandwidth (read n + write n) at least min_ratio x
//     device-to-device copy; and at least ScanVsCub's min_ratio x CUB DeviceScan::InclusiveSum;
//   - histogram on 2^26 values (256 bins, uniform and all in one bin): read bandwidth at least
//     min_ratio x copy; CUB DeviceHistogram::HistogramEven is timed beside it for the record.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "scan_histogram.h"
#include "wb/wb.h"
#include "wb_check.h"
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

using wb::check::fixed;

using wb::check::cuda_success;

constexpr unsigned char kUnwrittenByte = 0xCD;
constexpr std::uint32_t kUnwrittenWord = 0xCDCDCDCDu;
constexpr double kUnitRoundoff = 0x1.0p-24;

std::string number(double v) { return wb::check::significant(v, 9); }

template <class T>
std::uint32_t bits_of(T v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

std::string cases_text(std::size_t passed, std::size_t total) {
  return std::to_string(passed) + "/" + std::to_string(total) + " cases correct";
}

// ---- inputs --------------------------------------------------------------------------------

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

// Guarded device copies of the input, the output (0xCD bytes) and the workspace (0xCD
// bytes: its contents are undefined on entry). Runs @p launch, checks the status, device
// errors, writes out of bounds and the input, and downloads the output.
template <class T>
testing::AssertionResult run_scan(const std::vector<T>& input, const std::string& call, const char* function,
                                  bool with_workspace, const std::function<cudaError_t(const T*, T*, void*)>& launch,
                                  std::vector<T>& output) {
  try {
    constexpr std::size_t kGuard = wb::DeviceBuffer<T>::kDefaultGuard;
    const std::size_t n = input.size();
    wb::DeviceBuffer<T> in(std::span<const T>(input), kGuard);
    wb::DeviceBuffer<T> out(n, kGuard);
    out.fill_bytes(kUnwrittenByte);
    wb::DeviceBuffer<unsigned char> workspace;
    if (with_workspace) {
      workspace = wb::DeviceBuffer<unsigned char>(scan_workspace_bytes(static_cast<int>(n)), 4096);
      workspace.fill_bytes(kUnwrittenByte);
    }
    if (auto r = cuda_success(launch(in.data(), out.data(), with_workspace ? workspace.data() : nullptr), call, function);
        !r) {
      return r;
    }
    if (auto r = wb::check::device_clean_after(call); !r) return r;
    if (auto r = wb::check::no_out_of_bounds_writes(out.check_guards(), "d_out", n, call); !r) return r;
    if (with_workspace) {
      if (const wb::GuardDamage d = workspace.check_guards(); !d.intact()) {
        return testing::AssertionFailure()
               << call << " wrote outside d_workspace[0.." << workspace.size() << ") (byte " << d.first_index << " to "
               << d.last_index << "): the workspace holds scan_workspace_bytes(n) bytes, enough for tiles of at least "
               << "32 elements.";
      }
    }
    if (const wb::GuardDamage d = in.check_guards(); !d.intact()) {
      return testing::AssertionFailure() << call << " wrote into the memory around d_in (index " << d.first_index
                                         << "), which is an input.";
    }
    const std::vector<T> in_after = in.download();
    if (!in_after.empty() && std::memcmp(in_after.data(), input.data(), n * sizeof(T)) != 0) {
      return testing::AssertionFailure() << call << " modified d_in, which is an input: keep partial sums in shared "
                                                    "memory, d_out or the workspace.";
    }
    output = out.download();
    return testing::AssertionSuccess();
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed after " << call << ": " << e.what();
  }
}

// Explains a wrong int scan: the first wrong index, and the pattern behind it. @p look_back: the
// version is a single pass whose tiles get their offsets from a decoupled look-back.
testing::AssertionResult int_scan_matches(const std::vector<int>& in, const std::vector<int>& got, bool inclusive,
                                          bool look_back, const std::string& call, std::uint64_t seed) {
  const std::size_t n = in.size();
  const std::vector<std::int64_t> incl = inclusive_prefix(in);
  auto expected_at = [&](std::size_t i) -> std::int64_t { return inclusive ? incl[i] : incl[i] - in[i]; };
  std::size_t first = n, wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != expected_at(i)) {
      if (first == n) first = i;
      ++wrong;
    }
  }
  if (wrong == 0) return testing::AssertionSuccess();
  const std::size_t i = first;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " [ints in [-4, 12], seed " << seed << "]: " << wrong << " of " << n << " elements wrong; the first is out["
          << i << "]";
  if (bits_of(got[i]) == kUnwrittenWord) {
    std::size_t last = i;
    while (last + 1 < n && bits_of(got[last + 1]) == kUnwrittenWord) ++last;
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
            << "] without in[" << i << "]. An inclusive scan includes the element itself: out[i] = in[0] + ... + in[i].";
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
      failure << " It equals in[" << k << "] + ... + in[" << i << "] only: the " << k
              << " elements before index " << k
              << " were not added. Index " << k << " starts a new tile (block): add the sum of all earlier tiles "
              << "(the scanned tile sums, or the look-back prefix) to every element of the tile.";
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

testing::AssertionResult float_scan_matches(const std::vector<float>& in, const std::vector<float>& got,
                                            const std::string& call, std::uint64_t seed) {
  std::vector<double> prefix, abs_prefix;
  float_references(in, prefix, abs_prefix);
  std::size_t wrong = 0, first = in.size();
  double first_allowed = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double k = static_cast<double>(i);
    const double allowed = k * kUnitRoundoff / (1.0 - k * kUnitRoundoff) * abs_prefix[i];
    const bool ok = !std::isnan(got[i]) && std::fabs(static_cast<double>(got[i]) - prefix[i]) <= allowed;
    if (!ok) {
      if (wrong == 0) {
        first = i;
        first_allowed = allowed;
      }
      ++wrong;
    }
  }
  if (wrong == 0) return testing::AssertionSuccess();
  const std::size_t i = first;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " [random floats in [-1, 2), seed " << seed << "]: " << wrong << " of " << in.size()
          << " elements wrong; the first is out[" << i << "]";
  if (bits_of(got[i]) == kUnwrittenWord) {
    failure << ", never written (still the 0xCD bytes the checker put there): every element must be stored.";
    return failure;
  }
  failure << " = " << number(got[i]) << ", expected " << number(prefix[i]) << " (difference "
          << number(std::fabs(got[i] - prefix[i])) << ", allowed " << number(first_allowed)
          << " = gamma(i) * sum |x_j|, the rounding error of a float sum of i + 1 terms in any order).";
  if (i > 0 && std::fabs(static_cast<double>(got[i]) - (prefix[i] - in[i])) <= first_allowed + 1e-6) {
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
  if (auto r = run_scan<int>(input, call, v.name, v.workspace,
                             [&](const int* in, int* out, void* ws) { return call_scan(v, in, out, static_cast<int>(n), ws); },
                             got);
      !r) {
    return r;
  }
  const bool look_back = v.kind == ScanKind::kInclusive || v.kind == ScanKind::kExclusive;
  return int_scan_matches(input, got, v.inclusive, look_back, call, seed);
}

testing::AssertionResult check_float_scan(std::size_t n, std::uint64_t seed) {
  const std::vector<float> input = wb::random_floats(n, seed, -1.0f, 2.0f);
  const std::string call = "inclusive_scan(float, n=" + std::to_string(n) + ")";
  std::vector<float> got;
  if (auto r = run_scan<float>(input, call, "inclusive_scan", true,
                               [&](const float* in, float* out, void* ws) {
                                 return inclusive_scan(in, out, static_cast<int>(n), ws);
                               },
                               got);
      !r) {
    return r;
  }
  return float_scan_matches(input, got, call, seed);
}

void check_scan_sizes(const ScanVersion& v, const std::vector<std::size_t>& sizes, std::uint64_t seed) {
  std::size_t passed = 0;
  for (std::size_t n : sizes) {
    auto result = check_int_scan(v, n, seed++);
    wb::check::record_measured(cases_text(passed, sizes.size()));
    WB_ASSERT(result);
    ++passed;
  }
  wb::check::record_measured(cases_text(passed, sizes.size()));
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

std::string histogram_call(const char* function, const HistogramInput& h, const std::string& extra = "") {
  return std::string(function) + "(n=" + std::to_string(h.values.size()) + ", num_bins=" + std::to_string(h.num_bins) +
         extra + ") [" + h.kind + "]";
}

testing::AssertionResult run_histogram(const HistogramInput& h, const std::string& call, const char* function,
                                       const std::function<cudaError_t(const unsigned*, unsigned*)>& launch) {
  const std::size_t n = h.values.size();
  const std::size_t bins = static_cast<std::size_t>(h.num_bins);
  std::vector<unsigned> got;
  try {
    constexpr std::size_t kGuard = wb::DeviceBuffer<unsigned>::kDefaultGuard;
    std::vector<unsigned> memory = h.values;
    memory.resize(n + h.tail, 0u);
    wb::DeviceBuffer<unsigned> values(std::span<const unsigned>(memory), kGuard);
    wb::DeviceBuffer<unsigned> d_bins(bins, kGuard);
    d_bins.fill_bytes(kUnwrittenByte);
    if (auto r = cuda_success(launch(values.data(), d_bins.data()), call, function); !r) return r;
    if (auto r = wb::check::device_clean_after(call); !r) return r;
    if (const wb::GuardDamage d = d_bins.check_guards(); !d.intact()) {
      testing::AssertionResult failure = testing::AssertionFailure();
      failure << call << " wrote outside d_bins[0.." << bins << ") (index " << d.first_index << " to " << d.last_index
              << ").";
      if (d.past_end > 0 && d.before_start == 0 && d.first_index == static_cast<std::int64_t>(bins) &&
          d.last_index == static_cast<std::int64_t>(bins)) {
        failure << " d_bins[num_bins] was written, one past the last bin: the value num_bins was counted. It is the "
                << "first value out of range: test v < num_bins, not v <= num_bins.";
      } else if (d.past_end > 0) {
        failure << " Values >= num_bins must be ignored: test v < num_bins before counting v (the input has values "
                << "up to 0xffffffff).";
      }
      return failure;
    }
    if (const wb::GuardDamage d = values.check_guards(); !d.intact()) {
      return testing::AssertionFailure() << call << " wrote into the memory around d_values, which is an input.";
    }
    const std::vector<unsigned> after = values.download();
    if (!after.empty() && std::memcmp(after.data(), memory.data(), memory.size() * sizeof(unsigned)) != 0) {
      return testing::AssertionFailure() << call << " modified d_values, which is an input.";
    }
    got = d_bins.download();
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed after " << call << ": " << e.what();
  }
  std::vector<std::uint64_t> expected(bins, 0);
  for (unsigned v : h.values) {
    if (v < bins) ++expected[v];
  }
  std::size_t first = bins, wrong = 0;
  std::uint64_t total_got = 0, total_expected = 0;
  bool never_cleared = false;
  for (std::size_t b = 0; b < bins; ++b) {
    total_got += got[b];
    total_expected += expected[b];
    if (got[b] != expected[b]) {
      if (first == bins) first = b;
      ++wrong;
      never_cleared |= static_cast<std::uint32_t>(got[b] - expected[b]) == kUnwrittenWord;
    }
  }
  if (wrong == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << wrong << " of " << bins << " bins wrong; the first is bins[" << first << "] = " << got[first]
          << ", expected " << expected[first] << ".";
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

testing::AssertionResult check_histogram_global(const HistogramInput& h) {
  const std::string call = histogram_call("histogram_global_atomics", h);
  return run_histogram(h, call, "histogram_global_atomics", [&](const unsigned* v, unsigned* b) {
    return histogram_global_atomics(v, static_cast<int>(h.values.size()), b, h.num_bins);
  });
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

testing::AssertionResult check_histogram_shared(const HistogramInput& h, int num_blocks, int block_size) {
  const std::string call = histogram_call("histogram_shared", h,
                                          ", num_blocks=" + std::to_string(num_blocks) +
                                              ", block_size=" + std::to_string(block_size));
#if defined(CUSIM)
  cusim::checker::clear_launches();
#endif
  if (auto r = run_histogram(h, call, "histogram_shared", [&](const unsigned* v, unsigned* b) {
        return histogram_shared(v, static_cast<int>(h.values.size()), b, h.num_bins, num_blocks, block_size);
      });
      !r) {
    return r;
  }
  return launched_as_asked(call, h.values.size(), num_blocks, block_size);
}

testing::AssertionResult check_histogram_final(const HistogramInput& h) {
  const std::string call = histogram_call("histogram", h);
  return run_histogram(h, call, "histogram", [&](const unsigned* v, unsigned* b) {
    return histogram(v, static_cast<int>(h.values.size()), b, h.num_bins);
  });
}

// Every kind of input for the histogram checks: uniform, one bin (the first, the last, and
// one in the middle), the edge bins, for several numbers of bins.
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
  check_scan_sizes(kKoggeStone, {0, 1, 2, 31, 32, 33, 63, 64, 65, 66, 100, 255, 256, 257, 511, 1000, 1022, 1023, 1024},
                   10);
}

WB_CHECK(Correctness, BlellochBlock, .weight = 2,
         .passes = "exact exclusive scans, n = 0 .. 2048 (the same, and around 2048)",
         .hint = "Pad to m = a power of two >= n with zeros, m / 2 threads; up-sweep, set the last "
                 "element to 0, down-sweep; out[0] must be 0 (exclusive).") {
  check_scan_sizes(kBlelloch,
                   {0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 66, 255, 256, 257, 1000, 1022, 1023, 1024, 1025, 1500, 2046,
                    2047, 2048},
                   100);
}

WB_CHECK(Correctness, ReduceThenScan, .weight = 3,
         .passes = "exact inclusive scans, 26 sizes from 0 to 2^20 + 7 around tiles of 32 to 4096 "
                   "(partial tiles; more tiles than one block scans, for tiles of 512 and 1024); on "
                   "a GPU also 2^26 (65536 tiles of 1024: a grid of one block per tile past 65535 "
                   "blocks)",
         .hint = "Round the number of tiles up; scan the tile sums exclusively (recursively when there "
                 "are more tiles than one block scans); add tile b's offset to every element of tile b.") {
#if defined(CUSIM)
#else
#endif
  check_scan_sizes(kReduceThenScan,
                   {0, 1, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1026, 2047, 2048, 2049, 4095,
                    4096, 4097, 5378, 65537, 100003, (1 << 18) + 1, (1 << 20) + 7
#if !defined(CUSIM)
                    // One block per tile: 65536 tiles of 1024 elements, past 65535 (the limit of
                    // gridDim.y and z, not of x). On the sim backend this size takes too long.
                    ,
                    std::size_t(1) << 26
#endif
                   },
                   200);
}

// What passes, for InclusiveScan, ExclusiveScan.
constexpr char kScanPasses[] = "exact scans, about 30 sizes from 0 to 2^20 + 7, around 32, 256, 512, 1024, 2048, "
                               "3840, 4096, 5376";

WB_CHECK(Correctness, InclusiveScan, .weight = 2,
         .passes = kScanPasses,
         .hint = "Start from scan_reduce_then_scan; every tile needs the sum of all elements before it, "
                 "and the last tile is usually partial.") {
  check_scan_sizes(kInclusive,
                   {0, 1, 2, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1026, 2047, 2048, 2049, 3839,
                    3840, 3841, 4096, 4097, 5375, 5376, 5377, 5378, 65537, 100003, (1 << 20) + 7},
                   300);
}

WB_CHECK(Correctness, ExclusiveScan, .weight = 2,
         .passes = kScanPasses,
         .hint = "out[0] = 0 and out[i] = in[0] + ... + in[i-1]: write the running sum before adding the "
                 "element.") {
  check_scan_sizes(kExclusive,
                   {0, 1, 2, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1026, 2047, 2048, 2049, 3839,
                    3840, 3841, 4097, 5375, 5376, 5377, 5378, 65537, 100003, (1 << 20) + 7},
                   400);
}

WB_CHECK(Correctness, FloatScan, .weight = 1,
         .passes = "`inclusive_scan(float)` within `gamma(i) sum |x_j|` per element, the int scans' "
                   "sizes from 0 to 2^20 + 7",
         .hint = "Template the scan on the element type; pad missing elements with 0.0f, and keep the "
                 "float bits intact when you store them in a status word (__float_as_uint).") {
  const std::vector<std::size_t> sizes = {0,    1,    2,    31,   32,   33,   255,  256,   257,   511,         512,
                                          513,  1023, 1024, 1025, 1026, 2047, 2048, 2049,  3839,  3840,        3841,
                                          4096, 4097, 5375, 5376, 5377, 5378, 65537, 100003, (1 << 20) + 7};
  std::size_t passed = 0;
  std::uint64_t seed = 500;
  for (std::size_t n : sizes) {
    auto result = check_float_scan(n, seed++);
    wb::check::record_measured(cases_text(passed, sizes.size()));
    WB_ASSERT(result);
    ++passed;
  }
  wb::check::record_measured(cases_text(passed, sizes.size()));
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
  std::size_t passed = 0;
  const std::size_t total = 2 * sizes.size();
  std::uint64_t seed = 600;
  for (std::size_t n : sizes) {
    for (const ScanVersion* v : {&kInclusive, &kExclusive}) {
      auto result = check_int_scan(*v, n, seed++);
      wb::check::record_measured(cases_text(passed, total));
      WB_ASSERT(result);
      ++passed;
    }
  }
  wb::check::record_measured(cases_text(passed, total));
}

WB_CHECK(Correctness, HistogramGlobalAtomics, .weight = 2,
         .passes = "exact counts: 1, 7, 256 and 4096 bins; uniform data with ~1% values out of range "
                   "(up to 0xffffffff), all values in one bin (first, last, middle), only the edge "
                   "bins, only the values num_bins - 1 and num_bins (the first value out of range); "
                   "n = 0 .. 100003; on a GPU also 2^26 (65536 blocks of 1024 threads)",
         .hint = "Clear d_bins first (cudaMemsetAsync); one thread per value; if (v < num_bins) "
                 "atomicAdd(&d_bins[v], 1u).") {
#if defined(CUSIM)
#else
#endif
  std::vector<HistogramInput> inputs = histogram_inputs({1, 6, 33, 1000, 100003}, 700);
#if !defined(CUSIM)
  // One thread per element: 65536 blocks of 1024 threads, past 65535 (the limit of gridDim.y and
  // z, not of x). On the sim backend this size takes too long.
  inputs.push_back(uniform_values(std::size_t(1) << 26, 256, 750));
#endif
  std::size_t passed = 0;
  for (const HistogramInput& h : inputs) {
    auto result = check_histogram_global(h);
    wb::check::record_measured(cases_text(passed, inputs.size()));
    WB_ASSERT(result);
    ++passed;
  }
  wb::check::record_measured(cases_text(passed, inputs.size()));
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
  struct Case {
    HistogramInput input;
    int num_blocks, block_size;
  };
  std::vector<Case> cases;
  const std::vector<HistogramInput> inputs = histogram_inputs({1, 6, 33, 1000, 4097}, 800);
  for (const auto& [num_blocks, block_size] : {std::pair{1, 32}, std::pair{3, 96}, std::pair{16, 256}, std::pair{40, 1024}}) {
    for (const HistogramInput& h : inputs) cases.push_back({h, num_blocks, block_size});
  }
  for (const auto& [num_blocks, block_size] : {std::pair{1, 32}, std::pair{16, 256}}) {
    for (const HistogramInput& h : {uniform_values((1 << 18) + 7, 256, 850), one_bin_values((1 << 18) + 7, 256, 255),
                                    uniform_values((1 << 18) + 7, kMaxHistogramBins, 851)}) {
      cases.push_back({h, num_blocks, block_size});
    }
  }
  // Any num_blocks >= 1 is allowed, also more than 65535 (the limit of gridDim.y and z, not of x).
  cases.push_back({uniform_values((std::size_t(1) << 21) + 6, 7, 860), 65600, 32});
  std::size_t passed = 0;
  for (const Case& c : cases) {
    auto result = check_histogram_shared(c.input, c.num_blocks, c.block_size);
    wb::check::record_measured(cases_text(passed, cases.size()));
    WB_ASSERT(result);
    ++passed;
  }
  wb::check::record_measured(cases_text(passed, cases.size()));
}

WB_CHECK(Correctness, Histogram, .weight = 2,
         .passes = "the same inputs, n = 0 .. 65539 (every n % 4 after a whole 16-byte load), and "
                   "2^22 + 3 (uniform and one bin)",
         .hint = "Handle n == 0, the values after the last full 16-byte load, and values >= num_bins "
                 "(ignored).") {
  std::vector<HistogramInput> inputs = histogram_inputs({1, 2, 3, 5, 6, 33, 1000, 1026, 65539}, 900);
  inputs.push_back(uniform_values((1 << 22) + 3, 256, 950));
  inputs.push_back(one_bin_values((1 << 22) + 3, 256, 200));
  std::size_t passed = 0;
  for (const HistogramInput& h : inputs) {
    auto result = check_histogram_final(h);
    wb::check::record_measured(cases_text(passed, inputs.size()));
    WB_ASSERT(result);
    ++passed;
  }
  wb::check::record_measured(cases_text(passed, inputs.size()));
}

// d_values may be followed by other data: a grid covers n rounded up to whole blocks, and a
// thread past n that reads anyway (i != n, or no test at all) counts whatever lies there. On
// the other inputs that memory is the buffer's guard zone, whose bytes are out of range.
WB_CHECK(Correctness, HistogramIgnoresValuesPastN, .weight = 1,
         .passes = "all three histograms with 1024 zeros in memory after `d_values[n-1]` (n = 1000, "
                   "1024, 4097, 65539; 7 and 256 bins): they are not counted",
         .hint = "Only d_values[0..n) is the input: test every index against n (i < n), in every version "
                 "and in the tail after the last 16-byte load.") {
  const std::vector<std::function<testing::AssertionResult(const HistogramInput&)>> functions = {
      check_histogram_global, [](const HistogramInput& h) { return check_histogram_shared(h, 3, 96); },
      check_histogram_final};
  std::vector<HistogramInput> inputs;
  std::uint64_t seed = 970;
  for (std::size_t n : {1000, 1024, 4097, 65539}) {
    for (int num_bins : {7, 256}) inputs.push_back(with_zeros_after(uniform_values(n, num_bins, seed++), 1024));
  }
  const std::size_t total = functions.size() * inputs.size();
  std::size_t passed = 0;
  for (const auto& check : functions) {
    for (const HistogramInput& h : inputs) {
      auto result = check(h);
      wb::check::record_measured(cases_text(passed, total));
      WB_ASSERT(result);
      ++passed;
    }
  }
  wb::check::record_measured(cases_text(passed, total));
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

// Device buffers for the injected calls of a scan: input, output, workspace.
template <class T>
struct ScanBuffers {
  std::vector<T> input;
  wb::DeviceBuffer<T> in, out;
  wb::DeviceBuffer<unsigned char> workspace;
  explicit ScanBuffers(std::vector<T> values)
      : input(std::move(values)),
        in(std::span<const T>(input), wb::DeviceBuffer<T>::kDefaultGuard),
        out(input.size(), wb::DeviceBuffer<T>::kDefaultGuard),
        workspace(scan_workspace_bytes(static_cast<int>(input.size())), 4096) {}
};

struct HistogramBuffers {
  wb::DeviceBuffer<unsigned> values, bins;
  explicit HistogramBuffers(const HistogramInput& h)
      : values(std::span<const unsigned>(h.values), wb::DeviceBuffer<unsigned>::kDefaultGuard),
        bins(static_cast<std::size_t>(h.num_bins), wb::DeviceBuffer<unsigned>::kDefaultGuard) {}
};

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
    auto b = std::make_shared<ScanBuffers<int>>(scan_ints(size, 1000));
    keep.push_back(b);
    const int vn = static_cast<int>(size);
    // The workspace is zeroed before each injected call: code that goes on after a failed clear
    // then runs on defined data, and the check reports the work, not a hang.
    cases.push_back({std::string(v->name) + "(n=" + std::to_string(vn) + ")", v->name,
                     [v, size] { return check_int_scan(*v, size, 1001); }, [b] { (void)b->workspace.fill_bytes(0); },
                     [v, b, vn] { return call_scan(*v, b->in.data(), b->out.data(), vn, b->workspace.data()); }});
  }
  {
    auto b = std::make_shared<ScanBuffers<float>>(wb::random_floats(kHostScanSize, 1002, -1.0f, 2.0f));
    keep.push_back(b);
    cases.push_back({"inclusive_scan(float, n=" + std::to_string(n) + ")", "inclusive_scan",
                     [] { return check_float_scan(kHostScanSize, 1003); }, [b] { b->workspace.fill_bytes(0); },
                     [b, n] { return inclusive_scan(b->in.data(), b->out.data(), n, b->workspace.data()); }});
  }
  std::uint64_t seed = 1010;
  for (std::size_t size : {std::size_t(0), std::size_t(1000)}) {
    const HistogramInput h = uniform_values(size, 256, seed++);
    auto b = std::make_shared<HistogramBuffers>(h);
    keep.push_back(b);
    const int hn = static_cast<int>(size);
    cases.push_back({histogram_call("histogram_global_atomics", h), "histogram_global_atomics",
                     [h] { return check_histogram_global(h); }, nullptr,
                     [b, hn] { return histogram_global_atomics(b->values.data(), hn, b->bins.data(), 256); }});
    cases.push_back({histogram_call("histogram_shared", h, ", num_blocks=4, block_size=128"), "histogram_shared",
                     [h] { return check_histogram_shared(h, 4, 128); }, nullptr,
                     [b, hn] { return histogram_shared(b->values.data(), hn, b->bins.data(), 256, 4, 128); }});
    cases.push_back({histogram_call("histogram", h), "histogram", [h] { return check_histogram_final(h); }, nullptr,
                     [b, hn] { return histogram(b->values.data(), hn, b->bins.data(), 256); }});
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
  WB_ASSERT(wb::check::run_cases(cases.size(), [&](std::size_t i) {
    return wb::check::host::frees_device_memory(cases[i].call, cases[i].function, cases[i].checked_call);
  }));
}

// Fault injection (wb_host_checks.h): every cudaMalloc, cudaMemcpy(Async), cudaMemset(Async),
// cudaFuncSetAttribute and kernel launch of each call fails in turn; the call must return that error at once, with no work after it
// and no leak.
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
          keep_first(check_histogram_global(h));
          keep_first(check_histogram_shared(h, 3, 96));
          keep_first(check_histogram_final(h));
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
  WB_ASSERT(wb::check::measure([&] { return check_int_scan(kReduceThenScan, kMetricScanSize, 1100); }, t,
                               kReduceThenScan.name));
  WB_REQUIRE_ANALYSIS();
  const double bytes = 4.0 * kMetricScanSize;
  const double read = double(t.bytes_read) / bytes, written = double(t.bytes_written) / bytes;
  wb::check::record_measured(fixed(read) + " x 4n read, " + fixed(written) + " x 4n written; loads " +
                             fixed(t.loads()) + ", stores " + fixed(t.stores()) + " sectors/request");
  if (read > kMaxRead || written > kMaxWritten) {
    ADD_FAILURE() << "scan_reduce_then_scan(n=" << kMetricScanSize << ") read " << fixed(read) << " x 4n and wrote "
                  << fixed(written) << " x 4n bytes (at most " << wb::check::as_written(kMaxRead) << " and "
                  << wb::check::as_written(kMaxWritten) << " allowed). Reduce-then-scan reads every "
                  << "element twice (once to reduce its tile, once to scan it) and writes it once; "
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
  WB_ASSERT(wb::check::measure([&] { return check_int_scan(kInclusive, kMetricScanSize, 1101); }, t, kInclusive.name));
  WB_REQUIRE_ANALYSIS();
  const double moved = double(t.bytes_read + t.bytes_written) / (4.0 * kMetricScanSize);
  wb::check::record_measured(fixed(moved) + " x 4n bytes moved (" + fixed(double(t.bytes_read) / (4.0 * kMetricScanSize)) +
                             " read, " + fixed(double(t.bytes_written) / (4.0 * kMetricScanSize)) + " written)");
  if (moved > kMaxMoved) {
    ADD_FAILURE() << "inclusive_scan(n=" << kMetricScanSize << ") read and wrote " << fixed(moved)
                  << " x 4n bytes of global memory (at most " << wb::check::as_written(kMaxMoved)
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
  WB_ASSERT(wb::check::measure([&] { return check_int_scan(kInclusive, kMetricScanSize, 1103); }, small, kInclusive.name));
  WB_ASSERT(wb::check::measure([&] { return check_int_scan(kInclusive, kLarge, 1104); }, large, kInclusive.name));
  WB_REQUIRE_ANALYSIS();
  const double per_small = double(small.bytes_read + small.bytes_written) / (4.0 * kMetricScanSize);
  const double per_large = double(large.bytes_read + large.bytes_written) / (4.0 * kLarge);
  wb::check::record_measured(fixed(per_small) + " x 4n bytes at n = 2^18+3, " + fixed(per_large) +
                             " x 4n at n = 2^22+3");
  if (per_large > per_small + kMaxGrowth) {
    ADD_FAILURE() << "inclusive_scan moved " << fixed(per_small) << " x 4n bytes of global memory at n=" << kMetricScanSize
                  << " but " << fixed(per_large) << " x 4n at n=" << kLarge
                  << " (at most " << wb::check::as_written(kMaxGrowth)
                  << " x 4n more allowed): the traffic per element grows with n. In a single pass "
                     "with decoupled look-back, a tile that never publishes its inclusive prefix (flag INCLUSIVE, "
                     "its prefix + its own sum) sends every later tile's look-back back to tile 0: publish it as "
                     "soon as the tile knows its prefix.";
  }
#endif
}

// A block past n rounded up to whole blocks has nothing to do, and a block that is not whole
// warps leaves lanes of its last warp idle. n: multiples of common block and tile sizes,
// where rounding up twice ((n + per_block) / per_block) adds a block.
WB_CHECK(Performance, NoIdleBlocks, .weight = 1, .backends = "sim",
         .passes = "no launch of the scans, `histogram_global_atomics` or `histogram` has more "
                   "threads than n rounded up to whole blocks, and every block is whole warps (a "
                   "multiple of 32 threads) (n = 256, 1024, 3840, 5376, 65536; cusim's launch log)",
         .hint = "Round the number of blocks up exactly once: (n + per_block - 1) / per_block; (n + "
                 "per_block) / per_block adds an idle block whenever n is a multiple of per_block. Blocks "
                 "are a multiple of 32 threads.") {
  std::vector<std::string> failures;
  std::uint64_t seed = 1700;
  std::vector<std::string> failed;  // one failure per function
  auto inspect = [&](const std::string& function, const std::string& call, std::size_t n) {
    if (std::find(failed.begin(), failed.end(), function) != failed.end()) return;
    for (const auto& l : cusim::checker::launches()) {
      const std::uint64_t block = l.threads_per_block();
      if (block % 32 != 0) {
        failures.push_back(call + " launched " + l.kernel + " with " + l.shape() + ": blocks of " +
                           std::to_string(block) + " threads are not whole warps, so the last warp of every block "
                           "runs with " + std::to_string(32 - block % 32) + " of its 32 lanes idle. Use a multiple "
                           "of 32 threads per block.");
        failed.push_back(function);
        return;
      }
      const std::uint64_t limit = (n + block - 1) / block * block;
      if (l.threads_per_launch() > limit) {
        failures.push_back(call + " launched " + l.kernel + " with " + l.shape() + ": " +
                           std::to_string(l.threads_per_launch()) + " threads for " + std::to_string(n) +
                           " elements, more than n rounded up to whole blocks (" + std::to_string(limit) +
                           "). The last block has no element: round the block count up once, (n + block - 1) / block.");
        failed.push_back(function);
        return;
      }
    }
  };
  std::size_t cases = 0;
  for (std::size_t n : {std::size_t(256), std::size_t(1024), std::size_t(3840), std::size_t(5376), std::size_t(65536)}) {
    for (const ScanVersion* v : {&kKoggeStone, &kBlelloch, &kReduceThenScan, &kInclusive, &kExclusive}) {
      if ((v == &kKoggeStone && n > std::size_t(kMaxKoggeStoneScan)) || (v == &kBlelloch && n > std::size_t(kMaxBlellochScan)))
        continue;
      cusim::checker::clear_launches();
      WB_ASSERT(check_int_scan(*v, n, seed++));
      inspect(v->name, std::string(v->name) + "(n=" + std::to_string(n) + ")", n);
      ++cases;
    }
    const HistogramInput h = uniform_values(n, 256, seed++);
    cusim::checker::clear_launches();
    WB_ASSERT(check_histogram_global(h));
    inspect("histogram_global_atomics", histogram_call("histogram_global_atomics", h), n);
    cusim::checker::clear_launches();
    WB_ASSERT(check_histogram_final(h));
    inspect("histogram", histogram_call("histogram", h), n);
    cases += 2;
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
  constexpr std::size_t n = (1 << 18) + 5;
  std::string text;
  for (const HistogramInput& h : {uniform_values(n, kBins, 1200), one_bin_values(n, kBins, 255)}) {
    Traffic t;
    WB_ASSERT(
        wb::check::measure([&] { return check_histogram_shared(h, kBlocks, kBlockSize); }, t, "histogram_shared"));
    WB_REQUIRE_ANALYSIS();
    const std::size_t used_bins = bins_with_values(h);
    const std::uint64_t limit = std::uint64_t(kBlocks) * used_bins;
    text += (text.empty() ? "" : "; ") + h.kind + ": " + std::to_string(t.global_atomics) + " global atomics (limit " +
            std::to_string(limit) + "), loads " + fixed(t.loads()) + " sectors/request";
    wb::check::record_measured(text);
    if (t.global_atomics > limit && used_bins < std::size_t(kBins) && t.global_atomics <= std::uint64_t(kBlocks) * kBins) {
      ADD_FAILURE() << histogram_call("histogram_shared", h, ", num_blocks=16, block_size=256") << ": "
                    << t.global_atomics << " atomic operations on global memory (at most num_blocks x the "
                    << used_bins << " bin(s) that received values = " << limit
                    << "). Bins whose shared count is 0 were merged too: adding 0 changes nothing and costs an atomic; "
                       "merge only the nonzero bins (if (count != 0) atomicAdd(&d_bins[b], count)).";
    } else if (t.global_atomics > limit) {
      ADD_FAILURE() << histogram_call("histogram_shared", h, ", num_blocks=16, block_size=256") << ": "
                    << t.global_atomics << " atomic operations on global memory (at most num_blocks x num_bins = "
                    << limit << "). Every element still goes to d_bins: count into a __shared__ histogram of the "
                    << "block first, then merge it with one global atomicAdd per bin.";
    }
    if (t.loads() > kMaxSectors) {
      ADD_FAILURE() << histogram_call("histogram_shared", h, ", num_blocks=16, block_size=256") << ": its loads touch "
                    << fixed(t.loads()) << " global memory sectors per request (at most " << fixed(kMaxSectors)
                    << " allowed). In a grid-stride loop, let "
                       "consecutive threads read consecutive values: i = blockIdx.x * blockDim.x + threadIdx.x, "
                       "i += blockDim.x * gridDim.x (a contiguous chunk per thread spreads a warp's loads).";
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
  WB_ASSERT(wb::check::measure([&] { return check_histogram_final(h); }, t, "histogram"));
  WB_REQUIRE_ANALYSIS();
  const double read = double(t.bytes_read) / (4.0 * n);
  wb::check::record_measured(fixed(read) + " x 4n read, " + std::to_string(t.global_atomics) +
                             " global atomics (limit " + std::to_string(kMaxAtomics) + ")");
  if (read > kMaxRead) {
    ADD_FAILURE() << histogram_call("histogram", h) << " read " << fixed(read)
                  << " x 4n bytes of global memory (at most " << wb::check::as_written(kMaxRead)
                  << " allowed): some values were read more than once.";
  }
  if (t.global_atomics > kMaxAtomics) {
    ADD_FAILURE() << histogram_call("histogram", h) << ": " << t.global_atomics
                  << " atomic operations on global memory (at most n / " << wb::check::as_written(kValuesPerAtomic)
                  << " = " << kMaxAtomics
                  << "). Count in shared memory first, and give each block many values (a grid of a few blocks per "
                     "multiprocessor and a grid-stride loop): each block merges num_bins counters once.";
  }
  // With every value in one of 4096 bins, a block that merges its empty bins too makes 4095
  // atomics that add 0 (the reference: one per block).
  const HistogramInput one = one_bin_values(n, kMaxHistogramBins, kMaxHistogramBins - 1);
  Traffic t1;
  cusim::checker::clear_launches();
  WB_ASSERT(wb::check::measure([&] { return check_histogram_final(one); }, t1, "histogram"));
  std::uint64_t blocks = 0;
  for (const auto& l : cusim::checker::launches()) blocks += l.blocks() * l.launches;
  wb::check::record_measured(fixed(read) + " x 4n read, " + std::to_string(t.global_atomics) +
                             " global atomics (limit " + std::to_string(kMaxAtomics) + "); one of 4096 bins: " +
                             std::to_string(t1.global_atomics) + " global atomics for " + std::to_string(blocks) +
                             " blocks");
  if (t1.global_atomics > blocks) {
    ADD_FAILURE() << histogram_call("histogram", one) << ": " << t1.global_atomics
                  << " atomic operations on global memory for " << blocks
                  << " blocks launched (at most one per block and bin that received values: " << blocks
                  << "). Bins whose shared count is 0 were merged too: adding 0 changes nothing and costs an atomic "
                     "(4095 per block here); merge only the nonzero bins (if (count != 0)).";
  }
#endif
}
#else
namespace {

// Validates @p run once against @p check; "" when correct, else why it is not timed.
std::string validate(const std::function<cudaError_t()>& run, const std::function<bool()>& check) {
  const cudaError_t status = run();
  const cudaError_t sync = status == cudaSuccess ? cudaDeviceSynchronize() : status;
  if (sync != cudaSuccess) {
    (void)cudaGetLastError();
    return wb::error_text(sync);
  }
  return check() ? "" : "wrong result";
}

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
  constexpr int n = 1 << 26;
  WB_ASSERT(check_int_scan(kInclusive, n, 1400));
  try {
    const std::vector<int> input = scan_ints(n, 1401);
    const std::vector<std::int64_t> expected = inclusive_prefix(input);
    wb::DeviceBuffer<int> in{std::span<const int>(input)};
    wb::DeviceBuffer<int> out(n);
    wb::DeviceBuffer<unsigned char> workspace(scan_workspace_bytes(n));
    auto output_right = [&] {
      const std::vector<int> got = out.download();
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != expected[i]) return false;
      }
      return true;
    };
    const double bytes = 8.0 * n;  // read n ints, write n ints
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * static_cast<std::size_t>(n));
    const std::function<cudaError_t()> scan = [&] { return inclusive_scan(in.data(), out.data(), n, workspace.data()); };
    if (const std::string why = validate(scan, output_right); !why.empty()) {
      FAIL() << "inclusive_scan(n=" << n << ") on the timing data: " << why;
    }
    const wb::Bandwidth b = wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(scan()); });
    const double ratio = b.gb_per_s / copy.gb_per_s;
    std::ostringstream text;
    text.precision(2);
    text << std::fixed << ratio << " x copy (" << b.gb_per_s << " GB/s vs " << copy.gb_per_s << " GB/s)";
    const std::function<cudaError_t()> rts = [&] {
      return scan_reduce_then_scan(in.data(), out.data(), n, workspace.data());
    };
    if (const std::string why = validate(rts, output_right); why.empty()) {
      text << "; scan_reduce_then_scan "
           << wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(rts()); }).gb_per_s / copy.gb_per_s << " x";
    } else {
      text << "; scan_reduce_then_scan not timed (" << why << ")";
    }
#if defined(WB_HAVE_CUDA_BASELINES)
    std::size_t temp_bytes = 0;
    WB_CUDA_CHECK(wb_cub_inclusive_sum(in.data(), out.data(), n, nullptr, &temp_bytes));
    wb::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
    const std::function<cudaError_t()> cub = [&] {
      std::size_t bytes_needed = temp_bytes;
      return wb_cub_inclusive_sum(in.data(), out.data(), n, temp.data(), &bytes_needed);
    };
    if (const std::string why = validate(cub, output_right); why.empty()) {
      const double cub_gbps = wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(cub()); }).gb_per_s;
      text << "; CUB InclusiveSum " << cub_gbps / copy.gb_per_s << " x copy (inclusive_scan = " << b.gb_per_s / cub_gbps
           << " x CUB)";
    } else {
      text << "; CUB not timed (" << why << ")";
    }
#endif
    wb::check::record_measured(text.str());
    EXPECT_GE(ratio, kMinRatio) << "inclusive_scan reached " << text.str() << "; it needs " << wb::check::as_written(kMinRatio)
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
  constexpr int n = 1 << 26;
  WB_ASSERT(check_int_scan(kInclusive, n, 1500));
  try {
    const std::vector<int> input = scan_ints(n, 1501);
    const std::vector<std::int64_t> expected = inclusive_prefix(input);
    wb::DeviceBuffer<int> in{std::span<const int>(input)};
    wb::DeviceBuffer<int> out(n);
    wb::DeviceBuffer<unsigned char> workspace(scan_workspace_bytes(n));
    auto output_right = [&] {
      const std::vector<int> got = out.download();
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != expected[i]) return false;
      }
      return true;
    };
    std::size_t temp_bytes = 0;
    WB_CUDA_CHECK(wb_cub_inclusive_sum(in.data(), out.data(), n, nullptr, &temp_bytes));
    wb::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
    const std::function<cudaError_t()> cub = [&] {
      std::size_t bytes_needed = temp_bytes;
      return wb_cub_inclusive_sum(in.data(), out.data(), n, temp.data(), &bytes_needed);
    };
    const std::function<cudaError_t()> scan = [&] { return inclusive_scan(in.data(), out.data(), n, workspace.data()); };
    if (const std::string why = validate(scan, output_right); !why.empty()) {
      FAIL() << "inclusive_scan(n=" << n << ") on the timing data: " << why;
    }
    if (const std::string why = validate(cub, output_right); !why.empty()) {
      FAIL() << "the CUB baseline failed on the timing data: " << why;
    }
    const double bytes = 8.0 * n;
    // Side by side: each measurement alternates with the other's, so clock drift hits both.
    const double scan_gbps = wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(scan()); }).gb_per_s;
    const double cub_gbps = wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(cub()); }).gb_per_s;
    const double ratio = scan_gbps / cub_gbps;
    std::ostringstream text;
    text.precision(2);
    text << std::fixed << ratio << " x CUB (" << scan_gbps << " GB/s vs " << cub_gbps << " GB/s)";
    wb::check::record_measured(text.str());
    EXPECT_GE(ratio, kMinRatio) << "inclusive_scan reached " << text.str() << "; it needs " << wb::check::as_written(kMinRatio)
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
  const std::vector<HistogramInput> inputs = {uniform_values(n, kBins, 1600), one_bin_values(n, kBins, 17)};
  for (const HistogramInput& h : inputs) WB_ASSERT(check_histogram_final(h));
  try {
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * static_cast<std::size_t>(n));
    std::ostringstream text;
    text.precision(2);
    text << std::fixed;
    double worst = 1e30;
    std::string worst_kind;
    for (const HistogramInput& h : inputs) {
      wb::DeviceBuffer<unsigned> values{std::span<const unsigned>(h.values)};
      wb::DeviceBuffer<unsigned> bins(kBins);
      const double bytes = 4.0 * n;  // every value read once
      const double gbps =
          wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(histogram(values.data(), n, bins.data(), kBins)); }).gb_per_s;
      const double ratio = gbps / copy.gb_per_s;
      if (ratio < worst) {
        worst = ratio;
        worst_kind = h.kind;
      }
      text << (text.tellp() > 0 ? "; " : "") << h.kind << ": " << ratio << " x copy (" << gbps << " GB/s)";
#if defined(WB_HAVE_CUDA_BASELINES)
      std::size_t temp_bytes = 0;
      WB_CUDA_CHECK(wb_cub_histogram_even(values.data(), n, bins.data(), kBins, nullptr, &temp_bytes));
      wb::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
      const double cub_gbps = wb::measure_bandwidth(bytes, [&] {
                                std::size_t bytes_needed = temp_bytes;
                                WB_CUDA_CHECK(wb_cub_histogram_even(values.data(), n, bins.data(), kBins, temp.data(),
                                                                    &bytes_needed));
                              }).gb_per_s;
      text << ", CUB HistogramEven " << cub_gbps / copy.gb_per_s << " x";
#endif
    }
    text << "; copy " << copy.gb_per_s << " GB/s";
    wb::check::record_measured(text.str());
    EXPECT_GE(worst, kMinRatio) << "histogram reached " << text.str() << "; it needs " << wb::check::as_written(kMinRatio)
                                << " x the copy bandwidth on every input (slowest: " << worst_kind
                                << "). A histogram reads every value once; counting in shared memory keeps it close "
                                   "to the speed of reading.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing histogram: " << e.what();
  }
}
#endif
