// CUDA graphs (include/cusim/graph_api.h): graphs of nodes, stream capture, executable graphs.
//
// A node holds what it does as a function of the stream it runs on (its arguments copied when the
// node was made). An executable graph is a copy of its graph's nodes in an order that respects every
// dependency; launching it runs them in that order, each completing before the next, as every
// stream operation does in cusim. A stream being captured has a capture and a tail (the nodes the
// stream's next operation depends on); an event recorded on it keeps the tail, and a stream that
// waits for that event joins the capture with the event's tail as its own.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "internal.h"

struct CUgraph_st;

struct CUgraphNode_st {
    CUgraph_st* graph = nullptr;
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    std::string what;                                // for reports: "kernel 'k'", "cudaMemcpyAsync", ...
    std::function<void(cudaStream_t)> run;           // what the node does
    std::vector<CUgraphNode_st*> deps;
    cudaKernelNodeParams kernel{};                   // kernel nodes made by cudaGraphAddKernelNode
    CUgraph_st* child = nullptr;                     // child graph nodes: the graph's own copy
    void* allocation = nullptr;                      // memory allocation nodes
    size_t allocation_bytes = 0;
    cudaGraphConditionalHandle handle = 0;           // conditional nodes: the handle they test,
    cudaGraphConditionalNodeType condition = cudaGraphCondTypeIf;  // how,
    std::vector<CUgraph_st*> bodies;                 // and their bodies (phGraph_out)
};

struct CUgraph_st {
    std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
    std::vector<CUgraph_st*> children;  // owned: copies of child graphs, conditional nodes' bodies
    CUgraphNode_st* owner = nullptr;    // a conditional node's body: that node
    ~CUgraph_st();
};

struct CUgraphExec_st {
    struct Step {
        const CUgraphNode_st* origin;
        cudaGraphNodeType type;
        std::function<void(cudaStream_t)> run;
    };
    std::vector<Step> steps;
    std::vector<cudaGraphConditionalHandle> handles;  // of the graph and its bodies: reset per launch
};

