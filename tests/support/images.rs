//! Images through the C ABI and the test's own Vulkan work on them, shared by
//! tests/image.rs (levels and layers) and tests/planar.rs (planes): creation, the
//! two kinds of image a helper works on (`Side`), and writing a pattern into an
//! image and reading it back with the handoff to and from the external side.
//! Each suite says how its texels are packed in a staging buffer (`Packing`);
//! `sample_bits` says which bits of a 10- or 12-bit texel carry the sample.

use ash::vk;
use vkcuda::ffi::vkcuda_result::*;
use vkcuda::ffi::*;

use super::{image_desc, image_info, last_error, layout_barrier, ok, Vk};

/// A 2D image description with the defaults (a full mip chain, one layer, the
/// default usage).
pub fn d2(format: vk::Format, w: u32, h: u32) -> vkcuda_image_create_info {
    image_desc(0, format, w, h, 0)
}

/// Creation; on failure the result and the message, after checking the handle
/// was set to NULL.
pub fn try_create(
    ctx: *const vkcuda_context,
    info: &vkcuda_image_create_info,
) -> Result<*mut vkcuda_image, (vkcuda_result, String)> {
    let mut im = 0x10 as *mut vkcuda_image;
    let r = unsafe { vkcuda_image_create(ctx, info, &mut im) };
    if r == VKCUDA_SUCCESS {
        assert!(!im.is_null());
        Ok(im)
    } else {
        assert!(im.is_null(), "the handle is set to NULL on failure");
        Err((r, last_error()))
    }
}

pub fn create(ctx: *const vkcuda_context, info: &vkcuda_image_create_info) -> *mut vkcuda_image {
    try_create(ctx, info).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"))
}

/// A handoff to or from the test's queue family, the default stages and accesses.
pub fn handoff(v: &Vk) -> vkcuda_handoff_info {
    super::handoff_info(v.family)
}

/// The image a helper works on: a vkcuda image (barriers by the library) or an
/// engine's own image of the same description (barriers recorded here).
#[derive(Clone, Copy)]
pub enum Side<'a> {
    Shared(*const vkcuda_image),
    Raw(vk::Image, &'a vkcuda_image_info),
}

impl Side<'_> {
    pub fn info(&self) -> vkcuda_image_info {
        match self {
            Side::Shared(im) => image_info(*im),
            Side::Raw(image, i) => {
                let mut i = **i;
                i.image = *image;
                i
            }
        }
    }
}

/// A barrier on `range` of `image`: a layout transition (both families
/// VK_QUEUE_FAMILY_IGNORED), or the queue family transfer to or from
/// VK_QUEUE_FAMILY_EXTERNAL an engine records for its own image.
#[allow(clippy::too_many_arguments)]
pub fn barrier(
    v: &Vk,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    range: vk::ImageSubresourceRange,
    from: vk::ImageLayout,
    to: vk::ImageLayout,
    src_family: u32,
    dst_family: u32,
) {
    let b = layout_barrier(image, range, from, to)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family);
    v.image_barrier(cmd, b);
}

/// Where an image's texels sit in a staging buffer: its size, the copy regions,
/// and the subresources the copies cover.
pub struct Packing {
    pub total: u64,
    pub regions: Vec<vk::BufferImageCopy>,
    pub range: vk::ImageSubresourceRange,
}

/// Writes `byte(k)` at every staging byte `k`, copies it into the image (in
/// `from` layout) and hands the image to the external side.
pub fn vulkan_write_packed(
    v: &Vk,
    side: Side,
    from: vk::ImageLayout,
    p: &Packing,
    byte: impl Fn(usize) -> u8,
) {
    let i = side.info();
    let stage = v.host_buffer(p.total);
    for (k, x) in stage.bytes().iter_mut().enumerate() {
        *x = byte(k);
    }
    let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
    let ignored = vk::QUEUE_FAMILY_IGNORED;
    v.run(|cmd| {
        barrier(v, cmd, i.image, p.range, from, dst, ignored, ignored);
        unsafe {
            v.device
                .cmd_copy_buffer_to_image(cmd, stage.buffer, i.image, dst, &p.regions)
        };
        match side {
            Side::Shared(im) => {
                ok(unsafe { vkcuda_image_cmd_release_to_cuda(im, cmd, &handoff(v), dst.as_raw()) })
            }
            Side::Raw(..) => barrier(
                v,
                cmd,
                i.image,
                p.range,
                dst,
                vk::ImageLayout::GENERAL,
                v.family,
                vk::QUEUE_FAMILY_EXTERNAL,
            ),
        }
    });
    v.destroy_host_buffer(stage);
}

/// Takes the image back from the external side into TRANSFER_SRC_OPTIMAL and
/// returns its bytes, packed as `p` says (bytes of no region are 0).
pub fn vulkan_read_packed(v: &Vk, side: Side, p: &Packing) -> Vec<u8> {
    let i = side.info();
    let out = v.host_buffer(p.total);
    out.bytes().fill(0);
    let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    v.run(|cmd| {
        match side {
            Side::Shared(im) => ok(unsafe {
                vkcuda_image_cmd_acquire_from_cuda(im, cmd, &handoff(v), src.as_raw())
            }),
            Side::Raw(..) => barrier(
                v,
                cmd,
                i.image,
                p.range,
                vk::ImageLayout::GENERAL,
                src,
                vk::QUEUE_FAMILY_EXTERNAL,
                v.family,
            ),
        }
        unsafe {
            v.device
                .cmd_copy_image_to_buffer(cmd, i.image, src, out.buffer, &p.regions)
        };
    });
    let data = out.bytes().to_vec();
    v.destroy_host_buffer(out);
    data
}

/// The bits of byte `b` of a texel that carry the sample: 10- and 12-bit samples
/// sit in the high bits of little-endian 16-bit words, and what the low (padding)
/// bits hold after a write is not defined, so they are not compared.
pub fn sample_bits(bits: u32, b: usize) -> u8 {
    if matches!(bits, 10 | 12) && b % 2 == 0 {
        ((0xFFFF_u32 << (16 - bits)) & 0xFF) as u8
    } else {
        0xFF
    }
}
