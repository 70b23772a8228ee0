// Shared by cusim's driver API translation units (driver.cpp, virtual_memory.cpp).
#pragma once
#include <string>

#include "cuda.h"

namespace cusim::detail {

/// Prints "cusim: api: detail -> NAME (text)" to stderr unless CUSIM_QUIET is set, and returns
/// @p err. The driver API has no last error: nothing else is recorded.
CUresult driver_error(CUresult err, const char* api, const std::string& detail);
/// The context's sticky error (a device fault), which every driver call returns first, else CUDA_SUCCESS.
CUresult driver_prologue();

}  // namespace cusim::detail
