// cusim's execution engine: every CUDA thread of a block is a fiber, blocks run in parallel on
// worker threads, barriers and warp collectives park fibers.
//
// Fibers switch through context.h: the inline switch of cusim/fiber.h on x86-64 Linux (the waiting
// site in kernel code performs the handoff that barrier_arrive/warp_arrive return), Boost.Context
// fcontext elsewhere.
//
// Invariants:
// - A block never leaves its worker thread; all of a block's state lives in that Worker.
// - A fiber that finishes its thread takes the next unstarted thread itself (no switch), so a
//   barrier-free kernel runs its threads back to back on one stack.
// - A thread that must wait parks and jumps straight to the next runnable fiber; only when nothing
//   is runnable does control go back to the worker's own context: the block is done, it waits at a
//   grid barrier, or it is deadlocked, which is reported as a launch error instead of hanging.
// - A cooperative launch (cudaLaunchCooperativeKernel) runs all its blocks together: each worker
//   holds its share of the grid and runs each block until every thread of it waits at grid.sync()
//   (or has exited), then parks the block (its threads' stacks and its shared memory copied aside,
//   so the next block reuses the same fibers and arena at the same addresses) and runs the next.
//   When every block of the grid waits, the workers meet (LaunchState's grid barrier), and each
//   puts its blocks back, one at a time, and releases them.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "internal.h"  // before any cusim header: it turns off the call-site macros
#include "cusim/checker.h"
#include "cusim/sync_api.h"

thread_local uint3 threadIdx = {0, 0, 0};
thread_local uint3 blockIdx = {0, 0, 0};
thread_local dim3 blockDim = dim3(1, 1, 1);
thread_local dim3 gridDim = dim3(1, 1, 1);

namespace cusim::detail {

thread_local ExecView tls_view;

namespace {

using Ctx = Context;

struct ThreadCtx;

struct Fiber : Ctx {
    char* mem = nullptr;  // mapping: guard pages at the low end, then the stack
    size_t mem_size = 0;
    size_t guard = 0;
    size_t color = 0;
    ThreadCtx* thread = nullptr;
};

enum class TState : uint8_t { Unstarted, Running, Ready, BarrierWait, WarpWait, ObjectWait, Done };

// Every switch reads the next thread's ThreadCtx and a barrier writes all of them, between switches
// whose fiber stacks evict them from the L1 cache: each byte of this struct costs cache misses per
// simulated thread (docs/perf/cusim.md). What only coalesced_threads() needs lives in LaneGroup.
struct ThreadCtx {
    uint3 idx;
    unsigned tid;
    Fiber* fiber;
    const site* wait_site;
    uint64_t* result_slot;  // where a warp collective this thread waits at stores its result
    TState state;
    bool at_activemask;  // yielding inside __activemask (counts as waiting)
};
static_assert(sizeof(ThreadCtx) <= 48, "ThreadCtx grew: every simulated thread pays for it in cache misses");

// A lane's part in coalesced_threads() (settle_warp), per thread of the block. Written by the lane
// when it enters settle_warp and read by other lanes only while it is there (at_activemask), so a
// new block needs no reset.
struct LaneGroup {
    const site* where = nullptr;  // where the lane called coalesced_threads() (nullptr: __activemask)
    unsigned mask = 0;
    bool ready = false;  // mask holds this lane's group
};

struct WarpOp {
    WarpOp() {}  // user-provided: the per-lane arrays are written before they are read, not zeroed
    WarpOpKind kind;
    unsigned mask;
    unsigned arrived;
    const site* where;
    // Lanes it names that went to another warp operation while it was pending (the first such
    // operation's kind, mask and site, for the report): each must still come here before it exits.
    unsigned skipped;
    WarpOpKind skipped_kind;
    unsigned skipped_mask;
    const site* skipped_where;
    uint64_t val[32];
    int8_t src[32];
};

struct Warp {
    unsigned existing = 0;  // lanes that exist (blockDim may not be a multiple of 32)
    // Lanes that have exited, and from the block's start the lanes that do not exist: CUDA's
    // *_sync intrinsics wait for the non-exited threads of their mask, and a warp's missing lanes
    // never run (NVIDIA's cooperative groups pass 0xffffffff for every 32-thread tile, the last
    // warp of a block of 120 threads included).
    unsigned exited = 0;
    std::vector<WarpOp> pending;
};

struct LaunchState {
    const KernelLaunch* launch = nullptr;
    dim3 grid, block;
    size_t dyn_smem = 0;
    unsigned nthreads = 0;
    uint64_t nblocks = 0;
    std::atomic<uint64_t> next_block{0};
    std::atomic<bool> failed{false};
    std::mutex fault_mu;
    cudaError_t fault_code = cudaSuccess;
    std::string fault_msg;
    // Cooperative launch: worker k holds blocks k, k + nworkers, ...; the workers holding blocks
    // (grid_participants) meet at the grid barrier once all their blocks wait at grid.sync().
    bool cooperative = false;
    unsigned nworkers = 1;
    std::atomic<unsigned> next_worker{0};
    std::mutex grid_mu;
    std::condition_variable grid_cv;
    unsigned grid_participants = 0, grid_arrived = 0;
    uint64_t grid_waiting = 0, grid_finished = 0;  // blocks, summed over the workers that arrived
    uint64_t grid_generation = 0;
    bool grid_go = false;  // the decision of the last grid barrier: release the waiting blocks
    const site* grid_site = nullptr;  // where blocks wait (for the report of a grid barrier deadlock)

    void set_fault(cudaError_t code, const std::string& msg) {
        {
            std::lock_guard<std::mutex> lk(fault_mu);
            if (fault_code == cudaSuccess) {
                fault_code = code;
                fault_msg = msg;
            }
        }
        failed.store(true);
    }
};

size_t stack_bytes() {
    static const size_t bytes = [] {
        size_t kb = 256;
        if (const char* e = std::getenv("CUSIM_STACK_KB")) kb = std::max<size_t>(16, std::strtoul(e, nullptr, 10));
        return kb * 1024;
    }();
    return bytes;
}
constexpr size_t kGuardBytes = 64 * 1024;
constexpr size_t kArenaBytes = kDynamicSharedOptinLimit + kStaticSharedLimit + 4096;

void fiber_entry(void*);

struct Worker {
    Ctx main;
    std::vector<Fiber*> all_fibers;
    std::vector<Fiber*> free_fibers;
    LaunchState* ls = nullptr;
    std::vector<ThreadCtx> threads;
    std::vector<LaneGroup> groups;  // per thread, beside `threads`
    std::vector<Warp> warps;
    unsigned nthreads = 0, started = 0, done = 0;
    // Block barrier in progress.
    unsigned bar_arrived = 0;
    int bar_acc = 0;
    const site* bar_site = nullptr;
    bool bar_divergent = false;
    bool bar_grid = false;      // the barrier in progress is grid.sync() of a cooperative launch
    bool grid_waiting = false;  // every thread that has not exited waits at grid.sync(): block yields
    std::vector<ThreadCtx*> bar_waiters;  // threads parked at the barrier, in arrival order
    // Result of the last completed barrier (for __syncthreads_count/_and/_or). Valid for every
    // released thread when it resumes: no later barrier can complete before all of them have run.
    int bar_result_count = 0;
    int bar_result_all = 0;
    // Threads released by the last completed barrier, resumed in this order before the ready queue.
    std::vector<ThreadCtx*> released;
    size_t rel_pos = 0;
    // Ready queue (ring buffer; a thread is queued at most once).
    std::vector<ThreadCtx*> ready;
    size_t rq_head = 0, rq_count = 0, rq_mask = 0;  // capacity is a power of two
    // Shared memory arena of the running block: dynamic bytes first, then static declarations.
    char* arena = nullptr;
    size_t dyn_bytes = 0;
    size_t static_used = 0;
    struct SharedEntry {
        const void* key;
        void* ptr;
    };
    std::vector<SharedEntry> shared_tab;
    // Faults.
    bool in_kernel = false;
    bool analyze = false;  // this launch's kernel is instrumented: call the analysis hooks
    bool block_fault = false;
    cudaError_t fault_code = cudaSuccess;
    std::string fault_msg;
    char signal_msg[512];
    bool signal_fault = false;
    Ctx signal_ctx;  // receives the faulting fiber's (abandoned) context
    Fiber* cur_fiber = nullptr;
    ThreadCtx* cur = nullptr;
    uint3 block_idx{0, 0, 0};
    std::vector<char> altstack;
    // Last, apart from the fields every switch and barrier touches (their layout is tuned):
    // Threads parked by object_wait (a cuda::barrier's phase, a thread block tile's barrier), with
    // the object each waits on; object_notify readies them.
    struct ObjectWaiter {
        const void* object;
        ThreadCtx* thread;
        const char* what;
    };
    std::vector<ObjectWaiter> object_waiters;
    // Arrivals at the barrier of each multi-warp thread_block_tile, by the tile's first thread.
    std::vector<unsigned> tile_arrived;

