// Lab 11: tree all-reduce. Reference solution.
//
// Protocol. A tree job covers a range of the buffer, cut into segments. Up phase: a rank
// keeps `window` receives per child posted, reduces each child's segment k into its own as
// it arrives and sends segment k to its parent right away (isend), so segment k climbs one
// level while k+1 is being reduced below. Down phase: a non-root rank receives segment k
// from its parent into place and forwards it to its children. Dependencies only point up in
// the up phase and down in the down phase, so two trees can run interleaved without
// deadlock (the double binary tree).
//
// Tags: tree t (0 or 1), phase p (0 up, 1 down), segment k -> t*16384 + p*8192 + k % 8192.
#include "tree_allreduce.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lab11 {
namespace {

char* at(void* buf, std::size_t element, std::size_t elem_size) {
  return static_cast<char*>(buf) + element * elem_size;
}

int tag_of(int tree, int phase, std::size_t k) { return tree * 16384 + phase * 8192 + static_cast<int>(k % 8192); }

int ceil_log2(int n) {
  int d = 0;
  while ((1 << d) < n) ++d;
  return d;
}

constexpr std::size_t window = 2;

struct TreeJob {
  TreeLinks links;
  int id = 0;
  std::size_t offset = 0, count = 0;  // elements of the buffer this tree reduces
  std::size_t nseg = 0;
  int children[2] = {-1, -1};
  int nchildren = 0;
  char* slots = nullptr;  // [child][window] segments
  std::vector<comm::Request> up_recv[2], up_send, down_recv, down_send[2];
};

struct Plan {
  std::size_t elem, seg;
  void* buf;
  comm::DataType type;
  comm::RedOp op;
};

comm::Request& slot_req(TreeJob& j, int c, std::size_t k) { return j.up_recv[c][k]; }

std::size_t seg_count(const TreeJob& j, const Plan& p, std::size_t k) {
  return std::min(p.seg, j.count - k * p.seg);
}

void* slot(TreeJob& j, const Plan& p, int c, std::size_t k) {
  return j.slots + ((static_cast<std::size_t>(c) * window) + k % window) * p.seg * p.elem;
}

void post_child_recv(TreeJob& j, const Plan& p, comm::Communicator& comm, int c, std::size_t k) {
  if (k < j.nseg)
    slot_req(j, c, k) = comm.irecv(slot(j, p, c, k), seg_count(j, p, k) * p.elem, j.children[c], tag_of(j.id, 0, k));
}

void run_trees(std::vector<TreeJob>& jobs, const Plan& p, comm::Communicator& comm) {
  std::size_t nseg = 0;
  for (auto& j : jobs) {
    j.nseg = (j.count + p.seg - 1) / p.seg;
    nseg = std::max(nseg, j.nseg);
    for (int c = 0; c < 2; ++c) j.up_recv[c].resize(j.nseg);
    for (int c = 0; c < 2; ++c) j.down_send[c].resize(j.nseg);
    j.up_send.resize(j.nseg);
    j.down_recv.resize(j.nseg);
    for (std::size_t k = 0; k < window; ++k)
      for (int c = 0; c < j.nchildren; ++c) post_child_recv(j, p, comm, c, k);
  }
  // Up: reduce children's segments, pass each up as soon as it is complete.
  for (std::size_t k = 0; k < nseg; ++k) {
    for (auto& j : jobs) {
      if (k >= j.nseg) continue;
      char* mine = at(p.buf, j.offset + k * p.seg, p.elem);
      const std::size_t n = seg_count(j, p, k);
      for (int c = 0; c < j.nchildren; ++c) {
        comm.wait(slot_req(j, c, k));
        comm.reduce(mine, slot(j, p, c, k), n, p.type, p.op);
        post_child_recv(j, p, comm, c, k + window);  // the slot of k is free again
      }
      if (j.links.parent >= 0) j.up_send[k] = comm.isend(mine, n * p.elem, j.links.parent, tag_of(j.id, 0, k));
    }
  }
  // Down: the root's result flows back; a segment is received in place once its up-send
  // has completed, then forwarded to the children.
  for (auto& j : jobs) {
    if (j.links.parent < 0) continue;
    for (std::size_t k = 0; k < std::min(window, j.nseg); ++k) {
      comm.wait(j.up_send[k]);
      j.down_recv[k] = comm.irecv(at(p.buf, j.offset + k * p.seg, p.elem), seg_count(j, p, k) * p.elem,
                                  j.links.parent, tag_of(j.id, 1, k));
    }
  }
  for (std::size_t k = 0; k < nseg; ++k) {
    for (auto& j : jobs) {
      if (k >= j.nseg) continue;
      char* mine = at(p.buf, j.offset + k * p.seg, p.elem);
      const std::size_t n = seg_count(j, p, k);
      if (j.links.parent >= 0) {
        comm.wait(j.down_recv[k]);
        const std::size_t next = k + window;
        if (next < j.nseg) {
          comm.wait(j.up_send[next]);
          j.down_recv[next] = comm.irecv(at(p.buf, j.offset + next * p.seg, p.elem), seg_count(j, p, next) * p.elem,
                                         j.links.parent, tag_of(j.id, 1, next));
        }
      }
      for (int c = 0; c < j.nchildren; ++c)
        j.down_send[c][k] = comm.isend(mine, n * p.elem, j.children[c], tag_of(j.id, 1, k));
    }
  }
  for (auto& j : jobs) {
    comm.wait_all(j.up_send);
    for (int c = 0; c < 2; ++c) comm.wait_all(j.down_send[c]);
  }
}

// One segment: no pipeline to fill, so the lean blocking schedule is the fastest (each
// message costs one latency; bookkeeping of windows and requests would only add to it).
// Blocking calls are safe here: a parent receives from each child in turn before sending
// up, and a child has finished sending up before it waits for the parent's result.
void small_allreduce(const TreeLinks& links, void* buf, std::size_t count, comm::DataType type, comm::RedOp op,
                     comm::Communicator& comm) {
  const std::size_t bytes = count * comm::size_of(type);
  void* incoming = comm.scratch(bytes);
  for (int c : {links.child0, links.child1}) {
    if (c < 0) continue;
    comm.recv(incoming, bytes, c, tag_of(0, 0, 0));
    comm.reduce(buf, incoming, count, type, op);
  }
  if (links.parent >= 0) {
    comm.send(buf, bytes, links.parent, tag_of(0, 0, 0));
    comm.recv(buf, bytes, links.parent, tag_of(0, 1, 0));
  }
  for (int c : {links.child0, links.child1})
    if (c >= 0) comm.send(buf, bytes, c, tag_of(0, 1, 0));
}

void allreduce_over(const std::vector<std::pair<TreeLinks, std::pair<std::size_t, std::size_t>>>& trees,
                    const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                    comm::Communicator& comm, std::size_t segment_bytes) {
  const std::size_t elem = comm::size_of(type);
  if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * elem);
  if (comm.size() == 1 || count == 0) return;
  if (trees.size() == 1 && count * elem <= segment_bytes)
    return small_allreduce(trees[0].first, recvbuf, count, type, op, comm);
  Plan p{elem, std::max<std::size_t>(1, segment_bytes / elem), recvbuf, type, op};
  std::vector<TreeJob> jobs;
  for (std::size_t t = 0; t < trees.size(); ++t) {
    TreeJob j;
    j.links = trees[t].first;
    j.id = static_cast<int>(t);
    j.offset = trees[t].second.first;
    j.count = trees[t].second.second;
    if (j.count == 0) continue;
    for (int c : {j.links.child0, j.links.child1})
      if (c >= 0) j.children[j.nchildren++] = c;
    jobs.push_back(std::move(j));
  }
  char* scratch = static_cast<char*>(comm.scratch(jobs.size() * 2 * window * p.seg * elem));
  for (std::size_t t = 0; t < jobs.size(); ++t) jobs[t].slots = scratch + t * 2 * window * p.seg * elem;
  run_trees(jobs, p, comm);
}

}  // namespace

