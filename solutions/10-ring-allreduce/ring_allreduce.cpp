// Lab 10: ring all-reduce. Reference solution.
//
// Ring layout: rank r sends to right = r+1 and receives from left = r-1 (mod n). At step s
// (0 <= s < 2(n-1)) rank r sends chunk (r-s-1) mod n and receives chunk (r-s-2) mod n.
// Steps 0..n-2 are the reduce-scatter (the received chunk is reduced into the local one; the
// chunk a rank receives at step s is the one it sends at step s+1, so after n-1 steps
// chunk r on rank r has passed through every rank). Steps n-1..2n-3 are the all-gather
// (the received chunk is final and is copied, then forwarded at the next step).
#include "ring_allreduce.h"

#include <algorithm>
#include <vector>

namespace lab10 {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

char* at(void* buf, std::size_t element, std::size_t elem_size) {
  return static_cast<char*>(buf) + element * elem_size;
}

// Tags only need to tell apart messages in flight at once between one pair of ranks;
// MPI keeps same-tag messages in order, so wrapping around is safe.
int tag_of(std::size_t transfer) { return static_cast<int>(transfer % (comm::Communicator::max_tag + 1)); }

}  // namespace

Chunk chunk_of(std::size_t count, int n, int c) {
  const std::size_t q = count / static_cast<std::size_t>(n), rem = count % static_cast<std::size_t>(n);
  const std::size_t uc = static_cast<std::size_t>(c);
  return {uc * q + std::min(uc, rem), q + (uc < rem ? 1 : 0)};
}

void ring_reduce_scatter(void* buf, std::size_t count, comm::DataType type, comm::RedOp op, comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  const std::size_t elem = comm::size_of(type);
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  void* incoming = comm.scratch(chunk_of(count, n, 0).count * elem);  // chunk 0 is the largest
  for (int s = 0; s < n - 1; ++s) {
    const Chunk out = chunk_of(count, n, mod(r - s - 1, n));
    const Chunk in = chunk_of(count, n, mod(r - s - 2, n));
    // Post the receive before sending: with blocking sends on both sides first, large
    // messages would wait for a receive that is never posted.
    std::vector<comm::Request> reqs;
    reqs.push_back(comm.irecv(incoming, in.count * elem, left, tag_of(s)));
    reqs.push_back(comm.isend(at(buf, out.offset, elem), out.count * elem, right, tag_of(s)));
    comm.wait_all(reqs);
    comm.reduce(at(buf, in.offset, elem), incoming, in.count, type, op);
  }
}

void ring_allgather(void* buf, std::size_t count, comm::DataType type, comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  if (n == 1) return;
  const std::size_t elem = comm::size_of(type);
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    const Chunk out = chunk_of(count, n, mod(r - s, n));
    const Chunk in = chunk_of(count, n, mod(r - s - 1, n));
    std::vector<comm::Request> reqs;
    reqs.push_back(comm.irecv(at(buf, in.offset, elem), in.count * elem, left, tag_of(s)));
    reqs.push_back(comm.isend(at(buf, out.offset, elem), out.count * elem, right, tag_of(s)));
    comm.wait_all(reqs);
  }
}

void ring_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                    comm::Communicator& comm) {
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * comm::size_of(type));
  ring_reduce_scatter(recvbuf, count, type, op, comm);
  ring_allgather(recvbuf, count, type, comm);
}

