//! C API: shared images, the format table query, and the image handoff barriers.

use std::os::fd::IntoRawFd;

use ash::vk;
use cudarc::driver::sys;

use super::context::{ctx_arg, vkcuda_context};
use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{
    arg, boundary, check_bool, check_flags, out, quiet, vkcuda_result, write_handle, write_native,
};
use vkcuda::error::{Error, Result};
use vkcuda::format::{self, FormatInfo, Layout, Numeric, Order};
use vkcuda::image::{
    Description, Dimension, Image, PitchedPlane, PlaneMemory, Sampler, VideoColor,
};

pub type VkImage = vk::Image;
/// A `VkFormat` as C passes it (the Vulkan header's enum, 32 bits); checked
/// against the format table.
pub type VkFormat = i32;
/// A `VkImageLayout` as C passes it; checked.
pub type VkImageLayout = i32;
pub type VkImageUsageFlags = u32;
pub type VkExtent3D = vk::Extent3D;

/// CUDA's array struct; `CUarray` from cuda.h is `struct CUarray_st *`.
///
/// @ingroup image
pub struct CUarray_st {
    _opaque: [u8; 0],
}

/// CUDA's mipmapped array struct; `CUmipmappedArray` from cuda.h is
/// `struct CUmipmappedArray_st *`.
///
/// @ingroup image
pub struct CUmipmappedArray_st {
    _opaque: [u8; 0],
}

/// A `VkImage` with exportable memory and its CUDA view. A single-plane format
/// has one allocation, seen by CUDA as a mipmapped array (per level a `CUarray`,
/// on request surface and texture objects). A multi-planar (YCbCr) format shared
/// with CUDA is a shared video frame (`VKCUDA_IMAGE_CREATE_LINEAR_BIT`): one
/// dedicated allocation, each plane pitched device memory
/// (`vkcuda_image_get_plane_pointer`), no arrays. An OPTIMAL multi-planar image
/// (disjoint, one allocation per plane) is refused with CUDA
/// (`VKCUDA_ERROR_UNSUPPORTED`) and made only in a Vulkan-only context, where it has
/// no CUDA view. Made by `vkcuda_image_create`, `vkcuda_image_wrap` or an import,
/// released by `vkcuda_image_destroy`.
///
/// Thread-safety: every function but destroy may be called from any thread at
/// once (surface and texture creation are locked); destroy must not overlap any
/// other use.
///
/// @ingroup image
pub struct vkcuda_image {
    h: Tagged<Image>,
}
handle_kind!(vkcuda_image, Image, handle::IMAGE, |i| Some(i.context()));

/// The image is cube compatible (`VK_IMAGE_CREATE_CUBE_COMPATIBLE_BIT`): 2D,
/// square, a multiple of 6 array layers. CUDA maps it as a cubemap
/// (`CUDA_ARRAY3D_CUBEMAP`, layered when more than 6 layers).
///
/// @ingroup image
pub const VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT: u32 = 0x1;

/// A shared frame: LINEAR tiling, not disjoint, in one dedicated exportable
/// allocation that CUDA imports and maps whole as device memory. Each plane is
/// pitched device memory at its `vkGetImageSubresourceLayout` offset and row
/// pitch (`vkcuda_image_get_plane_pointer`): what NVDEC writes, NVENC and NPP
/// read and `cuMemcpy2D` copies. 2D, one level, one layer; the usage is checked
/// against the format's linear-tiling features (`VKCUDA_ERROR_UNSUPPORTED`
/// naming the format and the missing feature).
///
/// A multi-planar (YCbCr) format makes a shared video frame (planes at
/// `VK_IMAGE_ASPECT_PLANE_i_BIT`'s layout). Vulkan samples it through a
/// `VkSamplerYcbcrConversion` (`vkcuda_image_get_ycbcr_conversion_info`) where the
/// format's linear-tiling features have `SAMPLED_IMAGE` (on NVIDIA's driver, H200:
/// BT.709 NV12 and BT.2020 P010 frames were sampled, every pixel compared)
/// and copies its planes (no storage or attachment usage for NV12 on NVIDIA).
///
/// A single-plane colour format (R8G8B8A8, B8G8R8A8, R8, R8G8, R16,
/// R16G16B16A16_SFLOAT, ... of the format table, and the packed
/// `VK_FORMAT_A2B10G10R10_UNORM_PACK32` and `VK_FORMAT_A2R10G10B10_UNORM_PACK32`,
/// which only linear images take) makes a one-plane frame: plane 0 at the COLOR
/// aspect's layout, the input NVENC takes as an ABGR/ARGB CUDA frame. It has no
/// CUDA array, surface or texture and no YCbCr conversion. NVIDIA's driver gives
/// linear tiling no `COLOR_ATTACHMENT` feature in any format (measured on the
/// H100), so Vulkan writes such a frame by copy, or as a storage image where the
/// format's linear features have `STORAGE_IMAGE`.
///
/// @ingroup image
pub const VKCUDA_IMAGE_CREATE_LINEAR_BIT: u32 = 0x2;

/// Every `VKCUDA_IMAGE_CREATE_*` bit.
const IMAGE_CREATE_BITS: u32 =
    VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT | VKCUDA_IMAGE_CREATE_LINEAR_BIT;

/// Texture coordinates run over [0, 1) instead of [0, size).
///
/// @ingroup image
pub const VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT: u32 = 0x1;
/// The texture covers every mip level (mipmapped sampling, `tex2DLod` and
/// friends) instead of the one level in `level`.
///
/// @ingroup image
pub const VKCUDA_TEXTURE_ALL_LEVELS_BIT: u32 = 0x2;

/// The dimensionality of an image. 0 is 2D, so an all-zero description is 2D.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_image_type {
    /// A 2D image, possibly with array layers (the default).
    VKCUDA_IMAGE_TYPE_2D = 0,
    /// A 1D image, possibly with array layers; height and depth are 1.
    VKCUDA_IMAGE_TYPE_1D = 1,
    /// A 3D image; one array layer. (The value differs from `VK_IMAGE_TYPE_3D` on
    /// purpose, so a `VkImageType` passed by mistake is refused.)
    VKCUDA_IMAGE_TYPE_3D = 3,
    /// Keeps the enum 32 bits wide.
    VKCUDA_IMAGE_TYPE_MAX_ENUM = 0x7FFF_FFFF,
}

/// How a texture filters.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_filter {
    /// The nearest texel (the default).
    VKCUDA_FILTER_POINT = 0,
    /// Linear interpolation; needs float results (a float format, or the
    /// normalized-float read mode).
    VKCUDA_FILTER_LINEAR = 1,
    /// Keeps the enum 32 bits wide.
    VKCUDA_FILTER_MAX_ENUM = 0x7FFF_FFFF,
}

/// What a texture returns outside the image (all three axes).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_address_mode {
    /// The nearest edge texel (the default).
    VKCUDA_ADDRESS_MODE_CLAMP = 0,
    /// Repeats; needs normalized coordinates.
    VKCUDA_ADDRESS_MODE_WRAP = 1,
    /// Repeats mirrored; needs normalized coordinates.
    VKCUDA_ADDRESS_MODE_MIRROR = 2,
    /// `border_color`.
    VKCUDA_ADDRESS_MODE_BORDER = 3,
    /// Keeps the enum 32 bits wide.
    VKCUDA_ADDRESS_MODE_MAX_ENUM = 0x7FFF_FFFF,
}

/// What a texture read returns for integer formats.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_read_mode {
    /// The stored integers (`cudaReadModeElementType`, the default). Float formats
    /// always return floats.
    VKCUDA_READ_MODE_ELEMENT_TYPE = 0,
    /// 8- and 16-bit integers as normalized floats (`cudaReadModeNormalizedFloat`):
    /// [0, 1] for unsigned, [-1, 1] for signed. Not for 32-bit integer formats.
    VKCUDA_READ_MODE_NORMALIZED_FLOAT = 1,
    /// Keeps the enum 32 bits wide.
    VKCUDA_READ_MODE_MAX_ENUM = 0x7FFF_FFFF,
}

/// How a format's channels are interpreted (output only).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_format_numeric {
    /// Unsigned normalized integers (CUDA sees the unsigned integers).
    VKCUDA_FORMAT_NUMERIC_UNORM = 0,
    /// Signed normalized integers (CUDA sees the signed integers).
    VKCUDA_FORMAT_NUMERIC_SNORM = 1,
    VKCUDA_FORMAT_NUMERIC_UINT = 2,
    VKCUDA_FORMAT_NUMERIC_SINT = 3,
    /// Half or single floats.
    VKCUDA_FORMAT_NUMERIC_SFLOAT = 4,
    /// sRGB-encoded 8-bit colour: CUDA sees the encoded bytes, with no decode on
    /// reads and no encode on writes.
    VKCUDA_FORMAT_NUMERIC_SRGB = 5,
    /// Keeps the enum 32 bits wide.
    VKCUDA_FORMAT_NUMERIC_MAX_ENUM = 0x7FFF_FFFF,
}

