# Checks that README.md's "The API in five minutes" code block is c_examples/five_minutes.c
# word for word (so the README shows a program that compiles and runs):
#   cmake -DREADME=<README.md> -DSOURCE=<five_minutes.c> -P readme_block.cmake
# The block is the first ```c fence after the heading "## The API in five minutes".
foreach(v README SOURCE)
  if(NOT EXISTS "${${v}}")
    message(FATAL_ERROR "readme_block.cmake: -D${v}=${${v}} does not exist")
  endif()
endforeach()
file(READ "${README}" rest)
file(READ "${SOURCE}" source)
# Skip to the heading, then to the fence that opens the block.
foreach(marker "\n## The API in five minutes\n" "\n```c\n")
  string(FIND "${rest}" "${marker}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${README}: no \"${marker}\" where the five-minute block should be")
  endif()
  string(LENGTH "${marker}" length)
  math(EXPR at "${at} + ${length}")
  string(SUBSTRING "${rest}" ${at} -1 rest)
endforeach()
string(FIND "${rest}" "\n```\n" close)
if(close EQUAL -1)
  message(FATAL_ERROR "${README}: the five-minute block is not closed")
endif()
math(EXPR length "${close} + 1")
string(SUBSTRING "${rest}" 0 ${length} block)
if(NOT block STREQUAL source)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_block.c" "${block}")
  message(FATAL_ERROR "README.md's \"API in five minutes\" block differs from ${SOURCE}: "
    "copy the file into the block (or the block into the file). The block as it is now: "
    "${CMAKE_CURRENT_BINARY_DIR}/readme_block.c (diff -u it against the file).")
endif()
message(STATUS "README.md's \"API in five minutes\" block is ${SOURCE}")
