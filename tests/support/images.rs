//! Images (`vkcuda::Image`) and the test's own Vulkan work on them: the two kinds
//! of image a helper works on (`Side`), an engine's own image of a shared image's
//! description (`EngineImage`: one dedicated allocation, or one per plane,
//! imported from fds or made to be wrapped), and writing a pattern into an image
//! and reading it back with the handoff to and from the external side
//! (`Texels`). Each suite says how its texels are packed in a staging buffer
//! (`Packing`).

use std::os::fd::{IntoRawFd, OwnedFd};

use ash::vk;
use vkcuda::handoff::Scope;
use vkcuda::image::{Description, Dimension, PlaneMemory};
use vkcuda::Image;

use super::cuda::Cuda;
use super::{device_local_type, layout_barrier, Vk};

/// A 2D description with the defaults (one level and layer, the default usage).
pub fn d2(format: vk::Format, w: u32, h: u32) -> Description {
    Description::new_2d(format, w, h)
}

pub fn create(ctx: &std::sync::Arc<vkcuda::Context>, d: &Description) -> Image {
    Image::create(ctx, d).unwrap_or_else(|e| panic!("{d:?}: {e}"))
}

/// A description with `dimension` and the defaults (one level and layer, the
/// default usage).
pub fn desc(dimension: Dimension, format: vk::Format, w: u32, h: u32, d: u32) -> Description {
    Description {
        dimension,
        height: h,
        depth: d,
        ..Description::new_2d(format, w, h)
    }
}

/// Records `im`'s release to CUDA from `layout` into `cmd` (the test's queue family).
pub fn release(v: &Vk, cmd: vk::CommandBuffer, im: &Image, layout: vk::ImageLayout) {
    // SAFETY: `cmd` is `v`'s command buffer, recording, on `im`'s device.
    unsafe { im.cmd_release_to_cuda(cmd, &Scope::new(v.family), layout) }.unwrap()
}

/// Records `im`'s acquire from CUDA into `layout` into `cmd` (the test's queue family).
pub fn acquire(v: &Vk, cmd: vk::CommandBuffer, im: &Image, layout: vk::ImageLayout) {
    // SAFETY: as in `release`.
    unsafe { im.cmd_acquire_from_cuda(cmd, &Scope::new(v.family), layout) }.unwrap()
}

