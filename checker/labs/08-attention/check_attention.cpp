// Checks for lab 08 (attention: unfused, fused fp32, fused on tensor cores, fused backward). Every output
// is compared with a double-precision reference computed on the host from the same inputs (16-bit inputs
// rounded first), within twice the error of a plain host computation in the kernel's own precision
// (error_of()); a wrong result is compared with attention under the usual mistakes, and the message names
// the one it matches (compare()). Outputs start as 0xFF bytes and carry guard zones; inputs are surrounded
// by NaN. What each check requires is its WB_CHECK's .passes text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "attention.h"
#include "attention_reference.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_float16.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

#if !defined(CUSIM) && defined(WB_HAVE_CUDA_BASELINES)
#include "attention_baselines.h"
#include "wb_baseline.h"
#endif

namespace {

using namespace lab08;  // the host reference (attention_reference.h)
using wb::check::fixed;

using wb::check::after_call;
using wb::check::from_bf16;
using wb::check::from_fp16;
using wb::check::Input;
using wb::check::never_written;
using wb::check::Output;
using wb::check::to_bf16;
using wb::check::to_fp16;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string number(double v) { return wb::check::significant(v, 8); }

// ---- cases ---------------------------------------------------------------------------------------------

std::string shape_text(const AttentionShape& s) {
  return "B=" + std::to_string(s.batch) + ", H=" + std::to_string(s.heads) + ", Tq=" + std::to_string(s.tq) +
         ", Tk=" + std::to_string(s.tk) + ", D=" + std::to_string(s.d) + ", causal=" + std::to_string(s.causal);
}

struct Case {
  AttentionShape s;
  bool gpu_only = false;  // too slow on the CPU
};

// Lengths 1, 17, 31, 32, 33, 113, 128, 203, 1023, 1024 and 4096 (GPU); every D; causal and not;
// Tq < Tk and Tq > Tk (rows that see no key).
const std::vector<Case> kCases = {
    {{1, 2, 1, 1, 32, 0}},        {{1, 2, 1, 1, 64, 1}},       {{2, 1, 17, 17, 64, 1}},
    {{1, 2, 31, 31, 128, 0}},     {{1, 1, 32, 32, 32, 1}},     {{1, 2, 33, 33, 64, 0}},
    {{1, 1, 113, 113, 128, 1}},   {{1, 1, 128, 128, 64, 0}},   {{1, 1, 203, 203, 32, 1}},
    {{1, 1, 203, 203, 128, 0}},   {{1, 1, 17, 113, 64, 1}},    {{1, 1, 113, 17, 32, 1}},
    {{1, 1, 33, 203, 128, 0}},    {{1, 1, 1023, 1023, 32, 1}}, {{1, 1, 1024, 1024, 32, 0}},
    {{1, 2, 1023, 1023, 128, 1}, true}, {{1, 2, 1024, 1024, 64, 0}, true}, {{2, 2, 4096, 4096, 64, 1}, true},
    {{1, 2, 4096, 4096, 128, 0}, true}};

#if defined(CUSIM)
constexpr bool kOnGpu = false;
#else
constexpr bool kOnGpu = true;
#endif

// ---- comparing -------------------------------------------------------------------------------------------

// O of a 16-bit version as floats; an element never written (0xFFFF) reads as a float never written.
std::vector<float> read_16bit(Precision p, const std::vector<std::uint16_t>& bits) {
  std::vector<float> out = decode(p, bits);
  for (std::size_t i = 0; i < bits.size(); ++i)
    if (bits[i] == 0xFFFF) std::memset(&out[i], 0xFF, sizeof(float));
  return out;
}

// "b=0, h=1, i=3, c=5": where element `index` of a tensor of `rows` rows (`row_name`) per head and `width`
// columns lies.
std::string position(const AttentionShape& s, std::size_t index, int width, int rows, const char* row_name) {
  const std::size_t row = index / width;
  const std::size_t bh = row / rows, i = row % rows;
  std::string text = "b=" + std::to_string(bh / s.heads) + ", h=" + std::to_string(bh % s.heads) + ", " +
                     row_name + "=" + std::to_string(i);
  if (width > 1) text += ", c=" + std::to_string(index % width);
  return text;
}

// "<call>: <name> is wrong; the largest error is at <name>[<where>]: got ..., expected ... (allowed ...)."
testing::AssertionResult largest_error_failure(const std::string& call, const char* name, const std::string& where,
                                               const std::vector<float>& got, const std::vector<double>& ref,
                                               const Error& e, Precision p) {
  const std::size_t worst = e.worst.index;
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << name << " is wrong; the largest error is at " << name << "[" << where
          << "]: got " << wb::check::shown_value(got[worst]) << ", expected " << number(ref[worst]);
  if (std::isfinite(ref[worst]))
    failure << " (allowed error " << number(e.allowed) << ": twice the " << number(e.ref_error) << " of a plain "
            << precision_name(p) << " host computation, plus a floor)";
  return failure << ".";
}

// The verdict on one output tensor of the forward (O, or L when is_lse), with what the row of its largest
// error tells of the cause.
testing::AssertionResult compare(const std::string& call, const char* name, const Data& d,
                                 const std::vector<float>& got, const Forward& exact, const Forward& same,
                                 bool is_lse) {
  const std::vector<double>& ref = is_lse ? exact.lse : exact.o;
  const Error e = error_of(got, ref, is_lse ? same.lse : same.o, d.precision);
  if (e.within()) return testing::AssertionSuccess();
  const std::size_t worst = e.worst.index;
  const int width = is_lse ? 1 : d.s.d;
  testing::AssertionResult failure =
      largest_error_failure(call, name, position(d.s, worst, width, d.s.tq, "i"), got, ref, e, d.precision);
  const std::size_t row = worst / width;
  failure << " That row is " << kRowKindText[static_cast<int>(d.kinds[row])] << ".";
  const int i = static_cast<int>(row % d.s.tq);
  if (visible_end(d.s, i, Variant::Exact) == 0)
    failure << " Query " << i << " sees no key (causal with Tq > Tk: it would see keys j <= i + (Tk - Tq) < 0): its "
            << (is_lse ? "L must be -infinity" : "O must be 0") << ", as FlashAttention gives.";
  if (never_written(got[worst])) return failure;
  if (std::isnan(got[worst])) {
    if (d.kinds[row] == RowKind::VeryNegative)
      failure << " NaN on a row whose scores are all near -300: exp(-300) is 0 in float, so the sum is 0 and 0/0 "
                 "is NaN unless the row's running maximum is subtracted before exp.";
    else
      failure << " NaN: the checker surrounds Q, K and V with NaN, so a row past Tq or Tk may have been read. Fill "
                 "the rows of the last tile that lie past the end with zeros instead of loading them.";
  }
  if (is_lse && std::isfinite(got[worst])) {
    // A running sum that is not rescaled when the maximum grows keeps terms exp(s - m_old) > exp(s - m):
    // every wrong L comes out too large.
    const auto wrong_but_not_larger = [&](std::size_t j) {
      return std::isfinite(ref[j]) && std::fabs(got[j] - ref[j]) > e.allowed && !(got[j] > ref[j]);
    };
    if (wb::check::find_mismatches(got.size(), wrong_but_not_larger).none())
      failure << " Every wrong L is too large: is the running sum rescaled, l = l * exp(m_old - m_new) + rowsum, "
                 "when a tile raises the row's maximum (and the output accumulator with it)?";
  }
  // Which usual mistake does the output match?
  for (Variant v : {Variant::MaskIncludesNextKey, Variant::MaskExcludesDiagonal, Variant::MaskTopLeft, Variant::NoMask,
                    Variant::ScaleTwice, Variant::NoScale}) {
    if (!d.s.causal && (v != Variant::ScaleTwice && v != Variant::NoScale)) continue;
    const Forward alt = reference(d, v);
    const std::vector<double>& alt_ref = is_lse ? alt.lse : alt.o;
    if (alt_ref == ref) continue;
    if (worst_error(got, alt_ref).error <= e.allowed) {
      failure << " The output matches attention with " << kVariantText[static_cast<int>(v)] << ".";
      break;
    }
  }
  return failure;
}

// ---- running the lab's functions ---------------------------------------------------------------------------

struct ForwardResult {
  std::vector<float> o, lse;
};

// Runs one forward version, whose elements are E (float, __nv_bfloat16 or __half), on d's inputs with E's NaN
// around them, and reads O and L back: @p launch is called as the lab's attention_forward*() functions are.
template <class E, class Launch>
testing::AssertionResult run_forward(const Data& d, const std::string& call, const char* function, Launch&& launch,
                                     ForwardResult& out) {
  constexpr bool kFp32 = std::is_same_v<E, float>;
  using T = std::conditional_t<kFp32, float, std::uint16_t>;  // E on the host: the bits of a 16-bit type
  auto input = [&](const std::vector<float>& values) {
    if constexpr (kFp32) return values;
    else return encode(d.precision, values);
  };
  T nan{};
  if constexpr (kFp32) nan = kNaN;
  else nan = d.precision == Precision::Bf16 ? 0x7FC0 : 0x7E00;
  Input<T> q(input(d.q), "q", nan), k(input(d.k), "k", nan), v(input(d.v), "v", nan);
  Output<T> o(attention_q_elements(d.s), "o");
  Output<float> lse(attention_rows(d.s), "lse");
  auto dev = [](T* x) { return reinterpret_cast<E*>(x); };
  if (auto r = after_call(launch(dev(q.dev.data()), dev(k.dev.data()), dev(v.dev.data()), dev(o.dev.data()),
                                 lse.dev.data(), d.s),
                          call, function,
                          {[&] { return o.in_bounds(call); }, [&] { return lse.in_bounds(call); },
                           [&] { return q.unchanged(call); }, [&] { return k.unchanged(call); },
                           [&] { return v.unchanged(call); }});
      !r)
    return r;
  if constexpr (kFp32) out.o = o.dev.download();
  else out.o = read_16bit(d.precision, o.dev.download());
  out.lse = lse.dev.download();
  return testing::AssertionSuccess();
}

testing::AssertionResult run_unfused(const Data& d, const std::string& call, ForwardResult& out) {
  Output<float> ws(attention_unfused_workspace_floats(d.s), "workspace");
  const auto unfused = [&](const float* q, const float* k, const float* v, float* o, float* lse, AttentionShape s) {
    return attention_unfused(q, k, v, o, lse, s, ws.dev.data());
  };
  testing::AssertionResult r = run_forward<float>(d, call, "attention_unfused", unfused, out);
  const std::string text = r ? std::string() : std::string(r.message());
  if (text.find("cudaErrorMisalignedAddress") != std::string::npos || text.find("Misaligned") != std::string::npos) {
    const long long tt = static_cast<long long>(d.s.tq) * d.s.tk;
    r << "\nattention_unfused passes pointers into its workspace to lab 06's softmax_forward(), which is promised "
         "16-byte-aligned pointers (softmax_layernorm.h) and may load 16 bytes from its first element.";
    if (tt % 4 != 0) {
      r << " Here Tq * Tk = " << tt << " is not a multiple of 4, so probs = scores + Tq * Tk starts off a 16-byte "
           "boundary.";
    }
    r << " Take scores, probs and kt from unfused_workspace(workspace, shape) (attention.h): each starts 16-byte "
         "aligned.";
  }
  return r;
}

enum class Version { Unfused, Fused, Bf16, Fp16 };
const char* const kVersionNames[] = {"attention_unfused", "attention_forward", "attention_forward_bf16",
                                     "attention_forward_fp16"};

const char* version_name(Version v) { return kVersionNames[static_cast<int>(v)]; }

Precision version_precision(Version v) {
  return v == Version::Bf16 ? Precision::Bf16 : v == Version::Fp16 ? Precision::Fp16 : Precision::Fp32;
}

testing::AssertionResult run_version(Version v, const Data& d, const std::string& call, ForwardResult& out) {
  switch (v) {
    case Version::Unfused: return run_unfused(d, call, out);
    case Version::Fused: return run_forward<float>(d, call, version_name(v), attention_forward, out);
    case Version::Bf16: return run_forward<__nv_bfloat16>(d, call, version_name(v), attention_forward_bf16, out);
    case Version::Fp16: return run_forward<__half>(d, call, version_name(v), attention_forward_fp16, out);
  }
  return testing::AssertionFailure() << "unknown version";
}

testing::AssertionResult check_forward(Version v, const Data& d) {
  const std::string call = std::string(version_name(v)) + "(" + shape_text(d.s) + ") [seed " +
                           std::to_string(d.seed) + "]";
  return wb::check::guarded(call, [&] {
    ForwardResult got;
    if (auto r = run_version(v, d, call, got); !r) return r;
    const Forward exact = reference(d), same = reference(d, Variant::Exact, true);
    if (auto r = compare(call, "lse", d, got.lse, exact, same, true); !r) return r;
    return compare(call, "o", d, got.o, exact, same, false);
  });
}

// Every case of kCases that runs on this backend and passes `keep`.
template <class Keep>
std::vector<AttentionShape> cases(Keep keep) {
  std::vector<AttentionShape> out;
  for (const Case& c : kCases)
    if ((!c.gpu_only || kOnGpu) && keep(c.s)) out.push_back(c.s);
  return out;
}

testing::AssertionResult check_version(Version v, const std::vector<AttentionShape>& shapes, std::uint64_t seed) {
  return wb::check::run_cases(shapes.size(), [&](std::size_t i) {
    return check_forward(v, make_data(shapes[i], version_precision(v), seed + i));
  });
}


// ---- backward ------------------------------------------------------------------------------------------------

struct Grads {
  std::vector<double> dq, dk, dv;
};

// Gradients from O and L as the forward gives them (exact values rounded to float, which the kernel
// receives), in double or in float.
Grads backward_reference(const Data& d, const std::vector<float>& o, const std::vector<float>& lse,
                         const std::vector<float>& dout, bool single) {
  const AttentionShape& s = d.s;
  Grads g;
  g.dq.assign(attention_q_elements(s), 0.0);
  g.dk.assign(attention_kv_elements(s), 0.0);
  g.dv.assign(attention_kv_elements(s), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  auto r = [&](double x) { return single ? static_cast<double>(static_cast<float>(x)) : x; };
  // A (batch, head) pair owns its rows of dq, dk and dv: the pairs run in parallel.
  parallel_for(s.batch * s.heads, [&](int bh) {
    for (int i = 0; i < s.tq; ++i) {
      const std::size_t row = static_cast<std::size_t>(bh) * s.tq + i;
      const int end = visible_end(s, i, Variant::Exact);
      if (end == 0) continue;
      const float* q = d.q.data() + row * s.d;
      const float* dor = dout.data() + row * s.d;
      double delta = 0.0;
      for (int c = 0; c < s.d; ++c) delta = r(delta + static_cast<double>(dor[c]) * o[row * s.d + c]);
      for (int j = 0; j < end; ++j) {
        const std::size_t krow = static_cast<std::size_t>(bh) * s.tk + j;
        const float* k = d.k.data() + krow * s.d;
        const float* v = d.v.data() + krow * s.d;
        double dot = 0.0, dp = 0.0;
        for (int c = 0; c < s.d; ++c) {
          dot = r(dot + static_cast<double>(q[c]) * k[c]);
          dp = r(dp + static_cast<double>(dor[c]) * v[c]);
        }
        const double p = r(std::exp(r(dot * scale) - lse[row]));
        const double ds = r(p * (dp - delta));
        for (int c = 0; c < s.d; ++c) {
          g.dv[krow * s.d + c] = r(g.dv[krow * s.d + c] + p * dor[c]);
          g.dq[row * s.d + c] = r(g.dq[row * s.d + c] + r(ds * scale) * k[c]);
          g.dk[krow * s.d + c] = r(g.dk[krow * s.d + c] + r(ds * scale) * q[c]);
        }
      }
    }
  });
  return g;
}

struct BackwardCase {
  Data d;
  std::vector<float> o, lse, dout;
};

BackwardCase backward_case(const AttentionShape& s, std::uint64_t seed) {
  BackwardCase b;
  b.d = make_data(s, Precision::Fp32, seed);
  const Forward f = reference(b.d);
  b.o.assign(f.o.begin(), f.o.end());
  b.lse.assign(f.lse.begin(), f.lse.end());
  b.dout = wb::random_floats(attention_q_elements(s), seed * 31 + 4, -1.0f, 1.0f);
  return b;
}

struct GradsGot {
  std::vector<float> dq, dk, dv;
};

testing::AssertionResult run_backward(const BackwardCase& b, const std::string& call, GradsGot& out) {
  const AttentionShape& s = b.d.s;
  Input<float> q(b.d.q, "q", kNaN), k(b.d.k, "k", kNaN), v(b.d.v, "v", kNaN), o(b.o, "o", kNaN),
      dout(b.dout, "dout", kNaN), lse(b.lse, "lse", kNaN);
  Output<float> dq(attention_q_elements(s), "dq"), dk(attention_kv_elements(s), "dk"),
      dv(attention_kv_elements(s), "dv"), ws(attention_backward_workspace_floats(s), "workspace");
  if (auto r = after_call(attention_backward(q.dev.data(), k.dev.data(), v.dev.data(), o.dev.data(), dout.dev.data(),
                                             lse.dev.data(), dq.dev.data(), dk.dev.data(), dv.dev.data(), s,
                                             ws.dev.data()),
                          call, "attention_backward",
                          {[&] { return dq.in_bounds(call); }, [&] { return dk.in_bounds(call); },
                           [&] { return dv.in_bounds(call); }, [&] { return ws.in_bounds(call); },
                           [&] { return q.unchanged(call); }, [&] { return k.unchanged(call); },
                           [&] { return v.unchanged(call); }, [&] { return o.unchanged(call); },
                           [&] { return dout.unchanged(call); }, [&] { return lse.unchanged(call); }});
      !r)
    return r;
  out.dq = dq.dev.download();
  out.dk = dk.dev.download();
  out.dv = dv.dev.download();
  return testing::AssertionSuccess();
}

// The rows of dK or dV (@p got) left exactly 0 though queries see their keys (the loop over the query tiles
// of a key tile missed those queries), explained; "" when there are none.
std::string missed_key_rows(const AttentionShape& s, const char* name, const std::vector<float>& got,
                            const std::vector<double>& exact, double allowed) {
  const int d = s.d;
  const wb::check::Mismatches zero = wb::check::find_mismatches(got.size() / d, [&](std::size_t kr) {
    bool got_zero = true, want_zero = true;
    for (int c = 0; c < d; ++c) {
      got_zero = got_zero && got[kr * d + c] == 0.0f;
      want_zero = want_zero && std::fabs(exact[kr * d + c]) <= allowed;
    }
    return got_zero && !want_zero;
  });
  if (zero.none()) return "";
  const int first_zero = static_cast<int>(zero.first % s.tk);
  std::ostringstream out;
  out << " " << zero.count << " key rows of " << name << " are exactly 0 though queries see those keys (the "
      << "first: j=" << first_zero << ")";
  if (s.causal && s.tq != s.tk) {
    const int first_query = std::max(0, first_zero - (s.tk - s.tq));
    out << ". The causal mask is aligned to the bottom right: query i sees key j when j <= i + (Tk - Tq), "
        << "so key j=" << first_zero << " is seen from query i=" << first_query << " on (Tq=" << s.tq
        << ", Tk=" << s.tk << "), not from i = j as when Tq == Tk. Start each key tile's loop over query "
        << "tiles at the tile of query max(0, j0 - (Tk - Tq)), j0 the tile's first key.";
  } else {
    out << ": the loop over query tiles of a key tile must visit every query that sees one of its keys.";
  }
  return out.str();
}

testing::AssertionResult check_backward(const BackwardCase& b) {
  const AttentionShape& s = b.d.s;
  const std::string call = "attention_backward(" + shape_text(s) + ") [seed " + std::to_string(b.d.seed) + "]";
  return wb::check::guarded(call, [&] {
    GradsGot got;
    if (auto r = run_backward(b, call, got); !r) return r;
    const Grads exact = backward_reference(b.d, b.o, b.lse, b.dout, false);
    const Grads single = backward_reference(b.d, b.o, b.lse, b.dout, true);
    for (auto [name, g, e, sp, is_q] : {std::tuple{"dq", &got.dq, &exact.dq, &single.dq, true},
                                        std::tuple{"dk", &got.dk, &exact.dk, &single.dk, false},
                                        std::tuple{"dv", &got.dv, &exact.dv, &single.dv, false}}) {
      const Error error = error_of(*g, *e, *sp, Precision::Fp32);
      if (error.within()) continue;
      const std::string where = position(s, error.worst.index, s.d, is_q ? s.tq : s.tk, is_q ? "i" : "j");
      testing::AssertionResult failure = largest_error_failure(call, name, where, *g, *e, error, Precision::Fp32);
      if (const std::string missed = is_q ? "" : missed_key_rows(s, name, *g, *e, error.allowed);
          !missed.empty()) {
        wb::check::record_hint(
            "Per key tile, visit every query tile that has a query seeing one of the tile's keys: with the causal "
            "mask aligned to the bottom right, from query max(0, j0 - (Tk - Tq)) to Tq - 1.");
        return failure << missed;
      }
      return failure << " Recompute P = exp(S - L) from the saved logsumexp L (not a fresh softmax of the tile); "
                        "Delta = rowsum(dO * O); dS = P * (dP - Delta); dQ = scale dS K, dK = scale dS^T Q, dV = "
                        "P^T dO"
                     << (s.causal ? "; masked entries have P = 0 and dS = 0." : ".");
    }
    return testing::AssertionSuccess();
  });
}

// Backward shapes: the host reference is O(Tq Tk D) per head in double and float.
std::vector<AttentionShape> backward_shapes() {
  std::vector<AttentionShape> out = {{1, 2, 1, 1, 32, 0}, {2, 1, 17, 17, 64, 1}, {1, 1, 33, 33, 128, 0},
                                     {1, 1, 113, 113, 32, 1}, {1, 1, 17, 113, 64, 1}, {1, 1, 113, 17, 64, 1},
                                     {1, 1, 203, 203, 64, 0}};
  if (kOnGpu) out.insert(out.end(), {{1, 2, 1023, 1023, 128, 1}, {1, 1, 1024, 1024, 64, 0}});
  return out;
}

}  // namespace

// ---- Correctness -------------------------------------------------------------------------------------------

WB_CHECK(Correctness, Unfused, .weight = 2,
         .passes = "attention_unfused: max |error| of O and L <= 2 x that of a plain fp32 host "
                   "computation + floor (a row that sees no key: O = 0, L = -inf exactly); lengths 1 "
                   ".. 203 (4096 on a GPU), D 32, 64, 128, causal and not, Tq < Tk and Tq > Tk; plain, "
                   "spiky, very negative and dominant rows",
         .hint = "Per (b, h): transpose K into the workspace, S = sgemm(Tq, Tk, D, scale, Q, K^T), mask S "
                 "(-INFINITY where j > i + Tk - Tq) and store L = m + log(sum exp(S - m)) per row, P = "
                 "softmax_forward(S), O = sgemm(Tq, D, Tk, 1, P, V).") {
  // The unfused version moves Tq x Tk scores: keep it to the shorter lengths on the CPU.
  const auto short_on_cpu = [](const AttentionShape& s) { return kOnGpu || s.tq * s.tk <= 1 << 16; };
  WB_ASSERT(check_version(Version::Unfused, cases(short_on_cpu), 100));
}

WB_CHECK(Correctness, FusedForward, .weight = 3,
         .passes = "attention_forward, not causal: max |error| of O and L <= 2 x that of a plain fp32 "
                   "host computation + floor; lengths 1 .. 1024 (4096 on a GPU), D 32, 64, 128, Tq < "
                   "Tk; plain, spiky, very negative and dominant rows",
         .hint = "Per tile of keys: S = Q_tile K_tile^T * scale; m_new = max(m, rowmax(S)); P = exp(S - "
                 "m_new); l = l * exp(m - m_new) + rowsum(P); O = O * exp(m - m_new) + P V. At the end O /= "
                 "l and L = m + log(l). Zero-fill K and V rows past Tk and mask those scores.") {
  WB_ASSERT(check_version(Version::Fused, cases([](const AttentionShape& s) { return !s.causal; }), 200));
}

WB_CHECK(Correctness, FusedCausal, .weight = 3,
         .passes = "attention_forward, causal: max |error| of O and L <= 2 x that of a plain fp32 host "
                   "computation + floor (a row that sees no key: O = 0, L = -inf exactly); lengths 1 .. "
                   "1023 (4096 on a GPU), D 32, 64, 128, Tq < Tk and Tq > Tk; plain, spiky, very "
                   "negative and dominant rows",
         .hint = "Query i sees key j when j <= i + (Tk - Tq). Stop the key loop after the last key the "
                 "tile's last row sees; mask only tiles that straddle the diagonal. A row that sees no key "
                 "keeps m = -inf: write O = 0 and L = -INFINITY, and never compute exp(-inf - (-inf)).") {
  WB_ASSERT(check_version(Version::Fused, cases([](const AttentionShape& s) { return s.causal != 0; }), 300));
}

WB_CHECK(Correctness, TensorCoreBf16, .weight = 3,
         .passes = "attention_forward_bf16: max |error| of O and L <= 2 x that of a plain host "
                   "computation in bf16 (fp32 arithmetic, P and O rounded to bf16) + floor; lengths 1 "
                   ".. 1024 (4096 on a GPU), D 32, 64, 128, causal and not, Tq < Tk and Tq > Tk; plain, "
                   "spiky, very negative and dominant rows",
         .hint = "wmma::load_matrix_sync needs 32-byte aligned tile pointers and a leading dimension that "
                 "is a multiple of 8 halves; K stored [key][d] is K^T in column-major order (matrix_b, "
                 "col_major). Keep the running max and sum in fp32; round P to bf16 only for the P V "
                 "product.") {
  WB_ASSERT(check_version(Version::Bf16, cases([](const AttentionShape&) { return true; }), 400));
}

WB_CHECK(Correctness, TensorCoreFp16, .weight = 2,
         .passes = "attention_forward_fp16: max |error| of O and L <= 2 x that of a plain host "
                   "computation in fp16 (fp32 arithmetic, P and O rounded to fp16) + floor; lengths 1 "
                   ".. 1024 (4096 on a GPU), D 32, 64, 128, causal and not, Tq < Tk and Tq > Tk; plain, "
                   "spiky, very negative and dominant rows",
         .hint = "The bf16 kernel with __half: fp16 has 3 more mantissa bits and a smaller range; P <= 1 "
                 "and O are safe, and scores stay in fp32.") {
  WB_ASSERT(check_version(Version::Fp16, cases([](const AttentionShape&) { return true; }), 500));
}

WB_CHECK(Correctness, Backward, .weight = 3,
         .passes = "max |error| of dQ, dK, dV <= 2 x that of a plain fp32 host computation + floor; "
                   "lengths 1 .. 203 (1024 on a GPU), D 32, 64, 128, causal and not, Tq != Tk",
         .hint = "Two kernels avoid atomics: one per key tile accumulates dK and dV over the query tiles, "
                 "one per query tile accumulates dQ over the key tiles; both recompute S and P = exp(S - L).") {
  const std::vector<AttentionShape> shapes = backward_shapes();
  WB_ASSERT(wb::check::run_cases(shapes.size(),
                                 [&](std::size_t i) { return check_backward(backward_case(shapes[i], 600 + i)); }));
}

WB_CHECK(Correctness, Deterministic, .weight = 2,
         .passes = "attention_forward, attention_forward_bf16, attention_backward: three runs "
                   "bitwise equal (B=1, H=2, T=203)",
         .hint = "Give every output element one owner that sums in a fixed order: no atomicAdd of partial "
                 "results (the order blocks arrive in changes the rounding).") {
  const AttentionShape s{1, 2, 203, 203, 64, 1};
  wb::check::Cases cases(3);
  for (Version v : {Version::Fused, Version::Bf16}) {
    const Data d = make_data(s, version_precision(v), 700);
    const std::string call = std::string(version_name(v)) + "(" + shape_text(s) + ")";
    WB_ASSERT(cases(wb::check::same_every_run<ForwardResult>(
        call, [&](ForwardResult& got, int) { return run_version(v, d, call, got); },
        {{"o", &ForwardResult::o}, {"lse", &ForwardResult::lse}})));
  }
  const BackwardCase b = backward_case(s, 701);
  const std::string call = "attention_backward(" + shape_text(s) + ")";
  WB_ASSERT(cases(wb::check::same_every_run<GradsGot>(
      call, [&](GradsGot& got, int) { return run_backward(b, call, got); },
      {{"dq", &GradsGot::dq}, {"dk", &GradsGot::dk}, {"dv", &GradsGot::dv}},
      "Accumulate each gradient row in one block, in a fixed order, with no floating-point atomics.")));
}

// ---- Host code (sim) ------------------------------------------------------------------------------------

#if defined(CUSIM)
WB_CHECK(Correctness, HostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every function (B=1, H=2, Tq=33, Tk=47, D=64, causal): each "
                   "`cudaFuncSetAttribute`, kernel launch and any `cudaMalloc`, `cudaMemcpy(Async)` or "
                   "`cudaMemset(Async)` it makes is made to fail in turn (cusim's fault injection); the "
                   "function must return that error at once (`cudaGetLastError()` after each launch, "
                   "before the next), with no launch after it and no device memory left",
         .hint = "Return the error of cudaFuncSetAttribute when it fails, and test cudaGetLastError() "
                 "after each launch before the next one: if (cudaError_t e = cudaGetLastError(); e != "
                 "cudaSuccess) return e;") {
  const AttentionShape s{1, 2, 33, 47, 64, 1};
  const Data d = make_data(s, Precision::Fp32, 750);
  const Data h = make_data(s, Precision::Bf16, 751);
  const std::vector<float> dout = wb::random_floats(attention_q_elements(s), 752, -1.0f, 1.0f);
  using Floats = wb::DeviceBuffer<float>;
  using Halves = wb::DeviceBuffer<std::uint16_t>;
  Floats q{std::span<const float>(d.q)}, k{std::span<const float>(d.k)}, v{std::span<const float>(d.v)},
      o{attention_q_elements(s)}, lse{attention_rows(s)}, dO{std::span<const float>(dout)},
      dq{attention_q_elements(s)}, dk{attention_kv_elements(s)}, dv{attention_kv_elements(s)},
      unfused_ws{attention_unfused_workspace_floats(s)}, backward_ws{attention_backward_workspace_floats(s)};
  const std::vector<std::uint16_t> q16 = encode(Precision::Bf16, h.q), k16 = encode(Precision::Bf16, h.k),
                                   v16 = encode(Precision::Bf16, h.v);
  Halves q2{std::span<const std::uint16_t>(q16)}, k2{std::span<const std::uint16_t>(k16)},
      v2{std::span<const std::uint16_t>(v16)}, o2{attention_q_elements(s)};
  auto bf = [](std::uint16_t* x) { return reinterpret_cast<__nv_bfloat16*>(x); };
  auto hf = [](std::uint16_t* x) { return reinterpret_cast<__half*>(x); };
  const std::string shape = "(" + shape_text(s) + ")";
  WB_ASSERT(wb::check::host::launch_errors_returned({
      {"attention_unfused" + shape, "attention_unfused",
       [&] { return attention_unfused(q.data(), k.data(), v.data(), o.data(), lse.data(), s, unfused_ws.data()); }},
      {"attention_forward" + shape, "attention_forward",
       [&] { return attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), s); }},
      {"attention_forward_bf16" + shape, "attention_forward_bf16",
       [&] { return attention_forward_bf16(bf(q2.data()), bf(k2.data()), bf(v2.data()), bf(o2.data()), lse.data(), s); }},
      {"attention_forward_fp16" + shape, "attention_forward_fp16",
       [&] { return attention_forward_fp16(hf(q2.data()), hf(k2.data()), hf(v2.data()), hf(o2.data()), lse.data(), s); }},
      // After the forward above: O and L are the forward's (any values would do for the error paths).
      {"attention_backward" + shape, "attention_backward", [&] {
         return attention_backward(q.data(), k.data(), v.data(), o.data(), dO.data(), lse.data(), dq.data(), dk.data(),
                                   dv.data(), s, backward_ws.data());
       }}}));
}
#endif

