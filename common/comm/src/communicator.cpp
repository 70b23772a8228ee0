#include "comm/communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <string>

#include "comm/error.h"
#include "comm/reduce.h"
#include "comm/status.h"

namespace comm {

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    if (impl_ && owner_) owner_->abandoned(*this);
    impl_ = std::move(o.impl_);
    owner_ = o.owner_;
    is_recv_ = o.is_recv_;
    peer_ = o.peer_;
    tag_ = o.tag_;
    bytes_ = o.bytes_;
    time_index_ = o.time_index_;
    pending_id_ = o.pending_id_;
    buf_ = o.buf_;
  }
  return *this;
}

Request::~Request() {
  if (impl_ && owner_) owner_->abandoned(*this);
}

void Communicator::check_p2p(const char* what, const void* buf, std::size_t bytes, int peer, int tag) const {
  if (peer < 0 || peer >= size_)
    COMM_THROW(std::string(what) + ": peer " + std::to_string(peer) + " is not a rank of this communicator (size " +
               std::to_string(size_) + ")");
  if (tag < 0 || tag > max_tag)
    COMM_THROW(std::string(what) + ": tag " + std::to_string(tag) + " outside 0.." + std::to_string(max_tag));
  if (bytes > 0 && buf == nullptr) COMM_THROW(std::string(what) + ": null buffer with " + std::to_string(bytes) + " bytes");
}

namespace {

std::string describe(bool recv, int peer, int tag, std::size_t bytes) {
  return std::string(recv ? "irecv(from rank " : "isend(to rank ") + std::to_string(peer) + ", tag " +
         std::to_string(tag) + ", " + std::to_string(bytes) + " bytes)";
}

}  // namespace

template <class Describe>
void Communicator::check_buffer(const Describe& what, const void* buf, std::size_t bytes, bool writes) const {
  if (bytes == 0 || buf == nullptr) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(buf), end = begin + bytes;
  for (int slot = 0; slot < 4; ++slot) {
    const auto base = reinterpret_cast<std::uintptr_t>(scratch_[slot].data());
    if (base == 0 || begin >= base + scratch_[slot].bytes() || end <= base) continue;
    if (begin < base || end > base + scratch_asked_[slot])
      COMM_THROW(what() + " " + (writes ? "writes" : "reads") + " bytes [" +
                 std::to_string(static_cast<long long>(begin - base)) + ", " + std::to_string(end - base) +
                 ") of scratch slot " + std::to_string(slot) + ", which was last asked for " +
                 std::to_string(scratch_asked_[slot]) + " bytes (comm.scratch(" + std::to_string(scratch_asked_[slot]) +
                 ", " + std::to_string(slot) + ")): ask the slot for every byte it must hold");
  }
  if (pending_.empty()) return;
  // Pending buffers start at most pending_longest_ bytes before `begin` if they reach it.
  auto it = pending_.lower_bound(begin > pending_longest_ ? begin - pending_longest_ : 0);
  for (; it != pending_.end() && it->first < end; ++it) {
    const Pending& p = it->second;
    if (p.end <= begin || (!writes && !p.recv)) continue;
    const std::string other = describe(p.recv, p.peer, p.tag, p.bytes);
    COMM_THROW(what() + " " + (writes ? "writes" : "reads") + " bytes that the pending " + other + " " +
               (p.recv ? "is still receiving into" : "is still sending from") + ": " +
               (p.recv ? "a receive buffer may not be read or written until its wait returns"
                       : "a send buffer may not be modified until its wait returns") +
               " (MPI leaves the result undefined); wait for the " + (p.recv ? "irecv" : "isend") + " first");
  }
}

void Communicator::add_pending(Request& r, const void* buf) {
  if (r.bytes_ == 0 || buf == nullptr) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(buf);
  r.pending_id_ = next_pending_id_++;
  r.buf_ = buf;
  pending_.emplace(begin, Pending{begin + r.bytes_, r.is_recv_, r.peer_, r.tag_, r.bytes_, r.pending_id_});
  pending_longest_ = std::max(pending_longest_, r.bytes_);
}

