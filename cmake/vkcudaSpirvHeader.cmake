# Writes a SPIR-V binary as a C/C++ header (a static const uint32_t array), for the shaders
# of the video example (examples/video) and of engine_postfx_test (tests/gpu). Here in cmake/
# so that the examples build without reaching into tests/. Run as a script:
#   cmake -DSPV=<file.spv> -DOUT=<header> -DNAME=<array name> -DSOURCE=<shader path,
#         for the comment> -DCOMMITTED=<folder of the committed copy, for the comment>
#         -DGLSLANG_VERSION=<text> -P vkcudaSpirvHeader.cmake
# or, to compare two headers ignoring the glslang version line:
#   cmake -DCOMPARE_A=<header> -DCOMPARE_B=<header> [-DUPDATE_HINT=<text>] -P vkcudaSpirvHeader.cmake
if(DEFINED COMPARE_A)
  foreach(f A B)
    if(NOT EXISTS "${COMPARE_${f}}")
      message(FATAL_ERROR "${COMPARE_${f}} does not exist")
    endif()
    file(STRINGS "${COMPARE_${f}}" lines_${f})
    list(FILTER lines_${f} EXCLUDE REGEX "^ \\* glslang: ")
  endforeach()
  if(NOT DEFINED UPDATE_HINT)
    set(UPDATE_HINT "copy ${COMPARE_B} over ${COMPARE_A} and commit it")
  endif()
  if(NOT lines_A STREQUAL lines_B)
    message(FATAL_ERROR "${COMPARE_A} differs from ${COMPARE_B} (the glslang version line "
      "aside): the shader changed and its committed SPIR-V was not regenerated: "
      "${UPDATE_HINT}")
  endif()
  message(STATUS "${COMPARE_A} matches ${COMPARE_B}")
  return()
endif()

foreach(v SPV OUT NAME SOURCE COMMITTED)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "vkcudaSpirvHeader.cmake: -D${v}= is missing")
  endif()
endforeach()
file(READ "${SPV}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rest "${n} % 8")
if(n EQUAL 0 OR NOT rest EQUAL 0)
  message(FATAL_ERROR "${SPV} is not a whole number of 32-bit words (${n} hex digits)")
endif()
math(EXPR words "${n} / 8")
# Little-endian words, eight a line.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1," body "${hex}")
set(w "0x........,")
string(REGEX REPLACE "(${w}${w}${w}${w}${w}${w}${w}${w})" "\\1\n    " body "${body}")
string(REGEX REPLACE "[ \n]+$" "" body "${body}")
string(TOUPPER "${NAME}" guard)
file(WRITE "${OUT}.tmp"
"/* Generated from ${SOURCE} by glslangValidator -V --target-env vulkan1.2
 * (cmake/vkcudaSpirvHeader.cmake): do not edit.
 * glslang: ${GLSLANG_VERSION}
 * The build regenerates it when glslangValidator is there; the committed copy in
 * ${COMMITTED}/ is for machines without it (a test checks it is current). */
#ifndef VKCUDA_EXAMPLES_${guard}_H
#define VKCUDA_EXAMPLES_${guard}_H

#include <stdint.h>

/* ${words} words of SPIR-V. */
static const uint32_t ${NAME}[] = {
    ${body}
};

#endif /* VKCUDA_EXAMPLES_${guard}_H */
")
file(RENAME "${OUT}.tmp" "${OUT}")
