# Checker self-tests of lab 07 (convolution; pooling and batch normalization), included by
# tests/checker/CMakeLists.txt: the solution passes, the skeleton fails with "not implemented
# yet", and each known-wrong version (<name>.diff: one of the solution's files with one mistake)
# is rejected by the named check with a message that names its mistake. Part 2's known-wrong
# versions are listed in pooling_batchnorm.cmake.
wb_lab_selftests(07-convolution
  CHECKS "${WB_ROOT}/checker/labs/07-convolution/check_convolution.cpp"
         "${WB_ROOT}/checker/labs/07-convolution/check_pooling.cpp"
         "${WB_ROOT}/checker/labs/07-convolution/check_batchnorm.cpp"
  SKELETON "not implemented yet: (conv2d_direct|conv2d_im2col|conv2d_implicit_gemm|conv2d_forward|conv2d_backward_data|conv2d_backward_filter|conv2d_bn_relu_inference|maxpool2d_forward|maxpool2d_backward|avgpool2d_forward|avgpool2d_backward|batchnorm_forward_training|batchnorm_forward_inference|batchnorm_backward) in labs/07-convolution/(convolution|pooling_batchnorm).cu")

include("${CMAKE_CURRENT_LIST_DIR}/pooling_batchnorm.cmake")

wb_known_wrong_test(07-convolution conv_padding_not_subtracted
  --expect-fail Correctness.ConvDirect "conv2d_direct\\(N=[0-9]+, .*pad=.*Likely mistake: the result equals a convolution that does not subtract the padding")
# Every check that runs a convolution has shapes whose padding, stride and dilation differ per axis.
wb_known_wrong_test(07-convolution fused_pad_h_for_width
  --expect-fail Correctness.ConvBnReluInference "conv2d_bn_relu_inference\\(N=[0-9]+, .*pad=2x0.*elements of y are wrong.*Likely mistake: the result equals a convolution that uses pad_h for the width axis too")
wb_known_wrong_test(07-convolution conv_no_dilation
  --expect-fail Correctness.ConvDirect "conv2d_direct\\(.*dilation=2x2\\).*Likely mistake: the result equals a convolution that ignores the dilation")
wb_known_wrong_test(07-convolution conv_stride_twice
  --expect-fail Correctness.ConvIm2col "conv2d_im2col\\(.*stride=.*Likely mistake: the result equals a convolution that applies the stride twice")
wb_known_wrong_test(07-convolution conv_filter_ck
  --expect-fail Correctness.ConvImplicitGemm "conv2d_implicit_gemm\\(.*Likely mistake: the result equals a convolution that reads the filters as C x K x R x S")
wb_known_wrong_test(07-convolution conv_dgrad_unflipped
  --expect-fail Correctness.ConvBackwardData "conv2d_backward_data\\(.*elements of dx are wrong.*Likely mistake: the result equals one with the filter flipped")
wb_known_wrong_test(07-convolution conv_wgrad_drops_split
  --expect-fail Correctness.ConvBackwardFilter "conv2d_backward_filter\\(N=8, C=4, H=24, W=24, K=8, R=3, S=3, pad=1x1\\).*elements of dw are wrong")
wb_known_wrong_test(07-convolution conv_border_unchecked
  --expect-fail Correctness.ConvImplicitGemm "conv2d_implicit_gemm\\(.*got nan.*a NaN here comes from a read outside an input array \\(a tap in the padding read without testing h and w")
wb_known_wrong_test(07-convolution nhwc_padding_not_subtracted
  --expect-fail Correctness.ConvForward
                "conv2d_forward\\(N=[0-9]+, .*pad=.*Likely mistake: the result equals a convolution that does not subtract the padding")
