//! Shared images: a `VkImage` with exportable memory, imported into CUDA as
//! mipmapped arrays, with per-level arrays, surface and texture objects.
//!
//! An image has 1 to 3 planes. Single-plane formats have one dedicated
//! allocation, imported into CUDA with the dedicated flag as a mipmapped array
//! with surface and texture objects. Multi-planar (YCbCr) formats come in two
//! layouts:
//! - a **shared video frame** (`Description::linear`): LINEAR tiling, not
//!   disjoint, one dedicated allocation that CUDA imports and maps whole as device
//!   memory; each plane is pitched memory at its `vkGetImageSubresourceLayout`
//!   offset and row pitch ([`Image::plane_pointer`]): what NVDEC writes, NVENC
//!   and NPP read, and `cuMemcpy2D` copies;
//! - OPTIMAL tiling: a disjoint image with one allocation per plane (never
//!   dedicated: a disjoint image cannot have one), in Vulkan-only contexts alone
//!   (CUDA arrays of such planes read wrong on NVIDIA's driver:
//!   [`format::check_cuda_view`]).
//!
//! CUDA cannot export arrays, so the memory always comes from Vulkan: the library
//! allocates it ([`Image::create`]) or the engine did ([`Image::wrap`]).
//!
//! ```
//! use vkcuda::ash::vk;
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::image::{Description, Image};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! // An RGBA8 image with 4 mip levels; the usage left empty takes the default
//! // (transfers, sampled and storage where the format and device allow them).
//! let im = Image::create(&ctx, &Description {
//!     mip_levels: 4,
//!     ..Description::new_2d(vk::Format::R8G8B8A8_UNORM, 256, 128)
//! })?;
//! assert_eq!(im.description().mip_levels, 4);
//! assert!(im.description().usage.contains(vk::ImageUsageFlags::TRANSFER_DST));
//! // In a Vulkan-only context there are no CUDA arrays.
//! assert_eq!(im.level_array(0, 1).unwrap_err().kind(), vkcuda::ErrorKind::CudaUnavailable);
//! # Ok(())
//! # }
//! ```
//!
//! A shared video frame (`no_run`: LINEAR multi-planar images need format
//! features the lavapipe of Debian 12 lacks):
//!
//! ```no_run
//! use vkcuda::ash::vk;
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::image::{Description, Image, VideoColor};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::Primary)?;
//! // A 1920x1080 NV12 video frame: LINEAR, one allocation, pitched planes.
//! let frame = Image::create(&ctx, &Description {
//!     linear: true,
//!     ..Description::new_2d(vk::Format::G8_B8R8_2PLANE_420_UNORM, 1920, 1080)
//! })?;
//! assert!(frame.is_frame());
//! let chroma = frame.plane_pointer(1)?; // pitched CUDA memory: what NVDEC writes
//! assert_eq!((chroma.width, chroma.height, chroma.bytes_per_texel), (960, 540, 2));
//! assert!(chroma.layout.row_pitch >= 960 * 2);
//! // The decoder's colour description drives the engine's YCbCr sampler.
//! frame.set_video_color(&VideoColor { full_range: true, ..VideoColor::DEFAULT })?;
//! let conversion = frame.ycbcr_conversion()?.create_info(); // for vkCreateSamplerYcbcrConversion
//! # let _ = conversion;
//! # Ok(())
//! # }
//! ```

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys;

use super::cuda::array::{self, ArrayShape, MappedImage, Pitched, Placement, TextureDesc};
use super::cuda::external::ExternalMemory;
use super::vulkan::handoff::ImageRange;
use super::vulkan::image::{self as vkimage, ImageMemory, ImageParams};
use super::vulkan::memory;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::fd;
use crate::format::{self, FormatInfo, Layout};

pub use super::vulkan::image::PlaneMemory;

/// 1D, 2D or 3D.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dimension {
    /// `VK_IMAGE_TYPE_1D` (a CUDA 1D array).
    D1,
    /// `VK_IMAGE_TYPE_2D`.
    D2,
    /// `VK_IMAGE_TYPE_3D`.
    D3,
}

