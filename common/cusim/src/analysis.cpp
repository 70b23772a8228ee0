// cusim analysis: the __tsan_* entry points that GCC's ThreadSanitizer instrumentation calls from
// kernel translation units, turned into memcheck, racecheck, initcheck and memory metrics.
//
// Every access of kernel code arrives here with its address, size and call site (return address).
// It is classified by address: the running fiber's stack (local memory: ignored), the block's
// shared-memory arena, a cudaMalloc'd allocation (with redzones around it), or something else.
// Accesses of one warp are grouped into warp-level requests by (warp, call site, per-lane
// occurrence index) and turned into sectors (global) or wavefronts (shared) when the warp reaches
// a synchronization point or the block ends.
//
// racecheck also checks flag protocols between blocks of one launch (see flag_protocol below).
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cusim/analysis.h"
#include "internal.h"

namespace cusim::detail::analysis_hooks {
bool instrumented = false;
}

namespace {

using namespace cusim::detail;
using cusim::analysis::KernelMetrics;
using cusim::analysis::LineMetrics;
using cusim::analysis::Report;
constexpr unsigned K = cusim::analysis::kSampledOccurrences;
thread_local bool tls_in_hook = false;  // accesses made while handling an access are cusim's own

enum ToolBits : unsigned { kMemcheck = 1, kRacecheck = 2, kInitcheck = 4, kSynccheck = 8 };

unsigned parse_tool_list(const char* e) {
    if (!e || !*e || std::strcmp(e, "all") == 0) return kMemcheck | kRacecheck | kInitcheck | kSynccheck;
    unsigned bits = 0;
    std::string s(e);
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t c = s.find(',', pos);
        std::string t = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
        if (t == "memcheck") bits |= kMemcheck;
        else if (t == "racecheck") bits |= kRacecheck;
        else if (t == "initcheck") bits |= kInitcheck;
        else if (t == "synccheck") bits |= kSynccheck;
        else if (t == "all") bits |= kMemcheck | kRacecheck | kInitcheck | kSynccheck;
        else if (t != "none" && !t.empty())
            std::fprintf(stderr, "cusim: CUSIM_TOOL: unknown tool '%s' (memcheck, racecheck, initcheck, synccheck, all, none)\n",
                         t.c_str());
        if (c == std::string::npos) break;
        pos = c + 1;
    }
    return bits;
}
unsigned parse_tools() { return parse_tool_list(std::getenv("CUSIM_TOOL")); }
std::atomic<unsigned>& tool_bits() {
    static std::atomic<unsigned> t{parse_tools()};
    return t;
}
inline unsigned tools() { return tool_bits().load(std::memory_order_relaxed); }

constexpr size_t kFrontRedzone = 256;
constexpr size_t kBackRedzone = 1024;

// ---- Process-wide state ---------------------------------------------------------------------------

struct Alloc {
    uintptr_t start = 0, end = 0;  // requested bytes [start, end)
    std::unique_ptr<std::atomic<uint8_t>[]> init;  // initcheck: one bit per byte
};

struct SiteKey {
    std::string kernel;
    uintptr_t pc;
    bool operator<(const SiteKey& o) const { return pc != o.pc ? pc < o.pc : kernel < o.kernel; }
};

// A value published without a fence: its store, the flag store that published it, and the block.
struct Publication {
    uintptr_t store_pc = 0, flag_pc = 0;
    uintptr_t store_addr = 0, flag_addr = 0;
    uint3 block{0, 0, 0};
};

struct Global {
    std::mutex mu;
    std::map<uintptr_t, std::shared_ptr<Alloc>> allocs;  // by start
    std::map<uintptr_t, uintptr_t> freed;               // start -> end, for use-after-free
    // Snapshot for the running launch: sorted by start; read without locks by the workers.
    std::vector<std::shared_ptr<Alloc>> snap;
    std::vector<std::pair<uintptr_t, uintptr_t>> freed_snap;
    // Virtual address ranges with nothing accessible mapped, and why (label_address_range):
    // start -> (end, what), and the running launch's snapshot of them.
    std::map<uintptr_t, std::pair<uintptr_t, std::string>> labeled;
    std::vector<std::pair<std::pair<uintptr_t, uintptr_t>, std::string>> labeled_snap;
    std::vector<std::pair<uintptr_t, uintptr_t>> static_segments;
    uintptr_t host_stack_lo = 0, host_stack_hi = 0;
    // Results.
    std::map<std::string, KernelMetrics> kernels;
    std::map<SiteKey, KernelMetrics> sites;
    std::vector<Report> reports;
    std::vector<uintptr_t> report_pcs;  // call site of each report, until symbolized
    std::map<std::string, size_t> report_index;  // dedup key -> index
    size_t printed_reports = 0;
    uint64_t error_count = 0;
    std::map<uintptr_t, std::pair<std::string, int>> symbolized;
    std::map<uintptr_t, std::string> functions;
    // racecheck's flag protocols: global words of the running launch whose value was published by a
    // later flag store of the same thread with no __threadfence() between them, by 4-byte word.
    std::mutex published_mu;
    std::unordered_map<uintptr_t, Publication> published;
};

Global& G() {
    static Global* g = new Global;
    return *g;
}
// G().published.size(), read without the lock by every global load (a cache line of its own: other
// globals near it are written as blocks start).
alignas(64) std::atomic<size_t> g_published_count{0};

// ---- Symbolization: call-site address -> .cu file and line ------------------------------------------

bool is_runtime_frame(const std::string& file) {
    return file.find("/common/cusim/include/") != std::string::npos || file.rfind("/usr/include/", 0) == 0 ||
           file.find("/c++/") != std::string::npos;
}

// Resolves pcs (return addresses into instrumented code) with addr2line, choosing the innermost
// inlined frame that is not in cusim's or the C++ library's headers.
void symbolize(const std::vector<uintptr_t>& pcs) {
    Global& g = G();
    std::vector<uintptr_t> todo;
    for (uintptr_t pc : pcs)
        if (!g.symbolized.count(pc)) todo.push_back(pc);
    if (todo.empty()) return;
    std::map<std::string, std::vector<uintptr_t>> by_object;
    std::map<uintptr_t, uintptr_t> rel;
    for (uintptr_t pc : todo) {
        Dl_info info;
        if (dladdr(reinterpret_cast<void*>(pc - 1), &info) && info.dli_fname) {
            std::string obj = info.dli_fname;
            if (obj.empty() || obj.find('/') == std::string::npos) obj = "/proc/self/exe";
            by_object[obj].push_back(pc);
            rel[pc] = pc - 1 - reinterpret_cast<uintptr_t>(info.dli_fbase);
        } else {
            g.symbolized[pc] = {"", 0};
        }
    }
    for (auto& [obj, list] : by_object) {
        // A sentinel address terminates each pc's inline chain in the output.
        std::string full;
        for (uintptr_t pc : list) {
            char b[32];
            std::snprintf(b, sizeof b, " 0x%lx 0x0", static_cast<unsigned long>(rel[pc]));
            full += b;
        }
        const std::string cmd = "addr2line -C -f -i -e '" + obj + "'" + full + " 2>/dev/null";
        FILE* f = popen(cmd.c_str(), "r");
        std::vector<std::string> lines;
        if (f) {
            char buf[4096];
            while (std::fgets(buf, sizeof buf, f)) {
                std::string l(buf);
                while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
                lines.push_back(l);
            }
            pclose(f);
        }
        // Output: for each address, pairs (function, file:line) for each inline level; the sentinel
        // 0x0 yields "??" / "??:0".
        size_t i = 0;
        for (uintptr_t pc : list) {
            std::vector<std::pair<std::string, std::string>> frames;
            while (i + 1 < lines.size()) {
                std::string fn = lines[i], loc = lines[i + 1];
                i += 2;
                if (fn == "??" && loc.rfind("??", 0) == 0) break;  // sentinel
                frames.push_back({fn, loc});
            }
            std::pair<std::string, int> chosen{"", 0};
            std::string func;
            for (auto& [fn, loc] : frames) {
                size_t colon = loc.rfind(':');
                if (colon == std::string::npos) continue;
                std::string file = loc.substr(0, colon);
                std::string linestr = loc.substr(colon + 1);
                size_t sp = linestr.find(' ');
                if (sp != std::string::npos) linestr = linestr.substr(0, sp);
                int line = std::atoi(linestr.c_str());
                if (file == "??" || line == 0) continue;
                if (chosen.first.empty() || (is_runtime_frame(chosen.first) && !is_runtime_frame(file))) {
                    chosen = {file, line};
                    func = fn;
                    if (!is_runtime_frame(file)) break;
                }
            }
            g.symbolized[pc] = chosen;
            g.functions[pc] = func;
        }
    }
}

std::string site_str(uintptr_t pc) {
    Global& g = G();
    auto it = g.symbolized.find(pc);
    if (it == g.symbolized.end() || it->second.first.empty()) {
        char b[32];
        std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(pc));
        return b;
    }
    return it->second.first + ":" + std::to_string(it->second.second);
}

// ---- Per-worker state ---------------------------------------------------------------------------

enum Space : uint8_t { kGlobal = 0, kShared = 1 };

struct Group {
    uint32_t lanes;
    uint8_t write;
    uint8_t space;
    uint64_t addr[32];
    uint8_t size[32];
};

struct SiteAccum {
    uint64_t req[2][2] = {};    // [space][write]
    uint64_t units[2][2] = {};  // sectors (global) or wavefronts (shared)
    uint64_t bytes[2][2] = {};
    uint64_t atomics[2] = {};   // [space]
};

struct PcState {
    uintptr_t pc = 0;
    std::vector<uint32_t> occ;                 // per thread of the block
    std::vector<std::vector<Group>> groups;    // per warp, up to K
    std::vector<uint32_t> max_occ;             // per warp
    SiteAccum acc;                             // flushed totals of this block
    bool dirty = false;
};

