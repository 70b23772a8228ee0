// Attack on lab 10 (the collective labs' judge/worker split): see forge.h.
#define WB_FORGED_CHECKS                                                                             \
  "Correctness.ChunkOfPartition", "Correctness.RingAllreduceFloatSum", "Correctness.RingAllreduce64MiB", \
      "Correctness.PipelinedFloatSum", "Correctness.AlltoallPairwise", "Correctness.AlltoallBruck",      \
      "Performance.PipelinedRingBusbwVsMpiAllreduce"
#include "forge.h"
#include "ring_allreduce.h"

namespace lab10 {
Chunk chunk_of(std::size_t, int, int) { return {}; }
void ring_reduce_scatter(void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
void ring_allgather(void*, std::size_t, comm::DataType, comm::Communicator&) {}
void ring_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
void ring_allreduce_pipelined(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&,
                              std::size_t) {}
void alltoall_pairwise(const void*, void*, std::size_t, comm::DataType, comm::Communicator&) {}
void alltoall_bruck(const void*, void*, std::size_t, comm::DataType, comm::Communicator&) {}
double predicted_pairwise_alltoall_time(const AlphaBeta&, int, std::size_t) { return 0; }
double predicted_bruck_alltoall_time(const AlphaBeta&, int, std::size_t) { return 0; }
}  // namespace lab10
