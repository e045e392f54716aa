# The GPU examples: shared buffers in both directions (buffer_roundtrip) and the
# timeline-paced Vulkan -> CUDA -> Vulkan frame loop (frame_loop). Building them
# needs no CUDA toolkit and no libvulkan: CUDA is reached through the driver API
# loaded with dlopen (cuda_driver.c), Vulkan through the context's
# vkGetInstanceProcAddr (vk_loader.c), and the kernels are PTX text
# (kernels_ptx.h, made by scripts/gen-ptx.sh from kernels.cu).
#
# Without a CUDA GPU they print why and exit 0 (1 with VKCUDA_REQUIRE_GPU=1), so
# CTest gets their --vulkan-only self-tests instead, which run on any Vulkan device
# with VK_KHR_external_memory_fd (lavapipe too). scripts/gpu-test.sh runs the real
# thing on the GPU machine.

find_package(Threads REQUIRED)

set(_vkcuda_gpu_example_support
  ${CMAKE_CURRENT_LIST_DIR}/cuda_driver.c
  ${CMAKE_CURRENT_LIST_DIR}/vk_loader.c)

vkcuda_add_example(buffer_roundtrip GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/buffer_roundtrip.c ${_vkcuda_gpu_example_support}
  LIBS ${CMAKE_DL_LIBS})

vkcuda_add_example(frame_loop GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/frame_loop.c ${_vkcuda_gpu_example_support}
  LIBS ${CMAKE_DL_LIBS} Threads::Threads)

if(VKCUDA_BUILD_TESTS)
  add_test(NAME example_buffer_roundtrip_vulkan_only
    COMMAND buffer_roundtrip --vulkan-only --cycles 200 4 1M+1 64M)
  add_test(NAME example_frame_loop_vulkan_only
    COMMAND frame_loop --vulkan-only --frames 2000)
  set_tests_properties(example_buffer_roundtrip_vulkan_only example_frame_loop_vulkan_only
    PROPERTIES LABELS example TIMEOUT 300)
endif()
