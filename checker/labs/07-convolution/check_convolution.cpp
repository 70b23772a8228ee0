// Checks for lab 07, part 1: convolution forward (the ladder), backward data and filter, and the
// fused convolution + batch norm + ReLU.
//
// Correctness: every output is compared with a double-precision reference computed on the host from
// the same float inputs, element by element (the allowances are explained at expected() and in
// check_fused()). A wrong result is compared with the known mistakes, computed on the host too
// (padding not subtracted, stride applied twice, the filter read as C x K or flipped, dilation
// ignored, one axis's parameter used for both): a match is named in the message. Inputs are
// surrounded by NaN (a read outside shows), outputs start as 0xFF bytes (an element never written
// shows) and carry guard zones.
// Performance: cusim's analysis metrics at kMetricShape (sim); cuDNN timed in the same run on
// ResNet-50's layers at N = 32 (cuda, cudnn_baselines.h), after validating against its output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "convolution.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

#if defined(WB_HAVE_CUDA_BASELINES)
#include "cudnn_baselines.h"
#endif

namespace {

using wb::check::fixed;
using Input = wb::check::Input<float>;
using Output = wb::check::Output<float>;

constexpr double kU = 0x1.0p-24;

// gamma(T) = T u / (1 - T u): a sum of T products rounded in any order is within gamma(T) of the sum
// of their magnitudes (u = 2^-24).
double gamma_n(std::size_t terms) {
  const double t = static_cast<double>(terms) * kU;
  return t / (1.0 - t);
}

std::string describe(const ConvParams& p) {
  std::ostringstream s;
  s << "N=" << p.N << ", C=" << p.C << ", H=" << p.H << ", W=" << p.W << ", K=" << p.K << ", R=" << p.R
    << ", S=" << p.S;
  if (p.pad_h || p.pad_w) s << ", pad=" << p.pad_h << "x" << p.pad_w;
  if (p.stride_h != 1 || p.stride_w != 1) s << ", stride=" << p.stride_h << "x" << p.stride_w;
  if (p.dilation_h != 1 || p.dilation_w != 1) s << ", dilation=" << p.dilation_h << "x" << p.dilation_w;
  return s.str();
}

ConvParams conv(int N, int C, int H, int W, int K, int R, int S, int pad = 0, int stride = 1, int dilation = 1) {
  return {N, C, H, W, K, R, S, pad, pad, stride, stride, dilation, dilation};
}

// The shapes every version runs (small enough for the simulator; each is an edge of some kind).
const std::vector<ConvParams> kShapes = {
    conv(1, 1, 5, 7, 1, 3, 3, 1),                     // one channel, one filter, padding all round
    conv(2, 3, 17, 13, 5, 7, 7, 3, 2),                // a 7 x 7 stride-2 stem on an odd image, C = 3
    conv(2, 8, 9, 11, 6, 1, 1),                       // 1 x 1 filters
    conv(1, 5, 12, 10, 70, 3, 3, 2, 1, 2),            // dilation 2, K = 70 (beyond one 64-wide tile)
    {3, 4, 8, 9, 9, 3, 2, 2, 0, 3, 1, 1, 1},          // asymmetric padding and stride
    {2, 3, 11, 10, 5, 3, 3, 1, 2, 1, 2, 2, 1},        // pad 1 x 2, stride 1 x 2, dilation 2 x 1: each h/w pair differs
    conv(1, 16, 6, 6, 4, 5, 5),                       // P = Q = 2
    conv(1, 7, 3, 4, 3, 5, 6, 1),                     // a filter as large as the padded image: P = Q = 1
    conv(1, 66, 5, 5, 65, 3, 3, 1),                   // C and K one or two past a multiple of 32
};

// ResNet-50's layers (N = 32 and full images on the GPU) at a reduced batch and image for the simulator.
struct NamedShape {
  const char* name;
  ConvParams sim, gpu;
};
const std::vector<NamedShape> kResNet = {
    {"conv2_x 3x3 C64 K64", conv(1, 64, 10, 10, 64, 3, 3, 1), conv(32, 64, 56, 56, 64, 3, 3, 1)},
    {"conv3_x 3x3 C128 K128", conv(1, 128, 6, 6, 128, 3, 3, 1), conv(32, 128, 28, 28, 128, 3, 3, 1)},
    {"conv4_x 3x3 C256 K256", conv(1, 256, 4, 4, 256, 3, 3, 1), conv(32, 256, 14, 14, 256, 3, 3, 1)},
    {"conv1 7x7/2 C3 K64", conv(1, 3, 24, 24, 64, 7, 7, 3, 2), conv(32, 3, 224, 224, 64, 7, 7, 3, 2)},
    {"1x1 C256 K64", conv(1, 256, 6, 6, 64, 1, 1), conv(32, 256, 56, 56, 64, 1, 1)},
};

// wgrad's long reduction (N P Q = 4608 pixels): split across blocks.
const ConvParams kLongReduction = conv(8, 4, 24, 24, 8, 3, 3, 1);

// ---- layouts ------------------------------------------------------------------------------------------------

enum class Layout { kNCHW, kNHWC };

std::size_t x_index(const ConvParams& p, Layout l, int n, int c, int h, int w) {
  return l == Layout::kNCHW ? ((static_cast<std::size_t>(n) * p.C + c) * p.H + h) * p.W + w
                            : ((static_cast<std::size_t>(n) * p.H + h) * p.W + w) * p.C + c;
}
std::size_t w_index(const ConvParams& p, Layout l, int k, int c, int r, int s) {
  return l == Layout::kNCHW ? ((static_cast<std::size_t>(k) * p.C + c) * p.R + r) * p.S + s
                            : ((static_cast<std::size_t>(k) * p.R + r) * p.S + s) * p.C + c;
}
std::size_t y_index(const ConvParams& p, Layout l, int n, int k, int pp, int q) {
  const int P = conv_out_h(p), Q = conv_out_w(p);
  return l == Layout::kNCHW ? ((static_cast<std::size_t>(n) * p.K + k) * P + pp) * Q + q
                            : ((static_cast<std::size_t>(n) * P + pp) * Q + q) * p.K + k;
}
std::size_t x_size(const ConvParams& p) { return static_cast<std::size_t>(p.N) * p.C * p.H * p.W; }
std::size_t w_size(const ConvParams& p) { return static_cast<std::size_t>(p.K) * p.C * p.R * p.S; }
std::size_t y_size(const ConvParams& p) {
  return static_cast<std::size_t>(p.N) * p.K * conv_out_h(p) * conv_out_w(p);
}
double flops(const ConvParams& p) { return 2.0 * static_cast<double>(y_size(p)) * p.C * p.R * p.S; }

// What a function computes: y from x and w (the forward), dx from dy and w (backward data), or dw
// from x and dy (backward filter).
enum class Pass { kForward, kData, kFilter };

// Names element i of an array of the given dimensions ("dx[n=0][c=2][h=4][w=1]").
using Namer = std::function<std::string(std::size_t)>;

Namer namer4(const char* array, const char* a, const char* b, const char* c, const char* d, int db, int dc, int dd) {
  return [=](std::size_t i) {
    std::ostringstream s;
    s << array << "[" << a << "=" << i / (static_cast<std::size_t>(db) * dc * dd) << "][" << b << "="
      << i / (static_cast<std::size_t>(dc) * dd) % db << "][" << c << "=" << i / dd % dc << "][" << d << "=" << i % dd
      << "]";
    return s.str();
  };
}

// The arrays of a pass in layout @p l: inputs a and b (integer-valued data in [-range, range]) and the
// output, whose elements @p name names.
struct Arrays {
  const char *a, *b, *out;
  std::size_t a_size, b_size, out_size;
  int a_range, b_range;
  Namer name;
};

Arrays arrays(Pass pass, const ConvParams& p, Layout l) {
  const int P = conv_out_h(p), Q = conv_out_w(p);
  switch (pass) {
    case Pass::kData:
      return {"dy", "w", "dx", y_size(p), w_size(p), x_size(p), 3, 2, namer4("dx", "n", "c", "h", "w", p.C, p.H, p.W)};
    case Pass::kFilter:
      return {"x", "dy", "dw", x_size(p), y_size(p), w_size(p), 3, 3, namer4("dw", "k", "c", "r", "s", p.C, p.R, p.S)};
    default:
      return {"x", "w", "y", x_size(p), w_size(p), y_size(p), 3, 2,
              l == Layout::kNCHW ? namer4("y", "n", "k", "p", "q", p.K, P, Q)
                                 : namer4("y", "n", "p", "q", "k", P, Q, p.K)};
  }
}

// ---- host references, correct and with the known mistakes -------------------------------------------------

enum class Mistake {
  kNone, kPaddingNotSubtracted, kStrideTwice, kFilterCK, kFlipped, kNoDilation,
  // One axis's parameter used for both axes (a copy-pasted index expression): *_h for the width,
  // or *_w for the height.
  kPadHBoth, kPadWBoth, kStrideHBoth, kStrideWBoth, kDilationHBoth, kDilationWBoth
};

// An axis mistake: parameter @p used (from) read in place of @p to as well.
struct AxisMistake {
  Mistake mistake;
  const char* used;
  int ConvParams::*from;
  int ConvParams::*to;
};
const std::vector<AxisMistake> kAxisMistakes = {
    {Mistake::kPadHBoth, "pad_h", &ConvParams::pad_h, &ConvParams::pad_w},
    {Mistake::kPadWBoth, "pad_w", &ConvParams::pad_w, &ConvParams::pad_h},
    {Mistake::kStrideHBoth, "stride_h", &ConvParams::stride_h, &ConvParams::stride_w},
    {Mistake::kStrideWBoth, "stride_w", &ConvParams::stride_w, &ConvParams::stride_h},
    {Mistake::kDilationHBoth, "dilation_h", &ConvParams::dilation_h, &ConvParams::dilation_w},
    {Mistake::kDilationWBoth, "dilation_w", &ConvParams::dilation_w, &ConvParams::dilation_h}};

const AxisMistake* axis_mistake(Mistake m) {
  for (const AxisMistake& a : kAxisMistakes) {
    if (a.mistake == m) return &a;
  }
  return nullptr;
}

// The known mistakes a wrong output of @p pass is compared with, in this order.
std::vector<Mistake> candidates(Pass pass) {
  std::vector<Mistake> mistakes;
  switch (pass) {
    case Pass::kForward:
      mistakes = {Mistake::kPaddingNotSubtracted, Mistake::kStrideTwice, Mistake::kFilterCK, Mistake::kFlipped,
                  Mistake::kNoDilation};
      break;
    case Pass::kData: mistakes = {Mistake::kFlipped, Mistake::kFilterCK}; break;
    case Pass::kFilter: mistakes = {Mistake::kPaddingNotSubtracted, Mistake::kStrideTwice, Mistake::kNoDilation}; break;
  }
  for (const AxisMistake& a : kAxisMistakes) mistakes.push_back(a.mistake);
  return mistakes;
}

std::string explain(Mistake m) {
  if (const AxisMistake* a = axis_mistake(m)) {
    const bool width = std::string_view(a->used).ends_with("_h");  // an *_h parameter read for the width
    return std::string("the result equals a convolution that uses ") + a->used +
           (width ? " for the width axis too: column w = q * stride_w - pad_w + s * dilation_w"
                  : " for the height axis too: row h = p * stride_h - pad_h + r * dilation_h") +
           " (each axis has its own padding, stride and dilation).";
  }
  switch (m) {
    case Mistake::kPaddingNotSubtracted:
      return "the result equals a convolution that does not subtract the padding: the input row of output p and "
             "tap r is h = p * stride_h - pad_h + r * dilation_h (and likewise w); taps with h or w outside the "
             "image count as 0.";
    case Mistake::kStrideTwice:
      return "the result equals a convolution that applies the stride twice (h = (p * stride_h) * stride_h ...): "
             "multiply the output position by the stride once, h = p * stride_h - pad_h + r * dilation_h.";
    case Mistake::kFilterCK:
      return "the result equals a convolution that reads the filters as C x K x R x S: the layout is K x C x R x S, "
             "w[((k * C + c) * R + r) * S + s] (for the NHWC version, K x R x S x C).";
    case Mistake::kFlipped:
      return "the result equals one with the filter flipped in r and s (w[k][c][R-1-r][S-1-s]). The forward is a "
             "cross-correlation (no flip); the data gradient is the one that flips the filter: dx[h][w] gathers "
             "dy[p][q] * w[r][s] where h = p * stride_h - pad_h + r * dilation_h.";
    case Mistake::kNoDilation:
      return "the result equals a convolution that ignores the dilation: tap r reads row p * stride_h - pad_h + "
             "r * dilation_h.";
    default: return "";
  }
}

// One product of a convolution: output (n, k, p, q) gets input (n, c, h, w) times tap (r, s) of filter k.
struct Tap {
  int n, k, p, q, c, h, w, r, s;
};

// The input row (or column) of output row @p out and tap @p tap, as mistake @p m computes it.
int source(int out, int tap, int stride, int pad, int dilation, Mistake m) {
  switch (m) {
    case Mistake::kPaddingNotSubtracted: return out * stride + tap * dilation;
    case Mistake::kStrideTwice: return out * stride * stride - pad + tap * dilation;
    case Mistake::kNoDilation: return out * stride - pad + tap;
    default: return out * stride - pad + tap * dilation;
  }
}

// The filter element tap @p t reads under mistake @p m.
double filter_at(const ConvParams& p, Layout l, const std::vector<float>& w, const Tap& t, Mistake m) {
  switch (m) {
    case Mistake::kFlipped: return w[w_index(p, l, t.k, t.c, p.R - 1 - t.r, p.S - 1 - t.s)];
    case Mistake::kFilterCK:  // the filters read as C x K x R x S (NHWC: C x R x S x K)
      return w[l == Layout::kNCHW ? ((static_cast<std::size_t>(t.c) * p.K + t.k) * p.R + t.r) * p.S + t.s
                                  : ((static_cast<std::size_t>(t.c) * p.R + t.r) * p.S + t.s) * p.K + t.k];
    default: return w[w_index(p, l, t.k, t.c, t.r, t.s)];
  }
}

struct Reference {
  std::vector<double> value, magnitude;  // magnitude: sum of |terms|
  std::vector<std::uint32_t> terms;      // number of products in the sum
};

// @p pass of the convolution from inputs @p a and @p b (x and w, dy and w, or x and dy), as mistake @p m
// computes it: every product (a tap inside the image, placed as @p m places it; in the data gradient
// only an axis mistake moves taps, the others apply to the filter) summed into its output element.
Reference reference(Pass pass, const ConvParams& p, Layout l, const std::vector<float>& a, const std::vector<float>& b,
                    Mistake m = Mistake::kNone) {
  const std::size_t size = arrays(pass, p, l).out_size;
  Reference ref{std::vector<double>(size), std::vector<double>(size), std::vector<std::uint32_t>(size)};
  const Mistake placed = pass == Pass::kData && !axis_mistake(m) ? Mistake::kNone : m;
  ConvParams u = p;  // the parameters as the taps are placed
  if (const AxisMistake* axis = axis_mistake(placed)) u.*(axis->to) = u.*(axis->from);
  const int P = conv_out_h(p), Q = conv_out_w(p);
  Tap t;
  for (t.n = 0; t.n < p.N; ++t.n)
    for (t.k = 0; t.k < p.K; ++t.k)
      for (t.p = 0; t.p < P; ++t.p)
        for (t.q = 0; t.q < Q; ++t.q)
          for (t.c = 0; t.c < p.C; ++t.c)
            for (t.r = 0; t.r < p.R; ++t.r) {
              t.h = source(t.p, t.r, u.stride_h, u.pad_h, u.dilation_h, placed);
              if (t.h < 0 || t.h >= p.H) continue;
              for (t.s = 0; t.s < p.S; ++t.s) {
                t.w = source(t.q, t.s, u.stride_w, u.pad_w, u.dilation_w, placed);
                if (t.w < 0 || t.w >= p.W) continue;
                std::size_t i = 0;
                double v = 0.0;
                switch (pass) {
                  case Pass::kForward:
                    i = y_index(p, l, t.n, t.k, t.p, t.q);
                    v = static_cast<double>(a[x_index(p, l, t.n, t.c, t.h, t.w)]) * filter_at(p, l, b, t, m);
                    break;
                  case Pass::kData:
                    i = x_index(p, l, t.n, t.c, t.h, t.w);
                    v = static_cast<double>(a[y_index(p, l, t.n, t.k, t.p, t.q)]) * filter_at(p, l, b, t, m);
                    break;
                  case Pass::kFilter:
                    i = w_index(p, l, t.k, t.c, t.r, t.s);
                    v = static_cast<double>(b[y_index(p, l, t.n, t.k, t.p, t.q)]) *
                        a[x_index(p, l, t.n, t.c, t.h, t.w)];
                    break;
                }
                ref.value[i] += v;
                ref.magnitude[i] += std::fabs(v);
                ++ref.terms[i];
              }
            }
  return ref;
}

// ---- data and comparing -------------------------------------------------------------------------------------

enum class Data { kInteger, kUniform };

std::vector<float> make_data(std::size_t n, Data d, std::uint64_t seed, int range) {
  if (d == Data::kUniform) return wb::random_floats(n, seed, -1.0f, 1.0f);
  const std::vector<int> ints = wb::random_ints(n, seed, -range, range);
  return std::vector<float>(ints.begin(), ints.end());
}

// An output's expected values and the difference allowed for each element.
struct Expected {
  std::vector<double> value, allowed;
};

// The convolution @p ref as an output must match it:
//   - integer-valued inputs (x, dy in [-3, 3], w in [-2, 2]): every product and every partial sum is
//     an integer far below 2^24, exact in float in any order, so results must match bit for bit;
//   - inputs uniform in [-1, 1): within gamma(T + 1) of the sum of |terms| (T terms: C R S for the
//     forward, K R S for dgrad, N P Q for wgrad).
Expected expected(const Reference& ref, Data d) {
  Expected e{ref.value, std::vector<double>(ref.value.size(), 0.0)};
  if (d == Data::kUniform) {
    for (std::size_t i = 0; i < e.allowed.size(); ++i) e.allowed[i] = gamma_n(ref.terms[i] + 1) * ref.magnitude[i];
  }
  return e;
}

// "Likely mistake: ..." for the first of @p mistakes whose output (@p with_mistake) @p got matches
// everywhere; else "".
std::string name_mistake(const std::vector<Mistake>& mistakes, const std::vector<float>& got,
                         const std::function<Expected(Mistake)>& with_mistake) {
  for (Mistake m : mistakes) {
    const Expected e = with_mistake(m);
    const auto wrong = [&](std::size_t i) { return !wb::check::within(got[i], e.value[i], e.allowed[i]); };
    if (wb::check::find_mismatches(got.size(), wrong).none()) return "Likely mistake: " + explain(m);
  }
  return "";
}

// The sentences of @p parts that are not empty, joined by spaces.
std::string sentences(std::initializer_list<std::string> parts) {
  std::string text;
  for (const std::string& s : parts) {
    if (!s.empty()) text += (text.empty() ? "" : " ") + s;
  }
  return text;
}

// ---- the functions under test -------------------------------------------------------------------------------

// A function under test: out = pass(a, b), with a workspace of workspace_floats(p) floats for
// run_with_workspace.
struct Version {
  const char* name;
  Pass pass;
  Layout layout;
  cudaError_t (*run)(ConvParams, const float* a, const float* b, float* out);
  cudaError_t (*run_with_workspace)(ConvParams, const float* a, const float* b, float* out, float* workspace) = nullptr;
  std::size_t (*workspace_floats)(const ConvParams&) = nullptr;
  // false: the workspace as the allocator leaves it, so that initcheck reports reads of entries this
  // call did not write.
  bool fill_workspace = true;
};

const Version kDirect{"conv2d_direct", Pass::kForward, Layout::kNCHW, &conv2d_direct};
const Version kIm2col{"conv2d_im2col", Pass::kForward, Layout::kNCHW, nullptr, &conv2d_im2col,
                      &conv2d_im2col_workspace_floats};
const Version kImplicit{"conv2d_implicit_gemm", Pass::kForward, Layout::kNCHW, &conv2d_implicit_gemm};
const Version kFinal{"conv2d_forward", Pass::kForward, Layout::kNHWC, &conv2d_forward};
const Version kBackwardData{"conv2d_backward_data", Pass::kData, Layout::kNCHW, &conv2d_backward_data};
const Version kBackwardFilter{"conv2d_backward_filter", Pass::kFilter, Layout::kNCHW, nullptr, &conv2d_backward_filter,
                              &conv2d_backward_filter_workspace_floats, false};

struct Outcome {
  testing::AssertionResult ok = testing::AssertionSuccess();
  std::vector<float> out;
};

// Calls @p v on @p a and @p b: the verdict on the call (status, inputs unchanged, output and workspace
// written in bounds) and, when it holds, the output.
Outcome run_version(const Version& v, const ConvParams& p, const Input& a, const Input& b, const std::string& call) {
  const Arrays io = arrays(v.pass, p, v.layout);
  Output out(io.out_size, io.out);
  wb::check::BufferChecks after = {
      [&] { return a.unchanged(call); }, [&] { return b.unchanged(call); }, [&] { return out.in_bounds(call); }};
  cudaError_t status;
  std::unique_ptr<Output> workspace;
  if (v.run == nullptr) {
    workspace = std::make_unique<Output>(v.workspace_floats(p), "workspace", 0xFF, v.fill_workspace);
    after.push_back([&] { return workspace->in_bounds(call); });
    status = v.run_with_workspace(p, a.dev.data(), b.dev.data(), out.dev.data(), workspace->dev.data());
  } else {
    status = v.run(p, a.dev.data(), b.dev.data(), out.dev.data());
  }
  Outcome r;
  r.ok = wb::check::after_call(status, call, v.name, after);
  if (r.ok) r.out = out.dev.download();
  return r;
}

// @p v on shape @p p with data @p d (seeds @p seed, @p seed + 1), against the host reference; a wrong
// result explained and compared with the known mistakes.
testing::AssertionResult check_version(const Version& v, const ConvParams& p, Data d, std::uint64_t seed) {
  const Arrays io = arrays(v.pass, p, v.layout);
  const std::string call = std::string(v.name) + "(" + describe(p) + ")" +
                           (d == Data::kInteger ? " on integer-valued inputs" : " on inputs uniform in [-1, 1)");
  const Input a(make_data(io.a_size, d, seed, io.a_range), io.a);
  const Input b(make_data(io.b_size, d, seed + 1, io.b_range), io.b);
  const Outcome r = run_version(v, p, a, b, call);
  if (!r.ok) return r.ok;
  const std::vector<float>& got = r.out;
  const Reference ref = reference(v.pass, p, v.layout, a.host, b.host);
  const Expected e = expected(ref, d);
  const auto why = [&](std::size_t i) {
    const bool written = !wb::check::never_written(got[i]);
    return sentences(
        {d == Data::kInteger ? "Integer-valued inputs: every sum is exact in float." : "",
         ref.terms[i] == 0 && written ? "No tap of this element lies inside the image: it is 0." : "",
         std::isnan(got[i]) && written
             ? "The checker surrounds every input with NaN: a NaN here comes from a read outside an input array (a "
               "tap in the padding read without testing h and w against the image, or an index past the end of x "
               "or w)."
             : "",
         name_mistake(candidates(v.pass), got,
                      [&](Mistake m) { return expected(reference(v.pass, p, v.layout, a.host, b.host, m), d); })});
  };
  return wb::check::compare_elements(call, io.out, got, e.value, e.allowed, io.name, why);
}

testing::AssertionResult check_fused(const ConvParams& p, std::uint64_t seed) {
  const std::string call = "conv2d_bn_relu_inference(" + describe(p) + ", eps=1e-5)";
  constexpr float kEps = 1e-5f;
  Input x(make_data(x_size(p), Data::kUniform, seed, 0), "x");
  Input w(make_data(w_size(p), Data::kUniform, seed + 1, 0), "w");
  Input gamma(wb::random_floats(p.K, seed + 2, 0.5f, 2.0f), "gamma");
  Input beta(wb::random_floats(p.K, seed + 3, -1.0f, 1.0f), "beta");
  Input mean(wb::random_floats(p.K, seed + 4, -0.5f, 0.5f), "running_mean");
  Input var(wb::random_floats(p.K, seed + 5, 0.1f, 3.0f), "running_var");
  Output y(y_size(p), "y");
  const cudaError_t status = conv2d_bn_relu_inference(p, x.dev.data(), w.dev.data(), gamma.dev.data(),
                                                      beta.dev.data(), mean.dev.data(), var.dev.data(), kEps,
                                                      y.dev.data());
  if (auto r = wb::check::after_call(status, call, "conv2d_bn_relu_inference",
                                     {[&] { return x.unchanged(call); }, [&] { return w.unchanged(call); },
                                      [&] { return gamma.unchanged(call); }, [&] { return beta.unchanged(call); },
                                      [&] { return mean.unchanged(call); }, [&] { return var.unchanged(call); },
                                      [&] { return y.in_bounds(call); }});
      !r) {
    return r;
  }
  const std::vector<float> got = y.dev.download();
  // Per filter k (y is NHWC: k fastest), y = max(0, conv * scale + shift).
  auto scale = [&](int k) { return gamma.host[k] / std::sqrt(static_cast<double>(var.host[k]) + kEps); };
  auto before_relu = [&](const Reference& conv, std::size_t i) {
    const int k = static_cast<int>(i % p.K);
    return conv.value[i] * scale(k) + (beta.host[k] - mean.host[k] * scale(k));
  };
  // The fused output of the convolution @p conv, allowed the convolution's bound times |scale|, plus
  // 8 u of the magnitudes of the batch-norm terms (rsqrtf and the fma).
  auto fused = [&](const Reference& conv) {
    Expected e{std::vector<double>(got.size()), std::vector<double>(got.size())};
    for (std::size_t i = 0; i < got.size(); ++i) {
      const int k = static_cast<int>(i % p.K);
      e.value[i] = std::max(0.0, before_relu(conv, i));
      e.allowed[i] = std::fabs(scale(k)) * gamma_n(conv.terms[i] + 1) * conv.magnitude[i] +
                     8 * kU * (std::fabs(conv.value[i] * scale(k)) + std::fabs(beta.host[k]) +
                               std::fabs(mean.host[k] * scale(k)));
    }
    return e;
  };
  const Reference conv_ref = reference(Pass::kForward, p, Layout::kNHWC, x.host, w.host);
  const Expected e = fused(conv_ref);
  const auto why = [&](std::size_t i) {
    const int k = static_cast<int>(i % p.K);
    const double biased = (conv_ref.value[i] - mean.host[k]) * gamma.host[k] / std::sqrt(var.host[k]) + beta.host[k];
    const bool without_eps = std::fabs(got[i] - std::max(0.0, biased)) <= e.allowed[i] &&
                             std::fabs(biased - e.value[i]) > e.allowed[i];
    return sentences(
        {before_relu(conv_ref, i) < 0 && got[i] < 0 ? "The value before the ReLU is negative: max(0, v) makes it 0."
                                                     : "",
         name_mistake(candidates(Pass::kForward), got,
                      [&](Mistake m) { return fused(reference(Pass::kForward, p, Layout::kNHWC, x.host, w.host, m)); }),
         without_eps ? "It equals the result without eps: normalize by sqrt(running_var + eps)." : ""});
  };
  const Namer name = arrays(Pass::kForward, p, Layout::kNHWC).name;
  return wb::check::compare_elements(call, "y", got, e.value, e.allowed, name, why);
}

// ---- the correctness sweeps ---------------------------------------------------------------------------------

// A case of a sweep: a shape, its data and seed; layer: the ResNet-50 layer it is, if any.
struct Case {
  ConvParams p;
  Data d;
  std::uint64_t seed;
  const char* layer = nullptr;
};

// Every shape of kShapes with integer-valued then uniform inputs, then (with @p resnet) ResNet-50's
// layers with integer-valued inputs, at seeds @p seed + 7, + 14, ...
std::vector<Case> sweep(std::uint64_t seed, bool resnet) {
  std::vector<Case> cases;
  for (const ConvParams& p : kShapes) {
    for (Data d : {Data::kInteger, Data::kUniform}) cases.push_back({p, d, seed += 7});
  }
  if (resnet) {
    for (const NamedShape& s : kResNet) cases.push_back({s.sim, Data::kInteger, seed += 7, s.name});
  }
  return cases;
}

// @p v on each of @p cases in order, counted as they pass; a failure on a ResNet-50 layer names it.
testing::AssertionResult check_cases(const Version& v, const std::vector<Case>& cases) {
  return wb::check::for_each_case(cases, [&](const Case& c) {
    testing::AssertionResult r = check_version(v, c.p, c.d, c.seed);
    if (!r && c.layer != nullptr) r << " (ResNet-50 " << c.layer << ")";
    return r;
  });
}

}  // namespace

