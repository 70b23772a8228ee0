// Conditional graph nodes as NVIDIA's graphConditionalNodes uses them, each result checked against
// the count its own arithmetic predicts:
// - IF with an ELSE body, its value set by a kernel upstream (the parity of a flag): launched with
//   flags 0..3, the bodies add 100, 10, 100, 10 to an accumulator (220 in all);
// - WHILE with cudaGraphCondAssignDefault and default 1 (a do-while): the body counts a counter
//   down and clears the value at 0, so it runs max(counter, 1) times at each launch (5, then 1);
// - WHILE built by stream capture (cudaStreamGetCaptureInfo, cudaGraphAddNode into the capture,
//   cudaStreamUpdateCaptureDependencies, the body captured with cudaStreamBeginCaptureToGraph): a
//   kernel before it sets the value to counter > 0, so the body runs counter times (0, then 4), and
//   the kernel captured after the node runs once per launch;
// - SWITCH of size 3: selector s runs body s, which adds 10^s (1, 10, 100), and no body for s >= 3:
//   selectors 0..4 add 111;
// - an IF whose body holds a WHILE (a conditional inside a conditional): 3 iterations when the
//   outer value is nonzero, none when it is zero.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

struct Counters {
    int flag;        // input of the IF and SWITCH graphs
    int counter;     // counted down by WHILE bodies
    int iterations;  // WHILE body runs
    int acc;         // what the IF and SWITCH bodies add
    int after;       // runs of the kernel after the captured WHILE node
};

__global__ void set_to_parity(const Counters* c, cudaGraphConditionalHandle h) { cudaGraphSetConditional(h, c->flag & 1); }
__global__ void set_to_flag(const Counters* c, cudaGraphConditionalHandle h) { cudaGraphSetConditional(h, c->flag); }
__global__ void set_to_positive(const Counters* c, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, c->counter > 0 ? 1 : 0);
}
__global__ void add(Counters* c, int v) { c->acc += v; }
__global__ void count_down(Counters* c, cudaGraphConditionalHandle h) {
    if (c->counter > 0) --c->counter;
    ++c->iterations;
    cudaGraphSetConditional(h, c->counter > 0 ? 1 : 0);
}
__global__ void mark_after(Counters* c) { ++c->after; }

// A kernel node of `graph` for kernel `func` with the given argument pointers, via cudaGraphAddNode.
cudaError_t add_kernel(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t ndeps, void* func,
                       void** args) {
    cudaGraphNodeParams params = {cudaGraphNodeTypeKernel};
    params.kernel.func = func;
    params.kernel.gridDim = dim3(1);
    params.kernel.blockDim = dim3(1);
    params.kernel.kernelParams = args;
    return cudaGraphAddNode(node, graph, deps, nullptr, ndeps, &params);
}

// A conditional node of `graph` after `deps`; its body graphs go to bodies[0..size).
cudaError_t add_conditional(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t ndeps,
                            cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type, unsigned size,
                            cudaGraph_t* bodies) {
    cudaGraphNodeParams params = {cudaGraphNodeTypeConditional};
    params.conditional.handle = h;
    params.conditional.type = type;
    params.conditional.size = size;
    const cudaError_t e = cudaGraphAddNode(node, graph, deps, nullptr, ndeps, &params);
    if (e == cudaSuccess)
        for (unsigned i = 0; i < size; ++i) bodies[i] = params.conditional.phGraph_out[i];
    return e;
}

Counters* d;  // device memory the kernels share

int read(Counters* c) {
    CHECK(cudaMemcpy(c, d, sizeof *c, cudaMemcpyDeviceToHost));
    return 0;
}

int launch(cudaGraphExec_t exec, cudaStream_t stream, int flag, int counter) {
    Counters c = {flag, counter, 0, 0, 0};
    Counters now;
    if (read(&now)) return 1;
    c.acc = now.acc, c.after = now.after;  // accumulated across launches
    CHECK(cudaMemcpy(d, &c, sizeof c, cudaMemcpyHostToDevice));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    return 0;
}

int if_else(cudaStream_t stream) {
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, graph));
    void* set_args[] = {&d, &h};
    cudaGraphNode_t setter, cond, node;
    CHECK(add_kernel(&setter, graph, nullptr, 0, (void*)set_to_parity, set_args));
    cudaGraph_t bodies[2];
    CHECK(add_conditional(&cond, graph, &setter, 1, h, cudaGraphCondTypeIf, 2, bodies));
    int ten = 10, hundred = 100;
    void* then_args[] = {&d, &ten};
    void* else_args[] = {&d, &hundred};
    CHECK(add_kernel(&node, bodies[0], nullptr, 0, (void*)add, then_args));
    CHECK(add_kernel(&node, bodies[1], nullptr, 0, (void*)add, else_args));
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(cond, &type));
    printf("if/else: node type %d (cudaGraphNodeTypeConditional %d)\n", int(type), int(cudaGraphNodeTypeConditional));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    Counters c;
    for (int flag = 0; flag < 4; ++flag) {
        if (launch(exec, stream, flag, 0) || read(&c)) return 1;
        printf("if/else: flag %d, accumulator %d\n", flag, c.acc);
    }
    printf("if/else: accumulator %d (100 + 10 + 100 + 10 = 220)\n", c.acc);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}

