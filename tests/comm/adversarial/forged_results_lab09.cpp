// Attack on lab 09 (the collective labs' judge/worker split): see forge.h.
#define WB_FORGED_CHECKS                                                                                   \
  "Correctness.PingPongMovesTheBytesBackAndForth", "Correctness.FitAlphaBetaRecoversAKnownLine",                  \
      "Correctness.FitAlphaBetaRejectsAnUndeterminedLine", "Correctness.NaiveAllreduceFloatSum",                  \
      "Correctness.LinearBroadcast", "Correctness.LinearReduce", "Correctness.LinearGather",                      \
      "Correctness.LinearScatter", "Correctness.LinearCollectivesTalkToTheRootOnly"
#include "forge.h"
#include "point_to_point.h"

namespace lab09 {
double pingpong(comm::Communicator&, void*, std::size_t, int) { return 1e-6; }
AlphaBeta fit_alpha_beta(const std::vector<Sample>&) { return {}; }
void naive_allreduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, comm::Communicator&) {}
double predicted_naive_allreduce_time(const AlphaBeta&, int, std::size_t) { return 0; }
void linear_broadcast(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
void linear_reduce(const void*, void*, std::size_t, comm::DataType, comm::RedOp, int, comm::Communicator&) {}
void linear_gather(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
void linear_scatter(const void*, void*, std::size_t, comm::DataType, int, comm::Communicator&) {}
}  // namespace lab09
