// CUDA's <surface_indirect_functions.h> is one of the headers cuda_runtime.h brings in: cusim provides it there
// (cusim/texture_api.h: CUDA arrays, texture and surface objects).
#pragma once
#include "cuda_runtime.h"
