// Checks for lab 07, part 2: batch normalization (NCHW, fp32), and the host-code and analysis checks
// of every pooling and batch-norm function (those run the pooling cases of check_pooling.cpp, through
// pooling_batchnorm_support.h, which also holds what both files share).
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

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "batchnorm_reference.h"
#include "pooling_batchnorm.h"
#include "pooling_batchnorm_support.h"
#include "wb/wb.h"
#include "wb_block_order.h"
#include "wb_buffers.h"
#include "wb_check.h"
#include "wb_timed.h"
#include "wb_compare_elements.h"
#include "wb_host_checks.h"
#include "wb_metrics.h"

using namespace lab07;  // what the pooling and batch-norm checks share (pooling_batchnorm_support.h)

namespace {

Dims bn_dims(const BnCase& b) { return {b.N, b.C, 1, b.HW, "h", "hw"}; }

// While set (the analysis checks), the batch-norm workspace is left unwritten by the checker, so
// that initcheck reports a read of an entry the call did not write.
bool g_workspace_unwritten = false;

// ---- batch norm: inputs and references -----------------------------------------------------------------------

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

// The statistics as channel_stats() allows them, y and the running statistics as bn_y() and
// bn_running_mean() / bn_running_var() do (batchnorm_reference.h).
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
      "running_mean", got.running_mean, [&](int c) { return bn_running_mean(b, st[c], c).value; },
      [&](int c) { return bn_running_mean(b, st[c], c).allowed; },
      [&](int c, double) {
        return " It was " + number(b.running_mean[c]) +
               " before the call: running_mean = (1 - momentum) running_mean + momentum mean (momentum 0.1).";
      }};
  const PerChannel running_var{
      "running_var", got.running_var,
      [&](int c) { return bn_running_var(b, st[c], c).value; },
      [&](int c) { return bn_running_var(b, st[c], c).allowed; },
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
    const Want y = bn_y(b, st[b.channel(i)], i);
    e.value[i] = y.value;
    e.allowed[i] = y.allowed;
  }
  return compare_elements(call, "y", got.y, e.value, e.allowed, bn_dims(b).of("y"), [&](std::size_t i) {
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
  return compare_elements(call, "y", got, e.value, e.allowed, bn_dims(b).of("y"), [&](std::size_t i) {
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
  return compare_elements(call, "dx", got.dx, e.value, e.allowed, bn_dims(b).of("dx"), [&](std::size_t i) {
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

// The cases of a batch-norm check: every shape s of kBnShapes (its channels' kinds rotated by s,
// seed seed0 + s).
testing::AssertionResult bn_cases(std::uint64_t seed0, const std::function<testing::AssertionResult(BnCase)>& check) {
  return wb::check::run_cases(kBnShapes.size(),
                              [&](std::size_t s) { return check(make_bn_case(kBnShapes[s], s, seed0 + s)); });
}

}  // namespace

// ---- Correctness -------------------------------------------------------------------------------------------

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

// The metric shape: batch norm over 4 x 4 x 16384 (16 splits of a channel).
const BnShape kMetricBn{4, 4, 16384};

#if WB_HAVE_CUSIM_ANALYSIS
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
