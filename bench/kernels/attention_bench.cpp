// bench_kernels' lab 08 group (attention_bench.h): attention_forward_bf16's candidates.
//
// Validation, by lab 08's forward checks' own inputs, reference and rule (make_data(), reference() and
// error_of() of checker/labs/08-attention/attention_reference.h): O and L are compared with an fp64 host reference on the same bf16 inputs; the largest
// error may be twice that of a plain host computation in fp32 with P and O rounded to bf16 (as tensor
// cores take them), plus 1e-5 x the tensor's largest value. L = -infinity (a row that sees no key)
// must match exactly, and O starts as 0xFFFF (NaN), so an element never written fails. The inputs
// are the check's: uniform Q, K along a common direction, and among the rows spiky ones (one key
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
#include "attention_reference.h"
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

// ---- inputs and references: lab 08's checks' own (checker/labs/08-attention/attention_reference.h) -------

using lab08::Precision;

std::string shape_text(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " Tq=" + std::to_string(s.tq) +
         " Tk=" + std::to_string(s.tk) + " D=" + std::to_string(s.d) + (s.causal ? " causal" : "");
}

// "" when got is within the check's allowance for one tensor (lab08::error_of), else what is wrong;
// @p used becomes the largest of itself and the error's share of the allowance.
std::string judge(const char* name, const std::vector<float>& got, const std::vector<double>& exact,
                  const std::vector<double>& same, int width, double& used) {
  const lab08::Error e = lab08::error_of(got, exact, same, Precision::Bf16);
  const lab08::Worst& w = e.worst;
  used = std::max(used, w.error / e.allowed);
  if (e.within()) return "";
  char where[64], text[256];
  if (width == 1) std::snprintf(where, sizeof where, "row %zu", w.index);
  else std::snprintf(where, sizeof where, "row %zu, c %zu", w.index / width, w.index % width);
  std::snprintf(text, sizeof text, "%s[%s] = %.6g instead of %.6g (error %.3g, allowed %.3g)", name, where,
                static_cast<double>(got[w.index]), exact[w.index], w.error, e.allowed);
  return text;
}

// Runs every candidate on one shape; "" when all are right, else one line per wrong one. used[i]: the
// largest share of the allowance candidate i has needed so far.
std::string validate(const AttentionShape& s, const std::vector<Candidate>& list, std::uint64_t seed,
                     std::vector<double>& used) {
  const lab08::Data d = lab08::make_data(s, Precision::Bf16, seed);
  const lab08::Forward exact = lab08::reference(d), same = lab08::reference(d, lab08::Variant::Exact, true);
  const std::vector<std::uint16_t> qb = lab08::encode(Precision::Bf16, d.q), kb = lab08::encode(Precision::Bf16, d.k),
                                   vb = lab08::encode(Precision::Bf16, d.v);
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
    const std::vector<float> got = lab08::decode(Precision::Bf16, o.download());
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
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i] = wb::check::to_bf16(static_cast<float>((i * 7919) % 97) / 97.0f - 0.5f);
  }
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
