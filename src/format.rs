//! The format table: which `VkFormat`s a CUDA array can hold, as which
//! `CUarray_format` and channel count, and why the others cannot.
//!
//! CUDA arrays hold 1, 2 or 4 channels of 8, 16 or 32 bits each, as unsigned or
//! signed integers, half or single floats. The table maps every Vulkan format with
//! that memory layout; normalized formats (UNORM/SNORM) map to the integer format
//! of their width (a texture with the normalized-float read mode returns them as
//! floats, a surface reads the raw integers). Two layouts need care:
//! - **sRGB** formats are accepted: CUDA sees the raw encoded bytes (no sRGB
//!   decode on reads, no encode on writes), exactly what Vulkan stores.
//! - **BGRA** formats (`B8G8R8A8_*`) are accepted: CUDA sees the bytes in memory
//!   order, so its channel x is blue, y green, z red, w alpha.
//!
//! Everything else (3 channels, packed, 64-bit, scaled, block-compressed,
//! depth/stencil, packed 4:2:2 YCbCr) is refused with `Unsupported` and a message
//! that names the format and a supported neighbour; a linear single-plane image
//! (pitched memory, no CUDA array) also takes the packed 10-bit formats of
//! [`LINEAR_ONLY`] ([`layout_of`]).
//!
//! Multi-planar (YCbCr) formats are a second table, [`PLANAR`]: each plane is a
//! 1- or 2-channel plane of 8- or 16-bit samples. With CUDA they are shared as
//! video frames (LINEAR tiling, one dedicated allocation, each plane pitched device
//! memory), and one `verified` flag per format decides whether that view is made
//! ([`check_cuda_view`]).
//! [`layout`] gives either kind as planes (a single-plane format is one plane).

use ash::vk;
use cudarc::driver::sys::CUarray_format;

use crate::error::{Error, Result};

/// How the bits of a channel are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Numeric {
    /// Unsigned normalized: integer `n` means `n / (2^bits - 1)`.
    Unorm,
    /// Signed normalized: integer `n` means `max(n / (2^(bits-1) - 1), -1)`.
    Snorm,
    /// Unsigned integer.
    Uint,
    /// Signed integer.
    Sint,
    /// IEEE half (16 bits) or single (32 bits) float.
    Sfloat,
    /// 8-bit sRGB-encoded colour (alpha linear); CUDA sees the encoded bytes.
    Srgb,
}

/// The order of the channels in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// R, G, B, A (or fewer).
    Rgba,
    /// B, G, R, A: CUDA's x is blue.
    Bgra,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatInfo {
    /// The Vulkan format.
    pub format: vk::Format,
    /// The CUDA array format of the same texels.
    pub cuda: CUarray_format,
    /// 1, 2 or 4.
    pub channels: u32,
    /// 1, 2 or 4.
    pub bytes_per_channel: u32,
    /// How the channels are read.
    pub numeric: Numeric,
    /// The order of the channels in memory.
    pub order: Order,
}

impl FormatInfo {
    /// Bytes per texel: channels times bytes per channel.
    pub fn bytes_per_texel(&self) -> u32 {
        self.channels * self.bytes_per_channel
    }

    /// 8- and 16-bit integer storage (UNORM/SNORM/UINT/SINT/SRGB): the formats a
    /// texture may return as normalized floats.
    pub fn is_small_integer(&self) -> bool {
        self.numeric != Numeric::Sfloat && self.bytes_per_channel <= 2
    }

    /// Whether the channels are floats (`Sfloat`).
    pub fn is_float(&self) -> bool {
        self.numeric == Numeric::Sfloat
    }
}

use CUarray_format::*;
use Numeric::*;
use Order::*;

const fn row(
    format: vk::Format,
    cuda: CUarray_format,
    channels: u32,
    bytes_per_channel: u32,
    numeric: Numeric,
    order: Order,
) -> FormatInfo {
    FormatInfo {
        format,
        cuda,
        channels,
        bytes_per_channel,
        numeric,
        order,
    }
}

/// Every format a CUDA array can hold.
pub const TABLE: &[FormatInfo] = &[
    // 8 bits per channel
    row(
        vk::Format::R8_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT8,
        1,
        1,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R8_SNORM,
        CU_AD_FORMAT_SIGNED_INT8,
        1,
        1,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R8_UINT,
        CU_AD_FORMAT_UNSIGNED_INT8,
        1,
        1,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R8_SINT,
        CU_AD_FORMAT_SIGNED_INT8,
        1,
        1,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R8_SRGB,
        CU_AD_FORMAT_UNSIGNED_INT8,
        1,
        1,
        Srgb,
        Rgba,
    ),
    row(
        vk::Format::R8G8_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT8,
        2,
        1,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R8G8_SNORM,
        CU_AD_FORMAT_SIGNED_INT8,
        2,
        1,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R8G8_UINT,
        CU_AD_FORMAT_UNSIGNED_INT8,
        2,
        1,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R8G8_SINT,
        CU_AD_FORMAT_SIGNED_INT8,
        2,
        1,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R8G8_SRGB,
        CU_AD_FORMAT_UNSIGNED_INT8,
        2,
        1,
        Srgb,
        Rgba,
    ),
    row(
        vk::Format::R8G8B8A8_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R8G8B8A8_SNORM,
        CU_AD_FORMAT_SIGNED_INT8,
        4,
        1,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R8G8B8A8_UINT,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R8G8B8A8_SINT,
        CU_AD_FORMAT_SIGNED_INT8,
        4,
        1,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R8G8B8A8_SRGB,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Srgb,
        Rgba,
    ),
    row(
        vk::Format::B8G8R8A8_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Unorm,
        Bgra,
    ),
    row(
        vk::Format::B8G8R8A8_SNORM,
        CU_AD_FORMAT_SIGNED_INT8,
        4,
        1,
        Snorm,
        Bgra,
    ),
    row(
        vk::Format::B8G8R8A8_UINT,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Uint,
        Bgra,
    ),
    row(
        vk::Format::B8G8R8A8_SINT,
        CU_AD_FORMAT_SIGNED_INT8,
        4,
        1,
        Sint,
        Bgra,
    ),
    row(
        vk::Format::B8G8R8A8_SRGB,
        CU_AD_FORMAT_UNSIGNED_INT8,
        4,
        1,
        Srgb,
        Bgra,
    ),
    // 16 bits per channel
    row(
        vk::Format::R16_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT16,
        1,
        2,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R16_SNORM,
        CU_AD_FORMAT_SIGNED_INT16,
        1,
        2,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R16_UINT,
        CU_AD_FORMAT_UNSIGNED_INT16,
        1,
        2,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R16_SINT,
        CU_AD_FORMAT_SIGNED_INT16,
        1,
        2,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R16_SFLOAT,
        CU_AD_FORMAT_HALF,
        1,
        2,
        Sfloat,
        Rgba,
    ),
    row(
        vk::Format::R16G16_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT16,
        2,
        2,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R16G16_SNORM,
        CU_AD_FORMAT_SIGNED_INT16,
        2,
        2,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R16G16_UINT,
        CU_AD_FORMAT_UNSIGNED_INT16,
        2,
        2,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R16G16_SINT,
        CU_AD_FORMAT_SIGNED_INT16,
        2,
        2,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R16G16_SFLOAT,
        CU_AD_FORMAT_HALF,
        2,
        2,
        Sfloat,
        Rgba,
    ),
    row(
        vk::Format::R16G16B16A16_UNORM,
        CU_AD_FORMAT_UNSIGNED_INT16,
        4,
        2,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::R16G16B16A16_SNORM,
        CU_AD_FORMAT_SIGNED_INT16,
        4,
        2,
        Snorm,
        Rgba,
    ),
    row(
        vk::Format::R16G16B16A16_UINT,
        CU_AD_FORMAT_UNSIGNED_INT16,
        4,
        2,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R16G16B16A16_SINT,
        CU_AD_FORMAT_SIGNED_INT16,
        4,
        2,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R16G16B16A16_SFLOAT,
        CU_AD_FORMAT_HALF,
        4,
        2,
        Sfloat,
        Rgba,
    ),
    // 32 bits per channel
    row(
        vk::Format::R32_UINT,
        CU_AD_FORMAT_UNSIGNED_INT32,
        1,
        4,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R32_SINT,
        CU_AD_FORMAT_SIGNED_INT32,
        1,
        4,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R32_SFLOAT,
        CU_AD_FORMAT_FLOAT,
        1,
        4,
        Sfloat,
        Rgba,
    ),
    row(
        vk::Format::R32G32_UINT,
        CU_AD_FORMAT_UNSIGNED_INT32,
        2,
        4,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R32G32_SINT,
        CU_AD_FORMAT_SIGNED_INT32,
        2,
        4,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R32G32_SFLOAT,
        CU_AD_FORMAT_FLOAT,
        2,
        4,
        Sfloat,
        Rgba,
    ),
    row(
        vk::Format::R32G32B32A32_UINT,
        CU_AD_FORMAT_UNSIGNED_INT32,
        4,
        4,
        Uint,
        Rgba,
    ),
    row(
        vk::Format::R32G32B32A32_SINT,
        CU_AD_FORMAT_SIGNED_INT32,
        4,
        4,
        Sint,
        Rgba,
    ),
    row(
        vk::Format::R32G32B32A32_SFLOAT,
        CU_AD_FORMAT_FLOAT,
        4,
        4,
        Sfloat,
        Rgba,
    ),
];

