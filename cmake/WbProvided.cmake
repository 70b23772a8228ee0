# Provided earlier labs: a later lab assigned on its own.
#
# Labs 07, 08 and 12 call functions of earlier labs (their USES: lab 08 calls lab 05's sgemm()
# and lab 06's softmax_forward()). A course that assigns lab 08 alone gives its learners a
# *provided build* of those earlier labs: static libraries compiled from solutions/ on the
# instructor's machine (`./workbook provide 05 06 --out DIR`), which carry no source. A build
# configured with -DWB_PROVIDED_DIR=DIR (`./workbook check 08 --provided DIR`) links those
# libraries into the learner's binaries in place of labs/05-gemm/gemm.cu and
# labs/06-softmax-layernorm/softmax_layernorm.cu; the solution's binaries are unchanged.
#
# A library is used only where it matches this build: the same backend and flavour (sim with
# analysis instrumentation, plain sim, cuda), the same compiler and version, and the same headers
# (the earlier lab's own and the runtime's: cusim's on sim, common/comm's for collectives). The
# check is one hash, the library's *interface*, computed here on both sides; a library whose
# interface differs is not linked, and <build>/provided-status.json says why
# (checker/wbcheck/provided.py prints it).
#
#   wb_provided_flavour(<out> <NN-name/file> [NO_ANALYSIS])  sim-analysis, sim or cuda
#   wb_provide_target(<NN-name/file> <flavour>)              the producer's library target
#   wb_provide_target_name(<out> <NN-name/file> <flavour>)   its name
#   wb_provided_use(<out> <lab> <NN-name/file> <flavour>)    the consumer's imported library
include_guard(GLOBAL)

set(WB_PROVIDED_DIR "" CACHE PATH
    "A directory made by './workbook provide' whose builds of earlier labs replace the learner's own")
set(WB_PROVIDED_MANIFEST "")
if(WB_PROVIDED_DIR)
  get_filename_component(_wb_provided_dir "${WB_PROVIDED_DIR}" ABSOLUTE)
  if(EXISTS "${_wb_provided_dir}/provided.json")
    file(READ "${_wb_provided_dir}/provided.json" WB_PROVIDED_MANIFEST)
    set_property(DIRECTORY "${WB_ROOT}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_wb_provided_dir}/provided.json")
  else()
    message(WARNING "WB_PROVIDED_DIR=${WB_PROVIDED_DIR} has no provided.json (made by ./workbook provide); "
                    "the learner's own earlier labs are linked")
  endif()
endif()

# wb_provided_flavour(<out> <NN-name/file> [NO_ANALYSIS]): the build of an earlier lab's file that
# a binary of this backend links: cuda, sim-analysis (instrumented for cusim's memcheck, racecheck
# and metrics, as the lab binaries' code is) or sim (plain: collective labs, C++ files).
function(wb_provided_flavour out use)
  if(WB_BACKEND STREQUAL "cuda")
    set(flavour cuda)
  elseif(use MATCHES "\\.cu$" AND WB_SIM_ANALYSIS AND NOT "NO_ANALYSIS" IN_LIST ARGN)
    set(flavour sim-analysis)
  else()
    set(flavour sim)
  endif()
  set(${out} ${flavour} PARENT_SCOPE)
endfunction()

# The sha256 of the files a build of <NN-name/file> depends on besides itself, with the flavour
# and the compiler: the earlier lab's headers and, on sim, cusim's; for a collective lab's C++
# file, common/comm's. Two builds with the same interface can link each other's libraries.
function(wb_provided_interface out use flavour)
  # Computed once per file and flavour (the provide target and every later lab that uses it ask).
  get_property(known GLOBAL PROPERTY "WB_PROVIDED_INTERFACE_${use}_${flavour}")
  if(known)
    set(${out} ${known} PARENT_SCOPE)
    return()
  endif()
  get_filename_component(used_lab "${use}" DIRECTORY)
  file(GLOB headers LIST_DIRECTORIES false "${WB_ROOT}/labs/${used_lab}/*.h")
  if(WB_BACKEND STREQUAL "sim")
    file(GLOB_RECURSE runtime LIST_DIRECTORIES false "${WB_ROOT}/common/cusim/include/*")
    list(APPEND headers ${runtime})
  endif()
  if(NOT use MATCHES "\\.cu$")
    file(GLOB_RECURSE comm LIST_DIRECTORIES false "${WB_ROOT}/common/comm/include/*")
    list(APPEND headers ${comm})
  endif()
  list(SORT headers)
  set(text "${flavour};${CMAKE_CXX_COMPILER_ID};${CMAKE_CXX_COMPILER_VERSION}")
  if(WB_BACKEND STREQUAL "cuda")
    string(APPEND text ";${CMAKE_CUDA_COMPILER_ID};${CMAKE_CUDA_COMPILER_VERSION};${CMAKE_CUDA_ARCHITECTURES}")
  endif()
  foreach(h IN LISTS headers)
    file(RELATIVE_PATH rel "${WB_ROOT}" "${h}")
    file(SHA256 "${h}" hash)
    string(APPEND text ";${rel}=${hash}")
    if(WB_PROVIDED_DIR)  # a changed header changes the interface: configure again
      set_property(DIRECTORY "${WB_ROOT}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${h}")
    endif()
  endforeach()
  string(SHA256 hash "${text}")
  set_property(GLOBAL PROPERTY "WB_PROVIDED_INTERFACE_${use}_${flavour}" ${hash})
  set(${out} ${hash} PARENT_SCOPE)
endfunction()