std::size_t Communicator::note_posted(bool recv, int peer, std::size_t bytes) {
  if (!record_times_) return static_cast<std::size_t>(-1);
  MessageTime m;
  m.recv = recv;
  m.peer = peer;
  m.bytes = bytes;
  m.posted = wtime();
  times_.push_back(m);
  return times_.size() - 1;
}

void Communicator::note_completed(std::size_t index) {
  // A request posted before reset_stats() may carry an index of the new list: stamp only
  // entries not yet completed.
  if (index < times_.size() && times_[index].completed == 0) times_[index].completed = wtime();
}

void Communicator::send(const void* buf, std::size_t bytes, int peer, int tag) {
  check_p2p("send", buf, bytes, peer, tag);
  check_buffer([&] { return "send(to rank " + std::to_string(peer) + ", tag " + std::to_string(tag) + ")"; }, buf, bytes,
               false);
  const std::size_t t = note_posted(false, peer, bytes);
  status::set_blocked(status::Op::send, peer, tag, bytes);
  do_send(buf, bytes, peer, tag);
  status::set_running();
  note_completed(t);
  stats_.sends++;
  stats_.bytes_sent += bytes;
}

void Communicator::recv(void* buf, std::size_t bytes, int peer, int tag) {
  check_p2p("recv", buf, bytes, peer, tag);
  check_buffer([&] { return "recv(from rank " + std::to_string(peer) + ", tag " + std::to_string(tag) + ")"; }, buf, bytes,
               true);
  const std::size_t t = note_posted(true, peer, bytes);
  status::set_blocked(status::Op::recv, peer, tag, bytes);
  do_recv(buf, bytes, peer, tag);
  status::set_running();
  note_completed(t);
  stats_.recvs++;
  stats_.bytes_received += bytes;
}

Request Communicator::isend(const void* buf, std::size_t bytes, int peer, int tag) {
  check_p2p("isend", buf, bytes, peer, tag);
  check_buffer([&] { return describe(false, peer, tag, bytes); }, buf, bytes, false);
  Request r;
  r.time_index_ = note_posted(false, peer, bytes);
  r.impl_ = do_isend(buf, bytes, peer, tag);
  r.owner_ = this;
  r.is_recv_ = false;
  r.peer_ = peer;
  r.tag_ = tag;
  r.bytes_ = bytes;
  add_pending(r, buf);
  stats_.sends++;
  stats_.bytes_sent += bytes;
  if (++stats_.pending_sends > stats_.max_pending_sends) stats_.max_pending_sends = stats_.pending_sends;
  return r;
}

Request Communicator::irecv(void* buf, std::size_t bytes, int peer, int tag) {
  check_p2p("irecv", buf, bytes, peer, tag);
  check_buffer([&] { return describe(true, peer, tag, bytes); }, buf, bytes, true);
  Request r;
  r.time_index_ = note_posted(true, peer, bytes);
  r.impl_ = do_irecv(buf, bytes, peer, tag);
  r.owner_ = this;
  r.is_recv_ = true;
  r.peer_ = peer;
  r.tag_ = tag;
  r.bytes_ = bytes;
  add_pending(r, buf);
  stats_.recvs++;
  stats_.bytes_received += bytes;
  if (++stats_.pending_recvs > stats_.max_pending_recvs) stats_.max_pending_recvs = stats_.pending_recvs;
  return r;
}

void Communicator::finish(Request& r) {
  note_completed(r.time_index_);
  if (r.pending_id_ != 0) {
    auto [first, last] = pending_.equal_range(reinterpret_cast<std::uintptr_t>(r.buf_));
    for (auto it = first; it != last; ++it)
      if (it->second.id == r.pending_id_) {
        pending_.erase(it);
        break;
      }
    if (pending_.empty()) pending_longest_ = 0;
    r.pending_id_ = 0;
  }
  if (r.is_recv_)
    stats_.pending_recvs--;
  else
    stats_.pending_sends--;
  r.impl_.reset();
  r.owner_ = nullptr;
}

void Communicator::abandoned(Request& r) noexcept {
  // While an exception unwinds, unfinished requests are expected; stay quiet then.
  if (std::uncaught_exceptions() == 0)
    std::fprintf(stderr,
               "comm: rank %d: a %s request (peer %d, tag %d, %zu bytes) was destroyed before wait(); "
               "every isend/irecv must be completed with wait or wait_all\n",
               rank_, r.is_recv_ ? "irecv" : "isend", r.peer_, r.tag_, r.bytes_);
  abandon(r.impl_.get());
  finish(r);
}

