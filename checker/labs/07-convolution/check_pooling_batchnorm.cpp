// Checks for lab 07, part 2: max and average pooling, batch normalization (NCHW, fp32).
//
// Correctness: every output is compared element by element with a double-precision reference
// computed on the host from the same float inputs, within an allowance derived from the
// computation (u = 2^-24; T(M) = (16 + 4 sqrt(M)) u, the relative rounding of an M-term float sum
// in any reasonable order, as in lab 06), explained where each reference is computed.
// Inputs are surrounded by NaN (a read outside them shows), outputs start as 0xFF bytes (an element
// never written shows) and carry guard zones; the workspace too starts as 0xFF bytes (except in the
// analysis checks, where it is left unwritten for initcheck). A read a little past an array lands
// in its guard zone, which memcheck cannot see: the NaN there shows it.
// Performance: cusim's analysis metrics on sim (traffic as the kernels request it); on a GPU,
// bytes moved per second as a ratio to a device-to-device copy timed in the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pooling_batchnorm.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

namespace {

using wb::check::after_call;
using wb::check::compare_elements;
using wb::check::fixed;
using wb::check::Input;
using wb::check::never_written;
using wb::check::Output;
using wb::check::verdicts;

constexpr double kU = 0x1.0p-24;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMomentum = 0.1f;
constexpr float kEps = 1e-5f;

double sum_tolerance(double terms) { return (16.0 + 4.0 * std::sqrt(terms)) * kU; }

std::string number(double v) { return wb::check::significant(v, 8); }

// While set (the analysis checks), the batch-norm workspace is left unwritten by the checker, so
// that initcheck reports a read of an entry the call did not write.
bool g_workspace_unwritten = false;

// A reference: each element's value and its allowed difference (0: bit-exact).
struct Expected {
  std::vector<double> value, allowed;
  explicit Expected(std::size_t n) : value(n, 0.0), allowed(n, 0.0) {}
};

// An NCHW tensor's dimensions and the names of its last two indices ("h", "w" or "p", "q").
struct Dims {
  int N, C, H, W;
  const char *row = "h", *col = "w";
  // Names element i of @p array: "y[n=0][c=1][p=2][q=3]".
  std::function<std::string(std::size_t)> of(std::string array) const {
    return [d = *this, array](std::size_t i) {
      const std::size_t plane = static_cast<std::size_t>(d.W) * d.H;
      return array + "[n=" + std::to_string(i / plane / d.C) + "][c=" + std::to_string(i / plane % d.C) + "][" +
             d.row + "=" + std::to_string(i / d.W % d.H) + "][" + d.col + "=" + std::to_string(i % d.W) + "]";
    };
  }
};

// ---- pooling: inputs and references ------------------------------------------------------------------------

// The kinds of planes, each pixel drawn in turn: integers, all negative (a window on the border then
// shows whether padding was taken as a 0 candidate), two values only (ties everywhere: the first
// pixel of the window in row-major order must win), uniform floats.
struct PlaneKind {
  const char* text;
  float (*draw)(wb::Random&);
};
const PlaneKind kPlaneKinds[] = {
    {"integers in [-8, 8]", [](wb::Random& r) { return static_cast<float>(r.next_int(-8, 8)); }},
    {"all negative (integers in [-100, -1])", [](wb::Random& r) { return static_cast<float>(r.next_int(-100, -1)); }},
    {"only the values 1 and 2 (ties everywhere)", [](wb::Random& r) { return static_cast<float>(r.next_int(1, 2)); }},
    {"uniform floats in [-1, 1)", [](wb::Random& r) { return static_cast<float>(-1.0 + 2.0 * r.next_unit_double()); }}};
const PlaneKind* const kNegative = &kPlaneKinds[1];

// "N=2, C=3, H=7, W=9, window 3x3, stride 2x2, pad 1x1"
std::string pool_shape(const PoolParams& p) {
  return "N=" + std::to_string(p.N) + ", C=" + std::to_string(p.C) + ", H=" + std::to_string(p.H) +
         ", W=" + std::to_string(p.W) + ", window " + std::to_string(p.R) + "x" + std::to_string(p.S) + ", stride " +
         std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + ", pad " + std::to_string(p.pad_h) + "x" +
         std::to_string(p.pad_w);
}

struct PoolCase {
  PoolParams p;
  int P, Q;
  std::vector<float> x;
  std::vector<const PlaneKind*> kinds;  // per plane n * C + c
  std::uint64_t seed;
  std::size_t in_size() const { return static_cast<std::size_t>(p.N) * p.C * p.H * p.W; }
  std::size_t out_size() const { return static_cast<std::size_t>(p.N) * p.C * P * Q; }
  std::size_t plane_size() const { return static_cast<std::size_t>(p.H) * p.W; }
  Dims in_dims() const { return {p.N, p.C, p.H, p.W}; }
  Dims out_dims() const { return {p.N, p.C, P, Q, "p", "q"}; }
  std::string shape() const { return pool_shape(p); }
  // The window of output (p, q) clipped to the image.
  struct Window {
    int h0, h1, w0, w1;
    int pixels() const { return (h1 - h0) * (w1 - w0); }
  };
  Window window(int op, int oq) const {
    const int hs = op * p.stride_h - p.pad_h, ws = oq * p.stride_w - p.pad_w;
    return {std::max(hs, 0), std::min(hs + p.R, p.H), std::max(ws, 0), std::min(ws + p.S, p.W)};
  }
  // The plane and the window of output element @p o.
  int plane_of(std::size_t o) const { return static_cast<int>(o / (static_cast<std::size_t>(P) * Q)); }
  Window window_of(std::size_t o) const { return window(static_cast<int>(o / Q % P), static_cast<int>(o % Q)); }
  bool padded(const Window& w) const { return w.pixels() < p.R * p.S; }
  // Calls f(plane, op, oq, window) for every output.
  template <class F>
  void for_each_output(F f) const {
    for (int plane = 0; plane < p.N * p.C; ++plane) {
      for (int op = 0; op < P; ++op) {
        for (int oq = 0; oq < Q; ++oq) f(plane, op, oq, window(op, oq));
      }
    }
  }
  // Calls f(i) for the index i in x of every pixel of window @p w of @p plane.
  template <class F>
  void for_each_pixel(int plane, const Window& w, F f) const {
    for (int h = w.h0; h < w.h1; ++h) {
      for (int c = w.w0; c < w.w1; ++c) f(plane * plane_size() + h * p.W + c);
    }
  }
  std::size_t out_index(int plane, int op, int oq) const {
    return (static_cast<std::size_t>(plane) * P + op) * Q + oq;
  }
  float at(int plane, int h, int w) const { return x[(static_cast<std::size_t>(plane) * p.H + h) * p.W + w]; }
  // (window, in-image pixel) pairs over all outputs.
  double window_pixels() const {
    double n = 0;
    for_each_output([&](int, int, int, Window w) { n += w.pixels(); });
    return n;
  }
  std::string plane_note(std::size_t o) const {
    return "This plane is " + std::string(kinds[plane_of(o)]->text) + ".";
  }
};

PoolParams pool(int N, int C, int H, int W, int R, int S, int pad_h, int pad_w, int stride_h, int stride_w) {
  return {N, C, H, W, R, S, pad_h, pad_w, stride_h, stride_w};
}

PoolCase make_pool_case(PoolParams p, std::size_t first_kind, std::uint64_t seed) {
  PoolCase pc{p, pool_out_h(p), pool_out_w(p), {}, {}, seed};
  pc.x.resize(pc.in_size());
  wb::Random rng(seed * 7919 + 3);
  for (int plane = 0; plane < p.N * p.C; ++plane) {
    pc.kinds.push_back(&kPlaneKinds[(plane + first_kind) % std::size(kPlaneKinds)]);
    for (std::size_t i = 0; i < pc.plane_size(); ++i) pc.x[plane * pc.plane_size() + i] = pc.kinds.back()->draw(rng);
  }
  return pc;
}

// Shapes: overlapping windows (3 x 3 stride 2 and stride 1), non-overlapping, stride > window
// (pixels in no window), a dropped partial window (floor), 1 x 1, padding up to R - 1 (a corner
// window of one pixel), H or W = 1, asymmetric windows, strides and padding.
const std::vector<PoolParams> kPoolShapes = {
    pool(2, 3, 7, 9, 3, 3, 1, 1, 2, 2),   pool(1, 2, 1, 1, 1, 1, 0, 0, 1, 1),   pool(1, 3, 5, 5, 2, 2, 0, 0, 2, 2),
    pool(2, 2, 13, 11, 3, 3, 1, 1, 1, 1), pool(1, 3, 10, 10, 2, 2, 0, 0, 3, 3), pool(1, 2, 6, 17, 3, 2, 1, 0, 2, 1),
    pool(2, 4, 33, 35, 3, 3, 1, 1, 2, 2), pool(1, 1, 4, 4, 4, 4, 3, 3, 1, 1),   pool(1, 2, 3, 64, 5, 5, 2, 2, 2, 2),
    pool(3, 5, 28, 28, 2, 2, 0, 0, 2, 2), pool(1, 2, 1, 40, 1, 3, 0, 1, 1, 2),  pool(1, 1, 9, 1, 3, 1, 1, 0, 2, 1),
    pool(1, 2, 5, 5, 5, 5, 2, 2, 1, 1)};

struct MaxRef {
  std::vector<float> y;
  std::vector<int> argmax;
};

MaxRef maxpool_reference(const PoolCase& pc) {
  MaxRef r{std::vector<float>(pc.out_size()), std::vector<int>(pc.out_size())};
  pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
    const std::size_t plane_start = plane * pc.plane_size();
    float best = -INFINITY;
    std::size_t at = plane_start + w.h0 * pc.p.W + w.w0;
    pc.for_each_pixel(plane, w, [&](std::size_t i) {
      if (pc.x[i] > best) {
        best = pc.x[i];
        at = i;
      }
    });
    r.y[pc.out_index(plane, op, oq)] = best;
    r.argmax[pc.out_index(plane, op, oq)] = static_cast<int>(at - plane_start);
  });
  return r;
}

