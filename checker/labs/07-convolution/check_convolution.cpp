// Checks for lab 07, part 1: convolution forward (the ladder), backward data and filter, and the
// fused convolution + batch norm + ReLU.
//
// Correctness: every output is compared with a double-precision reference computed on the host
// from the same float inputs, element by element.
//   - Integer-valued inputs (x, dy in [-3, 3], w in [-2, 2]): every product and every partial sum is
//     an integer far below 2^24, exact in float in any order, so results must match bit for bit.
//   - Random inputs in [-1, 1): a sum of T products rounded in any order is within
//     gamma(T) = T u / (1 - T u) of sum |terms| (u = 2^-24); T = C R S for the forward, K R S for
//     dgrad, N P Q for wgrad.
//   - The fused inference block: the convolution's bound times |scale|, plus 8 u of the magnitudes of
//     the batch-norm terms (rsqrtf and the fma).
//   A wrong result is compared with the known mistakes, computed on the host too (padding not
//   subtracted, stride applied twice, the filter read as C x K or flipped, dilation ignored): a match
//   is named in the message. Shapes cover C = 3, K = 1, 1 x 1 filters, a 7 x 7 stride-2 stem,
//   dilation, asymmetric padding and stride, P = Q = 1, H and W that are multiples of no tile, and
//   ResNet-50's layer shapes at a reduced batch and image (the GPU performance checks run them at
//   full size, validated against cuDNN). Inputs are surrounded by NaN (a read outside shows), outputs
//   start as 0xFF bytes (an element never written shows) and carry guard zones.
// Reproducibility: wgrad runs three times on the same inputs: bitwise equal results.
// Analysis (sim): cusim memcheck/initcheck and racecheck/synccheck report nothing for any version;
//   wgrad uses no atomics.
// Performance (sim), with cusim analysis metrics, at N=1 C=64 H=W=14 K=64 3 x 3 (a ResNet layer);
// each check's limits are the .limits of its WB_CHECK:
//   - conv2d_implicit_gemm and conv2d_forward write y and nothing else (bytes written = 4 N K P Q:
//     no im2col workspace);
//   - conv2d_implicit_gemm: global bytes read per flop at most max_bytes_per_flop (tiles reused
//     from shared memory; the direct version reads about 4), global loads at most max_sectors
//     sectors per request, shared-memory stores and loads at most max_wavefronts wavefronts per
//     request (no bank conflicts on the tiles);
//   - conv2d_forward (NHWC): global loads carry at least min_bytes_per_request bytes per request
//     (16-byte loads; 4-byte loads carry at most 128) and bytes read per flop at most
//     max_bytes_per_flop.
// Performance (cuda): conv2d_forward against cuDNN's fastest forward algorithm
//   (cudnnFindConvolutionForwardAlgorithm, NHWC, FP32 FMA math: no TF32) on ResNet-50's layers at
//   N = 32, timed in the same run: at least min_ratio x each; dgrad and wgrad against
//   cudnnConvolutionBackwardData/Filter (NCHW) on the 3 x 3 layers: at least min_ratio x each.
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

#include "convolution.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

#if defined(WB_HAVE_CUDA_BASELINES)
#include "cudnn_baselines.h"
#endif

