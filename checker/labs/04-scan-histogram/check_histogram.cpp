// Checks for lab 04, the histograms, and the host-code, analysis and NoIdleBlocks checks of every
// scan and histogram (those run the scans of check_scan.cpp, through scan_histogram_support.h, which
// also holds what both files share); each WB_CHECK says what it runs and what passes.
// Bins carry guard zones and start as 0xCD bytes: a histogram that does not clear its bins first
// shows. Inputs are surrounded by -1 and must come back unchanged.
// Host code (sim): cusim's device memory and fault injection (wb_host_checks.h).
// Performance on sim: cusim's analysis metrics (wb_metrics.h); on a GPU: bandwidth timed in the
// same run as a device-to-device copy and CUB (cub_baselines.cu), median of 21 runs, L2 flushed
// before each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
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

#if defined(CUSIM)
#include <cusim/checker.h>
#endif
#include "wb_host_checks.h"

#if defined(WB_HAVE_CUDA_BASELINES)
cudaError_t wb_cub_histogram_even(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, void* d_temp,
                                  std::size_t* temp_bytes);
#endif

using namespace lab04;  // what the scan and histogram checks share (scan_histogram_support.h)

namespace {

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
#if defined(WB_HAVE_CUDA_BASELINES)
      const std::vector<unsigned> given = h.values;  // the data as generated, for the CUB baseline
#endif
      wb::check::ChangingInput<unsigned> changing(h.values, values.data());
      // "" when @p counts holds the histogram of @p data.
      const auto counts_of = [&](const std::vector<unsigned>& data, const wb::DeviceBuffer<unsigned>& counts) {
        std::vector<unsigned> expected(kBins, 0);
        for (unsigned v : data) {
          if (v < kBins) ++expected[v];
        }
        const std::vector<unsigned> got = counts.download();
        for (int b = 0; b < kBins; ++b) {
          if (got[b] != expected[b]) return "wrong result: bin " + std::to_string(b) + " holds " +
                                            std::to_string(got[b]) + ", expected " + std::to_string(expected[b]);
        }
        return std::string();
      };
      const auto verify = [&] { return counts_of(h.values, bins); };
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
      // CUB on the same data, out of the lab's reach where the checks are split (wb_baseline.h).
      wb::Bandwidth cub;
      std::string why;
      {
        wb::check::InCheckersProcess checkers;
        std::vector<unsigned> cub_data = given;
        wb::DeviceBuffer<unsigned> cub_values{std::span<const unsigned>(cub_data)};
        wb::DeviceBuffer<unsigned> cub_bins(kBins);
        wb::check::ChangingInput<unsigned> cub_changing(cub_data, cub_values.data());
        std::size_t temp_bytes = 0;
        WB_CUDA_CHECK(wb_cub_histogram_even(cub_values.data(), n, cub_bins.data(), kBins, nullptr, &temp_bytes));
        wb::DeviceBuffer<unsigned char> temp(std::max<std::size_t>(temp_bytes, 1));
        why = wb::check::failure_text(wb::check::timed_and_verified(
            "CUB HistogramEven", bytes,
            [&] {
              std::size_t bytes_needed = temp_bytes;
              return wb_cub_histogram_even(cub_values.data(), n, cub_bins.data(), kBins, temp.data(), &bytes_needed);
            },
            [&] { cub_changing.change(); }, [&] { return counts_of(cub_data, cub_bins); }, cub));
      }
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
