# Checker self-tests of lab 06 (softmax, layer norm, RMSNorm), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong version
# (<name>.diff: the solution with one mistake) is rejected by the named check with a message that
# names its mistake.
wb_lab_selftests(06-softmax-layernorm
  CHECKS "${WB_ROOT}/checker/labs/06-softmax-layernorm/check_softmax_layernorm.cpp"
  SKELETON "not implemented yet: (softmax_naive|softmax_block|softmax_online|softmax_forward|softmax_backward|layernorm_two_pass|layernorm_forward|layernorm_backward|rmsnorm_forward|rmsnorm_backward|softmax_forward_bf16|layernorm_forward_bf16) in labs/06-softmax-layernorm/softmax_layernorm.cu")

wb_known_wrong_test(06-softmax-layernorm no_max_subtraction
  --expect-fail Correctness.SoftmaxBlock "Row [0-9]+ is (offset by 1e4|a few values x 20).*An exponential overflowed.*Its argument must be x minus the row's maximum \\(max subtraction\\)")
wb_known_wrong_test(06-softmax-layernorm single_pass_variance
  --expect-fail Correctness.LayerNormTwoPass "rstd\\[[0-9]+\\] = .*Row [0-9]+ is mean 1e3, standard deviation 1\\..*catastrophic cancellation")
wb_known_wrong_test(06-softmax-layernorm online_no_rescale
  --expect-fail Correctness.SoftmaxOnline "Every y of row [0-9]+ is the expected value times [0-9.e+-]+ \\(the row sums to [0-9.e+-]+, not 1\\).*rescale the running sum by exp\\(m_old - m_new\\)")
wb_known_wrong_test(06-softmax-layernorm exp2_scaled_before_max
  --expect-fail Correctness.SoftmaxNaive "Row [0-9]+ is offset by 1e4.*An exponential overflowed.*exp2f\\(\\(x - max\\) \\* log2\\(e\\)\\) with the scaling applied to the difference")
wb_known_wrong_test(06-softmax-layernorm float4_past_row
  --expect-fail Correctness.SoftmaxForward "softmax_forward\\(rows=[0-9]+, cols=[0-9]+\\).*(cols = [0-9]+ is not a multiple of 4|wrote .* y)")
wb_known_wrong_test(06-softmax-layernorm masked_row_nan
  --expect-fail Correctness.SoftmaxOnline "Row [0-9]+ is fully masked: every element -inf\\. A fully masked row .*write zeros")
wb_known_wrong_test(06-softmax-layernorm naive_skips_last_row
  --expect-fail Correctness.SoftmaxNaive "softmax_naive\\(rows=[0-9]+, cols=[0-9]+\\).*got nothing \\(never written")
wb_known_wrong_test(06-softmax-layernorm backward_sign
  --expect-fail Correctness.SoftmaxBackward "softmax_backward\\(rows=[0-9]+, cols=[0-9]+\\).*elements of dx are wrong")
# No tool reports anything on sim: the analysis checks say the result was wrong, with no hint (a
# regex held in a variable must not contain a semicolon, which would split it: "." stands for it).
set(_no_verdict "")
if(WB_BACKEND STREQUAL "sim")
  set(_no_verdict
    --expect-fail Analysis.MemcheckClean "^A result was wrong, so this check \\(memcheck/initcheck\\) gives no verdict on this code. memcheck/initcheck reported nothing.*Correctness check.*layernorm_backward\\(rows=[0-9]+, cols=[0-9]+\\).*elements of dx are wrong"
    --expect-no-hint Analysis.MemcheckClean
    --expect-fail Analysis.BackwardNoAtomics "^A result was wrong, so this check \\(atomic operations\\) gives no verdict"
    --expect-no-hint Analysis.BackwardNoAtomics)
endif()
wb_known_wrong_test(06-softmax-layernorm layernorm_backward_no_mean_term
  --expect-fail Correctness.LayerNormBackward "layernorm_backward\\(rows=[0-9]+, cols=[0-9]+\\).*elements of dx are wrong"
  ${_no_verdict})
wb_known_wrong_test(06-softmax-layernorm partials_not_zeroed
  --expect-fail Correctness.LayerNormBackward "layernorm_backward\\(rows=[0-9]+, cols=[0-9]+\\).*elements of dgamma are wrong.*Its bytes are all ones: either no kernel wrote it, or it is a sum that started from memory nobody set.*set each partial sum to 0")
wb_known_wrong_test(06-softmax-layernorm rmsnorm_unbiased
  --expect-fail Correctness.RMSNormForward "rmsnorm_forward\\(rows=[0-9]+, cols=[0-9]+, eps=1e-5\\).*rrms\\[[0-9]+\\] = ")
wb_known_wrong_test(06-softmax-layernorm rmsnorm_backward_partial_rows
  --expect-fail Correctness.RMSNormBackward "elements of dgamma are wrong.*every row must contribute once")
wb_known_wrong_test(06-softmax-layernorm bf16_truncates
  --expect-fail Correctness.Bf16Forward "(softmax|layernorm)_forward_bf16\\(rows=[0-9]+, cols=[0-9]+.*elements of y are wrong")
