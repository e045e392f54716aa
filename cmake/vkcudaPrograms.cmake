# What the example programs (c_examples/, examples/cpp/) and the GPU test programs
# (tests/gpu/) are built with. Included by the top-level CMakeLists.txt when either is
# built; not installed.
#
# vkcuda_program(<name> SOURCES <src>... [LIBS <lib>...])
#   An executable built from SOURCES as C99 (no compiler extensions, with
#   _POSIX_C_SOURCE=200809L so POSIX calls such as close() are declared) or C++17,
#   with -Wall -Wextra -Wpedantic -Werror, linked with vkcuda::vkcuda and LIBS.
#
# Vulkan and CUDA as users' programs have them: <vulkan/vulkan.h> with the Vulkan loader
# linked (Vulkan::Vulkan: find_package(Vulkan) in the top-level file), <cuda.h> with
# libcuda linked (vkcuda_cuda):
#   CUDA::cuda_driver (find_package(CUDAToolkit)) where a CUDA driver is installed
#     (libcuda.so.1 found: VKCUDA_LIBCUDA);
#   elsewhere c_examples/cuda_shim.c (it says why) with <cuda.h> from a CUDA toolkit, or
#     from PyPI's nvidia-cuda-runtime in the venv scripts/install-deps.sh makes
#     (target/tools/nvcc-13.0.88; VKCUDA_CUDA_INCLUDE_DIR). -DVKCUDA_CUDA_SHIM=ON|OFF
#     overrides the choice.
# Without the loader or <cuda.h> the programs that call them are left out (a message).
#
# vkcuda_example_support (static library), when both are found
#   What the programs share besides example.c: the Vulkan helpers (c_examples/vk_util.c)
#   and the example kernels with their launch helpers (c_examples/cuda_util.c, the PTX
#   of ptx/kernels.ptx embedded as kernels_ptx.h). Its users get c_examples/ on
#   their include path, Vulkan::Vulkan and vkcuda_cuda.
#
# vkcuda_stb_image_write (static library), when stb_image_write.h is found
#   stb_image_write (Debian/Ubuntu: libstb-dev), compiled once
#   (c_examples/stb_image_write.c); VKCUDA_HAVE_STB_IMAGE_WRITE says whether it exists.
#   The directory is VKCUDA_STB_INCLUDE_DIR (found in the usual include directories,
#   their stb/ subdirectory, and the Vulkan include directory the GPU bundle passes).
#
# vkcuda_nvdec_clip (static library), when FFmpeg's nv-codec-headers are found
#   NVDEC parsing and decoding a clip (examples/video/nvdec_clip.c) through
#   <ffnvcodec/dynlink_loader.h> (Debian/Ubuntu: libffmpeg-nvenc-dev; header-only: it
#   loads libcuda.so.1 and libnvcuvid.so.1 at run time, nothing links them). The
#   directory is VKCUDA_FFNVCODEC_INCLUDE_DIR (the usual include directories and the
#   Vulkan include directory the GPU bundle passes, which carries them);
#   VKCUDA_HAVE_FFNVCODEC says whether it was found. Its users (nvdec_to_vulkan,
#   tests/gpu/nvdec_frames and nvenc_open) get the headers as SYSTEM includes: they
#   are not -Wpedantic clean (dlsym casts).
#
# vkcuda_embed_ptx(<target> <DIR/NAME.ptx>...) (cmake/vkcudaPtx.cmake)
#   The committed PTX of a kernel file as the header NAME_ptx.h, made in the build tree.

include("${CMAKE_CURRENT_LIST_DIR}/vkcudaPtx.cmake")

