// Known wrong: every rank sends with a blocking send before receiving. Small messages go
// out eagerly and pass; large ones wait for a receive that is never posted.
#define KNOWN_WRONG_REDUCE_SCATTER
#include "ring_parts.inc"

void lab10::ring_reduce_scatter(void* buf, std::size_t count, comm::DataType type, comm::RedOp op,
                                comm::Communicator& comm) {
  using namespace parts;
  const int n = comm.size(), r = comm.rank();
  const std::size_t e = comm::size_of(type);
  void* tmp = comm.scratch(chunk_of(count, n, 0).count * e);
  for (int s = 0; s < n - 1; ++s) {
    Chunk out = chunk_of(count, n, mod(r - s - 1, n)), in = chunk_of(count, n, mod(r - s - 2, n));
    comm.send(at(buf, out.offset, e), out.count * e, mod(r + 1, n), s);
    comm.recv(tmp, in.count * e, mod(r - 1, n), s);
    comm.reduce(at(buf, in.offset, e), tmp, in.count, type, op);
  }
}