// ---- Correctness --------------------------------------------------------------------------------------------

// What passes, for ConvDirect, ConvIm2col, ConvImplicitGemm, ConvForward.
constexpr char kConvForwardPasses[] = "9 shapes (listed above) with integer-valued inputs (bit-exact) and uniform "
                                      "inputs; versions 2 to 4 also ResNet-50's five layer shapes at batch 1 and a "
                                      "reduced image";

WB_CHECK(Correctness, ConvDirect, .weight = 1,
         .passes = kConvForwardPasses,
         .hint = "A thread per output, q fastest: h = p * stride_h - pad_h + r * dilation_h, w = q * "
                 "stride_w - pad_w + s * dilation_w; skip taps with h or w outside the image; w is K x C "
                 "x R x S.") { WB_ASSERT(check_cases(kDirect, sweep(100, false))); }

WB_CHECK(Correctness, ConvIm2col, .weight = 2,
         .passes = kConvForwardPasses,
         .hint = "col[((c * R + r) * S + s) * P * Q + p * Q + q] = x[n][c][h][w] or 0; then sgemm(K, P * "
                 "Q, C * R * S, 1, w, C * R * S, col, P * Q, 0, y + n * K * P * Q, P * Q) per image. "
                 "Your lab-05 sgemm must pass its checks first.") { WB_ASSERT(check_cases(kIm2col, sweep(100, true))); }

