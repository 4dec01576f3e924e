# Runs a program and checks its exit status and output. Usage (ctest runs it):
#   cmake -DPROGRAM=<exe> "-DARGS=a|b|c" -DSTATUS=<n> [-DREGEX=<re>]
#         [-DSAME_AS=<exe> "-DSAME_ARGS=..."] -DWORK=<dir> -P run_program.cmake
# ARGS separates arguments with '|'. With SAME_AS, the second program's stdout must equal
# the first's byte for byte.
foreach(var PROGRAM STATUS WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_program.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" args "${ARGS}")
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc STREQUAL "${STATUS}")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: exit status ${rc}, expected ${STATUS}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED REGEX AND NOT REGEX STREQUAL "")
  string(REGEX MATCH "${REGEX}" found "${out}${err}")
  if(found STREQUAL "")
    message(FATAL_ERROR "${PROGRAM} ${ARGS}: output does not match '${REGEX}'\nstdout:\n${out}\nstderr:\n${err}")
  endif()
endif()
if(DEFINED SAME_AS)
  string(REPLACE "|" ";" same_args "${SAME_ARGS}")
  execute_process(COMMAND ${SAME_AS} ${same_args} OUTPUT_VARIABLE out2 RESULT_VARIABLE rc2)
  if(NOT rc2 STREQUAL "${STATUS}" OR NOT out STREQUAL out2)
    message(FATAL_ERROR "${SAME_AS} ${SAME_ARGS} (status ${rc2}) differs from ${PROGRAM} ${ARGS}")
  endif()
endif()
