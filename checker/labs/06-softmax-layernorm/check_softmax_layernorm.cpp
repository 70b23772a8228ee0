// Checks for lab 06 (softmax, layer normalization and RMSNorm, forward and backward).
//
// Every output is compared with a double-precision reference computed on the host from the same float
// inputs, element by element, with an allowance derived from the computation (at each reference below).
// Inputs are surrounded by NaN (reading outside a row range shows), outputs start as 0xFF bytes (a value
// never written shows) and carry guard zones.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "softmax_layernorm.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_float16.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

namespace {

using wb::check::after_call;
using wb::check::fixed;
using wb::check::from_bf16;
using wb::check::Input;
using wb::check::never_written;
using wb::check::Output;
using wb::check::to_bf16;

constexpr double kU = 0x1.0p-24;
constexpr float kEps = 1e-5f;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// T(C) = (16 + 4 sqrt(C)) u, the relative rounding a C-term float sum gets in any reasonable order (a
// tree: about log2(C) u; one thread adding C terms in a row: about sqrt(C) u typically), with margin for
// the elementwise operations around it.
double sum_tolerance(std::size_t terms) { return (16.0 + 4.0 * std::sqrt(static_cast<double>(terms))) * kU; }

std::string number(double v) { return wb::check::significant(v, 7); }

// ---- inputs ------------------------------------------------------------------------------------------

// Rows are adversarial by kind. Softmax: large logits among small ones, rows offset by 1e4 (exp
// overflows without the max subtraction), fully masked rows (all -inf: the result is all zeros) and
// causally masked ones. Norms: rows of mean 1e3 and standard deviation 1 (the one-pass variance
// E[x^2] - E[x]^2 cancels every digit there) and constant rows (variance 0).
enum class RowKind { Uniform, Spiky, Offset, Masked, Causal, Cancellation, Constant, Wide };

const char* describe(RowKind kind) {
  switch (kind) {
    case RowKind::Uniform: return "uniform in [-8, 8)";
    case RowKind::Spiky: return "a few values x 20 among values in [-1, 1)";
    case RowKind::Offset: return "offset by 1e4 (logits near 10000)";
    case RowKind::Masked: return "fully masked: every element -inf";
    case RowKind::Causal: return "causally masked: -inf after a column";
    case RowKind::Cancellation: return "mean 1e3, standard deviation 1";
    case RowKind::Constant: return "constant row (variance 0)";
    case RowKind::Wide: return "uniform in [-100, 100)";
  }
  return "";
}

const std::vector<RowKind> kSoftmaxKinds = {RowKind::Uniform, RowKind::Spiky, RowKind::Offset, RowKind::Masked,
                                            RowKind::Causal};
const std::vector<RowKind> kNormKinds = {RowKind::Uniform, RowKind::Cancellation, RowKind::Constant, RowKind::Wide};

struct Matrix {
  int rows = 0, cols = 0;
  std::vector<float> v;
  std::vector<RowKind> kinds;  // per row
  std::uint64_t seed = 0;
  std::size_t size() const { return v.size(); }
  std::string shape() const { return "rows=" + std::to_string(rows) + ", cols=" + std::to_string(cols); }
  // "<function>(rows=R, cols=C<extra>) [seed S]", the call a message names.
  std::string call(const std::string& function, const char* extra = "") const {
    return function + "(" + shape() + extra + ") [seed " + std::to_string(seed) + "]";
  }
};

void fill_row(float* row, int cols, RowKind kind, wb::Random& rng) {
  auto uniform = [&](float lo, float hi) { return lo + (hi - lo) * static_cast<float>(rng.next_unit_double()); };
  switch (kind) {
    case RowKind::Uniform:
      for (int c = 0; c < cols; ++c) row[c] = uniform(-8.0f, 8.0f);
      break;
    case RowKind::Spiky:
      for (int c = 0; c < cols; ++c) row[c] = uniform(-1.0f, 1.0f);
      for (int k = 0; k < 3; ++k) row[rng.next_int(0, cols - 1)] *= 20.0f;
      row[rng.next_int(0, cols - 1)] = 8.0f * 20.0f;  // exp(160) overflows float
      break;
    case RowKind::Offset:
      for (int c = 0; c < cols; ++c) row[c] = 1e4f + uniform(-4.0f, 4.0f);
      break;
    case RowKind::Masked:
      for (int c = 0; c < cols; ++c) row[c] = -kInf;
      break;
    case RowKind::Causal: {
      const int last = static_cast<int>(rng.next_int(0, cols - 1));
      for (int c = 0; c < cols; ++c) row[c] = c <= last ? uniform(-8.0f, 8.0f) : -kInf;
      break;
    }
    case RowKind::Cancellation: {
      // Mean 1000, standard deviation about 1 (uniform in 1000 +- sqrt(3)).
      for (int c = 0; c < cols; ++c) row[c] = 1000.0f + 1.7320508f * uniform(-1.0f, 1.0f);
      break;
    }
    case RowKind::Constant:
      for (int c = 0; c < cols; ++c) row[c] = 3.25f;
      break;
    case RowKind::Wide:
      for (int c = 0; c < cols; ++c) row[c] = uniform(-100.0f, 100.0f);
      break;
  }
}

// A rows x cols matrix whose row r has kind kinds[(r + first_kind) % kinds.size()].
Matrix make_matrix(int rows, int cols, const std::vector<RowKind>& kinds, std::size_t first_kind, std::uint64_t seed) {
  Matrix m{.rows = rows, .cols = cols, .v = std::vector<float>(static_cast<std::size_t>(rows) * cols), .seed = seed};
  wb::Random rng(seed * 7919 + 17);
  for (int r = 0; r < rows; ++r) {
    const RowKind kind = kinds[(r + first_kind) % kinds.size()];
    m.kinds.push_back(kind);
    fill_row(m.v.data() + static_cast<std::size_t>(r) * cols, cols, kind, rng);
  }
  return m;
}

struct Shape {
  int rows, cols;
};

// Sizes: C = 1, around 4 and 32, 100, 1024, 1025, 1600, 4096, 8192 (the largest cached row), 8193
// and 32768 (which do not fit in registers or shared memory), many rows of 3; R = 0.
const std::vector<Shape> kShapes = {{0, 5},    {1, 1},    {7, 1},    {5, 7},     {10, 32},   {6, 33},
                                    {5, 100},  {4, 1024}, {3, 1025}, {3, 1600},  {2, 4096},  {2, 8192},
                                    {2, 8193}, {1, 32768}, {300, 3},  {20, 768}};
const std::vector<Shape> kSmallShapes = {{1, 1}, {5, 7}, {10, 32}, {6, 33}, {5, 100}, {3, 1025}, {2, 4096}};
// Backward shapes: C = 1 to 8193 (C = 4: a row of one float4), R = 0 to 1000 (more rows than
// kNormPartialRows blocks, with rows of whole float4s and, at 1000 x 7, of single floats).
const std::vector<Shape> kBackwardShapes = {{0, 8},     {1, 1},   {9, 1},   {7, 4},    {5, 7},    {10, 32},
                                            {6, 33},    {3, 1025}, {3, 1600}, {2, 4096}, {2, 8193}, {1000, 12},
                                            {600, 36},  {20, 768}, {1000, 7}};

// Case s of a sweep checks @p shapes[s] with seed @p seed + s, its rows' kinds starting at kind s;
// "k/n cases correct" as they pass, the first failure.
testing::AssertionResult for_each_shape(
    const std::vector<Shape>& shapes, std::uint64_t seed,
    const std::function<testing::AssertionResult(Shape, std::size_t first_kind, std::uint64_t seed)>& check) {
  return wb::check::run_cases(shapes.size(), [&](std::size_t s) { return check(shapes[s], s, seed + s); });
}

// ---- element types: float, or bf16 held as its bits (std::uint16_t) on the host ------------------------------

template <class T>
constexpr bool kBf16 = std::is_same_v<T, std::uint16_t>;

constexpr double kBf16Rounding = 0x1.0p-8;  // a bf16 output's one more rounding, relative

std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = from_bf16(to_bf16(x));
  return v;
}

// The values of an input of type T.
template <class T>
std::vector<T> device_values(const std::vector<float>& v) {
  if constexpr (kBf16<T>) {
    std::vector<std::uint16_t> out(v.size());
    std::transform(v.begin(), v.end(), out.begin(), to_bf16);
    return out;
  } else {
    return v;
  }
}

// An output as floats: a bf16 never written (0xFFFF) becomes the float 0xFFFFFFFF, which
// compare_matrix() reports as never written.
std::vector<float> host_values(std::vector<float> v) { return v; }
std::vector<float> host_values(const std::vector<std::uint16_t>& v) {
  std::vector<float> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(),
                 [](std::uint16_t h) { return h == 0xFFFF ? std::bit_cast<float>(0xFFFFFFFFu) : from_bf16(h); });
  return out;
}

// The poison around an input of type T: NaN (in bf16, 0x7FC0).
template <class T>
T poison() {
  if constexpr (kBf16<T>) {
    return 0x7FC0;
  } else {
    return kNaN;
  }
}

// A device pointer of type T as the lab's functions take it.
float* device(float* p) { return p; }
__nv_bfloat16* device(std::uint16_t* p) { return reinterpret_cast<__nv_bfloat16*>(p); }

// ---- comparing ---------------------------------------------------------------------------------------------

struct Expected {
  Expected() = default;
  explicit Expected(std::size_t n) : value(n), allowed(n) {}
  std::vector<double> value, allowed;
};

