# Checker self-tests of lab 08 (attention), included by tests/checker/CMakeLists.txt: the solution
# passes, the skeleton fails with "not implemented yet", and each known-wrong version (<name>.diff:
# the solution with one mistake) is rejected by the named check with a message that names it.
wb_lab_selftests(08-attention
  CHECKS "${WB_ROOT}/checker/labs/08-attention/check_attention.cpp"
  CUDA_BASELINES "${WB_ROOT}/checker/labs/08-attention/attention_baselines.cu" CUDA_LIBS CUDA::cublas
  SKELETON "not implemented yet: (attention_unfused|attention_forward|attention_forward_bf16|attention_forward_fp16|attention_backward) in labs/08-attention/attention.cu")

wb_known_wrong_test(08-attention no_rescale
  --expect-fail Correctness.FusedForward "attention_forward\\(B=.*\\) \\[seed [0-9]+\\]: lse is wrong.*Every wrong L is too large: is the running sum rescaled")
wb_known_wrong_test(08-attention causal_off_by_one
  --expect-fail Correctness.Unfused "attention_unfused\\(.*causal=1\\).*matches attention with the causal mask off by one: query i also sees key")
# On sim the check starts the blocks in a different order in each of its three runs
# (wb_block_order.h), so the atomic sums differ every time, not only when cusim's workers race.
wb_known_wrong_test(08-attention backward_dq_atomics
  --expect-fail Correctness.Deterministic
                "attention_backward\\(.*\\): run [23] gave a different dq from run 1 on the same inputs \\(dq\\[[0-9]+\\]: [^)]* vs [^)]*\\)\\. Accumulate each gradient row in one block")
wb_known_wrong_test(08-attention scale_twice
  --expect-fail Correctness.FusedForward "attention_forward\\(.*\\).*matches attention with the scale 1/sqrt\\(D\\) applied twice"
  --expect-fail Correctness.FusedCausal
                "attention_forward\\(B=1, H=2, Tq=1, Tk=1, D=64, causal=1\\).*matches attention with the scale 1/sqrt\\(D\\) applied twice")
if(WB_BACKEND STREQUAL "sim")
  # The NaN around Q, K and V shows the rows past Tq and Tk in the memcheck run too (Analysis.*
  # runs on sim only).
  wb_known_wrong_test(08-attention partial_tile_past_t
    --expect-fail Correctness.FusedForward "attention_forward\\(.*\\).*NaN: the checker surrounds Q, K and V with NaN, so a row past Tq or Tk"
    --expect-fail Analysis.MemcheckClean
                  "attention_forward\\(B=1, H=1, Tq=17, Tk=17, D=32, causal=1\\).*NaN: the checker surrounds Q, K and V with NaN, so a row past Tq or Tk")
else()
  wb_known_wrong_test(08-attention partial_tile_past_t
    --expect-fail Correctness.FusedForward "attention_forward\\(.*\\).*NaN: the checker surrounds Q, K and V with NaN, so a row past Tq or Tk")
endif()
wb_known_wrong_test(08-attention backward_without_lse
  --expect-fail Correctness.Backward "attention_backward\\(.*\\) \\[seed [0-9]+\\]: dv is wrong.*Recompute P = exp\\(S - L\\) from the saved logsumexp L")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(08-attention missing_barrier SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean "racecheck/synccheck report\\(s\\).*missing_barrier.cu:({{line:reinterpret_cast<uint4*>(dst + r * ld + c) = x[u];}}|{{line:wmma::load_matrix_sync(fkt, ks + (n * 16) * L::ldh + kk * 16, L::ldh);}}|{{line:wmma::load_matrix_sync(fv, vs + (kk * 16) * L::ldh + dn * 16, L::ldh);}})"
    # The race leads the wrong output of the same run, for both element types.
    --expect-fail Correctness.TensorCoreBf16 "Race reported between .* in kernel 'tc_forward_kernel<T, D>'"
    --expect-fail Correctness.TensorCoreFp16 "Race reported between .* in kernel 'tc_forward_kernel<T, D>'")
  wb_known_wrong_test(08-attention small_query_tile SIM_ANALYSIS
    --expect-fail Performance.FusedTraffic "attention_forward\\(B=1, H=2, Tq=256.*\\) read [0-9]+ bytes, 1\\.[0-9]+ x the bound for K and V")
  wb_known_wrong_test(08-attention no_causal_skip SIM_ANALYSIS
    --expect-fail Performance.CausalSkipsTiles "attention_forward\\(T=1024, D=32\\): the causal call read (0\\.9[0-9]|1\\.[0-9]+) x the bytes")
endif()
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(08-attention unpadded_tiles SIM_ANALYSIS
    --expect-fail Performance.FusedTraffic "attention_forward_bf16\\(B=1, H=2, Tq=256.*\\): shared-memory loads took [2-9]\\.[0-9]+ wavefronts per 128 bytes.*pad each row")
endif()
if(WB_BACKEND STREQUAL "sim")
  # cusim's fault injection (cusim/checker.h, wb_host_checks.h): sim only.
  wb_known_wrong_test(08-attention set_attribute_error_ignored
    --expect-fail Correctness.HostReturnsCudaErrors "attention_forward\\(B=1, H=2, Tq=33, Tk=47, D=64, causal=1\\) with its 1st cudaFuncSetAttribute failing with cudaErrorInvalidValue returned the error, but only after going on: the launch of fused_forward_kernel")
  wb_known_wrong_test(08-attention backward_launch_unchecked
    --expect-fail Correctness.HostReturnsCudaErrors "attention_backward\\(B=1, H=2, Tq=33, Tk=47, D=64, causal=1\\) with its 2nd kernel launch failing with cudaErrorLaunchOutOfResources returned the error, but only after going on: the launch of backward_dq.*call cudaGetLastError\\(\\) right after each launch")
endif()

# Contracts between labs: the unfused version passes lab 06's softmax_forward() pointers that meet
# lab 06's promise (16-byte aligned, unfused_workspace()), so a lab-06 softmax that relies on the
# promise (tests/checker/lab06_right) works here too.
wb_known_right_test(08-attention lab06_softmax_rows_aligned_by_index
  DELTA lab06_right/softmax_rows_aligned_by_index.diff --expect-pass-check Correctness.Unfused)

wb_known_wrong_test(08-attention backward_causal_start_square
  --expect-fail Correctness.Backward "attention_backward\\(B=1, H=1, Tq=17, Tk=113, D=64, causal=1\\).*key rows of d[kv] are exactly 0 though queries see those keys.*aligned to the bottom right.*not from i = j as when Tq == Tk")
# Found by mutation testing (docs/perf/mutation.md): a row maximum that misses one 16-key fragment
# shows only where a key of that fragment scores far above the rest (the dominant rows).
wb_known_wrong_test(08-attention tc_row_max_skips_fragment
  --expect-fail Correctness.TensorCoreBf16 "attention_forward_bf16\\(.*That row is dominant")
