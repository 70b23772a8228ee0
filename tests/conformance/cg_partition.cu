// cg::binary_partition and cg::labeled_partition of a warp tile (as NVIDIA's binaryPartitionCG
// sample uses them): each lane joins the lanes of its tile with the same predicate or label, the
// group reduces its values, and its first thread adds the group's count and sum to the totals.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void count_and_sum(const int* in, int n, int* odd, int* by_label) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int value = i < n ? in[i] : 0;
    // Every lane of the tile takes part, those past n included.
    cg::coalesced_group parity = cg::binary_partition(tile, i < n && (value & 1));
    const int parity_sum = cg::reduce(parity, value, cg::plus<int>());
    if (i < n && (value & 1) && parity.thread_rank() == 0) {
        atomicAdd(&odd[0], static_cast<int>(parity.size()));
        atomicAdd(&odd[1], parity_sum);
    }
    const int label = i < n ? value % 3 : 3;  // 3: the lanes past n
    cg::coalesced_group same = cg::labeled_partition(tile, label);
    const int label_sum = cg::reduce(same, value, cg::plus<int>());
    if (label < 3 && same.thread_rank() == 0) {
        atomicAdd(&by_label[2 * label], static_cast<int>(same.size()));
        atomicAdd(&by_label[2 * label + 1], label_sum);
    }
}

int main() {
    const int n = 1000;
    int h[n];
    for (int i = 0; i < n; ++i) h[i] = (i * 7) % 13;
    int *d, *odd, *by_label;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&odd, 2 * sizeof(int));
    cudaMalloc(&by_label, 6 * sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(odd, 0, 2 * sizeof(int));
    cudaMemset(by_label, 0, 6 * sizeof(int));
    count_and_sum<<<(n + 255) / 256, 256>>>(d, n, odd, by_label);
    int ho[2], hl[6];
    cudaMemcpy(ho, odd, sizeof ho, cudaMemcpyDeviceToHost);
    cudaMemcpy(hl, by_label, sizeof hl, cudaMemcpyDeviceToHost);
    int eo[2] = {0, 0}, el[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; ++i) {
        if (h[i] & 1) ++eo[0], eo[1] += h[i];
        ++el[2 * (h[i] % 3)], el[2 * (h[i] % 3) + 1] += h[i];
    }
    printf("odd: %d values, sum %d\n", ho[0], ho[1]);
    for (int l = 0; l < 3; ++l) printf("label %d: %d values, sum %d\n", l, hl[2 * l], hl[2 * l + 1]);
    bool ok = ho[0] == eo[0] && ho[1] == eo[1];
    for (int k = 0; k < 6; ++k) ok = ok && hl[k] == el[k];
    return ok ? 0 : 1;
}
