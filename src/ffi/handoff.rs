//! C API: what the handoff barriers of buffers and images share.

use ash::vk;

use super::types::*;
use super::{arg, check_flags};
use crate::error::{Error, Result};
use crate::vulkan::handoff;

/// Where the engine hands a resource over and what it did or will do with it,
/// for the handoff barriers. All zero: queue family 0, all commands, all memory
/// reads and writes.
///
/// @ingroup sync
#[repr(C)]
pub struct vkcuda_handoff_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// The engine's queue family that the command buffer is submitted to.
    pub queue_family_index: u32,
    /// Release: the stages that wrote or read the resource before the handoff.
    /// Acquire: the stages that use it after. 0 means ALL_COMMANDS.
    pub stage_mask: VkPipelineStageFlags,
    /// Release: the engine's writes to make available. Acquire: the accesses that
    /// follow. 0 means MEMORY_READ | MEMORY_WRITE.
    pub access_mask: VkAccessFlags,
}

/// The engine's side of a handoff, with the defaults for zero masks.
pub(crate) fn scope_arg(info: *const vkcuda_handoff_info) -> Result<handoff::Scope> {
    let info = unsafe { arg(info, "info")? };
    check_flags(info.flags, 0, "info->flags")?;
    Ok(handoff::Scope::with_defaults(
        info.queue_family_index,
        info.stage_mask,
        info.access_mask,
    ))
}

/// A command buffer from C: not VK_NULL_HANDLE.
pub(crate) fn command_buffer_arg(cmd: VkCommandBuffer) -> Result<vk::CommandBuffer> {
    if cmd == vk::CommandBuffer::null() {
        return Err(Error::null("command_buffer"));
    }
    Ok(cmd)
}