namespace cusim::detail {

std::atomic<int> g_stream_captures{0};
thread_local bool tls_recording_launch = false;

bool launch_is_recorded(cudaStream_t stream) {
    return tls_recording_launch ||
           (g_stream_captures.load(std::memory_order_relaxed) > 0 && stream_is_captured(stream)) ||
           launching_from_device();
}

namespace {

struct Capture {
    CUgraph_st* graph;
    cudaStream_t origin;
    cudaStreamCaptureMode mode;
    unsigned long long id;
    bool invalidated = false;
    bool into_existing_graph = false;  // cudaStreamBeginCaptureToGraph: the graph is the program's
    size_t first_node = 0;             // the graph's nodes from here on were captured
};
struct Tail {
    Capture* capture;
    std::vector<CUgraphNode_st*> nodes;
};

std::mutex g_mu;
std::map<cudaStream_t, Tail> g_streams;  // streams in a capture
std::map<cudaEvent_t, Tail> g_events;    // events recorded in a capture
std::set<CUgraph_st*> g_graphs;
std::set<CUgraphExec_st*> g_execs;
unsigned long long g_next_capture_id = 1;
size_t g_graph_memory_high = 0;
thread_local CUgraphNode_st* tls_node_being_built = nullptr;  // cudaGraphAddKernelNode
thread_local cudaStreamCaptureMode tls_capture_mode = cudaStreamCaptureModeGlobal;

cudaError_t fail(cudaError_t err, const char* api, const std::string& detail) { return runtime_error(err, api, detail); }

bool live_graph(const CUgraph_st* g) { return g && g_graphs.count(const_cast<CUgraph_st*>(g)); }

CUgraphNode_st* add_node(CUgraph_st* g, cudaGraphNodeType type, std::string what,
                         std::function<void(cudaStream_t)> run, std::vector<CUgraphNode_st*> deps) {
    auto n = std::make_unique<CUgraphNode_st>();
    n->graph = g, n->type = type, n->what = std::move(what), n->run = std::move(run), n->deps = std::move(deps);
    g->nodes.push_back(std::move(n));
    return g->nodes.back().get();
}

/// Graph memory (allocation nodes): every address that one holds, and its size. The address is
/// reserved when the node is made (allocated and released at once, so the memory is not there
/// before a launch, as on a GPU); each launch maps it again, a free node (or cudaFree) releases it.
std::vector<std::pair<void*, size_t>> g_graph_allocations;

/// The memory graph allocations hold now (what cudaDeviceGetGraphMemAttribute reports).
size_t graph_memory_now() {
    size_t bytes = 0;
    for (const auto& [p, n] : g_graph_allocations)
        if (device_allocation_live(p)) bytes += n;
    g_graph_memory_high = std::max(g_graph_memory_high, bytes);
    return bytes;
}

/// A memory allocation node's address and work, for cudaGraphAddMemAllocNode and captured
/// cudaMallocAsync calls; nullptr (error reported) when no address could be had.
void* reserve_graph_allocation(size_t bytes, const char* api, std::function<void(cudaStream_t)>& run) {
    void* p = nullptr;
    if (device_allocate(&p, bytes, api) != cudaSuccess) return nullptr;
    device_release(p, api);
    g_graph_allocations.emplace_back(p, bytes);
    run = [p, bytes](cudaStream_t) {
        device_allocate_at(p, bytes, "graph memory allocation node");
        std::lock_guard<std::mutex> lk(g_mu);
        graph_memory_now();
    };
    return p;
}

std::function<void(cudaStream_t)> free_work(void* p) {
    return [p](cudaStream_t) { device_release(p, "graph memory free node"); };
}

/// Checks the dependency list of a new node of @p g; "" or the reason it is refused.
std::string check_deps(const CUgraph_st* g, const cudaGraphNode_t* deps, size_t n) {
    if (n && !deps) return "pDependencies is NULL but numDependencies is " + std::to_string(n);
    for (size_t i = 0; i < n; ++i) {
        if (!deps[i] || deps[i]->graph != g) return "dependency " + std::to_string(i) + " is not a node of this graph";
        for (size_t j = 0; j < i; ++j)
            if (deps[j] == deps[i]) return "dependency " + std::to_string(i) + " is listed twice";
    }
    return "";
}

/// The nodes of @p g in an order where each comes after all its dependencies.
std::vector<CUgraphNode_st*> topological(const CUgraph_st* g) {
    std::vector<CUgraphNode_st*> order;
    std::set<const CUgraphNode_st*> done;
    std::function<void(CUgraphNode_st*)> visit = [&](CUgraphNode_st* n) {
        if (!done.insert(n).second) return;
        for (CUgraphNode_st* d : n->deps) visit(d);
        order.push_back(n);
    };
    for (const auto& n : g->nodes) visit(n.get());
    return order;
}

/// Runs every node of @p g in dependency order on @p stream (a child graph node's work).
void run_graph(const CUgraph_st* g, cudaStream_t stream) {
    for (CUgraphNode_st* n : topological(g)) n->run(stream);
}

CUgraph_st* clone_graph(const CUgraph_st* g, std::map<const CUgraphNode_st*, CUgraphNode_st*>* mapping = nullptr) {
    auto* c = new CUgraph_st;
    std::map<const CUgraphNode_st*, CUgraphNode_st*> map;
    for (const auto& n : g->nodes) {
        auto copy = std::make_unique<CUgraphNode_st>(*n);
        copy->graph = c;
        if (n->child) {
            copy->child = clone_graph(n->child);
            c->children.push_back(copy->child);
            CUgraph_st* child = copy->child;
            copy->run = [child](cudaStream_t s) { run_graph(child, s); };
        }
        map[n.get()] = copy.get();
        c->nodes.push_back(std::move(copy));
    }
    for (auto& n : c->nodes)
        for (auto& d : n->deps) d = map.at(d);
    if (mapping) *mapping = map;
    return c;
}

/// Adds an operation issued to a captured stream as a node after the stream's tail.
void capture_node(Tail& t, cudaGraphNodeType type, std::string what, std::function<void(cudaStream_t)> run) {
    CUgraphNode_st* n = add_node(t.capture->graph, type, std::move(what), std::move(run), t.nodes);
    t.nodes = {n};
}

std::string kernel_node_what(const char* name) { return "kernel '" + std::string(name ? name : "?") + "'"; }

/// The launch of @p p as a node's work, its arguments copied now through the kernel's registration
/// (the same path as cudaLaunchKernel): the launch is recorded into @p node, not run.
cudaError_t record_kernel(CUgraphNode_st* node, const cudaKernelNodeParams& p, const char* api) {
    if (!p.func) return fail(cudaErrorInvalidDeviceFunction, api, "func is NULL");
    if (p.extra) return fail(cudaErrorNotSupported, api, "the extra form of kernel arguments is not modelled by cusim");
    node->run = nullptr;
    tls_node_being_built = node;
    tls_recording_launch = true;
    const cudaError_t e = cudaLaunchKernel(static_cast<const void*>(p.func), p.gridDim, p.blockDim, p.kernelParams,
                                           p.sharedMemBytes, nullptr);
    tls_recording_launch = false;
    tls_node_being_built = nullptr;
    if (e != cudaSuccess) return e;
    if (!node->run) return fail(cudaErrorInvalidDeviceFunction, api, "func is not a kernel cusim can launch");
    node->kernel = p;
    node->kernel.kernelParams = nullptr;  // copied into the node; the caller's array may go away
    return cudaSuccess;
}

/// A memset node's work: @p value written as elements of elementSize bytes, row by row.
std::function<void(cudaStream_t)> memset_work(const cudaMemsetParams& p) {
    return [p](cudaStream_t) {
        std::vector<unsigned char> row(p.width * p.elementSize);
        for (size_t i = 0; i < p.width; ++i) std::memcpy(&row[i * p.elementSize], &p.value, p.elementSize);
        for (size_t r = 0; r < p.height; ++r)
            cudaMemcpy(static_cast<char*>(p.dst) + r * p.pitch, row.data(), row.size(), cudaMemcpyHostToDevice);
    };
}

std::string check_memset(const cudaMemsetParams* p) {
    if (!p || !p->dst) return "pMemsetParams or its dst is NULL";
    if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
        return "elementSize is " + std::to_string(p->elementSize) + " (1, 2 or 4)";
    if (p->height > 1 && p->pitch < p->width * p->elementSize) return "pitch is smaller than a row";
    return "";
}

std::function<void(cudaStream_t)> memcpy_work(const cudaMemcpy3DParms& p) {
    return [p](cudaStream_t) { cudaMemcpy3D(&p); };
}

/// A conditional handle: the value its conditional nodes test. Handles are never freed: an
/// executable graph outlives the graph it was made from, and its nodes keep testing them.
struct ConditionalHandle {
    const CUgraph_st* graph;  // the graph it was created for
    unsigned default_value;
    bool assign_default;      // cudaGraphCondAssignDefault
    std::atomic<unsigned> value;
};
std::mutex g_handles_mu;
std::vector<std::unique_ptr<ConditionalHandle>> g_handles;  // handle h is g_handles[h - 1]

ConditionalHandle* find_handle(cudaGraphConditionalHandle h) {
    std::lock_guard<std::mutex> lk(g_handles_mu);
    return h >= 1 && h <= g_handles.size() ? g_handles[h - 1].get() : nullptr;
}

/// True when @p g contains a conditional node (the graphs that cannot be cloned or be a child).
bool has_conditional(const CUgraph_st* g) {
    for (const auto& n : g->nodes)
        if (n->type == cudaGraphNodeTypeConditional) return true;
    return false;
}

/// The node types a conditional node's body may hold (cudaConditionalNodeParams in CUDA's headers).
bool body_may_hold(cudaGraphNodeType type) {
    return type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeEmpty || type == cudaGraphNodeTypeGraph ||
           type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeMemcpy || type == cudaGraphNodeTypeConditional;
}

std::vector<CUgraphExec_st::Step> graph_steps(const CUgraph_st* g);

/// What a conditional node does at a launch, its bodies' work taken as they are now (an executable
/// graph keeps the bodies it was instantiated with). A WHILE loop ends when its value is 0, or when a
/// kernel of its body faulted (the context is unusable then, and the value may never change).
std::function<void(cudaStream_t)> conditional_work(const CUgraphNode_st& n) {
    std::vector<std::vector<std::function<void(cudaStream_t)>>> bodies;
    for (const CUgraph_st* b : n.bodies) {
        bodies.emplace_back();
        for (auto& step : graph_steps(b)) bodies.back().push_back(std::move(step.run));
    }
    ConditionalHandle* h = find_handle(n.handle);
    const cudaGraphConditionalNodeType type = n.condition;
    return [bodies = std::move(bodies), h, type](cudaStream_t s) {
        auto run = [&](size_t body) {
            for (const auto& work : bodies[body]) work(s);
        };
        switch (type) {
            case cudaGraphCondTypeIf:
                if (h->value.load() != 0) run(0);
                else if (bodies.size() == 2) run(1);
                break;
            case cudaGraphCondTypeWhile:
                while (h->value.load() != 0 && sticky_error() == cudaSuccess) run(0);
                break;
            case cudaGraphCondTypeSwitch:
                if (const unsigned v = h->value.load(); v < bodies.size()) run(v);
                break;
        }
    };
}

/// The work of @p g's nodes in an order that respects every dependency, as an executable graph
/// holds it: each conditional node with its bodies' work as they are now.
std::vector<CUgraphExec_st::Step> graph_steps(const CUgraph_st* g) {
    std::vector<CUgraphExec_st::Step> steps;
    for (CUgraphNode_st* n : topological(g))
        steps.push_back({n, n->type, n->type == cudaGraphNodeTypeConditional ? conditional_work(*n) : n->run});
    return steps;
}

/// The conditional handles created for @p g or for a body inside it.
std::vector<cudaGraphConditionalHandle> handles_of(const CUgraph_st* g) {
    std::set<const CUgraph_st*> graphs;
    std::function<void(const CUgraph_st*)> collect = [&](const CUgraph_st* x) {
        graphs.insert(x);
        for (const auto& n : x->nodes)
            for (const CUgraph_st* b : n->bodies) collect(b);
    };
    collect(g);
    std::vector<cudaGraphConditionalHandle> out;
    std::lock_guard<std::mutex> lk(g_handles_mu);
    for (size_t i = 0; i < g_handles.size(); ++i)
        if (graphs.count(g_handles[i]->graph)) out.push_back(i + 1);
    return out;
}

/// The start of a node-adding call: the graph and the dependencies checked, and a conditional
/// node's body offered only the node types it may hold.
cudaError_t node_prologue(cudaGraphNode_t* out, cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, const char* api,
                          cudaGraphNodeType type) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!out) return fail(cudaErrorInvalidValue, api, "pGraphNode is NULL");
    if (!live_graph(g)) return fail(cudaErrorInvalidValue, api, "graph is not a live graph (cudaGraphCreate)");
    if (std::string why = check_deps(g, deps, n); !why.empty()) return fail(cudaErrorInvalidValue, api, why);
    if (g->owner && !body_may_hold(type))
        return fail(cudaErrorInvalidValue, api,
                    "graph is the body of a conditional node, which holds only kernel, memcpy, memset, empty, child "
                    "graph and conditional nodes");
    return cudaSuccess;
}

