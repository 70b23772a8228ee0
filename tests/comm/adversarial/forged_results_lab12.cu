// Attack on lab 12 (the trainer's judge/worker split, device memory in the worker): see forge.h.
#define WB_FORGED_CHECKS                                                                                          \
  "Correctness.ForwardMatchesReference", "Correctness.GradientsMatchFiniteDifferences",                          \
      "Correctness.GradientsMatchReference", "Correctness.SgdStep", "Correctness.AdamWStep",                     \
      "Correctness.BatchShards", "Correctness.BroadcastParameters", "Correctness.PerTensorDdpMatchesSingleProcess", \
      "Correctness.FlatDdpMatchesSingleProcess", "Performance.FlatSendsOneAllreducePerStep",                     \
      "Correctness.BackwardReportsEachGradientOnce", "Correctness.BucketsFollowBackwardOrder",                    \
      "Correctness.BucketedDdpMatchesSingleProcess", "Performance.BucketAllreduceRunsInBackground",              \
      "Correctness.AccumulationMatchesSingleProcess", "Correctness.Zero1MatchesSingleProcess",                   \
      "Correctness.TensorParallelMatchesSingleRank", "Performance.TensorParallelCommunicatesOnceEachWay",        \
      "Correctness.PipelineGPipeMatchesSingleProcess", "Correctness.Pipeline1F1BMatchesSingleProcess",           \
      "Correctness.TrainingReachesAccuracy"
#include "forge.h"
#include "ring_allreduce.h"
#include "trainer.h"

namespace lab10 {
void ring_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
}  // namespace lab10

namespace lab12 {
cudaError_t mlp_forward(const Mlp&, const float*, const float*, int, Activations&) { return cudaSuccess; }
cudaError_t mlp_backward(const Mlp&, const float*, const float*, const int*, int, float, Activations&, float*, float*,
                         const BackwardOptions&) {
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
