/// @file
/// @brief The judge/worker split for the collective labs, which run under mpirun (labs 09-12).
///
/// Each rank is two processes. The **judges** (check_NN_name, one per rank, an MPI job of their
/// own) hold the checks, their inputs, the references (computed with MPI among the judges) and
/// the comparison, and contain none of the lab's code. The **workers** (check_NN_name_worker, a
/// second MPI job, started by checker/mpi_launch.py inside the sandbox) hold the lab's code and
/// the communicator it talks over. Every call of the lab's interface that a check makes is a
/// request from judge R to worker R over a Unix socket in $WB_COMM_REMOTE_DIR: the arguments go
/// over the socket, the host buffers the function reads and writes through memory the judge
/// shares with its worker (a sealed memfd, copied into before the call and out of after it);
/// what the call did to the worker's communicator (counters, message times:
/// Communicator::absorb), the library collectives and raw MPI calls it made
/// (comm::check::LearnerCall) and a comm::NotImplemented or other exception come back. The judge's copies of the buffers are
/// then exactly what the lab's code left in its own, so the checks compile unchanged.
///
/// A lab lists its interface in checker/labs/NN-name/interface.cpp. Compiled into the judge
/// (WB_REMOTE_JUDGE), each entry defines the lab's function as a request; compiled into the
/// worker (WB_REMOTE_WORKER), it registers a handler that unpacks the request in the same order
/// and calls the student's function:
/// @code
///   WB_COMM_REMOTE(double, lab09::pingpong, (comm::Communicator& comm, void* buf, std::size_t bytes, int iters),
///                  (COMM(comm), BUFFER(buf, bytes), ARG(bytes), ARG(iters)))
/// @endcode
/// BUFFER(p, bytes) is a host buffer (null stays null; one that lies inside an earlier buffer of
/// the same call, e.g. in place, stays inside it), ARG(v) a value (trivially copyable, a
/// std::vector, or a type with a Codec; a device pointer is a value: a number the worker's own
/// CUDA runtime gave out), INOUT(v) a value passed by reference that the call changes (the
/// judge's copy takes what the lab's code left in it), VECTOR(v) a std::vector of trivially
/// copyable values, COMM(c) the communicator (the worker's own takes its place).
///
/// A lab whose code is CUDA (lab 12) gets the CUDA runtime requests of the single-process labs
/// over the same connection (judge_cuda.cpp in the judge, worker_cuda.cpp in the worker): device
/// memory lives in the worker, and the checks' cudaMalloc/cudaMemcpy reach it there.
#pragma once

#include <mpi.h>
#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "comm/check.h"
#include "comm/communicator.h"
#include "wb_remote.h"

namespace wb::remote::comm_split {

/// This process's rank, from what mpirun puts in its environment (judges and workers need it
/// before MPI starts, to find each other).
inline int env_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  }
  return 0;
}

/// Waits until @p fd has something to read (or is closed) while keeping this process's MPI
/// traffic moving: a call may return with data MPI still pushes to another rank (shared-memory
/// fragments beyond the receiver's queue), and that rank's call waits for it. A message wakes
/// the wait at once; the timeout only paces MPI's progress (1 to 16 ms).
inline void wait_readable_with_mpi_progress(int fd) {
  for (int wait_ms = 1;; wait_ms = wait_ms < 16 ? 2 * wait_ms : 16) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) != 0) return;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
}

/// Bytes of a collective's send (or receive) buffer on this rank, as the checks allocate them
/// (comm::send_elements, comm::recv_elements): the size a BUFFER of a collective carries.
inline std::size_t collective_bytes(comm::Collective c, bool send, std::size_t count, comm::DataType type,
                                    const comm::Communicator& comm) {
  return (send ? comm::send_elements(c, count, comm.size()) : comm::recv_elements(c, count, comm.size())) *
         comm::size_of(type);
}

// ---- values ----------------------------------------------------------------------------------

