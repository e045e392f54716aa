//! The share description: what a process that receives a buffer, semaphore or
//! image fd needs to know to import it, as a fixed-size little-endian record.
//!
//! Format version 4 is 128 bytes:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `VKCUDASH` |
//! | 8 | 2 | format version (4) |
//! | 10 | 2 | record size in bytes (128) |
//! | 12 | 4 | kind: 1 buffer, 2 semaphore, 3 image |
//! | 16 | 4 | number of fds that travel with it (1; an image: one per allocation, 1-3) |
//! | 20 | 4 | reserved, 0 |
//! | 24 | 16 | device UUID (`VkPhysicalDeviceIDProperties::deviceUUID` of the exporter) |
//! | 40 | 88 | the kind's fields (below), then zeros |
//!
//! Buffer: allocator u32 (0 Vulkan, 1 CUDA), dedicated u32 (0/1), allocation_size u64,
//! offset u64, size u64. Semaphore: type u32 (0 timeline, 1 binary), reserved u32,
//! value u64. Image: image type u32 (0 2D, 1 1D, 3 3D), VkFormat i32, width,
//! height, depth, mip levels, array layers, VkImageUsageFlags, flags (1 = cube
//! compatible, 2 = linear: a shared video frame), reserved u32 (all u32), then the
//! allocation size of each allocation (u64 at 80, 88, 96): one per plane of a
//! disjoint multi-planar image, else one (single-plane images and video frames,
//! whose planes share one dedicated allocation); 0 past the count. The fds travel
//! in the same order. Then a multi-planar image's colour description
//! ([`VideoColor`](crate::image::VideoColor), u32 each): H.273 matrix coefficients
//! at 104, transfer characteristics at 108, colour primaries at 112, and colour
//! flags at 116 (1 = present, 2 = full range, 4 = x chroma at MIDPOINT, 8 = y
//! chroma at MIDPOINT; without 1 all 16 bytes are 0: no colour travels, as for a
//! single-plane image or a description made from C's `vkcuda_share_description`).
//!
//! Version 1 (before multi-planar images) had one fd and one allocation size;
//! version 2 (before video frames) had no linear flag; version 3 (before colour
//! descriptions travelled) had no colour. Records of another version are refused
//! with both versions named (the two processes run different library versions).
//!
//! Parsing is strict: every reserved or unused byte must be zero and every value
//! possible, so a record from a newer library or a corrupted one is refused, not
//! guessed at.

use ash::vk;

use crate::buffer::{Allocator, Layout};
use crate::error::{Error, Result};
use crate::format;
use crate::image::{self, Dimension, VideoColor};
use crate::semaphore;

/// The size of a record.
pub const SIZE: usize = 128;
/// The format version this library writes and reads.
pub const VERSION: u16 = 4;
/// The first eight bytes of every record.
pub const MAGIC: [u8; 8] = *b"VKCUDASH";
/// The most fds a record of any kind carries (the receive buffer's room).
pub const MAX_FDS: usize = 4;

const HEADER: usize = 40;

/// What a description describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A [`Buffer`](crate::Buffer).
    Buffer,
    /// A [`Semaphore`](crate::Semaphore).
    Semaphore,
    /// An [`Image`](crate::Image).
    Image,
}

impl Kind {
    /// The record's kind field (1 buffer, 2 semaphore, 3 image).
    pub fn code(self) -> u32 {
        match self {
            Kind::Buffer => 1,
            Kind::Semaphore => 2,
            Kind::Image => 3,
        }
    }

    /// The kind of a record's kind field.
    pub fn from_code(code: u32) -> Option<Kind> {
        match code {
            1 => Some(Kind::Buffer),
            2 => Some(Kind::Semaphore),
            3 => Some(Kind::Image),
            _ => None,
        }
    }

    /// "buffer", "semaphore" or "image".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Buffer => "buffer",
            Kind::Semaphore => "semaphore",
            Kind::Image => "image",
        }
    }
}