namespace {

using wb::check::fixed;

using wb::check::after_call;
using wb::check::cuda_success;
using wb::check::never_written;
using Input = wb::check::Input<float>;
using Output = wb::check::Output<float>;

constexpr std::size_t kGuard = wb::DeviceBuffer<float>::kDefaultGuard;
constexpr double kU = 0x1.0p-24;

double gamma_n(std::size_t terms) {
  const double t = static_cast<double>(terms) * kU;
  return t / (1.0 - t);
}

std::string number(double v) { return wb::check::significant(v, 7); }

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

// ---- host references, correct and with the known mistakes -------------------------------------------------

enum class Mistake {
  kNone, kPaddingNotSubtracted, kStrideTwice, kFilterCK, kFlipped, kNoDilation,
  // One axis's parameter used for both axes (a copy-pasted index expression): *_h for the width,
  // or *_w for the height.
  kPadHBoth, kPadWBoth, kStrideHBoth, kStrideWBoth, kDilationHBoth, kDilationWBoth
};

const std::vector<Mistake> kAxisMistakes = {Mistake::kPadHBoth,    Mistake::kPadWBoth,       Mistake::kStrideHBoth,
                                            Mistake::kStrideWBoth, Mistake::kDilationHBoth, Mistake::kDilationWBoth};

bool axis_mistake(Mistake m) { return std::find(kAxisMistakes.begin(), kAxisMistakes.end(), m) != kAxisMistakes.end(); }

// The parameters as a kernel with axis mistake @p m uses them (p itself for any other mistake).
ConvParams as_used(ConvParams p, Mistake m) {
  switch (m) {
    case Mistake::kPadHBoth: p.pad_w = p.pad_h; break;
    case Mistake::kPadWBoth: p.pad_h = p.pad_w; break;
    case Mistake::kStrideHBoth: p.stride_w = p.stride_h; break;
    case Mistake::kStrideWBoth: p.stride_h = p.stride_w; break;
    case Mistake::kDilationHBoth: p.dilation_w = p.dilation_h; break;
    case Mistake::kDilationWBoth: p.dilation_h = p.dilation_w; break;
    default: break;
  }
  return p;
}

const char* explain(Mistake m) {
  switch (m) {
    case Mistake::kNone: return "";
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
    case Mistake::kPadHBoth:
      return "the result equals a convolution that uses pad_h for the width axis too: column w = q * stride_w - "
             "pad_w + s * dilation_w (each axis has its own padding, stride and dilation).";
    case Mistake::kPadWBoth:
      return "the result equals a convolution that uses pad_w for the height axis too: row h = p * stride_h - "
             "pad_h + r * dilation_h (each axis has its own padding, stride and dilation).";
    case Mistake::kStrideHBoth:
      return "the result equals a convolution that uses stride_h for the width axis too: column w = q * stride_w "
             "- pad_w + s * dilation_w (each axis has its own padding, stride and dilation).";
    case Mistake::kStrideWBoth:
      return "the result equals a convolution that uses stride_w for the height axis too: row h = p * stride_h - "
             "pad_h + r * dilation_h (each axis has its own padding, stride and dilation).";
    case Mistake::kDilationHBoth:
      return "the result equals a convolution that uses dilation_h for the width axis too: column w = q * "
             "stride_w - pad_w + s * dilation_w (each axis has its own padding, stride and dilation).";
    case Mistake::kDilationWBoth:
      return "the result equals a convolution that uses dilation_w for the height axis too: row h = p * stride_h "
             "- pad_h + r * dilation_h (each axis has its own padding, stride and dilation).";
  }
  return "";
}

struct Reference {
  std::vector<double> value, magnitude;  // magnitude: sum of |terms|
  std::vector<std::uint32_t> terms;      // number of products in the sum
};

// Input row of output row pp and tap r under mistake m (and likewise for columns).
int source_row(const ConvParams& actual, int pp, int r, Mistake m) {
  const ConvParams p = as_used(actual, m);
  switch (m) {
    case Mistake::kPaddingNotSubtracted: return pp * p.stride_h + r * p.dilation_h;
    case Mistake::kStrideTwice: return pp * p.stride_h * p.stride_h - p.pad_h + r * p.dilation_h;
    case Mistake::kNoDilation: return pp * p.stride_h - p.pad_h + r;
    default: return pp * p.stride_h - p.pad_h + r * p.dilation_h;
  }
}
int source_col(const ConvParams& actual, int q, int s, Mistake m) {
  const ConvParams p = as_used(actual, m);
  switch (m) {
    case Mistake::kPaddingNotSubtracted: return q * p.stride_w + s * p.dilation_w;
    case Mistake::kStrideTwice: return q * p.stride_w * p.stride_w - p.pad_w + s * p.dilation_w;
    case Mistake::kNoDilation: return q * p.stride_w - p.pad_w + s;
    default: return q * p.stride_w - p.pad_w + s * p.dilation_w;
  }
}
// The filter element tap (k, c, r, s) reads under mistake m.
double filter_at(const ConvParams& p, Layout l, const std::vector<float>& w, int k, int c, int r, int s, Mistake m) {
  switch (m) {
    case Mistake::kFlipped: return w[w_index(p, l, k, c, p.R - 1 - r, p.S - 1 - s)];
    case Mistake::kFilterCK:  // the filters read as C x K x R x S (NHWC: C x R x S x K)
      return w[l == Layout::kNCHW ? ((static_cast<std::size_t>(c) * p.K + k) * p.R + r) * p.S + s
                                  : ((static_cast<std::size_t>(c) * p.R + r) * p.S + s) * p.K + k];
    default: return w[w_index(p, l, k, c, r, s)];
  }
}

// Calls f(n, k, pp, q, c, h, w, r, s) for every product of the convolution (taps inside the image).
template <class F>
void for_each_tap(const ConvParams& p, Mistake m, F&& f) {
  const int P = conv_out_h(p), Q = conv_out_w(p);
  for (int n = 0; n < p.N; ++n)
    for (int k = 0; k < p.K; ++k)
      for (int pp = 0; pp < P; ++pp)
        for (int q = 0; q < Q; ++q)
          for (int c = 0; c < p.C; ++c)
            for (int r = 0; r < p.R; ++r) {
              const int h = source_row(p, pp, r, m);
              if (h < 0 || h >= p.H) continue;
              for (int s = 0; s < p.S; ++s) {
                const int w = source_col(p, q, s, m);
                if (w < 0 || w >= p.W) continue;
                f(n, k, pp, q, c, h, w, r, s);
              }
            }
}

// Sums term(tap) into element output(tap) of a reference of @p size elements, over every product
// of the convolution (taps inside the image, placed as mistake @p m places them). A tap is
// (n, k, p, q, c, h, w, r, s).
template <class Output, class Term>
Reference sum_taps(const ConvParams& p, Mistake m, std::size_t size, Output output, Term term) {
  Reference ref;
  ref.value.assign(size, 0.0);
  ref.magnitude.assign(size, 0.0);
  ref.terms.assign(size, 0);
  for_each_tap(p, m, [&](int n, int k, int pp, int q, int c, int h, int ww, int r, int s) {
    const double t = term(n, k, pp, q, c, h, ww, r, s);
    const std::size_t i = output(n, k, pp, q, c, h, ww, r, s);
    ref.value[i] += t;
    ref.magnitude[i] += std::fabs(t);
    ++ref.terms[i];
  });
  return ref;
}

Reference forward_reference(const ConvParams& p, Layout l, const std::vector<float>& x, const std::vector<float>& w,
                            Mistake m = Mistake::kNone) {
  return sum_taps(
      p, m, y_size(p), [&](int n, int k, int pp, int q, int, int, int, int, int) { return y_index(p, l, n, k, pp, q); },
      [&](int n, int k, int, int, int c, int h, int ww, int r, int s) {
        return static_cast<double>(x[x_index(p, l, n, c, h, ww)]) * filter_at(p, l, w, k, c, r, s, m);
      });
}

// dx (NCHW) from dy (NKPQ) and w (KCRS); @p m applies to the filter only.
Reference dgrad_reference(const ConvParams& p, const std::vector<float>& dy, const std::vector<float>& w,
                          Mistake m = Mistake::kNone) {
  constexpr Layout l = Layout::kNCHW;
  return sum_taps(
      p, axis_mistake(m) ? m : Mistake::kNone, x_size(p),
      [&](int n, int, int, int, int c, int h, int ww, int, int) { return x_index(p, l, n, c, h, ww); },
      [&](int n, int k, int pp, int q, int c, int, int, int r, int s) {
        return static_cast<double>(dy[y_index(p, l, n, k, pp, q)]) * filter_at(p, l, w, k, c, r, s, m);
      });
}

// dw (KCRS) from x (NCHW) and dy (NKPQ).
Reference wgrad_reference(const ConvParams& p, const std::vector<float>& x, const std::vector<float>& dy,
                          Mistake m = Mistake::kNone) {
  constexpr Layout l = Layout::kNCHW;
  return sum_taps(
      p, m, w_size(p), [&](int, int k, int, int, int c, int, int, int r, int s) { return w_index(p, l, k, c, r, s); },
      [&](int n, int k, int pp, int q, int c, int h, int ww, int, int) {
        return static_cast<double>(dy[y_index(p, l, n, k, pp, q)]) * x[x_index(p, l, n, c, h, ww)];
      });
}

// ---- data ---------------------------------------------------------------------------------------------------

enum class Data { kInteger, kUniform };

std::vector<float> make_data(std::size_t n, Data d, std::uint64_t seed, int range) {
  if (d == Data::kUniform) return wb::random_floats(n, seed, -1.0f, 1.0f);
  const std::vector<int> ints = wb::random_ints(n, seed, -range, range);
  return std::vector<float>(ints.begin(), ints.end());
}

// ---- comparing ----------------------------------------------------------------------------------------------

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

Namer y_namer(const ConvParams& p, Layout l) {
  const int P = conv_out_h(p), Q = conv_out_w(p);
  return l == Layout::kNCHW ? namer4("y", "n", "k", "p", "q", p.K, P, Q) : namer4("y", "n", "p", "q", "k", P, Q, p.K);
}

// Exact (integer data) or within gamma(terms) * magnitude (+ extra) of the reference.
bool matches(const Reference& ref, std::size_t i, float got, Data d, double extra = 0.0) {
  if (d == Data::kInteger && extra == 0.0) return static_cast<double>(got) == ref.value[i];
  const double allowed = gamma_n(ref.terms[i] + 1) * ref.magnitude[i] + extra;
  return std::isfinite(got) && std::fabs(got - ref.value[i]) <= allowed;
}

testing::AssertionResult compare(const std::string& call, const char* array, const Reference& ref,
                                 const std::vector<float>& got, Data d, const Namer& name,
                                 const std::function<std::string()>& diagnose) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!matches(ref, i, got[i], d) && bad++ == 0) first = i;
  }
  if (bad == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << bad << " of " << got.size() << " elements of " << array << " are wrong; the first is "
          << name(first) << ": got ";
  if (never_written(got[first])) {
    failure << "nothing (never written: still the 0xFF bytes the checker put there)";
  } else {
    failure << number(got[first]);
  }
  failure << ", expected " << number(ref.value[first]);
  if (d == Data::kInteger) {
    failure << " exactly (integer-valued inputs: every sum is exact in float)";
  } else {
    failure << " (allowed difference " << number(gamma_n(ref.terms[first] + 1) * ref.magnitude[first]) << ")";
  }
  failure << ".";
  if (ref.terms[first] == 0 && !never_written(got[first])) {
    failure << " No tap of this element lies inside the image: it is 0.";
  }
  if (std::isnan(got[first]) && !never_written(got[first])) {
    failure << " The checker surrounds every input with NaN: a NaN here comes from a read outside an input array "
               "(a tap in the padding read without testing h and w against the image, or an index past the end of "
               "x or w).";
  }
  if (const std::string text = diagnose(); !text.empty()) failure << " " << text;
  return failure;
}