WB_CHECK(Correctness, ConvImplicitGemm, .weight = 2,
         .passes = kConvForwardPasses,
         .hint = "Rows m = (n, p, q), columns k, reduction kk = (c, r, s): decompose kk while gathering "
                 "the A tile, zeros for padding, kk >= C * R * S and m >= N * P * Q.") {
  WB_ASSERT(check_cases(kImplicit, sweep(100, true)));
}

WB_CHECK(Correctness, ConvForward, .weight = 3,
         .passes = kConvForwardPasses,
         .hint = "NHWC: x[((n * H + h) * W + w) * C + c], w[((k * R + r) * S + s) * C + c], y[((n * P + "
                 "p) * Q + q) * K + k]; kk = (r, s, c) with c fastest; float4 only when C % 4 == 0.") {
  WB_ASSERT(check_cases(kFinal, sweep(100, true)));
}

// What passes, for ConvBackwardData, ConvBackwardFilter.
constexpr char kConvBackwardPasses[] = "the same shapes; wgrad also a 4608-pixel reduction (split across blocks)";

WB_CHECK(Correctness, ConvBackwardData, .weight = 3,
         .passes = kConvBackwardPasses,
         .hint = "For input pixel h and tap r the output row is p = (h + pad_h - r * dilation_h) / "
                 "stride_h, only when the numerator is >= 0 and divisible and p < P; multiply dy there "
                 "by w[k][c][r][s] (this tap's own weight).") {
  WB_ASSERT(check_cases(kBackwardData, sweep(300, true)));
}

