# The PTX of the example and GPU test kernels as C headers. scripts/gen-ptx.sh
# compiles each kernel file DIR/NAME.cu to ptx/NAME.ptx, which is committed; the
# header the programs include, NAME_ptx.h, is made from it here in the build tree,
# so the PTX is stored once and building the programs needs no nvcc.
# The header defines `static const char NAME_ptx[]` (the .ptx file's bytes,
# NUL-terminated: a byte array, not a string literal, which C99 limits to 4095
# characters) and NAME_PTX_ARCH ("compute_75", from the PTX's .target line).
#
# vkcuda_embed_ptx(<target> <ptx/NAME.ptx>...)
#   Writes <build>/ptx/NAME_ptx.h at configure time (again when a .ptx changes:
#   CMake re-runs itself) and puts <build>/ptx on <target>'s include path.
#
# cmake -DPTX=ptx/NAME.ptx -DOUT=FILE -P cmake/vkcudaPtx.cmake
#   The same header without a CMake project (scripts/gpu-test.sh, build-by-hand).

set(VKCUDA_PTX_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/..")

function(vkcuda_ptx_header ptx out)
  get_filename_component(name "${ptx}" NAME_WE)
  string(MAKE_C_IDENTIFIER "${name}" name)
  string(TOUPPER "${name}" upper)
  file(STRINGS "${ptx}" target REGEX "^\\.target sm_[0-9]+" LIMIT_COUNT 1)
  if(NOT target)
    message(FATAL_ERROR "vkcuda_ptx_header: ${ptx} has no .target sm_NN line")
  endif()
  string(REGEX REPLACE "^\\.target sm_([0-9]+).*" "compute_\\1" arch "${target}")
  file(READ "${ptx}" hex HEX)
  string(REGEX REPLACE "(..)" "0x\\1," bytes "${hex}")
  # 16 bytes a line (CMake's regular expressions have no {n}).
  string(REPEAT "0x..," 16 sixteen)
  string(REGEX REPLACE "(${sixteen})" "\\1\n    " bytes "${bytes}")
  file(RELATIVE_PATH source "${VKCUDA_PTX_SOURCE_ROOT}" "${ptx}")
  set(text "/* Made by cmake/vkcudaPtx.cmake from ${source} (scripts/gen-ptx.sh): the PTX,
 * NUL-terminated, for cuModuleLoadData. Generated in the build tree; never committed. */
#ifndef VKCUDA_${upper}_PTX_H
#define VKCUDA_${upper}_PTX_H

#define ${upper}_PTX_ARCH \"${arch}\"

static const char ${name}_ptx[] = {
    ${bytes}0x00
};

#endif /* VKCUDA_${upper}_PTX_H */
")
  # Written only when it changes, so that a re-run of CMake rebuilds nothing.
  set(old "")
  if(EXISTS "${out}")
    file(READ "${out}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${out}" "${text}")
  endif()
endfunction()

function(vkcuda_embed_ptx target)
  set(dir "${PROJECT_BINARY_DIR}/ptx")
  foreach(ptx IN LISTS ARGN)
    get_filename_component(ptx "${ptx}" ABSOLUTE)
    get_filename_component(name "${ptx}" NAME_WE)
    set(out "${dir}/${name}_ptx.h")
    vkcuda_ptx_header("${ptx}" "${out}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${ptx}")
    target_sources(${target} PRIVATE "${out}")
  endforeach()
  target_include_directories(${target} PRIVATE "${dir}")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT PTX OR NOT OUT)
    message(FATAL_ERROR "usage: cmake -DPTX=DIR/NAME.ptx -DOUT=FILE -P cmake/vkcudaPtx.cmake")
  endif()
  get_filename_component(PTX "${PTX}" ABSOLUTE)
  vkcuda_ptx_header("${PTX}" "${OUT}")
endif()
