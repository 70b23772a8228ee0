// CUDA graphs as NVIDIA's simpleCudaGraphs and jacobiCudaGraphs use them: a graph built node by
// node (memset, kernel through cudaKernelNodeParams, 1D copy, host node, dependencies), a graph
// captured from two streams that fork and join through events, instantiation and repeated
// launches, kernel arguments changed in the executable graph, cudaGraphExecUpdate, clones, and the
// graph's shape as cudaGraphGetNodes, cudaGraphGetRootNodes and cudaGraphGetEdges report it.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

const int N = 64;

__global__ void add(int* data, int value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += value;
}

__global__ void scale(int* data, int factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= factor;
}

__global__ void sum_into(const int* a, const int* b, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

int launches = 0;
void count_launch(void*) { ++launches; }

// Captures into *graph, from two streams that fork and join through events: a = 1 (s1); fork;
// b = a + 10 (s2) and a *= factor (s1); join; out = a + b, copied to host. With `report`, prints the
// capture status of s1 while it is captured.
int capture_fork_join(cudaStream_t s1, cudaStream_t s2, cudaEvent_t fork, cudaEvent_t join, int* a, int* b, int* out,
                      int* host, int factor, cudaGraph_t* graph, bool report) {
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    if (report) {
        cudaStreamCaptureStatus status;
        CHECK(cudaStreamIsCapturing(s1, &status));
        printf("capturing: %d\n", int(status));
    }
    CHECK(cudaMemsetAsync(a, 0, N * sizeof(int), s1));
    add<<<2, 32, 0, s1>>>(a, 1, N);
    CHECK(cudaEventRecord(fork, s1));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    CHECK(cudaMemcpyAsync(b, a, N * sizeof(int), cudaMemcpyDeviceToDevice, s2));
    add<<<2, 32, 0, s2>>>(b, 10, N);
    scale<<<2, 32, 0, s1>>>(a, factor, N);
    CHECK(cudaEventRecord(join, s2));
    CHECK(cudaStreamWaitEvent(s1, join, 0));
    sum_into<<<2, 32, 0, s1>>>(a, b, out, N);
    CHECK(cudaMemcpyAsync(host, out, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamEndCapture(s1, graph));
    return 0;
}

int shape(const char* label, cudaGraph_t g) {
    size_t nodes = 0, roots = 0, edges = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    CHECK(cudaGraphGetRootNodes(g, nullptr, &roots));
    CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
    printf("%s: %zu nodes, %zu roots, %zu edges\n", label, nodes, roots, edges);
    return 0;
}

int main() {
    int* d;
    int* host;
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    CHECK(cudaMallocHost(&host, N * sizeof(int)));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));

    // Built node by node: d = 0; d += 5; copy to host; count the launch.
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaMemsetParams ms = {};
    ms.dst = d;
    ms.value = 0;
    ms.elementSize = sizeof(int);
    ms.width = N;
    ms.height = 1;
    cudaGraphNode_t memset_node, kernel_node, copy_node, host_node;
    CHECK(cudaGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &ms));
    int value = 5, n = N;
    void* args[] = {&d, &value, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void*)add;
    kp.gridDim = dim3(2);
    kp.blockDim = dim3(32);
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&kernel_node, graph, &memset_node, 1, &kp));
    value = 1000;  // the node copied the arguments when it was made
    CHECK(cudaGraphAddMemcpyNode1D(&copy_node, graph, &kernel_node, 1, host, d, N * sizeof(int),
                                   cudaMemcpyDeviceToHost));
    cudaHostNodeParams hp = {count_launch, nullptr};
    CHECK(cudaGraphAddHostNode(&host_node, graph, &copy_node, 1, &hp));
    if (shape("built", graph)) return 1;
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(kernel_node, &type));
    printf("kernel node type %d\n", int(type));

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("after 3 launches: host[0] = %d, host[63] = %d, host node ran %d times\n", host[0], host[N - 1], launches);

    // New arguments for the kernel node of the executable graph only.
    value = 7;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, kernel_node, &kp));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("after new arguments: host[0] = %d\n", host[0]);

    // A clone runs the graph's own arguments (5).
    cudaGraph_t clone;
    CHECK(cudaGraphClone(&clone, graph));
    cudaGraphExec_t clone_exec;
    CHECK(cudaGraphInstantiate(&clone_exec, clone, 0));
    CHECK(cudaGraphLaunch(clone_exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("clone: host[0] = %d, host node ran %d times\n", host[0], launches);

    // Captured from two streams (a *= 3).
    int *a, *b, *out;
    CHECK(cudaMalloc(&a, N * sizeof(int)));
    CHECK(cudaMalloc(&b, N * sizeof(int)));
    CHECK(cudaMalloc(&out, N * sizeof(int)));
    cudaStream_t s2;
    CHECK(cudaStreamCreate(&s2));
    cudaEvent_t fork, join;
    CHECK(cudaEventCreate(&fork));
    CHECK(cudaEventCreate(&join));
    cudaGraph_t captured;
    if (capture_fork_join(stream, s2, fork, join, a, b, out, host, 3, &captured, true)) return 1;
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(stream, &status));
    printf("after capture: %d\n", int(status));
    host[0] = -1;  // nothing ran during the capture: the graph's launch writes it
    if (shape("captured", captured)) return 1;
    cudaGraphExec_t captured_exec;
    CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));
    CHECK(cudaGraphLaunch(captured_exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("captured graph: host[0] = %d, host[63] = %d\n", host[0], host[N - 1]);

    // The same capture into a second graph with a *= 100: cudaGraphExecUpdate takes it.
    cudaGraph_t again;
    if (capture_fork_join(stream, s2, fork, join, a, b, out, host, 100, &again, false)) return 1;
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(captured_exec, again, &info));
    printf("update result %d\n", int(info.result));
    CHECK(cudaGraphLaunch(captured_exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("updated graph: host[0] = %d\n", host[0]);

    CHECK(cudaGraphExecDestroy(captured_exec));
    CHECK(cudaGraphExecDestroy(clone_exec));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(again));
    CHECK(cudaGraphDestroy(captured));
    CHECK(cudaGraphDestroy(clone));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(out));
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(host));
    printf("done\n");
    return 0;
}
