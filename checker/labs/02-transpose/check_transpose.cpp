// Checks for lab 02 (matrix transpose); what each check needs is the .passes of its WB_CHECK.
//
// Input element (r, c) holds the value r * cols + c + 1, so a wrong output element tells which
// input element it holds; the output starts filled with 0xFF bytes (a NaN no transpose produces),
// so an element never written is told apart from one written wrongly. A transpose computes
// nothing, so the comparison is exact. Both arrays carry guard zones.
// Performance (sim) measures cusim's analysis metrics on two shapes (kAlignedShape, kRaggedShape)
// and reads cusim's launch log (cusim/checker.h); Performance (cuda) times transpose_conflict_free,
// which reads and writes every element once, against a device-to-device cudaMemcpy of the same
// bytes in the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "transpose.h"
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

using wb::check::cuda_success;
using wb::check::fixed;
using wb::check::never_written;

using TransposeFn = cudaError_t (*)(int, int, const float*, float*);

struct Version {
  const char* name;
  TransposeFn run;
};

const Version kNaive{"transpose_naive", &transpose_naive};
const Version kTiled{"transpose_tiled", &transpose_tiled};
const Version kConflictFree{"transpose_conflict_free", &transpose_conflict_free};
const Version* const kAllVersions[] = {&kNaive, &kTiled, &kConflictFree};

struct Shape {
  int rows;
  int cols;
  std::size_t size() const { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }
};

constexpr std::size_t kGuard = wb::DeviceBuffer<float>::kDefaultGuard;
constexpr unsigned char kUnwrittenByte = 0xFF;
// Up to this many elements, input values r * cols + c + 1 are exact floats naming their position.
constexpr std::size_t kMaxLabelledElements = std::size_t(1) << 24;

// Shapes every version must handle: empty, single elements, single rows and columns, warp
// size +-1, square and not, multiples of the tile and not.
const std::vector<Shape> kShapes = {
    {0, 0},    {0, 7},    {7, 0},    {1, 1},     {1, 37},    {37, 1},    {31, 33},  {33, 31},
    {32, 32},  {64, 96},  {96, 64},  {65, 65},   {100, 37},  {37, 100},  {257, 129}, {129, 257},
    {1000, 3}, {3, 1000}, {200, 328}, {333, 517}};

std::vector<float> make_input(Shape s, std::uint64_t seed = 0) {
  if (s.size() > kMaxLabelledElements) return wb::random_floats(s.size(), seed);
  std::vector<float> in(s.size());
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i + 1);
  return in;
}

std::string describe_call(const Version& v, Shape s) {
  return std::string(v.name) + "(rows=" + std::to_string(s.rows) + ", cols=" + std::to_string(s.cols) + ")";
}

std::string number(double v) { return wb::check::significant(v, 9); }

// What an output element holds, in words: "in(3, 7)" when its value names an input element.
std::string describe_value(float got, Shape s) {
  if (never_written(got)) return "nothing (never written)";
  if (s.size() <= kMaxLabelledElements && got >= 1.0f && got <= static_cast<float>(s.size()) &&
      got == static_cast<float>(static_cast<std::int64_t>(got))) {
    const auto index = static_cast<std::int64_t>(got) - 1;
    return "in(" + std::to_string(index / s.cols) + ", " + std::to_string(index % s.cols) + ") = " + number(got);
  }
  return number(got);
}

// A failure naming the elements written outside out's n elements.
std::string describe_out_of_bounds(const wb::GuardDamage& damage, const char* array, std::size_t n) {
  std::ostringstream out;
  out << damage.modified << " element(s) outside " << array << "[0.." << (n == 0 ? std::string("-1") : std::to_string(n - 1))
      << "] were written (" << array << "[" << damage.first_index << "] to " << array << "[" << damage.last_index
      << "]). Threads outside the matrix must not store: test the row and the column of every store against "
         "the dimensions of the array it writes (out has cols rows and rows columns).";
  return out.str();
}

