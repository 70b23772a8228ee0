// CUDA's <cuda_stdint.h>: the fixed-width integer types, which every supported host compiler has.
#pragma once
#include <stdint.h>
