# Checker self-tests of lab 04 (scan and histogram), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# version (<name>.diff: the solution with one mistake) is rejected by the named check with
# a message that names its mistake.
wb_lab_selftests(04-scan-histogram
  CHECKS "${WB_ROOT}/checker/labs/04-scan-histogram/check_scan.cpp"
         "${WB_ROOT}/checker/labs/04-scan-histogram/check_histogram.cpp"
  SKELETON "not implemented yet: (scan_block_kogge_stone|scan_block_blelloch|scan_reduce_then_scan|inclusive_scan|exclusive_scan|histogram_global_atomics|histogram_shared|histogram) in labs/04-scan-histogram/scan_histogram.cu")

wb_known_wrong_test(04-scan-histogram exclusive_returns_inclusive
  --expect-fail Correctness.ExclusiveScan
                "exclusive_scan\\(n=[0-9]+\\) .*the first is out\\[0\\] = -?[0-9]+, expected 0 .*This looks like an inclusive scan")
wb_known_wrong_test(04-scan-histogram block_sums_not_added
  --expect-fail Correctness.ReduceThenScan
                "scan_reduce_then_scan\\(n=[0-9]+\\) .*the first is out\\[1024\\] = .*It equals in\\[1024\\] \\+ \\.\\.\\. \\+ in\\[1024\\] only: the 1024 elements before index 1024 were not added")
wb_known_wrong_test(04-scan-histogram last_partial_tile_dropped
  --expect-fail Correctness.InclusiveScan
                "inclusive_scan\\(n=[0-9]+\\) .*out\\[[0-9]+\\.\\.[0-9]+\\] were never written.*the last, partial tile was dropped"
  # The float scan runs the same template.
  --expect-fail Correctness.FloatScan "inclusive_scan\\(float, n=1\\) .*the first is out\\[0\\], never written")
wb_known_wrong_test(04-scan-histogram blelloch_root_not_cleared
  --expect-fail Correctness.BlellochBlock
                "scan_block_blelloch\\(n=1\\) .*the first is out\\[0\\] = -?[0-9]+, expected 0 \\(in\\[0\\] = ")
# The first wrong stretch is tile 1, every element off by the tile's own sum.
wb_known_wrong_test(04-scan-histogram lookback_returns_inclusive_prefix
  --expect-fail Correctness.ScanLarge
                "inclusive_scan\\(n=[0-9]+\\) .*out\\[[0-9]+\\.\\.[0-9]+\\] \\([0-9]+ elements\\) are all off by [0-9]+: the prefix added to the tile that starts at index [0-9]+ was wrong by exactly the sum of in\\[[0-9]+\\.\\.[0-9]+\\], the tile itself: its offset must be the sum of the elements before the tile")
wb_known_wrong_test(04-scan-histogram histogram_counts_out_of_range
  --expect-fail Correctness.HistogramGlobalAtomics
                "histogram_global_atomics\\(n=[0-9]+, num_bins=[0-9]+\\) \\[uniform, ~1% out of range\\]: .*values >= num_bins were counted: they must be ignored")
wb_known_wrong_test(04-scan-histogram histogram_bins_not_cleared
  --expect-fail Correctness.Histogram "histogram\\(n=[0-9]+, num_bins=[0-9]+\\) .*d_bins was not set to zero before counting")
wb_known_wrong_test(04-scan-histogram histogram_global_reads_past_n
  --expect-fail Correctness.HistogramIgnoresValuesPastN
                "histogram_global_atomics\\(n=1000, num_bins=7\\) \\[uniform, ~1% out of range, 1024 zeros after d_values\\[n-1\\]\\]: .*bins\\[0\\] holds [0-9]+ values too many: the 1024 zeros after the input in memory .* were counted.*test every index against n")
