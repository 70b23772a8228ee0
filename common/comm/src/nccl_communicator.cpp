#include "comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "comm/error.h"
#include "comm/mpi_communicator.h"

#define COMM_NCCL_CHECK(call)                                                                          \
  do {                                                                                                 \
    ncclResult_t comm_nccl_rc_ = (call);                                                               \
    if (comm_nccl_rc_ != ncclSuccess)                                                                  \
      throw ::comm::Error(__FILE__, __LINE__, std::string(#call) + " failed: " + ncclGetErrorString(comm_nccl_rc_)); \
  } while (0)
#define COMM_CUDA_CHECK(call)                                                                          \
  do {                                                                                                 \
    cudaError_t comm_cuda_rc_ = (call);                                                                \
    if (comm_cuda_rc_ != cudaSuccess)                                                                  \
      throw ::comm::Error(__FILE__, __LINE__, std::string(#call) + " failed: " + cudaGetErrorString(comm_cuda_rc_)); \
  } while (0)

namespace comm {
namespace {

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::i32: return ncclInt32;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::sum: return ncclSum;
    case RedOp::prod: return ncclProd;
    case RedOp::min: return ncclMin;
    case RedOp::max: return ncclMax;
  }
  return ncclSum;
}

struct NcclRequest : detail::RequestImpl {
  bool is_recv = false;
  const void* send_buf = nullptr;
  void* recv_buf = nullptr;
  std::size_t bytes = 0;
  int peer = 0;
  bool issued = false;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm bootstrap, int rank, int size) : Communicator(rank, size, MemorySpace::device) {
    COMM_MPI_CHECK(MPI_Comm_dup(bootstrap, &mpi_));
    ncclUniqueId id;
    if (rank == 0) COMM_NCCL_CHECK(ncclGetUniqueId(&id));
    COMM_MPI_CHECK(PMPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_));
    COMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    COMM_NCCL_CHECK(ncclCommInitRank(&nccl_, size, id, rank));
  }
  ~NcclCommunicator() override {
    ncclCommDestroy(nccl_);
    cudaStreamDestroy(stream_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&mpi_);
  }

  const char* backend_name() const override { return "nccl"; }
  double wtime() const override { return MPI_Wtime(); }

 protected:
  void do_send(const void* buf, std::size_t bytes, int peer, int tag) override {
    auto r = do_isend(buf, bytes, peer, tag);
    detail::RequestImpl* p = r.get();
    do_wait_all(&p, 1);
  }
  void do_recv(void* buf, std::size_t bytes, int peer, int tag) override {
    auto r = do_irecv(buf, bytes, peer, tag);
    detail::RequestImpl* p = r.get();
    do_wait_all(&p, 1);
  }
  std::unique_ptr<detail::RequestImpl> do_isend(const void* buf, std::size_t bytes, int peer, int) override {
    auto r = std::make_unique<NcclRequest>();
    r->send_buf = buf;
    r->bytes = bytes;
    r->peer = peer;
    queued_.push_back(r.get());
    return r;
  }
  std::unique_ptr<detail::RequestImpl> do_irecv(void* buf, std::size_t bytes, int peer, int) override {
    auto r = std::make_unique<NcclRequest>();
    r->is_recv = true;
    r->recv_buf = buf;
    r->bytes = bytes;
    r->peer = peer;
    queued_.push_back(r.get());
    return r;
  }
  void do_wait_all(detail::RequestImpl** impls, std::size_t n) override {
    // Issue everything queued so far (not only the awaited requests): a rank may wait for a
    // receive whose matching send on the peer depends on this rank's queued send.
    flush();
    COMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (std::size_t i = 0; i < n; ++i) static_cast<NcclRequest*>(impls[i])->issued = true;
  }
  void do_barrier() override {
    flush();
    COMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    COMM_MPI_CHECK(PMPI_Barrier(mpi_));
  }
  void do_library(const LibraryCall& c) override {
    flush();
    const ncclDataType_t t = nccl_type(c.type);
    const std::size_t block = c.count * size_of(c.type);
    auto* sb = static_cast<const char*>(c.sendbuf);
    auto* rb = static_cast<char*>(c.recvbuf);
    const int n = size(), me = rank();
    switch (c.kind) {
      case Collective::allreduce:
        COMM_NCCL_CHECK(ncclAllReduce(sb, rb, c.count, t, nccl_op(c.op), nccl_, stream_));
        break;
      case Collective::broadcast:
        COMM_NCCL_CHECK(ncclBroadcast(sb, rb, c.count, t, c.root, nccl_, stream_));
        break;
      case Collective::reduce:
        COMM_NCCL_CHECK(ncclReduce(sb, rb, c.count, t, nccl_op(c.op), c.root, nccl_, stream_));
        break;
      case Collective::allgather:
        COMM_NCCL_CHECK(ncclAllGather(sb, rb, c.count, t, nccl_, stream_));
        break;
      case Collective::reduce_scatter:
        COMM_NCCL_CHECK(ncclReduceScatter(sb, rb, c.count, t, nccl_op(c.op), nccl_, stream_));
        break;
      // Gather, scatter and all-to-all as nccl-tests builds them: grouped send/recv.
      case Collective::gather:
        COMM_NCCL_CHECK(ncclGroupStart());
        if (me == c.root) {
          for (int r = 0; r < n; ++r)
            if (r != me) COMM_NCCL_CHECK(ncclRecv(rb + r * block, c.count, t, r, nccl_, stream_));
        } else {
          COMM_NCCL_CHECK(ncclSend(sb, c.count, t, c.root, nccl_, stream_));
        }
        COMM_NCCL_CHECK(ncclGroupEnd());
        if (me == c.root && sb != rb + me * block)
          COMM_CUDA_CHECK(cudaMemcpyAsync(rb + me * block, sb, block, cudaMemcpyDeviceToDevice, stream_));
        break;
      case Collective::scatter:
        COMM_NCCL_CHECK(ncclGroupStart());
        if (me == c.root) {
          for (int r = 0; r < n; ++r)
            if (r != me) COMM_NCCL_CHECK(ncclSend(sb + r * block, c.count, t, r, nccl_, stream_));
        } else {
          COMM_NCCL_CHECK(ncclRecv(rb, c.count, t, c.root, nccl_, stream_));
        }
        COMM_NCCL_CHECK(ncclGroupEnd());
        if (me == c.root && rb != sb + me * block)
          COMM_CUDA_CHECK(cudaMemcpyAsync(rb, sb + me * block, block, cudaMemcpyDeviceToDevice, stream_));
        break;
      case Collective::alltoall: {
        const char* src = sb;
        if (sb == rb) {  // in place: send from a copy
          if (inplace_copy_.bytes() < block * n) inplace_copy_ = allocate(block * n);
          src = static_cast<const char*>(inplace_copy_.data());
          COMM_CUDA_CHECK(cudaMemcpyAsync(const_cast<char*>(src), sb, block * n, cudaMemcpyDeviceToDevice, stream_));
        }
        COMM_NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < n; ++r) {
          COMM_NCCL_CHECK(ncclSend(src + r * block, c.count, t, r, nccl_, stream_));
          COMM_NCCL_CHECK(ncclRecv(rb + r * block, c.count, t, r, nccl_, stream_));
        }
        COMM_NCCL_CHECK(ncclGroupEnd());
        break;
      }
    }
    COMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void abandon(detail::RequestImpl* impl) noexcept override {
    for (auto it = queued_.begin(); it != queued_.end(); ++it)
      if (*it == impl) {
        queued_.erase(it);
        break;
      }
  }

 private:
  void flush() {
    if (queued_.empty()) return;
    COMM_NCCL_CHECK(ncclGroupStart());
    for (NcclRequest* r : queued_) {
      if (r->bytes == 0) continue;  // both sides skip empty messages alike
      if (r->is_recv)
        COMM_NCCL_CHECK(ncclRecv(r->recv_buf, r->bytes, ncclUint8, r->peer, nccl_, stream_));
      else
        COMM_NCCL_CHECK(ncclSend(r->send_buf, r->bytes, ncclUint8, r->peer, nccl_, stream_));
      r->issued = true;
    }
    COMM_NCCL_CHECK(ncclGroupEnd());
    queued_.clear();
  }

  MPI_Comm mpi_;
  ncclComm_t nccl_;
  cudaStream_t stream_;
  std::vector<NcclRequest*> queued_;
  Buffer inplace_copy_;  // the send side of an in-place library all-to-all
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm bootstrap) {
  int rank = 0, size = 1;
  MPI_Comm_rank(bootstrap, &rank);
  MPI_Comm_size(bootstrap, &size);
  return std::make_unique<NcclCommunicator>(bootstrap, rank, size);
}

}  // namespace comm
