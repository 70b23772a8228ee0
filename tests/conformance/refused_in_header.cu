// The refused header comes through the program's own header: the error names it there.
#include <cstdio>
#include "refused_in_header.cuh"

int main() {
    int *in, *out;
    cudaMalloc(&in, 128 * sizeof(int));
    cudaMalloc(&out, sizeof(int));
    block_sum<128><<<1, 128>>>(in, out);
    printf("unreachable\n");
    return 0;
}