int do_while(cudaStream_t stream) {
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, graph, 1, cudaGraphCondAssignDefault));
    cudaGraphNode_t cond, node;
    cudaGraph_t body;
    CHECK(add_conditional(&cond, graph, nullptr, 0, h, cudaGraphCondTypeWhile, 1, &body));
    void* args[] = {&d, &h};
    CHECK(add_kernel(&node, body, nullptr, 0, (void*)count_down, args));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const int counters[] = {5, 0};
    for (int counter : counters) {
        Counters c;
        if (launch(exec, stream, 0, counter) || read(&c)) return 1;
        printf("do-while: counter %d ran the body %d times (max(counter, 1) = %d), counter now %d\n", counter,
               c.iterations, counter > 1 ? counter : 1, c.counter);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}

int captured_while(cudaStream_t stream) {
    cudaStream_t capture;
    CHECK(cudaStreamCreate(&capture));
    CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    cudaGraph_t graph;
    const cudaGraphNode_t* deps;
    size_t ndeps;
    CHECK(cudaStreamGetCaptureInfo(capture, &status, nullptr, &graph, &deps, nullptr, &ndeps));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, graph));
    set_to_positive<<<1, 1, 0, capture>>>(d, h);
    CHECK(cudaStreamGetCaptureInfo(capture, &status, nullptr, &graph, &deps, nullptr, &ndeps));
    cudaGraphNode_t cond;
    cudaGraph_t body;
    CHECK(add_conditional(&cond, graph, deps, ndeps, h, cudaGraphCondTypeWhile, 1, &body));
    CHECK(cudaStreamUpdateCaptureDependencies(capture, &cond, nullptr, 1, cudaStreamSetCaptureDependencies));
    mark_after<<<1, 1, 0, capture>>>(d);
    CHECK(cudaStreamEndCapture(capture, &graph));

    CHECK(cudaStreamBeginCaptureToGraph(capture, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    count_down<<<1, 1, 0, capture>>>(d, h);
    CHECK(cudaStreamEndCapture(capture, nullptr));
    CHECK(cudaStreamDestroy(capture));

    size_t nodes = 0, body_nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    CHECK(cudaGraphGetNodes(body, nullptr, &body_nodes));
    printf("captured while: %zu nodes, %zu in the body\n", nodes, body_nodes);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const int counters[] = {0, 4};
    for (int counter : counters) {
        Counters c;
        if (launch(exec, stream, 0, counter) || read(&c)) return 1;
        printf("captured while: counter %d ran the body %d times, the kernel after it %d times in all\n", counter,
               c.iterations, c.after);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}

int switch_graph(cudaStream_t stream) {
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, graph));
    void* set_args[] = {&d, &h};
    cudaGraphNode_t setter, cond, node;
    CHECK(add_kernel(&setter, graph, nullptr, 0, (void*)set_to_flag, set_args));
    cudaGraph_t bodies[3];
    CHECK(add_conditional(&cond, graph, &setter, 1, h, cudaGraphCondTypeSwitch, 3, bodies));
    int values[3] = {1, 10, 100};
    void* args[3][2] = {{&d, &values[0]}, {&d, &values[1]}, {&d, &values[2]}};
    for (int i = 0; i < 3; ++i) CHECK(add_kernel(&node, bodies[i], nullptr, 0, (void*)add, args[i]));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    Counters c;
    int before = 0;
    if (read(&c)) return 1;
    before = c.acc;
    for (int s = 0; s < 5; ++s) {
        if (launch(exec, stream, s, 0) || read(&c)) return 1;
        printf("switch: selector %d added %d\n", s, c.acc - before);
        before = c.acc;
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}

int nested(cudaStream_t stream) {
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphConditionalHandle outer, inner;
    CHECK(cudaGraphConditionalHandleCreate(&outer, graph));
    CHECK(cudaGraphConditionalHandleCreate(&inner, graph, 1, cudaGraphCondAssignDefault));
    void* set_args[] = {&d, &outer};
    cudaGraphNode_t setter, cond, loop, node;
    CHECK(add_kernel(&setter, graph, nullptr, 0, (void*)set_to_flag, set_args));
    cudaGraph_t if_body, while_body;
    CHECK(add_conditional(&cond, graph, &setter, 1, outer, cudaGraphCondTypeIf, 1, &if_body));
    CHECK(add_conditional(&loop, if_body, nullptr, 0, inner, cudaGraphCondTypeWhile, 1, &while_body));
    void* args[] = {&d, &inner};
    CHECK(add_kernel(&node, while_body, nullptr, 0, (void*)count_down, args));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const int flags[] = {1, 0};
    for (int flag : flags) {
        Counters c;
        if (launch(exec, stream, flag, 3) || read(&c)) return 1;
        printf("nested: outer value %d, inner loop ran %d times\n", flag, c.iterations);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return 0;
}

int main() {
    CHECK(cudaMalloc(&d, sizeof(Counters)));
    CHECK(cudaMemset(d, 0, sizeof(Counters)));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    if (if_else(stream) || do_while(stream) || captured_while(stream) || switch_graph(stream) || nested(stream)) return 1;
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(d));
    return 0;
}
