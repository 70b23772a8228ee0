// bench_kernels' lab 08 group (attention_bench.h): attention_forward_bf16's candidates.
//
// Validation, by the rule of lab 08's forward checks (checker/labs/08-attention/check_attention.cpp,
// error_of()): O and L are compared with an fp64 host reference on the same bf16 inputs; the largest
// error may be twice that of a plain host computation in fp32 with P and O rounded to bf16 (as tensor
// cores take them), plus 1e-5 x the tensor's largest value. L = -infinity (a row that sees no key)
// must match exactly, and O starts as 0xFFFF (NaN), so an element never written fails. The inputs
// follow the check's: uniform Q, K along a common direction, and among the rows spiky ones (one key
// dominates), very negative ones (every score near -300) and dominant ones (one key about 150 above
// the rest, in the last 16 of a 64-key tile). The reference solution is validated the same way.
//
// Timing, as Performance.TensorCoreForward: B=4, H=16, T=4096, D=128, not causal, 4 B H T^2 D FLOPs,
// median of 5 runs after 1 warm-up, against cuBLAS's bf16 GEMM of 4096^3 measured in the same round.
#include "attention_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "attention.h"
#include "attention_candidates.h"
#include "wb/wb.h"

#if !defined(CUSIM) && defined(WB_BENCH_CUBLAS)
#include "attention_baselines.h"
#endif

namespace attention_bench {
namespace {

using bf16 = __nv_bfloat16;

struct Candidate {
  std::string name;
  std::function<cudaError_t(const bf16*, const bf16*, const bf16*, bf16*, float*, AttentionShape)> run;
};

std::vector<Candidate> candidate_list() {
  using candidates::attention_forward_mma;
  using candidates::FlashConfig;
  auto mma = [](FlashConfig c) {
    return [c](const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, AttentionShape s) {
      return attention_forward_mma(q, k, v, o, lse, s, c);
    };
  };
  return {
      {"attention_forward_bf16 (reference)", attention_forward_bf16},
      {"mma.sync 4 warps x 16 rows, 64 keys", mma({4, 1, 64})},
      {"mma.sync 8 warps x 16 rows, 64 keys", mma({8, 1, 64})},
      {"mma.sync 4 warps x 32 rows, 64 keys", mma({4, 2, 64})},
      {"mma.sync 4 warps x 32 rows, 32 keys", mma({4, 2, 32})},
  };
}

// ---- bf16 on the host ------------------------------------------------------------------------------------

std::uint16_t to_bf16(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return 0x7FC0;
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float x = 0.0f;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

float round_bf16(float x) { return from_bf16(to_bf16(x)); }

// ---- inputs and references -------------------------------------------------------------------------------

std::string shape_text(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " Tq=" + std::to_string(s.tq) +
         " Tk=" + std::to_string(s.tk) + " D=" + std::to_string(s.d) + (s.causal ? " causal" : "");
}

// Keys query i sees: [0, end).
int visible_end(const AttentionShape& s, int i) {
  return s.causal ? std::clamp(i + (s.tk - s.tq) + 1, 0, s.tk) : s.tk;
}

struct Data {
  AttentionShape s{};
  std::vector<float> q, k, v;  // bf16 values
};

// As the check's make_data(): Q uniform in [-2, 2), K = 2 + noise (a common direction), V in [-1, 1);
// every seventh row from the fourth on spiky (x 8), from the sixth on very negative, from the seventh
// on dominant (one visible key, preferably in the last 16 of a 64-key tile, far above the others).
Data make_data(const AttentionShape& s, std::uint64_t seed) {
  Data d;
  d.s = s;
  d.q = wb::random_floats(attention_q_elements(s), seed * 31 + 1, -2.0f, 2.0f);
  d.k = wb::random_floats(attention_kv_elements(s), seed * 31 + 2, -2.0f, 2.0f);
  d.v = wb::random_floats(attention_kv_elements(s), seed * 31 + 3, -1.0f, 1.0f);
  for (float& x : d.k) x = 0.5f * x + 2.0f;
  for (std::size_t row = 0; row < attention_rows(s); ++row) {
    const int end = visible_end(s, static_cast<int>(row % s.tq));
    float* qr = d.q.data() + row * s.d;
    if (row % 7 == 6 && end > 0) {
      int j = end - 1;
      while (j >= 0 && j % 64 < 48) --j;
      if (j < 0) j = end - 1;
      const float* kj = d.k.data() + (row / s.tq * s.tk + j) * s.d;
      const float c = 1800.0f / std::sqrt(static_cast<float>(s.d));
      for (int x = 0; x < s.d; ++x) qr[x] = c * (kj[x] - 2.0f);
    } else if (row % 7 == 3) {
      for (int x = 0; x < s.d; ++x) qr[x] *= 8.0f;
    } else if (row % 7 == 5) {
      const float c = 150.0f / std::sqrt(static_cast<float>(s.d));
      for (int x = 0; x < s.d; ++x) qr[x] = -c * (1.0f + 0.05f * qr[x]);
    }
  }
  for (auto* vec : {&d.q, &d.k, &d.v})
    for (float& x : *vec) x = round_bf16(x);
  return d;
}

struct Forward {
  std::vector<double> o, lse;
};

// One row in T: double (exact), or float with P and O rounded to bf16 (what a plain bf16 kernel does).
template <class T>
double attention_row(const Data& d, std::size_t bh, const float* q, int end, double* o) {
  const AttentionShape& s = d.s;
  constexpr bool kFloat = std::is_same_v<T, float>;
  auto rounded = [](T x) -> T {
    if constexpr (kFloat) return round_bf16(x);
    return x;
  };
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(s.d)));
  std::vector<T> score(end), acc(s.d, T(0));
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < end; ++j) {
    const float* kr = d.k.data() + (bh * s.tk + j) * s.d;
    T dot = 0;
    for (int c = 0; c < s.d; ++c) dot = std::fma(static_cast<T>(q[c]), static_cast<T>(kr[c]), dot);
    score[j] = dot * scale;
    m = std::max(m, score[j]);
  }
  T l = 0;
  for (int j = 0; j < end; ++j) {
    const T p = std::exp(score[j] - m);
    l += p;
    const T pv = rounded(p);
    const float* vr = d.v.data() + (bh * s.tk + j) * s.d;
    for (int c = 0; c < s.d; ++c) acc[c] = std::fma(pv, static_cast<T>(vr[c]), acc[c]);
  }
  for (int c = 0; c < s.d; ++c) o[c] = rounded(acc[c] / l);
  return m + std::log(l);
}

