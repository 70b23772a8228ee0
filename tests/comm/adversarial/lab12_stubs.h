// Every function of lab 12's interface (and the lab-10 function it names) doing nothing, but
// mlp_backward, which each attack on lab 12 defines itself (tests/comm/adversarial/*_lab12.cu).
#pragma once

#include "ring_allreduce.h"
#include "trainer.h"

namespace lab10 {
void ring_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
}  // namespace lab10

namespace lab12 {
cudaError_t mlp_forward(const Mlp&, const float*, const float*, int, Activations&) { return cudaSuccess; }
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
