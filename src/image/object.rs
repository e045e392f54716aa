//! The shared image: a `VkImage` with exportable memory of its own or of the
//! engine, and its CUDA view (per-plane arrays, surfaces and textures, or a video
//! frame's pitched planes).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys;

use super::description::{check_layers_agree, resolve, Description, Dimension, Resolved};
use super::video::{Conversion, Frame, PlanePointer, VideoColor};
use crate::context::Context;
use crate::cuda::array::{self, ArrayShape, MappedImage, Pitched, Placement, TextureDesc};
use crate::error::{Error, Result};
use crate::fd;
use crate::format::{self, FormatInfo, Layout};
use crate::vulkan::handoff::ImageRange;
use crate::vulkan::image::{self as vkimage, ImageMemory, PlaneMemory};
use crate::vulkan::memory;

/// A shared image: a `VkImage` with exportable memory and its CUDA view (a
/// mipmapped array per plane with per-level arrays, surface and texture objects;
/// for a shared video frame, pitched device memory per plane). It holds its
/// context; dropping it releases the CUDA view, then the Vulkan objects (a
/// frame's CUDA mapping stays while DLPack tensors of its planes live). The
/// caller guarantees that no GPU work still uses the image when it is dropped.
///
/// Thread-safety: `Send` and `Sync`; every method may be called from any number
/// of threads at once (surface and texture creation are locked).
pub struct Image {
    ctx: Arc<Context>,
    resolved: Resolved,
    vulkan: VulkanView,
    /// The allocations: one per plane of a disjoint (OPTIMAL multi-planar) image,
    /// else one.
    planes: Vec<Plane>,
    /// Set for a shared frame (LINEAR: a multi-planar video frame or a
    /// single-plane image).
    frame: Option<Frame>,
    /// A multi-planar image's colour description.
    color: std::sync::Mutex<VideoColor>,
    /// The image side of each plane's pitched copy (level 0's array, or a
    /// frame's plane pointer and row pitch), worked out on the first copy: it
    /// does not change while the image lives.
    pitched_targets: std::sync::OnceLock<[array::Target; MAX_PLANES]>,
}

/// The most planes an image has (three-plane YCbCr formats).
const MAX_PLANES: usize = 3;

/// How many allocations an image of `r` has: one per plane of a disjoint image,
/// else one (single-plane images and video frames).
fn allocation_count(r: &Resolved) -> usize {
    if r.desc.linear {
        1
    } else {
        r.layout.plane_count()
    }
}

