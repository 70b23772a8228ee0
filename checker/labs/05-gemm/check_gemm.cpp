// Checks for lab 05 (SGEMM, C = alpha * A * B + beta * C, row-major): every version against a
// reference computed in double (bit for bit on integer data, within Higham's bound on random data)
// and against cuBLAS; cusim's analysis tools and metrics (sim); sgemm's speed against cuBLAS (cuda).
// What each check runs and needs is its .passes text.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "gemm.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

#if defined(WB_HAVE_CUDA_BASELINES)
#include "cublas_sgemm.h"
#include "wb_baseline.h"
#endif

namespace {

using wb::check::fixed;
using wb::check::Input;

using SgemmFn = cudaError_t (*)(int, int, int, float, const float*, int, const float*, int, float, float*, int);

struct Version {
  const char* name;
  SgemmFn run;
};

const Version kNaive{"sgemm_naive", &sgemm_naive};
const Version kCoalesced{"sgemm_coalesced", &sgemm_coalesced};
const Version kSmemTiled{"sgemm_smem_tiled", &sgemm_smem_tiled};
const Version kBlocktile1D{"sgemm_1d_blocktile", &sgemm_1d_blocktile};
const Version kBlocktile2D{"sgemm_2d_blocktile", &sgemm_2d_blocktile};
const Version kVectorized{"sgemm_vectorized", &sgemm_vectorized};
const Version kFinal{"sgemm", &sgemm};
const Version* const kAllVersions[] = {&kNaive,       &kCoalesced,  &kSmemTiled, &kBlocktile1D,
                                       &kBlocktile2D, &kVectorized, &kFinal};

constexpr double kUnitRoundoff = 0x1.0p-24;

// One call: the shape, the scalars, the padding of each leading dimension, the data.
struct Case {
  int M, N, K;
  float alpha = 1.0f, beta = 0.0f;
  int pad_a = 0, pad_b = 0, pad_c = 0;  // lda = K + pad_a, ldb = N + pad_b, ldc = N + pad_c
  bool random = false;
  bool nonnegative = false;  // random data in [0, 1) instead of [-1, 1)
  std::uint64_t seed = 1;
  // A, B and C in allocations of exactly their size (no guard zones): cusim's memcheck then
  // reports a read past the end of a matrix even when the value read never reaches C.
  bool exact = false;
  // A, B and C start this many floats past a 16-byte boundary (the interface allows any float
  // address: labs 07, 08 and 12 pass pointers into larger arrays).
  int shift_a = 0, shift_b = 0, shift_c = 0;
  int lda() const { return K + pad_a; }
  int ldb() const { return N + pad_b; }
  int ldc() const { return N + pad_c; }
};

std::string number(double v) { return wb::check::significant(v, 9); }

std::string describe_call(const Version& v, const Case& c) {
  std::ostringstream out;
  out << v.name << "(M=" << c.M << ", N=" << c.N << ", K=" << c.K << ", alpha=" << number(c.alpha)
      << ", beta=" << number(c.beta) << ", lda=" << c.lda() << ", ldb=" << c.ldb() << ", ldc=" << c.ldc() << ") ["
      << (c.random ? (c.nonnegative ? "random data in [0, 1)" : "random data in [-1, 1)") : "exact integer data")
      << ", seed " << c.seed
      << (c.exact ? ", A, B and C allocated to their exact size" : "");
  if (c.shift_a || c.shift_b || c.shift_c) {
    out << ", A, B and C start " << 4 * c.shift_a << ", " << 4 * c.shift_b << " and " << 4 * c.shift_c
        << " bytes past a 16-byte boundary";
  }
  out << "]";
  return out.str();
}

// Element (r, col) of a row-major matrix with leading dimension ld.
std::size_t at(int r, int ld, int col) { return static_cast<std::size_t>(r) * ld + col; }

// Element i of the M x N result (row-major, no padding) in C, whose rows are ldc apart.
std::size_t in_c(const Case& c, std::size_t i) {
  return at(static_cast<int>(i / c.N), c.ldc(), static_cast<int>(i % c.N));
}

// True when @p a and @p b are the same bits (a NaN equals itself).
bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

// C elements are 0xFF bytes (a NaN) before a beta == 0 call: never written stays exactly that.
const float kUnwritten = std::bit_cast<float>(0xFFFFFFFFu);
// Padding between rows (columns past the row length): a NaN, so reading it shows in C.
const float kPadding = std::bit_cast<float>(0x7FC0DEADu);

// Host copies of A, B and C with their padding, row-major with the case's leading dimensions.
struct Data {
  std::vector<float> A, B, C;
};

// Sets the M x N elements of @p C (not its row padding) to @p value.
void fill_c(const Case& c, std::vector<float>& C, float value) {
  for (int r = 0; r < c.M; ++r) std::fill_n(C.begin() + static_cast<std::ptrdiff_t>(at(r, c.ldc(), 0)), c.N, value);
}

// Exact data: integer-valued A, B, C in small ranges, alpha and beta in {-1, 0.5, 1, 2, ...}: every
// partial sum is an integer (or half-integer) far below 2^24, exact in float, so every summation
// order gives the same float and the comparison is bit for bit. Random data: uniform in [-1, 1)
// (or [0, 1)). The row padding holds kPadding.
Data make_data(const Case& c) {
  Data d;
  wb::Random rng(c.seed * 7919 + 3);
  auto value = [&](int lo, int hi) {
    if (!c.random) return static_cast<float>(rng.next_int(lo, hi));
    const double u = rng.next_unit_double();
    return static_cast<float>(c.nonnegative ? u : u * 2.0 - 1.0);
  };
  auto fill = [&](std::vector<float>& m, int rows, int cols, int ld, int lo, int hi) {
    m.assign(static_cast<std::size_t>(rows) * ld, kPadding);
    for (int r = 0; r < rows; ++r) {
      for (int col = 0; col < cols; ++col) m[at(r, ld, col)] = value(lo, hi);
    }
  };
  fill(d.A, c.M, c.K, c.lda(), -4, 4);
  fill(d.B, c.K, c.N, c.ldb(), -4, 4);
  fill(d.C, c.M, c.N, c.ldc(), -8, 8);
  if (c.beta == 0.0f) fill_c(c, d.C, kUnwritten);  // C is output only: NaN, which a kernel reading it would propagate
  return d;
}

// The exact result in double, each element's scale |alpha| sum_k |a_ik b_kj| + |beta c_ij|, and the
// difference each element may show: none on exact data; on random data gamma(K + 2) times its
// scale, gamma(n) = n u / (1 - n u), u = 2^-24: the error bound of a dot product of K terms in any
// order (Higham, Accuracy and Stability of Numerical Algorithms, 3.1) plus the roundings of the
// scaling and the final addition.
struct Reference {
  std::vector<double> value, allowed, scale;
};

Reference reference(const Case& c, const Data& d) {
  Reference ref;
  const std::size_t n = static_cast<std::size_t>(c.M) * c.N;
  ref.value.resize(n);
  ref.allowed.assign(n, 0.0);
  ref.scale.assign(n, 0.0);
  const double gamma = (c.K + 2) * kUnitRoundoff / (1.0 - (c.K + 2) * kUnitRoundoff);
  std::vector<double> row(c.N), abs_row(c.N);
  for (int r = 0; r < c.M; ++r) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(abs_row.begin(), abs_row.end(), 0.0);
    for (int k = 0; k < c.K; ++k) {
      const double a = d.A[at(r, c.lda(), k)];
      const float* b = &d.B[at(k, c.ldb(), 0)];
      for (int col = 0; col < c.N; ++col) {
        row[col] += a * b[col];
        abs_row[col] += std::fabs(a * b[col]);
      }
    }
    for (int col = 0; col < c.N; ++col) {
      const std::size_t i = at(r, c.N, col);
      const double old = c.beta == 0.0f ? 0.0 : d.C[at(r, c.ldc(), col)];
      ref.value[i] = double(c.alpha) * row[col] + double(c.beta) * old;
      ref.scale[i] = std::fabs(double(c.alpha)) * abs_row[col] + std::fabs(double(c.beta) * old);
      if (c.random) ref.allowed[i] = gamma * ref.scale[i];
    }
  }
  return ref;
}

