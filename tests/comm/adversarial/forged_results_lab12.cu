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
#include "lab12_stubs.h"

cudaError_t lab12::mlp_backward(const Mlp&, const float*, const float*, const int*, int, float, Activations&, float*,
                                float*, const BackwardOptions&) {
  return cudaSuccess;
}
