//! Batches: N images (or N buffers) of one shape in ONE exportable allocation,
//! imported into CUDA once and mapped once, handed to CUDA by one call and out
//! as one `(N, H, W, C)` DLPack tensor.
//!
//! Two paths for image batches, chosen at creation ([`Info::path`]):
//! - [`Path::ZeroCopy`]: LINEAR images, where the format supports the usage with
//!   linear tiling and the driver lets exportable LINEAR images share an
//!   allocation (no `DEDICATED_ONLY`, no `requiresDedicatedAllocation`). The
//!   images' memory *is* the tensor: element `i` starts at `i * element_stride`,
//!   rows are `row_pitch` apart (`vkGetImageSubresourceLayout`).
//! - [`Path::Copy`]: OPTIMAL images plus a linear readout region in the same
//!   allocation; the release records one copy of all N images into it (and the
//!   acquire one copy back). Taken where LINEAR is refused ([`Info::linear_refusal`]
//!   says why), or when asked ([`Description::force_copy`]).
//!
//! Buffer batches ([`Contents::Buffers`], [`Path::Buffers`]) are N buffers of one
//! size at aligned offsets, and one buffer over all of them.
//!
//! ```
//! use vkcuda::ash::vk;
//! use vkcuda::batch::{Batch, Contents, Description, Path};
//! use vkcuda::context::{Context, CudaChoice};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! let desc = Description::images(16, vk::Format::R8G8B8A8_UNORM, 64, 48);
//! let batch = Batch::create(&ctx, &desc)?;
//! let info = batch.info();
//! assert_eq!(info.count, 16);
//! assert_eq!(info.shape(), vec![16, 48, 64, 4]);
//! assert!(matches!(info.path, Path::ZeroCopy | Path::Copy));
//! let forced = Batch::create(&ctx, &Description { force_copy: true, ..desc })?;
//! assert_eq!(forced.info().path, Path::Copy);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use ash::vk;

use super::cuda::external::ExternalMemory;
use super::vulkan::batch::{self as vb, BatchMemory, HandoffTarget, ImageGeometry};
use super::vulkan::handoff as barrier;
use super::vulkan::image::ImageParams;
use crate::buffer::Buffer;
use crate::context::Context;
use crate::cuda_sys::CUstream;
use crate::dlpack::{self, DType, Spec, Tensor};
use crate::error::{Error, ErrorKind, Result};
use crate::format as fmt;
use crate::handoff::{Direction, Scope};
use crate::semaphore::Semaphore;

/// The most elements a batch may have.
pub const MAX_COUNT: u32 = 1 << 16;

/// What a batch holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// 2D images of one level and one layer.
    Images {
        /// One of [`FORMATS`].
        format: vk::Format,
        /// Texels per row.
        width: u32,
        /// Rows.
        height: u32,
        /// `VkImageUsageFlags`; empty: [`default_image_usage`]. Transfer source
        /// and destination are always added (the copy path and per-image
        /// readbacks need them).
        usage: vk::ImageUsageFlags,
    },
    /// Buffers of one size.
    Buffers {
        /// Bytes per buffer, at least 1.
        size: u64,
        /// `VkBufferUsageFlags`; empty: [`crate::buffer::DEFAULT_USAGE`].
        usage: vk::BufferUsageFlags,
    },
}

/// How to make a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Description {
    /// N, from 1 to [`MAX_COUNT`].
    pub count: u32,
    /// Images or buffers.
    pub contents: Contents,
    /// Image batches: OPTIMAL images and the copy path even where LINEAR would do.
    pub force_copy: bool,
}

impl Description {
    /// `count` images of `format`, `width` x `height`, the default usage.
    pub fn images(count: u32, format: vk::Format, width: u32, height: u32) -> Description {
        Description {
            count,
            contents: Contents::Images {
                format,
                width,
                height,
                usage: vk::ImageUsageFlags::empty(),
            },
            force_copy: false,
        }
    }

    /// `count` buffers of `size` bytes, the default usage.
    pub fn buffers(count: u32, size: u64) -> Description {
        Description {
            count,
            contents: Contents::Buffers {
                size,
                usage: vk::BufferUsageFlags::empty(),
            },
            force_copy: false,
        }
    }
}

/// How a batch reaches CUDA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// LINEAR images whose memory is the tensor.
    ZeroCopy,
    /// OPTIMAL images and a readout region filled by one recorded copy.
    Copy,
    /// A buffer batch (its memory is the tensor).
    Buffers,
}

/// One format a batch may hold: its texel, channels and tensor dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatDesc {
    /// The format.
    pub format: vk::Format,
    /// Bytes per texel.
    pub texel: u32,
    /// Channels (the tensor's last dimension; 1: no channel dimension).
    pub channels: u32,
    /// The tensor's element type (one channel).
    pub dtype: DType,
    /// Depth formats (aspect DEPTH, depth attachment usage).
    pub depth: bool,
}