// What to try when a call fails to launch or stops with an error that the case's shape or
// leading dimensions explain: a grid past 65535 blocks in y (M or N = 2^20), a float4 access
// of a row whose leading dimension is not a multiple of 4.
testing::AssertionResult explain_launch_failure(const Case& c, testing::AssertionResult failure) {
  const std::string text = failure.message();
  // CUDA 13 returns cudaErrorInvalidValue for a grid over 65535 in y or z (older toolkits, and
  // this check until it was run on a GPU: cudaErrorInvalidConfiguration).
  const bool bad_launch = text.find("cudaErrorInvalidValue") != std::string::npos ||
                          text.find("cudaErrorInvalidConfiguration") != std::string::npos;
  if (bad_launch && (c.M > 65535 || c.N > 65535)) {
    const bool tall = c.M > 65535;
    const char* what = tall ? "rows" : "columns";
    failure << "\nThis shape has " << (tall ? c.M : c.N) << " " << what
            << ": gridDim.y and gridDim.z are at most 65535 (gridDim.x up to 2^31 - 1), and a grid that puts the "
            << what << " of C on gridDim.y with R " << what << " per block has " << (tall ? c.M : c.N)
            << " / R blocks there, more than 65535 for R <= 16 (blocks of 16 x 16 or 32 x 8 threads). The "
            << "interface allows M and N up to 2^20: give each block at least 32 " << what
            << " along gridDim.y, or put the long dimension on gridDim.x.";
  }
  // cusim's GCC plugin gives every float4 access its true width: a misaligned one ends the kernel
  // with cudaErrorMisalignedAddress, as on a GPU.
  if (text.find("cudaErrorMisalignedAddress") != std::string::npos) {
    std::string strides, starts;
    const auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
    for (auto [name, ld] : {std::pair{"lda", c.lda()}, std::pair{"ldb", c.ldb()}, std::pair{"ldc", c.ldc()}}) {
      if (ld % 4 != 0) add(strides, std::string(name) + " = " + std::to_string(ld));
    }
    for (auto [name, shift] : {std::pair{"A", c.shift_a}, std::pair{"B", c.shift_b}, std::pair{"C", c.shift_c}}) {
      if (shift != 0) add(starts, std::string(name) + " " + std::to_string(4 * shift) + " bytes past one");
    }
    if (!starts.empty()) {
      failure << "\nA float4 access needs a 16-byte aligned address, and here the matrices themselves start off a "
              << "16-byte boundary (" << starts << "): the interface allows a pointer to any float, and labs 07, 08 "
              << "and 12 pass pointers into larger arrays. Take the float4 path only when the address is aligned as "
              << "well as the leading dimension: reinterpret_cast<std::uintptr_t>(A) % 16 == 0 && lda % 4 == 0 (and "
              << "likewise for B and C).";
    } else if (!strides.empty()) {
      failure << "\nA float4 access needs a 16-byte aligned address, and row r of a matrix starts 4 * r * ld bytes "
              << "in: here " << strides << " (K = " << c.K << ", N = " << c.N
              << "), so rows after the first start off a 16-byte boundary. Take the float4 path only when the "
                 "leading dimension is a multiple of 4 (lda % 4 == 0, ldb % 4 == 0, ldc % 4 == 0), whatever K and N "
                 "are, and load the other rows one float at a time.";
    }
  }
  return failure;
}

// Runs @p v on device copies of @p d and returns C (with padding) in @p c_out. A and B are inputs
// (wb_buffers.h) that must come back unchanged, the memory around them too; C carries guard zones
// that must stay untouched.
testing::AssertionResult run_once(const Version& v, const Case& c, const Data& d, const std::string& call,
                                  std::vector<float>& c_out) {
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    // The guard zones are whole 16-byte units; a shift of s floats more puts the matrix s floats past
    // a 16-byte boundary (and the guard after it s floats longer). The memory around A and B holds
    // NaN, like their row padding: an element read from outside a matrix and used turns the result
    // into NaN (even when multiplied by a zero-padded 0).
    const std::size_t guard = c.exact ? 0 : wb::check::kGuardElements;
    const Input<float> A(d.A, "A", kPadding, guard + c.shift_a);
    const Input<float> B(d.B, "B", kPadding, guard + c.shift_b);
    wb::DeviceBuffer<float> C(std::span<const float>(d.C), guard + c.shift_c);
    const cudaError_t status =
        v.run(c.M, c.N, c.K, c.alpha, A.dev.data(), c.lda(), B.dev.data(), c.ldb(), c.beta, C.data(), c.ldc());
    if (auto r = wb::check::after_call(status, call, v.name, {}); !r) return explain_launch_failure(c, r);
    if (const wb::GuardDamage damage = C.check_guards(); !damage.intact()) {
      return testing::AssertionFailure()
             << call << " wrote " << damage.modified << " float(s) outside C's " << C.size() << " elements (C["
             << damage.first_index << "] to C[" << damage.last_index
             << "]): threads of partial tiles must not store rows >= M or columns >= N.";
    }
    for (const Input<float>* input : {&A, &B}) {
      if (auto r = input->unchanged(call, "it is passed as a const float*."); !r) return r;
    }
    c_out = C.download();
    return testing::AssertionSuccess();
  });
}

// Where the wrong elements lie: the rows and columns they span, whether they are all in the
// partial tiles at the bottom or right edge of C (for some tile size), or everywhere.
std::string describe_wrong_region(const Case& c, const std::vector<std::pair<int, int>>& wrong_cells,
                                  std::size_t wrong) {
  if (wrong == static_cast<std::size_t>(c.M) * c.N) {
    return "Every element of C is wrong. If your tiles step through K in steps that do not divide K = " +
           std::to_string(c.K) +
           ", the last step is partial: the tile elements past column K-1 of A and row K-1 of B must be 0.";
  }
  int r_lo = c.M, r_hi = -1, c_lo = c.N, c_hi = -1;
  for (auto [r, col] : wrong_cells) {
    r_lo = std::min(r_lo, r), r_hi = std::max(r_hi, r), c_lo = std::min(c_lo, col), c_hi = std::max(c_hi, col);
  }
  std::string text = "The wrong elements lie in rows " + std::to_string(r_lo) + ".." + std::to_string(r_hi) +
                     " and columns " + std::to_string(c_lo) + ".." + std::to_string(c_hi) + " of C.";
  for (int tile : {4, 8, 16, 32, 64, 128}) {
    const int full_rows = c.M / tile * tile, full_cols = c.N / tile * tile;
    if (full_rows == 0 || full_cols == 0 || (full_rows == c.M && full_cols == c.N)) continue;  // no full tile, or no edge
    bool edge_only = true;
    for (auto [r, col] : wrong_cells) edge_only = edge_only && (r >= full_rows || col >= full_cols);
    if (edge_only) {
      return text + " Every one lies in the partial tiles at the edge of C (rows >= " + std::to_string(full_rows) +
             " or columns >= " + std::to_string(full_cols) + " for tiles of " + std::to_string(tile) +
             "): check the bounds tests of the loads (0 outside A and B) and of the stores (rows < M, columns < N) "
             "in edge tiles, and that the grid rounds the number of tiles up.";
    }
  }
  return text;
}