/// Refuses a plane list that does not match the format (`what`: "fds", ...).
fn check_plane_count(layout: &Layout, linear: bool, given: usize, what: &str) -> Result<()> {
    if linear {
        if given != 1 {
            return Err(Error::invalid(format!(
                "a shared video frame ({}, linear) has one allocation, so it takes 1 {what}, not \
                 {given}",
                layout.display()
            )));
        }
        return Ok(());
    }
    let n = layout.plane_count();
    if given != n {
        return Err(Error::invalid(format!(
            "{} has {n} plane{}, so it takes {n} {what}, not {given}",
            layout.display(),
            if n == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

impl Image {
    fn new(
        ctx: &Arc<Context>,
        resolved: Resolved,
        vulkan: VulkanView,
        memory: &[PlaneMemory],
    ) -> Image {
        Image {
            ctx: ctx.clone(),
            resolved,
            vulkan,
            planes: memory
                .iter()
                .map(|&memory| Plane { memory, cuda: None })
                .collect(),
            frame: None,
            color: std::sync::Mutex::new(VideoColor::DEFAULT),
            pitched_targets: std::sync::OnceLock::new(),
        }
    }

    /// Reads where each plane of a video frame lies ([`Frame::lay_out`]).
    fn lay_out_frame(&mut self) -> Result<()> {
        if self.resolved.desc.linear {
            let frame = Frame::lay_out(
                &self.ctx.vk,
                self.vk_image(),
                &self.resolved,
                self.planes[0].memory,
            )?;
            self.frame = Some(frame);
        }
        Ok(())
    }

    /// Imports each plane's memory into CUDA (`handles[p]`, consumed) as the
    /// plane's mipmapped array, when the context has CUDA. On error the planes
    /// imported so far are released with the image.
    fn import_cuda(&mut self, handles: Vec<OwnedFd>) -> Result<()> {
        let Some(cuda) = &self.ctx.cuda else {
            return Ok(());
        };
        if let Some(frame) = &mut self.frame {
            // One dedicated allocation, mapped whole.
            let handle = handles.into_iter().next().expect("one fd for a frame");
            return frame.import_cuda(cuda, handle, self.planes[0].memory);
        }
        for (p, handle) in handles.into_iter().enumerate() {
            let m = self.planes[p].memory;
            let shape = self.resolved.shapes[p];
            self.planes[p].cuda = Some(MappedImage::import(
                cuda.clone(),
                handle,
                m.allocation_size,
                Placement {
                    offset: m.offset,
                    dedicated: m.dedicated,
                },
                shape,
            )?);
        }
        Ok(())
    }

    /// Creates the `VkImage` with exportable memory (one dedicated allocation, or
    /// one per plane) and, unless the context is Vulkan-only, each plane's CUDA
    /// mipmapped array (a video frame: CUDA's mapping of its allocation). The
    /// description is checked against the format table and the device (usage,
    /// format features, exportability) before anything is made.
    pub fn create(ctx: &Arc<Context>, desc: &Description) -> Result<Image> {
        ctx.vk.memory_fd()?;
        let resolved = resolve(ctx, desc, false)?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        let planes = allocation_count(&resolved);
        let im = vkimage::create_exportable_image(&ctx.vk, &resolved.params, planes)?;
        let memory = im.planes.clone();
        // On error `image` drops and releases the Vulkan objects.
        let mut image = Image::new(ctx, resolved, VulkanView::Owned(im), &memory);
        image.lay_out_frame()?;
        if ctx.cuda.is_some() {
            let handles = memory
                .iter()
                .map(|m| memory::export_memory_fd(&ctx.vk, m.memory))
                .collect::<Result<Vec<_>>>()?;
            image.import_cuda(handles)?;
        }
        Ok(image)
    }

    /// Imports an image exported by [`export_plane_fd`](Self::export_plane_fd)
    /// (here or in another process): a new `VkImage` of `desc` on the imported
    /// memory, one fd and allocation size per plane, and, unless the context is
    /// Vulkan-only, each plane's CUDA mipmapped array. `handles` stay the
    /// caller's: the drivers get duplicates; the handles' file offsets are left
    /// where they were.
    pub fn import_fd(
        ctx: &Arc<Context>,
        handles: &[BorrowedFd<'_>],
        desc: &Description,
        allocation_sizes: &[u64],
    ) -> Result<Image> {
        let _offsets: Vec<_> = handles
            .iter()
            .map(|h| fd::OffsetGuard::new(h.as_raw_fd()))
            .collect();
        ctx.vk.memory_fd()?;
        let resolved = resolve(ctx, desc, true)?;
        let linear = resolved.desc.linear;
        check_plane_count(&resolved.layout, linear, handles.len(), "fds")?;
        check_plane_count(
            &resolved.layout,
            linear,
            allocation_sizes.len(),
            "allocation sizes",
        )?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        for (p, (h, &size)) in handles.iter().zip(allocation_sizes).enumerate() {
            let what = plane_name(allocation_sizes.len(), p);
            if size == 0 {
                return Err(Error::invalid(format!(
                    "{what}allocation_size must not be 0"
                )));
            }
            if let Some(real) = memory::real_size(&ctx.vk, *h) {
                if size > real {
                    return Err(Error::invalid(format!(
                        "{what}allocation_size {size} is larger than the memory object's real size {real}"
                    )));
                }
            }
            memory::check_importable(&ctx.vk, *h, size)?;
        }
        let dups = handles
            .iter()
            .map(|h| fd::dup_borrowed(h.as_raw_fd()))
            .collect::<Result<Vec<_>>>()?;
        let im = vkimage::import_image(&ctx.vk, &resolved.params, dups, allocation_sizes)?;
        let memory = im.planes.clone();
        // On error `image` drops and releases the Vulkan objects.
        let mut image = Image::new(ctx, resolved, VulkanView::Owned(im), &memory);
        image.lay_out_frame()?;
        if ctx.cuda.is_some() {
            let dups = handles
                .iter()
                .map(|h| fd::dup_borrowed(h.as_raw_fd()))
                .collect::<Result<Vec<_>>>()?;
            image.import_cuda(dups)?;
        }
        Ok(image)
    }

    /// Makes the CUDA view of an image the engine created with exportable
    /// (`OPAQUE_FD`) memory: for a single-plane format a dedicated allocation, or a
    /// block shared with other resources with the image at `planes[0].offset` (a
    /// VMA pool); for a multi-planar one an allocation per plane of a disjoint
    /// image. The engine keeps owning `image` and the memory, which it allocated
    /// with `export_handle_types` (must include OPAQUE_FD: checked before any driver
    /// call). `desc` must be the image's own description and usage. In a
    /// Vulkan-only context only the checks run.
    ///
    /// # Safety
    /// `image` is a live `VkImage` of the context's device created as `desc`
    /// says, bound to `planes` (each allocated `allocation_size` bytes with
    /// `export_handle_types`, dedicated to the image when `dedicated`). The image
    /// and its memory outlive the returned object.
    pub unsafe fn wrap(
        ctx: &Arc<Context>,
        image: vk::Image,
        planes: &[PlaneMemory],
        export_handle_types: vk::ExternalMemoryHandleTypeFlags,
        desc: &Description,
    ) -> Result<Image> {
        if image == vk::Image::null() {
            return Err(Error::null("image"));
        }
        memory::check_export_types(export_handle_types, "export_handle_types")?;
        let layout = format::layout_of(desc.format, desc.linear)?;
        check_plane_count(&layout, desc.linear, planes.len(), "memory allocations")?;
        let n = planes.len();
        if desc.linear && !(planes[0].dedicated && planes[0].offset == 0) {
            return Err(Error::invalid(
                "a shared frame (VKCUDA_IMAGE_CREATE_LINEAR_BIT) is one dedicated allocation: \
                 allocate the image's memory with VkMemoryDedicatedAllocateInfo naming it, bind it at \
                 offset 0 and set dedicated to VK_TRUE (CUDA imports it with \
                 CUDA_EXTERNAL_MEMORY_DEDICATED; memory shared with other resources cannot be)",
            ));
        }
        for (p, m) in planes.iter().enumerate() {
            let what = plane_name(n, p);
            if m.memory == vk::DeviceMemory::null() {
                return Err(Error::null(&format!("{what}memory")));
            }
            if m.allocation_size == 0 {
                return Err(Error::invalid(format!(
                    "{what}allocation_size must not be 0"
                )));
            }
            if planes[..p].iter().any(|q| q.memory == m.memory) {
                return Err(Error::invalid(format!(
                    "{what}memory is the memory of an earlier plane: a multi-planar image is \
                     shared with one allocation per plane (VK_IMAGE_CREATE_DISJOINT_BIT, \
                     VkBindImagePlaneMemoryInfo)"
                )));
            }
            if m.dedicated && n > 1 {
                return Err(Error::invalid(
                    "dedicated is VK_TRUE for a multi-planar image: the planes of a disjoint image cannot have \
                     dedicated allocations (VkMemoryDedicatedAllocateInfo may not name one)",
                ));
            }
            if m.dedicated && m.offset != 0 {
                return Err(Error::invalid(format!(
                    "offset is {} but the memory is a dedicated allocation, which the image is bound to at \
                     offset 0",
                    m.offset
                )));
            }
        }
        ctx.vk.memory_fd()?;
        let resolved = resolve(ctx, desc, true)?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        let reqs = vkimage::requirements_per_plane(&ctx.vk, image, n);
        for (p, (m, req)) in planes.iter().zip(&reqs).enumerate() {
            let end = m
                .offset
                .checked_add(req.size)
                .ok_or_else(|| Error::invalid("offset + the image's size overflows"))?;
            if m.allocation_size < end {
                return Err(Error::invalid(format!(
                    "memory smaller than its requirements: {}allocation_size {} is less than offset {} + the \
                     {} bytes vkGetImageMemoryRequirements2 asks for {}",
                    plane_name(n, p),
                    m.allocation_size,
                    m.offset,
                    req.size,
                    if n == 1 {
                        "this image".to_string()
                    } else {
                        format!("plane {p} of this image")
                    }
                )));
            }
            if req.alignment > 1 && m.offset % req.alignment != 0 {
                return Err(Error::invalid(format!(
                    "{}offset {} is not a multiple of the image's required alignment {}",
                    plane_name(n, p),
                    m.offset,
                    req.alignment
                )));
            }
        }
        if n == 1 && !planes[0].dedicated && vkimage::dedicated_requirements(&ctx.vk, image).0 {
            return Err(Error::invalid(
                "the driver requires a dedicated allocation for this image \
                 (VkMemoryDedicatedRequirements::requiresDedicatedAllocation), so its memory is dedicated: set \
                 dedicated to VK_TRUE",
            ));
        }
        let mut handles = Vec::with_capacity(n);
        for (p, m) in planes.iter().enumerate() {
            let handle = memory::export_memory_fd(&ctx.vk, m.memory).map_err(|e| {
                e.context(&format!(
                    "{}the wrapped memory must be made with VkExportMemoryAllocateInfo (OPAQUE_FD)",
                    plane_name(n, p)
                ))
            })?;
            if let Some(real) = memory::real_size(&ctx.vk, handle.as_fd()) {
                if m.allocation_size > real {
                    return Err(Error::invalid(format!(
                        "{}allocation_size {} is larger than the memory object's real size {real}",
                        plane_name(n, p),
                        m.allocation_size
                    )));
                }
            }
            handles.push(handle);
        }
        let mut wrapped = Image::new(ctx, resolved, VulkanView::Borrowed(image), planes);
        wrapped.lay_out_frame()?;
        wrapped.import_cuda(handles)?;
        Ok(wrapped)
    }

    /// The `VkImage` (the library's, or the engine's for a wrapped image).
    #[inline]
    pub fn vk_image(&self) -> vk::Image {
        match &self.vulkan {
            VulkanView::Owned(m) => m.image,
            VulkanView::Borrowed(image) => *image,
        }
    }

    /// Plane 0's memory (the image's only allocation for single-plane formats).
    pub fn vk_memory(&self) -> vk::DeviceMemory {
        self.planes[0].memory.memory
    }

    /// Plane 0's allocation size.
    pub fn allocation_size(&self) -> u64 {
        self.planes[0].memory.allocation_size
    }

    /// The format's planes: 1, or 2-3 for a multi-planar format.
    pub fn plane_count(&self) -> usize {
        self.resolved.layout.plane_count()
    }

    /// Whether the image is a shared frame (LINEAR: a multi-planar video frame
    /// or a single-plane image; one dedicated allocation, planes as pitched CUDA
    /// memory).
    pub fn is_frame(&self) -> bool {
        self.frame.is_some()
    }

    /// The number of allocations: one per plane of a disjoint image, else 1.
    pub fn allocation_count(&self) -> usize {
        self.planes.len()
    }

    /// Whether the memory is one dedicated allocation (single-plane images and
    /// video frames).
    pub fn dedicated(&self) -> bool {
        self.planes.len() == 1
    }

    /// The allocation plane `p` lives in.
    fn allocation_of(&self, p: usize) -> usize {
        if self.planes.len() == 1 {
            0
        } else {
            p
        }
    }

    /// Plane `p`'s memory and allocation size (a video frame's planes share one).
    pub fn plane_memory(&self, p: usize) -> Result<PlaneMemory> {
        self.check_plane(p)?;
        Ok(self.planes[self.allocation_of(p)].memory)
    }

    /// Every plane's memory and allocation size, one per plane (a video frame's
    /// planes name the same allocation).
    pub fn plane_memories(&self) -> Vec<PlaneMemory> {
        (0..self.plane_count())
            .map(|p| self.planes[self.allocation_of(p)].memory)
            .collect()
    }

    /// Every allocation's memory and size: one, or one per plane of a disjoint image.
    pub fn allocations(&self) -> Vec<PlaneMemory> {
        self.planes.iter().map(|p| p.memory).collect()
    }

    /// The aspect of plane `p` in Vulkan calls (copies, views): COLOR for
    /// single-plane formats, PLANE_p for multi-planar ones.
    pub fn plane_aspect(&self, p: usize) -> vk::ImageAspectFlags {
        if self.plane_count() == 1 {
            vk::ImageAspectFlags::COLOR
        } else {
            vkimage::plane_aspect(p)
        }
    }

    /// Plane `p` of a shared frame (LINEAR: a video frame's plane, or a
    /// single-plane image's plane 0, `vkGetImageSubresourceLayout` of the COLOR
    /// aspect) as pitched device memory: CUDA's pointer (0 in a Vulkan-only
    /// context), the offset and row pitch, the extent and the texel size. Refused
    /// for other images (their planes are CUDA arrays).
    pub fn plane_pointer(&self, p: usize) -> Result<PlanePointer> {
        self.check_plane(p)?;
        let Some(frame) = &self.frame else {
            return Err(Error::invalid(format!(
                "this {} image is not a shared frame: its CUDA view is arrays \
                 (vkcuda_image_get_plane_cuda_array); an image created with \
                 VKCUDA_IMAGE_CREATE_LINEAR_BIT has pitched planes",
                self.resolved.layout.display()
            )));
        };
        Ok(frame.plane_pointer(p, &self.resolved.layout.plane(p), self.plane_extent(p)))
    }

    fn check_multi_planar(&self, what: &str) -> Result<()> {
        if self.resolved.layout.planar().is_none() {
            return Err(Error::invalid(format!(
                "{what} is for multi-planar (YCbCr) images; {} has one plane",
                self.resolved.layout.display()
            )));
        }
        Ok(())
    }

    /// Sets the frame's colour description (from the decoder: NVDEC's
    /// `CUVIDEOFORMAT`), after checking it.
    pub fn set_video_color(&self, c: &VideoColor) -> Result<()> {
        c.check()?;
        self.check_multi_planar("a colour description")?;
        *self.color.lock().unwrap_or_else(|e| e.into_inner()) = *c;
        Ok(())
    }

    /// The colour description ([`VideoColor::DEFAULT`] until one is set).
    pub fn video_color(&self) -> Result<VideoColor> {
        self.check_multi_planar("a colour description")?;
        Ok(*self.color.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The `VkSamplerYcbcrConversion` that samples this image as its colour
    /// description says, checked against the format's features with the image's
    /// tiling: the chroma siting must be one the device can sample, chroma is
    /// filtered linearly where the device can.
    pub fn ycbcr_conversion(&self) -> Result<Conversion> {
        let c = self.video_color()?;
        let d = &self.resolved.desc;
        let features = vkimage::features(&self.ctx.vk, d.format, d.tiling());
        Conversion::of(&c, d, &self.resolved.layout.display(), features)
    }

    /// Plane `p` of a shared frame as a DLPack tensor on the context's CUDA
    /// device, zero-copy: uint8 or uint16 samples (10/12-bit in the high bits),
    /// shape (height, width) for one channel, (height, width, 2) for interleaved
    /// CbCr, strides in elements from the row pitch. A linear single-plane image
    /// is (height, width) or (height, width, channels) of its channel type
    /// (uint, int for SNORM/SINT, float for SFLOAT; a packed 32-bit format is
    /// uint32 words). The tensor keeps CUDA's mapping
    /// of the frame alive until its deleter runs (see [`Buffer::export_dlpack`](crate::Buffer::export_dlpack)).
    pub fn export_plane_dlpack(
        &self,
        p: usize,
        read_only: bool,
        legacy: bool,
    ) -> Result<crate::dlpack::Tensor> {
        let plane = self.plane_pointer(p)?;
        let Some(frame) = &self.frame else {
            return Err(Error::invalid("this image is not a shared frame"));
        };
        let f = self.resolved.layout.plane(p).info;
        frame.export_plane_dlpack(&self.ctx, p, plane, f, read_only, legacy)
    }

    /// Plane `p`'s extent at level 0.
    pub fn plane_extent(&self, p: usize) -> vk::Extent3D {
        let d = &self.resolved.desc;
        let (width, height) = self.resolved.layout.plane(p).extent(d.width, d.height);
        vk::Extent3D {
            width,
            height,
            depth: d.depth,
        }
    }

    /// Every subresource of every plane, for the handoff barriers, with the
    /// engine's layout (see [`ImageRange`]).
    pub(crate) fn handoff_range(&self, layout: vk::ImageLayout) -> ImageRange {
        let d = self.description();
        // A barrier names every plane of a disjoint image, COLOR for any other
        // (VUID-VkImageMemoryBarrier-image-01671: a non-disjoint multi-planar image
        // takes COLOR, which covers its planes).
        let aspect_mask = if self.planes.len() == 1 {
            vk::ImageAspectFlags::COLOR
        } else {
            (0..self.planes.len())
                .map(|p| self.plane_aspect(p))
                .fold(vk::ImageAspectFlags::empty(), |a, b| a | b)
        };
        ImageRange {
            image: self.vk_image(),
            range: vk::ImageSubresourceRange {
                aspect_mask,
                base_mip_level: 0,
                level_count: d.mip_levels,
                base_array_layer: 0,
                layer_count: d.array_layers,
            },
            layout,
        }
    }

    /// The description with the defaults filled in (the usage actually used).
    #[inline]
    pub fn description(&self) -> &Description {
        &self.resolved.desc
    }

    /// How the image's format is laid out in planes, and what CUDA sees of each.
    pub fn layout(&self) -> &Layout {
        &self.resolved.layout
    }

    /// What CUDA sees of plane 0 (the only plane of single-plane formats).
    pub(crate) fn format_info(&self) -> FormatInfo {
        self.resolved.layout.plane(0).info
    }

    /// Plane `p`'s single-plane format (the image's own format for single-plane
    /// formats; `R8`, `R8G8`, `R10X6`, ... for the planes of a YCbCr format).
    pub fn plane_vk_format(&self, p: usize) -> Result<vk::Format> {
        self.check_plane(p)?;
        Ok(self.resolved.layout.plane(p).info.format)
    }

    /// What CUDA was (or would be) told about plane `p`'s array.
    pub(crate) fn shape(&self, p: usize) -> &ArrayShape {
        &self.resolved.shapes[p]
    }

    /// The `CUDA_ARRAY3D_*` flags plane `p`'s CUDA array was (or would be) made
    /// with (`SURFACE_LDST`, `LAYERED`, `CUBEMAP`, ...); `p` < the plane count.
    pub fn cuda_array_flags(&self, p: usize) -> u32 {
        self.shape(p).flags
    }

    /// Whether the Vulkan image and memory are the engine's ([`Image::wrap`]).
    pub fn is_wrapped(&self) -> bool {
        matches!(self.vulkan, VulkanView::Borrowed(_))
    }

    /// The context the image was made from.
    #[inline]
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// A new fd for the memory of a single-plane image (or a video frame's one
    /// allocation); the caller owns it.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        if self.planes.len() > 1 {
            return Err(Error::invalid(format!(
                "{} has {} planes, each with its own memory: export them one by one with \
                 vkcuda_image_export_plane_fd",
                self.resolved.layout.display(),
                self.planes.len()
            )));
        }
        self.export_plane_fd(0)
    }

    /// A new fd for plane `p`'s memory; the caller owns it.
    pub fn export_plane_fd(&self, p: usize) -> Result<OwnedFd> {
        self.check_plane(p)?;
        let m = self.planes[self.allocation_of(p)].memory;
        // An fd hands over the whole allocation, and a description has no offset:
        // only memory that is the image's (plane's) alone can travel.
        if m.offset != 0 || (self.planes.len() == 1 && !m.dedicated) {
            return Err(Error::unsupported(
                "this image was wrapped at an offset of a memory block shared with other resources: exporting it \
                 would hand over the whole block; share an image with a dedicated allocation",
            ));
        }
        memory::export_memory_fd(&self.ctx.vk, m.memory)
    }

    fn check_plane(&self, p: usize) -> Result<()> {
        let n = self.plane_count();
        if p >= n {
            return Err(Error::invalid(format!(
                "plane {p} is out of range: {} has {n} plane{}",
                self.resolved.layout.display(),
                if n == 1 { "" } else { "s" }
            )));
        }
        Ok(())
    }

    fn check_level(&self, level: u32) -> Result<()> {
        let levels = self.resolved.desc.mip_levels;
        if level >= levels {
            return Err(Error::invalid(format!(
                "level {level} is out of range: the image has {levels} mip levels"
            )));
        }
        Ok(())
    }

    fn mapped(&self, p: usize) -> Result<&MappedImage> {
        if self.frame.is_some() {
            return Err(Error::invalid(format!(
                "this {} image is a shared frame (linear): CUDA sees its planes as pitched \
                 device memory (vkcuda_image_get_plane_pointer), not as arrays, surfaces or \
                 textures",
                self.resolved.layout.display()
            )));
        }
        match &self.planes[p].cuda {
            Some(m) => Ok(m),
            None => {
                self.ctx.cuda()?;
                Err(Error::invalid("the image has no CUDA view"))
            }
        }
    }

    /// The CUDA mipmapped array of plane `p` (owned by the image).
    pub fn mipmapped_array(&self, p: usize) -> Result<sys::CUmipmappedArray> {
        self.check_plane(p)?;
        Ok(self.mapped(p)?.mipmapped_array())
    }

    /// The CUDA array of one mip level of plane `p` (owned by the image).
    pub fn level_array(&self, p: usize, level: u32) -> Result<sys::CUarray> {
        self.check_plane(p)?;
        self.check_level(level)?;
        self.mapped(p)?.level(level)
    }

    /// The surface object of one level of plane `p`, made on first use, owned by
    /// the image.
    pub fn surface(&self, p: usize, level: u32) -> Result<sys::CUsurfObject> {
        self.check_plane(p)?;
        self.check_level(level)?;
        if self.resolved.shapes[p].flags & sys::CUDA_ARRAY3D_SURFACE_LDST == 0 {
            return Err(Error::unsupported(format!(
                "surface objects need VK_IMAGE_USAGE_STORAGE_BIT, which this image (usage {:?}) \
                 was created without",
                self.resolved.desc.usage
            )));
        }
        self.mapped(p)?.surface(level)
    }

    /// Checks a sampler against plane `p`'s format and makes a texture object,
    /// owned by the image.
    pub fn texture(&self, p: usize, s: &Sampler) -> Result<sys::CUtexObject> {
        self.check_plane(p)?;
        if let Some(l) = s.level {
            self.check_level(l)?;
        }
        let f = self.resolved.layout.plane(p).info;
        let name = format::display(f.format);
        if s.normalized_float && !f.is_float() && !f.is_small_integer() {
            return Err(Error::invalid(format!(
                "the normalized-float read mode needs an 8- or 16-bit integer format; {name} has \
                 32-bit integers: read them as elements"
            )));
        }
        let read_as_integer = !f.is_float() && !s.normalized_float;
        if s.linear && read_as_integer {
            return Err(Error::invalid(format!(
                "linear filtering needs float results: {name} read as elements gives integers; \
                 use the normalized-float read mode or point filtering"
            )));
        }
        let wraps = matches!(
            s.address,
            sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP
                | sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR
        );
        if wraps && !s.normalized_coordinates {
            return Err(Error::invalid(
                "the wrap and mirror address modes need normalized coordinates",
            ));
        }
        self.mapped(p)?.texture(&TextureDesc {
            level: s.level,
            linear: s.linear,
            address: s.address,
            normalized_coordinates: s.normalized_coordinates,
            read_as_integer,
            border_color: s.border_color,
        })
    }

    /// Checks pitch-linear planes against level 0 of the image's planes: one per
    /// plane, a device pointer that is not 0, a pitch of at least the plane's row
    /// in bytes, a span that does not overflow. 1D and 2D images with one layer.
    /// Arithmetic only, no allocation: this runs for every frame a decoder hands
    /// over.
    pub(crate) fn check_pitched(&self, planes: &[PitchedPlane]) -> Result<[Pitched; MAX_PLANES]> {
        let layout = &self.resolved.layout;
        let n = layout.plane_count();
        if planes.len() != n {
            return Err(Error::invalid(format!(
                "{} pitched planes were given, but {} has {n} plane{}",
                planes.len(),
                layout.display(),
                if n == 1 { "" } else { "s" }
            )));
        }
        let d = &self.resolved.desc;
        if d.dimension == Dimension::D3 || d.array_layers > 1 {
            return Err(Error::unsupported(format!(
                "pitched copies cover 1D and 2D images with one layer; this one is {} with {} \
                 layer(s): copy its level arrays with cuMemcpy3D",
                match d.dimension {
                    Dimension::D1 => "1D",
                    Dimension::D2 => "2D",
                    Dimension::D3 => "3D",
                },
                d.array_layers
            )));
        }
        let mut out = [Pitched::default(); MAX_PLANES];
        for (p, pl) in planes.iter().enumerate() {
            let f = layout.plane(p);
            let (width, height) = f.extent(d.width, d.height);
            let texel = f.info.bytes_per_texel();
            let row_bytes = width as u64 * texel as u64;
            if pl.pointer == 0 {
                return Err(Error::null(&format!(
                    "the device pointer of pitched plane {p}"
                )));
            }
            if pl.pitch < row_bytes {
                return Err(Error::invalid(format!(
                    "the pitch of pitched plane {p} ({}) is less than the plane's row of \
                     {row_bytes} bytes ({width} texels of {texel} bytes)",
                    pl.pitch
                )));
            }
            let pitched = Pitched {
                pointer: pl.pointer,
                pitch: usize::try_from(pl.pitch).map_err(|_| {
                    Error::invalid(format!(
                        "the pitch of pitched plane {p} ({}) is too large",
                        pl.pitch
                    ))
                })?,
                row_bytes: row_bytes as usize,
                rows: height as usize,
            };
            pitched
                .span()
                .and_then(|s| s.checked_add(pl.pointer))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "pitched plane {p}: {} rows of pitch {} from {:#x} run past the end of \
                         the address space",
                        height, pl.pitch, pl.pointer
                    ))
                })?;
            out[p] = pitched;
        }
        Ok(out)
    }

    /// The image side of each plane's pitched copy, worked out once.
    fn pitched_targets(&self) -> Result<&[array::Target; MAX_PLANES]> {
        if let Some(t) = self.pitched_targets.get() {
            return Ok(t);
        }
        let mut targets = [array::Target::Device {
            pointer: 0,
            pitch: 0,
        }; MAX_PLANES];
        for (p, target) in targets.iter_mut().enumerate().take(self.plane_count()) {
            *target = if self.frame.is_some() {
                let plane = self.plane_pointer(p)?;
                array::Target::Device {
                    pointer: plane.pointer,
                    pitch: plane.layout.row_pitch as usize,
                }
            } else {
                array::Target::Array(self.mapped(p)?.level(0)?)
            };
        }
        Ok(self.pitched_targets.get_or_init(|| targets))
    }

    /// Enqueues on `stream` the copy between pitch-linear device memory (one
    /// [`PitchedPlane`] per plane) and level 0 of every plane (`to_image`: into
    /// the image), one `cuMemcpy2DAsync` per plane. The image must be CUDA's at
    /// that point of the stream (handed over as for any other CUDA access).
    /// `stream` is checked as for [`Semaphore::cuda_signal`](crate::Semaphore::cuda_signal).
    ///
    /// Each plane's rows must lie in one allocation CUDA knows
    /// (`cuMemGetAddressRange` answers for device memory of any kind, managed
    /// memory and page-locked or registered host memory): an address it reports
    /// in no allocation is refused ([`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)) before
    /// anything is enqueued, as are rows that end past their allocation. The
    /// allocation ranges found are remembered per thread (the last 32), so
    /// a decoder's surfaces are looked up once, not every frame.
    ///
    /// # Safety
    /// Each plane's `pointer` is memory of the context's CUDA device with room
    /// for the plane's rows at `pitch` (read when `to_image`, written otherwise),
    /// not in use by other work on another stream meanwhile. An allocation the
    /// caller freed and another made at an address in its range is not looked up
    /// again while the old range is remembered (until the library frees memory of
    /// its own): a plane there must fit the new allocation.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub unsafe fn copy_pitched(
        &self,
        planes: &[PitchedPlane],
        to_image: bool,
        stream: sys::CUstream,
    ) -> Result<()> {
        let pitched = self.check_pitched(planes)?;
        let cuda = self.ctx.cuda()?;
        let targets = self.pitched_targets()?;
        let n = planes.len();
        array::copy_pitched(cuda, &targets[..n], &pitched[..n], to_image, stream)
    }
}

/// "plane 1: " for messages about one plane of a multi-planar image, "" for a
/// single-plane image.
fn plane_name(planes: usize, p: usize) -> String {
    if planes == 1 {
        String::new()
    } else {
        format!("plane {p}: ")
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("vk_image", &self.vk_image())
            .field("description", self.description())
            .field("frame", &self.is_frame())
            .finish()
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // CUDA first (objects, mipmapped arrays, imports), then Vulkan's image and memory.
        for p in &mut self.planes {
            p.cuda = None;
        }
        self.frame = None;
        if let VulkanView::Owned(m) = &self.vulkan {
            m.destroy(&self.ctx.vk);
        }
    }
}

/// How a texture object reads ([`Image::texture`]), checked against the format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampler {
    /// One level (`Some`), or all levels (`None`: mipmapped sampling).
    pub level: Option<u32>,
    /// Linear filtering (float results only), else point sampling.
    pub linear: bool,
    /// The address mode of every axis (wrap and mirror need normalized coordinates).
    pub address: sys::CUaddress_mode,
    /// Coordinates in [0, 1) instead of texels.
    pub normalized_coordinates: bool,
    /// Integer formats come back as normalized floats (`false`: as integers).
    pub normalized_float: bool,
    /// The colour outside the image with the border address mode.
    pub border_color: [f32; 4],
}

/// One plane of pitch-linear device memory for [`Image::copy_pitched`]: the first
/// row's address and the bytes from one row to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PitchedPlane {
    /// The device address of the first row.
    pub pointer: u64,
    /// The bytes from one row to the next (at least the plane's row).
    pub pitch: u64,
}

enum VulkanView {
    Owned(ImageMemory),
    Borrowed(vk::Image),
}

/// One allocation (one per plane of a disjoint image, else the image's only one)
/// and its CUDA array view (none for a video frame).
struct Plane {
    memory: PlaneMemory,
    cuda: Option<MappedImage>,
}
