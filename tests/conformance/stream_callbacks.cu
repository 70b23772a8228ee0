// Host work in stream order, as NVIDIA's simpleCallback sample uses it: cudaLaunchHostFunc and
// cudaStreamAddCallback after kernels and copies in streams created with priorities; pinned
// buffers from cudaHostAlloc; cudaStreamQuery after cudaStreamSynchronize. Each callback records
// into its own stream's log (callbacks of different streams may run in any order on a GPU), and
// main prints the logs after synchronizing.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}

struct StreamLog {
    int id;
    const int* host;  // pinned buffer the stream copies its results into
    int entries[8];
    int count;
};

// What the host function sees: the copy before it in the stream has completed.
void CUDART_CB recordSum(void* userData) {
    StreamLog* log = static_cast<StreamLog*>(userData);
    int s = 0;
    for (int i = 0; i < 256; ++i) s += log->host[i];
    log->entries[log->count++] = s;
}

void CUDART_CB streamCallback(cudaStream_t, cudaError_t status, void* userData) {
    StreamLog* log = static_cast<StreamLog*>(userData);
    log->entries[log->count++] = status == cudaSuccess ? -1 : -2;
}

__global__ void incKernel(int* data, int inc, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += inc;
}

int main() {
    int leastPriority = 0, greatestPriority = 0;
    checkCudaErrors(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
    printf("stream priorities: greatest <= least: %s\n", greatestPriority <= leastPriority ? "yes" : "no");

    const int n = 256, nStreams = 2;
    cudaStream_t streams[nStreams];
    checkCudaErrors(cudaStreamCreateWithPriority(&streams[0], cudaStreamNonBlocking, greatestPriority));
    checkCudaErrors(cudaStreamCreateWithPriority(&streams[1], cudaStreamNonBlocking, leastPriority));
    int prio0 = 1, prio1 = 1;
    unsigned int flags0 = 0;
    checkCudaErrors(cudaStreamGetPriority(streams[0], &prio0));
    checkCudaErrors(cudaStreamGetPriority(streams[1], &prio1));
    checkCudaErrors(cudaStreamGetFlags(streams[0], &flags0));
    printf("stream 0 has the greatest priority: %s, stream 1 the least: %s, stream 0 non-blocking: %s\n",
           prio0 == greatestPriority ? "yes" : "no", prio1 == leastPriority ? "yes" : "no",
           flags0 == cudaStreamNonBlocking ? "yes" : "no");

    int* h_buf[nStreams];
    int* d_buf[nStreams];
    StreamLog logs[nStreams];
    for (int s = 0; s < nStreams; ++s) {
        checkCudaErrors(cudaHostAlloc((void**)&h_buf[s], n * sizeof(int), cudaHostAllocDefault));
        checkCudaErrors(cudaMalloc((void**)&d_buf[s], n * sizeof(int)));
        for (int i = 0; i < n; ++i) h_buf[s][i] = i % 4;
        logs[s].id = s;
        logs[s].host = h_buf[s];
        logs[s].count = 0;
    }
    // Per stream: upload, three rounds of (kernel, download, host function), then a callback.
    for (int s = 0; s < nStreams; ++s) {
        checkCudaErrors(cudaMemcpyAsync(d_buf[s], h_buf[s], n * sizeof(int), cudaMemcpyHostToDevice, streams[s]));
        for (int round = 1; round <= 3; ++round) {
            incKernel<<<2, 128, 0, streams[s]>>>(d_buf[s], round * (s + 1), n);
            checkCudaErrors(cudaGetLastError());
            checkCudaErrors(
                cudaMemcpyAsync(h_buf[s], d_buf[s], n * sizeof(int), cudaMemcpyDeviceToHost, streams[s]));
            checkCudaErrors(cudaLaunchHostFunc(streams[s], recordSum, &logs[s]));
        }
        checkCudaErrors(cudaStreamAddCallback(streams[s], streamCallback, &logs[s], 0));
    }
    for (int s = 0; s < nStreams; ++s) checkCudaErrors(cudaStreamSynchronize(streams[s]));
    bool ok = true;
    for (int s = 0; s < nStreams; ++s) {
        printf("stream %d log:", logs[s].id);
        for (int k = 0; k < logs[s].count; ++k) printf(" %d", logs[s].entries[k]);
        printf("; query after sync: %s\n", cudaGetErrorName(cudaStreamQuery(streams[s])));
        // Sum of i % 4 over 256 elements is 384; each round adds round * (s + 1) to 256 elements.
        const int expect[4] = {384 + 256 * 1 * (s + 1), 384 + 256 * 3 * (s + 1), 384 + 256 * 6 * (s + 1), -1};
        ok = ok && logs[s].count == 4;
        for (int k = 0; k < 4 && k < logs[s].count; ++k) ok = ok && logs[s].entries[k] == expect[k];
    }
    for (int s = 0; s < nStreams; ++s) {
        checkCudaErrors(cudaStreamDestroy(streams[s]));
        checkCudaErrors(cudaFreeHost(h_buf[s]));
        checkCudaErrors(cudaFree(d_buf[s]));
    }
    printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
