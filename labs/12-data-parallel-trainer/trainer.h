/// @file
/// @brief Lab 12 interface: a data-parallel trainer of a small MLP, built on your own kernels
/// (lab 05's sgemm, lab 02's transpose, lab 06's softmax) and your own ring all-reduce (lab 10),
/// then tensor parallelism (a Megatron-style MLP block) and pipeline parallelism (GPipe, 1F1B).
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
#include <functional>
#include <memory>
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
  /// Per tensor (tensors() order): true for a tensor that does not train. mlp_backward neither
  /// computes nor writes its gradient, no all-reduce carries it, and the optimizer leaves it
  /// and its state alone. Empty: every tensor trains. mlp_backward and the bucketed step (steps
  /// 9 and 10) honour it; the other steps are never given frozen tensors.
  std::vector<bool> frozen;

  bool trains(int tensor) const { return frozen.empty() || !frozen[static_cast<std::size_t>(tensor)]; }
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

/// What mlp_backward does besides computing the gradients (the defaults: nothing).
struct BackwardOptions {
  /// Step 11: add to the gradients and to *loss_sum instead of overwriting them.
  bool accumulate = false;
  /// Step 9: called with a tensor's index (tensors() order) as soon as that tensor's gradient
  /// is complete in memory (synchronize first), once per trained tensor, in the order the
  /// backward pass produces them (the last layer first). A result other than cudaSuccess
  /// stops the backward pass, which returns it.
  std::function<cudaError_t(int tensor)> on_gradient;
};

/// The backward pass after mlp_forward of the same rows: the softmax of the logits into
/// act.probs (your lab-06 softmax_forward()), then
///
///     grads = scale * d(loss)/d(params),   *loss_sum = loss (a device float, the unscaled sum)
///
/// for every trained tensor of the flat gradient buffer (overwritten, not accumulated, unless
/// options.accumulate). labels[r] is in [0, classes). scale is 1/rows for the mean loss of this
/// batch; a data-parallel step passes 1/(global batch). rows == 0 gives zero gradients and
/// loss (or leaves them as they are when accumulating).
cudaError_t mlp_backward(const Mlp& m, const float* params, const float* x, const int* labels, int rows, float scale,
                         Activations& act, float* grads, float* loss_sum, const BackwardOptions& options = {});

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
/// ring_allreduce for the sums. Models with frozen tensors are not passed here.
cudaError_t ddp_train_step(Reduction reduction, const Mlp& m, const Batch& global, float* params, float* grads,
                           Activations& act, const Optimizer& opt, OptimizerState& state, comm::Communicator& comm);

// ---- step 9: buckets whose all-reduce overlaps the backward pass ----------------------------

/// A run of whole tensors, first..last in tensors() order, which is the contiguous range
/// [offset, offset + count) of the flat buffers.
struct Bucket {
  std::size_t offset = 0, count = 0;
  int first = 0, last = 0;
};

/// The buckets of the trained tensors in the order the backward pass completes them: walk the
/// tensors from the last to the first, add each trained tensor to the open bucket, and close
/// the bucket once it holds at least bucket_floats floats; a frozen tensor closes the open
/// bucket (a bucket is contiguous and carries no frozen tensor). bucket_floats <= 1 gives one
/// bucket per trained tensor; parameter_count() or more gives one bucket (without frozen
/// tensors).
std::vector<Bucket> make_buckets(const Mlp& m, std::size_t bucket_floats);

/// The all-reduce (sum, in place on grads) of every bucket of make_buckets(m, bucket_floats),
/// each started as soon as its last tensor is ready and running while the caller goes on
/// (a communication thread or a progress engine: your design, in Impl). Every rank marks the
/// same tensors ready in the same order. Use your lab-10 ring_allreduce for each bucket.
class BucketReducer {
 public:
  BucketReducer(const Mlp& m, float* grads, std::size_t bucket_floats, comm::Communicator& comm);
  /// Waits for anything still running.
  ~BucketReducer();
  BucketReducer(const BucketReducer&) = delete;
  BucketReducer& operator=(const BucketReducer&) = delete;

  const std::vector<Bucket>& buckets() const;
  /// The gradient of trained tensor `tensor` is complete: when it is the last missing tensor of
  /// its bucket, start that bucket's all-reduce and return without waiting for it.
  cudaError_t ready(int tensor);
  /// Returns once every bucket's all-reduce has finished (every trained tensor must have been
  /// marked ready: cudaErrorInvalidValue otherwise). Rethrows what the communication threw.
  cudaError_t wait();

