// Lab 04's interface as remote calls: the checks (the judge) call these, the lab's code runs
// them in the worker process (checker/support/remote/wb_remote_interface.h).
#include "scan_histogram.h"
#include "wb_remote_interface.h"

WB_REMOTE(cudaError_t, scan_block_kogge_stone, (const int* d_in, int* d_out, int n), (d_in, d_out, n))
WB_REMOTE(cudaError_t, scan_block_blelloch, (const int* d_in, int* d_out, int n), (d_in, d_out, n))
WB_REMOTE(cudaError_t, scan_reduce_then_scan, (const int* d_in, int* d_out, int n, void* d_workspace),
          (d_in, d_out, n, d_workspace))
WB_REMOTE_AS(cudaError_t, inclusive_scan, "inclusive_scan(int)", (const int* d_in, int* d_out, int n, void* d_workspace),
             (d_in, d_out, n, d_workspace))
WB_REMOTE(cudaError_t, exclusive_scan, (const int* d_in, int* d_out, int n, void* d_workspace),
          (d_in, d_out, n, d_workspace))
WB_REMOTE_AS(cudaError_t, inclusive_scan, "inclusive_scan(float)",
             (const float* d_in, float* d_out, int n, void* d_workspace), (d_in, d_out, n, d_workspace))
WB_REMOTE(cudaError_t, histogram_global_atomics, (const unsigned* d_values, int n, unsigned* d_bins, int num_bins),
          (d_values, n, d_bins, num_bins))
WB_REMOTE(cudaError_t, histogram_shared,
          (const unsigned* d_values, int n, unsigned* d_bins, int num_bins, int num_blocks, int block_size),
          (d_values, n, d_bins, num_bins, num_blocks, block_size))
WB_REMOTE(cudaError_t, histogram, (const unsigned* d_values, int n, unsigned* d_bins, int num_bins),
          (d_values, n, d_bins, num_bins))