// Compares C with the reference (its row padding must be untouched) and explains the first wrong
// elements; @p wrong_count receives how many are wrong.
testing::AssertionResult compare_c(const Case& c, const Data& d, const Reference& ref, const std::vector<float>& got,
                                   const std::string& call, std::size_t& wrong_count) {
  wrong_count = 0;
  std::size_t unwritten = 0, padding_writes = 0, nan_count = 0;
  std::vector<std::pair<int, int>> wrong_cells, first;
  int first_pad_row = -1, first_pad_col = -1;
  for (int r = 0; r < c.M; ++r) {
    for (int col = 0; col < c.ldc(); ++col) {
      const std::size_t k = at(r, c.ldc(), col);
      if (col >= c.N) {
        if (!same_bits(got[k], d.C[k]) && padding_writes++ == 0) first_pad_row = r, first_pad_col = col;
        continue;
      }
      const std::size_t i = at(r, c.N, col);
      if (wb::check::within(got[k], ref.value[i], ref.allowed[i])) continue;
      ++wrong_count;
      const bool untouched = same_bits(got[k], d.C[k]);
      unwritten += untouched;
      nan_count += std::isnan(got[k]) && !untouched;
      if (wrong_cells.size() < 100000) wrong_cells.emplace_back(r, col);
      if (first.size() < 5) first.emplace_back(r, col);
    }
  }
  if (padding_writes > 0) {
    return testing::AssertionFailure() << call << " wrote " << padding_writes
                                       << " element(s) of C's row padding, first C[" << first_pad_row << " * ldc + "
                                       << first_pad_col << "] (column " << first_pad_col << " >= N = " << c.N
                                       << "): only columns 0 .. N-1 of each row belong to C. Test the column of "
                                          "every store against N, not against ldc.";
  }
  if (wrong_count == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << wrong_count << " of " << static_cast<std::size_t>(c.M) * c.N
          << " elements of C are wrong";
  if (unwritten > 0) failure << " (" << unwritten << " never written)";
  failure << "; first wrong C(row, col):";
  for (auto [r, col] : first) {
    const std::size_t i = at(r, c.N, col), k = at(r, c.ldc(), col);
    failure << "\n  C(" << r << ", " << col << "): got "
            << (same_bits(got[k], d.C[k]) && c.beta == 0.0f ? std::string("nothing (never written)") : number(got[k]))
            << ", expected " << number(ref.value[i]);
    if (c.random) failure << " (allowed error " << number(ref.allowed[i]) << ")";
    else failure << " exactly";
  }
  failure << "\n" << describe_wrong_region(c, wrong_cells, wrong_count);
  if (nan_count > 0) {
    failure << "\nNaN in C: the checker fills the memory around A and B and their row padding (columns past K of "
               "A, past N of B) with NaN, so an element read from outside a matrix and used shows as NaN, even "
               "when multiplied by 0. Test every load against the matrix's rows and columns and load 0 outside; "
               "index row r as r * lda (ldb), not r * K (N).";
  }
  return failure;
}

// One case of one version: status, device errors, writes out of bounds, inputs untouched,
// C compared with the reference. With beta == 0 and NaN results, the call is repeated with C
// zero-filled to tell "C was read" from other mistakes.
testing::AssertionResult check_case(const Version& v, const Case& c) {
  const std::string call = describe_call(v, c);
  const Data d = make_data(c);
  std::vector<float> got;
  if (auto r = run_once(v, c, d, call, got); !r) return r;
  const Reference ref = reference(c, d);
  std::size_t wrong = 0, wrong_again = 0;
  testing::AssertionResult result = compare_c(c, d, ref, got, call, wrong);
  if (result || c.beta != 0.0f) return result;
  Data zeroed = d;
  fill_c(c, zeroed.C, 0.0f);
  std::vector<float> again;
  if (run_once(v, c, zeroed, call, again) && compare_c(c, zeroed, ref, again, call, wrong_again)) {
    return testing::AssertionFailure()
           << call << ": " << wrong << " element(s) of C are wrong (NaN or never written) when C holds NaN before "
           << "the call, and the same call is correct when C holds zeros: C was read although beta = 0. With beta == 0, C is output only (it may hold "
              "NaN, and 0 * NaN = NaN): store alpha * acc without reading C.";
  }
  return result;
}

// The cases every version runs: shapes (exact data, alpha = 1, beta = 0, C full of NaN),
// then alpha/beta combinations, leading dimensions with padding, and random data.
std::vector<Case> correctness_cases(const Version& v) {
  std::vector<Case> cases;
  std::uint64_t seed = 1;
  constexpr int kShapes[][3] = {{1, 1, 1},    {1, 1, 7},       {3, 5, 1},       {17, 33, 65},   {32, 32, 32},
                                {64, 64, 64}, {128, 128, 128}, {129, 127, 131}, {259, 133, 17}, {1000, 3, 7},
                                {3, 1000, 7}, {7, 3, 1000},    {65, 67, 1},     {0, 5, 3},      {5, 0, 3}};
  for (const auto& [M, N, K] : kShapes) cases.push_back({.M = M, .N = N, .K = K, .seed = seed++});
  // alpha and beta: exact data keeps alpha * acc + beta * c exact for these.
  cases.push_back({.M = 67, .N = 45, .K = 33, .alpha = 2.0f, .beta = -1.0f, .seed = seed++});
  cases.push_back({.M = 45, .N = 67, .K = 33, .alpha = -1.0f, .beta = 0.5f, .seed = seed++});
  cases.push_back({.M = 33, .N = 70, .K = 20, .alpha = 0.5f, .beta = 0.0f, .seed = seed++});
  cases.push_back({.M = 9, .N = 13, .K = 0, .alpha = 1.0f, .beta = 2.0f, .seed = seed++});  // C = 2 C
  cases.push_back({.M = 9, .N = 13, .K = 0, .alpha = 1.0f, .beta = 0.0f, .seed = seed++});  // C = 0
  // Leading dimensions larger than the rows: not multiples of 4, then multiples of 4.
  cases.push_back({.M = 70, .N = 45, .K = 37, .alpha = 1.0f, .beta = 1.0f, .pad_a = 3, .pad_b = 5, .pad_c = 1, .seed = seed++});
  cases.push_back({.M = 131, .N = 132, .K = 36, .alpha = 1.0f, .beta = 0.0f, .pad_a = 4, .pad_b = 4, .pad_c = 8, .seed = seed++});
  // Random data within the dot-product error bound.
  cases.push_back({.M = 129, .N = 127, .K = 131, .alpha = 1.0f, .beta = 0.0f, .random = true, .seed = seed++});
  cases.push_back({.M = 50, .N = 60, .K = 300, .alpha = 1.5f, .beta = -0.75f, .random = true, .seed = seed++});
  // alpha = 0: C = beta * C (a version that returns early when alpha == 0 leaves C unscaled).
  cases.push_back({.M = 20, .N = 30, .K = 10, .alpha = 0.0f, .beta = -1.0f, .seed = seed++});
  // Leading dimensions that are not multiples of 4 although K and N are: a float4 path chosen
  // from K or N instead of lda, ldb, ldc loads and stores rows off 16-byte boundaries. C read
  // (beta = 1), then output only.
  cases.push_back({.M = 37, .N = 44, .K = 36, .alpha = 1.0f, .beta = 1.0f, .pad_a = 3, .pad_b = 1, .pad_c = 2, .seed = seed++});
  cases.push_back({.M = 37, .N = 44, .K = 36, .alpha = 1.0f, .beta = 0.0f, .pad_a = 1, .pad_b = 3, .pad_c = 3, .seed = seed++});
  // Leading dimensions that are multiples of 4, but A, B and C start off a 16-byte boundary (as a
  // head's matrices inside a larger array do): a float4 path chosen from lda, ldb and ldc alone
  // loads and stores off 16-byte boundaries. C read (beta = 1), then output only.
  cases.push_back({.M = 37, .N = 44, .K = 36, .alpha = 1.0f, .beta = 1.0f, .seed = seed++, .shift_a = 1, .shift_b = 2,
                   .shift_c = 3});
  cases.push_back({.M = 70, .N = 68, .K = 40, .alpha = 1.0f, .beta = 0.0f, .pad_a = 4, .seed = seed++, .shift_a = 3,
                   .shift_b = 1, .shift_c = 2});
  // The largest M and N the interface allows, 2^20: blocks of fewer than 32 rows (columns) of C
  // along gridDim.y need more than 65535 blocks there. On sim, where one of them costs a few seconds
  // (a block of 32 x 32 threads per 32 elements of C), only versions 1 and 2, whose block shape is
  // the learner's choice, run them: each the shape whose long dimension it puts on gridDim.y.
  const Case tall{.M = 1 << 20, .N = 1, .K = 1, .seed = seed++};
  const Case wide{.M = 1, .N = 1 << 20, .K = 1, .seed = seed++};
#if defined(CUSIM)
  if (&v == &kNaive) cases.push_back(wide);         // threadIdx.x along M: N on gridDim.y
  if (&v == &kCoalesced) cases.push_back(tall);     // threadIdx.x along N: M on gridDim.y
#else
  cases.push_back(tall);
  cases.push_back(wide);
#endif
  return cases;
}

void check_version(const Version& v) {
  WB_ASSERT(wb::check::for_each_case(correctness_cases(v), [&](const Case& c) { return check_case(v, c); }));
}

}  // namespace

