// Helpers the checks of lab 12 share: device buffers, the verdict of a check over all ranks,
// the checker's inputs, and comparisons against the double-precision reference with the
// fp32 allowance of trainer_reference.h.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/check.h"
#include "comm/error.h"
#include "ring_allreduce.h"
#include "trainer.h"
#include "trainer_reference.h"

namespace lab12_check {

using lab12::Mlp;
using lab12::Tensor;

// `n` elements from device memory.
template <typename T>
std::vector<T> host_copy(const T* device, std::size_t n) {
  std::vector<T> out(n);
  if (n > 0) cudaMemcpy(out.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

template <typename T>
class Device {
 public:
  explicit Device(std::size_t n) : n_(n) {
    if (n > 0 && cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc of " + std::to_string(n * sizeof(T)) + " bytes failed");
  }
  Device(const std::vector<T>& host) : Device(host.size()) { upload(host); }
  ~Device() { cudaFree(p_); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& host) {
    if (!host.empty()) cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> download() const { return host_copy(p_, n_); }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// "" when the call succeeded, else a message naming the call and the error.
inline std::string failed(cudaError_t e, const std::string& call) {
  if (e == cudaSuccess) return "";
  cudaGetLastError();
  if (e == cudaErrorNotYetImplemented) return call + ": not implemented yet (it returned cudaErrorNotYetImplemented)";
  return call + " returned " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

/// A rank's text after another rank failed and this one stopped with it (stop_together): it is
/// left out of the message.
inline const std::string& failed_elsewhere() {
  static const std::string text = "(stopped: another rank failed)";
  return text;
}

/// Whether any rank has a failure: then every rank stops at this point, those without one of
/// their own with failed_elsewhere(), so that no rank goes on into a collective call that the
/// others never make (which would hang instead of failing).
inline bool stop_together(std::string& f) {
  if (comm::check::agree_all(f.empty())) return false;
  if (f.empty()) f = failed_elsewhere();
  return true;
}

// The verdict of a check: passes iff `local` is empty on every rank; the failure message
// carries every rank's own text.
inline void verdict(const std::string& local) {
  if (comm::check::agree_all(local.empty())) return;
  FAIL() << comm::check::gather_text(local == failed_elsewhere() ? std::string() : local);
}

// Runs `body` so that a comm::NotImplemented thrown by the learner's code becomes this rank's
// failure text (verdict() gathers the ranks' texts once); any other exception aborts the job
// with a message naming the rank (comm::check::guarded).
inline std::string run_lab(const std::function<std::string()>& body) {
  std::string out;
  comm::check::guarded([&] {
    try {
      out = body();
    } catch (const comm::NotImplemented& e) {
      out = e.what();
    }
  });
  return out;
}

inline std::string ranks_text(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

inline std::string model_name(const Mlp& m) {
  std::string s = "{";
  for (std::size_t i = 0; i < m.widths.size(); ++i) s += (i ? ", " : "") + std::to_string(m.widths[i]);
  return s + "}";
}

// ---- inputs ---------------------------------------------------------------------------------

// He-uniform weights and small biases, the same on every rank for a seed.
inline std::vector<float> initial_params(const Mlp& m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> p(m.parameter_count());
  for (const Tensor& t : m.tensors()) {
    const bool weight = t.name[0] == 'W';
    const double bound = weight ? std::sqrt(6.0 / t.rows) : 0.1;
    std::uniform_real_distribution<double> u(-bound, bound);
    for (std::size_t i = 0; i < t.count; ++i) p[t.offset + i] = static_cast<float>(u(rng));
  }
  return p;
}

struct HostBatch {
  std::vector<float> x;
  std::vector<int> labels;
  int rows = 0;
};

// `rows` rows of inputs drawn by value(rng) and random labels, from `seed`.
template <typename Draw>
HostBatch batch_of(const Mlp& m, int rows, std::uint64_t seed, Draw value) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> label(0, m.classes() - 1);
  HostBatch b;
  b.rows = rows;
  b.x.resize(std::size_t(rows) * m.inputs());
  for (float& v : b.x) v = static_cast<float>(value(rng));
  b.labels.resize(rows);
  for (int& l : b.labels) l = label(rng);
  return b;
}

inline HostBatch random_batch(const Mlp& m, int rows, std::uint64_t seed) {
  return batch_of(m, rows, seed, std::uniform_real_distribution<double>(-1.0, 1.0));
}

// ---- comparisons ----------------------------------------------------------------------------

// The name of flat element i: "W1[3][7]" or "b0[5]".
inline std::string element_name(const Mlp& m, std::size_t i) {
  for (const Tensor& t : m.tensors())
    if (i >= t.offset && i < t.offset + t.count) {
      const std::size_t j = i - t.offset;
      if (t.rows == 1) return t.name + "[" + std::to_string(j) + "]";
      return t.name + "[" + std::to_string(j / t.cols) + "][" + std::to_string(j % t.cols) + "]";
    }
  return "element " + std::to_string(i);
}

// Names element j of a comparison of flat elements: "grads W1[3][7]" for the flat element at[j]
// (j itself without `at`).
inline std::function<std::string(std::size_t)> flat_element(const Mlp& m, const std::string& what,
                                                            const std::vector<std::size_t>* at = nullptr) {
  return [m, what, at](std::size_t j) { return what + " " + element_name(m, at ? (*at)[j] : j); };
}

// Names element i of a row-major matrix of `cols` columns: "z0[2][5]"; columns from `first_col` on.
inline std::function<std::string(std::size_t)> matrix_element(const std::string& what, int cols, int first_col = 0) {
  return [what, cols, first_col](std::size_t i) {
    return what + "[" + std::to_string(i / cols) + "][" + std::to_string(first_col + i % cols) + "]";
  };
}

// The first element where |got - want| > allowance, as a message, or "".
inline std::string compare(const std::vector<float>& got, const std::vector<double>& want,
                           const std::vector<double>& allow, const std::function<std::string(std::size_t)>& name,
                           const std::string& what) {
  std::size_t bad = got.size(), count = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= allow[i])) {
      if (bad == got.size()) bad = i;
      ++count;
    }
  }
  if (bad == got.size()) return "";
  std::ostringstream s;
  s.precision(9);
  s << what << ": " << count << " of " << got.size() << " values are outside the allowance; the first is "
    << name(bad) << " = " << got[bad] << ", expected " << want[bad] << " (allowance " << allow[bad]
    << ", from the summation error bound of fp32).";
  return s.str();
}

inline std::vector<double> scaled(const std::vector<double>& mag, double g, double floor = 0) {
  std::vector<double> out(mag.size());
  for (std::size_t i = 0; i < mag.size(); ++i) out[i] = g * mag[i] + floor;
  return out;
}

// v at the flat elements `at` (v holds elements from `base` on).
template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<std::size_t>& at, std::size_t base = 0) {
  std::vector<T> out;
  out.reserve(at.size());
  for (std::size_t i : at) out.push_back(v[i - base]);
  return out;
}

struct Expected {
  std::vector<double> p, allow_p, m, allow_m, v, allow_v;
};

// One optimizer step (t >= 1) in double from the state before it (p0, m0, v0) and the gradients,
// with the fp32 allowance of each result: a few u of the magnitudes it sums.
inline Expected expected_step(const lab12::Optimizer& opt, int t, const std::vector<float>& p0,
                              const std::vector<float>& grads, const std::vector<float>& m0,
                              const std::vector<float>& v0) {
  const std::size_t n = p0.size();
  const double uu = std::ldexp(1.0, -24);
  Expected e{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n),
             std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    const double p = p0[i], g = grads[i];
    if (opt.kind == lab12::Optimizer::Kind::sgd) {
      const lab12::Sgd& o = opt.sgd;
      const double v = double(o.momentum) * m0[i] + g + double(o.weight_decay) * p;
      const double vmag = std::fabs(double(o.momentum) * m0[i]) + std::fabs(g) + std::fabs(o.weight_decay * p);
      e.m[i] = v;
      e.allow_m[i] = 4 * uu * vmag;
      e.p[i] = p - double(o.lr) * v;
      e.allow_p[i] = 4 * uu * (std::fabs(p) + std::fabs(o.lr) * vmag);
    } else {
      const lab12::AdamW& o = opt.adamw;
      const double b1 = o.beta1, b2 = o.beta2;
      const double mm = b1 * m0[i] + (1 - b1) * g, vv = b2 * v0[i] + (1 - b2) * g * g;
      e.m[i] = mm;
      e.allow_m[i] = 4 * uu * (std::fabs(b1 * m0[i]) + std::fabs((1 - b1) * g));
      e.v[i] = vv;
      e.allow_v[i] = 4 * uu * vv;
      const double mhat = mm / (1 - std::pow(b1, t)), vhat = vv / (1 - std::pow(b2, t));
      const double step = double(o.lr) * mhat / (std::sqrt(vhat) + o.eps);
      e.p[i] = p * (1 - double(o.lr) * o.weight_decay) - step;
      // A relative error of a few u in each factor of the step, plus the rounding of p;
      // m's own error carries through mhat.
      e.allow_p[i] = 8 * uu * (std::fabs(p) + std::fabs(step)) +
                     double(o.lr) * e.allow_m[i] / (1 - std::pow(b1, t)) / (std::sqrt(vhat) + o.eps);
    }
  }
  return e;
}

inline const char* step_name(const lab12::Optimizer& opt) {
  return opt.kind == lab12::Optimizer::Kind::adamw ? "adamw_step" : "sgd_step";
}

// The learner's sgd_step (velocity m) or adamw_step (moments m and v, step t) on device buffers of n floats.
inline cudaError_t optimizer_step(const lab12::Optimizer& opt, float* params, const float* grads, float* m, float* v,
                                  std::size_t n, int t) {
  if (opt.kind == lab12::Optimizer::Kind::adamw) return lab12::adamw_step(params, grads, m, v, n, t, opt.adamw);
  return lab12::sgd_step(params, grads, m, n, opt.sgd);
}

inline lab12::Optimizer adamw(float lr, float weight_decay) {
  lab12::Optimizer o;
  o.kind = lab12::Optimizer::Kind::adamw;
  o.adamw = {lr, 0.9f, 0.999f, 1e-8f, weight_decay};
  return o;
}

inline lab12::Optimizer sgd(float lr, float momentum, float weight_decay) {
  lab12::Optimizer o;
  o.kind = lab12::Optimizer::Kind::sgd;
  o.sgd = {lr, momentum, weight_decay};
  return o;
}

// The messages one lab10::ring_allreduce of `count` floats (device memory, as the trainer's) sends
// from this rank, counted now: the learner's own all-reduce, a step's budget.
inline std::uint64_t one_allreduce_sends(std::size_t count) {
  comm::Communicator& w = comm::check::world();
  Device<float> d(std::vector<float>(count, 1.0f));
  w.barrier();
  w.reset_stats();
  lab10::ring_allreduce(d.get(), d.get(), count, comm::DataType::f32, comm::RedOp::sum, w);
  return w.stats().sends;
}

}  // namespace lab12_check
