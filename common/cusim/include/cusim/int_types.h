// The fixed-width integer types cusim's own headers use, in namespace cusim, from the compiler's
// predefined macros: <cstdint> would also declare ::uint32_t and the rest for the program, which
// nvcc's implicit <cuda_runtime.h> does not (a program needs its own #include <cstdint>; the
// conformance test implicit_includes keeps the two in step).
#pragma once

namespace cusim {
using int8_t = __INT8_TYPE__;
using int16_t = __INT16_TYPE__;
using int32_t = __INT32_TYPE__;
using int64_t = __INT64_TYPE__;
using uint8_t = __UINT8_TYPE__;
using uint16_t = __UINT16_TYPE__;
using uint32_t = __UINT32_TYPE__;
using uint64_t = __UINT64_TYPE__;
using uintptr_t = __UINTPTR_TYPE__;
}  // namespace cusim
