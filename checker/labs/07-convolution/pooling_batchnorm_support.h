/// @file
/// @brief What lab 07's pooling checks (check_pooling.cpp) and batch-norm checks (check_batchnorm.cpp)
/// share: the rounding unit, references with their allowances, NCHW element names, the pooling
/// cases (which check_batchnorm.cpp's host-code and analysis checks run too) and the performance
/// checks' helpers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "batchnorm_reference.h"  // kU, and what batch norm's checks share with the benchmark
#include "pooling_batchnorm.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_compare_elements.h"
#include "wb_metrics.h"
#include "wb_timed.h"

namespace lab07 {

using wb::check::after_call;
using wb::check::compare_elements;
using wb::check::fixed;
using wb::check::Input;
using wb::check::never_written;
using wb::check::Output;
using wb::check::verdicts;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline std::string number(double v) { return wb::check::significant(v, 8); }

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

// ---- pooling cases ---------------------------------------------------------------------------------------

// A kind of plane (kPlaneKinds, check_pooling.cpp): its description and how each pixel is drawn.
struct PlaneKind {
  const char* text;
  float (*draw)(wb::Random&);
};

// "N=2, C=3, H=7, W=9, window 3x3, stride 2x2, pad 1x1"
inline std::string pool_shape(const PoolParams& p) {
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

inline PoolParams pool(int N, int C, int H, int W, int R, int S, int pad_h, int pad_w, int stride_h,
                       int stride_w) {
  return {N, C, H, W, R, S, pad_h, pad_w, stride_h, stride_w};
}

// Defined in check_pooling.cpp: a case of @p p (its planes' kinds rotated by @p first_kind), and the
// correctness check of each pooling function on a case.
PoolCase make_pool_case(PoolParams p, std::size_t first_kind, std::uint64_t seed);
testing::AssertionResult check_maxpool_forward(const PoolCase& pc);
testing::AssertionResult check_maxpool_backward(const PoolCase& pc);
testing::AssertionResult check_avgpool_forward(const PoolCase& pc, int include_pad);
testing::AssertionResult check_avgpool_backward(const PoolCase& pc, int include_pad);

// ---- the performance checks' helpers ------------------------------------------------------------------------

#if defined(CUSIM)
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
inline testing::AssertionResult measure_each(std::vector<Measured>& out,
                                             const std::vector<std::function<testing::AssertionResult()>>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (auto r = wb::check::measure(runs[i], out[i].t, out[i].function); !r) return r;
  }
  return testing::AssertionSuccess();
}

// "<function> <text(m)>; ..." over @p all: a metric check's measured value, before its unit.
inline std::string per_function(const std::vector<Measured>& all,
                                const std::function<std::string(const Measured&)>& text) {
  std::string joined;
  for (const Measured& m : all) joined += (joined.empty() ? "" : "; ") + std::string(m.function) + " " + text(m);
  return joined;
}
#endif
#else
// The GPU performance checks: device copies of host vectors, and what wb_timed.h gives them.
using wb::check::failure_text;
using wb::check::verified_bandwidth_ratio;

template <class T>
wb::DeviceBuffer<T> device_vector(const std::vector<T>& v) {
  return wb::DeviceBuffer<T>(std::span<const T>(v));
}
#endif

}  // namespace lab07
