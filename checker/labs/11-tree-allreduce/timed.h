// What lab 11's Performance check times, run where the lab's code runs: in the check binary, or
// in the worker beside the lab's code when the checks are split (interface.cpp), so that the
// double tree and the library's all-reduce are timed alike and no buffer crosses to the judge.
#pragma once

#include <cstddef>

#include "comm/check.h"
#include "comm/communicator.h"
#include "comm/harness.h"

namespace lab11::timed {

/// double_tree_allreduce(segment_bytes) against the library's all-reduce (time_vs_library).
comm::check::VsLibrary double_tree_vs_library(const comm::HarnessOptions& options, std::size_t segment_bytes,
                                              comm::Communicator& comm);

}  // namespace lab11::timed
