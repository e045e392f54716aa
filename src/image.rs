//! Shared images: a `VkImage` with dedicated exportable memory, imported into CUDA
//! as a mipmapped array, with per-level arrays, surface and texture objects.
//!
//! CUDA cannot export arrays, so the memory always comes from Vulkan: the library
//! allocates it ([`Image::create`]) or the engine did ([`Image::wrap`]).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys;

use crate::context::Context;
use crate::cuda::array::{ArrayShape, MappedImage, Placement, TextureDesc};
use crate::error::{Error, Result};
use crate::fd;
use crate::format::{self, FormatInfo};
use crate::vulkan::handoff;
use crate::vulkan::image::{self as vkimage, ImageMemory, ImageParams};
use crate::vulkan::memory;

/// 1D, 2D or 3D.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    D1,
    D2,
    D3,
}

/// What an image is; zero for mip levels and array layers means 1, height and
/// depth 0 mean 1 where the dimension has no such axis, an empty usage means the
/// default (create only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    pub dimension: Dimension,
    pub format: vk::Format,
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub mip_levels: u32,
    pub array_layers: u32,
    pub cube: bool,
    pub usage: vk::ImageUsageFlags,
}

/// Usages the library accepts for shared images.
pub const ALLOWED_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw()
        | vk::ImageUsageFlags::SAMPLED.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw()
        | vk::ImageUsageFlags::COLOR_ATTACHMENT.as_raw()
        | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT.as_raw()
        | vk::ImageUsageFlags::INPUT_ATTACHMENT.as_raw(),
);

/// The usage of [`Image::create`] when none is given: transfers, plus sampled and
/// storage where the format and device allow them for exportable images.
pub const DEFAULT_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw()
        | vk::ImageUsageFlags::SAMPLED.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw(),
);

/// `floor(log2(largest dimension)) + 1`: the most mip levels an extent can have.
pub fn max_mip_levels(width: u32, height: u32, depth: u32) -> u32 {
    let largest = width.max(height).max(depth);
    if largest == 0 {
        0
    } else {
        32 - largest.leading_zeros()
    }
}

/// Whether CUDA and the Vulkan driver agree on where each array layer of this
/// image lies. Measured on the H200 (driver 580.159.04): with several array layers
/// (cubes included) and a partial mip chain (more than one level but fewer than
/// [`max_mip_levels`]), CUDA's layered mipmapped array places layers 1 and up at
/// other offsets than Vulkan does (67x35 with 3 levels, 1D 1000 with 5); one level
/// or the full chain agree for every extent tried (67x35 with 7 levels, 1D 1000
/// with 10, 64x64 with 7), as do single-layer and 3D images.
pub fn layers_agree(d: &Description) -> bool {
    d.array_layers <= 1
        || d.mip_levels <= 1
        || d.mip_levels == max_mip_levels(d.width, d.height, d.depth)
}

fn check_layers_agree(d: &Description) -> Result<()> {
    if layers_agree(d) {
        return Ok(());
    }
    let full = max_mip_levels(d.width, d.height, d.depth);
    Err(Error::unsupported(format!(
        "an image with {} array layers and {} of its {full} possible mip levels cannot be shared \
         with CUDA: CUDA's layered mipmapped arrays place the layers of a partial mip chain \
         elsewhere than Vulkan does (found on NVIDIA's driver). Use 1 mip level or all {full}, \
         or one image per layer",
        d.array_layers, d.mip_levels
    )))
}

/// A description checked and completed (defaults filled in), with what Vulkan and
/// CUDA are told.
#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    pub desc: Description,
    pub format: FormatInfo,
    pub params: ImageParams,
    pub shape: ArrayShape,
}

