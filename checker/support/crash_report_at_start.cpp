// Linked into a check binary that runs the lab's code in its own process (the cuda backend; sim
// with WB_SPLIT_CHECKS=OFF or a wb_add_check_binary(... IN_PROCESS)): installs the crash report
// (crash_report.h) before any static constructor of the lab's code, the CUDA runtime or cusim
// runs, so that a crash in the lab's host code is located as in a split binary's worker
// ("The lab's code crashed at FILE:LINE in FUNCTION"), and so that handlers installed later
// (cusim's, for faults in kernels) chain back to this one.
#include "crash_report.h"

namespace {

__attribute__((constructor(101))) void install_crash_report_at_start() { wb::crash_report::install(); }

}  // namespace