const fn fd(
    format: vk::Format,
    texel: u32,
    channels: u32,
    code: u8,
    bits: u8,
    depth: bool,
) -> FormatDesc {
    FormatDesc {
        format,
        texel,
        channels,
        dtype: DType {
            code,
            bits,
            lanes: 1,
        },
        depth,
    }
}

const UINT: u8 = 1;
const FLOAT: u8 = 2;

/// The formats a batch may hold.
pub const FORMATS: [FormatDesc; 13] = [
    fd(vk::Format::R8G8B8A8_UNORM, 4, 4, UINT, 8, false),
    fd(vk::Format::R8G8B8A8_SRGB, 4, 4, UINT, 8, false),
    fd(vk::Format::B8G8R8A8_UNORM, 4, 4, UINT, 8, false),
    fd(vk::Format::B8G8R8A8_SRGB, 4, 4, UINT, 8, false),
    fd(vk::Format::R8_UNORM, 1, 1, UINT, 8, false),
    fd(vk::Format::R16G16B16A16_SFLOAT, 8, 4, FLOAT, 16, false),
    fd(vk::Format::R32G32B32A32_SFLOAT, 16, 4, FLOAT, 32, false),
    fd(vk::Format::R32_SFLOAT, 4, 1, FLOAT, 32, false),
    fd(vk::Format::R32_UINT, 4, 1, UINT, 32, false),
    fd(vk::Format::R32G32_SFLOAT, 8, 2, FLOAT, 32, false),
    fd(vk::Format::R16_SFLOAT, 2, 1, FLOAT, 16, false),
    fd(vk::Format::D32_SFLOAT, 4, 1, FLOAT, 32, true),
    fd(vk::Format::D16_UNORM, 2, 1, UINT, 16, true),
];

/// The table entry of `format`, or `Unsupported` naming the formats there are.
pub fn format_desc(format: vk::Format) -> Result<FormatDesc> {
    FORMATS.iter().find(|f| f.format == format).copied().ok_or_else(|| {
        Error::unsupported(format!(
            "{} is not a format a batch can hold (its tensor needs one dtype per channel): use one of {}",
            fmt::display(format),
            FORMATS
                .iter()
                .map(|f| fmt::display(f.format))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// The usage of an image batch made with an empty one: colour attachment (depth
/// formats: depth attachment), transfer source and destination.
pub fn default_image_usage(format: vk::Format) -> vk::ImageUsageFlags {
    let base = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    match format_desc(format) {
        Ok(f) if f.depth => base | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
        _ => base | vk::ImageUsageFlags::COLOR_ATTACHMENT,
    }
}

/// Image usages a batch accepts.
pub const ALLOWED_IMAGE_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::TRANSFER_SRC.as_raw()
        | vk::ImageUsageFlags::TRANSFER_DST.as_raw()
        | vk::ImageUsageFlags::SAMPLED.as_raw()
        | vk::ImageUsageFlags::STORAGE.as_raw()
        | vk::ImageUsageFlags::COLOR_ATTACHMENT.as_raw()
        | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT.as_raw()
        | vk::ImageUsageFlags::INPUT_ATTACHMENT.as_raw(),
);

/// The usage a batch's images or buffers were made with ([`Info::usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// An image batch: the images' usage (the one asked for, or
    /// [`default_image_usage`], with the transfer source and destination bits the
    /// library adds).
    Images(vk::ImageUsageFlags),
    /// A buffer batch: the buffers' usage (the one asked for, or
    /// [`crate::buffer::DEFAULT_USAGE`]).
    Buffers(vk::BufferUsageFlags),
}

/// Everything about a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// N.
    pub count: u32,
    /// How it reaches CUDA.
    pub path: Path,
    /// The format (`UNDEFINED` for buffer batches).
    pub format: vk::Format,
    /// Texels per row (buffer batches: the buffer size).
    pub width: u32,
    /// Rows (buffer batches: 1).
    pub height: u32,
    /// Channels (buffer batches: 1).
    pub channels: u32,
    /// The tensor's element type (buffer batches: uint8).
    pub dtype: DType,
    /// The usage the images or buffers were made with.
    pub usage: Usage,
    /// The whole allocation's size.
    pub allocation_size: u64,
    /// Where the tensor starts in the allocation (the first element's first texel).
    pub tensor_offset: u64,
    /// Bytes from one element of the tensor to the next.
    pub element_stride: u64,
    /// Bytes from one row of an element to the next (buffer batches: the size).
    pub row_pitch: u64,
    /// Bytes of one element's data (`width * texel` per row; buffer batches: the size).
    pub element_size: u64,
    /// Bytes the CUDA mapping covers, from `tensor_offset`.
    pub mapped_size: u64,
    /// Image batches: from one image to the next in the allocation.
    pub image_stride: u64,
    /// The copy path: where the readout region starts and its size.
    pub readout_offset: u64,
    /// The readout region's size (0 without one).
    pub readout_size: u64,
    /// Why LINEAR images were not used, for an image batch on the copy path.
    pub linear_refusal: Option<String>,
}

impl Info {
    /// The tensor's shape: `(N, H, W, C)`, `(N, H, W)` for one channel, `(N, size)`
    /// for buffers.
    pub fn shape(&self) -> Vec<i64> {
        let n = i64::from(self.count);
        match self.path {
            Path::Buffers => vec![n, self.element_size as i64],
            _ if self.channels == 1 => vec![n, i64::from(self.height), i64::from(self.width)],
            _ => vec![
                n,
                i64::from(self.height),
                i64::from(self.width),
                i64::from(self.channels),
            ],
        }
    }

    /// The tensor's strides in elements of [`dtype`](Self::dtype).
    pub fn strides(&self) -> Vec<i64> {
        let lane = u64::from(self.dtype.bits / 8).max(1);
        let e = (self.element_stride / lane) as i64;
        match self.path {
            Path::Buffers => vec![e, 1],
            _ => {
                let row = (self.row_pitch / lane) as i64;
                let c = i64::from(self.channels);
                if self.channels == 1 {
                    vec![e, row, 1]
                } else {
                    vec![e, row, c, 1]
                }
            }
        }
    }
}

/// One element of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    /// Image batches: the image.
    pub image: vk::Image,
    /// Buffer batches: the element's buffer.
    pub buffer: vk::Buffer,
    /// Where the image or buffer is bound in the allocation.
    pub memory_offset: u64,
    /// The element's data in CUDA (the tensor's `[i]`), 0 in a Vulkan-only context.
    pub cuda_pointer: u64,
    /// Where the element's data starts in the allocation (the readout region's
    /// element on the copy path).
    pub data_offset: u64,
}

/// What a DLPack tensor of a batch is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorSpec {
    /// One element (`[H, W, C]`) instead of the whole batch.
    pub index: Option<u32>,
    /// Mark the tensor read-only (versioned only).
    pub read_only: bool,
    /// A legacy `DLManagedTensor`.
    pub legacy: bool,
}

