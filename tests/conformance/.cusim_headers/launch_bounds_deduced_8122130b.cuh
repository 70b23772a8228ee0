#line 1 "/work/wt-h-cusim/tests/conformance/launch_bounds_deduced.cuh"
// A kernel template in a header of the program, launched from the .cu file with its template
// arguments deduced.
#pragma once

template <class T>
__global__ void __launch_bounds__(96) header_add(T* data, T value) { (void)&::cusim::detail::kernel_anchor<static_cast<void (*)(T* data, T value)>(&header_add<T>), (96)>;
    data[threadIdx.x] += value;
} template <class T> auto cusim_kernel_id_header_add(T* data, T value) -> ::cusim::detail::kernel_ref<static_cast<void (*)(T* data, T value)>(&header_add<T>)>;