/// The kind-specific part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// A shared buffer: the exporter's [`Layout`].
    Buffer(Layout),
    /// A shared semaphore: its type and its value when it was described (timeline;
    /// 0 for binary). The importer's payload is the real state; the value is for
    /// information and checks.
    Semaphore {
        /// Timeline or binary.
        kind: semaphore::Kind,
        /// The timeline's value when it was described (binary: 0).
        value: u64,
    },
    /// A shared image: its description with every default resolved, and the
    /// allocation size of each plane (0 past the format's plane count).
    Image {
        /// The image's description, defaults resolved.
        desc: image::Description,
        /// The size of each allocation (one per plane of a disjoint image, else
        /// one); 0 past the count.
        allocation_sizes: [u64; 3],
        /// A multi-planar image's colour description, which the importer's image
        /// takes ([`Image::set_video_color`](crate::Image::set_video_color)); None
        /// for a single-plane image, or where it does not travel (the image then
        /// starts at [`VideoColor::DEFAULT`]).
        color: Option<VideoColor>,
    },
}

/// A complete description: the exporter's device and the object. Its record
/// ([`to_bytes`](Self::to_bytes), [`parse`](Self::parse)) is what
/// [`ipc::send`](crate::ipc::send) sends with the fds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    /// `VkPhysicalDeviceIDProperties::deviceUUID` of the exporter's device.
    pub device_uuid: [u8; 16],
    /// What is described.
    pub object: Object,
}

pub(crate) fn allocator_code(o: Allocator) -> u32 {
    match o {
        Allocator::Vulkan => 0,
        Allocator::Cuda => 1,
    }
}

pub(crate) fn semaphore_code(k: semaphore::Kind) -> u32 {
    match k {
        semaphore::Kind::Timeline => 0,
        semaphore::Kind::Binary => 1,
    }
}

/// The `vkcuda_image_type` value of a dimension.
pub(crate) fn dimension_code(d: Dimension) -> u32 {
    match d {
        Dimension::D2 => 0,
        Dimension::D1 => 1,
        Dimension::D3 => 3,
    }
}

pub(crate) fn dimension_from_code(code: u32, what: &str) -> Result<Dimension> {
    match code {
        0 => Ok(Dimension::D2),
        1 => Ok(Dimension::D1),
        3 => Ok(Dimension::D3),
        v => Err(Error::invalid(format!(
            "{what} is {v}, not a vkcuda_image_type (2D = 0, 1D = 1, 3D = 3)"
        ))),
    }
}

fn check_layout(l: &Layout) -> Result<()> {
    if l.size == 0 {
        return Err(Error::invalid("impossible buffer size 0"));
    }
    if l.allocation_size > i64::MAX as u64 {
        return Err(Error::invalid(format!(
            "impossible allocation size {} (more than 2^63)",
            l.allocation_size
        )));
    }
    let end = l.offset.checked_add(l.size).ok_or_else(|| {
        Error::invalid(format!(
            "impossible buffer range: offset {} + size {} overflows",
            l.offset, l.size
        ))
    })?;
    if end > l.allocation_size {
        return Err(Error::invalid(format!(
            "impossible buffer range: offset {} + size {} = {end} is past the end of the \
             allocation ({} bytes)",
            l.offset, l.size, l.allocation_size
        )));
    }
    Ok(())
}