function(vkcuda_program name)
  cmake_parse_arguments(PARSE_ARGV 1 P "" "" "SOURCES;LIBS")
  if(NOT P_SOURCES)
    message(FATAL_ERROR "vkcuda_program(${name}): no SOURCES")
  endif()
  add_executable(${name} ${P_SOURCES})
  target_link_libraries(${name} PRIVATE vkcuda::vkcuda ${P_LIBS})
  target_compile_definitions(${name} PRIVATE _POSIX_C_SOURCE=200809L)
  set_target_properties(${name} PROPERTIES
    C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  vkcuda_strict_warnings(${name})
endfunction()

set(_vkcuda_examples_dir "${PROJECT_SOURCE_DIR}/c_examples")

find_package(CUDAToolkit QUIET)
find_library(VKCUDA_LIBCUDA NAMES libcuda.so.1 HINTS ENV LD_LIBRARY_PATH
  DOC "The installed CUDA driver: the programs link CUDA::cuda_driver where it is found")
set(_vkcuda_shim ON)
if(TARGET CUDA::cuda_driver AND VKCUDA_LIBCUDA)
  set(_vkcuda_shim OFF)
endif()
option(VKCUDA_CUDA_SHIM "The programs reach libcuda.so.1 through c_examples/cuda_shim.c, not CUDA::cuda_driver"
  ${_vkcuda_shim})
if(NOT VKCUDA_CUDA_SHIM AND TARGET CUDA::cuda_driver)
  add_library(vkcuda_cuda INTERFACE)
  target_link_libraries(vkcuda_cuda INTERFACE CUDA::cuda_driver)
  message(STATUS "vkcuda: the programs link CUDA::cuda_driver (CUDA ${CUDAToolkit_VERSION})")
else()
  file(GLOB _vkcuda_pypi_cuda "$ENV{VKCUDA_NVCC_HOME}/lib/python3*/site-packages/nvidia/cu*/include"
    "${PROJECT_SOURCE_DIR}/target/tools/nvcc-*/lib/python3*/site-packages/nvidia/cu*/include")
  find_path(VKCUDA_CUDA_INCLUDE_DIR cuda.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} "$ENV{CUDA_PATH}/include" /usr/local/cuda/include ${_vkcuda_pypi_cuda}
    DOC "The directory of cuda.h (a CUDA toolkit, or PyPI's nvidia-cuda-runtime: scripts/install-deps.sh)")
  if(VKCUDA_CUDA_INCLUDE_DIR)
    add_library(vkcuda_cuda STATIC "${_vkcuda_examples_dir}/cuda_shim.c")
    # SYSTEM: cuda.h is not -Wpedantic clean C99 (unnamed unions).
    target_include_directories(vkcuda_cuda SYSTEM PUBLIC "${VKCUDA_CUDA_INCLUDE_DIR}")
    find_package(Threads REQUIRED)
    target_link_libraries(vkcuda_cuda PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
    target_compile_definitions(vkcuda_cuda PRIVATE _POSIX_C_SOURCE=200809L)
    set_target_properties(vkcuda_cuda PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
    vkcuda_strict_warnings(vkcuda_cuda)
    message(STATUS "vkcuda: the programs reach libcuda.so.1 through c_examples/cuda_shim.c "
      "(no CUDA driver to link here), with ${VKCUDA_CUDA_INCLUDE_DIR}/cuda.h")
  endif()
endif()

if(TARGET Vulkan::Vulkan AND TARGET vkcuda_cuda)
  add_library(vkcuda_example_support STATIC
    "${_vkcuda_examples_dir}/cuda_util.c"
    "${_vkcuda_examples_dir}/vk_util.c")
  target_include_directories(vkcuda_example_support PUBLIC "${_vkcuda_examples_dir}")
  vkcuda_embed_ptx(vkcuda_example_support "${PROJECT_SOURCE_DIR}/ptx/kernels.ptx")
  target_link_libraries(vkcuda_example_support PUBLIC vkcuda::vkcuda Vulkan::Vulkan vkcuda_cuda)
  target_compile_definitions(vkcuda_example_support PRIVATE _POSIX_C_SOURCE=200809L)
  set_target_properties(vkcuda_example_support PROPERTIES
    C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  vkcuda_strict_warnings(vkcuda_example_support)
else()
  set(_vkcuda_missing "")
  if(NOT TARGET Vulkan::Vulkan)
    list(APPEND _vkcuda_missing "the Vulkan loader to link (libvulkan-dev)")
  endif()
  if(NOT TARGET vkcuda_cuda)
    list(APPEND _vkcuda_missing "cuda.h (a CUDA toolkit, or scripts/install-deps.sh)")
  endif()
  string(REPLACE ";" " and " _vkcuda_missing "${_vkcuda_missing}")
  message(STATUS "vkcuda: no ${_vkcuda_missing}: of the examples only vkcuda_info is built, "
    "and none of tests/gpu")
endif()

find_path(VKCUDA_STB_INCLUDE_DIR stb_image_write.h
  HINTS ${Vulkan_INCLUDE_DIR} ${VKCUDA_VULKAN_INCLUDE_DIR}
  PATH_SUFFIXES stb
  DOC "The directory of stb_image_write.h (Debian/Ubuntu: apt-get install libstb-dev)")
if(VKCUDA_STB_INCLUDE_DIR)
  set(VKCUDA_HAVE_STB_IMAGE_WRITE ON)
  message(STATUS "vkcuda: PNG output through ${VKCUDA_STB_INCLUDE_DIR}/stb_image_write.h")
  add_library(vkcuda_stb_image_write STATIC "${_vkcuda_examples_dir}/stb_image_write.c")
  # SYSTEM: a newer stb's own warnings do not fail our -Werror builds.
  target_include_directories(vkcuda_stb_image_write SYSTEM PUBLIC "${VKCUDA_STB_INCLUDE_DIR}")
  set_target_properties(vkcuda_stb_image_write PROPERTIES
    C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  find_library(VKCUDA_LIBM m)
  mark_as_advanced(VKCUDA_LIBM)
  if(VKCUDA_LIBM)
    target_link_libraries(vkcuda_stb_image_write PUBLIC "${VKCUDA_LIBM}")
  endif()
else()
  set(VKCUDA_HAVE_STB_IMAGE_WRITE OFF)
  message(STATUS "vkcuda: stb_image_write.h NOT found (apt-get install libstb-dev, or "
    "-DVKCUDA_STB_INCLUDE_DIR=<dir>): the examples that write a PNG (image_to_png, "
    "engine_postfx) are not built, and the GPU test programs write no PNG")
endif()

find_path(VKCUDA_FFNVCODEC_INCLUDE_DIR ffnvcodec/dynlink_loader.h
  HINTS ${Vulkan_INCLUDE_DIR} ${VKCUDA_VULKAN_INCLUDE_DIR}
  DOC "The directory holding ffnvcodec/dynlink_loader.h (Debian/Ubuntu: apt-get install libffmpeg-nvenc-dev)")
if(VKCUDA_FFNVCODEC_INCLUDE_DIR)
  set(VKCUDA_HAVE_FFNVCODEC ON)
  message(STATUS "vkcuda: NVDEC/NVENC programs through ${VKCUDA_FFNVCODEC_INCLUDE_DIR}/ffnvcodec/dynlink_loader.h")
  add_library(vkcuda_ffnvcodec INTERFACE)
  target_include_directories(vkcuda_ffnvcodec SYSTEM INTERFACE "${VKCUDA_FFNVCODEC_INCLUDE_DIR}")
  target_link_libraries(vkcuda_ffnvcodec INTERFACE ${CMAKE_DL_LIBS})
  add_library(vkcuda_nvdec_clip STATIC "${PROJECT_SOURCE_DIR}/examples/video/nvdec_clip.c")
  target_include_directories(vkcuda_nvdec_clip PUBLIC "${PROJECT_SOURCE_DIR}/examples/video")
  target_link_libraries(vkcuda_nvdec_clip PUBLIC vkcuda::vkcuda PRIVATE vkcuda_ffnvcodec)
  target_compile_definitions(vkcuda_nvdec_clip PRIVATE _POSIX_C_SOURCE=200809L)
  set_target_properties(vkcuda_nvdec_clip PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  vkcuda_strict_warnings(vkcuda_nvdec_clip)
else()
  set(VKCUDA_HAVE_FFNVCODEC OFF)
  message(STATUS "vkcuda: ffnvcodec/dynlink_loader.h NOT found (apt-get install libffmpeg-nvenc-dev, or "
    "-DVKCUDA_FFNVCODEC_INCLUDE_DIR=<dir>): no NVDEC/NVENC programs (nvdec_to_vulkan, nvdec_frames, nvenc_open)")
endif()
