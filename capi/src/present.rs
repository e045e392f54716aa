//! C API: presenting shared images on the engine's swapchain (a ring of images CUDA
//! writes, blitted into the swapchain image, paced by one timeline semaphore).

use ash::vk;

use super::context::{ctx_arg, vkcuda_context};
use super::handle::{self, handle_kind, Tagged};
use super::image::{
    video_color_from_c, vkcuda_image_plane_pointer, vkcuda_video_color, VkFormat, VkImage,
    VkImageLayout,
};
use super::types::*;
use super::{arg, boundary, check_flags, out, quiet, vkcuda_result, write_handle};
use vkcuda::error::{Error, Result};
use vkcuda::present::{Description, Ring, Submit, Target, Write};

/// A ring of shared images that CUDA writes and the engine blits into its
/// swapchain images, with the timeline semaphore that paces them. Released by
/// `vkcuda_present_ring_destroy`.
///
/// Frame `k` (1, 2, ...) is in slot `(k - 1) % image_count`. CUDA:
/// `vkcuda_present_ring_cuda_begin` (the stream waits until the slot is copied
/// out), writes the slot's image (`vkcuda_present_ring_get_surface_object`),
/// `vkcuda_present_ring_cuda_end`. The engine: acquires a swapchain image,
/// `vkcuda_present_ring_cmd_present` into its command buffer, submits with the
/// waits and signals it returns, presents. Before the first frame the engine records
/// `vkcuda_present_ring_cmd_prepare` once and submits it. A resized swapchain needs
/// nothing from the ring (its images keep their size; the blit scales); a zero
/// extent (a minimised window) records nothing but still passes the frame on.
///
/// Thread-safety: every function but destroy may be called from any thread (the
/// frame book-keeping is locked); destroy must not overlap any other use, and no
/// GPU work may still use the ring.
///
/// @ingroup present
pub struct vkcuda_present_ring {
    h: Tagged<Ring>,
}
handle_kind!(vkcuda_present_ring, Ring, handle::PRESENT_RING, |r| Some(
    r.context().as_ref()
));

/// A `VkFilter` as C passes it; checked.
pub type VkFilter = i32;

/// What a ring is. All fields but `flags` are required.
///
/// @ingroup present
#[repr(C)]
pub struct vkcuda_present_ring_create_info {
    /// No flags yet: 0.
    pub flags: u32,
    /// `VK_FORMAT_R8G8B8A8_UNORM`, `_SRGB`, `VK_FORMAT_B8G8R8A8_UNORM`, `_SRGB` or
    /// `VK_FORMAT_R16G16B16A16_SFLOAT`; or a multi-planar (YCbCr) format the device
    /// makes shared video frames of (NV12 `VK_FORMAT_G8_B8R8_2PLANE_420_UNORM`,
    /// P010, ...): a ring of video frames, which CUDA writes plane by plane
    /// (`vkcuda_present_ring_get_plane_pointer`) and the present samples through
    /// the frames' YCbCr conversion (`vkcuda_present_ring_set_video_color`) into
    /// an RGB image it blits. The engine's device needs `samplerYcbcrConversion`
    /// and its queue compute.
    pub format: VkFormat,
    /// The images' width (what CUDA draws; the blit scales it to the swapchain).
    pub width: u32,
    /// The images' height.
    pub height: u32,
    /// How many images, 1 to 16: how many frames CUDA may be ahead of the engine.
    pub image_count: u32,
}