/// What an image is; zero for mip levels and array layers means 1, height and
/// depth 0 mean 1 where the dimension has no such axis, an empty usage means the
/// default (create only: [`DEFAULT_USAGE`] less what the format cannot do).
/// [`Image::description`] has the defaults filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    /// 1D, 2D or 3D.
    pub dimension: Dimension,
    /// The format: one of the formats the library knows (a colour format with a
    /// CUDA array format, or a multi-planar YCbCr format).
    pub format: vk::Format,
    /// The width in texels.
    pub width: u32,
    /// The height (1 or 0 for 1D).
    pub height: u32,
    /// The depth (3D; 1 or 0 otherwise).
    pub depth: u32,
    /// Mip levels (0: 1).
    pub mip_levels: u32,
    /// Array layers (0: 1); a multiple of 6 for a cube.
    pub array_layers: u32,
    /// Cube compatible (2D, square).
    pub cube: bool,
    /// The usage ([`ALLOWED_USAGE`] bits; empty: the default).
    pub usage: vk::ImageUsageFlags,
    /// LINEAR tiling: a shared video frame (multi-planar formats only; not
    /// disjoint, one dedicated allocation, planes as pitched CUDA memory).
    pub linear: bool,
}

impl Description {
    /// A 2D image of `format`, `width` x `height`, one level and layer, the
    /// default usage.
    pub fn new_2d(format: vk::Format, width: u32, height: u32) -> Description {
        Description {
            dimension: Dimension::D2,
            format,
            width,
            height,
            depth: 1,
            mip_levels: 1,
            array_layers: 1,
            cube: false,
            usage: vk::ImageUsageFlags::empty(),
            linear: false,
        }
    }

    /// OPTIMAL, or LINEAR for a video frame.
    pub fn tiling(&self) -> vk::ImageTiling {
        if self.linear {
            vk::ImageTiling::LINEAR
        } else {
            vk::ImageTiling::OPTIMAL
        }
    }
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
pub(crate) fn layers_agree(d: &Description) -> bool {
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
/// CUDA are told: one array shape per plane.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub desc: Description,
    pub layout: Layout,
    pub params: ImageParams,
    pub shapes: Vec<ArrayShape>,
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

/// What a multi-planar format allows (Vulkan: 2D, one level, one layer, not a
/// cube), and the extent its chroma subsampling divides.
pub(crate) fn check_planar_shape(d: &Description, layout: &Layout) -> Result<()> {
    if layout.planar().is_none() {
        if d.linear {
            return Err(Error::invalid(format!(
                "VKCUDA_IMAGE_CREATE_LINEAR_BIT makes a shared video frame of a multi-planar \
                 format; {} has one plane: its images are CUDA arrays (optimal tiling), and \
                 pitched data of one plane is a shared buffer",
                layout.display()
            )));
        }
        return Ok(());
    }
    let name = layout.display();
    if d.dimension != Dimension::D2 {
        return Err(Error::invalid(format!(
            "{name} is multi-planar: images of it are 2D, not {}",
            match d.dimension {
                Dimension::D1 => "1D",
                _ => "3D",
            }
        )));
    }
    if d.mip_levels != 1 {
        return Err(Error::invalid(format!(
            "{name} is multi-planar: images of it have 1 mip level, not {}",
            d.mip_levels
        )));
    }
    if d.array_layers != 1 || d.cube {
        return Err(Error::invalid(format!(
            "{name} is multi-planar: images of it have 1 array layer and are not cube \
             compatible (asked: {} layers{}); use one image per layer",
            d.array_layers,
            if d.cube { ", cube" } else { "" }
        )));
    }
    format::check_extent(layout, d.width, d.height)
}

/// The CUDA array shape of plane `plane` of `d`.
fn shape_of(d: &Description, layout: &Layout, plane: usize) -> ArrayShape {
    let f = layout.plane(plane);
    if let Some(p) = layout.planar() {
        let (width, height) = f.extent(d.width, d.height);
        let mut flags = p.cuda_array_flags;
        if d.usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT) {
            flags |= sys::CUDA_ARRAY3D_COLOR_ATTACHMENT;
        }
        return ArrayShape {
            width: width as usize,
            height: height as usize,
            depth: 0,
            format: f.info.cuda,
            channels: f.info.channels,
            flags,
            levels: 1,
        };
    }
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
        format: f.info.cuda,
        channels: f.info.channels,
        flags,
        levels: d.mip_levels,
    }
}