// The first mistake of @p candidates whose reference got matches everywhere, explained; else "".
std::string name_mistake(const std::vector<Mistake>& candidates, const std::vector<float>& got, Data d,
                         const std::function<Reference(Mistake)>& reference) {
  for (Mistake m : candidates) {
    const Reference alt = reference(m);
    bool all = true;
    for (std::size_t i = 0; i < got.size() && all; ++i) all = matches(alt, i, got[i], d);
    if (all) return std::string("Likely mistake: ") + explain(m);
  }
  return "";
}

// ---- the forward versions -----------------------------------------------------------------------------------

struct Forward {
  const char* name;
  Layout layout;
  cudaError_t (*run)(ConvParams, const float*, const float*, float*);  // nullptr: conv2d_im2col (a workspace)
};

const Forward kDirect{"conv2d_direct", Layout::kNCHW, &conv2d_direct};
const Forward kIm2col{"conv2d_im2col", Layout::kNCHW, nullptr};
const Forward kImplicit{"conv2d_implicit_gemm", Layout::kNCHW, &conv2d_implicit_gemm};
const Forward kFinal{"conv2d_forward", Layout::kNHWC, &conv2d_forward};

const std::vector<Mistake> kForwardMistakes = {
    Mistake::kPaddingNotSubtracted, Mistake::kStrideTwice, Mistake::kFilterCK,    Mistake::kFlipped,
    Mistake::kNoDilation,           Mistake::kPadHBoth,    Mistake::kPadWBoth,    Mistake::kStrideHBoth,
    Mistake::kStrideWBoth,          Mistake::kDilationHBoth, Mistake::kDilationWBoth};

