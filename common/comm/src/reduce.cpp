// Host reduction loop. Compiled with -O3 whatever the build type (see CMakeLists.txt) so the
// loop is vectorized: it sits on the critical path of every ring and tree step.
#include "comm/reduce.h"

#include <cstdint>

#include "comm/error.h"
#ifdef COMM_WITH_CUDA
#include "device_api.h"
#endif

namespace comm {
namespace {

template <class T, class F>
void loop(T* __restrict__ inout, const T* __restrict__ in, std::size_t count, F f) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = f(inout[i], in[i]);
}

template <class T>
void reduce_host(T* inout, const T* in, std::size_t count, RedOp op) {
  switch (op) {
    case RedOp::sum: return loop(inout, in, count, [](T a, T b) { return apply(RedOp::sum, a, b); });
    case RedOp::prod: return loop(inout, in, count, [](T a, T b) { return apply(RedOp::prod, a, b); });
    case RedOp::min: return loop(inout, in, count, [](T a, T b) { return b < a ? b : a; });
    case RedOp::max: return loop(inout, in, count, [](T a, T b) { return a < b ? b : a; });
  }
}

}  // namespace

void reduce_local(void* inout, const void* in, std::size_t count, DataType type, RedOp op, MemorySpace space) {
  if (count == 0) return;
  COMM_REQUIRE(inout && in, "reduce_local: null buffer with count > 0");
  if (space == MemorySpace::device) {
#ifdef COMM_WITH_CUDA
    return detail::device_reduce(inout, in, count, type, op);
#else
    COMM_THROW("reduce_local on device memory, but this build has no CUDA (configure the cuda backend)");
#endif
  }
  switch (type) {
    case DataType::f32: return reduce_host(static_cast<float*>(inout), static_cast<const float*>(in), count, op);
    case DataType::f64: return reduce_host(static_cast<double*>(inout), static_cast<const double*>(in), count, op);
    case DataType::i32:
      return reduce_host(static_cast<std::int32_t*>(inout), static_cast<const std::int32_t*>(in), count, op);
  }
}

}  // namespace comm
