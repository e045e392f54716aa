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
//!   [`format::check_cuda_view`](crate::format::check_cuda_view)).
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
//!
//! The module's parts: the [`Image`] and its CUDA view (`object`), the
//! [`Description`] and its resolution against the format table and the device
//! (`description`), and the video frame and its colour (`video`).

mod description;
mod object;
mod video;

pub(crate) use description::check_planar_shape;
pub use description::{max_mip_levels, Description, Dimension, ALLOWED_USAGE, DEFAULT_USAGE};
pub use object::{Image, PitchedPlane, Sampler};
pub use video::{Conversion, PlaneLayout, PlanePointer, VideoColor};

pub use crate::vulkan::image::PlaneMemory;