constexpr uint32_t kManyReaders = 0xffffffffu;  // r_tid when threads of several warps read the word
constexpr uint32_t kWarpReaders = 0x80000000u;  // r_tid = kWarpReaders | warp: several lanes of one warp

// racecheck tracks shared memory in 2-byte granules, so threads writing neighbouring __half or
// __nv_bfloat16 elements are not mistaken for a race (1-byte neighbours still share a granule).
constexpr unsigned kShadowShift = 1;
struct ShadowWord {  // racecheck: last write and last read of a 2-byte granule of shared memory
    uint64_t w_epoch, r_epoch;  // block serial << 32 | barrier count
    uintptr_t w_pc, r_pc;
    uint32_t w_tid, r_tid;
    uint32_t w_wsync, r_wsync;  // warp sync count of the accessing warp at the time
    bool w_atomic, r_atomic;     // the last write was atomic; every read of the epoch was atomic
    uintptr_t w_update_pc;       // the last write was an update: the pc of its thread's read of the word, else 0
};

// A thread's last counted access, which the next one may extend into one vector access: the GPU
// moves a float4 (or a uint4, float2, ...) with one 8- or 16-byte instruction, while the host
// compiler splits it into its 4-byte fields, each at its own pc.
struct VectorRun {
    uint64_t gen = 0;      // WorkerState::flush_gen when it was recorded (older: stale)
    uintptr_t pc = 0;
    uint32_t idx = 0;      // PcState of the run's first access
    uint32_t k = 0;        // its occurrence (group) there
    uintptr_t start = 0;
    uint32_t len = 0, elem = 0;
    uint8_t write = 0, space = 0;
};

// A vector access (__cusim_vector_access, from cusim's GCC plugin) already checked and counted
// at its full width: the field accesses the host compiler splits it into, which follow it before
// the thread's next call, pass uncounted, each byte once.
struct VectorCover {
    uint64_t gen = 0;  // WorkerState::flush_gen when it was recorded (older: stale)
    uintptr_t start = 0;
    uint16_t unseen = 0;  // bytes of the vector no field access has consumed yet
    uint8_t write = 0;
};
#ifdef CUSIM_VECTOR_PLUGIN
constexpr bool kVectorPlugin = true;  // analysis builds compile with cusim's GCC plugin
#else
constexpr bool kVectorPlugin = false;
#endif
constexpr unsigned kCovers = 4;  // per thread: `*q = *p` and f(a[i], b[i]) keep several pending

// racecheck's flag protocols: a thread's last kUnfenced non-atomic global stores since its last
// __threadfence() (older ones are forgotten).
constexpr unsigned kUnfenced = 8;
struct UnfencedStore {
    uintptr_t addr, pc;
    uint32_t size;
};

struct WorkerState {
    std::vector<PcState> pcs;
    std::vector<VectorRun> runs;  // per thread of the block
    std::vector<VectorCover> covers;  // kCovers per thread of the block
    std::vector<uint8_t> cover_next;  // per thread: the slot to replace when all are pending
    uint64_t flush_gen = 1;       // incremented whenever sampled groups are discarded
    uint64_t covers_gen = 0;      // flush_gen of the last cover recorded: none is live unless equal
    std::unordered_map<uintptr_t, uint32_t> pc_index;
    uintptr_t last_pc = 0;
    uint32_t last_idx = 0;
    // Direct-mapped cache of pc_index, valid while the block size stays the same.
    struct PcSlot {
        uintptr_t pc;
        uint32_t idx;
    };
    static constexpr size_t kPcSlots = 256;
    PcSlot pc_cache[kPcSlots] = {};
    unsigned tools = 0;  // the tool selection, read once per block
    unsigned cache_nthreads = 0;
    const Alloc* last_alloc = nullptr;  // the allocation of the last global access
    std::vector<uint32_t> touched;  // pcs touched since the last flush
    unsigned nthreads = 0, nwarps = 0;
    uint64_t block_serial = 0;
    uint32_t barrier_count = 0;
    std::vector<uint32_t> warp_sync;  // per warp
    std::vector<ShadowWord> shadow;   // per 2-byte granule of the arena
    // racecheck, per thread of the block: its last __shared__ read (a write to that address is an
    // update, such as h[i] += 1).
    std::vector<std::pair<uintptr_t, uintptr_t>> last_shared_read;  // (address, pc)
    // racecheck on global memory, per thread of the block: its last kGlobalReads __global__ reads
    // (a ring; a plain write to one of those addresses is an update, such as dx[i] += g, whichever
    // order the compiler put its loads in).
    static constexpr unsigned kGlobalReads = 4;
    std::vector<std::pair<uintptr_t, uintptr_t>> last_global_read;  // (address, pc), kGlobalReads per thread
    std::vector<uint8_t> global_read_next;                           // per thread: the ring's next slot
    // racecheck's flag protocols, per thread of the block: its unfenced global stores (kUnfenced
    // slots, a ring) and how many it made since its last fence.
    std::vector<UnfencedStore> unfenced;
    std::vector<uint32_t> unfenced_count;
    // Result of this block, merged into Global at block end.
    std::vector<std::pair<uintptr_t, SiteAccum>> done;
};

thread_local WorkerState* tls_ws = nullptr;
std::atomic<uint64_t> g_block_serial{1};
// Grows at every launch and grid.sync(): global updates of earlier generations are ordered.
std::atomic<uint64_t> g_update_gen{1};

WorkerState& ws() {
    if (!tls_ws) tls_ws = new WorkerState;  // one per worker thread, lives as long as the thread
    return *tls_ws;
}

PcState& pc_state(WorkerState& s, uintptr_t pc) {
    if (pc == s.last_pc) return s.pcs[s.last_idx];
    WorkerState::PcSlot& slot = s.pc_cache[(pc ^ (pc >> 8)) & (WorkerState::kPcSlots - 1)];
    if (slot.pc == pc) {
        s.last_pc = pc;
        s.last_idx = slot.idx;
        return s.pcs[slot.idx];
    }
    auto it = s.pc_index.find(pc);
    uint32_t idx;
    if (it == s.pc_index.end()) {
        idx = static_cast<uint32_t>(s.pcs.size());
        s.pc_index.emplace(pc, idx);
        s.pcs.emplace_back();
        s.pcs.back().pc = pc;
    } else {
        idx = it->second;
    }
    PcState& p = s.pcs[idx];
    if (p.occ.size() != s.nthreads) {
        p.occ.assign(s.nthreads, 0);
        p.groups.assign(s.nwarps, {});
        p.max_occ.assign(s.nwarps, 0);
    }
    s.last_pc = pc;
    s.last_idx = idx;
    slot = {pc, idx};
    return p;
}

uint64_t group_units(const Group& g) {
    if (g.space == kGlobal) {  // distinct 32-byte sectors
        uint64_t sectors[64];
        int n = 0;
        for (unsigned l = 0; l < 32; ++l) {
            if (!((g.lanes >> l) & 1u)) continue;
            for (uint64_t s = g.addr[l] >> 5; s <= (g.addr[l] + g.size[l] - 1) >> 5; ++s) {
                bool seen = false;
                for (int k = 0; k < n; ++k)
                    if (sectors[k] == s) {
                        seen = true;
                        break;
                    }
                if (!seen && n < 64) sectors[n++] = s;
            }
        }
        return static_cast<uint64_t>(n);
    }
    // Shared: 32 banks of 4 bytes; a wavefront serves one distinct word per bank.
    uint64_t words[32][32];
    int count[32] = {};
    int worst = 0;
    for (unsigned l = 0; l < 32; ++l) {
        if (!((g.lanes >> l) & 1u)) continue;
        for (uint64_t w = g.addr[l] >> 2; w <= (g.addr[l] + g.size[l] - 1) >> 2; ++w) {
            const unsigned bank = static_cast<unsigned>(w & 31u);
            bool seen = false;
            for (int k = 0; k < count[bank]; ++k)
                if (words[bank][k] == w) {
                    seen = true;
                    break;
                }
            if (!seen && count[bank] < 32) {
                words[bank][count[bank]++] = w;
                worst = std::max(worst, count[bank]);
            }
        }
    }
    return static_cast<uint64_t>(std::max(worst, 1));
}

// Turns the sampled groups of `warp` into requests and sectors/wavefronts.
void flush_warp(WorkerState& s, PcState& p, unsigned warp) {
    const uint32_t total = p.max_occ[warp];
    if (!total) return;
    std::vector<Group>& gs = p.groups[warp];
    uint64_t req[2][2] = {}, units[2][2] = {};
    for (const Group& g : gs) {
        if (!g.lanes) continue;
        req[g.space][g.write] += 1;
        units[g.space][g.write] += group_units(g);
    }
    const uint64_t sampled = gs.size();
    for (int sp = 0; sp < 2; ++sp)
        for (int wr = 0; wr < 2; ++wr) {
            if (!req[sp][wr]) continue;
            // Occurrences past the sample are scaled from it (exact when total <= K).
            const uint64_t r = sampled ? req[sp][wr] * total / sampled : 0;
            p.acc.req[sp][wr] += r;
            p.acc.units[sp][wr] += req[sp][wr] ? (units[sp][wr] * r + req[sp][wr] / 2) / req[sp][wr] : 0;
        }
    gs.clear();
    p.max_occ[warp] = 0;
    ++s.flush_gen;
    const unsigned lo = warp * 32, hi = std::min(s.nthreads, lo + 32);
    for (unsigned t = lo; t < hi; ++t) p.occ[t] = 0;
}

void flush_all(WorkerState& s) {
    for (uint32_t idx : s.touched) {
        PcState& p = s.pcs[idx];
        for (unsigned w = 0; w < s.nwarps; ++w) flush_warp(s, p, w);
    }
}

// ---- Reports ------------------------------------------------------------------------------------