fn check_image(
    d: &image::Description,
    allocation_sizes: &[u64; 3],
    color: &Option<VideoColor>,
) -> Result<()> {
    // The library never describes an image of a format outside its tables, so such a
    // record is malformed, not a request for an unsupported feature.
    let layout = format::layout_of(d.format, d.linear)
        .map_err(|e| Error::invalid(format!("impossible image format: {}", e.message)))?;
    if d.width == 0 || d.height == 0 || d.depth == 0 {
        return Err(Error::invalid(format!(
            "impossible image extent {}x{}x{}: a described image has every dimension at least 1",
            d.width, d.height, d.depth
        )));
    }
    match d.dimension {
        Dimension::D1 if d.height != 1 || d.depth != 1 => {
            return Err(Error::invalid(format!(
                "impossible 1D image extent {}x{}x{}",
                d.width, d.height, d.depth
            )))
        }
        Dimension::D2 if d.depth != 1 => {
            return Err(Error::invalid(format!(
                "impossible 2D image depth {}",
                d.depth
            )))
        }
        Dimension::D3 if d.array_layers != 1 => {
            return Err(Error::invalid(format!(
                "impossible 3D image with {} array layers",
                d.array_layers
            )))
        }
        _ => {}
    }
    let max = image::max_mip_levels(d.width, d.height, d.depth);
    if d.mip_levels == 0 || d.mip_levels > max {
        return Err(Error::invalid(format!(
            "impossible mip level count {} for {}x{}x{} (1 to {max})",
            d.mip_levels, d.width, d.height, d.depth
        )));
    }
    if d.array_layers == 0 {
        return Err(Error::invalid("impossible array layer count 0"));
    }
    if d.cube && (d.dimension != Dimension::D2 || d.width != d.height || d.array_layers % 6 != 0) {
        return Err(Error::invalid(format!(
            "impossible cube-compatible image: {:?} {}x{} with {} layers",
            d.dimension, d.width, d.height, d.array_layers
        )));
    }
    if d.usage.is_empty() || !image::ALLOWED_USAGE.contains(d.usage) {
        return Err(Error::invalid(format!(
            "impossible image usage {:#x}",
            d.usage.as_raw()
        )));
    }
    image::check_planar_shape(d, &layout)
        .map_err(|e| Error::invalid(format!("impossible image: {}", e.message)))?;
    let n = plane_count(d);
    for (p, &size) in allocation_sizes.iter().enumerate() {
        if p < n && (size == 0 || size > i64::MAX as u64) {
            let which = if n == 1 {
                String::new()
            } else {
                format!("plane {p} ")
            };
            return Err(Error::invalid(format!(
                "impossible image {which}allocation size {size}"
            )));
        }
        if p >= n && size != 0 {
            return Err(Error::invalid(if d.linear {
                format!(
                    "impossible allocation size {size} for plane {p}: a video frame ({}, linear) \
                     has one allocation",
                    layout.display()
                )
            } else {
                format!(
                    "impossible allocation size {size} for plane {p}: {} has {n} plane{}",
                    layout.display(),
                    if n == 1 { "" } else { "s" }
                )
            }));
        }
    }
    if let Some(c) = color {
        if layout.plane_count() < 2 {
            return Err(Error::invalid(format!(
                "impossible colour description for a {} image: colour is for multi-planar images",
                layout.display()
            )));
        }
        c.check()
            .map_err(|e| Error::invalid(format!("impossible colour description: {}", e.message)))?;
    }
    Ok(())
}

/// The number of allocations (and fds) of a described image: one per plane of a
/// disjoint multi-planar image, else one (1 for a format that is not valid:
/// [`Description::check`] refuses it).
fn plane_count(d: &image::Description) -> usize {
    if d.linear {
        1
    } else {
        format::layout(d.format).map_or(1, |l| l.plane_count())
    }
}

const IMAGE_CUBE: u32 = 1;
const IMAGE_LINEAR: u32 = 2;

const COLOR_PRESENT: u32 = 1;
const COLOR_FULL_RANGE: u32 = 2;
const COLOR_X_MIDPOINT: u32 = 4;
const COLOR_Y_MIDPOINT: u32 = 8;

/// The colour's four u32s (matrix, transfer, primaries, flags); zeros for none.
fn color_words(c: &Option<VideoColor>) -> [u32; 4] {
    let Some(c) = c else { return [0; 4] };
    let mid = |l: vk::ChromaLocation| l == vk::ChromaLocation::MIDPOINT;
    [
        c.matrix,
        c.transfer,
        c.primaries,
        COLOR_PRESENT
            | if c.full_range { COLOR_FULL_RANGE } else { 0 }
            | if mid(c.x_chroma) { COLOR_X_MIDPOINT } else { 0 }
            | if mid(c.y_chroma) { COLOR_Y_MIDPOINT } else { 0 },
    ]
}

/// The colour of a record's four u32s, strictly: all zero is none.
fn color_of(w: [u32; 4]) -> Result<Option<VideoColor>> {
    let flags = w[3];
    if flags & COLOR_PRESENT == 0 {
        if w != [0; 4] {
            return Err(Error::invalid(
                "colour bytes without the colour-present flag are not zero",
            ));
        }
        return Ok(None);
    }
    let known = COLOR_PRESENT | COLOR_FULL_RANGE | COLOR_X_MIDPOINT | COLOR_Y_MIDPOINT;
    if flags & !known != 0 {
        return Err(Error::invalid(format!(
            "unknown colour flags {flags:#x} (1 present, 2 full range, 4 x chroma midpoint, 8 y \
             chroma midpoint)"
        )));
    }
    let site = |bit: u32| {
        if flags & bit != 0 {
            vk::ChromaLocation::MIDPOINT
        } else {
            vk::ChromaLocation::COSITED_EVEN
        }
    };
    Ok(Some(VideoColor {
        matrix: w[0],
        transfer: w[1],
        primaries: w[2],
        full_range: flags & COLOR_FULL_RANGE != 0,
        x_chroma: site(COLOR_X_MIDPOINT),
        y_chroma: site(COLOR_Y_MIDPOINT),
    }))
}

