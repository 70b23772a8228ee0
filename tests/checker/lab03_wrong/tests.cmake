# Checker self-tests of lab 03 (parallel reduction), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# version (<name>.diff: the solution with one mistake) is rejected by the named check with
# a message that names its mistake.
wb_lab_selftests(03-reduction
  CHECKS "${WB_ROOT}/checker/labs/03-reduction/check_reduction.cpp"
  SKELETON "not implemented yet: reduce_(sum_interleaved|sum_sequential|sum_first_add|sum_warp_shuffle|sum_grid_stride|sum|max|min) in labs/03-reduction/reduction.cu")

if(WB_BACKEND STREQUAL "sim")
  # The NaN guard zones around d_in show the read past the end in the memcheck run too
  # (Analysis.* runs on sim only). "d_in.0", not "d_in\\[0": a regex with an unbalanced [ would
  # swallow the arguments after it into one (CMake does not split a list inside brackets).
  wb_known_wrong_test(03-reduction off_by_one_second_load
    --expect-fail Correctness.FirstAddSum "the result is NaN.*elements outside d_in.0\\.\\.n\\) were read"
    --expect-fail Analysis.MemcheckClean
                  "reduce_sum_first_add\\(n=1000, block_size=64\\).*the result is NaN.*elements outside d_in.0\\.\\.n\\) were read")
else()
  wb_known_wrong_test(03-reduction off_by_one_second_load
    --expect-fail Correctness.FirstAddSum "the result is NaN.*elements outside d_in.0\\.\\.n\\) were read")
endif()
wb_known_wrong_test(03-reduction warp_tail_drops_upper_half
  --expect-fail Correctness.WarpShuffleSum
                "reduce_sum_warp_shuffle\\(n=[0-9]+, block_size=[0-9]+\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly")
wb_known_wrong_test(03-reduction final_tail_dropped
  --expect-fail Correctness.SumAllSizes "reduce_sum\\(n=1\\) \\[exact integer data, seed [0-9]+\\]: got 0, expected [0-9]+ exactly"
  --expect-fail Correctness.SumLarge
                "reduce_sum\\(n=67108863\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly")
wb_known_wrong_test(03-reduction missing_atomic
  --expect-fail Correctness.GridStrideSum
                "reduce_sum_grid_stride\\(n=[0-9]+, num_blocks=[0-9]+, block_size=[0-9]+\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly")
wb_known_wrong_test(03-reduction max_starts_at_zero
  --expect-fail Correctness.MaxMin "reduce_max\\(n=0\\) .*: got 0, expected -inf \\(the max of no elements is the identity")
wb_known_wrong_test(03-reduction pass_grid_capped_at_65535
  --expect-fail Correctness.InterleavedSum
                "reduce_sum_interleaved\\(n=4194241, block_size=64\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly.*the sum of the first 4194240 elements only.*65536 blocks of 64 threads.*65535 is the limit of gridDim.y and gridDim.z")
wb_known_wrong_test(03-reduction max_negative_int_atomic
  --expect-fail Correctness.MaxMin
                "reduce_max\\(n=1048583\\) \\[positive elements only among the first 4096, the rest negative\\]: got -[0-9.e+-]+, expected [0-9.e+-]+.*a negative block result replaced a positive one")