void add_report(const std::string& tool, const std::string& kind, uintptr_t pc, const std::string& body,
                const std::string& dedup) {
    Global& g = G();
    std::lock_guard<std::mutex> lk(g.mu);
    ++g.error_count;
    auto it = g.report_index.find(dedup);
    if (it != g.report_index.end()) {
        g.reports[it->second].count++;
        return;
    }
    Report r;
    r.tool = tool;
    r.kind = kind;
    r.message = body;
    r.count = 1;
    g.report_index[dedup] = g.reports.size();
    g.reports.push_back(r);
    g.report_pcs.push_back(pc);  // resolved to file:line by finalize_reports()
}

// Replaces each "@PC:<hex>@" in @p m (an access other than the report's own) by its .cu location.
void resolve_pc_marks(std::string& m) {
    for (size_t p; (p = m.find("@PC:")) != std::string::npos;) {
        const size_t e = m.find('@', p + 4);
        if (e == std::string::npos) break;
        const uintptr_t pc = std::strtoull(m.substr(p + 4, e - p - 4).c_str(), nullptr, 16);
        symbolize({pc});
        m.replace(p, e - p + 1, site_str(pc));
    }
}

// A race whose accesses look like a lost update (a thread's plain write to the word it read last,
// against another thread's access by the same instructions) is written with
// "@UPDATE<part>:<read pc>:<write pc>@" marks, <read pc>/<write pc> being that update's read and
// write. It is a lost update when the two are one statement (h[i] += 1: one .cu line); when they are
// not, the thread read the word for one purpose and writes it for another (a block reduction whose
// next round writes partial[] while other warps still read the last round's), and the fix is a
// barrier, not an atomic. Part 0 is the hazard's parenthesis, part 1 the hint.
void resolve_update_marks(std::string& m) {
    for (size_t p; (p = m.find("@UPDATE")) != std::string::npos;) {
        const size_t e = m.find('@', p + 1);
        if (e == std::string::npos || p + 9 > e) break;
        const int part = m[p + 7] - '0';
        const size_t colon = m.find(':', p + 9);
        if (colon == std::string::npos || colon > e) break;
        const uintptr_t read_pc = std::strtoull(m.substr(p + 9, colon - p - 9).c_str(), nullptr, 16);
        const uintptr_t write_pc = std::strtoull(m.substr(colon + 1, e - colon - 1).c_str(), nullptr, 16);
        symbolize({read_pc, write_pc});
        const auto& r = G().symbolized[read_pc];
        const auto& w = G().symbolized[write_pc];
        const bool one_statement = !r.first.empty() && r == w;
        std::string text;
        if (part == 0) {
            text = one_statement ? " hazard: two threads update the same word)" : " hazard: no __syncthreads between them)";
        } else if (one_statement) {
            text = "\n=========     Hint: two threads update this word with the same statement (such as h[i] += 1): "
                   "each reads the old value and writes its own result, so updates are lost, and a barrier cannot "
                   "help. Use an atomic (atomicAdd(&h[i], 1)), or give each thread its own word and combine them "
                   "after __syncthreads().";
        } else {
            text = "\n=========     Hint: this thread read the word at " + site_str(read_pc) + " and writes it at " +
                   site_str(write_pc) + ", another statement, while other threads may still be reading what the "
                   "word held: put __syncthreads() before the write (for a reduction that reuses its shared array, "
                   "at the start of each round, so that the previous round's readers are done).";
        }
        m.replace(p, e - p + 1, text);
    }
}

// Fills file/line of new reports and prints them (host thread, after the launch).
void finalize_reports() {
    Global& g = G();
    std::vector<uintptr_t> pcs;
    std::vector<Report*> fresh;
    {
        std::lock_guard<std::mutex> lk(g.mu);
        for (size_t i = g.printed_reports; i < g.reports.size(); ++i) {
            fresh.push_back(&g.reports[i]);
            pcs.push_back(g.report_pcs[i]);
        }
        g.printed_reports = g.reports.size();
    }
    if (fresh.empty()) return;
    symbolize(pcs);
    for (size_t i = 0; i < fresh.size(); ++i) {
        Report& r = *fresh[i];
        const uintptr_t pc = pcs[i];
        auto it = g.symbolized.find(pc);
        r.file = it != g.symbolized.end() ? it->second.first : "";
        r.line = it != g.symbolized.end() ? it->second.second : 0;
        std::string at = site_str(pc);
        // "@SITE@" in a message stands for the access's own .cu location, "@PC:<hex>@" for another.
        std::string m = r.message;
        for (size_t p; (p = m.find("@SITE@")) != std::string::npos;) m.replace(p, 6, at);
        resolve_update_marks(m);
        resolve_pc_marks(m);
        r.message = m;
        if (!quiet()) std::fprintf(stderr, "%s\n", m.c_str());
    }
    std::fflush(stderr);
}

std::string hexaddr(uintptr_t a) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(a));
    return b;
}

std::string who() {
    const ExecView& v = tls_view;
    char b[160];
    std::snprintf(b, sizeof b, "by thread (%u,%u,%u) in block (%u,%u,%u)", v.thread.x, v.thread.y, v.thread.z, v.block.x,
                  v.block.y, v.block.z);
    return b;
}

std::string kernel_name() { return tls_view.launch ? tls_view.launch->kernel_name : "?"; }

// Report text is built with kernel context off: std::string's inline functions may be the
// instrumented copies of a kernel translation unit.
struct OutsideKernel {
    OutsideKernel() { tls_view.in_kernel = false; }
    ~OutsideKernel() { tls_view.in_kernel = true; }
};

void memcheck_report(const std::string& kind, uintptr_t pc, const std::string& detail) {
    std::string body = "========= " + kind + "\n=========     at " + kernel_name() + " in @SITE@\n=========     " +
                       who() + "\n=========     " + detail;
    add_report("memcheck", kind, pc, body, "memcheck|" + kind + "|" + std::to_string(pc));
}

[[noreturn]] void memcheck_error(const std::string& kind, uintptr_t pc, const std::string& detail) {
    tls_view.in_kernel = false;  // the block ends here; nothing below is kernel code
    memcheck_report(kind, pc, detail);
    const std::string stop =
        "memcheck stopped kernel '" + kernel_name() + "' at its first invalid access (see the report above)";
    tls_in_hook = false;
    fail_current_block(cudaErrorIllegalAddress, stop);
}

// An access that is not a multiple of its size: on a GPU the kernel stops with
// cudaErrorMisalignedAddress ("misaligned address"). A memcheck report when memcheck is on; the
// fault either way, its message naming the access's .cu line (launch_end resolves @PC:..@).
[[noreturn]] void misaligned_error(uintptr_t a, size_t size, bool write, uintptr_t pc, bool vector) {
    tls_view.in_kernel = false;
    const std::string kind =
        std::string("Misaligned ") + (write ? "write" : "read") + " of size " + std::to_string(size) + " bytes";
    const std::string hint = vector ? "a vector type (float4, int2, double2, ...) is moved in one access of its size: "
                                      "the address must be a multiple of it (e.g. a float4* cast needs the row start "
                                      "and the leading dimension to be multiples of 4 floats)"
                                    : "a pointer cast to a wider type must point to memory aligned to that type's size";
    const bool report = tls_ws->tools & kMemcheck;
    if (report) {
        memcheck_report(kind, pc,
                        "Address " + hexaddr(a) + " is not a multiple of " + std::to_string(size) +
                            " (on a GPU: cudaErrorMisalignedAddress)\n=========     Hint: " + hint);
    }
    const std::string stop = "misaligned address: " + std::to_string(size) + "-byte " + (write ? "write" : "read") +
                             " at " + hexaddr(a) + " in kernel '" + kernel_name() + "' at @PC:" + hexaddr(pc) + "@ " +
                             who() + (report ? " (see the memcheck report above)" : "\n=========     Hint: " + hint);
    tls_in_hook = false;
    fail_current_block(cudaErrorMisalignedAddress, stop);
}

// ---- Access classification ----------------------------------------------------------------------

const Alloc* find_alloc(uintptr_t a, bool* in_redzone) {
    const auto& v = G().snap;
    size_t lo = 0, hi = v.size();
    while (lo < hi) {  // first allocation with start > a
        size_t mid = (lo + hi) / 2;
        if (v[mid]->start <= a) lo = mid + 1;
        else hi = mid;
    }
    // Candidates: the allocation starting at or before a (a in its body or back redzone), and the
    // next one (a in its front redzone).
    if (lo > 0) {
        const Alloc* p = v[lo - 1].get();
        if (a < p->end) {
            *in_redzone = false;
            return p;
        }
        if (a < p->end + kBackRedzone + 255) {
            *in_redzone = true;
            return p;
        }
    }
    if (lo < v.size() && a + kFrontRedzone >= v[lo]->start) {
        *in_redzone = true;
        return v[lo].get();
    }
    return nullptr;
}

bool in_ranges(const std::vector<std::pair<uintptr_t, uintptr_t>>& r, uintptr_t a) {
    for (const auto& [lo, hi] : r)
        if (a >= lo && a < hi) return true;
    return false;
}

// Host memory a kernel may touch besides what on_access filters out first (its stack, the worker's
// static TLS, the launch arguments on the host stack): globals, __device__/__constant__ variables.
bool is_host_known(uintptr_t a) { return in_ranges(G().static_segments, a); }

const std::string* labeled_range(uintptr_t a) {
    for (const auto& [range, what] : G().labeled_snap)
        if (a >= range.first && a < range.second) return &what;
    return nullptr;
}