// ---------------------------------------------------------------------------------
// Multi-planar (YCbCr) formats: each plane is its own CUDA array.

/// One plane of a format: what CUDA sees of it (`info`: the Vulkan format of the
/// plane, its CUDA array format and channels) and its size relative to the image
/// (the image's width and height divided by `width_divisor` and `height_divisor`).
/// A single-plane format is one plane with divisors 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneFormat {
    /// The plane's texel format.
    pub info: FormatInfo,
    /// The image's width divided by this is the plane's.
    pub width_divisor: u32,
    /// The image's height divided by this is the plane's.
    pub height_divisor: u32,
}

impl PlaneFormat {
    /// The plane's extent for an image of `width` x `height` (which the divisors
    /// divide: see [`check_extent`]).
    pub fn extent(&self, width: u32, height: u32) -> (u32, u32) {
        (width / self.width_divisor, height / self.height_divisor)
    }
}

/// How a multi-planar format is shared: its planes and the construction that was
/// measured on NVIDIA's driver. Every parameter of the construction is here, so
/// that a format is changed or enabled in this table alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanarFormat {
    /// The Vulkan format.
    pub format: vk::Format,
    /// The name video code uses (NV12, P010, I420, ...).
    pub name: &'static str,
    /// Bits per sample (8, 10, 12 or 16; 10- and 12-bit samples sit in the high
    /// bits of 16-bit words, the low bits zero).
    pub bits: u32,
    /// Plane 0 is luma (Y); 2-plane formats have CbCr interleaved in plane 1 (Cb
    /// first: CUDA's x), 3-plane formats Cb in plane 1 and Cr in plane 2.
    pub planes: &'static [PlaneFormat],
    /// The `CUDA_ARRAY3D_*` flags of every plane's array. Measured on the H200
    /// (driver 580.159.04): NV12 planes mapped with `CUDA_ARRAY3D_SURFACE_LDST` read
    /// and write every texel right through surfaces with the image's usage
    /// transfer + sampled, without STORAGE.
    pub cuda_array_flags: u32,
    /// Whether CUDA's view of a shared video frame of this format (LINEAR tiling,
    /// one dedicated allocation, each plane at `vkGetImageSubresourceLayout`'s
    /// offset and row pitch) was verified byte for byte in both directions, with
    /// compressible and random data, on NVIDIA's driver. THE one place that
    /// decides: a CUDA view of an unverified format is refused
    /// ([`check_cuda_view`]) with `unverified_why`; Vulkan-only contexts make such
    /// images (no CUDA view can read wrong there).
    pub verified: bool,
    /// What was measured when `verified` is false.
    pub unverified_why: &'static str,
}

impl PlanarFormat {
    /// The chroma subsampling: (horizontal, vertical) divisors of planes 1 and 2.
    pub fn chroma_divisors(&self) -> (u32, u32) {
        (self.planes[1].width_divisor, self.planes[1].height_divisor)
    }

    /// "4:2:0", "4:2:2" or "4:4:4".
    pub fn subsampling(&self) -> &'static str {
        match self.chroma_divisors() {
            (2, 2) => "4:2:0",
            (2, 1) => "4:2:2",
            _ => "4:4:4",
        }
    }
}

const fn plane(
    format: vk::Format,
    cuda: CUarray_format,
    channels: u32,
    bytes_per_channel: u32,
    width_divisor: u32,
    height_divisor: u32,
) -> PlaneFormat {
    PlaneFormat {
        info: row(format, cuda, channels, bytes_per_channel, Unorm, Rgba),
        width_divisor,
        height_divisor,
    }
}

/// Luma and interleaved CbCr of `bits`-bit samples, chroma divided by (x, y).
const fn two_planes(bits: u32, x: u32, y: u32) -> [PlaneFormat; 2] {
    let (one, two, cuda, bytes) = plane_formats(bits);
    [
        plane(one, cuda, 1, bytes, 1, 1),
        plane(two, cuda, 2, bytes, x, y),
    ]
}

/// Luma, Cb and Cr planes of `bits`-bit samples, chroma divided by (x, y).
const fn three_planes(bits: u32, x: u32, y: u32) -> [PlaneFormat; 3] {
    let (one, _, cuda, bytes) = plane_formats(bits);
    [
        plane(one, cuda, 1, bytes, 1, 1),
        plane(one, cuda, 1, bytes, x, y),
        plane(one, cuda, 1, bytes, x, y),
    ]
}

