// Lab 06's interface as remote calls: the checks (the judge) call these, the lab's code runs
// them in the worker process (checker/support/remote/wb_remote_interface.h).
#include "softmax_layernorm.h"
#include "wb_remote_interface.h"

#define WB_SOFTMAX(name) WB_REMOTE(cudaError_t, name, (const float* x, float* y, int rows, int cols), (x, y, rows, cols))
WB_SOFTMAX(softmax_naive)
WB_SOFTMAX(softmax_block)
WB_SOFTMAX(softmax_online)
WB_SOFTMAX(softmax_forward)
WB_REMOTE(cudaError_t, softmax_backward, (const float* y, const float* dy, float* dx, int rows, int cols),
          (y, dy, dx, rows, cols))
#define WB_LAYERNORM(name)                                                                                      \
  WB_REMOTE(cudaError_t, name,                                                                                  \
            (const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd, int rows, \
             int cols, float eps),                                                                              \
            (x, gamma, beta, y, mean, rstd, rows, cols, eps))
WB_LAYERNORM(layernorm_two_pass)
WB_LAYERNORM(layernorm_forward)
WB_REMOTE(cudaError_t, layernorm_backward,
          (const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd, float* dx,
           float* dgamma, float* dbeta, int rows, int cols, float* workspace),
          (dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols, workspace))
WB_REMOTE(cudaError_t, rmsnorm_forward,
          (const float* x, const float* gamma, float* y, float* rrms, int rows, int cols, float eps),
          (x, gamma, y, rrms, rows, cols, eps))
WB_REMOTE(cudaError_t, rmsnorm_backward,
          (const float* dy, const float* x, const float* gamma, const float* rrms, float* dx, float* dgamma, int rows,
           int cols, float* workspace),
          (dy, x, gamma, rrms, dx, dgamma, rows, cols, workspace))
WB_REMOTE(cudaError_t, softmax_forward_bf16, (const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols),
          (x, y, rows, cols))
WB_REMOTE(cudaError_t, layernorm_forward_bf16,
          (const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta, __nv_bfloat16* y,
           float* mean, float* rstd, int rows, int cols, float eps),
          (x, gamma, beta, y, mean, rstd, rows, cols, eps))