fn params_of(d: &Description, layout: &Layout) -> ImageParams {
    let mut flags = if d.cube {
        vk::ImageCreateFlags::CUBE_COMPATIBLE
    } else {
        vk::ImageCreateFlags::empty()
    };
    if layout.planar().is_some() && !d.linear {
        flags |= vk::ImageCreateFlags::DISJOINT;
    }
    ImageParams {
        tiling: d.tiling(),
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
        flags,
        usage: d.usage,
    }
}

/// Refuses a multi-planar format the device cannot bind plane by plane (OPTIMAL
/// tiling: a disjoint image).
fn check_disjoint(ctx: &Context, d: &Description, layout: &Layout) -> Result<()> {
    if layout.planar().is_none() || d.linear {
        return Ok(());
    }
    let features = vkimage::optimal_features(&ctx.vk, layout.format());
    if !features.contains(vk::FormatFeatureFlags::DISJOINT) {
        return Err(Error::unsupported(format!(
            "{} is not supported on this device with one allocation per plane: its \
             optimal-tiling format features ({}) lack VK_FORMAT_FEATURE_DISJOINT_BIT",
            layout.display(),
            if features.is_empty() {
                "none".to_string()
            } else {
                format!("{features:?}")
            }
        )));
    }
    Ok(())
}

/// Checks a description against the format table and the device and fills in the
/// defaults. `explicit_usage`: the usage must be given (wrapping an engine image,
/// whose usage is what it is). In a context with CUDA, a format whose CUDA view is
/// not verified is refused first ([`format::check_cuda_view`]).
pub(crate) fn resolve(ctx: &Context, desc: &Description, explicit_usage: bool) -> Result<Resolved> {
    let layout = format::layout(desc.format)?;
    if ctx.cuda.is_some() {
        format::check_cuda_view(&layout, desc.linear)?;
    }
    let mut d = check_shape(desc)?;
    check_planar_shape(&d, &layout)?;
    let tiling = d.tiling();
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
        vkimage::check_usage_features(dev, d.format, tiling, transfers)?;
        check_disjoint(ctx, &d, &layout)?;
        let features = vkimage::features(dev, d.format, tiling);
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
            match vkimage::check_exportable(dev, &params_of(&d, &layout)) {
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
        vkimage::check_usage_features(dev, d.format, tiling, d.usage)?;
        check_disjoint(ctx, &d, &layout)?;
        vkimage::check_exportable(dev, &params_of(&d, &layout))?;
    }
    Ok(Resolved {
        desc: d,
        layout,
        params: params_of(&d, &layout),
        shapes: (0..layout.plane_count())
            .map(|p| shape_of(&d, &layout, p))
            .collect(),
    })
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

/// Where one plane of a shared video frame lies in its allocation
/// (`vkGetImageSubresourceLayout` of the plane's aspect).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Where the plane starts in the allocation.
    pub offset: u64,
    /// The bytes from one row to the next.
    pub row_pitch: u64,
    /// The bytes the plane spans (`VkSubresourceLayout::size`).
    pub size: u64,
}

/// One plane of a shared video frame as CUDA sees it: pitched device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanePointer {
    /// The plane's first row (the mapped allocation + `layout.offset`); 0 in a
    /// Vulkan-only context.
    pub pointer: u64,
    /// Where the plane lies in the allocation.
    pub layout: PlaneLayout,
    /// The plane's width in texels (chroma planes of subsampled formats are
    /// smaller than the frame).
    pub width: u32,
    /// The plane's height in texels.
    pub height: u32,
    /// 1 or 2 (one sample), 2 or 4 (interleaved CbCr).
    pub bytes_per_texel: u32,
    /// The plane's single-plane format (R8, R8G8, R10X6, ...).
    pub format: vk::Format,
}