    Fiber* new_fiber() {
        auto* f = new Fiber;
        f->guard = kGuardBytes;
        f->color = all_fibers.size();
        f->mem_size = stack_bytes() + kGuardBytes;
        void* m = mmap(nullptr, f->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                       0);
        if (m == MAP_FAILED) {
            delete f;
            return nullptr;
        }
        f->mem = static_cast<char*>(m);
        mprotect(f->mem, kGuardBytes, PROT_NONE);
        reset_fiber(f);
        all_fibers.push_back(f);
        return f;
    }
    void reset_fiber(Fiber* f) {
        // Stagger the stack tops: page-aligned tops would all fall into the same cache sets, and a
        // barrier touches every fiber's top frames in turn.
        const size_t color = (f->color * 320) % 4096;
        make_context(*f, f->mem + f->mem_size - color, f->mem_size - f->guard - color, fiber_entry, nullptr);
        f->thread = nullptr;
    }
    Fiber* get_fiber() {
        if (!free_fibers.empty()) {
            Fiber* f = free_fibers.back();
            free_fibers.pop_back();
            return f;
        }
        return new_fiber();
    }
    void reset_all_fibers() {
        free_fibers.clear();
        for (Fiber* f : all_fibers) {
            reset_fiber(f);
            free_fibers.push_back(f);
        }
    }
    ~Worker() {
        for (Fiber* f : all_fibers) {
            munmap(f->mem, f->mem_size);
            delete f;
        }
        if (arena) std::free(arena - kSharedMargin);
    }
};

thread_local Worker* tls_worker = nullptr;

inline void enter(Worker& w, ThreadCtx* th) {
    w.cur = th;
    w.cur_fiber = th->fiber;
    th->state = TState::Running;
    threadIdx = th->idx;
    if (w.analyze) {
        ExecView& v = tls_view;
        v.in_kernel = true;
        v.tid = th->tid;
        v.thread = th->idx;
        v.stack_lo = th->fiber->mem + th->fiber->guard;
        v.stack_hi = th->fiber->mem + th->fiber->mem_size;
    }
}

// Resume `to` (which runs `to->thread`) from the context `from`.
__attribute__((always_inline)) inline void resume(Worker& w, Ctx* from, Fiber* to) {
    enter(w, to->thread);
    switch_context(from, to);
}

inline void push_ready(Worker& w, ThreadCtx* th) {
    th->state = TState::Ready;
    w.ready[(w.rq_head + w.rq_count) & w.rq_mask] = th;
    ++w.rq_count;
}

// Next thread to run: a thread released by the last barrier, else one released by a warp collective
// (ready queue), else the next thread not yet started.
__attribute__((always_inline)) inline ThreadCtx* pick_next(Worker& w) {
    if (w.rel_pos < w.released.size()) return w.released[w.rel_pos++];
    if (w.rq_count) {
        ThreadCtx* th = w.ready[w.rq_head];
        w.rq_head = (w.rq_head + 1) & w.rq_mask;
        --w.rq_count;
        return th;
    }
    if (w.started < w.nthreads) return &w.threads[w.started++];
    return nullptr;
}

std::string coords(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}
std::string where_str(const site* s) {
    if (!s) return "?";
    return std::string(s->file_name()) + ":" + std::to_string(s->line());
}
// Two call sites are the same when line, column and file agree (each call builds its own
// source_location, so the objects differ; file names of one translation unit share a pointer).
inline bool same_site(const site* a, const site* b) {
    static_assert(sizeof(site) == sizeof(const void*), "std::source_location is one pointer to its data");
    const void* ia;
    const void* ib;
    std::memcpy(&ia, a, sizeof ia);
    std::memcpy(&ib, b, sizeof ib);
    if (ia == ib) return true;  // the same call site's data (the usual case)
    if (a->line() != b->line() || a->column() != b->column()) return false;
    return a->file_name() == b->file_name() || std::strcmp(a->file_name(), b->file_name()) == 0;
}
const char* op_name(WarpOpKind k) {
    switch (k) {
        case WarpOpKind::Sync: return "__syncwarp";
        case WarpOpKind::ShflIdx: return "__shfl_sync";
        case WarpOpKind::ShflUp: return "__shfl_up_sync";
        case WarpOpKind::ShflDown: return "__shfl_down_sync";
        case WarpOpKind::ShflXor: return "__shfl_xor_sync";
        case WarpOpKind::Ballot: return "__ballot_sync";
        case WarpOpKind::Any: return "__any_sync";
        case WarpOpKind::All: return "__all_sync";
        case WarpOpKind::MatchAny: return "__match_any_sync";
        case WarpOpKind::MatchAll: return "__match_all_sync";
        case WarpOpKind::WmmaLoad: return "nvcuda::wmma::load_matrix_sync";
        case WarpOpKind::WmmaStore: return "nvcuda::wmma::store_matrix_sync";
        case WarpOpKind::WmmaMma: return "nvcuda::wmma::mma_sync";
        case WarpOpKind::ReduceAdd: return "__reduce_add_sync";
        case WarpOpKind::ReduceMinU:
        case WarpOpKind::ReduceMinS: return "__reduce_min_sync";
        case WarpOpKind::ReduceMaxU:
        case WarpOpKind::ReduceMaxS: return "__reduce_max_sync";
        case WarpOpKind::ReduceAnd: return "__reduce_and_sync";
        case WarpOpKind::ReduceOr: return "__reduce_or_sync";
        case WarpOpKind::ReduceXor: return "__reduce_xor_sync";
    }
    return "?";
}
std::string hex(unsigned v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

std::string block_prefix(Worker& w) {
    return "kernel '" + std::string(w.ls->launch->kernel_name) + "' block " + coords(w.block_idx);
}

// What a thread parked by object_wait waits at ("a cuda::barrier").
const char* object_wait_what(const Worker& w, const ThreadCtx& t) {
    for (const Worker::ObjectWaiter& o : w.object_waiters)
        if (o.thread == &t) return o.what;
    return "?";
}

// Threads grouped by where they wait, as ranges: "threads 0..127 wait at __syncthreads (k.cu:31)".
std::string describe_waiters(Worker& w) {
    std::ostringstream os;
    unsigned i = 0;
    while (i < w.nthreads) {
        ThreadCtx& t = w.threads[i];
        if (t.state != TState::BarrierWait && t.state != TState::WarpWait && t.state != TState::ObjectWait) {
            ++i;
            continue;
        }
        unsigned j = i + 1;
        while (j < w.nthreads && w.threads[j].state == t.state && w.threads[j].wait_site &&
               same_site(w.threads[j].wait_site, t.wait_site))
            ++j;
        os << "\n=========     " << (j - i == 1 ? "thread " + std::to_string(i)
                                                : "threads " + std::to_string(i) + ".." + std::to_string(j - 1))
           << " wait at "
           << (t.state == TState::WarpWait     ? "a warp-level operation"
               : t.state == TState::ObjectWait ? object_wait_what(w, t)
               : w.bar_grid                    ? "a barrier"
                                               : "__syncthreads")
           << " ("
           << where_str(t.wait_site) << ":" << t.wait_site->column() << ")";
        i = j;
    }
    unsigned exited = 0, unstarted = 0;
    for (unsigned k = 0; k < w.nthreads; ++k) {
        if (w.threads[k].state == TState::Done) ++exited;
        if (w.threads[k].state == TState::Unstarted) ++unstarted;
    }
    if (exited) os << "\n=========     " << exited << " thread(s) of the block have exited";
    return os.str();
}

[[noreturn]] void fail_block(Worker& w, cudaError_t code, const std::string& msg) {
    tls_view.in_kernel = false;
    w.block_fault = true;
    w.fault_code = code;
    w.fault_msg = msg;
    Ctx* self = w.cur_fiber;
    w.cur_fiber = nullptr;
    w.cur = nullptr;
    switch_context(self, &w.main);
    std::abort();  // a faulted block's fibers are never resumed
}

[[noreturn]] void deadlock(Worker& w) {
    fail_block(w, cudaErrorLaunchTimeout,
               "Barrier deadlock in " + block_prefix(w) +
                   ": no thread can make progress (on a GPU this kernel would hang)" + describe_waiters(w) +
                   "\n=========     Hint: every thread of the block must reach the same __syncthreads, every "
                   "lane named in a warp intrinsic's mask must reach the same intrinsic, and a cuda::barrier's "
                   "phase completes only when as many arrivals as its expected count have been made.");
}

// Switch away from the current (waiting) thread to whatever can run next. With the native switch
// this only makes the next thread current and returns the handoff, which the caller's inline
// switch (kernel code) performs; with Boost.Context it switches here and returns no handoff.
__attribute__((always_inline)) inline Handoff park(Worker& w, ThreadCtx* th) {
    Fiber* self = th->fiber;
    ThreadCtx* next = pick_next(w);
    if (!next) deadlock(w);
    if (!next->fiber) {
        Fiber* f = w.get_fiber();
        if (!f) fail_block(w, cudaErrorLaunchOutOfResources, "cusim could not allocate a fiber stack (mmap failed)");
        f->thread = next;
        next->fiber = f;
    }
#if defined(CUSIM_NATIVE_SWITCH)
    enter(w, next);
    return {self, next->fiber};
#else
    resume(w, self, next->fiber);
    return {nullptr, nullptr};
#endif
}

// Releases every thread waiting at the block barrier, in arrival order. `self` (the last arriver,
// or nullptr when the barrier completes because a thread exited) keeps running.
void complete_barrier(Worker& w, ThreadCtx* self) {
    if (w.bar_divergent) {
        fail_block(w, cudaErrorLaunchFailure,
                   "Barrier error in " + block_prefix(w) +
                       ": divergent __syncthreads: threads of one block reached different __syncthreads calls" +
                       describe_waiters(w) +
                       "\n=========     Hint: do not put __syncthreads inside a branch or loop that threads of "
                       "the block take differently.");
    }
    if (w.bar_grid) {  // every thread of the block waits at grid.sync(): the worker takes over
        w.grid_waiting = true;
        return;
    }
    w.bar_result_count = w.bar_acc;
    w.bar_result_all = w.bar_acc == static_cast<int>(w.bar_arrived);
    // Every thread but `self` is parked in bar_waiters, and the previous release list has been
    // drained (each of its threads has run to this barrier or exited). Swap the lists.
    const size_t n = w.bar_waiters.size();
    ThreadCtx* const* waiters = w.bar_waiters.data();
    for (size_t i = 0; i < n; ++i) waiters[i]->state = TState::Ready;
    w.released.swap(w.bar_waiters);
    w.bar_waiters.clear();
    w.rel_pos = 0;
    if (self) self->state = TState::Running;
    if (w.analyze) analysis_hooks::barrier_complete();
    w.bar_arrived = 0;
    w.bar_acc = 0;
    w.bar_site = nullptr;
    w.bar_divergent = false;
}

// A shuffle lane reads a lane that its mask names but that has exited or does not exist: no value
// exists there.
[[noreturn, gnu::noinline, gnu::cold]] void read_from_exited_lane(Worker& w, const Warp& wp, const WarpOp& op,
                                                                 unsigned lane, unsigned src) {
    const bool missing = !((wp.existing >> src) & 1u);
    fail_block(w, cudaErrorLaunchFailure,
               "Warp synchronization error in " + block_prefix(w) + ": lane " + std::to_string(lane) + " at " +
                   op_name(op.kind) + " with mask " + hex(op.mask) + " (" + where_str(op.where) + ") reads lane " +
                   std::to_string(src) +
                   (missing ? ", which does not exist (blockDim has " + std::to_string(w.nthreads) + " threads)"
                            : std::string(", which has exited")) +
                   "\n=========     Hint: a shuffle may read only lanes that execute it; " +
                   (missing ? "test the source lane against the block's thread count, or read another lane."
                            : "keep the source lane in the kernel until the shuffle, or read another lane."));
}

bool is_wmma(WarpOpKind k) { return k >= WarpOpKind::WmmaLoad && k <= WarpOpKind::WmmaMma; }

// The warp matrix functions of <mma.h>: every lane of the warp takes part with the same
// arguments; mma_sync's product is computed here, by the completing lane, for the whole warp.
[[gnu::noinline]] void complete_wmma(Worker& w, Warp& wp, WarpOp& op, unsigned live) {
    const unsigned warp_base = static_cast<unsigned>(&wp - w.warps.data()) * 32u;
    auto fail = [&](const std::string& what, const std::string& hint) {
        fail_block(w, cudaErrorLaunchFailure,
                   "Warp synchronization error in " + block_prefix(w) + ": warp " + std::to_string(warp_base >> 5) +
                       " at " + op_name(op.kind) + " (" + where_str(op.where) + "): " + what +
                       "\n=========     Hint: " + hint);
    };
    if (live != 0xffffffffu)
        fail("lanes " + hex(~live) + " have exited, so the warp-wide operation has only lanes " + hex(live),
             "every lane of the warp must call the warp matrix functions: keep all 32 lanes in the kernel until "
             "the warp's last wmma call (guard the work, not the call)");
    WmmaLane* lanes[32];
    for (unsigned l = 0; l < 32; ++l) lanes[l] = reinterpret_cast<WmmaLane*>(op.val[l]);
    for (unsigned l = 1; l < 32; ++l) {
        const WmmaLane& a = *lanes[0];
        const WmmaLane& b = *lanes[l];
        if (a.ptr != b.ptr || a.ldm != b.ldm || a.layout != b.layout || a.mma != b.mma || a.satf != b.satf) {
            std::ostringstream os;
            if (op.kind == WarpOpKind::WmmaMma)
                os << "lane " << l << " passes fragments of other types or another satf than lane 0";
            else
                os << "lane 0 passes pointer " << a.ptr << ", ldm " << a.ldm << ", layout " << a.layout << " but lane "
                   << l << " passes pointer " << b.ptr << ", ldm " << b.ldm << ", layout " << b.layout;
            fail(os.str(), "the pointer, ldm and layout of a warp matrix function must be the same in every lane "
                           "(the warp loads or stores one tile together)");
        }
    }
    if (op.kind == WarpOpKind::WmmaMma) lanes[0]->mma(lanes);
}

// Completes the warp operation `op` once every lane of its mask that has not exited has arrived
// (CUDA: the non-exited threads named in the mask take part). `self`, the last arriver, keeps
// running (nullptr when the operation completes because a lane exited); the others are released.
void complete_warp_op(Worker& w, Warp& wp, WarpOp& op, ThreadCtx* self) {
    const WarpOpKind kind = op.kind;
    const unsigned live = op.mask & ~wp.exited;
    const unsigned warp_base = static_cast<unsigned>(&wp - w.warps.data()) * 32u;
    uint64_t common = 0;
    if (is_wmma(kind)) complete_wmma(w, wp, op, live);
    if (kind == WarpOpKind::Ballot || kind == WarpOpKind::Any || kind == WarpOpKind::All) {
        unsigned bits = 0;
        for (unsigned l = 0; l < 32; ++l)
            if ((live >> l) & 1u && op.val[l]) bits |= 1u << l;
        common = kind == WarpOpKind::Ballot ? bits : kind == WarpOpKind::Any ? (bits != 0) : (bits == live);
    } else if (kind >= WarpOpKind::ReduceAdd) {
        bool first = true;
        for (unsigned l = 0; l < 32; ++l) {
            if (!((live >> l) & 1u)) continue;
            const uint32_t u = static_cast<uint32_t>(op.val[l]);
            const int32_t i = static_cast<int32_t>(u);
            uint32_t c = static_cast<uint32_t>(common);
            switch (kind) {
                case WarpOpKind::ReduceAdd: c = first ? u : c + u; break;
                case WarpOpKind::ReduceMinU: c = first ? u : std::min(c, u); break;
                case WarpOpKind::ReduceMaxU: c = first ? u : std::max(c, u); break;
                case WarpOpKind::ReduceMinS: c = static_cast<uint32_t>(first ? i : std::min(static_cast<int32_t>(c), i)); break;
                case WarpOpKind::ReduceMaxS: c = static_cast<uint32_t>(first ? i : std::max(static_cast<int32_t>(c), i)); break;
                case WarpOpKind::ReduceAnd: c = first ? u : (c & u); break;
                case WarpOpKind::ReduceOr: c = first ? u : (c | u); break;
                case WarpOpKind::ReduceXor: c = first ? u : (c ^ u); break;
                default: break;
            }
            common = c;
            first = false;
        }
        if (kind == WarpOpKind::ReduceMinS || kind == WarpOpKind::ReduceMaxS || kind == WarpOpKind::ReduceAdd)
            common = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(common))));
    } else if (kind == WarpOpKind::MatchAll) {
        bool same = true;
        uint64_t v0 = 0;
        bool seen = false;
        for (unsigned l = 0; l < 32; ++l) {
            if (!((live >> l) & 1u)) continue;
            if (!seen) v0 = op.val[l], seen = true;
            else if (op.val[l] != v0) same = false;
        }
        common = same ? live : 0;
    }
    for (unsigned l = 0; l < 32; ++l) {
        if (!((live >> l) & 1u)) continue;
        ThreadCtx& t = w.threads[warp_base + l];
        switch (kind) {
            case WarpOpKind::ShflIdx:
            case WarpOpKind::ShflUp:
            case WarpOpKind::ShflDown:
            case WarpOpKind::ShflXor: {
                unsigned s = static_cast<unsigned>(op.src[l]);
                if (__builtin_expect((op.mask & wp.exited) >> s & 1u, 0)) read_from_exited_lane(w, wp, op, l, s);
                *t.result_slot = ((live >> s) & 1u) ? op.val[s] : op.val[l];
                break;
            }
            case WarpOpKind::MatchAny: {
                unsigned m = 0;
                for (unsigned k = 0; k < 32; ++k)
                    if ((live >> k) & 1u && op.val[k] == op.val[l]) m |= 1u << k;
                *t.result_slot = m;
                break;
            }
            default: *t.result_slot = common; break;
        }
        if (&t != self) push_ready(w, &t);
    }
    if (self) self->state = TState::Running;
    if (w.analyze) analysis_hooks::warp_sync_complete(warp_base >> 5, live, wp.existing);
    wp.pending.erase(wp.pending.begin() + (&op - wp.pending.data()));
}

