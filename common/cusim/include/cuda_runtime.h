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
#include "cusim/launch_api.h"

// The include guards of CUDA's own headers that cuda_runtime.h brings in: code (NVIDIA's samples'
// helper_cuda.h among it) tests them to see whether the runtime API is available.
#define __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_API_H__
#define __DRIVER_TYPES_H__
#define __VECTOR_TYPES_H__
#define __VECTOR_FUNCTIONS_H__
#define __DEVICE_LAUNCH_PARAMETERS_H__
#define __HOST_DEFINES_H__
#define __CUDA_DEVICE_RUNTIME_API_H__