std::vector<CUgraphNode_st*> dep_list(const cudaGraphNode_t* deps, size_t n) {
    return n ? std::vector<CUgraphNode_st*>(deps, deps + n) : std::vector<CUgraphNode_st*>{};
}

CUgraphExec_st::Step* exec_step(CUgraphExec_st* e, const CUgraphNode_st* node) {
    for (auto& s : e->steps)
        if (s.origin == node) return &s;
    return nullptr;
}

}  // namespace


bool stream_is_captured(cudaStream_t stream) {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_streams.count(stream) != 0;
}

namespace {
std::mutex g_children_mu;
std::vector<std::function<void(cudaStream_t)>> g_children;  // launched by the running grid's threads
}  // namespace

void run_child_launches() {
    std::vector<std::function<void(cudaStream_t)>> children;
    {
        std::lock_guard<std::mutex> lk(g_children_mu);
        children.swap(g_children);
    }
    // A parent grid that faulted leaves the context unusable: its children never run.
    if (sticky_error() != cudaSuccess) return;
    // In the order the parent's threads launched them; each runs its own children when it completes.
    for (auto& child : children) child(nullptr);
}

void record_launch(cudaStream_t stream, const char* kernel_name, RecordedLaunch launch) {
    // Shared by every copy of the node's work (clones, executable graphs): freed with the last.
    std::shared_ptr<void> state(launch.state, launch.destroy);
    std::function<void(cudaStream_t)> replay = [state, run = launch.run](cudaStream_t s) { run(state.get(), s); };
    if (launching_from_device()) {
        std::lock_guard<std::mutex> lk(g_children_mu);
        g_children.push_back(std::move(replay));
        return;
    }
    if (tls_node_being_built) {
        tls_node_being_built->what = kernel_node_what(kernel_name);
        tls_node_being_built->run = std::move(replay);
        return;
    }
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return;  // the capture ended meanwhile (another thread)
    capture_node(it->second, cudaGraphNodeTypeKernel, kernel_node_what(kernel_name), std::move(replay));
}

bool capture_operation(cudaStream_t stream, cudaGraphNodeType type, const char* what,
                       std::function<void(cudaStream_t)> work) {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return false;
    capture_node(it->second, type, what, std::move(work));
    return true;
}

bool capture_allocation(cudaStream_t stream, void** ptr, size_t size) {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return false;
    std::function<void(cudaStream_t)> run;
    *ptr = reserve_graph_allocation(size, "cudaMallocAsync", run);
    if (*ptr) {
        capture_node(it->second, cudaGraphNodeTypeMemAlloc, "cudaMallocAsync", run);
        it->second.nodes.back()->allocation = *ptr;
        it->second.nodes.back()->allocation_bytes = size;
    }
    return true;
}

bool capture_event_record(cudaEvent_t event, cudaStream_t stream) {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return false;
    g_events[event] = it->second;
    return true;
}

int capture_event_wait(cudaStream_t stream, cudaEvent_t event) {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return 0;
    std::lock_guard<std::mutex> lk(g_mu);
    auto ev = g_events.find(event);
    auto st = g_streams.find(stream);
    if (ev == g_events.end()) return st == g_streams.end() ? 0 : 1;  // an event outside the capture: no edge
    if (st == g_streams.end()) {
        g_streams[stream] = ev->second;  // the stream joins the capture
        return 1;
    }
    if (st->second.capture != ev->second.capture) return -1;
    for (CUgraphNode_st* n : ev->second.nodes)
        if (std::find(st->second.nodes.begin(), st->second.nodes.end(), n) == st->second.nodes.end())
            st->second.nodes.push_back(n);
    return 1;
}

cudaError_t capture_forbids_sync(cudaStream_t stream, const char* api) {
    if (g_stream_captures.load(std::memory_order_relaxed) == 0) return cudaSuccess;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return cudaSuccess;
    it->second.capture->invalidated = true;
    return fail(cudaErrorStreamCaptureUnsupported, api,
                "the stream is being captured into a graph, where it cannot be waited for; the capture is now "
                "invalid (end it with cudaStreamEndCapture, then wait for the graph's launch instead)");
}

void reset_graphs() {
    std::lock_guard<std::mutex> lk(g_mu);
    std::set<Capture*> captures;
    for (auto& [s, t] : g_streams) captures.insert(t.capture);
    for (Capture* c : captures) {
        if (c->origin) --g_stream_captures;
        if (!c->into_existing_graph) {
            g_graphs.erase(c->graph);
            delete c->graph;
        }
        delete c;
    }
    g_streams.clear();
    g_events.clear();
}

}  // namespace cusim::detail

using namespace cusim::detail;

CUgraph_st::~CUgraph_st() {
    for (CUgraph_st* c : children) {
        g_graphs.erase(c);  // a conditional node's body was a live graph (the caller holds g_mu)
        delete c;
    }
}

// ---- Stream capture ---------------------------------------------------------------------------