testing::AssertionResult check_forward(const Forward& v, const ConvParams& p, Data d, std::uint64_t seed) {
  const std::string call = std::string(v.name) + "(" + describe(p) + ")" +
                           (d == Data::kInteger ? " on integer-valued inputs" : " on inputs uniform in [-1, 1)");
  Input x(make_data(x_size(p), d, seed, 3), "x");
  Input w(make_data(w_size(p), d, seed + 1, 2), "w");
  Output y(y_size(p), "y");
  std::vector<std::function<testing::AssertionResult()>> after = {
      [&] { return x.unchanged(call); }, [&] { return w.unchanged(call); }, [&] { return y.in_bounds(call); }};
  cudaError_t status;
  std::unique_ptr<Output> workspace;
  if (v.run == nullptr) {
    workspace = std::make_unique<Output>(conv2d_im2col_workspace_floats(p), "workspace");
    status = conv2d_im2col(p, x.dev.data(), w.dev.data(), y.dev.data(), workspace->dev.data());
    after.push_back([&] { return workspace->in_bounds(call); });
  } else {
    status = v.run(p, x.dev.data(), w.dev.data(), y.dev.data());
  }
  if (auto r = after_call(status, call, v.name, after); !r) return r;
  const std::vector<float> got = y.dev.download();
  const Reference ref = forward_reference(p, v.layout, x.host, w.host);
  return compare(call, "y", ref, got, d, y_namer(p, v.layout), [&] {
    return name_mistake(kForwardMistakes, got, d,
                        [&](Mistake m) { return forward_reference(p, v.layout, x.host, w.host, m); });
  });
}

testing::AssertionResult check_forward_all(const Forward& v, bool resnet) {
  std::uint64_t seed = 100;
  for (const ConvParams& p : kShapes) {
    for (Data d : {Data::kInteger, Data::kUniform}) {
      if (auto r = check_forward(v, p, d, seed += 7); !r) return r;
    }
  }
  if (resnet) {
    for (const NamedShape& s : kResNet) {
      if (auto r = check_forward(v, s.sim, Data::kInteger, seed += 7); !r) return r << " (ResNet-50 " << s.name << ")";
    }
  }
  return testing::AssertionSuccess();
}

// ---- backward -----------------------------------------------------------------------------------------------

testing::AssertionResult check_dgrad(const ConvParams& p, Data d, std::uint64_t seed) {
  const std::string call = "conv2d_backward_data(" + describe(p) + ")" +
                           (d == Data::kInteger ? " on integer-valued inputs" : " on inputs uniform in [-1, 1)");
  Input dy(make_data(y_size(p), d, seed, 3), "dy");
  Input w(make_data(w_size(p), d, seed + 1, 2), "w");
  Output dx(x_size(p), "dx");
  const cudaError_t status = conv2d_backward_data(p, dy.dev.data(), w.dev.data(), dx.dev.data());
  if (auto r = after_call(status, call, "conv2d_backward_data",
                          {[&] { return dy.unchanged(call); }, [&] { return w.unchanged(call); },
                           [&] { return dx.in_bounds(call); }});
      !r) {
    return r;
  }
  const std::vector<float> got = dx.dev.download();
  return compare(call, "dx", dgrad_reference(p, dy.host, w.host), got, d,
                 namer4("dx", "n", "c", "h", "w", p.C, p.H, p.W), [&] {
                   std::vector<Mistake> candidates = {Mistake::kFlipped, Mistake::kFilterCK};
                   candidates.insert(candidates.end(), kAxisMistakes.begin(), kAxisMistakes.end());
                   return name_mistake(candidates, got, d,
                                       [&](Mistake m) { return dgrad_reference(p, dy.host, w.host, m); });
                 });
}

struct WgradRun {
  testing::AssertionResult ok = testing::AssertionSuccess();
  std::vector<float> dw;
};

WgradRun run_wgrad(const ConvParams& p, const Input& x, const Input& dy, const std::string& call) {
  WgradRun out;
  Output dw(w_size(p), "dw");
  // The workspace as the allocator leaves it (not filled: initcheck reports reads of entries this
  // call did not write), with guard zones.
  wb::DeviceBuffer<float> workspace(conv2d_backward_filter_workspace_floats(p), kGuard);
  const cudaError_t status = conv2d_backward_filter(p, x.dev.data(), dy.dev.data(), dw.dev.data(), workspace.data());
  out.ok = after_call(status, call, "conv2d_backward_filter",
                      {[&] { return x.unchanged(call); }, [&] { return dy.unchanged(call); },
                       [&] { return dw.in_bounds(call); },
                       [&] {
                         return wb::check::no_out_of_bounds_writes(workspace.check_guards(), "workspace",
                                                                   workspace.size(), call);
                       }});
  if (out.ok) out.dw = dw.dev.download();
  return out;
}

testing::AssertionResult check_wgrad(const ConvParams& p, Data d, std::uint64_t seed) {
  const std::string call = "conv2d_backward_filter(" + describe(p) + ")" +
                           (d == Data::kInteger ? " on integer-valued inputs" : " on inputs uniform in [-1, 1)");
  Input x(make_data(x_size(p), d, seed, 3), "x");
  Input dy(make_data(y_size(p), d, seed + 1, 3), "dy");
  WgradRun run = run_wgrad(p, x, dy, call);
  if (!run.ok) return run.ok;
  return compare(call, "dw", wgrad_reference(p, x.host, dy.host), run.dw, d,
                 namer4("dw", "k", "c", "r", "s", p.C, p.R, p.S), [&] {
                   std::vector<Mistake> candidates = {Mistake::kPaddingNotSubtracted, Mistake::kStrideTwice,
                                                      Mistake::kNoDilation};
                   candidates.insert(candidates.end(), kAxisMistakes.begin(), kAxisMistakes.end());
                   return name_mistake(candidates, run.dw, d,
                                       [&](Mistake m) { return wgrad_reference(p, x.host, dy.host, m); });
                 });
}