  struct Impl;  ///< yours: define it in trainer.cu

 private:
  std::unique_ptr<Impl> impl_;
};

/// Step 10: the data-parallel step of step 8 with the gradients all-reduced in buckets of
/// make_buckets(m, bucket_floats) by a BucketReducer fed from mlp_backward's on_gradient, then
/// the optimizer step on the trained tensors only (frozen ones and their state untouched).
cudaError_t bucketed_train_step(const Mlp& m, const Batch& global, std::size_t bucket_floats, float* params,
                                float* grads, Activations& act, const Optimizer& opt, OptimizerState& state,
                                comm::Communicator& comm);

// ---- step 11: gradient accumulation -------------------------------------------------------

/// The flat step of step 8 with this rank's shard split into `micro_batches` micro-batches
/// (the lab-10 partition of the shard's rows): forward and backward of each micro-batch in
/// turn, the gradients accumulated locally (BackwardOptions::accumulate), and one all-reduce
/// after the last. act has room for the largest micro-batch only.
cudaError_t accumulate_train_step(const Mlp& m, const Batch& global, int micro_batches, float* params, float* grads,
                                  Activations& act, const Optimizer& opt, OptimizerState& state,
                                  comm::Communicator& comm);

// ---- step 12: ZeRO-1, the optimizer state sharded over the ranks -----------------------------

/// The data-parallel step with the optimizer state of this rank's shard of the flat buffer
/// only: chunk lab10::chunk_of(parameter_count(), n, rank). Reduce-scatter the gradients
/// (lab 10's ring_reduce_scatter: this rank ends with the sum of its chunk), one optimizer step
/// of its chunk of the parameters with `shard` (m and v hold that chunk's count floats; t
/// counts steps), then all-gather the parameters (ring_allgather) so every rank holds all of
/// them. On return grads holds the summed gradient of this rank's chunk (elsewhere: scratch).
cudaError_t zero1_train_step(const Mlp& m, const Batch& global, float* params, float* grads, Activations& act,
                             const Optimizer& opt, OptimizerState& shard, comm::Communicator& comm);

// ---- step 13: tensor parallelism, a Megatron-style MLP block -----------------------------------

/// A run of `count` indices from `offset`: lab 10's partition of `total` over n ranks (chunk r
/// holds total/n, plus one when r < total % n).
struct Range {
  int offset = 0, count = 0;
};
inline Range partition(int total, int n, int r) {
  const int base = total / n, extra = total % n;
  return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

/// The two-layer block y = relu(x A + a) B + b (x: rows x in, A: in x hidden, B: hidden x out)
/// split over n ranks by its hidden units, as Megatron-LM splits a transformer's MLP: A is
/// column-parallel, B row-parallel. Rank r holds the hidden units partition(hidden, n, r)
/// (hidden >= n, so none is empty): those columns of A and entries of a, those rows of B, and
/// all of b (the same on every rank). Its parameters are the flat buffer of the two-layer model
/// local(n, r) = {in, its hidden units, out}: W0 = its columns of A, b0 = its entries of a,
/// W1 = its rows of B, b1 = b; its gradients have the same layout.
struct TensorParallelMlp {
  int in = 1, hidden = 1, out = 1;
  Range hidden_units(int n, int rank) const { return partition(hidden, n, rank); }
  Mlp local(int n, int rank) const { return Mlp{{in, hidden_units(n, rank).count, out}, {}}; }
};

/// The forward pass of `rows` rows of x (the same rows on every rank), with act allocated for
/// local(n, rank): act.z[0] = x A_r + a_r and act.h[0] = relu(act.z[0]) (this rank's hidden
/// units), then y (rows x out, on every rank) = the sum over the ranks of h_r B_r, one
/// lab10::ring_allreduce, plus b, added once.
cudaError_t tp_forward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                       Activations& act, float* y, comm::Communicator& comm);

/// The backward pass after tp_forward of the same rows, given dy = dL/dy (rows x out, the same
/// on every rank): this rank's gradients, overwritten, in the layout of local(n, rank):
///     dz_r = (dy B_r^T) where act.z[0] > 0, else 0
///     dA_r = x^T dz_r,  da_r = column sums of dz_r,  dB_r = h_r^T dy,  db = column sums of dy
/// and dx = dL/dx (rows x in, on every rank) = the sum over the ranks of dz_r A_r^T, one
/// lab10::ring_allreduce. The scratch buffers of act are yours.
cudaError_t tp_backward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                        const float* dy, Activations& act, float* grads, float* dx, comm::Communicator& comm);

