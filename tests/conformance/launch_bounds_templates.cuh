// Kernels of launch_bounds_templates.cu that live in a header, as library code often does.
#pragma once

__global__ void __launch_bounds__(128) header_kernel(int* out) { out[threadIdx.x] = 1; }

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) header_template(int* out) { out[threadIdx.x] = BLOCK; }