TreeLinks binary_tree(int n, int rank) {
  TreeLinks l;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    l.child1 = n > 1 ? bit >> 1 : -1;
    return l;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  l.parent = up;
  int lowbit = bit >> 1;
  l.child0 = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= n) {
    lowbit >>= 1;
    down1 = lowbit == 0 ? -1 : rank + lowbit;
  }
  l.child1 = down1;
  return l;
}

TreeLinks second_tree(int n, int rank) {
  TreeLinks l;
  auto map = [&](int q, bool shift) { return q < 0 ? -1 : shift ? (q + 1) % n : n - 1 - q; };
  const bool shift = n % 2 == 1;
  TreeLinks t = binary_tree(n, shift ? (rank - 1 + n) % n : n - 1 - rank);
  l.parent = map(t.parent, shift);
  l.child0 = map(t.child0, shift);
  l.child1 = map(t.child1, shift);
  return l;
}

void tree_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                    comm::Communicator& comm, std::size_t segment_bytes) {
  allreduce_over({{binary_tree(comm.size(), comm.rank()), {0, count}}}, sendbuf, recvbuf, count, type, op, comm,
                 segment_bytes);
}

void double_tree_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type,
                           comm::RedOp op, comm::Communicator& comm, std::size_t segment_bytes) {
  if (count * comm::size_of(type) <= segment_bytes) {
    // A message that fits one segment gains nothing from two trees: halving it would
    // double the number of messages, and latency is all that counts at this size.
    return tree_allreduce(sendbuf, recvbuf, count, type, op, comm, segment_bytes);
  }
  const std::size_t half = count / 2;
  allreduce_over({{binary_tree(comm.size(), comm.rank()), {0, half}},
                  {second_tree(comm.size(), comm.rank()), {half, count - half}}},
                 sendbuf, recvbuf, count, type, op, comm, segment_bytes);
}

