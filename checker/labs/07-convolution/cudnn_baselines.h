/// @file
/// @brief The baselines of lab 07's GPU performance checks: cuDNN's convolution forward, backward
/// data and backward filter, each with the fastest algorithm cudnnFind* reports for FP32 FMA math
/// (no TF32 tensor cores). Cuda backend only; compiled as a CUDA_BASELINES source.
#pragma once

#include <cstddef>

#include "convolution.h"

/// One convolution shape through cuDNN. Errors throw std::runtime_error naming the call, file:line
/// and cuDNN's status.
class CudnnConv {
 public:
  enum Layout { kNCHW, kNHWC };  ///< kNHWC: x NHWC, w KRSC, y NPQK; kNCHW: NCHW, KCRS, NKPQ

  CudnnConv(const ConvParams& p, Layout layout);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  /// y = conv(x, w). The first call searches the algorithms (cudnnFindConvolutionForwardAlgorithm).
  void forward(const float* x, const float* w, float* y);
  /// dx from dy and w (cudnnConvolutionBackwardData).
  void backward_data(const float* dy, const float* w, float* dx);
  /// dw from x and dy (cudnnConvolutionBackwardFilter).
  void backward_filter(const float* x, const float* dy, float* dw);

  /// The name of the forward algorithm chosen (after the first forward()).
  const char* forward_algorithm() const { return forward_name_; }
  /// The name of the backward-data algorithm chosen (after the first backward_data()).
  const char* backward_data_algorithm() const { return data_name_; }
  /// The name of the backward-filter algorithm chosen (after the first backward_filter()).
  const char* backward_filter_algorithm() const { return filter_name_; }

 private:
  void ensure_workspace(std::size_t bytes);

  void* handle_ = nullptr;
  void *x_desc_ = nullptr, *y_desc_ = nullptr, *w_desc_ = nullptr, *conv_desc_ = nullptr;
  int forward_algo_ = -1, data_algo_ = -1, filter_algo_ = -1;
  const char* forward_name_ = "";
  const char* data_name_ = "";
  const char* filter_name_ = "";
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};
