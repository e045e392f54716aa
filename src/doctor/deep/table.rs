//! The deep self-test's cases, as data: [`BUFFERS`], [`IMAGES`], [`SEMAPHORES`]
//! (and every `verified` row of [`crate::format::PLANAR`]), their sizes, and how
//! long it waits.

use std::time::Duration;

use ash::vk;

use crate::buffer::Allocator;
use crate::image::Dimension;
use crate::semaphore::Kind;

/// Bytes of each shared buffer.
pub(crate) const BUFFER_BYTES: u64 = 4 << 20;
/// The extent of each video frame.
pub(crate) const FRAME_EXTENT: (u32, u32) = (1920, 1080);
/// The longest the self-test waits for one submit or one semaphore value: past
/// it the check fails (the doctor always returns).
pub(crate) const WAIT: Duration = Duration::from_secs(10);
/// What the whole run should take on a data-centre GPU (the H200 measurement is
/// in docs/GUIDE.md); `deep.total` warns past it.
pub(crate) const TARGET: Duration = Duration::from_secs(10);

/// CUDA driver calls the self-test makes beyond the library's own (which
/// `cuda::driver` checks): checked before any is called.
pub(crate) const CUDA_SYMBOLS: &[&str] = &[
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpy2D_v2",
    "cuMemcpy3D_v2",
    "cuCtxSynchronize",
];

/// One image case: a format and a shape (every case has its full mip chain: the
/// layered ones must, see `image::description::layers_agree`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ImageCase {
    pub(crate) format: vk::Format,
    /// "1D", "1D_ARRAY", "2D", "2D_ARRAY", "3D", "CUBE".
    pub(crate) shape: &'static str,
    pub(crate) dimension: Dimension,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) depth: u32,
    pub(crate) layers: u32,
    pub(crate) cube: bool,
}

const fn image(format: vk::Format, shape: &'static str) -> ImageCase {
    let (dimension, width, height, depth, layers, cube) = match shape.as_bytes() {
        b"1D" => (Dimension::D1, 1024, 1, 1, 1, false),
        b"1D_ARRAY" => (Dimension::D1, 1024, 1, 1, 4, false),
        b"2D_ARRAY" => (Dimension::D2, 256, 256, 1, 4, false),
        b"3D" => (Dimension::D3, 64, 64, 16, 1, false),
        b"CUBE" => (Dimension::D2, 128, 128, 1, 6, true),
        _ => (Dimension::D2, 256, 256, 1, 1, false),
    };
    ImageCase {
        format,
        shape,
        dimension,
        width,
        height,
        depth,
        layers,
        cube,
    }
}

/// One format of each class of [`crate::format::TABLE`] (8/16/32-bit channels; 1,
/// 2 and 4 channels; integer, float, sRGB, BGRA) as a 2D image, and every shape.
pub(crate) const IMAGES: &[ImageCase] = &[
    image(vk::Format::R8_UNORM, "2D"),
    image(vk::Format::R8G8_UINT, "2D"),
    image(vk::Format::R8G8B8A8_UNORM, "2D"),
    image(vk::Format::R8G8B8A8_SRGB, "2D"),
    image(vk::Format::B8G8R8A8_UNORM, "2D"),
    image(vk::Format::R16_SFLOAT, "2D"),
    image(vk::Format::R16G16_UNORM, "2D"),
    image(vk::Format::R16G16B16A16_SFLOAT, "2D"),
    image(vk::Format::R32_UINT, "2D"),
    image(vk::Format::R32G32_SFLOAT, "2D"),
    image(vk::Format::R32G32B32A32_SFLOAT, "2D"),
    image(vk::Format::R8G8B8A8_UNORM, "1D"),
    image(vk::Format::R16_UNORM, "1D_ARRAY"),
    image(vk::Format::R16G16B16A16_SFLOAT, "2D_ARRAY"),
    image(vk::Format::R32_SFLOAT, "3D"),
    image(vk::Format::R8G8B8A8_UNORM, "CUBE"),
];

/// The buffer cases: (check name suffix, allocator).
pub(crate) const BUFFERS: &[(&str, Allocator)] =
    &[("vulkan", Allocator::Vulkan), ("cuda", Allocator::Cuda)];

/// The semaphore cases.
pub(crate) const SEMAPHORES: &[(&str, Kind)] =
    &[("timeline", Kind::Timeline), ("binary", Kind::Binary)];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format;

    #[test]
    fn every_case_names_a_table_format() {
        for c in IMAGES {
            assert!(format::lookup(c.format).is_ok(), "{:?}", c.format);
        }
        assert!(format::PLANAR.iter().any(|p| p.verified));
    }
}
