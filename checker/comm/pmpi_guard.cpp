// The learner-call guard: which library collectives and raw MPI calls a lab's own code makes.
//
// This file defines the MPI entry points a lab could use instead of the communicator's
// point-to-point calls (the collectives, their nonblocking forms, point-to-point and one-sided
// calls) through MPI's profiling interface: each records the call and forwards it to PMPI_*.
// A definition in the executable wins for calls from the executable's own code (the lab's and
// the checks'); calls inside the MPI library take its internal paths and are never seen here.
// The communicator's MPI backend and the checker's support code call PMPI_* directly, so their
// traffic is not recorded either; the checks' own MPI calls are made outside any window.
//
// Calls are recorded only while a LearnerCall window is open (a check is running the lab's
// code), from any thread of the process but one inside an Unrecorded scope, and they count in
// every open window (a window opened inside another hides nothing from it). The communicator
// reports its library collectives through set_library_observer.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/check.h"
#include "comm/communicator.h"

namespace comm::check {
namespace {

// An open window and what the code inside it called, in the order of first call.
struct Window {
  const LearnerCall* owner;
  std::vector<std::pair<std::string, std::uint64_t>> calls;
};

std::atomic<int> g_open{0};      // open windows: the fast path of every wrapper
std::mutex g_mutex;              // guards g_windows
std::vector<Window> g_windows;   // open windows
thread_local int t_unrecorded = 0;  // Unrecorded scopes open in this thread

void note(const std::string& what, std::uint64_t count = 1) {
  if (t_unrecorded > 0 || count == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Window& w : g_windows) {
    auto it = std::find_if(w.calls.begin(), w.calls.end(), [&](const auto& c) { return c.first == what; });
    if (it != w.calls.end())
      it->second += count;
    else
      w.calls.push_back({what, count});
  }
}

void note_library(Collective kind) {
  if (g_open.load(std::memory_order_acquire) > 0) note(std::string("comm.library_") + name_of(kind));
}

}  // namespace

// Called by every MPI entry point below: the fast path is one atomic load.
void note_mpi_call(const char* name) {
  if (g_open.load(std::memory_order_acquire) > 0) note(name);
}

Unrecorded::Unrecorded() { ++t_unrecorded; }
Unrecorded::~Unrecorded() { --t_unrecorded; }

Recorded::Recorded() : saved_(t_unrecorded) { t_unrecorded = 0; }
Recorded::~Recorded() { t_unrecorded = saved_; }

LearnerCall::LearnerCall(std::string what) : what_(std::move(what)) {
  set_library_observer(&note_library);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_windows.push_back({this, {}});
  g_open.fetch_add(1, std::memory_order_release);
  open_ = true;
}

LearnerCall::~LearnerCall() { close(); }

std::vector<std::pair<std::string, std::uint64_t>> LearnerCall::close_calls() {
  std::vector<std::pair<std::string, std::uint64_t>> calls;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!open_) return calls;
  open_ = false;
  auto it = std::find_if(g_windows.begin(), g_windows.end(), [this](const Window& w) { return w.owner == this; });
  if (it != g_windows.end()) {
    calls = std::move(it->calls);
    g_windows.erase(it);
  }
  g_open.fetch_sub(1, std::memory_order_release);
  return calls;
}

void note_remote_calls(const std::vector<std::pair<std::string, std::uint64_t>>& calls) {
  if (g_open.load(std::memory_order_acquire) == 0) return;
  for (const auto& [what, count] : calls) note(what, count);
}

std::string LearnerCall::close() {
  const std::vector<std::pair<std::string, std::uint64_t>> calls = close_calls();
  if (calls.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) list += i + 1 == calls.size() ? " and " : ", ";
    list += calls[i].first + " (" + std::to_string(calls[i].second) + (calls[i].second == 1 ? " call)" : " calls)");
  }
  return what_ + " called " + list +
         "; this lab asks for hand-written communication over the communicator's point-to-point calls "
         "(comm.send/recv/isend/irecv, and your own collectives built on them): library collectives "
         "(comm.library_*) and raw MPI calls are for the checker's references only.";
}

}  // namespace comm::check