WB_CHECK(Correctness, ConvBackwardFilter, .weight = 3,
         .passes = kConvBackwardPasses,
         .hint = "dw[k][c][r][s] sums dy[n][k][p][q] * x[n][c][h][w] over every n, p, q: each split's "
                 "partial tile in its own workspace slice, every slice written, all of them summed.") {
  std::vector<Case> cases = sweep(400, true);
  cases.push_back({kLongReduction, Data::kUniform, 499});
  WB_ASSERT(check_cases(kBackwardFilter, cases));
}

WB_CHECK(Correctness, ConvBackwardFilterReproducible, .weight = 2,
         .passes = "three runs of wgrad on the same inputs: bitwise equal",
         .hint = "No atomicAdd: per-split partial sums in the workspace, added in a fixed order by a "
                 "second kernel.") {
  const ConvParams& p = kLongReduction;
  const std::string call = "conv2d_backward_filter(" + describe(p) + ")";
  const Input x(wb::random_floats(x_size(p), 510), "x");
  const Input dy(wb::random_floats(y_size(p), 511), "dy");
  WB_ASSERT(wb::check::same_every_run<Outcome>(
      call,
      [&](Outcome& o, int) {
        o = run_version(kBackwardFilter, p, x, dy, call);
        return o.ok;
      },
      {{"dw", &Outcome::out}},
      "The sum over N P Q must be added in the same order every time: store per-block partial sums in the "
      "workspace and add them in a fixed order in a second kernel, not with atomicAdd."));
}

