// cuDNN baselines of lab 07 (see cudnn_baselines.h).
#include "cudnn_baselines.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>

namespace {

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudnnGetErrorString(status));
}

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorString(status));
}

const char* forward_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "another algorithm";
  }
}

const char* data_name(cudnnConvolutionBwdDataAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "another algorithm";
  }
}

const char* filter_name(cudnnConvolutionBwdFilterAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "another algorithm";
  }
}

// The first (fastest) result that ran with FP32 FMA math.
template <class Perf>
const Perf* fastest_fma(const Perf* results, int count) {
  for (int i = 0; i < count; ++i) {
    if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].mathType != CUDNN_TENSOR_OP_MATH &&
        results[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      return &results[i];
    }
  }
  throw std::runtime_error("cuDNN reported no algorithm with FP32 FMA math for this convolution");
}

}  // namespace

#define WB_CUDNN(expr) check_cudnn((expr), #expr, __FILE__, __LINE__)
#define WB_CUDA(expr) check_cuda((expr), #expr, __FILE__, __LINE__)

CudnnConv::CudnnConv(const ConvParams& p, Layout layout) {
  cudnnHandle_t handle;
  WB_CUDNN(cudnnCreate(&handle));
  handle_ = handle;
  const cudnnTensorFormat_t format = layout == kNHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  WB_CUDNN(cudnnCreateTensorDescriptor(&x));
  x_desc_ = x;
  WB_CUDNN(cudnnCreateTensorDescriptor(&y));
  y_desc_ = y;
  WB_CUDNN(cudnnCreateFilterDescriptor(&w));
  w_desc_ = w;
  WB_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  conv_desc_ = conv;
  WB_CUDNN(cudnnSetTensor4dDescriptor(x, format, CUDNN_DATA_FLOAT, p.N, p.C, p.H, p.W));
  WB_CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, format, p.K, p.C, p.R, p.S));
  WB_CUDNN(cudnnSetConvolution2dDescriptor(conv, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dilation_h,
                                           p.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  WB_CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));  // FP32 arithmetic, as the lab's kernels
  int n, k, pp, q;
  WB_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &k, &pp, &q));
  if (n != p.N || k != p.K || pp != conv_out_h(p) || q != conv_out_w(p)) {
    throw std::runtime_error("cuDNN's output shape differs from conv_out_h/conv_out_w");
  }
  WB_CUDNN(cudnnSetTensor4dDescriptor(y, format, CUDNN_DATA_FLOAT, n, k, pp, q));
}

CudnnConv::~CudnnConv() {
  if (workspace_ != nullptr) (void)cudaFree(workspace_);
  if (conv_desc_ != nullptr) (void)cudnnDestroyConvolutionDescriptor(static_cast<cudnnConvolutionDescriptor_t>(conv_desc_));
  if (w_desc_ != nullptr) (void)cudnnDestroyFilterDescriptor(static_cast<cudnnFilterDescriptor_t>(w_desc_));
  if (y_desc_ != nullptr) (void)cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(y_desc_));
  if (x_desc_ != nullptr) (void)cudnnDestroyTensorDescriptor(static_cast<cudnnTensorDescriptor_t>(x_desc_));
  if (handle_ != nullptr) (void)cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

void CudnnConv::ensure_workspace(std::size_t bytes) {
  if (bytes <= workspace_bytes_) return;
  if (workspace_ != nullptr) WB_CUDA(cudaFree(workspace_));
  workspace_ = nullptr;
  WB_CUDA(cudaMalloc(&workspace_, bytes));
  workspace_bytes_ = bytes;
}

void CudnnConv::forward(const float* x, const float* w, float* y) {
  auto handle = static_cast<cudnnHandle_t>(handle_);
  auto xd = static_cast<cudnnTensorDescriptor_t>(x_desc_), yd = static_cast<cudnnTensorDescriptor_t>(y_desc_);
  auto wd = static_cast<cudnnFilterDescriptor_t>(w_desc_);
  auto cd = static_cast<cudnnConvolutionDescriptor_t>(conv_desc_);
  if (forward_algo_ < 0) {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    WB_CUDNN(cudnnFindConvolutionForwardAlgorithm(handle, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                                  results));
    const cudnnConvolutionFwdAlgoPerf_t* best = fastest_fma(results, count);
    forward_algo_ = best->algo;
    forward_name_ = forward_name(best->algo);
    ensure_workspace(best->memory);
  }
  const float one = 1.0f, zero = 0.0f;
  WB_CUDNN(cudnnConvolutionForward(handle, &one, xd, x, wd, w, cd, static_cast<cudnnConvolutionFwdAlgo_t>(forward_algo_),
                                   workspace_, workspace_bytes_, &zero, yd, y));
}

void CudnnConv::backward_data(const float* dy, const float* w, float* dx) {
  auto handle = static_cast<cudnnHandle_t>(handle_);
  auto xd = static_cast<cudnnTensorDescriptor_t>(x_desc_), yd = static_cast<cudnnTensorDescriptor_t>(y_desc_);
  auto wd = static_cast<cudnnFilterDescriptor_t>(w_desc_);
  auto cd = static_cast<cudnnConvolutionDescriptor_t>(conv_desc_);
  if (data_algo_ < 0) {
    cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    WB_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(handle, wd, yd, cd, xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                       &count, results));
    const cudnnConvolutionBwdDataAlgoPerf_t* best = fastest_fma(results, count);
    data_algo_ = best->algo;
    data_name_ = data_name(best->algo);
    ensure_workspace(best->memory);
  }
  const float one = 1.0f, zero = 0.0f;
  WB_CUDNN(cudnnConvolutionBackwardData(handle, &one, wd, w, yd, dy, cd,
                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(data_algo_), workspace_,
                                        workspace_bytes_, &zero, xd, dx));
}

void CudnnConv::backward_filter(const float* x, const float* dy, float* dw) {
  auto handle = static_cast<cudnnHandle_t>(handle_);
  auto xd = static_cast<cudnnTensorDescriptor_t>(x_desc_), yd = static_cast<cudnnTensorDescriptor_t>(y_desc_);
  auto wd = static_cast<cudnnFilterDescriptor_t>(w_desc_);
  auto cd = static_cast<cudnnConvolutionDescriptor_t>(conv_desc_);
  if (filter_algo_ < 0) {
    cudnnConvolutionBwdFilterAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    WB_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(handle, xd, yd, cd, wd,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, results));
    const cudnnConvolutionBwdFilterAlgoPerf_t* best = fastest_fma(results, count);
    filter_algo_ = best->algo;
    filter_name_ = filter_name(best->algo);
    ensure_workspace(best->memory);
  }
  const float one = 1.0f, zero = 0.0f;
  WB_CUDNN(cudnnConvolutionBackwardFilter(handle, &one, xd, x, yd, dy, cd,
                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter_algo_), workspace_,
                                          workspace_bytes_, &zero, wd, dw));
}