/// How a value crosses the channel: trivially copyable values as their bytes, std::vector
/// element by element; a lab's interface.cpp specializes it for its own types (a struct with
/// vectors, a struct that carries a callback). put() is used by the side that sends the value,
/// get() by the side that receives it.
template <class T, class Enable = void>
struct Codec {
  static void put(Writer& w, const T& v) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "remote values: trivially copyable, std::vector, or a Codec specialization in interface.cpp");
    w.put(v);
  }
  static T get(Reader& r) { return r.get<T>(); }
};

template <class T>
struct Codec<std::vector<T>> {
  static void put(Writer& w, const std::vector<T>& v) {
    w.put<std::uint64_t>(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) Codec<T>::put(w, static_cast<T>(v[i]));
  }
  static std::vector<T> get(Reader& r) {
    const auto n = r.get<std::uint64_t>();
    if (n > r.remaining()) throw ChannelError("malformed message: vector size");
    std::vector<T> v;
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(Codec<T>::get(r));
    return v;
  }
};

/// Judge side, inside a Codec's put() while a request is being built: passes a function of the
/// checks to the lab's code (e.g. a completion callback). The lab's code calls it through
/// call_back() with the id this returns; it runs in the judge, while the request is in flight,
/// and may make CUDA runtime calls (they are served by the worker meanwhile) but not call the
/// lab's functions. An exception it throws ends its call with an error for the lab's code and is
/// rethrown in the check when the request returns.
std::uint32_t add_callback(std::function<void(Reader& args, Writer& result)> f);

/// Worker side: calls the judge's function @p id (from add_callback) with @p args and returns
/// its result. Serves the judge's CUDA runtime requests while it waits.
Reader call_back(std::uint32_t id, const Writer& args);

// ---- judge side ----------------------------------------------------------------------------

/// One request to this rank's worker. Build it in the order of the function's parameters.
class Request {
 public:
  explicit Request(const char* name);
  Request& buffer(const void* p, std::size_t bytes);
  template <class T>
  Request& arg(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "remote arguments: trivially copyable values");
    args_.put(value);
    return *this;
  }
  template <class T>
  Request& vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    args_.put<std::uint64_t>(v.size());
    args_.put_bytes(v.data(), v.size() * sizeof(T));
    return *this;
  }
  /// A value by its Codec.
  template <class T>
  Request& value(const T& v) {
    Codec<T>::put(args_, v);
    return *this;
  }
  /// A value the call changes: sent by its Codec, and replaced by what the lab's code left in
  /// it when the reply comes (finish()).
  template <class T>
  Request& in_out(T& v) {
    Codec<T>::put(args_, v);
    writebacks_.push_back([&v](Reader& r) { v = Codec<T>::get(r); });
    return *this;
  }
  /// A function of the checks the lab's code may call during this request (add_callback).
  std::uint32_t callback(std::function<void(Reader&, Writer&)> f) {
    callbacks_.push_back(std::move(f));
    return static_cast<std::uint32_t>(callbacks_.size());
  }
  /// Sends the request and waits. Copies the buffers back and feeds the communicator's counters
  /// and the open LearnerCall windows; rethrows what the lab's code threw. Returns the reply's
  /// value part. When the worker is gone, the judge job ends here with a message that names the
  /// call (the launcher reruns the checks after this one).
  Reader run(comm::Communicator& comm);
  /// After the return value: the in_out() values, as the lab's code left them.
  void finish(Reader& reply) {
    for (auto& w : writebacks_) w(reply);
  }

 private:
  struct Region {
    char* p;
    std::size_t bytes;
  };
  const char* name_;
  Writer args_;
  std::vector<Region> regions_;
  std::vector<std::function<void(Reader&)>> writebacks_;
  std::vector<std::function<void(Reader&, Writer&)>> callbacks_;
};

/// Listens for this rank's worker and waits for it (at most WB_COMM_REMOTE_WAIT_S seconds,
/// default 60); called by the judge's main() before the checks start. Without
/// WB_COMM_REMOTE_DIR, every request fails with a message that says how to run the checks.
void accept_worker();
/// Tells the worker the checks are over (it finalizes MPI and exits).
void release_worker();