# wb_provide_target(<NN-name/file> <flavour>): where the tree has solutions/<NN-name/file>, the
# static library `./workbook provide` builds and copies out: wb_provide_<file>_<flavour>, in
# <build>/provide/<NN-name>/<file>.<flavour>.a (not part of the default build). Declared once.
function(wb_provide_target use flavour)
  wb_provide_target_name(target "${use}" ${flavour})
  if(TARGET ${target} OR NOT EXISTS "${WB_ROOT}/solutions/${use}")
    return()
  endif()
  get_filename_component(used_lab "${use}" DIRECTORY)
  get_filename_component(name "${use}" NAME)
  set(source "${WB_ROOT}/solutions/${use}")
  add_library(${target} STATIC)
  set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE PREFIX "" SUFFIX ".a" WB_PROVIDED_USE "${use}"
                        OUTPUT_NAME "${name}.${flavour}"
                        ARCHIVE_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/provide/${used_lab}")
  target_include_directories(${target} PRIVATE "${WB_ROOT}/labs/${used_lab}")
  # Paths in the library's debug information and __FILE__ are the tree's own
  # (solutions/05-gemm/gemm.cu), not the instructor's machine's. (cusim's launch records keep the
  # absolute path its rewriter writes as a literal.)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${CMAKE_BINARY_DIR}/=>"
                                             "$<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${WB_ROOT}/=>")
  endif()
  if(NOT use MATCHES "\\.cu$")
    target_sources(${target} PRIVATE "${source}")
    target_link_libraries(${target} PRIVATE comm)
  elseif(WB_BACKEND STREQUAL "cuda")
    target_sources(${target} PRIVATE "${source}")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    target_link_libraries(${target} PRIVATE CUDA::cudart)
  else()
    cusim_target_cuda_sources(${target} "${source}")
    target_link_libraries(${target} PRIVATE cusim)
    if(flavour STREQUAL "sim-analysis")
      cusim_add_analysis_options(${target})
    endif()
  endif()
  wb_provided_interface(interface "${use}" ${flavour})
  set_property(GLOBAL APPEND PROPERTY WB_PROVIDE_OFFERED
    "{\"use\": \"${use}\", \"flavour\": \"${flavour}\", \"target\": \"${target}\", \"interface\": \"${interface}\", \"archive\": \"${CMAKE_BINARY_DIR}/provide/${used_lab}/${name}.${flavour}.a\"}")
endfunction()

# wb_provide_target_name(<out> <NN-name/file> <flavour>): the name wb_provide_target() gives.
function(wb_provide_target_name out use flavour)
  string(MAKE_C_IDENTIFIER "wb_provide_${use}_${flavour}" target)
  set(${out} ${target} PARENT_SCOPE)
endfunction()

# wb_provided_use(<out> <lab> <NN-name/file> <flavour>): the imported library of WB_PROVIDED_DIR
# that replaces the learner's <NN-name/file> in <lab>'s binaries, or "" (no WB_PROVIDED_DIR, no
# such build in it, or one whose interface differs from this build's: the reason goes to
# provided-status.json).
function(wb_provided_use out lab use flavour)
  set(${out} "" PARENT_SCOPE)
  if(NOT WB_PROVIDED_MANIFEST)
    return()
  endif()
  get_filename_component(dir "${WB_PROVIDED_DIR}" ABSOLUTE)
  string(JSON file ERROR_VARIABLE missing GET "${WB_PROVIDED_MANIFEST}" archives "${use}" ${flavour} file)
  string(JSON theirs ERROR_VARIABLE missing2 GET "${WB_PROVIDED_MANIFEST}" archives "${use}" ${flavour} interface)
  set(why "")
  if(missing OR missing2)
    set(why "no-build")
  else()
    wb_provided_interface(ours "${use}" ${flavour})
    if(NOT theirs STREQUAL ours)
      set(why "interface")
    elseif(NOT EXISTS "${dir}/${file}")
      set(why "missing-file")
    endif()
  endif()
  set(linked true)
  if(why)
    set(linked false)
  endif()
  set_property(GLOBAL APPEND PROPERTY WB_PROVIDED_USED
    "{\"lab\": \"${lab}\", \"use\": \"${use}\", \"flavour\": \"${flavour}\", \"linked\": ${linked}, \"why\": \"${why}\"}")
  if(why)
    return()
  endif()
  string(MAKE_C_IDENTIFIER "wb_provided_${use}_${flavour}" target)
  if(NOT TARGET ${target})
    add_library(${target} STATIC IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${dir}/${file}" WB_PROVIDED_USE "${use}")
    if(NOT use MATCHES "\\.cu$")
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES comm)
    elseif(WB_BACKEND STREQUAL "cuda")
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES CUDA::cudart)
    else()
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES cusim)
    endif()
  endif()
  set(${out} ${target} PARENT_SCOPE)
endfunction()

# <build>/provided-status.json, written when the whole tree is configured: what this build can
# provide (offered: the wb_provide_* targets) and, with WB_PROVIDED_DIR, which of the learner's
# earlier-lab files each lab links from it (used).
function(wb_provided_write_status)
  get_property(offered GLOBAL PROPERTY WB_PROVIDE_OFFERED)
  get_property(used GLOBAL PROPERTY WB_PROVIDED_USED)
  list(JOIN offered ",\n    " offered)
  list(JOIN used ",\n    " used)
  set(dir "")
  if(WB_PROVIDED_DIR)
    get_filename_component(dir "${WB_PROVIDED_DIR}" ABSOLUTE)
  endif()
  file(WRITE "${CMAKE_BINARY_DIR}/provided-status.json"
"{
  \"backend\": \"${WB_BACKEND}\",
  \"dir\": \"${dir}\",
  \"offered\": [
    ${offered}
  ],
  \"used\": [
    ${used}
  ]
}
")
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL wb_provided_write_status)
