/// @file
/// @brief All of wb, the host helpers shared by labs, checks and benchmarks.
#pragma once

#include "wb/bandwidth.h"
#include "wb/compare.h"
#include "wb/device_buffer.h"
#include "wb/error.h"
#include "wb/random.h"
#include "wb/timer.h"