// Compares the rows x cols output @p got with @p e (wb::check::compare_elements), naming the first wrong
// element by its row and column; @p why(index) explains it.
testing::AssertionResult compare_matrix(const std::string& call, const char* array, const Expected& e,
                                        const std::vector<float>& got, int cols,
                                        const std::function<std::string(std::size_t)>& why) {
  const auto where = [&](std::size_t i) {
    const std::string r = std::to_string(i / static_cast<std::size_t>(cols));
    const std::string c = std::to_string(i % static_cast<std::size_t>(cols));
    return std::string(array) + "[" + r + " * cols + " + c + "] (row " + r + ", column " + c + ")";
  };
  return wb::check::compare_elements(call, array, got, e.value, e.allowed, where, why);
}

// The versions expected to use 16-byte loads (the final ones and the backward passes): every
// function but the first versions of the ladder.
bool vectorized(const std::string& function) {
  return function != "softmax_naive" && function != "softmax_block" && function != "softmax_online" &&
         function != "layernorm_two_pass";
}

// The row of element @p index, described; for a 16-byte-vectorized function on rows that are not all
// 16-byte aligned, a note on the row's head and tail, unless @p alignment_note is false (the values
// show another cause).
std::string row_note(const Matrix& m, std::size_t index, const std::string& function, bool alignment_note = true) {
  const std::size_t r = index / static_cast<std::size_t>(m.cols);
  std::string note = std::string("Row ") + std::to_string(r) + " is " + describe(m.kinds[r]) + ".";
  const bool bf16 = function.ends_with("_bf16");
  const int per_16_bytes = bf16 ? 8 : 4;  // elements in 16 bytes
  if (alignment_note && m.cols % per_16_bytes != 0 && vectorized(function)) {
    note += " cols = " + std::to_string(m.cols) + " is not a multiple of " + std::to_string(per_16_bytes) +
            ": rows are not all 16-byte aligned. With 16-byte loads, load the elements before the row's first "
            "16-byte boundary and after its last full 16-byte chunk one by one (a " +
            (bf16 ? std::string("uint4") : std::string("float4")) + " that covers the row's end reads past it).";
  }
  return note;
}

// ---- softmax -----------------------------------------------------------------------------------------------

// Reference softmax (double): |y - y_ref| <= (T(C) + 3 |x - max| u) y_ref + 2^-126 (exp of a rounded
// argument, and __expf's error growing with |x - max|), plus @p extra_rel y_ref (a bf16 output's rounding).
Expected softmax_reference(const Matrix& m, double extra_rel = 0.0) {
  Expected ref(m.size());
  const double tol = sum_tolerance(m.cols);
  for (int r = 0; r < m.rows; ++r) {
    const float* x = m.v.data() + static_cast<std::size_t>(r) * m.cols;
    double mx = -INFINITY;
    for (int c = 0; c < m.cols; ++c) mx = std::max(mx, static_cast<double>(x[c]));
    double s = 0.0;
    if (mx != -INFINITY) {
      for (int c = 0; c < m.cols; ++c) s += std::exp(static_cast<double>(x[c]) - mx);
    }
    for (int c = 0; c < m.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * m.cols + c;
      const double y = mx == -INFINITY ? 0.0 : std::exp(static_cast<double>(x[c]) - mx) / s;
      ref.value[i] = y;
      const double spread = std::isfinite(x[c]) ? std::fabs(x[c] - mx) : 0.0;
      ref.allowed[i] = (tol + 3.0 * spread * kU + extra_rel) * y + 0x1.0p-126;
    }
  }
  return ref;
}

// When every element of row @p r of @p got is the expected one times the same factor, within
// @p tolerance relative (the relative sizes right, the normalizer wrong), says so; else "".
std::string row_factor_note(const Matrix& m, std::size_t r, const std::vector<float>& got, const Expected& e,
                            double tolerance) {
  std::vector<double> ratios;
  double sum = 0.0;
  for (int c = 0; c < m.cols; ++c) {
    const std::size_t i = r * static_cast<std::size_t>(m.cols) + c;
    if (!std::isfinite(got[i])) return "";
    sum += got[i];
    if (e.value[i] > 1e-6) ratios.push_back(got[i] / e.value[i]);
  }
  if (ratios.size() < 2) return "";
  std::sort(ratios.begin(), ratios.end());
  const double factor = ratios[ratios.size() / 2];
  if (!(factor > 0.0) || std::fabs(factor - 1.0) < 4 * tolerance) return "";
  for (double q : ratios) {
    if (std::fabs(q - factor) > tolerance * factor) return "";
  }
  std::ostringstream text;
  text << " Every y of row " << r << " is the expected value times " << wb::check::significant(factor, 4)
       << " (the row sums to " << wb::check::significant(sum, 6)
       << ", not 1): the exponentials are right relative to each other and the sum that divides them is not. "
          "Divide by the sum of exp(x - m) over the whole row, every term taken with the same m; in a one-pass "
          "(online) softmax, rescale the running sum by exp(m_old - m_new) whenever the maximum grows, and when "
          "two partial sums with different maxima are combined.";
  return text.str();
}

std::string softmax_diagnosis(const Matrix& m, std::size_t index, const std::vector<float>& all, const Expected& e,
                              const std::string& function) {
  const std::size_t r = index / static_cast<std::size_t>(m.cols);
  const float got = all[index];
  const double tolerance = function.ends_with("_bf16") ? 1e-2 : 1e-3;  // bf16 rounds each y by up to 2^-9
  if (std::string factor = row_factor_note(m, r, all, e, tolerance); !factor.empty()) {
    return row_note(m, index, function, false) + factor;
  }
  std::string text = row_note(m, index, function);
  if (m.kinds[r] == RowKind::Masked && std::isnan(got) && !never_written(got)) {
    text += " A fully masked row has maximum -inf and exp(-inf - (-inf)) = exp(NaN): when the row's maximum is "
            "-INFINITY, write zeros.";
  } else if ((std::isnan(got) || std::isinf(got)) && !never_written(got) &&
             (m.kinds[r] == RowKind::Offset || m.kinds[r] == RowKind::Spiky)) {
    text += " An exponential overflowed (expf above 88.7, exp2f above 128) on this row of large values. Its "
            "argument must be x minus the row's maximum (max subtraction), at most 0, so that the largest term is 1: "
            "expf(x - max), "
            "or exp2f((x - max) * log2(e)) with the scaling applied to the difference (x * log2(e) - max subtracts "
            "a maximum in other units and leaves an exponent near 0.44 x).";
  } else if (std::isnan(got) && !never_written(got)) {
    text += " NaN: the checker surrounds x with NaN, so elements outside the matrix (or outside the row) may have "
            "been read.";
  }
  return text;
}

using SoftmaxFn = cudaError_t (*)(const float*, float*, int, int);

// One call of a softmax forward @p fn on @p matrix, its y compared with the reference: in float, or with
// T = std::uint16_t in bf16, on @p matrix's values rounded to bf16.
template <class T = float, class Fn>
testing::AssertionResult check_softmax(Fn fn, const char* function, const Matrix& matrix) {
  Matrix m = matrix;
  if constexpr (kBf16<T>) m.v = bf16_rounded(std::move(m.v));
  const std::string call = m.call(function);
  return wb::check::guarded(call, [&] {
    Input<T> x(device_values<T>(m.v), "x", poison<T>());
    Output<T> y(m.size(), "y");
    if (auto r = after_call(fn(device(x.dev.data()), device(y.dev.data()), m.rows, m.cols), call, function,
                            {[&] { return y.in_bounds(call); }, [&] { return x.unchanged(call); }});
        !r) {
      return r;
    }
    const std::vector<float> got = host_values(y.dev.download());
    const Expected ref = softmax_reference(m, kBf16<T> ? kBf16Rounding : 0.0);
    return compare_matrix(call, "y", ref, got, m.cols,
                          [&](std::size_t i) { return softmax_diagnosis(m, i, got, ref, function); });
  });
}

testing::AssertionResult check_softmax_bf16(const Matrix& m) {
  return check_softmax<std::uint16_t>(&softmax_forward_bf16, "softmax_forward_bf16", m);
}

void check_softmax_version(SoftmaxFn fn, const char* function) {
  WB_ASSERT(for_each_shape(kShapes, 1, [&](Shape s, std::size_t first_kind, std::uint64_t seed) {
    return check_softmax(fn, function, make_matrix(s.rows, s.cols, kSoftmaxKinds, first_kind, seed));
  }));
}

// ---- layer norm and RMSNorm -----------------------------------------------------------------------------------

struct NormRef {
  Expected y, mean, rstd;
};

// Reference forward (double): layer norm when centered, else RMSNorm (rstd = rrms, mean = 0). @p extra_rel:
// a bf16 output's rounding, relative.
NormRef norm_reference(const Matrix& m, const std::vector<float>& gamma, const std::vector<float>& beta, bool centered,
                       double extra_rel = 0.0) {
  NormRef ref{Expected(m.size())};
  const double tol = sum_tolerance(m.cols);
  for (int r = 0; r < m.rows; ++r) {
    const float* x = m.v.data() + static_cast<std::size_t>(r) * m.cols;
    double mean = 0.0, abs_mean = 0.0;
    for (int c = 0; c < m.cols; ++c) {
      mean += x[c];
      abs_mean += std::fabs(x[c]);
    }
    mean /= m.cols;
    abs_mean /= m.cols;
    if (!centered) mean = 0.0;
    double var = 0.0;
    for (int c = 0; c < m.cols; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= m.cols;
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(kEps));
    // The mean is allowed d = T(C) mean|x| (a float sum's rounding, which rows of mean 1e3 and std 1
    // magnify 1000 times); deviations taken from a mean known within d (a two-pass variance around the
    // computed mean, Welford's running means, Chan's merges) give a variance within
    // 2 d mean|x - mean| + d^2 <= 2 d sqrt(var) + d^2 of the true one, and rstd that relative error
    // halved, e (d = 0 for RMSNorm): rstd within (2 T(C) + e) rstd, and
    // |y - ref| <= |gamma| rstd (d + (T(C) + e) |x - mean|) + 2 u (|y| + |beta|).
    const double d = centered ? tol * abs_mean : 0.0;
    const double from_mean = (2.0 * d * std::sqrt(var) + d * d) / (2.0 * (var + static_cast<double>(kEps)));
    ref.mean.value.push_back(mean);
    ref.mean.allowed.push_back(d);
    ref.rstd.value.push_back(rstd);
    ref.rstd.allowed.push_back((2.0 * tol + from_mean) * rstd);
    for (int c = 0; c < m.cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * m.cols + c;
      const double b = centered ? beta[c] : 0.0;
      const double y = (x[c] - mean) * rstd * gamma[c] + b;
      ref.y.value[i] = y;
      ref.y.allowed[i] = std::fabs(gamma[c]) * rstd * (d + (tol + from_mean) * std::fabs(x[c] - mean)) +
                         (2.0 * kU + extra_rel) * (std::fabs(y) + std::fabs(b)) + 1e-30;
    }
  }
  return ref;
}