std::string maxpool_diagnosis(const PoolCase& pc, std::size_t i, float got) {
  const PoolCase::Window w = pc.window_of(i);
  std::string text = pc.plane_note(i) + " Its window covers rows " + std::to_string(w.h0) + ".." +
                     std::to_string(w.h1 - 1) + " and columns " + std::to_string(w.w0) + ".." +
                     std::to_string(w.w1 - 1) + " of the image";
  text += pc.padded(w) ? " (the rest of it is padding)." : ".";
  if (got == 0.0f && pc.padded(w) && pc.kinds[pc.plane_of(i)] == kNegative) {
    text += " Every pixel of this window is negative and the result is 0: the padding was taken as a candidate. "
            "Padding never wins in max pooling: take the maximum over the window's pixels inside the image only.";
  } else if (std::isnan(got) && !never_written(got)) {
    text += " NaN: the checker surrounds x with NaN, so a pixel outside the image (or the tensor) was read.";
  }
  return text;
}

// The failure for output @p i, whose argmax is @p got instead of the reference's: what @p got is.
testing::AssertionResult wrong_argmax(const std::string& call, const PoolCase& pc, const MaxRef& ref, std::size_t i,
                                      int got) {
  const int want = ref.argmax[i], gh = got / pc.p.W, gw = got % pc.p.W;
  const PoolCase::Window w = pc.window_of(i);
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << pc.out_dims().of("argmax")(i) << " = " << got << ", expected " << want << " (h = "
          << want / pc.p.W << ", w = " << want % pc.p.W << "; argmax is h * W + w within the plane). "
          << pc.plane_note(i);
  if (got == -1) {
    failure << " Nothing was written there (the checker filled argmax with 0xFF bytes).";
  } else if (got < 0 || gh < w.h0 || gh >= w.h1 || gw < w.w0 || gw >= w.w1) {
    failure << " That is not a pixel of this window inside the image: argmax counts h * W + w within the "
               "plane (not an offset in the window, not an index into the whole tensor).";
  } else if (pc.at(pc.plane_of(i), gh, gw) == pc.at(pc.plane_of(i), want / pc.p.W, want % pc.p.W)) {
    failure << " Both pixels hold the maximum " << number(ref.y[i])
            << ": on a tie the first pixel of the window in row-major order (r, then s) wins; compare with > "
               "(a later equal value does not replace the maximum), scanning rows then columns.";
  }
  return failure;
}

// Compares y and argmax of a max-pooling forward with the reference of @p pc: bit-equal.
testing::AssertionResult maxpool_forward_matches(const std::string& call, const PoolCase& pc,
                                                 const std::vector<float>& y, const std::vector<int>& argmax) {
  const MaxRef ref = maxpool_reference(pc);
  Expected e(pc.out_size());
  e.value.assign(ref.y.begin(), ref.y.end());
  if (auto r = compare_elements(call, "y", y, e.value, e.allowed, pc.out_dims().of("y"),
                                [&](std::size_t i) { return maxpool_diagnosis(pc, i, y[i]); });
      !r) {
    return r;
  }
  const wb::check::Mismatches m =
      wb::check::find_mismatches(argmax.size(), [&](std::size_t i) { return argmax[i] != ref.argmax[i]; });
  return m.none() ? testing::AssertionSuccess() : wrong_argmax(call, pc, ref, m.first, argmax[m.first]);
}

// Max pooling is exact: y and argmax must be bit-equal to the reference (a maximum rounds nothing).
testing::AssertionResult check_maxpool_forward(const PoolCase& pc) {
  const std::string call = "maxpool2d_forward(" + pc.shape() + ") [seed " + std::to_string(pc.seed) + "]";
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    Input<float> x(pc.x, "x", kNaN);
    Output<float> yo(pc.out_size(), "y");
    Output<int> ao(pc.out_size(), "argmax");
    const cudaError_t status = maxpool2d_forward(pc.p, x.dev.data(), yo.dev.data(), ao.dev.data());
    if (auto r = after_call(status, call, "maxpool2d_forward", verdicts(call, yo, ao, x)); !r) return r;
    return maxpool_forward_matches(call, pc, yo.dev.download(), ao.dev.download());
  });
}

// Integer-valued dy: every sum is exact in any order.
std::vector<float> int_dy(std::size_t n, std::uint64_t seed) {
  const std::vector<int> v = wb::random_ints(n, seed, -8, 8);
  return std::vector<float>(v.begin(), v.end());
}

// Compares dx of a max-pooling backward of @p dy with the windows' @p argmax over @p pc: bit-equal
// for integer-valued dy (every sum exact in any order).
testing::AssertionResult maxpool_backward_matches(const std::string& call, const PoolCase& pc,
                                                  const std::vector<int>& argmax, const std::vector<float>& dy,
                                                  const std::vector<float>& dx) {
  Expected e(pc.in_size());
  std::vector<double> whole_window(pc.in_size(), 0.0);  // every window pixel getting dy
  pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
    const std::size_t o = pc.out_index(plane, op, oq);
    e.value[plane * pc.plane_size() + argmax[o]] += dy[o];
    pc.for_each_pixel(plane, w, [&](std::size_t i) { whole_window[i] += dy[o]; });
  });
  return compare_elements(call, "dx", dx, e.value, e.allowed, pc.in_dims().of("dx"), [&](std::size_t i) {
    if (!never_written(dx[i]) && dx[i] == whole_window[i] && whole_window[i] != e.value[i]) {
      return std::string("That is the sum of dy over every window containing this pixel: only the pixel a window "
                         "chose (its argmax) receives that window's gradient; compare argmax[n][c][p][q] with "
                         "h * W + w before adding dy.");
    }
    return std::string("dx[h][w] sums dy[p][q] over the windows containing (h, w) whose argmax is h * W + w; 0 for "
                       "a pixel no window chose. dy is integer-valued here, so the sum is exact.");
  });
}

// Max pooling backward on integer-valued dy, with argmax from the reference forward (so the backward
// is checked on its own).
testing::AssertionResult check_maxpool_backward(const PoolCase& pc) {
  const std::string call = "maxpool2d_backward(" + pc.shape() + ") [seed " + std::to_string(pc.seed) + "]";
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    const MaxRef fwd = maxpool_reference(pc);
    Input<float> dy(int_dy(pc.out_size(), pc.seed * 11 + 5), "dy", kNaN);
    Input<int> argmax(fwd.argmax, "argmax", -1);
    Output<float> dxo(pc.in_size(), "dx");
    const cudaError_t status = maxpool2d_backward(pc.p, dy.dev.data(), argmax.dev.data(), dxo.dev.data());
    if (auto r = after_call(status, call, "maxpool2d_backward", verdicts(call, dxo, dy, argmax)); !r) return r;
    return maxpool_backward_matches(call, pc, fwd.argmax, dy.host, dxo.dev.download());
  });
}

double avg_divisor(const PoolCase& pc, const PoolCase::Window& w, int include_pad) {
  return include_pad ? static_cast<double>(pc.p.R) * pc.p.S : static_cast<double>(w.pixels());
}

std::string convention(int include_pad) {
  return include_pad ? "count_include_pad = 1: the divisor is R * S (padding counts as zeros)"
                     : "count_include_pad = 0: the divisor is the number of the window's pixels inside the image";
}

std::string avgpool_call(const char* function, const PoolCase& pc, int include_pad) {
  return std::string(function) + "(" + pc.shape() + ", count_include_pad=" + std::to_string(include_pad) +
         ") [seed " + std::to_string(pc.seed) + "]";
}

// Average pooling: a sum of k in-image pixels in any order is within (k - 1) u sum|x| of the exact
// sum, and the division (or a multiplication by 1 / divisor) adds 2 u: allowed
// k u sum|x| / divisor + 3 u |y|.
testing::AssertionResult check_avgpool_forward(const PoolCase& pc, int include_pad) {
  const std::string call = avgpool_call("avgpool2d_forward", pc, include_pad);
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    Input<float> x(pc.x, "x", kNaN);
    Output<float> y(pc.out_size(), "y");
    const cudaError_t status = avgpool2d_forward(pc.p, x.dev.data(), y.dev.data(), include_pad);
    if (auto r = after_call(status, call, "avgpool2d_forward", verdicts(call, y, x)); !r) return r;
    const std::vector<float> got = y.dev.download();
    Expected e(pc.out_size());
    std::vector<double> swapped(pc.out_size());
    pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
      double s = 0.0, s_abs = 0.0;
      pc.for_each_pixel(plane, w, [&](std::size_t i) {
        s += pc.x[i];
        s_abs += std::fabs(pc.x[i]);
      });
      const std::size_t o = pc.out_index(plane, op, oq);
      const double d = avg_divisor(pc, w, include_pad);
      e.value[o] = s / d;
      e.allowed[o] = w.pixels() * kU * s_abs / d + 3.0 * kU * std::fabs(s / d) + 1e-30;
      swapped[o] = s / avg_divisor(pc, w, !include_pad);
    });
    return compare_elements(call, "y", got, e.value, e.allowed, pc.out_dims().of("y"), [&](std::size_t i) {
      const PoolCase::Window w = pc.window_of(i);
      std::string text = pc.plane_note(i) + " This window has " + std::to_string(w.pixels()) + " of its " +
                         std::to_string(pc.p.R * pc.p.S) + " pixels inside the image; " + convention(include_pad) +
                         ".";
      if (std::fabs(got[i] - swapped[i]) <= e.allowed[i] && swapped[i] != e.value[i]) {
        text += " The result used the other divisor: the divisor conventions are swapped.";
      }
      return text;
    });
  });
}