WB_CHECK(Correctness, ConvBnReluInference, .weight = 2,
         .passes = "6 shapes (two with different padding, stride and dilation per axis), random "
                   "gamma, beta, running statistics",
         .hint = "Per filter k: scale = gamma / sqrt(running_var + eps), shift = beta - running_mean * "
                 "scale; y = max(0, acc * scale + shift), the ReLU last.") {
  // The last two separate every h/w pair of parameters (pad, stride, dilation): a fused kernel that
  // uses pad_h for the width axis, or stride_w for the height, is wrong on them.
  const std::vector<ConvParams> shapes = {conv(2, 8, 9, 11, 6, 1, 1), conv(1, 5, 12, 10, 70, 3, 3, 2, 1, 2),
                                          conv(2, 3, 17, 13, 5, 7, 7, 3, 2), conv(1, 64, 6, 6, 64, 3, 3, 1),
                                          ConvParams{3, 4, 8, 9, 9, 3, 2, 2, 0, 3, 1, 1, 1},
                                          ConvParams{2, 3, 11, 10, 5, 3, 3, 1, 2, 1, 2, 2, 1}};
  std::uint64_t seed = 600;
  WB_ASSERT(wb::check::for_each_case(shapes, [&](const ConvParams& p) { return check_fused(p, seed += 11); }));
}

// ---- Host code (sim) ----------------------------------------------------------------------------------------
//
// Fault injection (wb_host_checks.h): each kernel launch (and any cudaFuncSetAttribute, allocation,
// copy or memset) of every convolution fails in turn; the function must return that error at once,
// with no launch after it and no device memory left.

#if defined(CUSIM)
namespace {

struct ConvHostBuffers {
  ConvParams p;
  wb::DeviceBuffer<float> x, w, y, dx, dw, col, wgrad, gamma, beta, mean, var;
  ConvHostBuffers(ConvParams q, std::uint64_t seed)
      : p(q),
        x{std::span<const float>(wb::random_floats(x_size(q), seed, -1.0f, 1.0f))},
        w{std::span<const float>(wb::random_floats(w_size(q), seed + 1, -1.0f, 1.0f))},
        y{y_size(q)}, dx{x_size(q)}, dw{w_size(q)}, col{conv2d_im2col_workspace_floats(q)},
        wgrad{conv2d_backward_filter_workspace_floats(q)},
        gamma{std::span<const float>(wb::random_floats(std::size_t(q.K), seed + 2, 0.5f, 1.5f))},
        beta{std::span<const float>(wb::random_floats(std::size_t(q.K), seed + 3, -0.5f, 0.5f))},
        mean{std::span<const float>(wb::random_floats(std::size_t(q.K), seed + 4, -0.5f, 0.5f))},
        var{std::span<const float>(wb::random_floats(std::size_t(q.K), seed + 5, 0.5f, 2.0f))} {}
};

void add_conv_host_cases(ConvHostBuffers* b, std::vector<wb::check::host::ErrorPathCase>& cases) {
  const ConvParams p = b->p;
  const std::string shape = "(" + describe(p) + ")";
  auto add = [&](const char* function, std::function<cudaError_t()> run) {
    cases.push_back({function + shape, function, std::move(run)});
  };
  add("conv2d_direct", [b, p] { return conv2d_direct(p, b->x.data(), b->w.data(), b->y.data()); });
  add("conv2d_im2col", [b, p] { return conv2d_im2col(p, b->x.data(), b->w.data(), b->y.data(), b->col.data()); });
  add("conv2d_implicit_gemm", [b, p] { return conv2d_implicit_gemm(p, b->x.data(), b->w.data(), b->y.data()); });
  add("conv2d_forward", [b, p] { return conv2d_forward(p, b->x.data(), b->w.data(), b->y.data()); });
  add("conv2d_backward_data", [b, p] { return conv2d_backward_data(p, b->y.data(), b->w.data(), b->dx.data()); });
  add("conv2d_backward_filter",
      [b, p] { return conv2d_backward_filter(p, b->x.data(), b->y.data(), b->dw.data(), b->wgrad.data()); });
  add("conv2d_bn_relu_inference", [b, p] {
    return conv2d_bn_relu_inference(p, b->x.data(), b->w.data(), b->gamma.data(), b->beta.data(), b->mean.data(),
                                    b->var.data(), 1e-5f, b->y.data());
  });
}

}  // namespace

