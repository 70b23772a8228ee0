#include "comm/mpi_communicator.h"

#include <climits>
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

namespace comm {

namespace detail {
void throw_mpi_error(const char* file, int line, const char* call, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
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
      COMM_MPI_CHECK(MPI_Send(buf, n, MPI_BYTE, peer, tag, comm_));
      return;
    }
#ifdef COMM_WITH_CUDA
    void* host = detail::pinned_acquire(bytes);
    try {
      detail::device_copy(host, false, buf, true, bytes);
      COMM_MPI_CHECK(MPI_Send(host, n, MPI_BYTE, peer, tag, comm_));
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
      COMM_MPI_CHECK(MPI_Recv(buf, n, MPI_BYTE, peer, tag, comm_, &st));
      return;
    }
#ifdef COMM_WITH_CUDA
    void* host = detail::pinned_acquire(bytes);
    try {
      COMM_MPI_CHECK(MPI_Recv(host, n, MPI_BYTE, peer, tag, comm_, &st));
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
    COMM_MPI_CHECK(MPI_Isend(src, n, MPI_BYTE, peer, tag, comm_, &r->request));
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
    COMM_MPI_CHECK(MPI_Irecv(dst, n, MPI_BYTE, peer, tag, comm_, &r->request));
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

  void do_barrier() override { COMM_MPI_CHECK(MPI_Barrier(comm_)); }

  void do_library_allreduce(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                            RedOp op) override {
    if (count == 0) return;
    COMM_REQUIRE(count <= static_cast<std::size_t>(INT_MAX), "library_allreduce: count exceeds INT_MAX");
    const void* send = sendbuf == recvbuf ? MPI_IN_PLACE : sendbuf;
    if (!stage_) {
      COMM_MPI_CHECK(MPI_Allreduce(send, recvbuf, static_cast<int>(count), mpi_type(type), mpi_op(op), comm_));
      return;
    }
#ifdef COMM_WITH_CUDA
    std::size_t bytes = count * size_of(type);
    void* host = detail::pinned_acquire(bytes);
    try {
      detail::device_copy(host, false, sendbuf, true, bytes);
      COMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(count), mpi_type(type), mpi_op(op), comm_));
      detail::device_copy(recvbuf, true, host, false, bytes);
    } catch (...) {
      detail::pinned_release(host);
      throw;
    }
    detail::pinned_release(host);
#endif
  }

  void abandon(detail::RequestImpl* impl) noexcept override {
    auto* r = static_cast<MpiRequest*>(impl);
    if (r->request != MPI_REQUEST_NULL) MPI_Request_free(&r->request);
    // A staged buffer may still be read or written by MPI: keep it (a leak beats corruption).
    r->staging = nullptr;
  }

 private:
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
