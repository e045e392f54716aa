# The cross-process examples: ipc_producer (the CUDA process: a CUDA-allocated
# buffer written by a kernel every frame, a shared timeline) and ipc_consumer (the
# Vulkan process: waits on the timeline in its submits, copies each frame out and
# checks every word), talking over a Unix socket path. Either one run without a
# socket path starts the other next to itself (what scripts/demo.sh does);
# ipc_demo.sh starts both by hand. Like the other GPU examples they need no CUDA
# toolkit and no libvulkan to build (cuda_driver.c, vk_loader.c, kernels_ptx.h).
#
# Without a CUDA GPU the producer says why and both exit 77 (1 with
# VKCUDA_REQUIRE_GPU=1); CTest then runs their --vulkan-only self-test instead,
# which shares a Vulkan-allocated buffer between the two processes on any Vulkan
# device with VK_KHR_external_memory_fd (lavapipe too).

vkcuda_add_example(ipc_producer GPU TEST
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ipc_producer.c ${CMAKE_CURRENT_LIST_DIR}/cuda_driver.c
          ${CMAKE_CURRENT_LIST_DIR}/vk_loader.c
  LIBS ${CMAKE_DL_LIBS})

vkcuda_add_example(ipc_consumer GPU
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ipc_consumer.c ${CMAKE_CURRENT_LIST_DIR}/vk_loader.c)

# Run without a socket path, each starts the other from its own directory: building
# the producer builds the consumer too.
add_dependencies(ipc_producer ipc_consumer)

if(VKCUDA_BUILD_TESTS)
  add_test(NAME example_ipc_vulkan_only
    COMMAND ipc_consumer --vulkan-only --frames 1000 --size 65536)
  add_test(NAME example_ipc_demo_vulkan_only
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ipc_demo.sh --bin $<TARGET_FILE_DIR:ipc_consumer>
            --vulkan-only --frames 300 --size 262144)
  set_tests_properties(example_ipc_vulkan_only example_ipc_demo_vulkan_only
    PROPERTIES LABELS example TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
