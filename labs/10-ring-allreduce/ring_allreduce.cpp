// Lab 10: ring all-reduce. Your file: implement the TODOs in order, then run
//   ./workbook check 10
// The handout is labs/10-ring-allreduce/README.md; the interface is ring_allreduce.h
// (do not edit it). Use only comm.send/recv/isend/irecv/wait/wait_all, comm.reduce,
// comm.copy and comm.scratch: the checker counts what your code sends.
#include "ring_allreduce.h"

#include <algorithm>
#include <vector>

#include "comm/error.h"

namespace lab10 {

Chunk chunk_of(std::size_t count, int n, int c) {
  // TODO(step 1): return chunk c of the partition described in ring_allreduce.h.
  (void)count, (void)n, (void)c;
  COMM_NOT_IMPLEMENTED("chunk_of");
}

void ring_reduce_scatter(void* buf, std::size_t count, comm::DataType type, comm::RedOp op, comm::Communicator& comm) {
  // TODO(step 2): n-1 steps; at step s rank r sends chunk (r-s-1) mod n to its right
  // neighbour and receives chunk (r-s-2) mod n from its left neighbour into scratch memory,
  // then reduces it into its own copy with comm.reduce(). Post the receive (irecv) before
  // sending, or two ranks that both send first may wait for each other forever.
  (void)buf, (void)count, (void)type, (void)op, (void)comm;
  COMM_NOT_IMPLEMENTED("ring_reduce_scatter");
}

void ring_allgather(void* buf, std::size_t count, comm::DataType type, comm::Communicator& comm) {
  // TODO(step 3): n-1 steps; at step s rank r sends chunk (r-s) mod n and receives chunk
  // (r-s-1) mod n straight into buf.
  (void)buf, (void)count, (void)type, (void)comm;
  COMM_NOT_IMPLEMENTED("ring_allgather");
}

void ring_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                    comm::Communicator& comm) {
  // TODO(step 4): copy sendbuf to recvbuf unless in place, then reduce-scatter and
  // all-gather.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)comm;
  COMM_NOT_IMPLEMENTED("ring_allreduce");
}

void ring_allreduce_pipelined(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                              comm::RedOp op, comm::Communicator& comm, std::size_t segment_bytes) {
  // TODO(step 5): cut each chunk into segments of at most segment_bytes; keep at least two
  // segment receives posted while you reduce the previous one, and forward each reduced
  // segment to the right as soon as it is ready. See the handout for a schedule.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)comm, (void)segment_bytes;
  COMM_NOT_IMPLEMENTED("ring_allreduce_pipelined");
}

void alltoall_pairwise(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                       comm::Communicator& comm) {
  // TODO(step 6): copy block r of sendbuf to block r of recvbuf (unless in place); then for
  // s = 1..n-1 irecv block (r-s) mod n from rank (r-s) mod n and send block (r+s) mod n to
  // rank (r+s) mod n, and wait for both. In place, the receive of step s overwrites the block
  // you still have to send at step n-s: first copy the send buffer to comm.scratch memory and
  // send from there.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)comm;
  COMM_NOT_IMPLEMENTED("alltoall_pairwise");
}

void alltoall_bruck(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                    comm::Communicator& comm) {
  // TODO(step 7): in a comm.scratch working buffer, block i = send block (r+i) mod n. For
  // bit = 1, 2, 4, ... < n: pack the working blocks whose index has that bit set into a
  // second scratch buffer, send them as one message to rank (r+bit) mod n, receive the same
  // number of blocks from rank (r-bit) mod n and unpack them to the same indices. At the end
  // block j of recvbuf is working block (r-j) mod n.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)comm;
  COMM_NOT_IMPLEMENTED("alltoall_bruck");
}

double predicted_pairwise_alltoall_time(const AlphaBeta& m, int n, std::size_t block_bytes) {
  // TODO(step 8): the formula in ring_allreduce.h.
  (void)m, (void)n, (void)block_bytes;
  COMM_NOT_IMPLEMENTED("predicted_pairwise_alltoall_time");
}

double predicted_bruck_alltoall_time(const AlphaBeta& m, int n, std::size_t block_bytes) {
  // TODO(step 8): the formula in ring_allreduce.h: one term per round, B_k blocks in round k.
  (void)m, (void)n, (void)block_bytes;
  COMM_NOT_IMPLEMENTED("predicted_bruck_alltoall_time");
}

}  // namespace lab10
