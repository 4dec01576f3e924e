# Generates a small job with scripts/gen_job.py and checks that the what-if job mode joins it
# and names the generated straggler. Usage (ctest runs it):
#   cmake -DPYTHON=<python3> -DSCRIPT=<scripts/gen_job.py> -DPROGRAM=<daydream-whatif> -DWORK=<dir> -P gen_job.cmake
foreach(var PYTHON SCRIPT PROGRAM WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gen_job.cmake: -D${var}=... is required")
  endif()
endforeach()
set(job ${WORK}/gen_job_3rank)
file(REMOVE_RECURSE ${job})
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${job} --ranks 3 --size 10M --straggler 1
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_job.py failed (${rc}):\n${out}\n${err}")
endif()
foreach(r 0 1 2)
  if(NOT EXISTS ${job}/rank-0000${r}.json)
    message(FATAL_ERROR "gen_job.py wrote no ${job}/rank-0000${r}.json:\n${err}")
  endif()
endforeach()
execute_process(COMMAND ${PROGRAM} ${job} --pass network:scale=2
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
file(REMOVE_RECURSE ${job})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} on the generated job failed (${rc}):\n${out}\n${err}")
endif()
foreach(re "job of 3 rank\\(s\\), 3 traced" "collective\\(s\\) matched \\(by communication stream id"
           "straggler: rank 1 arrived last")
  string(REGEX MATCH "${re}" found "${out}")
  if(found STREQUAL "")
    message(FATAL_ERROR "the generated job's output does not match '${re}':\n${out}\n${err}")
  endif()
endforeach()
