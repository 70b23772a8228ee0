// NVTX (<nvtx3/nvToolsExt.h>): annotations for Nsight Systems. cusim has no timeline to annotate,
// so the common ASCII calls are no-ops with NVTX's return values (the nesting level for push/pop).
// The event-attribute (Ex), wide-string and domain APIs are not provided.
#pragma once
#include <stdint.h>

typedef uint64_t nvtxRangeId_t;

namespace cusim::detail {
inline thread_local int nvtx_depth = 0;
}
inline int nvtxRangePushA(const char*) { return cusim::detail::nvtx_depth++; }
inline int nvtxRangePop() { return cusim::detail::nvtx_depth > 0 ? --cusim::detail::nvtx_depth : -2; }
inline void nvtxMarkA(const char*) {}
inline nvtxRangeId_t nvtxRangeStartA(const char*) { return 0; }
inline void nvtxRangeEnd(nvtxRangeId_t) {}
inline void nvtxNameOsThreadA(uint32_t, const char*) {}
#define nvtxRangePush nvtxRangePushA
#define nvtxMark nvtxMarkA
#define nvtxRangeStart nvtxRangeStartA
#define nvtxNameOsThread nvtxNameOsThreadA