/// cudaSuccess when @p stream may begin a capture, else the error the runtime gives (reported).
static cudaError_t capturable(cudaStream_t stream, const char* api) {
    if (stream == nullptr || stream == cudaStreamLegacy)
        return fail(cudaErrorStreamCaptureUnsupported, api,
                    "the legacy default stream cannot be captured: capture a stream created with cudaStreamCreate");
    if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle, api, "the stream is not a valid stream handle");
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
    const char* api = "cudaStreamBeginCapture";
    if (cudaError_t e = runtime_prologue()) return e;
    if (cudaError_t e = capturable(stream, api)) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_streams.count(stream)) return fail(cudaErrorIllegalState, api, "the stream is already being captured");
    auto* graph = new CUgraph_st;
    g_graphs.insert(graph);
    auto* c = new Capture{graph, stream, mode, g_next_capture_id++};
    g_streams[stream] = Tail{c, {}};
    ++g_stream_captures;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData*, size_t numDependencies, cudaStreamCaptureMode mode) {
    const char* api = "cudaStreamBeginCaptureToGraph";
    if (cudaError_t e = runtime_prologue()) return e;
    if (cudaError_t e = capturable(stream, api)) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph)) return fail(cudaErrorInvalidValue, api, "graph is not a live graph");
    if (std::string why = check_deps(graph, dependencies, numDependencies); !why.empty())
        return fail(cudaErrorInvalidValue, api, why);
    if (g_streams.count(stream)) return fail(cudaErrorIllegalState, api, "the stream is already being captured");
    auto* c = new Capture{graph, stream, mode, g_next_capture_id++};
    c->into_existing_graph = true, c->first_node = graph->nodes.size();
    g_streams[stream] = Tail{c, dep_list(dependencies, numDependencies)};
    ++g_stream_captures;
    return cudaSuccess;
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* dependencies,
                                                const cudaGraphEdgeData*, size_t numDependencies, unsigned int flags) {
    const char* api = "cudaStreamUpdateCaptureDependencies";
    if (cudaError_t e = runtime_prologue()) return e;
    if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies)
        return fail(cudaErrorInvalidValue, api,
                    "flags must be cudaStreamAddCaptureDependencies or cudaStreamSetCaptureDependencies");
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return fail(cudaErrorIllegalState, api, "the stream is not being captured");
    Tail& t = it->second;
    if (std::string why = check_deps(t.capture->graph, dependencies, numDependencies); !why.empty())
        return fail(cudaErrorInvalidValue, api, why + " (the graph being captured)");
    if (flags == cudaStreamSetCaptureDependencies) t.nodes.clear();
    for (size_t i = 0; i < numDependencies; ++i)
        if (std::find(t.nodes.begin(), t.nodes.end(), dependencies[i]) == t.nodes.end()) t.nodes.push_back(dependencies[i]);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
    const char* api = "cudaStreamEndCapture";
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) return fail(cudaErrorIllegalState, api, "the stream is not being captured");
    Capture* c = it->second.capture;
    // A capture into the program's own graph (cudaStreamBeginCaptureToGraph) leaves its work there.
    if (!pGraph && !c->into_existing_graph) return fail(cudaErrorInvalidValue, api, "pGraph is NULL");
    if (c->origin != stream)
        return fail(cudaErrorStreamCaptureUnmatched, api,
                    "the capture was begun on another stream: end it on the stream that began it");
    // Every node must lead to the origin stream's tail: work of a joined stream that never joined
    // back (an event the origin waited for) is unjoined.
    std::set<const CUgraphNode_st*> reached;
    std::vector<const CUgraphNode_st*> todo(it->second.nodes.begin(), it->second.nodes.end());
    while (!todo.empty()) {
        const CUgraphNode_st* n = todo.back();
        todo.pop_back();
        if (!reached.insert(n).second) continue;
        for (const CUgraphNode_st* d : n->deps) todo.push_back(d);
    }
    const CUgraphNode_st* unjoined = nullptr;
    for (size_t i = c->first_node; i < c->graph->nodes.size(); ++i)
        if (!reached.count(c->graph->nodes[i].get())) unjoined = c->graph->nodes[i].get();
    const bool invalidated = c->invalidated;
    for (auto s = g_streams.begin(); s != g_streams.end();) s = s->second.capture == c ? g_streams.erase(s) : std::next(s);
    for (auto e = g_events.begin(); e != g_events.end();) e = e->second.capture == c ? g_events.erase(e) : std::next(e);
    --g_stream_captures;
    CUgraph_st* graph = c->graph;
    const bool existing = c->into_existing_graph;
    delete c;
    if (invalidated || unjoined) {
        const std::string what = unjoined ? unjoined->what : "";
        if (!existing) {
            g_graphs.erase(graph);
            delete graph;
        }
        if (pGraph) *pGraph = nullptr;
        if (invalidated)
            return fail(cudaErrorStreamCaptureInvalidated, api, "the capture was invalidated by an operation that "
                                                                "cannot be captured (see the error reported then)");
        return fail(cudaErrorStreamCaptureUnjoined, api,
                    "work captured on another stream (" + what + ") was never joined back into the stream that "
                    "began the capture: record an event on that stream after its work and make this stream wait "
                    "for it (cudaEventRecord, cudaStreamWaitEvent) before cudaStreamEndCapture");
    }
    if (pGraph) *pGraph = graph;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pCaptureStatus) return fail(cudaErrorInvalidValue, "cudaStreamIsCapturing", "pCaptureStatus is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    *pCaptureStatus = it == g_streams.end()              ? cudaStreamCaptureStatusNone
                      : it->second.capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                                        : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* ndeps) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!status) return fail(cudaErrorInvalidValue, "cudaStreamGetCaptureInfo", "captureStatus_out is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_streams.find(stream);
    if (it == g_streams.end()) {
        *status = cudaStreamCaptureStatusNone;
        if (ndeps) *ndeps = 0;
        return cudaSuccess;
    }
    const Tail& t = it->second;
    *status = t.capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    if (id) *id = t.capture->id;
    if (graph) *graph = t.capture->graph;
    if (deps) *deps = t.nodes.empty() ? nullptr : t.nodes.data();
    if (edges) *edges = nullptr;
    if (ndeps) *ndeps = t.nodes.size();
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
    if (!mode) return fail(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode", "mode is NULL");
    std::swap(*mode, tls_capture_mode);
    return cudaSuccess;
}

// ---- Graphs -----------------------------------------------------------------------------------

cudaError_t cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pGraph) return fail(cudaErrorInvalidValue, "cudaGraphCreate", "pGraph is NULL");
    if (flags != 0) return fail(cudaErrorInvalidValue, "cudaGraphCreate", "flags must be 0");
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraph = new CUgraph_st;
    g_graphs.insert(*pGraph);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (live_graph(graph) && graph->owner)
        return fail(cudaErrorInvalidValue, "cudaGraphDestroy",
                    "graph is the body of a conditional node: it lives as long as the node, which owns it");
    if (!g_graphs.erase(graph)) return fail(cudaErrorInvalidValue, "cudaGraphDestroy", "graph is not a live graph");
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t* pGraphClone, cudaGraph_t originalGraph) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!pGraphClone || !live_graph(originalGraph))
        return fail(cudaErrorInvalidValue, "cudaGraphClone", "pGraphClone is NULL or originalGraph is not a live graph");
    for (const auto& n : originalGraph->nodes)
        if (n->type == cudaGraphNodeTypeMemAlloc || n->type == cudaGraphNodeTypeMemFree)
            return fail(cudaErrorNotSupported, "cudaGraphClone", "a graph with memory nodes cannot be cloned");
    if (has_conditional(originalGraph))
        return fail(cudaErrorInvalidValue, "cudaGraphClone", "a graph with conditional nodes cannot be cloned");
    *pGraphClone = clone_graph(originalGraph);
    g_graphs.insert(*pGraphClone);
    return cudaSuccess;
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                   size_t numDependencies, const cudaKernelNodeParams* pNodeParams) {
    const char* api = "cudaGraphAddKernelNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeKernel))
        return e;
    if (!pNodeParams) return fail(cudaErrorInvalidValue, api, "pNodeParams is NULL");
    CUgraphNode_st probe;
    if (cudaError_t e = record_kernel(&probe, *pNodeParams, api)) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    CUgraphNode_st* n = add_node(graph, cudaGraphNodeTypeKernel, probe.what, probe.run, dep_list(pDependencies, numDependencies));
    n->kernel = probe.kernel;
    *pGraphNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                   size_t numDependencies, const cudaMemcpy3DParms* pCopyParams) {
    const char* api = "cudaGraphAddMemcpyNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeMemcpy))
        return e;
    if (!pCopyParams) return fail(cudaErrorInvalidValue, api, "pCopyParams is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeMemcpy, "memcpy node", memcpy_work(*pCopyParams),
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                     size_t numDependencies, void* dst, const void* src, size_t count,
                                     cudaMemcpyKind kind) {
    const char* api = "cudaGraphAddMemcpyNode1D";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeMemcpy))
        return e;
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeMemcpy, "memcpy node",
                           [=](cudaStream_t) { cudaMemcpy(dst, src, count, kind); },
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                   size_t numDependencies, const cudaMemsetParams* pMemsetParams) {
    const char* api = "cudaGraphAddMemsetNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeMemset))
        return e;
    if (std::string why = check_memset(pMemsetParams); !why.empty()) return fail(cudaErrorInvalidValue, api, why);
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeMemset, "memset node", memset_work(*pMemsetParams),
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                 size_t numDependencies, const cudaHostNodeParams* pNodeParams) {
    const char* api = "cudaGraphAddHostNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeHost))
        return e;
    if (!pNodeParams || !pNodeParams->fn) return fail(cudaErrorInvalidValue, api, "pNodeParams or its fn is NULL");
    const cudaHostNodeParams p = *pNodeParams;
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeHost, "host node", [p](cudaStream_t) { p.fn(p.userData); },
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                  size_t numDependencies) {
    const char* api = "cudaGraphAddEmptyNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeEmpty))
        return e;
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeEmpty, "empty node", [](cudaStream_t) {},
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                       cudaGraph_t childGraph) {
    const char* api = "cudaGraphAddChildGraphNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeGraph))
        return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(childGraph)) return fail(cudaErrorInvalidValue, api, "childGraph is not a live graph");
    if (has_conditional(childGraph))
        return fail(cudaErrorInvalidValue, api, "childGraph has conditional nodes: it cannot be a child graph");
    CUgraph_st* copy = clone_graph(childGraph);  // the node holds its own copy, as CUDA's does
    graph->children.push_back(copy);
    CUgraphNode_st* n = add_node(graph, cudaGraphNodeTypeGraph, "child graph node",
                                 [copy](cudaStream_t s) { run_graph(copy, s); }, dep_list(pDependencies, numDependencies));
    n->child = copy;
    *pGraphNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                     const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                     cudaMemAllocNodeParams* nodeParams) {
    const char* api = "cudaGraphAddMemAllocNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeMemAlloc))
        return e;
    if (!nodeParams || nodeParams->bytesize == 0) return fail(cudaErrorInvalidValue, api, "nodeParams is NULL or bytesize is 0");
    std::lock_guard<std::mutex> lk(g_mu);
    std::function<void(cudaStream_t)> run;
    void* p = reserve_graph_allocation(nodeParams->bytesize, api, run);
    if (!p) return cudaErrorMemoryAllocation;
    CUgraphNode_st* n = add_node(graph, cudaGraphNodeTypeMemAlloc, "memory allocation node", run,
                                 dep_list(pDependencies, numDependencies));
    n->allocation = p, n->allocation_bytes = nodeParams->bytesize;
    nodeParams->dptr = p;
    *pGraphNode = n;
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                                    size_t numDependencies, void* dptr) {
    const char* api = "cudaGraphAddMemFreeNode";
    if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, cudaGraphNodeTypeMemFree))
        return e;
    if (!dptr) return fail(cudaErrorInvalidValue, api, "dptr is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    *pGraphNode = add_node(graph, cudaGraphNodeTypeMemFree, "memory free node", free_work(dptr),
                           dep_list(pDependencies, numDependencies));
    return cudaSuccess;
}

