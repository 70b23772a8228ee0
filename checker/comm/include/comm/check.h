// Support for collective checks: GoogleTest under mpirun, and messages that say what went
// wrong in a learner's all-reduce.
//
// Checks are declared with WB_CHECK (checker/support/wb_check_spec.h). Every rank runs the same
// tests in the same order. A check computes its verdict locally,
// then all ranks agree on it (agree_all) so pass/fail is identical on every rank, and rank
// 0's report (the one the runner reads) carries every rank's findings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/harness.h"
#include "wb_check_spec.h"  // WB_CHECK: each check declared once (checker/support)

namespace comm::check {

/// The world communicator of the check binary (created by run_all_tests).
Communicator& world();

/// main() of a check binary: MPI session, per-rank GoogleTest output (rank 0 writes the
/// --gtest_output file, rank R > 0 writes it with suffix ".rank<R>" and prints nothing),
/// status record updates per test, and a return code agreed by all ranks.
int run_all_tests(int argc, char** argv);

/// True on every rank iff `ok` on every rank.
bool agree_all(bool ok);

/// Every rank's `text`, gathered on all ranks, as "rank R: text" lines for non-empty texts.
std::string gather_text(const std::string& text);

/// Runs `body`; if it throws, records the error for the launcher, prints it and aborts the
/// job (the other ranks may be blocked waiting for this one; a clean abort names the rank).
void guarded(const std::function<void()>& body);

/// A call into the learner's code (RAII): while one is open, this rank records the library
/// collectives (comm.library_*, comm.library) and the raw MPI calls (MPI_Allreduce, MPI_Bcast,
/// MPI_Send, ...: the profiling layer of pmpi_guard.cpp) that the process makes, in any thread;
/// calls outside every window are not recorded. The communicator's own traffic and the
/// checker's support code go to PMPI_* and are never recorded. Windows nest: a call counts in
/// every open window.
class LearnerCall {
 public:
  /// Opens a window for `what` (the learner's function as messages name it: "ring_allreduce").
  explicit LearnerCall(std::string what);
  ~LearnerCall();
  LearnerCall(const LearnerCall&) = delete;
  LearnerCall& operator=(const LearnerCall&) = delete;
  /// Closes the window: "" when nothing was recorded in it on this rank, else a learner-facing
  /// message that names the calls and their counts and the rule. Later calls return "".
  std::string close();
  /// What close() would name, raw: each call and its count, in the order of first call (the
  /// split build sends them from the lab's process to the checks'). Closes the window.
  std::vector<std::pair<std::string, std::uint64_t>> close_calls();

 private:
  std::string what_;
  bool open_ = false;
};

/// Records calls that the lab's code made in another process (the split build: the worker's
/// LearnerCall windows) in every window open here, as if they had been made in this process.
void note_remote_calls(const std::vector<std::pair<std::string, std::uint64_t>>& calls);

/// Within its scope, this thread's library and MPI calls are not recorded by an open
/// LearnerCall: the checker's own reference calls, and the deliberately wrong collectives the
/// unit tests build from the library's.
class Unrecorded {
 public:
  Unrecorded();
  ~Unrecorded();
  Unrecorded(const Unrecorded&) = delete;
  Unrecorded& operator=(const Unrecorded&) = delete;
};

/// Within its scope, this thread's calls are recorded again, inside an Unrecorded scope: the
/// learner's code that an unrecorded harness calls (time_vs_library).
class Recorded {
 public:
  Recorded();
  ~Recorded();
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;

