// The crash report of a process that runs a lab's code: on SIGSEGV, SIGBUS, SIGFPE, SIGILL or
// SIGABRT its backtrace goes to stderr between two marker lines, which the runner resolves into
// file:line (checker/symbolize.py: WORKER_BEGIN, WORKER_END), then the signal takes its course
// (the process still dies of it, so its exit status says how it ended).
//
// Installed by the worker of a split check binary (checker/support/remote/worker.cpp) and, before
// anything else runs, by a check binary that runs the lab's code in its own process (the cuda
// backend, or sim with WB_SPLIT_CHECKS=OFF: crash_report_at_start.cpp).
#pragma once

namespace wb::crash_report {

/// Installs the handler (with an alternate signal stack, so that a stack overflow is reported
/// too) for the calling thread's process. Handlers installed later, such as cusim's for faults in
/// kernel code, chain back to it for faults that are not theirs.
void install();

}  // namespace wb::crash_report