// Average pooling backward: a sum of k terms dy / divisor: allowed (k + 2) u sum|dy / divisor|.
testing::AssertionResult check_avgpool_backward(const PoolCase& pc, int include_pad) {
  const std::string call = avgpool_call("avgpool2d_backward", pc, include_pad);
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    Input<float> dy(int_dy(pc.out_size(), pc.seed * 13 + 7), "dy", kNaN);
    Output<float> dx(pc.in_size(), "dx");
    const cudaError_t status = avgpool2d_backward(pc.p, dy.dev.data(), dx.dev.data(), include_pad);
    if (auto r = after_call(status, call, "avgpool2d_backward", verdicts(call, dx, dy)); !r) return r;
    const std::vector<float> got = dx.dev.download();
    Expected e(pc.in_size());
    std::vector<double> abs_sum(pc.in_size(), 0.0), terms(pc.in_size(), 0.0), swapped(pc.in_size(), 0.0);
    pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
      const double g = dy.host[pc.out_index(plane, op, oq)];
      const double t = g / avg_divisor(pc, w, include_pad), t_other = g / avg_divisor(pc, w, !include_pad);
      pc.for_each_pixel(plane, w, [&](std::size_t i) {
        e.value[i] += t;
        abs_sum[i] += std::fabs(t);
        terms[i] += 1.0;
        swapped[i] += t_other;
      });
    });
    for (std::size_t i = 0; i < e.allowed.size(); ++i) e.allowed[i] = (terms[i] + 2.0) * kU * abs_sum[i] + 1e-30;
    return compare_elements(call, "dx", got, e.value, e.allowed, pc.in_dims().of("dx"), [&](std::size_t i) {
      std::string text = "dx[h][w] sums dy[p][q] / divisor(p, q) over the " + std::to_string(int(terms[i])) +
                         " windows containing this pixel, with the forward's divisor (" + convention(include_pad) +
                         ").";
      if (std::fabs(got[i] - swapped[i]) <= e.allowed[i] && swapped[i] != e.value[i]) {
        text += " The result used the other divisor convention.";
      } else if (terms[i] == 0.0) {
        text += " No window contains this pixel (the stride skips it or the output size dropped it): dx is 0.";
      }
      return text;
    });
  });
}

// ---- batch norm: inputs and references -----------------------------------------------------------------------

float uniform(wb::Random& rng, double lo, double hi) {
  return static_cast<float>(lo + (hi - lo) * rng.next_unit_double());
}

// The kinds of channels, each value drawn in turn: uniform, of mean 1e3 and standard deviation 1
// (E[x^2] - E[x]^2 cancels every digit there, while the mean's rounding is allowed for exactly),
// constant (variance 0), wide.
struct ChannelKind {
  const char* text;
  float (*draw)(wb::Random&);
};
const ChannelKind kChannelKinds[] = {
    {"uniform in [-8, 8)", [](wb::Random& r) { return uniform(r, -8.0, 8.0); }},
    {"of mean 1e3 and standard deviation 1", [](wb::Random& r) { return 1000.0f + uniform(r, -1.7320508, 1.7320508); }},
    {"constant (variance 0)", [](wb::Random&) { return 3.25f; }},
    {"uniform in [-100, 100)", [](wb::Random& r) { return uniform(r, -100.0, 100.0); }}};
const ChannelKind *const kCancellation = &kChannelKinds[1], *const kConstant = &kChannelKinds[2];

struct BnShape {
  int N, C, HW;
};

std::string bn_shape(int N, int C, int HW) {
  return "N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HW=" + std::to_string(HW);
}

struct BnCase {
  int N, C, HW;
  std::vector<float> x, gamma, beta, running_mean, running_var;
  std::vector<const ChannelKind*> kinds;
  std::uint64_t seed;
  std::size_t size() const { return static_cast<std::size_t>(N) * C * HW; }
  long long M() const { return static_cast<long long>(N) * HW; }
  Dims dims() const { return {N, C, 1, HW, "h", "hw"}; }
  int channel(std::size_t i) const { return static_cast<int>(i / HW % C); }
  std::string shape() const { return bn_shape(N, C, HW); }
  // Calls f(index, c) for every element of channel c.
  template <class F>
  void for_channel(int c, F f) const {
    for (int n = 0; n < N; ++n) {
      const std::size_t o = (static_cast<std::size_t>(n) * C + c) * HW;
      for (int k = 0; k < HW; ++k) f(o + k);
    }
  }
};

BnCase make_bn_case(BnShape s, std::size_t first_kind, std::uint64_t seed) {
  BnCase b{s.N, s.C, s.HW, {}, {}, {}, {}, {}, {}, seed};
  b.x.resize(b.size());
  wb::Random rng(seed * 104729 + 11);
  for (int c = 0; c < b.C; ++c) b.kinds.push_back(&kChannelKinds[(c + first_kind) % std::size(kChannelKinds)]);
  for (std::size_t i = 0; i < b.size(); ++i) b.x[i] = b.kinds[b.channel(i)]->draw(rng);
  for (int c = 0; c < b.C; ++c) {
    b.gamma.push_back(uniform(rng, 0.5, 1.5));
    b.beta.push_back(uniform(rng, -0.5, 0.5));
    b.running_mean.push_back(uniform(rng, -1.0, 1.0));
    b.running_var.push_back(uniform(rng, 0.5, 2.0));
  }
  return b;
}

// Shapes (N, C, HW): M = N HW = 2 (twice; there the unbiased variance differs from the biased one
// by a factor 2), C = 1, C = 300, planes of 1, 5, 9, 12, 49, 64, 1000 and 16384 values (odd planes
// take no 16-byte loads), M up to 150001 (every split of kBatchNormSplits blocks per channel used).
// On a GPU also C = 70000, more channels than a grid's y dimension holds (65535); on the simulator
// its 70000 blocks would take most of a minute.
const std::vector<BnShape> kBnShapes = {{2, 3, 1},    {1, 4, 2},     {3, 1, 5},     {4, 5, 49},     {2, 3, 64},
                                        {5, 7, 12},   {2, 300, 9},   {8, 2, 1000},  {4, 3, 16384},  {1, 2, 150001},
#if !defined(CUSIM)
                                        {2, 70000, 1},
#endif
};

// Batch norm, training: over the M = N HW values of a channel, the mean within T(M) mean|x| (a
// float sum's rounding, which also bounds Welford's and Chan's updates); the variance within
// 2 T(M) var + 2 d sqrt(var) + d^2, d = T(M) mean|x| (the sum of squares, and deviations taken from
// a mean known within d: Welford's running means are), so rstd = 1 / sqrt(var + eps) within
// rstd (var_allowed / (2 (var + eps)) + 2 u).
struct ChannelStats {
  double mean, var, abs_mean, mean_allowed, var_allowed, rstd, rstd_allowed;
};

ChannelStats channel_stats(const BnCase& b, int c) {
  ChannelStats s{};
  const double m = static_cast<double>(b.M());
  b.for_channel(c, [&](std::size_t i) {
    s.mean += b.x[i];
    s.abs_mean += std::fabs(b.x[i]);
  });
  s.mean /= m;
  s.abs_mean /= m;
  b.for_channel(c, [&](std::size_t i) { s.var += (b.x[i] - s.mean) * (b.x[i] - s.mean); });
  s.var /= m;
  const double t = sum_tolerance(m);
  s.mean_allowed = t * s.abs_mean;
  // The deviations are measured from a mean known within mean_allowed: sum (x - mean')^2 / M is
  // within 2 mean_allowed mean|x - mean| + mean_allowed^2 of the variance, and mean|x - mean| <=
  // sqrt(var).
  s.var_allowed = 2.0 * t * s.var + 2.0 * s.mean_allowed * std::sqrt(s.var) + s.mean_allowed * s.mean_allowed;
  s.rstd = 1.0 / std::sqrt(s.var + kEps);
  s.rstd_allowed = s.rstd * (s.var_allowed / (2.0 * (s.var + kEps)) + 2.0 * kU);
  return s;
}

std::string channel_note(const BnCase& b, int c) {
  return "Channel " + std::to_string(c) + " is " + b.kinds[c]->text + " (M = N * HW = " + std::to_string(b.M()) +
         " values).";
}

const char* const kCancellationNote =
    " On this channel the variance is 1 and the mean 1000: E[x^2] - E[x]^2 subtracts two numbers near 1e6 whose "
    "rounding errors exceed the variance (catastrophic cancellation). Use Welford's algorithm (and Chan's "
    "combination of partials), or the mean first and then the mean of (x - mean)^2.";

// A per-channel output: got[c] against want(c) within allowed(c); why(c, got[c]) explains a mismatch.
struct PerChannel {
  const char* array;
  const std::vector<float>& got;
  std::function<double(int)> want, allowed;
  std::function<std::string(int, double)> why;
};

// Each of @p arrays in order, each channel in order: the first mismatch, with a diagnosis.
testing::AssertionResult compare_channels(const std::string& call, const BnCase& b,
                                          std::initializer_list<PerChannel> arrays) {
  for (const PerChannel& a : arrays) {
    for (int c = 0; c < b.C; ++c) {
      const double g = a.got[c];
      if (wb::check::within(a.got[c], a.want(c), a.allowed(c))) continue;
      return testing::AssertionFailure() << call << ": " << a.array << "[" << c << "] = "
                                         << wb::check::shown_value(a.got[c]) << ", expected " << number(a.want(c))
                                         << " (allowed difference " << number(a.allowed(c)) << "). "
                                         << channel_note(b, c) << a.why(c, g);
    }
  }
  return testing::AssertionSuccess();
}

struct BnTrainingGot {
  std::vector<float> y, save_mean, save_rstd, running_mean, running_var;
};

testing::AssertionResult run_bn_training(const BnCase& b, BnTrainingGot& got, const std::string& call,
                                         unsigned char workspace_fill = 0xFF) {
  Input<float> x(b.x, "x", kNaN), gamma(b.gamma, "gamma", kNaN), beta(b.beta, "beta", kNaN);
  Output<float> y(b.size(), "y"), mean(b.C, "save_mean"), rstd(b.C, "save_rstd"),
      workspace(batchnorm_workspace_floats(b.C), "workspace", workspace_fill, !g_workspace_unwritten);
  // Updated in place: the running statistics start as the case's (guarded, not filled).
  Output<float> rm(b.C, "running_mean", 0xFF, false), rv(b.C, "running_var", 0xFF, false);
  rm.dev.upload(b.running_mean);
  rv.dev.upload(b.running_var);
  const cudaError_t status =
      batchnorm_forward_training(b.N, b.C, b.HW, x.dev.data(), gamma.dev.data(), beta.dev.data(), kMomentum, kEps,
                                 y.dev.data(), mean.dev.data(), rstd.dev.data(), rm.dev.data(), rv.dev.data(),
                                 workspace.dev.data());
  if (auto r = after_call(status, call, "batchnorm_forward_training",
                          verdicts(call, y, mean, rstd, workspace, rm, rv, x, gamma, beta));
      !r) {
    return r;
  }
  got = {y.dev.download(), mean.dev.download(), rstd.dev.download(), rm.dev.download(), rv.dev.download()};
  return testing::AssertionSuccess();
}