// ---- Analysis (sim) ---------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    std::uint64_t seed = 800;
    for (AttentionShape s : {AttentionShape{1, 1, 17, 17, 32, 1}, AttentionShape{1, 2, 33, 70, 64, 0},
                             AttentionShape{1, 1, 70, 33, 128, 1}}) {
      for (Version v : {Version::Unfused, Version::Fused, Version::Bf16, Version::Fp16})
        keep_first(check_forward(v, make_data(s, version_precision(v), seed++)));
      keep_first(check_backward(backward_case(s, seed++)));
    }
  });
}

}  // namespace

WB_CHECK(Analysis, MemcheckClean, .weight = 2, .backends = "sim",
         .passes = "0 memcheck/initcheck reports, every function, T = 17, 33, 70",
         .hint = "Guard every row index against Tq or Tk: the last tile of a length that is not a multiple "
                 "of the tile reads past the end unless its rows are zero-filled instead of loaded.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, RacecheckClean, .weight = 2, .backends = "sim",
         .passes = "0 racecheck/synccheck reports, every function, T = 17, 33, 70",
         .hint = "__syncthreads() after loading a K/V tile and before overwriting it with the next; "
                 "__syncwarp() between a warp's store_matrix_sync and its lanes reading the stored scores.") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}
#endif