/// Where the engine wants the next frame: its acquired swapchain image.
///
/// @ingroup present
#[repr(C)]
pub struct vkcuda_present_target {
    /// The `VkDevice` the image belongs to: the ring's context's
    /// (`VKCUDA_ERROR_DEVICE_MISMATCH` otherwise).
    pub device: VkDevice,
    /// The image (a swapchain made with `VK_IMAGE_USAGE_TRANSFER_DST_BIT`), or
    /// `VK_NULL_HANDLE` with a zero extent.
    pub image: VkImage,
    /// Its format: one the device can blit into (`VK_FORMAT_FEATURE_BLIT_DST_BIT`),
    /// not an integer format (`VKCUDA_ERROR_UNSUPPORTED`, naming it).
    pub format: VkFormat,
    /// Its width (the swapchain's extent); 0 (minimised): nothing is recorded.
    pub width: u32,
    /// Its height; 0: nothing is recorded.
    pub height: u32,
    /// Its layout now (`VK_IMAGE_LAYOUT_UNDEFINED` for a freshly acquired image).
    pub old_layout: VkImageLayout,
    /// The layout to leave it in; `VK_IMAGE_LAYOUT_UNDEFINED` (0) means
    /// `VK_IMAGE_LAYOUT_PRESENT_SRC_KHR`.
    pub new_layout: VkImageLayout,
    /// The engine's semaphore `vkAcquireNextImageKHR` signalled, or `VK_NULL_HANDLE`:
    /// added to the submit's waits.
    pub acquired: VkSemaphore,
    /// The engine's semaphore `vkQueuePresentKHR` waits on, or `VK_NULL_HANDLE`:
    /// added to the submit's signals.
    pub rendered: VkSemaphore,
    /// `VK_FILTER_NEAREST` (0) or `VK_FILTER_LINEAR` (taken as `NEAREST` where the
    /// ring's format cannot be filtered linearly).
    pub filter: VkFilter,
}

/// What the engine's submit waits on and signals: `VkSubmitInfo` takes the
/// arrays as they are (`pWaitSemaphores = wait_semaphores`, `pWaitDstStageMask =
/// wait_stages`, ...), a `VkTimelineSemaphoreSubmitInfo` the values.
///
/// @ingroup present
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_present_submit {
    /// The frame (1, 2, ...; 0 for the prepare submit).
    pub frame: u64,
    /// Its slot.
    pub image_index: u32,
    /// 1 when commands were recorded; 0 for a zero extent (do not present then).
    pub recorded: u32,
    /// How many of `wait_*` are used (0 to 2).
    pub wait_count: u32,
    /// How many of `signal_*` are used (1 or 2).
    pub signal_count: u32,
    /// The ring's timeline, then the target's `acquired` semaphore.
    pub wait_semaphores: [VkSemaphore; 2],
    /// Their values.
    pub wait_values: [u64; 2],
    /// Their stages (`VK_PIPELINE_STAGE_TRANSFER_BIT`).
    pub wait_stages: [VkPipelineStageFlags; 2],
    /// The ring's timeline, then the target's `rendered` semaphore.
    pub signal_semaphores: [VkSemaphore; 2],
    /// Their values.
    pub signal_values: [u64; 2],
}

/// One frame for the producer to write.
///
/// @ingroup present
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct vkcuda_present_write {
    /// The frame (1, 2, ...).
    pub frame: u64,
    /// The slot to write.
    pub image_index: u32,
    /// Reserved: 0.
    pub reserved: u32,
    /// Wait for this timeline value before writing (the slot is copied out).
    pub free_value: u64,
    /// Wait for this value before signalling (the previous frame is copied out).
    pub order_value: u64,
    /// Signal this value once the image is written.
    pub signal_value: u64,
}

impl From<Submit> for vkcuda_present_submit {
    fn from(s: Submit) -> Self {
        vkcuda_present_submit {
            frame: s.frame,
            image_index: s.index,
            recorded: u32::from(s.recorded),
            wait_count: s.wait_count,
            signal_count: s.signal_count,
            wait_semaphores: s.wait_semaphores,
            wait_values: s.wait_values,
            wait_stages: s.wait_stages.map(|f| f.as_raw()),
            signal_semaphores: s.signal_semaphores,
            signal_values: s.signal_values,
        }
    }
}

impl From<Write> for vkcuda_present_write {
    fn from(w: Write) -> Self {
        vkcuda_present_write {
            frame: w.frame,
            image_index: w.index,
            reserved: 0,
            free_value: w.free_value,
            order_value: w.order_value,
            signal_value: w.signal_value,
        }
    }
}

unsafe fn ring_arg<'a>(ring: *const vkcuda_present_ring) -> Result<&'a Ring> {
    handle::get(ring, "ring")
}

