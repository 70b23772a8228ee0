// Lab 09: point-to-point. Your file: implement the TODOs in order, then run
//   ./workbook check 09
// The handout is labs/09-point-to-point/README.md; the interface is point_to_point.h
// (do not edit it).
#include "point_to_point.h"

#include <algorithm>

#include "comm/error.h"

namespace lab09 {

double pingpong(comm::Communicator& comm, void* buf, std::size_t bytes, int iters) {
  // TODO(step 1): rank 0 sends, rank 1 receives and sends back; time each round trip on
  // rank 0 with comm.wtime() and return the median half round trip.
  (void)comm, (void)buf, (void)bytes, (void)iters;
  COMM_NOT_IMPLEMENTED("pingpong");
}

AlphaBeta fit_alpha_beta(const std::vector<Sample>& samples) {
  // TODO(step 2): weighted least squares for t = alpha + beta * bytes with weights 1/t^2
  // (see point_to_point.h); throw (COMM_THROW) when fewer than two different sizes are
  // given or a time is not positive.
  (void)samples;
  COMM_NOT_IMPLEMENTED("fit_alpha_beta");
}

void naive_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                     comm::Communicator& comm) {
  // TODO(step 3): copy unless in place; rank 0 receives from ranks 1..n-1 and reduces with
  // comm.reduce (receive into comm.scratch memory), then sends the result to each of them.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)comm;
  COMM_NOT_IMPLEMENTED("naive_allreduce");
}

double predicted_naive_allreduce_time(const AlphaBeta& m, int n, std::size_t bytes) {
  // TODO(step 4): the formula in point_to_point.h.
  (void)m, (void)n, (void)bytes;
  COMM_NOT_IMPLEMENTED("predicted_naive_allreduce_time");
}

void linear_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                      comm::Communicator& comm) {
  // TODO(step 5): on the root, copy sendbuf to recvbuf unless in place, then send recvbuf to
  // every other rank (isend them all, then wait_all); the others receive into recvbuf.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("linear_broadcast");
}

void linear_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                   int root, comm::Communicator& comm) {
  // TODO(step 5): like the first half of naive_allreduce, with any root: the others send
  // sendbuf to the root; the root copies its own sendbuf to recvbuf (unless in place) and
  // reduces each incoming buffer (received into comm.scratch) into recvbuf, in rank order.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)op, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("linear_reduce");
}

void linear_gather(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                   comm::Communicator& comm) {
  // TODO(step 6): the root posts one irecv per other rank straight into its block of recvbuf
  // (block q starts at byte q * count * size_of(type)) and copies its own block unless in
  // place; the others send sendbuf to the root.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("linear_gather");
}

void linear_scatter(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                    comm::Communicator& comm) {
  // TODO(step 6): the mirror of linear_gather: the root isends block q of sendbuf to rank q
  // and copies its own block unless in place; the others receive into recvbuf.
  (void)sendbuf, (void)recvbuf, (void)count, (void)type, (void)root, (void)comm;
  COMM_NOT_IMPLEMENTED("linear_scatter");
}

}  // namespace lab09