// ---- fused inference ----------------------------------------------------------------------------------------

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
  if (auto r = after_call(status, call, "conv2d_bn_relu_inference",
                          {[&] { return x.unchanged(call); }, [&] { return w.unchanged(call); },
                           [&] { return gamma.unchanged(call); }, [&] { return beta.unchanged(call); },
                           [&] { return mean.unchanged(call); }, [&] { return var.unchanged(call); },
                           [&] { return y.in_bounds(call); }});
      !r) {
    return r;
  }
  const std::vector<float> got = y.dev.download();
  // The fused result of the convolution @p conv: y, its allowance and the value before the ReLU.
  struct Fused {
    std::vector<double> y, allowed, pre;
  };
  auto fused = [&](const Reference& conv) {
    Fused f{std::vector<double>(got.size()), std::vector<double>(got.size()), std::vector<double>(got.size())};
    for (std::size_t i = 0; i < got.size(); ++i) {
      const int k = static_cast<int>(i % p.K);
      const double scale = gamma.host[k] / std::sqrt(static_cast<double>(var.host[k]) + kEps);
      const double shift = beta.host[k] - mean.host[k] * scale;
      f.pre[i] = conv.value[i] * scale + shift;
      f.y[i] = std::max(0.0, f.pre[i]);
      f.allowed[i] = std::fabs(scale) * gamma_n(conv.terms[i] + 1) * conv.magnitude[i] +
                     8 * kU * (std::fabs(conv.value[i] * scale) + std::fabs(beta.host[k]) +
                               std::fabs(mean.host[k] * scale));
    }
    return f;
  };
  auto wrong = [&](const Fused& f, std::size_t i) {
    return !std::isfinite(got[i]) || std::fabs(got[i] - f.y[i]) > f.allowed[i];
  };
  const Reference conv_ref = forward_reference(p, Layout::kNHWC, x.host, w.host);
  const Fused ref = fused(conv_ref);
  const std::vector<double>& allowed = ref.allowed;
  const std::vector<double>& pre = ref.pre;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (wrong(ref, i) && bad++ == 0) first = i;
  }
  if (bad == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << bad << " of " << got.size() << " elements of y are wrong; the first is "
          << y_namer(p, Layout::kNHWC)(first) << ": got "
          << (never_written(got[first]) ? std::string("nothing (never written)") : number(got[first]))
          << ", expected " << number(ref.y[first]) << " (allowed difference " << number(allowed[first]) << ").";
  if (pre[first] < 0 && got[first] < 0) failure << " The value before the ReLU is negative: max(0, v) makes it 0.";
  for (Mistake m : kForwardMistakes) {
    const Fused alt = fused(forward_reference(p, Layout::kNHWC, x.host, w.host, m));
    bool all = true;
    for (std::size_t i = 0; i < got.size() && all; ++i) all = !wrong(alt, i);
    if (all) {
      failure << " Likely mistake: " << explain(m);
      break;
    }
  }
  const int k = static_cast<int>(first % p.K);
  const double biased = (conv_ref.value[first] - mean.host[k]) * gamma.host[k] / std::sqrt(var.host[k]) + beta.host[k];
  if (std::fabs(got[first] - std::max(0.0, biased)) <= allowed[first] && std::fabs(biased - ref.y[first]) > allowed[first]) {
    failure << " It equals the result without eps: normalize by sqrt(running_var + eps).";
  }
  return failure;
}

// ---- sim metrics helpers ------------------------------------------------------------------------------------

#if WB_HAVE_CUSIM_ANALYSIS
const ConvParams kMetricShape = conv(1, 64, 14, 14, 64, 3, 3, 1);

double flops(const ConvParams& p) {
  return 2.0 * static_cast<double>(y_size(p)) * p.C * p.R * p.S;
}

#endif

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
                 "x R x S.") { WB_ASSERT(check_forward_all(kDirect, false)); }

WB_CHECK(Correctness, ConvIm2col, .weight = 2,
         .passes = kConvForwardPasses,
         .hint = "col[((c * R + r) * S + s) * P * Q + p * Q + q] = x[n][c][h][w] or 0; then sgemm(K, P * "
                 "Q, C * R * S, 1, w, C * R * S, col, P * Q, 0, y + n * K * P * Q, P * Q) per image. "
                 "Your lab-05 sgemm must pass its checks first.") { WB_ASSERT(check_forward_all(kIm2col, true)); }

WB_CHECK(Correctness, ConvImplicitGemm, .weight = 2,
         .passes = kConvForwardPasses,
         .hint = "Rows m = (n, p, q), columns k, reduction kk = (c, r, s): decompose kk while gathering "
                 "the A tile, zeros for padding, kk >= C * R * S and m >= N * P * Q.") {
  WB_ASSERT(check_forward_all(kImplicit, true));
}

WB_CHECK(Correctness, ConvForward, .weight = 3,
         .passes = kConvForwardPasses,
         .hint = "NHWC: x[((n * H + h) * W + w) * C + c], w[((k * R + r) * S + s) * C + c], y[((n * P + "
                 "p) * Q + q) * K + k]; kk = (r, s, c) with c fastest; float4 only when C % 4 == 0.") {
  WB_ASSERT(check_forward_all(kFinal, true));
}

// What passes, for ConvBackwardData, ConvBackwardFilter.
constexpr char kConvBackwardPasses[] = "the same shapes; wgrad also a 4608-pixel reduction (split across blocks)";

WB_CHECK(Correctness, ConvBackwardData, .weight = 3,
         .passes = kConvBackwardPasses,
         .hint = "For input pixel h and tap r the output row is p = (h + pad_h - r * dilation_h) / "
                 "stride_h, only when the numerator is >= 0 and divisible and p < P; multiply dy there "
                 "by w[k][c][r][s] (this tap's own weight).") {
  std::uint64_t seed = 300;
  for (const ConvParams& p : kShapes) {
    for (Data d : {Data::kInteger, Data::kUniform}) WB_ASSERT(check_dgrad(p, d, seed += 7));
  }
  for (const NamedShape& s : kResNet) WB_ASSERT(check_dgrad(s.sim, Data::kInteger, seed += 7));
}

