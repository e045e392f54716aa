//! C API: the batched handoff barriers of buffers and images (what the per-object
//! calls share, `vkcuda_handoff_info`, is in `types`).

use std::sync::Arc;

use ash::vk;

use super::buffer::vkcuda_buffer;
use super::handle;
use super::image::{vkcuda_image, VkImageLayout};
use super::types::*;
use super::{boundary, vkcuda_result};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::vulkan::handoff;

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

/// The context of a well-formed entry's resource, or None (then [`refuse`] says
/// what is wrong with it).
unsafe fn owner(r: &vkcuda_handoff_resource, dir: handoff::Direction) -> Option<*const Context> {
    if r.image.is_null() && r.layout == 0 {
        handle::peek(r.buffer).map(|b: &crate::buffer::Buffer| Arc::as_ptr(b.context()))
    } else if r.buffer.is_null() && handoff::layout_ok(vk::ImageLayout::from_raw(r.layout), dir) {
        handle::peek(r.image).map(|im: &crate::image::Image| Arc::as_ptr(im.context()))
    } else {
        None
    }
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
    // The first entry's context records the barrier; each barrier goes straight
    // into the array the driver gets (one pass). Any entry that is not well
    // formed, or of another VkDevice, goes to `refuse`, which says what is wrong,
    // and nothing is recorded.
    let Some(first) = owner(&list[0], dir) else {
        return Err(refuse(0, &list[0], dir, std::ptr::null()));
    };
    // SAFETY: `first` came from a live resource of the list, which keeps it alive.
    let ctx = &*first;
    scope.check(&ctx.vk)?;
    let sync2 = ctx.vk.sync2.is_some();
    handoff::record_from(&ctx.vk, cmd, dir, &scope, |sink| {
        for (i, r) in list.iter().enumerate() {
            let c = if r.image.is_null() && r.layout == 0 {
                handle::peek(r.buffer).map(|b: &crate::buffer::Buffer| {
                    sink.buffer(&b.handoff_range());
                    Arc::as_ptr(b.context())
                })
            } else if r.buffer.is_null()
                && handoff::layout_ok(vk::ImageLayout::from_raw(r.layout), dir)
            {
                let layout = vk::ImageLayout::from_raw(r.layout);
                handle::peek(r.image)
                    .filter(|im: &&crate::image::Image| {
                        handoff::layout_fits(layout, im.description().usage, sync2)
                    })
                    .map(|im| {
                        sink.image(&im.handoff_range(layout));
                        Arc::as_ptr(im.context())
                    })
            } else {
                None
            };
            match c {
                // Two contexts of one VkDevice may share a barrier.
                Some(c) if c == first || same_device(c, first) => {}
                _ => return Err(refuse(i, r, dir, first)),
            }
        }
        Ok(())
    })
}

/// Whether two contexts (of live resources) are on one VkDevice.
unsafe fn same_device(a: *const Context, b: *const Context) -> bool {
    (*a).vk.device.handle() == (*b).vk.device.handle()
}

/// Why entry `i` of a batch is refused: the full checks with their messages.
unsafe fn refuse(
    i: usize,
    r: &vkcuda_handoff_resource,
    dir: handoff::Direction,
    first: *const Context,
) -> Error {
    let what = match dir {
        handoff::Direction::Release => "old layout",
        handoff::Direction::Acquire => "new layout",
    };
    let owner = match (r.buffer.is_null(), r.image.is_null()) {
        (true, true) => {
            return Error::null(&format!("resources[{i}].buffer and resources[{i}].image"))
        }
        (false, false) => {
            return Error::invalid(format!(
                "resources[{i}] sets both buffer and image; set exactly one"
            ))
        }
        (false, true) => {
            let b = match handle::get_named(r.buffer, || format!("resources[{i}].buffer")) {
                Ok(b) => b,
                Err(e) => return e,
            };
            if r.layout != 0 {
                return Error::invalid(format!(
                    "resources[{i}].layout is {} for a buffer; buffers have no layout (0)",
                    r.layout
                ));
            }
            Arc::as_ptr(b.context())
        }
        (true, false) => {
            let im = match handle::get_named(r.image, || format!("resources[{i}].image")) {
                Ok(im) => im,
                Err(e) => return e,
            };
            let layout = vk::ImageLayout::from_raw(r.layout);
            let name = || format!("resources[{i}].layout ({what})");
            if let Err(e) = handoff::check_layout_named(layout, dir, name).and_then(|_| {
                // The barrier call is the first resource's context's.
                let recorder = if first.is_null() {
                    im.context().as_ref()
                } else {
                    &*first
                };
                let sync2 = recorder.vk.sync2.is_some();
                handoff::check_layout_usage(layout, im.description().usage, sync2, name)
            }) {
                return e;
            }
            Arc::as_ptr(im.context())
        }
    };
    if !first.is_null() && !same_device(owner, first) {
        return Error::invalid(format!(
            "resources[{i}] belongs to another VkDevice than resources[0]: one barrier \
             records into one device's command buffer"
        ));
    }
    Error::invalid(format!("resources[{i}] is refused"))
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
