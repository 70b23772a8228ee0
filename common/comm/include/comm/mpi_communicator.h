// The MPI backend: one process per rank (mpirun), any transport Open MPI selects
// (shared memory on one machine, TCP or InfiniBand across machines).
//
// Host buffers go straight to MPI. Device buffers (builds with CUDA) are staged through pinned
// host memory unless the MPI library reports CUDA awareness, so several ranks can share one
// GPU with any MPI build.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/communicator.h"

namespace comm {

/// Initializes MPI for the lifetime of the object (MPI_Init_thread, then MPI_Finalize).
/// Also selects a GPU per node-local rank on builds with CUDA and opens the status record.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int world_rank() const { return rank_; }
  int world_size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

/// A communicator over `comm` (duplicated, so lab traffic never mixes with other traffic).
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm = MPI_COMM_WORLD,
                                                   MemorySpace space = default_memory_space());

MPI_Datatype mpi_type(DataType t);
MPI_Op mpi_op(RedOp op);

}  // namespace comm

/// Throws comm::Error with file:line and MPI's error string when an MPI call fails.
#define COMM_MPI_CHECK(call)                                   \
  do {                                                         \
    int comm_mpi_rc_ = (call);                                 \
    if (comm_mpi_rc_ != MPI_SUCCESS)                           \
      ::comm::detail::throw_mpi_error(__FILE__, __LINE__, #call, comm_mpi_rc_); \
  } while (0)

namespace comm::detail {
[[noreturn]] void throw_mpi_error(const char* file, int line, const char* call, int rc);
}
