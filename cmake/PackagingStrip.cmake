# CPACK_PRE_BUILD_SCRIPTS: strips the debug information from the static
# libraries staged for the packages (as Debian's dh_strip does). CMake's own
# stripping (CPACK_STRIP_FILES) leaves static libraries alone, and those of a
# RelWithDebInfo build are mostly debug information (libetcd_recipes_recipes.a:
# 199 MB, 16 MB without).
file(GLOB_RECURSE _archives "${CPACK_TEMPORARY_DIRECTORY}/*.a")
foreach(_a IN LISTS _archives)
  execute_process(COMMAND "${CPACK_ETCD_RECIPES_STRIP}" --strip-debug "${_a}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${_a} failed")
  endif()
  message(STATUS "stripped debug information: ${_a}")
endforeach()