// ---- Correctness ---------------------------------------------------------------------

// What passes, for Naive, Coalesced, SmemTiled, Blocktile1D, Blocktile2D, Vectorized, Final.
constexpr char kVersionPasses[] = "29 cases per version and the 2^20 shapes below, exact: 1 x 1 x 1, 1 x 1 x 7, 3 x 5 "
                                  "x 1, 17 x 33 x 65, 32^3, 64^3, 128^3, 129 x 127 x 131, 259 x 133 x 17, 1000 x 3 x "
                                  "7, 3 x 1000 x 7, 7 x 3 x 1000, 65 x 67 x 1, M = 0, N = 0; alpha/beta (2, -1), (-1, "
                                  "0.5), (0.5, 0) with NaN in C, (0, -1), K = 0 with beta 2 and 0; leading dimensions "
                                  "padded by 3/5/1 and 4/4/8, and 37 x 44 x 36 with lda = 39, ldb = 45, ldc = 46 (beta "
                                  "1) and 37, 47, 47 (beta 0): K and N multiples of 4, the leading dimensions not; A, "
                                  "B and C starting 4 to 12 bytes past a 16-byte boundary, the leading dimensions "
                                  "multiples of 4 (37 x 44 x 36, beta 1; 70 x 68 x 40, beta 0); random data 129 x 127 "
                                  "x 131 and 50 x 60 x 300 (alpha 1.5, beta -0.75) within gamma(K + 2) times each "
                                  "element's scale; the largest M and N the interface allows, 2^20 x 1 x 1 and 1 x "
                                  "2^20 x 1 (blocks of 16 rows or columns on gridDim.y would need 65536 of them; on "
                                  "sim only versions 1 (1 x 2^20) and 2 (2^20 x 1) run them, one-thread-per-element "
                                  "versions whose block shape is yours, each with its long dimension on gridDim.y; a "
                                  "GPU runs both on every version)";

WB_CHECK(Correctness, Naive, .weight = 2,
         .passes = kVersionPasses,
         .hint = "One thread per element of C: r = blockIdx.x * blockDim.x + threadIdx.x, c from the y "
                 "dimension; if (r < M && c < N) sum A[r * lda + k] * B[k * ldb + c] over k, then C[r * "
                 "ldc + c] = alpha * sum (+ beta * C[r * ldc + c] only when beta != 0). Blocks of 32 x "
                 "32 threads: N goes up to 2^20, and gridDim.y holds at most 65535 blocks.") {
  check_version(kNaive);
}

WB_CHECK(Correctness, Coalesced, .weight = 1,
         .passes = kVersionPasses,
         .hint = "Version 1 with the roles of x and y exchanged: c = blockIdx.x * blockDim.x + "
                 "threadIdx.x, r from the y dimension. Blocks of 32 x 32 threads: M goes up to 2^20, and "
                 "gridDim.y holds at most 65535 blocks.") {
  check_version(kCoalesced);
}

WB_CHECK(Correctness, SmemTiled, .weight = 2,
         .passes = kVersionPasses,
         .hint = "Per K step, each thread loads one element of the A tile and one of the B tile, 0 when "
                 "outside the matrix (row >= M, column >= K for A; row >= K, column >= N for B); "
                 "__syncthreads(); 32 multiply-adds; __syncthreads().") {
  check_version(kSmemTiled);
}

WB_CHECK(Correctness, Blocktile1D, .weight = 2,
         .passes = kVersionPasses,
         .hint = "Each of the BM * BN / TM threads loads one element of each tile; thread t computes "
                 "rows (t / BN) * TM + i, column t % BN of the block tile; store only rows < M and "
                 "columns < N.") {
  check_version(kBlocktile1D);
}

WB_CHECK(Correctness, Blocktile2D, .weight = 2,
         .passes = kVersionPasses,
         .hint = "With BM * BN / (TM * TN) threads, each loads several tile elements in a loop (stride = "
                 "number of threads); zero-pad outside the matrices; test every store of the TM x TN "
                 "results against M and N.") {
  check_version(kBlocktile2D);
}

WB_CHECK(Correctness, Vectorized, .weight = 2,
         .passes = kVersionPasses,
         .hint = "A float4 load needs a 16-byte aligned address: only when the leading dimension (lda, "
                 "ldb, ldc, not K or N) is a multiple of 4 and all four elements are inside the matrix; "
                 "otherwise load the elements one by one (0 outside).") {
  check_version(kVectorized);
}

WB_CHECK(Correctness, Final, .weight = 2,
         .passes = kVersionPasses,
         .hint = "Start from your version 6; every edge case of the earlier versions applies.") {
  check_version(kFinal);
}

WB_CHECK(Correctness, FinalLarge, .weight = 1,
         .passes = "`sgemm` exact on 515 x 389 x 333 and 256^3 (beta = 1), random 300 x 301 x 517 "
                   "within gamma(K + 2) times each element's scale",
         .hint = "Several blocks in both directions and many K steps: check the block's row and column "
                 "offsets (blockIdx.y * BM, blockIdx.x * BN) and the K loop.") {
  const Case cases[] = {{.M = 515, .N = 389, .K = 333, .seed = 900},
                        {.M = 256, .N = 256, .K = 256, .alpha = 1.0f, .beta = 1.0f, .seed = 901},
                        {.M = 300, .N = 301, .K = 517, .random = true, .seed = 902}};
  WB_ASSERT(wb::check::for_each_case(cases, [](const Case& c) { return check_case(kFinal, c); }));
}

// ---- Correctness: cuBLAS as an oracle ----------------------------------------------------
//
// The checks above allow Higham's worst-case bound, gamma(K+2) (|alpha| sum |a b| + |beta c|), which
// grows like K u; a float dot product that rounds to nearest errs like sqrt(K) u, so a kernel whose
// error grows like K u (every multiply-add rounded toward zero, partial sums kept in a narrower
// type) stays inside that bound. Here a version may err at most max_error_factor times as much as
// a same-precision GEMM on the same call, as flash-attention's tests judge a kernel: e = the
// largest error over C, relative to each element's scale, of cuBLAS and of a plain loop (one float
// accumulator per element, k in order, rounded to nearest with and without fused multiply-adds; a
// BLAS that blocks K errs less than that loop on long sums of one sign), at least u = 2^-24.
//
// Where cuBLAS runs. On the cuda backend: the toolkit's cuBLAS on the GPU (cublas_sgemm.cu). On
// sim the checks are the judge, a process with none of the lab's code; device memory, cusim and
// its cuBLAS live in the worker, which runs the learner's code and could define cublasSgemm itself
// (docs/concepts/checking.md, "The trust boundary"). So the judge computes the oracle on its own
// host copies of A, B and C, with the CPU BLAS that cusim's cuBLAS runs on (cusim_cpu_blas) called
// exactly as cusim's cublasSgemm calls it for cublas_sgemm.cu's call (column-major, the operands
// swapped): the float result cuBLAS gives on sim, and nothing the worker returns reaches it.
namespace {

#if defined(CUSIM) && defined(CUSIM_HAVE_CPU_BLAS)
extern "C" void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* A,
                            int lda, const float* B, int ldb, float beta, float* C, int ldc);
constexpr bool kHaveOracle = true;
#elif !defined(CUSIM) && defined(WB_HAVE_CUDA_BASELINES)
constexpr bool kHaveOracle = true;
#else
constexpr bool kHaveOracle = false;
#endif

