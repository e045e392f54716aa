//! C API: the batched handoff barriers of buffers and images (what the per-object
//! calls share, `vkcuda_handoff_info`, is in `types`).

use ash::vk;

use super::buffer::vkcuda_buffer;
use super::handle;
use super::image::{vkcuda_image, VkImageLayout};
use super::types::*;
use super::{boundary, vkcuda_result};
use vkcuda::error::{Error, Result};
use vkcuda::handoff::{self, Direction, Resource};

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
    /// acquire, the layout the engine wants it in. A layout the image's usage does
    /// not allow (`TRANSFER_SRC_OPTIMAL` without `VK_IMAGE_USAGE_TRANSFER_SRC_BIT`,
    /// ...) is refused; `GENERAL` suits every usage. Buffers: 0.
    pub layout: VkImageLayout,
}

/// Entry `i` of a batch as a resource: exactly one of `buffer` and `image` set, a
/// live handle of that kind, and no layout for a buffer. Whether it may share the
/// barrier is `handoff::batch`'s to say.
#[inline]
unsafe fn resource(i: usize, r: &vkcuda_handoff_resource) -> Result<Resource<'_>> {
    if r.image.is_null() && r.layout == 0 {
        if let Some(b) = handle::peek(r.buffer) {
            return Ok(Resource::Buffer(b));
        }
    } else if r.buffer.is_null() {
        if let Some(im) = handle::peek(r.image) {
            return Ok(Resource::Image(im, vk::ImageLayout::from_raw(r.layout)));
        }
    }
    resource_checked(i, r)
}

/// [`resource`] through the full handle checks, which say what is wrong.
#[cold]
unsafe fn resource_checked(i: usize, r: &vkcuda_handoff_resource) -> Result<Resource<'_>> {
    match (r.buffer.is_null(), r.image.is_null()) {
        (true, true) => Err(Error::null(&format!(
            "resources[{i}].buffer and resources[{i}].image"
        ))),
        (false, false) => Err(Error::invalid(format!(
            "resources[{i}] sets both buffer and image; set exactly one"
        ))),
        (false, true) => {
            let b = handle::get_named(r.buffer, || format!("resources[{i}].buffer"))?;
            if r.layout != 0 {
                return Err(Error::invalid(format!(
                    "resources[{i}].layout is {} for a buffer; buffers have no layout (0)",
                    r.layout
                )));
            }
            Ok(Resource::Buffer(b))
        }
        (true, false) => {
            let im = handle::get_named(r.image, || format!("resources[{i}].image"))?;
            Ok(Resource::Image(im, vk::ImageLayout::from_raw(r.layout)))
        }
    }
}

unsafe fn batch(
    resource_count: u32,
    resources: *const vkcuda_handoff_resource,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    dir: Direction,
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
    let entries = list.iter().enumerate().map(|(i, r)| resource(i, r));
    handoff::batch(cmd, dir, &scope, entries)
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
            Direction::Release,
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
            Direction::Acquire,
        )
    })
}