/// A `vkcuda_image_type` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_type_raw(pub i32);

/// A `vkcuda_filter` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_filter_raw(pub i32);

/// A `vkcuda_address_mode` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_address_mode_raw(pub i32);

/// A `vkcuda_read_mode` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_read_mode_raw(pub i32);

impl vkcuda_image_type_raw {
    /// The C value of a dimension.
    pub(crate) fn of(d: Dimension) -> Self {
        vkcuda_image_type_raw(match d {
            Dimension::D2 => 0,
            Dimension::D1 => 1,
            Dimension::D3 => 3,
        })
    }

    pub(crate) fn get(self, what: &str) -> Result<Dimension> {
        match self.0 {
            0 => Ok(Dimension::D2),
            1 => Ok(Dimension::D1),
            3 => Ok(Dimension::D3),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_image_type (VKCUDA_IMAGE_TYPE_2D = 0, _1D = 1, _3D = 3)"
            ))),
        }
    }
}

impl vkcuda_filter_raw {
    fn get(self, what: &str) -> Result<bool> {
        match self.0 {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_filter (POINT = 0, LINEAR = 1)"
            ))),
        }
    }
}

impl vkcuda_address_mode_raw {
    fn get(self, what: &str) -> Result<sys::CUaddress_mode> {
        use sys::CUaddress_mode::*;
        match self.0 {
            0 => Ok(CU_TR_ADDRESS_MODE_CLAMP),
            1 => Ok(CU_TR_ADDRESS_MODE_WRAP),
            2 => Ok(CU_TR_ADDRESS_MODE_MIRROR),
            3 => Ok(CU_TR_ADDRESS_MODE_BORDER),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_address_mode (CLAMP = 0, WRAP = 1, MIRROR = 2, BORDER = 3)"
            ))),
        }
    }
}

impl vkcuda_read_mode_raw {
    fn get(self, what: &str) -> Result<bool> {
        match self.0 {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::invalid(format!(
                "{what} is {v}, not a vkcuda_read_mode (ELEMENT_TYPE = 0, NORMALIZED_FLOAT = 1)"
            ))),
        }
    }
}

/// How to make a shared image. `format` and `extent.width` (and `height` for 2D
/// and 3D, `depth` for 3D) must be set; every other field may be 0 for its default.
///
/// The image has exclusive sharing and starts in `VK_IMAGE_LAYOUT_UNDEFINED`. Its
/// tiling and memory: a single-plane image has optimal tiling and one dedicated,
/// exportable (`OPAQUE_FD`) allocation; a shared frame
/// (`VKCUDA_IMAGE_CREATE_LINEAR_BIT`: a video frame, or a single-plane image seen
/// by CUDA as pitched memory) has linear tiling and one dedicated, exportable
/// allocation for all its planes; a multi-planar image without that bit
/// (Vulkan-only contexts only) has optimal tiling, `VK_IMAGE_CREATE_DISJOINT_BIT`
/// and one exportable allocation per plane, not dedicated (Vulkan allows no
/// dedicated allocation for a disjoint image; `vkcuda_image_export_plane_fd`).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_create_info {
    /// `VKCUDA_IMAGE_CREATE_*` bits.
    pub flags: u32,
    /// 2D (the default), 1D or 3D.
    pub image_type: vkcuda_image_type_raw,
    /// A format of the table (see `vkcuda_format_query`): 1, 2 or 4 channels of
    /// 8/16/32-bit UNORM, SNORM, UINT, SINT, 16/32-bit SFLOAT, 8-bit SRGB, and
    /// `B8G8R8A8_*` (CUDA then sees the channels in memory order: x is blue); or a
    /// multi-planar (YCbCr) format: NV12 (`VK_FORMAT_G8_B8R8_2PLANE_420_UNORM`),
    /// NV16, NV24, I420, I422, I444 and the 10/12/16-bit P010, P012, P016 and their
    /// 4:2:2, 4:4:4 and 3-plane forms (2D, one level, one layer; even width for 4:2:2
    /// and 4:2:0, even height for 4:2:0). With CUDA a multi-planar image is a shared
    /// video frame (`VKCUDA_IMAGE_CREATE_LINEAR_BIT`); with optimal tiling it is
    /// refused (`VKCUDA_ERROR_UNSUPPORTED`: on NVIDIA's driver CUDA arrays of its
    /// planes read wrong once the data compresses) and made in a Vulkan-only context
    /// only. With `VKCUDA_IMAGE_CREATE_LINEAR_BIT` a single-plane format may also be
    /// `VK_FORMAT_A2B10G10R10_UNORM_PACK32` or `VK_FORMAT_A2R10G10B10_UNORM_PACK32`
    /// (pitched 32-bit texels; no CUDA array holds them). Others are refused with
    /// `VKCUDA_ERROR_UNSUPPORTED` and a message naming a supported neighbour.
    pub format: VkFormat,
    /// Width (at least 1); height (1D: 0 or 1); depth (1D and 2D: 0 or 1).
    pub extent: VkExtent3D,
    /// 0 means 1; at most floor(log2(largest dimension)) + 1. With more than one
    /// array layer and a CUDA side, 1 or that full chain: CUDA places the layers of
    /// a partial chain elsewhere than NVIDIA's Vulkan driver does
    /// (`VKCUDA_ERROR_UNSUPPORTED`).
    pub mip_levels: u32,
    /// 0 means 1; 3D images have 1; cube-compatible images a multiple of 6.
    pub array_layers: u32,
    /// `VkImageUsageFlags`; 0 means TRANSFER_SRC | TRANSFER_DST plus SAMPLED and
    /// STORAGE where the format and device support them for exportable images
    /// (`vkcuda_image_get_info` says what was chosen). STORAGE is what lets CUDA
    /// make surface objects. Transfer, sampled, storage and attachment usages are
    /// accepted; each is checked against the format's optimal-tiling features
    /// (linear-tiling for a shared frame).
    pub usage: VkImageUsageFlags,
}

/// The memory of one plane of an engine's disjoint (OPTIMAL) multi-planar image,
/// for `vkcuda_image_wrap_info::planes`. Such an image is wrapped only in a
/// Vulkan-only context (it has no CUDA view); a video frame shared with CUDA is one
/// dedicated allocation (`VKCUDA_IMAGE_CREATE_LINEAR_BIT`).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_plane_memory {
    /// The plane's memory: an allocation made with `VkExportMemoryAllocateInfo`
    /// (OPAQUE_FD), bound to the plane (`VkBindImagePlaneMemoryInfo`) at offset 0.
    /// Stays the engine's.
    pub memory: VkDeviceMemory,
    /// `VkMemoryAllocateInfo::allocationSize` of `memory` (the whole block); at
    /// least `offset` + the size `vkGetImageMemoryRequirements2` with
    /// `VkImagePlaneMemoryRequirementsInfo` gives for the plane.
    pub allocation_size: u64,
    /// Where the plane is bound in `memory` (`VkBindImageMemoryInfo::memoryOffset`).
    pub offset: u64,
}

/// An image the engine created itself, for `vkcuda_image_wrap`.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_wrap_info {
    /// Reserved; must be 0.
    pub flags: u32,
    /// The engine's image, created with `VkExternalMemoryImageCreateInfo`
    /// (OPAQUE_FD) and exactly the description in `description`: optimal tiling,
    /// or for a shared video frame (`VKCUDA_IMAGE_CREATE_LINEAR_BIT` in
    /// `description.flags`) linear tiling and not disjoint. An OPTIMAL multi-planar
    /// image (Vulkan-only contexts only) also has `VK_IMAGE_CREATE_DISJOINT_BIT`.
    /// Stays the engine's.
    pub image: VkImage,
    /// The image's memory, made with `VkExportMemoryAllocateInfo` (OPAQUE_FD): a
    /// dedicated allocation (`VkMemoryDedicatedAllocateInfo` naming `image`, the
    /// image at offset 0), or a block shared with other resources (a VMA pool) with
    /// the image at `offset`. A shared video frame: its one dedicated allocation.
    /// A disjoint multi-planar image (Vulkan-only): plane 0's memory (see
    /// `planes`). Stays the engine's.
    pub memory: VkDeviceMemory,
    /// `VkMemoryAllocateInfo::allocationSize` of `memory` (the whole block); at
    /// least `offset` + the size `vkGetImageMemoryRequirements` gives for `image`
    /// (for plane 0 of a multi-planar image).
    pub allocation_size: u64,
    /// The image's description as it was created; `usage` must be its real usage
    /// (0 is refused here).
    pub description: vkcuda_image_create_info,
    /// Where the image (plane 0) is bound in `memory` (`vkBindImageMemory`'s
    /// memoryOffset); 0 for a dedicated allocation.
    pub offset: u64,
    /// VK_TRUE when `memory` is a dedicated allocation for `image` (required for a
    /// shared video frame; refused for a disjoint multi-planar image, whose planes
    /// cannot be dedicated); CUDA then
    /// imports it with `CUDA_EXTERNAL_MEMORY_DEDICATED`. Refused as VK_FALSE where
    /// the driver requires a dedicated allocation for the image. With VMA:
    /// `VmaAllocationInfo2::dedicatedMemory`.
    pub dedicated: VkBool32,
    /// The `VkExternalMemoryHandleTypeFlags` the memory (every plane's) was
    /// allocated with (`VkExportMemoryAllocateInfo::handleTypes`); must include
    /// `VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`. 0 or a value without it is
    /// refused (`VKCUDA_ERROR_INVALID_ARGUMENT`) before any driver call: the library
    /// cannot see how memory was allocated, and exporting memory allocated without
    /// it is undefined behaviour.
    pub export_handle_types: u32,
    /// The planes of a disjoint (OPTIMAL) multi-planar image, wrapped in a
    /// Vulkan-only context, one allocation each (a disjoint image's memory cannot
    /// be dedicated): `planes[1]` and `planes[2]`. Plane 0 is `memory` and
    /// `allocation_size`; `planes[0]` is zero or the same. Zero for single-plane
    /// formats and shared video frames (one allocation), and past the format's
    /// plane count.
    pub planes: [vkcuda_image_plane_memory; 3],
}