// Every row is independent: on a GPU machine the rows of the long shapes are spread over up to 16
// threads (each row computed by one thread, so the result does not depend on their number).
Forward reference(const Data& d, bool same_precision) {
  const AttentionShape& s = d.s;
  Forward f;
  f.o.assign(attention_q_elements(s), 0.0);
  f.lse.assign(attention_rows(s), -std::numeric_limits<double>::infinity());
  const std::size_t rows = attention_rows(s);
  auto work = [&](std::size_t first, std::size_t step) {
    for (std::size_t row = first; row < rows; row += step) {
      const int end = visible_end(s, static_cast<int>(row % s.tq));
      if (end == 0) continue;
      const float* q = d.q.data() + row * s.d;
      double* o = f.o.data() + row * s.d;
      f.lse[row] = same_precision ? attention_row<float>(d, row / s.tq, q, end, o)
                                  : attention_row<double>(d, row / s.tq, q, end, o);
    }
  };
  const std::size_t threads = rows < 512 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t, threads);
  work(0, threads);
  for (std::thread& t : pool) t.join();
  return f;
}

struct Worst {
  std::size_t index = 0;
  double error = 0.0;
};

// The largest |got - ref|; a non-finite reference must be matched exactly, NaN is infinitely wrong.
template <class T>
Worst worst_error(const std::vector<T>& got, const std::vector<double>& ref) {
  Worst w;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    double err = std::isfinite(ref[i]) ? std::fabs(g - ref[i]) : (g == ref[i] ? 0.0 : HUGE_VAL);
    if (std::isnan(err)) err = HUGE_VAL;
    if (err > w.error) w = {i, err};
  }
  return w;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return m;
}

