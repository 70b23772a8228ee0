# Checker self-tests of lab 02 (matrix transpose), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# implementation in this directory is rejected by the named check with a message that
# names its mistake.
set(_lab02_checks "${WB_ROOT}/checker/labs/02-transpose/check_transpose.cpp")
set(_lab02_wrong_dir "${CMAKE_CURRENT_LIST_DIR}")

if(TARGET check_02_transpose_solution)
  set(_allow "")
  if(WB_BACKEND STREQUAL "sim" AND NOT WB_SIM_ANALYSIS)
    set(_allow --allow-not-measured)
  endif()
  add_test(NAME checker.lab02.solution_passes
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 02-transpose --backend ${WB_BACKEND}
                   --binary $<TARGET_FILE:check_02_transpose_solution> --expect-pass ${_allow})
endif()
if(TARGET check_02_transpose)
  add_test(NAME checker.lab02.skeleton_not_implemented
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 02-transpose
                   --binary $<TARGET_FILE:check_02_transpose>
                   --expect-all-fail "not implemented yet: transpose_(naive|tiled|conflict_free) in labs/02-transpose/transpose.cu")
endif()

# _wb_lab02_wrong(<name> [SIM_ANALYSIS] --expect-fail <Check> <regex> ...)
# SIM_ANALYSIS: the expectation needs cusim analysis (disabled when WB_SIM_ANALYSIS is OFF).
function(_wb_lab02_wrong name)
  cmake_parse_arguments(PARSE_ARGV 1 A "SIM_ANALYSIS" "" "")
  set(target checker_lab02_${name})
  if(NOT TARGET ${target})
    wb_add_check_binary(${target} LAB 02-transpose CHECKS ${_lab02_checks}
                        LAB_SOURCES "${_lab02_wrong_dir}/${name}.cu")
  endif()
  add_test(NAME checker.lab02_wrong.${name}
           COMMAND ${Python3_EXECUTABLE} ${_selftest} --lab 02-transpose --binary $<TARGET_FILE:${target}>
                   ${A_UNPARSED_ARGUMENTS})
  if(A_SIM_ANALYSIS AND NOT WB_SIM_ANALYSIS)
    set_tests_properties(checker.lab02_wrong.${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

_wb_lab02_wrong(swapped_edge_bounds
  --expect-fail Correctness.TiledShapes
                "elements of out are wrong.*out\\[[0-9]+\\] = out\\([0-9]+, [0-9]+\\): expected in\\([0-9]+, [0-9]+\\)")
_wb_lab02_wrong(off_by_one_column
  --expect-fail Correctness.NaiveShapes "wrote out of bounds: [0-9]+ element\\(s\\) outside out\\[0\\.\\.[0-9]+\\] were written")
_wb_lab02_wrong(grid_y_overflow
  --expect-fail Correctness.TallMatrix "transpose_conflict_free\\(rows=2097153, cols=1\\) returned cudaErrorInvalidConfiguration")
if(WB_BACKEND STREQUAL "sim")
  # Lines 57 and 63 of missing_syncthreads.cu: the store into the tile and the transposed read.
  _wb_lab02_wrong(missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:(57|63).*missing_syncthreads.cu:(57|63)")
  _wb_lab02_wrong(strided_tile_store SIM_ANALYSIS
    --expect-fail Performance.TiledCoalesced "transpose_tiled: its stores touch [0-9.]+ global memory sectors per request")
  _wb_lab02_wrong(unpadded_tile SIM_ANALYSIS
    --expect-fail Performance.ConflictFreeSharedMemory
                  "shared-memory bank conflicts: loads from the tile take [0-9.]+ wavefronts per request.*at most 1.00 allowed")
else()
  _wb_lab02_wrong(strided_tile_store
    --expect-fail Performance.BandwidthVsDeviceCopy "needs 0.8 x the copy bandwidth")
endif()