// ---- Performance (sim) -----------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

using wb::check::Traffic;

testing::AssertionResult measure_version(Version v, const AttentionShape& s, Traffic& t) {
  const Data d = make_data(s, version_precision(v), 900);
  return wb::check::measure([&] { return check_forward(v, d); }, t, version_name(v));
}

}  // namespace

WB_CHECK(Performance, FusedTraffic, .weight = 3, .backends = "sim",
         .limits = {{"max_written", 1.10}, {"max_read", 1.05}, {"query_tile", 32}, {"min_sector_use", 0.80},
                    {"max_shared_wavefronts", 1.25}},
         .passes = "attention_forward, _bf16, _fp16 (B=1, H=2, T=256, D=64): bytes written <= "
                   "{max_written:.2f} x (O + L); bytes read <= {max_read:.2f} x (Q + (K + V) x ceil(Tq / "
                   "{query_tile})); >= {min_sector_use:.0%} of each moved sector requested; shared loads "
                   "<= {max_shared_wavefronts:.2f} wavefronts per 128 bytes",
         .hint = "Keep the scores of a tile in registers or shared memory; never store them. Give each "
                 "block at least as many query rows as the read bound's tile, so that K and V are read once "
                 "per block of rows, and load 16 bytes per thread, consecutive threads on consecutive "
                 "addresses.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxWrittenRatio = WB_LIMIT("max_written");  // a score buffer writes Tk / D x O more: 4 x here
  constexpr double kMaxReadRatio = WB_LIMIT("max_read");
  constexpr double kMinQueryTile = WB_LIMIT("query_tile");
  constexpr double kMinSectorEfficiency = WB_LIMIT("min_sector_use");
  // Per 128 bytes (1: no conflict, whatever the access width); the reference takes 1.00, unpadded WMMA tiles 2.3.
  constexpr double kMaxSharedLoadWavefronts = WB_LIMIT("max_shared_wavefronts");
  const AttentionShape s{1, 2, 256, 256, 64, 0};
  std::string text;
  for (Version v : {Version::Fused, Version::Bf16, Version::Fp16}) {
    Traffic t;
    WB_ASSERT(measure_version(v, s, t));
    WB_REQUIRE_ANALYSIS();
    const double eb = version_precision(v) == Precision::Fp32 ? 4.0 : 2.0;  // bytes per element of Q, K, V, O
    const double out_bytes = eb * attention_q_elements(s) + 4.0 * attention_rows(s);
    const double tiles = std::ceil(static_cast<double>(s.tq) / kMinQueryTile);
    const double read_bound = eb * (attention_q_elements(s) + 2.0 * attention_kv_elements(s) * tiles);
    const double written = t.bytes_written / out_bytes, read = t.bytes_read / read_bound;
    wb::check::append_measured(text, std::string(version_name(v)) + ": written " + fixed(written) +
                                         " x (O + L), read " + fixed(read) + " x bound, sector use " +
                                         fixed(t.load_efficiency()) + "/" + fixed(t.store_efficiency()) +
                                         ", shared wavefronts per 128 bytes " + fixed(t.shared_loads_per_128_bytes()) +
                                         " loads/" + fixed(t.shared_stores_per_128_bytes()) + " stores");
    const std::string call = std::string(version_name(v)) + "(" + shape_text(s) + ")";
    if (written > kMaxWrittenRatio)
      ADD_FAILURE() << call << " wrote " << t.bytes_written << " bytes to global memory, " << fixed(written)
                    << " x the " << out_bytes << " bytes of O and L (at most " << fixed(kMaxWrittenRatio)
                    << " x). A fused kernel keeps the Tq x Tk scores on chip: no score or probability buffer in "
                       "global memory.";
    if (read > kMaxReadRatio)
      ADD_FAILURE() << call << " read " << t.bytes_read << " bytes, " << fixed(read)
                    << " x the bound for K and V read once per tile of " << wb::check::as_written(kMinQueryTile)
                    << " query rows (at most " << fixed(kMaxReadRatio) << " x). Give each block at least "
                    << wb::check::as_written(kMinQueryTile)
                    << " query rows, and load each K/V tile once per block into shared memory.";
    if (t.shared_loads_per_128_bytes() > kMaxSharedLoadWavefronts)
      ADD_FAILURE() << call << ": shared-memory loads took " << fixed(t.shared_loads_per_128_bytes())
                    << " wavefronts per 128 bytes (at most " << fixed(kMaxSharedLoadWavefronts)
                    << "; 1 is conflict-free). Bank conflicts: rows of a shared tile whose length is a multiple of "
                       "128 bytes put a column in one bank; pad each row (one float, or 8 halves for WMMA tiles).";
    if (t.load_efficiency() < kMinSectorEfficiency || t.store_efficiency() < kMinSectorEfficiency)
      ADD_FAILURE() << call << " used " << fixed(t.load_efficiency()) << " of the bytes of the sectors it loaded and "
                    << fixed(t.store_efficiency()) << " of those it stored (at least " << fixed(kMinSectorEfficiency)
                    << "). Let consecutive threads load consecutive 16-byte pieces of a row, and write O row by row.";
  }
#endif
}