// Atomics do not race with atomics (their order is unspecified, never undefined); an atomic and a
// plain access to the same word by unordered threads do.
//
// The advice depends on the kind of race. Two threads that update the same word with the same
// statement (h[i] += 1 without an atomic) lose updates whatever the barriers: the fix is an atomic.
// An update is a plain write to the address its thread read last; a race is a lost update when both
// sides belong to updates by that same read instruction (a reader about to update, or a second
// update). Any other race (a write and another thread's read or write with no barrier between
// them, as in a reduction step s[t] += s[t + d] without __syncthreads) is fixed by a barrier.
void racecheck(WorkerState& s, uintptr_t a, size_t size, bool write, uintptr_t pc, bool atomic) {
    const ExecView& v = tls_view;
    const uint64_t epoch = (s.block_serial << 32) | s.barrier_count;
    const uint32_t tid = v.tid;
    const uint32_t wsync = s.warp_sync[tid >> 5];
    const auto [read_addr, read_pc] = s.last_shared_read[tid];
    const uintptr_t update_pc = write && !atomic && read_addr == a ? read_pc : 0;  // this write is an update
    if (!write) s.last_shared_read[tid] = {a, pc};
    const size_t first = (a - reinterpret_cast<uintptr_t>(v.smem)) >> kShadowShift;
    const size_t last = (a + size - 1 - reinterpret_cast<uintptr_t>(v.smem)) >> kShadowShift;
    for (size_t i = first; i <= last && i < s.shadow.size(); ++i) {
        ShadowWord& w = s.shadow[i];
        auto ordered = [&](uint32_t other_tid, uint32_t other_wsync) {
            // Same thread, or same warp with a __syncwarp/warp collective in between.
            if (other_tid == kManyReaders) return false;
            if (other_tid & kWarpReaders) return (other_tid & ~kWarpReaders) == (tid >> 5) && other_wsync != wsync;
            return other_tid == tid || ((other_tid >> 5) == (tid >> 5) && other_wsync != wsync);
        };
        const char* hazard = nullptr;
        uintptr_t other_pc = 0;
        const char* other_kind = nullptr;
        bool lost_update = false;
        uintptr_t update_read = 0, update_write = 0;  // the update's read and write (resolve_update_marks)
        if (w.w_epoch == epoch && !ordered(w.w_tid, w.w_wsync) && !(atomic && w.w_atomic)) {
            hazard = write ? "Write-after-write" : "Read-after-write";
            other_pc = w.w_pc;
            other_kind = "Write";
            // Another thread's update of this word, and this thread updates it too (a second
            // update, or the read of one by the same instruction).
            lost_update = w.w_update_pc != 0 && (write ? update_pc != 0 : pc == w.w_update_pc);
            update_read = w.w_update_pc;
            update_write = w.w_pc;
        } else if (write && w.r_epoch == epoch && !ordered(w.r_tid, w.r_wsync) && !(atomic && w.r_atomic)) {
            hazard = "Write-after-read";
            other_pc = w.r_pc;
            other_kind = "Read";
            lost_update = update_pc != 0 && w.r_pc == update_pc;  // the other read is that of an update
            update_read = update_pc;
            update_write = pc;
        }
        if (hazard) {
            OutsideKernel outside;
            std::string kind = std::string(hazard) + " hazard on __shared__ memory";
            std::string body =
                "========= Error: Race reported between " + std::string(other_kind) + " access at @PC:" +
                hexaddr(other_pc) + "@ and " + (write ? "Write" : "Read") + " access at @SITE@ in kernel '" +
                kernel_name() + "' (" + hazard +
                (lost_update ? "@UPDATE0:" + hexaddr(update_read) + ":" + hexaddr(update_write) + "@"
                             : std::string(" hazard: no __syncthreads between them)")) +
                "\n=========     " + who() + ", shared offset " + std::to_string(i << kShadowShift) +
                (lost_update ? "@UPDATE1:" + hexaddr(update_read) + ":" + hexaddr(update_write) + "@"
                             : std::string("\n=========     Hint: put __syncthreads() between the write and the other "
                                           "threads' access (__syncwarp() if both threads are in one warp)."));
            add_report("racecheck", kind, pc, body,
                       "racecheck|" + std::to_string(other_pc) + "|" + std::to_string(pc) + "|" + hazard);
        }
        if (write) {
            w.w_epoch = epoch;
            w.w_pc = pc;
            w.w_tid = tid;
            w.w_wsync = wsync;
            w.w_atomic = atomic;
            w.w_update_pc = update_pc;
            continue;
        }
        const bool all_atomic = w.r_epoch == epoch ? (w.r_atomic && atomic) : atomic;
        if (w.r_epoch == epoch && w.r_tid != tid && w.r_tid != kManyReaders && !ordered(w.r_tid, w.r_wsync)) {
            // A second, unordered reader in the same epoch: a later write by one of them races
            // with the other, so keep the first reader's site and remember there were several
            // (of one warp, which a __syncwarp orders, or of several warps).
            const uint32_t first_warp = (w.r_tid & kWarpReaders) ? (w.r_tid & ~kWarpReaders) : (w.r_tid >> 5);
            w.r_tid = first_warp == (tid >> 5) ? (kWarpReaders | first_warp) : kManyReaders;
        } else if (w.r_epoch != epoch || !(w.r_tid == kManyReaders || (w.r_tid & kWarpReaders))) {
            w.r_epoch = epoch;
            w.r_pc = pc;
            w.r_tid = tid;
            w.r_wsync = wsync;
        }
        w.r_atomic = all_atomic;
    }
}

// Flag protocols between blocks (racecheck). A block hands a value to another block of the same
// launch by storing it, then setting a flag the other block polls. On a GPU the two stores may
// become visible to other blocks in either order unless a __threadfence() separates them (CUDA's
// atomics are relaxed, __threadfence_block() orders only for the block), so a reader that sees the
// flag can read a stale value: a bug that never shows on a CPU, whose stores stay in order. The
// check is deterministic, whatever the interleaving:
//   - every non-atomic global store (plain or volatile) of a thread is remembered until the
//     thread's next __threadfence() (its last kUnfenced stores);
//   - a flag store (an atomic, or a volatile store) publishes the remembered stores to other
//     addresses: each becomes "published without a fence";
//   - a non-atomic read of such a word by another block of the launch is reported. A reader that
//     follows the protocol reads the value only after it saw the flag, that is after the
//     publication was recorded, so it is reported in every run.
// grid.sync() orders everything before it, so it forgets the publications; a new launch too.
// Not seen: values written by other threads of the block before a barrier and published by one
// thread (only a thread's own stores count), flags set by plain stores (not distinguishable from
// values), a reader that reads the value before the flag, a value written after its flag.
enum AccessFlags : unsigned {
    kVolatileAccess = 1,
    // Only between on_access and on_access_impl, which take atomic and natural in the same word as
    // the flags: five arguments, all in registers, so the entry points reach it by a tail call.
    kAtomicAccess = 1u << 30,
    kNaturalAccess = 1u << 31,
};
// At most this many published words per launch are remembered (a kernel that stores every element
// and then counts it with an atomic would publish them all); later publications are not recorded.
constexpr size_t kMaxPublished = size_t(1) << 16;

inline uint64_t block_key(const uint3& b) {
    return uint64_t(b.x) | (uint64_t(b.y) << 32) | (uint64_t(b.z) << 48);
}

void flag_protocol_read(uintptr_t a, size_t size, uintptr_t pc) {
    Global& g = G();
    const ExecView& v = tls_view;
    std::unique_lock<std::mutex> lk(g.published_mu);
    for (uintptr_t w = a >> 2; w <= (a + size - 1) >> 2; ++w) {
        auto it = g.published.find(w);
        if (it == g.published.end() || block_key(it->second.block) == block_key(v.block)) continue;
        const Publication p = it->second;
        lk.unlock();
        OutsideKernel outside;
        const std::string kind = "Flag protocol hazard on __global__ memory";
        char writer[96];
        std::snprintf(writer, sizeof writer, "block (%u,%u,%u)", p.block.x, p.block.y, p.block.z);
        std::string body =
            "========= Error: Flag protocol hazard: a value published without __threadfence() is read by another "
            "block in kernel '" +
            kernel_name() + "'\n=========     value stored at @PC:" + hexaddr(p.store_pc) + "@ (address " +
            hexaddr(p.store_addr) + ") and published by the flag store at @PC:" + hexaddr(p.flag_pc) +
            "@ (address " + hexaddr(p.flag_addr) + ") in " + writer +
            " with no __threadfence() between them; read at @SITE@ " + who() +
            "\n=========     Hint: a GPU may make the flag visible to other blocks before the value, so a block that "
            "sees the flag can read a stale value (on a CPU the stores stay in order and the result looks right). "
            "Write the value, call __threadfence(), then set the flag (a volatile store or an atomic), and poll "
            "the flag with volatile or atomic loads; or pack flag and value into one 64-bit word written by one "
            "store.";
        add_report("racecheck", kind, pc, body,
                   "racecheck|flag|" + std::to_string(p.store_pc) + "|" + std::to_string(p.flag_pc) + "|" +
                       std::to_string(pc));
        return;
    }
}

