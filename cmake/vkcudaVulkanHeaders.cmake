# Finds the Vulkan headers that vkcuda.h includes (<vulkan/vulkan_core.h>).
# Used by the vkcuda build and installed next to vkcudaConfig.cmake, so a consumer
# re-finds them the same way.
#
# vkcuda itself never links libvulkan, so only the headers are required. CMake's
# FindVulkan (find_package(Vulkan), and so find_dependency(Vulkan)) fails when the
# loader library is missing even if the headers are there, so it is only one of the
# ways tried, in this order:
#   1. a Vulkan::Headers target that already exists (the consumer found Vulkan first);
#   2. find_package(VulkanHeaders CONFIG): Khronos' Vulkan-Headers package
#      (Debian/Ubuntu libvulkan-dev, the LunarG SDK, vcpkg, a Vulkan-Headers install);
#   3. find_package(Vulkan): CMake's FindVulkan (needs the loader too);
#   4. find_path(vulkan/vulkan_core.h), also under $ENV{VULKAN_SDK}/include, giving a
#      vkcuda::VulkanHeaders interface target.
#
# vkcuda_find_vulkan_headers(<out-var> [GLOBAL])
#   Sets <out-var> to the name of a target that carries the include directory, or to
#   "" when no headers were found. GLOBAL promotes a target made by this call to a
#   global one (for the in-tree build, so a parent project sees it too).

function(vkcuda_find_vulkan_headers out_var)
  set(global FALSE)
  if("GLOBAL" IN_LIST ARGN)
    set(global TRUE)
  endif()

  set(found "")
  if(TARGET Vulkan::Headers)
    set(found Vulkan::Headers)
  endif()

  if(NOT found)
    find_package(VulkanHeaders CONFIG QUIET)
    if(TARGET Vulkan::Headers)
      set(found Vulkan::Headers)
    endif()
  endif()

  if(NOT found)
    find_package(Vulkan QUIET)
    if(TARGET Vulkan::Headers)
      set(found Vulkan::Headers)
    endif()
  endif()

  if(NOT found AND NOT TARGET vkcuda::VulkanHeaders)
    find_path(VKCUDA_VULKAN_INCLUDE_DIR
      NAMES vulkan/vulkan_core.h
      HINTS "$ENV{VULKAN_SDK}/include" "${Vulkan_INCLUDE_DIR}"
      DOC "Directory holding vulkan/vulkan_core.h (for vkcuda.h)")
    if(VKCUDA_VULKAN_INCLUDE_DIR)
      add_library(vkcuda::VulkanHeaders INTERFACE IMPORTED)
      set_target_properties(vkcuda::VulkanHeaders PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${VKCUDA_VULKAN_INCLUDE_DIR}")
    endif()
  endif()
  if(NOT found AND TARGET vkcuda::VulkanHeaders)
    set(found vkcuda::VulkanHeaders)
  endif()

  if(found AND global)
    get_target_property(is_global ${found} IMPORTED_GLOBAL)
    if(NOT is_global)
      # Only a target made in this directory can be promoted; a parent's one is
      # visible here already.
      get_directory_property(here_targets IMPORTED_TARGETS)
      if(found IN_LIST here_targets)
        set_target_properties(${found} PROPERTIES IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endif()

  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()
