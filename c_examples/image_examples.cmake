# The image examples: a CUDA kernel draws a fractal into a shared image that Vulkan
# copies out and writes as a PNG (image_fractal), and the data-checked format, level,
# layer and shape matrix (image_formats). Like the other GPU examples they need no
# CUDA toolkit and no libvulkan to build: CUDA through cuda_driver.c (dlopen),
# Vulkan through the context's vkGetInstanceProcAddr (vk_loader.c), the kernels as
# PTX text (image_kernels_ptx.h, from image_kernels.cu).
#
# Without a CUDA GPU they print why and exit 0 (1 with VKCUDA_REQUIRE_GPU=1); CTest
# runs their --vulkan-only self-tests, which work on lavapipe.

set(_vkcuda_image_example_support
  ${CMAKE_CURRENT_LIST_DIR}/cuda_driver.c
  ${CMAKE_CURRENT_LIST_DIR}/vk_loader.c)

vkcuda_add_example(image_fractal GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/image_fractal.c ${_vkcuda_image_example_support}
  LIBS ${CMAKE_DL_LIBS})

vkcuda_add_example(image_formats GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/image_formats.c ${_vkcuda_image_example_support}
  LIBS ${CMAKE_DL_LIBS})

if(VKCUDA_BUILD_TESTS)
  add_test(NAME example_image_fractal_vulkan_only
    COMMAND image_fractal --vulkan-only --size 320x180
      --out ${CMAKE_CURRENT_BINARY_DIR}/image_fractal_vulkan_only.png)
  add_test(NAME example_image_formats_vulkan_only
    COMMAND image_formats --vulkan-only --no-big)
  set_tests_properties(example_image_fractal_vulkan_only example_image_formats_vulkan_only
    PROPERTIES LABELS example TIMEOUT 300)
endif()