struct Inner {
    ctx: Arc<Context>,
    vk: BatchMemory,
    /// Held for its `Drop`, which releases the CUDA view before the Vulkan objects.
    #[allow(dead_code)]
    cuda: Option<ExternalMemory>,
    cuda_ptr: u64,
    info: Info,
    aspect: vk::ImageAspectFlags,
    geometry: ImageGeometry,
    image_usage: vk::ImageUsageFlags,
    depth: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.cuda = None;
        self.vk.destroy(&self.ctx.vk);
    }
}

/// A batch: N images or buffers of one shape in one exportable allocation with
/// one CUDA mapping. It holds its context; dropping it releases the CUDA view,
/// then the Vulkan objects (once the tensors and buffer views made from it are
/// gone too). The caller guarantees that no GPU work still uses it.
///
/// Thread-safety: `Send` and `Sync`.
pub struct Batch {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("info", &self.inner.info)
            .finish()
    }
}

fn check_count(count: u32) -> Result<()> {
    if count == 0 {
        return Err(Error::invalid("count must not be 0"));
    }
    if count > MAX_COUNT {
        return Err(Error::invalid(format!(
            "count {count} is more than a batch may hold ({MAX_COUNT})"
        )));
    }
    Ok(())
}

/// Checks an image batch's usage; returns the usage the images get.
fn image_usage(f: &FormatDesc, usage: vk::ImageUsageFlags) -> Result<vk::ImageUsageFlags> {
    if usage.is_empty() {
        return Ok(default_image_usage(f.format));
    }
    let unknown = usage & !ALLOWED_IMAGE_USAGE;
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "usage {:#x} has bits {:#x} that a batch's images cannot have (transfer, sampled, \
             storage, colour/depth/input attachment)",
            usage.as_raw(),
            unknown.as_raw()
        )));
    }
    let wrong = if f.depth {
        usage & (vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::STORAGE)
    } else {
        usage & vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
    };
    if !wrong.is_empty() {
        return Err(Error::unsupported(format!(
            "{} cannot have usage {wrong:?}: it is a {} format",
            fmt::display(f.format),
            if f.depth { "depth" } else { "colour" }
        )));
    }
    Ok(usage | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
}

impl Batch {
    /// Makes a batch: the images or buffers, one exportable allocation they are
    /// bound into, and (unless the context is Vulkan-only) one CUDA import of it
    /// with one mapping of the tensor's range. Refused before any allocation:
    /// `count` 0 or past [`MAX_COUNT`], sizes whose product overflows 64 bits or
    /// passes the device's largest heap (InvalidArgument), a format not in
    /// [`FORMATS`] or a usage the device cannot give these images
    /// (Unsupported, naming which and why).
    pub fn create(ctx: &Arc<Context>, desc: &Description) -> Result<Batch> {
        check_count(desc.count)?;
        match desc.contents {
            Contents::Images {
                format,
                width,
                height,
                usage,
            } => Self::create_images(
                ctx,
                desc.count,
                format,
                width,
                height,
                usage,
                desc.force_copy,
            ),
            Contents::Buffers { size, usage } => Self::create_buffers(ctx, desc.count, size, usage),
        }
    }