// cuBLAS's C (with the case's row padding) for the case's data.
std::vector<float> cublas_result(const Case& c, const Data& d) {
  std::vector<float> C = d.C;
#if defined(CUSIM) && defined(CUSIM_HAVE_CPU_BLAS)
  // Row-major C = A B is column-major C^T = B^T A^T: cblas_sgemm(CblasColMajor, NoTrans, NoTrans,
  // N, M, K, alpha, B, ldb, A, lda, beta, C, ldc), as cusim's cublasSgemm(handle, N, N, N, M, K, ...).
  // cusim's cuBLAS writes zeros over C first when beta == 0 (C is output only, and may hold NaN).
  constexpr int kColMajor = 102, kNoTrans = 111;
  if (c.beta == 0.0f) fill_c(c, C, 0.0f);
  cblas_sgemm(kColMajor, kNoTrans, kNoTrans, c.N, c.M, c.K, c.alpha, d.B.data(), c.ldb(), d.A.data(), c.lda(), c.beta,
              C.data(), c.ldc());
#elif !defined(CUSIM) && defined(WB_HAVE_CUDA_BASELINES)
  // Where the checks are split, in the checker's own CUDA process, on copies of the judge's data
  // (wb_baseline.h): nothing the lab's code does reaches the oracle.
  wb::check::InCheckersProcess checkers;
  wb::DeviceBuffer<float> A{std::span<const float>(d.A)}, B{std::span<const float>(d.B)};
  wb::DeviceBuffer<float> C_dev{std::span<const float>(C)};
  CublasSgemm cublas;
  cublas.run(c.M, c.N, c.K, c.alpha, A.data(), c.lda(), B.data(), c.ldb(), c.beta, C_dev.data(), c.ldc());
  WB_CUDA_CHECK(cudaDeviceSynchronize());
  C = C_dev.download();
#endif
  return C;
}

// @p v as "%.2e".
std::string scientific(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2e", v);
  return buffer;
}

// The largest error relative to each element's scale of a plain float loop over k, rounded to
// nearest: fused multiply-adds, and multiplies and adds rounded apart (a GPU's loop and a CPU's).
double plain_loop_error(const Case& c, const Data& d, const Reference& ref) {
  double worst = 0.0;
  for (int r = 0; r < c.M; ++r) {
    for (int col = 0; col < c.N; ++col) {
      float fused = 0.0f, apart = 0.0f;
      for (int k = 0; k < c.K; ++k) {
        const float a = d.A[at(r, c.lda(), k)], b = d.B[at(k, c.ldb(), col)];
        fused = std::fma(a, b, fused);
        volatile float product = a * b;  // rounded on its own, never contracted into the add
        apart += product;
      }
      const std::size_t i = at(r, c.N, col);
      if (ref.scale[i] == 0.0) continue;
      const float old = c.beta == 0.0f ? 0.0f : d.C[at(r, c.ldc(), col)];
      for (float acc : {fused, apart}) {
        volatile float scaled = c.alpha * acc;
        const float value = scaled + c.beta * old;
        worst = std::max(worst, std::fabs(double(value) - ref.value[i]) / ref.scale[i]);
      }
    }
  }
  return worst;
}

// One version on one case against cuBLAS: every element of C within (@p max_error_factor e +
// e_cuBLAS) times its scale of cuBLAS's (e as above, e_cuBLAS cuBLAS's own largest relative error).
// @p ratio receives the version's largest error relative to e (0 on exact data).
testing::AssertionResult matches_cublas(const Version& v, const Case& c, double max_error_factor, double& ratio) {
  const std::string call = describe_call(v, c);
  const Data d = make_data(c);
  std::vector<float> got;
  if (auto r = run_once(v, c, d, call, got); !r) return r;
  std::vector<float> oracle;
  try {
    oracle = cublas_result(c, d);
  } catch (const std::exception& e) {
    return testing::AssertionFailure() << "the checker's cuBLAS call failed for " << call << ": " << e.what();
  }
  const Reference ref = reference(c, d);
  const std::size_t n = static_cast<std::size_t>(c.M) * c.N;
  // cuBLAS's and the version's largest errors, relative to each element's scale.
  double e_cublas = 0.0, e_got = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (ref.scale[i] == 0.0) continue;
    const std::size_t k = in_c(c, i);
    e_cublas = std::max(e_cublas, std::fabs(double(oracle[k]) - ref.value[i]) / ref.scale[i]);
    if (!std::isnan(got[k])) e_got = std::max(e_got, std::fabs(double(got[k]) - ref.value[i]) / ref.scale[i]);
  }
  if (!c.random && e_cublas != 0.0) {
    return testing::AssertionFailure() << "the checker's cuBLAS result for " << call
                                       << " is not exact on integer data (relative error " << scientific(e_cublas)
                                       << "): the oracle itself is wrong; please report this.";
  }
  const double e = c.random ? std::max({e_cublas, plain_loop_error(c, d, ref), kUnitRoundoff}) : 0.0;
  ratio = c.random ? e_got / e : 0.0;
  const auto tolerance = [&](std::size_t i) { return (max_error_factor * e + e_cublas) * ref.scale[i]; };
  const auto difference = [&](std::size_t i) {
    return std::fabs(double(got[in_c(c, i)]) - double(oracle[in_c(c, i)]));
  };
  const wb::check::Mismatches wrong = wb::check::find_mismatches(
      n, [&](std::size_t i) { return std::isnan(got[in_c(c, i)]) || !(difference(i) <= tolerance(i)); });
  if (wrong.none()) return testing::AssertionSuccess();
  const std::size_t i = wrong.first, k = in_c(c, i);
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << wrong.count << " of " << n
          << " elements of C differ from cuBLAS's SGEMM on the same inputs; first C(" << i / c.N << ", " << i % c.N
          << "): got " << number(got[k]) << ", cuBLAS " << number(oracle[k]);
  if (!c.random) {
    failure << ", tolerance 0 (integer data: every partial sum is exact, so any summation order gives cuBLAS's "
               "float bit for bit).";
    return failure;
  }
  failure << " (difference " << scientific(difference(i)) << ", tolerance "
          << scientific(tolerance(i)) << " = (" << wb::check::as_written(max_error_factor) << " x " << scientific(e)
          << " + " << scientific(e_cublas) << ") x the element's scale |alpha| sum|a_ik b_kj| + |beta c_ij| = "
          << number(ref.scale[i]) << ": " << wb::check::as_written(max_error_factor)
          << " times the largest relative error of a float GEMM on this call, cuBLAS's or a plain loop's, plus "
             "cuBLAS's own).\nAgainst the exact result (computed in double) your largest relative error is "
          << scientific(e_got) << ", " << fixed(ratio) << " times a float GEMM's (at most "
          << wb::check::as_written(max_error_factor) << " allowed), although "
          << "it is within the worst-case bound of the other correctness checks. An error that grows with K in one direction comes from rounding every "
             "multiply-add the same way (__fmaf_rz, __fadd_rz, __fmul_rz: use a * b + c or fmaf), or from partial "
             "sums or tiles kept in a narrower type (__half, __nv_bfloat16, TF32); keep one float accumulator per "
             "element of C, rounded to nearest.";
  return failure;
}

// Cases: integer data (bit for bit, with alpha, beta and padded leading dimensions), random data of
// both signs, and nonnegative random data with a long K (partial sums of one sign, where an error
// that rounds one way adds up).
const Case kOracleCases[] = {
    {.M = 67, .N = 45, .K = 33, .alpha = 2.0f, .beta = -1.0f, .pad_a = 3, .pad_b = 5, .pad_c = 1, .seed = 1100},
    {.M = 129, .N = 127, .K = 131, .random = true, .seed = 1101},
    {.M = 17, .N = 33, .K = 65, .alpha = 1.5f, .beta = 0.5f, .pad_a = 1, .pad_b = 2, .pad_c = 3, .random = true,
     .nonnegative = true, .seed = 1102},
    {.M = 33, .N = 70, .K = 1000, .random = true, .nonnegative = true, .seed = 1103}};

}  // namespace