/// What CUDA sees of one plane of a format.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_format_plane_info {
    /// The single-plane `VkFormat` of the plane: the format itself for a
    /// single-plane format; for a multi-planar one the format Vulkan names as
    /// compatible with the plane (`VK_FORMAT_R8_UNORM` for NV12's luma,
    /// `VK_FORMAT_R8G8_UNORM` for its CbCr, `VK_FORMAT_R10X6_UNORM_PACK16` for
    /// P010's luma, ...).
    pub format: VkFormat,
    /// The plane's `CUarray_format` (see `vkcuda_format_info::cuda_format`).
    pub cuda_format: u32,
    /// 1, 2 or 4.
    pub channels: u32,
    /// Bytes per texel of the plane.
    pub bytes_per_texel: u32,
    /// The plane's width is the image's divided by this (1, or 2 for the chroma
    /// planes of 4:2:2 and 4:2:0 formats).
    pub width_divisor: u32,
    /// The plane's height is the image's divided by this (1, or 2 for the chroma
    /// planes of 4:2:0 formats).
    pub height_divisor: u32,
    /// The plane's aspect in Vulkan calls (copies, views, barriers):
    /// `VK_IMAGE_ASPECT_COLOR_BIT` for a single-plane format,
    /// `VK_IMAGE_ASPECT_PLANE_0_BIT` << plane for a multi-planar one.
    pub aspect: u32,
}

/// What CUDA sees of a format: for a multi-planar format the first five members
/// describe plane 0 (luma) and `planes` every plane.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_format_info {
    /// The `CUarray_format` value (`CU_AD_FORMAT_UNSIGNED_INT8` = 0x01, ...,
    /// `CU_AD_FORMAT_HALF` = 0x10, `CU_AD_FORMAT_FLOAT` = 0x20).
    pub cuda_format: u32,
    /// 1, 2 or 4.
    pub channels: u32,
    /// Bytes per texel (channels times 1, 2 or 4).
    pub bytes_per_texel: u32,
    /// How the Vulkan format interprets the channels.
    pub numeric: vkcuda_format_numeric,
    /// VK_TRUE for `B8G8R8A8_*`: CUDA's x channel is blue, z is red.
    pub bgra: VkBool32,
    /// 1 for a single-plane format; 2 or 3 for a multi-planar (YCbCr) format:
    /// luma, then CbCr interleaved (2 planes: Cb first, then Cr) or Cb and Cr (3
    /// planes). CUDA sees the planes of a shared video frame as pitched device
    /// memory (`vkcuda_image_get_plane_pointer`), not as arrays.
    pub plane_count: u32,
    /// The chroma planes' width is the image's divided by this: 2 for 4:2:0 and
    /// 4:2:2 formats, else 1.
    pub chroma_width_divisor: u32,
    /// The chroma planes' height is the image's divided by this: 2 for 4:2:0
    /// formats, else 1.
    pub chroma_height_divisor: u32,
    /// Bits per sample: 8, 10, 12 or 16 for a multi-planar format (10- and 12-bit
    /// samples in the high bits of 16-bit words); 8 times the channel size for a
    /// single-plane format.
    pub bits: u32,
    /// Each plane, `plane_count` of them; the rest zero.
    pub planes: [vkcuda_format_plane_info; 3],
}

/// Everything about a shared image.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_info {
    /// The Vulkan image. Owned by the vkcuda image, except for wrapped images.
    pub image: VkImage,
    /// Its memory: dedicated, or the engine's block for a wrapped image; a shared
    /// video frame's one allocation; plane 0's for a disjoint multi-planar image
    /// (Vulkan-only; see `planes`). Owned like `image`.
    pub memory: VkDeviceMemory,
    /// The whole allocation's size (what CUDA imported; plane 0's).
    pub allocation_size: u64,
    /// 1D, 2D or 3D (a cube is 2D with `VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT` in `flags`).
    pub image_type: vkcuda_image_type,
    /// The image's format (one of the table of `vkcuda_format_query`).
    pub format: VkFormat,
    /// The extent with defaults filled in (height and depth at least 1).
    pub extent: VkExtent3D,
    /// The number of mip levels (at least 1).
    pub mip_levels: u32,
    /// The number of array layers (at least 1; a multiple of 6 for cubes).
    pub array_layers: u32,
    /// The usage the image has (the default resolved when 0 was passed).
    pub usage: VkImageUsageFlags,
    /// `VKCUDA_IMAGE_CREATE_*` bits of the image.
    pub flags: u32,
    /// VK_TRUE when `image` and `memory` are the engine's (`vkcuda_image_wrap`).
    pub wrapped: VkBool32,
    /// The CUDA view of a single-plane image (`CUmipmappedArray`); NULL in a
    /// Vulkan-only context and for multi-planar images (a shared video frame's
    /// planes are pitched pointers: `vkcuda_image_get_plane_pointer`).
    pub cuda_mipmapped_array: *mut CUmipmappedArray_st,
    /// The `CUDA_ARRAY3D_*` flags of the CUDA view (LAYERED = 0x1, SURFACE_LDST =
    /// 0x2 with STORAGE usage, CUBEMAP = 0x4, COLOR_ATTACHMENT = 0x20 with
    /// COLOR_ATTACHMENT usage); 0 where `cuda_mipmapped_array` is NULL (a
    /// Vulkan-only context, a multi-planar image).
    pub cuda_array_flags: u32,
    /// What CUDA sees of the format (every plane).
    pub format_info: vkcuda_format_info,
    /// The number of planes: 1, or 2-3 for a multi-planar format. `memory` and
    /// `allocation_size` above are plane 0's.
    pub plane_count: u32,
    /// Each plane, `plane_count` of them; the rest zero.
    pub planes: [vkcuda_image_plane_info; 3],
}

/// One plane of a shared image (`vkcuda_image_info::planes`).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_plane_info {
    /// The plane's memory: the image's only allocation for single-plane images and
    /// shared video frames (every plane names it); one allocation per plane for a
    /// disjoint multi-planar image (Vulkan-only). Owned like
    /// `vkcuda_image_info::image`.
    pub memory: VkDeviceMemory,
    /// Its allocation size (what CUDA imported).
    pub allocation_size: u64,
    /// The plane's extent at level 0 (chroma planes of subsampled formats are
    /// smaller than the image).
    pub extent: VkExtent3D,
    /// The plane's aspect in Vulkan calls (`VK_IMAGE_ASPECT_COLOR_BIT`, or
    /// `VK_IMAGE_ASPECT_PLANE_0_BIT` << plane).
    pub aspect: u32,
    /// The plane's CUDA mipmapped array (plane 0 of a single-plane image); NULL in a
    /// Vulkan-only context and for the planes of multi-planar images (a shared
    /// video frame's planes are pitched pointers: `vkcuda_image_get_plane_pointer`).
    pub cuda_mipmapped_array: *mut CUmipmappedArray_st,
    /// The `CUDA_ARRAY3D_*` flags of the plane's CUDA array; 0 where
    /// `cuda_mipmapped_array` is NULL.
    pub cuda_array_flags: u32,
}

/// A texture sampler description for `vkcuda_image_create_texture_object`. All
/// zero: level 0, point filtering, clamp, unnormalized coordinates, integers read
/// as integers.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_texture_info {
    /// `VKCUDA_TEXTURE_*` bits.
    pub flags: u32,
    /// The mip level the texture reads (ignored with `VKCUDA_TEXTURE_ALL_LEVELS_BIT`).
    pub level: u32,
    /// How texels are filtered (`vkcuda_filter`; default point).
    pub filter: vkcuda_filter_raw,
    /// What reads outside the image return (`vkcuda_address_mode`; default clamp).
    pub address_mode: vkcuda_address_mode_raw,
    /// Integers as stored or as normalized floats (`vkcuda_read_mode`).
    pub read_mode: vkcuda_read_mode_raw,
    /// The colour returned outside the image with `VKCUDA_ADDRESS_MODE_BORDER`.
    pub border_color: [f32; 4],
}