// Compares out with the exact transpose of in and explains the first wrong elements.
testing::AssertionResult output_matches(Shape s, const std::vector<float>& in, const std::vector<float>& got,
                                        const std::string& call) {
  std::size_t wrong = 0, missing = 0, missing_in_edge = 0;  // missing: never written
  std::vector<std::size_t> first;
  // Full tiles end at these out row / column indices; beyond them lie the partial edge tiles.
  const int full_out_rows = s.cols / 32 * 32, full_out_cols = s.rows / 32 * 32;
  for (int i = 0; i < s.cols; ++i) {    // out row i = input column i
    for (int j = 0; j < s.rows; ++j) {  // out column j = input row j
      const std::size_t k = static_cast<std::size_t>(i) * s.rows + j;
      const float expected = in[static_cast<std::size_t>(j) * s.cols + i];
      if (std::memcmp(&got[k], &expected, sizeof(float)) == 0) continue;
      ++wrong;
      if (never_written(got[k])) {
        ++missing;
        if (i >= full_out_rows || j >= full_out_cols) ++missing_in_edge;
      }
      if (first.size() < 5) first.push_back(k);
    }
  }
  if (wrong == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << wrong << " of " << s.size() << " elements of out are wrong";
  if (missing > 0) failure << " (" << missing << " never written)";
  failure << ". out(i, j) = out[i * rows + j] must hold in(j, i) = in[j * cols + i]; first mismatches:";
  for (std::size_t k : first) {
    const std::size_t i = k / s.rows, j = k % s.rows;
    failure << "\n  out[" << k << "] = out(" << i << ", " << j << "): expected in(" << j << ", " << i
            << ") = " << number(in[j * s.cols + i]) << ", got " << describe_value(got[k], s);
  }
  if (missing == wrong && missing_in_edge == missing) {
    failure << "\nEvery element that is missing lies in a partial tile at the right or bottom edge of out: round "
               "the number of tiles (blocks) up, and let the threads of a partial tile store every element that "
               "exists (out row < cols and out column < rows).";
  } else if (missing == wrong) {
    failure << "\nSome elements get no thread: check the grid size and how each thread's row and column are computed.";
  }
  return failure;
}

// One call of a version on guarded device arrays: status, device errors, writes out of
// bounds, input untouched, output exact.
testing::AssertionResult check_version(const Version& v, Shape s, std::uint64_t seed = 1) {
  const std::string call = describe_call(v, s);
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    const std::vector<float> input = make_input(s, seed);
    wb::DeviceBuffer<float> in(std::span<const float>(input), kGuard);
    wb::check::Output<float> out(s.size(), "out", kUnwrittenByte);
    if (auto r = cuda_success(v.run(s.rows, s.cols, in.data(), out.dev.data()), call, v.name); !r) return r;
    if (auto r = wb::check::device_clean_after(call); !r) return r;
    const wb::GuardDamage out_damage = out.dev.check_guards();
    const wb::GuardDamage in_damage = in.check_guards();
    testing::AssertionResult values = output_matches(s, input, out.dev.download(), call);
    if (!out_damage.intact() || !in_damage.intact()) {
      testing::AssertionResult failure = testing::AssertionFailure();
      failure << call << " wrote out of bounds: ";
      if (!out_damage.intact()) failure << describe_out_of_bounds(out_damage, "out", s.size());
      if (!in_damage.intact()) failure << describe_out_of_bounds(in_damage, "in", s.size());
      if (!values) failure << "\n" << values.message();
      return failure;
    }
    if (!values) return values;
    const std::vector<float> in_after = in.download();
    if (!in_after.empty() && std::memcmp(in_after.data(), input.data(), in_after.size() * sizeof(float)) != 0) {
      return testing::AssertionFailure() << call << " modified in, which is an input (const float*).";
    }
    return testing::AssertionSuccess();
  });
}

testing::AssertionResult check_shapes(const Version& v) {
  return wb::check::for_each_case(kShapes, [&](Shape s) { return check_version(v, s); }, "shapes");
}

}  // namespace

// ---- Correctness ---------------------------------------------------------------------