WB_CHECK(Performance, CausalSkipsTiles, .weight = 2, .backends = "sim", .limits = {{"max_read_fraction", 0.65}},
         .passes = "attention_forward, _bf16 causal (B=1, H=1, T=1024, D=32): bytes read <= "
                   "{max_read_fraction:.2f} x the non-causal call's",
         .hint = "A block of query rows [q0, q0 + Br) sees no key past q0 + Br - 1 + (Tk - Tq): end the key "
                 "loop there instead of masking whole tiles.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  constexpr double kMaxCausalReadFraction = WB_LIMIT("max_read_fraction");  // skipping: (n + 1) / 2n of n tiles
  std::string text;
  for (Version v : {Version::Fused, Version::Bf16}) {
    Traffic full, causal;
    WB_ASSERT(measure_version(v, {1, 1, 1024, 1024, 32, 0}, full));
    WB_ASSERT(measure_version(v, {1, 1, 1024, 1024, 32, 1}, causal));
    WB_REQUIRE_ANALYSIS();
    const double fraction = static_cast<double>(causal.bytes_read) / static_cast<double>(full.bytes_read);
    wb::check::append_measured(text, std::string(version_name(v)) + " " + fixed(fraction) + " x");
    if (fraction > kMaxCausalReadFraction)
      ADD_FAILURE() << version_name(v) << "(T=1024, D=32): the causal call read " << fixed(fraction)
                    << " x the bytes of the non-causal one (at most " << fixed(kMaxCausalReadFraction)
                    << "; skipping the tiles above the diagonal gives about 0.5). Stop the loop over key tiles after "
                       "the last key the block's last row sees.";
  }
#endif
}
#endif

