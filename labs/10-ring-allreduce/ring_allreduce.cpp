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

}  // namespace lab10