fn zero_plane_format() -> vkcuda_format_plane_info {
    vkcuda_format_plane_info {
        format: 0,
        cuda_format: 0,
        channels: 0,
        bytes_per_texel: 0,
        width_divisor: 0,
        height_divisor: 0,
        aspect: 0,
    }
}

/// The aspect of plane `p` of a format of `planes` planes.
fn aspect_of(planes: usize, p: usize) -> u32 {
    if planes == 1 {
        vk::ImageAspectFlags::COLOR.as_raw()
    } else {
        vk::ImageAspectFlags::PLANE_0.as_raw() << p
    }
}

fn format_to_c(layout: &Layout) -> vkcuda_format_info {
    use vkcuda_format_numeric::*;
    let f: FormatInfo = layout.plane(0).info;
    let n = layout.plane_count();
    let mut planes = [zero_plane_format(); 3];
    for (p, pl) in layout.planes().enumerate() {
        planes[p] = vkcuda_format_plane_info {
            format: pl.info.format.as_raw(),
            cuda_format: pl.info.cuda as u32,
            channels: pl.info.channels,
            bytes_per_texel: pl.info.bytes_per_texel(),
            width_divisor: pl.width_divisor,
            height_divisor: pl.height_divisor,
            aspect: aspect_of(n, p),
        };
    }
    let (chroma_width_divisor, chroma_height_divisor) =
        layout.planar().map_or((1, 1), |p| p.chroma_divisors());
    vkcuda_format_info {
        cuda_format: f.cuda as u32,
        channels: f.channels,
        bytes_per_texel: f.bytes_per_texel(),
        numeric: match f.numeric {
            Numeric::Unorm => VKCUDA_FORMAT_NUMERIC_UNORM,
            Numeric::Snorm => VKCUDA_FORMAT_NUMERIC_SNORM,
            Numeric::Uint => VKCUDA_FORMAT_NUMERIC_UINT,
            Numeric::Sint => VKCUDA_FORMAT_NUMERIC_SINT,
            Numeric::Sfloat => VKCUDA_FORMAT_NUMERIC_SFLOAT,
            Numeric::Srgb => VKCUDA_FORMAT_NUMERIC_SRGB,
        },
        bgra: (f.order == Order::Bgra) as u32,
        plane_count: n as u32,
        chroma_width_divisor,
        chroma_height_divisor,
        bits: layout.planar().map_or(8 * f.bytes_per_channel, |p| p.bits),
        planes,
    }
}

/// The plane memories of a wrap info: `planes`, with `memory`/`allocation_size`
/// standing for plane 0 (see `vkcuda_image_wrap_info::planes`).
fn wrap_planes(info: &vkcuda_image_wrap_info) -> Result<Vec<PlaneMemory>> {
    let linear = info.description.flags & VKCUDA_IMAGE_CREATE_LINEAR_BIT != 0;
    let layout = format::layout_of(vk::Format::from_raw(info.description.format), linear)?;
    // A shared frame is one allocation: `memory` alone.
    let n = if linear { 1 } else { layout.plane_count() };
    let top = PlaneMemory {
        memory: info.memory,
        allocation_size: info.allocation_size,
        offset: info.offset,
        dedicated: check_bool(info.dedicated, "info->dedicated")?,
    };
    let given = |p: usize| PlaneMemory {
        memory: info.planes[p].memory,
        allocation_size: info.planes[p].allocation_size,
        offset: info.planes[p].offset,
        dedicated: false,
    };
    let zero = PlaneMemory {
        memory: vk::DeviceMemory::null(),
        allocation_size: 0,
        offset: 0,
        dedicated: false,
    };
    let same = |a: &PlaneMemory, b: &PlaneMemory| {
        (a.memory, a.allocation_size, a.offset) == (b.memory, b.allocation_size, b.offset)
    };
    if !same(&given(0), &zero) && !same(&given(0), &top) {
        return Err(Error::invalid(
            "info->planes[0] is not info->memory and info->allocation_size: both are plane 0's \
             (zeros leave it to memory and allocation_size)",
        ));
    }
    let mut out = vec![top];
    for p in 1..3 {
        let g = given(p);
        if p < n {
            out.push(g);
        } else if !same(&g, &zero) {
            return Err(Error::invalid(if n == 1 && layout.plane_count() > 1 {
                format!(
                    "info->planes[{p}] is set, but a shared video frame ({}, \
                     VKCUDA_IMAGE_CREATE_LINEAR_BIT) is one allocation: memory and \
                     allocation_size alone",
                    layout.display()
                )
            } else {
                format!(
                    "info->planes[{p}] is set, but {} has {n} plane{}",
                    layout.display(),
                    if n == 1 { "" } else { "s" }
                )
            }));
        }
    }
    Ok(out)
}

fn description(info: &vkcuda_image_create_info, what: &str) -> Result<Description> {
    check_flags(info.flags, IMAGE_CREATE_BITS, &format!("{what}flags"))?;
    Ok(Description {
        dimension: info.image_type.get(&format!("{what}image_type"))?,
        format: vk::Format::from_raw(info.format),
        width: info.extent.width,
        height: info.extent.height,
        depth: info.extent.depth,
        mip_levels: info.mip_levels,
        array_layers: info.array_layers,
        cube: info.flags & VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT != 0,
        usage: vk::ImageUsageFlags::from_raw(info.usage),
        linear: info.flags & VKCUDA_IMAGE_CREATE_LINEAR_BIT != 0,
    })
}

/// The `VKCUDA_IMAGE_CREATE_*` bits of a description.
pub(crate) fn description_flags(d: &Description) -> u32 {
    let mut flags = 0;
    if d.cube {
        flags |= VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT;
    }
    if d.linear {
        flags |= VKCUDA_IMAGE_CREATE_LINEAR_BIT;
    }
    flags
}

unsafe fn image_arg<'a>(image: *const vkcuda_image) -> Result<&'a Image> {
    handle::get(image, "image")
}

/// Says what CUDA sees of `format`: its `CUarray_format`, channel count and texel
/// size, and for a multi-planar (YCbCr) format its planes as a shared video frame
/// has them (`VKCUDA_IMAGE_CREATE_LINEAR_BIT`: format, channels, texel size, size
/// divisors, aspect of each pitched plane). `VKCUDA_ERROR_UNSUPPORTED` for a format
/// CUDA arrays cannot hold (3 channels, packed, 64-bit, scaled, block-compressed,
/// depth/stencil, packed 4:2:2), with a message naming a supported neighbour, and
/// for a multi-planar format whose video frames were not verified on NVIDIA's
/// driver, with the measured reason; `VKCUDA_ERROR_INVALID_ARGUMENT` for a value
/// that is not a `VkFormat`. Needs no context, device or driver.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_format_query(
    format: VkFormat,
    info: *mut vkcuda_format_info,
) -> vkcuda_result {
    boundary("vkcuda_format_query", || {
        let info = out(info, "info")?;
        let layout = format::layout(vk::Format::from_raw(format))?;
        format::check_cuda_view(&layout, true)?;
        *info = format_to_c(&layout);
        Ok(())
    })
}

/// Creates a shared image: a `VkImage` with one dedicated exportable allocation,
/// after checking with `vkGetPhysicalDeviceImageFormatProperties2` that the device
/// can export such an image (`VKCUDA_ERROR_UNSUPPORTED` with the reason
/// otherwise), imported into CUDA whole with the dedicated flag and mapped as a
/// mipmapped array of the same shape. A multi-planar format with
/// `VKCUDA_IMAGE_CREATE_LINEAR_BIT` makes a shared video frame: linear tiling, not
/// disjoint, one dedicated allocation that CUDA maps whole, each plane pitched
/// device memory (`vkcuda_image_get_plane_pointer`); a single-plane format with it
/// makes a one-plane frame the same way (2D, one level, one layer; no CUDA array). A multi-planar format without
/// it (OPTIMAL tiling) is refused in a context with CUDA
/// (`VKCUDA_ERROR_UNSUPPORTED`: its planes read wrong as CUDA arrays once the data
/// compresses); in a Vulkan-only context it makes a disjoint image
/// (`VK_IMAGE_CREATE_DISJOINT_BIT`; the device must offer
/// `VK_FORMAT_FEATURE_DISJOINT_BIT`) with one exportable allocation per plane. In a
/// Vulkan-only context only the Vulkan half is made. `*image` is written on
/// success, set to NULL on failure; nothing is left allocated on failure.
///
/// The image starts in `VK_IMAGE_LAYOUT_UNDEFINED`: hand it to CUDA with
/// `vkcuda_image_cmd_release_to_cuda` (old layout UNDEFINED is right only before
/// anyone wrote it).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_create(
    context: *const vkcuda_context,
    info: *const vkcuda_image_create_info,
    image: *mut *mut vkcuda_image,
) -> vkcuda_result {
    boundary("vkcuda_image_create", || {
        let made = (|| {
            out(image, "image")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            let desc = description(info, "info->")?;
            let inner = Image::create(ctx, &desc)?;
            Ok(handle::boxed::<vkcuda_image>(inner))
        })();
        write_handle(image, made)
    })
}