/// The Vulkan formats of a 1- and a 2-channel plane of `bits`-bit samples (the
/// formats Vulkan names as compatible with the planes), their CUDA array format
/// and bytes per channel.
const fn plane_formats(bits: u32) -> (vk::Format, vk::Format, CUarray_format, u32) {
    match bits {
        8 => (
            vk::Format::R8_UNORM,
            vk::Format::R8G8_UNORM,
            CU_AD_FORMAT_UNSIGNED_INT8,
            1,
        ),
        10 => (
            vk::Format::R10X6_UNORM_PACK16,
            vk::Format::R10X6G10X6_UNORM_2PACK16,
            CU_AD_FORMAT_UNSIGNED_INT16,
            2,
        ),
        12 => (
            vk::Format::R12X4_UNORM_PACK16,
            vk::Format::R12X4G12X4_UNORM_2PACK16,
            CU_AD_FORMAT_UNSIGNED_INT16,
            2,
        ),
        _ => (
            vk::Format::R16_UNORM,
            vk::Format::R16G16_UNORM,
            CU_AD_FORMAT_UNSIGNED_INT16,
            2,
        ),
    }
}

const P2_420_8: [PlaneFormat; 2] = two_planes(8, 2, 2);
const P2_422_8: [PlaneFormat; 2] = two_planes(8, 2, 1);
const P2_444_8: [PlaneFormat; 2] = two_planes(8, 1, 1);
const P3_420_8: [PlaneFormat; 3] = three_planes(8, 2, 2);
const P3_422_8: [PlaneFormat; 3] = three_planes(8, 2, 1);
const P3_444_8: [PlaneFormat; 3] = three_planes(8, 1, 1);
const P2_420_10: [PlaneFormat; 2] = two_planes(10, 2, 2);
const P2_422_10: [PlaneFormat; 2] = two_planes(10, 2, 1);
const P2_444_10: [PlaneFormat; 2] = two_planes(10, 1, 1);
const P3_420_10: [PlaneFormat; 3] = three_planes(10, 2, 2);
const P3_422_10: [PlaneFormat; 3] = three_planes(10, 2, 1);
const P3_444_10: [PlaneFormat; 3] = three_planes(10, 1, 1);
const P2_420_12: [PlaneFormat; 2] = two_planes(12, 2, 2);
const P2_422_12: [PlaneFormat; 2] = two_planes(12, 2, 1);
const P2_444_12: [PlaneFormat; 2] = two_planes(12, 1, 1);
const P3_420_12: [PlaneFormat; 3] = three_planes(12, 2, 2);
const P3_422_12: [PlaneFormat; 3] = three_planes(12, 2, 1);
const P3_444_12: [PlaneFormat; 3] = three_planes(12, 1, 1);
const P2_420_16: [PlaneFormat; 2] = two_planes(16, 2, 2);
const P2_422_16: [PlaneFormat; 2] = two_planes(16, 2, 1);
const P2_444_16: [PlaneFormat; 2] = two_planes(16, 1, 1);
const P3_420_16: [PlaneFormat; 3] = three_planes(16, 2, 2);
const P3_422_16: [PlaneFormat; 3] = three_planes(16, 2, 1);
const P3_444_16: [PlaneFormat; 3] = three_planes(16, 1, 1);

const fn planar(
    format: vk::Format,
    name: &'static str,
    bits: u32,
    planes: &'static [PlaneFormat],
    verified: bool,
) -> PlanarFormat {
    PlanarFormat {
        format,
        name,
        bits,
        planes,
        cuda_array_flags: cudarc::driver::sys::CUDA_ARRAY3D_SURFACE_LDST,
        verified,
        unverified_why: "",
    }
}

/// Every multi-planar format the library knows. With CUDA each is shared as a
/// video frame: LINEAR tiling, not disjoint, one dedicated exportable allocation
/// imported into CUDA with `CUDA_EXTERNAL_MEMORY_DEDICATED` and mapped whole
/// (`cuExternalMemoryGetMappedBuffer`), each plane at its
/// `vkGetImageSubresourceLayout(PLANE_i)` offset and row pitch. A format is
/// `verified: true` after `tests/video.rs`'s harness (`gpu_frames_read_back_both_ways`:
/// ramp and random bytes, CUDA to Vulkan and back, at 64x64, 1920x1080, 3840x2160
/// and 1282x722) passed on the H200 (driver 580.159.04, CUDA 13.0); see
/// docs/GUIDE.md, "Video frames", for the run.
///
/// OPTIMAL tiling stays refused with CUDA for every format ([`check_cuda_view`]):
/// on the H200 CUDA arrays over the planes of a disjoint image read a smooth frame
/// 99 % wrong (random bytes right), a `CU_AD_FORMAT_NV12` array over a dedicated
/// non-disjoint image faults the context on its first copy, P010/P016 arrays are
/// refused, and per-plane arrays at non-zero offsets are refused.
pub const PLANAR: &[PlanarFormat] = &[
    planar(
        vk::Format::G8_B8R8_2PLANE_420_UNORM,
        "NV12",
        8,
        &P2_420_8,
        true,
    ),
    planar(
        vk::Format::G8_B8R8_2PLANE_422_UNORM,
        "NV16",
        8,
        &P2_422_8,
        true,
    ),
    planar(
        vk::Format::G8_B8R8_2PLANE_444_UNORM,
        "NV24",
        8,
        &P2_444_8,
        true,
    ),
    planar(
        vk::Format::G8_B8_R8_3PLANE_420_UNORM,
        "I420",
        8,
        &P3_420_8,
        true,
    ),
    planar(
        vk::Format::G8_B8_R8_3PLANE_422_UNORM,
        "I422",
        8,
        &P3_422_8,
        true,
    ),
    planar(
        vk::Format::G8_B8_R8_3PLANE_444_UNORM,
        "I444",
        8,
        &P3_444_8,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16,
        "P010",
        10,
        &P2_420_10,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6R10X6_2PLANE_422_UNORM_3PACK16,
        "P210",
        10,
        &P2_422_10,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6R10X6_2PLANE_444_UNORM_3PACK16,
        "P410",
        10,
        &P2_444_10,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6_R10X6_3PLANE_420_UNORM_3PACK16,
        "I010",
        10,
        &P3_420_10,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6_R10X6_3PLANE_422_UNORM_3PACK16,
        "I210",
        10,
        &P3_422_10,
        true,
    ),
    planar(
        vk::Format::G10X6_B10X6_R10X6_3PLANE_444_UNORM_3PACK16,
        "I410",
        10,
        &P3_444_10,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16,
        "P012",
        12,
        &P2_420_12,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4R12X4_2PLANE_422_UNORM_3PACK16,
        "P212",
        12,
        &P2_422_12,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4R12X4_2PLANE_444_UNORM_3PACK16,
        "P412",
        12,
        &P2_444_12,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4_R12X4_3PLANE_420_UNORM_3PACK16,
        "I012",
        12,
        &P3_420_12,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4_R12X4_3PLANE_422_UNORM_3PACK16,
        "I212",
        12,
        &P3_422_12,
        true,
    ),
    planar(
        vk::Format::G12X4_B12X4_R12X4_3PLANE_444_UNORM_3PACK16,
        "I412",
        12,
        &P3_444_12,
        true,
    ),
    planar(
        vk::Format::G16_B16R16_2PLANE_420_UNORM,
        "P016",
        16,
        &P2_420_16,
        true,
    ),
    planar(
        vk::Format::G16_B16R16_2PLANE_422_UNORM,
        "P216",
        16,
        &P2_422_16,
        true,
    ),
    planar(
        vk::Format::G16_B16R16_2PLANE_444_UNORM,
        "P416",
        16,
        &P2_444_16,
        true,
    ),
    planar(
        vk::Format::G16_B16_R16_3PLANE_420_UNORM,
        "I016",
        16,
        &P3_420_16,
        true,
    ),
    planar(
        vk::Format::G16_B16_R16_3PLANE_422_UNORM,
        "I216",
        16,
        &P3_422_16,
        true,
    ),
    planar(
        vk::Format::G16_B16_R16_3PLANE_444_UNORM,
        "I416",
        16,
        &P3_444_16,
        true,
    ),
];