void Communicator::wait(Request& request) {
  if (!request.impl_) return;
  if (request.owner_ != this) COMM_THROW("wait: the request belongs to another communicator");
  status::set_blocked(request.is_recv_ ? status::Op::wait_irecv : status::Op::wait_isend, request.peer_, request.tag_,
                      request.bytes_);
  detail::RequestImpl* one = request.impl_.get();
  do_wait_all(&one, 1);
  status::set_running();
  finish(request);
}

void Communicator::wait_all(std::vector<Request>& requests) {
  std::vector<detail::RequestImpl*> impls;
  impls.reserve(requests.size());
  const Request* first = nullptr;
  for (auto& r : requests) {
    if (!r.impl_) continue;
    if (r.owner_ != this) COMM_THROW("wait_all: a request belongs to another communicator");
    impls.push_back(r.impl_.get());
    if (!first) first = &r;
  }
  if (impls.empty()) return;
  status::set_blocked(first->is_recv_ ? status::Op::wait_irecv : status::Op::wait_isend, first->peer_, first->tag_,
                      first->bytes_, impls.size());
  do_wait_all(impls.data(), impls.size());
  status::set_running();
  for (auto& r : requests)
    if (r.impl_) finish(r);
}

void Communicator::barrier() {
  status::set_blocked(status::Op::barrier, -1, -1, 0);
  do_barrier();
  status::set_running();
}

void Communicator::reduce(void* inout, const void* in, std::size_t count, DataType type, RedOp op) {
  if (count == 0) return;
  const std::size_t bytes = count * size_of(type);
  check_buffer([&] { return "reduce(count " + std::to_string(count) + ") of its input"; }, in, bytes, false);
  check_buffer([&] { return "reduce(count " + std::to_string(count) + ")"; }, inout, bytes, true);
  reduce_local(inout, in, count, type, op, space_);
  stats_.reductions++;
  stats_.reduced_elements += count;
  if (stats_.pending_recvs > 0) stats_.reductions_overlapped++;
}

void Communicator::copy(void* dst, const void* src, std::size_t bytes) {
  check_buffer([&] { return "copy(" + std::to_string(bytes) + " bytes) from its source"; }, src, bytes, false);
  check_buffer([&] { return "copy(" + std::to_string(bytes) + " bytes)"; }, dst, bytes, true);
  comm::copy(dst, space_, src, space_, bytes);
}

const char* name_of(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::allgather: return "allgather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::gather: return "gather";
    case Collective::scatter: return "scatter";
    case Collective::alltoall: return "alltoall";
  }
  return "?";
}

std::size_t send_elements(Collective c, std::size_t count, int nranks) {
  const bool per_rank = c == Collective::reduce_scatter || c == Collective::scatter || c == Collective::alltoall;
  return per_rank ? count * static_cast<std::size_t>(nranks) : count;
}

std::size_t recv_elements(Collective c, std::size_t count, int nranks) {
  const bool per_rank = c == Collective::allgather || c == Collective::gather || c == Collective::alltoall;
  return per_rank ? count * static_cast<std::size_t>(nranks) : count;
}

namespace {
std::atomic<LibraryObserver> g_library_observer{nullptr};
}  // namespace

void set_library_observer(LibraryObserver observer) { g_library_observer.store(observer); }

