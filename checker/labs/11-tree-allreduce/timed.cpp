#include "timed.h"

#include "tree_allreduce.h"

namespace lab11::timed {

comm::check::VsLibrary double_tree_vs_library(const comm::HarnessOptions& options, std::size_t segment_bytes,
                                              comm::Communicator& comm) {
  return comm::check::time_vs_library(
      [segment_bytes](const void* s, void* r, std::size_t count, comm::DataType t, comm::RedOp op,
                      comm::Communicator& c) { lab11::double_tree_allreduce(s, r, count, t, op, c, segment_bytes); },
      options, comm);
}

}  // namespace lab11::timed
