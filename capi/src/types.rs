//! Types that cross the C boundary: the Vulkan handles (declared by
//! `vulkan/vulkan_core.h`, so not emitted), CUDA's opaque structs (forward
//! declarations, no `cuda.h` needed), and enums.
//!
//! Enums that C passes in are read as integers (`*_raw`, which cbindgen renames to
//! the enum's C name) and checked, so an unknown value is rejected instead of
//! becoming an invalid Rust enum.

use ash::vk;

use super::{arg, check_flags};
use vkcuda::error::{Error, Result};
use vkcuda::handoff::Scope;

pub type VkBool32 = u32;
pub type VkInstance = vk::Instance;
pub type VkPhysicalDevice = vk::PhysicalDevice;
pub type VkDevice = vk::Device;
pub type VkQueue = vk::Queue;
pub type VkCommandBuffer = vk::CommandBuffer;
pub type VkBuffer = vk::Buffer;
pub type VkDeviceMemory = vk::DeviceMemory;
pub type VkSemaphore = vk::Semaphore;
pub type VkBufferUsageFlags = u32;
pub type VkPhysicalDeviceType = vk::PhysicalDeviceType;
pub type VkPipelineStageFlags = u32;
pub type VkAccessFlags = u32;
pub type VkSamplerYcbcrConversionCreateInfo = vk::SamplerYcbcrConversionCreateInfo<'static>;
pub type VkDeviceCreateInfo = vk::DeviceCreateInfo<'static>;
pub type PFN_vkGetInstanceProcAddr = Option<vk::PFN_vkGetInstanceProcAddr>;
pub type PFN_vkGetDeviceProcAddr = Option<vk::PFN_vkGetDeviceProcAddr>;

/// CUDA's context struct; `CUcontext` from cuda.h is `struct CUctx_st *`.
///
/// @ingroup context
pub struct CUctx_st {
    _opaque: [u8; 0],
}

/// CUDA's stream struct; `CUstream` (and the runtime's `cudaStream_t`) is
/// `struct CUstream_st *`. NULL is the legacy default stream.
///
/// @ingroup sync
pub struct CUstream_st {
    _opaque: [u8; 0],
}

/// CUDA's graph struct; `CUgraph` (and the runtime's `cudaGraph_t`) is
/// `struct CUgraph_st *`.
///
/// @ingroup sync
pub struct CUgraph_st {
    _opaque: [u8; 0],
}

/// CUDA's graph node struct; `CUgraphNode` (`cudaGraphNode_t`) is
/// `struct CUgraphNode_st *`.
///
/// @ingroup sync
pub struct CUgraphNode_st {
    _opaque: [u8; 0],
}

/// CUDA's instantiated graph struct; `CUgraphExec` (`cudaGraphExec_t`) is
/// `struct CUgraphExec_st *`.
///
/// @ingroup sync
pub struct CUgraphExec_st {
    _opaque: [u8; 0],
}

/// Which side allocates a shared buffer's memory.
///
/// @ingroup buffer
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_allocator {
    /// Vulkan allocates exportable memory; CUDA imports it (the default).
    VKCUDA_ALLOCATOR_VULKAN = 0,
    /// CUDA allocates with cuMemCreate (rounded to the allocation granularity);
    /// Vulkan imports it.
    VKCUDA_ALLOCATOR_CUDA = 1,
    /// Keeps the enum 32 bits wide.
    VKCUDA_ALLOCATOR_MAX_ENUM = 0x7FFF_FFFF,
}

/// The kind of a shared semaphore.
///
/// @ingroup sync
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_semaphore_type {
    /// A timeline semaphore (the default).
    VKCUDA_SEMAPHORE_TYPE_TIMELINE = 0,
    /// A binary semaphore: one wait per signal.
    VKCUDA_SEMAPHORE_TYPE_BINARY = 1,
    /// Keeps the enum 32 bits wide.
    VKCUDA_SEMAPHORE_TYPE_MAX_ENUM = 0x7FFF_FFFF,
}

/// A `vkcuda_allocator` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_allocator_raw(pub i32);

/// A `vkcuda_semaphore_type` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_semaphore_type_raw(pub i32);

/// A `vkcuda_result` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_result_raw(pub i32);

impl vkcuda_allocator_raw {
    pub fn get(self, what: &str) -> Result<vkcuda::buffer::Allocator> {
        match self.0 {
            0 => Ok(vkcuda::buffer::Allocator::Vulkan),
            1 => Ok(vkcuda::buffer::Allocator::Cuda),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_allocator (VKCUDA_ALLOCATOR_VULKAN or VKCUDA_ALLOCATOR_CUDA)"
            ))),
        }
    }
}

