// Known wrong: in the pipelined ring the sender numbers the segments of a step from the
// start of the chunk and the receiver from the end, so each segment's data lands in
// another segment's buffer (or, when the segments differ in size, is truncated).
#define KNOWN_WRONG_PIPELINED
#include "ring_parts.inc"

void lab10::ring_allreduce_pipelined(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                                     comm::RedOp op, comm::Communicator& comm, std::size_t segment_bytes) {
  using namespace parts;
  const std::size_t e = comm::size_of(type);
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * e);
  const int n = comm.size(), r = comm.rank();
  if (n == 1 || count == 0) return;
  const std::size_t seg = std::max<std::size_t>(1, segment_bytes / e);
  const std::size_t nseg = std::max<std::size_t>(1, (chunk_of(count, n, 0).count + seg - 1) / seg);
  char* tmp = static_cast<char*>(comm.scratch(nseg * seg * e));
  auto part = [&](Chunk c, std::size_t k) {
    std::size_t b = std::min(k * seg, c.count), end = std::min(b + seg, c.count);
    return Chunk{c.offset + b, end - b};
  };
  for (int s = 0; s < 2 * (n - 1); ++s) {
    const bool reducing = s < n - 1;
    Chunk out = chunk_of(count, n, mod(r - s - 1, n)), in = chunk_of(count, n, mod(r - s - 2, n));
    std::vector<comm::Request> q;
    for (std::size_t k = 0; k < nseg; ++k) {
      Chunk p = part(in, k);
      void* dst = reducing ? static_cast<void*>(tmp + k * seg * e) : at(recvbuf, p.offset, e);
      const int tag = static_cast<int>((static_cast<std::size_t>(s) * nseg + (nseg - 1 - k)) % 32768);  // wrong
      q.push_back(comm.irecv(dst, p.count * e, mod(r - 1, n), tag));
    }
    for (std::size_t k = 0; k < nseg; ++k) {
      Chunk p = part(out, k);
      const int tag = static_cast<int>((static_cast<std::size_t>(s) * nseg + k) % 32768);
      q.push_back(comm.isend(at(recvbuf, p.offset, e), p.count * e, mod(r + 1, n), tag));
    }
    comm.wait_all(q);
    if (reducing)
      for (std::size_t k = 0; k < nseg; ++k) {
        Chunk p = part(in, k);
        comm.reduce(at(recvbuf, p.offset, e), tmp + k * seg * e, p.count, type, op);
      }
  }
}
