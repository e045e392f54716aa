//! What an image is ([`Description`]) and its resolution against the format
//! table and the device: the shape checked and its defaults filled in, the usage
//! chosen, what `vkCreateImage` and CUDA are told ([`Resolved`]).

use ash::vk;
use cudarc::driver::sys;

use crate::context::Context;
use crate::cuda::array::ArrayShape;
use crate::error::{Error, Result};
use crate::format::{self, Layout};
use crate::vulkan::image::{FormatSupport, ImageParams};

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
/// [`Image::description`](crate::Image::description) has the defaults filled in.
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
    /// LINEAR tiling: a shared frame (a video frame of a multi-planar format, or
    /// one plane of a single-plane colour format; 2D, one level, one layer, not
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

    /// OPTIMAL, or LINEAR for a shared frame.
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

/// The usage of [`Image::create`](crate::Image::create) when none is given:
/// transfers, plus sampled and storage where the format and device allow them for
/// exportable images.
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

pub(super) fn check_layers_agree(d: &Description) -> Result<()> {
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
/// cube), and the extent its chroma subsampling divides; a linear single-plane
/// image (a shared frame) has the same shape.
pub(crate) fn check_planar_shape(d: &Description, layout: &Layout) -> Result<()> {
    if layout.planar().is_none() && !d.linear {
        return Ok(());
    }
    let name = layout.display();
    // A linear single-plane image (a shared frame) has the shape of a video frame.
    let kind = if layout.planar().is_some() {
        format!("{name} is multi-planar: images of it")
    } else {
        format!("a linear {name} image (VKCUDA_IMAGE_CREATE_LINEAR_BIT: a shared frame)")
    };
    if d.dimension != Dimension::D2 {
        return Err(Error::invalid(format!(
            "{kind} are 2D, not {}",
            match d.dimension {
                Dimension::D1 => "1D",
                _ => "3D",
            }
        )));
    }
    if d.mip_levels != 1 {
        return Err(Error::invalid(format!(
            "{kind} have 1 mip level, not {}",
            d.mip_levels
        )));
    }
    if d.array_layers != 1 || d.cube {
        return Err(Error::invalid(format!(
            "{kind} have 1 array layer and are not cube compatible (asked: {} layers{}); \
             use one image per layer",
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
/// tiling: a disjoint image; `support` is of optimal tiling then).
fn check_disjoint(support: &FormatSupport, d: &Description, layout: &Layout) -> Result<()> {
    if layout.planar().is_none() || d.linear {
        return Ok(());
    }
    let features = support.features;
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

/// The usages an image made with the default usage may get, in order: transfers
/// with sampled and storage, without storage, then transfers alone (each less what
/// the format's features lack): the first the device can export wins.
const DEFAULT_CANDIDATES: [vk::ImageUsageFlags; 3] = [
    DEFAULT_USAGE,
    vk::ImageUsageFlags::from_raw(DEFAULT_USAGE.as_raw() & !vk::ImageUsageFlags::STORAGE.as_raw()),
    vk::ImageUsageFlags::from_raw(
        DEFAULT_USAGE.as_raw()
            & !(vk::ImageUsageFlags::STORAGE.as_raw() | vk::ImageUsageFlags::SAMPLED.as_raw()),
    ),
];

/// Checks a description against the format table and the device and fills in the
/// defaults. `explicit_usage`: the usage must be given (wrapping an engine image,
/// whose usage is what it is). In a context with CUDA, a format whose CUDA view is
/// not verified is refused first ([`format::check_cuda_view`]). The device is
/// asked once, for a [`FormatSupport`] snapshot of the format with the
/// description's tiling and the usages the image may get; every check reads it.
pub(crate) fn resolve(ctx: &Context, desc: &Description, explicit_usage: bool) -> Result<Resolved> {
    let layout = format::layout_of(desc.format, desc.linear)?;
    if ctx.cuda.is_some() {
        format::check_cuda_view(&layout, desc.linear)?;
    }
    let mut d = check_shape(desc)?;
    check_planar_shape(&d, &layout)?;
    check_usage_bits(d.usage)?;
    let default_usage = d.usage.is_empty();
    if default_usage && explicit_usage {
        return Err(Error::invalid(
            "usage is 0: pass the VkImageUsageFlags the image was created with",
        ));
    }
    let given = [d.usage];
    let candidates: &[vk::ImageUsageFlags] = if default_usage {
        &DEFAULT_CANDIDATES
    } else {
        &given
    };
    let support = FormatSupport::query(&ctx.vk, &params_of(&d, &layout), candidates);
    if default_usage {
        // The default: transfers (which the format must support), plus sampled and
        // storage where the format has them, dropping storage (then sampling) where
        // the device cannot export such images.
        support
            .check_usage(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)?;
        check_disjoint(&support, &d, &layout)?;
        let mut last = None;
        for &usage in candidates {
            d.usage = support.usable(usage);
            match support.check_exportable(d.usage) {
                Ok(()) => {
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
        support.check_usage(d.usage)?;
        check_disjoint(&support, &d, &layout)?;
        support.check_exportable(d.usage)?;
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
