# Checker self-tests of lab 02 (matrix transpose), included by tests/checker/CMakeLists.txt:
# the solution passes, the skeleton fails with "not implemented yet", and each known-wrong
# version (<name>.diff: the solution with one mistake) is rejected by the named check with
# a message that names its mistake.
wb_lab_selftests(02-transpose
  CHECKS "${WB_ROOT}/checker/labs/02-transpose/check_transpose.cpp"
  SKELETON "not implemented yet: transpose_(naive|tiled|conflict_free) in labs/02-transpose/transpose.cu")

wb_known_wrong_test(02-transpose swapped_edge_bounds
  --expect-fail Correctness.TiledShapes
                "elements of out are wrong.*out\\[[0-9]+\\] = out\\([0-9]+, [0-9]+\\): expected in\\([0-9]+, [0-9]+\\)"
  # The conflict-free version shares the tiled version's store.
  --expect-fail Correctness.ConflictFreeShapes
                "transpose_conflict_free\\(rows=1, cols=37\\): [0-9]+ of 37 elements of out are wrong.*expected in\\([0-9]+, [0-9]+\\)")
if(WB_BACKEND STREQUAL "sim")
  # The checker's guard zones see the stores past the end in the memcheck run too (Analysis.*
  # runs on sim only).
  wb_known_wrong_test(02-transpose off_by_one_column
    --expect-fail Correctness.NaiveShapes "wrote out of bounds: [0-9]+ element\\(s\\) outside out\\[0\\.\\.[0-9]+\\] were written"
    --expect-fail Correctness.LargeShapes
                  "transpose_naive\\(rows=1023, cols=1025\\) wrote out of bounds: [0-9]+ element\\(s\\) outside out"
    --expect-fail Analysis.MemcheckClean
                  "transpose_naive\\(rows=33, cols=31\\) wrote out of bounds: [0-9]+ element\\(s\\) outside out.*test the row and the column of every store")
else()
  wb_known_wrong_test(02-transpose off_by_one_column
    --expect-fail Correctness.NaiveShapes "wrote out of bounds: [0-9]+ element\\(s\\) outside out\\[0\\.\\.[0-9]+\\] were written"
    --expect-fail Correctness.LargeShapes
                  "transpose_naive\\(rows=1023, cols=1025\\) wrote out of bounds: [0-9]+ element\\(s\\) outside out")
endif()
wb_known_wrong_test(02-transpose grid_y_overflow
  --expect-fail Correctness.TallMatrix "transpose_tiled\\(rows=2097153, cols=1\\) returned cudaErrorInvalidValue")
wb_known_wrong_test(02-transpose tiled_first_tile_row_only
  --expect-fail Correctness.TallMatrix
                "transpose_tiled\\(rows=2097153, cols=1\\): [0-9]+ of 2097153 elements of out are wrong \\([0-9]+ never written\\)")
if(WB_BACKEND STREQUAL "sim")
  # The report names the store into the tile and the transposed read.
  wb_known_wrong_test(02-transpose missing_syncthreads SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*missing_syncthreads.cu:({{line:tile[j][threadIdx.x] = in}}|{{line:= tile[threadIdx.x][j]}}).*missing_syncthreads.cu:({{line:tile[j][threadIdx.x] = in}}|{{line:= tile[threadIdx.x][j]}})")
  # Results are right; only cusim's access metrics see the loads down a column.
  wb_known_wrong_test(02-transpose naive_reads_down_columns SIM_ANALYSIS
    --expect-fail Performance.NaiveReadsCoalesced "transpose_naive: its loads touch [0-9.]+ global memory sectors per request")
  wb_known_wrong_test(02-transpose strided_tile_store SIM_ANALYSIS
    --expect-fail Performance.TiledCoalesced "transpose_tiled: its stores touch [0-9.]+ global memory sectors per request")
  # Only the tall matrix makes a block loop to a second tile, which overwrites the first one. The
  # tall-matrix check fails on the wrong values, and the race report leads its message (not the
  # gridDim.y advice that its hint would otherwise give).
  wb_known_wrong_test(02-transpose tiled_missing_second_sync SIM_ANALYSIS
    --expect-fail Analysis.RacecheckClean
                  "[0-9]+ racecheck/synccheck report\\(s\\).*Race reported between .*tiled_missing_second_sync.cu:({{line:tile[j][threadIdx.x] = in}}|{{line:= tile[threadIdx.x][j]}})"
    --expect-fail Correctness.TallMatrix
                  "^cusim reported an error while this check ran; fix it first.*\nError: Race reported between .*tiled_missing_second_sync.cu:.*elements of out are wrong")
  # cusim's launch log (cusim/checker.h): sim only.
  wb_known_wrong_test(02-transpose oversized_tile_grid
    --expect-fail Performance.NoIdleBlocks
                  "transpose_tiled\\(rows=1000, cols=1024\\) launched [0-9]+ threads \\(transpose_tiled_kernel grid 32 x 1063 x 1, block 32 x 8 x 1\\).*nothing to move")
  wb_known_wrong_test(02-transpose unpadded_tile SIM_ANALYSIS
    --expect-fail Performance.ConflictFreeSharedMemory
                  "shared-memory bank conflicts: loads from the tile take [0-9.]+ wavefronts per request.*at most 1.00 allowed")
else()
  wb_known_wrong_test(02-transpose strided_tile_store
    --expect-fail Performance.BandwidthVsDeviceCopy "needs 0.8 x the copy bandwidth")
  # A result cached from the last call and replayed when the same arguments come back: the timed
  # runs each get changed inputs (wb_timed.h), so out is left holding an older transpose, seen at
  # the first of the timed runs verified at random. Not yet run on a GPU.
  wb_known_wrong_test(02-transpose cached_result_replay
    --expect-fail Performance.BandwidthVsDeviceCopy
                  "transpose_conflict_free\\(rows=8192, cols=8192\\): timed run [0-9]+ of 21, given changed inputs, left outputs that do not hold the result of its inputs")
endif()
if(WB_BACKEND STREQUAL "sim")
  # cusim's fault injection (cusim/checker.h, wb_host_checks.h): sim only.
  wb_known_wrong_test(02-transpose launch_error_dropped
    --expect-fail Correctness.HostReturnsCudaErrors
                  "transpose_naive\\(rows=70, cols=100\\) with its 1st kernel launch failing with cudaErrorLaunchOutOfResources returned cudaSuccess: transpose_naive ignored the error of that kernel launch\\. A launch returns nothing: call cudaGetLastError\\(\\) right after each launch")
endif()