// A wrong y of layer norm, after the row's mean and rstd were found within their bounds: the
// error lies in y's own formula or in what it read.
std::string norm_diagnosis(const Matrix& m, std::size_t index, float got, const std::string& function) {
  const std::size_t r = index / static_cast<std::size_t>(m.cols);
  std::string text = row_note(m, index, function);
  if (std::isnan(got) && !never_written(got)) {
    text += " NaN, though this row's mean and rstd are right: y read elements outside x, gamma or beta (the "
            "checker surrounds them with NaN).";
  } else if (m.kinds[r] == RowKind::Cancellation) {
    text += " This row's mean and rstd are within their bounds, so the error is in y itself: on this row the mean "
            "is 1000 and the deviations about 1, and x - mean is exact in float; a y formed otherwise (x * rstd - "
            "mean * rstd, or with gamma applied before the mean is subtracted) subtracts two numbers near 1000 and "
            "loses the deviation's digits. Use y = (x - mean) * rstd * gamma + beta.";
  }
  return text;
}

// What a wrong rstd on a row of mean 1e3 and standard deviation 1 shows: the variance it implies,
// against the row's variance and the error the allowed algorithms reach.
std::string cancellation_note(double got_rstd, double want_rstd, double allowed) {
  const double implied = 1.0 / (got_rstd * got_rstd) - static_cast<double>(kEps);
  const double var = 1.0 / (want_rstd * want_rstd) - static_cast<double>(kEps);
  std::ostringstream text;
  text << " This rstd implies a variance of " << number(implied) << " where the row's is " << number(var)
       << ": rstd is off by " << number(std::fabs(got_rstd - want_rstd) / want_rstd) << " relative, "
       << number(std::fabs(got_rstd - want_rstd) / allowed)
       << " times the error that rounding in a two-pass or Welford computation can reach on this row. The row's "
          "mean is 1000 times its standard deviation: a variance formed from sums of x^2 (E[x^2] - E[x]^2) "
          "subtracts two numbers near 1e6 whose rounding errors exceed the variance (catastrophic "
          "cancellation); one computed from deviations x - mean does not. Compute the mean first, then the mean "
          "of (x - mean)^2 (two passes, over a cached row), or use Welford's algorithm (Chan's formula to merge "
          "partial results).";
  return text.str();
}

// Compares the per-row statistics (mean, rstd) first: a wrong statistic explains a wrong y.
testing::AssertionResult compare_stats(const std::string& call, const char* array, const Expected& e,
                                       const std::vector<float>& got, const Matrix& m) {
  const std::string name = array;
  for (std::size_t r = 0; r < got.size(); ++r) {
    const double g = got[r];
    if (std::isfinite(g) && std::fabs(g - e.value[r]) <= e.allowed[r]) continue;
    testing::AssertionResult failure = testing::AssertionFailure();
    failure << call << ": " << name << "[" << r << "] = "
            << (never_written(got[r]) ? std::string("nothing (never written)") : number(g)) << ", expected "
            << number(e.value[r]) << " (allowed difference " << number(e.allowed[r]) << "). Row " << r << " is "
            << describe(m.kinds[r]) << ".";
    const bool zero_variance =
        name != "mean" && m.cols > 0 && e.value[r] >= 0.99 / std::sqrt(static_cast<double>(kEps));
    // A NaN rstd is a variance below -eps: summing (x - mean)^2 never gives one, E[x^2] - E[x]^2 does
    // when its two terms round differently (on a GPU, where the compiler fuses them into an FMA, even
    // for a single element). The same cancellation as a finite wrong rstd, so the same diagnosis.
    if (name == "rstd" && std::isnan(g) && !never_written(got[r])) {
      failure << " rstd is NaN: the variance came out negative, which the mean of (x - mean)^2 never is. "
                 "E[x^2] - E[x]^2 subtracts two numbers near mean^2 whose rounding errors exceed the variance "
                 "(catastrophic cancellation; a fused multiply-add can make it negative even for one element). "
                 "Compute the mean first, then the mean of (x - mean)^2 (two passes, over a cached row), or use "
                 "Welford's algorithm.";
    } else if (zero_variance) {
      failure << " This row's variance is 0 (cols = " << m.cols << (m.cols == 1 ? ", a single element" : "")
              << "): rstd = 1 / sqrt(0 + eps), with eps inside the square root.";
    } else if (m.kinds[r] == RowKind::Cancellation && name == "rstd" && std::isfinite(g) && g > 0) {
      failure << cancellation_note(g, e.value[r], e.allowed[r]);
    } else if (m.kinds[r] == RowKind::Cancellation) {
      failure << " Relative error " << number(std::fabs(g - e.value[r]) / std::fabs(e.value[r]))
              << " on a row whose mean is 1000 times its standard deviation: the mean is a plain sum divided by "
                 "cols; a sum in float keeps it within the allowed difference.";
    } else if (name == "rstd" && std::isfinite(g) && std::fabs(g - e.value[r]) > 1e-3 * e.value[r]) {
      failure << " The variance is the biased one (divide by cols, not cols - 1), and eps goes inside the square "
                 "root: rstd = 1 / sqrt(var + eps).";
    }
    return failure;
  }
  return testing::AssertionSuccess();
}

struct NormParams {
  std::vector<float> gamma, beta;
};

NormParams norm_params(int cols, std::uint64_t seed) {
  return {wb::random_floats(cols, seed * 3 + 1, 0.5f, 1.5f), wb::random_floats(cols, seed * 3 + 2, -0.5f, 0.5f)};
}

using LayerNormFn = cudaError_t (*)(const float*, const float*, const float*, float*, float*, float*, int, int, float);

// One call of a layer-norm forward @p fn on @p matrix: mean and rstd compared first, then y. In float, or with
// T = std::uint16_t in bf16 (x, gamma, beta and y), on @p matrix's values and the parameters rounded to bf16.
template <class T = float, class Fn>
testing::AssertionResult check_layernorm(Fn fn, const char* function, const Matrix& matrix) {
  Matrix m = matrix;
  NormParams p = norm_params(m.cols, m.seed);
  if constexpr (kBf16<T>) {
    m.v = bf16_rounded(std::move(m.v));
    p = {bf16_rounded(p.gamma), bf16_rounded(p.beta)};
  }
  const std::string call = m.call(function, ", eps=1e-5");
  return wb::check::guarded(call, [&] {
    Input<T> x(device_values<T>(m.v), "x", poison<T>()), gamma(device_values<T>(p.gamma), "gamma", poison<T>()),
        beta(device_values<T>(p.beta), "beta", poison<T>());
    Output<T> y(m.size(), "y");
    Output<float> mean(m.rows, "mean"), rstd(m.rows, "rstd");
    const cudaError_t status = fn(device(x.dev.data()), device(gamma.dev.data()), device(beta.dev.data()),
                                  device(y.dev.data()), mean.dev.data(), rstd.dev.data(), m.rows, m.cols, kEps);
    if (auto r = after_call(status, call, function,
                            {[&] { return y.in_bounds(call); }, [&] { return mean.in_bounds(call); },
                             [&] { return rstd.in_bounds(call); }, [&] { return x.unchanged(call); },
                             [&] { return gamma.unchanged(call); }, [&] { return beta.unchanged(call); }});
        !r) {
      return r;
    }
    const NormRef ref = norm_reference(m, p.gamma, p.beta, true, kBf16<T> ? kBf16Rounding : 0.0);
    if (auto r = compare_stats(call, "mean", ref.mean, mean.dev.download(), m); !r) return r;
    if (auto r = compare_stats(call, "rstd", ref.rstd, rstd.dev.download(), m); !r) return r;
    const std::vector<float> got = host_values(y.dev.download());
    return compare_matrix(call, "y", ref.y, got, m.cols,
                          [&](std::size_t i) { return norm_diagnosis(m, i, got[i], function); });
  });
}

testing::AssertionResult check_layernorm_bf16(const Matrix& m) {
  return check_layernorm<std::uint16_t>(&layernorm_forward_bf16, "layernorm_forward_bf16", m);
}

