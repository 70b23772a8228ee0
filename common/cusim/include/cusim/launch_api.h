// cudaLaunchKernel and cudaLaunchCooperativeKernel: the runtime API's launches through an array of
// argument pointers, as the same cusim::launch a `<<<...>>>` launch becomes.
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cusim/device.h"

namespace cusim::detail {
template <class... P, size_t... I>
void launch_from_pointers(void (*kernel)(P...), const launch_config& cfg, void** args, std::index_sequence<I...>,
                          const site& where) {
    // Each args[i] points at a value of the kernel's i-th parameter type, as CUDA requires.
    ::cusim::launch(cfg, where.file_name(), static_cast<int>(where.line()), "kernel",
                    reinterpret_cast<const void*>(kernel), [kernel](const auto&... a) { kernel(a...); },
                    *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}
}  // namespace cusim::detail

template <class... P>
inline cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args, size_t shmem = 0,
                                    cudaStream_t stream = 0, const cusim::site& where = cusim::site::current()) {
    cusim::detail::launch_from_pointers(kernel, cusim::launch_config(grid, block, shmem, stream), args,
                                        std::index_sequence_for<P...>{}, where);
    return cudaPeekAtLastError();
}

/// Every block of a cooperative launch is co-resident on a GPU, which grid.sync() relies on. cusim
/// runs the launch like any other; grid.sync() supports a grid of one block only (docs/cusim.md).
template <class... P>
inline cudaError_t cudaLaunchCooperativeKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                               size_t shmem = 0, cudaStream_t stream = 0,
                                               const cusim::site& where = cusim::site::current()) {
    return cudaLaunchKernel(kernel, grid, block, args, shmem, stream, where);
}

// Through `(void*)kernel` the parameter types are lost, and cusim (which calls the kernel as C++)
// cannot unpack `args`: pass the kernel itself, as the template overloads of cuda_runtime.h allow.
cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem = 0,
                             cudaStream_t stream = 0) = delete;
cudaError_t cudaLaunchCooperativeKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem = 0,
                                        cudaStream_t stream = 0) = delete;