// The running thread's flag store at [a, a + size): its unfenced stores to other words are published.
[[gnu::noinline]] void flag_protocol_publish(WorkerState& s, unsigned tid, uint32_t count, uintptr_t a, size_t size,
                                             uintptr_t pc) {
    Global& g = G();
    const UnfencedStore* ring = &s.unfenced[size_t(tid) * kUnfenced];
    {
        std::lock_guard<std::mutex> lk(g.published_mu);
        for (uint32_t i = 0; i < std::min(count, kUnfenced); ++i) {
            const UnfencedStore& u = ring[i];
            if (u.addr < a + size && a < u.addr + u.size) continue;  // the flag's own word
            for (uintptr_t w = u.addr >> 2; w <= (u.addr + u.size - 1) >> 2 && g.published.size() < kMaxPublished; ++w)
                g.published.emplace(w, Publication{u.pc, pc, u.addr, a, tls_view.block});
        }
        g_published_count.store(g.published.size(), std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);  // before the flag store itself
}

// A global access of the running thread, for the flag-protocol check (racecheck on).
inline void flag_protocol(WorkerState& s, uintptr_t a, size_t size, bool write, uintptr_t pc, bool atomic,
                          unsigned flags) {
    if (!write) {
        if (atomic) return;
        // Orders the reader's earlier load of the flag before its look at the publications (a
        // no-op on x86; the publisher recorded them before its flag store, with a full fence).
        std::atomic_thread_fence(std::memory_order_acquire);
        if (g_published_count.load(std::memory_order_relaxed)) flag_protocol_read(a, size, pc);
        return;
    }
    const unsigned tid = tls_view.tid;
    if (tid >= s.unfenced_count.size()) return;
    uint32_t& count = s.unfenced_count[tid];
    if (atomic || (flags & kVolatileAccess)) {
        if (count) flag_protocol_publish(s, tid, count, a, size, pc);
        count = 0;
    }
    if (!atomic) {
        s.unfenced[size_t(tid) * kUnfenced + count % kUnfenced] = {a, pc, static_cast<uint32_t>(size)};
        ++count;
    }
}

// __threadfence() (a seq_cst or release fence) by the running thread: its stores are ordered.
void on_fence(int mo) {
    const ExecView& v = tls_view;
    if (!v.in_kernel || !v.analyze || tls_in_hook || !tls_ws) return;
    if (mo < __ATOMIC_RELEASE) return;
    WorkerState& s = *tls_ws;
    if (v.tid < s.unfenced_count.size()) s.unfenced_count[v.tid] = 0;
}

void initcheck(const Alloc* al, uintptr_t a, size_t size, bool write, uintptr_t pc) {
    if (!al->init) return;
    const size_t off = a - al->start;
    if (write) {
        for (size_t b = off; b < off + size; ++b)
            al->init[b >> 3].fetch_or(static_cast<uint8_t>(1u << (b & 7)), std::memory_order_relaxed);
        return;
    }
    for (size_t b = off; b < off + size; ++b) {
        if (!(al->init[b >> 3].load(std::memory_order_relaxed) & (1u << (b & 7)))) {
            OutsideKernel outside;
            std::string kind = "Uninitialized __global__ memory read of size " + std::to_string(size) + " bytes";
            std::string body = "========= " + kind + "\n=========     at " + kernel_name() +
                               " in @SITE@\n=========     " + who() + "\n=========     Address " + hexaddr(a) +
                               " is byte " + std::to_string(off) + " of a " + std::to_string(al->end - al->start) +
                               "-byte allocation that nothing has written (no cudaMemcpy, cudaMemset or kernel store)";
            add_report("initcheck", kind, pc, body, "initcheck|" + std::to_string(pc));
            return;
        }
    }
}

// ---- racecheck on global memory: lost updates --------------------------------------------------------
//
// compute-sanitizer's racecheck looks at shared memory only; cusim sees every global access, and
// names the global race that costs results silently: two threads of one launch that update the same
// word with a plain read and write (dx[argmax] += dy without an atomic). On a GPU both read the old
// value and one sum is lost; cusim runs threads one after another, so the result may even come out
// right here. An update is a plain write to the address the thread read last. Two updates of a word
// are ordered when a barrier of their block lies between them, or a launch or grid.sync(); any others
// race. The last update of each word is kept in a fixed table (kUpdateSlots, a slot per address
// hash, the newer entry replacing an older one): a race may go unseen when two addresses share a
// slot, never reported where there is none.
struct UpdateSlot {
    uint64_t gen = 0;
    uintptr_t addr = 0;
    uint64_t block_serial = 0;
    uint32_t tid = 0, barrier = 0;
    uintptr_t read_pc = 0, write_pc = 0;
    uint3 block{0, 0, 0}, thread{0, 0, 0};
};
constexpr size_t kUpdateSlots = size_t(1) << 18;
constexpr size_t kUpdateLocks = 64;
std::vector<UpdateSlot> g_update_slots;
std::mutex g_update_locks[kUpdateLocks];
std::once_flag g_update_once;

void global_update(WorkerState& s, uintptr_t a, uintptr_t read_pc, uintptr_t write_pc) {
    std::call_once(g_update_once, [] { g_update_slots.resize(kUpdateSlots); });
    const ExecView& v = tls_view;
    const uint64_t gen = g_update_gen.load(std::memory_order_relaxed);
    const size_t i = ((a >> 2) * 0x9E3779B97F4A7C15ull >> 40) & (kUpdateSlots - 1);
    UpdateSlot other;
    bool race = false;
    {
        std::lock_guard<std::mutex> lk(g_update_locks[i % kUpdateLocks]);
        UpdateSlot& e = g_update_slots[i];
        if (e.gen == gen && e.addr == a && !(e.block_serial == s.block_serial && (e.tid == v.tid || e.barrier != s.barrier_count))) {
            race = true;
            other = e;
        }
        e.gen = gen;
        e.addr = a;
        e.block_serial = s.block_serial;
        e.tid = v.tid;
        e.barrier = s.barrier_count;
        e.read_pc = read_pc;
        e.write_pc = write_pc;
        e.block = v.block;
        e.thread = v.thread;
    }
    if (!race) return;
    OutsideKernel outside;
    auto coords = [](uint3 d) {
        return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
    };
    const std::string kind = "Lost update on __global__ memory";
    const std::string body =
        "========= Error: " + kind + ": two threads of kernel '" + kernel_name() +
        "' read and write the same word with no atomic and nothing ordering them" +
        "\n=========     this update: read at @PC:" + hexaddr(read_pc) + "@, written at @SITE@, " + who() +
        "\n=========     the other: read at @PC:" + hexaddr(other.read_pc) + "@, written at @PC:" +
        hexaddr(other.write_pc) + "@, by thread " + coords(other.thread) + " in block " + coords(other.block) +
        "\n=========     Address " + hexaddr(a) +
        "\n=========     Hint: on a GPU both threads read the old value and one sum is lost (here they ran one "
        "after the other, so the result may still look right). Use an atomic (atomicAdd), or gather: let one "
        "thread own each element and add up everything that belongs to it.";
    add_report("racecheck", kind, write_pc, body,
               "racecheck-global|" + std::to_string(other.write_pc) + "|" + std::to_string(write_pc));
}

// Checks and counts one access that on_access did not filter out; runs with tls_in_hook set.
void on_access_checked(uintptr_t a, size_t size, bool write, uintptr_t pc, bool atomic, bool natural,
                       bool vector = false, unsigned flags = 0) {
    const ExecView& v = tls_view;
    WorkerState& s = *tls_ws;  // created by block_begin
    const unsigned t = s.tools;
    // The fields of a vector access already counted (on_vector_access) pass uncounted.
    const unsigned tid = v.tid;
    // Kernels without vector accesses (most) skip the search: no cover of this generation exists.
    if (s.covers_gen == s.flush_gen && !atomic && !vector && size <= 16 && tid < s.runs.size()) {
        VectorCover* c = &s.covers[size_t(tid) * kCovers];
        for (unsigned i = 0; i < kCovers; ++i) {
            if (c[i].gen != s.flush_gen || c[i].write != write || a < c[i].start || a + size > c[i].start + 16) continue;
            const uint16_t bits = static_cast<uint16_t>(((1u << size) - 1u) << (a - c[i].start));
            if ((c[i].unseen & bits) != bits) continue;
            c[i].unseen = static_cast<uint16_t>(c[i].unseen & ~bits);
            return;
        }
    }
    // A GPU requires natural alignment of 2-, 4-, 8- and 16-byte accesses.
    if (natural && (t & kMemcheck) && (a & (size - 1)) && !is_host_known(a)) misaligned_error(a, size, write, pc, false);
    Space space;
    const uintptr_t smem = reinterpret_cast<uintptr_t>(v.smem);
    if (a >= smem && a < smem + v.smem_capacity) {
        space = kShared;
        const size_t valid = v.smem_dyn + *v.smem_static_used;
        if ((t & kMemcheck) && a + size > smem + valid) {
            memcheck_error(std::string("Invalid __shared__ ") + (write ? "write" : "read") + " of size " +
                               std::to_string(size) + " bytes",
                           pc,
                           "Address " + hexaddr(a) + " is at offset " + std::to_string(a - smem) +
                               " of the block's shared memory, which holds " + std::to_string(valid) +
                               " bytes (dynamic " + std::to_string(v.smem_dyn) + " + static " +
                               std::to_string(*v.smem_static_used) + ")");
        }
        if (t & kRacecheck) racecheck(s, a, size, write, pc, atomic);
    } else {
        bool redzone = false;
        const Alloc* al = s.last_alloc;
        if (!al || a < al->start || a + size > al->end) {
            al = find_alloc(a, &redzone);
            if (al && !redzone) s.last_alloc = al;
        }
        if (al && !redzone && a + size <= al->end) {
            space = kGlobal;
            if (t & kInitcheck) initcheck(al, a, size, write && !atomic, pc);
            if (t & kRacecheck) {
                flag_protocol(s, a, size, write, pc, atomic, flags);
                if (tid < s.global_read_next.size() && !atomic) {
                    auto* ring = &s.last_global_read[size_t(tid) * WorkerState::kGlobalReads];
                    if (!write) {
                        ring[s.global_read_next[tid]] = {a, pc};
                        s.global_read_next[tid] = uint8_t((s.global_read_next[tid] + 1) % WorkerState::kGlobalReads);
                    } else {
                        for (unsigned k = 0; k < WorkerState::kGlobalReads; ++k) {
                            if (ring[k].first != a) continue;
                            global_update(s, a, ring[k].second, pc);
                            ring[k] = {0, 0};
                            break;
                        }
                    }
                }
            }
        } else if (al && !(redzone && labeled_range(a))) {  // in a reservation: say so, below
            if (!(t & kMemcheck)) return;
            const std::string kind =
                std::string("Invalid __global__ ") + (write ? "write" : "read") + " of size " + std::to_string(size) + " bytes";
            std::string where;
            if (a >= al->end)
                where = "Address " + hexaddr(a) + " is " + std::to_string(a - al->end) + " bytes after the end of a " +
                        std::to_string(al->end - al->start) + "-byte allocation at " + hexaddr(al->start);
            else if (a < al->start)
                where = "Address " + hexaddr(a) + " is " + std::to_string(al->start - a) + " bytes before a " +
                        std::to_string(al->end - al->start) + "-byte allocation at " + hexaddr(al->start);
            else
                where = "The access at " + hexaddr(a) + " runs past the end of a " +
                        std::to_string(al->end - al->start) + "-byte allocation at " + hexaddr(al->start);
            memcheck_error(kind, pc, where + "\n=========     Hint: check the index against the buffer's length (a bounds check such as `if (i < n)`)");
        } else if (const std::string* label = labeled_range(a)) {
            if (!(t & kMemcheck)) return;
            memcheck_error(std::string("Invalid __global__ ") + (write ? "write" : "read") + " of size " +
                               std::to_string(size) + " bytes",
                           pc,
                           "Address " + hexaddr(a) + " is in " + *label +
                               "\n=========     Hint: map memory there with cuMemMap and grant the device access with "
                               "cuMemSetAccess before a kernel uses it");
        } else if (in_ranges(G().freed_snap, a)) {
            if (!(t & kMemcheck)) return;
            memcheck_error(std::string("Invalid __global__ ") + (write ? "write" : "read") + " of size " +
                               std::to_string(size) + " bytes",
                           pc, "Address " + hexaddr(a) + " is in memory released by cudaFree (use after free)");
        } else {
            if (is_host_known(a)) {  // a __device__ variable (a ticket counter, a flag) or other static data
                if (t & kRacecheck) flag_protocol(s, a, size, write, pc, atomic, flags);
                return;
            }
            if (!(t & kMemcheck)) return;
            // In the margins cusim keeps around the block's shared memory (kSharedMargin): on a GPU
            // the same index stays in the shared window and compute-sanitizer reports a shared
            // access out of bounds (s[t - d] with t < d, s[t + d] past the array).
            const uintptr_t smem_end = smem + v.smem_capacity;
            if ((a < smem && smem - a <= kSharedMargin) || (a >= smem_end && a - smem_end < kSharedMargin)) {
                const size_t valid = v.smem_dyn + *v.smem_static_used;
                memcheck_error(std::string("Invalid __shared__ ") + (write ? "write" : "read") + " of size " +
                                   std::to_string(size) + " bytes",
                               pc,
                               "Address " + hexaddr(a) + " is " +
                                   (a < smem ? std::to_string(smem - a) + " bytes before the start"
                                             : std::to_string(a - smem) + " bytes from the start") +
                                   " of the block's shared memory, which holds " + std::to_string(valid) +
                                   " bytes (dynamic " + std::to_string(v.smem_dyn) + " + static " +
                                   std::to_string(*v.smem_static_used) +
                                   ")\n=========     Hint: an index into a __shared__ array below 0 (such as s[t - d] "
                                   "for t < d) or past its end");
            }
            memcheck_error(std::string("Invalid __global__ ") + (write ? "write" : "read") + " of size " +
                               std::to_string(size) + " bytes",
                           pc,
                           "Address " + hexaddr(a) +
                               " is not device memory: a kernel can only access memory from cudaMalloc (was a host "
                               "pointer passed to the kernel?)");
        }
    }
    // Metrics.
    const unsigned warp = tid >> 5, lane = tid & 31u;
    // With cusim's GCC plugin every vector access arrives whole (on_vector_access) and scalar
    // accesses stay scalar, as nvcc compiles them; the joining below is the fallback without it.
    if (!kVectorPlugin && !atomic && !vector && tid < s.runs.size()) {
        // The next field of the same vector: the thread's previous access, from another
        // instruction, ended where this one starts, with the same element size, and the run stays
        // a naturally aligned vector of at most 16 bytes. It widens that request instead of
        // adding one.
        VectorRun& run = s.runs[tid];
        const uint64_t len = uint64_t(run.len) + size;
        if (run.gen == s.flush_gen && run.pc != pc && run.write == write && run.space == space &&
            a == run.start + run.len && size == run.elem && len <= 16 &&
            (run.start & (std::bit_ceil(len) - 1)) == 0) {
            PcState& first = s.pcs[run.idx];
            first.acc.bytes[space][write] += size;
            run.len = static_cast<uint32_t>(len);
            run.pc = pc;
            if (run.k < K && run.k < first.groups[warp].size())
                first.groups[warp][run.k].size[lane] = static_cast<uint8_t>(len);
            return;
        }
    }
    PcState& p = pc_state(s, pc);
    if (!p.dirty) {
        p.dirty = true;
        s.touched.push_back(s.last_idx);
    }
    p.acc.bytes[space][write] += size;
    if (atomic) {
        p.acc.atomics[space] += 1;
        return;
    }
    const uint32_t k = p.occ[tid]++;
    if (tid < s.runs.size()) {
        // A vector access is complete as it is: no later access joins it.
        s.runs[tid] = vector ? VectorRun{}
                             : VectorRun{s.flush_gen, pc, s.last_idx, k, a, static_cast<uint32_t>(size),
                                         static_cast<uint32_t>(size), static_cast<uint8_t>(write),
                                         static_cast<uint8_t>(space)};
    }
    if (k + 1 > p.max_occ[warp]) p.max_occ[warp] = k + 1;
    if (k < K) {
        std::vector<Group>& gs = p.groups[warp];
        if (gs.size() <= k) gs.resize(k + 1, Group{0, 0, 0, {}, {}});
        Group& g = gs[k];
        if (!g.lanes) {
            g.space = space;
            g.write = write;
        }
        g.lanes |= 1u << lane;
        g.addr[lane] = a;
        g.size[lane] = static_cast<uint8_t>(size > 255 ? 255 : size);
    }
}

bool env_flag(const char* name) {
    const char* e = std::getenv(name);
    return e && *e && std::strcmp(e, "0") != 0;
}

// At exit, for `workbook sanitize` / `workbook profile`: leak check, error summary, exit status,
// and the metrics profile.
void at_exit_report() {
    if (!cusim::detail::analysis_hooks::instrumented) return;
    Global& g = G();
    if (env_flag("CUSIM_PROFILE")) std::fprintf(stdout, "%s", cusim::analysis::profile_text().c_str());
    if (!env_flag("CUSIM_SANITIZE")) return;
    finalize_reports();
    uint64_t leaks = 0, leaked_bytes = 0;
    if (tools() & kMemcheck) {
        std::lock_guard<std::mutex> lk(g.mu);
        for (auto& [start, a] : g.allocs) {
            ++leaks;
            leaked_bytes += a->end - a->start;
            // Inside a reservation: virtual memory (virtual_memory.cpp), whose ranges are labelled.
            bool mapped = false;
            auto l = g.labeled.upper_bound(start);
            if (l != g.labeled.begin()) mapped = start < std::prev(l)->second.first;
            std::fprintf(stderr, "========= Leaked %llu bytes at 0x%lx (%s)\n",
                         static_cast<unsigned long long>(a->end - a->start), static_cast<unsigned long>(start),
                         mapped ? "virtual memory mapped by cuMemMap never unmapped by cuMemUnmap"
                                : "device memory from cudaMalloc never released by cudaFree");
        }
        if (leaks)
            std::fprintf(stderr, "========= LEAK SUMMARY: %llu bytes leaked in %llu allocations\n",
                         static_cast<unsigned long long>(leaked_bytes), static_cast<unsigned long long>(leaks));
        g.error_count += leaks;
    }
    std::fprintf(stderr, "========= ERROR SUMMARY: %llu error%s\n", static_cast<unsigned long long>(g.error_count),
                 g.error_count == 1 ? "" : "s");
    std::fflush(stderr);
    std::fflush(stdout);
    if (g.error_count) {
        const char* code = std::getenv("CUSIM_ERROR_EXITCODE");
        if (code && *code) std::_Exit(std::atoi(code));
    }
}

struct ExitHook {
    ExitHook() { std::atexit(at_exit_report); }
} exit_hook;

// Most accesses of kernel code are to the thread's own stack, this worker's static TLS
// (threadIdx, blockIdx, ...) or the launch's arguments on the host stack: nothing to check or
// count, and cheap to tell apart.
__attribute__((always_inline)) inline bool local_access(const ExecView& v, uintptr_t a) {
    if (a >= reinterpret_cast<uintptr_t>(v.stack_lo) && a < reinterpret_cast<uintptr_t>(v.stack_hi)) return true;
    const uintptr_t tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
    if (a + (1u << 20) >= tp && a < tp + 4096) return true;
    return a >= v.host_stack_lo && a < v.host_stack_hi;
}

[[gnu::noinline]] void on_access_impl(uintptr_t a, size_t size, bool write, uintptr_t pc, unsigned mode) {
    tls_in_hook = true;
    on_access_checked(a, size, write, pc, mode & kAtomicAccess, mode & kNaturalAccess, false,
                      mode & ~(kAtomicAccess | kNaturalAccess));
    tls_in_hook = false;
}

// The filter inlined into every __tsan_* entry point; only accesses that may need checking
// leave it (through a tail call, so the entry points need no stack frame).
__attribute__((always_inline)) inline void on_access(uintptr_t a, size_t size, bool write, uintptr_t pc,
                                                     bool atomic = false, bool natural = false,
                                                     unsigned flags = 0) {
    const ExecView& v = tls_view;
    if (!v.in_kernel || !v.analyze || tls_in_hook) return;
    if (!local_access(v, a))
        on_access_impl(a, size, write, pc, flags | (atomic ? kAtomicAccess : 0u) | (natural ? kNaturalAccess : 0u));
}

// One load or store of a vector type (float4, int2, double2, __half2: a struct whose alignment
// equals its size), marked by cusim's GCC plugin before the host compiler splits it into fields:
// a GPU moves it in one access, which must be naturally aligned. It is checked and counted here at
// its full width; the field accesses that follow are not counted again.
[[gnu::noinline]] void on_vector_access(uintptr_t a, size_t size, bool write, uintptr_t pc) {
    const ExecView& v = tls_view;
    if (!v.in_kernel || !v.analyze || tls_in_hook || local_access(v, a)) return;
    if (size > 16 || (size & (size - 1))) return;
    tls_in_hook = true;
    if (a & (size - 1)) misaligned_error(a, size, write, pc, true);
    WorkerState& s = *tls_ws;
    on_access_checked(a, size, write, pc, false, false, true);
    const unsigned tid = v.tid;
    if (tid < s.runs.size()) {
        VectorCover* c = &s.covers[size_t(tid) * kCovers];
        unsigned slot = 0;  // a stale slot, else the one of the same direction recorded first
        for (unsigned i = 0; i < kCovers; ++i)
            if (c[i].gen != s.flush_gen || !c[i].unseen) {
                slot = i;
                break;
            } else if (i == kCovers - 1) {
                slot = static_cast<unsigned>(s.cover_next[tid]++ % kCovers);
            }
        c[slot] = VectorCover{s.flush_gen, a, static_cast<uint16_t>((1u << size) - 1u), static_cast<uint8_t>(write)};
        s.covers_gen = s.flush_gen;
    }
    tls_in_hook = false;
}

}  // namespace

