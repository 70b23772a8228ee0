#include "timed.h"

#include "ring_allreduce.h"

namespace lab10::timed {

comm::check::VsLibrary pipelined_vs_library(const comm::HarnessOptions& options, std::size_t segment_bytes,
                                            comm::Communicator& comm) {
  return comm::check::time_vs_library(
      [segment_bytes](const void* s, void* r, std::size_t count, comm::DataType t, comm::RedOp op,
                      comm::Communicator& c) { lab10::ring_allreduce_pipelined(s, r, count, t, op, c, segment_bytes); },
      options, comm);
}

}  // namespace lab10::timed