/// Creates `info->image_count` shared images (exportable, imported into CUDA as
/// arrays with surfaces) and the timeline semaphore that paces them (starting at
/// 0; a plain Vulkan timeline in a Vulkan-only context). Refused: an image count
/// of 0 or over 16, a zero size (`VKCUDA_ERROR_INVALID_ARGUMENT`), a format that
/// is not one of the five nor multi-planar, that the device cannot blit from, or
/// (multi-planar) of which it makes no shared video frame
/// (`VKCUDA_ERROR_UNSUPPORTED`, naming it). `*ring` is written on success, set to
/// NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_create(
    context: *const vkcuda_context,
    info: *const vkcuda_present_ring_create_info,
    ring: *mut *mut vkcuda_present_ring,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_create", || {
        let made = (|| {
            out(ring, "ring")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(info.flags, 0, "info->flags")?;
            let desc = Description::new(
                vk::Format::from_raw(info.format),
                info.width,
                info.height,
                info.image_count,
            );
            Ok(handle::boxed::<vkcuda_present_ring>(Ring::create(
                ctx, &desc,
            )?))
        })();
        write_handle(ring, made)
    })
}

/// Destroys the ring: its images (CUDA views first) and its timeline. No GPU work
/// may still use them (wait for the last submit's signal value first). NULL does
/// nothing.
///
/// Thread-safety: must not overlap any other use of the ring.
///
/// @ingroup present
#[no_mangle]
pub unsafe extern "C" fn vkcuda_present_ring_destroy(ring: *mut vkcuda_present_ring) {
    quiet((), || handle::destroy(ring, "vkcuda_present_ring_destroy"))
}

/// The timeline `VkSemaphore` the engine's submits wait on and signal (also in
/// every `vkcuda_present_submit`). Owned by the ring.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_get_vk_timeline(
    ring: *const vkcuda_present_ring,
    timeline: *mut VkSemaphore,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_get_vk_timeline", || {
        let r = ring_arg(ring)?;
        let o = out(timeline, "timeline")?;
        *o = r.vk_timeline();
        Ok(())
    })
}

fn slot(r: &Ring, index: u32) -> Result<&vkcuda::Image> {
    r.image(index).ok_or_else(|| {
        Error::invalid(format!(
            "image_index {index} is past the ring's {} images",
            r.description().count
        ))
    })
}

/// The `VkImage` of slot `image_index`. Owned by the ring.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_get_vk_image(
    ring: *const vkcuda_present_ring,
    image_index: u32,
    image: *mut VkImage,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_get_vk_image", || {
        let r = ring_arg(ring)?;
        let o = out(image, "image")?;
        *o = slot(r, image_index)?.vk_image();
        Ok(())
    })
}

/// A CUDA surface object (`CUsurfObject`) of slot `image_index`, for the kernel that
/// writes it (x in bytes, as `surf2Dwrite` takes it). Owned by the ring; the same
/// object on every call. `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a Vulkan-only context.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_get_surface_object(
    ring: *const vkcuda_present_ring,
    image_index: u32,
    surface: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_get_surface_object", || {
        let r = ring_arg(ring)?;
        let o = out(surface, "surface")?;
        *o = slot(r, image_index)?.surface(0, 0)?;
        Ok(())
    })
}

