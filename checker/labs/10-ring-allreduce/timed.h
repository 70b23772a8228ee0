// What lab 10's Performance check times, run where the lab's code runs: in the check binary, or
// in the worker beside the lab's code when the checks are split (interface.cpp), so that the
// ring and the library's all-reduce are timed alike and no buffer crosses to the judge.
#pragma once

#include <cstddef>

#include "comm/check.h"
#include "comm/communicator.h"
#include "comm/harness.h"

namespace lab10::timed {

/// ring_allreduce_pipelined(segment_bytes) against the library's all-reduce (time_vs_library).
comm::check::VsLibrary pipelined_vs_library(const comm::HarnessOptions& options, std::size_t segment_bytes,
                                            comm::Communicator& comm);

}  // namespace lab10::timed
