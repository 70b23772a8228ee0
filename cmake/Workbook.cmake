# Workbook build logic shared by every directory of the project.
#
# Backend selection (cache variable WB_BACKEND):
#   sim   every .cu file goes through cusim's source rewriter and is compiled by the C++
#         compiler; kernels run on the CPU (any machine, CI, autograders).
#   cuda  every .cu file is compiled by nvcc and runs on an NVIDIA GPU.
#   auto  (or empty) cuda when `nvidia-smi -L` lists a GPU, else sim.
#
# Functions for the rest of the project:
#   wb_cuda_sources(<target> <src.cu>...)          add .cu files to a target, per backend
#   wb_add_check_binary(<target> LAB <NN-name> ...) one GoogleTest check binary of a lab
#   wb_add_lab(<NN-name> CHECKS ... SOURCES ...)   the lab's check binaries (labs/, solutions/)
include_guard(GLOBAL)

set(WB_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE INTERNAL "")
get_filename_component(WB_ROOT "${WB_ROOT}" ABSOLUTE)

# ---- GPU detection -------------------------------------------------------------------
function(wb_detect_gpu out_found out_compute_cap)
  set(found FALSE)
  set(cap "")
  find_program(WB_NVIDIA_SMI nvidia-smi)
  if(WB_NVIDIA_SMI)
    execute_process(COMMAND "${WB_NVIDIA_SMI}" -L
      RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_QUIET TIMEOUT 20)
    if(rc EQUAL 0 AND listing MATCHES "GPU [0-9]+:")
      set(found TRUE)
      execute_process(COMMAND "${WB_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
        RESULT_VARIABLE rc OUTPUT_VARIABLE caps ERROR_QUIET TIMEOUT 20)
      if(rc EQUAL 0 AND caps MATCHES "^([0-9]+)\\.([0-9]+)")
        set(cap "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      endif()
    endif()
  endif()
  set(${out_found} ${found} PARENT_SCOPE)
  set(${out_compute_cap} "${cap}" PARENT_SCOPE)
endfunction()

# ---- backend ---------------------------------------------------------------------------
set(WB_BACKEND "auto" CACHE STRING "Backend: sim (CPU, cusim), cuda (nvcc, GPU) or auto")
set_property(CACHE WB_BACKEND PROPERTY STRINGS auto sim cuda)
if(WB_BACKEND STREQUAL "" OR WB_BACKEND STREQUAL "auto")
  wb_detect_gpu(_wb_gpu _wb_cap)
  if(_wb_gpu)
    set(WB_BACKEND cuda CACHE STRING "Backend: sim (CPU, cusim), cuda (nvcc, GPU) or auto" FORCE)
  else()
    set(WB_BACKEND sim CACHE STRING "Backend: sim (CPU, cusim), cuda (nvcc, GPU) or auto" FORCE)
  endif()
  message(STATUS "WB_BACKEND=auto resolved to ${WB_BACKEND}")
endif()
if(NOT WB_BACKEND MATCHES "^(sim|cuda)$")
  message(FATAL_ERROR "WB_BACKEND is '${WB_BACKEND}'; expected sim, cuda or auto.")
endif()

# ---- sim analysis instrumentation ------------------------------------------------------
# Kernel translation units are instrumented through GCC's ThreadSanitizer entry points;
# cusim defines the __tsan_* functions itself, so the flags are compile options only and
# libtsan is never linked (never add -fsanitize=thread to link options). -fno-code-hoisting:
# GCC otherwise hoists a load that two branches share above the branch and still instruments
# the branch's own load, so the access is seen twice (and counted twice in the metrics).
# tsan-distinguish-volatile: volatile loads and stores reach cusim as such (racecheck's flag
# protocols tell a volatile flag store from a plain value store).
set(CUSIM_ANALYSIS_COMPILE_OPTIONS
    -fsanitize=thread --param tsan-instrument-func-entry-exit=0 --param=tsan-distinguish-volatile=1
    -fno-code-hoisting -gdwarf-4 -Wno-tsan)
# cusim's GCC plugin (common/cusim/tools/gcc_plugin): GCC's ThreadSanitizer pass does not
# instrument a struct read from memory straight into a by-value call argument, nor a struct result
# stored straight into memory; the plugin turns those into instrumented copies first. It needs
# GCC's plugin headers (Debian/Ubuntu: gcc-<version>-plugin-dev); without them analysis builds
# still work but do not see those accesses. Targets compiled with the options depend on
# cusim_analysis_dependencies (cusim_add_analysis_options()).
add_custom_target(cusim_analysis_dependencies)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND WB_BACKEND STREQUAL "sim")
  execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=plugin
                  OUTPUT_VARIABLE _cusim_plugin_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(EXISTS "${_cusim_plugin_dir}/include/gcc-plugin.h")
    add_library(cusim_gcc_plugin MODULE "${WB_ROOT}/common/cusim/tools/gcc_plugin/aggregate_copies.cpp")
    target_include_directories(cusim_gcc_plugin SYSTEM PRIVATE "${_cusim_plugin_dir}/include")
    target_compile_options(cusim_gcc_plugin PRIVATE -fno-rtti)
    set_target_properties(cusim_gcc_plugin PROPERTIES PREFIX "" CXX_STANDARD 17 CXX_EXTENSIONS ON
                          LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
    add_dependencies(cusim_analysis_dependencies cusim_gcc_plugin)
    # The plugin's source hash is part of the command line (GCC passes it to the plugin, which
    # ignores it): a changed plugin changes every instrumented object's flags, so they rebuild.
    set(_cusim_plugin_source "${WB_ROOT}/common/cusim/tools/gcc_plugin/aggregate_copies.cpp")
    file(SHA1 "${_cusim_plugin_source}" _cusim_plugin_hash)
    string(SUBSTRING "${_cusim_plugin_hash}" 0 12 _cusim_plugin_hash)
    set_property(DIRECTORY "${WB_ROOT}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_cusim_plugin_source}")
    list(APPEND CUSIM_ANALYSIS_COMPILE_OPTIONS "-fplugin=${CMAKE_BINARY_DIR}/lib/cusim_gcc_plugin.so"
         "-fplugin-arg-cusim_gcc_plugin-source=${_cusim_plugin_hash}")
  else()
    string(REGEX MATCH "^[0-9]+" _cusim_gcc_major "${CMAKE_CXX_COMPILER_VERSION}")
    message(WARNING "cusim: GCC's plugin headers are not installed (Debian/Ubuntu: apt-get install "
                    "gcc-${_cusim_gcc_major}-plugin-dev). Analysis builds will not see structs copied "
                    "between memory and a function call (f(a[i]) with a struct a[i]; a[i] = f(...)): "
                    "no memcheck or racecheck reports and no metrics for those accesses.")
  endif()
endif()

# Compiles @p target's sources with the analysis instrumentation (after its dependencies are built).
function(cusim_add_analysis_options target)
  target_compile_options(${target} PRIVATE ${CUSIM_ANALYSIS_COMPILE_OPTIONS})
  add_dependencies(${target} cusim_analysis_dependencies)
endfunction()
option(WB_SPLIT_CHECKS
  "sim backend: run each lab's code in a worker process apart from its checks (the judge)" ON)
option(WB_CUDA_SPLIT
  "cuda backend: split check binaries (judge and worker, as on sim) for the labs whose checks call no vendor library or declare their baselines in checker/labs/<lab>/baselines.cpp; not yet run on a GPU" OFF)
option(WB_SIM_ANALYSIS
  "sim backend: instrument lab kernels for cusim analysis (memcheck, racecheck, metrics)" ON)

# ---- CUDA (cuda backend only) ----------------------------------------------------------
if(WB_BACKEND STREQUAL "cuda")
  # nvcc off PATH in its usual place is still found.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(_wb_nvcc nvcc)
    if(NOT _wb_nvcc AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
    elseif(NOT _wb_nvcc)
      message(FATAL_ERROR
        "The cuda backend needs nvcc from the CUDA Toolkit, and none was found on PATH or in "
        "/usr/local/cuda/bin. Install the CUDA Toolkit (NVIDIA package cuda-toolkit, or "
        "nvidia-cuda-toolkit on Debian/Ubuntu), set CUDACXX=/path/to/nvcc, or use the sim "
        "backend (cmake --preset sim).")
    endif()
  endif()
  # Architectures: a user choice (-DCMAKE_CUDA_ARCHITECTURES=..., or CUDAARCHS) wins;
  # else the visible GPU's own; else sm_90 so a machine without a GPU (CI) still compiles.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    wb_detect_gpu(_wb_gpu _wb_cap)
    if(_wb_gpu AND CMAKE_VERSION VERSION_GREATER_EQUAL 3.24)
      set(_wb_arch native)
    elseif(_wb_gpu AND _wb_cap)
      set(_wb_arch ${_wb_cap})
    else()
      set(_wb_arch 90)
    endif()
    set(CMAKE_CUDA_ARCHITECTURES ${_wb_arch} CACHE STRING "CUDA architectures to build for")
  endif()
  if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX})
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}" CACHE FILEPATH "nvcc host compiler")
  endif()
  enable_language(CUDA)
  # C++20 for CUDA as for C++. CMake before 3.26 does not know nvcc's C++20 flag (nvcc 12+
  # with g++ 10+ accepts it); teach it here, the way newer CMake's NVIDIA-CUDA.cmake does.
  if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES
     AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
     AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