// What passes, for NaiveShapes, TiledShapes, ConflictFreeShapes.
constexpr char kShapesPasses[] = "the exact transpose for 20 shapes: 0 x 0, 0 x 7, 7 x 0, 1 x 1, 1 x 37, 37 x 1, 31 "
                                 "x 33, 33 x 31, 32 x 32, 64 x 96, 96 x 64, 65 x 65, 100 x 37, 37 x 100, 257 x 129, "
                                 "129 x 257, 1000 x 3, 3 x 1000, 200 x 328, 333 x 517";

WB_CHECK(Correctness, NaiveShapes, .weight = 2,
         .passes = kShapesPasses,
         .hint = "One thread per element: c = blockIdx.x * blockDim.x + threadIdx.x, r from the y "
                 "dimension; store out[c * rows + r] = in[r * cols + c] only when r < rows and c < cols.") {
  WB_ASSERT(check_shapes(kNaive));
}

WB_CHECK(Correctness, TiledShapes, .weight = 2,
         .passes = kShapesPasses,
         .hint = "Load the tile with the input's bounds (r < rows, c < cols) and store it with the "
                 "output's (out row < cols, out column < rows); __syncthreads() in between.") {
  WB_ASSERT(check_shapes(kTiled));
}

WB_CHECK(Correctness, ConflictFreeShapes, .weight = 2,
         .passes = kShapesPasses,
         .hint = "The same tile code as transpose_tiled, with the tile declared float[32][33].") {
  WB_ASSERT(check_shapes(kConflictFree));
}

WB_CHECK(Correctness, LargeShapes, .weight = 1,
         .passes = "every version on 1023 x 1025, 1 x 20011 and 20011 x 1",
         .hint = "Round the number of tiles up in both dimensions.") {
  wb::check::Cases cases(9);
  for (const Version* v : kAllVersions) {
    for (Shape s : {Shape{1023, 1025}, Shape{1, 20011}, Shape{20011, 1}}) WB_ASSERT(cases(check_version(*v, s)));
  }
}

// Every version: each must loop over the tile rows (or element rows) its capped grid does not
// cover. On the sim backend one version on this matrix takes a few seconds.
constexpr Shape kTallShape{(1 << 21) + 1, 1};  // 65537 tile rows of 32, 262145 rows of 8 threads

WB_CHECK(Correctness, TallMatrix, .weight = 2,
         .passes = "every version on (2^21 + 1) x 1: 65537 tile rows, more than gridDim.y can hold, "
                   "so blocks loop",
         .hint = "gridDim.y and gridDim.z are at most 65535, and a matrix of 2^21 + 1 rows has 65537 tile "
                 "rows. Cap gridDim.y at 65535 and let each block loop over tile rows (tile_row += "
                 "gridDim.y * 32), or put the long dimension on gridDim.x.") {
  WB_ASSERT(wb::check::for_each_case(
      kAllVersions, [](const Version* v) { return check_version(*v, kTallShape); }, "versions"));
}

// ---- Host code (sim) -------------------------------------------------------------------

#if defined(CUSIM)
// Fault injection (wb_host_checks.h): each kernel launch (and any allocation, copy or memset) of
// every version fails in turn; the function must return that error at once, with no launch after
// it and no device memory left.
WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "each version (70 x 100): its kernel launch is made to fail (cusim's fault "
                   "injection, like a launch that asks for more resources than an SM has); the "
                   "function must return that error (`return cudaGetLastError();` after the launch)",
         .hint = "Test cudaGetLastError() right after the launch and return its error: return "
                 "cudaGetLastError(); (or if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) "
                 "return e; before any later call).") {
  constexpr Shape s{70, 100};
  wb::DeviceBuffer<float> in{std::span<const float>(wb::random_floats(s.size(), 1200, -1.0f, 1.0f))};
  wb::DeviceBuffer<float> out{s.size()};
  std::vector<wb::check::host::ErrorPathCase> cases;
  for (const Version* v : kAllVersions) {
    cases.push_back({describe_call(*v, s), v->name, [&, v] { return v->run(s.rows, s.cols, in.data(), out.data()); }});
  }
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}
#endif

