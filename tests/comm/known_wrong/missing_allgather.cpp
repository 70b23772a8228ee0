// Known wrong: the all-reduce stops after the reduce-scatter.
#define KNOWN_WRONG_ALLREDUCE
#include "ring_parts.inc"

void lab10::ring_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                           comm::RedOp op, comm::Communicator& comm) {
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * comm::size_of(type));
  ring_reduce_scatter(recvbuf, count, type, op, comm);
}