fn image_flags(d: &image::Description) -> u32 {
    (if d.cube { IMAGE_CUBE } else { 0 }) | (if d.linear { IMAGE_LINEAR } else { 0 })
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn bool_at(b: &[u8], at: usize, what: &str) -> Result<bool> {
    match get32(b, at) {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Error::invalid(format!("{what} is {v}, not 0 or 1"))),
    }
}

impl Description {
    /// What the description describes.
    pub fn kind(&self) -> Kind {
        match self.object {
            Object::Buffer(_) => Kind::Buffer,
            Object::Semaphore { .. } => Kind::Semaphore,
            Object::Image { .. } => Kind::Image,
        }
    }

    /// How many fds travel with the description: one, or one per plane of an
    /// image.
    pub fn fd_count(&self) -> usize {
        match &self.object {
            Object::Image { desc, .. } => plane_count(desc),
            _ => 1,
        }
    }

    /// Refuses impossible values (the same checks as [`parse`](Self::parse)).
    pub fn check(&self) -> Result<()> {
        match &self.object {
            Object::Buffer(l) => check_layout(l),
            Object::Semaphore { kind, value } => {
                if *kind == semaphore::Kind::Binary && *value != 0 {
                    return Err(Error::invalid(format!(
                        "impossible value {value} for a binary semaphore (0)"
                    )));
                }
                Ok(())
            }
            Object::Image {
                desc,
                allocation_sizes,
                color,
            } => check_image(desc, allocation_sizes, color),
        }
    }

    /// The record, after [`check`](Self::check).
    pub fn to_bytes(&self) -> Result<[u8; SIZE]> {
        self.check()?;
        let mut b = [0u8; SIZE];
        b[..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10..12].copy_from_slice(&(SIZE as u16).to_le_bytes());
        put32(&mut b, 12, self.kind().code());
        put32(&mut b, 16, self.fd_count() as u32);
        b[24..40].copy_from_slice(&self.device_uuid);
        let p = HEADER;
        match &self.object {
            Object::Buffer(l) => {
                put32(&mut b, p, allocator_code(l.allocator));
                put32(&mut b, p + 4, l.dedicated as u32);
                put64(&mut b, p + 8, l.allocation_size);
                put64(&mut b, p + 16, l.offset);
                put64(&mut b, p + 24, l.size);
            }
            Object::Semaphore { kind, value } => {
                put32(&mut b, p, semaphore_code(*kind));
                put64(&mut b, p + 8, *value);
            }
            Object::Image {
                desc,
                allocation_sizes,
                color,
            } => {
                put32(&mut b, p, dimension_code(desc.dimension));
                put32(&mut b, p + 4, desc.format.as_raw() as u32);
                put32(&mut b, p + 8, desc.width);
                put32(&mut b, p + 12, desc.height);
                put32(&mut b, p + 16, desc.depth);
                put32(&mut b, p + 20, desc.mip_levels);
                put32(&mut b, p + 24, desc.array_layers);
                put32(&mut b, p + 28, desc.usage.as_raw());
                put32(&mut b, p + 32, image_flags(desc));
                for (i, &size) in allocation_sizes.iter().enumerate() {
                    put64(&mut b, p + 40 + 8 * i, size);
                }
                for (i, w) in color_words(color).into_iter().enumerate() {
                    put32(&mut b, p + 64 + 4 * i, w);
                }
            }
        }
        Ok(b)
    }

