// A kernel template in a header of the program, launched from the .cu file with its template
// arguments deduced.
#pragma once

template <class T>
__global__ void __launch_bounds__(96) header_add(T* data, T value) {
    data[threadIdx.x] += value;
}