/// Makes the CUDA view of an image the engine created on exportable memory (see
/// `vkcuda_image_wrap_info`): a dedicated allocation, the image at `offset` in a
/// block shared with other resources (as VMA pools make them), a shared video
/// frame's dedicated allocation, or (Vulkan-only contexts) one allocation per
/// plane of a disjoint multi-planar image; from the description the engine
/// passes. Checks `export_handle_types` first (memory allocated without export
/// info is refused before any driver call), the description like
/// `vkcuda_image_create`, each offset + memory requirement against its
/// `allocation_size` (`VKCUDA_ERROR_INVALID_ARGUMENT`, "memory smaller than its
/// requirements"), the offsets against the image's alignment and, where the
/// memory's fd tells its real size (memfd-based drivers such as lavapipe: the
/// allocation's own size, not the file's, which includes the driver's header),
/// `allocation_size` against that. An image
/// wrapped inside a shared block cannot be exported to another process
/// (`VKCUDA_ERROR_UNSUPPORTED`). The engine keeps owning the image and memory and
/// must destroy them after `vkcuda_image_destroy`. In a Vulkan-only context the
/// checks run and no CUDA view is made.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_wrap(
    context: *const vkcuda_context,
    info: *const vkcuda_image_wrap_info,
    image: *mut *mut vkcuda_image,
) -> vkcuda_result {
    boundary("vkcuda_image_wrap", || {
        let made = (|| {
            out(image, "image")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(info.flags, 0, "info->flags")?;
            let desc = description(&info.description, "info->description.")?;
            let planes = wrap_planes(info)?;
            let types = vk::ExternalMemoryHandleTypeFlags::from_raw(info.export_handle_types);
            let inner = Image::wrap(ctx, info.image, &planes, types, &desc)?;
            Ok(handle::boxed::<vkcuda_image>(inner))
        })();
        write_handle(image, made)
    })
}

/// Fills `*info` with the image's handles, description (defaults resolved) and
/// CUDA view.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_info(
    image: *const vkcuda_image,
    info: *mut vkcuda_image_info,
) -> vkcuda_result {
    boundary("vkcuda_image_get_info", || {
        let im = image_arg(image)?;
        let info = out(info, "info")?;
        let d = im.description();
        let mipmap = |p| im.mipmapped_array(p).unwrap_or(std::ptr::null_mut());
        let mut planes = [vkcuda_image_plane_info {
            memory: vk::DeviceMemory::null(),
            allocation_size: 0,
            extent: vk::Extent3D::default(),
            aspect: 0,
            cuda_mipmapped_array: std::ptr::null_mut(),
            cuda_array_flags: 0,
        }; 3];
        for (p, m) in im.plane_memories().into_iter().enumerate() {
            planes[p] = vkcuda_image_plane_info {
                memory: m.memory,
                allocation_size: m.allocation_size,
                extent: im.plane_extent(p),
                aspect: im.plane_aspect(p).as_raw(),
                cuda_mipmapped_array: mipmap(p).cast(),
                cuda_array_flags: if mipmap(p).is_null() {
                    0
                } else {
                    im.cuda_array_flags(p)
                },
            };
        }
        *info = vkcuda_image_info {
            image: im.vk_image(),
            memory: im.vk_memory(),
            allocation_size: im.allocation_size(),
            image_type: match d.dimension {
                Dimension::D1 => vkcuda_image_type::VKCUDA_IMAGE_TYPE_1D,
                Dimension::D2 => vkcuda_image_type::VKCUDA_IMAGE_TYPE_2D,
                Dimension::D3 => vkcuda_image_type::VKCUDA_IMAGE_TYPE_3D,
            },
            format: d.format.as_raw(),
            extent: vk::Extent3D {
                width: d.width,
                height: d.height,
                depth: d.depth,
            },
            mip_levels: d.mip_levels,
            array_layers: d.array_layers,
            usage: d.usage.as_raw(),
            flags: description_flags(d),
            wrapped: im.is_wrapped() as u32,
            cuda_mipmapped_array: mipmap(0).cast(),
            // No CUDA view in a Vulkan-only context: no flags either.
            cuda_array_flags: if mipmap(0).is_null() {
                0
            } else {
                im.cuda_array_flags(0)
            },
            format_info: format_to_c(im.layout()),
            plane_count: im.plane_count() as u32,
            planes,
        };
        Ok(())
    })
}

/// The image's `VkImage` (owned by the vkcuda image, except for wrapped images).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_vk_image(
    image: *const vkcuda_image,
    vk_image: *mut VkImage,
) -> vkcuda_result {
    boundary("vkcuda_image_get_vk_image", || {
        let im = image_arg(image)?;
        let vk_image = out(vk_image, "vk_image")?;
        *vk_image = im.vk_image();
        Ok(())
    })
}

/// The CUDA mipmapped array (`CUmipmappedArray`) of a single-plane image; it
/// belongs to the image (do not destroy it). `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a
/// Vulkan-only context; `VKCUDA_ERROR_INVALID_ARGUMENT` for a shared video frame
/// (its planes are pitched pointers: `vkcuda_image_get_plane_pointer`).
/// `*array` is set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_cuda_mipmapped_array(
    image: *const vkcuda_image,
    array: *mut *mut CUmipmappedArray_st,
) -> vkcuda_result {
    boundary("vkcuda_image_get_cuda_mipmapped_array", || {
        let made = (|| {
            let im = image_arg(image)?;
            out(array, "array")?;
            Ok(im.mipmapped_array(0)?.cast())
        })();
        write_native(array, made)
    })
}

/// The CUDA array (`CUarray`) of mip level `level` (`cuMipmappedArrayGetLevel`) of
/// a single-plane image; it belongs to the image (do not destroy it). For layered
/// images it holds every layer. `VKCUDA_ERROR_INVALID_ARGUMENT` for a level past
/// the last and for a shared video frame (pitched planes:
/// `vkcuda_image_get_plane_pointer`), `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a
/// Vulkan-only context.
/// `*array` is set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_cuda_array(
    image: *const vkcuda_image,
    level: u32,
    array: *mut *mut CUarray_st,
) -> vkcuda_result {
    boundary("vkcuda_image_get_cuda_array", || {
        let made = (|| {
            let im = image_arg(image)?;
            out(array, "array")?;
            Ok(im.level_array(0, level)?.cast())
        })();
        write_native(array, made)
    })
}

/// The CUDA surface object (`CUsurfObject`, for `surf2Dwrite` and friends) of mip
/// level `level` of a single-plane image. Made on the first call for that level;
/// later calls return the same object. It belongs to the image and is destroyed with it. The image needs
/// `VK_IMAGE_USAGE_STORAGE_BIT` (`VKCUDA_ERROR_UNSUPPORTED` otherwise).
/// Surface x coordinates are in bytes (x * `bytes_per_texel`), as in CUDA.
/// A shared video frame has none (`VKCUDA_ERROR_INVALID_ARGUMENT`: CUDA sees its
/// planes as pitched device memory, `vkcuda_image_get_plane_pointer`);
/// `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a Vulkan-only context. `*surface` is
/// untouched on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_surface_object(
    image: *const vkcuda_image,
    level: u32,
    surface: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_image_get_surface_object", || {
        let im = image_arg(image)?;
        let surface = out(surface, "surface")?;
        *surface = im.surface(0, level)?;
        Ok(())
    })
}

/// Makes a CUDA texture object (`CUtexObject`) on one mip level of a single-plane
/// image, or on all of them with `VKCUDA_TEXTURE_ALL_LEVELS_BIT`. Each call makes a new
/// object; it belongs to the image and is destroyed with it. Refused
/// (`VKCUDA_ERROR_INVALID_ARGUMENT`): linear filtering of integers read as
/// integers, the normalized-float read mode on 32-bit integer formats, wrap or
/// mirror without normalized coordinates, unknown enum values, and a shared video
/// frame (CUDA sees its planes as pitched device memory,
/// `vkcuda_image_get_plane_pointer`; Vulkan samples it through a
/// `VkSamplerYcbcrConversion`). `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a Vulkan-only
/// context. sRGB formats are not decoded: reads return the encoded values.
/// `*texture` is untouched on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_create_texture_object(
    image: *const vkcuda_image,
    info: *const vkcuda_texture_info,
    texture: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_image_create_texture_object", || {
        let im = image_arg(image)?;
        let info = arg(info, "info")?;
        let texture = out(texture, "texture")?;
        *texture = im.texture(0, &sampler_arg(info)?)?;
        Ok(())
    })
}

fn sampler_arg(info: &vkcuda_texture_info) -> Result<Sampler> {
    check_flags(
        info.flags,
        VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT | VKCUDA_TEXTURE_ALL_LEVELS_BIT,
        "info->flags",
    )?;
    let all = info.flags & VKCUDA_TEXTURE_ALL_LEVELS_BIT != 0;
    Ok(Sampler {
        level: (!all).then_some(info.level),
        linear: info.filter.get("info->filter")?,
        address: info.address_mode.get("info->address_mode")?,
        normalized_coordinates: info.flags & VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT != 0,
        normalized_float: info.read_mode.get("info->read_mode")?,
        border_color: info.border_color,
    })
}