// One flat pipeline of T = 2(n-1) * nseg transfers, t = step * nseg + k (segment k of the
// step's chunk). Per neighbour, sends and receives are posted in increasing t, so the
// order of messages and tags agree on both sides.
// - Receives of reduce-scatter steps land in a ring of `window` scratch slots; receives up
//   to transfer t + window - 1 are posted while transfer t is being reduced, so
//   window - 1 = 2 segments are in flight during every reduction.
// - The send of transfer t + nseg (same segment, next step) is posted as soon as transfer t
//   is reduced (or, in the all-gather, received): steps overlap segment by segment.
void ring_allreduce_pipelined(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                              comm::RedOp op, comm::Communicator& comm, std::size_t segment_bytes) {
  const std::size_t elem = comm::size_of(type);
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * elem);
  const int n = comm.size(), r = comm.rank();
  if (n == 1 || count == 0) return;
  const int right = mod(r + 1, n), left = mod(r - 1, n);
  const std::size_t seg = std::max<std::size_t>(1, segment_bytes / elem);
  const std::size_t largest = chunk_of(count, n, 0).count;
  const std::size_t nseg = std::max<std::size_t>(1, (largest + seg - 1) / seg);
  const std::size_t steps = 2 * static_cast<std::size_t>(n - 1), total = steps * nseg;
  const std::size_t rs_total = static_cast<std::size_t>(n - 1) * nseg;  // reduce-scatter transfers
  constexpr std::size_t window = 3;
  void* slot[window];
  for (std::size_t i = 0; i < window; ++i) slot[i] = comm.scratch(seg * elem, static_cast<int>(i));

  // Segment k of chunk c: elements [k*seg, min((k+1)*seg, chunk.count)) of the chunk.
  auto segment = [&](int c, std::size_t k) {
    const Chunk ch = chunk_of(count, n, c);
    const std::size_t begin = std::min(k * seg, ch.count), end = std::min(begin + seg, ch.count);
    return Chunk{ch.offset + begin, end - begin};
  };
  auto step_of = [&](std::size_t t) { return static_cast<int>(t / nseg); };
  auto send_segment = [&](std::size_t t) { return segment(mod(r - step_of(t) - 1, n), t % nseg); };
  auto recv_segment = [&](std::size_t t) { return segment(mod(r - step_of(t) - 2, n), t % nseg); };

  std::vector<comm::Request> sends(total), recvs(total);
  auto post_send = [&](std::size_t t) {
    const Chunk c = send_segment(t);
    sends[t] = comm.isend(at(recvbuf, c.offset, elem), c.count * elem, right, tag_of(t));
  };
  // An all-gather receive overwrites the elements this rank sent at transfer t - rs_total
  // (same chunk and segment, n-1 steps earlier). That send is posted at the end of
  // iteration t - rs_total - nseg; the receive waits until it is posted and complete.
  auto may_post_recv = [&](std::size_t t, std::size_t iteration) {
    if (t < rs_total) return true;
    const std::size_t earlier = t - rs_total;
    return earlier < nseg || earlier - nseg < iteration;
  };
  auto post_recv = [&](std::size_t t) {
    const Chunk c = recv_segment(t);
    if (t < rs_total) {
      recvs[t] = comm.irecv(slot[t % window], c.count * elem, left, tag_of(t));
    } else {
      comm.wait(sends[t - rs_total]);
      recvs[t] = comm.irecv(at(recvbuf, c.offset, elem), c.count * elem, left, tag_of(t));
    }
  };

  for (std::size_t t = 0; t < nseg; ++t) post_send(t);
  std::size_t next_recv = 0;
  for (std::size_t t = 0; t < total; ++t) {
    // Keep up to `window` receives posted; slot t-1 was freed by the last reduction.
    while (next_recv < total && next_recv < t + window && may_post_recv(next_recv, t)) post_recv(next_recv++);
    comm.wait(recvs[t]);
    if (t < rs_total) {
      const Chunk c = recv_segment(t);
      comm.reduce(at(recvbuf, c.offset, elem), slot[t % window], c.count, type, op);
    }
    if (t + nseg < total) post_send(t + nseg);
  }
  comm.wait_all(sends);
}