if(WB_BACKEND STREQUAL "sim")
  # cusim's device memory and fault injection (cusim/checker.h, wb_host_checks.h): sim only.
  wb_known_wrong_test(03-reduction grid_stride_memset_unchecked
    --expect-fail Correctness.HostReturnsCudaErrors
                  "reduce_sum_grid_stride\\(n=0, num_blocks=4, block_size=128\\) with its 1st cudaMemsetAsync failing with cudaErrorLaunchFailure returned the error, but only after going on: the launch of reduce_grid_stride_kernel at .*grid_stride_memset_unchecked.cu:{{line:reduce_grid_stride_kernel<<<}} came after the failed cudaMemsetAsync")
  wb_known_wrong_test(03-reduction final_launch_unchecked
    --expect-fail Correctness.HostReturnsCudaErrors
                  "reduce_sum\\(n=1000\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned the error, but only after going on: the launch of reduce_final_kernel<Op> at .*final_launch_unchecked.cu:{{line:reduce_final_kernel<Op><<<}} came after the failed kernel launch")
  wb_known_wrong_test(03-reduction passes_leak_scratch
    --expect-fail Correctness.HostFreesDeviceMemory
                  "reduce_sum_interleaved\\(n=1000, block_size=256\\) left 1 device allocation\\(s\\) \\(132 bytes\\) behind: every cudaMalloc in reduce_sum_interleaved needs its cudaFree")
  # The report names the store into sdata and the first tree step.
  wb_known_wrong_test(03-reduction missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:({{line:sdata[t] = i < n ? in[i]}}|{{line:if (t < s) sdata[t] += sdata[t + s]}}).*missing_syncthreads.cu:({{line:sdata[t] = i < n ? in[i]}}|{{line:if (t < s) sdata[t] += sdata[t + s]}})"
    # The race leads the wrong sum of the same run.
    --expect-fail Correctness.SequentialSum
                  "Race reported between .* in kernel 'reduce_sequential_kernel'.*reduce_sum_sequential\\(n=[0-9]+, block_size=[0-9]+\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly")
  # Results are right; only cusim's access metrics see the shared-memory tail.
  wb_known_wrong_test(03-reduction warp_tail_in_shared SIM_ANALYSIS
    --expect-fail Performance.WarpShuffleTail "reduce_sum_warp_shuffle\\(block_size=[0-9]+\\): [0-9.]+ shared-memory requests per block")
  wb_known_wrong_test(03-reduction strided_first_add SIM_ANALYSIS
    --expect-fail Performance.FirstAddHalvesBlocks
                  "reduce_sum_first_add: its loads touch [0-9.]+ global memory sectors per request \\(at most 4.00 allowed\\)")
  wb_known_wrong_test(03-reduction first_add_too_many_blocks SIM_ANALYSIS
    --expect-fail Performance.FirstAddHalvesBlocks "reduce_sum_first_add: its blocks stored [0-9]+ partial sums over all passes")
  wb_known_wrong_test(03-reduction conflicting_sequential SIM_ANALYSIS
    --expect-fail Performance.SequentialNoBankConflicts "reduce_sum_sequential: shared-memory bank conflicts")
  wb_known_wrong_test(03-reduction pass_blocks_rounded_past_multiple
    --expect-fail Performance.NoIdleBlocks
                  "reduce_sum_interleaved\\(n=2048, block_size=64\\) launched [0-9]+ threads \\([^)]*reduce_interleaved_kernel grid [0-9]+ x 1 x 1, block 64 x 1 x 1.*its passes need 33 blocks of 64 threads.*no element to reduce")
  wb_known_wrong_test(03-reduction final_grid_ignores_n
    --expect-fail Performance.NoIdleBlocks
                  "reduce_sum\\(n=33\\) launched reduce_final_kernel[^ ]* with grid [0-9]+ x 1 x 1 of 512 threads: [0-9]+ threads for 33 elements, more than n rounded up to whole blocks \\(512\\)")
  wb_known_wrong_test(03-reduction scalar_final_loads SIM_ANALYSIS
    --expect-fail Performance.FinalLoadsVectorized
                  "reduce_sum: its loads touch [0-9.]+ global memory sectors per request \\(at least 12.00 expected\\)")
  wb_known_wrong_test(03-reduction strided_final_float4 SIM_ANALYSIS
    --expect-fail Performance.FinalLoadsVectorized
                  "reduce_sum: its loads touch [0-9.]+ global memory sectors per request \\(at most 20.00 allowed\\)")
  wb_known_wrong_test(03-reduction atomic_per_thread SIM_ANALYSIS
    --expect-fail Performance.OneAtomicPerBlock
                  "[0-9]+ atomic operations for 64 blocks \\([0-9.]+ per block; exactly 1 expected\\)")
  wb_known_wrong_test(03-reduction final_tail_reads_twice SIM_ANALYSIS
    --expect-fail Performance.SumReadsOnce
                  "reduce_sum read [0-9]+ bytes for n = 1048583 floats \\([0-9.]+ x 4n; at most 1\\.01 allowed\\): some elements are read more than once")
  # Not a mistake: warp reductions written with cooperative groups (cg::reduce) pass every check.
  wb_known_wrong_test(03-reduction right_cg_reduce SIM_ANALYSIS --expect-pass)
endif()
