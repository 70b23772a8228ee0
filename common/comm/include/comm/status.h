// Per-rank progress record read by the check launcher (checker/mpi_launch.py).
//
// When WB_COMM_STATUS_DIR is set, each rank maps a small file `rank-<R>.status` there and
// keeps three fields current: the check being run, what the rank is doing right now (for
// example "blocked in send(to=1, tag=0, bytes=4194316)") and its state (starting, running, done
// or error). A rank is "starting" from open() (right after MPI_Init) until set_ready(): choosing
// its GPU (a CUDA context), creating the communicator (NCCL's bootstrap); the launcher does not
// count that time against a check's time limit, but against a start limit of its own. The mapping is shared with the page cache, so what a rank last wrote survives a
// kill: after a time limit the launcher names every rank that did not finish and the call it
// was blocked in. Without the variable every function here is a cheap no-op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace comm::status {

/// Opens the record of `rank` (no-op without WB_COMM_STATUS_DIR), in state "starting" with
/// activity "starting". Safe to call twice.
void open(int rank);
/// The rank has started (MPI, its GPU and its communicator are up) and is about to run its
/// checks or serve requests: state "running". set_test() implies it.
void set_ready();
bool enabled();
/// WB_COMM_STATUS_DIR when the record is open, else "".
std::string directory();
/// The check being run (for example "Sweep.Float_Sum"); resets the activity to "running".
void set_test(const std::string& name);
/// What a rank can be blocked in. Recorded as a few integers (cheap enough for every call
/// of a timed loop); checker/mpi_launch.py reads the codes from here and turns them into text such as
/// "blocked in send(to=1, tag=0, bytes=4194316)".
enum class Op : std::int32_t {
  running = 0,
  send = 1,
  recv = 2,
  wait_isend = 3,
  wait_irecv = 4,
  barrier = 5,
  library_allreduce = 6,
  text = 7,
  library = 8,  ///< another library collective: peer = root, tag = comm::Collective
};

/// The rank is about to block in `op`; `nreq` > 1 for a wait_all over several requests.
void set_blocked(Op op, int peer, int tag, std::size_t bytes, std::size_t nreq = 1);
/// The blocking call returned.
void set_running();
/// Free text (rare events); printf-style.
void set_activity(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/// Marks the rank finished normally.
void set_done();
/// Records an error message (for example an exception escaping a check) before aborting.
void set_error(const std::string& message);

/// Layout of the record (bytes). This is its one declaration: checker/mpi_launch.py reads these
/// `name = value` lines and the Op codes above from this file. The activity field
/// holds int32 op, peer, tag, nreq and uint64 bytes (little-endian), then text for Op::text.
/// The progress field is a uint64 that every activity change increments: a rank that repeats
/// the same blocking call (a ring's equal-sized steps) still shows that it moves, so the
/// launcher can tell a deadlock (every rank blocked, nothing moving) from slow progress.
constexpr std::size_t test_offset = 0, test_size = 256;
constexpr std::size_t activity_offset = 256, activity_size = 256;
constexpr std::size_t state_offset = 512, state_size = 512;
constexpr std::size_t progress_offset = 1024, progress_size = 8;
constexpr std::size_t record_size = 1032;
constexpr std::size_t activity_text_offset = 24;

}  // namespace comm::status