// "" when got is within the check's allowance for one tensor, else what is wrong; @p used becomes
// the largest of itself and the error's share of the allowance.
std::string judge(const char* name, const std::vector<float>& got, const std::vector<double>& exact,
                  const std::vector<double>& same, int width, double& used) {
  const double allowed = 2.0 * worst_error(same, exact).error + 1e-5 * std::max(1.0, max_abs(exact));
  const Worst w = worst_error(got, exact);
  used = std::max(used, w.error / allowed);
  if (w.error <= allowed) return "";
  char where[64], text[256];
  if (width == 1) std::snprintf(where, sizeof where, "row %zu", w.index);
  else std::snprintf(where, sizeof where, "row %zu, c %zu", w.index / width, w.index % width);
  std::snprintf(text, sizeof text, "%s[%s] = %.6g instead of %.6g (error %.3g, allowed %.3g)", name, where,
                static_cast<double>(got[w.index]), exact[w.index], w.error, allowed);
  return text;
}

// Runs every candidate on one shape; "" when all are right, else one line per wrong one. used[i]: the
// largest share of the allowance candidate i has needed so far.
std::string validate(const AttentionShape& s, const std::vector<Candidate>& list, std::uint64_t seed,
                     std::vector<double>& used) {
  const Data d = make_data(s, seed);
  const Forward exact = reference(d, false), same = reference(d, true);
  auto encode = [](const std::vector<float>& x) {
    std::vector<std::uint16_t> bits(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) bits[i] = to_bf16(x[i]);
    return bits;
  };
  const std::vector<std::uint16_t> qb = encode(d.q), kb = encode(d.k), vb = encode(d.v);
  wb::DeviceBuffer<std::uint16_t> q{std::span<const std::uint16_t>(qb)}, k{std::span<const std::uint16_t>(kb)},
      v{std::span<const std::uint16_t>(vb)}, o(qb.size(), 64);
  wb::DeviceBuffer<float> lse(attention_rows(s), 64);
  auto p = [](std::uint16_t* x) { return reinterpret_cast<bf16*>(x); };
  std::string wrong;
  for (std::size_t ci = 0; ci < list.size(); ++ci) {
    const Candidate& c = list[ci];
    o.fill_bytes(0xFF);  // NaN: an element nobody writes is wrong
    lse.fill_bytes(0xFF);
    cudaError_t e = c.run(p(q.data()), p(k.data()), p(v.data()), p(o.data()), lse.data(), s);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      wrong += "  " + c.name + ", " + shape_text(s) + ": " + cudaGetErrorName(e) + "\n";
      continue;
    }
    const std::vector<std::uint16_t> ob = o.download();
    std::vector<float> got(ob.size());
    for (std::size_t i = 0; i < ob.size(); ++i) got[i] = from_bf16(ob[i]);
    std::string why = judge("lse", lse.download(), exact.lse, same.lse, 1, used[ci]);
    if (why.empty()) why = judge("o", got, exact.o, same.o, s.d, used[ci]);
    if (why.empty() && (!o.check_guards().intact() || !lse.check_guards().intact())) why = "wrote outside o or lse";
    if (!why.empty()) wrong += "  " + c.name + ", " + shape_text(s) + ": " + why + "\n";
  }
  return wrong;
}

