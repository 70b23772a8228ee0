// CUDA's <device_functions.h> is one of the headers cuda_runtime.h brings in: cusim provides it all there.
#pragma once
#include "cuda_runtime.h"