// ---- Hooks called by the scheduler and the runtime ----------------------------------------------

namespace cusim::detail::analysis_hooks {

void launch_begin(const KernelLaunch&) {
    Global& g = G();
    grid_sync_complete();  // publications of an earlier launch are ordered by the launch boundary
    std::lock_guard<std::mutex> lk(g.mu);
    g.snap.clear();
    for (auto& [start, a] : g.allocs) g.snap.push_back(a);
    g.freed_snap.assign(g.freed.begin(), g.freed.end());
    g.labeled_snap.clear();
    for (const auto& [start, label] : g.labeled) g.labeled_snap.push_back({{start, label.first}, label.second});
    g.static_segments.clear();
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
            auto* segs = static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_LOAD) continue;
                uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                segs->push_back({lo, lo + ph.p_memsz});
            }
            return 0;
        },
        &g.static_segments);
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* addr;
        size_t size;
        pthread_attr_getstack(&attr, &addr, &size);
        g.host_stack_lo = reinterpret_cast<uintptr_t>(addr);
        g.host_stack_hi = g.host_stack_lo + size;
        pthread_attr_destroy(&attr);
    }
}

void launch_end(const KernelLaunch& L, cudaError_t fault, std::string& fault_report) {
    Global& g = G();
    resolve_pc_marks(fault_report);  // a fault message's access (misaligned_error)
    if (fault != cudaSuccess && (tools() & kSynccheck) &&
        (fault_report.rfind("Barrier", 0) == 0 || fault_report.rfind("Warp synchronization", 0) == 0)) {
        std::lock_guard<std::mutex> lk(g.mu);
        Report r;
        r.tool = "synccheck";
        r.kind = fault_report.substr(0, fault_report.find(':'));
        r.file = L.file;
        r.line = L.line;
        r.message = "========= " + fault_report;
        r.count = 1;
        g.reports.push_back(r);
        g.report_pcs.push_back(0);
        g.printed_reports = g.reports.size();  // the scheduler prints it as the launch error
        ++g.error_count;
    }
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g.kernels[L.kernel_name].kernel = L.kernel_name;
        g.kernels[L.kernel_name].launches += 1;
    }
    finalize_reports();
}

