// Attack on lab 11 (the collective labs' judge/worker split): see forge.h.
#define WB_FORGED_CHECKS                                                                                  \
  "Correctness.BinaryTreeLayout", "Correctness.SecondTreeLayout", "Correctness.DoubleTree64MiB",             \
      "Correctness.BinomialBroadcast", "Correctness.ChainReduce", "Correctness.AlgorithmSelectorFollowsTheModel", \
      "Performance.DoubleTreeSmallMessageLatencyVsMpiAllreduce"
#include "forge.h"
#include "tree_allreduce.h"

namespace lab11 {
TreeLinks binary_tree(int, int) { return {}; }
TreeLinks second_tree(int, int) { return {}; }
void tree_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&, std::size_t) {}
void double_tree_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&,
                           std::size_t) {}
double predicted_ring_time(const AlphaBeta&, int, std::size_t) { return 0; }
double predicted_tree_time(const AlphaBeta&, int, std::size_t) { return 0; }
double predicted_crossover_bytes(const AlphaBeta&, int) { return 0; }
Algorithm select_algorithm(const AlphaBeta&, int, std::size_t) { return Algorithm::ring; }
void binomial_broadcast(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
void binomial_reduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, int, comm::Communicator&) {}
void binomial_gather(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
void binomial_scatter(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
void chain_broadcast(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&, std::size_t) {}
void chain_reduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, int, comm::Communicator&,
                  std::size_t) {}
double predicted_binomial_broadcast_time(const AlphaBeta&, int, std::size_t) { return 0; }
double predicted_chain_broadcast_time(const AlphaBeta&, int, std::size_t, std::size_t) { return 0; }
}  // namespace lab11