/// Plane `plane` of slot `image_index` of a ring of video frames as pitched device
/// memory, for CUDA to write (`cuMemcpy2DAsync`, a kernel, NVDEC's output): as
/// `vkcuda_image_get_plane_pointer` (the pointer is 0 in a Vulkan-only context).
/// `VKCUDA_ERROR_INVALID_ARGUMENT` for an index or plane past the end and for a ring
/// that is not of video frames. `*pointer` is untouched on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_get_plane_pointer(
    ring: *const vkcuda_present_ring,
    image_index: u32,
    plane: u32,
    pointer: *mut vkcuda_image_plane_pointer,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_get_plane_pointer", || {
        let r = ring_arg(ring)?;
        let o = out(pointer, "pointer")?;
        let im = slot(r, image_index)?;
        if !r.is_video() {
            return Err(Error::invalid(format!(
                "the ring's {} images are not video frames: CUDA writes them through \
                 vkcuda_present_ring_get_surface_object",
                vkcuda::format::display(r.description().format)
            )));
        }
        let p = im.plane_pointer(plane as usize)?;
        *o = vkcuda_image_plane_pointer {
            cuda_pointer: p.pointer,
            offset: p.layout.offset,
            row_pitch: p.layout.row_pitch,
            size: p.layout.size,
            width: p.width,
            height: p.height,
            bytes_per_texel: p.bytes_per_texel,
            format: p.format.as_raw(),
            aspect: im.plane_aspect(plane as usize).as_raw(),
        };
        Ok(())
    })
}

/// Sets the colour description (matrix, range, chroma siting) every frame of a ring
/// of video frames is sampled with (`VideoColor` default until set: BT.709, narrow
/// range, chroma cosited horizontally and midway vertically). Set it before
/// `vkcuda_present_ring_cmd_prepare`, which makes the sampling pass with it
/// (after it: `VKCUDA_ERROR_INVALID_STATE`). `VKCUDA_ERROR_INVALID_ARGUMENT` for a
/// ring that is not of video frames or a description that is not valid;
/// `VKCUDA_ERROR_UNSUPPORTED` for one the device cannot sample (a chroma siting
/// its format features lack; the ring keeps its previous one).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_set_video_color(
    ring: *const vkcuda_present_ring,
    color: *const vkcuda_video_color,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_set_video_color", || {
        let r = ring_arg(ring)?;
        let c = video_color_from_c(arg(color, "color")?)?;
        r.set_video_color(&c)
    })
}

/// Records into the engine's command buffer the release of every slot to CUDA,
/// once, before the first frame; `*submit` says what the submit signals (the
/// timeline at 1, which the first frames wait for). A second call is refused
/// (`VKCUDA_ERROR_INVALID_STATE`). For a ring of video frames it first makes the
/// sampling pass with the colour description set by then: one the device cannot
/// sample is refused (`VKCUDA_ERROR_UNSUPPORTED`, naming it), nothing recorded.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_cmd_prepare(
    ring: *const vkcuda_present_ring,
    command_buffer: VkCommandBuffer,
    queue_family_index: u32,
    submit: *mut vkcuda_present_submit,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_cmd_prepare", || {
        let r = ring_arg(ring)?;
        let o = out(submit, "submit")?;
        let cmd = command_buffer_arg(command_buffer)?;
        *o = r.cmd_prepare(cmd, queue_family_index)?.into();
        Ok(())
    })
}

/// CUDA begins the next frame: enqueues on `stream` the wait until its slot is
/// copied out, and writes the frame to `*write`. `stream` NULL is the legacy
/// default stream. Refused (`VKCUDA_ERROR_INVALID_STATE`) before the prepare,
/// while a frame is being written, and when every slot holds a frame not yet
/// presented.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_cuda_begin(
    ring: *const vkcuda_present_ring,
    stream: *mut CUstream_st,
    write: *mut vkcuda_present_write,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_cuda_begin", || {
        let r = ring_arg(ring)?;
        let o = out(write, "write")?;
        *o = r.cuda_begin(stream.cast())?.into();
        Ok(())
    })
}

/// CUDA ends frame `frame`: enqueues on `stream` the wait for the previous frame's
/// copy and the signal that this one is written. The frame may then be presented.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_cuda_end(
    ring: *const vkcuda_present_ring,
    frame: u64,
    stream: *mut CUstream_st,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_cuda_end", || {
        ring_arg(ring)?.cuda_end(frame, stream.cast())
    })
}

/// A producer other than CUDA (a Vulkan queue, as in a Vulkan-only context) begins
/// the next frame: `*write` says which slot and which timeline values its work
/// waits for and signals. Refused as `vkcuda_present_ring_cuda_begin`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_begin_write(
    ring: *const vkcuda_present_ring,
    write: *mut vkcuda_present_write,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_begin_write", || {
        let r = ring_arg(ring)?;
        let o = out(write, "write")?;
        *o = r.begin_write()?.into();
        Ok(())
    })
}

