// cusim's cuda.h: the runtime API is all cusim implements; the driver API is not provided.
#pragma once
#include "cuda_runtime.h"
#define CUDA_VERSION 13000
