/// @file
/// @brief Lab 08's host reference, shared by its checks (check_attention.cpp) and the candidate
/// benchmark (bench/kernels/attention_bench.cpp): 16-bit formats on the host, the checks' inputs,
/// attention in double or in a kernel's own precision, and the allowance a result is judged by.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "attention.h"
#include "wb/random.h"
#include "wb_float16.h"

namespace lab08 {

using wb::check::from_bf16;
using wb::check::from_fp16;
using wb::check::to_bf16;
using wb::check::to_fp16;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- 16-bit formats on the host ------------------------------------------------------------------------

enum class Precision { Fp32, Bf16, Fp16 };

inline const char* precision_name(Precision p) {
  return p == Precision::Fp32 ? "fp32" : p == Precision::Bf16 ? "bf16" : "fp16";
}

inline float round_to(Precision p, float x) {
  if (p == Precision::Bf16) return from_bf16(to_bf16(x));
  if (p == Precision::Fp16) return from_fp16(to_fp16(x));
  return x;
}

inline std::vector<std::uint16_t> encode(Precision p, const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = p == Precision::Bf16 ? to_bf16(v[i]) : to_fp16(v[i]);
  return out;
}

inline std::vector<float> decode(Precision p, const std::vector<std::uint16_t>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = p == Precision::Bf16 ? from_bf16(v[i]) : from_fp16(v[i]);
  return out;
}

// ---- inputs ---------------------------------------------------------------------------------------------

// The kinds of query rows (make_data()), as a failure message describes the row of the largest error.
enum class RowKind { Plain, Spiky, VeryNegative, Dominant };
const char* const kRowKindText[] = {
    "plain (Q, K uniform in [-2, 2))", "spiky (the Q row multiplied by 8: one key dominates)",
    "very negative (every score near -300)",
    "dominant (one visible key, preferably in the last 16 of a 64-key tile, scores about 150 above every other: "
    "exp of the scores minus a maximum that misses it overflows)"};

struct Data {
  AttentionShape s{};
  Precision precision = Precision::Fp32;
  std::uint64_t seed = 0;
  std::vector<float> q, k, v;  // the values the kernel sees (16-bit inputs already rounded)
  std::vector<RowKind> kinds;  // per query row (b, h, i)
};

// Q uniform in [-2, 2), V in [-1, 1). Query rows are plain, but every seventh from the fourth on is spiky,
// from the sixth on very negative (exp underflows unless the row maximum is subtracted) and from the seventh
// on dominant (where it sees a key). K rows share a common direction u (plus noise), so a query row -c u has
// every score very negative while plain rows stay unaffected.
inline Data make_data(const AttentionShape& s, Precision p, std::uint64_t seed) {
  Data d;
  d.s = s;
  d.precision = p;
  d.seed = seed;
  d.q = wb::random_floats(attention_q_elements(s), seed * 31 + 1, -2.0f, 2.0f);
  d.k = wb::random_floats(attention_kv_elements(s), seed * 31 + 2, -2.0f, 2.0f);
  d.v = wb::random_floats(attention_kv_elements(s), seed * 31 + 3, -1.0f, 1.0f);
  for (std::size_t e = 0; e < d.k.size(); ++e) d.k[e] = 0.5f * d.k[e] + 2.0f;  // u = (1, ..., 1): k in [1, 3)
  for (std::size_t row = 0; row < attention_rows(s); ++row) {
    RowKind kind = row % 7 == 3 ? RowKind::Spiky : row % 7 == 5 ? RowKind::VeryNegative : RowKind::Plain;
    // The keys query i sees: [0, end) (the causal mask aligned to the bottom right).
    const int i = static_cast<int>(row % s.tq);
    const int end = s.causal ? std::clamp(i + (s.tk - s.tq) + 1, 0, s.tk) : s.tk;
    if (row % 7 == 6 && end > 0) kind = RowKind::Dominant;
    d.kinds.push_back(kind);
    float* qr = d.q.data() + row * s.d;
    if (kind == RowKind::Dominant) {
      // q = c (k_j - u) for one key j: score_j - score_l = c (|k_j - u|^2 - (k_j - u).(k_l - u)) / sqrt(D),
      // about c sqrt(D) / 12 (the deviations are uniform in [-0.5, 0.5)): c = 1800 / sqrt(D) puts key j
      // about 150 above the rest, past the 88.7 where exp overflows float. Key j is the last visible
      // key in the last 16 of a 64-key tile where there is one (a kernel that takes a tile's maximum
      // over fragments of 16 keys must not miss it), else the last visible key.
      int j = end - 1;
      while (j >= 0 && j % 64 < 48) --j;
      if (j < 0) j = end - 1;
      const float* kj = d.k.data() + (row / s.tq * s.tk + j) * s.d;
      const float c = 1800.0f / std::sqrt(static_cast<float>(s.d));
      for (int x = 0; x < s.d; ++x) qr[x] = c * (kj[x] - 2.0f);
    } else if (kind == RowKind::Spiky) {
      for (int c = 0; c < s.d; ++c) qr[c] *= 8.0f;
    } else if (kind == RowKind::VeryNegative) {
      // score = q.k / sqrt(D) with q = -c (1 + noise) and k ~ 2: about -2 c sqrt(D) = -300, where
      // exp() underflows to 0 in float.
      const float c = 150.0f / std::sqrt(static_cast<float>(s.d));
      for (int x = 0; x < s.d; ++x) qr[x] = -c * (1.0f + 0.05f * qr[x]);
    }
  }
  if (p != Precision::Fp32) {
    for (auto* vec : {&d.q, &d.k, &d.v})
      for (float& x : *vec) x = round_to(p, x);
  }
  return d;
}

// ---- references ------------------------------------------------------------------------------------------

// The mistakes a wrong result is compared with, and what the message says of each (kVariantText[v]).
enum class Variant { Exact, MaskIncludesNextKey, MaskExcludesDiagonal, MaskTopLeft, NoMask, ScaleTwice, NoScale };
const char* const kVariantText[] = {
    "",
    "the causal mask off by one: query i also sees key i + (Tk - Tq) + 1 (use j <= i + Tk - Tq, not <)",
    "the causal mask off by one: query i does not see key i + (Tk - Tq), its own position (the mask is "
    "j <= i + Tk - Tq)",
    "the causal mask aligned to the top left (j <= i): with Tq != Tk it must be aligned to the bottom right, "
    "j <= i + (Tk - Tq)",
    "no causal mask at all",
    "the scale 1/sqrt(D) applied twice",
    "no scale: S = Q K^T without the 1/sqrt(D)"};

// Keys query i may see under variant v: [0, end).
inline int visible_end(const AttentionShape& s, int i, Variant v) {
  if (!s.causal || v == Variant::NoMask) return s.tk;
  int end = i + (s.tk - s.tq) + 1;
  if (v == Variant::MaskIncludesNextKey) ++end;
  if (v == Variant::MaskExcludesDiagonal) --end;
  if (v == Variant::MaskTopLeft) end = i + 1;
  return std::clamp(end, 0, s.tk);
}

struct Forward {
  std::vector<double> o, lse;
};

// Runs body(i) for every i in [0, n), spread over the machine's cores (the host references of the
// long sequences cost minutes on one core). Each index is computed by one thread, in the same
// order as serially, so the results do not depend on the thread count. Where threads cannot be
// started (a process limit), the rest runs on this thread.
inline void parallel_for(int n, const std::function<void(int)>& body) {
  const int threads = std::min<int>(n, std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> pool;
  auto worker = [&](int t) {
    for (int i = t; i < n; i += threads) body(i);
  };
  int started = 0;
  for (; started < threads - 1; ++started) {
    try {
      pool.emplace_back(worker, started + 1);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker(0);
  for (std::thread& t : pool) t.join();
  for (int t = started + 1; t < threads; ++t) worker(t);  // the workers that could not start
}

// One query row of attention over keys [0, end) of head bh, in T: double, or float as the kernel
// computes (dot products by fma; for 16-bit inputs P and O rounded to 16 bits, as the tensor cores take
// them). Writes the row of O and returns its L.
template <class T>
double attention_row(const Data& d, std::size_t bh, const float* q, int end, double scale, double* o) {
  const AttentionShape& s = d.s;
  constexpr bool kFloat = std::is_same_v<T, float>;
  auto mul_add = [](T a, T b, T acc) -> T {
    if constexpr (kFloat) return std::fma(a, b, acc);
    return acc + a * b;
  };
  auto kernel_rounded = [&](T x) -> T {
    if constexpr (kFloat) return round_to(d.precision, x);
    return x;
  };
  std::vector<T> score(end), acc(s.d, T(0));
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < end; ++j) {
    const float* k = d.k.data() + (bh * s.tk + j) * s.d;
    T dot = 0;
    for (int c = 0; c < s.d; ++c) dot = mul_add(q[c], k[c], dot);
    score[j] = dot * static_cast<T>(scale);
    m = std::max(m, score[j]);
  }
  T l = 0;
  for (int j = 0; j < end; ++j) {
    const T p = std::exp(score[j] - m);
    l += p;
    const T pv = kernel_rounded(p);
    const float* vr = d.v.data() + (bh * s.tk + j) * s.d;
    for (int c = 0; c < s.d; ++c) acc[c] = mul_add(pv, vr[c], acc[c]);
  }
  for (int c = 0; c < s.d; ++c) o[c] = kernel_rounded(acc[c] / l);
  return m + std::log(l);
}

// Attention in double, or in the kernel's precision (attention_row<float>), under variant v.
inline Forward reference(const Data& d, Variant v = Variant::Exact, bool same_precision = false) {
  const AttentionShape& s = d.s;
  Forward f;
  f.o.assign(attention_q_elements(s), 0.0);
  f.lse.assign(attention_rows(s), -kInf);
  double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  if (v == Variant::ScaleTwice) scale *= scale;
  if (v == Variant::NoScale) scale = 1.0;
  // Every row is independent: the rows run in parallel.
  parallel_for(s.batch * s.heads * s.tq, [&](int row_index) {
    const std::size_t bh = row_index / s.tq, row = row_index;
    const int end = visible_end(s, row_index % s.tq, v);
    if (end == 0) return;
    const float* q = d.q.data() + row * s.d;
    double* o = f.o.data() + row * s.d;
    f.lse[row] = same_precision ? attention_row<float>(d, bh, q, end, scale, o)
                                : attention_row<double>(d, bh, q, end, scale, o);
  });
  return f;
}

// ---- judging ---------------------------------------------------------------------------------------------

inline double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

struct Worst {
  std::size_t index = 0;
  double error = 0.0;
};

// The largest |got - ref| and where it is. A non-finite reference (L = -inf) must be matched
// exactly; NaN (so every element never written) counts as infinitely wrong.
template <class T>
Worst worst_error(const std::vector<T>& got, const std::vector<double>& ref) {
  Worst w{0, -1.0};
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    double err = std::isfinite(ref[i]) ? std::fabs(g - ref[i]) : (g == ref[i] ? 0.0 : kInf);
    if (std::isnan(err)) err = kInf;
    if (err > w.error) w = {i, err};
  }
  if (w.error < 0.0) w.error = 0.0;
  return w;
}

// How far an output tensor is from its exact reference, and what it is allowed. The allowance follows
// the FlashAttention tests: twice the largest error of a plain host computation in the kernel's own
// precision (`same`: fp32 scores, softmax and sums; for the 16-bit versions P and O also rounded to 16
// bits, as tensor cores take them), plus a floor of 2e-5 (fp32) or 1e-5 (16-bit) times the tensor's
// largest reference value. So a bf16 kernel is judged against what bf16 can do, and an fp32 kernel
// against fp32.
struct Error {
  Worst worst;
  double allowed = 0.0, ref_error = 0.0;
  bool within() const { return worst.error <= allowed; }
};

inline Error error_of(const std::vector<float>& got, const std::vector<double>& exact,
                      const std::vector<double>& same, Precision p) {
  const double floor = (p == Precision::Fp32 ? 2e-5 : 1e-5) * std::max(1.0, max_abs(exact));
  const double e = worst_error(same, exact).error;
  return {worst_error(got, exact), 2.0 * e + floor, e};
}

}  // namespace lab08