fn check_usage_bits(usage: vk::ImageUsageFlags) -> Result<()> {
    if usage.contains(vk::ImageUsageFlags::TRANSIENT_ATTACHMENT) {
        return Err(Error::unsupported(
            "VK_IMAGE_USAGE_TRANSIENT_ATTACHMENT_BIT images cannot be shared: their memory may be \
             lazily allocated and cannot be exported",
        ));
    }
    let unknown = usage & !ALLOWED_USAGE;
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "usage {:#x} has bits {:#x} that are not image usages the library accepts (transfer \
             src/dst, sampled, storage, colour/depth-stencil/input attachment)",
            usage.as_raw(),
            unknown.as_raw()
        )));
    }
    Ok(())
}

/// The extent, mip levels and layers, checked, with defaults filled in.
fn check_shape(d: &Description) -> Result<Description> {
    let mut d = *d;
    if d.width == 0 {
        return Err(Error::invalid("zero extent: width is 0"));
    }
    match d.dimension {
        Dimension::D1 => {
            if d.height > 1 || d.depth > 1 {
                return Err(Error::invalid(format!(
                    "a 1D image has height and depth 1 (or 0), not {}x{}",
                    d.height, d.depth
                )));
            }
            d.height = 1;
            d.depth = 1;
        }
        Dimension::D2 => {
            if d.height == 0 {
                return Err(Error::invalid("zero extent: height is 0 for a 2D image"));
            }
            if d.depth > 1 {
                return Err(Error::invalid(format!(
                    "a 2D image has depth 1 (or 0), not {}; use array layers or a 3D image",
                    d.depth
                )));
            }
            d.depth = 1;
        }
        Dimension::D3 => {
            if d.height == 0 || d.depth == 0 {
                return Err(Error::invalid(format!(
                    "zero extent: {}x{}x{} for a 3D image",
                    d.width, d.height, d.depth
                )));
            }
        }
    }
    if d.array_layers == 0 {
        d.array_layers = 1;
    }
    if d.dimension == Dimension::D3 && d.array_layers != 1 {
        return Err(Error::invalid(format!(
            "a 3D image has one array layer, not {}",
            d.array_layers
        )));
    }
    if d.cube {
        if d.dimension != Dimension::D2 {
            return Err(Error::invalid("a cube-compatible image must be 2D"));
        }
        if d.width != d.height {
            return Err(Error::invalid(format!(
                "a cube-compatible image must be square, not {}x{}",
                d.width, d.height
            )));
        }
        if d.array_layers % 6 != 0 {
            return Err(Error::invalid(format!(
                "a cube-compatible image has a multiple of 6 array layers, not {}",
                d.array_layers
            )));
        }
    }
    if d.mip_levels == 0 {
        d.mip_levels = 1;
    }
    let most = max_mip_levels(d.width, d.height, d.depth);
    if d.mip_levels > most {
        return Err(Error::invalid(format!(
            "{} mip levels are too many for {}x{}x{}: at most floor(log2({})) + 1 = {most}",
            d.mip_levels,
            d.width,
            d.height,
            d.depth,
            d.width.max(d.height).max(d.depth)
        )));
    }
    Ok(d)
}

fn shape_of(d: &Description, f: &FormatInfo) -> ArrayShape {
    let layers = d.array_layers as usize;
    let (height, depth, mut flags) = match d.dimension {
        Dimension::D1 if layers > 1 => (0, layers, sys::CUDA_ARRAY3D_LAYERED),
        Dimension::D1 => (0, 0, 0),
        Dimension::D2 if d.cube && layers > 6 => (
            d.height as usize,
            layers,
            sys::CUDA_ARRAY3D_CUBEMAP | sys::CUDA_ARRAY3D_LAYERED,
        ),
        Dimension::D2 if d.cube => (d.height as usize, layers, sys::CUDA_ARRAY3D_CUBEMAP),
        Dimension::D2 if layers > 1 => (d.height as usize, layers, sys::CUDA_ARRAY3D_LAYERED),
        Dimension::D2 => (d.height as usize, 0, 0),
        Dimension::D3 => (d.height as usize, d.depth as usize, 0),
    };
    if d.usage.contains(vk::ImageUsageFlags::STORAGE) {
        flags |= sys::CUDA_ARRAY3D_SURFACE_LDST;
    }
    // CUDA must know that the graphics API renders into the memory.
    if d.usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT) {
        flags |= sys::CUDA_ARRAY3D_COLOR_ATTACHMENT;
    }
    ArrayShape {
        width: d.width as usize,
        height,
        depth,
        format: f.cuda,
        channels: f.channels,
        flags,
        levels: d.mip_levels,
    }
}