/// The most planes a format has.
pub const MAX_PLANES: usize = 3;

/// How the memory of a shared image is laid out in planes: one (every format of
/// [`TABLE`], and for a linear image those of [`LINEAR_ONLY`]) or 2-3 (a format
/// of [`PLANAR`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One plane of a format of [`TABLE`] (or [`LINEAR_ONLY`]: [`layout_of`]).
    Single(FormatInfo),
    /// Two or three planes of a format of [`PLANAR`].
    Planar(&'static PlanarFormat),
}

impl Layout {
    /// The Vulkan format.
    pub fn format(&self) -> vk::Format {
        match self {
            Layout::Single(f) => f.format,
            Layout::Planar(p) => p.format,
        }
    }

    /// The number of planes: 1, 2 or 3.
    pub fn plane_count(&self) -> usize {
        match self {
            Layout::Single(_) => 1,
            Layout::Planar(p) => p.planes.len(),
        }
    }

    /// Plane `p` (< [`plane_count`](Self::plane_count)).
    pub fn plane(&self, p: usize) -> PlaneFormat {
        match self {
            Layout::Single(f) => {
                assert_eq!(p, 0, "a single-plane format has plane 0 only");
                PlaneFormat {
                    info: *f,
                    width_divisor: 1,
                    height_divisor: 1,
                }
            }
            Layout::Planar(f) => f.planes[p],
        }
    }

    /// Every plane, in order.
    pub fn planes(&self) -> impl Iterator<Item = PlaneFormat> + '_ {
        (0..self.plane_count()).map(|p| self.plane(p))
    }

    /// The multi-planar row, or None for a single-plane format.
    pub fn planar(&self) -> Option<&'static PlanarFormat> {
        match self {
            Layout::Single(_) => None,
            Layout::Planar(p) => Some(p),
        }
    }

    /// The format's name for messages, with the video name of a planar format:
    /// "VK_FORMAT_G8_B8R8_2PLANE_420_UNORM (NV12)".
    pub fn display(&self) -> String {
        match self {
            Layout::Single(f) => display(f.format),
            Layout::Planar(p) => format!("{} ({})", display(p.format), p.name),
        }
    }
}

/// The plane layout of a format a shared image can have: [`lookup`]'s row as one
/// plane, or a multi-planar format of [`PLANAR`]; the same refusals as
/// [`lookup`] otherwise.
pub fn layout(format: vk::Format) -> Result<Layout> {
    if let Some(p) = PLANAR.iter().find(|p| p.format == format) {
        return Ok(Layout::Planar(p));
    }
    lookup(format).map(Layout::Single)
}

/// Packed 32-bit formats a LINEAR single-plane image (a shared frame: pitched
/// device memory, no CUDA array) may have: CUDA sees each texel as one 32-bit
/// word (the word's bits as Vulkan's format names them, from the low bit:
/// `A2B10G10R10` is R in bits 0-9, G 10-19, B 20-29, A 30-31). CUDA arrays
/// cannot hold them ([`lookup`] refuses them), so optimal images of them are
/// refused.
pub const LINEAR_ONLY: &[FormatInfo] = &[
    row(
        vk::Format::A2B10G10R10_UNORM_PACK32,
        CU_AD_FORMAT_UNSIGNED_INT32,
        1,
        4,
        Unorm,
        Rgba,
    ),
    row(
        vk::Format::A2R10G10B10_UNORM_PACK32,
        CU_AD_FORMAT_UNSIGNED_INT32,
        1,
        4,
        Unorm,
        Bgra,
    ),
];

/// [`layout`] for an image of `linear` tiling: a LINEAR single-plane image may
/// also have a packed format of [`LINEAR_ONLY`] (pitched memory holds any
/// bytes); with optimal tiling such a format is refused as [`lookup`] refuses
/// it, with a note that a linear frame takes it.
pub fn layout_of(format: vk::Format, linear: bool) -> Result<Layout> {
    if let Some(row) = LINEAR_ONLY.iter().find(|r| r.format == format) {
        if linear {
            return Ok(Layout::Single(*row));
        }
        return lookup(format).map(Layout::Single).map_err(|e| {
            Error::unsupported(format!(
                "{} (images of it are CUDA arrays unless linear: a LINEAR single-plane image, \
                 VKCUDA_IMAGE_CREATE_LINEAR_BIT, takes it as pitched 32-bit texels)",
                e.message
            ))
        });
    }
    layout(format)
}

/// The row of a multi-planar format.
pub fn planar_row(format: vk::Format) -> Option<&'static PlanarFormat> {
    PLANAR.iter().find(|p| p.format == format)
}

/// Refuses a CUDA view of a multi-planar format that cannot be shared: OPTIMAL
/// tiling (`linear` false) always, LINEAR tiling (a shared video frame: one
/// dedicated allocation, each plane pitched device memory) where the format was not
/// verified on NVIDIA's driver (see [`PlanarFormat::verified`]). Single-plane
/// formats pass.
pub fn check_cuda_view(layout: &Layout, linear: bool) -> Result<()> {
    let Layout::Planar(p) = layout else {
        return Ok(());
    };
    if !linear {
        return Err(Error::unsupported(format!(
            "{} ({}) with optimal tiling cannot be shared with CUDA: on NVIDIA's driver CUDA \
             arrays of its planes read wrong once the data compresses (a smooth frame: 99 % of \
             the bytes wrong, both ways; random bytes read right, so no error shows), a \
             CU_AD_FORMAT_NV12 array over the whole image faults the context on its first copy, \
             and 16-bit plane arrays are refused. Create it with VKCUDA_IMAGE_CREATE_LINEAR_BIT: \
             a shared video frame (linear tiling, one dedicated allocation) whose planes CUDA \
             sees as pitched device memory (vkcuda_image_get_plane_pointer), the layout NVDEC \
             writes and NVENC reads; or share one single-plane optimal image per plane and copy \
             them into a Vulkan-only {} image (examples/video/README.md compares the two). A \
             Vulkan-only context makes this image (it has no CUDA view)",
            display(p.format),
            p.name,
            p.name,
        )));
    }
    if p.verified {
        return Ok(());
    }
    Err(Error::unsupported(format!(
        "{} ({}) cannot be shared with CUDA as a linear video frame: its planes did not read \
         back right through CUDA on NVIDIA's driver ({}). A Vulkan-only context makes this \
         image (it has no CUDA view)",
        display(p.format),
        p.name,
        p.unverified_why
    )))
}

