# Checker self-tests of lab 05 (SGEMM), included by tests/checker/CMakeLists.txt: the solution
# passes, the skeleton fails with "not implemented yet", and each known-wrong version
# (<name>.diff: the solution with one mistake) is rejected by the named check with a message
# that names its mistake.
wb_lab_selftests(05-gemm
  CHECKS "${WB_ROOT}/checker/labs/05-gemm/check_gemm.cpp"
  CUDA_BASELINES "${WB_ROOT}/checker/labs/05-gemm/cublas_sgemm.cu" CUDA_LIBS CUDA::cublas
  SKELETON "not implemented yet: sgemm(_naive|_coalesced|_smem_tiled|_1d_blocktile|_2d_blocktile|_vectorized)? in labs/05-gemm/gemm.cu")

wb_known_wrong_test(05-gemm a_tile_k_unpadded
  --expect-fail Correctness.SmemTiled
                "sgemm_smem_tiled\\(M=1, N=1, K=1, .*C\\(0, 0\\): got nan, expected -?[0-9]+ exactly.*NaN in C: the checker fills the memory around A and B")
wb_known_wrong_test(05-gemm b_bound_uses_m
  --expect-fail Correctness.SmemTiled
                "sgemm_smem_tiled\\(M=3, N=5, K=1, .*: 6 of 15 elements of C are wrong; first wrong C\\(row, col\\):.*C\\(0, 3\\): got 0, expected -?[0-9]+ exactly.*rows 0\\.\\.2 and columns 3\\.\\.4 of C")
wb_known_wrong_test(05-gemm reads_c_when_beta_zero
  --expect-fail Correctness.Blocktile2D
                "sgemm_2d_blocktile\\(M=1, N=1, K=1, .*C was read although beta = 0")
wb_known_wrong_test(05-gemm store_off_by_one
  --expect-fail Correctness.Blocktile2D
                "sgemm_2d_blocktile\\(M=1, N=1, K=1, .* wrote 1 float\\(s\\) outside C's 1 elements \\(C\\[1\\] to C\\[1\\]\\)")
# The interface allows M up to 2^20; blocks of 8 rows need 131072 in gridDim.y (at most 65535).
wb_known_wrong_test(05-gemm coalesced_grid_rows_of_8
  --expect-fail Correctness.Coalesced
                "sgemm_coalesced\\(M=1048576, N=1, K=1, .* returned cudaErrorInvalidValue.*This shape has 1048576 rows: gridDim.y and gridDim.z are at most 65535.*more than 65535 for R <= 16")
wb_known_wrong_test(05-gemm skips_partial_tiles
  --expect-fail Correctness.Vectorized
                "sgemm_vectorized\\(M=1, N=1, K=1, .*1 of 1 elements of C are wrong \\(1 never written\\).*C\\(0, 0\\): got nothing \\(never written\\)")
