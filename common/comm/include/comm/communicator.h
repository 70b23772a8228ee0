// The communicator: rank, size, blocking and non-blocking point-to-point, wait, barrier.
//
// Labs write collectives on top of these calls only. The library collectives (library_*:
// MPI_Allreduce, MPI_Bcast, ... or ncclAllReduce, ncclBroadcast, ...) are there as the
// correctness reference and the performance baseline, never as building blocks for lab code.
//
// Semantics (the same on every backend):
// - send/recv block until the buffer may be reused. A blocking send may wait for the matching
//   receive (large messages always do), so two ranks that both send first can deadlock.
// - isend/irecv return a Request; the buffer must stay untouched until wait/wait_all returns.
//   The communicator enforces it (MPI requires it but does not check): a receive into, a copy
//   or reduction into, or any read of, bytes of a pending irecv, and a receive, copy or
//   reduction into bytes of a pending isend, throw comm::Error naming both calls.
// - scratch(bytes, slot) memory is `bytes` long, whatever the slot holds underneath: a copy,
//   reduction, send or receive that runs past the bytes last asked of the slot throws.
// - Messages between one pair of ranks with the same tag arrive in the order they were sent.
//   Tags (0..32767) tell apart messages that are in flight at the same time.
// - reduce/copy/allocate work on buffers in this communicator's memory space.
//
// Every call also feeds a small set of counters (Stats) that checks use to verify the
// structure of an algorithm (bytes moved, segments in flight, overlapped reductions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/memory.h"
#include "comm/types.h"

namespace comm {

class Communicator;

/// Counters of one communicator since construction or the last reset_stats().
struct Stats {
  std::uint64_t sends = 0;           ///< messages sent (send + isend)
  std::uint64_t recvs = 0;           ///< messages received (recv + irecv)
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  int pending_recvs = 0;             ///< irecv posted and not yet waited
  int max_pending_recvs = 0;         ///< the most irecvs ever pending at once
  int pending_sends = 0;
  int max_pending_sends = 0;
  std::uint64_t reductions = 0;      ///< reduce() calls with count > 0
  std::uint64_t reductions_overlapped = 0;  ///< ... made while an irecv was pending
  std::uint64_t reduced_elements = 0;
};

/// The communicator's own clock on one point-to-point message (record_message_times): checks
/// compare what a learner's code reports (a one-way time, a bandwidth) with it.
struct MessageTime {
  bool recv = false;     ///< a recv/irecv (else a send/isend)
  int peer = -1;
  std::size_t bytes = 0;
  double posted = 0;     ///< wtime() when send/recv/isend/irecv was called
  double completed = 0;  ///< wtime() when send/recv returned or the request's wait completed
};

/// The eight collectives of NCCL (and their MPI equivalents), for the library_* calls.
enum class Collective : std::int32_t {
  allreduce = 0,
  broadcast = 1,
  reduce = 2,
  allgather = 3,
  reduce_scatter = 4,
  gather = 5,
  scatter = 6,
  alltoall = 7,
};
const char* name_of(Collective c);

/// Called with the kind of every library collective a communicator starts (library() and the
/// library_* calls), before it runs; nullptr (the default) for none. The checks use it to name a
/// lab's code that calls one (comm::check::LearnerCall).
using LibraryObserver = void (*)(Collective kind);
void set_library_observer(LibraryObserver observer);

/// Elements of a rank's send and receive buffers for `count` (NCCL's convention below): n *
/// count for the per-rank side of all-gather, reduce-scatter, gather, scatter and all-to-all.
std::size_t send_elements(Collective c, std::size_t count, int nranks);
std::size_t recv_elements(Collective c, std::size_t count, int nranks);

/// One library collective call, in NCCL's conventions: `count` is the element count of a
/// broadcast, reduce or all-reduce buffer, and the per-rank (per-block) count of the others.
/// In place is expressed by pointers as in NCCL: sendbuf == recvbuf (all-reduce, broadcast,
/// reduce, all-to-all), sendbuf == recvbuf + rank * count (all-gather, gather on the root),
/// recvbuf == sendbuf + rank * count (reduce-scatter, scatter on the root).
struct LibraryCall {
  Collective kind = Collective::allreduce;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  std::size_t count = 0;
  DataType type = DataType::f32;
  RedOp op = RedOp::sum;
  int root = 0;
};

namespace detail {
struct RequestImpl {
  virtual ~RequestImpl() = default;
};
}  // namespace detail

/// A pending non-blocking operation. Complete it with Communicator::wait or wait_all.
class Request {
 public:
  Request() = default;
  Request(Request&&) noexcept = default;
  Request& operator=(Request&&) noexcept;
  ~Request();
  /// True until wait/wait_all completes it.
  bool active() const { return impl_ != nullptr; }

 private:
  friend class Communicator;
  std::unique_ptr<detail::RequestImpl> impl_;
  Communicator* owner_ = nullptr;
  bool is_recv_ = false;
  int peer_ = -1;
  int tag_ = -1;
  std::size_t bytes_ = 0;
  std::size_t time_index_ = static_cast<std::size_t>(-1);  ///< its entry in message_times()
  std::uint64_t pending_id_ = 0;  ///< its entry in the communicator's pending buffers (0: none)
  const void* buf_ = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MemorySpace memory_space() const { return space_; }
  /// "mpi" or "nccl".
  virtual const char* backend_name() const = 0;