// ---- worker side ---------------------------------------------------------------------------

/// A request as the worker's handler reads it, in the order the judge wrote it.
class Args {
 public:
  /// Reads where the request's buffers lie: blocks of the memory shared with the judge
  /// (`shared`, `shared_bytes`: this worker's mapping of it), and each buffer's place in them.
  Args(Reader& in, char* shared, std::size_t shared_bytes);
  void* buffer();
  template <class T>
  T arg() {
    return in_.get<T>();
  }
  Reader& reader() { return in_; }
  template <class T>
  std::vector<T> vector() {
    const auto n = in_.get<std::uint64_t>();
    if (n > in_.remaining() / (sizeof(T) ? sizeof(T) : 1)) throw ChannelError("malformed request: vector size");
    std::vector<T> v(n);
    std::memcpy(v.data(), in_.take(n * sizeof(T)), n * sizeof(T));
    return v;
  }

 private:
  struct Block {
    char* data;
    std::size_t bytes;
  };
  Reader& in_;
  std::vector<Block> blocks_;
  std::vector<char*> buffers_;
};

/// A worker whose lab code is CUDA serves the judge's CUDA runtime requests with this
/// (wb::remote::serve_cuda; comm_worker_cuda.cpp sets it).
void set_cuda_server(void (*server)(Op, Reader&, Writer&));

using Handler = std::function<void(Args&, Writer& result, comm::Communicator& comm)>;
void register_handler(const char* name, Handler handler);
struct Registration {
  Registration(const char* name, Handler handler) { register_handler(name, std::move(handler)); }
};

// ---- the interface macros --------------------------------------------------------------------

namespace detail {
// Judge: one marker per parameter of the function, in order, carrying the value.
struct BufferP {
  const void* p;
  std::size_t bytes;
};
template <class T>
struct ArgP {
  const T& v;
};
template <class T>
struct InOutP {
  T& v;
};
template <class T>
struct VectorP {
  const std::vector<T>& v;
};
struct CommP {
  comm::Communicator& c;
};

inline void put(Request& r, const BufferP& b, comm::Communicator*&) { r.buffer(b.p, b.bytes); }
template <class T>
void put(Request& r, const ArgP<T>& a, comm::Communicator*&) {
  r.value(a.v);
}
template <class T>
void put(Request& r, const InOutP<T>& a, comm::Communicator*&) {
  r.in_out(a.v);
}

/// The request whose arguments are being written (add_callback registers with it).
Request*& building();
struct Building {
  explicit Building(Request& r) : previous(building()) { building() = &r; }
  ~Building() { building() = previous; }
  Request* previous;
};
template <class T>
void put(Request& r, const VectorP<T>& a, comm::Communicator*&) {
  r.vector(a.v);
}
inline void put(Request&, const CommP& c, comm::Communicator*& out) { out = &c.c; }

template <class R, class... P>
R judge_call(const char* name, const P&... params) {
  Request request(name);
  comm::Communicator* c = nullptr;
  {
    Building scope(request);
    (put(request, params, c), ...);
  }
  // A function without a communicator (a model, a fit) runs beside the world of the checks.
  Reader reply = request.run(c ? *c : comm::check::world());
  if constexpr (std::is_void_v<R>) {
    request.finish(reply);
  } else {
    R value = Codec<R>::get(reply);
    request.finish(reply);
    return value;
  }
}

// Worker: the same markers as tags; the function's parameter types say what to read.
struct BufferTag {};
struct ArgTag {};
struct InOutTag {};
struct VectorTag {};
struct CommTag {};

template <class A>
auto take(Args& a, comm::Communicator&, BufferTag) {
  return static_cast<std::decay_t<A>>(a.buffer());
}
template <class A>
auto take(Args& a, comm::Communicator&, ArgTag) {
  return Codec<std::decay_t<A>>::get(a.reader());
}
template <class A>
auto take(Args& a, comm::Communicator&, InOutTag) {
  return Codec<std::decay_t<A>>::get(a.reader());
}
// After the return value: each in-out value as the function left it, in parameter order.
template <class Tag, class V>
void put_back(Writer& out, V& v) {
  if constexpr (std::is_same_v<Tag, InOutTag>) Codec<V>::put(out, v);
}
template <class Tags, class Values, std::size_t... I>
void put_back_all(Writer& out, Values& values, std::index_sequence<I...>) {
  (put_back<std::tuple_element_t<I, Tags>>(out, std::get<I>(values)), ...);
}
template <class A>
auto take(Args& a, comm::Communicator&, VectorTag) {
  return a.vector<typename std::decay_t<A>::value_type>();
}
template <class A>
auto take(Args&, comm::Communicator& c, CommTag) {
  return std::ref(c);
}

template <class R, class... A, class... T>
void invoke(Args& a, Writer& out, comm::Communicator& c, R (*f)(A...), T... tags) {
  static_assert(sizeof...(A) == sizeof...(T), "one marker per parameter");
  std::tuple<decltype(take<A>(a, c, tags))...> values{take<A>(a, c, tags)...};  // braced: in order
  if constexpr (std::is_void_v<R>) {
    std::apply(f, values);
  } else {
    Codec<R>::put(out, std::apply(f, values));
  }
  put_back_all<std::tuple<T...>>(out, values, std::index_sequence_for<T...>{});
}
}  // namespace detail

}  // namespace wb::remote::comm_split