// ---- Analysis (sim) --------------------------------------------------------------------

#if defined(CUSIM)
namespace {

const std::vector<Shape> kAnalysisShapes = {{33, 31}, {31, 33}, {1, 40}, {45, 1}, {70, 100}};

// Runs every version on kAnalysisShapes (and the tiled versions on @p tiled_extra) and fails
// on any report of @p tools. A report explains a wrong result (a race usually does), so
// reports come first in the failure.
void expect_no_reports(const std::vector<std::string>& tools, const char* what,
                       const std::vector<Shape>& tiled_extra = {}) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    for (const Version* v : kAllVersions) {
      for (Shape s : kAnalysisShapes) keep_first(check_version(*v, s));
      if (v == &kNaive) continue;
      for (Shape s : tiled_extra) keep_first(check_version(*v, s));
    }
  });
}

}  // namespace

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = "no memcheck/initcheck report for any version on 5 edge shapes",
         .hint = "Every load and store, global and shared, must be inside its array: test the row and "
                 "the column.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

// The tall matrix makes the first blocks loop to a second tile row, where a missing
// __syncthreads() before the tile is overwritten races with the previous tile's reads.
WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = "no racecheck/synccheck report for any version on 5 edge shapes, nor for versions "
                   "2 and 3 on (2^21 + 1) x 1, where a block moves a second tile (the "
                   "`__syncthreads()` before the tile is reused)",
         .hint = "Between the threads' stores into the shared tile and their reads of other threads' "
                 "elements there must be a __syncthreads(); and another one before the tile is overwritten "
                 "(next loop iteration).") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck", {kTallShape});
}
#endif

// ---- Performance -----------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Global sectors per warp-level request are measured on two shapes, each with its own bound (a
// strided side touches one sector per lane: 32 per request). Here rows start on 32-byte sector
// boundaries (both sides multiples of 8 floats), with partial tiles at both edges: a warp's 32
// consecutive floats are exactly 4 sectors, a partial warp fewer, so a coalesced side averages no
// more than a full warp's sectors (max_sectors_aligned).
constexpr Shape kAlignedShape{200, 328};
// Rows start anywhere inside a sector: 32 consecutive floats then straddle 5 sectors, the exact
// bound for a coalesced side (max_sectors_ragged).
constexpr Shape kRaggedShape{333, 517};

// A check's limits max_sectors_aligned and max_sectors_ragged.
struct SectorBounds {
  double aligned;  // on kAlignedShape
  double ragged;   // on kRaggedShape
};

using wb::check::Traffic;

struct Measured {
  Traffic aligned, ragged;
};

// Runs @p v on both shapes, checking the results, and sums the metrics of the kernels each run
// launched; a correct run on kAlignedShape that loaded or stored nothing fails. Without cusim's
// analysis API it only checks the result on kAlignedShape (WB_MEASURE_OR_SKIP then skips the check).
testing::AssertionResult measure(const Version& v, Measured& m) {
#if WB_HAVE_CUSIM_ANALYSIS
  const std::pair<Shape, Traffic*> runs[] = {{kAlignedShape, &m.aligned}, {kRaggedShape, &m.ragged}};
  for (const auto& run : runs) {
    // The check's result alone: the test below says in its own words when a correct run moved nothing.
    testing::AssertionResult checked = testing::AssertionSuccess();
    (void)wb::check::measure([&] { return checked = check_version(v, run.first); }, *run.second);
    if (!checked) return checked;
  }
  if (cusim::analysis::available() && (m.aligned.load_requests == 0 || m.aligned.store_requests == 0)) {
    return testing::AssertionFailure() << v.name
                                       << ": no global memory loads or stores were measured; did its kernel run?";
  }
  return testing::AssertionSuccess();
#else
  (void)m;
  return check_version(v, kAlignedShape);
#endif
}

// "loads A / R, stores A / R sectors/request": global sectors per request on both shapes.
std::string sectors_text(const Measured& m) {
  return "loads " + fixed(m.aligned.loads()) + " / " + fixed(m.ragged.loads()) + ", stores " +
         fixed(m.aligned.stores()) + " / " + fixed(m.ragged.stores()) + " sectors/request";
}

