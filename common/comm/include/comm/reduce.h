// The local reduction helper: inout[i] = op(inout[i], in[i]) for i < count.
//
// On host memory it is a plain loop the compiler vectorizes; on device memory (builds with
// CUDA) it is a grid-stride kernel. Both apply the operator to each element exactly once in
// the same order (inout first), so results are bit-identical across backends.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/memory.h"
#include "comm/types.h"

namespace comm {

void reduce_local(void* inout, const void* in, std::size_t count, DataType type, RedOp op,
                  MemorySpace space = MemorySpace::host);

/// The operator on one pair of values, shared by the host loop, references and checks.
template <class T> inline T apply(RedOp op, T a, T b) {
  switch (op) {
    case RedOp::sum: return a + b;
    case RedOp::prod: return a * b;
    case RedOp::min: return b < a ? b : a;
    case RedOp::max: return a < b ? b : a;
  }
  return a;
}

/// int32 sums and products wrap around (two's complement) as MPI and NCCL do in practice,
/// instead of being undefined behaviour in C++.
template <> inline std::int32_t apply<std::int32_t>(RedOp op, std::int32_t a, std::int32_t b) {
  switch (op) {
    case RedOp::sum: return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
    case RedOp::prod: return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
    case RedOp::min: return b < a ? b : a;
    case RedOp::max: return a < b ? b : a;
  }
  return a;
}

}  // namespace comm
