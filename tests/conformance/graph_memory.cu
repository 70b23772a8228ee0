// Stream-ordered allocation and graph memory as NVIDIA's streamOrderedAllocation and
// graphMemoryNodes use them: the default memory pool and its release threshold, cudaMallocAsync
// and cudaFreeAsync on a stream and inside a stream capture (allocation and free nodes), an
// explicit allocation node whose memory outlives the launch until cudaFree, and a graph that
// allocates at the same address at every launch.
#include <cstdio>

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            printf("%s failed at line %d: %s\n", #call, __LINE__, cudaGetErrorName(e_)); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

const int N = 256;

__global__ void iota(int* out, int base, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = base + i;
}

__global__ void twice(const int* in, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2 * in[i];
}

int main() {
    int pools = 0;
    CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
    printf("memory pools supported: %d\n", pools);
    cudaMemPool_t pool;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    unsigned long long threshold = 1 << 20, read_back = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read_back));
    printf("release threshold: %llu\n", read_back);

    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int* host;
    CHECK(cudaMallocHost(&host, N * sizeof(int)));

    // On a stream.
    int* d = nullptr;
    CHECK(cudaMallocAsync(&d, N * sizeof(int), stream));
    iota<<<1, N, 0, stream>>>(d, 100, N);
    CHECK(cudaMemcpyAsync(host, d, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(d, stream));
    CHECK(cudaStreamSynchronize(stream));
    printf("stream-ordered: %d %d\n", host[0], host[N - 1]);

    // Captured: the allocation and the free become nodes; every launch runs them.
    cudaGraph_t graph;
    int *a = nullptr, *b = nullptr;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&a, N * sizeof(int), stream));
    CHECK(cudaMallocAsync(&b, N * sizeof(int), stream));
    iota<<<1, N, 0, stream>>>(a, 7, N);
    twice<<<1, N, 0, stream>>>(a, b, N);
    CHECK(cudaMemcpyAsync(host, b, N * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(a, stream));
    CHECK(cudaFreeAsync(b, stream));
    CHECK(cudaStreamEndCapture(stream, &graph));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    printf("captured graph: %zu nodes\n", nodes);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 2; ++i) {
        host[0] = host[N - 1] = -1;
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        printf("launch %d: %d %d\n", i, host[0], host[N - 1]);
    }

    // An allocation node without a free node: the memory stays after the launch, until cudaFree;
    // the next launch allocates it again at the same address.
    cudaGraph_t g2;
    CHECK(cudaGraphCreate(&g2, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N * sizeof(int);
    cudaGraphNode_t alloc_node, kernel_node;
    CHECK(cudaGraphAddMemAllocNode(&alloc_node, g2, nullptr, 0, &ap));
    int* kept = static_cast<int*>(ap.dptr);
    int base = 1000, n = N;
    void* args[] = {&kept, &base, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void*)iota;
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(N);
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&kernel_node, g2, &alloc_node, 1, &kp));
    cudaGraphExec_t exec2;
    CHECK(cudaGraphInstantiate(&exec2, g2, 0));
    for (int i = 0; i < 2; ++i) {
        CHECK(cudaGraphLaunch(exec2, stream));
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaMemcpy(host, kept, N * sizeof(int), cudaMemcpyDeviceToHost));
        printf("kept after launch %d: %d %d\n", i, host[0], host[N - 1]);
        CHECK(cudaFree(kept));
    }

    CHECK(cudaGraphExecDestroy(exec2));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g2));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFreeHost(host));
    printf("done\n");
    return 0;
}