// Fails when one side's sectors per request (@p metric: Traffic::loads or Traffic::stores) exceed
// the bound of its shape.
void expect_coalesced(const Version& v, const char* side, const Measured& m, double (Traffic::*metric)() const,
                      SectorBounds bound, const char* fix) {
  const double aligned = (m.aligned.*metric)(), ragged = (m.ragged.*metric)();
  if (aligned > bound.aligned || ragged > bound.ragged) {
    ADD_FAILURE() << v.name << ": " << side << " touch " << fixed(aligned) << " global memory sectors per request on "
                  << kAlignedShape.rows << " x " << kAlignedShape.cols << " (at most " << fixed(bound.aligned)
                  << " allowed) and " << fixed(ragged) << " on " << kRaggedShape.rows << " x " << kRaggedShape.cols
                  << " (at most " << fixed(bound.ragged)
                  << " allowed). A warp's 32 consecutive floats are 128 contiguous bytes: 4 sectors, 5 when the "
                     "row does not start on a 32-byte boundary; 32 sectors means every lane touched its own sector. "
                  << fix;
  }
}

}  // namespace

// Measures @p version into `m`, or marks the running check NOT MEASURED and returns.
#define WB_MEASURE_OR_SKIP(version) \
  Measured m;                       \
  WB_ASSERT(measure(version, m));   \
  WB_REQUIRE_METRICS()

WB_CHECK(Performance, NaiveReadsCoalesced, .weight = 1, .backends = "sim",
         .limits = {{"max_sectors_aligned", 4.0}, {"max_sectors_ragged", 5.0}},
         .passes = "version 1's *loads* <= {max_sectors_aligned:.2f} sectors/request on 200 x 328 and "
                   "<= {max_sectors_ragged:.2f} on 333 x 517; its strided stores (about 30) are expected",
         .hint = "Let threadIdx.x run along the columns of in: c = blockIdx.x * blockDim.x + threadIdx.x, "
                 "and use blocks 32 threads wide, so a warp reads 32 consecutive floats of one row.") {
  constexpr SectorBounds kBound{WB_LIMIT("max_sectors_aligned"), WB_LIMIT("max_sectors_ragged")};
  WB_MEASURE_OR_SKIP(kNaive);
  wb::check::record_measured(sectors_text(m));
  expect_coalesced(kNaive, "its loads", m, &Traffic::loads, kBound,
                   "In version 1, consecutive threads (threadIdx.x) take consecutive columns c of one input "
                   "row: the reads are coalesced, the writes are strided (that is what versions 2 and 3 fix).");
}

WB_CHECK(Performance, TiledCoalesced, .weight = 3, .backends = "sim",
         .limits = {{"max_sectors_aligned", 4.0}, {"max_sectors_ragged", 5.0}},
         .passes = "version 2's loads and stores each <= {max_sectors_aligned:.2f} / <= "
                   "{max_sectors_ragged:.2f} sectors/request",
         .hint = "Read the tile along rows of in (threadIdx.x -> column) and write it along rows of out "
                 "(threadIdx.x -> column of out, i.e. row of in), exchanging the roles of the two indices "
                 "through shared memory.") {
  constexpr SectorBounds kBound{WB_LIMIT("max_sectors_aligned"), WB_LIMIT("max_sectors_ragged")};
  WB_MEASURE_OR_SKIP(kTiled);
  wb::check::record_measured(sectors_text(m) + "; shared loads " + fixed(m.aligned.shared_loads()) + ", stores " +
                             fixed(m.aligned.shared_stores()) + " wavefronts/request");
  expect_coalesced(kTiled, "its loads", m, &Traffic::loads, kBound,
                   "Read the tile with threadIdx.x running along a row of in.");
  expect_coalesced(kTiled, "its stores", m, &Traffic::stores, kBound,
                   "Write the tile with threadIdx.x running along a row of out: out[(tile_col + j) * rows + "
                   "tile_row + threadIdx.x] = tile[threadIdx.x][j], so the transposition happens in shared memory.");
}

