/// @file
/// @brief Where a check runs a vendor-library baseline (CUB, cuBLAS, cuDNN): out of the lab's reach.
///
/// In a split check binary (checker/support/remote) the checks' CUDA calls run in the worker, the
/// process that holds the lab's code, which could slow a baseline down or replace the library's
/// function. A baseline is run and timed in a scope of InCheckersProcess instead: every CUDA runtime
/// call, timing and function call of this thread then goes to the checker's own CUDA process (the
/// check binary's name with _trusted: the lab's CUDA_BASELINES and the server, no lab code), and
/// device buffers made in the scope live there. Buffers must not cross the scope's boundary (each
/// is freed where it was made), and no lab function can be called inside it. Where the checks run
/// in the lab's process the scope does nothing.
/// @code
///   {
///     wb::check::InCheckersProcess checkers;
///     TimedScan cub_data(seed);                  // its buffers in the checker's process
///     wb::Bandwidth cub;
///     cub_data.time("CUB InclusiveSum", [&] { return cub_data.cub(); }, cub);
///   }
/// @endcode
#pragma once

#include "wb/timing_hooks.h"

namespace wb::check {

class InCheckersProcess {
 public:
  InCheckersProcess() {
    if (const auto enter = wb::detail::timing_hooks().enter_checkers_process) enter();
  }
  ~InCheckersProcess() {
    if (const auto leave = wb::detail::timing_hooks().leave_checkers_process) leave();
  }
  InCheckersProcess(const InCheckersProcess&) = delete;
  InCheckersProcess& operator=(const InCheckersProcess&) = delete;
};

}  // namespace wb::check