// Pairwise exchange: at step s every rank sends to r+s and receives from r-s, so each step
// is a permutation (no rank is the target of two messages at once) and each block crosses
// the network once, at the price of n-1 latencies.
void alltoall_pairwise(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                       comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t block = count * comm::size_of(type), nn = static_cast<std::size_t>(n);
  char* recv = static_cast<char*>(recvbuf);
  const char* send = static_cast<const char*>(sendbuf);
  if (sendbuf != recvbuf) {
    comm.copy(recv + static_cast<std::size_t>(r) * block, send + static_cast<std::size_t>(r) * block, block);
  } else if (n > 1) {
    // In place, the receive of step s lands on block r-s, which this rank still sends at step
    // n-s when s < n-s: send from a copy of the whole buffer.
    void* stage = comm.scratch(nn * block);
    comm.copy(stage, sendbuf, nn * block);
    send = static_cast<const char*>(stage);
  }
  for (int s = 1; s < n; ++s) {
    const int to = mod(r + s, n), from = mod(r - s, n);
    std::vector<comm::Request> reqs;
    reqs.push_back(comm.irecv(recv + static_cast<std::size_t>(from) * block, block, from, tag_of(s)));
    reqs.push_back(comm.isend(send + static_cast<std::size_t>(to) * block, block, to, tag_of(s)));
    comm.wait_all(reqs);
  }
}

// Bruck: after the rotation, working block i on rank r is bound for rank r+i. Round k moves
// every block whose index has bit k set one hop of 2^k to the right, index unchanged, so
// after all rounds block i has travelled exactly i ranks: it sits on its destination, and
// came from rank r-i. ceil(log2 n) messages instead of n-1, but a block moves once per set
// bit of its index: about n/2 blocks per round instead of one.
void alltoall_bruck(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                    comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t block = count * comm::size_of(type), nn = static_cast<std::size_t>(n);
  const std::size_t ur = static_cast<std::size_t>(r);
  if (n == 1) {
    if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, block);
    return;
  }
  // The working buffer is scratch memory: in place, recvbuf is also the send buffer.
  char* work = static_cast<char*>(comm.scratch(nn * block, 0));
  const char* send = static_cast<const char*>(sendbuf);
  comm.copy(work, send + ur * block, (nn - ur) * block);  // blocks r..n-1 to 0..n-r-1
  if (r > 0) comm.copy(work + (nn - ur) * block, send, ur * block);
  // At most n/2 indices have a given bit set (i -> i - bit maps them to indices without it).
  char* out = static_cast<char*>(comm.scratch(nn / 2 * block, 1));
  char* in = static_cast<char*>(comm.scratch(nn / 2 * block, 2));
  // The indices with bit set are runs [start, start + bit) for start = bit, 3 bit, 5 bit, ...
  auto move_runs = [&](int bit, bool pack) {
    std::size_t packed = 0;
    for (int start = bit; start < n; start += 2 * bit) {
      const std::size_t len = static_cast<std::size_t>(std::min(bit, n - start));
      char* w = work + static_cast<std::size_t>(start) * block;
      if (pack) comm.copy(out + packed * block, w, len * block);
      else comm.copy(w, in + packed * block, len * block);
      packed += len;
    }
    return packed;
  };
  for (int bit = 1, k = 0; bit < n; bit <<= 1, ++k) {
    const std::size_t bytes = move_runs(bit, true) * block;
    std::vector<comm::Request> reqs;
    reqs.push_back(comm.irecv(in, bytes, mod(r - bit, n), tag_of(static_cast<std::size_t>(k))));
    reqs.push_back(comm.isend(out, bytes, mod(r + bit, n), tag_of(static_cast<std::size_t>(k))));
    comm.wait_all(reqs);
    move_runs(bit, false);
  }
  // Working block i came from rank r-i: it is block (r-i) mod n of recvbuf.
  char* recv = static_cast<char*>(recvbuf);
  for (int j = 0; j < n; ++j)
    comm.copy(recv + static_cast<std::size_t>(j) * block, work + static_cast<std::size_t>(mod(r - j, n)) * block,
              block);
}

double predicted_pairwise_alltoall_time(const AlphaBeta& m, int n, std::size_t block_bytes) {
  return (n - 1) * (m.alpha + static_cast<double>(block_bytes) * m.beta);
}

double predicted_bruck_alltoall_time(const AlphaBeta& m, int n, std::size_t block_bytes) {
  double t = 0;
  for (int bit = 1; bit < n; bit <<= 1) {
    int blocks = 0;  // indices in [0, n) with this bit set
    for (int i = 0; i < n; ++i) blocks += (i & bit) ? 1 : 0;
    t += m.alpha + blocks * static_cast<double>(block_bytes) * m.beta;
  }
  return t;
}

}  // namespace lab10