// ---- Conditional nodes ------------------------------------------------------------------------

cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle* pHandle_out, cudaGraph_t graph,
                                             unsigned int defaultLaunchValue, unsigned int flags) {
    const char* api = "cudaGraphConditionalHandleCreate";
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pHandle_out) return fail(cudaErrorInvalidValue, api, "pHandle_out is NULL");
    if (flags != 0 && flags != cudaGraphCondAssignDefault)
        return fail(cudaErrorInvalidValue, api, "flags must be 0 or cudaGraphCondAssignDefault");
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph)) return fail(cudaErrorInvalidValue, api, "graph is not a live graph");
    auto h = std::make_unique<ConditionalHandle>();
    h->graph = graph, h->default_value = defaultLaunchValue, h->assign_default = flags == cudaGraphCondAssignDefault;
    h->value.store(defaultLaunchValue);
    std::lock_guard<std::mutex> hk(g_handles_mu);
    g_handles.push_back(std::move(h));
    *pHandle_out = g_handles.size();
    return cudaSuccess;
}

void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value, const std::source_location& where) {
    if (!launching_from_device()) device_trap("cudaGraphSetConditional (device code only)", where);
    ConditionalHandle* h = find_handle(handle);
    if (!h) device_trap("cudaGraphSetConditional with a handle that cudaGraphConditionalHandleCreate did not make", where);
    h->value.store(value);
}

namespace {

/// A conditional node for cudaGraphAddNode (the caller holds g_mu): its bodies made and returned.
cudaError_t add_conditional_node(cudaGraphNode_t* out, cudaGraph_t graph, std::vector<CUgraphNode_st*> deps,
                                 cudaConditionalNodeParams& p, const char* api) {
    ConditionalHandle* h = find_handle(p.handle);
    if (!h) return fail(cudaErrorInvalidValue, api, "conditional.handle is not a handle cudaGraphConditionalHandleCreate made");
    // The handle's graph is this graph or one that holds it, through conditional bodies.
    const CUgraph_st* g = graph;
    while (g && g != h->graph) g = g->owner ? g->owner->graph : nullptr;
    if (!g)
        return fail(cudaErrorInvalidValue, api,
                    "conditional.handle was created for another graph: create it for this graph or one that "
                    "holds it");
    const unsigned size = p.size;
    const bool size_ok = p.type == cudaGraphCondTypeIf       ? size == 1 || size == 2
                         : p.type == cudaGraphCondTypeWhile  ? size == 1
                         : p.type == cudaGraphCondTypeSwitch ? size >= 1
                                                             : false;
    if (!size_ok)
        return fail(cudaErrorInvalidValue, api,
                    "conditional.type is not a cudaGraphConditionalNodeType, or conditional.size is " +
                        std::to_string(size) + " (IF: 1, or 2 with an ELSE body; WHILE: 1; SWITCH: 1 or more)");
    CUgraphNode_st* n = add_node(graph, cudaGraphNodeTypeConditional, "conditional node", nullptr, std::move(deps));
    n->handle = p.handle, n->condition = p.type;
    for (unsigned i = 0; i < size; ++i) {
        auto* body = new CUgraph_st;
        body->owner = n;
        graph->children.push_back(body);
        g_graphs.insert(body);
        n->bodies.push_back(body);
    }
    // Run outside an executable graph (never, as CUDA forbids such a graph as a child): its bodies as they are.
    n->run = [n](cudaStream_t s) { conditional_work(*n)(s); };
    p.phGraph_out = n->bodies.data();
    *out = n;
    return cudaSuccess;
}

}  // namespace

