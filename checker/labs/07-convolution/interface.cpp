// Lab 07's interface as remote calls: the checks (the judge) call these, the lab's code runs
// them in the worker process (checker/support/remote/wb_remote_interface.h).
#include "convolution.h"
#include "pooling_batchnorm.h"
#include "wb_remote_interface.h"

// Part 1: convolution.
#define WB_CONV(name) \
  WB_REMOTE(cudaError_t, name, (ConvParams p, const float* x, const float* w, float* y), (p, x, w, y))
WB_CONV(conv2d_direct)
WB_CONV(conv2d_implicit_gemm)
WB_CONV(conv2d_forward)
WB_REMOTE(cudaError_t, conv2d_im2col, (ConvParams p, const float* x, const float* w, float* y, float* workspace),
          (p, x, w, y, workspace))
WB_REMOTE(cudaError_t, conv2d_backward_data, (ConvParams p, const float* dy, const float* w, float* dx),
          (p, dy, w, dx))
WB_REMOTE(cudaError_t, conv2d_backward_filter,
          (ConvParams p, const float* x, const float* dy, float* dw, float* workspace), (p, x, dy, dw, workspace))
WB_REMOTE(cudaError_t, conv2d_bn_relu_inference,
          (ConvParams p, const float* x, const float* w, const float* gamma, const float* beta,
           const float* running_mean, const float* running_var, float eps, float* y),
          (p, x, w, gamma, beta, running_mean, running_var, eps, y))

// Part 2: pooling and batch normalization.
WB_REMOTE(cudaError_t, maxpool2d_forward, (PoolParams p, const float* x, float* y, int* argmax), (p, x, y, argmax))
WB_REMOTE(cudaError_t, maxpool2d_backward, (PoolParams p, const float* dy, const int* argmax, float* dx),
          (p, dy, argmax, dx))
WB_REMOTE(cudaError_t, avgpool2d_forward, (PoolParams p, const float* x, float* y, int count_include_pad),
          (p, x, y, count_include_pad))
WB_REMOTE(cudaError_t, avgpool2d_backward, (PoolParams p, const float* dy, float* dx, int count_include_pad),
          (p, dy, dx, count_include_pad))
WB_REMOTE(cudaError_t, batchnorm_forward_training,
          (int N, int C, int HW, const float* x, const float* gamma, const float* beta, float momentum, float eps,
           float* y, float* save_mean, float* save_rstd, float* running_mean, float* running_var, float* workspace),
          (N, C, HW, x, gamma, beta, momentum, eps, y, save_mean, save_rstd, running_mean, running_var, workspace))
WB_REMOTE(cudaError_t, batchnorm_forward_inference,
          (int N, int C, int HW, const float* x, const float* gamma, const float* beta, const float* running_mean,
           const float* running_var, float eps, float* y),
          (N, C, HW, x, gamma, beta, running_mean, running_var, eps, y))
WB_REMOTE(cudaError_t, batchnorm_backward,
          (int N, int C, int HW, const float* dy, const float* x, const float* gamma, const float* save_mean,
           const float* save_rstd, float* dx, float* dgamma, float* dbeta, float* workspace),
          (N, C, HW, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, workspace))
