// Lab 12: a data-parallel trainer. Your file: implement the TODOs in order, then run
//   ./workbook check 12
// The handout is labs/12-data-parallel-trainer/README.md; the interface is trainer.h (do not
// edit it). Use your own kernels of earlier labs: sgemm() (gemm.h, lab 05), transpose_conflict_free()
// (transpose.h, lab 02), softmax_forward() (softmax_layernorm.h, lab 06), and your lab-10
// ring_allreduce() and chunk_of() (ring_allreduce.h) for the communication.
#include "trainer.h"

#include "comm/error.h"
#include "gemm.h"
#include "ring_allreduce.h"
#include "softmax_layernorm.h"
#include "transpose.h"

namespace lab12 {

cudaError_t mlp_forward(const Mlp& m, const float* params, const float* x, int rows, Activations& act) {
  // TODO(1): for each layer l, fill act.z[l] with the bias b_l in every row (a small kernel),
  // then add h_{l-1} W_l with sgemm(..., beta = 1); act.h[l] = relu(act.z[l]) for all layers
  // but the last. W_l and b_l are at m.weight(l).offset and m.bias(l).offset in params.
  (void)m, (void)params, (void)x, (void)rows, (void)act;
  return cudaErrorNotYetImplemented;
}

cudaError_t mlp_backward(const Mlp& m, const float* params, const float* x, const int* labels, int rows, float scale,
                         Activations& act, float* grads, float* loss_sum, const BackwardOptions& options) {
  // TODO(2): probs = softmax_forward(logits); *loss_sum = sum of -log probs[r][labels[r]];
  // dz = scale (probs - onehot). Then from the last layer down: dW = h^T dz (transpose h into
  // a scratch buffer, then sgemm), db = column sums of dz, and unless l == 0,
  // dh = dz W^T (transpose W) and dz of layer l-1 = dh where z_{l-1} > 0.
  // Later steps add to it: skip the tensors m.trains() says are frozen (and the layers below
  // the lowest trained one), call options.on_gradient(t) for each trained tensor once its
  // gradient is complete (TODO(9)), and add instead of overwrite when options.accumulate
  // (TODO(11)).
  (void)m, (void)params, (void)x, (void)labels, (void)rows, (void)scale, (void)act, (void)grads, (void)loss_sum;
  (void)options;
  return cudaErrorNotYetImplemented;
}

cudaError_t sgd_step(float* params, const float* grads, float* velocity, std::size_t n, const Sgd& opt) {
  // TODO(3): one thread per element: the formula in trainer.h.
  (void)params, (void)grads, (void)velocity, (void)n, (void)opt;
  return cudaErrorNotYetImplemented;
}

cudaError_t adamw_step(float* params, const float* grads, float* m, float* v, std::size_t n, int t, const AdamW& opt) {
  // TODO(4): one thread per element; compute the bias corrections 1 - beta^t once on the host.
  (void)params, (void)grads, (void)m, (void)v, (void)n, (void)t, (void)opt;
  return cudaErrorNotYetImplemented;
}

Shard batch_shard(int global_rows, int n, int rank) {
  // TODO(5): the lab-10 partition (lab10::chunk_of computes it).
  (void)global_rows, (void)n, (void)rank;
  COMM_NOT_IMPLEMENTED("batch_shard");
}

cudaError_t broadcast_parameters(float* params, std::size_t count, comm::Communicator& comm) {
  // TODO(6): rank 0's params to every rank with comm.send / comm.recv (a binomial tree takes
  // ceil(log2 n) rounds; a chain from rank 0 takes n - 1).
  (void)params, (void)count, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t ddp_train_step(Reduction reduction, const Mlp& m, const Batch& global, float* params, float* grads,
                           Activations& act, const Optimizer& opt, OptimizerState& state, comm::Communicator& comm) {
  // TODO(7): this rank's shard (batch_shard); mlp_forward and mlp_backward on it with
  // scale = 1 / global.rows; the gradients summed over the ranks with lab10::ring_allreduce,
  // per tensor (m.tensors()) or over the whole buffer (TODO(8): Reduction::flat); then
  // state.t += 1 and the optimizer step.
  (void)reduction, (void)m, (void)global, (void)params, (void)grads, (void)act, (void)opt, (void)state, (void)comm;
  return cudaErrorNotYetImplemented;
}

std::vector<Bucket> make_buckets(const Mlp& m, std::size_t bucket_floats) {
  // TODO(9): walk m.tensors() from the last to the first; skip frozen tensors (they close the
  // open bucket), add trained ones to the open bucket, close it once count >= bucket_floats.
  (void)m, (void)bucket_floats;
  COMM_NOT_IMPLEMENTED("make_buckets");
}

// TODO(9): your communication machinery: for instance a std::thread that takes ready buckets
// from a queue (std::mutex + std::condition_variable) and runs lab10::ring_allreduce on each.
struct BucketReducer::Impl {
  std::vector<Bucket> buckets;
};

BucketReducer::BucketReducer(const Mlp& m, float* grads, std::size_t bucket_floats, comm::Communicator& comm)
    : impl_(new Impl) {
  (void)m, (void)grads, (void)bucket_floats, (void)comm;
}

BucketReducer::~BucketReducer() = default;

const std::vector<Bucket>& BucketReducer::buckets() const { return impl_->buckets; }

cudaError_t BucketReducer::ready(int tensor) {
  // TODO(9): count the tensor off its bucket; when the bucket is complete, hand it to the
  // communication thread and return at once.
  (void)tensor;
  return cudaErrorNotYetImplemented;
}

cudaError_t BucketReducer::wait() {
  // TODO(9): block until every bucket's all-reduce has finished.
  return cudaErrorNotYetImplemented;
}

cudaError_t bucketed_train_step(const Mlp& m, const Batch& global, std::size_t bucket_floats, float* params,
                                float* grads, Activations& act, const Optimizer& opt, OptimizerState& state,
                                comm::Communicator& comm) {
  // TODO(10): a BucketReducer; mlp_forward, then mlp_backward with on_gradient = reducer.ready;
  // reducer.wait(); state.t += 1 and the optimizer step bucket by bucket.
  (void)m, (void)global, (void)bucket_floats, (void)params, (void)grads, (void)act, (void)opt, (void)state, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t accumulate_train_step(const Mlp& m, const Batch& global, int micro_batches, float* params, float* grads,
                                  Activations& act, const Optimizer& opt, OptimizerState& state,
                                  comm::Communicator& comm) {
  // TODO(11): micro-batch j of this rank's shard is lab10::chunk_of(shard rows, micro_batches, j);
  // forward and backward of each (accumulate from the second on), then one ring_allreduce.
  (void)m, (void)global, (void)micro_batches, (void)params, (void)grads, (void)act, (void)opt, (void)state, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t zero1_train_step(const Mlp& m, const Batch& global, float* params, float* grads, Activations& act,
                             const Optimizer& opt, OptimizerState& shard, comm::Communicator& comm) {
  // TODO(12): forward and backward as in TODO(7); lab10::ring_reduce_scatter of the gradients;
  // the optimizer step of chunk lab10::chunk_of(parameter_count(), n, rank) with `shard`;
  // lab10::ring_allgather of the parameters.
  (void)m, (void)global, (void)params, (void)grads, (void)act, (void)opt, (void)shard, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t tp_forward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                       Activations& act, float* y, comm::Communicator& comm) {
  // TODO(13): block.local(n, rank) is this rank's two-layer model (its hidden units). z = x A_r +
  // a_r and h = relu(z) into act.z[0] and act.h[0] (as mlp_forward's first layer); y = h B_r
  // (sgemm, beta = 0), then lab10::ring_allreduce(y) over rows * out floats, then add b (once).
  (void)block, (void)params, (void)x, (void)rows, (void)act, (void)y, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t tp_backward(const TensorParallelMlp& block, const float* params, const float* x, int rows,
                        const float* dy, Activations& act, float* grads, float* dx, comm::Communicator& comm) {
  // TODO(13): db = column sums of dy, dB_r = h^T dy, dz = dy B_r^T where z > 0, dA_r = x^T dz,
  // da_r = column sums of dz, then dx = dz A_r^T summed over the ranks (lab10::ring_allreduce).
  (void)block, (void)params, (void)x, (void)rows, (void)dy, (void)act, (void)grads, (void)dx, (void)comm;
  return cudaErrorNotYetImplemented;
}

cudaError_t pipeline_train_step(Schedule schedule, const Mlp& m, const Batch& global, int micro_batches,
                                float* params, float* grads, std::vector<PipelineSlot>& slots, const Optimizer& opt,
                                OptimizerState& state, comm::Communicator& comm) {
  // TODO(14): this stage's model is pipeline_stage_model(m, n, rank), its tensors from
  // m.weight(pipeline_layers(m, n, rank).offset).offset. Zero its gradients; list its forward
  // (F) and backward (B) passes in the schedule's order; micro-batch j uses slot j % slots.size().
  // F: the input (x's rows, or comm.recv from rank - 1), mlp_forward, and unless last,
  // relu(z_last) sent to rank + 1. B: dL/dz_last (the loss gradient with scale 1/global.rows on
  // the last stage, else the received dL/d(output) through the ReLU), the layers' gradients
  // added, and unless first, dL/d(input) sent to rank - 1. Send with comm.isend (1F1B deadlocks
  // with blocking sends); then state.t += 1 and the optimizer step of the stage's range.
  (void)schedule, (void)m, (void)global, (void)micro_batches, (void)params, (void)grads, (void)slots, (void)opt;
  (void)state, (void)comm;
  return cudaErrorNotYetImplemented;
}

}  // namespace lab12
