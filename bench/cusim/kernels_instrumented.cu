// Benchmark kernels built with cusim analysis instrumentation (see CMakeLists.txt).
#define BENCH_NS instrumented
#include "kernels.cuh"
