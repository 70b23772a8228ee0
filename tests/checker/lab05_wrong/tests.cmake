# Checker self-tests of lab 05 (SGEMM), included by tests/checker/CMakeLists.txt: the solution
# passes, the skeleton fails with "not implemented yet", and each known-wrong implementation in
# this directory is rejected by the named check with a message that names its mistake.
set(_lab05_checks "${WB_ROOT}/checker/labs/05-gemm/check_gemm.cpp")
set(_lab05_baselines "${WB_ROOT}/checker/labs/05-gemm/cublas_sgemm.cu")
set(_lab05_wrong_dir "${CMAKE_CURRENT_LIST_DIR}")

if(TARGET check_05_gemm_solution)
  set(_allow "")
  if(WB_BACKEND STREQUAL "sim" AND NOT WB_SIM_ANALYSIS)
    set(_allow --allow-not-measured)
  endif()
  add_test(NAME checker.lab05.solution_passes
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 05-gemm --backend ${WB_BACKEND}
                   --binary $<TARGET_FILE:check_05_gemm_solution> --expect-pass ${_allow})
endif()
if(TARGET check_05_gemm)
  add_test(NAME checker.lab05.skeleton_not_implemented
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 05-gemm
                   --binary $<TARGET_FILE:check_05_gemm>
                   --expect-all-fail "not implemented yet: sgemm(_naive|_coalesced|_smem_tiled|_1d_blocktile|_2d_blocktile|_vectorized)? in labs/05-gemm/gemm.cu")
endif()

# _wb_lab05_wrong(<name> [SIM_ANALYSIS] --expect-fail <Check> <regex> ...)
# SIM_ANALYSIS: the expectation needs cusim analysis (disabled when WB_SIM_ANALYSIS is OFF).
function(_wb_lab05_wrong name)
  cmake_parse_arguments(PARSE_ARGV 1 A "SIM_ANALYSIS" "" "")
  set(target checker_lab05_${name})
  if(NOT TARGET ${target})
    wb_add_check_binary(${target} LAB 05-gemm CHECKS ${_lab05_checks}
                        LAB_SOURCES "${_lab05_wrong_dir}/${name}.cu"
                        CUDA_BASELINES ${_lab05_baselines} CUDA_LIBS CUDA::cublas)
  endif()
  add_test(NAME checker.lab05_wrong.${name}
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 05-gemm --binary $<TARGET_FILE:${target}>
                   ${A_UNPARSED_ARGUMENTS})
  if(A_SIM_ANALYSIS AND NOT WB_SIM_ANALYSIS)
    set_tests_properties(checker.lab05_wrong.${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

_wb_lab05_wrong(a_tile_k_unpadded
  --expect-fail Correctness.SmemTiled
                "sgemm_smem_tiled\\(M=1, N=1, K=1, .*C\\(0, 0\\): got nan, expected -?[0-9]+ exactly.*NaN in C: the checker fills the memory around A and B")
_wb_lab05_wrong(b_bound_uses_m
  --expect-fail Correctness.SmemTiled
                "sgemm_smem_tiled\\(M=3, N=5, K=1, .*: 6 of 15 elements of C are wrong; first wrong C\\(row, col\\):.*C\\(0, 3\\): got 0, expected -?[0-9]+ exactly.*rows 0\\.\\.2 and columns 3\\.\\.4 of C")
_wb_lab05_wrong(reads_c_when_beta_zero
  --expect-fail Correctness.Blocktile2D
                "sgemm_2d_blocktile\\(M=1, N=1, K=1, .*C was read although beta = 0")
_wb_lab05_wrong(store_off_by_one
  --expect-fail Correctness.Blocktile2D
                "sgemm_2d_blocktile\\(M=1, N=1, K=1, .* wrote 1 float\\(s\\) outside C's 1 elements \\(C\\[1\\] to C\\[1\\]\\)")
_wb_lab05_wrong(skips_partial_tiles
  --expect-fail Correctness.Vectorized
                "sgemm_vectorized\\(M=1, N=1, K=1, .*1 of 1 elements of C are wrong \\(1 never written\\).*C\\(0, 0\\): got nothing \\(never written\\)")
if(WB_BACKEND STREQUAL "sim")
  # Lines 90 and 93 of missing_syncthreads.cu: the store into the A tile and the inner product.
  _wb_lab05_wrong(missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:(90|93).*missing_syncthreads.cu:(90|93)")
  _wb_lab05_wrong(transposed_coalesced SIM_ANALYSIS
    --expect-fail Performance.CoalescedAccess
                  "sgemm_coalesced\\(M=N=K=128\\): its loads touch [0-9.]+ and its stores 32.00 global memory sectors per request \\(at most 4.00 allowed\\)")
  _wb_lab05_wrong(untiled_smem_version SIM_ANALYSIS
    --expect-fail Performance.TiledGlobalTraffic
                  "sgemm_smem_tiled\\(M=N=K=128\\) read [0-9]+ bytes of global memory for [0-9]+ FLOPs: 4.000 bytes/FLOP \\(at most 0.25 allowed")
  _wb_lab05_wrong(reloads_b_per_result SIM_ANALYSIS
    --expect-fail Performance.RegisterBlocking1D
                  "sgemm_1d_blocktile\\(M=N=K=128\\): [0-9.]+ shared-memory loads per multiply-add \\(at most 1.25 allowed")
endif()