/// Refuses an extent the format's subsampling cannot divide: Vulkan needs an even
/// width for 4:2:2 and 4:2:0 formats and an even height for 4:2:0 ones.
pub fn check_extent(layout: &Layout, width: u32, height: u32) -> Result<()> {
    let Layout::Planar(p) = layout else {
        return Ok(());
    };
    let (x, y) = p.chroma_divisors();
    if width % x != 0 || height % y != 0 {
        let need = match (x, y) {
            (2, 2) => "the width and height must be even",
            _ => "the width must be even",
        };
        return Err(Error::invalid(format!(
            "{} subsamples chroma {}x{} ({}): {need}, not {width}x{height}",
            layout.display(),
            x,
            y,
            p.subsampling()
        )));
    }
    Ok(())
}

/// The format's name as the Vulkan headers spell it (`VK_FORMAT_R8G8B8A8_UNORM`),
/// or `None` for a value that is no format this library knows.
pub fn name(format: vk::Format) -> Option<String> {
    let debug = format!("{format:?}");
    if !debug.starts_with(|c: char| c.is_ascii_uppercase())
        || !debug
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return None;
    }
    // ash spells ASTC block sizes "4X4"; the headers spell them "4x4".
    let mut spelled = String::with_capacity(debug.len());
    let bytes = debug.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let between_digits = debug.starts_with("ASTC_")
            && b == b'X'
            && i > 0
            && bytes[i - 1].is_ascii_digit()
            && bytes.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        spelled.push(if between_digits { 'x' } else { b as char });
    }
    Some(format!("VK_FORMAT_{spelled}"))
}

/// A name for messages: the header spelling, or the number for an unknown value.
pub fn display(format: vk::Format) -> String {
    name(format).unwrap_or_else(|| format!("VkFormat({})", format.as_raw()))
}

/// The table row of a format that CUDA can hold; `Unsupported` with a message
/// naming a supported neighbour for a known format it cannot, `InvalidArgument`
/// for a value that is not a `VkFormat`.
pub fn lookup(format: vk::Format) -> Result<FormatInfo> {
    if let Some(row) = TABLE.iter().find(|r| r.format == format) {
        return Ok(*row);
    }
    let Some(full) = name(format) else {
        return Err(Error::invalid(format!(
            "{} is not a VkFormat",
            display(format)
        )));
    };
    if format == vk::Format::UNDEFINED {
        return Err(Error::invalid(
            "VK_FORMAT_UNDEFINED is not a format; pick one such as VK_FORMAT_R8G8B8A8_UNORM",
        ));
    }
    if let Some(p) = planar_row(format) {
        return Err(Error::unsupported(format!(
            "{full} ({}) is a multi-planar format: each of its {} planes is a CUDA array of its \
             own, not one array (see vkcuda_format_query)",
            p.name,
            p.planes.len()
        )));
    }
    let short = full.trim_start_matches("VK_FORMAT_");
    let (why, neighbour, note) = refusal(short);
    Err(Error::unsupported(format!(
        "{full} {why}; use VK_FORMAT_{neighbour}{note}"
    )))
}

/// The Vulkan format with this CUDA layout, numeric kind and channel order.
pub fn reverse(
    cuda: CUarray_format,
    channels: u32,
    numeric: Numeric,
    order: Order,
) -> Option<vk::Format> {
    TABLE
        .iter()
        .find(|r| {
            r.cuda == cuda && r.channels == channels && r.numeric == numeric && r.order == order
        })
        .map(|r| r.format)
}

/// Every Vulkan format that CUDA sees as this array format and channel count
/// (UNORM, UINT and SRGB of one width share a CUDA format, for example).
pub fn vk_formats_for(cuda: CUarray_format, channels: u32) -> Vec<vk::Format> {
    TABLE
        .iter()
        .filter(|r| r.cuda == cuda && r.channels == channels)
        .map(|r| r.format)
        .collect()
}

/// The numeric suffix of a format name ("UNORM" of "R8G8B8_UNORM").
fn suffix_numeric(short: &str) -> &'static str {
    for (pat, n) in [
        ("_UNORM", "UNORM"),
        ("_SNORM", "SNORM"),
        ("_USCALED", "UINT"),
        ("_SSCALED", "SINT"),
        ("_UINT", "UINT"),
        ("_SINT", "SINT"),
        ("_SRGB", "SRGB"),
        ("_UFLOAT", "SFLOAT"),
        ("_SFLOAT", "SFLOAT"),
    ] {
        if short.contains(pat) {
            return n;
        }
    }
    "UNORM"
}

/// The widest channel size in a format name (8, 16, 32 or 64), from the digits
/// after each channel letter.
fn channel_bits(short: &str) -> u32 {
    let b = short.as_bytes();
    let mut max = 0;
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b'R' | b'G' | b'B' | b'A' | b'D' | b'S' | b'X') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end > start {
                max = max.max(short[start..end].parse().unwrap_or(0));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    max
}

/// The supported format of `bits` per channel, `channels` and `numeric` nearest
/// to what was asked (wider or plainer when that combination does not exist).
fn neighbour(bits: u32, channels: u32, numeric: &str) -> String {
    let bits = match bits {
        0..=8 => 8,
        9..=16 => 16,
        _ => 32,
    };
    let numeric = match (bits, numeric) {
        (32, "UNORM") | (32, "SRGB") => "UINT",
        (32, "SNORM") => "SINT",
        (16, "SRGB") => "UNORM",
        (8, "SFLOAT") => "UNORM",
        (_, n) => n,
    };
    let letters = ["R", "G", "B", "A"];
    let mut s = String::new();
    for l in &letters[..fit_channels(channels) as usize] {
        s.push_str(&format!("{l}{bits}"));
    }
    format!("{s}_{numeric}")
}