WB_CHECK(Correctness, MatchesCublas, .weight = 2, .limits = {{"max_error_factor", 2.0}},
         .passes = "every version against cuBLAS SGEMM on the same inputs (on sim, the CPU BLAS "
                   "cusim's cuBLAS runs on, computed by the checker itself): bit for bit on integer "
                   "data 67 x 45 x 33 (alpha 2, beta -1, padded leading dimensions); on random data "
                   "129 x 127 x 131, 17 x 33 x 65 (alpha 1.5, beta 0.5, padded) and 33 x 70 x 1000 "
                   "(nonnegative, a long sum of one sign), your largest error against the exact "
                   "result at most {max_error_factor} times that of a float GEMM on the same call "
                   "(cuBLAS's, or a plain loop's with one float accumulator per element): each "
                   "element within ({max_error_factor} e + e_cuBLAS) times its scale (the sum over k "
                   "of the absolute values of alpha a_ik b_kj, plus that of beta c_ij) of cuBLAS's, e "
                   "being that float GEMM's largest relative error",
         .hint = "Your result errs more than cuBLAS or a plain float loop on the same inputs, although "
                 "within the worst-case bound of the other checks. Round every multiply-add to nearest "
                 "(a * b + c, fmaf; not __fmaf_rz or __fadd_rz) and keep one float accumulator per "
                 "element of C (no __half, __nv_bfloat16 or TF32 tiles or partial sums).") {
  if (!kHaveOracle) {
#if defined(CUSIM)
    WB_NOT_MEASURED("the check binary was built without a CPU BLAS (Debian/Ubuntu: libopenblas-dev)");
#else
    GTEST_SKIP() << "this check binary was built without the cuBLAS baseline";
#endif
  }
  constexpr double kMaxErrorFactor = WB_LIMIT("max_error_factor");
  // Measured: the largest error ratio over every version first (the table shows the start), then each.
  std::string per_version;
  double worst_all = 0.0;
  const char* worst_name = "";
  for (const Version* v : kAllVersions) {
    double worst = 0.0;
    for (const Case& c : kOracleCases) {
      double ratio = 0.0;
      auto result = matches_cublas(*v, c, kMaxErrorFactor, ratio);
      worst = std::max(worst, ratio);
      if (!result) wb::check::record_measured(std::string(v->name) + " differs from cuBLAS");
      WB_ASSERT(result);
    }
    if (worst >= worst_all) worst_all = worst, worst_name = v->name;
    per_version += (per_version.empty() ? "" : "; ") + std::string(v->name) + " " + fixed(worst);
    wb::check::record_measured("error <= " + fixed(worst_all) + " x a float GEMM's (" + worst_name +
                               "); " + per_version);
  }
}

// ---- Host code (sim): fault injection (wb_host_checks.h) --------------------------------

#if defined(CUSIM)
namespace {

struct GemmHostBuffers {
  int M, N, K;
  wb::DeviceBuffer<float> a, b, c;
  GemmHostBuffers(int m, int n, int k, std::uint64_t seed)
      : M(m), N(n), K(k), a{std::span<const float>(wb::random_floats(std::size_t(m) * k, seed, -1.0f, 1.0f))},
        b{std::span<const float>(wb::random_floats(std::size_t(k) * n, seed + 1, -1.0f, 1.0f))},
        c{std::span<const float>(wb::random_floats(std::size_t(m) * n, seed + 2, -1.0f, 1.0f))} {}
};

}  // namespace

WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every version at 70 x 50 x 33 and 128 x 128 x 64: each kernel launch it makes is "
                   "made to fail in turn (cusim's fault injection); the function must return that "
                   "error at once (`cudaGetLastError()` after each launch), with no launch after it",
         .hint = "Test cudaGetLastError() right after the launch and return its error: return "
                 "cudaGetLastError(); (or if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) "
                 "return e; before any later call).") {
  GemmHostBuffers odd(70, 50, 33, 1300), even(128, 128, 64, 1310);
  std::vector<wb::check::host::ErrorPathCase> cases;
  for (GemmHostBuffers* g : {&odd, &even}) {
    const std::string shape = "(M=" + std::to_string(g->M) + ", N=" + std::to_string(g->N) +
                              ", K=" + std::to_string(g->K) + ", alpha=1, beta=0.5)";
    for (const Version* v : kAllVersions) {
      cases.push_back({v->name + shape, v->name, [g, fn = v->run] {
                         return fn(g->M, g->N, g->K, 1.0f, g->a.data(), g->K, g->b.data(), g->N, 0.5f, g->c.data(),
                                   g->N);
                       }});
    }
  }
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}
#endif

// ---- Analysis (sim) --------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Occurrences of memcheck reports so far (none without cusim's analysis API).
std::uint64_t memcheck_occurrences() {
  std::uint64_t n = 0;
#if WB_HAVE_CUSIM_ANALYSIS
  for (const auto& r : cusim::analysis::reports()) n += r.tool == "memcheck" ? r.count : 0;
#endif
  return n;
}

// Runs every version on a few edge cases and fails on any report of @p tools.
// The last two cases allocate A, B and C to their exact size, unpadded: the guard zones of the
// other cases are part of their allocations, so a tile load one row past A's last row (row M) or
// one column past B's last column (column N, which is past the end of B in its last row) reads
// memory memcheck accepts, and its value never reaches C (it only feeds results of row M or
// column N, which are not stored): only an exact allocation shows it.
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  const Case cases[] = {{.M = 1, .N = 1, .K = 1, .seed = 50},
                        {.M = 17, .N = 33, .K = 65, .alpha = 2.0f, .beta = -1.0f, .seed = 51},
                        {.M = 130, .N = 131, .K = 19, .seed = 52},
                        {.M = 33, .N = 45, .K = 70, .alpha = 1.0f, .beta = 1.0f, .pad_a = 3, .pad_b = 1, .pad_c = 2,
                         .seed = 53},
                        {.M = 130, .N = 131, .K = 19, .seed = 54, .exact = true},
                        {.M = 17, .N = 33, .K = 65, .alpha = 2.0f, .beta = -1.0f, .seed = 55, .exact = true}};
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep) {
    std::string first_outside;          // the first exact-size call with a new memcheck report
    std::uint64_t guarded_reports = 0;  // memcheck reports of the calls with guard zones
    for (const Version* v : kAllVersions) {
      for (const Case& c : cases) {
        const std::uint64_t before = memcheck_occurrences();
        keep(check_case(*v, c));
        const std::uint64_t added = memcheck_occurrences() - before;
        if (!c.exact) guarded_reports += added;
        if (c.exact && added > 0 && first_outside.empty()) first_outside = describe_call(*v, c);
      }
    }
    // Only the exact allocations saw an access outside the matrices: one just past their end.
    if (!first_outside.empty() && guarded_reports == 0 &&
        std::find(tools.begin(), tools.end(), "memcheck") != tools.end()) {
      ADD_FAILURE() << first_outside
                    << " accessed memory just past the end of A, B or C (memcheck's report follows), which the same "
                       "shapes with guard zones around the matrices did not show. A tile load of row M of A or of "
                       "column N of B reads past the matrix: the value only feeds results that are never stored, so "
                       "C is right, but the read lands past the end of the allocation (A's row M; B's column N in "
                       "its last row) and can fault on a GPU. Test every load: row < M and column < K for A, row < "
                       "K and column < N for B (<, not <=).";
    }
  });
}

}  // namespace

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = "no memcheck/initcheck report, every version, 6 edge cases (1 x 1 x 1, 17 x 33 x "
                   "65, 130 x 131 x 19, padded 33 x 45 x 70, and 130 x 131 x 19 and 17 x 33 x 65 "
                   "again with A, B and C allocated to their exact size: a load of row M of A or "
                   "column N of B, whose value never reaches C, reads past the end of the matrix)",
         .hint = "Test every global load against the matrix it reads (rows and columns), and every store "
                 "against M and N; shared-memory indices must stay inside the tiles.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = "no racecheck/synccheck report, same runs",
         .hint = "Two barriers per K step: __syncthreads() after the tiles are stored in shared memory "
                 "(before anyone reads them) and after the inner product loop (before the next step "
                 "overwrites them).") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}
#endif

// ---- Performance -----------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Dense, sector-aligned rows (512 bytes), one 128 x 128 tile of the largest versions.
constexpr Case kMetricCase{.M = 128, .N = 128, .K = 128, .seed = 77};

using wb::check::Traffic;

double fmas(const Case& c) { return double(c.M) * c.N * c.K; }
double bytes_per_flop(const Traffic& t, const Case& c) { return Traffic::ratio(double(t.bytes_read), 2.0 * fmas(c)); }
// Warp-wide shared-memory loads per warp-wide multiply-add (32 multiply-adds).
double shared_per_fma(const Traffic& t, const Case& c) {
  return Traffic::ratio(double(t.shared_load_requests), fmas(c) / 32.0);
}

// Runs @p v on kMetricCase (checking its result) and sums the metrics of every kernel launched;
// without cusim's analysis API it only checks the result (WB_MEASURE_OR_SKIP then skips the check).
#if WB_HAVE_CUSIM_ANALYSIS
testing::AssertionResult measure(const Version& v, Traffic& t) {
  return wb::check::measure([&] { return check_case(v, kMetricCase); }, t, v.name);
}
#else
testing::AssertionResult measure(const Version& v, Traffic&) { return check_case(v, kMetricCase); }
#endif

}  // namespace

