// The CUDA side of the communicator (cuda backend only): device memory, pinned staging
// buffers for MPI, and the reduction kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>

#include "comm/error.h"
#include "device_api.h"

#define COMM_CUDA_CHECK(call)                                                                            \
  do {                                                                                                   \
    cudaError_t comm_cuda_rc_ = (call);                                                                  \
    if (comm_cuda_rc_ != cudaSuccess)                                                                    \
      throw ::comm::Error(__FILE__, __LINE__, std::string(#call) + " failed: " + cudaGetErrorString(comm_cuda_rc_)); \
  } while (0)

namespace comm::detail {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no GPU: not an error here, just no devices
    return 0;
  }
  return n;
}

void select_device(int local_rank) {
  const int n = device_count();
  if (n > 0) COMM_CUDA_CHECK(cudaSetDevice(local_rank % n));
}

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  COMM_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void device_free(void* p) noexcept { cudaFree(p); }

void device_copy(void* dst, bool, const void* src, bool, std::size_t bytes) {
  COMM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void device_memset(void* p, int value, std::size_t bytes) {
  COMM_CUDA_CHECK(cudaMemset(p, value, bytes));
  COMM_CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {

template <class T> __device__ T apply_op(RedOp op, T a, T b) {
  switch (op) {
    case RedOp::sum: return a + b;
    case RedOp::prod: return a * b;
    case RedOp::min: return b < a ? b : a;
    case RedOp::max: return a < b ? b : a;
  }
  return a;
}
template <> __device__ std::int32_t apply_op<std::int32_t>(RedOp op, std::int32_t a, std::int32_t b) {
  switch (op) {  // wrap around like the host loop
    case RedOp::sum: return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
    case RedOp::prod: return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
    case RedOp::min: return b < a ? b : a;
    case RedOp::max: return a < b ? b : a;
  }
  return a;
}

template <class T> __global__ void reduce_kernel(T* __restrict__ inout, const T* __restrict__ in, std::size_t n, RedOp op) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    inout[i] = apply_op(op, inout[i], in[i]);
}

template <class T> void launch(void* inout, const void* in, std::size_t count, RedOp op) {
  const int threads = 256;
  const std::size_t want = (count + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 65535 ? want : 65535);
  reduce_kernel<T><<<blocks, threads>>>(static_cast<T*>(inout), static_cast<const T*>(in), count, op);
  COMM_CUDA_CHECK(cudaGetLastError());
  // The communicator's reduce() is synchronous: the next send may read the result.
  COMM_CUDA_CHECK(cudaDeviceSynchronize());
}

// Pinned staging buffers, reused by size class (powers of two).
std::multimap<std::size_t, void*> g_free;
std::map<void*, std::size_t> g_size;

}  // namespace

void device_reduce(void* inout, const void* in, std::size_t count, DataType type, RedOp op) {
  switch (type) {
    case DataType::f32: return launch<float>(inout, in, count, op);
    case DataType::f64: return launch<double>(inout, in, count, op);
    case DataType::i32: return launch<std::int32_t>(inout, in, count, op);
  }
}

void* pinned_acquire(std::size_t bytes) {
  std::size_t cls = 4096;
  while (cls < bytes) cls <<= 1;
  auto it = g_free.find(cls);
  if (it != g_free.end()) {
    void* p = it->second;
    g_free.erase(it);
    return p;
  }
  void* p = nullptr;
  COMM_CUDA_CHECK(cudaMallocHost(&p, cls));
  g_size[p] = cls;
  return p;
}

void pinned_release(void* p) noexcept {
  auto it = g_size.find(p);
  if (it != g_size.end()) g_free.emplace(it->second, p);
}

}  // namespace comm::detail