  void send(const void* buf, std::size_t bytes, int peer, int tag);
  void recv(void* buf, std::size_t bytes, int peer, int tag);
  Request isend(const void* buf, std::size_t bytes, int peer, int tag);
  Request irecv(void* buf, std::size_t bytes, int peer, int tag);
  void wait(Request& request);
  void wait_all(std::vector<Request>& requests);
  void barrier();

  /// inout[i] = op(inout[i], in[i]) on buffers of this communicator's memory space.
  void reduce(void* inout, const void* in, std::size_t count, DataType type, RedOp op);
  /// Copies within this communicator's memory space (no overlap).
  void copy(void* dst, const void* src, std::size_t bytes);
  /// A new buffer in this communicator's memory space (freed when the Buffer goes away).
  Buffer allocate(std::size_t bytes) const { return Buffer(bytes, space_); }
  /// Scratch memory of at least `bytes` in this communicator's memory space, kept by the
  /// communicator and reused across calls (no allocation or page faults in a timed loop).
  /// Slots 0..3 are independent; a slot's pointer stays valid until the next scratch() call
  /// for the same slot asks for more bytes.
  void* scratch(std::size_t bytes, int slot = 0);

  /// The library's own all-reduce: the reference and the baseline (in place if send == recv).
  void library_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op);
  /// The library's other collectives (see LibraryCall for counts and in place). Buffers a
  /// rank does not use may be null: recvbuf of reduce and gather and sendbuf of broadcast and
  /// scatter on ranks other than the root.
  void library_broadcast(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root);
  void library_reduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op, int root);
  void library_allgather(const void* sendbuf, void* recvbuf, std::size_t count, DataType type);
  void library_reduce_scatter(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, RedOp op);
  void library_gather(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root);
  void library_scatter(const void* sendbuf, void* recvbuf, std::size_t count, DataType type, int root);
  void library_alltoall(const void* sendbuf, void* recvbuf, std::size_t count, DataType type);
  /// Any of them.
  void library(const LibraryCall& call);
  /// Seconds on a monotonic clock (MPI_Wtime on the MPI backend).
  virtual double wtime() const = 0;

  const Stats& stats() const { return stats_; }
  /// Also clears message_times().
  void reset_stats();
  /// Records a MessageTime for every point-to-point message from now on (off by default:
  /// collectives of many small messages should not pay for it).
  void record_message_times(bool on) { record_times_ = on; }
  /// The messages since the last reset_stats(), in the order they were posted.
  const std::vector<MessageTime>& message_times() const { return times_; }
  /// Whether message times are being recorded (record_message_times).
  bool recording_message_times() const { return record_times_; }

  /// For the checker's split build (checker/support/remote/wb_comm_remote.h), where the lab's
  /// code runs in another process over that process's communicator: adds what one of its calls
  /// did to this communicator's counters and message times, as if it had been done here.
  /// `delta` holds the other communicator's counters since its reset_stats() at the start of
  /// the call, with pending_* and max_pending_* relative to what was pending at that reset;
  /// `times` are appended only while this communicator records message times.
  void absorb(const Stats& delta, const std::vector<MessageTime>& times);

  static constexpr int max_tag = 32767;

 protected:
  Communicator(int rank, int size, MemorySpace space) : rank_(rank), size_(size), space_(space) {}

  virtual void do_send(const void* buf, std::size_t bytes, int peer, int tag) = 0;
  virtual void do_recv(void* buf, std::size_t bytes, int peer, int tag) = 0;
  virtual std::unique_ptr<detail::RequestImpl> do_isend(const void* buf, std::size_t bytes, int peer, int tag) = 0;
  virtual std::unique_ptr<detail::RequestImpl> do_irecv(void* buf, std::size_t bytes, int peer, int tag) = 0;
  /// Completes all of `impls` (entries may be null: already completed).
  virtual void do_wait_all(detail::RequestImpl** impls, std::size_t n) = 0;
  virtual void do_barrier() = 0;
  /// The library collective `call` (arguments already validated).
  virtual void do_library(const LibraryCall& call) = 0;
  /// Called by ~Request for a request that was never waited: release it without throwing.
  virtual void abandon(detail::RequestImpl* impl) noexcept = 0;

 private:
  friend class Request;
  void check_p2p(const char* what, const void* buf, std::size_t bytes, int peer, int tag) const;
  void finish(Request& r);
  void abandoned(Request& r) noexcept;
  std::size_t note_posted(bool recv, int peer, std::size_t bytes);
  void note_completed(std::size_t index);
  /// Throws if a call on bytes [buf, buf + bytes) reads or, when `writes`, writes bytes of a
  /// pending request it may not touch, or bytes of a scratch slot past those asked. `what()`
  /// names the call; it is only called to build the message (the check is on every call).
  template <class Describe>
  void check_buffer(const Describe& what, const void* buf, std::size_t bytes, bool writes) const;
  void add_pending(Request& r, const void* buf);

  /// A posted isend/irecv whose buffer is in use until its wait, keyed by its first byte.
  struct Pending {
    std::uintptr_t end = 0;
    bool recv = false;
    int peer = -1;
    int tag = -1;
    std::size_t bytes = 0;
    std::uint64_t id = 0;
  };

  int rank_;
  int size_;
  MemorySpace space_;
  Stats stats_;
  bool record_times_ = false;
  std::vector<MessageTime> times_;
  Buffer scratch_[4];
  std::size_t scratch_asked_[4] = {0, 0, 0, 0};
  std::multimap<std::uintptr_t, Pending> pending_;
  std::size_t pending_longest_ = 0;  ///< the longest buffer pending since pending_ was last empty
  std::uint64_t next_pending_id_ = 1;
};

}  // namespace comm
