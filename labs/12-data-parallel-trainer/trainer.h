/// @file
/// @brief Lab 12 interface: a data-parallel trainer of a small MLP, built on your own kernels
/// (lab 05's sgemm, lab 02's transpose, lab 06's softmax) and your own ring all-reduce (lab 10).
///
/// The checker calls these functions; implement them in trainer.cu and do not change this
/// file. The handout is README.md.
///
/// The model is a multilayer perceptron: widths[0] inputs, widths.back() classes, and
/// L = widths.size() - 1 linear layers with a ReLU after every layer but the last:
///
///     z_l = h_{l-1} W_l + b_l      (h_{-1} = x; W_l is widths[l] x widths[l+1], row-major)
///     h_l = relu(z_l)              for l < L-1; z_{L-1} are the logits
///     loss = sum over rows of -log softmax(logits)[label]
///
/// Every parameter lives in one flat device buffer of parameter_count() floats, tensor after
/// tensor in forward order (W_0, b_0, W_1, b_1, ...); the gradients live in a second buffer of
/// the same layout. Matrices are row-major and densely packed: row r of a batch is
/// x[r * widths[0] .. r * widths[0] + widths[0] - 1].
///
/// Every function takes device pointers, returns the first CUDA error it sees (or
/// cudaErrorInvalidValue for arguments outside the contract), and leaves its results complete
/// when it returns (synchronize before the communicator reads device memory).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace lab12 {

/// One tensor of the flat buffers: `count` floats from element `offset`, a rows x cols
/// row-major matrix (a bias is 1 x cols).
struct Tensor {
  std::size_t offset = 0;
  std::size_t count = 0;
  int rows = 0, cols = 0;
  std::string name;  ///< "W0", "b0", "W1", ...
};

/// The model's shape and the layout of its flat parameter buffer.
struct Mlp {
  std::vector<int> widths;  ///< at least two entries, each >= 1

  int layers() const { return static_cast<int>(widths.size()) - 1; }
  int inputs() const { return widths.front(); }
  int classes() const { return widths.back(); }
  int max_width() const { return *std::max_element(widths.begin(), widths.end()); }

  /// W_0, b_0, W_1, b_1, ... with their offsets in the flat buffer.
  std::vector<Tensor> tensors() const {
    std::vector<Tensor> out;
    std::size_t offset = 0;
    for (int l = 0; l < layers(); ++l) {
      const int in = widths[l], outw = widths[l + 1];
      out.push_back({offset, std::size_t(in) * outw, in, outw, "W" + std::to_string(l)});
      offset += std::size_t(in) * outw;
      out.push_back({offset, std::size_t(outw), 1, outw, "b" + std::to_string(l)});
      offset += outw;
    }
    return out;
  }
  Tensor weight(int l) const { return tensors()[2 * l]; }
  Tensor bias(int l) const { return tensors()[2 * l + 1]; }
  std::size_t parameter_count() const {
    std::size_t n = 0;
    for (const Tensor& t : tensors()) n += t.count;
    return n;
  }
};

/// Device buffers of one forward and backward pass of up to max_rows rows, allocated by the
/// caller (allocate_activations): z[l] holds z_l and h[l] holds h_l (rows x widths[l+1];
/// h[L-1] is unused), probs the softmax of the logits (rows x classes). scratch[0..2] are
/// yours during mlp_backward, each of scratch_floats floats: enough for any rows x width,
/// width x rows or width x width matrix of this model.
struct Activations {
  std::vector<float*> z, h;
  float* probs = nullptr;
  float* scratch[3] = {nullptr, nullptr, nullptr};
  std::size_t scratch_floats = 0;
  int max_rows = 0;
};

/// The checker's allocation of Activations (cudaMalloc); free with free_activations.
inline cudaError_t allocate_activations(const Mlp& m, int max_rows, Activations* a) {
  *a = Activations{};
  a->max_rows = max_rows;
  const std::size_t rows = static_cast<std::size_t>(std::max(max_rows, 1));
  auto alloc = [](float** p, std::size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n * sizeof(float)); };
  cudaError_t e = cudaSuccess;
  for (int l = 0; l < m.layers() && e == cudaSuccess; ++l) {
    a->z.push_back(nullptr);
    a->h.push_back(nullptr);
    e = alloc(&a->z.back(), rows * m.widths[l + 1]);
    if (e == cudaSuccess) e = alloc(&a->h.back(), rows * m.widths[l + 1]);
  }
  if (e == cudaSuccess) e = alloc(&a->probs, rows * m.classes());
  const std::size_t w = static_cast<std::size_t>(m.max_width());
  a->scratch_floats = std::max(rows, w) * w;
  for (float*& s : a->scratch)
    if (e == cudaSuccess) e = alloc(&s, a->scratch_floats);
  return e;
}

