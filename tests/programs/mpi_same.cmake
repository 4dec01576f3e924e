# Runs PROGRAM ARGS in one process and under MPIEXEC with two ranks and requires the same
# stdout, except the lines that say how it ran ("seconds", "ranks"), and "ranks": 2.
#   cmake -DPROGRAM=<exe> -DMPIEXEC=<mpirun> "-DARGS=a|b|c" -P mpi_same.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE one ERROR_VARIABLE err1 RESULT_VARIABLE rc1)
if(NOT rc1 STREQUAL "0")
  message(FATAL_ERROR "one process: exit status ${rc1}\n${one}\n${err1}")
endif()
# A sanitized build keeps its checks under mpirun, except for leaks: Open MPI's own
# allocations outlive MPI_Finalize and are not this program's.
set(asan "$ENV{ASAN_OPTIONS}")
if(asan STREQUAL "")
  set(asan "detect_leaks=0")
else()
  set(asan "${asan}:detect_leaks=0")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "ASAN_OPTIONS=${asan}"
                        ${MPIEXEC} --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -np 2 ${PROGRAM} ${args}
                OUTPUT_VARIABLE two ERROR_VARIABLE err2 RESULT_VARIABLE rc2)
if(NOT rc2 STREQUAL "0")
  message(FATAL_ERROR "mpirun -np 2: exit status ${rc2}\n${two}\n${err2}")
endif()
string(REGEX MATCH "\"ranks\": [0-9]+" ranks "${two}")
if(NOT ranks STREQUAL "\"ranks\": 2")
  message(FATAL_ERROR "mpirun -np 2 says '${ranks}'\n${two}")
endif()
foreach(out IN ITEMS one two)
  string(REGEX REPLACE "\"(seconds|ranks)\": [0-9.e+-]+" "" ${out} "${${out}}")
endforeach()
if(NOT one STREQUAL two)
  message(FATAL_ERROR "mpirun -np 2 differs from one process\none:\n${one}\ntwo:\n${two}")
endif()
string(LENGTH "${one}" n)
message(STATUS "same output (${n} characters)")