double predicted_ring_time(const AlphaBeta& m, int n, std::size_t bytes) {
  return 2.0 * (n - 1) * m.alpha + 2.0 * (n - 1) / n * static_cast<double>(bytes) * m.beta;
}

double predicted_tree_time(const AlphaBeta& m, int n, std::size_t bytes) {
  return 2.0 * ceil_log2(n) * m.alpha + 2.0 * static_cast<double>(bytes) * m.beta;
}

double predicted_crossover_bytes(const AlphaBeta& m, int n) {
  const double x = n * ((n - 1) - ceil_log2(n)) * m.alpha / m.beta;
  return x > 0 ? x : 0;
}

Algorithm select_algorithm(const AlphaBeta& m, int n, std::size_t bytes) {
  return predicted_tree_time(m, n, bytes) <= predicted_ring_time(m, n, bytes) ? Algorithm::tree : Algorithm::ring;
}

// ---- Rooted collectives ----------------------------------------------------------------------
//
// Binomial trees work in relative ranks v = (rank - root + n) % n, so the root is 0 whatever
// its rank. Broadcast and reduce use the tree of recursive doubling (v > 0 hangs below
// v - msb(v)); gather and scatter use the tree whose subtrees are contiguous ranges of
// relative ranks (v hangs below v - lowbit(v)), so that a subtree's blocks travel as one
// message. Both have depth ceil(log2 n), and the root has ceil(log2 n) children.
//
// Chains put rank root + p (mod n) at position p and move segments of at most segment_bytes
// along it, keeping `window` receives posted so that segment k+1 arrives while k is forwarded.
// Each collective uses one tag: messages between two ranks with the same tag keep their order.
namespace {

constexpr int broadcast_tag = 1, reduce_tag = 2, gather_tag = 3, scatter_tag = 4;

int relative(int rank, int root, int n) { return (rank - root + n) % n; }
int absolute(int v, int root, int n) { return (v + root) % n; }
int lowest_bit(int v) { return v & -v; }
int highest_bit(int v) {
  int b = 1;
  while (b <= v / 2) b <<= 1;
  return b;
}

// The relative ranks of v's subtree in the gather/scatter tree: v .. v + span - 1.
int span_of(int v, int n) { return v == 0 ? n : std::min(lowest_bit(v), n - v); }

struct ChainLinks {
  int prev = -1, next = -1;  // -1: the root has no predecessor, the tail no successor
};

ChainLinks chain_of(int rank, int root, int n) {
  const int p = relative(rank, root, n);
  return {p > 0 ? (rank - 1 + n) % n : -1, p < n - 1 ? (rank + 1) % n : -1};
}

// Segments of a chain: whole elements, at least one per segment.
struct Segments {
  std::size_t elem, seg, count, n;
  std::size_t offset(std::size_t k) const { return k * seg * elem; }
  std::size_t elems(std::size_t k) const { return std::min(seg, count - k * seg); }
  std::size_t bytes(std::size_t k) const { return elems(k) * elem; }
};

Segments segments_of(std::size_t count, comm::DataType type, std::size_t segment_bytes) {
  const std::size_t elem = comm::size_of(type), seg = std::max<std::size_t>(1, segment_bytes / elem);
  return {elem, seg, count, (count + seg - 1) / seg};
}

}  // namespace

void binomial_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                        comm::Communicator& comm) {
  const int n = comm.size(), v = relative(comm.rank(), root, n);
  const std::size_t bytes = count * comm::size_of(type);
  if (bytes == 0) return;
  // The root sends from sendbuf and copies into recvbuf last, off the children's critical path.
  const void* data = v == 0 ? sendbuf : recvbuf;
  int mask = 1;
  if (v > 0) {
    const int up = highest_bit(v);
    comm.recv(recvbuf, bytes, absolute(v - up, root, n), broadcast_tag);
    mask = up << 1;
  }
  // Blocking sends in increasing mask: the first child has the largest subtree below it.
  for (; mask < n; mask <<= 1)
    if (v + mask < n) comm.send(data, bytes, absolute(v + mask, root, n), broadcast_tag);
  if (v == 0 && sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, bytes);
}