// The statistics as channel_stats() allows them; y within |gamma| (|x - mean| rstd_allowed + rstd
// mean_allowed) + 4 u (|y| + |beta|); the running statistics within momentum times the
// statistic's allowance plus 4 u of their terms.
testing::AssertionResult bn_training_matches(const std::string& call, const BnCase& b, const BnTrainingGot& got) {
  std::vector<ChannelStats> st;
  for (int c = 0; c < b.C; ++c) st.push_back(channel_stats(b, c));
  const double m = static_cast<double>(b.M()), mom = kMomentum;
  const PerChannel save_mean{
      "save_mean", got.save_mean, [&](int c) { return st[c].mean; }, [&](int c) { return st[c].mean_allowed; },
      [&](int, double) { return std::string(" The mean is the sum over the N * HW values of the channel / M."); }};
  const PerChannel save_rstd{
      "save_rstd", got.save_rstd, [&](int c) { return st[c].rstd; }, [&](int c) { return st[c].rstd_allowed; },
      [&](int c, double g) {
        const double unbiased = 1.0 / std::sqrt(st[c].var * m / (m - 1.0) + kEps);
        if (std::fabs(g - unbiased) <= st[c].rstd_allowed && unbiased != st[c].rstd) {
          return std::string(" That is 1 / sqrt(var * M / (M - 1) + eps): the batch is normalized with the "
                             "biased variance, sum (x - mean)^2 / M; only running_var takes the unbiased one.");
        }
        if (b.kinds[c] == kCancellation) return std::string(kCancellationNote);
        if (b.kinds[c] == kConstant) {
          return std::string(" The variance is 0: rstd = 1 / sqrt(0 + eps), eps inside the square root.");
        }
        return std::string(" rstd = 1 / sqrt(var + eps), var = sum (x - mean)^2 / M (biased).");
      }};
  const PerChannel running_mean{
      "running_mean", got.running_mean, [&](int c) { return (1.0 - mom) * b.running_mean[c] + mom * st[c].mean; },
      [&](int c) {
        return mom * st[c].mean_allowed + 4.0 * kU * (std::fabs(b.running_mean[c]) + std::fabs(mom * st[c].mean));
      },
      [&](int c, double) {
        return " It was " + number(b.running_mean[c]) +
               " before the call: running_mean = (1 - momentum) running_mean + momentum mean (momentum 0.1).";
      }};
  const PerChannel running_var{
      "running_var", got.running_var,
      [&](int c) { return (1.0 - mom) * b.running_var[c] + mom * st[c].var * m / (m - 1.0); },
      [&](int c) {
        return mom * st[c].var_allowed * m / (m - 1.0) +
               4.0 * kU * (std::fabs(b.running_var[c]) + mom * st[c].var * m / (m - 1.0));
      },
      [&](int c, double g) {
        const double biased = (1.0 - mom) * b.running_var[c] + mom * st[c].var;
        std::string text = " It was " + number(b.running_var[c]) +
                           " before the call: running_var = (1 - momentum) running_var + momentum var M / (M - 1).";
        if (std::fabs(g - biased) <= mom * st[c].var_allowed + 4.0 * kU * std::fabs(biased) && st[c].var != 0.0) {
          text += " The result took the biased variance: the running estimate takes the unbiased one, "
                  "sum (x - mean)^2 / (M - 1) (PyTorch's and cuDNN's convention).";
        }
        return text;
      }};
  if (auto r = compare_channels(call, b, {save_mean, save_rstd, running_mean, running_var}); !r) return r;
  Expected e(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int c = b.channel(i);
    const ChannelStats& s = st[c];
    const double y = (b.x[i] - s.mean) * s.rstd * b.gamma[c] + b.beta[c];
    e.value[i] = y;
    e.allowed[i] = std::fabs(b.gamma[c]) * (std::fabs(b.x[i] - s.mean) * s.rstd_allowed + s.rstd * s.mean_allowed) +
                   4.0 * kU * (std::fabs(y) + std::fabs(b.beta[c])) + 1e-30;
  }
  return compare_elements(call, "y", got.y, e.value, e.allowed, b.dims().of("y"), [&](std::size_t i) {
    std::string text = channel_note(b, b.channel(i)) + " y = (x - mean) * rstd * gamma[c] + beta[c].";
    if (b.HW % 4 != 0) text += " HW = " + std::to_string(b.HW) + " is not a multiple of 4: planes are not 16-byte aligned.";
    return text;
  });
}

// Batch norm, training: one call on @p b, its outputs compared (bn_training_matches).
testing::AssertionResult check_bn_training(const BnCase& b) {
  const std::string call = "batchnorm_forward_training(" + b.shape() + ", momentum=0.1, eps=1e-5) [seed " +
                           std::to_string(b.seed) + "]";
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    BnTrainingGot got;
    if (auto r = run_bn_training(b, got, call); !r) return r;
    return bn_training_matches(call, b, got);
  });
}

// Batch norm, inference: elementwise, y = (x - rm) / sqrt(rv + eps) gamma + beta in any arrangement
// (folding gamma / sqrt(rv + eps) into a scale and a shift included): allowed
// 6 u (|gamma| rstd (|x| + |rm|) + |beta| + |y|).
testing::AssertionResult bn_inference_matches(const std::string& call, const BnCase& b,
                                              const std::vector<float>& got) {
  auto value = [&](std::size_t i, int c) {
    return (b.x[i] - static_cast<double>(b.running_mean[c])) / std::sqrt(b.running_var[c] + static_cast<double>(kEps)) *
               b.gamma[c] + b.beta[c];
  };
  Expected e(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int c = b.channel(i);
    const double rstd = 1.0 / std::sqrt(b.running_var[c] + static_cast<double>(kEps));
    e.value[i] = value(i, c);
    e.allowed[i] = 6.0 * kU *
                       (std::fabs(b.gamma[c]) * rstd * (std::fabs(b.x[i]) + std::fabs(b.running_mean[c])) +
                        std::fabs(b.beta[c]) + std::fabs(e.value[i])) +
                   1e-30;
  }
  return compare_elements(call, "y", got, e.value, e.allowed, b.dims().of("y"), [&](std::size_t i) {
    const int c = b.channel(i);
    std::string text = "y = (x - running_mean[c]) / sqrt(running_var[c] + eps) * gamma[c] + beta[c], here with c = " +
                       std::to_string(c) + ".";
    const int nhwc = static_cast<int>(i % b.C);
    if (nhwc != c && std::fabs(got[i] - value(i, nhwc)) <= 1e-4 * (1.0 + std::fabs(value(i, nhwc)))) {
      text += " The result used channel " + std::to_string(nhwc) +
              " = index % C, the channel of NHWC: in NCHW the channel of element i is (i / HW) % C.";
    }
    return text;
  });
}

// Batch norm, inference: one call on @p b, its y compared (bn_inference_matches).
testing::AssertionResult check_bn_inference(const BnCase& b) {
  const std::string call = "batchnorm_forward_inference(" + b.shape() + ", eps=1e-5) [seed " + std::to_string(b.seed) + "]";
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    Input<float> x(b.x, "x", kNaN), gamma(b.gamma, "gamma", kNaN), beta(b.beta, "beta", kNaN),
        rm(b.running_mean, "running_mean", kNaN), rv(b.running_var, "running_var", kNaN);
    Output<float> y(b.size(), "y");
    const cudaError_t status = batchnorm_forward_inference(b.N, b.C, b.HW, x.dev.data(), gamma.dev.data(),
                                                           beta.dev.data(), rm.dev.data(), rv.dev.data(), kEps,
                                                           y.dev.data());
    if (auto r = after_call(status, call, "batchnorm_forward_inference", verdicts(call, y, x, rm, rv, gamma, beta)); !r) return r;
    return bn_inference_matches(call, b, y.dev.download());
  });
}

// Backward inputs: x of the case, dy uniform in [-1, 1), save_mean and save_rstd the reference's
// statistics rounded to float (so the backward is checked on its own).
struct BnBackwardCase {
  BnCase b;
  std::vector<float> dy, mean, rstd;
};

BnBackwardCase make_bn_backward_case(BnCase b) {
  BnBackwardCase k{std::move(b), {}, {}, {}};
  k.dy = wb::random_floats(k.b.size(), k.b.seed * 31 + 7, -1.0f, 1.0f);
  for (int c = 0; c < k.b.C; ++c) {
    const ChannelStats s = channel_stats(k.b, c);
    k.mean.push_back(static_cast<float>(s.mean));
    k.rstd.push_back(static_cast<float>(s.rstd));
  }
  return k;
}

struct BnGradsGot {
  std::vector<float> dx, dgamma, dbeta;
};

testing::AssertionResult run_bn_backward(const BnBackwardCase& k, BnGradsGot& got, const std::string& call,
                                         unsigned char workspace_fill = 0xFF) {
  const BnCase& b = k.b;
  Input<float> dy(k.dy, "dy", kNaN), x(b.x, "x", kNaN), gamma(b.gamma, "gamma", kNaN), mean(k.mean, "save_mean", kNaN),
      rstd(k.rstd, "save_rstd", kNaN);
  Output<float> dx(b.size(), "dx"), dgamma(b.C, "dgamma"), dbeta(b.C, "dbeta"),
      workspace(batchnorm_workspace_floats(b.C), "workspace", workspace_fill, !g_workspace_unwritten);
  const cudaError_t status =
      batchnorm_backward(b.N, b.C, b.HW, dy.dev.data(), x.dev.data(), gamma.dev.data(), mean.dev.data(),
                         rstd.dev.data(), dx.dev.data(), dgamma.dev.data(), dbeta.dev.data(), workspace.dev.data());
  if (auto r = after_call(status, call, "batchnorm_backward",
                          verdicts(call, dx, dgamma, dbeta, workspace, dy, x, gamma, mean, rstd));
      !r) {
    return r;
  }
  got = {dx.dev.download(), dgamma.dev.download(), dbeta.dev.download()};
  return testing::AssertionSuccess();
}