endif()

# ---- wb_cuda_sources -------------------------------------------------------------------
# wb_cuda_sources(<target> [NO_ANALYSIS] [SHARED <name>] <src.cu>...)
# Adds CUDA sources to <target>. On cuda they are compiled by nvcc and the target links
# CUDA::cudart. On sim they are rewritten by cusim into C++ and compiled into an object
# library <target>_cu<N> (instrumented for analysis when WB_SIM_ANALYSIS is ON, so that
# only kernel translation units carry the instrumentation; NO_ANALYSIS leaves them plain,
# e.g. for benchmarks of the simulator's speed), which <target> links together with cusim.
# Include directories and compile definitions of <target> apply to both.
# SHARED <name>: the sources are the same in several targets (an earlier lab's solution that
# every known-wrong version of a lab links): they are compiled once, into the object library
# <name>, with the include directories of the first target that names it (no compile
# definitions: a lab's code uses none of the checks'); later targets only link it. The caller
# makes <name> unique to the sources, the include directories and NO_ANALYSIS.
function(wb_cuda_sources target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "wb_cuda_sources: '${target}' is not a target")
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 A "NO_ANALYSIS" "SHARED" "")
  set(sources "")
  foreach(src IN LISTS A_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${abs}")
  endforeach()
  set(runtime cusim)
  if(WB_BACKEND STREQUAL "cuda")
    set(runtime CUDA::cudart)
    # A source that includes cuda.h calls the driver API (cuMemCreate, cuDeviceGetAttribute, ...):
    # nvcc links it against libcuda (the toolkit's stub where the machine has no driver). On sim
    # cusim provides both APIs. (Sources generated at build time are the labs' mutants: no driver API.)
    foreach(src IN LISTS sources)
      if(NOT EXISTS "${src}")
        continue()
      endif()
      file(STRINGS "${src}" driver_includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]cuda\\.h[>\"]")
      if(driver_includes)
        list(APPEND runtime CUDA::cuda_driver)
        break()
      endif()
    endforeach()
  endif()
  if(A_SHARED)
    if(NOT TARGET ${A_SHARED})
      add_library(${A_SHARED} OBJECT)
      if(WB_BACKEND STREQUAL "cuda")
        target_sources(${A_SHARED} PRIVATE ${sources})
        target_compile_options(${A_SHARED} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
      else()
        cusim_target_cuda_sources(${A_SHARED} ${sources})
        if(WB_SIM_ANALYSIS AND NOT A_NO_ANALYSIS)
          cusim_add_analysis_options(${A_SHARED})
        endif()
      endif()
      target_include_directories(${A_SHARED} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
      target_link_libraries(${A_SHARED} PRIVATE ${runtime})
    endif()
    target_link_libraries(${target} PRIVATE ${A_SHARED} ${runtime})
    return()
  endif()
  if(WB_BACKEND STREQUAL "cuda")
    target_sources(${target} PRIVATE ${sources})
    target_link_libraries(${target} PRIVATE ${runtime})
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    return()
  endif()
  get_property(count TARGET ${target} PROPERTY WB_CUDA_OBJECT_LIBRARIES)
  list(LENGTH count n)
  set(obj ${target}_cu${n})
  add_library(${obj} OBJECT)
  cusim_target_cuda_sources(${obj} ${sources})
  target_include_directories(${obj} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
  target_compile_definitions(${obj} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>)
  target_link_libraries(${obj} PRIVATE cusim)
  if(WB_SIM_ANALYSIS AND NOT A_NO_ANALYSIS)
    cusim_add_analysis_options(${obj})
  endif()
  target_link_libraries(${target} PRIVATE ${obj} cusim)
  set_property(TARGET ${target} APPEND PROPERTY WB_CUDA_OBJECT_LIBRARIES ${obj})
endfunction()

# wb_exclude_from_all(<target>...): leaves the targets that exist, and the object libraries of
# their CUDA sources, out of the default build (a lab's _mutant binaries: built on request).
function(wb_exclude_from_all)
  foreach(t IN LISTS ARGN)
    if(TARGET ${t})
      get_property(objects TARGET ${t} PROPERTY WB_CUDA_OBJECT_LIBRARIES)
      set_target_properties(${t} ${objects} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
  endforeach()
endfunction()

# wb_mutant_slots(<root> <NN-name> <out_var> <file>...): the files of <build>/mutant/<NN-name>/
# that a lab's _mutant target compiles and `./workbook mutate` overwrites with one mutant at a
# time; each starts as a copy of the solution's file.
function(wb_mutant_slots root lab out_var)
  set(slots "")
  foreach(file IN LISTS ARGN)
    set(slot "${CMAKE_BINARY_DIR}/mutant/${lab}/${file}")
    if(NOT EXISTS "${slot}")
      configure_file("${root}/solutions/${lab}/${file}" "${slot}" COPYONLY)
    endif()
    list(APPEND slots "${slot}")
  endforeach()
  set(${out_var} "${slots}" PARENT_SCOPE)
endfunction()

# wb_variant_sources(<root> <variant> <NN-name> <sources_var> <shared_var> SOURCES <file>...
#                    [USES <NN-name/file>...])
# The files a variant (labs or solutions) of a lab's check binary links: <sources_var>, the
# lab's own files and, for the learner's binary, the learner's earlier labs (USES, from labs/);
# <shared_var>, for the solution's binary, the earlier labs' solutions, compiled once for it, its
# mutants and its known-wrong versions (SHARED_SOURCES of wb_add_check_binary/comm_add_lab_binary).
# PROVIDED <var>: for the learner's binary, the libraries of WB_PROVIDED_DIR that replace files of
# USES (cmake/WbProvided.cmake; those files are then not in <sources_var>); NO_ANALYSIS: the
# binary's CUDA code is not instrumented, nor are the provided libraries it links.
function(wb_variant_sources root variant lab sources_var shared_var)
  cmake_parse_arguments(PARSE_ARGV 5 A "NO_ANALYSIS" "PROVIDED" "SOURCES;USES")
  set(sources "")
  foreach(file IN LISTS A_SOURCES)
    list(APPEND sources "${root}/${variant}/${lab}/${file}")
  endforeach()
  set(shared "")
  set(provided "")
  set(no_analysis "")
  if(A_NO_ANALYSIS)
    set(no_analysis NO_ANALYSIS)
  endif()
  foreach(use IN LISTS A_USES)
    wb_provided_flavour(flavour "${use}" ${no_analysis})
    wb_provide_target("${use}" ${flavour})
    if(variant STREQUAL "solutions")
      list(APPEND shared "${root}/solutions/${use}")
      continue()
    endif()
    wb_provided_use(library ${lab} "${use}" ${flavour})
    if(library)
      list(APPEND provided ${library})
    else()
      list(APPEND sources "${root}/${variant}/${use}")
    endif()
  endforeach()
  set(${sources_var} "${sources}" PARENT_SCOPE)
  set(${shared_var} "${shared}" PARENT_SCOPE)
  if(A_PROVIDED)
    set(${A_PROVIDED} "${provided}" PARENT_SCOPE)
  endif()
endfunction()

# wb_lab_uses(<root> <variant> <dirs_var> <files_var> <NN-name/file>...): for files of earlier
# labs that a lab links in (its USES), their labs' header folders and the files themselves in
# <variant> (labs or solutions) of the tree at <root>.
function(wb_lab_uses root variant dirs_var files_var)
  set(dirs "")
  set(files "")
  foreach(use IN LISTS ARGN)
    get_filename_component(used_lab "${use}" DIRECTORY)
    list(APPEND dirs "${root}/labs/${used_lab}")
    list(APPEND files "${root}/${variant}/${use}")
  endforeach()
  set(${dirs_var} "${dirs}" PARENT_SCOPE)
  set(${files_var} "${files}" PARENT_SCOPE)
endfunction()

# ---- lab check binaries ----------------------------------------------------------------
# wb_add_check_binary(<target> LAB <NN-name> CHECKS <check.cpp>... LAB_SOURCES <src.cu>...
#                     [SHARED_SOURCES <src.cu>...] [PROVIDED <library>...] [SOURCE_LABEL <text>]
#                     [INCLUDE_DIRS <dir>...]
#                     [CUDA_BASELINES <src.cu>...] [CUDA_LIBS <lib>...] [CHECK_LIBS <lib>...]
#                     [IN_PROCESS])
# One GoogleTest executable: the lab's checks linked with one implementation of the lab.
# SHARED_SOURCES are more of the implementation, files of solutions/ that several binaries of
# the lab link unchanged (an earlier lab's solution, the files a known-wrong version leaves
# alone): compiled once for all of them (wb_cuda_sources SHARED).
# PROVIDED are libraries of earlier labs linked with the implementation (WB_PROVIDED_DIR,
# cmake/WbProvided.cmake).
# SOURCE_LABEL names the implementation in messages ("labs/01-saxpy/saxpy.cu").
# CUDA_BASELINES and CUDA_LIBS are compiled and linked on the cuda backend only: the
# vendor-library baselines of the performance checks (CUB, cuBLAS), which cusim does not
# provide. The check sources see WB_HAVE_CUDA_BASELINES=1 when they are present. In a split
# binary (WB_CUDA_SPLIT) they go into <target>_trusted instead, the checker's own CUDA process.
# CHECK_LIBS are linked into the checks themselves on either backend (on sim: the judge, never
# the worker that runs the lab's code), e.g. the CPU BLAS of lab 05's cuBLAS oracle.
# IN_PROCESS: the checks run in the lab's own process on sim too, as on cuda (not split in
# judge and worker): the self-tests use it to cover the cuda backend's path on a machine
# without a GPU (tests/checker, wb_known_wrong_test IN_PROCESS).
# _wb_remote_sides(<prefix> <file.cpp> <include dir>...): <prefix>_worker and <prefix>_judge, object
# libraries of one file of remote calls (wb_remote_interface.h) compiled as the registrations
# (WB_REMOTE_WORKER) and as the proxies (WB_REMOTE_JUDGE); made once.
function(_wb_remote_sides prefix file)
  foreach(side IN ITEMS worker judge)
    set(lib ${prefix}_${side})
    if(NOT TARGET ${lib})
      add_library(${lib} OBJECT "${file}")
      string(TOUPPER "${side}" SIDE)
      target_compile_definitions(${lib} PRIVATE WB_REMOTE_${SIDE}=1)
      target_include_directories(${lib} PRIVATE ${ARGN})
      target_compile_features(${lib} PRIVATE cxx_std_20)
    endif()
  endforeach()
endfunction()

function(wb_add_check_binary target)
  cmake_parse_arguments(PARSE_ARGV 1 A "IN_PROCESS" "LAB;SOURCE_LABEL"
                        "CHECKS;LAB_SOURCES;SHARED_SOURCES;PROVIDED;INCLUDE_DIRS;CUDA_BASELINES;CUDA_LIBS;CHECK_LIBS")
  if(NOT A_LAB OR NOT A_CHECKS OR NOT A_LAB_SOURCES)
    message(FATAL_ERROR "wb_add_check_binary(${target}): LAB, CHECKS and LAB_SOURCES are required")
  endif()
  if(NOT A_SOURCE_LABEL)
    set(labels "")
    foreach(src IN LISTS A_LAB_SOURCES A_SHARED_SOURCES)
      get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      file(RELATIVE_PATH rel "${WB_ROOT}" "${abs}")
      list(APPEND labels "${rel}")
    endforeach()
    foreach(library IN LISTS A_PROVIDED)  # "lab 05's provided gemm.cu"
      get_target_property(use ${library} WB_PROVIDED_USE)
      string(SUBSTRING "${use}" 0 2 used_lab)
      get_filename_component(name "${use}" NAME)
      list(APPEND labels "lab ${used_lab}'s provided ${name}")
    endforeach()
    list(JOIN labels ", " A_SOURCE_LABEL)
  endif()
  # The checks are compiled once per lab (and list of check files) into an object library
  # shared by every implementation linked against them; only checker/support/wb_lab_sources.cpp
  # is compiled per binary, with that binary's WB_LAB_SOURCES.
  set(checks "")
  foreach(src IN LISTS A_CHECKS)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND checks "${abs}")
  endforeach()
  set(baselines "")
  if(WB_BACKEND STREQUAL "cuda")
    foreach(src IN LISTS A_CUDA_BASELINES)
      get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND baselines "${abs}")
    endforeach()
  endif()
  # On sim, a lab with checker/labs/<lab>/interface.cpp is split in two processes: the check
  # binary (the judge: checks, inputs, references, comparison, no lab code) and
  # <target>_worker (the lab's code and a server for the judge's requests), so nothing the
  # lab's code does can reach the verdict (checker/support/remote, docs/concepts/checking.md).
  # On cuda with WB_CUDA_SPLIT, the same for the labs whose checks call no vendor library, and for
  # those whose vendor-library baselines (CUDA_BASELINES, CUDA_LIBS) are declared as remote calls
  # in checker/labs/<lab>/baselines.cpp: they run in <target>_trusted, the checker's own CUDA
  # process (checker/support/wb_baseline.h). The worker links the CUDA runtime, the judge none
  # (judge_cuda.cpp).
  set(interface "${WB_ROOT}/checker/labs/${A_LAB}/interface.cpp")
  set(baselines_interface "${WB_ROOT}/checker/labs/${A_LAB}/baselines.cpp")
  set(split OFF)
  if(WB_BACKEND STREQUAL "sim" AND WB_SPLIT_CHECKS)
    set(split ON)
    set(cuda_headers "${WB_ROOT}/common/cusim/include")
  elseif(WB_BACKEND STREQUAL "cuda" AND WB_CUDA_SPLIT AND
         ((NOT A_CUDA_BASELINES AND NOT A_CUDA_LIBS) OR EXISTS "${baselines_interface}"))
    set(split ON)
    set(cuda_headers ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  if(A_IN_PROCESS OR NOT EXISTS "${interface}")
    set(split OFF)
  endif()
  # Split, the baselines are compiled into <target>_trusted, not into the checks.
  set(check_baselines ${baselines})
  if(split)
    set(check_baselines "")
  endif()
  string(MD5 key "${A_LAB};${checks};${A_INCLUDE_DIRS};${check_baselines};${baselines};${A_CHECK_LIBS}")
  string(SUBSTRING "${key}" 0 8 key)
  string(REPLACE "-" "_" ident "${A_LAB}")
  set(objects wb_checks_${ident}_${key})
  if(NOT TARGET ${objects})
    add_library(${objects} OBJECT ${checks} ${check_baselines})
    target_include_directories(${objects} PRIVATE "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS}
                                                  "${WB_ROOT}/checker/support")
    target_link_libraries(${objects} PRIVATE wb GTest::gtest ${A_CHECK_LIBS})
    if(baselines)
      target_compile_definitions(${objects} PRIVATE WB_HAVE_CUDA_BASELINES=1)
    endif()
    if(check_baselines)
      target_compile_options(${objects} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
      target_link_libraries(${objects} PRIVATE CUDA::cudart)
    endif()
  endif()
  # The lab's code: LAB_SOURCES for this binary alone, SHARED_SOURCES once for every binary of
  # the lab that links the same files.
  set(shared_args "")
  if(A_SHARED_SOURCES)
    string(MD5 shared_key "${A_SHARED_SOURCES};${A_INCLUDE_DIRS}")
    string(SUBSTRING "${shared_key}" 0 8 shared_key)
    set(shared_args SHARED wb_shared_${ident}_${shared_key} ${A_SHARED_SOURCES})
  endif()
  if(split)
    set(remote "${WB_ROOT}/checker/support/remote")
    # The interface compiles twice per lab: as the worker's registrations and the judge's proxies.
    _wb_remote_sides(wb_remote_${ident} "${interface}" "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS} "${remote}"
                     ${cuda_headers})
    add_executable(${target}_worker $<TARGET_OBJECTS:wb_remote_${ident}_worker>)
    target_include_directories(${target}_worker PRIVATE "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS} "${remote}")
    target_link_libraries(${target}_worker PRIVATE wb_remote_worker wb)
    wb_cuda_sources(${target}_worker ${A_LAB_SOURCES})
    if(shared_args)
      wb_cuda_sources(${target}_worker ${shared_args})
    endif()
    target_link_libraries(${target}_worker PRIVATE ${A_PROVIDED})

    set(judge_baselines "")
    if(baselines)
      # The baselines' remote calls: proxies in the judge, registrations in <target>_trusted.
      _wb_remote_sides(wb_baselines_${ident} "${baselines_interface}" "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS}
                       "${remote}" ${cuda_headers})
      # The baselines are compiled once per lab; each check binary has its own _trusted next to it.
      set(lib wb_baselines_${ident}_code)
      if(NOT TARGET ${lib})
        add_library(${lib} OBJECT ${baselines})
        target_include_directories(${lib} PRIVATE "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS})
        target_compile_options(${lib} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
        target_link_libraries(${lib} PRIVATE wb_runtime ${A_CUDA_LIBS})
      endif()
      add_executable(${target}_trusted $<TARGET_OBJECTS:wb_baselines_${ident}_worker> $<TARGET_OBJECTS:${lib}>)
      target_link_libraries(${target}_trusted PRIVATE wb_remote_worker wb ${A_CUDA_LIBS})
      set(judge_baselines $<TARGET_OBJECTS:wb_baselines_${ident}_judge>)
    endif()
    add_executable(${target} $<TARGET_OBJECTS:${objects}> $<TARGET_OBJECTS:wb_remote_${ident}_judge>
                             ${judge_baselines})
    target_include_directories(${target} PRIVATE "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS}
                               "${WB_ROOT}/checker/support" "${remote}")
    target_compile_definitions(${target} PRIVATE
      "WB_LAB_NAME=\"${A_LAB}\"" "WB_LAB_SOURCES=\"${A_SOURCE_LABEL}\"")
    target_link_libraries(${target} PRIVATE wb_check_judge wb_remote_judge wb_judge GTest::gtest GTest::gtest_main
                                            Threads::Threads ${A_CHECK_LIBS})
    add_dependencies(${target} ${target}_worker wb_trusted_runtime)
    if(baselines)
      add_dependencies(${target} ${target}_trusted)
    endif()
    return()
  endif()
  # In the lab's process: the checks and the lab's code in one program, which reports where the
  # lab's code crashed as a split binary's worker does (checker/support/crash_report.h).
  add_executable(${target})
  target_include_directories(${target} PRIVATE "${WB_ROOT}/labs/${A_LAB}" ${A_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE
    "WB_LAB_NAME=\"${A_LAB}\"" "WB_LAB_SOURCES=\"${A_SOURCE_LABEL}\"")
  target_link_libraries(${target} PRIVATE ${objects} wb_check wb_crash_report_at_start GTest::gtest
                                          GTest::gtest_main ${A_CHECK_LIBS})
  if(WB_BACKEND STREQUAL "cuda" AND A_CUDA_LIBS)
    target_link_libraries(${target} PRIVATE ${A_CUDA_LIBS})
  endif()
  wb_cuda_sources(${target} ${A_LAB_SOURCES})
  if(shared_args)
    wb_cuda_sources(${target} ${shared_args})
  endif()
  target_link_libraries(${target} PRIVATE ${A_PROVIDED})
endfunction()

# wb_add_lab(<NN-name> CHECKS <check.cpp>... SOURCES <file.cu>... [USES <NN-name/file.cu>...]
#            [INCLUDE_DIRS <dir>...] [CUDA_BASELINES <src.cu>...] [CUDA_LIBS <lib>...]
#            [CHECK_LIBS <lib>...])
# USES links files of an earlier lab from the same tree: labs/ into the learner's binary,
# solutions/ into the solution's (lab 07 runs the learner's own lab-05 sgemm()).
# Declares check_<NN>_<name> (checks + labs/<NN-name>/<files>) and, when the tree has
# solutions/<NN-name>, check_<NN>_<name>_solution (checks + solutions/<NN-name>/<files>).
# These names are what `./workbook check` builds and runs.
include("${CMAKE_CURRENT_LIST_DIR}/WbRequireInterface.cmake")  # wb_require_interface()
include("${CMAKE_CURRENT_LIST_DIR}/WbProvided.cmake")          # WB_PROVIDED_DIR, wb_provided_use()

function(wb_add_lab lab)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "" "CHECKS;SOURCES;USES;INCLUDE_DIRS;CUDA_BASELINES;CUDA_LIBS;CHECK_LIBS")
  wb_require_interface(${lab} "WB_REMOTE, checker/support/remote/wb_remote_interface.h")
  string(REPLACE "-" "_" ident "${lab}")
  set(variants labs)
  if(IS_DIRECTORY "${WB_ROOT}/solutions/${lab}")
    list(APPEND variants solutions)
  endif()
  # USES: files of earlier labs (NN-name/file) linked in from the same tree, with their lab's
  # header directory on the include path.
  wb_lab_uses("${WB_ROOT}" solutions use_dirs used_solutions ${A_USES})
  set(include_dirs ${A_INCLUDE_DIRS} ${use_dirs})
  # What the known-wrong self-tests (tests/checker) link beside a mutated solution.
  set_property(GLOBAL PROPERTY WB_LAB_${ident}_USES "${used_solutions}")
  set_property(GLOBAL PROPERTY WB_LAB_${ident}_INCLUDE_DIRS "${include_dirs}")
  set_property(GLOBAL PROPERTY WB_LAB_${ident}_CHECK_LIBS "${A_CHECK_LIBS}")
  foreach(variant IN LISTS variants)
    set(target check_${ident})
    if(variant STREQUAL "solutions")
      set(target check_${ident}_solution)
    endif()
    wb_variant_sources("${WB_ROOT}" ${variant} ${lab} lab_sources shared_sources SOURCES ${A_SOURCES} USES ${A_USES}
                       PROVIDED provided)
    wb_add_check_binary(${target} LAB ${lab} CHECKS ${A_CHECKS} LAB_SOURCES ${lab_sources}
                        SHARED_SOURCES ${shared_sources} PROVIDED ${provided} INCLUDE_DIRS ${include_dirs}
                        CUDA_BASELINES ${A_CUDA_BASELINES} CUDA_LIBS ${A_CUDA_LIBS} CHECK_LIBS ${A_CHECK_LIBS})
  endforeach()
  # check_<NN>_<name>_mutant: the checks with <build>/mutant/<NN-name>/<files>, which
  # `./workbook mutate` overwrites with one mutant of the solution at a time (on sim; not part
  # of the default build). It starts as a copy of the solution.
  if("solutions" IN_LIST variants AND WB_BACKEND STREQUAL "sim")
    wb_mutant_slots("${WB_ROOT}" ${lab} lab_sources ${A_SOURCES})
    set(target check_${ident}_mutant)
    wb_add_check_binary(${target} LAB ${lab} CHECKS ${A_CHECKS} LAB_SOURCES ${lab_sources}
                        SHARED_SOURCES ${used_solutions}
                        SOURCE_LABEL "a mutant of solutions/${lab}" INCLUDE_DIRS ${include_dirs}
                        CHECK_LIBS ${A_CHECK_LIBS})
    wb_exclude_from_all(${target} ${target}_worker)
  endif()
endfunction()