inline void free_activations(Activations* a) {
  for (float* p : a->z) cudaFree(p);
  for (float* p : a->h) cudaFree(p);
  cudaFree(a->probs);
  for (float* s : a->scratch) cudaFree(s);
  *a = Activations{};
}

// ---- step 1: one process ----------------------------------------------------------------

/// The forward pass of `rows` rows (0 <= rows <= act.max_rows) of x: fills act.z[l] and
/// act.h[l] for every layer; the logits are act.z[L-1]. Use your lab-05 sgemm() for the
/// products.
cudaError_t mlp_forward(const Mlp& m, const float* params, const float* x, int rows, Activations& act);

/// The backward pass after mlp_forward of the same rows: the softmax of the logits into
/// act.probs (your lab-06 softmax_forward()), then
///
///     grads = scale * d(loss)/d(params),   *loss_sum = loss (a device float, the unscaled sum)
///
/// for every tensor of the flat gradient buffer (overwritten, not accumulated). labels[r] is in
/// [0, classes). scale is 1/rows for the mean loss of this batch; a data-parallel step passes
/// 1/(global batch). rows == 0 gives zero gradients and loss.
cudaError_t mlp_backward(const Mlp& m, const float* params, const float* x, const int* labels, int rows, float scale,
                         Activations& act, float* grads, float* loss_sum);

/// SGD with momentum and weight decay, as torch.optim.SGD (dampening 0, not Nesterov):
///     g = grads[i] + weight_decay * params[i];  v = momentum * v + g;  params[i] -= lr * v
struct Sgd {
  float lr = 0.1f, momentum = 0.9f, weight_decay = 0.0f;
};

/// AdamW, as torch.optim.AdamW, at step t >= 1 (bias corrections 1 - beta^t):
///     params[i] *= 1 - lr * weight_decay;  m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
///     params[i] -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

/// One update of n parameters; velocity (SGD) and m, v (AdamW) are device buffers of n floats
/// that start at zero and persist between steps.
cudaError_t sgd_step(float* params, const float* grads, float* velocity, std::size_t n, const Sgd& opt);
cudaError_t adamw_step(float* params, const float* grads, float* m, float* v, std::size_t n, int t,
                       const AdamW& opt);

/// The optimizer a trainer runs and its state (device buffers of parameter_count() floats,
/// zero at the start; `t` counts the steps taken).
struct Optimizer {
  enum class Kind { sgd, adamw } kind = Kind::adamw;
  Sgd sgd;
  AdamW adamw;
};
struct OptimizerState {
  float* m = nullptr;  ///< SGD: the velocity; AdamW: the first moment
  float* v = nullptr;  ///< AdamW: the second moment (unused by SGD)
  int t = 0;
};

// ---- steps 2 and 3: data parallelism ------------------------------------------------------

/// A batch in device memory: `rows` rows of x (rows x inputs) and their labels.
struct Batch {
  const float* x = nullptr;
  const int* labels = nullptr;
  int rows = 0;
};

/// This rank's rows of a global batch: `rows` rows from row `offset`. The same partition as
/// lab 10's chunks: shard r of n holds rows/n rows, plus one when r < rows % n.
struct Shard {
  int offset = 0, rows = 0;
};
Shard batch_shard(int global_rows, int n, int rank);

/// Copies rank 0's `count` parameters into every rank's `params` (device memory), with
/// point-to-point calls only.
cudaError_t broadcast_parameters(float* params, std::size_t count, comm::Communicator& comm);

/// How a data-parallel step sums the gradients over the ranks.
enum class Reduction {
  per_tensor,  ///< step 2: one all-reduce per parameter tensor, in tensors() order
  flat,        ///< step 3: one all-reduce over the whole flat gradient buffer
};

/// One data-parallel training step on the global batch `global` (the same on every rank):
/// this rank's shard forward and backward, the gradients all-reduced so that every rank
/// holds the gradient of the mean loss over the whole global batch, then one optimizer step
/// (state.t counts it). On return every rank has the same params and grads. Use your lab-10
/// ring_allreduce for the sums.
cudaError_t ddp_train_step(Reduction reduction, const Mlp& m, const Batch& global, float* params, float* grads,
                           Activations& act, const Optimizer& opt, OptimizerState& state, comm::Communicator& comm);

}  // namespace lab12