// Batch norm backward: dbeta within T(M) sum|dy|, dgamma within (T(M) + 4 u) sum|dy xhat|, dx
// within |gamma| rstd (their errors divided by M, the second times |xhat|) + 8 u of its terms.
testing::AssertionResult bn_backward_matches(const std::string& call, const BnBackwardCase& k,
                                             const BnGradsGot& got) {
  const BnCase& b = k.b;
  const double m = static_cast<double>(b.M()), t = sum_tolerance(m);
  std::vector<double> dbeta(b.C), dbeta_abs(b.C), dgamma(b.C), dgamma_abs(b.C);
  auto xhat = [&](std::size_t i) { return (b.x[i] - static_cast<double>(k.mean[b.channel(i)])) * k.rstd[b.channel(i)]; };
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int c = b.channel(i);
    dbeta[c] += k.dy[i];
    dbeta_abs[c] += std::fabs(k.dy[i]);
    dgamma[c] += k.dy[i] * xhat(i);
    dgamma_abs[c] += std::fabs(k.dy[i] * xhat(i));
  }
  auto dbeta_allowed = [&](int c) { return t * dbeta_abs[c] + 1e-30; };
  auto dgamma_allowed = [&](int c) { return (t + 4.0 * kU) * dgamma_abs[c] + 1e-30; };
  auto sum_note = [&](int, double) {
    return std::string(" dbeta[c] = sum of dy and dgamma[c] = sum of dy * xhat over the channel's N * HW values: "
                       "every block's partial sums, added once each.");
  };
  if (auto r = compare_channels(call, b,
                                {{"dbeta", got.dbeta, [&](int c) { return dbeta[c]; }, dbeta_allowed, sum_note},
                                 {"dgamma", got.dgamma, [&](int c) { return dgamma[c]; }, dgamma_allowed, sum_note}});
      !r) {
    return r;
  }
  Expected e(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    const int c = b.channel(i);
    const double a = std::fabs(b.gamma[c]) * k.rstd[c], xh = xhat(i);
    const double inner = k.dy[i] - dbeta[c] / m - xh * dgamma[c] / m;
    e.value[i] = b.gamma[c] * k.rstd[c] * inner;
    e.allowed[i] = a * (dbeta_allowed(c) / m + std::fabs(xh) * dgamma_allowed(c) / m +
                        8.0 * kU * (std::fabs(k.dy[i]) + std::fabs(dbeta[c] / m) + std::fabs(xh * dgamma[c] / m))) +
                   4.0 * kU * std::fabs(e.value[i]) + 1e-30;
  }
  return compare_elements(call, "dx", got.dx, e.value, e.allowed, b.dims().of("dx"), [&](std::size_t i) {
    const int c = b.channel(i);
    std::string text = channel_note(b, c) +
                       " dx = gamma[c] * rstd[c] * (dy - dbeta[c] / M - xhat * dgamma[c] / M), xhat = (x - mean) * rstd.";
    const double plain = static_cast<double>(b.gamma[c]) * k.rstd[c] * k.dy[i];
    if (std::fabs(got.dx[i] - plain) <= 1e-5 * (std::fabs(plain) + 1e-3)) {
      text += " The result is gamma * rstd * dy alone: the mean terms (dbeta / M and xhat * dgamma / M, which come "
              "from the mean and the variance depending on every x) are missing.";
    }
    return text;
  });
}

// Batch norm backward: one call on @p k, its gradients compared (bn_backward_matches).
testing::AssertionResult check_bn_backward(const BnBackwardCase& k) {
  const BnCase& b = k.b;
  const std::string call = "batchnorm_backward(" + b.shape() + ") [seed " + std::to_string(b.seed) + "]";
  return wb::check::guarded(call, [&]() -> testing::AssertionResult {
    BnGradsGot got;
    if (auto r = run_bn_backward(k, got, call); !r) return r;
    return bn_backward_matches(call, k, got);
  });
}

// The cases of a pooling check: every shape s of kPoolShapes (its planes' kinds rotated by s, seed
// seed0 + s), @p conventions times in a row (count_include_pad 0, then 1).
testing::AssertionResult pool_cases(std::uint64_t seed0, std::size_t conventions,
                                    const std::function<testing::AssertionResult(const PoolCase&, int)>& check) {
  return wb::check::run_cases(conventions * kPoolShapes.size(), [&](std::size_t i) {
    const std::size_t s = i / conventions;
    return check(make_pool_case(kPoolShapes[s], s, seed0 + s), static_cast<int>(i % conventions));
  });
}

// The cases of a batch-norm check: every shape s of kBnShapes (its channels' kinds rotated by s,
// seed seed0 + s).
testing::AssertionResult bn_cases(std::uint64_t seed0, const std::function<testing::AssertionResult(BnCase)>& check) {
  return wb::check::run_cases(kBnShapes.size(),
                              [&](std::size_t s) { return check(make_bn_case(kBnShapes[s], s, seed0 + s)); });
}

}  // namespace

// ---- Correctness -------------------------------------------------------------------------------------------

WB_CHECK(Correctness, MaxPoolForward, .weight = 2,
         .passes = "y and argmax bit-exact on 13 shapes: 3 x 3 stride 2 and stride 1 (overlapping), "
                   "2 x 2 stride 2, stride 3 > window 2, a 4 x 4 window with padding 3 (a corner "
                   "window of one pixel), H or W = 1, 1 x 1, asymmetric windows; planes of integers, "
                   "all negative, ties only, floats",
         .hint = "Clip the window to the image (padding is never a candidate), start from -INFINITY, "
                 "scan rows then columns and replace only on v > best (the first maximum wins ties); "
                 "argmax = h * W + w within the plane.") {
  WB_ASSERT(pool_cases(1000, 1, [](const PoolCase& pc, int) { return check_maxpool_forward(pc); }));
}

WB_CHECK(Correctness, MaxPoolBackward, .weight = 2,
         .passes = "dx bit-exact (integer-valued dy: every order gives the exact sum), argmax from "
                   "the reference",
         .hint = "A thread per input pixel: for the outputs p0..p1, q0..q1 whose windows contain it, add "
                 "dy[p][q] only where argmax[p][q] == h * W + w.") {
  WB_ASSERT(pool_cases(1100, 1, [](const PoolCase& pc, int) { return check_maxpool_backward(pc); }));
}

WB_CHECK(Correctness, AvgPoolForward, .weight = 2,
         .passes = "both conventions, 13 shapes: `|y - ref| <= k u sum|x| / divisor + 3u |y|` (k "
                   "pixels, u = 2^-24)",
         .hint = "Sum the window's pixels inside the image; divide by R * S when count_include_pad is "
                 "nonzero, else by the number of those pixels.") {
  WB_ASSERT(pool_cases(1200, 2, check_avgpool_forward));
}

WB_CHECK(Correctness, AvgPoolBackward, .weight = 2,
         .passes = "both conventions: `|dx - ref| <= (k + 2) u sum|dy / divisor|` (k windows)",
         .hint = "dx[h][w] = sum over the windows containing (h, w) of dy[p][q] / divisor(p, q), with "
                 "the forward's divisor convention.") {
  WB_ASSERT(pool_cases(1300, 2, check_avgpool_backward));
}

WB_CHECK(Correctness, BatchNormTraining, .weight = 3,
         .passes = "save_mean, save_rstd, running_mean, running_var, then y, on 10 shapes (M = 2, C "
                   "= 1, C = 300, HW odd and multiple of 4, M up to 150001 so that every split is "
                   "used); channels uniform, of mean 1e3 and std 1, constant, wide",
         .hint = "Per channel over N * HW values: Welford/Chan (no E[x^2] - E[x]^2); normalize with the "
                 "biased variance m2 / M, update running_var with the unbiased m2 / (M - 1).") {
  WB_ASSERT(bn_cases(1400, check_bn_training));
}

WB_CHECK(Correctness, BatchNormInference, .weight = 1,
         .passes = "y elementwise, the same shapes",
         .hint = "The channel of element i of an NCHW tensor is (i / HW) % C; y = (x - running_mean) / "
                 "sqrt(running_var + eps) * gamma + beta.") {
  WB_ASSERT(bn_cases(1500, check_bn_inference));
}

WB_CHECK(Correctness, BatchNormBackward, .weight = 3,
         .passes = "dbeta, dgamma, then dx, the same shapes",
         .hint = "dbeta = sum dy, dgamma = sum dy * xhat per channel; dx = gamma * rstd * (dy - dbeta / "
                 "M - xhat * dgamma / M).") {
  WB_ASSERT(bn_cases(1600, [](BnCase b) { return check_bn_backward(make_bn_backward_case(std::move(b))); }));
}

WB_CHECK(Correctness, BatchNormReproducible, .weight = 2,
         .passes = "training and backward three times, the workspace holding other bytes and the blocks "
                   "started in another order each time: bitwise equal",
         .hint = "No atomicAdd for the sums over a channel, and nothing read from the workspace that this "
                 "call did not write: per-block partials stored (not added) in the workspace, combined in a "
                 "fixed order by a second kernel.") {
  // Each run finds the workspace holding other bytes, and starts the blocks in another order.
  constexpr unsigned char kFills[3] = {0x00, 0xFF, 0x3C};
  constexpr const char* kAdvice =
      "The result must not depend on timing (atomics) nor on what the workspace held before the call: store each "
      "block's partials, then combine them in a fixed order.";
  wb::check::Cases cases(4);
  for (BnShape s : {BnShape{8, 2, 1000}, BnShape{4, 3, 16384}}) {
    const BnCase b = make_bn_case(s, 0, 1700 + s.HW);
    const std::string training = "batchnorm_forward_training(" + b.shape() + ")";
    WB_ASSERT(cases(wb::check::same_every_run<BnTrainingGot>(
        training, [&](BnTrainingGot& got, int k) { return run_bn_training(b, got, training, kFills[k - 1]); },
        {{"y", &BnTrainingGot::y},
         {"save_mean", &BnTrainingGot::save_mean},
         {"save_rstd", &BnTrainingGot::save_rstd},
         {"running_mean", &BnTrainingGot::running_mean},
         {"running_var", &BnTrainingGot::running_var}},
        kAdvice)));
    const BnBackwardCase k = make_bn_backward_case(make_bn_case(s, 0, 1800 + s.HW));
    const std::string backward = "batchnorm_backward(" + k.b.shape() + ")";
    WB_ASSERT(cases(wb::check::same_every_run<BnGradsGot>(
        backward, [&](BnGradsGot& got, int r) { return run_bn_backward(k, got, backward, kFills[r - 1]); },
        {{"dx", &BnGradsGot::dx}, {"dgamma", &BnGradsGot::dgamma}, {"dbeta", &BnGradsGot::dbeta}}, kAdvice)));
  }
}

// ---- Host code (sim) ------------------------------------------------------------------------------------
//
// Fault injection (wb_host_checks.h): each kernel launch (and any cudaFuncSetAttribute, allocation,
// copy or memset) of every pooling and batch-norm function fails in turn; the function must return
// that error at once, with no launch after it and no device memory left.