// Measures @p version into `var`, or marks the running check NOT MEASURED and returns.
#define WB_MEASURE_OR_SKIP(var, version) \
  Traffic var;                           \
  WB_ASSERT(measure(version, var));      \
  WB_REQUIRE_METRICS()

WB_CHECK(Performance, CoalescedAccess, .weight = 2, .backends = "sim", .limits = {{"max_sectors", 4.0}},
         .passes = "version 2: global loads and stores <= {max_sectors:.2f} sectors/request (version 1's "
                   "shown beside)",
         .hint = "Let threadIdx.x run along the columns of C (c = blockIdx.x * blockDim.x + threadIdx.x): a "
                 "warp then reads one element of A (a broadcast), 32 consecutive elements of a row of B, "
                 "and writes 32 consecutive elements of C.") {
  constexpr double kMaxSectors = WB_LIMIT("max_sectors");
  WB_MEASURE_OR_SKIP(coalesced, kCoalesced);
  Traffic naive;
  const bool naive_ok = measure(kNaive, naive);
  wb::check::record_measured("coalesced: loads " + fixed(coalesced.loads()) + ", stores " +
                             fixed(coalesced.stores()) + " sectors/request (naive: " +
                             (naive_ok ? fixed(naive.loads()) + ", " + fixed(naive.stores()) : std::string("n/a")) +
                             ")");
  if (coalesced.loads() > kMaxSectors || coalesced.stores() > kMaxSectors) {
    ADD_FAILURE() << "sgemm_coalesced(M=N=K=128): its loads touch " << fixed(coalesced.loads())
                  << " and its stores " << fixed(coalesced.stores())
                  << " global memory sectors per request (at most " << fixed(kMaxSectors)
                  << " allowed). A warp's 32 consecutive floats "
                     "are 4 sectors of 32 bytes; 32 sectors means every lane touched its own sector: threadIdx.x "
                     "runs down a column (along M) instead of along a row. Let threadIdx.x pick the column of C.";
  }
}

// An untiled version reads 8 bytes per multiply-add (4 bytes/FLOP); a T x T tile divides that by T.
WB_CHECK(Performance, TiledGlobalTraffic, .weight = 3, .backends = "sim", .limits = {{"max_bytes_per_flop", 0.25}},
         .passes = "versions 3 to 6 and `sgemm`: global bytes read <= {max_bytes_per_flop} per FLOP",
         .hint = "Load each tile of A and B from global memory once per block into shared memory, and let "
                 "every thread read its operands from there: a T x T tile turns 8 bytes per multiply-add "
                 "into 8 / T.") {
  constexpr double kMaxTiledBytesPerFlop = WB_LIMIT("max_bytes_per_flop");
  WB_MEASURE_OR_SKIP(coalesced, kCoalesced);
  std::string text = "coalesced " + fixed(bytes_per_flop(coalesced, kMetricCase), 3);
  for (const Version* v : {&kSmemTiled, &kBlocktile1D, &kBlocktile2D, &kVectorized, &kFinal}) {
    Traffic t;
    WB_ASSERT(measure(*v, t));
    const double bpf = bytes_per_flop(t, kMetricCase);
    text += std::string("; ") + v->name + " " + fixed(bpf, 3);
    wb::check::record_measured(text + " bytes/FLOP");
    if (bpf > kMaxTiledBytesPerFlop) {
      ADD_FAILURE() << v->name << "(M=N=K=128) read " << t.bytes_read << " bytes of global memory for "
                    << 2.0 * fmas(kMetricCase) << " FLOPs: " << fixed(bpf, 3)
                    << " bytes/FLOP (at most " << wb::check::as_written(kMaxTiledBytesPerFlop)
                    << " allowed; without tiling every multiply-add reads 8 bytes: "
                    << fixed(bytes_per_flop(coalesced, kMetricCase), 3)
                    << " bytes/FLOP for sgemm_coalesced). Is every operand read from the shared-memory tiles, and "
                       "is each tile loaded from global memory once per K step?";
    }
  }
}

WB_CHECK(Performance, RegisterBlocking1D, .weight = 2, .backends = "sim", .limits = {{"max_shared_per_fma", 1.25}},
         .passes = "version 4: <= {max_shared_per_fma} shared-memory loads per multiply-add",
         .hint = "Each thread computes TM >= 4 results of one column: per k, load the B element once into a "
                 "register and use it for all TM results (TM + 1 shared loads for TM multiply-adds).") {
  constexpr double kMax1DSharedPerFma = WB_LIMIT("max_shared_per_fma");
  WB_MEASURE_OR_SKIP(blocktile, kBlocktile1D);
  Traffic tiled;
  WB_ASSERT(measure(kSmemTiled, tiled));
  const double per_fma = shared_per_fma(blocktile, kMetricCase);
  wb::check::record_measured("1d_blocktile " + fixed(per_fma, 3) + " shared loads per multiply-add (smem_tiled " +
                             fixed(shared_per_fma(tiled, kMetricCase), 3) + ")");
  if (per_fma > kMax1DSharedPerFma) {
    ADD_FAILURE() << "sgemm_1d_blocktile(M=N=K=128): " << fixed(per_fma, 3)
                  << " shared-memory loads per multiply-add (at most " << wb::check::as_written(kMax1DSharedPerFma)
                  << " allowed; sgemm_smem_tiled needs 2: one of A and one of B). Give each thread TM >= 4 results "
                     "in a column, and load the B element of each k once, into a register, before the loop over "
                     "the TM results.";
  }
}

WB_CHECK(Performance, RegisterBlocking2D, .weight = 3, .backends = "sim", .limits = {{"max_shared_per_fma", 0.50}},
         .passes = "versions 5, 6 and `sgemm`: <= {max_shared_per_fma:.2f} shared-memory loads per "
                   "multiply-add",
         .hint = "Each thread computes a TM x TN block (TM, TN >= 4): per k, load TM values of A and TN of "
                 "B into register arrays, then do the TM x TN multiply-adds from registers.") {
  constexpr double kMax2DSharedPerFma = WB_LIMIT("max_shared_per_fma");
  WB_MEASURE_OR_SKIP(blocktile, kBlocktile2D);
  std::string text;
  for (const Version* v : {&kBlocktile2D, &kVectorized, &kFinal}) {
    Traffic t = blocktile;
    if (v != &kBlocktile2D) {
      t = Traffic{};
      WB_ASSERT(measure(*v, t));
    }
    const double per_fma = shared_per_fma(t, kMetricCase);
    text += (text.empty() ? "" : "; ") + std::string(v->name) + " " + fixed(per_fma, 3);
    wb::check::record_measured(text + " shared loads per multiply-add");
    if (per_fma > kMax2DSharedPerFma) {
      ADD_FAILURE() << v->name << "(M=N=K=128): " << fixed(per_fma, 3)
                    << " shared-memory loads per multiply-add (at most " << fixed(kMax2DSharedPerFma)
                    << " allowed; TM + TN loads for TM x TN multiply-adds is 0.25 at 8 x 8). Are the TM values of "
                       "A and the TN values of B loaded into registers once per k, outside the loops over the TM x "
                       "TN results?";
    }
  }
}