if(WB_BACKEND STREQUAL "sim")
  # The report names the write of partial[] and its read, at their lines in this file.
  wb_known_wrong_test(06-softmax-layernorm missing_barrier SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "racecheck/synccheck report\\(s\\).*missing_barrier.cu:({{line:if (lane == 0) partial[warp] = v;}}|{{line:return warp_reduce(lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity, combine);}})")
  # The leading barrier missing: the race looks like an update of partial[w] (thread 0 read it, then
  # writes it), but by two statements: the hint is that barrier, not an atomic.
  wb_known_wrong_test(06-softmax-layernorm missing_leading_barrier SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "racecheck/synccheck report\\(s\\).*missing_leading_barrier.cu:{{line:if (lane == 0) partial[warp] = v;}}.*Hint: this thread read the word at .*missing_leading_barrier.cu:[0-9]+ and writes it at .*another statement.*put __syncthreads\\(\\) before the write")
  wb_known_wrong_test(06-softmax-layernorm atomic_backward SIM_ANALYSIS
    --expect-fail Analysis.BackwardNoAtomics "layernorm_backward\\(rows=1000, cols=100\\): [0-9]+ atomic operations"
    # cusim runs the blocks in a different order each time: the atomic sums differ between runs.
    --expect-fail Correctness.BackwardReproducible
                  "layernorm_backward\\(rows=1000, cols=100\\): run 2 gave a different dgamma from run 1 on the same inputs.*no atomicAdd for the sums over rows")
  wb_known_wrong_test(06-softmax-layernorm online_three_reads SIM_ANALYSIS
    --expect-fail Performance.OnlineSoftmaxReadsTwice "softmax_online\\(rows=32, cols=2048\\) read (2\\.[5-9][0-9]|3\\.[0-9]+) x the input's bytes")
  wb_known_wrong_test(06-softmax-layernorm uncached_rows SIM_ANALYSIS
    --expect-fail Performance.SoftmaxReadsOnce "softmax_forward\\(rows=32, cols=2048\\) read 2\\.00 x 4RC bytes \\(at most 1\\.05")
  wb_known_wrong_test(06-softmax-layernorm strided_block_softmax SIM_ANALYSIS
    --expect-fail Performance.BlockSoftmaxCoalesced "softmax_block: [0-9.]+ sectors per load request")
endif()
wb_known_wrong_test(06-softmax-layernorm eps_outside_sqrt
  --expect-fail Correctness.LayerNormForward "rstd\\[[0-9]+\\] = inf, expected .* This row's variance is 0 .*rstd = 1 / sqrt\\(0 \\+ eps\\), with eps inside the square root")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(06-softmax-layernorm layernorm_three_reads SIM_ANALYSIS
    --expect-fail Performance.LayerNormReadsOnce "layernorm_forward\\(rows=32, cols=2048\\) read 5\\.00 x 4RC bytes \\(at most 3\\.05")
  wb_known_wrong_test(06-softmax-layernorm reads_unwritten_partials SIM_ANALYSIS
    --expect-fail Analysis.MemcheckClean "[Uu]ninitialized __global__ memory read.*reads_unwritten_partials.cu")
endif()
# Found by mutation testing (docs/perf/mutation.md).
wb_known_wrong_test(06-softmax-layernorm backward_skips_one_float4_rows
  --expect-fail Correctness.LayerNormBackward "layernorm_backward\\(rows=7, cols=4\\).*dx was never written.*no kernel wrote a row of 4 columns")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(06-softmax-layernorm rows_taken_as_aligned SIM_ANALYSIS
    --expect-fail Performance.SoftmaxReadsOnce "softmax_forward\\(rows=16, cols=1001\\): its (loads|stores) use only [0-9.]+% .*not a multiple of 4.*first 16-byte boundary")
endif()
# Rows past the grid of the scalar backward (cols not a multiple of 4) get no dx.
wb_known_wrong_test(06-softmax-layernorm norm_backward_scalar_one_row_per_block
  --expect-fail Correctness.LayerNormBackward
                "layernorm_backward\\(rows=1000, cols=7\\) .*elements of dgamma are wrong.*every row must contribute once")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(06-softmax-layernorm naive_launch_error_dropped
    --expect-fail Correctness.HostReturnsCudaErrors
                  "softmax_naive\\(rows=33, cols=1000\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: softmax_naive ignored the error of that kernel launch")
endif()

# Known-right variants (tests/checker/lab06_right): layer norms the handout recommends, which the
# bounds must accept on rows of mean 1e3 and standard deviation 1.
wb_known_right_test(06-softmax-layernorm welford_one_thread --expect-pass-check Correctness.LayerNormForward)
wb_known_right_test(06-softmax-layernorm welford_chan_merge --expect-pass-check Correctness.LayerNormForward)
# A softmax_forward that relies on the header's promise of 16-byte-aligned pointers: lab 06 accepts
# it, and so must the labs that call it (tests/checker/lab08_wrong/tests.cmake).
wb_known_right_test(06-softmax-layernorm softmax_rows_aligned_by_index --expect-pass-check Correctness.SoftmaxForward)
