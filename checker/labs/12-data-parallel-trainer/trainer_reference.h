// The checker's own model of lab 12, on the host in double precision: forward, loss and
// backward of the MLP, and the error allowance of an fp32 computation of the same values.
//
// Allowances follow the usual bound of a floating-point sum or dot product of k terms,
// |fl(s) - s| <= gamma(k) * sum |terms| with gamma(k) = k u / (1 - k u) and u = 2^-24 (Higham,
// Accuracy and Stability of Numerical Algorithms, ch. 3). Each value is computed together with
// its "magnitude": the same expression evaluated on absolute values, which is the sum of
// |terms| that bound uses, carried through every layer so that errors of earlier layers are
// covered too. A ReLU whose input lies within its own allowance of 0 may go either way in fp32:
// the backward pass then adds the gradient it might or might not pass to the magnitude.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "trainer.h"

namespace lab12::reference {

inline double gamma(double k) {
  const double u = std::ldexp(1.0, -24);
  return k * u / (1.0 - k * u);
}

/// One forward and backward pass in double, with magnitudes.
struct Pass {
  std::vector<std::vector<double>> z, zmag, h, hmag;  // per layer, rows x widths[l+1]
  std::vector<double> probs;                          // rows x classes
  double loss = 0, loss_mag = 0;                      // sum over rows of -log p[label]
  std::vector<double> grads, grads_mag;               // the flat layout of Mlp::tensors()
  std::vector<double> dx, dx_mag;                     // dL/dx (rows x inputs), when asked for
  double k = 0;  // the length of the longest chain of roundings: gamma(k) scales the magnitudes
};

/// Forward (and backward when `backward`) of `rows` rows at `params` (fp32 values, as the
/// learner holds them), gradients scaled by `scale`. `extra_terms` lengthens the rounding chain
/// (a data-parallel sum over n ranks adds n). With `upstream` (rows x classes) the backward pass
/// starts from dL/d(logits) = scale * upstream instead of the softmax cross-entropy (labels are
/// then unused and the loss is 0); with `input_grad` it also computes dx = dL/dx.
inline Pass run(const Mlp& m, const std::vector<float>& params, const float* x, const int* labels, int rows,
                double scale, bool backward = true, double extra_terms = 0,
                const std::vector<double>* upstream = nullptr, bool input_grad = false) {
  Pass p;
  const int L = m.layers(), C = m.classes();
  const std::vector<Tensor> tensors = m.tensors();
  // The longest chain: every layer's dot product (fan-in + 1 for the bias), the batch sum of
  // the weight gradient, softmax and log (a few roundings each, 16 in all), the n-rank sum.
  p.k = rows + extra_terms + 16;
  for (int l = 0; l < L; ++l) p.k += m.widths[l] + m.widths[l + 1] + 2;
  const double g = gamma(p.k);

  std::vector<double> in(x, x + std::size_t(rows) * m.inputs()), in_mag(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) in_mag[i] = std::fabs(in[i]);
  std::vector<std::vector<double>> inputs{in}, inputs_mag{in_mag};
  for (int l = 0; l < L; ++l) {
    const int fi = m.widths[l], fo = m.widths[l + 1];
    const float* W = params.data() + tensors[2 * l].offset;
    const float* b = params.data() + tensors[2 * l + 1].offset;
    std::vector<double> z(std::size_t(rows) * fo), zm(z.size());
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < fo; ++o) {
        double s = b[o], sm = std::fabs(b[o]);
        for (int i = 0; i < fi; ++i) {
          s += inputs[l][std::size_t(r) * fi + i] * double(W[std::size_t(i) * fo + o]);
          sm += inputs_mag[l][std::size_t(r) * fi + i] * std::fabs(double(W[std::size_t(i) * fo + o]));
        }
        z[std::size_t(r) * fo + o] = s;
        zm[std::size_t(r) * fo + o] = sm;
      }
    std::vector<double> h(z.size()), hm(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) {
      h[i] = std::max(z[i], 0.0);
      hm[i] = zm[i];  // relu(z) differs from relu(fl(z)) by at most |fl(z) - z|
    }
    p.z.push_back(z);
    p.zmag.push_back(zm);
    p.h.push_back(h);
    p.hmag.push_back(hm);
    inputs.push_back(h);
    inputs_mag.push_back(hm);
  }
  // Softmax and loss. An error e in the logits of a row moves p_c by at most 2 p_c e and
  // log p by at most 2 e.
  const std::vector<double>& logits = p.z[L - 1];
  const std::vector<double>& lmag = p.zmag[L - 1];
  p.probs.assign(logits.size(), 0.0);
  std::vector<double> row_mag(rows, 0.0);
  for (int r = 0; r < rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity(), mag = 0;
    for (int c = 0; c < C; ++c) {
      mx = std::max(mx, logits[std::size_t(r) * C + c]);
      mag = std::max(mag, lmag[std::size_t(r) * C + c]);
    }
    row_mag[r] = mag;
    if (upstream != nullptr) continue;
    double sum = 0;
    for (int c = 0; c < C; ++c) sum += std::exp(logits[std::size_t(r) * C + c] - mx);
    for (int c = 0; c < C; ++c) p.probs[std::size_t(r) * C + c] = std::exp(logits[std::size_t(r) * C + c] - mx) / sum;
    const double lp = std::log(p.probs[std::size_t(r) * C + labels[r]]);
    p.loss -= lp;
    p.loss_mag += std::fabs(lp) + 2 * mag + 1;
  }
  if (!backward) return p;

