// CUDA's <vector_types.h>: forwards to cusim's definitions.
#pragma once
#include "cusim/vector_types.h"
