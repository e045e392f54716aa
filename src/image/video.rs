//! Shared frames (LINEAR images: video frames of multi-planar formats, or one
//! plane of a single-plane colour format; one dedicated allocation, each plane
//! pitched memory at its `vkGetImageSubresourceLayout` offset) and the
//! colour of multi-planar images ([`VideoColor`], and the
//! `VkSamplerYcbcrConversion` it makes: [`Conversion`]).

use std::os::fd::OwnedFd;
use std::sync::Arc;

use ash::vk;

use super::description::{Description, Resolved};
use crate::context::Context;
use crate::cuda::external::ExternalMemory;
use crate::cuda::CudaContext;
use crate::error::{Error, Result};
use crate::format::{FormatInfo, Numeric, PlaneFormat};
use crate::vulkan::image::{self as vkimage, PlaneMemory};
use crate::vulkan::VulkanDevice;

/// Where one plane of a shared frame lies in its allocation
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

/// One plane of a shared frame (a video frame's plane, or a linear single-plane
/// image's only one) as CUDA sees it: pitched device memory.
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
    /// 1 or 2 (one sample), 2 or 4 (interleaved CbCr); a linear single-plane
    /// image's texel size (4 for RGBA8, 8 for RGBA16F, ...).
    pub bytes_per_texel: u32,
    /// The plane's single-plane format (R8, R8G8, R10X6, ...; the image's own
    /// format for a linear single-plane image).
    pub format: vk::Format,
}

/// How a multi-planar image's samples are read as colour: ITU-T H.273 code points,
/// as NVDEC's `CUVIDEOFORMAT::video_signal_description` and the bitstreams' VUI
/// carry them, and where chroma sits. The matrix and range drive Vulkan's
/// `VkSamplerYcbcrConversion`
/// ([`Image::ycbcr_conversion`](crate::Image::ycbcr_conversion)); the transfer
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
    /// The conversion that samples an image of `d` (`name`: its format for
    /// messages) as `c` says, checked against the format's `features` with the
    /// image's tiling: the chroma siting must be one the device can sample, chroma
    /// is filtered linearly where the device can.
    pub(super) fn of(
        c: &VideoColor,
        d: &Description,
        name: &str,
        features: vk::FormatFeatureFlags,
    ) -> Result<Conversion> {
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
pub(super) struct FrameMapping {
    _ext: ExternalMemory,
    base: u64,
    size: u64,
}

/// A shared video frame's planes, and CUDA's mapping of its one allocation.
pub(super) struct Frame {
    planes: Vec<PlaneLayout>,
    cuda: Option<Arc<FrameMapping>>,
}

impl Frame {
    /// Reads where each plane of a video frame (`image`, of `r`, in allocation
    /// `m`) lies and checks that every plane fits the allocation (so no pointer
    /// handed out runs past it).
    pub(super) fn lay_out(
        dev: &VulkanDevice,
        image: vk::Image,
        r: &Resolved,
        m: PlaneMemory,
    ) -> Result<Frame> {
        let mut planes = Vec::new();
        for p in 0..r.layout.plane_count() {
            let aspect = if r.layout.planar().is_some() {
                vkimage::plane_aspect(p)
            } else {
                vk::ImageAspectFlags::COLOR
            };
            let l = vkimage::subresource_layout(dev, image, aspect);
            let f = r.layout.plane(p);
            let (w, h) = f.extent(r.desc.width, r.desc.height);
            let row = w as u64 * f.info.bytes_per_texel() as u64;
            let end = (l.row_pitch as u128) * (h.saturating_sub(1) as u128)
                + row as u128
                + l.offset as u128
                + m.offset as u128;
            if l.row_pitch < row || end > m.allocation_size as u128 {
                return Err(Error::unsupported(format!(
                    "plane {p} of this {} frame lies at offset {} with row pitch {} ({h} rows of \
                     {row} bytes): it does not fit the allocation of {} bytes",
                    r.layout.display(),
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
        Ok(Frame { planes, cuda: None })
    }

    /// Imports the frame's one dedicated allocation `m` (`handle`, consumed) into
    /// CUDA and maps it whole: each plane is device memory at its layout's offset.
    pub(super) fn import_cuda(
        &mut self,
        cuda: &Arc<CudaContext>,
        handle: OwnedFd,
        m: PlaneMemory,
    ) -> Result<()> {
        let mut ext =
            ExternalMemory::import_opaque_fd(cuda.clone(), handle, m.allocation_size, true)?;
        let base = ext.map_buffer(0, m.allocation_size)?;
        self.cuda = Some(Arc::new(FrameMapping {
            _ext: ext,
            base,
            size: m.allocation_size,
        }));
        Ok(())
    }

    /// Plane `p` (< the plane count) as pitched device memory, with its extent.
    pub(super) fn plane_pointer(
        &self,
        p: usize,
        f: &PlaneFormat,
        extent: vk::Extent3D,
    ) -> PlanePointer {
        let layout = self.planes[p];
        PlanePointer {
            pointer: self.cuda.as_ref().map_or(0, |m| m.base + layout.offset),
            layout,
            width: extent.width,
            height: extent.height,
            bytes_per_texel: f.info.bytes_per_texel(),
            format: f.info.format,
        }
    }

    /// Plane `plane` (its pointer, `f` its format) as a DLPack tensor on `ctx`'s
    /// CUDA device, holding CUDA's mapping of the frame.
    pub(super) fn export_plane_dlpack(
        &self,
        ctx: &Context,
        p: usize,
        plane: PlanePointer,
        f: FormatInfo,
        read_only: bool,
        legacy: bool,
    ) -> Result<crate::dlpack::Tensor> {
        let Some(mapping) = self.cuda.clone() else {
            ctx.cuda()?;
            return Err(Error::invalid("the frame has no CUDA view"));
        };
        let bytes = f.bytes_per_channel as u64;
        // kDLInt, kDLUInt, kDLFloat.
        let code = match f.numeric {
            Numeric::Sfloat => 2,
            Numeric::Snorm | Numeric::Sint => 0,
            _ => 1,
        };
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
                code,
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
        let cuda = ctx.cuda()?;
        let base = mapping.base;
        crate::dlpack::export_plan(base, cuda, mapping, &plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