/// The CUDA mipmapped array (`CUmipmappedArray`) of plane `plane` of the image. Only
/// single-plane images have CUDA arrays, so the one plane that has one is plane 0
/// of a single-plane image (the same as `vkcuda_image_get_cuda_mipmapped_array`);
/// it belongs to the image (do not destroy it). `VKCUDA_ERROR_INVALID_ARGUMENT`
/// for a plane past the last and for a shared video frame (its planes are pitched
/// pointers: `vkcuda_image_get_plane_pointer`), `VKCUDA_ERROR_CUDA_UNAVAILABLE` in
/// a Vulkan-only context (the only place an OPTIMAL multi-planar image exists).
/// `*array` is set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_plane_cuda_mipmapped_array(
    image: *const vkcuda_image,
    plane: u32,
    array: *mut *mut CUmipmappedArray_st,
) -> vkcuda_result {
    boundary("vkcuda_image_get_plane_cuda_mipmapped_array", || {
        let made = (|| {
            let im = image_arg(image)?;
            out(array, "array")?;
            Ok(im.mipmapped_array(plane as usize)?.cast())
        })();
        write_native(array, made)
    })
}

/// The CUDA array (`CUarray`) of mip level `level` of plane `plane` of the image:
/// plane 0 of a single-plane image (the same as `vkcuda_image_get_cuda_array`). It
/// belongs to the image (do not destroy it). `VKCUDA_ERROR_INVALID_ARGUMENT` for a
/// plane or level past the last and for a shared video frame (its planes are
/// pitched pointers: `vkcuda_image_get_plane_pointer`),
/// `VKCUDA_ERROR_CUDA_UNAVAILABLE` in a Vulkan-only context.
/// `*array` is set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_plane_cuda_array(
    image: *const vkcuda_image,
    plane: u32,
    level: u32,
    array: *mut *mut CUarray_st,
) -> vkcuda_result {
    boundary("vkcuda_image_get_plane_cuda_array", || {
        let made = (|| {
            let im = image_arg(image)?;
            out(array, "array")?;
            Ok(im.level_array(plane as usize, level)?.cast())
        })();
        write_native(array, made)
    })
}

/// The CUDA surface object (`CUsurfObject`) of mip level `level` of plane
/// `plane`, made on the first call for that plane and level and kept until the
/// image is destroyed (later calls return the same object). Surface x
/// coordinates are in bytes (x * the plane's `bytes_per_texel`). Only plane 0 of a
/// single-plane image has one; it needs `VK_IMAGE_USAGE_STORAGE_BIT`
/// (`VKCUDA_ERROR_UNSUPPORTED` otherwise). `VKCUDA_ERROR_INVALID_ARGUMENT` for a
/// shared video frame (pitched planes: `vkcuda_image_get_plane_pointer`).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_plane_surface_object(
    image: *const vkcuda_image,
    plane: u32,
    level: u32,
    surface: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_image_get_plane_surface_object", || {
        let im = image_arg(image)?;
        let surface = out(surface, "surface")?;
        *surface = im.surface(plane as usize, level)?;
        Ok(())
    })
}

/// Makes a CUDA texture object (`CUtexObject`) on plane `plane` of the image, as
/// `vkcuda_image_create_texture_object` does on plane 0 (the same checks). Only
/// plane 0 of a single-plane image has a CUDA array to sample;
/// `VKCUDA_ERROR_INVALID_ARGUMENT` for a shared video frame (pitched planes:
/// `vkcuda_image_get_plane_pointer`; Vulkan samples it through a
/// `VkSamplerYcbcrConversion`). Each call makes a new object; it belongs to the
/// image and is destroyed with it.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_create_plane_texture_object(
    image: *const vkcuda_image,
    plane: u32,
    info: *const vkcuda_texture_info,
    texture: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_image_create_plane_texture_object", || {
        let im = image_arg(image)?;
        let info = arg(info, "info")?;
        let texture = out(texture, "texture")?;
        *texture = im.texture(plane as usize, &sampler_arg(info)?)?;
        Ok(())
    })
}

/// Exports the memory of plane `plane` as a new POSIX fd (OPAQUE_FD,
/// vkGetMemoryFdKHR); **the caller owns it**. Plane 0 of a single-plane image is
/// what `vkcuda_image_export_fd` exports; every plane of a shared video frame
/// names its one allocation. Import a disjoint multi-planar image (Vulkan-only)
/// elsewhere with all its planes' fds (`vkcuda_image_import_description_fds`).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_export_plane_fd(
    image: *const vkcuda_image,
    plane: u32,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_image_export_plane_fd", || {
        let im = image_arg(image)?;
        let fd = out(fd, "fd")?;
        *fd = im.export_plane_fd(plane as usize)?.into_raw_fd();
        Ok(())
    })
}

/// One plane of a shared frame (a video frame's plane, or a linear single-plane
/// image's only one) as CUDA sees it: pitched device memory
/// (`vkcuda_image_get_plane_pointer`). `cuda_pointer`, `row_pitch`, `width` x
/// `height` and `bytes_per_texel` are what `cuMemcpy2D`, NPP, NVDEC's output and
/// NVENC's input take.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_image_plane_pointer {
    /// The plane's first row (`CUdeviceptr`) in the image's CUDA context, or 0 in a
    /// Vulkan-only context. Owned by the image: valid until `vkcuda_image_destroy`.
    pub cuda_pointer: u64,
    /// Where the plane starts in the image's allocation
    /// (`VkSubresourceLayout::offset` of `VK_IMAGE_ASPECT_PLANE_i_BIT`, of
    /// `VK_IMAGE_ASPECT_COLOR_BIT` for a single-plane image).
    pub offset: u64,
    /// Bytes from one row to the next (`VkSubresourceLayout::rowPitch`; at least
    /// `width` x `bytes_per_texel`, often padded: never assume it).
    pub row_pitch: u64,
    /// The bytes the plane spans (`VkSubresourceLayout::size`).
    pub size: u64,
    /// The plane's width in texels (half the frame's for the chroma planes of
    /// 4:2:0 and 4:2:2 formats).
    pub width: u32,
    /// The plane's height in rows (half the frame's for the chroma planes of
    /// 4:2:0 formats).
    pub height: u32,
    /// 1 (8-bit luma or Cb/Cr), 2 (interleaved 8-bit CbCr, or a 10/12/16-bit
    /// sample in a 16-bit word: the high bits), or 4 (interleaved 16-bit CbCr);
    /// for a single-plane image its texel size (4 for RGBA8, 8 for RGBA16F, ...).
    pub bytes_per_texel: u32,
    /// The plane's single-plane `VkFormat` (`VK_FORMAT_R8_UNORM`,
    /// `VK_FORMAT_R8G8_UNORM`, `VK_FORMAT_R10X6_UNORM_PACK16`, ...; the image's
    /// own format for a single-plane image).
    pub format: VkFormat,
    /// The plane's aspect in Vulkan copies (`VK_IMAGE_ASPECT_PLANE_0_BIT` << plane;
    /// `VK_IMAGE_ASPECT_COLOR_BIT` for a single-plane image).
    pub aspect: u32,
}