if(WB_BACKEND STREQUAL "sim")
  # cusim's device memory and fault injection (cusim/checker.h, wb_host_checks.h): sim only.
  wb_known_wrong_test(04-scan-histogram histogram_memset_unchecked
    --expect-fail Correctness.HostReturnsCudaErrors
                  "histogram_global_atomics\\(n=0, num_bins=256\\) \\[uniform, ~1% out of range\\] with its 1st cudaMemsetAsync failing with cudaErrorLaunchFailure returned cudaSuccess: histogram_global_atomics ignored the error of that cudaMemsetAsync")
  wb_known_wrong_test(04-scan-histogram recursive_scan_error_ignored
    --expect-fail Correctness.HostReturnsCudaErrors
                  "scan_reduce_then_scan\\(n=5000\\) with its 2nd kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: scan_reduce_then_scan ignored the error of that kernel launch")
  wb_known_wrong_test(04-scan-histogram scan_workspace_clear_unchecked
    --expect-fail Correctness.HostReturnsCudaErrors
                  "inclusive_scan\\(n=5000\\) with its 1st cudaMemsetAsync failing with cudaErrorLaunchFailure returned the error, but only after going on: the launch of scan_single_pass_kernel<T, kInclusive> at .*scan_workspace_clear_unchecked.cu:{{line:scan_single_pass_kernel<T, kInclusive><<<}} came after the failed cudaMemsetAsync")
  wb_known_wrong_test(04-scan-histogram histogram_leaks_counts
    --expect-fail Correctness.HostFreesDeviceMemory
                  "histogram\\(n=0, num_bins=256\\) \\[uniform, ~1% out of range\\] left 1 device allocation\\(s\\) \\(1024 bytes\\) behind: every cudaMalloc in histogram needs its cudaFree"
    --expect-fail Correctness.HostReturnsCudaErrors
                  "histogram\\(n=0, num_bins=256\\) \\[uniform, ~1% out of range\\] with its 1st cudaMemcpyAsync failing with cudaErrorLaunchFailure returned the error but left 1 device allocation\\(s\\) \\(1024 bytes\\) behind: free what histogram had already allocated on its error paths")
  # The launch log (sim) shows the block past n; the counts are right.
  # The launch log (sim) shows the capped grid; the grid-stride loop keeps the counts right.
  wb_known_wrong_test(04-scan-histogram histogram_shared_grid_capped_at_65535
    --expect-fail Correctness.HistogramShared
                  "histogram_shared\\(n=2097158, num_bins=7, num_blocks=65600, block_size=32\\) \\[uniform, ~1% out of range\\] counted right, but no launch had 65600 blocks of 32 threads.*grid 65535 x 1 x 1, block 32 x 1 x 1.*65535 is the limit of gridDim.y and gridDim.z, but gridDim.x goes to 2\\^31 - 1")
  wb_known_wrong_test(04-scan-histogram histogram_global_extra_block
    --expect-fail Performance.NoIdleBlocks
                  "histogram_global_atomics\\(n=256, num_bins=256\\) \\[uniform, ~1% out of range\\] launched histogram_global_kernel[^ ]* with grid 2 x 1 x 1, block 256 x 1 x 1: 512 threads for 256 elements, more than n rounded up to whole blocks \\(256\\)")
  wb_known_wrong_test(04-scan-histogram histogram_block_not_whole_warps
    --expect-fail Performance.NoIdleBlocks
                  "histogram\\(n=256, num_bins=256\\) \\[uniform, ~1% out of range\\] launched histogram_final_kernel[^ ]* with grid 1 x 1 x 1, block 511 x 1 x 1: blocks of 511 threads are not whole warps.* 1 of its 32 lanes idle")
  wb_known_wrong_test(04-scan-histogram lookback_inclusive_never_published SIM_ANALYSIS
    --expect-fail Performance.ScanTrafficPerElement
                  "inclusive_scan moved [0-9.]+ x 4n bytes of global memory at n=262147 but [0-9.]+ x 4n at n=4194307 \\(at most 0.05 x 4n more allowed\\): the traffic per element grows with n.*never publishes its inclusive prefix")
  wb_known_wrong_test(04-scan-histogram histogram_merges_empty_bins SIM_ANALYSIS
    --expect-fail Performance.HistogramTraffic
                  "histogram\\(n=1048583, num_bins=4096\\) \\[all values in bin 4095\\]: [0-9]+ atomic operations on global memory for [0-9]+ blocks launched.*Bins whose shared count is 0 were merged too")
  # Threads t < d read the shared memory before the array: memcheck names the read (its wrong
  # sums fail the correctness check of the block scan too).
  wb_known_wrong_test(04-scan-histogram kogge_stone_reads_before_tile SIM_ANALYSIS
    --expect-fail Analysis.MemcheckClean
                  "[0-9]+ memcheck/initcheck report\\(s\\).*Invalid __shared__ read of size 4 bytes.*kogge_stone_reads_before_tile.cu:{{line:v += values[t - d]}}.*bytes before the start of the block's shared memory")
  # The report names the read of values[t - d] and the write of values[t] in the same step.
  wb_known_wrong_test(04-scan-histogram kogge_stone_missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*kogge_stone_missing_syncthreads.cu:({{line:v += values[t - d]}}|{{line:values[t] = v}}).*kogge_stone_missing_syncthreads.cu:({{line:v += values[t - d]}}|{{line:values[t] = v}})"
    # The race leads the wrong prefix sums of the same run.
    --expect-fail Correctness.KoggeStoneBlock "Race reported between .* in kernel 'scan_kogge_stone_kernel'")
  # The report names the value's store, the flag's store and the successor's read of the status
  # word; on a CPU the two stores stay in order, so only racecheck's flag-protocol check sees it.
  wb_known_wrong_test(04-scan-histogram lookback_flag_before_value_visible SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Flag protocol hazard: a value published without __threadfence\\(\\) is read by another block in kernel 'scan_single_pass_kernel.*value stored at .*lookback_flag_before_value_visible.cu:{{line:halves[0] = value_bits}} .*published by the flag store at .*lookback_flag_before_value_visible.cu:{{line:halves[1] = kFlagAggregate}} .*read at .*lookback_flag_before_value_visible.cu:{{line:word = status[predecessor]}} .*call __threadfence\\(\\), then set the flag")
  # The report names local_bins[v] += 1u, and advises an atomic (not a barrier). On the sim backend the
  # lanes of a warp run one after another, so no count is lost there; racecheck sees the hazard.
  wb_known_wrong_test(04-scan-histogram histogram_nonatomic_shared SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*histogram_nonatomic_shared.cu:{{line:local_bins[v] += 1u}}.*two threads update the same word.*Use an atomic")
  wb_known_wrong_test(04-scan-histogram histogram_not_privatized SIM_ANALYSIS
    --expect-fail Performance.HistogramPrivatized
                  "histogram_shared\\(n=262149, num_bins=256, num_blocks=16, block_size=256\\) \\[uniform, ~1% out of range\\]: [0-9]+ atomic operations on global memory \\(at most num_blocks x num_bins = 4096\\)")
  wb_known_wrong_test(04-scan-histogram strided_tile_loads SIM_ANALYSIS
    --expect-fail Performance.ReduceThenScanTraffic
                  "scan_reduce_then_scan\\(n=262147\\): loads touch [0-9.]+ and stores [0-9.]+ global memory sectors per request \\(at most 4.00 allowed\\)")
  wb_known_wrong_test(04-scan-histogram naive_global_scan SIM_ANALYSIS
    --expect-fail Performance.ScanTraffic
                  "inclusive_scan\\(n=262147\\) read and wrote [0-9.]+ x 4n bytes of global memory \\(at most 3.1 allowed\\)")
else()
  # On a GPU the lost updates show in the counts (every value in one bin collides).
  wb_known_wrong_test(04-scan-histogram histogram_nonatomic_shared
    --expect-fail Correctness.HistogramShared "counts were lost.*must be atomic")
  wb_known_wrong_test(04-scan-histogram naive_global_scan
    --expect-fail Performance.ScanBandwidthVsDeviceCopy "needs 0.6 x the copy bandwidth")
endif()