testing::AssertionResult check_rmsnorm(const Matrix& m) {
  const char* function = "rmsnorm_forward";
  const std::string call = m.call(function, ", eps=1e-5");
  return wb::check::guarded(call, [&] {
    const NormParams p = norm_params(m.cols, m.seed);
    Input<float> x(m.v, "x", kNaN), gamma(p.gamma, "gamma", kNaN);
    Output<float> y(m.size(), "y"), rrms(m.rows, "rrms");
    const cudaError_t status = rmsnorm_forward(x.dev.data(), gamma.dev.data(), y.dev.data(), rrms.dev.data(), m.rows,
                                               m.cols, kEps);
    if (auto r = after_call(status, call, function,
                            {[&] { return y.in_bounds(call); }, [&] { return rrms.in_bounds(call); },
                             [&] { return x.unchanged(call); }, [&] { return gamma.unchanged(call); }});
        !r) {
      return r;
    }
    const NormRef ref = norm_reference(m, p.gamma, p.beta, false);
    if (auto r = compare_stats(call, "rrms", ref.rstd, rrms.dev.download(), m); !r) return r;
    const std::vector<float> got = y.dev.download();
    return compare_matrix(call, "y", ref.y, got, m.cols, [&](std::size_t i) { return row_note(m, i, function); });
  });
}

void check_norm_version(const std::function<testing::AssertionResult(const Matrix&)>& check) {
  WB_ASSERT(for_each_shape(kShapes, 200, [&](Shape s, std::size_t first_kind, std::uint64_t seed) {
    return check(make_matrix(s.rows, s.cols, kNormKinds, first_kind, seed));
  }));
}

// ---- backward passes ----------------------------------------------------------------------------------------

struct BackwardCase {
  Matrix x;            // the forward's input (norms) or output y (softmax)
  std::vector<float> dy;
};

// What a backward pass wrote: dx, and for the norms dgamma (and, layer norm only, dbeta).
struct Grads {
  std::vector<float> dx, dgamma, dbeta;
};
// The outputs a backward pass must reproduce bit for bit (BackwardReproducible).
constexpr std::initializer_list<std::pair<const char*, std::vector<float> Grads::*>> kBackwardOutputs = {
    {"dx", &Grads::dx}, {"dgamma", &Grads::dgamma}, {"dbeta", &Grads::dbeta}};

// Softmax backward inputs: y = softmax of a matrix of rows of @p kinds (rounded to float), dy uniform in
// [-1, 1).
BackwardCase softmax_backward_case(int rows, int cols, std::size_t first_kind, std::uint64_t seed,
                                   const std::vector<RowKind>& kinds = kSoftmaxKinds) {
  BackwardCase b{make_matrix(rows, cols, kinds, first_kind, seed)};
  const Expected y = softmax_reference(b.x);
  for (std::size_t i = 0; i < b.x.v.size(); ++i) b.x.v[i] = static_cast<float>(y.value[i]);
  b.dy = wb::random_floats(b.x.size(), seed * 5 + 3, -1.0f, 1.0f);
  return b;
}

// dx = y (dy - s), s = sum of y dy over the row: |dx - ref| <= y (T(C) sum|y dy| + 8 u |dy - s|).
Expected softmax_backward_reference(const BackwardCase& b) {
  const Matrix& y = b.x;
  Expected e(y.size());
  const double tol = sum_tolerance(y.cols);
  for (int r = 0; r < y.rows; ++r) {
    const std::size_t o = static_cast<std::size_t>(r) * y.cols;
    double s = 0.0, s_abs = 0.0;
    for (int c = 0; c < y.cols; ++c) {
      s += static_cast<double>(y.v[o + c]) * b.dy[o + c];
      s_abs += std::fabs(static_cast<double>(y.v[o + c]) * b.dy[o + c]);
    }
    for (int c = 0; c < y.cols; ++c) {
      const double yy = y.v[o + c], d = b.dy[o + c];
      e.value[o + c] = yy * (d - s);
      e.allowed[o + c] = std::fabs(yy) * (tol * s_abs + 8.0 * kU * (std::fabs(d) + std::fabs(s))) + 1e-30;
    }
  }
  return e;
}

testing::AssertionResult run_softmax_backward(const BackwardCase& b, Grads& got, const std::string& call) {
  Input<float> y(b.x.v, "y", kNaN), dy(b.dy, "dy", kNaN);
  Output<float> out(b.x.size(), "dx");
  const cudaError_t status = softmax_backward(y.dev.data(), dy.dev.data(), out.dev.data(), b.x.rows, b.x.cols);
  if (auto r = after_call(status, call, "softmax_backward",
                          {[&] { return out.in_bounds(call); }, [&] { return y.unchanged(call); },
                           [&] { return dy.unchanged(call); }});
      !r) {
    return r;
  }
  got.dx = out.dev.download();
  return testing::AssertionSuccess();
}

testing::AssertionResult check_softmax_backward(const BackwardCase& b) {
  const std::string call = b.x.call("softmax_backward");
  return wb::check::guarded(call, [&] {
    Grads got;
    if (auto r = run_softmax_backward(b, got, call); !r) return r;
    return compare_matrix(call, "dx", softmax_backward_reference(b), got.dx, b.x.cols, [&](std::size_t i) {
      return row_note(b.x, i, "softmax_backward") + " (y of this row is the softmax of such logits.)";
    });
  });
}

// Norm backward: x from the norm kinds, the forward's statistics (reference, rounded to float),
// gamma, dy uniform in [-1, 1).
struct NormBackwardCase {
  BackwardCase b;
  std::vector<float> gamma, mean, rstd;
  bool centered = true;
};

const char* norm_backward_name(bool centered) { return centered ? "layernorm_backward" : "rmsnorm_backward"; }

NormBackwardCase norm_backward_case(int rows, int cols, bool centered, std::size_t first_kind, std::uint64_t seed,
                                    const std::vector<RowKind>& kinds = kNormKinds) {
  NormBackwardCase n;
  n.centered = centered;
  n.b.x = make_matrix(rows, cols, kinds, first_kind, seed);
  n.b.dy = wb::random_floats(n.b.x.size(), seed * 5 + 3, -1.0f, 1.0f);
  const NormParams p = norm_params(cols, seed);
  n.gamma = p.gamma;
  const NormRef ref = norm_reference(n.b.x, p.gamma, p.beta, centered);
  for (int r = 0; r < rows; ++r) {
    n.mean.push_back(static_cast<float>(ref.mean.value[r]));
    n.rstd.push_back(static_cast<float>(ref.rstd.value[r]));
  }
  return n;
}

struct NormGrads {
  Expected dx, dgamma, dbeta;
};

// dx from the sums of g = dy gamma and g xhat over the row, within the rounding of those sums (the rule of
// softmax_backward_reference); dgamma and dbeta within (T(R) + 8 u) and (T(R) + 4 u) sum_r |term|.
NormGrads norm_backward_reference(const NormBackwardCase& n) {
  const Matrix& x = n.b.x;
  NormGrads g{Expected(x.size())};
  const double tol_c = sum_tolerance(x.cols), tol_r = sum_tolerance(static_cast<std::size_t>(x.rows));
  std::vector<double> dgamma(x.cols), dgamma_abs(x.cols), dbeta(x.cols), dbeta_abs(x.cols);
  for (int r = 0; r < x.rows; ++r) {
    const std::size_t o = static_cast<std::size_t>(r) * x.cols;
    const double mu = n.centered ? n.mean[r] : 0.0, rs = n.rstd[r];
    double sg = 0.0, sgx = 0.0, sg_abs = 0.0, sgx_abs = 0.0;
    for (int c = 0; c < x.cols; ++c) {
      const double xh = (x.v[o + c] - mu) * rs, gg = static_cast<double>(n.b.dy[o + c]) * n.gamma[c];
      sg += gg;
      sgx += gg * xh;
      sg_abs += std::fabs(gg);
      sgx_abs += std::fabs(gg * xh);
      dgamma[c] += n.b.dy[o + c] * xh;
      dgamma_abs[c] += std::fabs(n.b.dy[o + c] * xh);
      dbeta[c] += n.b.dy[o + c];
      dbeta_abs[c] += std::fabs(n.b.dy[o + c]);
    }
    const double a = n.centered ? sg / x.cols : 0.0, bb = sgx / x.cols;
    const double a_abs = n.centered ? sg_abs / x.cols : 0.0, b_abs = sgx_abs / x.cols;
    for (int c = 0; c < x.cols; ++c) {
      const double xh = (x.v[o + c] - mu) * rs, gg = static_cast<double>(n.b.dy[o + c]) * n.gamma[c];
      g.dx.value[o + c] = rs * (gg - a - xh * bb);
      g.dx.allowed[o + c] = rs * (tol_c * (a_abs + std::fabs(xh) * b_abs) +
                                  8.0 * kU * (std::fabs(gg) + std::fabs(a) + std::fabs(xh * bb))) +
                            1e-30;
    }
  }
  for (int c = 0; c < x.cols; ++c) {
    g.dgamma.value.push_back(dgamma[c]);
    g.dgamma.allowed.push_back((tol_r + 8.0 * kU) * dgamma_abs[c] + 1e-30);
    g.dbeta.value.push_back(dbeta[c]);
    g.dbeta.allowed.push_back((tol_r + 4.0 * kU) * dbeta_abs[c] + 1e-30);
  }
  return g;
}