// Lane `lane` exited: operations that named it no longer wait for it, and those whose other lanes
// have all arrived complete now.
[[gnu::noinline, gnu::cold]] void exit_with_pending_warp_ops(Worker& w, Warp& wp, unsigned lane) {
    for (const WarpOp& op : wp.pending) {
        if ((op.skipped >> lane) & 1u && !((op.arrived >> lane) & 1u)) {
            fail_block(w, cudaErrorLaunchFailure,
                       "Warp synchronization error in " + block_prefix(w) + ": lane " + std::to_string(lane) +
                           " went to " + op_name(op.skipped_kind) + " with mask " + hex(op.skipped_mask) + " (" +
                           where_str(op.skipped_where) + ") and exited, never reaching " + op_name(op.kind) +
                           " with mask " + hex(op.mask) + " (" + where_str(op.where) + ") that lanes " +
                           hex(op.arrived) + " wait at, so neither mask names the lanes that synchronize together" +
                           "\n=========     Hint: lanes that synchronize together must use the same mask");
        }
    }
    for (size_t i = 0; i < wp.pending.size();) {
        WarpOp& op = wp.pending[i];
        if ((op.mask >> lane) & 1u && op.arrived == (op.mask & ~wp.exited)) {
            complete_warp_op(w, wp, op, nullptr);  // erases op
            continue;
        }
        ++i;
    }
}