// ---- Performance (cuda) ------------------------------------------------------------------------------------------

#if !defined(CUSIM)
// Every timed function is validated before timing and after it, the timed runs each given changed
// queries (wb_timed.h). The shapes are too large for the whole host reference (minutes), so the rows
// compared are the first, the last and every row the changes touched: where a result cached from an
// earlier call, or written after the call returned, differs from the right one.
namespace {

// FLOPs of a call: 4 B H Tq Tk D (the two products), half that when causal.
double attention_flops(const AttentionShape& s) {
  const double f = 4.0 * s.batch * s.heads * static_cast<double>(s.tq) * s.tk * s.d;
  return s.causal ? f / 2.0 : f;
}

// The verdict on the query rows @p rows of a forward's O and L on @p d, as compare() judges whole tensors.
testing::AssertionResult rows_match(const std::string& call, const Data& d, const std::vector<float>& o,
                                    const std::vector<float>& lse, std::vector<std::size_t> rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  const AttentionShape& s = d.s;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  Forward exact, same;
  std::vector<float> got_o, got_lse;
  for (std::size_t row : rows) {
    std::vector<double> o_exact(s.d, 0.0), o_same(s.d, 0.0);
    double lse_exact = -kInf, lse_same = -kInf;
    if (const int end = visible_end(s, static_cast<int>(row % s.tq), Variant::Exact); end > 0) {
      const float* q = d.q.data() + row * s.d;
      lse_exact = attention_row<double>(d, row / s.tq, q, end, scale, o_exact.data());
      lse_same = attention_row<float>(d, row / s.tq, q, end, scale, o_same.data());
    }
    exact.o.insert(exact.o.end(), o_exact.begin(), o_exact.end());
    same.o.insert(same.o.end(), o_same.begin(), o_same.end());
    exact.lse.push_back(lse_exact);
    same.lse.push_back(lse_same);
    got_o.insert(got_o.end(), o.begin() + row * s.d, o.begin() + (row + 1) * s.d);
    got_lse.push_back(lse[row]);
  }
  for (const bool is_lse : {true, false}) {
    const std::vector<float>& got = is_lse ? got_lse : got_o;
    const std::vector<double>& ref = is_lse ? exact.lse : exact.o;
    const Error e = error_of(got, ref, is_lse ? same.lse : same.o, d.precision);
    if (e.within()) continue;
    const int width = is_lse ? 1 : s.d;
    const std::size_t index = rows[e.worst.index / width] * width + e.worst.index % width;
    return largest_error_failure(call, is_lse ? "lse" : "o", position(s, index, width, s.tq, "i"), got, ref, e,
                                 d.precision)
           << " (" << rows.size() << " query rows compared: the first, the last and those the changes touched)";
  }
  return testing::AssertionSuccess();
}

// The rows rows_match() compares after changes of the queries at @p changed (indices into Q).
std::vector<std::size_t> rows_to_compare(const AttentionShape& s, const std::vector<std::size_t>& changed) {
  std::vector<std::size_t> rows = {0, attention_rows(s) - 1};
  for (std::size_t i : changed) rows.push_back(i / s.d);
  return rows;
}

}  // namespace

