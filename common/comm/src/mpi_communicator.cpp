#include "comm/mpi_communicator.h"

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "comm/error.h"
#include "comm/status.h"
#ifdef COMM_WITH_CUDA
#include "device_api.h"
#endif

// The data-moving calls go to MPI's profiling names (PMPI_Send, PMPI_Allreduce, ...): the check
// binaries define the MPI_* names to record the calls a lab's own code makes
// (checker/comm/pmpi_guard.cpp), and the communicator's traffic is not the lab's.

namespace comm {

namespace detail {
void throw_mpi_error(const char* file, int line, const char* call, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  // The communicator calls MPI through its profiling names (PMPI_Send, ...): name the call
  // as MPI documents it.
  if (std::strncmp(call, "PMPI_", 5) == 0) ++call;
  throw Error(file, line, std::string(call) + " failed: " + std::string(text, len));
}
}  // namespace detail

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::i32: return MPI_INT32_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(RedOp op) {
  switch (op) {
    case RedOp::sum: return MPI_SUM;
    case RedOp::prod: return MPI_PROD;
    case RedOp::min: return MPI_MIN;
    case RedOp::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    COMM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  status::open(rank_);
#ifdef COMM_WITH_CUDA
  // Ranks on one node share its GPUs round-robin (several ranks per GPU is allowed with MPI).
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (detail::device_count() > 0) detail::select_device(local_rank);
#endif
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

namespace {

struct MpiRequest : detail::RequestImpl {
  MPI_Request request = MPI_REQUEST_NULL;
  void* staging = nullptr;     // pinned host copy of a device buffer
  void* device_dst = nullptr;  // where a staged receive lands on completion
  std::size_t bytes = 0;
};

int checked_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    COMM_THROW("message of " + std::to_string(bytes) + " bytes exceeds the MPI backend's 2 GiB message limit; "
               "split it into several messages");
  return static_cast<int>(bytes);
}

bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, MemorySpace space)
      : Communicator(rank, size, space), comm_(comm) {
    stage_ = space == MemorySpace::device && !mpi_is_cuda_aware();
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  const char* backend_name() const override { return "mpi"; }
  double wtime() const override { return MPI_Wtime(); }

 protected:
  void do_send(const void* buf, std::size_t bytes, int peer, int tag) override {
    int n = checked_count(bytes);
    if (!stage_ || bytes == 0) {
      COMM_MPI_CHECK(PMPI_Send(buf, n, MPI_BYTE, peer, tag, comm_));
      return;
    }
#ifdef COMM_WITH_CUDA
    void* host = detail::pinned_acquire(bytes);
    try {
      detail::device_copy(host, false, buf, true, bytes);
      COMM_MPI_CHECK(PMPI_Send(host, n, MPI_BYTE, peer, tag, comm_));
    } catch (...) {
      detail::pinned_release(host);
      throw;
    }
    detail::pinned_release(host);
#endif
  }

  void do_recv(void* buf, std::size_t bytes, int peer, int tag) override {
    int n = checked_count(bytes);
    MPI_Status st;
    if (!stage_ || bytes == 0) {
      COMM_MPI_CHECK(PMPI_Recv(buf, n, MPI_BYTE, peer, tag, comm_, &st));
      return;
    }
#ifdef COMM_WITH_CUDA
    void* host = detail::pinned_acquire(bytes);
    try {
      COMM_MPI_CHECK(PMPI_Recv(host, n, MPI_BYTE, peer, tag, comm_, &st));
      detail::device_copy(buf, true, host, false, bytes);
    } catch (...) {
      detail::pinned_release(host);
      throw;
    }
    detail::pinned_release(host);
#endif
  }

  std::unique_ptr<detail::RequestImpl> do_isend(const void* buf, std::size_t bytes, int peer, int tag) override {
    auto r = std::make_unique<MpiRequest>();
    int n = checked_count(bytes);
    r->bytes = bytes;
    const void* src = buf;
#ifdef COMM_WITH_CUDA
    if (stage_ && bytes > 0) {
      r->staging = detail::pinned_acquire(bytes);
      detail::device_copy(r->staging, false, buf, true, bytes);
      src = r->staging;
    }
#endif
    COMM_MPI_CHECK(PMPI_Isend(src, n, MPI_BYTE, peer, tag, comm_, &r->request));
    return r;
  }

  std::unique_ptr<detail::RequestImpl> do_irecv(void* buf, std::size_t bytes, int peer, int tag) override {
    auto r = std::make_unique<MpiRequest>();
    int n = checked_count(bytes);
    r->bytes = bytes;
    void* dst = buf;
#ifdef COMM_WITH_CUDA
    if (stage_ && bytes > 0) {
      r->staging = detail::pinned_acquire(bytes);
      r->device_dst = buf;
      dst = r->staging;
    }
#endif
    COMM_MPI_CHECK(PMPI_Irecv(dst, n, MPI_BYTE, peer, tag, comm_, &r->request));
    return r;
  }

  void do_wait_all(detail::RequestImpl** impls, std::size_t n) override {
    if (n == 1) {
      MPI_Status st;
      COMM_MPI_CHECK(MPI_Wait(&static_cast<MpiRequest*>(impls[0])->request, &st));
    } else {
      std::vector<MPI_Request> reqs(n);
      for (std::size_t i = 0; i < n; ++i) reqs[i] = static_cast<MpiRequest*>(impls[i])->request;
      std::vector<MPI_Status> st(n);
      int rc = MPI_Waitall(static_cast<int>(n), reqs.data(), st.data());
      if (rc == MPI_ERR_IN_STATUS) {
        for (auto& s : st)
          if (s.MPI_ERROR != MPI_SUCCESS && s.MPI_ERROR != MPI_ERR_PENDING) rc = s.MPI_ERROR;
      }
      if (rc != MPI_SUCCESS) detail::throw_mpi_error(__FILE__, __LINE__, "MPI_Waitall", rc);
    }
    for (std::size_t i = 0; i < n; ++i) {
      auto* r = static_cast<MpiRequest*>(impls[i]);
      r->request = MPI_REQUEST_NULL;
#ifdef COMM_WITH_CUDA
      if (r->staging) {
        if (r->device_dst) detail::device_copy(r->device_dst, true, r->staging, false, r->bytes);
        detail::pinned_release(r->staging);
        r->staging = nullptr;
      }
#endif
    }
  }

  void do_barrier() override { COMM_MPI_CHECK(PMPI_Barrier(comm_)); }

  void do_library(const LibraryCall& c) override {
    const std::size_t elem = size_of(c.type);
    const bool root = rank() == c.root;
    // The bytes of each buffer this rank reads or writes (0: unused here).
    std::size_t send_bytes = send_elements(c.kind, c.count, size()) * elem;
    std::size_t recv_bytes = recv_elements(c.kind, c.count, size()) * elem;
    if (!root && (c.kind == Collective::broadcast || c.kind == Collective::scatter)) send_bytes = 0;
    if (!root && (c.kind == Collective::reduce || c.kind == Collective::gather)) recv_bytes = 0;
    COMM_REQUIRE(c.count <= static_cast<std::size_t>(INT_MAX),
                 std::string("library_") + name_of(c.kind) + ": count exceeds INT_MAX");
    if (!stage_) {
      run_host(c);
      return;
    }
#ifdef COMM_WITH_CUDA
    // Device buffers through pinned host memory: one region per buffer, or one for both when
    // one lies inside the other (in place), so that the pointer relation MPI_IN_PLACE relies
    // on holds on the host copies too.
    auto* sb = static_cast<const char*>(c.sendbuf);
    auto* rb = static_cast<char*>(c.recvbuf);
    auto inside = [](const char* p, std::size_t pb, const char* q, std::size_t qb) {
      return pb > 0 && qb >= pb && p >= q && p + pb <= q + qb;
    };
    LibraryCall h = c;
    void* region = nullptr;
    void* extra = nullptr;
    try {
      if (send_bytes > 0 && recv_bytes > 0 && inside(sb, send_bytes, rb, recv_bytes)) {
        region = detail::pinned_acquire(recv_bytes);
        detail::device_copy(region, false, rb, true, recv_bytes);
        h.recvbuf = region;
        h.sendbuf = static_cast<char*>(region) + (sb - rb);
        run_host(h);
        detail::device_copy(rb, true, region, false, recv_bytes);
      } else if (send_bytes > 0 && recv_bytes > 0 && inside(rb, recv_bytes, sb, send_bytes)) {
        region = detail::pinned_acquire(send_bytes);
        detail::device_copy(region, false, sb, true, send_bytes);
        h.sendbuf = region;
        h.recvbuf = static_cast<char*>(region) + (rb - sb);
        run_host(h);
        detail::device_copy(rb, true, h.recvbuf, false, recv_bytes);
      } else {
        if (send_bytes > 0) {
          region = detail::pinned_acquire(send_bytes);
          detail::device_copy(region, false, sb, true, send_bytes);
          h.sendbuf = region;
        }
        if (recv_bytes > 0) {
          extra = detail::pinned_acquire(recv_bytes);
          h.recvbuf = extra;
        }
        run_host(h);
        if (recv_bytes > 0) detail::device_copy(rb, true, extra, false, recv_bytes);
      }
    } catch (...) {
      if (region) detail::pinned_release(region);
      if (extra) detail::pinned_release(extra);
      throw;
    }
    if (region) detail::pinned_release(region);
    if (extra) detail::pinned_release(extra);
#endif
  }

  void abandon(detail::RequestImpl* impl) noexcept override {
    auto* r = static_cast<MpiRequest*>(impl);
    if (r->request != MPI_REQUEST_NULL) MPI_Request_free(&r->request);
    // A staged buffer may still be read or written by MPI: keep it (a leak beats corruption).
    r->staging = nullptr;
  }

 private:
  /// The MPI call of `c` on host (or MPI-accessible) buffers.
  void run_host(const LibraryCall& c) {
    const int count = static_cast<int>(c.count);
    const MPI_Datatype t = mpi_type(c.type);
    const std::size_t block = c.count * size_of(c.type);
    auto* sb = static_cast<const char*>(c.sendbuf);
    auto* rb = static_cast<char*>(c.recvbuf);
    const bool root = rank() == c.root;
    switch (c.kind) {
      case Collective::allreduce:
        COMM_MPI_CHECK(PMPI_Allreduce(sb == rb ? MPI_IN_PLACE : sb, rb, count, t, mpi_op(c.op), comm_));
        return;
      case Collective::broadcast:
        if (root && sb != rb) std::memcpy(rb, sb, block);
        COMM_MPI_CHECK(PMPI_Bcast(rb, count, t, c.root, comm_));
        return;
      case Collective::reduce:
        COMM_MPI_CHECK(PMPI_Reduce(root && sb == rb ? MPI_IN_PLACE : sb, rb, count, t, mpi_op(c.op), c.root, comm_));
        return;
      case Collective::allgather:
        COMM_MPI_CHECK(PMPI_Allgather(sb == rb + rank() * block ? MPI_IN_PLACE : sb, count, t, rb, count, t, comm_));
        return;
      case Collective::reduce_scatter:
        if (rb == sb + rank() * block) {
          // NCCL's in place (result at the rank's own block) from MPI's (result at the front).
          COMM_MPI_CHECK(
              PMPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<char*>(sb), count, t, mpi_op(c.op), comm_));
          if (rank() != 0) std::memmove(rb, sb, block);
        } else {
          COMM_MPI_CHECK(PMPI_Reduce_scatter_block(sb, rb, count, t, mpi_op(c.op), comm_));
        }
        return;
      case Collective::gather:
        COMM_MPI_CHECK(PMPI_Gather(root && sb == rb + rank() * block ? MPI_IN_PLACE : sb, count, t, rb, count, t,
                                   c.root, comm_));
        return;
      case Collective::scatter:
        COMM_MPI_CHECK(PMPI_Scatter(sb, count, t, root && rb == sb + rank() * block ? MPI_IN_PLACE : rb, count, t,
                                    c.root, comm_));
        return;
      case Collective::alltoall:
        COMM_MPI_CHECK(PMPI_Alltoall(sb == rb ? MPI_IN_PLACE : sb, count, t, rb, count, t, comm_));
        return;
    }
  }

  MPI_Comm comm_;
  bool stage_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, MemorySpace space) {
  MPI_Comm dup;
  COMM_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  COMM_MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  int rank = 0, size = 1;
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &size);
  return std::make_unique<MpiCommunicator>(dup, rank, size, space);
}

}  // namespace comm