wb_known_wrong_test(07-convolution conv_fused_relu_first
  --expect-fail Correctness.ConvBnReluInference "conv2d_bn_relu_inference\\(.*elements of y are wrong")
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(07-convolution conv_tile_no_barrier SIM_ANALYSIS
    --expect-fail Analysis.ConvRacecheckClean "racecheck/synccheck report\\(s\\).*conv_tile_no_barrier.cu:({{line:As[kk_local][tid % kIgBM] = v;}}|{{line:Bs[b_kk][k_local] = (k < s.K && kk < crs_count) ? w[static_cast<std::size_t>(k) * crs_count + kk] : 0.0f;}}|{{line:for (int i = 0; i < 4; ++i) a[i] = As[d][tm + 16 * i];}}|{{line:for (int j = 0; j < 4; ++j) b[j] = Bs[d][tn * 4 + j];}})")
  wb_known_wrong_test(07-convolution conv_wgrad_atomics SIM_ANALYSIS
    --expect-fail Analysis.WgradNoAtomics "conv2d_backward_filter\\(N=8, .*\\): [0-9]+ atomic operations"
    # cusim runs the blocks in a different order each time: the atomic sums differ between runs.
    --expect-fail Correctness.ConvBackwardFilterReproducible
                  "conv2d_backward_filter\\(N=8, .*\\): run [23] gave a different dw from run 1 on the same inputs \\(dw\\[[0-9]+\\]: .*not with atomicAdd")
  wb_known_wrong_test(07-convolution conv_implicit_workspace SIM_ANALYSIS
    --expect-fail Performance.ImplicitGemmNoWorkspace "conv2d_implicit_gemm\\(N=1, C=64, .*\\) wrote [0-9]+ bytes to global memory, 10\\.00 x")
  wb_known_wrong_test(07-convolution conv_implicit_is_direct SIM_ANALYSIS
    --expect-fail Performance.ImplicitGemmReuse "conv2d_implicit_gemm\\(N=1, C=64, .*\\) read [3-9]\\.[0-9]+ bytes of global memory per flop"
    --expect-fail Performance.ImplicitGemmSharedConflicts "used no shared memory")
  wb_known_wrong_test(07-convolution conv_filter_tile_uncoalesced SIM_ANALYSIS
    --expect-fail Performance.ImplicitGemmCoalesced "conv2d_implicit_gemm\\(N=1, C=64, .*\\): global loads touch ([89]\\.[0-9]+|[1-3][0-9]\\.[0-9]+) 32-byte sectors")
  wb_known_wrong_test(07-convolution conv_tile_unpadded SIM_ANALYSIS
    --expect-fail Performance.ImplicitGemmSharedConflicts "conv2d_implicit_gemm\\(N=1, C=64, .*\\): shared-memory loads take [0-9.]+ and stores [2-9]\\.[0-9]+ wavefronts")
  wb_known_wrong_test(07-convolution conv_forward_scalar_loads SIM_ANALYSIS
    --expect-fail Performance.ForwardVectorized "conv2d_forward\\(N=1, C=64, .*\\): global loads carry 1[0-9][0-9]\\.[0-9]+ bytes per warp request")
endif()
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(07-convolution conv_wgrad_reads_unwritten SIM_ANALYSIS
    --expect-fail Analysis.ConvMemcheckClean "memcheck/initcheck report\\(s\\).*conv_wgrad_reads_unwritten.cu:{{line:for (int z = 0; z < splits; ++z) sum += partial[static_cast<std::size_t>(z) * count + i];}}")
endif()
if(WB_BACKEND STREQUAL "sim")
  wb_known_wrong_test(07-convolution direct_launch_error_dropped
    --expect-fail Correctness.ConvHostReturnsCudaErrors
                  "conv2d_direct\\(N=2, C=3, H=9, W=9, K=4, R=3, S=3, pad=1x1\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: conv2d_direct ignored the error of that kernel launch")
endif()
if(WB_BACKEND STREQUAL "sim")
  # A scatter without an atomic passes every correctness check on sim (threads run one after
  # another) and has no atomics: cusim's racecheck on global memory names the lost update.
  wb_known_wrong_test(07-convolution maxpool_scatter_no_atomic SIM_ANALYSIS
    --expect-fail Analysis.PoolBatchNormRacecheckClean
                  "racecheck/synccheck report\\(s\\).*Lost update on __global__ memory.*maxpool_scatter_no_atomic.cu:{{line:dx[(i / pq) * hw + argmax[i]] += dy[i];}}.*Use an atomic \\(atomicAdd\\), or gather")
  # Right results, and every sector fully used, but only the sim metrics show what each costs on a
  # GPU (the 2026-11-28 mutation run's survivors): the scalar batch-norm path where planes allow
  # float4s (bytes per request), and a max-pooling window test that loads the argmax of a window
  # ending before the pixel (reads per (window, pixel) pair, windows with gaps).
  wb_known_wrong_test(07-convolution bn_backward_scalar_when_vectorizable SIM_ANALYSIS
    --expect-fail Performance.BatchNormCoalesced
                  "batchnorm_backward\\(N=4, C=4, HW=16384\\): its loads carry 1[0-9][0-9] bytes per warp request \\(at least 384.*take the vectorized path"
    --expect-pass-check Correctness.BatchNormBackward)
  wb_known_wrong_test(07-convolution maxpool_backward_window_test_not_strict SIM_ANALYSIS
    --expect-fail Performance.PoolReadsOnce
                  "maxpool2d_backward\\(N=2, C=16, H=32, W=64, window 2x2, stride 3x3, pad 0x0\\) read [0-9.]+ x the bytes of one read per \\(window, pixel\\) pair"
    --expect-pass-check Correctness.MaxPoolBackward)
endif()
