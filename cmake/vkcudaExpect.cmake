# Runs a command and checks its output (a test helper; CTest's PASS_REGULAR_EXPRESSION
# takes one pattern and ignores the exit status):
#   cmake -DEXPECT_1=<regex> [-DEXPECT_2=<regex> ...] [-DREJECT_1=<regex> ...]
#         -P vkcudaExpect.cmake -- <command> <arg>...
# Prints the command's output; fails unless it exits 0, every EXPECT_n matches and no
# REJECT_n does. (CMake
# 3.25 still reads some options after --, e.g. -i: spell them long, env --ignore-environment.)
set(cmd "")
set(take OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(take)
    list(APPEND cmd "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(take ON)
  endif()
endforeach()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vkcudaExpect: exit status ${rc}: ${cmd}")
endif()
foreach(i RANGE 1 9)
  if(DEFINED EXPECT_${i} AND NOT out MATCHES "${EXPECT_${i}}")
    message(FATAL_ERROR "vkcudaExpect: no line matches '${EXPECT_${i}}'")
  endif()
  if(DEFINED REJECT_${i} AND out MATCHES "${REJECT_${i}}")
    message(FATAL_ERROR "vkcudaExpect: the output matches '${REJECT_${i}}': ${CMAKE_MATCH_0}")
  endif()
endforeach()
