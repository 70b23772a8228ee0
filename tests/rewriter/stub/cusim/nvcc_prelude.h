// Stand-in for cusim/nvcc_prelude.h, which the rewriter includes in front of every .cu file.
#pragma once
#include "cuda_runtime.h"