    /// Reads a record, strictly: `bytes` must be exactly one record of this format
    /// version.
    pub fn parse(bytes: &[u8]) -> Result<Description> {
        if bytes.len() < 12 {
            return Err(Error::invalid(format!(
                "truncated description: {} bytes, less than the 12-byte header",
                bytes.len()
            )));
        }
        if bytes[..8] != MAGIC {
            return Err(Error::invalid(format!(
                "not a vkcuda share description: the magic is {:02x?}, not \"VKCUDASH\"",
                &bytes[..8]
            )));
        }
        let version = get16(bytes, 8);
        if version != VERSION {
            return Err(Error::invalid(format!(
                "unknown description format version {version}: this library reads version {VERSION} \
                 (the two processes use different vkcuda versions)"
            )));
        }
        let size = get16(bytes, 10) as usize;
        if size != SIZE {
            return Err(Error::invalid(format!(
                "impossible description size {size} for format version {VERSION} (it is {SIZE})"
            )));
        }
        if bytes.len() < SIZE {
            return Err(Error::invalid(format!(
                "truncated description: {} of {SIZE} bytes",
                bytes.len()
            )));
        }
        if bytes.len() > SIZE {
            return Err(Error::invalid(format!(
                "{} bytes where a description has {SIZE}",
                bytes.len()
            )));
        }
        let code = get32(bytes, 12);
        let kind = Kind::from_code(code).ok_or_else(|| {
            Error::invalid(format!(
                "unknown description kind {code} (1 buffer, 2 semaphore, 3 image)"
            ))
        })?;
        let fds = get32(bytes, 16);
        if get32(bytes, 20) != 0 {
            return Err(Error::invalid("reserved header bytes 20..24 are not zero"));
        }
        let mut device_uuid = [0u8; 16];
        device_uuid.copy_from_slice(&bytes[24..40]);
        let p = HEADER;
        let (object, used) = match kind {
            Kind::Buffer => {
                let allocator = match get32(bytes, p) {
                    0 => Allocator::Vulkan,
                    1 => Allocator::Cuda,
                    v => {
                        return Err(Error::invalid(format!(
                            "unknown buffer allocator {v} (0 Vulkan, 1 CUDA)"
                        )))
                    }
                };
                let layout = Layout {
                    allocator,
                    dedicated: bool_at(bytes, p + 4, "the dedicated flag")?,
                    allocation_size: get64(bytes, p + 8),
                    offset: get64(bytes, p + 16),
                    size: get64(bytes, p + 24),
                };
                (Object::Buffer(layout), 32)
            }
            Kind::Semaphore => {
                let kind = match get32(bytes, p) {
                    0 => semaphore::Kind::Timeline,
                    1 => semaphore::Kind::Binary,
                    v => {
                        return Err(Error::invalid(format!(
                            "unknown semaphore type {v} (0 timeline, 1 binary)"
                        )))
                    }
                };
                if get32(bytes, p + 4) != 0 {
                    return Err(Error::invalid("reserved semaphore bytes are not zero"));
                }
                (
                    Object::Semaphore {
                        kind,
                        value: get64(bytes, p + 8),
                    },
                    16,
                )
            }
            Kind::Image => {
                let flags = get32(bytes, p + 32);
                if flags & !(IMAGE_CUBE | IMAGE_LINEAR) != 0 {
                    return Err(Error::invalid(format!(
                        "unknown image flags {flags:#x} (1 cube compatible, 2 linear)"
                    )));
                }
                if get32(bytes, p + 36) != 0 {
                    return Err(Error::invalid("reserved image bytes are not zero"));
                }
                let desc = image::Description {
                    dimension: dimension_from_code(get32(bytes, p), "the image type")?,
                    format: vk::Format::from_raw(get32(bytes, p + 4) as i32),
                    width: get32(bytes, p + 8),
                    height: get32(bytes, p + 12),
                    depth: get32(bytes, p + 16),
                    mip_levels: get32(bytes, p + 20),
                    array_layers: get32(bytes, p + 24),
                    cube: flags & IMAGE_CUBE != 0,
                    usage: vk::ImageUsageFlags::from_raw(get32(bytes, p + 28)),
                    linear: flags & IMAGE_LINEAR != 0,
                };
                let color = color_of([
                    get32(bytes, p + 64),
                    get32(bytes, p + 68),
                    get32(bytes, p + 72),
                    get32(bytes, p + 76),
                ])?;
                (
                    Object::Image {
                        desc,
                        allocation_sizes: [
                            get64(bytes, p + 40),
                            get64(bytes, p + 48),
                            get64(bytes, p + 56),
                        ],
                        color,
                    },
                    80,
                )
            }
        };
        if let Some(at) = bytes[p + used..].iter().position(|&x| x != 0) {
            return Err(Error::invalid(format!(
                "byte {} of a {} description is not zero (unused bytes must be)",
                p + used + at,
                kind.name()
            )));
        }
        let d = Description {
            device_uuid,
            object,
        };
        d.check()?;
        if fds as usize != d.fd_count() {
            return Err(Error::invalid(format!(
                "impossible fd count {fds} in a {} description (it has {})",
                kind.name(),
                d.fd_count()
            )));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn buffer() -> Description {
        Description {
            device_uuid: *b"0123456789abcdef",
            object: Object::Buffer(Layout {
                allocator: Allocator::Cuda,
                allocation_size: 2 << 20,
                offset: 256,
                size: 1000,
                dedicated: true,
            }),
        }
    }

    fn semaphore(kind: semaphore::Kind, value: u64) -> Description {
        Description {
            device_uuid: [7; 16],
            object: Object::Semaphore { kind, value },
        }
    }

    fn image() -> Description {
        Description {
            device_uuid: [9; 16],
            object: Object::Image {
                desc: image::Description {
                    dimension: Dimension::D2,
                    format: vk::Format::R8G8B8A8_UNORM,
                    width: 64,
                    height: 64,
                    depth: 1,
                    mip_levels: 7,
                    array_layers: 6,
                    cube: true,
                    usage: vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::STORAGE,
                    linear: false,
                },
                allocation_sizes: [1 << 20, 0, 0],
                color: None,
            },
        }
    }

    fn nv12() -> Description {
        Description {
            device_uuid: [5; 16],
            object: Object::Image {
                desc: image::Description {
                    dimension: Dimension::D2,
                    format: vk::Format::G8_B8R8_2PLANE_420_UNORM,
                    width: 1920,
                    height: 1080,
                    depth: 1,
                    mip_levels: 1,
                    array_layers: 1,
                    cube: false,
                    usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED,
                    linear: false,
                },
                allocation_sizes: [2_211_840, 1_228_800, 0],
                color: Some(VideoColor::DEFAULT),
            },
        }
    }

    fn nv12_frame() -> Description {
        let mut d = nv12();
        if let Object::Image {
            desc,
            allocation_sizes,
            ..
        } = &mut d.object
        {
            desc.linear = true;
            *allocation_sizes = [4_194_304, 0, 0];
        }
        d
    }

    #[test]
    fn video_frames_carry_the_linear_flag_and_one_allocation() {
        let d = nv12_frame();
        assert_eq!(d.fd_count(), 1);
        let b = d.to_bytes().unwrap();
        assert_eq!(get32(&b, 16), 1, "one fd");
        assert_eq!(get32(&b, HEADER + 32), 2, "the linear flag");
        assert_eq!(Description::parse(&b).unwrap(), d);
        // The same frame with a size for plane 1: impossible (one allocation).
        let mut two = b;
        two[HEADER + 48..HEADER + 56].copy_from_slice(&1_048_576u64.to_le_bytes());
        refused(&two, "impossible allocation size 1048576 for plane 1");
        let mut unknown = b;
        unknown[HEADER + 32] = 6;
        refused(&unknown, "unknown image flags 0x6");
        // A linear single-plane image is not a thing the library makes.
        let mut rgba = image();
        if let Object::Image { desc, .. } = &mut rgba.object {
            desc.linear = true;
        }
        let e = rgba.check().unwrap_err();
        assert!(e.message.contains("LINEAR"), "{}", e.message);
    }

    #[test]
    fn a_frames_colour_travels() {
        let mut d = nv12_frame();
        let bt2020 = VideoColor {
            matrix: 9,
            transfer: 16,
            primaries: 9,
            full_range: true,
            x_chroma: vk::ChromaLocation::MIDPOINT,
            y_chroma: vk::ChromaLocation::COSITED_EVEN,
        };
        if let Object::Image { color, .. } = &mut d.object {
            *color = Some(bt2020);
        }
        let b = d.to_bytes().unwrap();
        let p = HEADER + 64;
        assert_eq!(
            [
                get32(&b, p),
                get32(&b, p + 4),
                get32(&b, p + 8),
                get32(&b, p + 12)
            ],
            [9, 16, 9, 1 | 2 | 4]
        );
        assert!(b[p + 16..].iter().all(|&x| x == 0));
        assert_eq!(Description::parse(&b).unwrap(), d);
        // Every flag combination round-trips.
        for flags in 0..8u32 {
            let mut c = b;
            c[p + 12..p + 16].copy_from_slice(&(1 | flags << 1).to_le_bytes());
            let got = Description::parse(&c).unwrap();
            let Object::Image { color: Some(k), .. } = got.object else {
                panic!("no colour")
            };
            assert_eq!(k.full_range, flags & 1 != 0);
            assert_eq!(k.x_chroma == vk::ChromaLocation::MIDPOINT, flags & 2 != 0);
            assert_eq!(k.y_chroma == vk::ChromaLocation::MIDPOINT, flags & 4 != 0);
            assert_eq!(got.to_bytes().unwrap(), c);
        }
        // Strict: unknown flags, values without the present flag, values that are
        // not H.273 code points or have no Vulkan model, colour on a single-plane image.
        let mut c = b;
        c[p + 12] = 0x11;
        refused(&c, "unknown colour flags 0x11");
        let mut c = b;
        c[p + 12] = 0;
        refused(&c, "without the colour-present flag");
        let mut c = b;
        c[p..p + 4].copy_from_slice(&256u32.to_le_bytes());
        refused(
            &c,
            "impossible colour description: matrix_coefficients is 256",
        );
        let mut c = b;
        c[p] = 4;
        refused(
            &c,
            "impossible colour description: matrix_coefficients 4 (FCC)",
        );
        let mut rgba = image().to_bytes().unwrap();
        rgba[p..p + 16].copy_from_slice(&b[p..p + 16]);
        refused(&rgba, "colour is for multi-planar images");
        // None travels as zeros (a description made from C's struct).
        if let Object::Image { color, .. } = &mut d.object {
            *color = None;
        }
        let b = d.to_bytes().unwrap();
        assert!(b[p..].iter().all(|&x| x == 0));
        assert_eq!(Description::parse(&b).unwrap(), d);
    }

    #[track_caller]
    fn refused(bytes: &[u8], words: &str) {
        let e = Description::parse(bytes).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{}", e.message);
        assert!(e.message.contains(words), "{}", e.message);
    }

    #[test]
    fn every_kind_round_trips() {
        for d in [
            buffer(),
            semaphore(semaphore::Kind::Timeline, 41),
            semaphore(semaphore::Kind::Binary, 0),
            image(),
            nv12(),
        ] {
            let b = d.to_bytes().unwrap();
            assert_eq!(&b[..8], b"VKCUDASH");
            assert_eq!(Description::parse(&b).unwrap(), d);
        }
    }

    #[test]
    fn the_layout_is_little_endian_and_fixed() {
        let b = buffer().to_bytes().unwrap();
        assert_eq!(&b[8..12], &[4, 0, 128, 0]);
        assert_eq!(&b[12..24], &[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[24..40], b"0123456789abcdef");
        assert_eq!(&b[40..48], &[1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(&b[48..56], &(2u64 << 20).to_le_bytes());
        assert_eq!(&b[56..64], &256u64.to_le_bytes());
        assert_eq!(&b[64..72], &1000u64.to_le_bytes());
        assert!(b[72..].iter().all(|&x| x == 0));
        let s = semaphore(semaphore::Kind::Timeline, 0x0102_0304_0506_0708)
            .to_bytes()
            .unwrap();
        assert_eq!(get32(&s, 12), 2);
        assert_eq!(&s[48..56], &[8, 7, 6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn truncated_and_foreign_records_are_refused() {
        let b = buffer().to_bytes().unwrap();
        refused(&b[..0], "truncated");
        refused(&b[..11], "truncated");
        refused(&b[..60], "truncated description: 60 of 128");
        refused(&b[..127], "truncated");
        let mut long = b.to_vec();
        long.push(0);
        refused(&long, "129 bytes");
        let mut m = b;
        m[0] = b'X';
        refused(&m, "magic");
        refused(&[0u8; 128], "magic");
    }

    #[test]
    fn unknown_versions_kinds_and_sizes_are_refused() {
        let b = buffer().to_bytes().unwrap();
        // A peer of another library version: both versions are named.
        // Version 3: a peer from before colour descriptions travelled.
        for other in [1u8, 2, 3, 5] {
            let mut v = b;
            v[8] = other;
            refused(
                &v,
                &format!(
                    "unknown description format version {other}: this library reads version 4"
                ),
            );
        }
        let mut v = b;
        v[8] = 0;
        refused(&v, "version 0");
        let mut s = b;
        s[10] = 127;
        refused(&s, "impossible description size 127");
        let mut k = b;
        k[12] = 4;
        refused(&k, "unknown description kind 4");
        let mut k = b;
        k[12] = 0;
        refused(&k, "kind 0");
        let mut f = b;
        f[16] = 2;
        refused(&f, "impossible fd count 2");
        let mut r = b;
        r[21] = 1;
        refused(&r, "reserved");
        let mut z = b;
        z[100] = 1;
        refused(&z, "byte 100");
    }

    #[test]
    fn impossible_values_are_refused() {
        let b = buffer().to_bytes().unwrap();
        let mut o = b;
        o[40] = 2;
        refused(&o, "unknown buffer allocator 2");
        let mut d = b;
        d[44] = 2;
        refused(&d, "dedicated");
        // size 0
        let mut z = b;
        z[64..72].copy_from_slice(&0u64.to_le_bytes());
        refused(&z, "size 0");
        // offset + size past the allocation
        let mut p = b;
        p[56..64].copy_from_slice(&(2u64 << 20).to_le_bytes());
        refused(&p, "past the end");
        // offset + size overflows
        let mut w = b;
        w[56..64].copy_from_slice(&u64::MAX.to_le_bytes());
        refused(&w, "overflows");
        let mut a = b;
        a[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        refused(&a, "more than 2^63");

        let s = semaphore(semaphore::Kind::Binary, 0).to_bytes().unwrap();
        let mut t = s;
        t[40] = 2;
        refused(&t, "unknown semaphore type 2");
        let mut v = s;
        v[48] = 1;
        refused(&v, "binary semaphore");
        assert!(semaphore(semaphore::Kind::Binary, 3).to_bytes().is_err());

        let i = image().to_bytes().unwrap();
        let mut t = i;
        t[40] = 2;
        refused(&t, "vkcuda_image_type");
        let mut m = i;
        m[60] = 8; // 8 mip levels for 64x64
        refused(&m, "mip level count 8");
        let mut l = i;
        l[64] = 4; // 4 layers, cube
        refused(&l, "cube");
        let mut u = i;
        u[68..72].copy_from_slice(&0u32.to_le_bytes());
        refused(&u, "usage");
        let mut h = i;
        h[52] = 0; // height 0
        refused(&h, "extent");
        let mut f = i;
        f[44..48].copy_from_slice(&12345u32.to_le_bytes());
        let e = Description::parse(&f).unwrap_err();
        assert!(e.message.contains("not a VkFormat"), "{}", e.message);
        let mut s = i;
        s[80..88].copy_from_slice(&0u64.to_le_bytes());
        refused(&s, "allocation size 0");
        let mut s = i;
        s[88] = 1; // a second plane's size for a single-plane format
        refused(&s, "for plane 1: VK_FORMAT_R8G8B8A8_UNORM has 1 plane");
    }

    #[test]
    fn multi_planar_images_carry_one_size_and_fd_per_plane() {
        let d = nv12();
        assert_eq!(d.fd_count(), 2);
        let b = d.to_bytes().unwrap();
        assert_eq!(get32(&b, 16), 2, "two fds travel with NV12");
        assert_eq!(get64(&b, 80), 2_211_840);
        assert_eq!(get64(&b, 88), 1_228_800);
        assert_eq!(get64(&b, 96), 0);
        assert_eq!(Description::parse(&b).unwrap(), d);
        let mut f = b;
        f[16] = 1;
        refused(
            &f,
            "impossible fd count 1 in a image description (it has 2)",
        );
        let mut f = b;
        f[16] = 3;
        refused(&f, "fd count 3");
        let mut z = b;
        z[88..96].copy_from_slice(&0u64.to_le_bytes());
        refused(&z, "plane 1 allocation size 0");
        let mut t = b;
        t[96] = 1;
        refused(&t, "for plane 2");
        let mut odd = b;
        odd[48] = 0x7f; // width 1919
        odd[49] = 7;
        refused(&odd, "must be even");
        let mut levels = b;
        levels[60] = 2;
        refused(&levels, "1 mip level");
        let i420 = Description {
            device_uuid: [1; 16],
            object: Object::Image {
                desc: image::Description {
                    format: vk::Format::G8_B8_R8_3PLANE_420_UNORM,
                    width: 64,
                    height: 64,
                    ..match nv12().object {
                        Object::Image { desc, .. } => desc,
                        _ => unreachable!(),
                    }
                },
                allocation_sizes: [65536, 65536, 65536],
                color: None,
            },
        };
        assert_eq!(i420.fd_count(), 3);
        assert_eq!(Description::parse(&i420.to_bytes().unwrap()).unwrap(), i420);
    }
}