WB_CHECK(Correctness, ConvBackwardFilter, .weight = 3,
         .passes = kConvBackwardPasses,
         .hint = "dw[k][c][r][s] sums dy[n][k][p][q] * x[n][c][h][w] over every n, p, q: each split's "
                 "partial tile in its own workspace slice, every slice written, all of them summed.") {
  std::uint64_t seed = 400;
  for (const ConvParams& p : kShapes) {
    for (Data d : {Data::kInteger, Data::kUniform}) WB_ASSERT(check_wgrad(p, d, seed += 7));
  }
  for (const NamedShape& s : kResNet) WB_ASSERT(check_wgrad(s.sim, Data::kInteger, seed += 7));
  // A long reduction (N P Q = 4608 pixels): split across blocks.
  WB_ASSERT(check_wgrad(conv(8, 4, 24, 24, 8, 3, 3, 1), Data::kUniform, 499));
}

WB_CHECK(Correctness, ConvBackwardFilterReproducible, .weight = 2,
         .passes = "three runs of wgrad on the same inputs: bitwise equal",
         .hint = "No atomicAdd: per-split partial sums in the workspace, added in a fixed order by a "
                 "second kernel.") {
  const ConvParams p = conv(8, 4, 24, 24, 8, 3, 3, 1);
  const std::string call = "conv2d_backward_filter(" + describe(p) + ")";
  Input x(wb::random_floats(x_size(p), 510), "x");
  Input dy(wb::random_floats(y_size(p), 511), "dy");
  WgradRun first = run_wgrad(p, x, dy, call);
  WB_ASSERT(first.ok);
  for (int run = 2; run <= 3; ++run) {
    const wb::check::BlockOrderOfRun order(run);
    WgradRun again = run_wgrad(p, x, dy, call);
    WB_ASSERT(again.ok);
    for (std::size_t i = 0; i < first.dw.size(); ++i) {
      if (std::memcmp(&first.dw[i], &again.dw[i], sizeof(float)) != 0) {
        FAIL() << call << ", run " << run << " of 3 on the same inputs: dw[" << i << "] = " << number(again.dw[i])
               << ", run 1 gave " << number(first.dw[i])
               << ". The sum over N P Q must be added in the same order every time: store per-block partial sums in "
                  "the workspace and add them in a fixed order in a second kernel, not with atomicAdd.";
      }
    }
  }
}

WB_CHECK(Correctness, ConvBnReluInference, .weight = 2,
         .passes = "6 shapes (two with different padding, stride and dilation per axis), random "
                   "gamma, beta, running statistics",
         .hint = "Per filter k: scale = gamma / sqrt(running_var + eps), shift = beta - running_mean * "
                 "scale; y = max(0, acc * scale + shift), the ReLU last.") {
  std::uint64_t seed = 600;
  // The last two separate every h/w pair of parameters (pad, stride, dilation): a fused kernel that
  // uses pad_h for the width axis, or stride_w for the height, is wrong on them.
  for (const ConvParams& p : {conv(2, 8, 9, 11, 6, 1, 1), conv(1, 5, 12, 10, 70, 3, 3, 2, 1, 2),
                              conv(2, 3, 17, 13, 5, 7, 7, 3, 2), conv(1, 64, 6, 6, 64, 3, 3, 1),
                              ConvParams{3, 4, 8, 9, 9, 3, 2, 2, 0, 3, 1, 1, 1},
                              ConvParams{2, 3, 11, 10, 5, 3, 3, 1, 2, 1, 2, 2, 1}}) {
    WB_ASSERT(check_fused(p, seed += 11));
  }
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
        x{std::span<const float>(wb::random_floats(std::size_t(q.N) * q.C * q.H * q.W, seed, -1.0f, 1.0f))},
        w{std::span<const float>(wb::random_floats(std::size_t(q.K) * q.C * q.R * q.S, seed + 1, -1.0f, 1.0f))},
        y{std::size_t(q.N) * q.K * conv_out_h(q) * conv_out_w(q)}, dx{std::size_t(q.N) * q.C * q.H * q.W},
        dw{std::size_t(q.K) * q.C * q.R * q.S}, col{conv2d_im2col_workspace_floats(q)},
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
      for (const Forward* v : {&kDirect, &kIm2col, &kImplicit, &kFinal}) keep_first(check_forward(*v, p, Data::kUniform, seed += 3));
      keep_first(check_dgrad(p, Data::kUniform, seed += 3));
      keep_first(check_wgrad(p, Data::kUniform, seed += 3));
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
  WB_ASSERT_ANALYSIS_RUN(wb::check::measure([] { return check_wgrad(conv(8, 4, 24, 24, 8, 3, 3, 1), Data::kUniform,
                                                                   520); },
                                            t, "conv2d_backward_filter"),
                         "atomic operations");
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_backward_filter: " + std::to_string(t.atomics) + " atomics");
  if (t.atomics != 0) {
    FAIL() << "conv2d_backward_filter(" << describe(conv(8, 4, 24, 24, 8, 3, 3, 1)) << "): " << t.atomics
           << " atomic operations. Float atomics add in whatever order the blocks arrive, so the result's last bits "
              "change from run to run on a GPU. Store per-block partial sums in the workspace and add them in a "
              "second kernel in a fixed order.";
  }
#endif
}
#endif

// ---- Performance --------------------------------------------------------------------------------------------

#if defined(CUSIM)