cudaError_t cudaGraphAddNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph, const cudaGraphNode_t* pDependencies,
                             const cudaGraphEdgeData*, size_t numDependencies, cudaGraphNodeParams* nodeParams) {
    const char* api = "cudaGraphAddNode";
    if (!nodeParams) return fail(cudaErrorInvalidValue, api, "nodeParams is NULL");
    cudaGraphNodeParams& p = *nodeParams;
    switch (p.type) {
        case cudaGraphNodeTypeKernel: {
            const cudaKernelNodeParams k{p.kernel.func,         p.kernel.gridDim,      p.kernel.blockDim,
                                         p.kernel.sharedMemBytes, p.kernel.kernelParams, p.kernel.extra};
            return cudaGraphAddKernelNode(pGraphNode, graph, pDependencies, numDependencies, &k);
        }
        case cudaGraphNodeTypeMemcpy:
            return cudaGraphAddMemcpyNode(pGraphNode, graph, pDependencies, numDependencies, &p.memcpy.copyParams);
        case cudaGraphNodeTypeMemset: {
            const cudaMemsetParams m{p.memset.dst,         p.memset.pitch, p.memset.value,
                                     p.memset.elementSize, p.memset.width, p.memset.height};
            return cudaGraphAddMemsetNode(pGraphNode, graph, pDependencies, numDependencies, &m);
        }
        case cudaGraphNodeTypeHost: {
            const cudaHostNodeParams h{p.host.fn, p.host.userData};
            return cudaGraphAddHostNode(pGraphNode, graph, pDependencies, numDependencies, &h);
        }
        case cudaGraphNodeTypeGraph:
            if (p.graph.ownership != cudaGraphChildGraphOwnershipClone)
                return fail(cudaErrorNotSupported, api,
                            "cusim clones a child graph into its node (cudaGraphChildGraphOwnershipClone) and does not "
                            "model moving it");
            return cudaGraphAddChildGraphNode(pGraphNode, graph, pDependencies, numDependencies, p.graph.graph);
        case cudaGraphNodeTypeEmpty: return cudaGraphAddEmptyNode(pGraphNode, graph, pDependencies, numDependencies);
        case cudaGraphNodeTypeMemAlloc: {
            cudaMemAllocNodeParams a{p.alloc.poolProps, p.alloc.accessDescs, p.alloc.accessDescCount, p.alloc.bytesize,
                                     nullptr};
            const cudaError_t e = cudaGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &a);
            if (e == cudaSuccess) p.alloc.dptr = a.dptr;
            return e;
        }
        case cudaGraphNodeTypeMemFree:
            return cudaGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies, p.free.dptr);
        case cudaGraphNodeTypeConditional: {
            if (cudaError_t e = node_prologue(pGraphNode, graph, pDependencies, numDependencies, api, p.type)) return e;
            std::lock_guard<std::mutex> lk(g_mu);
            return add_conditional_node(pGraphNode, graph, dep_list(pDependencies, numDependencies), p.conditional, api);
        }
        default:
            return fail(cudaErrorNotSupported, api,
                        "node type " + std::to_string(int(p.type)) +
                            " is not modelled by cusim (event and external semaphore nodes)");
    }
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from, const cudaGraphNode_t* to,
                                     const cudaGraphEdgeData*, size_t numDependencies) {
    const char* api = "cudaGraphAddDependencies";
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph)) return fail(cudaErrorInvalidValue, api, "graph is not a live graph");
    if (numDependencies && (!from || !to)) return fail(cudaErrorInvalidValue, api, "from or to is NULL");
    for (size_t i = 0; i < numDependencies; ++i) {
        if (!from[i] || !to[i] || from[i]->graph != graph || to[i]->graph != graph)
            return fail(cudaErrorInvalidValue, api, "edge " + std::to_string(i) + " names a node of another graph");
        if (from[i] == to[i]) return fail(cudaErrorInvalidValue, api, "edge " + std::to_string(i) + " is a self-loop");
        auto& deps = to[i]->deps;
        if (std::find(deps.begin(), deps.end(), from[i]) != deps.end())
            return fail(cudaErrorInvalidValue, api, "edge " + std::to_string(i) + " already exists");
        deps.push_back(from[i]);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph) || !numNodes)
        return fail(cudaErrorInvalidValue, "cudaGraphGetNodes", "graph is not a live graph or numNodes is NULL");
    if (nodes)
        for (size_t i = 0; i < std::min(*numNodes, graph->nodes.size()); ++i) nodes[i] = graph->nodes[i].get();
    *numNodes = nodes ? std::min(*numNodes, graph->nodes.size()) : graph->nodes.size();
    return cudaSuccess;
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* pRootNodes, size_t* pNumRootNodes) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph) || !pNumRootNodes)
        return fail(cudaErrorInvalidValue, "cudaGraphGetRootNodes", "graph is not a live graph or pNumRootNodes is NULL");
    std::vector<cudaGraphNode_t> roots;
    for (const auto& n : graph->nodes)
        if (n->deps.empty()) roots.push_back(n.get());
    if (pRootNodes)
        for (size_t i = 0; i < std::min(*pNumRootNodes, roots.size()); ++i) pRootNodes[i] = roots[i];
    *pNumRootNodes = pRootNodes ? std::min(*pNumRootNodes, roots.size()) : roots.size();
    return cudaSuccess;
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to, cudaGraphEdgeData* edgeData,
                              size_t* numEdges) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph) || !numEdges)
        return fail(cudaErrorInvalidValue, "cudaGraphGetEdges", "graph is not a live graph or numEdges is NULL");
    size_t k = 0;
    for (const auto& n : graph->nodes)
        for (CUgraphNode_st* d : n->deps) {
            if (from && to && k < *numEdges) {
                from[k] = d, to[k] = n.get();
                if (edgeData) edgeData[k] = cudaGraphEdgeData{};
            }
            ++k;
        }
    *numEdges = from && to ? std::min(*numEdges, k) : k;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* pType) {
    if (!node || !pType) return fail(cudaErrorInvalidValue, "cudaGraphNodeGetType", "node or pType is NULL");
    *pType = node->type;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* pDependencies,
                                         cudaGraphEdgeData* edgeData, size_t* pNumDependencies) {
    if (!node || !pNumDependencies)
        return fail(cudaErrorInvalidValue, "cudaGraphNodeGetDependencies", "node or pNumDependencies is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    if (pDependencies)
        for (size_t i = 0; i < std::min(*pNumDependencies, node->deps.size()); ++i) {
            pDependencies[i] = node->deps[i];
            if (edgeData) edgeData[i] = cudaGraphEdgeData{};
        }
    *pNumDependencies = pDependencies ? std::min(*pNumDependencies, node->deps.size()) : node->deps.size();
    return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* pNodeParams) {
    if (!node || !pNodeParams || node->type != cudaGraphNodeTypeKernel)
        return fail(cudaErrorInvalidValue, "cudaGraphKernelNodeGetParams", "not a kernel node, or pNodeParams is NULL");
    *pNodeParams = node->kernel;  // kernelParams: NULL (cusim holds the arguments in the node)
    return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* pNodeParams) {
    const char* api = "cudaGraphKernelNodeSetParams";
    if (!node || !pNodeParams || node->type != cudaGraphNodeTypeKernel)
        return fail(cudaErrorInvalidValue, api, "not a kernel node, or pNodeParams is NULL");
    CUgraphNode_st probe;
    if (cudaError_t e = record_kernel(&probe, *pNodeParams, api)) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    node->run = probe.run, node->what = probe.what, node->kernel = probe.kernel;
    return cudaSuccess;
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
    if (!node || !p || node->type != cudaGraphNodeTypeMemcpy)
        return fail(cudaErrorInvalidValue, "cudaGraphMemcpyNodeSetParams", "not a memcpy node, or the parameters are NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    node->run = memcpy_work(*p);
    return cudaSuccess;
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* p) {
    if (!node || node->type != cudaGraphNodeTypeMemset)
        return fail(cudaErrorInvalidValue, "cudaGraphMemsetNodeSetParams", "not a memset node");
    if (std::string why = check_memset(p); !why.empty()) return fail(cudaErrorInvalidValue, "cudaGraphMemsetNodeSetParams", why);
    std::lock_guard<std::mutex> lk(g_mu);
    node->run = memset_work(*p);
    return cudaSuccess;
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* p) {
    if (!node || !p || !p->fn || node->type != cudaGraphNodeTypeHost)
        return fail(cudaErrorInvalidValue, "cudaGraphHostNodeSetParams", "not a host node, or fn is NULL");
    const cudaHostNodeParams params = *p;
    std::lock_guard<std::mutex> lk(g_mu);
    node->run = [params](cudaStream_t) { params.fn(params.userData); };
    return cudaSuccess;
}

// ---- Executable graphs ------------------------------------------------------------------------

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long) {
    const char* api = "cudaGraphInstantiate";
    if (cudaError_t e = runtime_prologue()) return e;
    if (!pGraphExec) return fail(cudaErrorInvalidValue, api, "pGraphExec is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    if (!live_graph(graph)) return fail(cudaErrorInvalidValue, api, "graph is not a live graph");
    // A dependency cycle (cudaGraphAddDependencies can make one) cannot be instantiated.
    std::map<const CUgraphNode_st*, int> state;
    std::function<bool(const CUgraphNode_st*)> acyclic = [&](const CUgraphNode_st* n) {
        int& s = state[n];
        if (s == 1) return false;
        if (s == 2) return true;
        s = 1;
        for (const CUgraphNode_st* d : n->deps)
            if (!acyclic(d)) return false;
        s = 2;
        return true;
    };
    for (const auto& n : graph->nodes)
        if (!acyclic(n.get())) return fail(cudaErrorInvalidValue, api, "the graph's dependencies form a cycle");
    auto* e = new CUgraphExec_st;
    e->steps = graph_steps(graph);
    e->handles = handles_of(graph);
    g_execs.insert(e);
    *pGraphExec = e;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    return cudaGraphInstantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
    const char* api = "cudaGraphLaunch";
    if (cudaError_t e = runtime_prologue()) return e;
    if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle, api, "the stream is not a valid stream handle");
    std::vector<CUgraphExec_st::Step> steps;
    std::vector<ConditionalHandle*> defaults;  // handles that take their default value at each launch
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (!g_execs.count(graphExec))
            return fail(cudaErrorInvalidValue, api, "graphExec is not a live executable graph (cudaGraphInstantiate)");
        steps = graphExec->steps;
        for (cudaGraphConditionalHandle h : graphExec->handles)
            if (ConditionalHandle* c = find_handle(h); c && c->assign_default) defaults.push_back(c);
    }
    auto work = [steps, defaults](cudaStream_t) {
        for (ConditionalHandle* h : defaults) h->value.store(h->default_value);
        // Each node runs on the legacy stream: it completes before the next starts, in dependency order.
        for (const auto& s : steps) s.run(nullptr);
    };
    if (capture_operation(stream, cudaGraphNodeTypeGraph, "graph launch", work)) return cudaSuccess;
    note_stream_work(stream, api, api_site());
    work(nullptr);
    return cudaSuccess;
}

cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_execs.count(graphExec)) return fail(cudaErrorInvalidValue, "cudaGraphUpload", "graphExec is not live");
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_execs.erase(graphExec)) return fail(cudaErrorInvalidValue, "cudaGraphExecDestroy", "graphExec is not live");
    delete graphExec;
    return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph, cudaGraphExecUpdateResultInfo* info) {
    const char* api = "cudaGraphExecUpdate";
    if (cudaError_t e = runtime_prologue()) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_execs.count(hGraphExec) || !live_graph(hGraph))
        return fail(cudaErrorInvalidValue, api, "hGraphExec or hGraph is not live");
    // The same topology: the same number of nodes, of the same types, in the graph's dependency
    // order, with the same edges (by position). Then every step takes the new node's work.
    const std::vector<CUgraphNode_st*> order = topological(hGraph);
    auto result = [&](cudaGraphExecUpdateResult r, const CUgraphNode_st* node) {
        if (info) *info = {r, const_cast<CUgraphNode_st*>(node), nullptr};
        return r == cudaGraphExecUpdateSuccess
                   ? cudaSuccess
                   : fail(cudaErrorGraphExecUpdateFailure, api,
                          r == cudaGraphExecUpdateErrorTopologyChanged ? "the graph's topology differs from the executable graph's"
                                                                       : "a node's type differs from the executable graph's");
    };
    auto& steps = hGraphExec->steps;
    if (order.size() != steps.size()) return result(cudaGraphExecUpdateErrorTopologyChanged, nullptr);
    std::map<const CUgraphNode_st*, size_t> position, old_position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i, old_position[steps[i].origin] = i;
    for (size_t i = 0; i < order.size(); ++i) {
        if (order[i]->type != steps[i].type) return result(cudaGraphExecUpdateErrorNodeTypeChanged, order[i]);
        std::vector<size_t> a, b;
        for (const CUgraphNode_st* d : order[i]->deps) a.push_back(position[d]);
        for (const CUgraphNode_st* d : steps[i].origin->deps)
            if (old_position.count(d)) b.push_back(old_position[d]);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        if (a != b) return result(cudaGraphExecUpdateErrorTopologyChanged, order[i]);
    }
    std::vector<CUgraphExec_st::Step> fresh = graph_steps(hGraph);
    for (size_t i = 0; i < order.size(); ++i) steps[i].run = std::move(fresh[i].run);
    hGraphExec->handles = handles_of(hGraph);
    return result(cudaGraphExecUpdateSuccess, nullptr);
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* pNodeParams) {
    const char* api = "cudaGraphExecKernelNodeSetParams";
    if (!pNodeParams) return fail(cudaErrorInvalidValue, api, "pNodeParams is NULL");
    CUgraphNode_st probe;
    if (cudaError_t e = record_kernel(&probe, *pNodeParams, api)) return e;
    std::lock_guard<std::mutex> lk(g_mu);
    CUgraphExec_st::Step* s = g_execs.count(hGraphExec) ? exec_step(hGraphExec, node) : nullptr;
    if (!s || s->type != cudaGraphNodeTypeKernel)
        return fail(cudaErrorInvalidValue, api, "node is not a kernel node of the executable graph's graph");
    s->run = probe.run;
    return cudaSuccess;
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const cudaMemcpy3DParms* p) {
    const char* api = "cudaGraphExecMemcpyNodeSetParams";
    std::lock_guard<std::mutex> lk(g_mu);
    CUgraphExec_st::Step* s = g_execs.count(hGraphExec) ? exec_step(hGraphExec, node) : nullptr;
    if (!s || !p || s->type != cudaGraphNodeTypeMemcpy) return fail(cudaErrorInvalidValue, api, "not a memcpy node of it");
    s->run = memcpy_work(*p);
    return cudaSuccess;
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const cudaMemsetParams* p) {
    const char* api = "cudaGraphExecMemsetNodeSetParams";
    if (std::string why = check_memset(p); !why.empty()) return fail(cudaErrorInvalidValue, api, why);
    std::lock_guard<std::mutex> lk(g_mu);
    CUgraphExec_st::Step* s = g_execs.count(hGraphExec) ? exec_step(hGraphExec, node) : nullptr;
    if (!s || s->type != cudaGraphNodeTypeMemset) return fail(cudaErrorInvalidValue, api, "not a memset node of it");
    s->run = memset_work(*p);
    return cudaSuccess;
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const cudaHostNodeParams* p) {
    const char* api = "cudaGraphExecHostNodeSetParams";
    std::lock_guard<std::mutex> lk(g_mu);
    CUgraphExec_st::Step* s = g_execs.count(hGraphExec) ? exec_step(hGraphExec, node) : nullptr;
    if (!s || !p || !p->fn || s->type != cudaGraphNodeTypeHost) return fail(cudaErrorInvalidValue, api, "not a host node of it");
    const cudaHostNodeParams params = *p;
    s->run = [params](cudaStream_t) { params.fn(params.userData); };
    return cudaSuccess;
}

cudaError_t cudaDeviceGraphMemTrim(int device) {
    if (device != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceGraphMemTrim", "cusim has one device, 0");
    return cudaSuccess;
}

cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
    const char* api = "cudaDeviceGetGraphMemAttribute";
    if (device != 0) return fail(cudaErrorInvalidDevice, api, "cusim has one device, 0");
    if (!value) return fail(cudaErrorInvalidValue, api, "value is NULL");
    std::lock_guard<std::mutex> lk(g_mu);
    const bool high = attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh;
    const size_t now = graph_memory_now();
    *static_cast<unsigned long long*>(value) = high ? g_graph_memory_high : now;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr, void* value) {
    const char* api = "cudaDeviceSetGraphMemAttribute";
    if (device != 0) return fail(cudaErrorInvalidDevice, api, "cusim has one device, 0");
    if (!value || (attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh))
        return fail(cudaErrorInvalidValue, api, "only the high watermarks can be reset");
    std::lock_guard<std::mutex> lk(g_mu);
    g_graph_memory_high = 0;
    graph_memory_now();
    return cudaSuccess;
}

// ---- Memory pools -------------------------------------------------------------------------------

struct CUmemPoolHandle_st {
    cudaMemPoolProps props{};
    unsigned long long release_threshold = 0;
    int reuse[3] = {1, 1, 1};  // follow event dependencies, opportunistic, internal dependencies
};

