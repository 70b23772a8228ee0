// Checks for lab 07, part 2: max and average pooling, batch normalization (NCHW, fp32).
//
// Correctness: every output is compared element by element with a double-precision reference
// computed on the host from the same float inputs; the allowances are derived from the
// computation (u = 2^-24; T(M) = (16 + 4 sqrt(M)) u, the relative rounding of an M-term float sum
// in any reasonable order, as in lab 06):
//   - max pooling is exact: y and argmax must be bit-equal (a maximum rounds nothing). Planes are
//     integer-valued, some all negative (a window on the border then shows whether padding was
//     taken as a 0 candidate), some of two values only (ties everywhere: the first pixel of the
//     window in row-major order must win), some uniform floats.
//   - max pooling backward: dy is integer-valued, so every sum is exact in any order: bit-equal.
//     argmax comes from the reference forward, so the backward is checked on its own.
//   - average pooling: a sum of k in-image pixels in any order is within (k - 1) u sum|x| of the
//     exact sum, and the division (or a multiplication by 1 / divisor) adds 2 u: allowed
//     k u sum|x| / divisor + 3 u |y|. Both count_include_pad conventions, every shape.
//   - average pooling backward: a sum of k terms dy / divisor: allowed (k + 2) u sum|dy / divisor|.
//   - batch norm, training: over the M = N HW values of a channel, the mean within T(M) mean|x|
//     (a float sum's rounding, which also bounds Welford's and Chan's updates); the variance within
//     2 T(M) var + 2 d sqrt(var) + d^2, d = T(M) mean|x| (the sum of squares, and deviations taken
//     from a mean known within d: Welford's running means are), so
//     rstd = 1 / sqrt(var + eps) within rstd (var_allowed / (2 (var + eps)) + 2 u); y within
//     |gamma| (|x - mean| rstd_allowed + rstd mean_allowed) + 4 u (|y| + |beta|); the running
//     statistics within momentum times the statistic's allowance plus 4 u of their terms.
//     Channels: uniform, mean 1e3 and standard deviation 1 (E[x^2] - E[x]^2 cancels every digit
//     there, while the mean's rounding is allowed for exactly), constant (variance 0), wide.
//     Shapes: M = 2 (where the unbiased variance differs from the biased one by a factor 2), C = 1,
//     C = 300, HW = 1, 5, 49, 64 (odd planes take no 16-byte loads), M up to 150001 (the split
//     over kBatchNormSplits blocks per channel).
//   - batch norm, inference: elementwise, y = (x - rm) / sqrt(rv + eps) gamma + beta in any
//     arrangement (folding gamma / sqrt(rv + eps) into a scale and a shift included): allowed
//     6 u (|gamma| rstd (|x| + |rm|) + |beta| + |y|).
//   - batch norm backward: dbeta within T(M) sum|dy|, dgamma within (T(M) + 4 u) sum|dy xhat|, dx
//     within |gamma| rstd (their errors divided by M, the second times |xhat|) + 8 u of its terms.
//   Inputs are surrounded by NaN (a read outside them shows), outputs start as 0xFF bytes (an
//   element never written shows) and carry guard zones; the workspace too starts as 0xFF bytes
//   (except in the analysis checks, where it is left unwritten for initcheck). A read a little
//   past an array lands in its guard zone, which memcheck cannot see: the NaN there shows it.
// Reproducibility: batch-norm training and backward run three times on the same inputs, the
//   workspace holding other bytes before each run: bitwise equal outputs.
// Analysis (sim): cusim memcheck/initcheck and racecheck/synccheck report nothing over every
//   function; batch-norm training and backward, and max-pooling backward, use no atomics.
// Performance (sim), cusim analysis metrics (traffic as the kernels request it); each check's
// limits are the .limits of its WB_CHECK:
//   - pooling: global sectors per load request at most max_loads, 4 stride_w + 1 at the metric
//     shape's stride 2 (a warp's 32 outputs of a row read 32 pixels stride_w apart), and per store
//     request at most max_stores (32 consecutive floats: 4), 2 x 16 x 32 x 64, 3 x 3 windows,
//     stride 2, padding 1;
//   - pooling: bytes read at most max_read_ratio x 4 x the (window, in-image pixel) pairs, each
//     window's pixels read once (plus 4 N C P Q for max backward: dy once per output, where the
//     argmax matches);
//   - batch norm: bytes read in units of 4 N C HW at most max_training_reads (x twice: statistics,
//     then y), max_inference_reads (x once) and max_backward_reads (x and dy twice each);
//   - batch norm, HW % 4 == 0: at least min_efficiency of the bytes of every 32-byte sector loaded
//     or stored used, and at least min_bytes_per_request bytes per load and store request.
// Performance (cuda): bytes moved per second as a ratio to a device-to-device copy timed in the
//   same run, at least min_ratio: maxpool2d_forward (3 x 3, stride 2, padding 1, 32 x 64 x 112 x
//   112; x read, y and argmax written) and maxpool2d_backward (dy, argmax read, dx written); batch
//   norm on 32 x 256 x 56 x 56: training (x twice, y once), inference (x, y), backward (x and dy
//   twice, dx).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "pooling_batchnorm.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