if(WB_BACKEND STREQUAL "sim")
  # The report names the store into the A tile and the inner product.
  wb_known_wrong_test(05-gemm missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:({{line:As[ty][tx] = r < M}}|{{line:acc += As[ty][k] * Bs[k][tx]}}).*missing_syncthreads.cu:({{line:As[ty][tx] = r < M}}|{{line:acc += As[ty][k] * Bs[k][tx]}})")
  wb_known_wrong_test(05-gemm transposed_coalesced SIM_ANALYSIS
    --expect-fail Performance.CoalescedAccess
                  "sgemm_coalesced\\(M=N=K=128\\): its loads touch [0-9.]+ and its stores 32.00 global memory sectors per request \\(at most 4.00 allowed\\)")
  wb_known_wrong_test(05-gemm untiled_smem_version SIM_ANALYSIS
    --expect-fail Performance.TiledGlobalTraffic
                  "sgemm_smem_tiled\\(M=N=K=128\\) read [0-9]+ bytes of global memory for [0-9]+ FLOPs: 4.000 bytes/FLOP \\(at most 0.25 allowed")
  # A GPU stops the kernel at the first misaligned float4 load; cusim's analysis build does too.
  wb_known_wrong_test(05-gemm float4_any_lda SIM_ANALYSIS
    --expect-fail Correctness.Vectorized
                  "misaligned address.*float4_any_lda.cu:{{line:if (vec && c + 3 < cols) return}}")
  # K and N are multiples of 4, the leading dimensions are not: the float4 path must follow lda, ldb, ldc.
  wb_known_wrong_test(05-gemm float4_from_row_length SIM_ANALYSIS
    --expect-fail Correctness.Vectorized
                  "sgemm_vectorized\\(M=37, N=44, K=36, alpha=1, beta=1, lda=39, ldb=45, ldc=46\\) .*cudaErrorMisalignedAddress.*here lda = 39, ldb = 45, ldc = 46 \\(K = 36, N = 44\\).*Take the float4 path only when the leading dimension is a multiple of 4")
  # lda, ldb and ldc are multiples of 4, the matrices start off 16-byte boundaries: the float4 path
  # must test the address too (labs 07, 08 and 12 pass pointers into larger arrays).
  wb_known_wrong_test(05-gemm float4_trusts_base_alignment SIM_ANALYSIS
    --expect-fail Correctness.Final
                  "sgemm\\(M=37, N=44, K=36, alpha=1, beta=1, lda=36, ldb=44, ldc=44\\) .*A, B and C start 4, 8 and 12 bytes past a 16-byte boundary.*cudaErrorMisalignedAddress.*the matrices themselves start off a 16-byte boundary \\(A 4 bytes past one, B 8 bytes past one, C 12 bytes past one\\).*reinterpret_cast<std::uintptr_t>\\(A\\) % 16 == 0 && lda % 4 == 0")
  wb_known_wrong_test(05-gemm scalar_load4 SIM_ANALYSIS
    --expect-fail Performance.VectorizedLoads
                  "sgemm_vectorized\\(M=N=K=128\\): its global loads use [0-9.]+ of the 32 bytes of each sector they touch \\(at least 28 expected\\)")
  # A load one row past A or one column past B feeds only results that are not stored (C is
  # right) and reads the checker's guard zones: only the cases with exact-size allocations show it.
  wb_known_wrong_test(05-gemm b_tile_column_past_n SIM_ANALYSIS
    --expect-fail Analysis.MemcheckClean
                  "sgemm_2d_blocktile\\(M=130, N=131, K=19, .*A, B and C allocated to their exact size\\] accessed memory just past the end of A, B or C.*B's column N in its last row.*Invalid __global__ read of size 4 bytes.*b_tile_column_past_n.cu:{{line:gc <= N}}")
  wb_known_wrong_test(05-gemm a_tile_row_past_m SIM_ANALYSIS
    --expect-fail Analysis.MemcheckClean
                  "sgemm_1d_blocktile\\(M=130, N=131, K=19, .*A, B and C allocated to their exact size\\] accessed memory just past the end of A, B or C.*A's row M.*Invalid __global__ read of size 4 bytes.*a_tile_row_past_m.cu:{{line:ar <= M}}")
  wb_known_wrong_test(05-gemm reloads_b_per_result SIM_ANALYSIS
    --expect-fail Performance.RegisterBlocking1D
                  "sgemm_1d_blocktile\\(M=N=K=128\\): [0-9.]+ shared-memory loads per multiply-add \\(at most 1.25 allowed")
endif()
# Rounding every multiply-add toward zero stays inside Higham's worst-case bound (the other
# correctness checks) but errs many times more than cuBLAS: only the cuBLAS oracle rejects it.
wb_known_wrong_test(05-gemm fmaf_rz_accumulate
  --expect-fail Correctness.MatchesCublas
                "sgemm\\(M=129, N=127, K=131, .*random data in \\[-1, 1\\).*elements of C differ from cuBLAS's SGEMM on the same inputs; first C\\([0-9]+, [0-9]+\\): got [-0-9.e+]+, cuBLAS [-0-9.e+]+ \\(difference [0-9.e+-]+, tolerance [0-9.e+-]+ = .*__fmaf_rz")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(05-gemm naive_launch_error_dropped
    --expect-fail Correctness.HostReturnsCudaErrors
                  "sgemm_naive\\(M=70, N=50, K=33, alpha=1, beta=0\\.5\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: sgemm_naive ignored the error of that kernel launch")
endif()
wb_known_wrong_test(05-gemm naive_ignores_beta
  --expect-fail Correctness.Naive
                "sgemm_naive\\(M=67, N=45, K=33, alpha=2, beta=-1, .*elements of C are wrong.*C\\(0, 0\\): got [-0-9]+, expected [-0-9]+ exactly")
wb_known_wrong_test(05-gemm blocktile1d_drops_partial_k_step
  --expect-fail Correctness.Blocktile1D
                "sgemm_1d_blocktile\\(M=1, N=1, K=1, .*Every element of C is wrong. If your tiles step through K in steps that do not divide K = 1, the last step is partial")
wb_known_wrong_test(05-gemm final_drops_partial_k_step
  --expect-fail Correctness.Final
                "sgemm\\(M=[0-9]+, N=[0-9]+, K=[0-9]+, .*If your tiles step through K in steps that do not divide K = [0-9]+, the last step is partial"
  --expect-fail Correctness.FinalLarge
                "sgemm\\(M=515, N=389, K=333, .*\\]: [0-9]+ of 200335 elements of C are wrong; first wrong C")
if(WB_BACKEND STREQUAL "sim")
  # The product is right; only cusim's shared-memory counts see the reloads.
  wb_known_wrong_test(05-gemm blocktile2d_reloads_b_per_row SIM_ANALYSIS
    --expect-fail Performance.RegisterBlocking2D
                  "sgemm_2d_blocktile\\(M=N=K=128\\): [0-9.]+ shared-memory loads per multiply-add \\(at most 0\\.50 allowed")
endif()