#define WB_COMM_CAT2(a, b) a##b
#define WB_COMM_CAT(a, b) WB_COMM_CAT2(a, b)

#if defined(WB_REMOTE_JUDGE)
#define BUFFER(p, bytes) ::wb::remote::comm_split::detail::BufferP{p, static_cast<std::size_t>(bytes)}
#define ARG(v) ::wb::remote::comm_split::detail::ArgP<std::decay_t<decltype(v)>>{v}
#define INOUT(v) ::wb::remote::comm_split::detail::InOutP<std::remove_reference_t<decltype(v)>>{v}
#define VECTOR(v) ::wb::remote::comm_split::detail::VectorP<typename std::decay_t<decltype(v)>::value_type>{v}
#define COMM(c) ::wb::remote::comm_split::detail::CommP{c}
#define WB_COMM_REMOTE_AS(R, name, wire, params, args) \
  R name params { return ::wb::remote::comm_split::detail::judge_call<R>(wire, WB_COMM_UNPAREN args); }
#elif defined(WB_REMOTE_WORKER)
#define BUFFER(p, bytes) ::wb::remote::comm_split::detail::BufferTag{}
#define ARG(v) ::wb::remote::comm_split::detail::ArgTag{}
#define INOUT(v) ::wb::remote::comm_split::detail::InOutTag{}
#define VECTOR(v) ::wb::remote::comm_split::detail::VectorTag{}
#define COMM(c) ::wb::remote::comm_split::detail::CommTag{}
#define WB_COMM_REMOTE_AS(R, name, wire, params, args)                                                     \
  static const ::wb::remote::comm_split::Registration WB_COMM_CAT(wb_comm_registration_, __LINE__){       \
      wire, [](::wb::remote::comm_split::Args& a_, ::wb::remote::Writer& out_, ::comm::Communicator& c_) { \
        ::wb::remote::comm_split::detail::invoke(a_, out_, c_, static_cast<R(*) params>(&name),          \
                                                 WB_COMM_UNPAREN args);                                  \
      }};
#else
#define WB_COMM_REMOTE_AS(R, name, wire, params, args) \
  static_assert(false, "compile a lab's interface.cpp with WB_REMOTE_JUDGE or WB_REMOTE_WORKER");
#endif

#define WB_COMM_UNPAREN(...) __VA_ARGS__
/// One interface function, sent under its own name.
#define WB_COMM_REMOTE(R, name, params, args) WB_COMM_REMOTE_AS(R, name, #name, params, args)