/// How a multi-planar image's samples are read as colour: ITU-T H.273 code points,
/// as NVDEC's `CUVIDEOFORMAT::video_signal_description` and the bitstreams' VUI
/// carry them, and where chroma sits. The matrix and range drive Vulkan's
/// `VkSamplerYcbcrConversion` ([`Image::ycbcr_conversion`]); the transfer
/// characteristics and primaries are carried for the engine's shader (Vulkan's
/// conversion does not apply them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoColor {
    /// H.273 MatrixCoefficients: 1 BT.709, 5 and 6 BT.601, 9 BT.2020
    /// (non-constant luminance), 2 unspecified (read as BT.709), 0 identity: the
    /// planes hold G, B and R, sampled with `RGB_IDENTITY`, full range only (see [`VideoColor::model`]).
    pub matrix: u32,
    /// H.273 TransferCharacteristics (1 BT.709, 13 sRGB, 16 PQ, 18 HLG, ...).
    pub transfer: u32,
    /// H.273 ColourPrimaries (1 BT.709, 5/6 BT.601, 9 BT.2020, ...).
    pub primaries: u32,
    /// Full-range samples (`video_full_range_flag`), else narrow ("video") range.
    pub full_range: bool,
    /// Where chroma samples sit horizontally.
    pub x_chroma: vk::ChromaLocation,
    /// Where chroma samples sit vertically.
    pub y_chroma: vk::ChromaLocation,
}

impl VideoColor {
    /// What a frame carries until it is told: BT.709, narrow range, chroma
    /// co-sited horizontally and between the rows (H.264/HEVC's default siting of
    /// 4:2:0, "left").
    pub const DEFAULT: VideoColor = VideoColor {
        matrix: 1,
        transfer: 1,
        primaries: 1,
        full_range: false,
        x_chroma: vk::ChromaLocation::COSITED_EVEN,
        y_chroma: vk::ChromaLocation::MIDPOINT,
    };

    /// Vulkan's model for the matrix, or why there is none. Identity (0: the
    /// planes hold G, B and R) is `RGB_IDENTITY`, which samples each plane as it
    /// is; `YCBCR_IDENTITY` would range-expand B and R as chroma (shift them by
    /// one half). `RGB_IDENTITY` ignores the range, so narrow-range GBR has no
    /// model.
    pub fn model(&self) -> Result<vk::SamplerYcbcrModelConversion> {
        use vk::SamplerYcbcrModelConversion as M;
        Ok(match self.matrix {
            0 if self.full_range => M::RGB_IDENTITY,
            0 => {
                return Err(Error::unsupported(
                    "matrix_coefficients 0 (identity: GBR) in narrow range has no \
                     VkSamplerYcbcrModelConversion: RGB_IDENTITY, the model of GBR, ignores \
                     ycbcrRange (VkSamplerYcbcrRange), and YCBCR_IDENTITY would expand B and R \
                     as chroma; describe GBR as full range, or expand the range in the shader",
                ))
            }
            1 | 2 => M::YCBCR_709,
            5 | 6 => M::YCBCR_601,
            9 => M::YCBCR_2020,
            m => {
                return Err(Error::unsupported(format!(
                    "matrix_coefficients {m} ({}) has no VkSamplerYcbcrModelConversion: Vulkan \
                     converts BT.709 (1), BT.601 (5, 6), BT.2020 non-constant luminance (9) and \
                     identity (0); convert this one in the shader",
                    match m {
                        4 => "FCC",
                        7 => "SMPTE 240M",
                        8 => "YCgCo",
                        10 => "BT.2020 constant luminance",
                        11 => "SMPTE 2085",
                        12 | 13 => "chromaticity-derived",
                        14 => "ICtCp",
                        _ => "reserved",
                    }
                )))
            }
        })
    }

