// cudaLaunchKernel and cudaLaunchCooperativeKernel: the runtime API's launches through an array of
// argument pointers, as the same cusim::launch a `<<<...>>>` launch becomes.
//
// Given the kernel itself, the template overloads know its parameter types. Given `(void*)kernel`
// (the form of NVIDIA's samples), the types come from a registry: the source rewriter turns each
// cast of a __global__ function to `void*` into cusim::kernel_pointer(kernel, "kernel"), which
// records how to unpack `args` for that address and returns the same pointer.
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cusim/device.h"

namespace cusim::detail {
template <class... P, size_t... I>
void launch_from_pointers(void (*kernel)(P...), const launch_config& cfg, void** args, std::index_sequence<I...>,
                          const site& where, const char* name = nullptr) {
    // Each args[i] points at a value of the kernel's i-th parameter type, as CUDA requires. Without
    // a name, the one registered for the kernel's definition (cusim::detail::kernel_anchor).
    if (!name) name = registered_kernel_name(reinterpret_cast<const void*>(kernel), "kernel");
    ::cusim::launch(cfg, where.file_name(), static_cast<int>(where.line()), name,
                    reinterpret_cast<const void*>(kernel), [kernel](const auto&... a) { kernel(a...); },
                    *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

/// Launches the kernel at `kernel`, its type restored, with the argument pointers `args`.
using PointerLaunch = void (*)(const void* kernel, const char* name, const launch_config& cfg, void** args,
                               const site& where);
template <class... P>
void launch_erased(const void* kernel, const char* name, const launch_config& cfg, void** args, const site& where) {
    launch_from_pointers(reinterpret_cast<void (*)(P...)>(const_cast<void*>(kernel)), cfg, args,
                         std::index_sequence_for<P...>{}, where, name);
}
/// Records how to launch the kernel at `kernel` through argument pointers (thread-safe).
void register_pointer_launch(const void* kernel, PointerLaunch launch, const char* name);
}  // namespace cusim::detail

namespace cusim {
/// `(void*)kernel` as the source rewriter writes it: the kernel's address, with its parameter types
/// recorded for cudaLaunchKernel / cudaLaunchCooperativeKernel on that address.
template <class... P>
inline void* kernel_pointer(void (*kernel)(P...), const char* name) {
    detail::register_pointer_launch(reinterpret_cast<const void*>(kernel), &detail::launch_erased<P...>, name);
    return reinterpret_cast<void*>(kernel);
}
/// Anything else that the rewriter took for a kernel (a variable that shares a kernel's name): the
/// cast as written.
template <class T>
inline void* kernel_pointer(T value, const char*) {
    return (void*)value;
}
}  // namespace cusim

template <class... P>
inline cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args, size_t shmem = 0,
                                    cudaStream_t stream = 0, const cusim::site& where = cusim::site::current()) {
    cusim::detail::launch_from_pointers(kernel, cusim::launch_config(grid, block, shmem, stream), args,
                                        std::index_sequence_for<P...>{}, where);
    return cudaPeekAtLastError();
}

/// Every block of a cooperative launch is co-resident, as on a GPU: cusim runs all its blocks
/// together, so grid.sync() works across blocks; a grid larger than the device can hold at once
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiProcessorCount) is
/// cudaErrorCooperativeLaunchTooLarge.
template <class... P>
inline cudaError_t cudaLaunchCooperativeKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args,
                                               size_t shmem = 0, cudaStream_t stream = 0,
                                               const cusim::site& where = cusim::site::current()) {
    cusim::launch_config cfg(grid, block, shmem, stream);
    cfg.cooperative = true;
    cusim::detail::launch_from_pointers(kernel, cfg, args, std::index_sequence_for<P...>{}, where);
    return cudaPeekAtLastError();
}

// Through a `const void*`: the kernel must have been cast to void* in code the rewriter saw (the
// registry above); any other pointer is cudaErrorInvalidDeviceFunction, as on a GPU for a pointer
// that is not a kernel.
cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem = 0,
                             cudaStream_t stream = 0, const cusim::site& where = cusim::site::current());
cudaError_t cudaLaunchCooperativeKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shmem = 0,
                                        cudaStream_t stream = 0, const cusim::site& where = cusim::site::current());
