// Checks for lab 07, part 2: max and average pooling (NCHW, fp32). The batch-norm checks, and the
// host-code and analysis checks of every pooling and batch-norm function, are in check_batchnorm.cpp;
// what both files share is in pooling_batchnorm_support.h.
//
// Correctness: max pooling rounds nothing, so y, argmax and the backward's dx (on integer-valued dy)
// must be bit-exact; average pooling is compared element by element with a double-precision
// reference computed on the host from the same float inputs, within an allowance derived from the
// computation (u = 2^-24), explained where each reference is computed. Planes of all-negative
// pixels show padding taken as a candidate, planes of two values ties. Inputs are surrounded by NaN
// (a read outside them shows), outputs start as 0xFF bytes (an element never written shows) and
// carry guard zones. A read a little past an array lands in its guard zone, which memcheck cannot
// see: the NaN there shows it.
// Performance: cusim's analysis metrics on sim (traffic as the kernels request it); on a GPU,
// bytes moved per second as a ratio to a device-to-device copy timed in the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pooling_batchnorm.h"
#include "pooling_batchnorm_support.h"
#include "wb/wb.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_metrics.h"

using namespace lab07;  // what the pooling and batch-norm checks share (pooling_batchnorm_support.h)

// In namespace lab07: make_pool_case and the check_* functions are declared in
// pooling_batchnorm_support.h, for the host-code and analysis checks of check_batchnorm.cpp.
namespace lab07 {

// ---- pooling: inputs and references ------------------------------------------------------------------------

// The kinds of planes, each pixel drawn in turn: integers, all negative (a window on the border then
// shows whether padding was taken as a 0 candidate), two values only (ties everywhere: the first
// pixel of the window in row-major order must win), uniform floats.
const PlaneKind kPlaneKinds[] = {
    {"integers in [-8, 8]", [](wb::Random& r) { return static_cast<float>(r.next_int(-8, 8)); }},
    {"all negative (integers in [-100, -1])", [](wb::Random& r) { return static_cast<float>(r.next_int(-100, -1)); }},
    {"only the values 1 and 2 (ties everywhere)", [](wb::Random& r) { return static_cast<float>(r.next_int(1, 2)); }},
    {"uniform floats in [-1, 1)", [](wb::Random& r) { return static_cast<float>(-1.0 + 2.0 * r.next_unit_double()); }}};
const PlaneKind* const kNegative = &kPlaneKinds[1];

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

// The cases of a pooling check: every shape s of kPoolShapes (its planes' kinds rotated by s, seed
// seed0 + s), @p conventions times in a row (count_include_pad 0, then 1).
testing::AssertionResult pool_cases(std::uint64_t seed0, std::size_t conventions,
                                    const std::function<testing::AssertionResult(const PoolCase&, int)>& check) {
  return wb::check::run_cases(conventions * kPoolShapes.size(), [&](std::size_t i) {
    const std::size_t s = i / conventions;
    return check(make_pool_case(kPoolShapes[s], s, seed0 + s), static_cast<int>(i % conventions));
  });
}

}  // namespace lab07

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

// ---- Performance ---------------------------------------------------------------------------------------------

#if defined(CUSIM)
namespace {

// The metric shape: 3 x 3 windows, stride 2, padding 1 over 2 x 16 x 32 x 64 (Q = 32: a warp's
// outputs are one row).
// PoolReadsOnce also runs the max-pooling backward on 2 x 2 windows with stride 3: a pixel between
// two windows is in none, and must read no argmax.
const PoolParams kMetricPool = pool(2, 16, 32, 64, 3, 3, 1, 1, 2, 2);
const PoolParams kGappedPool = pool(2, 16, 32, 64, 2, 2, 0, 0, 3, 3);

#if WB_HAVE_CUSIM_ANALYSIS
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
#else
// Every timed function is validated before timing and after it, the timed runs each given changed inputs
// (wb_timed.h), against the references of the correctness checks.

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
#endif