    fn create_images(
        ctx: &Arc<Context>,
        count: u32,
        format: vk::Format,
        width: u32,
        height: u32,
        usage: vk::ImageUsageFlags,
        force_copy: bool,
    ) -> Result<Batch> {
        let f = format_desc(format)?;
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!(
                "the extent {width}x{height} must not be 0"
            )));
        }
        let texel = u64::from(f.texel);
        u64::from(count)
            .checked_mul(u64::from(width))
            .and_then(|x| x.checked_mul(u64::from(height)))
            .and_then(|x| x.checked_mul(texel))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "count {count} x {width} x {height} x {texel}-byte texels overflows 64 bits"
                ))
            })?;
        let usage = image_usage(&f, usage)?;
        let dev = &ctx.vk;
        dev.memory_fd()?;
        let aspect = if f.depth {
            vk::ImageAspectFlags::DEPTH
        } else {
            vk::ImageAspectFlags::COLOR
        };
        let params = |tiling| ImageParams {
            image_type: vk::ImageType::TYPE_2D,
            tiling,
            format,
            extent: vk::Extent3D {
                width,
                height,
                depth: 1,
            },
            mip_levels: 1,
            array_layers: 1,
            flags: vk::ImageCreateFlags::empty(),
            usage,
        };
        let linear = params(vk::ImageTiling::LINEAR);
        let mut refusal = if force_copy {
            Some("the copy path was asked for (force_copy)".to_string())
        } else {
            vb::sharing_refusal(dev, &linear)
        };
        let mut needs = None;
        if refusal.is_none() {
            let n = vb::image_needs(dev, &linear, aspect)?;
            let l = n.layout.unwrap_or_default();
            if n.requires_dedicated {
                refusal = Some(format!(
                    "the driver requires a dedicated allocation for each LINEAR image of {} \
                     (VkMemoryDedicatedRequirements::requiresDedicatedAllocation)",
                    fmt::display(format)
                ));
            } else if l.row_pitch % texel != 0
                || l.offset % texel != 0
                || l.row_pitch < u64::from(width) * texel
            {
                refusal = Some(format!(
                    "the LINEAR images' row pitch {} or offset {} is not a whole number of {texel}-byte texels",
                    l.row_pitch, l.offset
                ));
            } else {
                needs = Some(n);
            }
        }
        let (path, tiling, needs, readout) = match needs {
            Some(n) => (Path::ZeroCopy, vk::ImageTiling::LINEAR, n, None),
            None => {
                let optimal = params(vk::ImageTiling::OPTIMAL);
                if let Some(why) = vb::sharing_refusal(dev, &optimal) {
                    return Err(Error::unsupported(format!(
                        "{} images with usage {usage:?} cannot be batched on this device: LINEAR: {}; \
                         OPTIMAL: {why}",
                        fmt::display(format),
                        refusal.as_deref().unwrap_or("-")
                    )));
                }
                let n = vb::image_needs(dev, &optimal, aspect)?;
                if n.requires_dedicated {
                    return Err(Error::unsupported(format!(
                        "the driver requires a dedicated allocation for each OPTIMAL image of {}, \
                         so N images cannot share one (LINEAR: {})",
                        fmt::display(format),
                        refusal.as_deref().unwrap_or("-")
                    )));
                }
                let r = vb::buffer_needs(dev, MIN_READOUT_PROBE, vb::READOUT_USAGE)?;
                (Path::Copy, vk::ImageTiling::OPTIMAL, n, Some(r))
            }
        };
        let g = vb::plan_images(dev, &needs, count, width, height, texel, readout.as_ref())?;
        let mem = vb::create_images(dev, &params(tiling), count, &needs, &g, aspect)?;
        let element_size = u64::from(width) * texel * u64::from(height);
        let (tensor_offset, element_stride, row_pitch, mapped_size) = match path {
            Path::ZeroCopy => (
                g.image_offset,
                g.image_stride,
                g.row_pitch,
                g.images_size - g.image_offset,
            ),
            _ => (
                g.readout_offset,
                g.readout_stride,
                u64::from(width) * texel,
                g.readout_size,
            ),
        };
        let info = Info {
            count,
            path,
            format,
            width,
            height,
            channels: f.channels,
            dtype: f.dtype,
            usage: Usage::Images(usage),
            allocation_size: mem.allocation_size,
            tensor_offset,
            element_stride,
            row_pitch,
            element_size,
            mapped_size,
            image_stride: g.image_stride,
            readout_offset: g.readout_offset,
            readout_size: g.readout_size,
            linear_refusal: if path == Path::Copy { refusal } else { None },
        };
        Self::finish(ctx, mem, info, aspect, g, usage, f.depth)
    }

    fn create_buffers(
        ctx: &Arc<Context>,
        count: u32,
        size: u64,
        usage: vk::BufferUsageFlags,
    ) -> Result<Batch> {
        if size == 0 {
            return Err(Error::invalid("size must not be 0"));
        }
        u64::from(count).checked_mul(size).ok_or_else(|| {
            Error::invalid(format!("count {count} x size {size} overflows 64 bits"))
        })?;
        let usage = crate::buffer::check_usage(usage)?;
        let dev = &ctx.vk;
        dev.memory_fd()?;
        let (g, _) = vb::plan_buffers(dev, count, size, usage)?;
        let mem = vb::create_buffers(dev, count, size, usage, &g)?;
        let info = Info {
            count,
            path: Path::Buffers,
            format: vk::Format::UNDEFINED,
            width: u32::try_from(size).unwrap_or(u32::MAX),
            height: 1,
            channels: 1,
            dtype: DType::UINT8,
            usage: Usage::Buffers(usage),
            allocation_size: mem.allocation_size,
            tensor_offset: 0,
            element_stride: g.stride,
            row_pitch: size,
            element_size: size,
            mapped_size: g.allocation_size,
            image_stride: 0,
            readout_offset: 0,
            readout_size: 0,
            linear_refusal: None,
        };
        Self::finish(
            ctx,
            mem,
            info,
            vk::ImageAspectFlags::empty(),
            ImageGeometry::default(),
            vk::ImageUsageFlags::empty(),
            false,
        )
    }

    /// The CUDA half: one import of the allocation, one mapping of the tensor's range.
    fn finish(
        ctx: &Arc<Context>,
        mem: BatchMemory,
        info: Info,
        aspect: vk::ImageAspectFlags,
        geometry: ImageGeometry,
        image_usage: vk::ImageUsageFlags,
        depth: bool,
    ) -> Result<Batch> {
        let memory = mem.memory;
        let mut inner = Inner {
            ctx: ctx.clone(),
            vk: mem,
            cuda: None,
            cuda_ptr: 0,
            info,
            aspect,
            geometry,
            image_usage,
            depth,
        };
        // On error `inner` drops and releases what was made.
        if let Some(cuda) = &ctx.cuda {
            let handle = super::vulkan::memory::export_memory_fd(&ctx.vk, memory)?;
            let mut ext = ExternalMemory::import_opaque_fd(
                cuda.clone(),
                handle,
                inner.info.allocation_size,
                false,
            )?;
            let ptr = ext.map_buffer(inner.info.tensor_offset, inner.info.mapped_size);
            inner.cuda = Some(ext);
            inner.cuda_ptr = ptr?;
        }
        Ok(Batch {
            inner: Arc::new(inner),
        })
    }

    /// Everything about the batch.
    pub fn info(&self) -> &Info {
        &self.inner.info
    }

    /// The context the batch was made from.
    pub fn context(&self) -> &Arc<Context> {
        &self.inner.ctx
    }

    /// The one `VkDeviceMemory` every element is bound into.
    pub fn vk_memory(&self) -> vk::DeviceMemory {
        self.inner.vk.memory
    }

    /// A new `OPAQUE_FD` of the batch's one allocation; the caller owns it.
    pub fn export_fd(&self) -> Result<std::os::fd::OwnedFd> {
        super::vulkan::memory::export_memory_fd(&self.inner.ctx.vk, self.inner.vk.memory)
    }

    /// The readout buffer (copy path) or the buffer over all elements (buffer
    /// batches); null for a zero-copy image batch.
    pub fn vk_whole_buffer(&self) -> vk::Buffer {
        self.inner.vk.whole
    }

    /// The CUDA pointer of the tensor's first byte (element 0), or
    /// CUDA_UNAVAILABLE in a Vulkan-only context.
    pub fn cuda_ptr(&self) -> Result<u64> {
        if self.inner.cuda_ptr == 0 {
            self.inner.ctx.cuda()?;
        }
        Ok(self.inner.cuda_ptr)
    }

    fn check_index(&self, index: u32) -> Result<()> {
        let n = self.inner.info.count;
        if index >= n {
            return Err(Error::invalid(format!(
                "index {index} is out of range: the batch has {n} elements (0 to {})",
                n - 1
            )));
        }
        Ok(())
    }

    /// Element `index`.
    pub fn element(&self, index: u32) -> Result<Element> {
        self.check_index(index)?;
        let i = u64::from(index);
        let info = &self.inner.info;
        let v = &self.inner.vk;
        let data_offset = info.tensor_offset + i * info.element_stride;
        let cuda_pointer = match self.inner.cuda_ptr {
            0 => 0,
            p => p + i * info.element_stride,
        };
        Ok(match info.path {
            Path::Buffers => Element {
                image: vk::Image::null(),
                buffer: v.buffers[index as usize],
                memory_offset: i * info.element_stride,
                cuda_pointer,
                data_offset,
            },
            _ => Element {
                image: v.images[index as usize],
                buffer: vk::Buffer::null(),
                memory_offset: i * info.image_stride,
                cuda_pointer,
                data_offset,
            },
        })
    }

    /// A [`Buffer`] over element `index` of a buffer batch, or (None) over all of
    /// a buffer batch, or over the readout region of a copy-path image batch: it
    /// shares the batch's Vulkan objects and its one CUDA mapping (no new import)
    /// and keeps the batch's memory alive. Zero-copy image batches have no whole
    /// buffer (Unsupported).
    pub fn buffer(&self, index: Option<u32>) -> Result<Buffer> {
        let info = &self.inner.info;
        let v = &self.inner.vk;
        let (buffer, offset, size) = match (index, info.path) {
            (Some(i), Path::Buffers) => {
                self.check_index(i)?;
                (v.buffers[i as usize], u64::from(i) * info.element_stride, info.element_size)
            }
            (Some(_), _) => {
                return Err(Error::unsupported(
                    "the elements of an image batch are images, not buffers: use the batch's tensor",
                ))
            }
            (None, Path::ZeroCopy) => {
                return Err(Error::unsupported(
                    "a zero-copy image batch has no buffer over its elements (its memory is LINEAR images)",
                ))
            }
            (None, _) => (v.whole, info.tensor_offset, info.mapped_size),
        };
        let cuda_ptr = match self.inner.cuda_ptr {
            0 => 0,
            p => p + offset - info.tensor_offset,
        };
        let keep: crate::buffer::Keep = self.inner.clone();
        Ok(Buffer::batch_view(
            &self.inner.ctx,
            buffer,
            v.memory,
            info.allocation_size,
            offset,
            size,
            cuda_ptr,
            keep,
        ))
    }

    /// The layout check of a handoff (image batches).
    fn check_layout(
        &self,
        layout: vk::ImageLayout,
        dir: Direction,
        what: &str,
    ) -> Result<vk::ImageLayout> {
        use vk::ImageLayout as L;
        if self.inner.info.path == Path::Buffers {
            return Ok(L::UNDEFINED);
        }
        if self.inner.depth {
            let ok = matches!(
                layout,
                L::GENERAL
                    | L::TRANSFER_SRC_OPTIMAL
                    | L::TRANSFER_DST_OPTIMAL
                    | L::DEPTH_ATTACHMENT_OPTIMAL
                    | L::DEPTH_READ_ONLY_OPTIMAL
                    | L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
                    | L::DEPTH_STENCIL_READ_ONLY_OPTIMAL
                    | L::SHADER_READ_ONLY_OPTIMAL
            ) || (layout == L::UNDEFINED && dir == Direction::Release);
            if !ok {
                return Err(Error::invalid(format!(
                    "{what} is {layout:?}, which is not a layout of a depth image a batch hands over \
                     (GENERAL, TRANSFER_SRC/DST_OPTIMAL, DEPTH_(STENCIL_)ATTACHMENT_OPTIMAL, \
                     DEPTH_(STENCIL_)READ_ONLY_OPTIMAL, SHADER_READ_ONLY_OPTIMAL{})",
                    if dir == Direction::Release { ", or UNDEFINED" } else { "" }
                )));
            }
            let need = match layout {
                L::DEPTH_ATTACHMENT_OPTIMAL
                | L::DEPTH_READ_ONLY_OPTIMAL
                | L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
                | L::DEPTH_STENCIL_READ_ONLY_OPTIMAL => {
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
                }
                L::SHADER_READ_ONLY_OPTIMAL => {
                    vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::INPUT_ATTACHMENT
                }
                _ => vk::ImageUsageFlags::empty(),
            };
            if !need.is_empty() && !self.inner.image_usage.intersects(need) {
                return Err(Error::invalid(format!(
                    "{what} is {layout:?}, which needs usage {need:?}; the batch's images have {:?}",
                    self.inner.image_usage
                )));
            }
            return Ok(layout);
        }
        let layout = barrier::check_layout(layout, dir, what)?;
        let sync2 = self.inner.ctx.vk.sync2.is_some();
        barrier::check_layout_usage(layout, self.inner.image_usage, sync2, || what.into())?;
        Ok(layout)
    }

    unsafe fn handoff(
        &self,
        cmd: vk::CommandBuffer,
        dir: Direction,
        scope: &Scope,
        layout: vk::ImageLayout,
        what: &str,
    ) -> Result<()> {
        if cmd == vk::CommandBuffer::null() {
            return Err(Error::null("command_buffer"));
        }
        let layout = self.check_layout(layout, dir, what)?;
        let dev = &self.inner.ctx.vk;
        scope.check(&dev.rules, dir)?;
        let info = &self.inner.info;
        let (w, h) = (info.width, info.height);
        vb::record_handoff(dev, cmd, dir, scope, &self.target(w, h), layout);
        Ok(())
    }

    fn target(&self, width: u32, height: u32) -> HandoffTarget<'_> {
        let info = &self.inner.info;
        HandoffTarget {
            mem: &self.inner.vk,
            aspect: self.inner.aspect,
            extent: vk::Extent3D {
                width,
                height,
                depth: 1,
            },
            geometry: self.inner.geometry,
            buffer_size: info.element_size,
        }
    }

    /// How many pipeline barriers and copy commands a handoff records: (1, 0)
    /// for buffer and zero-copy batches, (2, N) on the copy path.
    pub fn handoff_commands(&self) -> (usize, usize) {
        vb::commands(&self.target(1, 1))
    }

    /// Records into `cmd` the release of every element to CUDA
    /// (`VK_QUEUE_FAMILY_EXTERNAL`) in one call: buffer batches and zero-copy
    /// image batches one barrier (images from `old_layout` to `GENERAL`); the
    /// copy path a barrier to `TRANSFER_SRC_OPTIMAL`, one copy of each image into
    /// the readout region, and a barrier releasing the readout region (the
    /// images stay the engine's, in `TRANSFER_SRC_OPTIMAL`). `old_layout` is
    /// ignored for buffer batches; `UNDEFINED` discards the contents.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the batch's device in the recording state,
    /// externally synchronised by the caller.
    pub unsafe fn cmd_release_to_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
        old_layout: vk::ImageLayout,
    ) -> Result<()> {
        self.handoff(cmd, Direction::Release, scope, old_layout, "old_layout")
    }

    /// Records the acquire of every element back from CUDA in one call: one
    /// barrier (images from `GENERAL` to `new_layout`), or on the copy path a
    /// barrier acquiring the readout region, one copy into each image and a
    /// barrier to `new_layout` (the images' previous contents are discarded).
    ///
    /// # Safety
    /// As for [`cmd_release_to_cuda`](Self::cmd_release_to_cuda).
    pub unsafe fn cmd_acquire_from_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
        new_layout: vk::ImageLayout,
    ) -> Result<()> {
        self.handoff(cmd, Direction::Acquire, scope, new_layout, "new_layout")
    }

    /// Records the acquire of the copy path's readout region alone, back from
    /// CUDA into `scope` (one barrier), leaving the images as they are: the
    /// camera loop, where CUDA only reads. Each frame's release on the copy path
    /// writes the readout region, which must be the engine's again first: record
    /// this (after the wait for CUDA's last read) before every release but the
    /// first. Other paths: InvalidArgument (their acquire,
    /// [`cmd_acquire_from_cuda`](Self::cmd_acquire_from_cuda), moves no data).
    ///
    /// # Safety
    /// As for [`cmd_release_to_cuda`](Self::cmd_release_to_cuda).
    pub unsafe fn cmd_acquire_readout_from_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
    ) -> Result<()> {
        if cmd == vk::CommandBuffer::null() {
            return Err(Error::null("command_buffer"));
        }
        if self.inner.info.path != Path::Copy {
            return Err(Error::invalid(format!(
                "the batch is on the {:?} path, which has no readout region: acquire it with \
                 cmd_acquire_from_cuda (vkcuda_batch_cmd_acquire_from_cuda), which moves no data",
                self.inner.info.path
            )));
        }
        let dev = &self.inner.ctx.vk;
        scope.check(&dev.rules, Direction::Acquire)?;
        vb::record_readout_acquire(dev, cmd, scope, &self.target(1, 1));
        Ok(())
    }

    /// The DLPack tensor of the whole batch (`(N, H, W, C)`, `(N, H, W)`, `(N,
    /// size)`) or of one element, with strides from the element stride and the
    /// row pitch; it keeps the batch's memory alive. Needs CUDA.
    pub fn export_dlpack(&self, t: &TensorSpec) -> Result<Tensor> {
        let info = &self.inner.info;
        let shape = info.shape();
        let strides = info.strides();
        let (offset, shape, strides) = match t.index {
            Some(i) => {
                self.check_index(i)?;
                (
                    u64::from(i) * info.element_stride,
                    &shape[1..],
                    &strides[1..],
                )
            }
            None => (0, &shape[..], &strides[..]),
        };
        let plan = Spec {
            dtype: info.dtype,
            shape,
            strides: Some(strides),
            offset,
            read_only: t.read_only,
            legacy: t.legacy,
        }
        .plan(info.mapped_size)?;
        let base = self.cuda_ptr().map_err(|e| {
            e.context("a DLPack tensor is a CUDA (kDLCUDA) tensor and needs the batch's CUDA view")
        })?;
        let cuda = self.inner.ctx.cuda()?;
        let keep: crate::buffer::Keep = self.inner.clone();
        dlpack::export_plan(base, cuda, keep, &plan)
    }

    /// [`export_dlpack`](Self::export_dlpack) after enqueueing on the consumer's
    /// `stream` a wait for `value` of the timeline `semaphore` (the value the
    /// engine's submit with the release signals): the consumer's work on
    /// `stream` is ordered after Vulkan's, and the host does not wait.
    pub fn export_dlpack_after(
        &self,
        t: &TensorSpec,
        semaphore: &Semaphore,
        value: u64,
        stream: CUstream,
    ) -> Result<Tensor> {
        if !Arc::ptr_eq(semaphore.context(), &self.inner.ctx)
            && semaphore.context().vk.device.handle() != self.inner.ctx.vk.device.handle()
        {
            return Err(Error::new(
                ErrorKind::DeviceMismatch,
                "the semaphore belongs to another device than the batch",
            ));
        }
        // Check everything about the tensor before the wait is enqueued.
        if let Some(i) = t.index {
            self.check_index(i)?;
        }
        self.cuda_ptr()?;
        semaphore.cuda_wait(value, stream)?;
        self.export_dlpack(t)
    }
}

