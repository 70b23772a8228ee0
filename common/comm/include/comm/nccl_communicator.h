// The NCCL backend (builds of the cuda backend where NCCL was found: COMM_WITH_NCCL).
//
// Buffers are device memory. NCCL bootstraps from a unique id that rank 0 creates and
// broadcasts over MPI, so the job is still started by mpirun (or Slurm) with one process per
// rank. NCCL allows one rank per GPU: on a single GPU only n = 1 runs; on a multi-GPU node
// start one rank per GPU (MpiSession selects device local_rank % device_count).
//
// Semantics on top of ncclSend/ncclRecv:
// - NCCL has no tags: messages between two ranks match in the order they are posted, so
//   tags are checked for range but otherwise ignored.
// - isend/irecv are queued; the first wait/wait_all issues every queued operation inside one
//   ncclGroupStart/ncclGroupEnd (which lets a send and a receive to the same peer proceed
//   together) and synchronizes the stream. send/recv are an isend/irecv and a wait.
#pragma once

#ifdef COMM_WITH_NCCL
#include <mpi.h>

#include <memory>

#include "comm/communicator.h"

namespace comm {

/// A communicator over NCCL with the ranks of `bootstrap`.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm bootstrap = MPI_COMM_WORLD);

}  // namespace comm
#endif