testing::AssertionResult run_norm_backward(const NormBackwardCase& n, Grads& got, const std::string& call) {
  const Matrix& m = n.b.x;
  Input<float> dy(n.b.dy, "dy", kNaN), x(m.v, "x", kNaN), gamma(n.gamma, "gamma", kNaN),
      mean(n.mean, "mean", kNaN), rstd(n.rstd, n.centered ? "rstd" : "rrms", kNaN);
  Output<float> dx(m.size(), "dx"), dgamma(m.cols, "dgamma"), dbeta(m.cols, "dbeta");
  wb::DeviceBuffer<float> workspace(norm_backward_workspace_floats(m.cols), wb::check::kGuardElements);
  const cudaError_t status =
      n.centered ? layernorm_backward(dy.dev.data(), x.dev.data(), gamma.dev.data(), mean.dev.data(), rstd.dev.data(),
                                      dx.dev.data(), dgamma.dev.data(), dbeta.dev.data(), m.rows, m.cols,
                                      workspace.data())
                 : rmsnorm_backward(dy.dev.data(), x.dev.data(), gamma.dev.data(), rstd.dev.data(), dx.dev.data(),
                                    dgamma.dev.data(), m.rows, m.cols, workspace.data());
  wb::check::BufferChecks checks = {
      [&] { return dx.in_bounds(call); },    [&] { return dgamma.in_bounds(call); },
      [&] { return dy.unchanged(call); },    [&] { return x.unchanged(call); },
      [&] { return gamma.unchanged(call); }, [&] { return rstd.unchanged(call); },
      [&] {
        return wb::check::no_out_of_bounds_writes(workspace.check_guards(), "workspace", workspace.size(), call);
      }};
  if (n.centered) {
    checks.push_back([&] { return dbeta.in_bounds(call); });
    checks.push_back([&] { return mean.unchanged(call); });
  }
  if (auto r = after_call(status, call, norm_backward_name(n.centered), checks); !r) return r;
  got.dx = dx.dev.download();
  got.dgamma = dgamma.dev.download();
  if (n.centered) got.dbeta = dbeta.dev.download();
  return testing::AssertionSuccess();
}

// Why a wrong dgamma or dbeta element @p value (a sum over @p rows rows) may be wrong.
std::string column_note(int rows, float value) {
  std::string note = std::string("dgamma and dbeta sum over all ") + std::to_string(rows) +
                     " rows: every row must contribute once (rows of several blocks, all partial sums added).";
  if (never_written(value)) {
    // 0xFFFFFFFF is a NaN, and a float sum that starts from it stays exactly that.
    note += " Its bytes are all ones: either no kernel wrote it, or it is a sum that started from memory nobody "
            "set. Device memory from cudaMalloc, the workspace included, holds whatever was there before (here "
            "all-ones bytes, a NaN that every addition keeps): set each partial sum to 0, or store it rather "
            "than add into it, before accumulating.";
  }
  return note;
}

testing::AssertionResult check_norm_backward(const NormBackwardCase& n) {
  const Matrix& m = n.b.x;
  const std::string call = m.call(norm_backward_name(n.centered));
  return wb::check::guarded(call, [&] {
    Grads got;
    if (auto r = run_norm_backward(n, got, call); !r) return r;
    // No element of dx written at all: no kernel ran on this row length, which explains the
    // parameter gradients as well.
    if (!got.dx.empty() && std::all_of(got.dx.begin(), got.dx.end(), [](float v) { return never_written(v); })) {
      return testing::AssertionFailure()
             << call << ": dx was never written (all " << got.dx.size()
             << " elements still hold the 0xFF bytes the checker put there): no kernel wrote a row of " << m.cols
             << " columns" << (m.cols % 4 == 0 ? " (" + std::to_string(m.cols / 4) + " float4 per row)" : "")
             << ". Every row length 1 <= cols <= 65536 must reach a kernel: check the conditions that choose the "
                "kernel (or its template instance) for this cols.";
    }
    const NormGrads ref = norm_backward_reference(n);
    if (auto r = compare_matrix(call, "dgamma", ref.dgamma, got.dgamma, m.cols,
                                [&](std::size_t i) { return column_note(m.rows, got.dgamma[i]); });
        !r) {
      return r;
    }
    if (n.centered) {
      if (auto r = compare_matrix(call, "dbeta", ref.dbeta, got.dbeta, m.cols,
                                  [&](std::size_t i) { return column_note(m.rows, got.dbeta[i]); });
          !r) {
        return r;
      }
    }
    return compare_matrix(call, "dx", ref.dx, got.dx, m.cols,
                          [&](std::size_t i) { return row_note(m, i, "backward"); });
  });
}

void check_norm_backward_version(bool centered) {
  WB_ASSERT(for_each_shape(kBackwardShapes, 300, [&](Shape s, std::size_t first_kind, std::uint64_t seed) {
    return check_norm_backward(norm_backward_case(s.rows, s.cols, centered, first_kind, seed));
  }));
}


}  // namespace

// ---- Correctness -------------------------------------------------------------------------------------------

// What passes, for SoftmaxNaive, SoftmaxBlock, SoftmaxOnline, SoftmaxForward.
constexpr char kSoftmaxPasses[] = "16 shapes (R = 0 to 300, C = 1, 7, 32, 33, 100, 768, 1024, 1025, 1600, 4096, "
                                  "8192, 8193, 32768) with rows of five kinds: uniform logits in [-8, 8), a few "
                                  "logits x 20 among small ones, offset by 1e4, fully masked, causally masked";

WB_CHECK(Correctness, SoftmaxNaive, .weight = 1,
         .passes = kSoftmaxPasses,
         .hint = "One thread per row r < rows: m = max of the row; if m == -INFINITY write zeros; s = "
                 "sum of expf(x - m); y = expf(x - m) / s.") {
  check_softmax_version(&softmax_naive, "softmax_naive");
}

WB_CHECK(Correctness, SoftmaxBlock, .weight = 2,
         .passes = kSoftmaxPasses,
         .hint = "A block per row (gridDim.x = rows); thread t takes columns t, t + blockDim.x, ...; "
                 "combine maxima, then sums, with block_reduce (warp shuffles, one value per warp in "
                 "shared memory).") {
  check_softmax_version(&softmax_block, "softmax_block");
}

WB_CHECK(Correctness, SoftmaxOnline, .weight = 2,
         .passes = kSoftmaxPasses,
         .hint = "Running (m, s): for v > m, s = s * expf(m - v) + 1, m = v; else s += expf(v - m) (skip "
                 "v == -INFINITY). Combine two pairs with the larger m, rescaling both sums.") {
  check_softmax_version(&softmax_online, "softmax_online");
}

WB_CHECK(Correctness, SoftmaxForward, .weight = 2,
         .passes = kSoftmaxPasses,
         .hint = "A row is 16-byte aligned only when cols % 4 == 0: load the elements before the first "
                 "16-byte boundary and after the last full float4 one by one.") {
  check_softmax_version(&softmax_forward, "softmax_forward");
}

WB_CHECK(Correctness, SoftmaxBackward, .weight = 2,
         .passes = "14 shapes, R = 0 to 1000, C = 1 to 8193",
         .hint = "Per row: s = sum over the row of dy * y (block reduction), then dx = y * (dy - s).") {
  WB_ASSERT(for_each_shape(kBackwardShapes, 100, [](Shape s, std::size_t first_kind, std::uint64_t seed) {
    return check_softmax_backward(softmax_backward_case(s.rows, s.cols, first_kind, seed));
  }));
}

// What passes, for LayerNormTwoPass, LayerNormForward, RMSNormForward.
constexpr char kNormForwardPasses[] = "the 16 shapes with rows uniform in [-8, 8), of mean 1e3 and standard "
                                      "deviation 1, constant, and uniform in [-100, 100); mean and rstd (rrms) "
                                      "checked before y";

WB_CHECK(Correctness, LayerNormTwoPass, .weight = 2,
         .passes = kNormForwardPasses,
         .hint = "mean = sum(x) / cols; var = sum((x - mean)^2) / cols (biased); rstd = rsqrtf(var + "
                 "eps); y = (x - mean) * rstd * gamma + beta; thread 0 stores mean[r] and rstd[r].") {
  check_norm_version([](const Matrix& m) { return check_layernorm(&layernorm_two_pass, "layernorm_two_pass", m); });
}

WB_CHECK(Correctness, LayerNormForward, .weight = 2,
         .passes = kNormForwardPasses,
         .hint = "Never E[x^2] - E[x]^2 in float: the mean first, then the mean of (x - mean)^2 over the "
                 "cached row, or Welford's algorithm.") {
  check_norm_version([](const Matrix& m) { return check_layernorm(&layernorm_forward, "layernorm_forward", m); });
}

// What passes, for LayerNormBackward, RMSNormBackward.
constexpr char kNormBackwardPasses[] = "dx, dgamma (and dbeta) on 14 shapes, R up to 1000 (more rows than blocks, at "
                                       "1000 x 12 and at 1000 x 7, rows that are not whole float4s), C = 4 (a row of "
                                       "one float4) among them";

WB_CHECK(Correctness, LayerNormBackward, .weight = 3,
         .passes = kNormBackwardPasses,
         .hint = "xhat = (x - mean) * rstd, g = dy * gamma; dx = rstd * (g - mean(g) - xhat * mean(g * "
                 "xhat)); dgamma and dbeta sum dy * xhat and dy over every row: per-block partial rows "
                 "in the workspace, summed by a second kernel.") {
  check_norm_backward_version(true);
}

WB_CHECK(Correctness, RMSNormForward, .weight = 2,
         .passes = kNormForwardPasses,
         .hint = "rrms = rsqrtf(sum(x^2) / cols + eps); y = x * rrms * gamma; store rrms[r].") {
  check_norm_version(&check_rmsnorm);
}

WB_CHECK(Correctness, RMSNormBackward, .weight = 2,
         .passes = kNormBackwardPasses,
         .hint = "The layer-norm backward with mean = 0 and without the mean(g) term: dx = rrms * (g - "
                 "xhat * mean(g * xhat)), xhat = x * rrms.") {
  check_norm_backward_version(false);
}

WB_CHECK(Correctness, Bf16Forward, .weight = 2,
         .passes = "both bf16 functions on 7 shapes",
         .hint = "Convert with __bfloat162float on load and __float2bfloat16 on store; keep max, sums "
                 "and statistics in float. 16 bytes are 8 bf16: rows are aligned only when cols % 8 == 0.") {
  // Case i: shape i / 2, softmax for even i and layer norm for odd i.
  WB_ASSERT(wb::check::run_cases(2 * kSmallShapes.size(), [](std::size_t i) {
    const std::size_t s = i / 2;
    const bool softmax = i % 2 == 0;
    const Matrix m = make_matrix(kSmallShapes[s].rows, kSmallShapes[s].cols, softmax ? kSoftmaxKinds : kNormKinds, s,
                                 400 + i);
    return softmax ? check_softmax_bf16(m) : check_layernorm_bf16(m);
  }));
}