/// The size of the probe buffer that learns the readout buffer's alignment.
const MIN_READOUT_PROBE: u64 = 4096;

/// One format's answers on this device, for [`probe`].
#[derive(Clone, Debug)]
pub struct FormatProbe {
    /// The format.
    pub format: vk::Format,
    /// The usage asked about.
    pub usage: vk::ImageUsageFlags,
    /// The format's linear-tiling features.
    pub linear_features: vk::FormatFeatureFlags,
    /// The format's optimal-tiling features.
    pub optimal_features: vk::FormatFeatureFlags,
    /// LINEAR: the external memory features of exportable images (None: the
    /// query refused the combination).
    pub linear_external: Option<vk::ExternalMemoryFeatureFlags>,
    /// OPTIMAL: the same.
    pub optimal_external: Option<vk::ExternalMemoryFeatureFlags>,
    /// LINEAR: (requiresDedicatedAllocation, prefersDedicatedAllocation) of a
    /// 640x480 exportable image (None: none could be made).
    pub linear_dedicated: Option<(bool, bool)>,
    /// OPTIMAL: the same.
    pub optimal_dedicated: Option<(bool, bool)>,
    /// LINEAR: the row pitch of a 640x480 image.
    pub linear_row_pitch: Option<u64>,
    /// Why LINEAR cannot be shared (None: the batch is zero-copy).
    pub linear_refusal: Option<String>,
    /// The path a batch of this format and usage gets.
    pub path: std::result::Result<Path, String>,
}