__attribute__((always_inline)) inline void check_exit_against_warp_ops(Worker& w, ThreadCtx* th) {
    const unsigned lane = th->tid & 31u;
    Warp& wp = w.warps[th->tid >> 5];
    wp.exited |= 1u << lane;
    if (__builtin_expect(!wp.pending.empty(), 0)) exit_with_pending_warp_ops(w, wp, lane);
}

__attribute__((always_inline)) inline void thread_exit(Worker& w, ThreadCtx* th) {
    th->state = TState::Done;
    ++w.done;
    check_exit_against_warp_ops(w, th);
    // Exited threads do not take part in barriers (CUDA, compute capability 7.0 and later), so an
    // exit can complete the barrier the others wait at.
    if (w.bar_arrived && w.bar_arrived == w.nthreads - w.done) complete_barrier(w, nullptr);
}

void fiber_entry(void*) {
    Worker& w = *tls_worker;
    Fiber* self = w.cur_fiber;
    for (;;) {
        ThreadCtx* th = self->thread;
        w.ls->launch->entry(w.ls->launch->closure);
        tls_view.in_kernel = false;  // cusim's code until the next thread is entered
        thread_exit(w, th);
        ThreadCtx* next = pick_next(w);
        if (next && !next->fiber) {  // start the next thread on this same stack: no switch
            next->fiber = self;
            self->thread = next;
            enter(w, next);
            continue;
        }
        if (!next && w.done != w.nthreads && !w.grid_waiting) deadlock(w);
        self->thread = nullptr;
        w.free_fibers.push_back(self);
        if (next) {
            resume(w, self, next->fiber);
        } else {  // block finished, or waiting at grid.sync()
            w.cur_fiber = nullptr;
            w.cur = nullptr;
            switch_context(self, &w.main);
        }
        // Resumed from the pool: a new thread has been assigned to this fiber.
    }
}

// ---- Signals: faults inside kernel code become CUDA errors ---------------------------------------

struct sigaction& previous_fault_action(int sig) {
    static struct sigaction previous[NSIG];
    return previous[sig];
}

void on_fault_signal(int sig, siginfo_t* info, void*) {
    Worker* w = tls_worker;
    if (!w || !w->in_kernel || !w->cur) {
        // Not ours (host code): put back the handler that was there before cusim's (the default
        // action, or the program's own crash report), which runs when the instruction re-executes.
        sigaction(sig, &previous_fault_action(sig), nullptr);
        return;
    }
    const char* addr = static_cast<const char*>(info->si_addr);
    ThreadCtx* th = w->cur;
    Fiber* f = w->cur_fiber;
    cudaError_t code = cudaErrorIllegalAddress;
    const char* what = "Invalid memory access";
    const char* hint = "check the index against the buffer's size and that the pointer came from cudaMalloc";
    if ((sig == SIGSEGV || sig == SIGBUS) && f && addr >= f->mem && addr < f->mem + f->guard) {
        code = cudaErrorHardwareStackError;
        what = "Stack overflow";
        hint = "a per-thread array or recursion is too large; set CUSIM_STACK_KB to raise cusim's per-thread stack";
    } else if (sig == SIGFPE) {
        code = cudaErrorLaunchFailure;
        what = "Integer division by zero";
        hint = "on a GPU the result is undefined; guard the divisor";
    } else if (sig == SIGILL) {
        code = cudaErrorIllegalInstruction;
        what = "Illegal instruction";
        hint = "an unreachable path or __builtin_trap was executed";
    }
    std::snprintf(w->signal_msg, sizeof w->signal_msg,
                  "%s in kernel '%s' by thread (%u,%u,%u) block (%u,%u,%u) at address %p\n=========     Hint: %s",
                  what, w->ls->launch->kernel_name, th->idx.x, th->idx.y, th->idx.z, w->block_idx.x, w->block_idx.y,
                  w->block_idx.z, info->si_addr, hint);
    w->block_fault = true;
    w->fault_code = code;
    w->signal_fault = true;
    tls_view.in_kernel = false;
    // Leave the handler by resuming the worker's own context, suspended where the block started;
    // the faulted block's fibers are abandoned (reset before the next launch).
    switch_context(&w->signal_ctx, &w->main);
    std::abort();
}

void install_signal_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault_signal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(s, &sa, &previous_fault_action(s));
    });
}

// ---- Running blocks -----------------------------------------------------------------------------

void setup_launch(Worker& w, LaunchState& ls) {
    w.ls = &ls;
    w.analyze = analysis_hooks::instrumented && ls.launch->instrumented;
    const dim3 b = ls.block;
    w.nthreads = ls.nthreads;
    w.threads.resize(w.nthreads);
    w.groups.assign(w.nthreads, LaneGroup{});
    for (unsigned i = 0; i < w.nthreads; ++i) {
        ThreadCtx& t = w.threads[i];
        t.tid = i;
        t.idx = uint3{i % b.x, (i / b.x) % b.y, i / (b.x * b.y)};
    }
    w.warps.assign((w.nthreads + 31) / 32, Warp{});
    for (size_t k = 0; k < w.warps.size(); ++k) {
        unsigned lanes = std::min<unsigned>(32, w.nthreads - static_cast<unsigned>(k) * 32);
        w.warps[k].existing = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    }
    size_t cap = 1;
    while (cap < w.nthreads + 1) cap <<= 1;
    w.ready.assign(cap, nullptr);
    w.rq_mask = cap - 1;
    w.bar_waiters.clear();
    w.bar_waiters.reserve(w.nthreads);
    w.released.clear();
    w.released.reserve(w.nthreads);
    if (!w.arena)  // kSharedMargin bytes on both sides: see memcheck's report of them
        w.arena = static_cast<char*>(std::aligned_alloc(1024, kSharedMargin + kArenaBytes + kSharedMargin)) +
                  kSharedMargin;
    w.dyn_bytes = (ls.dyn_smem + 255) & ~size_t(255);
    blockDim = ls.block;
    gridDim = ls.grid;
}

std::vector<void** (*)()>& dyn_shared_getters() {
    static std::vector<void** (*)()> g;
    return g;
}

// Makes block `b` the running block of this worker thread: its coordinates, the thread-local views
// of it (blockIdx, shared memory, analysis), a new analysis segment.
void enter_block(Worker& w, uint64_t b) {
    const dim3 g = w.ls->grid;
    w.block_idx = uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>((b / g.x) % g.y),
                        static_cast<unsigned>(b / (uint64_t(g.x) * g.y))};
    blockIdx = w.block_idx;
    tls_shared_last = {nullptr, nullptr};
    for (auto getter : dyn_shared_getters()) *getter() = w.arena;
    ExecView& v = tls_view;
    v.block = w.block_idx;
    v.nthreads = w.nthreads;
    v.smem = w.arena;
    v.smem_dyn = w.dyn_bytes;
    v.smem_static_used = &w.static_used;
    v.smem_capacity = kArenaBytes;
    v.launch = w.ls->launch;
    v.analyze = w.analyze;
    v.in_kernel = true;
    if (w.analyze) analysis_hooks::block_begin();
}

// Fresh state for a block that has not run yet.
void reset_block(Worker& w) {
    for (ThreadCtx& t : w.threads) {
        t.state = TState::Unstarted;
        t.fiber = nullptr;
        t.wait_site = nullptr;
        t.at_activemask = false;
    }
    for (Warp& wp : w.warps) {
        wp.exited = ~wp.existing;
        wp.pending.clear();
    }
    w.started = 0;
    w.done = 0;
    w.bar_arrived = 0;
    w.bar_acc = 0;
    w.bar_site = nullptr;
    w.bar_divergent = false;
    w.bar_grid = false;
    w.grid_waiting = false;
    w.bar_waiters.clear();
    w.object_waiters.clear();
    if (!w.tile_arrived.empty()) std::fill(w.tile_arrived.begin(), w.tile_arrived.end(), 0u);
    w.released.clear();
    w.rel_pos = 0;
    w.rq_head = w.rq_count = 0;
    w.static_used = 0;
    w.shared_tab.clear();
}

// Runs the entered block's threads, from the worker's own context, until the block has finished,
// faulted, deadlocked or (cooperative launches) waits at grid.sync().
void run_threads(Worker& w) {
    w.in_kernel = true;
    w.signal_fault = false;
    ThreadCtx* first = pick_next(w);
    Fiber* f = first->fiber ? first->fiber : w.get_fiber();
    if (!f) {
        w.block_fault = true;
        w.fault_code = cudaErrorLaunchOutOfResources;
        w.fault_msg = "cusim could not allocate a fiber stack (mmap failed)";
    } else {
        f->thread = first;
        first->fiber = f;
        resume(w, &w.main, f);  // returns when the block is done, deadlocked, faulted or at grid.sync()
    }
    tls_view.in_kernel = false;  // from here on, cusim's own code (analysis must not see it)
    if (w.signal_fault) w.fault_msg = w.signal_msg;
    w.in_kernel = false;
    tls_view.in_kernel = false;
    if (w.analyze) analysis_hooks::block_end();
    w.cur = nullptr;
    w.cur_fiber = nullptr;
}

void run_block(Worker& w, uint64_t b) {
    reset_block(w);
    enter_block(w, b);
    run_threads(w);
}

// Hands a faulted block's error to the launch (the first fault wins) and stops the launch.
void record_block_fault(Worker& w, LaunchState& ls) {
    ls.set_fault(w.fault_code, w.fault_msg);
    w.block_fault = false;
    w.reset_all_fibers();
}

// The order set by cusim::checker::set_block_order (a BlockOrder's value).
std::atomic<unsigned> g_block_order{0};