namespace {
CUmemPoolHandle_st g_default_pool;
cudaMemPool_t g_current_pool = &g_default_pool;
std::set<cudaMemPool_t> g_pools = {&g_default_pool};
std::atomic<unsigned long long> g_pool_used{0}, g_pool_high{0};

cudaError_t pool_error(const char* api, const std::string& detail) { return fail(cudaErrorInvalidValue, api, detail); }
bool live_pool(cudaMemPool_t p) {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_pools.count(p) != 0;
}
}  // namespace

namespace cusim::detail {
void note_pool_allocation(size_t bytes) {
    const unsigned long long now = g_pool_used += bytes;
    unsigned long long high = g_pool_high.load();
    while (now > high && !g_pool_high.compare_exchange_weak(high, now)) {
    }
}
void note_pool_release(size_t bytes) { g_pool_used -= std::min<unsigned long long>(bytes, g_pool_used.load()); }
}  // namespace cusim::detail

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
    if (!memPool) return pool_error("cudaDeviceGetDefaultMemPool", "memPool is NULL");
    if (device != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceGetDefaultMemPool", "cusim has one device, 0");
    *memPool = &g_default_pool;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
    if (!memPool) return pool_error("cudaDeviceGetMemPool", "memPool is NULL");
    if (device != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceGetMemPool", "cusim has one device, 0");
    std::lock_guard<std::mutex> lk(g_mu);
    *memPool = g_current_pool;
    return cudaSuccess;
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
    if (device != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceSetMemPool", "cusim has one device, 0");
    if (!live_pool(memPool)) return pool_error("cudaDeviceSetMemPool", "memPool is not a live memory pool");
    std::lock_guard<std::mutex> lk(g_mu);
    g_current_pool = memPool;
    return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool, const cudaMemPoolProps* poolProps) {
    const char* api = "cudaMemPoolCreate";
    if (!memPool || !poolProps) return pool_error(api, "memPool or poolProps is NULL");
    if (poolProps->allocType != cudaMemAllocationTypePinned)
        return pool_error(api, "allocType must be cudaMemAllocationTypePinned");
    if (poolProps->location.type != cudaMemLocationTypeDevice || poolProps->location.id != 0)
        return pool_error(api, "location must be device 0 (cusim's one device)");
    auto* p = new CUmemPoolHandle_st;
    p->props = *poolProps;
    std::lock_guard<std::mutex> lk(g_mu);
    g_pools.insert(p);
    *memPool = p;
    return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
    std::lock_guard<std::mutex> lk(g_mu);
    if (memPool == &g_default_pool || !g_pools.erase(memPool))
        return pool_error("cudaMemPoolDestroy", "memPool is not a live pool that cudaMemPoolCreate made");
    if (g_current_pool == memPool) g_current_pool = &g_default_pool;
    delete memPool;
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
    const char* api = "cudaMemPoolSetAttribute";
    if (!live_pool(memPool) || !value) return pool_error(api, "memPool is not a live pool, or value is NULL");
    switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies:
        case cudaMemPoolReuseAllowOpportunistic:
        case cudaMemPoolReuseAllowInternalDependencies:
            memPool->reuse[attr - 1] = *static_cast<int*>(value);
            return cudaSuccess;
        case cudaMemPoolAttrReleaseThreshold:
            memPool->release_threshold = *static_cast<unsigned long long*>(value);
            return cudaSuccess;
        case cudaMemPoolAttrReservedMemHigh:
        case cudaMemPoolAttrUsedMemHigh:
            if (*static_cast<unsigned long long*>(value) != 0) return pool_error(api, "a high watermark can only be reset to 0");
            g_pool_high = g_pool_used.load();
            return cudaSuccess;
        default: return pool_error(api, "attribute " + std::to_string(int(attr)) + " cannot be set");
    }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
    const char* api = "cudaMemPoolGetAttribute";
    if (!live_pool(memPool) || !value) return pool_error(api, "memPool is not a live pool, or value is NULL");
    const bool is_default = memPool == &g_default_pool;  // the counters are the stream-ordered allocations'
    switch (attr) {
        case cudaMemPoolReuseFollowEventDependencies:
        case cudaMemPoolReuseAllowOpportunistic:
        case cudaMemPoolReuseAllowInternalDependencies:
            *static_cast<int*>(value) = memPool->reuse[attr - 1];
            return cudaSuccess;
        case cudaMemPoolAttrReleaseThreshold:
            *static_cast<unsigned long long*>(value) = memPool->release_threshold;
            return cudaSuccess;
        case cudaMemPoolAttrReservedMemCurrent:
        case cudaMemPoolAttrUsedMemCurrent:
            *static_cast<unsigned long long*>(value) = is_default ? g_pool_used.load() : 0;
            return cudaSuccess;
        case cudaMemPoolAttrReservedMemHigh:
        case cudaMemPoolAttrUsedMemHigh:
            *static_cast<unsigned long long*>(value) = is_default ? g_pool_high.load() : 0;
            return cudaSuccess;
    }
    return pool_error(api, "unknown attribute " + std::to_string(int(attr)));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t) {
    if (!live_pool(memPool)) return pool_error("cudaMemPoolTrimTo", "memPool is not a live pool");
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList, size_t count) {
    if (!live_pool(memPool) || (count && !descList)) return pool_error("cudaMemPoolSetAccess", "invalid pool or list");
    return cudaSuccess;
}

cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags* flags, cudaMemPool_t memPool, cudaMemLocation* location) {
    if (!flags || !location || !live_pool(memPool)) return pool_error("cudaMemPoolGetAccess", "invalid arguments");
    *flags = cudaMemAccessFlagsProtReadWrite;
    return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
    if (!live_pool(memPool)) return pool_error("cudaMallocFromPoolAsync", "memPool is not a live memory pool");
    return cudaMallocAsync(ptr, size, stream);
}

// ---- Unified memory hints -----------------------------------------------------------------------

namespace {
cudaError_t check_hint(const void* p, size_t count, const cudaMemLocation& where, const char* api) {
    if (cudaError_t e = runtime_prologue()) return e;
    if (!p || count == 0) return fail(cudaErrorInvalidValue, api, "devPtr is NULL or count is 0");
    const bool device = where.type == cudaMemLocationTypeDevice && where.id == 0;
    const bool host = where.type == cudaMemLocationTypeHost || where.type == cudaMemLocationTypeHostNuma ||
                      where.type == cudaMemLocationTypeHostNumaCurrent;
    if (!device && !host)
        return fail(cudaErrorInvalidDevice, api, "location is neither device 0 (cusim's one device) nor the host");
    return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemPrefetchAsync(const void* devPtr, size_t count, cudaMemLocation location, unsigned int,
                                 cudaStream_t stream) {
    const char* api = "cudaMemPrefetchAsync";
    if (cudaError_t e = check_hint(devPtr, count, location, api)) return e;
    if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle, api, "the stream is not a valid stream handle");
    return cudaSuccess;
}

cudaError_t cudaMemAdvise(const void* devPtr, size_t count, cudaMemoryAdvise advice, cudaMemLocation location) {
    const char* api = "cudaMemAdvise";
    if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
        return fail(cudaErrorInvalidValue, api, "unknown advice " + std::to_string(int(advice)));
    // Read-mostly advice needs no location.
    if (advice == cudaMemAdviseSetReadMostly || advice == cudaMemAdviseUnsetReadMostly) {
        if (cudaError_t e = runtime_prologue()) return e;
        return devPtr && count ? cudaSuccess : fail(cudaErrorInvalidValue, api, "devPtr is NULL or count is 0");
    }
    return check_hint(devPtr, count, location, api);
}