void binomial_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                     int root, comm::Communicator& comm) {
  const int n = comm.size(), v = relative(comm.rank(), root, n);
  const std::size_t bytes = count * comm::size_of(type);
  if (bytes == 0) return;
  std::vector<int> children;  // in increasing mask
  for (int mask = v == 0 ? 1 : highest_bit(v) << 1; mask < n; mask <<= 1)
    if (v + mask < n) children.push_back(v + mask);
  const int parent = v == 0 ? -1 : absolute(v - highest_bit(v), root, n);
  if (children.empty() && parent >= 0) return comm.send(sendbuf, bytes, parent, reduce_tag);  // a leaf
  // The accumulator: recvbuf on the root, scratch elsewhere (recvbuf is not ours to write).
  void* acc = v == 0 ? recvbuf : comm.scratch(bytes, 0);
  if (acc != sendbuf) comm.copy(acc, sendbuf, bytes);
  void* incoming = comm.scratch(bytes, 1);
  // The child with the largest mask has the smallest subtree: its partial result is ready first.
  for (auto c = children.rbegin(); c != children.rend(); ++c) {
    comm.recv(incoming, bytes, absolute(*c, root, n), reduce_tag);
    comm.reduce(acc, incoming, count, type, op);
  }
  if (parent >= 0) comm.send(acc, bytes, parent, reduce_tag);
}

void binomial_gather(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                     comm::Communicator& comm) {
  const int n = comm.size(), v = relative(comm.rank(), root, n);
  const std::size_t block = count * comm::size_of(type);
  if (block == 0) return;
  const int span = span_of(v, n);
  const int parent = v == 0 ? -1 : absolute(v - lowest_bit(v), root, n);
  if (span == 1 && parent >= 0) return comm.send(sendbuf, block, parent, gather_tag);  // a leaf
  // The subtree's blocks in relative order. Root 0's relative order is rank order: it gathers
  // straight into recvbuf; any other root rotates a scratch copy at the end.
  char* sub = static_cast<char*>(v == 0 && root == 0 ? recvbuf : comm.scratch(span * block, 0));
  if (sub != sendbuf) comm.copy(sub, sendbuf, block);
  // Child v + mask (mask < span) holds relative ranks v + mask .. v + mask + min(mask, span - mask) - 1.
  std::vector<comm::Request> recvs;
  for (int mask = 1; mask < span; mask <<= 1)
    recvs.push_back(comm.irecv(sub + mask * block, std::min(mask, span - mask) * block, absolute(v + mask, root, n),
                               gather_tag));
  comm.wait_all(recvs);
  if (parent >= 0) return comm.send(sub, span * block, parent, gather_tag);
  if (root != 0) {
    // Relative ranks 0 .. n-root-1 are ranks root .. n-1; the rest wrap around to 0 .. root-1.
    char* out = static_cast<char*>(recvbuf);
    comm.copy(out + root * block, sub, (n - root) * block);
    comm.copy(out, sub + (n - root) * block, root * block);
  }
}

void binomial_scatter(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                      comm::Communicator& comm) {
  const int n = comm.size(), v = relative(comm.rank(), root, n);
  const std::size_t block = count * comm::size_of(type);
  if (block == 0) return;
  const int span = span_of(v, n);
  const int parent = v == 0 ? -1 : absolute(v - lowest_bit(v), root, n);
  if (span == 1 && parent >= 0) return comm.recv(recvbuf, block, parent, scatter_tag);  // a leaf
  // The subtree's blocks in relative order (see binomial_gather).
  const char* sub = static_cast<const char*>(sendbuf);
  if (parent >= 0) {
    char* tmp = static_cast<char*>(comm.scratch(span * block, 0));
    comm.recv(tmp, span * block, parent, scatter_tag);
    sub = tmp;
  } else if (root != 0) {
    char* tmp = static_cast<char*>(comm.scratch(n * block, 0));
    const char* in = static_cast<const char*>(sendbuf);
    comm.copy(tmp, in + root * block, (n - root) * block);
    comm.copy(tmp + (n - root) * block, in, root * block);
    sub = tmp;
  }
  // Largest subtree first: it has the most rounds still to go.
  for (int mask = span > 1 ? highest_bit(span - 1) : 0; mask >= 1; mask >>= 1)
    comm.send(sub + mask * block, std::min(mask, span - mask) * block, absolute(v + mask, root, n), scatter_tag);
  if (recvbuf != sub) comm.copy(recvbuf, sub, block);
}

