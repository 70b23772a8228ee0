/// @file
/// @brief Lab 07's batch-norm host reference, shared by its checks (check_batchnorm.cpp) and the
/// candidate benchmark (bench/kernels/bench_kernels.cpp): the cases' channel kinds and inputs, each
/// channel's statistics in double with what a float computation is allowed, and what the training
/// forward must give from them. No GoogleTest: the benchmark links none.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "wb/random.h"

namespace lab07 {

constexpr double kU = 0x1.0p-24;  // float's unit roundoff
constexpr float kMomentum = 0.1f;
constexpr float kEps = 1e-5f;

inline double sum_tolerance(double terms) { return (16.0 + 4.0 * std::sqrt(terms)) * kU; }

inline float uniform(wb::Random& rng, double lo, double hi) {
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

inline std::string bn_shape(int N, int C, int HW) {
  return "N=" + std::to_string(N) + ", C=" + std::to_string(C) + ", HW=" + std::to_string(HW);
}

struct BnCase {
  int N, C, HW;
  std::vector<float> x, gamma, beta, running_mean, running_var;
  std::vector<const ChannelKind*> kinds;
  std::uint64_t seed;
  std::size_t size() const { return static_cast<std::size_t>(N) * C * HW; }
  long long M() const { return static_cast<long long>(N) * HW; }
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

inline BnCase make_bn_case(BnShape s, std::size_t first_kind, std::uint64_t seed) {
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

// Batch norm, training: over the M = N HW values of a channel, the mean within T(M) mean|x| (a
// float sum's rounding, which also bounds Welford's and Chan's updates); the variance within
// 2 T(M) var + 2 d sqrt(var) + d^2, d = T(M) mean|x| (the sum of squares, and deviations taken from
// a mean known within d: Welford's running means are), so rstd = 1 / sqrt(var + eps) within
// rstd (var_allowed / (2 (var + eps)) + 2 u).
struct ChannelStats {
  double mean, var, abs_mean, mean_allowed, var_allowed, rstd, rstd_allowed;
};

inline ChannelStats channel_stats(const BnCase& b, int c) {
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

// What batch norm's training forward must give, from @p s = channel_stats(b, c) of the element's
// channel: y[i] within |gamma| (|x - mean| rstd_allowed + rstd mean_allowed) + 4 u (|y| + |beta|);
// the running statistics, which started as b's, within momentum times the statistic's allowance plus
// 4 u of their terms (the running variance takes the unbiased variance, var M / (M - 1)).
struct Want {
  double value, allowed;
};
inline Want bn_y(const BnCase& b, const ChannelStats& s, std::size_t i) {
  const int c = b.channel(i);
  const double y = (b.x[i] - s.mean) * s.rstd * b.gamma[c] + b.beta[c];
  return {y, std::fabs(b.gamma[c]) * (std::fabs(b.x[i] - s.mean) * s.rstd_allowed + s.rstd * s.mean_allowed) +
                 4.0 * kU * (std::fabs(y) + std::fabs(b.beta[c])) + 1e-30};
}
inline Want bn_running_mean(const BnCase& b, const ChannelStats& s, int c) {
  return {(1.0 - kMomentum) * b.running_mean[c] + kMomentum * s.mean,
          kMomentum * s.mean_allowed + 4.0 * kU * (std::fabs(b.running_mean[c]) + std::fabs(kMomentum * s.mean))};
}
inline Want bn_running_var(const BnCase& b, const ChannelStats& s, int c) {
  const double m = static_cast<double>(b.M()), unbiased = s.var * m / (m - 1.0);
  return {(1.0 - kMomentum) * b.running_var[c] + kMomentum * unbiased,
          kMomentum * s.var_allowed * m / (m - 1.0) + 4.0 * kU * (std::fabs(b.running_var[c]) + kMomentum * unbiased)};
}

}  // namespace lab07
