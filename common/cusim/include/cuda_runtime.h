// cusim's cuda_runtime.h: lets unmodified CUDA C++ lab sources build with g++ and run on the CPU.
// Lab code includes this exactly as it would include CUDA's header; nothing backend-specific.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cusim/vector_types.h"
#include "cusim/runtime_api.h"
#include "cusim/device.h"
#include "cusim/device_functions.h"
#include "cusim/atomics.h"
#include "cusim/assert.h"