fn params_of(d: &Description) -> ImageParams {
    ImageParams {
        image_type: match d.dimension {
            Dimension::D1 => vk::ImageType::TYPE_1D,
            Dimension::D2 => vk::ImageType::TYPE_2D,
            Dimension::D3 => vk::ImageType::TYPE_3D,
        },
        format: d.format,
        extent: vk::Extent3D {
            width: d.width,
            height: d.height,
            depth: d.depth,
        },
        mip_levels: d.mip_levels,
        array_layers: d.array_layers,
        flags: if d.cube {
            vk::ImageCreateFlags::CUBE_COMPATIBLE
        } else {
            vk::ImageCreateFlags::empty()
        },
        usage: d.usage,
    }
}

/// Checks a description against the format table and the device and fills in the
/// defaults. `explicit_usage`: the usage must be given (wrapping an engine image,
/// whose usage is what it is).
pub fn resolve(ctx: &Context, desc: &Description, explicit_usage: bool) -> Result<Resolved> {
    let f = format::lookup(desc.format)?;
    let mut d = check_shape(desc)?;
    check_usage_bits(d.usage)?;
    let dev = &ctx.vk;
    if d.usage.is_empty() {
        if explicit_usage {
            return Err(Error::invalid(
                "usage is 0: pass the VkImageUsageFlags the image was created with",
            ));
        }
        // The default: transfers (which the format must support), plus sampled and
        // storage where the format has them, dropping storage (then sampling) where
        // the device cannot export such images.
        let transfers = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
        vkimage::check_usage_features(dev, d.format, transfers)?;
        let features = vkimage::optimal_features(dev, d.format);
        let mut candidates = Vec::new();
        let mut usage = DEFAULT_USAGE;
        for (u, feature, _) in vkimage::USAGE_FEATURES {
            if usage.contains(u) && !features.contains(feature) {
                usage &= !u;
            }
        }
        candidates.push(usage);
        candidates.push(usage & !vk::ImageUsageFlags::STORAGE);
        candidates.push(usage & !(vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::SAMPLED));
        let mut last = None;
        for usage in candidates {
            d.usage = usage;
            match vkimage::check_exportable(dev, &params_of(&d)) {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            return Err(e);
        }
    } else {
        vkimage::check_usage_features(dev, d.format, d.usage)?;
        vkimage::check_exportable(dev, &params_of(&d))?;
    }
    Ok(Resolved {
        desc: d,
        format: f,
        params: params_of(&d),
        shape: shape_of(&d, &f),
    })
}

/// How a texture reads (the C-side sampler description, checked against the format).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampler {
    /// `None`: all levels (mipmapped sampling).
    pub level: Option<u32>,
    pub linear: bool,
    pub address: sys::CUaddress_mode,
    pub normalized_coordinates: bool,
    /// Integer formats come back as normalized floats (`false`: as integers).
    pub normalized_float: bool,
    pub border_color: [f32; 4],
}

enum VulkanView {
    Owned(ImageMemory),
    Borrowed {
        image: vk::Image,
        memory: vk::DeviceMemory,
    },
}

/// A shared image.
pub struct Image {
    ctx: Arc<Context>,
    resolved: Resolved,
    vulkan: VulkanView,
    allocation_size: u64,
    placement: Placement,
    cuda: Option<MappedImage>,
}

/// The engine's image for [`Image::wrap`].
#[derive(Clone, Copy, Debug)]
pub struct Wrap {
    pub image: vk::Image,
    pub memory: vk::DeviceMemory,
    /// The whole `VkDeviceMemory`'s size.
    pub allocation_size: u64,
    /// Where the image is bound in `memory` (0 when dedicated).
    pub offset: u64,
    pub dedicated: bool,
    /// `VkExportMemoryAllocateInfo::handleTypes` of `memory`, as the engine states it.
    pub export_handle_types: u32,
}