// The linear index of the k-th block started, in `order`, of a grid of n blocks.
uint64_t block_in_order(uint64_t k, uint64_t n, unsigned order) {
    switch (order) {
        case 1: return n - 1 - k;
        case 2: {
            const uint64_t evens = (n + 1) / 2;
            return k < evens ? 2 * k : 2 * (k - evens) + 1;
        }
        default: return k;
    }
}

void worker_run(Worker& w, LaunchState& ls) {
    setup_launch(w, ls);
    const unsigned order = g_block_order.load(std::memory_order_relaxed);
    for (;;) {
        if (ls.failed.load(std::memory_order_relaxed)) break;
        uint64_t b = ls.next_block.fetch_add(1, std::memory_order_relaxed);
        if (b >= ls.nblocks) break;
        run_block(w, block_in_order(b, ls.nblocks, order));
        if (w.block_fault) {
            record_block_fault(w, ls);
            break;
        }
    }
}

// ---- Cooperative launches: every block of the grid resident at once ------------------------------

// A block of a cooperative launch while another block of the same worker runs. Its per-block
// scheduler state is exchanged with the worker's (vectors swap their buffers, so the ThreadCtx
// pointers in the waiter list stay valid); its threads' stacks and its shared memory are copied
// aside, to be put back at the same addresses.
struct ParkedBlock {
    struct SavedStack {
        Ctx ctx;             // the suspended context of the fiber the thread ran on
        size_t offset = 0;   // of the saved bytes from the fiber's mapping
        std::vector<char> bytes;
    };
    uint64_t linear = 0;
    bool started = false, finished = false;
    std::vector<ThreadCtx> threads;
    std::vector<Warp> warps;
    unsigned started_threads = 0, done = 0, bar_arrived = 0;
    const site* bar_site = nullptr;
    std::vector<ThreadCtx*> waiters;
    size_t static_used = 0;
    std::vector<Worker::SharedEntry> shared_tab;
    std::vector<char> smem;
    std::vector<SavedStack> stacks;  // one per waiter, in the same order
};

void exchange(Worker& w, ParkedBlock& p) {
    std::swap(w.threads, p.threads);
    std::swap(w.warps, p.warps);
    std::swap(w.started, p.started_threads);
    std::swap(w.done, p.done);
    std::swap(w.bar_arrived, p.bar_arrived);
    std::swap(w.bar_site, p.bar_site);
    std::swap(w.bar_waiters, p.waiters);
    std::swap(w.static_used, p.static_used);
    std::swap(w.shared_tab, p.shared_tab);
}

// The running block waits at grid.sync(): copy its threads' stacks and its shared memory aside,
// give its fibers back to the pool, and make the block a ParkedBlock again.
void park_block(Worker& w, ParkedBlock& p) {
    p.stacks.resize(w.bar_waiters.size());
    for (size_t i = 0; i < w.bar_waiters.size(); ++i) {
        Fiber* f = w.bar_waiters[i]->fiber;
        ParkedBlock::SavedStack& st = p.stacks[i];
        st.ctx = static_cast<const Ctx&>(*f);
        const char* lo = f->mem + f->guard;
        const char* top = f->mem + f->mem_size - (f->color * 320) % 4096;
        const char* sp = suspended_stack_pointer(st.ctx) - 256;  // with the red zone below it
        if (sp > lo) lo = sp;
        st.offset = static_cast<size_t>(lo - f->mem);
        st.bytes.assign(lo, top);
        w.reset_fiber(f);  // a free fiber starts fiber_entry when next resumed, not this thread's code
        w.free_fibers.push_back(f);
    }
    p.smem.assign(w.arena, w.arena + w.dyn_bytes + w.static_used);
    w.bar_divergent = false;
    w.bar_grid = false;
    w.grid_waiting = false;
    exchange(w, p);
}

// Puts a parked block back (each thread on the fiber it left, with its stack as it was) and
// releases its threads from grid.sync().
void unpark_block(Worker& w, ParkedBlock& p) {
    exchange(w, p);
    for (size_t i = 0; i < w.bar_waiters.size(); ++i) {
        ThreadCtx* th = w.bar_waiters[i];
        Fiber* f = th->fiber;
        ParkedBlock::SavedStack& st = p.stacks[i];
        static_cast<Ctx&>(*f) = st.ctx;
        std::memcpy(f->mem + st.offset, st.bytes.data(), st.bytes.size());
        f->thread = th;
        th->state = TState::Ready;
    }
    w.free_fibers.erase(std::remove_if(w.free_fibers.begin(), w.free_fibers.end(),
                                       [](const Fiber* f) { return f->thread != nullptr; }),
                        w.free_fibers.end());
    std::memcpy(w.arena, p.smem.data(), p.smem.size());
    w.released.swap(w.bar_waiters);
    w.bar_waiters.clear();
    w.rel_pos = 0;
    w.rq_head = w.rq_count = 0;
    w.bar_arrived = 0;
    w.bar_acc = 0;
    w.bar_site = nullptr;
}

// The workers holding blocks meet here once each of their blocks waits at grid.sync() or has
// finished. Returns true when the waiting blocks go on; false when the launch ends (every block
// finished, a block faulted, or some blocks wait for blocks that have exited: a GPU would hang).
bool grid_barrier_meet(LaunchState& ls, uint64_t waiting, uint64_t finished, const site* where) {
    std::unique_lock<std::mutex> lk(ls.grid_mu);
    ls.grid_waiting += waiting;
    ls.grid_finished += finished;
    if (where && !ls.grid_site) ls.grid_site = where;
    const uint64_t generation = ls.grid_generation;
    if (++ls.grid_arrived < ls.grid_participants) {
        ls.grid_cv.wait(lk, [&] { return ls.grid_generation != generation; });
        return ls.grid_go;
    }
    bool go = ls.grid_waiting > 0 && !ls.failed.load();
    if (go && ls.grid_finished > 0) {
        ls.set_fault(cudaErrorLaunchTimeout,
                     "Grid barrier deadlock in kernel '" + std::string(ls.launch->kernel_name) + "': " +
                         std::to_string(ls.grid_waiting) + " block(s) wait at grid.sync() (" +
                         where_str(ls.grid_site) + ") but " + std::to_string(ls.grid_finished) +
                         " block(s) have exited without reaching it, so the grid barrier cannot complete "
                         "(on a GPU this kernel would hang)\n=========     Hint: every block of a cooperative "
                         "launch must call grid.sync() the same number of times; skip the work, not the sync.");
        go = false;
    }
    if (go && analysis_hooks::instrumented && ls.launch->instrumented) analysis_hooks::grid_sync_complete();
    ls.grid_go = go;
    ls.grid_arrived = 0;
    ls.grid_waiting = ls.grid_finished = 0;
    ++ls.grid_generation;
    lk.unlock();
    ls.grid_cv.notify_all();
    return go;
}

void worker_run_cooperative(Worker& w, LaunchState& ls) {
    const unsigned id = ls.next_worker.fetch_add(1);
    if (id >= ls.grid_participants) return;
    setup_launch(w, ls);
    std::vector<ParkedBlock> blocks;
    for (uint64_t b = id; b < ls.nblocks; b += ls.grid_participants) {
        blocks.emplace_back();
        ParkedBlock& p = blocks.back();
        p.linear = b;
        p.threads = w.threads;  // coordinates set by setup_launch; states reset when the block starts
        p.warps = w.warps;
    }
    for (;;) {
        uint64_t waiting = 0, finished = 0;
        const site* where = nullptr;
        for (ParkedBlock& p : blocks) {
            if (p.finished) {
                ++finished;
                continue;
            }
            if (ls.failed.load(std::memory_order_relaxed)) break;
            if (!p.started) {
                exchange(w, p);
                reset_block(w);
                p.started = true;
            } else {
                unpark_block(w, p);
            }
            enter_block(w, p.linear);
            run_threads(w);
            if (w.block_fault) {
                record_block_fault(w, ls);
                exchange(w, p);
                break;
            }
            if (w.grid_waiting) {
                where = w.bar_site;
                park_block(w, p);
                ++waiting;
            } else {
                exchange(w, p);
                p.finished = true;
                p = ParkedBlock{p.linear, true, true};  // its memory is no longer needed
                ++finished;
            }
        }
        if (!grid_barrier_meet(ls, waiting, finished, where)) break;
    }
}