// ---- timing ----------------------------------------------------------------------------------------------

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void time_candidates(const std::vector<Candidate>& list, const Options& options) {
#if defined(CUSIM) || !defined(WB_BENCH_CUBLAS)
  (void)list;
  (void)options;
  std::printf("lab 08: not timed (this build has no cuBLAS baseline)\n");
#else
  const AttentionShape s{4, 16, 4096, 4096, 128, 0};  // Performance.TensorCoreForward
  const double flops = 4.0 * s.batch * s.heads * static_cast<double>(s.tq) * s.tk * s.d;
  std::vector<std::uint16_t> host(attention_q_elements(s));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = to_bf16(static_cast<float>((i * 7919) % 97) / 97.0f - 0.5f);
  wb::DeviceBuffer<std::uint16_t> q{std::span<const std::uint16_t>(host)}, k{std::span<const std::uint16_t>(host)},
      v{std::span<const std::uint16_t>(host)}, o(host.size());
  wb::DeviceBuffer<float> lse(attention_rows(s));
  auto p = [](std::uint16_t* x) { return reinterpret_cast<bf16*>(x); };
  std::vector<std::vector<double>> ratios(list.size()), ms(list.size());
  std::vector<double> ceilings;
  for (int round = 0; round < options.rounds; ++round) {
    const double ceiling = cublas_bf16_gemm_tflops(4096);  // this round's baseline
    ceilings.push_back(ceiling);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const wb::Timing t = wb::time_median(
          [&] { WB_CUDA_CHECK(list[i].run(p(q.data()), p(k.data()), p(v.data()), p(o.data()), lse.data(), s)); },
          {.warmup = 1, .repetitions = 5});
      ms[i].push_back(t.median_ms);
      ratios[i].push_back(flops / (t.median_ms * 1e-3) / 1e12 / ceiling);
    }
  }
  std::printf("\n# lab 08 attention_forward_bf16, B=4 H=16 T=4096 D=128 not causal; cuBLAS bf16 GEMM 4096^3 %.0f "
              "TFLOP/s (median of %d rounds); the check needs 0.25 x the GEMM (0.275 with the 10%% margin)\n",
              median(ceilings), options.rounds);
  std::printf("%-40s %10s %10s %8s %14s\n", "candidate", "time (ms)", "TFLOP/s", "x GEMM", "rounds low-high");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const double r = median(ratios[i]), t = median(ms[i]);
    const double lo = *std::min_element(ratios[i].begin(), ratios[i].end());
    const double hi = *std::max_element(ratios[i].begin(), ratios[i].end());
    std::printf("%-40s %10.3f %10.1f %8.3f %7.3f-%.3f\n", list[i].name.c_str(), t, flops / (t * 1e9), r, lo, hi);
  }
#endif
}

}  // namespace

int run(const Options& options) {
  std::vector<Candidate> list = candidate_list();
  if (options.with_known_wrong) {
    list.push_back({"known wrong: skips the last key",
                    [](const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, AttentionShape s) {
                      s.tk = s.tk > 1 ? s.tk - 1 : s.tk;
                      return attention_forward_bf16(q, k, v, o, lse, s);
                    }});
  }
  // Ragged lengths around the 16-row, 32- and 64-key tiles, every D, causal with Tq = Tk, Tq < Tk
  // and Tq > Tk (rows that see no key). Small: on sim the tensor-core code runs slowly.
  std::vector<AttentionShape> shapes = {
      {1, 1, 70, 70, 64, 0},   {1, 2, 1, 1, 32, 0},     {2, 1, 17, 17, 64, 1},   {1, 2, 31, 31, 128, 0},
      {1, 1, 113, 113, 128, 1}, {1, 1, 203, 203, 32, 1}, {1, 1, 17, 113, 64, 1}, {1, 1, 113, 17, 32, 1},
      {1, 1, 33, 203, 128, 0}, {1, 1, 130, 130, 64, 0}, {1, 1, 520, 40, 32, 1}};
#if !defined(CUSIM)
  shapes.push_back({1, 2, 1024, 1024, 128, 0});  // the check's own precondition before timing
  shapes.push_back({1, 2, 1023, 1023, 128, 1});
#endif
  std::string wrong;
  std::uint64_t seed = 800;
  std::vector<double> used(list.size(), 0.0);
  for (const AttentionShape& s : shapes) wrong += validate(s, list, seed++, used);
  if (!wrong.empty()) {
    std::printf("lab 08 candidates that are wrong (nothing of lab 08 is timed):\n%s", wrong.c_str());
    return 1;
  }
#if defined(CUSIM)
  const char* longest = "";
#else
  const char* longest = ", 1023 and 1024";
#endif
  std::printf("lab 08: every candidate is correct (attention_forward_bf16 within the check's tolerance, D = 32 .. "
              "128, T = 1 .. 520%s)\n",
              longest);
  for (std::size_t i = 0; i < list.size(); ++i)
    std::printf("  %-40s largest error %.3f x the allowed\n", list[i].name.c_str(), used[i]);
  if (!options.validate_only) time_candidates(list, options);
  return 0;
}

}  // namespace attention_bench