WB_CHECK(Performance, ConflictFreeSharedMemory, .weight = 4, .backends = "sim",
         .limits = {{"max_sectors_aligned", 4.0}, {"max_sectors_ragged", 5.0}, {"max_wavefronts", 1.0}},
         .passes = "version 3: the same (loads and stores each <= {max_sectors_aligned:.2f} / <= "
                   "{max_sectors_ragged:.2f} sectors/request), and shared-memory loads and stores <= "
                   "{max_wavefronts:.2f} wavefront/request",
         .hint = "Pad the tile: __shared__ float tile[32][33]. Element (i, j) then sits in bank (i + j) % "
                 "32, so a warp reading a column touches 32 different banks.") {
  constexpr SectorBounds kBound{WB_LIMIT("max_sectors_aligned"), WB_LIMIT("max_sectors_ragged")};
  constexpr double kMaxWavefronts = WB_LIMIT("max_wavefronts");
  WB_MEASURE_OR_SKIP(kConflictFree);
  const double shared_loads = std::max(m.aligned.shared_loads(), m.ragged.shared_loads());
  const double shared_stores = std::max(m.aligned.shared_stores(), m.ragged.shared_stores());
  wb::check::record_measured(sectors_text(m) + "; shared loads " + fixed(shared_loads) + ", stores " +
                             fixed(shared_stores) + " wavefronts/request");
  expect_coalesced(kConflictFree, "its loads", m, &Traffic::loads, kBound,
                   "Read the tile with threadIdx.x running along a row of in.");
  expect_coalesced(kConflictFree, "its stores", m, &Traffic::stores, kBound,
                   "Write the tile with threadIdx.x running along a row of out.");
  if (shared_loads > kMaxWavefronts || shared_stores > kMaxWavefronts) {
    ADD_FAILURE() << kConflictFree.name << ": shared-memory bank conflicts: loads from the tile take "
                  << fixed(shared_loads) << " wavefronts per request and stores into it " << fixed(shared_stores)
                  << " (at most " << fixed(kMaxWavefronts)
                  << " allowed). Shared memory has 32 banks of 4 bytes; a warp reading a column of float "
                     "tile[32][32] hits one bank 32 times (32 wavefronts). Pad the tile to float tile[32][33] (or "
                     "swizzle the column index).";
  }
}