  p.grads.assign(m.parameter_count(), 0.0);
  p.grads_mag.assign(m.parameter_count(), 0.0);
  std::vector<double> dz(std::size_t(rows) * C), dzm(dz.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) {
      if (upstream != nullptr) {
        dz[std::size_t(r) * C + c] = scale * (*upstream)[std::size_t(r) * C + c];
        dzm[std::size_t(r) * C + c] = std::fabs(dz[std::size_t(r) * C + c]);
        continue;
      }
      const double pc = p.probs[std::size_t(r) * C + c], one = labels[r] == c ? 1.0 : 0.0;
      dz[std::size_t(r) * C + c] = scale * (pc - one);
      dzm[std::size_t(r) * C + c] = std::fabs(scale) * (pc * (1 + 2 * row_mag[r]) + one);
    }
  for (int l = L - 1; l >= 0; --l) {
    const int fi = m.widths[l], fo = m.widths[l + 1];
    const Tensor& tw = tensors[2 * l];
    const Tensor& tb = tensors[2 * l + 1];
    const float* W = params.data() + tw.offset;
    for (int i = 0; i < fi; ++i)
      for (int o = 0; o < fo; ++o) {
        double s = 0, sm = 0;
        for (int r = 0; r < rows; ++r) {
          s += inputs[l][std::size_t(r) * fi + i] * dz[std::size_t(r) * fo + o];
          sm += inputs_mag[l][std::size_t(r) * fi + i] * dzm[std::size_t(r) * fo + o];
        }
        p.grads[tw.offset + std::size_t(i) * fo + o] = s;
        p.grads_mag[tw.offset + std::size_t(i) * fo + o] = sm;
      }
    for (int o = 0; o < fo; ++o) {
      double s = 0, sm = 0;
      for (int r = 0; r < rows; ++r) {
        s += dz[std::size_t(r) * fo + o];
        sm += dzm[std::size_t(r) * fo + o];
      }
      p.grads[tb.offset + o] = s;
      p.grads_mag[tb.offset + o] = sm;
    }
    if (l == 0 && !input_grad) break;
    std::vector<double> dh(std::size_t(rows) * fi), dhm(dh.size());
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < fi; ++i) {
        double s = 0, sm = 0;
        for (int o = 0; o < fo; ++o) {
          s += dz[std::size_t(r) * fo + o] * double(W[std::size_t(i) * fo + o]);
          sm += dzm[std::size_t(r) * fo + o] * std::fabs(double(W[std::size_t(i) * fo + o]));
        }
        dh[std::size_t(r) * fi + i] = s;
        dhm[std::size_t(r) * fi + i] = sm;
      }
    if (l == 0) {
      p.dx = dh;
      p.dx_mag = dhm;
      break;
    }
    dz.assign(dh.size(), 0.0);
    dzm.assign(dh.size(), 0.0);
    const std::vector<double>& zb = p.z[l - 1];
    const std::vector<double>& zbm = p.zmag[l - 1];
    for (std::size_t i = 0; i < dh.size(); ++i) {
      const bool near_kink = std::fabs(zb[i]) <= g * zbm[i];
      dz[i] = zb[i] > 0 ? dh[i] : 0.0;
      // Near the kink fp32 may take the other branch: allow the whole gradient there.
      dzm[i] = near_kink ? dhm[i] + std::fabs(dh[i]) / g : (zb[i] > 0 ? dhm[i] : 0.0);
    }
  }
  return p;
}

/// The loss in double of `rows` rows at double-precision parameters (finite differences).
inline double loss_at(const Mlp& m, const std::vector<double>& params, const float* x, const int* labels, int rows) {
  const std::vector<Tensor> tensors = m.tensors();
  std::vector<double> in(x, x + std::size_t(rows) * m.inputs());
  for (int l = 0; l < m.layers(); ++l) {
    const int fi = m.widths[l], fo = m.widths[l + 1];
    const double* W = params.data() + tensors[2 * l].offset;
    const double* b = params.data() + tensors[2 * l + 1].offset;
    std::vector<double> z(std::size_t(rows) * fo);
    for (int r = 0; r < rows; ++r)
      for (int o = 0; o < fo; ++o) {
        double s = b[o];
        for (int i = 0; i < fi; ++i) s += in[std::size_t(r) * fi + i] * W[std::size_t(i) * fo + o];
        z[std::size_t(r) * fo + o] = (l + 1 < m.layers()) ? std::max(s, 0.0) : s;
      }
    in.swap(z);
  }
  const int C = m.classes();
  double loss = 0;
  for (int r = 0; r < rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int c = 0; c < C; ++c) mx = std::max(mx, in[std::size_t(r) * C + c]);
    for (int c = 0; c < C; ++c) sum += std::exp(in[std::size_t(r) * C + c] - mx);
    loss -= in[std::size_t(r) * C + labels[r]] - mx - std::log(sum);
  }
  return loss;
}

/// The buckets of trainer.h's make_buckets, written from its contract: trained tensors from
/// the last to the first, a bucket closed once it holds bucket_floats floats or at a frozen
/// tensor.
inline std::vector<Bucket> buckets(const Mlp& m, std::size_t bucket_floats) {
  const std::vector<Tensor> tensors = m.tensors();
  std::vector<Bucket> out;
  bool open = false;
  for (int t = static_cast<int>(tensors.size()) - 1; t >= 0; --t) {
    if (!m.trains(t)) {
      open = false;
      continue;
    }
    if (!open) out.push_back({tensors[t].offset + tensors[t].count, 0, t, t});
    open = true;
    Bucket& b = out.back();
    b.offset = tensors[t].offset;
    b.count += tensors[t].count;
    b.first = t;
    if (b.count >= bucket_floats) open = false;
  }
  return out;
}

}  // namespace lab12::reference