WB_CHECK(Performance, ImplicitGemmNoWorkspace, .weight = 3, .backends = "sim",
         .passes = "`conv2d_implicit_gemm` and `conv2d_forward` write exactly the bytes of y",
         .hint = "Gather the im2col tile into shared memory while loading it from x; write nothing but y.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::string text;
  const double y_bytes = 4.0 * static_cast<double>(y_size(kMetricShape));
  for (const Forward* v : {&kIm2col, &kImplicit, &kFinal}) {
    wb::check::Traffic t;
    WB_ASSERT(wb::check::measure([&] { return check_forward(*v, kMetricShape, Data::kInteger, 800); }, t, v->name));
    WB_REQUIRE_ANALYSIS();
    const double ratio = t.bytes_written / y_bytes;
    text += (text.empty() ? "" : "; ") + std::string(v->name) + " wrote " + fixed(ratio) + " x y";
    wb::check::record_measured(text);
    if (v != &kIm2col && t.bytes_written > y_bytes) {
      FAIL() << v->name << "(" << describe(kMetricShape) << ") wrote " << t.bytes_written << " bytes to global memory, "
             << fixed(ratio) << " x the " << y_bytes
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
  WB_ASSERT(wb::check::measure([] { return check_forward(kDirect, kMetricShape, Data::kInteger, 810); }, direct,
                               "conv2d_direct"));
  WB_ASSERT(wb::check::measure([] { return check_forward(kImplicit, kMetricShape, Data::kInteger, 811); }, implicit,
                               "conv2d_implicit_gemm"));
  WB_REQUIRE_ANALYSIS();
  const double f = flops(kMetricShape);
  const double per_flop = implicit.bytes_read / f;
  wb::check::record_measured("conv2d_implicit_gemm " + fixed(per_flop, 3) + " bytes/flop (conv2d_direct " +
                             fixed(direct.bytes_read / f, 3) + ")");
  if (per_flop > kMaxBytesPerFlop) {
    FAIL() << "conv2d_implicit_gemm(" << describe(kMetricShape) << ") read " << fixed(per_flop, 3)
           << " bytes of global memory per flop (at most " << wb::check::as_written(kMaxBytesPerFlop)
           << "; conv2d_direct reads " << fixed(direct.bytes_read / f, 3)
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
  WB_ASSERT(wb::check::measure([] { return check_forward(kImplicit, kMetricShape, Data::kInteger, 820); }, t,
                               "conv2d_implicit_gemm"));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_implicit_gemm loads " + fixed(t.loads()) + " sectors/request, stores " +
                             fixed(t.stores()));
  if (t.loads() > kMaxSectors) {
    FAIL() << "conv2d_implicit_gemm(" << describe(kMetricShape) << "): global loads touch " << fixed(t.loads())
           << " 32-byte sectors per warp request (at most " << wb::check::as_written(kMaxSectors)
           << "). In x (NCHW) the pixels of a row are consecutive: give "
              "consecutive lanes consecutive output pixels of the tile, and consecutive lanes of the filter load "
              "consecutive taps of one filter.";
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
  WB_ASSERT(wb::check::measure([] { return check_forward(kImplicit, kMetricShape, Data::kInteger, 830); }, t,
                               "conv2d_implicit_gemm"));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured("conv2d_implicit_gemm shared loads " + fixed(t.shared_loads()) + ", stores " +
                             fixed(t.shared_stores()) + " wavefronts/request");
  if (t.shared_requests() == 0) {
    FAIL() << "conv2d_implicit_gemm(" << describe(kMetricShape)
           << ") used no shared memory: version 3 gathers its tiles into shared memory.";
  }
  if (t.shared_loads() > kMaxWavefronts || t.shared_stores() > kMaxWavefronts) {
    FAIL() << "conv2d_implicit_gemm(" << describe(kMetricShape) << "): shared-memory loads take "
           << fixed(t.shared_loads()) << " and stores " << fixed(t.shared_stores())
           << " wavefronts per request (at most " << wb::check::as_written(kMaxWavefronts)
           << ": bank conflicts). Lanes that store one column of a transposed "
              "tile hit the same bank when the row length is a multiple of 32 floats: pad the rows (e.g. [8][64 + 4]).";
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
  WB_ASSERT(wb::check::measure([] { return check_forward(kFinal, kMetricShape, Data::kInteger, 840); }, t,
                               "conv2d_forward"));
  WB_REQUIRE_ANALYSIS();
  const double per_request = wb::check::Traffic::ratio(t.bytes_read, t.load_requests);
  const double per_flop = t.bytes_read / flops(kMetricShape);
  wb::check::record_measured("conv2d_forward " + fixed(per_request) + " bytes/load request, " + fixed(per_flop, 3) +
                             " bytes/flop");
  if (per_request < kMinBytesPerRequest) {
    FAIL() << "conv2d_forward(" << describe(kMetricShape) << "): global loads carry " << fixed(per_request)
           << " bytes per warp request (at least " << wb::check::as_written(kMinBytesPerRequest)
           << "; 32 lanes of 4-byte loads carry 128, of 16-byte loads 512). "
              "In NHWC the channels of a pixel are contiguous, and so are those of a filter tap in KRSC: load four "
              "at a time as a float4 when C % 4 == 0.";
  }
  if (per_flop > kMaxBytesPerFlop) {
    FAIL() << "conv2d_forward(" << describe(kMetricShape) << ") read " << fixed(per_flop, 3)
           << " bytes per flop (at most " << fixed(kMaxBytesPerFlop)
           << "): reuse each tile from shared memory across a block tile of outputs.";
  }
#endif
}

#else  // the cuda backend: timed against cuDNN

namespace {

#if defined(WB_HAVE_CUDA_BASELINES)
// Validates @p got (our output) against cuDNN's @p expected, within gamma(T) of the magnitudes
// (uniform data in [-1, 1): sum |x w| <= T); "" when close, else why.
std::string close_to(const std::vector<float>& got, const std::vector<float>& expected, std::size_t terms,
                     const Namer& name) {
  const double allowed = 2.0 * gamma_n(terms + 1) * static_cast<double>(terms);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(static_cast<double>(got[i]) - expected[i]) <= allowed)) {
      return "wrong result at " + name(i) + ": got " + number(got[i]) + ", cuDNN " + number(expected[i]);
    }
  }
  return "";
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
  WB_ASSERT(check_forward(kFinal, kResNet[0].sim, Data::kInteger, 900));
#if !defined(WB_HAVE_CUDA_BASELINES)
  WB_NOT_MEASURED("this check binary was built without cuDNN (libcudnn was not found)");
#else
  constexpr double kMinRatio = WB_LIMIT("min_ratio");
  try {
    std::string text;
    std::vector<std::string> slow;
    for (const NamedShape& s : kResNet) {
      const ConvParams& p = s.gpu;
      const std::vector<float> xs = wb::random_floats(x_size(p), 901), ws = wb::random_floats(w_size(p), 902);
      wb::DeviceBuffer<float> x{std::span<const float>(xs)}, w{std::span<const float>(ws)};
      wb::DeviceBuffer<float> y(y_size(p)), y_ref(y_size(p));
      CudnnConv cudnn(p, CudnnConv::kNHWC);
      cudnn.forward(x.data(), w.data(), y_ref.data());
      WB_CUDA_CHECK(conv2d_forward(p, x.data(), w.data(), y.data()));
      WB_CUDA_CHECK(cudaDeviceSynchronize());
      if (const std::string why = close_to(y.download(), y_ref.download(), static_cast<std::size_t>(p.C) * p.R * p.S,
                                           y_namer(p, Layout::kNHWC));
          !why.empty()) {
        FAIL() << "conv2d_forward(" << describe(p) << "): " << why;
      }
      const wb::TimingOptions options{.warmup = 2, .repetitions = 11};
      const wb::Timing base = wb::time_median([&] { cudnn.forward(x.data(), w.data(), y_ref.data()); }, options);
      const wb::Timing ours =
          wb::time_median([&] { WB_CUDA_CHECK(conv2d_forward(p, x.data(), w.data(), y.data())); }, options);
      const double f = 2.0 * static_cast<double>(y_size(p)) * p.C * p.R * p.S;
      const double ratio = base.median_ms / ours.median_ms;
      char buffer[200];
      std::snprintf(buffer, sizeof buffer, "%s%s %.2f x cuDNN (%.1f vs %.1f TFLOP/s, %s)", text.empty() ? "" : "; ",
                    s.name, ratio, f / ours.median_ms / 1e9, f / base.median_ms / 1e9, cudnn.forward_algorithm());
      text += buffer;
      wb::check::record_measured(text);
      if (ratio < kMinRatio) slow.push_back(s.name);
    }
    if (!slow.empty()) {
      FAIL() << "conv2d_forward is below " << wb::check::as_written(kMinRatio) << " x cuDNN on " << slow.size() << " ResNet-50 layer(s): "
             << text << ". Register-block the implicit GEMM as in lab 05 (8 x 8 results per thread from float4 "
                        "shared-memory loads), load both tiles with float4 along C, and overlap the next tile's "
                        "global loads with this tile's arithmetic (double buffering).";
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
  WB_ASSERT(check_dgrad(kResNet[0].sim, Data::kInteger, 910));
  WB_ASSERT(check_wgrad(kResNet[0].sim, Data::kInteger, 911));
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
      const std::vector<float> xs = wb::random_floats(x_size(p), 912), ws = wb::random_floats(w_size(p), 913),
                               dys = wb::random_floats(y_size(p), 914);
      wb::DeviceBuffer<float> x{std::span<const float>(xs)}, w{std::span<const float>(ws)},
          dy{std::span<const float>(dys)};
      wb::DeviceBuffer<float> dx(x_size(p)), dx_ref(x_size(p)), dw(w_size(p)), dw_ref(w_size(p));
      wb::DeviceBuffer<float> workspace(conv2d_backward_filter_workspace_floats(p));
      CudnnConv cudnn(p, CudnnConv::kNCHW);
      cudnn.backward_data(dy.data(), w.data(), dx_ref.data());
      cudnn.backward_filter(x.data(), dy.data(), dw_ref.data());
      WB_CUDA_CHECK(conv2d_backward_data(p, dy.data(), w.data(), dx.data()));
      WB_CUDA_CHECK(conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), workspace.data()));
      WB_CUDA_CHECK(cudaDeviceSynchronize());
      if (const std::string why = close_to(dx.download(), dx_ref.download(), static_cast<std::size_t>(p.K) * p.R * p.S,
                                           namer4("dx", "n", "c", "h", "w", p.C, p.H, p.W));
          !why.empty()) {
        FAIL() << "conv2d_backward_data(" << describe(p) << "): " << why;
      }
      if (const std::string why =
              close_to(dw.download(), dw_ref.download(), y_size(p) / p.K, namer4("dw", "k", "c", "r", "s", p.C, p.R, p.S));
          !why.empty()) {
        FAIL() << "conv2d_backward_filter(" << describe(p) << "): " << why;
      }
      const wb::TimingOptions options{.warmup = 2, .repetitions = 11};
      const double data_ratio =
          wb::time_median([&] { cudnn.backward_data(dy.data(), w.data(), dx_ref.data()); }, options).median_ms /
          wb::time_median([&] { WB_CUDA_CHECK(conv2d_backward_data(p, dy.data(), w.data(), dx.data())); }, options)
              .median_ms;
      const double filter_ratio =
          wb::time_median([&] { cudnn.backward_filter(x.data(), dy.data(), dw_ref.data()); }, options).median_ms /
          wb::time_median(
              [&] { WB_CUDA_CHECK(conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), workspace.data())); },
              options)
              .median_ms;
      char buffer[200];
      std::snprintf(buffer, sizeof buffer, "%s%s dgrad %.2f x, wgrad %.2f x cuDNN", text.empty() ? "" : "; ", s.name,
                    data_ratio, filter_ratio);
      text += buffer;
      wb::check::record_measured(text);
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
