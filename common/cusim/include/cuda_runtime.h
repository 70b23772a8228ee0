// cusim's cuda_runtime.h: lets unmodified CUDA C++ lab sources build with g++ and run on the CPU.
// Lab code includes this exactly as it would include CUDA's header; nothing backend-specific.
#pragma once
// The standard headers nvcc's own cuda_runtime.h brings into every .cu file, and no others: a
// program that uses printf without #include <cstdio>, or uint32_t without <cstdint>, fails to
// compile with nvcc, so it fails here too (tests/conformance/implicit_includes.cu).
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <cmath>
#include <cstdlib>

#include "cusim/vector_types.h"
#include "cusim/runtime_api.h"
#include "cusim/texture_api.h"
#include "cusim/graph_api.h"
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
#define __DRIVER_FUNCTIONS_H__
#define __TEXTURE_TYPES_H__
#define __SURFACE_TYPES_H__
#define __CHANNEL_DESCRIPTOR_H__
#define __VECTOR_TYPES_H__
#define __VECTOR_FUNCTIONS_H__
#define __DEVICE_LAUNCH_PARAMETERS_H__
#define __HOST_DEFINES_H__
#define __CUDA_DEVICE_RUNTIME_API_H__