void Communicator::library(const LibraryCall& c) {
  if (LibraryObserver observe = g_library_observer.load(std::memory_order_relaxed)) observe(c.kind);
  const std::string what = std::string("library_") + name_of(c.kind);
  const bool rooted = c.kind == Collective::broadcast || c.kind == Collective::reduce ||
                      c.kind == Collective::gather || c.kind == Collective::scatter;
  if (rooted && (c.root < 0 || c.root >= size_))
    COMM_THROW(what + ": root " + std::to_string(c.root) + " is not a rank of this communicator (size " +
               std::to_string(size_) + ")");
  // Which buffers this rank needs: the others may be null.
  const bool root = rank_ == c.root;
  bool needs_send = true, needs_recv = true;
  if (c.kind == Collective::broadcast || c.kind == Collective::scatter) needs_send = root;
  if (c.kind == Collective::reduce || c.kind == Collective::gather) needs_recv = root;
  if (c.count > 0 && ((needs_send && c.sendbuf == nullptr) || (needs_recv && c.recvbuf == nullptr)))
    COMM_THROW(what + ": null " + (needs_send && c.sendbuf == nullptr ? "sendbuf" : "recvbuf") + " on rank " +
               std::to_string(rank_) + " with count " + std::to_string(c.count));
  const std::size_t n = static_cast<std::size_t>(size_);
  std::size_t bytes = c.count * size_of(c.type);
  if (c.kind != Collective::allreduce && c.kind != Collective::broadcast && c.kind != Collective::reduce) bytes *= n;
  if (c.kind == Collective::allreduce)
    status::set_blocked(status::Op::library_allreduce, -1, -1, bytes);
  else
    status::set_blocked(status::Op::library, c.root, static_cast<int>(c.kind), bytes);
  if (c.count > 0) do_library(c);
  status::set_running();
}

void Communicator::library_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                                     RedOp op) {
  library({Collective::allreduce, sendbuf, recvbuf, count, type, op, 0});
}
void Communicator::library_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root) {
  library({Collective::broadcast, sendbuf, recvbuf, count, type, RedOp::sum, root});
}
void Communicator::library_reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op,
                                  int root) {
  library({Collective::reduce, sendbuf, recvbuf, count, type, op, root});
}
void Communicator::library_allgather(const void* sendbuf, void* recvbuf, std::size_t count, DataType type) {
  library({Collective::allgather, sendbuf, recvbuf, count, type, RedOp::sum, 0});
}
void Communicator::library_reduce_scatter(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                                          RedOp op) {
  library({Collective::reduce_scatter, sendbuf, recvbuf, count, type, op, 0});
}
void Communicator::library_gather(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root) {
  library({Collective::gather, sendbuf, recvbuf, count, type, RedOp::sum, root});
}
void Communicator::library_scatter(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root) {
  library({Collective::scatter, sendbuf, recvbuf, count, type, RedOp::sum, root});
}
void Communicator::library_alltoall(const void* sendbuf, void* recvbuf, std::size_t count, DataType type) {
  library({Collective::alltoall, sendbuf, recvbuf, count, type, RedOp::sum, 0});
}

void* Communicator::scratch(std::size_t bytes, int slot) {
  if (slot < 0 || slot >= 4) COMM_THROW("scratch: slot " + std::to_string(slot) + " outside 0..3");
  Buffer& b = scratch_[slot];
  scratch_asked_[slot] = bytes;
  if (b.bytes() < bytes || b.data() == nullptr) {
    b = Buffer();  // free first: peak memory stays one buffer
    b = allocate(bytes > 0 ? bytes : 1);
    comm::fill_bytes(b.data(), space_, 0, b.bytes());  // touch the pages once, outside timed calls
  }
  return b.data();
}

void Communicator::absorb(const Stats& d, const std::vector<MessageTime>& times) {
  stats_.sends += d.sends;
  stats_.recvs += d.recvs;
  stats_.bytes_sent += d.bytes_sent;
  stats_.bytes_received += d.bytes_received;
  stats_.reductions += d.reductions;
  stats_.reductions_overlapped += d.reductions_overlapped;
  stats_.reduced_elements += d.reduced_elements;
  stats_.max_pending_recvs = std::max(stats_.max_pending_recvs, stats_.pending_recvs + d.max_pending_recvs);
  stats_.max_pending_sends = std::max(stats_.max_pending_sends, stats_.pending_sends + d.max_pending_sends);
  stats_.pending_recvs += d.pending_recvs;
  stats_.pending_sends += d.pending_sends;
  if (record_times_) times_.insert(times_.end(), times.begin(), times.end());
}

void Communicator::reset_stats() {
  Stats fresh;
  fresh.pending_recvs = stats_.pending_recvs;
  fresh.pending_sends = stats_.pending_sends;
  fresh.max_pending_recvs = stats_.pending_recvs;
  fresh.max_pending_sends = stats_.pending_sends;
  stats_ = fresh;
  times_.clear();
}

}  // namespace comm