// A persistent pool of worker threads; one launch runs at a time.
class Pool {
public:
    static Pool& get() {
        static Pool* p = new Pool;  // never destroyed: workers may outlive static destruction order
        return *p;
    }
    void run(LaunchState& ls) {
        std::unique_lock<std::mutex> lk(mu_);
        current_ = &ls;
        ls.nworkers = n_;
        ls.grid_participants = static_cast<unsigned>(std::min<uint64_t>(n_, ls.nblocks));
        remaining_ = static_cast<int>(workers_.size());
        ++generation_;
        cv_.notify_all();
        done_cv_.wait(lk, [&] { return remaining_ == 0; });
        current_ = nullptr;
    }
    std::mutex& launch_mutex() { return launch_mu_; }

private:
    Pool() {
        unsigned n = std::max(1u, std::thread::hardware_concurrency());
        if (const char* e = std::getenv("CUSIM_THREADS")) {
            long v = std::strtol(e, nullptr, 10);
            if (v >= 1) n = static_cast<unsigned>(v);
        }
        install_signal_handlers();
        for (unsigned i = 0; i < n; ++i) {
            workers_.emplace_back([this] { loop(); });
            workers_.back().detach();
        }
        n_ = n;
        // Every worker has recorded itself as cusim's own before the first launch returns
        // (cusim::checker::own_threads: threads a program left running are the others).
        std::unique_lock<std::mutex> lk(mu_);
        done_cv_.wait(lk, [&] { return started_ == n; });
    }
    void loop() {
        note_own_thread();
        {
            std::lock_guard<std::mutex> lk(mu_);
            ++started_;
            done_cv_.notify_all();
        }
        Worker w;
        tls_worker = &w;
        w.altstack.resize(64 * 1024);
        stack_t ss;
        ss.ss_sp = w.altstack.data();
        ss.ss_size = w.altstack.size();
        ss.ss_flags = 0;
        sigaltstack(&ss, nullptr);
        uint64_t seen = 0;
        for (;;) {
            LaunchState* ls;
            {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return generation_ != seen; });
                seen = generation_;
                ls = current_;
            }
            if (ls->cooperative)
                worker_run_cooperative(w, *ls);
            else
                worker_run(w, *ls);
            {
                std::lock_guard<std::mutex> lk(mu_);
                if (--remaining_ == 0) done_cv_.notify_all();
            }
        }
    }
    std::mutex mu_, launch_mu_;
    std::condition_variable cv_, done_cv_;
    std::vector<std::thread> workers_;
    LaunchState* current_ = nullptr;
    unsigned started_ = 0;  // workers that have recorded themselves (note_own_thread)
    int remaining_ = 0;
    uint64_t generation_ = 0;
    unsigned n_ = 1;
};

// Marks cusim's own code running on a fiber, so analysis ignores its memory accesses (it may call
// inline library functions whose instrumented copies, from a kernel translation unit, the linker kept).
struct RuntimeScope {
    RuntimeScope() { tls_view.in_kernel = false; }
    ~RuntimeScope() { tls_view.in_kernel = true; }
};

[[noreturn]] __attribute__((noinline, cold)) void outside_kernel(const char* what, const site& where) {
    std::fprintf(stderr, "cusim: %s called outside a kernel at %s:%u\n", what, where.file_name(),
                 static_cast<unsigned>(where.line()));
    std::abort();
}

__attribute__((always_inline)) inline Worker& current_worker(const char* what, const site& where) {
    Worker* w = tls_worker;
    if (__builtin_expect(!w || !w->cur, 0)) outside_kernel(what, where);
    return *w;
}

}  // namespace

// ---- Kernel-side entry points -------------------------------------------------------------------

Handoff barrier_arrive(int kind, int predicate, const site& where) {
    Worker& w = current_worker("__syncthreads", where);
    RuntimeScope scope;
    ThreadCtx* th = w.cur;
    if (w.bar_arrived == 0)
        w.bar_site = &where;
    else if (!same_site(w.bar_site, &where))
        w.bar_divergent = true;
    ++w.bar_arrived;
    if (kind != 0 && predicate) ++w.bar_acc;
    th->state = TState::BarrierWait;
    th->wait_site = &where;
    if (w.bar_arrived == w.nthreads - w.done) {
        complete_barrier(w, th);
        return {nullptr, nullptr};
    }
    w.bar_waiters.push_back(th);
    return park(w, th);
}

Handoff grid_barrier_arrive(const site& where) {
    Worker& w = current_worker("grid.sync()", where);
    LaunchState& ls = *w.ls;
    if (ls.nblocks == 1) return barrier_arrive(0, 0, where);  // the grid is the block
    RuntimeScope scope;
    if (!ls.cooperative) {
        fail_block(w, cudaErrorLaunchFailure,
                   "Grid synchronization error in " + block_prefix(w) + ": grid.sync() (" + where_str(&where) +
                       ") in a launch that is not cooperative: the grid has " + std::to_string(ls.nblocks) +
                       " blocks and was not launched with cudaLaunchCooperativeKernel, so its blocks need not be "
                       "resident together and a grid-wide barrier cannot complete (on a GPU this hangs or "
                       "faults)\n=========     Hint: launch the kernel with cudaLaunchCooperativeKernel and at most "
                       "cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount blocks; "
                       "grid.is_valid() tells whether the grid may synchronize");
    }
    ThreadCtx* th = w.cur;
    if (w.bar_arrived == 0) {
        w.bar_site = &where;
        w.bar_grid = true;
    } else if (!w.bar_grid || !same_site(w.bar_site, &where)) {
        w.bar_divergent = true;
    }
    ++w.bar_arrived;
    th->state = TState::BarrierWait;
    th->wait_site = &where;
    w.bar_waiters.push_back(th);
    if (w.bar_arrived != w.nthreads - w.done) return park(w, th);
    complete_barrier(w, nullptr);  // divergence is reported here; otherwise the block waits for the grid
    // The block's last thread: back to the worker, which parks the block until the grid arrives.
    Fiber* self = th->fiber;
    w.cur_fiber = nullptr;
    w.cur = nullptr;
#if defined(CUSIM_NATIVE_SWITCH)
    return {self, &w.main};
#else
    switch_context(self, &w.main);
    return {nullptr, nullptr};
#endif
}

Handoff object_wait(const void* object, const char* what, const site& where) {
    Worker& w = current_worker(what, where);
    RuntimeScope scope;
    ThreadCtx* th = w.cur;
    th->state = TState::ObjectWait;
    th->wait_site = &where;
    w.object_waiters.push_back({object, th, what});
    return park(w, th);
}

namespace {
void notify_waiters(Worker* w, const void* object) {
    auto& v = w->object_waiters;
    size_t kept = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i].object == object)
            push_ready(*w, v[i].thread);
        else
            v[kept++] = v[i];
    }
    v.resize(kept);
    if (w->analyze) analysis_hooks::barrier_complete();
}
}  // namespace

void object_notify(const void* object) {
    Worker* w = tls_worker;
    if (!w || !w->cur) return;
    RuntimeScope scope;
    notify_waiters(w, object);
}

void barrier_init(BarrierState* b, std::ptrdiff_t expected) {
    b->expected = expected;
    b->pending = expected;
    b->phase = 0;
}

unsigned long long barrier_arrive(BarrierState* b, std::ptrdiff_t update, bool drop, bool* last, const site& where) {
    if (update <= 0 || update > b->pending)
        sync_object_error(cudaErrorLaunchFailure,
                          update <= 0 ? "cuda::barrier::arrive: the update must be positive"
                                      : "cuda::barrier::arrive: more arrivals than the phase expects (the update "
                                        "exceeds the arrivals still pending; on a GPU the behaviour is undefined)",
                          where);
    if (drop) --b->expected;
    b->pending -= update;
    *last = b->pending == 0;
    return b->phase;
}

void barrier_complete(BarrierState* b) {
    b->pending = b->expected;
    ++b->phase;
    object_notify(b);
}

unsigned long long barrier_phase(const BarrierState* b) { return b->phase; }

unsigned counter_add(unsigned* counter, int delta) { return *counter += static_cast<unsigned>(delta); }
void counter_set(unsigned* counter, unsigned value) { *counter = value; }

struct AsyncCopies {
    struct Copy {
        void* dst;
        const void* src;
        std::size_t size;
        unsigned long long stage;
    };
    std::vector<Copy> list;
};

void async_copy_add(AsyncCopies** list, void* dst, const void* src, std::size_t size, unsigned long long stage) {
    RuntimeScope scope;
    if (!*list) *list = new AsyncCopies;
    (*list)->list.push_back({dst, src, size, stage});
}

void async_copy_complete(AsyncCopies** list, unsigned long long stage) {
    if (!*list) return;
    RuntimeScope scope;
    auto& v = (*list)->list;
    size_t kept = 0;
    for (const AsyncCopies::Copy& c : v) {
        if (c.stage < stage)
            std::memcpy(c.dst, c.src, c.size);
        else
            v[kept++] = c;
    }
    v.resize(kept);
    if (stage == ~0ull) {
        delete *list;
        *list = nullptr;
    }
}

Handoff tile_barrier_arrive(unsigned first, unsigned count, const site& where) {
    Worker& w = current_worker("thread_block_tile::sync", where);
    RuntimeScope scope;
    if (w.tile_arrived.size() < w.nthreads) w.tile_arrived.assign(w.nthreads, 0u);
    unsigned& arrived = w.tile_arrived[first];
    if (++arrived == count) {
        arrived = 0;
        notify_waiters(&w, &arrived);
        return {nullptr, nullptr};
    }
    ThreadCtx* th = w.cur;
    th->state = TState::ObjectWait;
    th->wait_site = &where;
    w.object_waiters.push_back({&arrived, th, "a thread_block_tile's sync()"});
    return park(w, th);
}

bool cooperative_launch() {
    const Worker* w = tls_worker;
    return w && w->ls && w->ls->cooperative;
}

int barrier_result(int kind) {
    const Worker& w = *tls_worker;
    const int count = w.bar_result_count;
    return kind == 1 ? count : kind == 2 ? w.bar_result_all : (count > 0 ? 1 : 0);
}