/// Fills `*pointer` with plane `plane` of a shared frame (an image created,
/// wrapped or imported with `VKCUDA_IMAGE_CREATE_LINEAR_BIT`: a video frame's
/// plane, or plane 0 of a linear single-plane image): its CUDA device pointer (0
/// in a Vulkan-only context), offset, row pitch, extent and texel size.
/// `VKCUDA_ERROR_INVALID_ARGUMENT` for a plane past the format's planes and for
/// an image that is not a shared frame (an optimal single-plane image's CUDA view
/// is arrays: `vkcuda_image_get_cuda_array`; an OPTIMAL multi-planar image,
/// Vulkan-only, has no CUDA view). `*pointer` is untouched on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_plane_pointer(
    image: *const vkcuda_image,
    plane: u32,
    pointer: *mut vkcuda_image_plane_pointer,
) -> vkcuda_result {
    boundary("vkcuda_image_get_plane_pointer", || {
        let im = image_arg(image)?;
        let pointer = out(pointer, "pointer")?;
        let p = im.plane_pointer(plane as usize)?;
        *pointer = vkcuda_image_plane_pointer {
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

/// How a multi-planar image's samples are read as colour
/// (`vkcuda_image_set_video_color`): ITU-T H.273 code points, as NVDEC's
/// `CUVIDEOFORMAT::video_signal_description` and a bitstream's VUI carry them,
/// and where chroma sits. The matrix and range drive the
/// `VkSamplerYcbcrConversion` (`vkcuda_image_get_ycbcr_conversion_info`); the
/// transfer characteristics and primaries are carried for the engine's shader
/// (Vulkan's conversion does not apply them). A frame starts as BT.709 (1, 1, 1),
/// narrow range, chroma co-sited in x and between rows in y.
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_video_color {
    /// Reserved; must be 0.
    pub flags: u32,
    /// H.273 MatrixCoefficients, and the `VkSamplerYcbcrModelConversion` each
    /// gives: 1 BT.709 (`YCBCR_709`), 5 or 6 BT.601 (`YCBCR_601`), 9 BT.2020
    /// non-constant luminance (`YCBCR_2020`), 2 unspecified (sampled as BT.709), 0
    /// identity: the planes hold G, B and R (GBR, as H.273 stores RGB), sampled with
    /// `RGB_IDENTITY` (no matrix and no range expansion of B and R, which
    /// `YCBCR_IDENTITY` would still apply). Others have no Vulkan model:
    /// `VKCUDA_ERROR_UNSUPPORTED`; so is identity in narrow range
    /// (`RGB_IDENTITY` ignores the range: full range only).
    pub matrix_coefficients: u32,
    /// H.273 TransferCharacteristics (1 BT.709, 13 sRGB, 16 PQ, 18 HLG, ...); 0-255.
    pub transfer_characteristics: u32,
    /// H.273 ColourPrimaries (1 BT.709, 5/6 BT.601, 9 BT.2020, ...); 0-255.
    pub colour_primaries: u32,
    /// VK_TRUE for full-range samples (`video_full_range_flag`), VK_FALSE for
    /// narrow ("video") range.
    pub full_range: VkBool32,
    /// Where chroma sits between luma columns: `VK_CHROMA_LOCATION_COSITED_EVEN`
    /// (0) or `VK_CHROMA_LOCATION_MIDPOINT` (1).
    pub x_chroma_offset: i32,
    /// Where chroma sits between luma rows (same values).
    pub y_chroma_offset: i32,
}

pub(crate) fn video_color_from_c(c: &vkcuda_video_color) -> Result<VideoColor> {
    check_flags(c.flags, 0, "color->flags")?;
    Ok(VideoColor {
        matrix: c.matrix_coefficients,
        transfer: c.transfer_characteristics,
        primaries: c.colour_primaries,
        full_range: check_bool(c.full_range, "color->full_range")?,
        x_chroma: vk::ChromaLocation::from_raw(c.x_chroma_offset),
        y_chroma: vk::ChromaLocation::from_raw(c.y_chroma_offset),
    })
}

/// Sets a multi-planar image's colour description (a decoder's: NVDEC's
/// `CUVIDEOFORMAT`), which `vkcuda_image_get_ycbcr_conversion_info` turns into a
/// sampler conversion. `VKCUDA_ERROR_INVALID_ARGUMENT` for a single-plane image, a
/// code point past 255, a chroma offset that is not a `VkChromaLocation`, a
/// non-boolean `full_range` or flags; `VKCUDA_ERROR_UNSUPPORTED` for a matrix
/// Vulkan has no model for. The image keeps its previous description on failure.
///
/// `image` is a const pointer although the call changes the image's colour
/// description: as in every call but destroy, `const` says the call may run
/// beside any other on the same image (the description is internally
/// synchronised), not that the image cannot change. A conversion made from the
/// old description stays as it was: get the conversion info again.
///
/// Thread-safety: may be called from any thread; a concurrent get sees the old or
/// the new description, whole.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_set_video_color(
    image: *const vkcuda_image,
    color: *const vkcuda_video_color,
) -> vkcuda_result {
    boundary("vkcuda_image_set_video_color", || {
        let im = image_arg(image)?;
        let c = video_color_from_c(arg(color, "color")?)?;
        im.set_video_color(&c)
    })
}

/// Fills `*color` with a multi-planar image's colour description (the default
/// until one is set). `VKCUDA_ERROR_INVALID_ARGUMENT` for a single-plane image;
/// `*color` is untouched on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_video_color(
    image: *const vkcuda_image,
    color: *mut vkcuda_video_color,
) -> vkcuda_result {
    boundary("vkcuda_image_get_video_color", || {
        let im = image_arg(image)?;
        let out = out(color, "color")?;
        let c = im.video_color()?;
        *out = vkcuda_video_color {
            flags: 0,
            matrix_coefficients: c.matrix,
            transfer_characteristics: c.transfer,
            colour_primaries: c.primaries,
            full_range: c.full_range as u32,
            x_chroma_offset: c.x_chroma.as_raw(),
            y_chroma_offset: c.y_chroma.as_raw(),
        };
        Ok(())
    })
}

/// Fills `*info` (a `VkSamplerYcbcrConversionCreateInfo`) so that
/// `vkCreateSamplerYcbcrConversion` samples the image as its colour description
/// says: `sType`, `pNext` = NULL, the image's format, the model and range of the
/// description, identity components, its chroma offsets, `chromaFilter` LINEAR
/// where the format's features (with the image's tiling) allow linear chroma
/// filtering, else NEAREST, and `forceExplicitReconstruction` VK_FALSE. The
/// engine creates (and destroys) the conversion, the sampler and the view with it,
/// on a device made with the `samplerYcbcrConversion` feature enabled
/// (`VkPhysicalDeviceSamplerYcbcrConversionFeatures` or Vulkan 1.1's
/// `VkPhysicalDeviceVulkan11Features`; standalone contexts enable it where the
/// device has it), and gives the sampler `magFilter` and `minFilter` equal to
/// `chromaFilter` unless the format's features have
/// `VK_FORMAT_FEATURE_SAMPLED_IMAGE_YCBCR_CONVERSION_SEPARATE_RECONSTRUCTION_FILTER_BIT`
/// (VUID-VkSamplerCreateInfo-minFilter-01645).
/// `VKCUDA_ERROR_UNSUPPORTED` when the device cannot sample the image (no SAMPLED
/// usage or feature) or cannot site chroma as described;
/// `VKCUDA_ERROR_INVALID_ARGUMENT` for a single-plane image. `*info` is untouched
/// on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_get_ycbcr_conversion_info(
    image: *const vkcuda_image,
    info: *mut VkSamplerYcbcrConversionCreateInfo,
) -> vkcuda_result {
    boundary("vkcuda_image_get_ycbcr_conversion_info", || {
        let im = image_arg(image)?;
        let out = out(info, "info")?;
        *out = im.ycbcr_conversion()?.create_info();
        Ok(())
    })
}

/// One plane of pitch-linear device memory (`vkcuda_pitched_planes`).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_pitched_plane {
    /// The address of the plane's first row (`CUdeviceptr`), not 0, in memory
    /// `cuMemGetAddressRange` knows, the plane's rows inside one allocation: device
    /// memory of the image's CUDA device (`cuMemAlloc`, a `cuMemAllocPitch`
    /// allocation, a frame of NVDEC's `cuvidMapVideoFrame` at its plane offset, a
    /// shared buffer's CUDA pointer), managed memory (`cuMemAllocManaged`) or
    /// page-locked host memory (`cuMemAllocHost`, `cuMemHostRegister`: its device
    /// pointer). Plain host memory and made-up addresses are refused.
    pub device_pointer: u64,
    /// Bytes from one row to the next; at least the plane's width times its
    /// `bytes_per_texel`.
    pub pitch: u64,
}

/// Pitch-linear planes for `vkcuda_image_cuda_copy_from_pitched` and
/// `vkcuda_image_cuda_copy_to_pitched`: one per plane of the image, each covering
/// the plane's level-0 extent (`vkcuda_image_plane_info::extent`).
///
/// @ingroup image
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_pitched_planes {
    /// Reserved; must be 0.
    pub flags: u32,
    /// The image's plane count (1 for single-plane images).
    pub plane_count: u32,
    /// The planes, `plane_count` of them; the rest must be zero.
    pub planes: [vkcuda_pitched_plane; 3],
}

/// The planes of `planes`, in a fixed array (no allocation: a per-frame call).
unsafe fn pitched_arg(planes: *const vkcuda_pitched_planes) -> Result<([PitchedPlane; 3], usize)> {
    let p = arg(planes, "planes")?;
    check_flags(p.flags, 0, "planes->flags")?;
    if p.plane_count == 0 || p.plane_count > 3 {
        return Err(Error::invalid(format!(
            "planes->plane_count is {}, not 1, 2 or 3",
            p.plane_count
        )));
    }
    let n = p.plane_count as usize;
    if let Some(extra) = (n..3).find(|&i| p.planes[i].device_pointer != 0 || p.planes[i].pitch != 0)
    {
        return Err(Error::invalid(format!(
            "planes->planes[{extra}] is set, but planes->plane_count is {n}"
        )));
    }
    let list = p.planes.map(|q| PitchedPlane {
        pointer: q.device_pointer,
        pitch: q.pitch,
    });
    Ok((list, n))
}

unsafe fn pitched_copy(
    image: *const vkcuda_image,
    planes: *const vkcuda_pitched_planes,
    stream: *mut CUstream_st,
    to_image: bool,
) -> Result<()> {
    let im = image_arg(image)?;
    let (list, n) = pitched_arg(planes)?;
    im.copy_pitched(&list[..n], to_image, stream.cast())
}