impl Image {
    /// Creates the `VkImage` with dedicated exportable memory and, unless the
    /// context is Vulkan-only, its CUDA mipmapped array.
    pub fn create(ctx: &Arc<Context>, desc: &Description) -> Result<Image> {
        ctx.vk.memory_fd()?;
        let resolved = resolve(ctx, desc, false)?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        let im = vkimage::create_exportable_image(&ctx.vk, &resolved.params)?;
        let mut image = Image {
            ctx: ctx.clone(),
            resolved,
            vulkan: VulkanView::Owned(im),
            allocation_size: im.allocation_size,
            placement: Placement::DEDICATED,
            cuda: None,
        };
        // On error `image` drops and releases the Vulkan objects.
        if let Some(cuda) = &ctx.cuda {
            let handle = memory::export_memory_fd(&ctx.vk, im.memory)?;
            image.cuda = Some(MappedImage::import(
                cuda.clone(),
                handle,
                im.allocation_size,
                Placement::DEDICATED,
                resolved.shape,
            )?);
        }
        Ok(image)
    }

    /// Imports an image exported by [`export_fd`](Self::export_fd) (here or in
    /// another process): a new `VkImage` of `desc` on the imported dedicated memory
    /// of `allocation_size` bytes and, unless the context is Vulkan-only, its CUDA
    /// mipmapped array. `handle` stays the caller's: the drivers get duplicates.
    pub fn import_fd(
        ctx: &Arc<Context>,
        handle: &OwnedFd,
        desc: &Description,
        allocation_size: u64,
    ) -> Result<Image> {
        ctx.vk.memory_fd()?;
        if allocation_size == 0 {
            return Err(Error::invalid("allocation_size must not be 0"));
        }
        let resolved = resolve(ctx, desc, true)?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        if let Some(real) = fd::known_size(handle) {
            if allocation_size > real {
                return Err(Error::invalid(format!(
                    "allocation_size {allocation_size} is larger than the memory object's real size {real}"
                )));
            }
        }
        memory::check_importable(&ctx.vk, handle, allocation_size)?;
        let raw = handle.as_raw_fd();
        let im = vkimage::import_image(
            &ctx.vk,
            &resolved.params,
            fd::dup_borrowed(raw)?,
            allocation_size,
        )?;
        let mut image = Image {
            ctx: ctx.clone(),
            resolved,
            vulkan: VulkanView::Owned(im),
            allocation_size,
            placement: Placement::DEDICATED,
            cuda: None,
        };
        // On error `image` drops and releases the Vulkan objects.
        if let Some(cuda) = &ctx.cuda {
            image.cuda = Some(MappedImage::import(
                cuda.clone(),
                fd::dup_borrowed(raw)?,
                allocation_size,
                Placement::DEDICATED,
                resolved.shape,
            )?);
        }
        Ok(image)
    }

