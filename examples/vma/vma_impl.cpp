// VulkanMemoryAllocator's implementation, compiled once for the VMA example and
// test. The header comes from a registry package (scripts/fetch-vma.sh).
#define VMA_IMPLEMENTATION
#include <vk_mem_alloc.h>