/// The image a helper works on: a shared image (barriers by the library), or an
/// engine's own image of the same description as a shared one (barriers
/// recorded here).
#[derive(Clone, Copy)]
pub enum Side<'a> {
    Shared(&'a Image),
    Raw(vk::Image, &'a Image),
}

impl<'a> Side<'a> {
    /// The shared image whose description the side has.
    pub fn model(&self) -> &'a Image {
        match self {
            Side::Shared(im) | Side::Raw(_, im) => im,
        }
    }

    pub fn vk_image(&self) -> vk::Image {
        match self {
            Side::Shared(im) => im.vk_image(),
            Side::Raw(image, _) => *image,
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

/// An engine's own exportable image of a shared image's description, on its own
/// memory: one dedicated allocation, or for a multi-planar image (DISJOINT) one
/// allocation per plane.
pub struct EngineImage {
    pub image: vk::Image,
    /// Each allocation and its size: one, or one per plane.
    pub memory: Vec<(vk::DeviceMemory, u64)>,
}

impl EngineImage {
    /// An image of `model`'s description on `v`'s device, its memory allocated
    /// exportable, or imported from `fds` (one per allocation, taken).
    pub fn new(v: &Vk, model: &Image, fds: Option<Vec<OwnedFd>>) -> EngineImage {
        let d = model.description();
        let disjoint = model.plane_count() > 1;
        let mut ext = vk::ExternalMemoryImageCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let flags = if disjoint {
            vk::ImageCreateFlags::DISJOINT
        } else if d.cube {
            vk::ImageCreateFlags::CUBE_COMPATIBLE
        } else {
            vk::ImageCreateFlags::empty()
        };
        let image_type = match d.dimension {
            Dimension::D1 => vk::ImageType::TYPE_1D,
            Dimension::D2 => vk::ImageType::TYPE_2D,
            Dimension::D3 => vk::ImageType::TYPE_3D,
        };
        let ci = vk::ImageCreateInfo::default()
            .flags(flags)
            .image_type(image_type)
            .format(d.format)
            .extent(vk::Extent3D {
                width: d.width,
                height: d.height.max(1),
                depth: d.depth.max(1),
            })
            .mip_levels(d.mip_levels)
            .array_layers(d.array_layers)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(d.usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .push_next(&mut ext);
        let image = unsafe { v.device.create_image(&ci, None) }.unwrap();
        let sizes: Vec<u64> = model
            .allocations()
            .iter()
            .map(|a| a.allocation_size)
            .collect();
        let mut fds = fds.map(|f| f.into_iter().map(|f| f.into_raw_fd()).collect::<Vec<_>>());
        let mut memory = Vec::new();
        for p in 0..if disjoint { model.plane_count() } else { 1 } {
            let mut plane =
                vk::ImagePlaneMemoryRequirementsInfo::default().plane_aspect(model.plane_aspect(p));
            let mut info = vk::ImageMemoryRequirementsInfo2::default().image(image);
            if disjoint {
                info = info.push_next(&mut plane);
            }
            let mut req = vk::MemoryRequirements2::default();
            unsafe { v.device.get_image_memory_requirements2(&info, &mut req) };
            let req = req.memory_requirements;
            let size = if fds.is_some() { sizes[p] } else { req.size };
            let mut export = vk::ExportMemoryAllocateInfo::default()
                .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
            let mut import = vk::ImportMemoryFdInfoKHR::default()
                .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD)
                .fd(fds.as_mut().map_or(-1, |f| f[p]));
            let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().image(image);
            let mut alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(size)
                .memory_type_index(device_local_type(v, req.memory_type_bits));
            // The planes of a disjoint image are never dedicated allocations.
            if !disjoint {
                alloc = alloc.push_next(&mut dedicated);
            }
            // Imported memory is only imported (not also exportable): the engine's way.
            alloc = if fds.is_some() {
                alloc.push_next(&mut import)
            } else {
                alloc.push_next(&mut export)
            };
            let m = unsafe { v.device.allocate_memory(&alloc, None) }.unwrap();
            memory.push((m, size));
        }
        let mut planes: Vec<_> = (0..memory.len())
            .map(|p| vk::BindImagePlaneMemoryInfo::default().plane_aspect(model.plane_aspect(p)))
            .collect();
        let binds: Vec<_> = memory
            .iter()
            .zip(planes.iter_mut())
            .map(|(m, plane)| {
                let b = vk::BindImageMemoryInfo::default().image(image).memory(m.0);
                if disjoint {
                    b.push_next(plane)
                } else {
                    b
                }
            })
            .collect();
        unsafe { v.device.bind_image_memory2(&binds) }.unwrap();
        EngineImage { image, memory }
    }

    /// The allocations `Image::wrap` takes for this image: one dedicated, or one
    /// per plane.
    pub fn planes(&self) -> Vec<PlaneMemory> {
        let dedicated = self.memory.len() == 1;
        self.memory
            .iter()
            .map(|&(memory, allocation_size)| PlaneMemory {
                memory,
                allocation_size,
                offset: 0,
                dedicated,
            })
            .collect()
    }

    /// Wraps this image as `desc` says, with `planes`.
    pub fn wrap(
        &self,
        ctx: &std::sync::Arc<vkcuda::Context>,
        planes: &[PlaneMemory],
        desc: &Description,
    ) -> vkcuda::Result<Image> {
        let opaque = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
        // SAFETY: this image and its memory, alive until `destroy`; the tests drop
        // the wrap first. (The checks under test refuse wrong claims before any
        // driver call.)
        unsafe { Image::wrap(ctx, self.image, planes, opaque, desc) }
    }

    pub fn destroy(self, v: &Vk) {
        unsafe {
            v.device.destroy_image(self.image, None);
            for (m, _) in self.memory {
                v.device.free_memory(m, None);
            }
        }
    }
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
    let image = side.vk_image();
    let stage = v.host_buffer(p.total);
    for (k, x) in stage.bytes().iter_mut().enumerate() {
        *x = byte(k);
    }
    let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
    let ignored = vk::QUEUE_FAMILY_IGNORED;
    v.run(|cmd| {
        barrier(v, cmd, image, p.range, from, dst, ignored, ignored);
        unsafe {
            v.device
                .cmd_copy_buffer_to_image(cmd, stage.buffer, image, dst, &p.regions)
        };
        match side {
            Side::Shared(im) => release(v, cmd, im, dst),
            Side::Raw(..) => barrier(
                v,
                cmd,
                image,
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
    let image = side.vk_image();
    let out = v.host_buffer(p.total);
    out.bytes().fill(0);
    let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    v.run(|cmd| {
        match side {
            Side::Shared(im) => acquire(v, cmd, im, src),
            Side::Raw(..) => barrier(
                v,
                cmd,
                image,
                p.range,
                vk::ImageLayout::GENERAL,
                src,
                vk::QUEUE_FAMILY_EXTERNAL,
                v.family,
            ),
        }
        unsafe {
            v.device
                .cmd_copy_image_to_buffer(cmd, image, src, out.buffer, &p.regions)
        };
    });
    let data = out.bytes().to_vec();
    v.destroy_host_buffer(out);
    data
}

/// How a suite lays out the texels of an image in a staging buffer and which bytes
/// it writes: `packing` (levels and layers, or planes), `byte(k, seed)` at staging
/// byte k, and `mismatches(image, data, seed)`, the texels (or bytes) of `data`
/// that differ from seed's pattern and how many were compared.
pub struct Texels {
    pub packing: fn(&Image) -> Packing,
    pub byte: fn(usize, u32) -> u8,
    pub mismatches: fn(&Image, &[u8], u32) -> (u64, u64),
}

impl Texels {
    /// Writes `seed`'s pattern into the image (in `from` layout) and hands it to
    /// the external side.
    pub fn write(&self, v: &Vk, side: Side, from: vk::ImageLayout, seed: u32) {
        let p = (self.packing)(side.model());
        vulkan_write_packed(v, side, from, &p, |k| (self.byte)(k, seed));
    }

    /// Takes the image back from the external side into TRANSFER_SRC_OPTIMAL and
    /// returns its bytes, packed.
    pub fn read(&self, v: &Vk, side: Side) -> Vec<u8> {
        vulkan_read_packed(v, side, &(self.packing)(side.model()))
    }

    /// Device A (`va`) writes `im`; device B (`vb`) imports `fds`, `im`'s memory,
    /// into an engine image of the same description (as an engine would) and reads
    /// every texel, then writes a new pattern that A reads. Both sides hand the
    /// image over with the queue family transfer to and from
    /// VK_QUEUE_FAMILY_EXTERNAL. B's image and the count compared each way.
    pub fn cross_devices(
        &self,
        va: &Vk,
        vb: &Vk,
        im: &Image,
        fds: Vec<OwnedFd>,
        what: &str,
    ) -> (EngineImage, u64) {
        self.write(va, Side::Shared(im), vk::ImageLayout::UNDEFINED, 7);
        let e = EngineImage::new(vb, im, Some(fds));
        let other = Side::Raw(e.image, im);
        let (bad, all) = (self.mismatches)(im, &self.read(vb, other), 7);
        assert_eq!(bad, 0, "{bad} of {all} differ in device B ({what})");
        // And back: B writes (its image is in TRANSFER_SRC_OPTIMAL now), A reads.
        self.write(vb, other, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, 8);
        let (bad, _) = (self.mismatches)(im, &self.read(va, Side::Shared(im)), 8);
        assert_eq!(bad, 0, "{bad} of {all} differ back in device A ({what})");
        (e, all)
    }

    /// Vulkan writes `im`, CUDA reads it (`copy(host, false)`, in `c`'s context,
    /// into the packed bytes); CUDA writes a new pattern (`copy(host, true)`) and
    /// Vulkan reads it. The mismatches of CUDA's read, of Vulkan's, and the count
    /// compared each way.
    pub fn through_cuda(
        &self,
        v: &Vk,
        c: &Cuda,
        im: &Image,
        mut copy: impl FnMut(&mut [u8], bool),
    ) -> (u64, u64, u64) {
        self.write(v, Side::Shared(im), vk::ImageLayout::UNDEFINED, 11);
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        let mut host = vec![0u8; (self.packing)(im).total as usize];
        c.within(|| copy(&mut host, false));
        let (bad_cuda, all) = (self.mismatches)(im, &host, 11);
        for (k, x) in host.iter_mut().enumerate() {
            *x = (self.byte)(k, 12);
        }
        c.within(|| copy(&mut host, true));
        c.synchronize();
        let (bad_vulkan, _) = (self.mismatches)(im, &self.read(v, Side::Shared(im)), 12);
        (bad_cuda, bad_vulkan, all)
    }
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