WB_CHECK(Correctness, ConvHostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every convolution (two shapes, stride 1 and 2): each kernel launch it makes is "
                   "made to fail in turn (cusim's fault injection); the function must return that "
                   "error at once (`cudaGetLastError()` after each launch, before the next), with no "
                   "launch after it",
         .hint = "Test cudaGetLastError() right after each launch and return its error before launching "
                 "the next kernel: if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;") {
  ConvHostBuffers a(conv(2, 3, 9, 9, 4, 3, 3, 1), 980), b(conv(1, 8, 12, 12, 16, 3, 3, 1, 2), 990);
  std::vector<wb::check::host::ErrorPathCase> cases;
  add_conv_host_cases(&a, cases);
  add_conv_host_cases(&b, cases);
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}
#endif

// ---- Analysis (sim) -----------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Every function on two shapes (a ragged one with padding, stride and dilation, and a 1 x 1), each
// run even when an earlier one failed, so that every kernel is analysed; fails on any report of
// @p tools (named @p what), reports first.
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    std::uint64_t seed = 700;
    for (const ConvParams& p : {ConvParams{2, 5, 9, 7, 6, 3, 2, 1, 1, 2, 1, 1, 2}, conv(1, 4, 5, 6, 3, 1, 1)}) {
      for (const Version* v : {&kDirect, &kIm2col, &kImplicit, &kFinal, &kBackwardData, &kBackwardFilter}) {
        keep_first(check_version(*v, p, Data::kUniform, seed += 3));
      }
      keep_first(check_fused(p, seed += 3));
    }
  });
}

}  // namespace

// What passes, for ConvMemcheckClean, ConvRacecheckClean.
constexpr char kConvAnalysisPasses[] = "no report, every function, a ragged strided dilated shape and a 1 x 1 one";

WB_CHECK(Analysis, ConvMemcheckClean, .weight = 2, .backends = "sim",
         .passes = kConvAnalysisPasses,
         .hint = "Test every gathered pixel against the image and every tile index against M, K and C * "
                 "R * S; read only workspace slices this call wrote.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, ConvRacecheckClean, .weight = 2, .backends = "sim",
         .passes = kConvAnalysisPasses,
         .hint = "__syncthreads() after storing a tile and before reading it, and again before the next "
                 "step overwrites it (or double-buffer).") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}

WB_CHECK(Analysis, WgradNoAtomics, .weight = 2, .backends = "sim",
         .passes = "`conv2d_backward_filter` uses no atomic operation",
         .hint = "Split the N * P * Q reduction into workspace slices summed in order by a second "
                 "kernel, not atomicAdd into dw.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  wb::check::Traffic t;
  WB_ASSERT_ANALYSIS_RUN(
      wb::check::measure([] { return check_version(kBackwardFilter, kLongReduction, Data::kUniform, 520); }, t,
                         "conv2d_backward_filter"),
      "atomic operations");
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_backward_filter: " + std::to_string(t.atomics) + " atomics");
  if (t.atomics != 0) {
    FAIL() << "conv2d_backward_filter(" << describe(kLongReduction) << "): " << t.atomics
           << " atomic operations. Float atomics add in whatever order the blocks arrive, so the result's last bits "
              "change from run to run on a GPU. Store per-block partial sums in the workspace and add them in a "
              "second kernel in a fixed order.";
  }
#endif
}
#endif

// ---- Performance --------------------------------------------------------------------------------------------

#if defined(CUSIM)

namespace {

#if WB_HAVE_CUSIM_ANALYSIS
// The shape the sim metrics are measured at: a ResNet layer.
const ConvParams kMetricShape = conv(1, 64, 14, 14, 64, 3, 3, 1);

// Runs @p v's correctness check at kMetricShape on integer-valued inputs (@p seed), adding the
// metrics of its kernels to @p t.
testing::AssertionResult measure_version(const Version& v, std::uint64_t seed, wb::check::Traffic& t) {
  return wb::check::measure([&] { return check_version(v, kMetricShape, Data::kInteger, seed); }, t, v.name);
}

// The call the metrics are of, "conv2d_implicit_gemm(N=1, C=64, ...)".
std::string metric_call(const Version& v) { return std::string(v.name) + "(" + describe(kMetricShape) + ")"; }
#endif

}  // namespace

WB_CHECK(Performance, ImplicitGemmNoWorkspace, .weight = 3, .backends = "sim",
         .passes = "`conv2d_implicit_gemm` and `conv2d_forward` write exactly the bytes of y",
         .hint = "Gather the im2col tile into shared memory while loading it from x; write nothing but y.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::string text;
  const double y_bytes = 4.0 * static_cast<double>(y_size(kMetricShape));
  for (const Version* v : {&kIm2col, &kImplicit, &kFinal}) {
    wb::check::Traffic t;
    WB_ASSERT(measure_version(*v, 800, t));
    WB_REQUIRE_ANALYSIS();
    const double ratio = t.bytes_written / y_bytes;
    wb::check::append_measured(text, std::string(v->name) + " wrote " + fixed(ratio) + " x y");
    if (v != &kIm2col && t.bytes_written > y_bytes) {
      FAIL() << metric_call(*v) << " wrote " << t.bytes_written << " bytes to global memory, " << fixed(ratio)
             << " x the " << y_bytes
             << " bytes of y. An implicit GEMM keeps the im2col matrix virtual: build each tile of it in shared "
                "memory straight from x, and write only y.";
    }
  }
#endif
}

WB_CHECK(Performance, ImplicitGemmReuse, .weight = 3, .backends = "sim",
         .limits = {{"max_bytes_per_flop", 0.15}},
         .passes = "`conv2d_implicit_gemm` reads <= {max_bytes_per_flop} bytes of global memory per flop",
         .hint = "Each block loads a tile of x and one of w into shared memory once per step of the "
                 "reduction and reuses each element for a whole row or column of its output tile.") {
  constexpr double kMaxBytesPerFlop = WB_LIMIT("max_bytes_per_flop");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  wb::check::Traffic direct, implicit;
  WB_ASSERT(measure_version(kDirect, 810, direct));
  WB_ASSERT(measure_version(kImplicit, 811, implicit));
  WB_REQUIRE_ANALYSIS();
  const double f = flops(kMetricShape);
  const double per_flop = implicit.bytes_read / f;
  wb::check::record_measured("conv2d_implicit_gemm " + fixed(per_flop, 3) + " bytes/flop (conv2d_direct " +
                             fixed(direct.bytes_read / f, 3) + ")");
  if (per_flop > kMaxBytesPerFlop) {
    FAIL() << metric_call(kImplicit) << " read " << fixed(per_flop, 3) << " bytes of global memory per flop (at most "
           << wb::check::as_written(kMaxBytesPerFlop) << "; conv2d_direct reads " << fixed(direct.bytes_read / f, 3)
           << "). Load each tile of the virtual im2col matrix and of the filters into shared memory once per step "
              "along C R S, and compute a tile of outputs from it (a 64 x 64 tile reads about 0.06 bytes per flop).";
  }
#endif
}

