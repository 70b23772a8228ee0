# Adversarial submissions of lab 01, included by tests/checker/CMakeLists.txt: each <attack>.cu in
# this folder is hostile lab code, linked with lab 01's checks like a learner's saxpy.cu, and
# checker.adversarial.<test> runs it through the runner as `./workbook check` does and asserts
# that the attack is contained (test_adversarial.py says what each one must show). On sim, and on
# cuda with WB_CUDA_SPLIT (built by CI's cuda-compile, run where a GPU is: not yet).
if((WB_BACKEND STREQUAL "sim" AND WB_SPLIT_CHECKS) OR (WB_BACKEND STREQUAL "cuda" AND WB_CUDA_SPLIT))
  set(_wb_adversarial_dir "${CMAKE_CURRENT_LIST_DIR}")
  set(_wb_adversarial_allow "")
  if(NOT WB_SIM_ANALYSIS)
    set(_wb_adversarial_allow --allow-not-measured)
  endif()

  # The reference solution with its functions renamed reference_saxpy*, for the attacks that
  # need a correct SAXPY (adversarial.h); absent in a student copy without solutions/.
  set(_wb_reference "${WB_ROOT}/solutions/01-saxpy/saxpy.cu")
  if(EXISTS "${_wb_reference}" AND NOT TARGET checker_adversarial_reference)
    add_library(checker_adversarial_reference STATIC)
    target_compile_definitions(checker_adversarial_reference PRIVATE saxpy=reference_saxpy
      saxpy_grid_stride=reference_saxpy_grid_stride saxpy_host=reference_saxpy_host)
    target_include_directories(checker_adversarial_reference PRIVATE "${WB_ROOT}/labs/01-saxpy")
    wb_cuda_sources(checker_adversarial_reference "${_wb_reference}")
  endif()

  # _wb_adversarial(<test> [ATTACK <file name without .cu>] [SERIAL] [REFERENCE])
  # The binary checker_adversarial_<attack> is built once per attack; several tests may run it.
  # REFERENCE links the renamed reference solution into the attack's worker.
  function(_wb_adversarial test)
    cmake_parse_arguments(PARSE_ARGV 1 A "SERIAL;REFERENCE" "ATTACK" "")
    if(A_REFERENCE AND NOT TARGET checker_adversarial_reference)
      return()
    endif()
    if(NOT A_ATTACK)
      set(A_ATTACK ${test})
    endif()
    set(target checker_adversarial_${A_ATTACK})
    if(NOT TARGET ${target})
      wb_add_check_binary(${target} LAB 01-saxpy CHECKS "${WB_ROOT}/checker/labs/01-saxpy/check_saxpy.cpp"
                          LAB_SOURCES "${_wb_adversarial_dir}/${A_ATTACK}.cu")
      if(A_REFERENCE)
        target_link_libraries(${target}_worker PRIVATE checker_adversarial_reference)
      endif()
    endif()
    add_test(NAME checker.adversarial.${test}
             COMMAND ${Python3_EXECUTABLE} "${_wb_adversarial_dir}/test_adversarial.py"
                     $<TARGET_FILE:${target}> ${test} ${_wb_adversarial_allow})
    # Tests of one binary never overlap: each looks for processes of its binary left behind.
    set_tests_properties(checker.adversarial.${test} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                         RESOURCE_LOCK ${target})
    if(A_SERIAL)
      # Counts processes and free disk space before and after: nothing else may run meanwhile.
      set_tests_properties(checker.adversarial.${test} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endfunction()

  _wb_adversarial(forged_report)
  _wb_adversarial(exit_mid_check)
  _wb_adversarial(atexit_rewrites_report)
  _wb_adversarial(writes_results)
  _wb_adversarial(reads_solutions REFERENCE)
  _wb_adversarial(reads_solutions_from_cwd ATTACK reads_solutions REFERENCE)
  _wb_adversarial(reads_git_history REFERENCE)
  _wb_adversarial(redefines_comparator)
  _wb_adversarial(static_ctor_changes_inputs)
  _wb_adversarial(fork_bomb SERIAL)
  _wb_adversarial(disk_fill SERIAL)
  _wb_adversarial(disk_fill_anywhere ATTACK disk_fill SERIAL)
  _wb_adversarial(endless_print)
  _wb_adversarial(network_connect REFERENCE)
  _wb_adversarial(unix_socket_connect ATTACK network_connect REFERENCE)
  _wb_adversarial(destructor_sleeps SERIAL REFERENCE)
  _wb_adversarial(signal_handlers)
  _wb_adversarial(writes_source_tree)
endif()