/// What the device allows, per format of [`FORMATS`] with its default usage: the
/// features, `DEDICATED_ONLY`, the dedicated requirements and the path a
/// 640x480 batch gets. For the docs and the lead's GPU probe.
pub fn probe(ctx: &Arc<Context>) -> Vec<FormatProbe> {
    let dev = &ctx.vk;
    FORMATS
        .iter()
        .map(|f| {
            let usage = default_image_usage(f.format);
            let aspect = if f.depth {
                vk::ImageAspectFlags::DEPTH
            } else {
                vk::ImageAspectFlags::COLOR
            };
            let p = |tiling| ImageParams {
                image_type: vk::ImageType::TYPE_2D,
                tiling,
                format: f.format,
                extent: vk::Extent3D {
                    width: 640,
                    height: 480,
                    depth: 1,
                },
                mip_levels: 1,
                array_layers: 1,
                flags: vk::ImageCreateFlags::empty(),
                usage,
            };
            let ext = |tiling| {
                super::vulkan::image::external_image_properties(dev, &p(tiling))
                    .ok()
                    .map(|(_, e)| e.external_memory_features)
            };
            let creatable = |tiling| {
                super::vulkan::image::check_usage_features(dev, f.format, tiling, usage).is_ok()
                    && ext(tiling).is_some()
            };
            let needs = |tiling| {
                creatable(tiling)
                    .then(|| vb::image_needs(dev, &p(tiling), aspect).ok())
                    .flatten()
            };
            let ln = needs(vk::ImageTiling::LINEAR);
            let on = needs(vk::ImageTiling::OPTIMAL);
            let path = Batch::create(ctx, &Description::images(2, f.format, 640, 480))
                .map(|b| b.info().path)
                .map_err(|e| e.message().to_string());
            FormatProbe {
                format: f.format,
                usage,
                linear_features: super::vulkan::image::features(
                    dev,
                    f.format,
                    vk::ImageTiling::LINEAR,
                ),
                optimal_features: super::vulkan::image::optimal_features(dev, f.format),
                linear_external: ext(vk::ImageTiling::LINEAR),
                optimal_external: ext(vk::ImageTiling::OPTIMAL),
                linear_dedicated: ln.map(|n| (n.requires_dedicated, n.prefers_dedicated)),
                optimal_dedicated: on.map(|n| (n.requires_dedicated, n.prefers_dedicated)),
                linear_row_pitch: ln.and_then(|n| n.layout.map(|l| l.row_pitch)),
                linear_refusal: vb::sharing_refusal(dev, &p(vk::ImageTiling::LINEAR)),
                path,
            }
        })
        .collect()
}