WB_CHECK(Correctness, BackwardReproducible, .weight = 2,
         .passes = "the three backward passes, three runs each on 1000 x 100 and 300 x 1000: bitwise "
                   "equal",
         .hint = "Floating-point addition is not associative: with atomicAdd the order in which blocks add "
                 "their parts changes from run to run, and so does the rounding. Store each block's partial "
                 "sums in the workspace and add them in a second kernel in a fixed order.") {
  wb::check::Cases cases(6);
  std::uint64_t seed = 500;
  for (Shape shape : {Shape{1000, 100}, Shape{300, 1000}}) {
    const BackwardCase b = softmax_backward_case(shape.rows, shape.cols, 0, seed++);
    const std::string call = "softmax_backward(" + b.x.shape() + ")";
    WB_ASSERT(cases(wb::check::same_every_run<Grads>(
        call, [&](Grads& got, int) { return run_softmax_backward(b, got, call); }, kBackwardOutputs)));
    for (bool centered : {true, false}) {
      const NormBackwardCase n = norm_backward_case(shape.rows, shape.cols, centered, 0, seed++);
      const std::string call = std::string(norm_backward_name(centered)) + "(" + n.b.x.shape() + ")";
      WB_ASSERT(cases(wb::check::same_every_run<Grads>(
          call, [&](Grads& got, int) { return run_norm_backward(n, got, call); }, kBackwardOutputs,
          "The order of floating-point additions must not depend on timing: no atomicAdd for the sums over rows; "
          "per-block partial sums added in a fixed order.")));
    }
  }
}

#if defined(CUSIM)
namespace {

// The float forwards of the ladder, which the host-code and analysis checks run each.
const std::pair<SoftmaxFn, const char*> kSoftmaxVersions[] = {{&softmax_naive, "softmax_naive"},
                                                              {&softmax_block, "softmax_block"},
                                                              {&softmax_online, "softmax_online"},
                                                              {&softmax_forward, "softmax_forward"}};
const std::pair<LayerNormFn, const char*> kLayerNormVersions[] = {{&layernorm_two_pass, "layernorm_two_pass"},
                                                                  {&layernorm_forward, "layernorm_forward"}};

// ---- Host code (sim) ------------------------------------------------------------------------------------
//
// Fault injection (wb_host_checks.h) on two shapes: rows that fit a warp's registers with 16-byte rows,
// and long rows of an odd length (the solution's other kernels).

struct HostBuffers {
  int rows, cols;
  wb::DeviceBuffer<float> x, y, dy, dx, gamma, beta, mean, rstd, dgamma, dbeta, workspace;
  wb::DeviceBuffer<std::uint16_t> x16, y16, gamma16, beta16;
  HostBuffers(int r, int c, std::uint64_t seed)
      : rows(r), cols(c),
        x{std::span<const float>(wb::random_floats(std::size_t(r) * c, seed, -3.0f, 3.0f))},
        y{std::size_t(r) * c}, dy{std::span<const float>(wb::random_floats(std::size_t(r) * c, seed + 1, -1.0f, 1.0f))},
        dx{std::size_t(r) * c}, gamma{std::span<const float>(wb::random_floats(std::size_t(c), seed + 2, 0.5f, 1.5f))},
        beta{std::span<const float>(wb::random_floats(std::size_t(c), seed + 3, -0.5f, 0.5f))}, mean{std::size_t(r)},
        rstd{std::size_t(r)}, dgamma{std::size_t(c)}, dbeta{std::size_t(c)},
        workspace{norm_backward_workspace_floats(c)}, x16{std::size_t(r) * c}, y16{std::size_t(r) * c},
        gamma16{std::size_t(c)}, beta16{std::size_t(c)} {
    (void)x16.fill_bytes(0x3F);  // bf16 0x3F3F, about 0.75
    (void)gamma16.fill_bytes(0x3F);
    (void)beta16.fill_bytes(0);
  }
};

// Every function once on @p b, in the lab's order.
std::vector<wb::check::host::ErrorPathCase> host_cases(HostBuffers& b) {
  const std::string shape = "(rows=" + std::to_string(b.rows) + ", cols=" + std::to_string(b.cols) + ")";
  const int r = b.rows, c = b.cols;
  HostBuffers* p = &b;
  std::vector<wb::check::host::ErrorPathCase> cases;
  auto add = [&](const char* function, std::function<cudaError_t()> run) {
    cases.push_back({function + shape, function, std::move(run)});
  };
  for (const auto& [fn, name] : kSoftmaxVersions) {
    add(name, [p, r, c, fn = fn] { return fn(p->x.data(), p->y.data(), r, c); });
  }
  add("softmax_backward", [p, r, c] { return softmax_backward(p->y.data(), p->dy.data(), p->dx.data(), r, c); });
  for (const auto& [fn, name] : kLayerNormVersions) {
    add(name, [p, r, c, fn = fn] {
      return fn(p->x.data(), p->gamma.data(), p->beta.data(), p->y.data(), p->mean.data(), p->rstd.data(), r, c, kEps);
    });
  }
  // After layernorm_forward above: mean and rstd are its statistics.
  add("layernorm_backward", [p, r, c] {
    return layernorm_backward(p->dy.data(), p->x.data(), p->gamma.data(), p->mean.data(), p->rstd.data(), p->dx.data(),
                              p->dgamma.data(), p->dbeta.data(), r, c, p->workspace.data());
  });
  add("rmsnorm_forward",
      [p, r, c] { return rmsnorm_forward(p->x.data(), p->gamma.data(), p->y.data(), p->rstd.data(), r, c, kEps); });
  add("rmsnorm_backward", [p, r, c] {
    return rmsnorm_backward(p->dy.data(), p->x.data(), p->gamma.data(), p->rstd.data(), p->dx.data(), p->dgamma.data(),
                            r, c, p->workspace.data());
  });
  add("softmax_forward_bf16",
      [p, r, c] { return softmax_forward_bf16(device(p->x16.data()), device(p->y16.data()), r, c); });
  add("layernorm_forward_bf16", [p, r, c] {
    return layernorm_forward_bf16(device(p->x16.data()), device(p->gamma16.data()), device(p->beta16.data()),
                                  device(p->y16.data()), p->mean.data(), p->rstd.data(), r, c, kEps);
  });
  return cases;
}

}  // namespace

WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every function at 33 x 1000 and 5 x 9001: each kernel launch it makes is made to "
                   "fail in turn (cusim's fault injection); the function must return that error at "
                   "once (`cudaGetLastError()` after each launch, before the next), with no launch "
                   "after it",
         .hint = "Test cudaGetLastError() right after each launch and return its error before launching "
                 "the next kernel: if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;") {
  HostBuffers small(33, 1000, 960), wide(5, 9001, 970);
  std::vector<wb::check::host::ErrorPathCase> cases = host_cases(small);
  for (auto& c : host_cases(wide)) cases.push_back(std::move(c));
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}

// ---- Analysis (sim) ---------------------------------------------------------------------------------------

namespace {

// Runs every function on small shapes and fails on any report of @p tools.
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    std::uint64_t seed = 600;
    for (Shape s : {Shape{3, 1}, Shape{5, 33}, Shape{4, 100}, Shape{3, 1025}, Shape{2, 8193}}) {
      const Matrix logits = make_matrix(s.rows, s.cols, kSoftmaxKinds, 0, seed++);
      for (const auto& [fn, name] : kSoftmaxVersions) keep_first(check_softmax(fn, name, logits));
      keep_first(check_softmax_bf16(logits));
      keep_first(check_softmax_backward(softmax_backward_case(s.rows, s.cols, 0, seed++)));
      const Matrix x = make_matrix(s.rows, s.cols, kNormKinds, 0, seed++);
      for (const auto& [fn, name] : kLayerNormVersions) keep_first(check_layernorm(fn, name, x));
      keep_first(check_layernorm_bf16(x));
      keep_first(check_rmsnorm(x));
      for (bool centered : {true, false}) {
        keep_first(check_norm_backward(norm_backward_case(s.rows, s.cols, centered, 0, seed++)));
      }
    }
  });
}

}  // namespace

// What passes, for MemcheckClean, RacecheckClean.
constexpr char kAnalysisPasses[] = "no report, every function, C = 1, 33, 100, 1025, 8193";

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = kAnalysisPasses,
         .hint = "Test every index against cols (the last vector of a row) and rows; float4 loads only "
                 "where the four elements lie in the row.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = kAnalysisPasses,
         .hint = "A block reduction writes one value per warp to shared memory and reads them back: "
                 "__syncthreads() between the write and the read, and another before the shared array is "
                 "written again (the next reduction).") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}

WB_CHECK(Analysis, BackwardNoAtomics, .weight = 2, .backends = "sim",
         .passes = "layernorm_backward and rmsnorm_backward use no atomic operation",
         .hint = "Let each block store its partial dgamma (and dbeta) rows in the workspace, and a second "
                 "kernel add those rows in order: the same sums every run, with no atomics.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::string text;
  for (bool centered : {true, false}) {
    cusim::analysis::reset();
    WB_ASSERT_ANALYSIS_RUN(check_norm_backward(norm_backward_case(1000, 100, centered, 0, 700)), "atomic operations");
    WB_REQUIRE_ANALYSIS();
    std::uint64_t atomics = 0;
    for (const auto& m : cusim::analysis::metrics()) atomics += m.atomics;
    const char* function = norm_backward_name(centered);
    wb::check::append_measured(text, std::string(function) + ": " + std::to_string(atomics) + " atomics");
    if (atomics != 0) {
      FAIL() << function << "(rows=1000, cols=100): " << atomics
             << " atomic operations. Float atomics add in whatever order the blocks arrive, so the rounding, and the "
                "result's last bits, change from run to run on a GPU. Store per-block partial sums in the workspace "
                "and add them in a second kernel in a fixed order.";
    }
  }
#endif
}