void grid_sync_complete() {
    Global& g = G();
    g_update_gen.fetch_add(1, std::memory_order_relaxed);  // updates before are ordered
    if (!g_published_count.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lk(g.published_mu);
    g.published.clear();
    g_published_count.store(0, std::memory_order_relaxed);
}

void block_begin() {
    tls_in_hook = false;  // a fault may have left a handler mid-way
    WorkerState& s = ws();
    const ExecView& v = tls_view;
    s.nthreads = v.nthreads;
    s.nwarps = (v.nthreads + 31) / 32;
    s.block_serial = g_block_serial.fetch_add(1, std::memory_order_relaxed);
    s.barrier_count = 0;
    s.warp_sync.assign(s.nwarps, 0);
    // Runs and covers of earlier blocks are stale by their generation (flush_gen only grows), so
    // they need no clearing; a block of a new size resizes them.
    s.runs.resize(s.nthreads);
    s.covers.resize(size_t(s.nthreads) * kCovers);
    s.cover_next.assign(s.nthreads, 0);
    ++s.flush_gen;
    if (s.shadow.size() != v.smem_capacity >> kShadowShift) s.shadow.assign(v.smem_capacity >> kShadowShift, ShadowWord{});
    s.last_shared_read.assign(s.nthreads, {0, 0});
    s.last_global_read.assign(size_t(s.nthreads) * WorkerState::kGlobalReads, {0, 0});
    s.global_read_next.assign(s.nthreads, 0);
    s.unfenced_count.assign(s.nthreads, 0);
    if (s.unfenced.size() < size_t(s.nthreads) * kUnfenced) s.unfenced.resize(size_t(s.nthreads) * kUnfenced);
    s.touched.clear();
    s.last_pc = 0;
    if (s.nthreads != s.cache_nthreads) {  // per-thread state of every site must be resized first
        for (auto& e : s.pc_cache) e = {0, 0};
        s.cache_nthreads = s.nthreads;
    }
    s.tools = tools();
    s.last_alloc = nullptr;
    tls_view.host_stack_lo = G().host_stack_lo;
    tls_view.host_stack_hi = G().host_stack_hi;
}

void barrier_complete() {
    WorkerState& s = ws();
    flush_all(s);
    ++s.barrier_count;
}

void warp_sync_complete(unsigned warp, unsigned mask, unsigned existing) {
    WorkerState& s = ws();
    if (warp < s.warp_sync.size()) ++s.warp_sync[warp];
    if (mask == existing)
        for (uint32_t idx : s.touched) flush_warp(s, s.pcs[idx], warp);
}

void block_end() {
    WorkerState& s = ws();
    flush_all(s);
    Global& g = G();
    const std::string kernel = kernel_name();
    std::lock_guard<std::mutex> lk(g.mu);
    KernelMetrics& km = g.kernels[kernel];
    km.kernel = kernel;
    for (uint32_t idx : s.touched) {
        PcState& p = s.pcs[idx];
        SiteKey key{kernel, p.pc};
        KernelMetrics& sm = g.sites[key];
        for (KernelMetrics* m : {&km, &sm}) {
            m->global_load_requests += p.acc.req[kGlobal][0];
            m->global_store_requests += p.acc.req[kGlobal][1];
            m->global_load_sectors += p.acc.units[kGlobal][0];
            m->global_store_sectors += p.acc.units[kGlobal][1];
            m->shared_load_requests += p.acc.req[kShared][0];
            m->shared_store_requests += p.acc.req[kShared][1];
            m->shared_load_wavefronts += p.acc.units[kShared][0];
            m->shared_store_wavefronts += p.acc.units[kShared][1];
            m->global_bytes_read += p.acc.bytes[kGlobal][0];
            m->global_bytes_written += p.acc.bytes[kGlobal][1];
            m->shared_bytes_read += p.acc.bytes[kShared][0];
            m->shared_bytes_written += p.acc.bytes[kShared][1];
            m->atomics += p.acc.atomics[kGlobal] + p.acc.atomics[kShared];
            m->global_atomics += p.acc.atomics[kGlobal];
            m->shared_atomics += p.acc.atomics[kShared];
        }
        p.acc = SiteAccum{};
        p.dirty = false;
    }
    s.touched.clear();
}

void on_alloc(void* p, size_t size) {
    Global& g = G();
    auto a = std::make_shared<Alloc>();
    a->start = reinterpret_cast<uintptr_t>(p);
    a->end = a->start + size;
    a->init.reset(new std::atomic<uint8_t>[(size + 7) / 8 + 1]());
    std::lock_guard<std::mutex> lk(g.mu);
    g.allocs[a->start] = a;
    g.freed.erase(a->start);
}

void on_free(void* p, size_t size) {
    Global& g = G();
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lk(g.mu);
    g.allocs.erase(start);
    g.freed[start] = start + std::max<size_t>(size, 1);
}

void on_unmap(void* p) {
    Global& g = G();
    std::lock_guard<std::mutex> lk(g.mu);
    g.allocs.erase(reinterpret_cast<uintptr_t>(p));
}

void on_label_range(void* p, size_t size, const char* what) {
    Global& g = G();
    const uintptr_t start = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lk(g.mu);
    if (what) {
        g.labeled[start] = {start + size, what};
        g.freed.erase(start);
    } else {
        g.labeled.erase(start);
    }
}

void on_host_write(void* p, size_t size) {
    Global& g = G();
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = g.allocs.upper_bound(a);
    if (it == g.allocs.begin()) return;
    --it;
    Alloc& al = *it->second;
    if (a < al.start || a >= al.end || !al.init) return;
    const size_t off = a - al.start, end = std::min(off + size, al.end - al.start);
    for (size_t b = off; b < end; ++b) al.init[b >> 3].fetch_or(static_cast<uint8_t>(1u << (b & 7)));
}


}  // namespace cusim::detail::analysis_hooks

// ---- Public API ---------------------------------------------------------------------------------