/// Why a known format is refused, the supported format to use instead, and a
/// note on how that neighbour relates to it.
fn refusal(short: &str) -> (&'static str, String, &'static str) {
    let numeric = suffix_numeric(short);
    let bits = channel_bits(short);
    let channels = channel_count(short);
    if short.contains("PLANE") || short.contains("_422_") || short.contains("_420_") {
        // Packed 4:2:2 (two texels share one chroma pair in a block): the planar
        // 8-bit 4:2:2 format holds the same samples.
        return (
            "is a packed 4:2:2 (YCbCr) format, two texels sharing one chroma pair in a block, \
             which CUDA arrays cannot hold",
            "G8_B8R8_2PLANE_422_UNORM".into(),
            " (NV16: the same samples in a luma and a chroma plane)",
        );
    }
    if short.ends_with("_BLOCK") || short.ends_with("_BLOCK_IMG") {
        let n = if short.contains("FLOAT") {
            "SFLOAT"
        } else {
            numeric
        };
        let bits = if n == "SFLOAT" { 16 } else { 8 };
        return (
            "is block-compressed, which CUDA arrays of external memory cannot hold",
            neighbour(bits, 4, n),
            " (decompressed)",
        );
    }
    let depth_stencil = ["D16", "D24", "D32", "X8_D24", "S8"]
        .iter()
        .any(|p| short.starts_with(p));
    if depth_stencil {
        let n = if short == "D16_UNORM" {
            "R16_UNORM"
        } else if short.starts_with("D32_SFLOAT") {
            "R32_SFLOAT"
        } else if short == "S8_UINT" {
            "R8_UINT"
        } else {
            "R32_UINT"
        };
        return (
            "is a depth/stencil format, which CUDA arrays cannot hold",
            n.into(),
            " (copy the depth or stencil values into a colour image)",
        );
    }
    if short.contains("SCALED") {
        return (
            "is a scaled format (integers read as floats), which CUDA arrays cannot hold",
            neighbour(bits, fit_channels(channels), numeric),
            " (the integers)",
        );
    }
    if short.contains("PACK") {
        if let Some(same) = same_bytes_as_packed(short) {
            return (
                "is a packed format, which the format table does not list",
                same,
                " (the same bytes in memory)",
            );
        }
        let n = if short.contains("UFLOAT") {
            "SFLOAT"
        } else {
            numeric
        };
        let bits = if bits > 8 || n == "SFLOAT" { 16 } else { 8 };
        return (
            "is a packed format (several channels in one word), which CUDA arrays cannot hold",
            neighbour(bits, fit_channels(channels), n),
            "",
        );
    }
    if bits == 64 {
        return if channels <= 2 {
            (
                "has 64-bit channels, which CUDA arrays cannot hold",
                neighbour(32, channels * 2, "UINT"),
                " (the same bytes)",
            )
        } else {
            (
                "has 64-bit channels, which CUDA arrays cannot hold",
                neighbour(32, 4, "SFLOAT"),
                " (at lower precision)",
            )
        };
    }
    if channels == 3 {
        let bgra = format!("B{bits}G{bits}R{bits}A{bits}_{numeric}");
        let four = if short.starts_with('B') && lookup_short(&bgra) {
            bgra
        } else {
            neighbour(bits, 4, numeric)
        };
        return ("has 3 channels, which CUDA arrays cannot hold", four, "");
    }
    if short.starts_with("A8_") {
        return (
            "is an alpha-only format, which the format table does not list",
            "R8_UNORM".into(),
            " (the same bytes)",
        );
    }
    if short.starts_with("R16G16_S10_5") || short.starts_with("R16G16_SFIXED5") {
        return (
            "is a fixed-point format, which CUDA arrays cannot hold",
            "R16G16_SINT".into(),
            " (the same bytes)",
        );
    }
    (
        "has no CUDA array format",
        neighbour(bits.max(8), fit_channels(channels), numeric),
        "",
    )
}

fn lookup_short(short: &str) -> bool {
    TABLE
        .iter()
        .any(|r| name(r.format).as_deref() == Some(&format!("VK_FORMAT_{short}")))
}

fn fit_channels(n: u32) -> u32 {
    match n {
        0 | 1 => 1,
        2 => 2,
        _ => 4,
    }
}

/// The number of colour channels named before the first `_`.
fn channel_count(short: &str) -> u32 {
    let head = short.split('_').next().unwrap_or("");
    head.chars()
        .filter(|c| matches!(c, 'R' | 'G' | 'B' | 'A'))
        .count() as u32
}