    /// Makes the CUDA view of an image the engine created on memory it allocated
    /// exportable (`OPAQUE_FD`): a dedicated allocation, or a block shared with
    /// other resources with the image at `w.offset` (a VMA pool). The engine keeps
    /// owning `image` and `memory`. `desc` must be the image's own description and
    /// usage. In a Vulkan-only context only the checks run.
    pub fn wrap(ctx: &Arc<Context>, w: &Wrap, desc: &Description) -> Result<Image> {
        let Wrap {
            image,
            memory: mem,
            allocation_size,
            offset,
            dedicated,
            export_handle_types,
        } = *w;
        if image == vk::Image::null() {
            return Err(Error::null("image"));
        }
        if mem == vk::DeviceMemory::null() {
            return Err(Error::null("memory"));
        }
        memory::check_export_types(export_handle_types, "export_handle_types")?;
        if allocation_size == 0 {
            return Err(Error::invalid("allocation_size must not be 0"));
        }
        if dedicated && offset != 0 {
            return Err(Error::invalid(format!(
                "offset is {offset} but the memory is a dedicated allocation, which the image is bound to at \
                 offset 0"
            )));
        }
        ctx.vk.memory_fd()?;
        let resolved = resolve(ctx, desc, true)?;
        if ctx.cuda.is_some() {
            check_layers_agree(&resolved.desc)?;
        }
        let req = vkimage::requirements(&ctx.vk, image);
        let end = offset
            .checked_add(req.size)
            .ok_or_else(|| Error::invalid("offset + the image's size overflows"))?;
        if allocation_size < end {
            return Err(Error::invalid(format!(
                "memory smaller than its requirements: allocation_size {allocation_size} is less than offset \
                 {offset} + the {} bytes vkGetImageMemoryRequirements asks for this image",
                req.size
            )));
        }
        if req.alignment > 1 && offset % req.alignment != 0 {
            return Err(Error::invalid(format!(
                "offset {offset} is not a multiple of the image's required alignment {}",
                req.alignment
            )));
        }
        if !dedicated && vkimage::dedicated_requirements(&ctx.vk, image).0 {
            return Err(Error::invalid(
                "the driver requires a dedicated allocation for this image \
                 (VkMemoryDedicatedRequirements::requiresDedicatedAllocation), so its memory is dedicated: set \
                 dedicated to VK_TRUE",
            ));
        }
        let handle = memory::export_memory_fd(&ctx.vk, mem)?;
        if let Some(real) = fd::known_size(&handle) {
            if allocation_size > real {
                return Err(Error::invalid(format!(
                    "allocation_size {allocation_size} is larger than the memory object's real size {real}"
                )));
            }
        }
        let cuda = match &ctx.cuda {
            Some(c) => Some(MappedImage::import(
                c.clone(),
                handle,
                allocation_size,
                Placement { offset, dedicated },
                resolved.shape,
            )?),
            None => None,
        };
        Ok(Image {
            ctx: ctx.clone(),
            resolved,
            vulkan: VulkanView::Borrowed { image, memory: mem },
            allocation_size,
            placement: Placement { offset, dedicated },
            cuda,
        })
    }

    pub fn vk_image(&self) -> vk::Image {
        match &self.vulkan {
            VulkanView::Owned(m) => m.image,
            VulkanView::Borrowed { image, .. } => *image,
        }
    }

    pub fn vk_memory(&self) -> vk::DeviceMemory {
        match &self.vulkan {
            VulkanView::Owned(m) => m.memory,
            VulkanView::Borrowed { memory, .. } => *memory,
        }
    }

    pub fn allocation_size(&self) -> u64 {
        self.allocation_size
    }

