# Known-wrong versions of lab 07's part 2 (solutions/07-convolution/pooling_batchnorm.cu),
# included by tests.cmake.
# Each <name>.diff is the solution with one mistake; the named check must reject it with a message
# that names that mistake.
wb_known_wrong_test(07-convolution pool_backward_whole_window
  --expect-fail Correctness.MaxPoolBackward "maxpool2d_backward\\(N=.*elements of dx are wrong.*That is the sum of dy over every window containing this pixel")
wb_known_wrong_test(07-convolution pool_max_padding_wins
  --expect-fail Correctness.MaxPoolForward "maxpool2d_forward\\(N=.*This plane is all negative.*the padding was taken as a candidate")
wb_known_wrong_test(07-convolution pool_tie_last
  --expect-fail Correctness.MaxPoolForward "argmax\\[n=[0-9]+\\]\\[c=[0-9]+\\]\\[p=[0-9]+\\]\\[q=[0-9]+\\] = [0-9]+, expected .*on a tie the first pixel of the window in row-major order")
wb_known_wrong_test(07-convolution pool_avg_divisor_swapped
  --expect-fail Correctness.AvgPoolForward "avgpool2d_forward\\(N=.*count_include_pad=[01]\\).*the divisor conventions are swapped")
wb_known_wrong_test(07-convolution pool_avg_backward_divisor
  --expect-fail Correctness.AvgPoolBackward "avgpool2d_backward\\(N=.*count_include_pad=0\\).*The result used the other divisor convention")
wb_known_wrong_test(07-convolution bn_unbiased_normalization
  --expect-fail Correctness.BatchNormTraining "save_rstd\\[[0-9]+\\] = .*M = N \\* HW = 2 values\\).*normalized with the biased variance")
wb_known_wrong_test(07-convolution bn_running_var_biased
  --expect-fail Correctness.BatchNormTraining "running_var\\[[0-9]+\\] = .*The result took the biased variance")
wb_known_wrong_test(07-convolution bn_single_pass_variance
  --expect-fail Correctness.BatchNormTraining "save_rstd\\[[0-9]+\\] = .*of mean 1e3 and standard deviation 1.*catastrophic cancellation")
wb_known_wrong_test(07-convolution bn_inference_channel_nhwc
  --expect-fail Correctness.BatchNormInference "batchnorm_forward_inference\\(N=.*The result used channel [0-9]+ = index % C")
wb_known_wrong_test(07-convolution bn_inference_folds_into_gamma
  --expect-fail Correctness.BatchNormInference "batchnorm_forward_inference\\(N=.*modified gamma, which is an input")
wb_known_wrong_test(07-convolution bn_backward_no_mean_terms
  --expect-fail Correctness.BatchNormBackward "batchnorm_backward\\(N=.*elements of dx are wrong.*the mean terms .* are missing")
wb_known_wrong_test(07-convolution bn_partials_accumulate
  --expect-fail Correctness.BatchNormReproducible "batchnorm_backward\\(N=.*\\): run 2 gave a different (dx|dgamma|dbeta) from run 1")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(07-convolution bn_finalize_reads_all_splits SIM_ANALYSIS
    --expect-fail Analysis.PoolBatchNormMemcheckClean "memcheck/initcheck report\\(s\\).*[Uu]ninitialized __global__ memory read.*bn_finalize_reads_all_splits.cu:{{line:w = combine(w, Welford{in[0], in[1], in[2]});}}")
  # The report names the write of the shared parameters and their read, at their lines in the mutated file.
  wb_known_wrong_test(07-convolution bn_missing_barrier SIM_ANALYSIS
    --expect-fail Analysis.PoolBatchNormRacecheckClean
                  "racecheck/synccheck report\\(s\\).*bn_missing_barrier.cu:({{line:for (int k = 0; k < K; ++k) shared[k] = v[k];}}|{{line:for (int k = 0; k < K; ++k) v[k] = shared[k];}})")
  # A struct read straight into a call argument: visible only through cusim's GCC plugin.
  if(TARGET cusim_gcc_plugin)
    wb_known_wrong_test(07-convolution bn_reduce_missing_barrier SIM_ANALYSIS
      --expect-fail Analysis.PoolBatchNormRacecheckClean
                    "racecheck/synccheck report\\(s\\).*bn_reduce_missing_barrier.cu:({{line:if (lane == 0) partial[warp] = v;}}|{{line:return warp_reduce(lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity, combine);}})")
  endif()
  wb_known_wrong_test(07-convolution bn_backward_atomics SIM_ANALYSIS
    --expect-fail Analysis.BatchNormNoAtomics "batchnorm_backward\\(N=8, C=2, HW=1000\\): [1-9][0-9]* atomic operations")
  wb_known_wrong_test(07-convolution pool_backward_scatter_atomics SIM_ANALYSIS
    --expect-fail Analysis.MaxPoolBackwardNoAtomics "maxpool2d_backward\\(N=2, C=4, H=33, W=35, .*\\): [1-9][0-9]* atomic operations")
  wb_known_wrong_test(07-convolution pool_uncoalesced SIM_ANALYSIS
    --expect-fail Performance.PoolCoalesced "maxpool2d_forward\\(N=2, C=16, H=32, W=64, window 3x3, stride 2x2, pad 1x1\\): [1-3][0-9]\\.[0-9]+ sectors per load request")
  wb_known_wrong_test(07-convolution pool_argmax_second_pass SIM_ANALYSIS
    --expect-fail Performance.PoolReadsOnce "maxpool2d_forward\\(N=2, C=16, H=32, W=64, window 3x3, stride 2x2, pad 1x1\\) read (1\\.[89][0-9]|2\\.[0-9]+) x the bytes of one read per \\(window, pixel\\) pair")
  wb_known_wrong_test(07-convolution bn_three_reads SIM_ANALYSIS
    --expect-fail Performance.BatchNormReadsTwice "batchnorm_forward_training\\(N=4, C=4, HW=16384\\) read 3\\.00 x 4NCHW bytes \\(at most 2\\.05")
  wb_known_wrong_test(07-convolution bn_inference_strided SIM_ANALYSIS
    --expect-fail Performance.BatchNormCoalesced "batchnorm_forward_inference\\(N=4, C=4, HW=16384\\): its loads use only [0-9.]+% of the bytes")
endif()
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(07-convolution pool_backward_launch_error_dropped
    --expect-fail Correctness.PoolBnHostReturnsCudaErrors
                  "maxpool2d_backward\\(N=2, C=3, H=9, W=9, .*\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: maxpool2d_backward ignored the error of that kernel launch")
endif()
