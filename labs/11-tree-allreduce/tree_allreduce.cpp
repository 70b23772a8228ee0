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

void binomial_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                        comm::Communicator& comm) {
  // TODO(step 5): relative rank v = (rank - root + n) % n. Receive once from v - (highest bit
  // of v) unless you are the root, then send to v + mask for every larger mask with v + mask < n.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("binomial_broadcast");
}

void binomial_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                     int root, comm::Communicator& comm) {
  // TODO(step 5): the broadcast's tree upside down: receive from your children (largest mask
  // first), reduce into an accumulator (recvbuf on the root, comm.scratch() elsewhere), send
  // it to your parent. Never write recvbuf on a rank other than the root.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("binomial_reduce");
}

void binomial_gather(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                     comm::Communicator& comm) {
  // TODO(step 5): gather your subtree's blocks (relative ranks v .. v + size - 1) in relative
  // order, from children v + mask (mask < lowbit(v)), and send them to v - lowbit(v) in one
  // message. The root rotates relative order into rank order.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("binomial_gather");
}

void binomial_scatter(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                      comm::Communicator& comm) {
  // TODO(step 5): the mirror of binomial_gather: the root rotates its blocks into relative
  // order, every rank receives its subtree's blocks in one message and hands each child its
  // part (largest subtree first), keeping block 0 of its range.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("binomial_scatter");
}

void chain_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                     comm::Communicator& comm, std::size_t segment_bytes) {
  // TODO(step 6): segments of at most segment_bytes flow root -> root+1 -> ... Keep two
  // receives posted; forward segment k (isend) as soon as it has arrived.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("chain_broadcast");
}

void chain_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                  int root, comm::Communicator& comm, std::size_t segment_bytes) {
  // TODO(step 6): the chain reversed: receive partial segment k from your successor into a
  // scratch slot, reduce your own segment k into it, pass it to your predecessor; the root
  // reduces into recvbuf. Reuse a slot only once the send that read it has completed.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)root, (void)comm, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("chain_reduce");
}

double predicted_binomial_broadcast_time(const AlphaBeta& m, int n, std::size_t bytes) {
  // TODO(step 7)
  (void)m, (void)n, (void)bytes;
  COMM_NOT_IMPLEMENTED("predicted_binomial_broadcast_time");
}

double predicted_chain_broadcast_time(const AlphaBeta& m, int n, std::size_t bytes, std::size_t segment_bytes) {
  // TODO(step 7)
  (void)m, (void)n, (void)bytes, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("predicted_chain_broadcast_time");
}

}  // namespace lab11
