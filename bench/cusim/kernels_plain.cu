// Benchmark kernels without instrumentation.
#define BENCH_NS plain
#include "kernels.cuh"