    /// The description with the defaults filled in (the usage actually used).
    /// Every subresource, for the handoff barriers, with the engine's layout
    /// (see [`handoff::ImageRange`]).
    pub fn handoff_range(&self, layout: vk::ImageLayout) -> handoff::ImageRange {
        let d = self.description();
        handoff::ImageRange {
            image: self.vk_image(),
            range: vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: d.mip_levels,
                base_array_layer: 0,
                layer_count: d.array_layers,
            },
            layout,
        }
    }

    pub fn description(&self) -> &Description {
        &self.resolved.desc
    }

    pub fn format_info(&self) -> &FormatInfo {
        &self.resolved.format
    }

    /// What CUDA was (or would be) told about the array.
    pub fn shape(&self) -> &ArrayShape {
        &self.resolved.shape
    }

    pub fn is_wrapped(&self) -> bool {
        matches!(self.vulkan, VulkanView::Borrowed { .. })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Where the image lies in its memory.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// A new fd for the memory; the caller owns it. Refused for an image wrapped in
    /// a block shared with other resources: the fd would hand over the whole
    /// block, and a description has no offset.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        if !self.placement.dedicated {
            return Err(Error::unsupported(
                "this image was wrapped at an offset of a memory block shared with other resources: exporting it \
                 would hand over the whole block; share an image with a dedicated allocation",
            ));
        }
        memory::export_memory_fd(&self.ctx.vk, self.vk_memory())
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

    fn mapped(&self) -> Result<&MappedImage> {
        match &self.cuda {
            Some(m) => Ok(m),
            None => {
                self.ctx.cuda()?;
                Err(Error::invalid("the image has no CUDA view"))
            }
        }
    }

    /// The CUDA mipmapped array (owned by the image).
    pub fn mipmapped_array(&self) -> Result<sys::CUmipmappedArray> {
        Ok(self.mapped()?.mipmapped_array())
    }

    /// The CUDA array of one mip level (owned by the image).
    pub fn level_array(&self, level: u32) -> Result<sys::CUarray> {
        self.check_level(level)?;
        self.mapped()?.level(level)
    }

    /// The surface object of one level, made on first use, owned by the image.
    pub fn surface(&self, level: u32) -> Result<sys::CUsurfObject> {
        self.check_level(level)?;
        if !self
            .resolved
            .desc
            .usage
            .contains(vk::ImageUsageFlags::STORAGE)
        {
            return Err(Error::unsupported(format!(
                "surface objects need VK_IMAGE_USAGE_STORAGE_BIT, which this image (usage {:?}) \
                 was created without",
                self.resolved.desc.usage
            )));
        }
        self.mapped()?.surface(level)
    }

    /// Checks a sampler against the format and makes a texture object, owned by
    /// the image.
    pub fn texture(&self, s: &Sampler) -> Result<sys::CUtexObject> {
        if let Some(l) = s.level {
            self.check_level(l)?;
        }
        let f = &self.resolved.format;
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
        self.mapped()?.texture(&TextureDesc {
            level: s.level,
            linear: s.linear,
            address: s.address,
            normalized_coordinates: s.normalized_coordinates,
            read_as_integer,
            border_color: s.border_color,
        })
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        // CUDA first (objects, mipmapped array, import), then Vulkan's image and memory.
        self.cuda = None;
        if let VulkanView::Owned(m) = &self.vulkan {
            m.destroy(&self.ctx.vk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d2(w: u32, h: u32) -> Description {
        Description {
            dimension: Dimension::D2,
            format: vk::Format::R8G8B8A8_UNORM,
            width: w,
            height: h,
            depth: 0,
            mip_levels: 0,
            array_layers: 0,
            cube: false,
            usage: vk::ImageUsageFlags::empty(),
        }
    }

    #[test]
    fn mip_limit_is_floor_log2_plus_one() {
        assert_eq!(max_mip_levels(1, 1, 1), 1);
        assert_eq!(max_mip_levels(2, 1, 1), 2);
        assert_eq!(max_mip_levels(3, 1, 1), 2);
        assert_eq!(max_mip_levels(256, 17, 1), 9);
        assert_eq!(max_mip_levels(1, 1, 1000), 10);
        assert_eq!(max_mip_levels(16384, 16384, 1), 15);
        assert_eq!(max_mip_levels(u32::MAX, 1, 1), 32);
    }

    #[test]
    fn shapes_fill_defaults_and_refuse_nonsense() {
        let d = check_shape(&d2(64, 32)).unwrap();
        assert_eq!((d.depth, d.mip_levels, d.array_layers), (1, 1, 1));
        assert!(check_shape(&d2(0, 32))
            .unwrap_err()
            .message
            .contains("zero extent"));
        assert!(check_shape(&d2(32, 0))
            .unwrap_err()
            .message
            .contains("zero extent"));
        let mut d = d2(64, 32);
        d.mip_levels = 8;
        let e = check_shape(&d).unwrap_err();
        assert!(
            e.message.contains("at most floor(log2(64)) + 1 = 7"),
            "{}",
            e.message
        );
        d.mip_levels = 7;
        check_shape(&d).unwrap();
        let mut c = d2(16, 16);
        c.cube = true;
        c.array_layers = 4;
        assert!(check_shape(&c).is_err());
        c.array_layers = 12;
        check_shape(&c).unwrap();
        c.height = 8;
        assert!(check_shape(&c).is_err());
        let mut one = d2(16, 4);
        one.dimension = Dimension::D1;
        assert!(check_shape(&one).is_err());
        one.height = 1;
        assert_eq!(check_shape(&one).unwrap().height, 1);
        let mut three = d2(16, 4);
        three.dimension = Dimension::D3;
        assert!(check_shape(&three).is_err());
        three.depth = 2;
        three.array_layers = 2;
        assert!(check_shape(&three).is_err());
    }

    #[test]
    fn cuda_shapes_follow_the_description() {
        let f = format::lookup(vk::Format::R8G8B8A8_UNORM).unwrap();
        let mut d = check_shape(&d2(64, 32)).unwrap();
        d.usage = vk::ImageUsageFlags::STORAGE;
        let s = shape_of(&d, &f);
        assert_eq!(
            (s.width, s.height, s.depth, s.flags),
            (64, 32, 0, sys::CUDA_ARRAY3D_SURFACE_LDST)
        );
        d.array_layers = 3;
        d.usage = vk::ImageUsageFlags::TRANSFER_DST;
        let s = shape_of(&d, &f);
        assert_eq!((s.depth, s.flags), (3, sys::CUDA_ARRAY3D_LAYERED));
        let mut c = d2(16, 16);
        c.cube = true;
        c.array_layers = 6;
        let c = check_shape(&c).unwrap();
        assert_eq!(shape_of(&c, &f).flags, sys::CUDA_ARRAY3D_CUBEMAP);
        let mut c12 = c;
        c12.array_layers = 12;
        assert_eq!(
            shape_of(&c12, &f).flags,
            sys::CUDA_ARRAY3D_CUBEMAP | sys::CUDA_ARRAY3D_LAYERED
        );
        let mut att = check_shape(&d2(16, 16)).unwrap();
        att.usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::STORAGE;
        assert_eq!(
            shape_of(&att, &f).flags,
            sys::CUDA_ARRAY3D_SURFACE_LDST | sys::CUDA_ARRAY3D_COLOR_ATTACHMENT
        );
        let mut one = d2(16, 1);
        one.dimension = Dimension::D1;
        let one = check_shape(&one).unwrap();
        let s = shape_of(&one, &f);
        assert_eq!((s.height, s.depth), (0, 0));
        let mut three = d2(8, 4);
        three.dimension = Dimension::D3;
        three.depth = 2;
        let three = check_shape(&three).unwrap();
        let s = shape_of(&three, &f);
        assert_eq!((s.width, s.height, s.depth, s.flags), (8, 4, 2, 0));
    }

    #[test]
    fn partial_mip_chains_of_layered_images_are_refused_for_cuda() {
        let mut d = check_shape(&d2(67, 35)).unwrap();
        d.array_layers = 2;
        d.mip_levels = 3;
        assert!(!layers_agree(&d));
        let e = check_layers_agree(&d).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Unsupported);
        assert!(
            e.message.contains("Use 1 mip level or all 7"),
            "{}",
            e.message
        );
        d.mip_levels = 7;
        assert!(layers_agree(&d));
        d.mip_levels = 1;
        assert!(layers_agree(&d));
        d.mip_levels = 3;
        d.array_layers = 1;
        assert!(layers_agree(&d));
        let mut one = d2(1000, 1);
        one.dimension = Dimension::D1;
        let mut one = check_shape(&one).unwrap();
        one.array_layers = 4;
        one.mip_levels = 5;
        assert!(!layers_agree(&one));
        one.mip_levels = 10;
        assert!(layers_agree(&one));
    }

    #[test]
    fn usage_bits_are_checked() {
        check_usage_bits(DEFAULT_USAGE).unwrap();
        assert_eq!(
            check_usage_bits(vk::ImageUsageFlags::TRANSIENT_ATTACHMENT)
                .unwrap_err()
                .kind,
            crate::ErrorKind::Unsupported
        );
        assert_eq!(
            check_usage_bits(vk::ImageUsageFlags::from_raw(0x8000_0000))
                .unwrap_err()
                .kind,
            crate::ErrorKind::InvalidArgument
        );
    }
}