impl vkcuda_semaphore_type_raw {
    pub fn get(self, what: &str) -> Result<vkcuda::semaphore::Kind> {
        match self.0 {
            0 => Ok(vkcuda::semaphore::Kind::Timeline),
            1 => Ok(vkcuda::semaphore::Kind::Binary),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_semaphore_type (TIMELINE or BINARY)"
            ))),
        }
    }
}

impl From<vkcuda::buffer::Allocator> for vkcuda_allocator {
    fn from(o: vkcuda::buffer::Allocator) -> Self {
        match o {
            vkcuda::buffer::Allocator::Vulkan => vkcuda_allocator::VKCUDA_ALLOCATOR_VULKAN,
            vkcuda::buffer::Allocator::Cuda => vkcuda_allocator::VKCUDA_ALLOCATOR_CUDA,
        }
    }
}

/// Where the engine hands a resource over and what it did or will do with it,
/// for the handoff barriers. All zero: queue family 0, all commands, all memory
/// reads and writes.
///
/// @ingroup sync
#[repr(C)]
pub struct vkcuda_handoff_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// The engine's queue family that the command buffer is submitted to: one of
    /// the device's families (`VK_QUEUE_FAMILY_IGNORED`, `EXTERNAL` or `FOREIGN_EXT`
    /// and indices past the device's count are refused with
    /// `VKCUDA_ERROR_INVALID_ARGUMENT`).
    pub queue_family_index: u32,
    /// Release: the stages that wrote or read the resource before the handoff.
    /// Acquire: the stages that use it after. 0 means ALL_COMMANDS. Refused with
    /// `VKCUDA_ERROR_INVALID_ARGUMENT`, the message naming the bits: bits that are
    /// not stages of the barrier call the context records with
    /// (`VkPipelineStageFlagBits`; with synchronization2, the 32-bit part of
    /// `VkPipelineStageFlagBits2`); `HOST` (a handoff is a queue family ownership
    /// transfer, which host operations are no part of); stages the queue family's
    /// `queueFlags` do not support; and stages whose feature or extension the
    /// context does not know is enabled (`GEOMETRY_SHADER` needs `geometryShader`,
    /// the tessellation stages `tessellationShader`, and each extension's stage its
    /// feature or extension: transform feedback, conditional rendering, fragment
    /// density map, fragment shading rate, mesh and task shaders, ray tracing,
    /// acceleration structures, device-generated commands, video, optical flow,
    /// micromaps). A context from `vkcuda_context_create` knows only what every
    /// device has; one from `vkcuda_context_create_with_device_info` knows what the
    /// engine's `VkDeviceCreateInfo` enabled; a standalone context enables none of
    /// them.
    pub stage_mask: VkPipelineStageFlags,
    /// Release: the engine's writes to make available. Acquire: the accesses that
    /// follow. 0 means MEMORY_READ | MEMORY_WRITE. Refused, the message naming the
    /// bits: bits that are not `VkAccessFlagBits`, `HOST_READ`/`HOST_WRITE` (only the
    /// host stage performs them), an extension's access the context does not know is
    /// enabled (as for `stage_mask`), and accesses that no stage of
    /// `stage_mask` performs, per the specification's table of supported access
    /// types (`TRANSFER` with `SHADER_WRITE`, `COMPUTE_SHADER` with
    /// `COLOR_ATTACHMENT_WRITE`, ...; `ALL_COMMANDS` performs every access,
    /// `ALL_GRAPHICS` every graphics one, and `MEMORY_READ`/`MEMORY_WRITE` go with any
    /// stage).
    pub access_mask: VkAccessFlags,
}

/// The engine's side of a handoff, with the defaults for zero masks.
pub(crate) fn scope_arg(info: *const vkcuda_handoff_info) -> Result<Scope> {
    let info = unsafe { arg(info, "info")? };
    check_flags(info.flags, 0, "info->flags")?;
    Ok(Scope::with_defaults(
        info.queue_family_index,
        vk::PipelineStageFlags::from_raw(info.stage_mask),
        vk::AccessFlags::from_raw(info.access_mask),
    ))
}

/// A command buffer from C: not VK_NULL_HANDLE.
pub(crate) fn command_buffer_arg(cmd: VkCommandBuffer) -> Result<vk::CommandBuffer> {
    if cmd == vk::CommandBuffer::null() {
        return Err(Error::null("command_buffer"));
    }
    Ok(cmd)
}