#if defined(CUSIM)
namespace {

using wb::check::host::ErrorPathCase;

struct PoolHostBuffers {
  PoolParams p;
  wb::DeviceBuffer<float> x, y, dx;
  wb::DeviceBuffer<int> argmax;
  PoolHostBuffers(PoolParams q, std::uint64_t seed)
      : p(q), x{std::span<const float>(wb::random_floats(std::size_t(q.N) * q.C * q.H * q.W, seed, -1.0f, 1.0f))},
        y{std::size_t(q.N) * q.C * pool_out_h(q) * pool_out_w(q)}, dx{std::size_t(q.N) * q.C * q.H * q.W},
        argmax{std::size_t(q.N) * q.C * pool_out_h(q) * pool_out_w(q)} {}
  // Every pooling function on these buffers, in order.
  void add_cases(std::vector<ErrorPathCase>& cases) {
    const std::string shape = "(" + pool_shape(p) + ")";
    auto add = [&](const char* function, std::function<cudaError_t()> run) {
      cases.push_back({function + shape, function, std::move(run)});
    };
    add("maxpool2d_forward", [this] { return maxpool2d_forward(p, x.data(), y.data(), argmax.data()); });
    // After maxpool2d_forward above: argmax holds its indices.
    add("maxpool2d_backward", [this] { return maxpool2d_backward(p, y.data(), argmax.data(), dx.data()); });
    add("avgpool2d_forward", [this] { return avgpool2d_forward(p, x.data(), y.data(), 0); });
    add("avgpool2d_backward", [this] { return avgpool2d_backward(p, y.data(), dx.data(), 1); });
  }
};

struct BnHostBuffers {
  int N, C, HW;
  wb::DeviceBuffer<float> x, y, dy, dx, gamma, beta, mean, rstd, running_mean, running_var, dgamma, dbeta, workspace;
  BnHostBuffers(int n, int c, int hw, std::uint64_t seed)
      : N(n), C(c), HW(hw),
        x{std::span<const float>(wb::random_floats(std::size_t(n) * c * hw, seed, -1.0f, 1.0f))},
        y{std::size_t(n) * c * hw},
        dy{std::span<const float>(wb::random_floats(std::size_t(n) * c * hw, seed + 1, -1.0f, 1.0f))},
        dx{std::size_t(n) * c * hw}, gamma{std::span<const float>(wb::random_floats(std::size_t(c), seed + 2, 0.5f, 1.5f))},
        beta{std::span<const float>(wb::random_floats(std::size_t(c), seed + 3, -0.5f, 0.5f))}, mean{std::size_t(c)},
        rstd{std::size_t(c)}, running_mean{std::span<const float>(std::vector<float>(std::size_t(c), 0.0f))},
        running_var{std::span<const float>(std::vector<float>(std::size_t(c), 1.0f))}, dgamma{std::size_t(c)},
        dbeta{std::size_t(c)}, workspace{batchnorm_workspace_floats(c)} {}
  // Every batch-norm function on these buffers, in order.
  void add_cases(std::vector<ErrorPathCase>& cases) {
    const std::string shape = "(" + bn_shape(N, C, HW) + ")";
    auto add = [&](const char* function, std::function<cudaError_t()> run) {
      cases.push_back({function + shape, function, std::move(run)});
    };
    add("batchnorm_forward_training", [this] {
      return batchnorm_forward_training(N, C, HW, x.data(), gamma.data(), beta.data(), 0.1f, 1e-5f, y.data(),
                                        mean.data(), rstd.data(), running_mean.data(), running_var.data(),
                                        workspace.data());
    });
    add("batchnorm_forward_inference", [this] {
      return batchnorm_forward_inference(N, C, HW, x.data(), gamma.data(), beta.data(), running_mean.data(),
                                         running_var.data(), 1e-5f, y.data());
    });
    // After the training forward above: mean and rstd are its statistics.
    add("batchnorm_backward", [this] {
      return batchnorm_backward(N, C, HW, dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(),
                                dgamma.data(), dbeta.data(), workspace.data());
    });
  }
};

}  // namespace

WB_CHECK(Correctness, PoolBnHostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every pooling and batch-norm function, two shapes each: each kernel launch it "
                   "makes is made to fail in turn; the function must return that error at once, with "
                   "no launch after it",
         .hint = "Test cudaGetLastError() right after each launch (the batch-norm passes launch several "
                 "kernels) and return its error before launching the next.") {
  PoolHostBuffers p1(pool(2, 3, 9, 9, 3, 3, 1, 1, 2, 2), 1500), p2(pool(1, 4, 8, 8, 2, 2, 0, 0, 2, 2), 1510);
  BnHostBuffers b1(2, 3, 81, 1520), b2(4, 2, 4096, 1530);
  std::vector<ErrorPathCase> cases;
  p1.add_cases(cases);
  p2.add_cases(cases);
  b1.add_cases(cases);
  b2.add_cases(cases);
  WB_ASSERT(wb::check::host::launch_errors_returned(cases));
}
#endif

// ---- Analysis (sim) ---------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// Runs every function on small shapes and fails on any report of @p tools.
void expect_no_reports(const std::vector<std::string>& tools, const char* what) {
  wb::check::expect_no_analysis_reports(tools, what, [&](const auto& keep_first) {
    g_workspace_unwritten = true;
    std::uint64_t seed = 1900;
    for (PoolParams p : {pool(2, 3, 7, 9, 3, 3, 1, 1, 2, 2), pool(1, 2, 6, 17, 3, 2, 1, 0, 2, 1),
                         pool(1, 1, 4, 4, 4, 4, 3, 3, 1, 1), pool(1, 3, 10, 10, 2, 2, 0, 0, 3, 3)}) {
      const PoolCase pc = make_pool_case(p, 0, seed++);
      keep_first(check_maxpool_forward(pc));
      keep_first(check_maxpool_backward(pc));
      for (int include_pad : {0, 1}) {
        keep_first(check_avgpool_forward(pc, include_pad));
        keep_first(check_avgpool_backward(pc, include_pad));
      }
    }
    for (BnShape s : {BnShape{2, 3, 1}, BnShape{3, 2, 5}, BnShape{2, 5, 64}, BnShape{2, 2, 3000}}) {
      const BnCase b = make_bn_case(s, 0, seed++);
      keep_first(check_bn_training(b));
      keep_first(check_bn_inference(b));
      keep_first(check_bn_backward(make_bn_backward_case(make_bn_case(s, 0, seed++))));
    }
    g_workspace_unwritten = false;
  });
}

}  // namespace

// What passes, for PoolBatchNormMemcheckClean, PoolBatchNormRacecheckClean.
constexpr char kPoolBnAnalysisPasses[] = "no memcheck/initcheck and no racecheck/synccheck report over every function";

WB_CHECK(Analysis, PoolBatchNormMemcheckClean, .weight = 2, .backends = "sim",
         .passes = kPoolBnAnalysisPasses,
         .hint = "Clip every window to the image before reading (rows max(h0, 0) to min(h0 + R, H) - 1), "
                 "test every index against the tensor's size, and read only workspace entries this call "
                 "wrote.") {
  expect_no_reports({"memcheck", "initcheck"}, "memcheck/initcheck");
}

WB_CHECK(Analysis, PoolBatchNormRacecheckClean, .weight = 2, .backends = "sim",
         .passes = kPoolBnAnalysisPasses,
         .hint = "A block reduction writes one value per warp to shared memory and reads them back: "
                 "__syncthreads() between the write and the read, and another before the shared array is "
                 "written again.") {
  expect_no_reports({"racecheck", "synccheck"}, "racecheck/synccheck");
}

namespace {

#if WB_HAVE_CUSIM_ANALYSIS
// @p run's verdict (a correctness check), with the atomic operations of the kernels it launched in
// @p atomics.
testing::AssertionResult count_atomics(const std::function<testing::AssertionResult()>& run, std::uint64_t& atomics) {
  wb::check::Traffic t;
  testing::AssertionResult r = wb::check::measure(run, t);
  atomics = t.atomics;
  return r;
}
#endif

}  // namespace

// What passes, for BatchNormNoAtomics, MaxPoolBackwardNoAtomics.
constexpr char kNoAtomicsPasses[] = "0 atomic operations";

WB_CHECK(Analysis, BatchNormNoAtomics, .weight = 2, .backends = "sim",
         .passes = kNoAtomicsPasses,
         .hint = "Let each block store its partial sums in its own slot of the workspace, and a second "
                 "kernel combine a channel's partials in split order: the same result every run, with no "
                 "atomics.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::string text;
  const BnCase b = make_bn_case({8, 2, 1000}, 0, 2000);
  const BnBackwardCase k = make_bn_backward_case(make_bn_case({8, 2, 1000}, 0, 2001));
  for (bool training : {true, false}) {
    std::uint64_t atomics = 0;
    WB_ASSERT_ANALYSIS_RUN(
        count_atomics([&] { return training ? check_bn_training(b) : check_bn_backward(k); }, atomics),
        "atomic operations");
    WB_REQUIRE_ANALYSIS();
    const char* function = training ? "batchnorm_forward_training" : "batchnorm_backward";
    wb::check::append_measured(text, std::string(function) + ": " + std::to_string(atomics) + " atomics");
    if (atomics != 0) {
      FAIL() << function << "(N=8, C=2, HW=1000): " << atomics
             << " atomic operations. Float atomics add in whatever order the blocks arrive, so the rounding, and the "
                "result's last bits, change from run to run on a GPU. Store per-block partials in the workspace and "
                "combine them in a second kernel in a fixed order.";
    }
  }
#endif
}

WB_CHECK(Analysis, MaxPoolBackwardNoAtomics, .weight = 2, .backends = "sim",
         .passes = kNoAtomicsPasses,
         .hint = "Gather instead of scatter: a thread per input pixel visits the outputs whose windows "
                 "contain it and adds dy where their argmax is this pixel.") {
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  const PoolCase pc = make_pool_case(pool(2, 4, 33, 35, 3, 3, 1, 1, 2, 2), 0, 2002);
  std::uint64_t atomics = 0;
  WB_ASSERT_ANALYSIS_RUN(count_atomics([&] { return check_maxpool_backward(pc); }, atomics), "atomic operations");
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured(std::to_string(atomics) + " atomics");
  if (atomics != 0) {
    FAIL() << "maxpool2d_backward(" << pc.shape() << "): " << atomics
           << " atomic operations. Overlapping windows send several gradients to one pixel; a scatter with atomicAdd "
              "adds them in a different order every run. Gather: a thread per input pixel sums dy over the windows "
              "that contain it and chose it, in a fixed order.";
  }
#endif
}
#endif

