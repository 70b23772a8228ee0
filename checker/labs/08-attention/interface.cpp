// Lab 08's interface as remote calls: the checks (the judge) call these, the lab's code runs
// them in the worker process (checker/support/remote/wb_remote_interface.h).
#include "attention.h"
#include "wb_remote_interface.h"

WB_REMOTE(cudaError_t, attention_unfused,
          (const float* q, const float* k, const float* v, float* o, float* lse, AttentionShape shape,
           float* workspace),
          (q, k, v, o, lse, shape, workspace))
WB_REMOTE(cudaError_t, attention_forward,
          (const float* q, const float* k, const float* v, float* o, float* lse, AttentionShape shape),
          (q, k, v, o, lse, shape))
WB_REMOTE(cudaError_t, attention_forward_bf16,
          (const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o, float* lse,
           AttentionShape shape),
          (q, k, v, o, lse, shape))
WB_REMOTE(cudaError_t, attention_forward_fp16,
          (const __half* q, const __half* k, const __half* v, __half* o, float* lse, AttentionShape shape),
          (q, k, v, o, lse, shape))
WB_REMOTE(cudaError_t, attention_backward,
          (const float* q, const float* k, const float* v, const float* o, const float* dout, const float* lse,
           float* dq, float* dk, float* dv, AttentionShape shape, float* workspace),
          (q, k, v, o, dout, lse, dq, dk, dv, shape, workspace))