WB_CHECK(Performance, TensorCoreForward, .weight = 6, .backends = "cuda", .timeout_s = 600,
         .limits = {{"min_ratio", 0.25}},
         .passes = ">= {min_ratio:.2f} x a cuBLAS bf16 GEMM of 4096^3 (the tensor-core ceiling) for "
                   "attention_forward_bf16, B=4, H=16, T=4096, D=128, not causal; median of 5 runs",
         .hint = "Tensor cores are fed from shared memory: keep Q and the O accumulators in fragments "
                 "across the key loop (rescale O element by element, not through shared memory), "
                 "double-buffer the K/V tiles, and avoid bank conflicts (pad rows by 8 halves). 8 warps x "
                 "16 rows, 64 keys per tile.") {
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  WB_ASSERT(check_forward(Version::Bf16, make_data({1, 2, 1024, 1024, 128, 0}, Precision::Bf16, 1000)));
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this check binary was built without the cuBLAS baseline");
#else
  try {
    const AttentionShape s{4, 16, 4096, 4096, 128, 0};
    double ceiling = 0.0;
    {
      // Out of the lab's reach where the checks are split (wb_baseline.h).
      wb::check::InCheckersProcess checkers;
      ceiling = cublas_bf16_gemm_tflops(4096);
    }
    Data d = make_data(s, Precision::Bf16, 1002);
    std::vector<std::uint16_t> q_bits = encode(Precision::Bf16, d.q);
    wb::DeviceBuffer<std::uint16_t> q{std::span<const std::uint16_t>(q_bits)},
        k{std::span<const std::uint16_t>(encode(Precision::Bf16, d.k))},
        v{std::span<const std::uint16_t>(encode(Precision::Bf16, d.v))}, o(q_bits.size());
    wb::DeviceBuffer<float> lse(attention_rows(s));
    wb::check::ChangingInput<std::uint16_t> changing(q_bits, q.data());
    auto p = [](auto* x) { return reinterpret_cast<__nv_bfloat16*>(x); };
    const auto verify = [&] {
      d.q = decode(Precision::Bf16, q_bits);
      return wb::check::failure_text(rows_match("the output", d, read_16bit(Precision::Bf16, o.download()),
                                                lse.download(), rows_to_compare(s, changing.changed())));
    };
    wb::Bandwidth t;
    WB_ASSERT(wb::check::timed_and_verified(
        "attention_forward_bf16(" + shape_text(s) + ")", attention_flops(s),  // only the time is used
        [&] { return attention_forward_bf16(p(q.data()), p(k.data()), p(v.data()), p(o.data()), lse.data(), s); },
        [&] { changing.change(); }, verify, t, {.warmup = 1, .repetitions = 5}));
    const double tflops = attention_flops(s) / (t.timing.median_ms * 1e-3) / 1e12;
    const double ratio = tflops / ceiling;
    wb::check::record_measured(fixed(ratio) + " x the bf16 GEMM ceiling (" + fixed(tflops) + " vs " +
                               fixed(ceiling) + " TFLOP/s)");
    EXPECT_GE(ratio, kMinRatio) << "attention_forward_bf16(" << shape_text(s) << ") reached " << fixed(tflops)
                                << " TFLOP/s, " << fixed(ratio) << " x the " << fixed(ceiling)
                                << " TFLOP/s of cuBLAS's bf16 GEMM in the same run; it needs " << wb::check::as_written(kMinRatio) << " x.";
  } catch (const std::exception& e) {
    FAIL() << "a CUDA or cuBLAS call failed while timing attention_forward_bf16: " << e.what();
  }
#endif
}