namespace {

using wb::check::fixed;

using wb::check::after_call;
using wb::check::cuda_success;
using wb::check::Input;
using wb::check::never_written;
using wb::check::Output;
using Checks = wb::check::BufferChecks;

constexpr std::size_t kGuard = wb::DeviceBuffer<float>::kDefaultGuard;
constexpr double kU = 0x1.0p-24;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMomentum = 0.1f;
constexpr float kEps = 1e-5f;

double sum_tolerance(double terms) { return (16.0 + 4.0 * std::sqrt(terms)) * kU; }

std::string number(double v) { return wb::check::significant(v, 8); }

std::string shown(float v) {
  return never_written(v) ? std::string("nothing (never written: still the 0xFF bytes the checker put there)")
                          : number(v);
}

// ---- device buffers (wb_buffers.h) ---------------------------------------------------------------------

// While set (the analysis checks), the batch-norm workspace is left unwritten by the checker, so
// that initcheck reports a read of an entry the call did not write.
bool g_workspace_unwritten = false;

// A call's verdict and what it produced.
template <class T>
struct CallResult {
  testing::AssertionResult ok = testing::AssertionSuccess();
  T got;
};

struct Expected {
  std::vector<double> value, allowed;  // allowed 0: bit-exact
};

// An NCHW tensor's dimensions and the names of its last two indices ("h", "w" or "p", "q").
struct Dims {
  int N, C, H, W;
  const char *row = "h", *col = "w";
  std::string at(std::size_t i) const {
    const std::size_t w = i % W, h = i / W % H, c = i / (static_cast<std::size_t>(W) * H) % C,
                      n = i / (static_cast<std::size_t>(W) * H * C);
    return "[n=" + std::to_string(n) + "][c=" + std::to_string(c) + "][" + row + "=" + std::to_string(h) + "][" + col +
           "=" + std::to_string(w) + "]";
  }
};

// Element-wise comparison; @p why(i) explains a mismatch at element i.
testing::AssertionResult compare(const std::string& call, const char* array, const Expected& e,
                                 const std::vector<float>& got, const Dims& dims,
                                 const std::function<std::string(std::size_t)>& why) {
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const bool ok = e.allowed[i] == 0.0 ? (!never_written(got[i]) && g == e.value[i])
                                        : std::isfinite(g) && std::fabs(g - e.value[i]) <= e.allowed[i];
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << bad << " of " << got.size() << " elements of " << array << " are wrong; the first is "
          << array << dims.at(first) << ": got " << shown(got[first]) << ", expected " << number(e.value[first]);
  if (e.allowed[first] == 0.0) {
    failure << " exactly.";
  } else {
    failure << " (allowed difference " << number(e.allowed[first]) << ").";
  }
  if (const std::string text = why(first); !text.empty()) failure << " " << text;
  return failure;
}

// ---- pooling: inputs and references ------------------------------------------------------------------------

enum class PlaneKind { Ints, Negative, Ties, Floats };

const char* describe(PlaneKind kind) {
  switch (kind) {
    case PlaneKind::Ints: return "integers in [-8, 8]";
    case PlaneKind::Negative: return "all negative (integers in [-100, -1])";
    case PlaneKind::Ties: return "only the values 1 and 2 (ties everywhere)";
    case PlaneKind::Floats: return "uniform floats in [-1, 1)";
  }
  return "";
}

struct PoolCase {
  PoolParams p;
  int P, Q;
  std::vector<float> x;
  std::vector<PlaneKind> kinds;  // per plane n * C + c
  std::uint64_t seed;
  std::size_t in_size() const { return static_cast<std::size_t>(p.N) * p.C * p.H * p.W; }
  std::size_t out_size() const { return static_cast<std::size_t>(p.N) * p.C * P * Q; }
  Dims in_dims() const { return {p.N, p.C, p.H, p.W}; }
  Dims out_dims() const { return {p.N, p.C, P, Q, "p", "q"}; }
  std::string shape() const {
    return "N=" + std::to_string(p.N) + ", C=" + std::to_string(p.C) + ", H=" + std::to_string(p.H) +
           ", W=" + std::to_string(p.W) + ", window " + std::to_string(p.R) + "x" + std::to_string(p.S) + ", stride " +
           std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + ", pad " + std::to_string(p.pad_h) + "x" +
           std::to_string(p.pad_w);
  }
  // The window of output (p, q) clipped to the image.
  struct Window {
    int h0, h1, w0, w1;
    int pixels() const { return (h1 - h0) * (w1 - w0); }
  };
  Window window(int op, int oq) const {
    const int hs = op * p.stride_h - p.pad_h, ws = oq * p.stride_w - p.pad_w;
    return {std::max(hs, 0), std::min(hs + p.R, p.H), std::max(ws, 0), std::min(ws + p.S, p.W)};
  }
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
};

PoolParams pool(int N, int C, int H, int W, int R, int S, int pad_h, int pad_w, int stride_h, int stride_w) {
  return {N, C, H, W, R, S, pad_h, pad_w, stride_h, stride_w};
}

PoolCase make_pool_case(PoolParams p, std::size_t first_kind, std::uint64_t seed) {
  PoolCase pc{p, pool_out_h(p), pool_out_w(p), {}, {}, seed};
  pc.x.resize(pc.in_size());
  wb::Random rng(seed * 7919 + 3);
  const std::vector<PlaneKind> kinds = {PlaneKind::Ints, PlaneKind::Negative, PlaneKind::Ties, PlaneKind::Floats};
  const std::size_t plane_size = static_cast<std::size_t>(p.H) * p.W;
  for (int plane = 0; plane < p.N * p.C; ++plane) {
    const PlaneKind kind = kinds[(plane + first_kind) % kinds.size()];
    pc.kinds.push_back(kind);
    for (std::size_t i = 0; i < plane_size; ++i) {
      float v = 0.0f;
      switch (kind) {
        case PlaneKind::Ints: v = static_cast<float>(rng.next_int(-8, 8)); break;
        case PlaneKind::Negative: v = static_cast<float>(rng.next_int(-100, -1)); break;
        case PlaneKind::Ties: v = static_cast<float>(rng.next_int(1, 2)); break;
        case PlaneKind::Floats: v = static_cast<float>(-1.0 + 2.0 * rng.next_unit_double()); break;
      }
      pc.x[plane * plane_size + i] = v;
    }
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
  MaxRef r;
  r.y.resize(pc.out_size());
  r.argmax.resize(pc.out_size());
  pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
    float best = -INFINITY;
    int at = w.h0 * pc.p.W + w.w0;
    for (int h = w.h0; h < w.h1; ++h) {
      for (int c = w.w0; c < w.w1; ++c) {
        if (pc.at(plane, h, c) > best) {
          best = pc.at(plane, h, c);
          at = h * pc.p.W + c;
        }
      }
    }
    r.y[pc.out_index(plane, op, oq)] = best;
    r.argmax[pc.out_index(plane, op, oq)] = at;
  });
  return r;
}

std::string plane_note(const PoolCase& pc, std::size_t out_index) {
  const std::size_t plane = out_index / (static_cast<std::size_t>(pc.P) * pc.Q);
  return "This plane is " + std::string(describe(pc.kinds[plane])) + ".";
}

std::string maxpool_diagnosis(const PoolCase& pc, std::size_t i, float got) {
  const int plane = static_cast<int>(i / (static_cast<std::size_t>(pc.P) * pc.Q));
  const int op = static_cast<int>(i / pc.Q % pc.P), oq = static_cast<int>(i % pc.Q);
  const PoolCase::Window w = pc.window(op, oq);
  std::string text = plane_note(pc, i) + " Its window covers rows " + std::to_string(w.h0) + ".." +
                     std::to_string(w.h1 - 1) + " and columns " + std::to_string(w.w0) + ".." +
                     std::to_string(w.w1 - 1) + " of the image";
  text += pc.padded(w) ? " (the rest of it is padding)." : ".";
  if (got == 0.0f && pc.padded(w) && pc.kinds[plane] == PlaneKind::Negative) {
    text += " Every pixel of this window is negative and the result is 0: the padding was taken as a candidate. "
            "Padding never wins in max pooling: take the maximum over the window's pixels inside the image only.";
  } else if (std::isnan(got) && !never_written(got)) {
    text += " NaN: the checker surrounds x with NaN, so a pixel outside the image (or the tensor) was read.";
  }
  return text;
}

using MaxPoolFn = cudaError_t (*)(PoolParams, const float*, float*, int*);

testing::AssertionResult run_maxpool(const PoolCase& pc, std::vector<float>& y, std::vector<int>& argmax,
                                     const std::string& call) {
  Input<float> x(pc.x, "x", kNaN);
  Output<float> yo(pc.out_size(), "y");
  Output<int> ao(pc.out_size(), "argmax");
  if (auto r = after_call(maxpool2d_forward(pc.p, x.dev.data(), yo.dev.data(), ao.dev.data()), call,
                          "maxpool2d_forward",
                          {[&] { return yo.in_bounds(call); }, [&] { return ao.in_bounds(call); },
                           [&] { return x.unchanged(call); }});
      !r) {
    return r;
  }
  y = yo.dev.download();
  argmax = ao.dev.download();
  return testing::AssertionSuccess();
}