// ---- Performance (sim): cusim analysis metrics, the traffic as requested by the kernels -----------------------

namespace {

using wb::check::Traffic;

// Metric shapes: rows of 2048 (aligned) and 1001 (not a multiple of 4: a head and a tail).
const std::vector<Shape> kMetricShapes = {{32, 2048}, {16, 1001}};

#if WB_HAVE_CUSIM_ANALYSIS
// The traffic of check_softmax(@p fn) on @p m, added to @p t.
testing::AssertionResult measure_softmax(SoftmaxFn fn, const char* function, const Matrix& m, Traffic& t) {
  return wb::check::measure([&] { return check_softmax(fn, function, m); }, t, function);
}
#endif

}  // namespace

WB_CHECK(Performance, BlockSoftmaxCoalesced, .weight = 2, .backends = "sim", .limits = {{"max_sectors", 4.0}},
         .passes = "version 2: loads and stores <= {max_sectors:.2f} sectors/request",
         .hint = "Let consecutive threads of a block take consecutive columns of the row (c = threadIdx.x; "
                 "c < cols; c += blockDim.x): a warp then reads 128 consecutive bytes, 4 sectors.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxSectors = WB_LIMIT("max_sectors");
  const Matrix m = make_matrix(32, 2048, {RowKind::Uniform}, 0, 800);
  Traffic naive, block;
  WB_ASSERT(measure_softmax(&softmax_naive, "softmax_naive", m, naive));
  WB_ASSERT(measure_softmax(&softmax_block, "softmax_block", m, block));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("loads " + fixed(block.loads()) + ", stores " + fixed(block.stores()) +
                             " sectors/request (softmax_naive: " + fixed(naive.loads()) + ", " +
                             fixed(naive.stores()) + ")");
  if (block.loads() > kMaxSectors || block.stores() > kMaxSectors) {
    FAIL() << "softmax_block: " << fixed(block.loads()) << " sectors per load request and " << fixed(block.stores())
           << " per store request (at most " << fixed(kMaxSectors)
           << " allowed). A warp's 32 consecutive floats are 4 sectors of 32 bytes; "
              "more means the lanes of a warp access elements far apart (one row per thread, or columns "
              "c = threadIdx.x * k + j). Stride the loop over the row by blockDim.x.";
  }
#endif
}

WB_CHECK(Performance, OnlineSoftmaxReadsTwice, .weight = 2, .backends = "sim", .limits = {{"max_reads", 2.05}},
         .passes = "version 3 reads at most {max_reads} x the input's bytes",
         .hint = "Keep a running maximum m and a running sum s; for a new value v > m, s = s * exp(m - v) + "
                 "1 and m = v, else s += exp(v - m). Combine two (m, s) pairs the same way. Then one more "
                 "pass writes y.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxReads = WB_LIMIT("max_reads");
  std::string text;
  for (Shape s : kMetricShapes) {
    const Matrix m = make_matrix(s.rows, s.cols, kSoftmaxKinds, 0, 801);
    Traffic block, online;
    WB_ASSERT(measure_softmax(&softmax_block, "softmax_block", m, block));
    WB_ASSERT(measure_softmax(&softmax_online, "softmax_online", m, online));
    WB_REQUIRE_ANALYSIS();
    const double bytes = 4.0 * static_cast<double>(m.size());
    const double reads = online.bytes_read / bytes;
    wb::check::append_measured(text, std::to_string(s.rows) + " x " + std::to_string(s.cols) + ": " + fixed(reads) +
                           " x 4RC (softmax_block " + fixed(block.bytes_read / bytes) + ")");
    if (reads > kMaxReads) {
      FAIL() << "softmax_online(rows=" << s.rows << ", cols=" << s.cols << ") read " << fixed(reads)
             << " x the input's bytes (at most " << wb::check::as_written(kMaxReads)
             << "): the maximum and the sum must come from one pass over x, then one more pass writes y.";
    }
  }
#endif
}

namespace {

#if WB_HAVE_CUSIM_ANALYSIS
// One final forward on the metric shapes: bytes read at most @p max_x_reads x 4RC + params x 4RC;
// sector efficiency of loads and stores at least @p min_sector_use where cols % 4 == 0, and for
// softmax (no parameter vectors: x and y share every row's alignment) on the rows that are not
// 16-byte aligned too, where 16-byte accesses need a scalar head up to the row's first 16-byte
// boundary.
void expect_read_once(const char* function, int params, double max_x_reads, double min_sector_use,
                      const std::function<testing::AssertionResult(const Matrix&)>& run,
                      const std::vector<RowKind>& kinds, std::string& text) {
  for (Shape s : kMetricShapes) {
    const Matrix m = make_matrix(s.rows, s.cols, kinds, 0, 802);
    Traffic t;
    WB_ASSERT(wb::check::measure([&] { return run(m); }, t, function));
    WB_REQUIRE_ANALYSIS();
    const double bytes = 4.0 * static_cast<double>(m.size());
    const double reads = t.bytes_read / bytes;
    const double limit = max_x_reads + params;
    wb::check::append_measured(text, std::string(function) + " " + std::to_string(s.rows) + " x " + std::to_string(s.cols) + ": " +
                           fixed(reads) + " x 4RC read, sectors " + fixed(100.0 * t.load_efficiency()) + "% / " +
                           fixed(100.0 * t.store_efficiency()) + "% used");
    if (reads > limit) {
      FAIL() << function << "(rows=" << s.rows << ", cols=" << s.cols << ") read " << fixed(reads)
             << " x 4RC bytes (at most " << fixed(limit)
             << (params ? ": x once, and each parameter vector once per row" : ": x once")
             << "). Keep the row in shared memory (or registers) after the first read and compute everything "
                "from there.";
    }
    // Sector use is required where rows are 16-byte aligned; in rows that are not, the
    // parameters (gamma, beta) have another alignment than x and may be read one float at a time.
    const bool aligned_rows = s.cols % 4 == 0;
    if (!aligned_rows && params > 0) continue;
    for (auto [name, efficiency] :
         {std::pair{"loads", t.load_efficiency()}, std::pair{"stores", t.store_efficiency()}}) {
      if (efficiency < min_sector_use) {
        FAIL() << function << "(rows=" << s.rows << ", cols=" << s.cols << "): its " << name << " use only "
               << fixed(100.0 * efficiency) << "% of the bytes of the 32-byte sectors they touch (at least "
               << fixed(100.0 * min_sector_use) << "%). "
               << (aligned_rows
                       ? "Consecutive threads must access consecutive 16-byte chunks (float4) or consecutive floats."
                       : "cols = " + std::to_string(s.cols) +
                             " is not a multiple of 4, so most rows do not start on a 16-byte boundary. Where a "
                             "row's chunks of 4 are not 16-byte aligned, each thread's 4 single-float accesses leave "
                             "3/4 of every sector unused: find the row's first 16-byte boundary (its address % 16), "
                             "take the elements before it one by one, then float4s from there.");
      }
    }
  }
}
#endif

}  // namespace

WB_CHECK(Performance, SoftmaxReadsOnce, .weight = 3, .backends = "sim",
         .limits = {{"max_x_reads", 1.05}, {"min_sector_use", 0.90}},
         .passes = "`softmax_forward` reads at most {max_x_reads} x the input's bytes (32 x 2048 and 16 x "
                   "1001), and at least {min_sector_use:.0%} of the bytes of every 32-byte sector it touches "
                   "are ones it asked for, on aligned rows (32 x 2048) and on rows that are not (16 x 1001)",
         .hint = "Load the row once, 16 bytes at a time, into shared memory (cols floats) while keeping an "
                 "online (max, sum); after the block's reduction, write y from shared memory.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxXReads = WB_LIMIT("max_x_reads");
  constexpr double kMinSectorUse = WB_LIMIT("min_sector_use");
  std::string text;
  expect_read_once("softmax_forward", 0, kMaxXReads, kMinSectorUse,
                   [](const Matrix& m) { return check_softmax(&softmax_forward, "softmax_forward", m); }, kSoftmaxKinds,
                   text);
#endif
}

WB_CHECK(Performance, LayerNormReadsOnce, .weight = 3, .backends = "sim",
         .limits = {{"max_x_reads", 1.05}, {"min_sector_use", 0.90}},
         .passes = "`layernorm_forward` reads at most ({max_x_reads} + 2) x the input's bytes (x once, "
                   "gamma and beta once per row) and `rmsnorm_forward` ({max_x_reads} + 1) x (x and "
                   "gamma), at 32 x 2048 and 16 x 1001; at least {min_sector_use:.0%} of the bytes of every "
                   "32-byte sector they touch are ones they asked for, on the aligned rows (32 x 2048)",
         .hint = "Load the row once into shared memory; compute the mean, then the variance of (x - mean), "
                 "from there (or use Welford's algorithm while loading); then write y.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxXReads = WB_LIMIT("max_x_reads");
  constexpr double kMinSectorUse = WB_LIMIT("min_sector_use");
  std::string text;
  expect_read_once("layernorm_forward", 2, kMaxXReads, kMinSectorUse,
                   [](const Matrix& m) { return check_layernorm(&layernorm_forward, "layernorm_forward", m); },
                   kNormKinds, text);
  expect_read_once("rmsnorm_forward", 1, kMaxXReads, kMinSectorUse, &check_rmsnorm, kNormKinds, text);
#endif
}
#else
// ---- Performance (cuda): bytes read and written per second against a device-to-device copy --------------------
// Every timed function is validated before timing and after it, the timed runs each given changed inputs
// (wb_timed.h): the timing data are uniform rows, compared with the references of the correctness checks.