    /// Refuses values that are not H.273 code points or chroma locations.
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("matrix_coefficients", self.matrix),
            ("transfer_characteristics", self.transfer),
            ("colour_primaries", self.primaries),
        ] {
            if v > 255 {
                return Err(Error::invalid(format!(
                    "{name} is {v}: ITU-T H.273 code points are 0 to 255"
                )));
            }
        }
        for (name, c) in [
            ("x_chroma_offset", self.x_chroma),
            ("y_chroma_offset", self.y_chroma),
        ] {
            if c != vk::ChromaLocation::COSITED_EVEN && c != vk::ChromaLocation::MIDPOINT {
                return Err(Error::invalid(format!(
                    "{name} is {}, not a VkChromaLocation (COSITED_EVEN 0, MIDPOINT 1)",
                    c.as_raw()
                )));
            }
        }
        self.model().map(|_| ())
    }
}

/// What `vkCreateSamplerYcbcrConversion` needs to sample a multi-planar image as
/// its [`VideoColor`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// The image's format.
    pub format: vk::Format,
    /// The colour model (from the matrix coefficients).
    pub model: vk::SamplerYcbcrModelConversion,
    /// Full or narrow range.
    pub range: vk::SamplerYcbcrRange,
    /// Where chroma samples sit horizontally.
    pub x_chroma: vk::ChromaLocation,
    /// Where chroma samples sit vertically.
    pub y_chroma: vk::ChromaLocation,
    /// LINEAR where the device can filter chroma linearly, else NEAREST.
    pub chroma_filter: vk::Filter,
}

impl Conversion {
    /// The `VkSamplerYcbcrConversionCreateInfo` for
    /// `vkCreateSamplerYcbcrConversion` (identity component mapping, no forced
    /// explicit reconstruction).
    pub fn create_info(&self) -> vk::SamplerYcbcrConversionCreateInfo<'static> {
        vk::SamplerYcbcrConversionCreateInfo::default()
            .format(self.format)
            .ycbcr_model(self.model)
            .ycbcr_range(self.range)
            .x_chroma_offset(self.x_chroma)
            .y_chroma_offset(self.y_chroma)
            .chroma_filter(self.chroma_filter)
    }
}

/// CUDA's import of a video frame's allocation, mapped whole at `base`: shared
/// with the DLPack tensors of its planes, which keep it (and so the memory) alive.
struct FrameMapping {
    _ext: ExternalMemory,
    base: u64,
    size: u64,
}