testing::AssertionResult check_maxpool_forward(const PoolCase& pc) {
  const std::string call = "maxpool2d_forward(" + pc.shape() + ") [seed " + std::to_string(pc.seed) + "]";
  try {
    std::vector<float> y;
    std::vector<int> argmax;
    if (auto r = run_maxpool(pc, y, argmax, call); !r) return r;
    const MaxRef ref = maxpool_reference(pc);
    Expected e{std::vector<double>(ref.y.begin(), ref.y.end()), std::vector<double>(ref.y.size(), 0.0)};
    if (auto r = compare(call, "y", e, y, pc.out_dims(), [&](std::size_t i) { return maxpool_diagnosis(pc, i, y[i]); });
        !r) {
      return r;
    }
    for (std::size_t i = 0; i < argmax.size(); ++i) {
      if (argmax[i] == ref.argmax[i]) continue;
      const int plane = static_cast<int>(i / (static_cast<std::size_t>(pc.P) * pc.Q));
      const PoolCase::Window w = pc.window(static_cast<int>(i / pc.Q % pc.P), static_cast<int>(i % pc.Q));
      const int want = ref.argmax[i], got = argmax[i];
      testing::AssertionResult failure = testing::AssertionFailure();
      failure << call << ": argmax" << pc.out_dims().at(i) << " = " << got << ", expected " << want << " (h = "
              << want / pc.p.W << ", w = " << want % pc.p.W << "; argmax is h * W + w within the plane). "
              << plane_note(pc, i);
      const int gh = got / pc.p.W, gw = got % pc.p.W;
      const bool inside = got >= 0 && gh >= w.h0 && gh < w.h1 && gw >= w.w0 && gw < w.w1;
      if (got == -1) {
        failure << " Nothing was written there (the checker filled argmax with 0xFF bytes).";
      } else if (!inside) {
        failure << " That is not a pixel of this window inside the image: argmax counts h * W + w within the "
                   "plane (not an offset in the window, not an index into the whole tensor).";
      } else if (pc.at(plane, gh, gw) == pc.at(plane, want / pc.p.W, want % pc.p.W)) {
        failure << " Both pixels hold the maximum " << number(ref.y[i])
                << ": on a tie the first pixel of the window in row-major order (r, then s) wins; compare with > "
                   "(a later equal value does not replace the maximum), scanning rows then columns.";
      }
      return failure;
    }
    return testing::AssertionSuccess();
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

// Integer-valued dy: every sum is exact in any order.
std::vector<float> int_dy(std::size_t n, std::uint64_t seed) {
  const std::vector<int> v = wb::random_ints(n, seed, -8, 8);
  return std::vector<float>(v.begin(), v.end());
}

testing::AssertionResult run_maxpool_backward(const PoolCase& pc, const std::vector<float>& dy_host,
                                              const std::vector<int>& argmax_host, std::vector<float>& dx,
                                              const std::string& call) {
  Input<float> dy(dy_host, "dy", kNaN);
  Input<int> argmax(argmax_host, "argmax", -1);
  Output<float> dxo(pc.in_size(), "dx");
  if (auto r = after_call(maxpool2d_backward(pc.p, dy.dev.data(), argmax.dev.data(), dxo.dev.data()), call,
                          "maxpool2d_backward",
                          {[&] { return dxo.in_bounds(call); }, [&] { return dy.unchanged(call); },
                           [&] { return argmax.unchanged(call); }});
      !r) {
    return r;
  }
  dx = dxo.dev.download();
  return testing::AssertionSuccess();
}

testing::AssertionResult check_maxpool_backward(const PoolCase& pc) {
  const std::string call = "maxpool2d_backward(" + pc.shape() + ") [seed " + std::to_string(pc.seed) + "]";
  try {
    const MaxRef fwd = maxpool_reference(pc);
    const std::vector<float> dy = int_dy(pc.out_size(), pc.seed * 11 + 5);
    std::vector<float> dx;
    if (auto r = run_maxpool_backward(pc, dy, fwd.argmax, dx, call); !r) return r;
    Expected e{std::vector<double>(pc.in_size(), 0.0), std::vector<double>(pc.in_size(), 0.0)};
    std::vector<double> whole_window(pc.in_size(), 0.0);  // every window pixel getting dy
    const std::size_t plane_size = static_cast<std::size_t>(pc.p.H) * pc.p.W;
    pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
      const std::size_t o = pc.out_index(plane, op, oq);
      e.value[plane * plane_size + fwd.argmax[o]] += dy[o];
      for (int h = w.h0; h < w.h1; ++h) {
        for (int c = w.w0; c < w.w1; ++c) whole_window[plane * plane_size + h * pc.p.W + c] += dy[o];
      }
    });
    return compare(call, "dx", e, dx, pc.in_dims(), [&](std::size_t i) {
      if (!never_written(dx[i]) && dx[i] == whole_window[i] && whole_window[i] != e.value[i]) {
        return std::string("That is the sum of dy over every window containing this pixel: only the pixel a window "
                           "chose (its argmax) receives that window's gradient; compare argmax[n][c][p][q] with "
                           "h * W + w before adding dy.");
      }
      return std::string("dx[h][w] sums dy[p][q] over the windows containing (h, w) whose argmax is h * W + w; 0 for "
                         "a pixel no window chose. dy is integer-valued here, so the sum is exact.");
    });
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

double avg_divisor(const PoolCase& pc, const PoolCase::Window& w, int include_pad) {
  return include_pad ? static_cast<double>(pc.p.R) * pc.p.S : static_cast<double>(w.pixels());
}

std::string convention(int include_pad) {
  return include_pad ? "count_include_pad = 1: the divisor is R * S (padding counts as zeros)"
                     : "count_include_pad = 0: the divisor is the number of the window's pixels inside the image";
}

testing::AssertionResult check_avgpool_forward(const PoolCase& pc, int include_pad) {
  const std::string call = "avgpool2d_forward(" + pc.shape() + ", count_include_pad=" + std::to_string(include_pad) +
                           ") [seed " + std::to_string(pc.seed) + "]";
  try {
    Input<float> x(pc.x, "x", kNaN);
    Output<float> y(pc.out_size(), "y");
    if (auto r = after_call(avgpool2d_forward(pc.p, x.dev.data(), y.dev.data(), include_pad), call,
                            "avgpool2d_forward", {[&] { return y.in_bounds(call); }, [&] { return x.unchanged(call); }});
        !r) {
      return r;
    }
    const std::vector<float> got = y.dev.download();
    Expected e{std::vector<double>(pc.out_size()), std::vector<double>(pc.out_size())};
    std::vector<double> swapped(pc.out_size());
    pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
      double s = 0.0, s_abs = 0.0;
      for (int h = w.h0; h < w.h1; ++h) {
        for (int c = w.w0; c < w.w1; ++c) {
          s += pc.at(plane, h, c);
          s_abs += std::fabs(pc.at(plane, h, c));
        }
      }
      const std::size_t o = pc.out_index(plane, op, oq);
      const double d = avg_divisor(pc, w, include_pad);
      e.value[o] = s / d;
      e.allowed[o] = w.pixels() * kU * s_abs / d + 3.0 * kU * std::fabs(s / d) + 1e-30;
      swapped[o] = s / avg_divisor(pc, w, !include_pad);
    });
    return compare(call, "y", e, got, pc.out_dims(), [&](std::size_t i) {
      const int op = static_cast<int>(i / pc.Q % pc.P), oq = static_cast<int>(i % pc.Q);
      const PoolCase::Window w = pc.window(op, oq);
      std::string text = plane_note(pc, i) + " This window has " + std::to_string(w.pixels()) + " of its " +
                         std::to_string(pc.p.R * pc.p.S) + " pixels inside the image; " + convention(include_pad) +
                         ".";
      if (std::fabs(got[i] - swapped[i]) <= e.allowed[i] && swapped[i] != e.value[i]) {
        text += " The result used the other divisor: the divisor conventions are swapped.";
      }
      return text;
    });
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

testing::AssertionResult check_avgpool_backward(const PoolCase& pc, int include_pad) {
  const std::string call = "avgpool2d_backward(" + pc.shape() + ", count_include_pad=" + std::to_string(include_pad) +
                           ") [seed " + std::to_string(pc.seed) + "]";
  try {
    Input<float> dy(int_dy(pc.out_size(), pc.seed * 13 + 7), "dy", kNaN);
    Output<float> dx(pc.in_size(), "dx");
    if (auto r = after_call(avgpool2d_backward(pc.p, dy.dev.data(), dx.dev.data(), include_pad), call,
                            "avgpool2d_backward",
                            {[&] { return dx.in_bounds(call); }, [&] { return dy.unchanged(call); }});
        !r) {
      return r;
    }
    const std::vector<float> got = dx.dev.download();
    const std::size_t plane_size = static_cast<std::size_t>(pc.p.H) * pc.p.W;
    std::vector<double> value(pc.in_size(), 0.0), abs_sum(pc.in_size(), 0.0), terms(pc.in_size(), 0.0),
        swapped(pc.in_size(), 0.0);
    pc.for_each_output([&](int plane, int op, int oq, PoolCase::Window w) {
      const double g = dy.host[pc.out_index(plane, op, oq)];
      const double t = g / avg_divisor(pc, w, include_pad), t_other = g / avg_divisor(pc, w, !include_pad);
      for (int h = w.h0; h < w.h1; ++h) {
        for (int c = w.w0; c < w.w1; ++c) {
          const std::size_t i = plane * plane_size + h * pc.p.W + c;
          value[i] += t;
          abs_sum[i] += std::fabs(t);
          terms[i] += 1.0;
          swapped[i] += t_other;
        }
      }
    });
    Expected e{value, std::vector<double>(pc.in_size())};
    for (std::size_t i = 0; i < e.allowed.size(); ++i) e.allowed[i] = (terms[i] + 2.0) * kU * abs_sum[i] + 1e-30;
    return compare(call, "dx", e, got, pc.in_dims(), [&](std::size_t i) {
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
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

// ---- batch norm: inputs and references -----------------------------------------------------------------------

enum class ChannelKind { Uniform, Cancellation, Constant, Wide };

const char* describe(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::Uniform: return "uniform in [-8, 8)";
    case ChannelKind::Cancellation: return "of mean 1e3 and standard deviation 1";
    case ChannelKind::Constant: return "constant (variance 0)";
    case ChannelKind::Wide: return "uniform in [-100, 100)";
  }
  return "";
}

struct BnCase {
  int N, C, HW;
  std::vector<float> x, gamma, beta, running_mean, running_var;
  std::vector<ChannelKind> kinds;
  std::uint64_t seed;
  std::size_t size() const { return static_cast<std::size_t>(N) * C * HW; }
  long long M() const { return static_cast<long long>(N) * HW; }
  Dims dims() const { return {N, C, 1, HW, "h", "hw"}; }
  int channel(std::size_t i) const { return static_cast<int>(i / HW % C); }
  std::string shape() const {
    return "N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HW=" + std::to_string(HW);
  }
  // Calls f(index, c) for every element of channel c.
  template <class F>
  void for_channel(int c, F f) const {
    for (int n = 0; n < N; ++n) {
      const std::size_t o = (static_cast<std::size_t>(n) * C + c) * HW;
      for (int k = 0; k < HW; ++k) f(o + k);
    }
  }
};

BnCase make_bn_case(int N, int C, int HW, std::size_t first_kind, std::uint64_t seed) {
  BnCase b{N, C, HW, {}, {}, {}, {}, {}, {}, seed};
  b.x.resize(b.size());
  wb::Random rng(seed * 104729 + 11);
  auto uniform = [&](double lo, double hi) { return static_cast<float>(lo + (hi - lo) * rng.next_unit_double()); };
  const std::vector<ChannelKind> kinds = {ChannelKind::Uniform, ChannelKind::Cancellation, ChannelKind::Constant,
                                          ChannelKind::Wide};
  for (int c = 0; c < C; ++c) b.kinds.push_back(kinds[(c + first_kind) % kinds.size()]);
  for (std::size_t i = 0; i < b.size(); ++i) {
    switch (b.kinds[b.channel(i)]) {
      case ChannelKind::Uniform: b.x[i] = uniform(-8.0, 8.0); break;
      case ChannelKind::Cancellation: b.x[i] = 1000.0f + uniform(-1.7320508, 1.7320508); break;
      case ChannelKind::Constant: b.x[i] = 3.25f; break;
      case ChannelKind::Wide: b.x[i] = uniform(-100.0, 100.0); break;
    }
  }
  for (int c = 0; c < C; ++c) {
    b.gamma.push_back(uniform(0.5, 1.5));
    b.beta.push_back(uniform(-0.5, 0.5));
    b.running_mean.push_back(uniform(-1.0, 1.0));
    b.running_var.push_back(uniform(0.5, 2.0));
  }
  return b;
}

// Shapes (N, C, HW): M = N HW = 2 (twice), C = 1, C = 300, planes of 1, 5, 9, 12, 49, 64, 1000 and
// 16384 values, M up to 150001 (every split of kBatchNormSplits used, odd planes).
struct BnShape {
  int N, C, HW;
};
// On a GPU also C = 70000, more channels than a grid's y dimension holds (65535); on the simulator
// its 70000 blocks would take most of a minute.
const std::vector<BnShape> kBnShapes = {{2, 3, 1},    {1, 4, 2},     {3, 1, 5},     {4, 5, 49},     {2, 3, 64},
                                        {5, 7, 12},   {2, 300, 9},   {8, 2, 1000},  {4, 3, 16384},  {1, 2, 150001},
#if !defined(CUSIM)
                                        {2, 70000, 1},
#endif
};

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
  return "Channel " + std::to_string(c) + " is " + describe(b.kinds[c]) + " (M = N * HW = " + std::to_string(b.M()) +
         " values).";
}

const char* const kCancellation =
    " On this channel the variance is 1 and the mean 1000: E[x^2] - E[x]^2 subtracts two numbers near 1e6 whose "
    "rounding errors exceed the variance (catastrophic cancellation). Use Welford's algorithm (and Chan's "
    "combination of partials), or the mean first and then the mean of (x - mean)^2.";

// The per-channel statistics: @p got[c] against @p want(c) within @p allowed(c), with a diagnosis.
testing::AssertionResult compare_channels(const std::string& call, const char* array, const std::vector<float>& got,
                                          const BnCase& b, const std::function<double(int)>& want,
                                          const std::function<double(int)>& allowed,
                                          const std::function<std::string(int, double)>& why) {
  for (int c = 0; c < b.C; ++c) {
    const double g = got[c];
    if (!never_written(got[c]) && std::isfinite(g) && std::fabs(g - want(c)) <= allowed(c)) continue;
    return testing::AssertionFailure() << call << ": " << array << "[" << c << "] = " << shown(got[c]) << ", expected "
                                       << number(want(c)) << " (allowed difference " << number(allowed(c)) << "). "
                                       << channel_note(b, c) << why(c, g);
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
  wb::DeviceBuffer<float> rm(std::span<const float>(b.running_mean), kGuard),
      rv(std::span<const float>(b.running_var), kGuard);
  const cudaError_t status =
      batchnorm_forward_training(b.N, b.C, b.HW, x.dev.data(), gamma.dev.data(), beta.dev.data(), kMomentum, kEps,
                                 y.dev.data(), mean.dev.data(), rstd.dev.data(), rm.data(), rv.data(),
                                 workspace.dev.data());
  if (auto r = after_call(status, call, "batchnorm_forward_training",
                          {[&] { return y.in_bounds(call); }, [&] { return mean.in_bounds(call); },
                           [&] { return rstd.in_bounds(call); }, [&] { return workspace.in_bounds(call); },
                           [&] { return wb::check::no_out_of_bounds_writes(rm.check_guards(), "running_mean", b.C, call); },
                           [&] { return wb::check::no_out_of_bounds_writes(rv.check_guards(), "running_var", b.C, call); },
                           [&] { return x.unchanged(call); }, [&] { return gamma.unchanged(call); },
                           [&] { return beta.unchanged(call); }});
      !r) {
    return r;
  }
  got = {y.dev.download(), mean.dev.download(), rstd.dev.download(), rm.download(), rv.download()};
  return testing::AssertionSuccess();
}

testing::AssertionResult check_bn_training(const BnCase& b) {
  const std::string call = "batchnorm_forward_training(" + b.shape() + ", momentum=0.1, eps=1e-5) [seed " +
                           std::to_string(b.seed) + "]";
  try {
    BnTrainingGot got;
    if (auto r = run_bn_training(b, got, call); !r) return r;
    std::vector<ChannelStats> st;
    for (int c = 0; c < b.C; ++c) st.push_back(channel_stats(b, c));
    const double m = static_cast<double>(b.M()), mom = kMomentum;
    if (auto r = compare_channels(
            call, "save_mean", got.save_mean, b, [&](int c) { return st[c].mean; },
            [&](int c) { return st[c].mean_allowed; },
            [&](int, double) { return std::string(" The mean is the sum over the N * HW values of the channel / M."); });
        !r) {
      return r;
    }
    if (auto r = compare_channels(
            call, "save_rstd", got.save_rstd, b, [&](int c) { return st[c].rstd; },
            [&](int c) { return st[c].rstd_allowed; },
            [&](int c, double g) {
              const double unbiased = 1.0 / std::sqrt(st[c].var * m / (m - 1.0) + kEps);
              if (std::fabs(g - unbiased) <= st[c].rstd_allowed && unbiased != st[c].rstd) {
                return std::string(" That is 1 / sqrt(var * M / (M - 1) + eps): the batch is normalized with the "
                                   "biased variance, sum (x - mean)^2 / M; only running_var takes the unbiased one.");
              }
              if (b.kinds[c] == ChannelKind::Cancellation) return std::string(kCancellation);
              if (b.kinds[c] == ChannelKind::Constant) {
                return std::string(" The variance is 0: rstd = 1 / sqrt(0 + eps), eps inside the square root.");
              }
              return std::string(" rstd = 1 / sqrt(var + eps), var = sum (x - mean)^2 / M (biased).");
            });
        !r) {
      return r;
    }
    if (auto r = compare_channels(
            call, "running_mean", got.running_mean, b,
            [&](int c) { return (1.0 - mom) * b.running_mean[c] + mom * st[c].mean; },
            [&](int c) {
              return mom * st[c].mean_allowed + 4.0 * kU * (std::fabs(b.running_mean[c]) + std::fabs(mom * st[c].mean));
            },
            [&](int c, double) {
              return " It was " + number(b.running_mean[c]) +
                     " before the call: running_mean = (1 - momentum) running_mean + momentum mean (momentum 0.1).";
            });
        !r) {
      return r;
    }
    if (auto r = compare_channels(
            call, "running_var", got.running_var, b,
            [&](int c) { return (1.0 - mom) * b.running_var[c] + mom * st[c].var * m / (m - 1.0); },
            [&](int c) {
              return mom * st[c].var_allowed * m / (m - 1.0) +
                     4.0 * kU * (std::fabs(b.running_var[c]) + mom * st[c].var * m / (m - 1.0));
            },
            [&](int c, double g) {
              const double biased = (1.0 - mom) * b.running_var[c] + mom * st[c].var;
              std::string text = " It was " + number(b.running_var[c]) +
                                 " before the call: running_var = (1 - momentum) running_var + momentum var M / "
                                 "(M - 1).";
              if (std::fabs(g - biased) <= mom * st[c].var_allowed + 4.0 * kU * std::fabs(biased) &&
                  st[c].var != 0.0) {
                text += " The result took the biased variance: the running estimate takes the unbiased one, "
                        "sum (x - mean)^2 / (M - 1) (PyTorch's and cuDNN's convention).";
              }
              return text;
            });
        !r) {
      return r;
    }
    Expected e{std::vector<double>(b.size()), std::vector<double>(b.size())};
    for (std::size_t i = 0; i < b.size(); ++i) {
      const int c = b.channel(i);
      const ChannelStats& s = st[c];
      const double y = (b.x[i] - s.mean) * s.rstd * b.gamma[c] + b.beta[c];
      e.value[i] = y;
      e.allowed[i] = std::fabs(b.gamma[c]) * (std::fabs(b.x[i] - s.mean) * s.rstd_allowed + s.rstd * s.mean_allowed) +
                     4.0 * kU * (std::fabs(y) + std::fabs(b.beta[c])) + 1e-30;
    }
    return compare(call, "y", e, got.y, b.dims(), [&](std::size_t i) {
      std::string text = channel_note(b, b.channel(i)) + " y = (x - mean) * rstd * gamma[c] + beta[c].";
      if (b.HW % 4 != 0) text += " HW = " + std::to_string(b.HW) + " is not a multiple of 4: planes are not 16-byte aligned.";
      return text;
    });
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

testing::AssertionResult check_bn_inference(const BnCase& b) {
  const std::string call = "batchnorm_forward_inference(" + b.shape() + ", eps=1e-5) [seed " + std::to_string(b.seed) + "]";
  try {
    Input<float> x(b.x, "x", kNaN), gamma(b.gamma, "gamma", kNaN), beta(b.beta, "beta", kNaN),
        rm(b.running_mean, "running_mean", kNaN), rv(b.running_var, "running_var", kNaN);
    Output<float> y(b.size(), "y");
    const cudaError_t status = batchnorm_forward_inference(b.N, b.C, b.HW, x.dev.data(), gamma.dev.data(),
                                                           beta.dev.data(), rm.dev.data(), rv.dev.data(), kEps,
                                                           y.dev.data());
    if (auto r = after_call(status, call, "batchnorm_forward_inference",
                            {[&] { return y.in_bounds(call); }, [&] { return x.unchanged(call); },
                             [&] { return rm.unchanged(call); }, [&] { return rv.unchanged(call); }});
        !r) {
      return r;
    }
    const std::vector<float> got = y.dev.download();
    auto value = [&](std::size_t i, int c) {
      return (b.x[i] - static_cast<double>(b.running_mean[c])) / std::sqrt(b.running_var[c] + static_cast<double>(kEps)) *
                 b.gamma[c] + b.beta[c];
    };
    Expected e{std::vector<double>(b.size()), std::vector<double>(b.size())};
    for (std::size_t i = 0; i < b.size(); ++i) {
      const int c = b.channel(i);
      const double rstd = 1.0 / std::sqrt(b.running_var[c] + static_cast<double>(kEps));
      e.value[i] = value(i, c);
      e.allowed[i] = 6.0 * kU *
                         (std::fabs(b.gamma[c]) * rstd * (std::fabs(b.x[i]) + std::fabs(b.running_mean[c])) +
                          std::fabs(b.beta[c]) + std::fabs(e.value[i])) +
                     1e-30;
    }
    return compare(call, "y", e, got, b.dims(), [&](std::size_t i) {
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
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

// Backward inputs: x of the case, dy uniform in [-1, 1), save_mean and save_rstd the reference's
// statistics rounded to float (so the backward is checked on its own).
struct BnBackwardCase {
  BnCase b;
  std::vector<float> dy, mean, rstd;
};

BnBackwardCase make_bn_backward_case(int N, int C, int HW, std::size_t first_kind, std::uint64_t seed) {
  BnBackwardCase k{make_bn_case(N, C, HW, first_kind, seed), {}, {}, {}};
  k.dy = wb::random_floats(k.b.size(), seed * 31 + 7, -1.0f, 1.0f);
  for (int c = 0; c < C; ++c) {
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
                          {[&] { return dx.in_bounds(call); }, [&] { return dgamma.in_bounds(call); },
                           [&] { return dbeta.in_bounds(call); }, [&] { return workspace.in_bounds(call); },
                           [&] { return dy.unchanged(call); }, [&] { return x.unchanged(call); },
                           [&] { return mean.unchanged(call); }, [&] { return rstd.unchanged(call); }});
      !r) {
    return r;
  }
  got = {dx.dev.download(), dgamma.dev.download(), dbeta.dev.download()};
  return testing::AssertionSuccess();
}

testing::AssertionResult check_bn_backward(const BnBackwardCase& k) {
  const BnCase& b = k.b;
  const std::string call = "batchnorm_backward(" + b.shape() + ") [seed " + std::to_string(b.seed) + "]";
  try {
    BnGradsGot got;
    if (auto r = run_bn_backward(k, got, call); !r) return r;
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
    if (auto r = compare_channels(call, "dbeta", got.dbeta, b, [&](int c) { return dbeta[c]; }, dbeta_allowed, sum_note);
        !r) {
      return r;
    }
    if (auto r = compare_channels(call, "dgamma", got.dgamma, b, [&](int c) { return dgamma[c]; }, dgamma_allowed,
                                  sum_note);
        !r) {
      return r;
    }
    Expected e{std::vector<double>(b.size()), std::vector<double>(b.size())};
    for (std::size_t i = 0; i < b.size(); ++i) {
      const int c = b.channel(i);
      const double a = std::fabs(b.gamma[c]) * k.rstd[c], xh = xhat(i);
      const double inner = k.dy[i] - dbeta[c] / m - xh * dgamma[c] / m;
      e.value[i] = b.gamma[c] * k.rstd[c] * inner;
      e.allowed[i] = a * (dbeta_allowed(c) / m + std::fabs(xh) * dgamma_allowed(c) / m +
                          8.0 * kU * (std::fabs(k.dy[i]) + std::fabs(dbeta[c] / m) + std::fabs(xh * dgamma[c] / m))) +
                     4.0 * kU * std::fabs(e.value[i]) + 1e-30;
    }
    return compare(call, "dx", e, got.dx, b.dims(), [&](std::size_t i) {
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
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
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
  WB_ASSERT(wb::check::run_cases(kPoolShapes.size(), [](std::size_t s) {
    return check_maxpool_forward(make_pool_case(kPoolShapes[s], s, 1000 + s));
  }));
}

WB_CHECK(Correctness, MaxPoolBackward, .weight = 2,
         .passes = "dx bit-exact (integer-valued dy: every order gives the exact sum), argmax from "
                   "the reference",
         .hint = "A thread per input pixel: for the outputs p0..p1, q0..q1 whose windows contain it, add "
                 "dy[p][q] only where argmax[p][q] == h * W + w.") {
  WB_ASSERT(wb::check::run_cases(kPoolShapes.size(), [](std::size_t s) {
    return check_maxpool_backward(make_pool_case(kPoolShapes[s], s, 1100 + s));
  }));
}

WB_CHECK(Correctness, AvgPoolForward, .weight = 2,
         .passes = "both conventions, 13 shapes: `|y - ref| <= k u sum|x| / divisor + 3u |y|` (k "
                   "pixels, u = 2^-24)",
         .hint = "Sum the window's pixels inside the image; divide by R * S when count_include_pad is "
                 "nonzero, else by the number of those pixels.") {
  // Case i: shape i / 2, count_include_pad i % 2.
  WB_ASSERT(wb::check::run_cases(2 * kPoolShapes.size(), [](std::size_t i) {
    const std::size_t s = i / 2;
    return check_avgpool_forward(make_pool_case(kPoolShapes[s], s, 1200 + s), static_cast<int>(i % 2));
  }));
}

WB_CHECK(Correctness, AvgPoolBackward, .weight = 2,
         .passes = "both conventions: `|dx - ref| <= (k + 2) u sum|dy / divisor|` (k windows)",
         .hint = "dx[h][w] = sum over the windows containing (h, w) of dy[p][q] / divisor(p, q), with "
                 "the forward's divisor convention.") {
  // Case i: shape i / 2, count_include_pad i % 2.
  WB_ASSERT(wb::check::run_cases(2 * kPoolShapes.size(), [](std::size_t i) {
    const std::size_t s = i / 2;
    return check_avgpool_backward(make_pool_case(kPoolShapes[s], s, 1300 + s), static_cast<int>(i % 2));
  }));
}

WB_CHECK(Correctness, BatchNormTraining, .weight = 3,
         .passes = "save_mean, save_rstd, running_mean, running_var, then y, on 10 shapes (M = 2, C "
                   "= 1, C = 300, HW odd and multiple of 4, M up to 150001 so that every split is "
                   "used); channels uniform, of mean 1e3 and std 1, constant, wide",
         .hint = "Per channel over N * HW values: Welford/Chan (no E[x^2] - E[x]^2); normalize with the "
                 "biased variance m2 / M, update running_var with the unbiased m2 / (M - 1).") {
  WB_ASSERT(wb::check::run_cases(kBnShapes.size(), [](std::size_t s) {
    return check_bn_training(make_bn_case(kBnShapes[s].N, kBnShapes[s].C, kBnShapes[s].HW, s, 1400 + s));
  }));
}

WB_CHECK(Correctness, BatchNormInference, .weight = 1,
         .passes = "y elementwise, the same shapes",
         .hint = "The channel of element i of an NCHW tensor is (i / HW) % C; y = (x - running_mean) / "
                 "sqrt(running_var + eps) * gamma + beta.") {
  WB_ASSERT(wb::check::run_cases(kBnShapes.size(), [](std::size_t s) {
    return check_bn_inference(make_bn_case(kBnShapes[s].N, kBnShapes[s].C, kBnShapes[s].HW, s, 1500 + s));
  }));
}

WB_CHECK(Correctness, BatchNormBackward, .weight = 3,
         .passes = "dbeta, dgamma, then dx, the same shapes",
         .hint = "dbeta = sum dy, dgamma = sum dy * xhat per channel; dx = gamma * rstd * (dy - dbeta / "
                 "M - xhat * dgamma / M).") {
  WB_ASSERT(wb::check::run_cases(kBnShapes.size(), [](std::size_t s) {
    return check_bn_backward(make_bn_backward_case(kBnShapes[s].N, kBnShapes[s].C, kBnShapes[s].HW, s, 1600 + s));
  }));
}

namespace {

// The first element where @p again differs from @p first in bits, or "".
std::string first_difference(const std::vector<float>& first, const std::vector<float>& again, const char* name) {
  for (std::size_t i = 0; i < first.size() && i < again.size(); ++i) {
    if (std::memcmp(&first[i], &again[i], sizeof(float)) != 0) {
      return std::string(name) + "[" + std::to_string(i) + "]: " + number(again[i]) + " vs " + number(first[i]);
    }
  }
  return "";
}

}  // namespace

WB_CHECK(Correctness, BatchNormReproducible, .weight = 2,
         .passes = "training and backward three times, the workspace holding other bytes each time: "
                   "bitwise equal",
         .hint = "No atomicAdd for the sums over a channel, and nothing read from the workspace that this "
                 "call did not write: per-block partials stored (not added) in the workspace, combined in a "
                 "fixed order by a second kernel.") {
  const unsigned char fills[3] = {0x00, 0xFF, 0x3C};
  std::size_t passed = 0;
  const std::size_t total = 4;
  // Runs a function three times, the workspace holding fills[run - 1] before each; every named
  // output must equal run 1's bit for bit.
  auto expect_same_runs = [&](const std::string& call, const auto& run_once, const auto& outputs) {
    auto first = run_once(fills[0]);
    if (!first.ok) return first.ok;
    for (int run = 2; run <= 3; ++run) {
      auto again = run_once(fills[run - 1]);
      if (!again.ok) return again.ok;
      for (auto [name, a, g] : outputs(first.got, again.got)) {
        if (const std::string d = first_difference(*a, *g, name); !d.empty()) {
          return testing::AssertionFailure()
                 << call << ": run " << run << " gave a different " << name << " from run 1 on the same inputs (" << d
                 << "). The result must not depend on timing (atomics) nor on what the workspace held before the "
                    "call: store each block's partials, then combine them in a fixed order.";
        }
      }
    }
    return testing::AssertionSuccess();
  };
  using Field = std::tuple<const char*, const std::vector<float>*, const std::vector<float>*>;
  for (BnShape s : {BnShape{8, 2, 1000}, BnShape{4, 3, 16384}}) {
    const BnCase b = make_bn_case(s.N, s.C, s.HW, 0, 1700 + s.HW);
    const std::string training = "batchnorm_forward_training(" + b.shape() + ")";
    WB_ASSERT(expect_same_runs(
        training,
        [&](unsigned char fill) {
          CallResult<BnTrainingGot> r;
          r.ok = run_bn_training(b, r.got, training, fill);
          return r;
        },
        [](const BnTrainingGot& a, const BnTrainingGot& g) {
          return std::vector<Field>{{"y", &a.y, &g.y},
                                    {"save_mean", &a.save_mean, &g.save_mean},
                                    {"save_rstd", &a.save_rstd, &g.save_rstd},
                                    {"running_var", &a.running_var, &g.running_var}};
        }));
    wb::check::record_cases(++passed, total);
    const BnBackwardCase k = make_bn_backward_case(s.N, s.C, s.HW, 0, 1800 + s.HW);
    const std::string backward = "batchnorm_backward(" + k.b.shape() + ")";
    WB_ASSERT(expect_same_runs(
        backward,
        [&](unsigned char fill) {
          CallResult<BnGradsGot> r;
          r.ok = run_bn_backward(k, r.got, backward, fill);
          return r;
        },
        [](const BnGradsGot& a, const BnGradsGot& g) {
          return std::vector<Field>{{"dx", &a.dx, &g.dx}, {"dgamma", &a.dgamma, &g.dgamma}, {"dbeta", &a.dbeta, &g.dbeta}};
        }));
    wb::check::record_cases(++passed, total);
  }
}

// ---- Host code (sim) ------------------------------------------------------------------------------------
//
// Fault injection (wb_host_checks.h): each kernel launch (and any cudaFuncSetAttribute, allocation,
// copy or memset) of every pooling and batch-norm function fails in turn; the function must return
// that error at once, with no launch after it and no device memory left.

#if defined(CUSIM)
namespace {

struct PoolHostBuffers {
  PoolParams p;
  wb::DeviceBuffer<float> x, y, dx;
  wb::DeviceBuffer<int> argmax;
  PoolHostBuffers(PoolParams q, std::uint64_t seed)
      : p(q), x{std::span<const float>(wb::random_floats(std::size_t(q.N) * q.C * q.H * q.W, seed, -1.0f, 1.0f))},
        y{std::size_t(q.N) * q.C * pool_out_h(q) * pool_out_w(q)}, dx{std::size_t(q.N) * q.C * q.H * q.W},
        argmax{std::size_t(q.N) * q.C * pool_out_h(q) * pool_out_w(q)} {}
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
};

void add_pool_host_cases(PoolHostBuffers* b, std::vector<wb::check::host::ErrorPathCase>& cases) {
  const PoolParams p = b->p;
  const std::string shape = "(N=" + std::to_string(p.N) + ", C=" + std::to_string(p.C) + ", H=" + std::to_string(p.H) +
                            ", W=" + std::to_string(p.W) + ", window " + std::to_string(p.R) + "x" +
                            std::to_string(p.S) + ", stride " + std::to_string(p.stride_h) + "x" +
                            std::to_string(p.stride_w) + ", pad " + std::to_string(p.pad_h) + "x" +
                            std::to_string(p.pad_w) + ")";
  auto add = [&](const char* function, std::function<cudaError_t()> run) {
    cases.push_back({function + shape, function, std::move(run)});
  };
  add("maxpool2d_forward", [b, p] { return maxpool2d_forward(p, b->x.data(), b->y.data(), b->argmax.data()); });
  // After maxpool2d_forward above: argmax holds its indices.
  add("maxpool2d_backward", [b, p] { return maxpool2d_backward(p, b->y.data(), b->argmax.data(), b->dx.data()); });
  add("avgpool2d_forward", [b, p] { return avgpool2d_forward(p, b->x.data(), b->y.data(), 0); });
  add("avgpool2d_backward", [b, p] { return avgpool2d_backward(p, b->y.data(), b->dx.data(), 1); });
}

void add_bn_host_cases(BnHostBuffers* b, std::vector<wb::check::host::ErrorPathCase>& cases) {
  const int N = b->N, C = b->C, HW = b->HW;
  const std::string shape = "(N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HW=" + std::to_string(HW) + ")";
  auto add = [&](const char* function, std::function<cudaError_t()> run) {
    cases.push_back({function + shape, function, std::move(run)});
  };
  add("batchnorm_forward_training", [b, N, C, HW] {
    return batchnorm_forward_training(N, C, HW, b->x.data(), b->gamma.data(), b->beta.data(), 0.1f, 1e-5f, b->y.data(),
                                      b->mean.data(), b->rstd.data(), b->running_mean.data(), b->running_var.data(),
                                      b->workspace.data());
  });
  add("batchnorm_forward_inference", [b, N, C, HW] {
    return batchnorm_forward_inference(N, C, HW, b->x.data(), b->gamma.data(), b->beta.data(), b->running_mean.data(),
                                       b->running_var.data(), 1e-5f, b->y.data());
  });
  // After the training forward above: mean and rstd are its statistics.
  add("batchnorm_backward", [b, N, C, HW] {
    return batchnorm_backward(N, C, HW, b->dy.data(), b->x.data(), b->gamma.data(), b->mean.data(), b->rstd.data(),
                              b->dx.data(), b->dgamma.data(), b->dbeta.data(), b->workspace.data());
  });
}

}  // namespace

WB_CHECK(Correctness, PoolBnHostReturnsCudaErrors, .weight = 1, .backends = "sim",
         .passes = "every pooling and batch-norm function, two shapes each: each kernel launch it "
                   "makes is made to fail in turn; the function must return that error at once, with "
                   "no launch after it",
         .hint = "Test cudaGetLastError() right after each launch (the batch-norm passes launch several "
                 "kernels) and return its error before launching the next.") {
  PoolHostBuffers p1(pool(2, 3, 9, 9, 3, 3, 1, 1, 2, 2), 1500), p2(pool(1, 4, 8, 8, 2, 2, 0, 0, 2, 2), 1510);
  BnHostBuffers b1(2, 3, 81, 1520), b2(4, 2, 4096, 1530);
  std::vector<wb::check::host::ErrorPathCase> cases;
  add_pool_host_cases(&p1, cases);
  add_pool_host_cases(&p2, cases);
  add_bn_host_cases(&b1, cases);
  add_bn_host_cases(&b2, cases);
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
      const BnCase b = make_bn_case(s.N, s.C, s.HW, 0, seed++);
      keep_first(check_bn_training(b));
      keep_first(check_bn_inference(b));
      keep_first(check_bn_backward(make_bn_backward_case(s.N, s.C, s.HW, 0, seed++)));
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
std::uint64_t atomics_of(const std::function<testing::AssertionResult()>& run, bool& ok, std::string& message) {
  wb::check::Traffic t;
  testing::AssertionResult r = wb::check::measure(run, t);
  ok = static_cast<bool>(r);
  if (!ok) message = r.message();
  return t.atomics;
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
  const BnCase b = make_bn_case(8, 2, 1000, 0, 2000);
  const BnBackwardCase k = make_bn_backward_case(8, 2, 1000, 0, 2001);
  for (bool training : {true, false}) {
    bool ok = false;
    std::string message;
    const std::uint64_t atomics =
        atomics_of([&] { return training ? check_bn_training(b) : check_bn_backward(k); }, ok, message);
    WB_ASSERT_ANALYSIS_RUN(ok ? testing::AssertionSuccess() : testing::AssertionFailure() << message, "atomic operations");
    WB_REQUIRE_ANALYSIS();
    const char* function = training ? "batchnorm_forward_training" : "batchnorm_backward";
    text += (text.empty() ? "" : "; ") + std::string(function) + ": " + std::to_string(atomics) + " atomics";
    wb::check::record_measured(text);
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
  bool ok = false;
  std::string message;
  const std::uint64_t atomics = atomics_of([&] { return check_maxpool_backward(pc); }, ok, message);
  WB_ASSERT_ANALYSIS_RUN(ok ? testing::AssertionSuccess() : testing::AssertionFailure() << message, "atomic operations");
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
struct PoolTraffic {
  const char* function;
  wb::check::Traffic t;
  double bound_bytes;  // what each (window, pixel) pair read once comes to
  std::string shape;
};

std::vector<PoolTraffic> measure_pooling(bool& ok, std::string& message, bool gapped = false) {
  const PoolCase pc = make_pool_case(kMetricPool, 0, 2100);
  const PoolCase gc = make_pool_case(kGappedPool, 0, 2101);
  const double pairs = 4.0 * pc.window_pixels();
  std::vector<PoolTraffic> out = {{"maxpool2d_forward", {}, pairs, pc.shape()},
                                  {"maxpool2d_backward", {}, pairs + 4.0 * pc.out_size(), pc.shape()},
                                  {"avgpool2d_forward", {}, pairs, pc.shape()},
                                  {"avgpool2d_backward", {}, pairs, pc.shape()}};
  std::vector<std::function<testing::AssertionResult()>> runs = {
      [&] { return check_maxpool_forward(pc); }, [&] { return check_maxpool_backward(pc); },
      [&] { return check_avgpool_forward(pc, 0); }, [&] { return check_avgpool_backward(pc, 0); }};
  if (gapped) {
    out.push_back({"maxpool2d_backward", {}, 4.0 * gc.window_pixels() + 4.0 * gc.out_size(), gc.shape()});
    runs.push_back([&] { return check_maxpool_backward(gc); });
  }
  ok = true;
  for (std::size_t i = 0; i < runs.size() && ok; ++i) {
    testing::AssertionResult r = wb::check::measure(runs[i], out[i].t, out[i].function);
    ok = static_cast<bool>(r);
    if (!ok) message = r.message();
  }
  return out;
}
#endif

}  // namespace

WB_CHECK(Performance, PoolCoalesced, .weight = 2, .backends = "sim",
         .limits = {{"max_loads", 9.0}, {"max_stores", 4.0}},
         .passes = "every pooling function: loads <= {max_loads:.2f} sectors/request (4 stride_w + 1), "
                   "stores <= {max_stores:.2f}; 2 x 16 x 32 x 64, 3 x 3, stride 2, pad 1",
         .hint = "Let consecutive threads take consecutive outputs of a row (the fastest index is q, then "
                 "p, then the plane) for the forward, consecutive pixels of a row for the backward.") {
  // max_loads is 4 stride_w + 1 at kMetricPool's stride_w = 2.
  constexpr double kMaxLoads = WB_LIMIT("max_loads"), kMaxStores = WB_LIMIT("max_stores");
  WB_SIM_METRICS_BEGIN();
#if WB_HAVE_CUSIM_ANALYSIS
  bool ok = false;
  std::string message;
  const std::vector<PoolTraffic> all = measure_pooling(ok, message);
  if (!ok) FAIL() << message;
  WB_REQUIRE_ANALYSIS();
  std::string text;
  for (const PoolTraffic& p : all) {
    text += (text.empty() ? "" : "; ") + std::string(p.function) + " " + fixed(p.t.loads()) + " / " +
            fixed(p.t.stores());
  }
  wb::check::record_measured(text + " sectors per load / store request");
  for (const PoolTraffic& p : all) {
    if (p.t.loads() > kMaxLoads || p.t.stores() > kMaxStores) {
      FAIL() << p.function << "(N=2, C=16, H=32, W=64, window 3x3, stride 2x2, pad 1x1): " << fixed(p.t.loads())
             << " sectors per load request and " << fixed(p.t.stores()) << " per store request (at most "
             << fixed(kMaxLoads) << " and " << fixed(kMaxStores)
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
  bool ok = false;
  std::string message;
  const std::vector<PoolTraffic> all = measure_pooling(ok, message, true);
  if (!ok) FAIL() << message;
  WB_REQUIRE_ANALYSIS();
  std::string text;
  for (const PoolTraffic& p : all) {
    text += (text.empty() ? "" : "; ") + std::string(p.function) + (&p == &all.back() ? " (stride 3) " : " ") +
            fixed(p.t.bytes_read / p.bound_bytes) + "x";
  }
  wb::check::record_measured(text + " the bytes of one read per (window, pixel) pair");
  for (const PoolTraffic& p : all) {
    const double ratio = p.t.bytes_read / p.bound_bytes;
    if (ratio > kMaxReadRatio) {
      FAIL() << p.function << "(" << p.shape << ") read " << fixed(ratio)
             << " x the bytes of one read per (window, pixel) pair (at most " << wb::check::as_written(kMaxReadRatio)
             << "). Each window's pixels need one "
                "read: keep the running maximum and its position together instead of a second pass to find the "
                "argmax (and in the backward, read argmax only for the windows that contain the pixel, and dy only "
                "where the argmax matches).";
    }
  }
#endif
}

namespace {

#if WB_HAVE_CUSIM_ANALYSIS
struct BnTraffic {
  const char* function;
  wb::check::Traffic t;
  const char* what;  // what it must read (BatchNormReadsTwice)
};

std::vector<BnTraffic> measure_bn(bool& ok, std::string& message) {
  const BnCase b = make_bn_case(kMetricBn.N, kMetricBn.C, kMetricBn.HW, 0, 2200);
  const BnBackwardCase k = make_bn_backward_case(kMetricBn.N, kMetricBn.C, kMetricBn.HW, 0, 2201);
  std::vector<BnTraffic> out = {
      {"batchnorm_forward_training", {}, "x at most twice: once for the statistics, once to write y"},
      {"batchnorm_forward_inference", {}, "x once"},
      {"batchnorm_backward", {}, "x and dy at most twice each: once for the sums, once to write dx"}};
  const std::vector<std::function<testing::AssertionResult()>> runs = {
      [&] { return check_bn_training(b); }, [&] { return check_bn_inference(b); }, [&] { return check_bn_backward(k); }};
  ok = true;
  for (std::size_t i = 0; i < runs.size() && ok; ++i) {
    testing::AssertionResult r = wb::check::measure(runs[i], out[i].t, out[i].function);
    ok = static_cast<bool>(r);
    if (!ok) message = r.message();
  }
  return out;
}
#endif

}  // namespace

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
  bool ok = false;
  std::string message;
  const std::vector<BnTraffic> all = measure_bn(ok, message);
  if (!ok) FAIL() << message;
  WB_REQUIRE_ANALYSIS();
  const double bytes = 4.0 * kMetricBn.N * kMetricBn.C * kMetricBn.HW;
  std::string text;
  for (const BnTraffic& b : all) {
    text += (text.empty() ? "" : "; ") + std::string(b.function) + " " + fixed(b.t.bytes_read / bytes);
  }
  wb::check::record_measured(text + " x 4NCHW bytes read");
  ASSERT_EQ(all.size(), std::size(kReadsAllowed));
  for (std::size_t i = 0; i < all.size(); ++i) {
    const BnTraffic& b = all[i];
    const double reads = b.t.bytes_read / bytes;
    if (reads > kReadsAllowed[i]) {
      FAIL() << b.function << "(N=" << kMetricBn.N << ", C=" << kMetricBn.C << ", HW=" << kMetricBn.HW << ") read "
             << fixed(reads) << " x 4NCHW bytes (at most " << fixed(kReadsAllowed[i]) << ": " << b.what
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
  bool ok = false;
  std::string message;
  const std::vector<BnTraffic> all = measure_bn(ok, message);
  if (!ok) FAIL() << message;
  WB_REQUIRE_ANALYSIS();
  auto per_request = [](double bytes, std::uint64_t requests) { return wb::check::Traffic::ratio(bytes, requests); };
  std::string text;
  for (const BnTraffic& b : all) {
    text += (text.empty() ? "" : "; ") + std::string(b.function) + " " + fixed(100.0 * b.t.load_efficiency()) +
            "% / " + fixed(100.0 * b.t.store_efficiency()) + "%, " +
            fixed(per_request(b.t.bytes_read, b.t.load_requests), 0) + " / " +
            fixed(per_request(b.t.bytes_written, b.t.store_requests), 0) + " B";
  }
  wb::check::record_measured(text + " (sector bytes used, bytes per request; loads / stores)");
  const std::string shape = "(N=" + std::to_string(kMetricBn.N) + ", C=" + std::to_string(kMetricBn.C) +
                            ", HW=" + std::to_string(kMetricBn.HW) + ")";
  for (const BnTraffic& b : all) {
    for (auto [name, efficiency] :
         {std::pair{"loads", b.t.load_efficiency()}, std::pair{"stores", b.t.store_efficiency()}}) {
      if (efficiency < kMinEfficiency) {
        FAIL() << b.function << shape << ": its " << name << " use only " << fixed(100.0 * efficiency)
               << "% of the bytes of the 32-byte sectors they touch (at least " << fixed(100.0 * kMinEfficiency, 0)
               << "%). Consecutive threads must access "
                  "consecutive floats or 16-byte chunks of a plane, not elements of different channels or planes.";
      }
    }
    for (auto [name, bytes] : {std::pair{"loads", per_request(b.t.bytes_read, b.t.load_requests)},
                               std::pair{"stores", per_request(b.t.bytes_written, b.t.store_requests)}}) {
      if (bytes < kMinBytesPerRequest) {
        FAIL() << b.function << shape << ": its " << name << " carry " << fixed(bytes, 0)
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
namespace {

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
    const PoolParams p = pool(32, 64, 112, 112, 3, 3, 1, 1, 2, 2);
    const std::size_t in = static_cast<std::size_t>(p.N) * p.C * p.H * p.W,
                      out = static_cast<std::size_t>(p.N) * p.C * pool_out_h(p) * pool_out_w(p);
    auto x = device_vector(wb::random_floats(in, 2302));
    auto dy = device_vector(wb::random_floats(out, 2303));
    wb::DeviceBuffer<float> y(out), dx(in);
    wb::DeviceBuffer<int> argmax(out);
    const double fwd = wb::check::bandwidth_ratio("maxpool2d_forward 32x64x112x112", 4.0 * in + 8.0 * out, [&] {
      WB_CUDA_CHECK(maxpool2d_forward(p, x.data(), y.data(), argmax.data()));
    }, text);
    const double bwd = wb::check::bandwidth_ratio("maxpool2d_backward", 8.0 * out + 4.0 * in, [&] {
      WB_CUDA_CHECK(maxpool2d_backward(p, dy.data(), argmax.data(), dx.data()));
    }, text);
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
  WB_ASSERT(check_bn_training(make_bn_case(8, 16, 3136, 0, 2400)));
  WB_ASSERT(check_bn_inference(make_bn_case(8, 16, 3136, 0, 2401)));
  WB_ASSERT(check_bn_backward(make_bn_backward_case(8, 16, 3136, 0, 2402)));
  std::string text;
  try {
    constexpr int N = 32, C = 256, HW = 56 * 56;
    const std::size_t n = static_cast<std::size_t>(N) * C * HW;
    auto x = device_vector(wb::random_floats(n, 2403));
    auto dy = device_vector(wb::random_floats(n, 2404));
    auto gamma = device_vector(wb::random_floats(C, 2405, 0.5f, 1.5f));
    auto beta = device_vector(wb::random_floats(C, 2406));
    auto rm = device_vector(wb::random_floats(C, 2407));
    auto rv = device_vector(wb::random_floats(C, 2408, 0.5f, 2.0f));
    wb::DeviceBuffer<float> y(n), dx(n), mean(C), rstd(C), dgamma(C), dbeta(C), ws(batchnorm_workspace_floats(C));
    const double train = wb::check::bandwidth_ratio("training 32x256x56x56", 12.0 * n, [&] {
      WB_CUDA_CHECK(batchnorm_forward_training(N, C, HW, x.data(), gamma.data(), beta.data(), kMomentum, kEps, y.data(),
                                               mean.data(), rstd.data(), rm.data(), rv.data(), ws.data()));
    }, text);
    const double infer = wb::check::bandwidth_ratio("inference", 8.0 * n, [&] {
      WB_CUDA_CHECK(batchnorm_forward_inference(N, C, HW, x.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                                kEps, y.data()));
    }, text);
    const double back = wb::check::bandwidth_ratio("backward", 20.0 * n, [&] {
      WB_CUDA_CHECK(batchnorm_backward(N, C, HW, dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(),
                                       dgamma.data(), dbeta.data(), ws.data()));
    }, text);
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