/// Packed formats whose bytes in memory (little-endian) equal a table format.
fn same_bytes_as_packed(short: &str) -> Option<String> {
    let rest = short.strip_prefix("A8B8G8R8_")?.strip_suffix("_PACK32")?;
    let candidate = format!("R8G8B8A8_{rest}");
    lookup_short(&candidate).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_10_bit_formats_are_linear_only() {
        for (f, order) in [
            (vk::Format::A2B10G10R10_UNORM_PACK32, Order::Rgba),
            (vk::Format::A2R10G10B10_UNORM_PACK32, Order::Bgra),
        ] {
            let Layout::Single(info) = layout_of(f, true).unwrap() else {
                panic!("{f:?} is one plane")
            };
            assert_eq!(
                (info.bytes_per_texel(), info.channels, info.order),
                (4, 1, order)
            );
            assert!(lookup(f).is_err(), "no CUDA array holds {f:?}");
            let e = layout_of(f, false).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::Unsupported);
            assert!(
                e.message.contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"),
                "{}",
                e.message
            );
        }
        // Everything else is layout's, linear or not.
        for f in [
            vk::Format::R8G8B8A8_UNORM,
            vk::Format::G8_B8R8_2PLANE_420_UNORM,
        ] {
            assert_eq!(layout_of(f, true).unwrap(), layout(f).unwrap());
            assert_eq!(layout_of(f, false).unwrap(), layout(f).unwrap());
        }
        assert!(layout_of(vk::Format::R8G8B8_UNORM, true).is_err());
    }
    use crate::error::ErrorKind;

    /// Every value ash names as a format: the core range and the extension ranges.
    fn all_known_formats() -> Vec<vk::Format> {
        let ranges = [
            0..=300,
            1_000_054_000..=1_000_054_010,
            1_000_066_000..=1_000_066_020,
            1_000_156_000..=1_000_156_040,
            1_000_288_000..=1_000_288_040,
            1_000_330_000..=1_000_330_010,
            1_000_340_000..=1_000_340_010,
            1_000_464_000..=1_000_464_010,
            1_000_470_000..=1_000_470_010,
        ];
        ranges
            .into_iter()
            .flatten()
            .map(vk::Format::from_raw)
            .filter(|f| name(*f).is_some())
            .collect()
    }

    #[test]
    fn every_entry_round_trips() {
        assert_eq!(TABLE.len(), 44);
        for r in TABLE {
            let got = lookup(r.format).unwrap();
            assert_eq!(got, *r);
            assert_eq!(
                reverse(r.cuda, r.channels, r.numeric, r.order),
                Some(r.format)
            );
            assert!(vk_formats_for(r.cuda, r.channels).contains(&r.format));
            assert!(matches!(r.channels, 1 | 2 | 4));
            let cuda_bytes = match r.cuda {
                CU_AD_FORMAT_UNSIGNED_INT8 | CU_AD_FORMAT_SIGNED_INT8 => 1,
                CU_AD_FORMAT_UNSIGNED_INT16 | CU_AD_FORMAT_SIGNED_INT16 | CU_AD_FORMAT_HALF => 2,
                CU_AD_FORMAT_UNSIGNED_INT32 | CU_AD_FORMAT_SIGNED_INT32 | CU_AD_FORMAT_FLOAT => 4,
                other => panic!("unexpected CUDA format {other:?}"),
            };
            assert_eq!(cuda_bytes, r.bytes_per_channel, "{:?}", r.format);
            // The name agrees with the row: channel count, width and numeric kind.
            let short = name(r.format).unwrap();
            let short = short.trim_start_matches("VK_FORMAT_");
            assert_eq!(channel_count(short), r.channels, "{short}");
            assert_eq!(channel_bits(short), r.bytes_per_channel * 8, "{short}");
            let kind = match r.numeric {
                Unorm => "_UNORM",
                Snorm => "_SNORM",
                Uint => "_UINT",
                Sint => "_SINT",
                Sfloat => "_SFLOAT",
                Srgb => "_SRGB",
            };
            assert!(short.ends_with(kind), "{short}");
            assert_eq!(short.starts_with('B'), r.order == Bgra, "{short}");
        }
        // No format appears twice.
        for (i, a) in TABLE.iter().enumerate() {
            assert!(TABLE[i + 1..].iter().all(|b| b.format != a.format));
        }
    }

    #[test]
    fn the_table_covers_every_width_kind_and_channel_count() {
        for bytes in [1, 2, 4] {
            for channels in [1, 2, 4] {
                let kinds: &[Numeric] = match bytes {
                    1 => &[Unorm, Snorm, Uint, Sint, Srgb],
                    2 => &[Unorm, Snorm, Uint, Sint, Sfloat],
                    _ => &[Uint, Sint, Sfloat],
                };
                for k in kinds {
                    assert!(
                        TABLE.iter().any(|r| r.bytes_per_channel == bytes
                            && r.channels == channels
                            && r.numeric == *k
                            && r.order == Rgba),
                        "missing {bytes} bytes x {channels} {k:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_other_known_format_is_refused_with_a_supported_neighbour() {
        let formats = all_known_formats();
        assert!(formats.len() > 200, "only {} formats found", formats.len());
        let mut refused = 0;
        for f in formats {
            if TABLE.iter().any(|r| r.format == f)
                || PLANAR.iter().any(|r| r.format == f)
                || f == vk::Format::UNDEFINED
            {
                continue;
            }
            let e = lookup(f).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported, "{}", e.message);
            let full = name(f).unwrap();
            assert!(e.message.starts_with(&full), "{}", e.message);
            let (_, tail) = e
                .message
                .split_once("; use ")
                .expect("the message names a neighbour");
            let suggested = tail.split(' ').next().unwrap();
            assert!(
                TABLE
                    .iter()
                    .map(|r| r.format)
                    .chain(PLANAR.iter().map(|r| r.format))
                    .any(|f| name(f).as_deref() == Some(suggested)),
                "{full}: the neighbour {suggested} is not in the tables ({})",
                e.message
            );
            assert_eq!(layout(f).unwrap_err(), e, "layout and lookup refuse alike");
            refused += 1;
        }
        assert!(refused > 150);
    }

    fn refused(f: vk::Format) -> String {
        let e = lookup(f).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        e.message
    }

    /// The neighbour a refusal suggests.
    fn use_of(message: &str) -> &str {
        let (_, tail) = message.split_once("; use ").expect(message);
        tail.split(' ').next().unwrap()
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(
            refused(vk::Format::R8G8B8_UNORM),
            "VK_FORMAT_R8G8B8_UNORM has 3 channels, which CUDA arrays cannot hold; use VK_FORMAT_R8G8B8A8_UNORM"
        );
        assert!(use_of(&refused(vk::Format::B8G8R8_SRGB)) == "VK_FORMAT_B8G8R8A8_SRGB");
        assert!(use_of(&refused(vk::Format::R16G16B16_SFLOAT)) == "VK_FORMAT_R16G16B16A16_SFLOAT");
        assert!(use_of(&refused(vk::Format::R32G32B32_SFLOAT)) == "VK_FORMAT_R32G32B32A32_SFLOAT");
        let m = refused(vk::Format::A2B10G10R10_UNORM_PACK32);
        assert!(m.contains("packed"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_R16G16B16A16_UNORM", "{m}");
        assert!(
            use_of(&refused(vk::Format::B10G11R11_UFLOAT_PACK32))
                == "VK_FORMAT_R16G16B16A16_SFLOAT"
        );
        assert!(use_of(&refused(vk::Format::R5G6B5_UNORM_PACK16)) == "VK_FORMAT_R8G8B8A8_UNORM");
        assert!(use_of(&refused(vk::Format::A8B8G8R8_SRGB_PACK32)) == "VK_FORMAT_R8G8B8A8_SRGB");
        let m = refused(vk::Format::BC7_SRGB_BLOCK);
        assert!(m.contains("block-compressed"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_R8G8B8A8_SRGB", "{m}");
        assert!(use_of(&refused(vk::Format::BC6H_UFLOAT_BLOCK)) == "VK_FORMAT_R16G16B16A16_SFLOAT");
        let m = refused(vk::Format::ASTC_4X4_UNORM_BLOCK);
        assert!(m.starts_with("VK_FORMAT_ASTC_4x4_UNORM_BLOCK "), "{m}");
        let m = refused(vk::Format::D32_SFLOAT);
        assert!(m.contains("depth/stencil"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_R32_SFLOAT", "{m}");
        assert!(use_of(&refused(vk::Format::D16_UNORM)) == "VK_FORMAT_R16_UNORM");
        assert!(use_of(&refused(vk::Format::D24_UNORM_S8_UINT)) == "VK_FORMAT_R32_UINT");
        assert!(use_of(&refused(vk::Format::S8_UINT)) == "VK_FORMAT_R8_UINT");
        // Multi-planar formats are no single array: lookup refuses them, layout takes them.
        let m = refused(vk::Format::G8_B8R8_2PLANE_420_UNORM);
        assert!(m.contains("(NV12) is a multi-planar format"), "{m}");
        assert!(refused(vk::Format::G16_B16_R16_3PLANE_444_UNORM).contains("3 planes"));
        let m = refused(vk::Format::G8B8G8R8_422_UNORM);
        assert!(m.contains("packed 4:2:2"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_G8_B8R8_2PLANE_422_UNORM", "{m}");
        assert!(
            use_of(&refused(vk::Format::B16G16R16G16_422_UNORM))
                == "VK_FORMAT_G8_B8R8_2PLANE_422_UNORM"
        );
        let m = refused(vk::Format::R8G8_USCALED);
        assert!(m.contains("scaled"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_R8G8_UINT", "{m}");
        let m = refused(vk::Format::R64_UINT);
        assert!(m.contains("64-bit"), "{m}");
        assert!(use_of(&m) == "VK_FORMAT_R32G32_UINT", "{m}");
    }

    #[test]
    fn non_formats_are_invalid() {
        for raw in [-1, 185_000, 0x7FFF_FFFF] {
            let e = lookup(vk::Format::from_raw(raw)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{}", e.message);
            assert!(e.message.contains("is not a VkFormat"), "{}", e.message);
        }
        let e = lookup(vk::Format::UNDEFINED).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
    }

    #[test]
    fn names_are_spelled_like_the_headers() {
        assert_eq!(name(vk::Format::R8_UNORM).unwrap(), "VK_FORMAT_R8_UNORM");
        assert_eq!(
            name(vk::Format::ASTC_10X10_SRGB_BLOCK).unwrap(),
            "VK_FORMAT_ASTC_10x10_SRGB_BLOCK"
        );
        assert_eq!(
            name(vk::Format::R10X6_UNORM_PACK16).unwrap(),
            "VK_FORMAT_R10X6_UNORM_PACK16"
        );
        assert_eq!(display(vk::Format::from_raw(-7)), "VkFormat(-7)");
    }
    #[test]
    fn the_planar_table_agrees_with_the_format_names() {
        assert_eq!(PLANAR.len(), 24);
        for p in PLANAR {
            let full = name(p.format).unwrap();
            let short = full.trim_start_matches("VK_FORMAT_");
            let count = if short.contains("_3PLANE_") { 3 } else { 2 };
            assert!(short.contains("PLANE"), "{short}");
            assert_eq!(p.planes.len(), count, "{short}");
            let want = if short.contains("_420_") {
                (2, 2)
            } else if short.contains("_422_") {
                (2, 1)
            } else {
                assert!(short.contains("_444_"), "{short}");
                (1, 1)
            };
            assert_eq!(p.chroma_divisors(), want, "{short}");
            let bits: u32 = short[1..short.find(['_', 'X']).unwrap()].parse().unwrap();
            assert_eq!(p.bits, bits, "{short}");
            assert!(p.verified || !p.unverified_why.is_empty(), "{short}");
            assert_eq!(p.cuda_array_flags, sys_surface_ldst());
            let bytes = if bits == 8 { 1 } else { 2 };
            for (i, pl) in p.planes.iter().enumerate() {
                let channels = if count == 2 && i == 1 { 2 } else { 1 };
                assert_eq!(pl.info.channels, channels, "{short} plane {i}");
                assert_eq!(pl.info.bytes_per_channel, bytes, "{short} plane {i}");
                assert_eq!(pl.info.numeric, Unorm);
                let cuda = if bytes == 1 {
                    CU_AD_FORMAT_UNSIGNED_INT8
                } else {
                    CU_AD_FORMAT_UNSIGNED_INT16
                };
                assert_eq!(pl.info.cuda, cuda);
                let divisors = if i == 0 { (1, 1) } else { want };
                assert_eq!((pl.width_divisor, pl.height_divisor), divisors);
                // The plane's Vulkan format has the plane's channels and width.
                let plane_name = name(pl.info.format).unwrap();
                let plane_short = plane_name.trim_start_matches("VK_FORMAT_");
                assert_eq!(channel_count(plane_short), channels, "{plane_short}");
                assert_eq!(
                    channel_bits(plane_short).max(bits),
                    bits.max(8),
                    "{plane_short}"
                );
            }
            assert_eq!(layout(p.format).unwrap(), Layout::Planar(p));
            assert_eq!(layout(p.format).unwrap().plane_count(), count);
        }
        // Every multi-planar format Vulkan has is in the table.
        for f in all_known_formats() {
            let n = name(f).unwrap();
            if n.contains("PLANE") {
                assert!(planar_row(f).is_some(), "{n} is missing from PLANAR");
            }
        }
        for (i, a) in PLANAR.iter().enumerate() {
            assert!(PLANAR[i + 1..]
                .iter()
                .all(|b| b.format != a.format && b.name != a.name));
        }
    }

    fn sys_surface_ldst() -> u32 {
        cudarc::driver::sys::CUDA_ARRAY3D_SURFACE_LDST
    }

    #[test]
    fn single_plane_formats_are_the_one_plane_case() {
        let l = layout(vk::Format::R8G8B8A8_UNORM).unwrap();
        assert_eq!(l.plane_count(), 1);
        let p = l.plane(0);
        assert_eq!((p.width_divisor, p.height_divisor), (1, 1));
        assert_eq!(p.info, lookup(vk::Format::R8G8B8A8_UNORM).unwrap());
        assert_eq!(p.extent(67, 35), (67, 35));
        check_cuda_view(&l, false).unwrap();
        check_extent(&l, 67, 35).unwrap();
        assert_eq!(l.display(), "VK_FORMAT_R8G8B8A8_UNORM");
        let nv12 = layout(vk::Format::G8_B8R8_2PLANE_420_UNORM).unwrap();
        assert_eq!(nv12.display(), "VK_FORMAT_G8_B8R8_2PLANE_420_UNORM (NV12)");
        assert_eq!(nv12.plane(1).extent(1920, 1080), (960, 540));
        assert_eq!(nv12.plane(0).info.format, vk::Format::R8_UNORM);
        assert_eq!(nv12.plane(1).info.format, vk::Format::R8G8_UNORM);
        assert!(layout(vk::Format::R8G8B8_UNORM).is_err());
        assert_eq!(
            layout(vk::Format::from_raw(12345)).unwrap_err().kind,
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn optimal_planes_are_refused_for_cuda_and_linear_frames_need_verification() {
        for p in PLANAR {
            let l = Layout::Planar(p);
            let e = check_cuda_view(&l, false).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported);
            let m = &e.message;
            assert!(m.starts_with(&l.display()), "{m}");
            assert!(m.contains("with optimal tiling cannot be shared"), "{m}");
            assert!(m.contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"), "{m}");
            assert!(m.contains("A Vulkan-only context makes this image"), "{m}");
            let on: &'static PlanarFormat = Box::leak(Box::new(PlanarFormat {
                verified: true,
                ..*p
            }));
            assert!(check_cuda_view(&Layout::Planar(on), true).is_ok());
            let off: &'static PlanarFormat = Box::leak(Box::new(PlanarFormat {
                verified: false,
                unverified_why: "3 of 4 bytes wrong",
                ..*p
            }));
            let e = check_cuda_view(&Layout::Planar(off), true).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported);
            assert!(e.message.contains("(3 of 4 bytes wrong)"), "{}", e.message);
        }
        let rgba = layout(vk::Format::R8G8B8A8_UNORM).unwrap();
        check_cuda_view(&rgba, false).unwrap();
    }

    #[test]
    fn odd_extents_are_refused_where_chroma_is_subsampled() {
        let nv12 = layout(vk::Format::G8_B8R8_2PLANE_420_UNORM).unwrap();
        check_extent(&nv12, 1920, 1080).unwrap();
        for (w, h) in [(1919, 1080), (1920, 1079), (1, 1)] {
            let e = check_extent(&nv12, w, h).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            assert!(
                e.message.contains(
                    "(NV12) subsamples chroma 2x2 (4:2:0): the width and height must be even"
                ),
                "{}",
                e.message
            );
            assert!(
                e.message.ends_with(&format!("not {w}x{h}")),
                "{}",
                e.message
            );
        }
        let nv16 = layout(vk::Format::G8_B8R8_2PLANE_422_UNORM).unwrap();
        check_extent(&nv16, 1920, 1079).unwrap();
        assert!(check_extent(&nv16, 1919, 1080)
            .unwrap_err()
            .message
            .contains("the width must be even"));
        let i444 = layout(vk::Format::G8_B8_R8_3PLANE_444_UNORM).unwrap();
        check_extent(&i444, 1, 1).unwrap();
    }
}