WB_CHECK(Performance, ImplicitGemmCoalesced, .weight = 2, .backends = "sim", .limits = {{"max_sectors", 8.0}},
         .passes = "its global loads touch <= {max_sectors} sectors per request",
         .hint = "Let consecutive lanes gather consecutive output pixels (m) of the im2col tile: at stride "
                 "1 they read consecutive pixels of x.") {
  constexpr double kMaxSectors = WB_LIMIT("max_sectors");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  wb::check::Traffic t;
  WB_ASSERT(measure_version(kImplicit, 820, t));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_implicit_gemm loads " + fixed(t.loads()) + " sectors/request, stores " +
                             fixed(t.stores()));
  if (t.loads() > kMaxSectors) {
    FAIL() << metric_call(kImplicit) << ": global loads touch " << fixed(t.loads())
           << " 32-byte sectors per warp request (at most " << wb::check::as_written(kMaxSectors)
           << "). In x (NCHW) the pixels of a row are consecutive: give consecutive lanes consecutive output pixels "
              "of the tile, and consecutive lanes of the filter load consecutive taps of one filter.";
  }
#endif
}

WB_CHECK(Performance, ImplicitGemmSharedConflicts, .weight = 2, .backends = "sim",
         .limits = {{"max_wavefronts", 1.25}},
         .passes = "its shared loads and stores take <= {max_wavefronts} wavefronts per request",
         .hint = "A tile stored transposed (Bs[kk][k] from rows of w) conflicts in 32-bit banks when its "
                 "row length is a multiple of 32: pad each row by a few floats.") {
  constexpr double kMaxWavefronts = WB_LIMIT("max_wavefronts");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  wb::check::Traffic t;
  WB_ASSERT(measure_version(kImplicit, 830, t));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_implicit_gemm shared loads " + fixed(t.shared_loads()) + ", stores " +
                             fixed(t.shared_stores()) + " wavefronts/request");
  if (t.shared_requests() == 0) {
    FAIL() << metric_call(kImplicit) << " used no shared memory: version 3 gathers its tiles into shared memory.";
  }
  if (t.shared_loads() > kMaxWavefronts || t.shared_stores() > kMaxWavefronts) {
    FAIL() << metric_call(kImplicit) << ": shared-memory loads take " << fixed(t.shared_loads()) << " and stores "
           << fixed(t.shared_stores()) << " wavefronts per request (at most " << wb::check::as_written(kMaxWavefronts)
           << ": bank conflicts). Lanes that store one column of a transposed tile hit the same bank when the row "
              "length is a multiple of 32 floats: pad the rows (e.g. [8][64 + 4]).";
  }
#endif
}

WB_CHECK(Performance, ForwardVectorized, .weight = 3, .backends = "sim",
         .limits = {{"min_bytes_per_request", 384.0}, {"max_bytes_per_flop", 0.10}},
         .passes = "`conv2d_forward` loads >= {min_bytes_per_request} bytes per request (16-byte loads) "
                   "and reads <= {max_bytes_per_flop:.2f} bytes per flop",
         .hint = "With C % 4 == 0, four consecutive taps along C R S are four adjacent channels of one "
                 "pixel: load them as one float4, from x and from w alike.") {
  constexpr double kMinBytesPerRequest = WB_LIMIT("min_bytes_per_request");
  constexpr double kMaxBytesPerFlop = WB_LIMIT("max_bytes_per_flop");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  wb::check::Traffic t;
  WB_ASSERT(measure_version(kFinal, 840, t));
  WB_REQUIRE_ANALYSIS();
  const double per_request = wb::check::Traffic::ratio(t.bytes_read, t.load_requests);
  const double per_flop = t.bytes_read / flops(kMetricShape);
  wb::check::record_measured("conv2d_forward " + fixed(per_request) + " bytes/load request, " + fixed(per_flop, 3) +
                             " bytes/flop");
  if (per_request < kMinBytesPerRequest) {
    FAIL() << metric_call(kFinal) << ": global loads carry " << fixed(per_request)
           << " bytes per warp request (at least " << wb::check::as_written(kMinBytesPerRequest)
           << "; 32 lanes of 4-byte loads carry 128, of 16-byte loads 512). In NHWC the channels of a pixel are "
              "contiguous, and so are those of a filter tap in KRSC: load four at a time as a float4 when C % 4 == 0.";
  }
  if (per_flop > kMaxBytesPerFlop) {
    FAIL() << metric_call(kFinal) << " read " << fixed(per_flop, 3) << " bytes per flop (at most "
           << fixed(kMaxBytesPerFlop) << "): reuse each tile from shared memory across a block tile of outputs.";
  }
#endif
}

#else  // the cuda backend: timed against cuDNN

namespace {

#if defined(WB_HAVE_CUDA_BASELINES)
const wb::TimingOptions kTiming{.warmup = 2, .repetitions = 11};

// Validates the output @p got of @p v (shape @p p) against cuDNN's @p expected, within 2 gamma(T + 1) T
// of it (uniform data in [-1, 1): sum |terms| <= T for T terms).
testing::AssertionResult close_to(const Version& v, const ConvParams& p, const std::vector<float>& got,
                                  const std::vector<float>& expected, std::size_t terms) {
  const double allowed = 2.0 * gamma_n(terms + 1) * static_cast<double>(terms);
  const wb::check::Mismatches m = wb::check::find_mismatches(
      got.size(), [&](std::size_t i) { return !wb::check::within(got[i], expected[i], allowed); });
  if (m.none()) return testing::AssertionSuccess();
  const Arrays io = arrays(v.pass, p, v.layout);
  return wb::check::wrong_elements(std::string(v.name) + "(" + describe(p) + ")", io.out, m, got.size(),
                                   io.name(m.first), got[m.first], expected[m.first], allowed,
                                   "The expected values are cuDNN's output.");
}

// The median times of cuDNN's @p base (timed first) and of @p v's @p run on @p p. The run is validated
// before timing and after it with @p verify, the timed runs each given changed inputs by @p change
// (wb_timed.h); a failure names @p v on @p p.
struct VsCudnn {
  double base_ms = 0.0, ours_ms = 0.0;
  double ratio() const { return base_ms / ours_ms; }  // our speed as a multiple of cuDNN's
};
testing::AssertionResult time_vs_cudnn(const Version& v, const ConvParams& p, const std::function<void()>& base,
                                       const std::function<cudaError_t()>& run, const std::function<void()>& change,
                                       const std::function<std::string()>& verify, VsCudnn& times) {
  times.base_ms = wb::time_median(base, kTiming).median_ms;
  wb::Bandwidth ours;
  if (auto r = wb::check::timed_and_verified(std::string(v.name) + "(" + describe(p) + ")", flops(p), run, change,
                                             verify, ours, kTiming);
      !r) {
    return r;
  }
  times.ours_ms = ours.timing.median_ms;
  return testing::AssertionSuccess();
}
#endif

}  // namespace

