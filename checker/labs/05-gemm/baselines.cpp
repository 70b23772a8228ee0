// Lab 05's vendor-library baseline (cublas_sgemm.cu: row-major SGEMM through cuBLAS, the GPU oracle
// of Correctness.MatchesCublas and the baseline of Performance.RatioToCublas) as remote calls: where
// the checks are split (cuda with WB_CUDA_SPLIT), the judge's CublasSgemm below is a proxy whose
// run() executes in check_05_..._trusted, the checker's own CUDA process, which links cuBLAS and
// keeps one handle for the process; the checks use it in a scope of wb::check::InCheckersProcess
// (wb_baseline.h), on buffers made there.
#include <cstdint>
#include <memory>

#include "cublas_sgemm.h"
#include "wb_remote_interface.h"

using wb::remote::from_wire;
using wb::remote::Reader;
using wb::remote::to_wire;
using wb::remote::Writer;

#if defined(WB_REMOTE_JUDGE)
CublasSgemm::CublasSgemm() = default;
CublasSgemm::~CublasSgemm() = default;

void CublasSgemm::run(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                      float* C, int ldc) {
  Writer w;
  w.put(M).put(N).put(K).put(alpha).put<std::uint64_t>(to_wire(A)).put(lda).put<std::uint64_t>(to_wire(B)).put(ldb);
  w.put(beta).put<std::uint64_t>(to_wire(C)).put(ldc);
  wb::remote::call("wb_cublas_sgemm", w);  // cuBLAS's errors come back as the call's (an exception)
}
#elif defined(WB_REMOTE_WORKER)
static const wb::remote::Registration sgemm_registration{"wb_cublas_sgemm", [](Reader& in, Writer&) {
  static const std::unique_ptr<CublasSgemm> cublas = std::make_unique<CublasSgemm>();
  const int M = in.get<int>(), N = in.get<int>(), K = in.get<int>();
  const float alpha = in.get<float>();
  const auto A = from_wire<const float*>(in.get<std::uint64_t>());
  const int lda = in.get<int>();
  const auto B = from_wire<const float*>(in.get<std::uint64_t>());
  const int ldb = in.get<int>();
  const float beta = in.get<float>();
  const auto C = from_wire<float*>(in.get<std::uint64_t>());
  const int ldc = in.get<int>();
  cublas->run(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}};
#endif
