// A cooperative launch must fit on the device at once: more blocks than
// cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount is
// cudaErrorCooperativeLaunchTooLarge (returned, and kept for cudaGetLastError once: not sticky);
// exactly that many runs, and grid.sync() meets every block.
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void count_blocks(unsigned* arrived, unsigned* seen) {
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0) atomicAdd(arrived, 1u);
    grid.sync();
    if (grid.thread_rank() == 0) *seen = *arrived;  // every block arrived before anyone passed
}

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    const int threads = 128;
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, count_blocks, threads, 0);
    const int most = per_sm * prop.multiProcessorCount;
    unsigned *arrived, *seen;
    cudaMalloc(&arrived, sizeof(unsigned));
    cudaMalloc(&seen, sizeof(unsigned));
    void* args[] = {&arrived, &seen};

    cudaError_t err = cudaLaunchCooperativeKernel((void*)count_blocks, dim3(most + 1), dim3(threads), args, 0, 0);
    printf("one block too many: %s (%s)\n", cudaGetErrorName(err), cudaGetErrorString(err));
    printf("cudaGetLastError: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("then: %s\n", cudaGetErrorName(cudaGetLastError()));

    cudaMemset(arrived, 0, sizeof(unsigned));
    err = cudaLaunchCooperativeKernel((void*)count_blocks, dim3(most), dim3(threads), args, 0, 0);
    printf("as many as fit: %s\n", cudaGetErrorName(err));
    unsigned h = 0;
    cudaMemcpy(&h, seen, sizeof h, cudaMemcpyDeviceToHost);
    printf("blocks seen at grid.sync(): %s\n", h == unsigned(most) ? "all" : "not all");
    return h == unsigned(most) ? 0 : 1;
}
