//! C API: what the handoff barriers of buffers and images share.

use std::cell::RefCell;

use ash::vk;

use super::buffer::vkcuda_buffer;
use super::handle;
use super::image::{vkcuda_image, VkImageLayout};
use super::types::*;
use super::{arg, boundary, check_flags, vkcuda_result};
use crate::error::{Error, Result};
use crate::vulkan::{handoff, VulkanDevice};

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

/// One resource of a batched handoff: a buffer or an image (exactly one of the two
/// set).
///
/// @ingroup sync
#[repr(C)]
pub struct vkcuda_handoff_resource {
    /// A buffer to hand over (whole), or NULL when `image` is set.
    pub buffer: *const vkcuda_buffer,
    /// An image to hand over (every level and layer), or NULL when `buffer` is set.
    pub image: *const vkcuda_image,
    /// Images: on release, the layout the engine leaves the image in
    /// (`VK_IMAGE_LAYOUT_UNDEFINED` only when its contents may be discarded); on
    /// acquire, the layout the engine wants it in. Buffers: 0.
    pub layout: VkImageLayout,
}

thread_local! {
    /// The ranges of a batch, reused from call to call (no allocation once warm).
    static RANGES: RefCell<(Vec<handoff::BufferRange>, Vec<handoff::ImageRange>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
}

unsafe fn batch(
    resource_count: u32,
    resources: *const vkcuda_handoff_resource,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    dir: handoff::Direction,
) -> Result<()> {
    let cmd = command_buffer_arg(command_buffer)?;
    let scope = scope_arg(info)?;
    if resource_count == 0 {
        return Ok(());
    }
    if resources.is_null() {
        return Err(Error::null("resources"));
    }
    let list = std::slice::from_raw_parts(resources, resource_count as usize);
    let what = match dir {
        handoff::Direction::Release => "old layout",
        handoff::Direction::Acquire => "new layout",
    };
    RANGES.with(|ranges| {
        let mut ranges = ranges.borrow_mut();
        let (buffers, images) = &mut *ranges;
        buffers.clear();
        images.clear();
        let mut device: Option<&VulkanDevice> = None;
        for (i, r) in list.iter().enumerate() {
            let dev = match (r.buffer.is_null(), r.image.is_null()) {
                (false, true) => {
                    let b = handle::get_named(r.buffer, || format!("resources[{i}].buffer"))?;
                    if r.layout != 0 {
                        return Err(Error::invalid(format!(
                            "resources[{i}].layout is {} for a buffer; buffers have no layout (0)",
                            r.layout
                        )));
                    }
                    buffers.push(b.handoff_range());
                    &b.context().vk
                }
                (true, false) => {
                    let im = handle::get_named(r.image, || format!("resources[{i}].image"))?;
                    let layout = handoff::check_layout_named(
                        vk::ImageLayout::from_raw(r.layout),
                        dir,
                        || format!("resources[{i}].layout ({what})"),
                    )?;
                    images.push(im.handoff_range(layout));
                    &im.context().vk
                }
                (true, true) => {
                    return Err(Error::null(&format!(
                        "resources[{i}].buffer and resources[{i}].image"
                    )))
                }
                (false, false) => {
                    return Err(Error::invalid(format!(
                        "resources[{i}] sets both buffer and image; set exactly one"
                    )))
                }
            };
            match device {
                None => device = Some(dev),
                Some(d) if d.device.handle() == dev.device.handle() => {}
                Some(_) => {
                    return Err(Error::invalid(format!(
                        "resources[{i}] belongs to another VkDevice than resources[0]: one barrier \
                         records into one device's command buffer"
                    )))
                }
            }
        }
        if let Some(dev) = device {
            handoff::record(dev, cmd, dir, &scope, buffers, images);
        }
        Ok(())
    })
}

/// Records into the engine's command buffer ONE pipeline barrier that releases
/// every buffer and image of `resources` from `info->queue_family_index` to
/// `VK_QUEUE_FAMILY_EXTERNAL` (CUDA), images from their layout to `GENERAL`:
/// `vkCmdPipelineBarrier2` where the context has synchronization2
/// (`VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT`, or a standalone context on a device
/// with it), `vkCmdPipelineBarrier` otherwise. The same barrier as one
/// `vkcuda_buffer_cmd_release_to_cuda` / `vkcuda_image_cmd_release_to_cuda` per
/// resource, in one call. Every resource must belong to the command buffer's
/// device. Nothing is recorded on failure; `resource_count` 0 records nothing.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_handoff_cmd_release_to_cuda(
    resource_count: u32,
    resources: *const vkcuda_handoff_resource,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
) -> vkcuda_result {
    boundary("vkcuda_handoff_cmd_release_to_cuda", || {
        batch(
            resource_count,
            resources,
            command_buffer,
            info,
            handoff::Direction::Release,
        )
    })
}

/// Records ONE pipeline barrier that acquires every resource of `resources` back
/// from `VK_QUEUE_FAMILY_EXTERNAL` into `info->queue_family_index`, images from
/// `GENERAL` to the layout each names: the batched form of
/// `vkcuda_buffer_cmd_acquire_from_cuda` / `vkcuda_image_cmd_acquire_from_cuda`
/// (see `vkcuda_handoff_cmd_release_to_cuda`).
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_handoff_cmd_acquire_from_cuda(
    resource_count: u32,
    resources: *const vkcuda_handoff_resource,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
) -> vkcuda_result {
    boundary("vkcuda_handoff_cmd_acquire_from_cuda", || {
        batch(
            resource_count,
            resources,
            command_buffer,
            info,
            handoff::Direction::Acquire,
        )
    })
}