/// Enqueues on `stream` the copy from pitch-linear device memory into level 0 of
/// every plane of the image, one `cuMemcpy2DAsync` per plane, device to device:
/// what a video decoder hands over. One call copies a whole frame: for NV12 from
/// NVDEC's `cuvidMapVideoFrame` (a device pointer and a pitch), `plane_count` 2,
/// plane 0 the luma at the pointer and plane 1 the CbCr rows, which start
/// `pitch * height` bytes after it, both at that pitch. A single-plane image takes
/// `plane_count` 1. Nothing is copied through the host, and the call returns once
/// the copies are enqueued.
///
/// Checked before anything is enqueued, each with its code:
/// - `planes` or `image` NULL, or a plane's `device_pointer` 0:
///   `VKCUDA_ERROR_NULL_POINTER`;
/// - `planes->flags` not 0, `planes->plane_count` not the image's plane count, a
///   plane past `plane_count` not all zero, a pitch less than the plane's row
///   (width times `bytes_per_texel`), rows whose span overflows the address
///   space: `VKCUDA_ERROR_INVALID_ARGUMENT`;
/// - a 3D image or one with several layers: `VKCUDA_ERROR_UNSUPPORTED`;
/// - a Vulkan-only context: `VKCUDA_ERROR_CUDA_UNAVAILABLE`;
/// - `stream` not of the image's CUDA context: `VKCUDA_ERROR_DEVICE_MISMATCH`
///   (NULL is the legacy default stream);
/// - a plane's pointer in no allocation CUDA knows (`cuMemGetAddressRange` fails:
///   plain host memory, a freed or made-up address; the copy would fault and lose
///   the CUDA context, by default the primary context that PyTorch and CuPy share,
///   for the rest of the process): `VKCUDA_ERROR_INVALID_ARGUMENT`;
/// - rows that end past the end of the CUDA allocation a plane's pointer is in:
///   `VKCUDA_ERROR_INVALID_ARGUMENT`, naming the plane and the bytes past the end.
///
/// Accepted memory is what `cuMemGetAddressRange` answers for: device memory of
/// any kind (`cuMemAlloc`, `cuMemAllocPitch`, NVDEC's mapped frames, shared
/// buffers' CUDA pointers), managed memory (`cuMemAllocManaged`) and page-locked
/// host memory (`cuMemAllocHost`, `cuMemHostRegister`: their device pointers),
/// which a copy may read and write. `cuMemGetAddressRange` reports each
/// physical allocation mapped into a virtual range (`cuMemMap`: PyTorch's
/// expandable segments) on its own, so a plane's rows must lie in one of them.
/// The allocation ranges found are remembered
/// per thread (the last 32), so per-frame calls from the same decoder surfaces
/// ask the driver once per surface. Freeing memory of the library (a buffer's or
/// frame's mapping, a CUDA-allocated buffer) drops them; memory the caller frees
/// and allocates again inside a remembered range is not looked up again (the
/// rows must fit the new allocation).
///
/// Handoff as for any CUDA access to the image: the engine released it to CUDA
/// (`vkcuda_image_cmd_release_to_cuda`) and `stream` waits for that submit (a
/// semaphore wait) before this call's copies; signal after them, and acquire it
/// back before Vulkan reads.
///
/// Thread-safety: may be called from any thread; copies on one stream run in
/// the order they were enqueued.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_cuda_copy_from_pitched(
    image: *const vkcuda_image,
    planes: *const vkcuda_pitched_planes,
    stream: *mut CUstream_st,
) -> vkcuda_result {
    boundary("vkcuda_image_cuda_copy_from_pitched", || {
        pitched_copy(image, planes, stream, true)
    })
}

/// Enqueues on `stream` the copy from level 0 of every plane of the image into
/// pitch-linear device memory (one `cuMemcpy2DAsync` per plane): the input of a
/// video encoder that takes pitched frames (NVENC's registered CUDA device
/// pointers). The same checks and handoff as
/// `vkcuda_image_cuda_copy_from_pitched`.
///
/// Thread-safety: may be called from any thread; copies on one stream run in
/// the order they were enqueued.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_cuda_copy_to_pitched(
    image: *const vkcuda_image,
    planes: *const vkcuda_pitched_planes,
    stream: *mut CUstream_st,
) -> vkcuda_result {
    boundary("vkcuda_image_cuda_copy_to_pitched", || {
        pitched_copy(image, planes, stream, false)
    })
}

/// Exports the image's memory as a new POSIX fd (OPAQUE_FD, vkGetMemoryFdKHR).
/// Each call makes a new fd and **the caller owns it**: close it, or import it
/// (`VkImportMemoryFdInfoKHR`, which takes it on success) as a dedicated allocation
/// of `allocation_size` bytes for an image of the same description (a shared video
/// frame's one allocation too). A disjoint multi-planar image (Vulkan-only) has one
/// allocation per plane: `VKCUDA_ERROR_INVALID_ARGUMENT`, export each with
/// `vkcuda_image_export_plane_fd`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_export_fd(
    image: *const vkcuda_image,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_image_export_fd", || {
        let im = image_arg(image)?;
        let fd = out(fd, "fd")?;
        *fd = im.export_fd()?.into_raw_fd();
        Ok(())
    })
}

/// Records into the engine's command buffer the barrier that releases the whole
/// image (every level, layer and plane) from `info->queue_family_index` to
/// `VK_QUEUE_FAMILY_EXTERNAL` (CUDA), transitioning it from `old_layout` (the
/// layout the engine left it in) to `VK_IMAGE_LAYOUT_GENERAL`, the layout CUDA
/// works on, and making the engine's writes available. Submit it before the
/// semaphore signal CUDA waits on.
///
/// `old_layout` must be one the image's usage allows (`GENERAL` suits every
/// usage; `TRANSFER_SRC_OPTIMAL` needs `VK_IMAGE_USAGE_TRANSFER_SRC_BIT`, ...), as
/// `new_layout` of `vkcuda_image_cmd_acquire_from_cuda`: `VKCUDA_ERROR_INVALID_ARGUMENT`
/// otherwise, and for a queue family or masks `vkcuda_handoff_info` does not allow.
///
/// `old_layout` UNDEFINED discards the contents: use it only for an image nobody
/// has written yet (a new image) or whose contents do not matter. **Never pass
/// UNDEFINED after CUDA wrote the image**: the data may be lost.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_cmd_release_to_cuda(
    image: *const vkcuda_image,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    old_layout: VkImageLayout,
) -> vkcuda_result {
    boundary("vkcuda_image_cmd_release_to_cuda", || {
        let im = image_arg(image)?;
        let cmd = command_buffer_arg(command_buffer)?;
        im.cmd_release_to_cuda(
            cmd,
            &scope_arg(info)?,
            vk::ImageLayout::from_raw(old_layout),
        )
    })
}

/// Records the barrier that acquires the whole image back from
/// `VK_QUEUE_FAMILY_EXTERNAL` into `info->queue_family_index`, transitioning it
/// from `VK_IMAGE_LAYOUT_GENERAL` (where CUDA left it) to `new_layout`, and making
/// CUDA's writes visible to the accesses in `info`. Submit it after waiting on the
/// semaphore CUDA signalled. The transition keeps the contents; a transition from
/// UNDEFINED instead would not.
///
/// Thread-safety: the command buffer is externally synchronised, as in Vulkan.
///
/// @ingroup image
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_cmd_acquire_from_cuda(
    image: *const vkcuda_image,
    command_buffer: VkCommandBuffer,
    info: *const vkcuda_handoff_info,
    new_layout: VkImageLayout,
) -> vkcuda_result {
    boundary("vkcuda_image_cmd_acquire_from_cuda", || {
        let im = image_arg(image)?;
        let cmd = command_buffer_arg(command_buffer)?;
        im.cmd_acquire_from_cuda(
            cmd,
            &scope_arg(info)?,
            vk::ImageLayout::from_raw(new_layout),
        )
    })
}

/// Destroys the image: the CUDA views first (texture and surface objects, the
/// mipmapped array, the imported memory), then the `VkImage` and its memory (not
/// for wrapped images, whose Vulkan objects stay the engine's). The caller
/// guarantees no GPU work still uses it. NULL does nothing.
///
/// Thread-safety: must not overlap any other use of the image.
///
/// @ingroup image
#[no_mangle]
pub unsafe extern "C" fn vkcuda_image_destroy(image: *mut vkcuda_image) {
    quiet((), || handle::destroy(image, "vkcuda_image_destroy"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_enums_are_checked() {
        assert!(vkcuda_image_type_raw(2).get("t").is_err());
        assert_eq!(vkcuda_image_type_raw(3).get("t").unwrap(), Dimension::D3);
        assert!(vkcuda_filter_raw(2).get("f").is_err());
        assert!(vkcuda_address_mode_raw(4).get("a").is_err());
        assert!(vkcuda_read_mode_raw(-1).get("r").is_err());
    }
}
