/// @file
/// @brief The channel between a check (the judge, trusted) and the student's code (the worker).
///
/// A lab's checks never run in the same process as the student's code. The check binary (the
/// judge) holds the test plan, the inputs, the reference results and the comparison; it starts
/// a worker process that contains only the student's sources and a small server, and every CUDA
/// runtime call and every call of the lab's interface (saxpy(), transpose_naive(), ...) that the
/// checks make is executed there, as a request over a socket. Device pointers are opaque
/// numbers to the judge. Whatever the student's code does in its own process (exit early, write
/// files, patch memory, redefine symbols), the verdict is computed where it never ran.
///
/// Messages: a 4-byte tag (an Op for requests, 0 for replies), an 8-byte payload length, the
/// payload. Payloads are built with Writer and read with Reader; a Reader that runs past its
/// end throws, so a malformed reply from a hostile worker is an error, never a wild read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace wb::remote {

enum class Op : std::uint32_t {
  Call = 1,            ///< a lab interface function: name, arguments
  Malloc,
  Free,
  MemcpyToDevice,      ///< device pointer, bytes
  MemcpyToHost,        ///< device pointer, count -> bytes
  MemcpyDeviceToDevice,
  Memset,
  Synchronize,
  GetLastError,
  PeekAtLastError,
  GetDevice,
  DeviceGetAttribute,
  GetDeviceProperties,
  StreamCreate,
  StreamDestroy,
  StreamSynchronize,
  EventCreate,
  EventDestroy,
  EventRecord,
  EventSynchronize,
  EventElapsedTime,
  TimedBegin,          ///< one timed repetition: flush L2?, stream; its start is recorded at the next request
  TimedEnd,            ///< -> error, the ms between the region's events, the ms the device stayed busy after
  TimeDeviceCopy,      ///< bytes, warm-up runs, repetitions, flush L2? -> error text, wb::Bandwidth (a baseline)
  ErrorString,
  ErrorName,
  AnalysisAvailable,
  AnalysisReset,
  AnalysisMetrics,
  AnalysisReports,
  CheckerDeviceMemory,     ///< cusim::checker (cusim/checker.h): live device allocations
  CheckerLaunches,         ///< the launch configurations since the last clear
  CheckerClearLaunches,
  CheckerInjectFailure,    ///< api, nth, error -> accepted
  CheckerEndFailures,      ///< -> not fired, work after the failure, the first of it
  CheckerBlockOrder,       ///< cusim::checker::set_block_order: the order's value
  SharedMemory,            ///< bytes; the descriptor of a new shared segment rides with it
  Shutdown,
  Callback,                ///< worker to judge, during a Call: a function the judge passed (id, arguments)
  CallbackReturn,          ///< judge to worker: what that function returned
};

/// True for the requests judge_cuda.cpp makes and serve_cuda() executes (the CUDA runtime and
/// cusim's analysis and checker APIs).
constexpr bool is_cuda_op(std::uint32_t tag) {
  return tag >= static_cast<std::uint32_t>(Op::Malloc) && tag <= static_cast<std::uint32_t>(Op::CheckerBlockOrder);
}

/// The largest payload either side accepts (a hostile length must not exhaust the judge).
constexpr std::uint64_t kMaxPayload = std::uint64_t(8) << 30;

/// Raised when the channel breaks or a message is malformed.
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  template <class T>
  Writer& put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return put_bytes(&value, sizeof(T));
  }
  Writer& put_bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    buf_.insert(buf_.end(), p, p + n);
    return *this;
  }
  Writer& put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    return put_bytes(s.data(), s.size());
  }
  /// Bytes sent after everything else without being copied here (large transfers); the
  /// memory must stay valid until the message is sent. At most one per message, last.
  Writer& put_bulk(const void* data, std::size_t n) {
    bulk_ = static_cast<const char*>(data);
    bulk_size_ = n;
    return *this;
  }
  const std::vector<char>& bytes() const { return buf_; }
  const char* bulk() const { return bulk_; }
  std::size_t bulk_size() const { return bulk_size_; }

 private:
  std::vector<char> buf_;
  const char* bulk_ = nullptr;
  std::size_t bulk_size_ = 0;
};

/// A received payload (not zero-filled: it is overwritten by the read).
struct Payload {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
};

class Reader {
 public:
  Reader() = default;
  explicit Reader(Payload payload) : buf_(std::move(payload)) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  const char* take(std::size_t n) {
    if (n > buf_.size - pos_) throw ChannelError("malformed message: it ends early");
    const char* p = buf_.data.get() + pos_;
    pos_ += n;
    return p;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    const char* p = take(n);
    return std::string(p, n);
  }
  std::size_t remaining() const { return buf_.size - pos_; }

 private:
  Payload buf_;
  std::size_t pos_ = 0;
};

/// WB_REMOTE_STATS=1 (channel.cpp): besides the messages sent, these times are summed and printed
/// at exit (the collective labs' split notes them: comm_judge.cpp, comm_worker.cpp).
enum class StatsTime {
  judge_waiting,   ///< the judge, from sending a Call to its reply
  worker_running,  ///< the worker, in the lab's function of a Call
  worker_idle,     ///< the worker, from its last reply to the next request
};
/// True when WB_REMOTE_STATS is set (read the clock only then).
bool stats_enabled();
void stats_note_time(StatsTime what, double seconds);

