// Attack on lab 12's callback channel (wb_comm_remote.h, add_callback/call_back): mlp_backward
// calls the judge back with an id the checks never gave out, from the process that runs the
// lab's code (the worker's own call_back()). Must happen: every check that calls mlp_backward
// fails with "a malformed reply", nothing the judge holds is touched, and the other checks are
// still run (they fail: nothing else is implemented, but a no-op broadcast is right at one rank).
#include "ring_allreduce.h"
#include "trainer.h"
#include "wb_comm_remote.h"

namespace lab10 {
void ring_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
}  // namespace lab10

namespace lab12 {
cudaError_t mlp_forward(const Mlp&, const float*, const float*, int, Activations&) { return cudaSuccess; }
// The attack: calls the judge back with a function id the checks never passed, then, if it
// returns, with forged arguments through the real callback.
cudaError_t mlp_backward(const Mlp&, const float*, const float*, const int*, int, float, Activations&, float*, float*,
                         const BackwardOptions& options) {
  wb::remote::Writer w;
  w.put(0);
  wb::remote::comm_split::call_back(4242, w);
  if (options.on_gradient) options.on_gradient(-7);
  return cudaSuccess;
}
cudaError_t sgd_step(float*, const float*, float*, std::size_t, const Sgd&) { return cudaSuccess; }
cudaError_t adamw_step(float*, const float*, float*, float*, std::size_t, int, const AdamW&) { return cudaSuccess; }
Shard batch_shard(int, int, int) { return {}; }
cudaError_t broadcast_parameters(float*, std::size_t, comm::Communicator&) { return cudaSuccess; }
cudaError_t ddp_train_step(Reduction, const Mlp&, const Batch&, float*, float*, Activations&, const Optimizer&,
                           OptimizerState&, comm::Communicator&) {
  return cudaSuccess;
}
std::vector<Bucket> make_buckets(const Mlp&, std::size_t) { return {}; }
struct BucketReducer::Impl {
  std::vector<Bucket> buckets;
};
BucketReducer::BucketReducer(const Mlp&, float*, std::size_t, comm::Communicator&) : impl_(new Impl) {}
BucketReducer::~BucketReducer() = default;
const std::vector<Bucket>& BucketReducer::buckets() const { return impl_->buckets; }
cudaError_t BucketReducer::ready(int) { return cudaSuccess; }
cudaError_t BucketReducer::wait() { return cudaSuccess; }
cudaError_t bucketed_train_step(const Mlp&, const Batch&, std::size_t, float*, float*, Activations&, const Optimizer&,
                                OptimizerState&, comm::Communicator&) {
  return cudaSuccess;
}
cudaError_t accumulate_train_step(const Mlp&, const Batch&, int, float*, float*, Activations&, const Optimizer&,
                                  OptimizerState&, comm::Communicator&) {
  return cudaSuccess;
}
cudaError_t zero1_train_step(const Mlp&, const Batch&, float*, float*, Activations&, const Optimizer&,
                             OptimizerState&, comm::Communicator&) {
  return cudaSuccess;
}
cudaError_t tp_forward(const TensorParallelMlp&, const float*, const float*, int, Activations&, float*,
                       comm::Communicator&) {
  return cudaSuccess;
}
cudaError_t tp_backward(const TensorParallelMlp&, const float*, const float*, int, const float*, Activations&, float*,
                        float*, comm::Communicator&) {
  return cudaSuccess;
}
cudaError_t pipeline_train_step(Schedule, const Mlp&, const Batch&, int, float*, float*, std::vector<PipelineSlot>&,
                                const Optimizer&, OptimizerState&, comm::Communicator&) {
  return cudaSuccess;
}
}  // namespace lab12