namespace {

using wb::check::failure_text;
using wb::check::verified_bandwidth_ratio;

std::string shape_name(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

const std::vector<RowKind> kTimedRows = {RowKind::Uniform};

// "" when @p got is the softmax of the rows of @p m, else why not.
std::string softmax_matches(const Matrix& m, const std::vector<float>& got) {
  const Expected ref = softmax_reference(m);
  return failure_text(compare_matrix("the output", "y", ref, got, m.cols, [&](std::size_t i) {
    return softmax_diagnosis(m, i, got, ref, "softmax_forward");
  }));
}

// "" when @p got (dx) is softmax_backward of @p b, else why not.
std::string softmax_backward_matches(const BackwardCase& b, const std::vector<float>& got) {
  return failure_text(compare_matrix("the output", "dx", softmax_backward_reference(b), got, b.x.cols,
                                     [&](std::size_t i) { return row_note(b.x, i, "softmax_backward"); }));
}

}  // namespace

WB_CHECK(Performance, SoftmaxBandwidth, .weight = 6, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.85}},
         .passes = "`softmax_forward` moves bytes (read + written) at >= {min_ratio} x the bandwidth of a "
                   "device-to-device copy timed in the same run, at 4096 x 4096 and 32768 x 1024",
         .hint = "One block per row with 16-byte loads, the row cached on chip, enough blocks per "
                 "multiprocessor; close other GPU programs.") {
  constexpr double kMin = WB_LIMIT("min_ratio");
  // Correct first: a wrong kernel's speed means nothing.
  WB_ASSERT(check_softmax(&softmax_forward, "softmax_forward", make_matrix(64, 4096, kSoftmaxKinds, 0, 900)));
  std::string text;
  try {
    for (Shape s : {Shape{4096, 4096}, Shape{32768, 1024}}) {
      Matrix m = make_matrix(s.rows, s.cols, kTimedRows, 0, 901);
      wb::DeviceBuffer<float> x{std::span<const float>(m.v)}, y(m.size());
      wb::check::ChangingInput<float> changing(m.v, x.data());
      double ratio = 0.0;
      WB_ASSERT(verified_bandwidth_ratio(
          "softmax_forward " + shape_name(s.rows, s.cols), 8.0 * m.size(),
          [&] { return softmax_forward(x.data(), y.data(), s.rows, s.cols); }, [&] { changing.change(); },
          [&] { return softmax_matches(m, y.download()); }, text, ratio));
      EXPECT_GE(ratio, kMin) << "softmax_forward(" << shape_name(s.rows, s.cols) << ") reached " << ratio
                             << " x the copy bandwidth; it needs " << wb::check::as_written(kMin)
                             << ". Read each row once with 16-byte loads, keep it on chip, and write y once.";
    }
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing softmax_forward: " << e.what();
  }
}

WB_CHECK(Performance, LayerNormBandwidth, .weight = 6, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.85}},
         .passes = "`layernorm_forward` >= {min_ratio} x copy at 32768 x 768 and 16384 x 4096",
         .hint = "As for softmax: read x once, 16 bytes at a time; gamma and beta as float4 too.") {
  constexpr double kMin = WB_LIMIT("min_ratio");
  WB_ASSERT(check_layernorm(&layernorm_forward, "layernorm_forward", make_matrix(64, 4096, kNormKinds, 0, 910)));
  std::string text;
  try {
    for (Shape s : {Shape{32768, 768}, Shape{16384, 4096}}) {
      Matrix m = make_matrix(s.rows, s.cols, kTimedRows, 0, 911);
      const NormParams p = norm_params(s.cols, 911);
      wb::DeviceBuffer<float> x{std::span<const float>(m.v)}, y(m.size());
      wb::DeviceBuffer<float> gamma{std::span<const float>(p.gamma)}, beta{std::span<const float>(p.beta)},
          mean(s.rows), rstd(s.rows);
      wb::check::ChangingInput<float> changing(m.v, x.data());
      const auto verify = [&]() -> std::string {
        const NormRef ref = norm_reference(m, p.gamma, p.beta, true);
        if (auto r = compare_stats("the output", "mean", ref.mean, mean.download(), m); !r) return r.message();
        if (auto r = compare_stats("the output", "rstd", ref.rstd, rstd.download(), m); !r) return r.message();
        const std::vector<float> got = y.download();
        return failure_text(compare_matrix("the output", "y", ref.y, got, m.cols, [&](std::size_t i) {
          return norm_diagnosis(m, i, got[i], "layernorm_forward");
        }));
      };
      const double bytes = 8.0 * m.size() + 8.0 * s.cols + 8.0 * s.rows;
      double ratio = 0.0;
      WB_ASSERT(verified_bandwidth_ratio(
          "layernorm_forward " + shape_name(s.rows, s.cols), bytes,
          [&] {
            return layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), s.rows,
                                     s.cols, kEps);
          },
          [&] { changing.change(); }, verify, text, ratio));
      EXPECT_GE(ratio, kMin) << "layernorm_forward(" << shape_name(s.rows, s.cols) << ") reached " << ratio
                             << " x the copy bandwidth; it needs " << wb::check::as_written(kMin)
                             << ". Read each row once with 16-byte loads, keep it on chip for the statistics, and "
                                "write y once.";
    }
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing layernorm_forward: " << e.what();
  }
}

WB_CHECK(Performance, BackwardBandwidth, .weight = 4, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.70}},
         .passes = "`softmax_backward` at 4096 x 4096 and `layernorm_backward` at 16384 x 4096 >= "
                   "{min_ratio:.2f} x copy",
         .hint = "Read each input row once (keep it in registers between the reduction and the dx pass); "
                 "accumulate dgamma/dbeta partials in registers over the rows of a block.") {
  constexpr double kMin = WB_LIMIT("min_ratio");
  WB_ASSERT(check_softmax_backward(softmax_backward_case(64, 4096, 0, 920)));
  WB_ASSERT(check_norm_backward(norm_backward_case(600, 4096, true, 0, 921)));
  std::string text;
  try {
    {
      constexpr int rows = 4096, cols = 4096;
      BackwardCase b = softmax_backward_case(rows, cols, 0, 922, kTimedRows);
      wb::DeviceBuffer<float> y{std::span<const float>(b.x.v)}, dy{std::span<const float>(b.dy)}, dx(b.x.size());
      wb::check::ChangingInput<float> changing(b.dy, dy.data());
      double ratio = 0.0;
      WB_ASSERT(verified_bandwidth_ratio(
          "softmax_backward " + shape_name(rows, cols), 12.0 * b.x.size(),
          [&] { return softmax_backward(y.data(), dy.data(), dx.data(), rows, cols); }, [&] { changing.change(); },
          [&] { return softmax_backward_matches(b, dx.download()); }, text, ratio));
      EXPECT_GE(ratio, kMin) << "softmax_backward reached " << wb::check::fixed(ratio)
                             << " x the copy bandwidth; it needs " << wb::check::as_written(kMin) << ".";
    }
    {
      constexpr int rows = 16384, cols = 4096;
      NormBackwardCase n = norm_backward_case(rows, cols, true, 0, 924, kTimedRows);
      const Matrix& m = n.b.x;
      wb::DeviceBuffer<float> x{std::span<const float>(m.v)}, dy{std::span<const float>(n.b.dy)}, dx(m.size());
      wb::DeviceBuffer<float> gamma{std::span<const float>(n.gamma)}, mean{std::span<const float>(n.mean)},
          rstd{std::span<const float>(n.rstd)}, dgamma(cols), dbeta(cols),
          workspace(norm_backward_workspace_floats(cols));
      wb::check::ChangingInput<float> changing(n.b.dy, dy.data());
      const auto verify = [&]() -> std::string {
        const NormGrads ref = norm_backward_reference(n);
        const std::vector<float> got_dgamma = dgamma.download(), got_dbeta = dbeta.download();
        if (auto r = compare_matrix("the output", "dgamma", ref.dgamma, got_dgamma, cols,
                                    [&](std::size_t i) { return column_note(rows, got_dgamma[i]); });
            !r) {
          return r.message();
        }
        if (auto r = compare_matrix("the output", "dbeta", ref.dbeta, got_dbeta, cols,
                                    [&](std::size_t i) { return column_note(rows, got_dbeta[i]); });
            !r) {
          return r.message();
        }
        return failure_text(compare_matrix("the output", "dx", ref.dx, dx.download(), cols,
                                           [&](std::size_t i) { return row_note(m, i, "backward"); }));
      };
      double ratio = 0.0;
      WB_ASSERT(verified_bandwidth_ratio(
          "layernorm_backward " + shape_name(rows, cols), 12.0 * m.size(),
          [&] {
            return layernorm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(),
                                      dgamma.data(), dbeta.data(), rows, cols, workspace.data());
          },
          [&] { changing.change(); }, verify, text, ratio));
      EXPECT_GE(ratio, kMin) << "layernorm_backward reached " << wb::check::fixed(ratio)
                             << " x the copy bandwidth; it needs " << wb::check::as_written(kMin)
                             << ". Read x and dy once per row, keep the parameter-gradient partial sums in registers "
                                "across the rows of a block, and add the blocks' partial rows in a second, small "
                                "kernel.";
    }
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing the backward passes: " << e.what();
  }
}
#endif