/// Sends one message; throws ChannelError when the peer is gone.
void send_message(int fd, std::uint32_t tag, const Writer& payload);
/// Receives one message; false at end of stream (the peer closed or died). Throws
/// ChannelError on a malformed header.
bool receive_message(int fd, std::uint32_t& tag, Payload& payload, std::uint64_t max_size = kMaxPayload);

/// send_message with a file descriptor attached (SCM_RIGHTS; `fd` is a Unix socket).
void send_message_with_fd(int fd, std::uint32_t tag, const Writer& payload, int passed);
/// receive_message that also takes a descriptor sent with the message: *passed (-1: none).
bool receive_message_with_fd(int fd, std::uint32_t& tag, Payload& payload, int* passed,
                             std::uint64_t max_size = kMaxPayload);

/// The worker (the student's code) is gone or failed a request; what() says how, for the learner.
class WorkerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Judge side: one request to the process that runs the lab's code, over the judge's transport
/// (judge.cpp: the check binary's own worker; comm_judge.cpp: this MPI rank's worker). The CUDA
/// runtime of judge_cuda.cpp is built on it. Throws WorkerError when the worker is gone or the
/// request failed there.
Reader judge_request(Op op, const Writer& payload, const char* what, std::uint64_t max_reply);

/// Judge side: sends a request whose reply the caller does not wait for (the checks' own
/// cudaFree and copies to the device, which return nothing the checks read): one message instead
/// of a round trip. The reply is read before the next request's answer (at most kMaxPosted wait).
/// The CUDA error code a posted call returns is not reported by it: as in CUDA, an error that
/// matters stays visible to later calls (a sticky fault is returned by every call after it, a
/// failed call is the runtime's last error). That the worker failed the request itself (an
/// exception, the worker gone) is thrown by the next request as a WorkerError naming the posted
/// call. @p what must be a string literal.
void judge_post(Op op, const Writer& payload, const char* what);

/// Judge side: while in_checkers_process() (a scope of wb::check::InCheckersProcess, wb_baseline.h,
/// entered with enter_checkers_process()), judge_request() and judge_post() go to the checker's own
/// CUDA process instead of the worker: a vendor-library baseline's buffers, calls and timings, and
/// the timing baselines and calibration of judge_timing.cpp. That process is started on first use,
/// outside the sandbox: the check binary's name with _trusted where the lab has vendor-library
/// baselines, else wb_trusted_runtime; a worker's server with no lab code.
bool in_checkers_process();
void enter_checkers_process();
void leave_checkers_process();

/// Judge side: makes wb::time_median() and wb::device_copy_bandwidth() of this process run their
/// GPU work where it is (judge_timing.cpp; wb/timing_hooks.h). judge.cpp calls it at start-up.
void install_remote_timing();

/// How many posted requests' replies may wait unread (each is a few bytes in the socket).
constexpr std::size_t kMaxPosted = 256;

/// What a posted request's reply says went wrong in the worker: "" when it ran (whatever CUDA
/// error code it returned), else the call and the worker's message, for the WorkerError of the
/// next request.
inline std::string posted_failure(const char* what, std::uint32_t status, Reader& reply) {
  if (status == 0) return "";
  std::string why;
  try {
    why = reply.get_string();
  } catch (const ChannelError&) {
    why = "its reply was malformed";
  }
  return std::string(what) + " (an earlier call of the checks, not waited for): " + why;
}

/// Worker side: executes one CUDA runtime request (is_cuda_op) with this process's runtime
/// (worker_cuda.cpp) and writes its reply.
void serve_cuda(Op op, Reader& in, Writer& out);

/// Worker side: the timed region of one repetition (wb::time_median() of a judge, judge_timing.cpp).
/// After Op::TimedBegin, the start event is recorded just before the next request is served and the
/// stop event just after each request, so that no gap between requests is timed; Op::TimedEnd
/// synchronizes and measures. Every server of requests calls these around each request it serves.
void region_before_request(Op op);
void region_after_request(Op op);

/// Worker side: what the worker itself found wrong with a call of the lab's code (work it left
/// running when it returned), as opposed to an exception of that code: reported as it is.
class Finding : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Worker side: runs @p serve, which writes a reply into @p out, and returns the reply's status:
/// 0, or 1 with @p out replaced by what escaped it (the judge shows it as the request's error).
template <class F>
std::uint32_t serve_reporting_exceptions(F&& serve, Writer& out) {
  try {
    serve();
    return 0;
  } catch (const Finding& e) {
    out = Writer();
    out.put_string(e.what());
  } catch (const std::exception& e) {
    out = Writer();
    out.put_string(std::string("an exception escaped the lab's code: ") + e.what());
  } catch (...) {
    out = Writer();
    out.put_string("an exception of unknown type escaped the lab's code");
  }
  return 1;
}

/// Pointers cross the channel as numbers.
inline std::uint64_t to_wire(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
template <class P>
P from_wire(std::uint64_t v) {
  return reinterpret_cast<P>(static_cast<std::uintptr_t>(v));
}

}  // namespace wb::remote