// ---- the MPI entry points (MPI's profiling interface) -------------------------------------------

#define COMM_GUARD(name, params, args)        \
  int MPI_##name params {                     \
    comm::check::note_mpi_call("MPI_" #name); \
    return PMPI_##name args;                  \
  }

// Collectives, blocking and nonblocking.
COMM_GUARD(Allreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m), (s, r, c, t, o, m))
COMM_GUARD(Reduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm m),
           (s, r, c, t, o, root, m))
COMM_GUARD(Bcast, (void* b, int c, MPI_Datatype t, int root, MPI_Comm m), (b, c, t, root, m))
COMM_GUARD(Allgather, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m),
           (s, sc, st, r, rc, rt, m))
COMM_GUARD(Allgatherv,
           (const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[], MPI_Datatype rt,
            MPI_Comm m),
           (s, sc, st, r, rc, d, rt, m))
COMM_GUARD(Gather, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m),
           (s, sc, st, r, rc, rt, root, m))
COMM_GUARD(Gatherv,
           (const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[], MPI_Datatype rt, int root,
            MPI_Comm m),
           (s, sc, st, r, rc, d, rt, root, m))
COMM_GUARD(Scatter, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m),
           (s, sc, st, r, rc, rt, root, m))
COMM_GUARD(Scatterv,
           (const void* s, const int sc[], const int d[], MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root,
            MPI_Comm m),
           (s, sc, d, st, r, rc, rt, root, m))
COMM_GUARD(Reduce_scatter, (const void* s, void* r, const int rc[], MPI_Datatype t, MPI_Op o, MPI_Comm m),
           (s, r, rc, t, o, m))
COMM_GUARD(Reduce_scatter_block, (const void* s, void* r, int rc, MPI_Datatype t, MPI_Op o, MPI_Comm m),
           (s, r, rc, t, o, m))
COMM_GUARD(Alltoall, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m),
           (s, sc, st, r, rc, rt, m))
COMM_GUARD(Alltoallv,
           (const void* s, const int sc[], const int sd[], MPI_Datatype st, void* r, const int rc[], const int rd[],
            MPI_Datatype rt, MPI_Comm m),
           (s, sc, sd, st, r, rc, rd, rt, m))
COMM_GUARD(Alltoallw,
           (const void* s, const int sc[], const int sd[], const MPI_Datatype st[], void* r, const int rc[],
            const int rd[], const MPI_Datatype rt[], MPI_Comm m),
           (s, sc, sd, st, r, rc, rd, rt, m))
COMM_GUARD(Barrier, (MPI_Comm m), (m))
COMM_GUARD(Scan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m), (s, r, c, t, o, m))
COMM_GUARD(Exscan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m), (s, r, c, t, o, m))
COMM_GUARD(Iallreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
           (s, r, c, t, o, m, q))
COMM_GUARD(Ireduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm m, MPI_Request* q),
           (s, r, c, t, o, root, m, q))
COMM_GUARD(Ibcast, (void* b, int c, MPI_Datatype t, int root, MPI_Comm m, MPI_Request* q), (b, c, t, root, m, q))
COMM_GUARD(Iallgather,
           (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m, MPI_Request* q),
           (s, sc, st, r, rc, rt, m, q))
COMM_GUARD(Iallgatherv,
           (const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[], MPI_Datatype rt, MPI_Comm m,
            MPI_Request* q),
           (s, sc, st, r, rc, d, rt, m, q))
COMM_GUARD(Igather,
           (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m,
            MPI_Request* q),
           (s, sc, st, r, rc, rt, root, m, q))
COMM_GUARD(Igatherv,
           (const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[], MPI_Datatype rt, int root,
            MPI_Comm m, MPI_Request* q),
           (s, sc, st, r, rc, d, rt, root, m, q))
COMM_GUARD(Iscatter,
           (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m,
            MPI_Request* q),
           (s, sc, st, r, rc, rt, root, m, q))
COMM_GUARD(Iscatterv,
           (const void* s, const int sc[], const int d[], MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root,
            MPI_Comm m, MPI_Request* q),
           (s, sc, d, st, r, rc, rt, root, m, q))