// ---- Performance ---------------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// The metric shapes: 3 x 3 windows, stride 2, padding 1 over 2 x 16 x 32 x 64 (Q = 32: a warp's
// outputs are one row), and batch norm over 4 x 4 x 16384 (16 splits of a channel).
// PoolReadsOnce also runs the max-pooling backward on 2 x 2 windows with stride 3: a pixel between
// two windows is in none, and must read no argmax.
const PoolParams kMetricPool = pool(2, 16, 32, 64, 3, 3, 1, 1, 2, 2);
const PoolParams kGappedPool = pool(2, 16, 32, 64, 2, 2, 0, 0, 3, 3);
const BnShape kMetricBn{4, 4, 16384};

#if WB_HAVE_CUSIM_ANALYSIS
// One function's run at a metric shape, and the traffic its kernels made.
struct Measured {
  const char* function;
  std::string shape;  // its call's arguments
  double unit;        // pooling: the bytes of one read per (window, pixel) pair; batch norm: 4 N C HW
  const char* needs = "";  // batch norm: what it must read (BatchNormReadsTwice)
  wb::check::Traffic t{};
  double reads() const { return t.bytes_read / unit; }
};

// Measures @p runs[i] (a correctness check) into @p out[i], in order; the first failure ends it.
testing::AssertionResult measure_each(std::vector<Measured>& out,
                                      const std::vector<std::function<testing::AssertionResult()>>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (auto r = wb::check::measure(runs[i], out[i].t, out[i].function); !r) return r;
  }
  return testing::AssertionSuccess();
}

// Every pooling function at kMetricPool (count_include_pad 0), then with @p gapped the max-pooling
// backward at kGappedPool.
testing::AssertionResult measure_pooling(std::vector<Measured>& out, bool gapped = false) {
  const PoolCase pc = make_pool_case(kMetricPool, 0, 2100);
  const PoolCase gc = make_pool_case(kGappedPool, 0, 2101);
  const double pairs = 4.0 * pc.window_pixels();
  out = {{"maxpool2d_forward", pc.shape(), pairs},
         {"maxpool2d_backward", pc.shape(), pairs + 4.0 * pc.out_size()},
         {"avgpool2d_forward", pc.shape(), pairs},
         {"avgpool2d_backward", pc.shape(), pairs}};
  std::vector<std::function<testing::AssertionResult()>> runs = {
      [&] { return check_maxpool_forward(pc); }, [&] { return check_maxpool_backward(pc); },
      [&] { return check_avgpool_forward(pc, 0); }, [&] { return check_avgpool_backward(pc, 0); }};
  if (gapped) {
    out.push_back({"maxpool2d_backward", gc.shape(), 4.0 * gc.window_pixels() + 4.0 * gc.out_size()});
    runs.push_back([&] { return check_maxpool_backward(gc); });
  }
  return measure_each(out, runs);
}

// Every batch-norm function at kMetricBn.
testing::AssertionResult measure_bn(std::vector<Measured>& out) {
  const BnCase b = make_bn_case(kMetricBn, 0, 2200);
  const BnBackwardCase k = make_bn_backward_case(make_bn_case(kMetricBn, 0, 2201));
  const double bytes = 4.0 * kMetricBn.N * kMetricBn.C * kMetricBn.HW;
  out = {{"batchnorm_forward_training", b.shape(), bytes, "x at most twice: once for the statistics, once to write y"},
         {"batchnorm_forward_inference", b.shape(), bytes, "x once"},
         {"batchnorm_backward", b.shape(), bytes, "x and dy at most twice each: once for the sums, once to write dx"}};
  return measure_each(out, {[&] { return check_bn_training(b); }, [&] { return check_bn_inference(b); },
                            [&] { return check_bn_backward(k); }});
}

// "<function> <text(m)>; ..." over @p all: a metric check's measured value, before its unit.
std::string per_function(const std::vector<Measured>& all, const std::function<std::string(const Measured&)>& text) {
  std::string joined;
  for (const Measured& m : all) joined += (joined.empty() ? "" : "; ") + std::string(m.function) + " " + text(m);
  return joined;
}
#endif

}  // namespace

WB_CHECK(Performance, PoolCoalesced, .weight = 2, .backends = "sim",
         .limits = {{"max_loads", 9.0}, {"max_stores", 4.0}},
         .passes = "every pooling function: loads <= {max_loads:.2f} sectors/request (4 stride_w + 1), "
                   "stores <= {max_stores:.2f}; 2 x 16 x 32 x 64, 3 x 3, stride 2, pad 1",
         .hint = "Let consecutive threads take consecutive outputs of a row (the fastest index is q, then "
                 "p, then the plane) for the forward, consecutive pixels of a row for the backward.") {
  // max_loads is 4 stride_w + 1 at kMetricPool's stride_w = 2: a warp's 32 outputs of a row read 32
  // pixels stride_w apart; a store of 32 consecutive floats touches 4 sectors.
  constexpr double kMaxLoads = WB_LIMIT("max_loads"), kMaxStores = WB_LIMIT("max_stores");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::vector<Measured> all;
  WB_ASSERT(measure_pooling(all));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured(
      per_function(all, [](const Measured& p) { return fixed(p.t.loads()) + " / " + fixed(p.t.stores()); }) +
      " sectors per load / store request");
  for (const Measured& p : all) {
    if (p.t.loads() > kMaxLoads || p.t.stores() > kMaxStores) {
      FAIL() << p.function << "(" << p.shape << "): " << fixed(p.t.loads()) << " sectors per load request and "
             << fixed(p.t.stores()) << " per store request (at most " << fixed(kMaxLoads) << " and "
             << fixed(kMaxStores)
             << "). A warp's 32 lanes should take 32 consecutive outputs (or pixels) of a row: then one load of a "
                "window offset spans 32 * stride_w consecutive floats and a store 32 consecutive floats. More sectors "
                "mean the lanes are far apart (for example the plane index varying fastest).";
    }
  }
#endif
}

WB_CHECK(Performance, PoolReadsOnce, .weight = 2, .backends = "sim", .limits = {{"max_read_ratio", 1.05}},
         .passes = "bytes read <= {max_read_ratio} x one read per (window, pixel) pair (+ dy once per output for "
                   "max backward); the max backward also with 2 x 2 windows, stride 3, where a pixel "
                   "between windows reads nothing",
         .hint = "Find the maximum and its position in one pass over the window (keep both as you go); in "
                 "the max-pooling backward, read dy[p][q] only for the windows whose argmax is this pixel.") {
  constexpr double kMaxReadRatio = WB_LIMIT("max_read_ratio");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::vector<Measured> all;
  WB_ASSERT(measure_pooling(all, true));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured(per_function(all, [&](const Measured& p) {
                               return (&p == &all.back() ? "(stride 3) " : "") + fixed(p.reads()) + "x";
                             }) +
                             " the bytes of one read per (window, pixel) pair");
  for (const Measured& p : all) {
    if (p.reads() > kMaxReadRatio) {
      FAIL() << p.function << "(" << p.shape << ") read " << fixed(p.reads())
             << " x the bytes of one read per (window, pixel) pair (at most " << wb::check::as_written(kMaxReadRatio)
             << "). Each window's pixels need one "
                "read: keep the running maximum and its position together instead of a second pass to find the "
                "argmax (and in the backward, read argmax only for the windows that contain the pixel, and dy only "
                "where the argmax matches).";
    }
  }
#endif
}

WB_CHECK(Performance, BatchNormReadsTwice, .weight = 3, .backends = "sim",
         .limits = {{"max_training_reads", 2.05}, {"max_inference_reads", 1.05}, {"max_backward_reads", 4.10}},
         .passes = "bytes read / 4NCHW: training <= {max_training_reads:.2f}, inference <= "
                   "{max_inference_reads:.2f}, backward <= {max_backward_reads:.2f}; 4 x 4 x 16384",
         .hint = "Compute mean and variance in one pass (Welford per thread, Chan's combination across "
                 "threads and blocks), then one pass writes y; the backward needs one pass for the two sums "
                 "and one for dx.") {
  // The bytes each function of measure_bn may read, in its order, in units of 4 N C HW bytes.
  constexpr double kReadsAllowed[] = {WB_LIMIT("max_training_reads"), WB_LIMIT("max_inference_reads"),
                                      WB_LIMIT("max_backward_reads")};
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::vector<Measured> all;
  WB_ASSERT(measure_bn(all));
  WB_REQUIRE_ANALYSIS();
  wb::check::record_measured(per_function(all, [](const Measured& b) { return fixed(b.reads()); }) +
                             " x 4NCHW bytes read");
  ASSERT_EQ(all.size(), std::size(kReadsAllowed));
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].reads() > kReadsAllowed[i]) {
      FAIL() << all[i].function << "(" << all[i].shape << ") read " << fixed(all[i].reads())
             << " x 4NCHW bytes (at most " << fixed(kReadsAllowed[i]) << ": " << all[i].needs
             << "). A separate pass for the mean and another for the variance reads x once more: Welford's algorithm "
                "gives both in one pass.";
    }
  }
#endif
}