/// A shared video frame's planes, and CUDA's mapping of its one allocation.
struct Frame {
    planes: Vec<PlaneLayout>,
    cuda: Option<Arc<FrameMapping>>,
}

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
    /// Set for a shared video frame (LINEAR multi-planar).
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

    /// Reads where each plane of a video frame lies and checks that every plane
    /// fits its allocation (so no pointer handed out runs past it).
    fn lay_out_frame(&mut self) -> Result<()> {
        if !self.resolved.desc.linear {
            return Ok(());
        }
        let image = self.vk_image();
        let m = self.planes[0].memory;
        let mut planes = Vec::new();
        for p in 0..self.resolved.layout.plane_count() {
            let l = vkimage::subresource_layout(&self.ctx.vk, image, vkimage::plane_aspect(p));
            let f = self.resolved.layout.plane(p);
            let (w, h) = f.extent(self.resolved.desc.width, self.resolved.desc.height);
            let row = w as u64 * f.info.bytes_per_texel() as u64;
            let end = (l.row_pitch as u128) * (h.saturating_sub(1) as u128)
                + row as u128
                + l.offset as u128
                + m.offset as u128;
            if l.row_pitch < row || end > m.allocation_size as u128 {
                return Err(Error::unsupported(format!(
                    "plane {p} of this {} frame lies at offset {} with row pitch {} ({h} rows of \
                     {row} bytes): it does not fit the allocation of {} bytes",
                    self.resolved.layout.display(),
                    l.offset,
                    l.row_pitch,
                    m.allocation_size
                )));
            }
            planes.push(PlaneLayout {
                offset: m.offset + l.offset,
                row_pitch: l.row_pitch,
                size: l.size,
            });
        }
        self.frame = Some(Frame { planes, cuda: None });
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
            // One dedicated allocation, mapped whole: each plane is device memory at
            // its layout's offset.
            let m = self.planes[0].memory;
            let handle = handles.into_iter().next().expect("one fd for a frame");
            let mut ext =
                ExternalMemory::import_opaque_fd(cuda.clone(), handle, m.allocation_size, true)?;
            let base = ext.map_buffer(0, m.allocation_size)?;
            frame.cuda = Some(Arc::new(FrameMapping {
                _ext: ext,
                base,
                size: m.allocation_size,
            }));
            return Ok(());
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
    /// caller's: the drivers get duplicates.
    pub fn import_fd(
        ctx: &Arc<Context>,
        handles: &[BorrowedFd<'_>],
        desc: &Description,
        allocation_sizes: &[u64],
    ) -> Result<Image> {
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
        export_handle_types: u32,
        desc: &Description,
    ) -> Result<Image> {
        if image == vk::Image::null() {
            return Err(Error::null("image"));
        }
        memory::check_export_types(export_handle_types, "export_handle_types")?;
        let layout = format::layout(desc.format)?;
        check_plane_count(&layout, desc.linear, planes.len(), "memory allocations")?;
        let n = planes.len();
        if desc.linear
            && layout.planar().is_some()
            && !(planes[0].dedicated && planes[0].offset == 0)
        {
            return Err(Error::invalid(
                "a shared video frame (VKCUDA_IMAGE_CREATE_LINEAR_BIT) is one dedicated allocation: \
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

    /// Whether the image is a shared video frame (LINEAR multi-planar, one
    /// dedicated allocation, planes as pitched CUDA memory).
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

    /// Plane `p` of a shared video frame as pitched device memory: CUDA's pointer
    /// (0 in a Vulkan-only context), the offset and row pitch, the extent and the
    /// texel size. Refused for other images (their planes are CUDA arrays).
    pub fn plane_pointer(&self, p: usize) -> Result<PlanePointer> {
        self.check_plane(p)?;
        let Some(frame) = &self.frame else {
            return Err(Error::invalid(format!(
                "this {} image is not a shared video frame: its CUDA view is arrays \
                 (vkcuda_image_get_plane_cuda_array); a multi-planar image created with \
                 VKCUDA_IMAGE_CREATE_LINEAR_BIT has pitched planes",
                self.resolved.layout.display()
            )));
        };
        let layout = frame.planes[p];
        let f = self.resolved.layout.plane(p);
        let e = self.plane_extent(p);
        Ok(PlanePointer {
            pointer: frame.cuda.as_ref().map_or(0, |m| m.base + layout.offset),
            layout,
            width: e.width,
            height: e.height,
            bytes_per_texel: f.info.bytes_per_texel(),
            format: f.info.format,
        })
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
        let name = self.resolved.layout.display();
        let tiling = vkimage::tiling_name(d.tiling());
        if !features.contains(vk::FormatFeatureFlags::SAMPLED_IMAGE)
            || !d.usage.contains(vk::ImageUsageFlags::SAMPLED)
        {
            return Err(Error::unsupported(format!(
                "this {name} image cannot be sampled: {}",
                if d.usage.contains(vk::ImageUsageFlags::SAMPLED) {
                    format!("the device's {tiling}-tiling features lack SAMPLED_IMAGE")
                } else {
                    "it was created without VK_IMAGE_USAGE_SAMPLED_BIT".to_string()
                }
            )));
        }
        for (axis, loc) in [("x", c.x_chroma), ("y", c.y_chroma)] {
            let need = if loc == vk::ChromaLocation::MIDPOINT {
                vk::FormatFeatureFlags::MIDPOINT_CHROMA_SAMPLES
            } else {
                vk::FormatFeatureFlags::COSITED_CHROMA_SAMPLES
            };
            if !features.contains(need) {
                return Err(Error::unsupported(format!(
                    "the device cannot sample {name} ({tiling} tiling) with {axis} chroma at \
                     {loc:?}: its features lack {need:?}"
                )));
            }
        }
        let linear =
            features.contains(vk::FormatFeatureFlags::SAMPLED_IMAGE_YCBCR_CONVERSION_LINEAR_FILTER);
        Ok(Conversion {
            format: d.format,
            model: c.model()?,
            range: if c.full_range {
                vk::SamplerYcbcrRange::ITU_FULL
            } else {
                vk::SamplerYcbcrRange::ITU_NARROW
            },
            x_chroma: c.x_chroma,
            y_chroma: c.y_chroma,
            chroma_filter: if linear {
                vk::Filter::LINEAR
            } else {
                vk::Filter::NEAREST
            },
        })
    }

    /// Plane `p` of a shared video frame as a DLPack tensor on the context's CUDA
    /// device, zero-copy: uint8 or uint16 samples (10/12-bit in the high bits),
    /// shape (height, width) for one channel, (height, width, 2) for interleaved
    /// CbCr, strides in elements from the row pitch. The tensor keeps CUDA's mapping
    /// of the frame alive until its deleter runs (see [`Buffer::export_dlpack`](crate::Buffer::export_dlpack)).
    pub fn export_plane_dlpack(
        &self,
        p: usize,
        read_only: bool,
        legacy: bool,
    ) -> Result<crate::dlpack::Tensor> {
        let plane = self.plane_pointer(p)?;
        let Some(mapping) = self.frame.as_ref().and_then(|f| f.cuda.clone()) else {
            self.ctx.cuda()?;
            return Err(Error::invalid("the frame has no CUDA view"));
        };
        let f = self.resolved.layout.plane(p).info;
        let bytes = f.bytes_per_channel as u64;
        if plane.layout.row_pitch % bytes != 0 {
            return Err(Error::unsupported(format!(
                "plane {p}'s row pitch {} is not a whole number of {bytes}-byte samples: DLPack \
                 strides count elements",
                plane.layout.row_pitch
            )));
        }
        let row = (plane.layout.row_pitch / bytes) as i64;
        let (h, w, c) = (plane.height as i64, plane.width as i64, f.channels as i64);
        let (shape, strides): (Vec<i64>, Vec<i64>) = if c == 1 {
            (vec![h, w], vec![row, 1])
        } else {
            (vec![h, w, c], vec![row, c, 1])
        };
        let spec = crate::dlpack::Spec {
            dtype: crate::dlpack::DType {
                code: 1, // kDLUInt
                bits: (8 * bytes) as u8,
                lanes: 1,
            },
            shape: &shape,
            strides: Some(&strides),
            offset: plane.layout.offset,
            read_only,
            legacy,
        };
        let plan = spec.plan(mapping.size)?;
        let cuda = self.ctx.cuda()?;
        let base = mapping.base;
        crate::dlpack::export_plan(base, cuda, mapping, &plan)
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
    pub(super) fn handoff_range(&self, layout: vk::ImageLayout) -> ImageRange {
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
                "this {} image is a shared video frame: CUDA sees its planes as pitched device \
                 memory (vkcuda_image_get_plane_pointer), not as arrays, surfaces or textures",
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
            linear: false,
        }
    }

    #[test]
    fn video_colors_map_to_vulkan_models_or_say_why_not() {
        use vk::SamplerYcbcrModelConversion as M;
        let with = |matrix| VideoColor {
            matrix,
            ..VideoColor::DEFAULT
        };
        // Identity (GBR) samples each plane as it is: RGB_IDENTITY, never
        // YCBCR_IDENTITY (which shifts B and R by one half); full range only.
        let gbr = VideoColor {
            matrix: 0,
            full_range: true,
            ..VideoColor::DEFAULT
        };
        assert_eq!(gbr.model().unwrap(), M::RGB_IDENTITY);
        gbr.check().unwrap();
        let e = with(0).check().unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported);
        assert!(e.message.contains("narrow range"), "{}", e.message);
        for (m, want) in [
            (1, M::YCBCR_709),
            (2, M::YCBCR_709),
            (5, M::YCBCR_601),
            (6, M::YCBCR_601),
            (9, M::YCBCR_2020),
        ] {
            assert_eq!(with(m).model().unwrap(), want, "{m}");
            with(m).check().unwrap();
        }
        for (m, name) in [
            (4, "FCC"),
            (8, "YCgCo"),
            (10, "constant luminance"),
            (14, "ICtCp"),
        ] {
            let e = with(m).check().unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Unsupported);
            assert!(e.message.contains(name), "{}", e.message);
        }
        let e = VideoColor {
            transfer: 256,
            ..VideoColor::DEFAULT
        }
        .check()
        .unwrap_err();
        assert!(
            e.message.contains("transfer_characteristics is 256"),
            "{}",
            e.message
        );
        let e = VideoColor {
            y_chroma: vk::ChromaLocation::from_raw(7),
            ..VideoColor::DEFAULT
        }
        .check()
        .unwrap_err();
        assert!(e.message.contains("y_chroma_offset is 7"), "{}", e.message);
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
        let f = format::layout(vk::Format::R8G8B8A8_UNORM).unwrap();
        let shape_of = |d: &Description, f: &Layout| super::shape_of(d, f, 0);
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

    #[test]
    fn planar_images_have_one_shape_per_plane() {
        let nv12 = format::layout(vk::Format::G8_B8R8_2PLANE_420_UNORM).unwrap();
        let mut d = d2(1920, 1080);
        d.format = vk::Format::G8_B8R8_2PLANE_420_UNORM;
        let mut d = check_shape(&d).unwrap();
        check_planar_shape(&d, &nv12).unwrap();
        d.usage = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED;
        let y = shape_of(&d, &nv12, 0);
        let c = shape_of(&d, &nv12, 1);
        assert_eq!((y.width, y.height, y.depth, y.channels), (1920, 1080, 0, 1));
        assert_eq!((c.width, c.height, c.depth, c.channels), (960, 540, 0, 2));
        // The measured construction: surfaces without STORAGE usage.
        assert_eq!(y.flags, sys::CUDA_ARRAY3D_SURFACE_LDST);
        assert_eq!(c.flags, sys::CUDA_ARRAY3D_SURFACE_LDST);
        assert_eq!((y.levels, c.levels), (1, 1));
        assert_eq!(y.format, sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8);
        let p = params_of(&d, &nv12);
        assert!(p.flags.contains(vk::ImageCreateFlags::DISJOINT));
        let single = format::layout(vk::Format::R8_UNORM).unwrap();
        assert!(!params_of(&d, &single)
            .flags
            .contains(vk::ImageCreateFlags::DISJOINT));
        let i420 = format::layout(vk::Format::G8_B8_R8_3PLANE_420_UNORM).unwrap();
        let v = shape_of(&d, &i420, 2);
        assert_eq!((v.width, v.height, v.channels), (960, 540, 1));
    }

    #[test]
    fn planar_shapes_are_2d_single_level_single_layer_and_even() {
        let nv12 = format::layout(vk::Format::G8_B8R8_2PLANE_420_UNORM).unwrap();
        let base = {
            let mut d = d2(64, 32);
            d.format = vk::Format::G8_B8R8_2PLANE_420_UNORM;
            d
        };
        let check = |d: Description| check_planar_shape(&check_shape(&d).unwrap(), &nv12);
        check(base).unwrap();
        let mut levels = base;
        levels.mip_levels = 2;
        assert!(check(levels)
            .unwrap_err()
            .message
            .contains("1 mip level, not 2"));
        let mut layers = base;
        layers.array_layers = 2;
        assert!(check(layers).unwrap_err().message.contains("1 array layer"));
        let mut one = base;
        one.dimension = Dimension::D1;
        one.height = 1;
        assert!(check(one).unwrap_err().message.contains("are 2D, not 1D"));
        let mut odd = base;
        odd.width = 63;
        let e = check(odd).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::InvalidArgument);
        assert!(
            e.message.contains("must be even, not 63x32"),
            "{}",
            e.message
        );
    }
}