COMM_GUARD(Ireduce_scatter,
           (const void* s, void* r, const int rc[], MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
           (s, r, rc, t, o, m, q))
COMM_GUARD(Ireduce_scatter_block,
           (const void* s, void* r, int rc, MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
           (s, r, rc, t, o, m, q))
COMM_GUARD(Ialltoall,
           (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m, MPI_Request* q),
           (s, sc, st, r, rc, rt, m, q))
COMM_GUARD(Ialltoallv,
           (const void* s, const int sc[], const int sd[], MPI_Datatype st, void* r, const int rc[], const int rd[],
            MPI_Datatype rt, MPI_Comm m, MPI_Request* q),
           (s, sc, sd, st, r, rc, rd, rt, m, q))
COMM_GUARD(Ialltoallw,
           (const void* s, const int sc[], const int sd[], const MPI_Datatype st[], void* r, const int rc[],
            const int rd[], const MPI_Datatype rt[], MPI_Comm m, MPI_Request* q),
           (s, sc, sd, st, r, rc, rd, rt, m, q))
COMM_GUARD(Ibarrier, (MPI_Comm m, MPI_Request* q), (m, q))
COMM_GUARD(Iscan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
           (s, r, c, t, o, m, q))
COMM_GUARD(Iexscan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
           (s, r, c, t, o, m, q))

// Point-to-point: raw MPI messages bypass the communicator's accounting just the same.
COMM_GUARD(Send, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m), (b, c, t, d, tag, m))
COMM_GUARD(Ssend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m), (b, c, t, d, tag, m))
COMM_GUARD(Bsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m), (b, c, t, d, tag, m))
COMM_GUARD(Rsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m), (b, c, t, d, tag, m))
COMM_GUARD(Recv, (void* b, int c, MPI_Datatype t, int src, int tag, MPI_Comm m, MPI_Status* st),
           (b, c, t, src, tag, m, st))
COMM_GUARD(Isend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, d, tag, m, q))
COMM_GUARD(Issend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, d, tag, m, q))
COMM_GUARD(Ibsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, d, tag, m, q))
COMM_GUARD(Irsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, d, tag, m, q))
COMM_GUARD(Irecv, (void* b, int c, MPI_Datatype t, int src, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, src, tag, m, q))
COMM_GUARD(Send_init, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, d, tag, m, q))
COMM_GUARD(Recv_init, (void* b, int c, MPI_Datatype t, int src, int tag, MPI_Comm m, MPI_Request* q),
           (b, c, t, src, tag, m, q))
COMM_GUARD(Sendrecv,
           (const void* sb, int sc, MPI_Datatype st, int d, int stag, void* rb, int rc, MPI_Datatype rt, int src,
            int rtag, MPI_Comm m, MPI_Status* status),
           (sb, sc, st, d, stag, rb, rc, rt, src, rtag, m, status))
COMM_GUARD(Sendrecv_replace,
           (void* b, int c, MPI_Datatype t, int d, int stag, int src, int rtag, MPI_Comm m, MPI_Status* status),
           (b, c, t, d, stag, src, rtag, m, status))

// One-sided communication.
COMM_GUARD(Put, (const void* o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc, MPI_Datatype tt, MPI_Win w),
           (o, oc, ot, target, disp, tc, tt, w))
COMM_GUARD(Get, (void* o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc, MPI_Datatype tt, MPI_Win w),
           (o, oc, ot, target, disp, tc, tt, w))
COMM_GUARD(Accumulate,
           (const void* o, int oc, MPI_Datatype ot, int target, MPI_Aint disp, int tc, MPI_Datatype tt, MPI_Op op,
            MPI_Win w),
           (o, oc, ot, target, disp, tc, tt, op, w))
COMM_GUARD(Get_accumulate,
           (const void* o, int oc, MPI_Datatype ot, void* r, int rc, MPI_Datatype rt, int target, MPI_Aint disp, int tc,
            MPI_Datatype tt, MPI_Op op, MPI_Win w),
           (o, oc, ot, r, rc, rt, target, disp, tc, tt, op, w))

#undef COMM_GUARD
