# Known-wrong implementations as deltas against the reference solutions (included by
# tests/CMakeLists.txt before the test areas).
#
# wb_known_wrong_source(<out_var> SOLUTION <solution file> DELTA <name>.diff)
#   Sets <out_var> to the path of <name><ext of the solution> in the build tree: the solution
#   with the delta applied (tests/known_wrong/apply_delta.py), regenerated whenever the
#   solution or the delta changes. A delta that no longer applies stops the build with a
#   message naming it. Also sets <out_var>_MISTAKE to the delta's one-line description (its
#   'Mistake:' line, or the 'Variant:' line of a known-right variant).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(WB_APPLY_DELTA "${CMAKE_CURRENT_LIST_DIR}/apply_delta.py")

function(wb_known_wrong_source out_var)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "SOLUTION;DELTA" "")
  if(NOT A_SOLUTION OR NOT A_DELTA)
    message(FATAL_ERROR "wb_known_wrong_source: SOLUTION and DELTA are required")
  endif()
  get_filename_component(delta "${A_DELTA}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(solution "${A_SOLUTION}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(name "${delta}" NAME_WE)
  get_filename_component(ext "${solution}" LAST_EXT)
  get_filename_component(dir "${delta}" DIRECTORY)
  get_filename_component(dir "${dir}" NAME)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${dir}/${name}${ext}")
  file(STRINGS "${delta}" mistake REGEX "^(Mistake|Variant):" LIMIT_COUNT 1)
  string(REGEX REPLACE "^(Mistake|Variant): *" "" mistake "${mistake}")
  if(NOT mistake)
    message(FATAL_ERROR "${delta}: the first line must say 'Mistake: <what is wrong>' (or 'Variant: <what differs>')")
  endif()
  get_property(done DIRECTORY PROPERTY WB_KNOWN_WRONG_OUTPUTS)
  if(NOT out IN_LIST done)
    set_property(DIRECTORY APPEND PROPERTY WB_KNOWN_WRONG_OUTPUTS "${out}")
    file(RELATIVE_PATH rel "${WB_ROOT}" "${delta}")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND Python3::Interpreter "${WB_APPLY_DELTA}" "${solution}" "${delta}" "${out}"
      DEPENDS "${solution}" "${delta}" "${WB_APPLY_DELTA}"
      COMMENT "Applying ${rel} to the solution"
      VERBATIM)
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${out_var}_MISTAKE "${mistake}" PARENT_SCOPE)
endfunction()