// The launch configurations each version ran with, as cusim recorded them (cusim/checker.h).
// max_threads is the number of elements of the 1000 x 1024 matrix padded to whole 32 x 32
// tiles: a launch of more threads than that has blocks with no element to move, whatever the
// block shape (32 x 8 threads moving a tile, one thread per element, or a 1-D row of threads).
WB_CHECK(Performance, NoIdleBlocks, .weight = 1, .backends = "sim", .limits = {{"max_threads", 1048576}},
         .passes = "on 1000 x 1024 each version launches at most {max_threads:,.0f} threads, one per element "
                   "of the matrix padded to whole 32 x 32 tiles: no block without elements to move "
                   "(cusim's launch log)",
         .hint = "Size the grid from the matrix: round the number of tiles (or of blocks) up in each "
                 "dimension, (n + 31) / 32, and cap gridDim.y at 65535; no more.") {
  constexpr Shape s{1000, 1024};
  constexpr auto kMaxThreads = static_cast<std::uint64_t>(WB_LIMIT("max_threads"));
  static_assert(kMaxThreads == std::uint64_t((s.rows + 31) / 32 * 32) * std::uint64_t((s.cols + 31) / 32 * 32),
                "max_threads is the number of elements of s padded to whole 32 x 32 tiles");
  std::ostringstream text;
  std::vector<std::string> failures;
  for (const Version* v : kAllVersions) {
    cusim::checker::clear_launches();
    WB_ASSERT(check_version(*v, s));
    const std::vector<cusim::checker::LaunchRecord> launches = cusim::checker::launches();
    ASSERT_FALSE(launches.empty()) << describe_call(*v, s) << " returned correct results but launched no kernel.";
    const std::uint64_t threads = cusim::checker::threads_launched(launches);
    std::ostringstream grids;
    for (std::size_t i = 0; i < launches.size(); ++i) grids << (i ? ", " : "") << launches[i].kernel << " " << launches[i].shape();
    text << (v == &kNaive ? "" : ", ") << v->name << " " << threads << " threads";
    if (threads > kMaxThreads) {
      failures.push_back(describe_call(*v, s) + " launched " + std::to_string(threads) + " threads (" + grids.str() +
                         "); the matrix padded to whole 32 x 32 tiles has " + std::to_string(kMaxThreads) +
                         " elements, so at least " + std::to_string(threads - kMaxThreads) +
                         " threads have nothing to move. Size the grid from the matrix: (cols + 31) / 32 blocks "
                         "across and (rows + 31) / 32 down for one tile per block ((rows + 7) / 8 for blocks of "
                         "32 x 8 threads with one element each), no more.");
    }
  }
  wb::check::record_measured(text.str());
  for (const std::string& f : failures) ADD_FAILURE() << f;
}
#else
WB_CHECK(Performance, BandwidthVsDeviceCopy, .weight = 8, .backends = "cuda", .timeout_s = 180,
         .limits = {{"min_ratio", 0.80}},
         .passes = "version 3 on 8192 x 8192 reaches at least {min_ratio:.0%} of the bandwidth of a "
                   "device-to-device `cudaMemcpy` of the same bytes timed in the same run (the "
                   "solution aims at 90%); versions 1 and 2 are timed for the record",
         .hint = "Coalesced reads and writes through a padded shared tile; give each thread several "
                 "elements (blocks of 32 x 8 threads moving a 32 x 32 tile) so that more loads are in "
                 "flight; close other GPU programs.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  // Correct first, then fast: a wrong kernel's speed means nothing.
  WB_ASSERT(check_version(kConflictFree, {1000, 1500}));
  constexpr Shape s{8192, 8192};  // 256 MiB per matrix: far larger than any L2 cache
  try {
    std::vector<float> input = wb::random_floats(s.size(), 80);
    wb::DeviceBuffer<float> in{std::span<const float>(input)};
    wb::DeviceBuffer<float> out(s.size());
    wb::check::ChangingInput<float> changing(input, in.data());  // before every timed run
    const double bytes = 2.0 * 4.0 * static_cast<double>(s.size());  // read and write every element
    const wb::Bandwidth copy = wb::device_copy_bandwidth(4 * s.size());
    std::string text;
    double final_ratio = 0.0;
    for (const Version* v : {&kConflictFree, &kTiled, &kNaive}) {
      // Validated before timing and after it (wb_timed.h); versions 1 and 2 are timed for the record only.
      out.fill_bytes(kUnwrittenByte);
      const std::string call = describe_call(*v, s);
      wb::Bandwidth b;
      const testing::AssertionResult timed = wb::check::timed_and_verified(
          call, bytes, [&] { return v->run(s.rows, s.cols, in.data(), out.data()); }, [&] { changing.change(); },
          [&] { return wb::check::failure_text(output_matches(s, input, out.download(), "the output")); }, b);
      if (!timed) {
        if (v == &kConflictFree) FAIL() << timed.message();
        text += "; " + std::string(v->name) + " not timed (wrong result or error)";
        continue;
      }
      const double ratio = b.gb_per_s / copy.gb_per_s;
      if (v == &kConflictFree) {
        final_ratio = ratio;
        text += wb::check::versus(b.gb_per_s, copy.gb_per_s, "copy");
      } else {
        text += "; " + std::string(v->name) + " " + fixed(ratio) + " x";
      }
    }
    wb::check::record_measured(text);
    EXPECT_GE(final_ratio, kMinRatio) << "transpose_conflict_free reached " << text << "; it needs "
                                      << wb::check::as_written(kMinRatio) << " x the copy bandwidth. A transpose moves every byte once "
                                                      "in and once out, like a copy; with coalesced accesses on both "
                                                      "sides and no bank conflicts it runs close to copy speed.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing the transpose: " << e.what();
  }
}
#endif