WB_CHECK(Performance, ForwardVsCudnn, .weight = 8, .backends = "cuda", .timeout_s = 600,
         .limits = {{"min_ratio", 0.5}},
         .passes = "`conv2d_forward` >= {min_ratio} x cuDNN's fastest FP32 forward (NHWC, found by "
                   "`cudnnFindConvolutionForwardAlgorithm`, FMA math: no TF32), timed in the same "
                   "run, on each of ResNet-50's layers at N = 32: conv2_x 3 x 3 C64 56 x 56 K64, "
                   "conv3_x C128 28 x 28, conv4_x C256 14 x 14, the 7 x 7 stride-2 stem on 224 x "
                   "224, 1 x 1 C256 -> K64 at 56 x 56; validated against cuDNN's output first",
         .hint = "Lab 05's register blocking on the implicit GEMM: 8 x 8 results per thread from float4 "
                 "shared loads, float4 global loads along C, double-buffered tiles; close other GPU "
                 "programs.") {
  WB_ASSERT(check_version(kFinal, kResNet[0].sim, Data::kInteger, 900));
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this check binary was built without cuDNN (libcudnn was not found)");
#else
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  try {
    std::string text;
    std::vector<std::string> slow;
    for (const NamedShape& s : kResNet) {
      const ConvParams& p = s.gpu;
      std::vector<float> xs = wb::random_floats(x_size(p), 901);
      const std::vector<float> ws = wb::random_floats(w_size(p), 902);
      wb::DeviceBuffer<float> x{std::span<const float>(xs)}, w{std::span<const float>(ws)};
      wb::DeviceBuffer<float> y(y_size(p)), y_ref(y_size(p));
      CudnnConv cudnn(p, CudnnConv::kNHWC);
      wb::check::ChangingInput<float> changing(xs, x.data());
      VsCudnn t;
      WB_ASSERT(time_vs_cudnn(
          kFinal, p, [&] { cudnn.forward(x.data(), w.data(), y_ref.data()); },
          [&] { return conv2d_forward(p, x.data(), w.data(), y.data()); }, [&] { changing.change(); },
          [&] {
            cudnn.forward(x.data(), w.data(), y_ref.data());
            WB_CUDA_CHECK(cudaDeviceSynchronize());
            return wb::check::failure_text(
                close_to(kFinal, p, y.download(), y_ref.download(), static_cast<std::size_t>(p.C) * p.R * p.S));
          },
          t));
      const double ratio = t.ratio();
      wb::check::append_measured(text, std::string(s.name) + " " + fixed(ratio) + " x cuDNN (" +
                                 fixed(flops(p) / t.ours_ms / 1e9, 1) + " vs " +
                                 fixed(flops(p) / t.base_ms / 1e9, 1) + " TFLOP/s, " +
                                 cudnn.forward_algorithm() + ")");
      if (ratio < kMinRatio) slow.push_back(s.name);
    }
    if (!slow.empty()) {
      FAIL() << "conv2d_forward is below " << wb::check::as_written(kMinRatio) << " x cuDNN on " << slow.size()
             << " ResNet-50 layer(s): " << text
             << ". Register-block the implicit GEMM as in lab 05 (8 x 8 results per thread from float4 shared-memory "
                "loads), load both tiles with float4 along C, and overlap the next tile's global loads with this "
                "tile's arithmetic (double buffering).";
    }
  } catch (const std::exception& e) {
    FAIL() << "a CUDA or cuDNN call failed while timing conv2d_forward: " << e.what();
  }
#endif
}

WB_CHECK(Performance, BackwardVsCudnn, .weight = 6, .backends = "cuda", .timeout_s = 600,
         .limits = {{"min_ratio", 0.5}},
         .passes = "dgrad and wgrad >= {min_ratio} x `cudnnConvolutionBackwardData` / `BackwardFilter` "
                   "(NCHW) on the three 3 x 3 layers",
         .hint = "Register-block dgrad and wgrad as the forward; give wgrad enough splits of the N * P * "
                 "Q reduction to fill the GPU.") {
  WB_ASSERT(check_version(kBackwardData, kResNet[0].sim, Data::kInteger, 910));
  WB_ASSERT(check_version(kBackwardFilter, kResNet[0].sim, Data::kInteger, 911));
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this check binary was built without cuDNN (libcudnn was not found)");
#else
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  try {
    std::string text;
    std::vector<std::string> slow;
    for (std::size_t i = 0; i < 3; ++i) {  // the 3 x 3 layers
      const NamedShape& s = kResNet[i];
      const ConvParams& p = s.gpu;
      const std::vector<float> xs = wb::random_floats(x_size(p), 912), ws = wb::random_floats(w_size(p), 913);
      std::vector<float> dys = wb::random_floats(y_size(p), 914);
      wb::DeviceBuffer<float> x{std::span<const float>(xs)}, w{std::span<const float>(ws)},
          dy{std::span<const float>(dys)};
      wb::DeviceBuffer<float> dx(x_size(p)), dx_ref(x_size(p)), dw(w_size(p)), dw_ref(w_size(p));
      wb::DeviceBuffer<float> workspace(conv2d_backward_filter_workspace_floats(p));
      CudnnConv cudnn(p, CudnnConv::kNCHW);
      wb::check::ChangingInput<float> changing(dys, dy.data());
      VsCudnn data, filter;
      WB_ASSERT(time_vs_cudnn(
          kBackwardData, p, [&] { cudnn.backward_data(dy.data(), w.data(), dx_ref.data()); },
          [&] { return conv2d_backward_data(p, dy.data(), w.data(), dx.data()); }, [&] { changing.change(); },
          [&] {
            cudnn.backward_data(dy.data(), w.data(), dx_ref.data());
            WB_CUDA_CHECK(cudaDeviceSynchronize());
            return wb::check::failure_text(close_to(kBackwardData, p, dx.download(), dx_ref.download(),
                                                    static_cast<std::size_t>(p.K) * p.R * p.S));
          },
          data));
      WB_ASSERT(time_vs_cudnn(
          kBackwardFilter, p, [&] { cudnn.backward_filter(x.data(), dy.data(), dw_ref.data()); },
          [&] { return conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), workspace.data()); },
          [&] { changing.change(); },
          [&] {
            cudnn.backward_filter(x.data(), dy.data(), dw_ref.data());
            WB_CUDA_CHECK(cudaDeviceSynchronize());
            return wb::check::failure_text(
                close_to(kBackwardFilter, p, dw.download(), dw_ref.download(), y_size(p) / p.K));
          },
          filter));
      const double data_ratio = data.ratio(), filter_ratio = filter.ratio();
      wb::check::append_measured(text, std::string(s.name) + " dgrad " + fixed(data_ratio) + " x, wgrad " +
                                 fixed(filter_ratio) + " x cuDNN");
      if (data_ratio < kMinRatio) slow.push_back(std::string("dgrad ") + s.name);
      if (filter_ratio < kMinRatio) slow.push_back(std::string("wgrad ") + s.name);
    }
    if (!slow.empty()) {
      FAIL() << slow.size() << " backward pass(es) below " << wb::check::as_written(kMinRatio) << " x cuDNN: " << text
             << ". Register-block both implicit GEMMs as in the forward; for wgrad split the N P Q reduction over "
                "enough blocks to fill the GPU.";
    }
  } catch (const std::exception& e) {
    FAIL() << "a CUDA or cuDNN call failed while timing the backward passes: " << e.what();
  }
#endif
}

#endif