void chain_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, int root,
                     comm::Communicator& comm, std::size_t segment_bytes) {
  const Segments s = segments_of(count, type, segment_bytes);
  const ChainLinks l = chain_of(comm.rank(), root, comm.size());
  char* buf = static_cast<char*>(recvbuf);
  std::vector<comm::Request> sends;
  if (l.prev < 0) {
    // The root: every segment leaves from sendbuf at once; the copy into recvbuf overlaps them.
    const char* in = static_cast<const char*>(sendbuf);
    if (l.next >= 0)
      for (std::size_t k = 0; k < s.n; ++k)
        sends.push_back(comm.isend(in + s.offset(k), s.bytes(k), l.next, broadcast_tag));
    if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * s.elem);
    return comm.wait_all(sends);
  }
  // Segments land in place; segment k is forwarded as soon as it is there, while k+1 .. k+window-1 arrive.
  std::vector<comm::Request> recvs(s.n);
  auto post = [&](std::size_t k) {
    if (k < s.n) recvs[k] = comm.irecv(buf + s.offset(k), s.bytes(k), l.prev, broadcast_tag);
  };
  for (std::size_t k = 0; k < window; ++k) post(k);
  for (std::size_t k = 0; k < s.n; ++k) {
    comm.wait(recvs[k]);
    post(k + window);
    if (l.next >= 0) sends.push_back(comm.isend(buf + s.offset(k), s.bytes(k), l.next, broadcast_tag));
  }
  comm.wait_all(sends);
}

void chain_reduce(const void* sendbuf, void* recvbuf, std::size_t count, comm::DataType type, comm::RedOp op,
                  int root, comm::Communicator& comm, std::size_t segment_bytes) {
  const Segments s = segments_of(count, type, segment_bytes);
  const ChainLinks l = chain_of(comm.rank(), root, comm.size());
  const char* own = static_cast<const char*>(sendbuf);
  std::vector<comm::Request> sends(s.n);
  if (l.next < 0) {
    // The tail's segments start the flow as they are (a lone root just copies).
    if (l.prev < 0) {
      if (sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * s.elem);
      return;
    }
    for (std::size_t k = 0; k < s.n; ++k) sends[k] = comm.isend(own + s.offset(k), s.bytes(k), l.prev, reduce_tag);
    return comm.wait_all(sends);
  }
  // Partial segments arrive in a ring of slots; segment k's slot is reused for k + slots once
  // the send that passed k on has completed (the root reduces into recvbuf and sends nothing).
  constexpr std::size_t slots = 2 * window;
  char* ring = static_cast<char*>(comm.scratch(slots * s.seg * s.elem, 0));
  auto slot = [&](std::size_t k) { return ring + (k % slots) * s.seg * s.elem; };
  std::vector<comm::Request> recvs(s.n);
  auto post = [&](std::size_t k) {
    if (k >= s.n) return;
    if (k >= slots) comm.wait(sends[k - slots]);
    recvs[k] = comm.irecv(slot(k), s.bytes(k), l.next, reduce_tag);
  };
  for (std::size_t k = 0; k < window; ++k) post(k);
  char* out = static_cast<char*>(recvbuf);
  if (l.prev < 0 && sendbuf != recvbuf) comm.copy(recvbuf, sendbuf, count * s.elem);  // while segments arrive
  for (std::size_t k = 0; k < s.n; ++k) {
    comm.wait(recvs[k]);
    if (l.prev < 0) {
      comm.reduce(out + s.offset(k), slot(k), s.elems(k), type, op);
    } else {
      comm.reduce(slot(k), own + s.offset(k), s.elems(k), type, op);
      sends[k] = comm.isend(slot(k), s.bytes(k), l.prev, reduce_tag);
    }
    post(k + window);
  }
  comm.wait_all(sends);
}

double predicted_binomial_broadcast_time(const AlphaBeta& m, int n, std::size_t bytes) {
  return ceil_log2(n) * (m.alpha + static_cast<double>(bytes) * m.beta);
}

double predicted_chain_broadcast_time(const AlphaBeta& m, int n, std::size_t bytes, std::size_t segment_bytes) {
  if (n <= 1 || bytes == 0) return 0;
  // The first segment needs n-1 steps to reach the tail; each of the other S-1 follows one step later.
  const std::size_t segments = (bytes + segment_bytes - 1) / segment_bytes;
  const double step = m.alpha + static_cast<double>(std::min(bytes, segment_bytes)) * m.beta;
  return (n - 2.0 + static_cast<double>(segments)) * step;
}

}  // namespace lab11
