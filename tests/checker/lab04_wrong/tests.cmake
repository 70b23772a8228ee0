# Checker self-tests of lab 04 (scan and histogram), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# implementation in this directory is rejected by the named check with a message that
# names its mistake.
set(_lab04_checks "${WB_ROOT}/checker/labs/04-scan-histogram/check_scan_histogram.cpp")
set(_lab04_wrong_dir "${CMAKE_CURRENT_LIST_DIR}")

if(TARGET check_04_scan_histogram_solution)
  set(_allow "")
  if(WB_BACKEND STREQUAL "sim" AND NOT WB_SIM_ANALYSIS)
    set(_allow --allow-not-measured)
  endif()
  add_test(NAME checker.lab04.solution_passes
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 04-scan-histogram --backend ${WB_BACKEND}
                   --binary $<TARGET_FILE:check_04_scan_histogram_solution> --expect-pass ${_allow})
endif()
if(TARGET check_04_scan_histogram)
  add_test(NAME checker.lab04.skeleton_not_implemented
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 04-scan-histogram
                   --binary $<TARGET_FILE:check_04_scan_histogram>
                   --expect-all-fail "not implemented yet: (scan_block_kogge_stone|scan_block_blelloch|scan_reduce_then_scan|inclusive_scan|exclusive_scan|histogram_global_atomics|histogram_shared|histogram) in labs/04-scan-histogram/scan_histogram.cu")
endif()

# _wb_lab04_wrong(<name> [SIM_ANALYSIS] --expect-fail <Check> <regex> ...)
# SIM_ANALYSIS: the expectation needs cusim analysis (disabled when WB_SIM_ANALYSIS is OFF).
function(_wb_lab04_wrong name)
  cmake_parse_arguments(PARSE_ARGV 1 A "SIM_ANALYSIS" "" "")
  set(target checker_lab04_${name})
  if(NOT TARGET ${target})
    wb_add_check_binary(${target} LAB 04-scan-histogram CHECKS ${_lab04_checks}
                        LAB_SOURCES "${_lab04_wrong_dir}/${name}.cu")
  endif()
  add_test(NAME checker.lab04_wrong.${name}
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 04-scan-histogram --binary $<TARGET_FILE:${target}>
                   ${A_UNPARSED_ARGUMENTS})
  if(A_SIM_ANALYSIS AND NOT WB_SIM_ANALYSIS)
    set_tests_properties(checker.lab04_wrong.${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

_wb_lab04_wrong(exclusive_returns_inclusive
  --expect-fail Correctness.ExclusiveScan
                "exclusive_scan\\(n=[0-9]+\\) .*the first is out\\[0\\] = -?[0-9]+, expected 0 .*This looks like an inclusive scan")
_wb_lab04_wrong(block_sums_not_added
  --expect-fail Correctness.ReduceThenScan
                "scan_reduce_then_scan\\(n=[0-9]+\\) .*the first is out\\[1024\\] = .*It equals in\\[1024\\] \\+ \\.\\.\\. \\+ in\\[1024\\] only: the 1024 elements before index 1024 were not added")
_wb_lab04_wrong(last_partial_tile_dropped
  --expect-fail Correctness.InclusiveScan
                "inclusive_scan\\(n=[0-9]+\\) .*out\\[[0-9]+\\.\\.[0-9]+\\] were never written.*the last, partial tile was dropped")
_wb_lab04_wrong(histogram_counts_out_of_range
  --expect-fail Correctness.HistogramGlobalAtomics
                "histogram_global_atomics\\(n=[0-9]+, num_bins=[0-9]+\\) \\[uniform, ~1% out of range\\]: .*values >= num_bins were counted: they must be ignored")
_wb_lab04_wrong(histogram_bins_not_cleared
  --expect-fail Correctness.Histogram "histogram\\(n=[0-9]+, num_bins=[0-9]+\\) .*d_bins was not set to zero before counting")
if(WB_BACKEND STREQUAL "sim")
  # Lines 90 and 91 of kogge_stone_missing_syncthreads.cu: the read of values[t - d] and the
  # write of values[t] in the same step.
  _wb_lab04_wrong(kogge_stone_missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*kogge_stone_missing_syncthreads.cu:(90|91).*kogge_stone_missing_syncthreads.cu:(90|91)")
  # Line 396 of histogram_nonatomic_shared.cu: local_bins[v] += 1u. On the sim backend the
  # lanes of a warp run one after another, so no count is lost there; racecheck sees the hazard.
  _wb_lab04_wrong(histogram_nonatomic_shared SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*histogram_nonatomic_shared.cu:396")
  _wb_lab04_wrong(histogram_not_privatized SIM_ANALYSIS
    --expect-fail Performance.HistogramPrivatized
                  "histogram_shared\\(n=262149, num_bins=256, num_blocks=16, block_size=256\\) \\[uniform, ~1% out of range\\]: [0-9]+ atomic operations on global memory \\(at most num_blocks x num_bins = 4096\\)")
  _wb_lab04_wrong(strided_tile_loads SIM_ANALYSIS
    --expect-fail Performance.ReduceThenScanTraffic
                  "scan_reduce_then_scan\\(n=262147\\): loads touch [0-9.]+ and stores [0-9.]+ global memory sectors per request \\(at most 4.00 allowed\\)")
  _wb_lab04_wrong(naive_global_scan SIM_ANALYSIS
    --expect-fail Performance.ScanTraffic
                  "inclusive_scan\\(n=262147\\) read and wrote [0-9.]+ x 4n bytes of global memory \\(at most 3.1 allowed\\)")
else()
  # On a GPU the lost updates show in the counts (every value in one bin collides).
  _wb_lab04_wrong(histogram_nonatomic_shared
    --expect-fail Correctness.HistogramShared "counts were lost.*must be atomic")
  _wb_lab04_wrong(naive_global_scan
    --expect-fail Performance.ScanBandwidthVsDeviceCopy "needs 0.6 x the copy bandwidth")
endif()