Handoff warp_arrive(WarpOpKind kind, unsigned mask, uint64_t value, int arg, int width, const site& where,
                    uint64_t* result) {
    Worker& w = current_worker(op_name(kind), where);
    RuntimeScope scope;
    ThreadCtx* th = w.cur;
    const unsigned lane = th->tid & 31u;
    Warp& wp = w.warps[th->tid >> 5];
    auto fail = [&](const std::string& what, const std::string& hint) {
        fail_block(w, cudaErrorLaunchFailure,
                   "Warp synchronization error in " + block_prefix(w) + ": thread " + coords(th->idx) + " (lane " +
                       std::to_string(lane) + ") at " + op_name(kind) + " with mask " + hex(mask) + " (" +
                       where_str(&where) + "): " + what + "\n=========     Hint: " + hint);
    };
    if (!(mask & (1u << lane))) fail("the mask does not include the calling lane", "include the caller's own lane bit in the mask");
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail("width " + std::to_string(width) + " is not a power of two between 1 and 32", "use a width of 1, 2, 4, 8, 16 or 32");
    if (is_wmma(kind) && (mask & ~wp.existing))
        fail("this warp has only lanes " + hex(wp.existing) + " (blockDim has " + std::to_string(w.nthreads) +
                 " threads)",
             "the warp matrix functions need all 32 lanes of a warp: make the block's thread count a multiple of 32");
    // Lanes of the mask that have exited or do not exist do not take part (CUDA's rule for *_sync
    // intrinsics and __syncwarp: every non-exited thread named in the mask must execute it).

    WarpOp* op = nullptr;
    for (WarpOp& p : wp.pending) {
        if (p.mask == mask) {
            if (p.kind != kind)
                fail(std::string("lanes of the same mask wait at ") + op_name(p.kind) + " (" + where_str(p.where) + ")",
                     "every lane named in the mask must execute the same intrinsic");
            op = &p;
        } else if (p.mask & (1u << lane)) {
            // The pending operation names this lane, which goes to another one first. If each needs a
            // lane waiting at the other, neither can complete. Otherwise (masks that merely overlap:
            // the lanes of a binary_partition() shuffle in their two groups while those done first
            // wait at a full-warp operation, as on a GPU) this lane must still come back to the
            // pending one before it exits (checked at its exit).
            if (p.arrived & mask)
                fail("lanes " + hex(p.mask & mask & p.arrived) + " that this mask names wait at " + op_name(p.kind) +
                         " with mask " + hex(p.mask) + " (" + where_str(p.where) + "), so neither can complete",
                     "lanes that synchronize together must use the same mask");
            if (!p.skipped) {
                p.skipped_kind = kind;
                p.skipped_mask = mask;
                p.skipped_where = &where;
            }
            p.skipped |= 1u << lane;
        }
    }
    if (!op) {
        wp.pending.emplace_back();
        op = &wp.pending.back();
        op->kind = kind;
        op->mask = mask;
        op->arrived = 0;
        op->where = &where;
        op->skipped = 0;
    }
    op->val[lane] = value;
    const int base = static_cast<int>(lane) & ~(width - 1);
    int src = static_cast<int>(lane);
    switch (kind) {
        case WarpOpKind::ShflIdx: src = base + (arg & (width - 1)); break;
        case WarpOpKind::ShflUp: src = static_cast<int>(lane) - arg >= base ? static_cast<int>(lane) - arg : static_cast<int>(lane); break;
        case WarpOpKind::ShflDown: src = static_cast<int>(lane) + arg < base + width ? static_cast<int>(lane) + arg : static_cast<int>(lane); break;
        case WarpOpKind::ShflXor: {
            int s = static_cast<int>(lane) ^ arg;
            src = (s >= base + width || s > 31) ? static_cast<int>(lane) : s;
            break;
        }
        default: break;
    }
    op->src[lane] = static_cast<int8_t>(src);
    op->arrived |= 1u << lane;
    th->result_slot = result;
    th->state = TState::WarpWait;
    th->wait_site = &where;

    if (op->arrived == (op->mask & ~wp.exited)) {
        complete_warp_op(w, wp, *op, th);
        return {nullptr, nullptr};
    }
    return park(w, th);
}

// __activemask() is a scheduling point: lanes of the warp that have not run yet get to run until
// they wait somewhere or exit, so lanes that return early are not reported active.
// Lanes of the warp that have not run yet get to run until they wait somewhere or exit (`th`
// yields to them). With a site (coalesced_threads()), the lanes then parked at that same site
// form the group: the first lane to see the warp settle assigns the mask to all of them.
unsigned settle_warp(const site* where) {
    Worker* w = tls_worker;
    if (!w || !w->cur) return 0;
    RuntimeScope scope;
    ThreadCtx* th = w->cur;
    const unsigned warp_base = th->tid & ~31u;
    const Warp& wp = w->warps[th->tid >> 5];
    LaneGroup* groups = w->groups.data();
    LaneGroup& mine = groups[th->tid];
    th->at_activemask = true;
    mine.where = where;
    mine.ready = false;
    for (;;) {
        if (mine.ready) break;
        bool pending = false;
        for (unsigned l = 0; l < 32 && !pending; ++l) {
            if (!((wp.existing >> l) & 1u) || warp_base + l == th->tid) continue;
            const ThreadCtx& o = w->threads[warp_base + l];
            pending = (o.state == TState::Unstarted || o.state == TState::Ready) && !o.at_activemask;
        }
        if (!pending) break;
        // Yield: queue this thread behind the others and run another one, a thread not started
        // yet first (two lanes yielding to each other would otherwise never let it start).
        ThreadCtx* next = w->started < w->nthreads ? &w->threads[w->started++] : pick_next(*w);
        if (!next) break;
        push_ready(*w, th);
        if (!next->fiber) {
            Fiber* f = w->get_fiber();
            if (!f) fail_block(*w, cudaErrorLaunchOutOfResources, "cusim could not allocate a fiber stack (mmap failed)");
            f->thread = next;
            next->fiber = f;
        }
        resume(*w, th->fiber, next->fiber);
    }
    th->at_activemask = false;
    if (!where) return wp.existing & ~wp.exited;
    if (!mine.ready) {
        unsigned mask = 0;
        for (unsigned l = 0; l < 32; ++l) {
            const ThreadCtx& o = w->threads[warp_base + l];
            const LaneGroup& g = groups[warp_base + l];
            if (((wp.existing >> l) & 1u) && (&o == th || (o.at_activemask && g.where && same_site(g.where, where))))
                mask |= 1u << l;
        }
        for (unsigned l = 0; l < 32; ++l) {
            if (!((mask >> l) & 1u)) continue;
            groups[warp_base + l].mask = mask;
            groups[warp_base + l].ready = true;
        }
    }
    mine.ready = false;
    mine.where = nullptr;
    return mine.mask;
}

unsigned active_mask() { return settle_warp(nullptr); }
unsigned coalesced_mask(const site& where) { return settle_warp(&where); }

unsigned lane_id() {
    Worker* w = tls_worker;
    return w && w->cur ? (w->cur->tid & 31u) : 0;
}

thread_local SharedLookup tls_shared_last{nullptr, nullptr};

void* shared_alloc(const void* key, size_t size, size_t align) {
    Worker& w = *tls_worker;
    for (const auto& e : w.shared_tab) {
        if (e.key == key) {
            tls_shared_last = {key, e.ptr};
            return e.ptr;
        }
    }
    RuntimeScope scope;
    if (align < 16) align = 16;
    size_t off = (w.dyn_bytes + w.static_used + align - 1) & ~(align - 1);
    size_t used = off + size - w.dyn_bytes;
    if (used > kStaticSharedLimit) {
        fail_block(w, cudaErrorLaunchOutOfResources,
                   "Shared memory limit exceeded in " + block_prefix(w) + ": static __shared__ declarations need " +
                       std::to_string(used) + " bytes, more than the 48 KiB (49152 bytes) a kernel may declare "
                       "statically\n=========     Hint: nvcc rejects this at compile time; use extern __shared__ "
                       "with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) for more");
    }
    w.static_used = used;
    void* p = w.arena + off;
    w.shared_tab.push_back({key, p});
    tls_shared_last = {key, p};
    return p;
}

[[noreturn]] void fail_current_block(cudaError_t code, const std::string& report) {
    fail_block(*tls_worker, code, report);
}

void* dynamic_shared_base() { return tls_worker ? tls_worker->arena : nullptr; }

[[noreturn]] void device_trap(const char* what, const site& where) {
    Worker& w = current_worker(what, where);
    RuntimeScope scope;
    fail_block(w, cudaErrorLaunchFailure,
               std::string(what) + " executed in " + block_prefix(w) + " by thread " + coords(w.cur->idx) + " at " +
                   where_str(&where));
}

void sync_object_error(cudaError_t code, const char* what, const site& where) {
    Worker& w = current_worker(what, where);
    RuntimeScope scope;
    fail_block(w, code,
               std::string(code == cudaErrorMisalignedAddress ? "Misaligned address" : "Synchronization error") +
                   " in " + block_prefix(w) + " thread " + coords(w.cur->idx) + " at " + where_str(&where) + ": " +
                   what);
}

void wmma_misaligned(const char* function, const void* ptr, unsigned ldm, unsigned element_bytes, const site& where) {
    Worker& w = current_worker(function, where);
    RuntimeScope scope;
    std::ostringstream os;
    os << "Misaligned address in " << block_prefix(w) << " thread " << coords(w.cur->idx) << " at "
       << where_str(&where) << ": " << function << " with pointer " << ptr << " and ldm " << ldm << " ("
       << element_bytes << "-byte elements): ";
    if (reinterpret_cast<uintptr_t>(ptr) & 15u)
        os << "the pointer is not 128-bit (16-byte) aligned";
    else
        os << "ldm * " << element_bytes << " = " << uint64_t(ldm) * element_bytes << " bytes is not a multiple of 16";
    os << "\n=========     Hint: tiles in memory must start on a 16-byte boundary (the Programming Guide asks for 32) "
          "and rows (or columns) be a "
          "multiple of 16 bytes apart: pad shared-memory tiles accordingly (e.g. 16 + 8 halves per row)";
    fail_block(w, cudaErrorMisalignedAddress, os.str());
}