// On kMetricCase the reference's sgemm_vectorized and sgemm measure 16.00 global sectors per load
// request with 32.0 of each sector's 32 bytes used (a warp's float4 loads of 512 contiguous bytes).
// Scalar loads of a row measure 4.00 (sgemm_2d_blocktile: 4.00 recorded beside); four scalar loads
// per thread of four consecutive floats (known-wrong scalar_load4) 16.00 sectors but 8.0 bytes used
// per sector on its B loads (12.8 over all loads). The limits: min_sectors and max_sectors 25%
// around the reference's 16 (far from the scalar 4), min_bytes_per_sector the reference's 32 less
// 12.5% (over twice the scalar_load4 version's 12.8).
WB_CHECK(Performance, VectorizedLoads, .weight = 2, .backends = "sim",
         .limits = {{"min_sectors", 12.0}, {"max_sectors", 20.0}, {"min_bytes_per_sector", 28.0}},
         .passes = "versions 6 and `sgemm`: global loads {min_sectors} to {max_sectors} sectors per "
                   "request (`float4`: 16) with >= {min_bytes_per_sector} of 32 bytes used per sector",
         .hint = "Load the tiles with one float4 per thread and step (*reinterpret_cast<const float4*>(&A[r "
                 "* lda + k]) where lda % 4 == 0 and the row start is 16-byte aligned), consecutive threads "
                 "reading consecutive float4s; read element by element only where the row is not aligned or "
                 "ends inside the float4.") {
  constexpr double kMinVectorSectors = WB_LIMIT("min_sectors");
  constexpr double kMaxVectorSectors = WB_LIMIT("max_sectors");
  constexpr double kMinVectorBytesPerSector = WB_LIMIT("min_bytes_per_sector");
  WB_MEASURE_OR_SKIP(blocktile, kBlocktile2D);
  std::string text = std::string(kBlocktile2D.name) + " " + fixed(blocktile.loads()) + " sectors/request";
  for (const Version* v : {&kVectorized, &kFinal}) {
    Traffic t;
    WB_ASSERT(measure(*v, t));
    const double used = 32.0 * t.load_efficiency();
    text = std::string(v->name) + " " + fixed(t.loads()) + " sectors/request, " + fixed(used) +
           " bytes used per sector; " + text;
    wb::check::record_measured(text);
    if (t.loads() < kMinVectorSectors || t.loads() > kMaxVectorSectors) {
      ADD_FAILURE() << v->name << "(M=N=K=128): its global loads touch " << fixed(t.loads())
                    << " sectors per request (" << fixed(kMinVectorSectors) << " to " << fixed(kMaxVectorSectors)
                    << " expected): a warp's float4 loads of 32 consecutive float4s are 16 sectors; scalar loads "
                       "of 32 floats are 4 ("
                    << kBlocktile2D.name << ": " << fixed(blocktile.loads())
                    << "). Load the tiles as float4, consecutive threads reading consecutive float4s.";
    } else if (used < kMinVectorBytesPerSector) {
      ADD_FAILURE() << v->name << "(M=N=K=128): its global loads use " << fixed(used)
                    << " of the 32 bytes of each sector they touch (at least "
                    << wb::check::as_written(kMinVectorBytesPerSector)
                    << " expected): loads of single floats with the lanes 16 bytes apart (p[0], p[1], p[2], p[3] "
                       "per thread) each touch 16 sectors for 128 bytes. Load the four floats with one float4 load.";
    }
  }
}

#else
// ---- Performance on a GPU: ratio to cuBLAS in the same run ---------------------------------------

WB_CHECK(Performance, RatioToCublas, .weight = 8, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.50}},
         .passes = "`sgemm` at M = N = K = 4096 reaches at least {min_ratio:.2f} x the FLOP/s of "
                   "cuBLAS SGEMM timed in the same run (median of 11 runs); versions 1 to 6 are timed "
                   "for the record",
         .hint = "2D register blocking with float4 loads and a transposed A tile (version 6), 128 x 128 "
                 "block tiles, BK = 8 or 16, 8 x 8 results per thread; then warp tiling and double "
                 "buffering. Close other GPU programs.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  constexpr int n = 4096;
  // Correct first, then fast: a wrong kernel's speed means nothing.
  WB_ASSERT(check_case(kFinal, {.M = 1000, .N = 1500, .K = 700, .seed = 800}));
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this check binary was built without the cuBLAS baseline");
#else
  try {
    // Integer data in [-2, 2]: every sum is an exact float, so results match cuBLAS bit for bit. Every
    // version is validated against cuBLAS before timing and after it, the timed runs each given changed
    // inputs (wb_timed.h: values of A moved, so they stay integers in [-2, 2]).
    const std::size_t elements = static_cast<std::size_t>(n) * n;
    std::vector<float> a = wb::random_integer_floats(elements, 801, -2, 2);
    const std::vector<float> b = wb::random_integer_floats(elements, 802, -2, 2);
    wb::DeviceBuffer<float> A{std::span<const float>(a)}, B{std::span<const float>(b)};
    wb::DeviceBuffer<float> C(elements);
    wb::check::ChangingInput<float> changing(a, A.data());
    // cuBLAS, baseline and reference, on its own copies of A and B (A changed with the lab's A):
    // where the checks are split, in the checker's own CUDA process (wb_baseline.h).
    std::optional<wb::DeviceBuffer<float>> A_ref, B_ref, C_ref;
    CublasSgemm cublas;
    const wb::TimingOptions options{.warmup = 2, .repetitions = 11};
    const double flops = 2.0 * n * n * static_cast<double>(n);
    wb::Timing baseline;
    {
      wb::check::InCheckersProcess checkers;
      A_ref.emplace(std::span<const float>(a));
      B_ref.emplace(std::span<const float>(b));
      C_ref.emplace(elements);
      changing.mirror_in_checkers_process(A_ref->data());
      baseline = wb::time_median(
          [&] { cublas.run(n, n, n, 1.0f, A_ref->data(), n, B_ref->data(), n, 0.0f, C_ref->data(), n); }, options);
    }
    const double baseline_tflops = flops / (baseline.median_ms * 1e-3) / 1e12;
    // "" when C holds what cuBLAS computes from the current A and B, else where it does not.
    auto verify = [&]() -> std::string {
      std::vector<float> expected;
      {
        wb::check::InCheckersProcess checkers;
        cublas.run(n, n, n, 1.0f, A_ref->data(), n, B_ref->data(), n, 0.0f, C_ref->data(), n);
        WB_CUDA_CHECK(cudaDeviceSynchronize());
        expected = C_ref->download();
      }
      const std::vector<float> got = C.download();
      const wb::check::Mismatches wrong =
          wb::check::find_mismatches(elements, [&](std::size_t i) { return got[i] != expected[i]; });
      if (wrong.none()) return "";
      const std::size_t i = wrong.first;
      return "wrong result at C(" + std::to_string(i / n) + ", " + std::to_string(i % n) + "): got " +
             number(got[i]) + ", cuBLAS " + number(expected[i]);
    };
    // Times version @p v (validated before and after); "" when it was timed, else why not.
    auto time_version = [&](const Version& v, const wb::TimingOptions& timing, double& tflops) -> std::string {
      C.fill_bytes(0xFF);
      wb::Bandwidth t;
      const std::string why = wb::check::failure_text(wb::check::timed_and_verified(
          std::string(v.name) + "(M=N=K=4096)", flops,  // the work per run: only the time is used
          [&] { return v.run(n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n); },
          [&] { changing.change(); }, verify, t, timing));
      tflops = flops / (t.timing.median_ms * 1e-3) / 1e12;
      return why;
    };
    double tflops = 0.0;
    if (const std::string why = time_version(kFinal, options, tflops); !why.empty()) FAIL() << why;
    const double ratio = tflops / baseline_tflops;
    std::string text = fixed(ratio) + " x cuBLAS (" + fixed(tflops) + " vs " + fixed(baseline_tflops) + " TFLOP/s)";
    // The ladder, for the record (fewer runs: the first versions take a while at 4096^3).
    for (const Version* v : {&kNaive, &kCoalesced, &kSmemTiled, &kBlocktile1D, &kBlocktile2D, &kVectorized}) {
      double version_tflops = 0.0;
      if (const std::string why = time_version(*v, {.warmup = 1, .repetitions = 3}, version_tflops); !why.empty()) {
        text += std::string("; ") + v->name + " not timed (" + why + ")";
        continue;
      }
      text += std::string("; ") + v->name + " " + fixed(version_tflops / baseline_tflops) + " x";
    }
    wb::check::record_measured(text);
    EXPECT_GE(ratio, kMinRatio) << "sgemm(M=N=K=4096) reached " << text << "; it needs " << wb::check::as_written(kMinRatio)
                                << " x cuBLAS. GEMM is compute-bound once tiled: keep each thread's TM x TN "
                                   "results in registers, load tiles with float4, and size the tiles so that "
                                   "enough warps fit on each multiprocessor.";
  } catch (const std::exception& e) {
    FAIL() << "a CUDA or cuBLAS call failed while timing sgemm: " << e.what();
  }
#endif
}
#endif