WB_CHECK(Performance, BatchNormCoalesced, .weight = 2, .backends = "sim",
         .limits = {{"min_efficiency", 0.90}, {"min_bytes_per_request", 384.0}},
         .passes = ">= {min_efficiency:.0%} of the bytes of every sector loaded or stored used, and >= "
                   "{min_bytes_per_request} bytes per load and per store request (16-byte accesses: HW % 4 "
                   "== 0)",
         .hint = "Consecutive threads on consecutive 16-byte chunks of a plane (the channel of element i is "
                 "(i / HW) % C, so a warp stays within one plane); with HW % 4 == 0 a plane starts 16-byte "
                 "aligned: load and store float4s.") {
  constexpr double kMinEfficiency = WB_LIMIT("min_efficiency");
  // 32 lanes of 4-byte accesses carry 128 bytes a request, of 16-byte accesses 512 (the solution:
  // 482 to 512, loads and stores, every function).
  constexpr double kMinBytesPerRequest = WB_LIMIT("min_bytes_per_request");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  std::vector<Measured> all;
  WB_ASSERT(measure_bn(all));
  WB_REQUIRE_ANALYSIS();
  auto per_request = [](double bytes, std::uint64_t requests) { return wb::check::Traffic::ratio(bytes, requests); };
  wb::check::record_measured(per_function(all, [&](const Measured& b) {
                               return fixed(100.0 * b.t.load_efficiency()) + "% / " +
                                      fixed(100.0 * b.t.store_efficiency()) + "%, " +
                                      fixed(per_request(b.t.bytes_read, b.t.load_requests), 0) + " / " +
                                      fixed(per_request(b.t.bytes_written, b.t.store_requests), 0) + " B";
                             }) +
                             " (sector bytes used, bytes per request; loads / stores)");
  for (const Measured& b : all) {
    for (auto [name, efficiency] :
         {std::pair{"loads", b.t.load_efficiency()}, std::pair{"stores", b.t.store_efficiency()}}) {
      if (efficiency < kMinEfficiency) {
        FAIL() << b.function << "(" << b.shape << "): its " << name << " use only " << fixed(100.0 * efficiency)
               << "% of the bytes of the 32-byte sectors they touch (at least " << fixed(100.0 * kMinEfficiency, 0)
               << "%). Consecutive threads must access "
                  "consecutive floats or 16-byte chunks of a plane, not elements of different channels or planes.";
      }
    }
    for (auto [name, bytes] : {std::pair{"loads", per_request(b.t.bytes_read, b.t.load_requests)},
                               std::pair{"stores", per_request(b.t.bytes_written, b.t.store_requests)}}) {
      if (bytes < kMinBytesPerRequest) {
        FAIL() << b.function << "(" << b.shape << "): its " << name << " carry " << fixed(bytes, 0)
               << " bytes per warp request (at least " << wb::check::as_written(kMinBytesPerRequest)
               << "; 32 lanes of 4-byte accesses carry 128, of 16-byte ones "
                  "512). HW % 4 == 0 here, so every plane starts 16-byte aligned: take the vectorized path, a float4 "
                  "chunk per thread, in every pass of the function.";
      }
    }
  }
#endif
}
#else
// Every timed function is validated before timing and after it, the timed runs each given changed inputs
// (wb_timed.h), against the references of the correctness checks.
namespace {

using wb::check::failure_text;
using wb::check::verified_bandwidth_ratio;

template <class T>
wb::DeviceBuffer<T> device_vector(const std::vector<T>& v) {
  return wb::DeviceBuffer<T>(std::span<const T>(v));
}

}  // namespace

WB_CHECK(Performance, PoolBandwidth, .weight = 4, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.80}},
         .passes = "max pooling 3 x 3 stride 2 pad 1 on 32 x 64 x 112 x 112, forward (x read, y and "
                   "argmax written) and backward: >= {min_ratio:.2f} x a device copy timed in the same run",
         .hint = "A thread per output (per input pixel for the backward), consecutive threads on a row, "
                 "enough blocks; close other GPU programs.") {
  constexpr double kMinBandwidth = WB_LIMIT("min_ratio");
  // Correct first: a wrong kernel's speed means nothing.
  WB_ASSERT(check_maxpool_forward(make_pool_case(pool(2, 8, 112, 112, 3, 3, 1, 1, 2, 2), 0, 2300)));
  WB_ASSERT(check_maxpool_backward(make_pool_case(pool(2, 8, 112, 112, 3, 3, 1, 1, 2, 2), 0, 2301)));
  std::string text;
  try {
    PoolCase pc = make_pool_case(pool(32, 64, 112, 112, 3, 3, 1, 1, 2, 2), 0, 2302);
    const PoolParams p = pc.p;
    const std::size_t in = pc.in_size(), out = pc.out_size();
    auto x = device_vector(pc.x);
    wb::DeviceBuffer<float> y(out), dx(in);
    wb::DeviceBuffer<int> argmax(out);
    wb::check::ChangingInput<float> changing_x(pc.x, x.data());
    double fwd = 0.0, bwd = 0.0;
    WB_ASSERT(verified_bandwidth_ratio(
        "maxpool2d_forward 32x64x112x112", 4.0 * in + 8.0 * out,
        [&] { return maxpool2d_forward(p, x.data(), y.data(), argmax.data()); }, [&] { changing_x.change(); },
        [&] { return failure_text(maxpool_forward_matches("the output", pc, y.download(), argmax.download())); },
        text, fwd));
    // The backward of the last forward's windows, on integer-valued dy.
    const std::vector<int> windows = maxpool_reference(pc).argmax;
    std::vector<float> dy_host = int_dy(out, 2303);
    auto dy = device_vector(dy_host);
    auto window_argmax = device_vector(windows);
    wb::check::ChangingInput<float> changing_dy(dy_host, dy.data());
    WB_ASSERT(verified_bandwidth_ratio(
        "maxpool2d_backward", 8.0 * out + 4.0 * in,
        [&] { return maxpool2d_backward(p, dy.data(), window_argmax.data(), dx.data()); },
        [&] { changing_dy.change(); },
        [&] { return failure_text(maxpool_backward_matches("the output", pc, windows, dy_host, dx.download())); },
        text, bwd));
    EXPECT_GE(fwd, kMinBandwidth) << "maxpool2d_forward reached " << wb::check::fixed(fwd) << " x the copy bandwidth; it needs "
                                  << wb::check::as_written(kMinBandwidth)
                                  << ". A thread per output with consecutive threads on consecutive outputs of a row; "
                                     "enough blocks (N C P Q / 256).";
    EXPECT_GE(bwd, kMinBandwidth) << "maxpool2d_backward reached " << wb::check::fixed(bwd) << " x the copy bandwidth; it needs "
                                  << wb::check::as_written(kMinBandwidth) << ". A thread per input pixel, reading dy only where argmax matches.";
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing max pooling: " << e.what();
  }
}

WB_CHECK(Performance, BatchNormBandwidth, .weight = 6, .backends = "cuda", .timeout_s = 300,
         .limits = {{"min_ratio", 0.80}},
         .passes = "32 x 256 x 56 x 56, counting the traffic each pass needs (training: x twice and "
                   "y; inference: x and y; backward: x and dy twice, dx): >= {min_ratio:.2f} x copy",
         .hint = "float4 loads with several in flight per thread before any is used, a (split, channel) "
                 "grid of a few thousand values per block (the reference: about 8192, 4 float4 per "
                 "thread per round), per-channel parameters read once per block, and no extra pass over "
                 "x.") {
  constexpr double kMinBandwidth = WB_LIMIT("min_ratio");
  WB_ASSERT(check_bn_training(make_bn_case({8, 16, 3136}, 0, 2400)));
  WB_ASSERT(check_bn_inference(make_bn_case({8, 16, 3136}, 0, 2401)));
  WB_ASSERT(check_bn_backward(make_bn_backward_case(make_bn_case({8, 16, 3136}, 0, 2402))));
  std::string text;
  try {
    BnCase b = make_bn_case({32, 256, 56 * 56}, 0, 2403);
    const int N = b.N, C = b.C, HW = b.HW;
    const std::size_t n = b.size();
    auto x = device_vector(b.x), gamma = device_vector(b.gamma), beta = device_vector(b.beta);
    auto rm = device_vector(b.running_mean), rv = device_vector(b.running_var);
    wb::DeviceBuffer<float> y(n), mean(C), rstd(C), ws(batchnorm_workspace_floats(C));
    wb::check::ChangingInput<float> changing_x(b.x, x.data());
    // Training updates the running statistics on every run: the reference takes them as they were
    // before the last one.
    const auto running_statistics = [&] {
      b.running_mean = rm.download();
      b.running_var = rv.download();
    };
    double train = 0.0, infer = 0.0, back = 0.0;
    WB_ASSERT(verified_bandwidth_ratio(
        "training 32x256x56x56", 12.0 * n,
        [&] {
          return batchnorm_forward_training(N, C, HW, x.data(), gamma.data(), beta.data(), kMomentum, kEps, y.data(),
                                            mean.data(), rstd.data(), rm.data(), rv.data(), ws.data());
        },
        [&] {
          changing_x.change();
          running_statistics();
        },
        [&] {
          const BnTrainingGot got{y.download(), mean.download(), rstd.download(), rm.download(), rv.download()};
          return failure_text(bn_training_matches("the output", b, got));
        },
        text, train));
    running_statistics();  // what inference reads
    WB_ASSERT(verified_bandwidth_ratio(
        "inference", 8.0 * n,
        [&] {
          return batchnorm_forward_inference(N, C, HW, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), kEps,
                                             y.data());
        },
        [&] { changing_x.change(); }, [&] { return failure_text(bn_inference_matches("the output", b, y.download())); },
        text, infer));
    BnBackwardCase k = make_bn_backward_case(b);
    auto dy = device_vector(k.dy), save_mean = device_vector(k.mean), save_rstd = device_vector(k.rstd);
    auto x_now = device_vector(k.b.x);
    wb::DeviceBuffer<float> dx(n), dgamma(C), dbeta(C);
    wb::check::ChangingInput<float> changing_dy(k.dy, dy.data());
    WB_ASSERT(verified_bandwidth_ratio(
        "backward", 20.0 * n,
        [&] {
          return batchnorm_backward(N, C, HW, dy.data(), x_now.data(), gamma.data(), save_mean.data(), save_rstd.data(),
                                    dx.data(), dgamma.data(), dbeta.data(), ws.data());
        },
        [&] { changing_dy.change(); },
        [&] {
          const BnGradsGot got{dx.download(), dgamma.download(), dbeta.download()};
          return failure_text(bn_backward_matches("the output", k, got));
        },
        text, back));
    for (auto [name, ratio] : {std::pair{"batchnorm_forward_training", train},
                               std::pair{"batchnorm_forward_inference", infer}, std::pair{"batchnorm_backward", back}}) {
      EXPECT_GE(ratio, kMinBandwidth) << name << " reached " << wb::check::fixed(ratio) << " x the copy bandwidth; it needs "
                                      << wb::check::as_written(kMinBandwidth)
                                      << ". 16-byte loads, several in flight per thread, a (split, channel) grid "
                                         "of a few thousand values per block, and no pass over x beyond the ones "
                                         "counted.";
    }
  } catch (const wb::CudaError& e) {
    FAIL() << "a CUDA call failed while timing batch normalization: " << e.what();
  }
}
#endif