namespace cusim::analysis {

bool available() { return detail::analysis_hooks::instrumented; }

void reset() {
    Global& g = G();
    std::lock_guard<std::mutex> lk(g.mu);
    g.kernels.clear();
    g.sites.clear();
    g.reports.clear();
    g.report_pcs.clear();
    g.report_index.clear();
    g.printed_reports = 0;
}

std::vector<KernelMetrics> metrics() {
    Global& g = G();
    std::lock_guard<std::mutex> lk(g.mu);
    std::vector<KernelMetrics> out;
    for (auto& [name, m] : g.kernels) out.push_back(m);
    return out;
}

std::vector<LineMetrics> line_metrics(const std::string& kernel) {
    Global& g = G();
    std::vector<uintptr_t> pcs;
    std::vector<std::pair<SiteKey, KernelMetrics>> sites;
    {
        std::lock_guard<std::mutex> lk(g.mu);
        for (auto& [k, m] : g.sites)
            if (kernel.empty() || k.kernel == kernel) {
                pcs.push_back(k.pc);
                sites.push_back({k, m});
            }
    }
    symbolize(pcs);
    std::map<std::tuple<std::string, std::string, int>, LineMetrics> lines;
    for (auto& [k, m] : sites) {
        auto sym = g.symbolized[k.pc];
        LineMetrics& l = lines[{k.kernel, sym.first, sym.second}];
        l.kernel = k.kernel;
        l.file = sym.first;
        l.line = sym.second;
        l.global_load_requests += m.global_load_requests;
        l.global_store_requests += m.global_store_requests;
        l.global_load_sectors += m.global_load_sectors;
        l.global_store_sectors += m.global_store_sectors;
        l.shared_load_requests += m.shared_load_requests;
        l.shared_store_requests += m.shared_store_requests;
        l.shared_load_wavefronts += m.shared_load_wavefronts;
        l.shared_store_wavefronts += m.shared_store_wavefronts;
        l.global_bytes_read += m.global_bytes_read;
        l.global_bytes_written += m.global_bytes_written;
        l.shared_bytes_read += m.shared_bytes_read;
        l.shared_bytes_written += m.shared_bytes_written;
        l.atomics += m.atomics;
        l.global_atomics += m.global_atomics;
        l.shared_atomics += m.shared_atomics;
    }
    std::vector<LineMetrics> out;
    for (auto& [k, l] : lines) out.push_back(l);
    return out;
}

std::vector<Report> reports() {
    finalize_reports();
    Global& g = G();
    std::lock_guard<std::mutex> lk(g.mu);
    return g.reports;
}

void set_tools(const std::string& list) { tool_bits().store(parse_tool_list(list.c_str())); }

bool tool_enabled(const std::string& tool) {
    const unsigned t = tools();
    return (tool == "memcheck" && (t & kMemcheck)) || (tool == "racecheck" && (t & kRacecheck)) ||
           (tool == "initcheck" && (t & kInitcheck)) || (tool == "synccheck" && (t & kSynccheck));
}

std::string profile_text() {
    std::ostringstream os;
    char buf[512];
    for (const KernelMetrics& m : metrics()) {
        os << "==PROF== kernel '" << m.kernel << "' (" << m.launches << " launch" << (m.launches == 1 ? "" : "es")
           << ")\n";
        std::snprintf(buf, sizeof buf,
                      "  %-34s %14s %14s %12s\n", "Memory workload", "requests", "sectors/wavefr", "per request");
        os << buf;
        auto row = [&](const char* name, uint64_t req, uint64_t units) {
            std::snprintf(buf, sizeof buf, "  %-34s %14llu %14llu %12.2f\n", name, static_cast<unsigned long long>(req),
                          static_cast<unsigned long long>(units), req ? double(units) / double(req) : 0.0);
            os << buf;
        };
        row("global loads (sectors)", m.global_load_requests, m.global_load_sectors);
        row("global stores (sectors)", m.global_store_requests, m.global_store_sectors);
        row("shared loads (wavefronts)", m.shared_load_requests, m.shared_load_wavefronts);
        row("shared stores (wavefronts)", m.shared_store_requests, m.shared_store_wavefronts);
        std::snprintf(buf, sizeof buf, "  global bytes read %llu, written %llu, atomics %llu\n",
                      static_cast<unsigned long long>(m.global_bytes_read),
                      static_cast<unsigned long long>(m.global_bytes_written), static_cast<unsigned long long>(m.atomics));
        os << buf;
        os << "  per source line:\n";
        for (const LineMetrics& l : line_metrics(m.kernel)) {
            std::string where = (l.file.empty() ? std::string("?") : l.file) + ":" + std::to_string(l.line);
            if (l.global_load_requests || l.global_store_requests) {
                std::snprintf(buf, sizeof buf, "    %-60s global  %8llu req  %6.2f sectors/req  %llu B read, %llu B written\n",
                              where.c_str(),
                              static_cast<unsigned long long>(l.global_load_requests + l.global_store_requests),
                              l.global_sectors_per_request(), static_cast<unsigned long long>(l.global_bytes_read),
                              static_cast<unsigned long long>(l.global_bytes_written));
                os << buf;
            }
            if (l.shared_load_requests || l.shared_store_requests) {
                std::snprintf(buf, sizeof buf, "    %-60s shared  %8llu req  %6.2f wavefronts/req\n", where.c_str(),
                              static_cast<unsigned long long>(l.shared_load_requests + l.shared_store_requests),
                              l.shared_wavefronts_per_request());
                os << buf;
            }
            if (l.atomics) {
                std::snprintf(buf, sizeof buf, "    %-60s atomics %8llu\n", where.c_str(),
                              static_cast<unsigned long long>(l.atomics));
                os << buf;
            }
        }
    }
    return os.str();
}

}  // namespace cusim::analysis

// ---- ThreadSanitizer entry points (GCC -fsanitize=thread) --------------------------------------

#define CUSIM_RA reinterpret_cast<uintptr_t>(__builtin_return_address(0))

extern "C" {

void __tsan_init() { cusim::detail::analysis_hooks::instrumented = true; }
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define CUSIM_TSAN_RW(N)                                                                                     \
    void __tsan_read##N(void* a) { on_access(reinterpret_cast<uintptr_t>(a), N, false, CUSIM_RA, false, N > 1); } \
    void __tsan_write##N(void* a) { on_access(reinterpret_cast<uintptr_t>(a), N, true, CUSIM_RA, false, N > 1); } \
    void __tsan_unaligned_read##N(void* a) { on_access(reinterpret_cast<uintptr_t>(a), N, false, CUSIM_RA); } \
    void __tsan_unaligned_write##N(void* a) { on_access(reinterpret_cast<uintptr_t>(a), N, true, CUSIM_RA); } \
    void __tsan_volatile_read##N(void* a) {                                                                    \
        on_access(reinterpret_cast<uintptr_t>(a), N, false, CUSIM_RA, false, false, kVolatileAccess);          \
    }                                                                                                          \
    void __tsan_volatile_write##N(void* a) {                                                                   \
        on_access(reinterpret_cast<uintptr_t>(a), N, true, CUSIM_RA, false, false, kVolatileAccess);           \
    }
CUSIM_TSAN_RW(1)
CUSIM_TSAN_RW(2)
CUSIM_TSAN_RW(4)
CUSIM_TSAN_RW(8)
CUSIM_TSAN_RW(16)
#undef CUSIM_TSAN_RW

void __tsan_read_range(void* a, unsigned long size) {
    if (size) on_access(reinterpret_cast<uintptr_t>(a), size, false, CUSIM_RA);
}
void __tsan_write_range(void* a, unsigned long size) {
    if (size) on_access(reinterpret_cast<uintptr_t>(a), size, true, CUSIM_RA);
}

// Atomics: performed for real (blocks run in parallel) and counted. `mo` uses __ATOMIC_* values.
// cusim's CUDA atomics (cusim/atomics.h) are sequentially consistent on the CPU, while CUDA's are
// relaxed: for racecheck's flag protocols none orders the stores before it (only
// __threadfence() does), whatever `mo` says.
#define CUSIM_TSAN_ATOMIC(N, T)                                                                                   \
    T __tsan_atomic##N##_load(const volatile T* a, int mo) {                                                      \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), false, CUSIM_RA, true);                              \
        return __atomic_load_n(a, mo);                                                                            \
    }                                                                                                             \
    void __tsan_atomic##N##_store(volatile T* a, T v, int mo) {                                                   \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                              \
        __atomic_store_n(a, v, mo);                                                                               \
    }                                                                                                             \
    T __tsan_atomic##N##_exchange(volatile T* a, T v, int mo) {                                                   \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_exchange_n(a, v, mo);                                                                     \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int mo) {                                                  \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_add(a, v, mo);                                                                      \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int mo) {                                                  \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_sub(a, v, mo);                                                                      \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int mo) {                                                  \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_and(a, v, mo);                                                                      \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int mo) {                                                   \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_or(a, v, mo);                                                                       \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int mo) {                                                  \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_xor(a, v, mo);                                                                      \
    }                                                                                                             \
    T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int mo) {                                                 \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_fetch_nand(a, v, mo);                                                                     \
    }                                                                                                             \
    int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int mo, int fmo) {                   \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_compare_exchange_n(a, c, v, false, mo, fmo ? fmo : __ATOMIC_RELAXED);                     \
    }                                                                                                             \
    int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int mo, int fmo) {                     \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        return __atomic_compare_exchange_n(a, c, v, true, mo, fmo ? fmo : __ATOMIC_RELAXED);                      \
    }                                                                                                             \
    T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int mo, int fmo) {                         \
        on_access(reinterpret_cast<uintptr_t>(a), sizeof(T), true, CUSIM_RA, true);                               \
        __atomic_compare_exchange_n(a, &c, v, false, mo, fmo ? fmo : __ATOMIC_RELAXED);                           \
        return c;                                                                                                 \
    }
CUSIM_TSAN_ATOMIC(8, uint8_t)
CUSIM_TSAN_ATOMIC(16, uint16_t)
CUSIM_TSAN_ATOMIC(32, uint32_t)
CUSIM_TSAN_ATOMIC(64, uint64_t)
#undef CUSIM_TSAN_ATOMIC

void __tsan_atomic_thread_fence(int mo) {
    on_fence(mo & 0xffff);  // __threadfence()
    __atomic_thread_fence(mo);
}

// One CUDA atomic implemented as a compare-and-swap loop in cusim/atomics.h (not instrumented);
// `site` is the helper's return address, the atomic's call site in kernel code.
void __cusim_atomic_access(void* a, unsigned long size, void* site) {
    on_access(reinterpret_cast<uintptr_t>(a), size, true, reinterpret_cast<uintptr_t>(site), true);
}

// A load (is_write 0) or store of a vector type, inserted by cusim's GCC plugin
// (common/cusim/tools/gcc_plugin) before the host compiler splits it into its fields.
void __cusim_vector_access(void* a, unsigned long size, int is_write) {
    on_vector_access(reinterpret_cast<uintptr_t>(a), size, is_write != 0, CUSIM_RA);
}
void __tsan_atomic_signal_fence(int mo) { __atomic_signal_fence(mo); }

}  // extern "C"
