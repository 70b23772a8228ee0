# cusim_target_cuda_sources(<target> [PRIVATE|PUBLIC|INTERFACE] <file>...)
#
# Builds CUDA sources on the CPU through cusim: each file is passed through
# common/cusim/tools/cusim_rewrite.py (kernel launches, __shared__, extern __shared__,
# __noinline__ become C++ calling the cusim runtime) and the result is compiled as C++.
#
#  * <file>.cu  -> ${CMAKE_CURRENT_BINARY_DIR}/cusim_gen/<target>/<path>.cu.cpp, added to the
#    target's sources.  <path> is the file's path relative to the top source directory
#    (files outside it: relative to the current source directory, '..' mapped to '__').
#  * a header (.cuh, .h, .hpp, ...) -> the same tree, under its own name, so that
#    `#include "kernels.cuh"` from a rewritten .cu finds the rewritten header first (the
#    including file's directory is searched first).  Headers next to the including file are
#    followed and rewritten by the rewriter itself (see cusim_rewrite.py); list only headers
#    with launches or __shared__ that are found through include directories.
#  * The directory of every listed file is added to the target's include path, so
#    `#include "lab.h"` next to the .cu resolves although the compiled file lives in the
#    build tree.  The generated file starts with #line, so diagnostics and __FILE__ name
#    the original .cu and line.
#  * The target links cusim::cusim.
#  * Generated sources compile with -fno-strict-aliasing, as CUDA code expects.
#
# The visibility keyword (default PRIVATE) applies to the include directories and to the
# link to cusim::cusim; the generated sources are always private to the target (INTERFACE
# for an INTERFACE library).  Rewriting re-runs when the file or the rewriter changes;
# header edits recompile the generated .cpp through the compiler's normal dependency
# scanning, and the rewrite re-runs when a header it followed changes (a depfile).
include_guard(GLOBAL)

find_package(Python3 REQUIRED COMPONENTS Interpreter)

# Recorded at include time so the function works from any directory.
set_property(GLOBAL PROPERTY CUSIM_REWRITE_SCRIPT
             "${CMAKE_CURRENT_LIST_DIR}/../tools/cusim_rewrite.py")
set_property(GLOBAL PROPERTY CUSIM_REWRITE_PYTHON "${Python3_EXECUTABLE}")

function(cusim_target_cuda_sources target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "cusim_target_cuda_sources: '${target}' is not a target; "
                        "call it after add_executable()/add_library().")
  endif()
  set(files ${ARGN})
  set(visibility PRIVATE)
  if(files)
    list(GET files 0 first)
    if(first MATCHES "^(PRIVATE|PUBLIC|INTERFACE)$")
      set(visibility ${first})
      list(REMOVE_AT files 0)
    endif()
  endif()
  if(NOT files)
    message(FATAL_ERROR "cusim_target_cuda_sources(${target}): no source files given.")
  endif()

  get_property(script GLOBAL PROPERTY CUSIM_REWRITE_SCRIPT)
  get_property(python GLOBAL PROPERTY CUSIM_REWRITE_PYTHON)
  get_filename_component(script "${script}" ABSOLUTE)
  get_target_property(target_type ${target} TYPE)
  set(source_visibility PRIVATE)
  if(target_type STREQUAL "INTERFACE_LIBRARY")
    set(source_visibility INTERFACE)
  endif()

  set(gen_root "${CMAKE_CURRENT_BINARY_DIR}/cusim_gen/${target}")
  set(include_dirs "")
  foreach(file IN LISTS files)
    get_filename_component(abs "${file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_source_file_property(generated "${abs}" GENERATED)
    if(NOT EXISTS "${abs}" AND NOT generated)  # a generated source appears at build time
      message(FATAL_ERROR "cusim_target_cuda_sources(${target}): '${file}' does not exist "
                          "(looked for ${abs}).")
    endif()
    file(RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${abs}")
    if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
      file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${abs}")
      string(REPLACE "../" "__/" rel "${rel}")
      string(REPLACE ":" "_" rel "${rel}")
    endif()
    get_filename_component(ext "${abs}" LAST_EXT)
    if(ext STREQUAL ".cu")
      set(out "${gen_root}/${rel}.cpp")
    else()
      set(out "${gen_root}/${rel}")
    endif()
    # One rule per output: listing a file twice for the same target is harmless.
    get_property(have_rule DIRECTORY PROPERTY CUSIM_REWRITE_OUTPUTS)
    if(NOT out IN_LIST have_rule)
      set_property(DIRECTORY APPEND PROPERTY CUSIM_REWRITE_OUTPUTS "${out}")
      # The rewriter also rewrites the program's own headers that the file includes (into
      # ${out}.headers) and lists every file it read in a depfile, so editing one re-runs it.
      set(depfile_args "")
      if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
        set(depfile_args DEPFILE "${out}.d")
        set(depfile_cmd --depfile "${out}.d")
      else()
        set(depfile_cmd "")
      endif()
      add_custom_command(
        OUTPUT "${out}"
        COMMAND "${python}" "${script}" "${abs}" "${out}" ${depfile_cmd}
        DEPENDS "${abs}" "${script}"
        ${depfile_args}
        COMMENT "cusim: rewriting ${rel}"
        VERBATIM)
      target_sources(${target} ${source_visibility} "${out}")
      # CUDA code reads one type through a pointer to another all the time (a uint4 as
      # __nv_bfloat162 pairs, floats as float4): nvcc compiles that as written, so the host
      # compiler must not drop such accesses under its strict-aliasing rule.
      set_source_files_properties("${out}" PROPERTIES COMPILE_OPTIONS "-fno-strict-aliasing")
    endif()
    if(NOT ext STREQUAL ".cu")
      set_source_files_properties("${out}" PROPERTIES HEADER_FILE_ONLY ON)
    endif()
    get_filename_component(dir "${abs}" DIRECTORY)
    list(APPEND include_dirs "${dir}")
  endforeach()

  list(REMOVE_DUPLICATES include_dirs)
  target_include_directories(${target} ${visibility} ${include_dirs})
  target_link_libraries(${target} ${visibility} cusim::cusim)
endfunction()