// ---- step 14: pipeline parallelism ------------------------------------------------------------

/// Stage `rank` of an n-stage pipeline (n <= m.layers()) holds layers partition(layers, n,
/// rank) of m. As a model of its own it has widths[first .. first + count]: its tensors are a
/// contiguous range of m's flat buffer, from m.weight(first).offset.
inline Range pipeline_layers(const Mlp& m, int n, int rank) { return partition(m.layers(), n, rank); }
inline Mlp pipeline_stage_model(const Mlp& m, int n, int rank) {
  const Range l = pipeline_layers(m, n, rank);
  return Mlp{std::vector<int>(m.widths.begin() + l.offset, m.widths.begin() + l.offset + l.count + 1), {}};
}

/// One micro-batch in flight on a stage: the activations of the stage model (z and h of its
/// layers) and three boundary buffers of up to act.max_rows rows.
struct PipelineSlot {
  Activations act;
  float* input = nullptr;        ///< rows x (stage inputs): the micro-batch's input to this stage
  float* input_grad = nullptr;   ///< rows x (stage inputs): dL/d(input), sent to the stage before
  float* output_grad = nullptr;  ///< rows x (stage outputs): dL/d(output), from the stage after
};

inline cudaError_t allocate_pipeline_slot(const Mlp& stage, int max_rows, PipelineSlot* s) {
  *s = PipelineSlot{};
  cudaError_t e = allocate_activations(stage, max_rows, &s->act);
  const std::size_t rows = static_cast<std::size_t>(std::max(max_rows, 1));
  auto alloc = [](float** p, std::size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n * sizeof(float)); };
  if (e == cudaSuccess) e = alloc(&s->input, rows * stage.inputs());
  if (e == cudaSuccess) e = alloc(&s->input_grad, rows * stage.inputs());
  if (e == cudaSuccess) e = alloc(&s->output_grad, rows * stage.classes());
  return e;
}

inline void free_pipeline_slot(PipelineSlot* s) {
  free_activations(&s->act);
  cudaFree(s->input);
  cudaFree(s->input_grad);
  cudaFree(s->output_grad);
  *s = PipelineSlot{};
}

/// The order in which a stage runs its micro-batches' forward (F) and backward (B) passes.
enum class Schedule {
  gpipe,        ///< every F, then every B (Huang et al., 2019): micro_batches slots per stage
  one_f_one_b,  ///< stage s runs n - s - 1 F, then alternates one F and one B, then the
                ///< remaining B (PipeDream-Flush, Narayanan et al., 2021): n - s slots
};

/// The slots stage `rank` of n is given, and may use, for `micro_batches` micro-batches.
inline int pipeline_slots(Schedule schedule, int micro_batches, int n, int rank) {
  return schedule == Schedule::gpipe ? micro_batches : std::min(micro_batches, n - rank);
}

/// One training step of the pipeline on the global batch `global` (the same on every rank),
/// cut into micro_batches micro-batches (micro-batch j: rows partition(global.rows,
/// micro_batches, j), possibly empty). For each micro-batch, stage s runs the forward pass of
/// its layers (stage 0 on x, the others on the output received from stage s - 1) and sends its
/// output (relu(z) of its last layer) to stage s + 1; the last stage's output is the logits,
/// whose loss gradient it takes with scale = 1/global.rows. The backward pass runs the other
/// way: stage s receives dL/d(its output) from stage s + 1 and sends dL/d(its input) to
/// stage s - 1. Point-to-point calls of comm only.
///
/// The stage's gradients are summed over the micro-batches, then state.t += 1 and one
/// optimizer step of its tensors. params, grads and the state hold the whole model's flat
/// layout; a stage reads and writes its own range only. `slots` are pipeline_slots(schedule,
/// micro_batches, n, rank) slots of the stage model, each for the largest micro-batch: a
/// micro-batch keeps its slot from its forward pass to its backward pass.
cudaError_t pipeline_train_step(Schedule schedule, const Mlp& m, const Batch& global, int micro_batches,
                                float* params, float* grads, std::vector<PipelineSlot>& slots, const Optimizer& opt,
                                OptimizerState& state, comm::Communicator& comm);

}  // namespace lab12