/// Ends frame `frame` of a producer that signals the timeline itself: its signal of
/// `write.signal_value` is submitted. The frame may then be presented.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_end_write(
    ring: *const vkcuda_present_ring,
    frame: u64,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_end_write", || {
        ring_arg(ring)?.end_write(frame)
    })
}

/// The producer's side on a Vulkan queue: records the acquire of `write`'s slot
/// from CUDA, the copy of the whole image from `buffer` at `offset` (texels packed
/// row after row, a video frame's planes one after the other; `TRANSFER_SRC`
/// usage) and the release back, and ends the frame.
/// The engine's submit waits for `write->order_value` and signals
/// `write->signal_value` on the ring's timeline.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_cmd_upload(
    ring: *const vkcuda_present_ring,
    command_buffer: VkCommandBuffer,
    queue_family_index: u32,
    write: *const vkcuda_present_write,
    buffer: VkBuffer,
    offset: u64,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_cmd_upload", || {
        let r = ring_arg(ring)?;
        let w = arg(write, "write")?;
        let cmd = command_buffer_arg(command_buffer)?;
        if w.reserved != 0 {
            return Err(Error::invalid(format!(
                "write->reserved is {}; it must be 0",
                w.reserved
            )));
        }
        let w = Write {
            frame: w.frame,
            index: w.image_index,
            free_value: w.free_value,
            order_value: w.order_value,
            signal_value: w.signal_value,
        };
        r.cmd_upload(cmd, queue_family_index, &w, buffer, offset)
    })
}

/// Records into the engine's command buffer the presentation of the next frame CUDA
/// finished: the acquire of its slot from CUDA and of the target image in one
/// barrier, `vkCmdBlitImage` of the whole slot onto the whole target (RGBA <-> BGRA,
/// scaling to the target's extent), the release of the slot back to CUDA and the
/// target's transition to its new layout (`PRESENT_SRC_KHR`). A video frame is
/// first sampled through its YCbCr conversion into the ring's RGB image (a compute
/// pass), which is blitted; the submit then waits for the timeline at
/// `COMPUTE_SHADER` (`submit->wait_stages[0]`). `*submit` says what
/// the engine's submit waits on and signals; submit it, in order. A zero width or
/// height records nothing (`submit->recorded` 0: submit it anyway, present nothing).
/// Refused, nothing recorded: a target of another device
/// (`VKCUDA_ERROR_DEVICE_MISMATCH`), a target format that cannot be blitted into
/// (`VKCUDA_ERROR_UNSUPPORTED`, named), a frame CUDA has not ended
/// (`VKCUDA_ERROR_INVALID_STATE`).
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup present
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_present_ring_cmd_present(
    ring: *const vkcuda_present_ring,
    command_buffer: VkCommandBuffer,
    queue_family_index: u32,
    target: *const vkcuda_present_target,
    submit: *mut vkcuda_present_submit,
) -> vkcuda_result {
    boundary("vkcuda_present_ring_cmd_present", || {
        let r = ring_arg(ring)?;
        let t = arg(target, "target")?;
        let o = out(submit, "submit")?;
        if t.device == vk::Device::null() {
            return Err(Error::null("target->device"));
        }
        let filter = vk::Filter::from_raw(t.filter);
        let target = Target {
            device: t.device,
            image: t.image,
            format: vk::Format::from_raw(t.format),
            extent: vk::Extent2D {
                width: t.width,
                height: t.height,
            },
            old_layout: vk::ImageLayout::from_raw(t.old_layout),
            new_layout: vk::ImageLayout::from_raw(t.new_layout),
            acquired: t.acquired,
            rendered: t.rendered,
            filter,
        };
        let cmd = if t.width == 0 || t.height == 0 {
            command_buffer
        } else {
            command_buffer_arg(command_buffer)?
        };
        *o = r.cmd_present(cmd, queue_family_index, &target)?.into();
        Ok(())
    })
}