long long steady_clock_ns() {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void sleep_ns(unsigned int ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }

namespace {
std::atomic_flag& wide_atomic_stripe(const void* p) {
    static std::atomic_flag locks[64];
    return locks[(reinterpret_cast<uintptr_t>(p) >> 4) % 64];
}
}  // namespace

void wide_atomic_lock(const void* p) {
    std::atomic_flag& lock = wide_atomic_stripe(p);
    while (lock.test_and_set(std::memory_order_acquire)) lock.wait(true, std::memory_order_relaxed);
}

void wide_atomic_unlock(const void* p) {
    std::atomic_flag& lock = wide_atomic_stripe(p);
    lock.clear(std::memory_order_release);
    lock.notify_one();
}

void assert_fail(const char* expr, const char* file, unsigned line, const char* func) {
    Worker* w = tls_worker;
    if (!w || !w->in_kernel || !w->cur) {
        std::fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, func, expr);
        std::abort();
    }
    RuntimeScope scope;
    const uint3 b = w->block_idx, t = w->cur->idx;
    // The GPU's own message format, then cusim's report.
    std::fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line,
                 func, b.x, b.y, b.z, t.x, t.y, t.z, expr);
    fail_block(*w, cudaErrorAssert,
               "Device assert failed in " + block_prefix(*w) + " thread " + coords(t) + " at " + file + ":" +
                   std::to_string(line) + ": " + expr);
}

namespace {
// The launch configurations that ran since cusim::checker::clear_launches() (cusim/checker.h).
struct LaunchLog {
    std::mutex mu;
    std::vector<cusim::checker::LaunchRecord> records;
};
LaunchLog& launch_log() {
    static LaunchLog* log = new LaunchLog;  // never destroyed: kernels may run during static destruction
    return *log;
}

void record_launch(const KernelLaunch& L, dim3 g, dim3 b, size_t shmem) {
    const char* kernel = L.kernel_name ? L.kernel_name : "";
    const char* file = L.file ? L.file : "";
    LaunchLog& log = launch_log();
    std::lock_guard<std::mutex> lk(log.mu);
    for (auto& r : log.records) {
        if (r.line == L.line && r.grid[0] == g.x && r.grid[1] == g.y && r.grid[2] == g.z && r.block[0] == b.x &&
            r.block[1] == b.y && r.block[2] == b.z && r.dynamic_shared == shmem && r.kernel == kernel &&
            r.file == file) {
            ++r.launches;
            return;
        }
    }
    if (log.records.size() >= cusim::checker::kMaxLaunchRecords) return;
    cusim::checker::LaunchRecord r;
    r.kernel = kernel;
    r.file = file;
    r.line = L.line;
    r.grid[0] = g.x, r.grid[1] = g.y, r.grid[2] = g.z;
    r.block[0] = b.x, r.block[1] = b.y, r.block[2] = b.z;
    r.dynamic_shared = shmem;
    r.launches = 1;
    log.records.push_back(std::move(r));
}
}  // namespace

bool launching_from_device() { return tls_worker && tls_worker->in_kernel; }

namespace {
void launch_grid(const KernelLaunch& L);
}

// A grid, then the child grids its threads launched (dynamic parallelism): a child grid may run any
// time after its launch and before its parent grid completes as seen from the host; cusim runs the
// children once the parent's blocks are done, one child grid after the other, which is one of the
// orders a GPU may give them (a parent cannot wait for its children since CUDA 12).
void launch_kernel(const KernelLaunch& L) {
    launch_grid(L);
    run_child_launches();
}

namespace {
void launch_grid(const KernelLaunch& L) {
    if (injected_launch_failure(L.kernel_name, L.file, L.line) != cudaSuccess) return;
    const launch_config& cfg = *L.cfg;
    const std::string at = std::string(L.file) + ":" + std::to_string(L.line);
    const std::string who = "launch of kernel '" + std::string(L.kernel_name) + "' at " + at;
    if (tls_worker && tls_worker->in_kernel) {
        report_error(cudaErrorNotSupported, who + ": kernels launching kernels (dynamic parallelism) are not supported by cusim");
        return;
    }
    std::lock_guard<std::mutex> serial(Pool::get().launch_mutex());
    if (cudaError_t s = sticky_error()) {
        report_error(s, who + ": the context is unusable after an earlier device fault (" + cudaGetErrorName(s) + ")");
        return;
    }
    const dim3 b = cfg.block, g = cfg.grid;
    const uint64_t nthreads = uint64_t(b.x) * b.y * b.z;
    // The codes CUDA 13 returns on a GPU (tests/conformance/launch_errors.cu, answered by an H100
    // and CUDA 13.0 on 2026-11-28): every invalid configuration is cudaErrorInvalidValue: a grid or
    // block dimension of 0, a block over 1024 threads or (1024, 1024, 64), more threads than the
    // kernel's __launch_bounds__, a grid over (2^31-1, 65535, 65535). (Older toolkits returned
    // cudaErrorInvalidConfiguration and cudaErrorLaunchOutOfResources for some of these.)
    if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0) {
        report_error(cudaErrorInvalidValue, who + ": a grid or block dimension is 0 (grid " + coords(g) +
                                                ", block " + coords(b) + ")");
        return;
    }
    if (b.x > 1024 || b.y > 1024 || b.z > 64 || nthreads > uint64_t(kMaxThreadsPerBlock)) {
        report_error(cudaErrorInvalidValue,
                     who + ": block " + coords(b) + " has " + std::to_string(nthreads) +
                         " threads; the limits are 1024 threads per block and (1024,1024,64) per dimension");
        return;
    }
    if (const int bound = max_threads_per_block(L.kernel_id); nthreads > uint64_t(bound)) {
        report_error(cudaErrorInvalidValue,
                     who + ": block " + coords(b) + " has " + std::to_string(nthreads) +
                         " threads, more than the kernel's __launch_bounds__(" + std::to_string(bound) +
                         ") allows (cudaFuncGetAttributes reports it as maxThreadsPerBlock)");
        return;
    }
    if (g.x > 2147483647u || g.y > 65535u || g.z > 65535u) {
        report_error(cudaErrorInvalidValue,
                     who + ": grid " + coords(g) + " exceeds the limits (2147483647,65535,65535)");
        return;
    }
    const size_t dyn_limit = max_dynamic_shared(L.kernel_id);
    if (cfg.shmem > dyn_limit) {
        report_error(cudaErrorInvalidValue,
                     who + ": " + std::to_string(cfg.shmem) + " bytes of dynamic shared memory requested, the limit is " +
                         std::to_string(dyn_limit) +
                         (dyn_limit < kDynamicSharedOptinLimit
                              ? " (raise it with cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), up to 232448)"
                              : ""));
        return;
    }
    if (!valid_stream(cfg.stream)) {
        report_error(cudaErrorInvalidResourceHandle, who + ": the stream is not a valid stream handle");
        return;
    }
    const uint64_t nblocks = uint64_t(g.x) * g.y * g.z;
    if (cfg.cooperative) {
        const int per_sm = max_active_blocks_per_sm(static_cast<int>(nthreads), cfg.shmem);
        const uint64_t resident = uint64_t(per_sm) * kNumSMs;
        if (nblocks > resident) {
            report_error(cudaErrorCooperativeLaunchTooLarge,
                         who + ": a cooperative launch of " + std::to_string(nblocks) + " blocks; with " +
                             std::to_string(nthreads) + " threads and " + std::to_string(cfg.shmem) +
                             " bytes of dynamic shared memory per block, at most " + std::to_string(per_sm) +
                             " blocks per SM x " + std::to_string(kNumSMs) + " SMs = " + std::to_string(resident) +
                             " can be resident at once, as grid.sync() needs. Size the grid with "
                             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) * "
                             "multiProcessorCount");
            return;
        }
    }
    record_launch(L, g, b, cfg.shmem);
    note_stream_work(cfg.stream, std::string("the launch of ") + (L.kernel_name ? L.kernel_name : "a kernel"),
                     L.file ? std::string(L.file) + ":" + std::to_string(L.line) : std::string());
    LaunchState ls;
    ls.cooperative = cfg.cooperative;
    ls.launch = &L;
    ls.grid = g;
    ls.block = b;
    ls.dyn_smem = cfg.shmem;
    ls.nthreads = static_cast<unsigned>(nthreads);
    ls.nblocks = uint64_t(g.x) * g.y * g.z;
    const bool analyze = analysis_hooks::instrumented && L.instrumented;
    if (analyze) analysis_hooks::launch_begin(L);
    Pool::get().run(ls);
    if (analyze) analysis_hooks::launch_end(L, ls.fault_code, ls.fault_msg);
    if (ls.fault_code != cudaSuccess) {
        report_error(ls.fault_code, "========= cusim: " + ls.fault_msg + "\n=========     in " + who, true);
    }
}
}  // namespace

}  // namespace cusim::detail

namespace cusim {
void* dynamic_shared() { return detail::dynamic_shared_base(); }
bool register_dynamic_shared_pointer(void** (*getter)()) {
    detail::dyn_shared_getters().push_back(getter);
    return true;
}
}  // namespace cusim

namespace cusim::checker {
std::vector<LaunchRecord> launches() {
    detail::LaunchLog& log = detail::launch_log();
    std::lock_guard<std::mutex> lk(log.mu);
    return log.records;
}
void clear_launches() {
    detail::LaunchLog& log = detail::launch_log();
    std::lock_guard<std::mutex> lk(log.mu);
    log.records.clear();
}
void set_block_order(BlockOrder order) {
    detail::g_block_order.store(static_cast<unsigned>(order), std::memory_order_relaxed);
}
}  // namespace cusim::checker
