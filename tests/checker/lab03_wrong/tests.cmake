# Checker self-tests of lab 03 (parallel reduction), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# implementation in this directory is rejected by the named check with a message that
# names its mistake.
set(_lab03_checks "${WB_ROOT}/checker/labs/03-reduction/check_reduction.cpp")
set(_lab03_wrong_dir "${CMAKE_CURRENT_LIST_DIR}")

if(TARGET check_03_reduction_solution)
  set(_allow "")
  if(WB_BACKEND STREQUAL "sim" AND NOT WB_SIM_ANALYSIS)
    set(_allow --allow-not-measured)
  endif()
  add_test(NAME checker.lab03.solution_passes
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 03-reduction --backend ${WB_BACKEND}
                   --binary $<TARGET_FILE:check_03_reduction_solution> --expect-pass ${_allow})
endif()
if(TARGET check_03_reduction)
  add_test(NAME checker.lab03.skeleton_not_implemented
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 03-reduction
                   --binary $<TARGET_FILE:check_03_reduction>
                   --expect-all-fail "not implemented yet: reduce_(sum_interleaved|sum_sequential|sum_first_add|sum_warp_shuffle|sum_grid_stride|sum|max|min) in labs/03-reduction/reduction.cu")
endif()

# _wb_lab03_wrong(<name> [SIM_ANALYSIS] --expect-fail <Check> <regex> ...)
# SIM_ANALYSIS: the expectation needs cusim analysis (disabled when WB_SIM_ANALYSIS is OFF).
function(_wb_lab03_wrong name)
  cmake_parse_arguments(PARSE_ARGV 1 A "SIM_ANALYSIS" "" "")
  set(target checker_lab03_${name})
  if(NOT TARGET ${target})
    wb_add_check_binary(${target} LAB 03-reduction CHECKS ${_lab03_checks}
                        LAB_SOURCES "${_lab03_wrong_dir}/${name}.cu")
  endif()
  add_test(NAME checker.lab03_wrong.${name}
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 03-reduction --binary $<TARGET_FILE:${target}>
                   ${A_UNPARSED_ARGUMENTS})
  if(A_SIM_ANALYSIS AND NOT WB_SIM_ANALYSIS)
    set_tests_properties(checker.lab03_wrong.${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

_wb_lab03_wrong(off_by_one_second_load
  --expect-fail Correctness.FirstAddSum "the result is NaN.*elements outside d_in\\[0\\.\\.n\\) were read")
_wb_lab03_wrong(missing_atomic
  --expect-fail Correctness.GridStrideSum
                "reduce_sum_grid_stride\\(n=[0-9]+, num_blocks=[0-9]+, block_size=[0-9]+\\) \\[exact integer data, seed [0-9]+\\]: got [0-9]+, expected [0-9]+ exactly")
_wb_lab03_wrong(max_starts_at_zero
  --expect-fail Correctness.MaxMin "reduce_max\\(n=0\\) .*: got 0, expected -inf \\(the max of no elements is the identity")
if(WB_BACKEND STREQUAL "sim")
  # Lines 73 and 76 of missing_syncthreads.cu: the store into sdata and the first tree step.
  _wb_lab03_wrong(missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:(73|76).*missing_syncthreads.cu:(73|76)")
  _wb_lab03_wrong(strided_first_add SIM_ANALYSIS
    --expect-fail Performance.FirstAddHalvesBlocks
                  "reduce_sum_first_add: its loads touch [0-9.]+ global memory sectors per request \\(at most 4.00 allowed\\)")
  _wb_lab03_wrong(first_add_too_many_blocks SIM_ANALYSIS
    --expect-fail Performance.FirstAddHalvesBlocks "reduce_sum_first_add: its blocks stored [0-9]+ partial sums over all passes")
  _wb_lab03_wrong(conflicting_sequential SIM_ANALYSIS
    --expect-fail Performance.SequentialNoBankConflicts "reduce_sum_sequential: shared-memory bank conflicts")
  _wb_lab03_wrong(atomic_per_thread SIM_ANALYSIS
    --expect-fail Performance.OneAtomicPerBlock
                  "[0-9]+ atomic operations for 64 blocks \\([0-9.]+ per block; exactly 1 expected\\)")
endif()
