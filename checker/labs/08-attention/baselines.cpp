// Lab 08's vendor-library baseline (attention_baselines.cu: cuBLAS's bf16 GEMM, the tensor-core
// ceiling) as a remote call: where the checks are split (cuda with WB_CUDA_SPLIT), the judge's proxy
// sends it to check_08_..._trusted, the checker's own CUDA process, which links cuBLAS; the check
// calls it in a scope of wb::check::InCheckersProcess (wb_baseline.h). It makes its own buffers.
#include "attention_baselines.h"
#include "wb_remote_interface.h"

WB_REMOTE(double, cublas_bf16_gemm_tflops, (int n), (n))