WB_CHECK(Performance, FusedVsUnfused, .weight = 4, .backends = "cuda", .timeout_s = 600,
         .limits = {{"min_speedup", 3.0}},
         .passes = "attention_forward >= {min_speedup} x attention_unfused in time (fp32, B=1, H=16, T=4096, "
                   "D=64, causal); median of 3 runs",
         .hint = "The unfused version writes and reads the 4096 x 4096 scores several times per head; the "
                 "fused one must not lose that advantage to slow arithmetic: register-tile the score and "
                 "the P V products.") {
  constexpr double kMinSpeedup = WB_LIMIT("min_speedup");
  WB_ASSERT(check_forward(Version::Fused, make_data({1, 1, 1024, 1024, 64, 1}, Precision::Fp32, 1001)));
  try {
    const AttentionShape s{1, 16, 4096, 4096, 64, 1};
    Data d = make_data(s, Precision::Fp32, 1002);
    wb::DeviceBuffer<float> q{std::span<const float>(d.q)}, k{std::span<const float>(d.k)},
        v{std::span<const float>(d.v)}, o(d.q.size()), lse(attention_rows(s));
    wb::DeviceBuffer<float> ws(attention_unfused_workspace_floats(s));
    wb::check::ChangingInput<float> changing(d.q, q.data());
    const auto verify = [&] {
      return wb::check::failure_text(
          rows_match("the output", d, o.download(), lse.download(), rows_to_compare(s, changing.changed())));
    };
    const wb::TimingOptions timing{.warmup = 1, .repetitions = 3};
    wb::Bandwidth fused, unfused;
    WB_ASSERT(wb::check::timed_and_verified(
        "attention_forward(" + shape_text(s) + ")", attention_flops(s),  // only the time is used
        [&] { return attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), s); },
        [&] { changing.change(); }, verify, fused, timing));
    WB_ASSERT(wb::check::timed_and_verified(
        "attention_unfused(" + shape_text(s) + ")", attention_flops(s),
        [&] { return attention_unfused(q.data(), k.data(), v.data(), o.data(), lse.data(), s, ws.data()); },
        [&] { changing.change(); }, verify, unfused, timing));
    const double fused_ms = fused.timing.median_ms, unfused_ms = unfused.timing.median_ms;
    const double speedup = unfused_ms / fused_ms;
    wb::check::record_measured(fixed(speedup) + " x (fused " + fixed(attention_flops(s) / (fused_ms * 1e9)) +
                               " TFLOP/s, unfused " + fixed(attention_flops(s) / (unfused_ms * 1e9)) + " TFLOP/s)");
    EXPECT_GE(speedup, kMinSpeedup) << "attention_forward(" << shape_text(s) << ") is " << fixed(speedup)
                                    << " x faster than attention_unfused; it needs " << wb::check::as_written(kMinSpeedup) << " x.";
  } catch (const std::exception& e) {
    FAIL() << "a CUDA call failed while timing attention_forward: " << e.what();
  }
}
#endif