 private:
  int saved_;
};

/// Runs lab code on every rank: a comm::NotImplemented it throws becomes the same failure
/// text on every rank (returned; "" when nothing was thrown); any other exception aborts
/// the job through guarded(). With `learner` (the function's name), `body` runs inside a
/// LearnerCall and a library or raw MPI call it made fails the same way.
std::string run_lab_code(const std::function<void()>& body, const std::string& learner = "");

/// `fn` with every call inside a LearnerCall named `what`; the message of the first call that
/// recorded something is kept in *found (left as it is until then). For learner code that a
/// harness calls among the library's (comm::run_allreduce_sweep).
AllreduceFn watched(AllreduceFn fn, std::string what, std::string* found);

/// What a Performance check compares: the lab's all-reduce and the library's, out of place.
struct VsLibrary {
  Timing lab, library;
};

/// Times `lab` against the library's all-reduce with run_allreduce_sweep on `options` (out of
/// place), where it is called: in the lab's process, so that both are timed alike (beside the
/// lab's code in a split check: checker/labs/NN-name/timed.cpp). Only the lab's own calls are
/// recorded by the LearnerCall windows open around it, not the harness's or the library's.
VsLibrary time_vs_library(const AllreduceFn& lab, const HarnessOptions& options, Communicator& comm);

/// Records a property of the running check for the runner ("measured", "threshold", "hint").
void record(const std::string& key, const std::string& value);

/// How this run's ranks share the machine's GPUs: what decides whether timing collectives on
/// device buffers measures the lab's algorithm or the GPU switching between processes.
struct GpuSharing {
  int ranks_on_node = 1;  ///< ranks of the communicator on this rank's node
  int gpus = 0;           ///< GPUs visible to this process (0 on sim)
  bool mps = false;       ///< the CUDA MPS control daemon is reachable: ranks on one GPU run side by side
  int cores = 1;          ///< CPU cores this process may run on
};

/// The facts of this run, gathered on every rank (collective over MPI_COMM_WORLD, the check
/// binary's world; @p comm names it for the caller). WB_FAKE_GPUS=N and
/// WB_FAKE_MPS=0|1 replace the GPU count and the MPS answer (the tests of the decision below).
GpuSharing gpu_sharing(Communicator& comm);

/// "" when a Performance check may time collectives on @p space with @p sharing: host buffers, or
/// device buffers where each rank on the node has a GPU of its own or MPS runs. Otherwise why the
/// timing would be meaningless and what to do, for GTEST_SKIP (NOT MEASURED): "4 ranks would
/// share 1 GPU: ...".
std::string shared_gpu_reason(const GpuSharing& sharing, MemorySpace space);

/// What the machine was doing while a small-message timing came out slow (microseconds expected,
/// hundreds measured): the GPU shared by time-sliced ranks, more runnable threads than cores
/// (/proc/loadavg, read now), or neither; one sentence for a NOT MEASURED message.
std::string observed_slowness_cause(const GpuSharing& sharing, MemorySpace space);

/// The size sweep (sweep_counts) of one type and operator, out of place and in place, with
/// the all-reduce make(count, type) returns; stops at the first failing case. Returns ""
/// or the failure report; *cases counts the cases that passed. `name` names the lab's
/// function in messages (see check_allreduce).
std::string sweep_allreduce(const std::function<AllreduceFn(std::size_t count, DataType type)>& make, DataType type,
                            RedOp op, std::size_t* cases, const std::string& name = "the lab's all-reduce");

/// Sizes of the sweep every collective check runs: 0, 1, 7, n-1, n+1 elements and
/// 1 MiB / sizeof(T) + 3 elements (duplicates removed); per rank (per block) for gather,
/// scatter, all-gather, reduce-scatter and all-to-all.
std::vector<std::size_t> sweep_counts(int nranks, DataType type);

/// One all-reduce check: inputs of `mode` for `count` elements, out of place or in place.
/// Returns an empty string when the result is right on every rank (bit-exact for verifiable
/// data), else a learner-facing report gathered from all ranks, including a diagnosis.
/// `fn` runs inside a LearnerCall named `name`: a library collective or raw MPI call it makes
/// is the failure.
std::string check_allreduce(const AllreduceFn& fn, std::size_t count, DataType type, RedOp op, bool in_place,
                            DataMode mode = DataMode::verifiable, std::uint64_t seed = 7,
                            const std::string& name = "the lab's all-reduce");

/// Looks for the usual mistakes by running `fn` on probe inputs (every rank contributes 1
/// and sums; every rank contributes its element index and takes the maximum). Returns a
/// diagnosis for this rank, or an empty string when the probes look right.
std::string diagnose_allreduce(const AllreduceFn& fn, std::size_t count, DataType type);

/// The partition contract of the labs: chunk c of `count` elements over n ranks holds
/// count/n elements plus one for c < count % n, at offset c*(count/n) + min(c, count % n).
struct Range {
  std::size_t offset = 0, count = 0;
};
Range reference_chunk(std::size_t count, int n, int c);

// ---- the other collectives (broadcast, reduce, gather, scatter, all-to-all, ...) --------

/// A lab's collective in NCCL's form (see comm::LibraryCall for counts and in place); the
/// arguments a collective does not take (op, root) are ignored by its adapter.
using CollectiveFn = std::function<void(const void* sendbuf, void* recvbuf, std::size_t count, DataType type,
                                        RedOp op, int root, Communicator& comm)>;

struct CollectiveCase {
  Collective kind = Collective::broadcast;
  std::size_t count = 0;
  DataType type = DataType::f32;
  RedOp op = RedOp::sum;
  int root = 0;
  bool in_place = false;
};

/// "broadcast of 7 float from root 2 (in place, 3 ranks)".
std::string describe(const CollectiveCase& c, int nranks);

/// Runs `fn` and the library's collective (MPI_Bcast, MPI_Reduce, ...) on the same inputs and
/// compares every rank's result bit for bit, and that the buffers the collective must not
/// change (an out-of-place send buffer; the receive buffer of reduce and gather on the other
/// ranks) are unchanged. Returns "" or a learner-facing report gathered from all ranks that
/// names the rank, the element, the block it belongs to and where it should have come from.
/// `fn` runs inside a LearnerCall named `name` ("" names it "the lab's <collective>"): a
/// library collective or raw MPI call it makes is the failure.
std::string check_collective(const CollectiveFn& fn, const CollectiveCase& c, const std::string& name = "");

/// The roots a sweep tries on n ranks: 0, n-1 and n/2 (duplicates removed).
std::vector<int> sweep_roots(int nranks);

/// check_collective over sweep_counts x sweep_roots (rooted collectives) x out of place and
/// in place, stopping at the first failing case; *cases counts the cases that passed.
std::string sweep_collective(const CollectiveFn& fn, Collective kind, DataType type, RedOp op, std::size_t* cases,
                             const std::string& name = "");

}  // namespace comm::check
