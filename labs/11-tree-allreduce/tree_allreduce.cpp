// Lab 11: tree all-reduce. Your file: implement the TODOs in order, then run
//   ./workbook check 11
// The handout is labs/11-tree-allreduce/README.md; the interface is tree_allreduce.h
// (do not edit it).
#include "tree_allreduce.h"

#include <algorithm>
#include <vector>

#include "comm/error.h"

namespace lab11 {

TreeLinks binary_tree(int n, int rank) {
  // TODO(step 1): the layout described in tree_allreduce.h.
  (void)n, (void)rank;
  COMM_NOT_IMPLEMENTED("binary_tree");
}

TreeLinks second_tree(int n, int rank) {
  // TODO(step 3): shift (odd n) or mirror (even n) binary_tree.
  (void)n, (void)rank;
  COMM_NOT_IMPLEMENTED("second_tree");
}

void tree_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                    comm::Communicator& comm, std::size_t segment_bytes) {
  // TODO(step 2): pipelined reduce up binary_tree, then pipelined broadcast down. Keep two
  // receives per child posted; send each reduced segment to the parent at once (isend).
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)comm, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("tree_allreduce");
}

void double_tree_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                           comm::RedOp op, comm::Communicator& comm, std::size_t segment_bytes) {
  // TODO(step 3): first half over binary_tree, second half over second_tree, interleaved.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)comm, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("double_tree_allreduce");
}

double predicted_ring_time(const AlphaBeta& m, int n, std::size_t bytes) {
  // TODO(step 4)
  (void)m, (void)n, (void)bytes;
  COMM_NOT_IMPLEMENTED("predicted_ring_time");
}

double predicted_tree_time(const AlphaBeta& m, int n, std::size_t bytes) {
  // TODO(step 4)
  (void)m, (void)n, (void)bytes;
  COMM_NOT_IMPLEMENTED("predicted_tree_time");
}

double predicted_crossover_bytes(const AlphaBeta& m, int n) {
  // TODO(step 4)
  (void)m, (void)n;
  COMM_NOT_IMPLEMENTED("predicted_crossover_bytes");
}

Algorithm select_algorithm(const AlphaBeta& m, int n, std::size_t bytes) {
  // TODO(step 4)
  (void)m, (void)n, (void)bytes;
  COMM_NOT_IMPLEMENTED("select_algorithm");
}

}  // namespace lab11
