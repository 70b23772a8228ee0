// A project header that uses CUB.
#pragma once
#include <cub/cub.cuh>

template <int Threads>
__global__ void block_sum(const int* in, int* out) {
    using BlockReduce = cub::BlockReduce<int, Threads>;
    __shared__ typename BlockReduce::TempStorage storage;
    const int s = BlockReduce(storage).Sum(in[threadIdx.x]);
    if (threadIdx.x == 0) *out = s;
}
