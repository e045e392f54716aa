//! The doctor's deep self-test (`vkcuda_doctor --deep`, `VKCUDA_DOCTOR_RUN_DEEP_BIT`,
//! `vkcuda.doctor(deep=True)`): on the machine's own GPU it makes each kind of
//! shared resource the library offers, pushes compressible patterns (a ramp,
//! constant 4 KiB tiles, and what compression engines squeeze most: a 64 KiB
//! zero region, as cleared memory is, and constant tiles as large as a
//! compression page, 64 KiB, and 2 MiB) and random bytes through it in both
//! directions through the library's own paths, and compares every byte.
//!
//! - Vulkan side: a standalone context's queue, a host-visible staging buffer,
//!   `vkCmdCopyBuffer` / `vkCmdCopyBufferToImage` / `vkCmdCopyImageToBuffer`, and
//!   the library's release and acquire barriers (`Buffer::cmd_release_to_cuda`, ...) around
//!   every handoff.
//! - CUDA side: the driver API the library already loads: `cuMemcpyHtoD`/`DtoH`
//!   for buffers, `cuMemcpy3D` for every level array of an image (layers and
//!   slices included), `cuMemcpy2D` for each plane of a video frame at
//!   [`Image::plane_pointer`]'s address and row pitch.
//!
//! Each resource is one check (`deep.buffer.vulkan`, `deep.image.R8G8B8A8_UNORM.2D`,
//! `deep.frame.NV12`, `deep.semaphore.timeline`, ...) that passes, or fails with the
//! first wrong byte (where, expected, got) and what to do; `seen` ends with the
//! check's time, and `deep.total` states the whole run's. Without CUDA (no driver,
//! no CUDA twin of the Vulkan device, a driver without the copy calls) the
//! Vulkan-only part runs: create, write and read back through Vulkan across a
//! release/acquire pair, and export/import of fds where the device can; `deep.cuda`
//! says why the CUDA part was skipped (a warning).
//!
//! The cases are data: [`BUFFERS`], [`IMAGES`], every `verified` row of
//! [`format::PLANAR`], [`SEMAPHORES`].

use std::ffi::c_void;
use std::os::fd::AsFd;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys;

use super::cuda;
use crate::buffer::{Allocator, Buffer};
use crate::context::{Context, CudaChoice};
use crate::cuda::cu_check;
use crate::doctor::{Check, Status};
use crate::error::{Error, ErrorKind, Result};
use crate::format;
use crate::handoff::Scope;
use crate::image::{Description, Dimension, Image};
use crate::semaphore::{Kind, Semaphore};

/// Bytes of each shared buffer.
pub const BUFFER_BYTES: u64 = 4 << 20;
/// The extent of each video frame.
pub const FRAME_EXTENT: (u32, u32) = (1920, 1080);
/// The longest the self-test waits for one submit or one semaphore value: past
/// it the check fails (the doctor always returns).
pub const WAIT: Duration = Duration::from_secs(10);
/// What the whole run should take on a data-centre GPU (the H200 measurement is
/// in docs/GUIDE.md); `deep.total` warns past it.
pub const TARGET: Duration = Duration::from_secs(10);

/// CUDA driver calls the self-test makes beyond the library's own (which
/// `cuda::driver` checks): checked before any is called.
pub const CUDA_SYMBOLS: &[&str] = &[
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpy2D_v2",
    "cuMemcpy3D_v2",
    "cuCtxSynchronize",
];

/// One image case: a format and a shape (every case has its full mip chain: the
/// layered ones must, see `image::description::layers_agree`).
#[derive(Clone, Copy, Debug)]
pub struct ImageCase {
    pub format: vk::Format,
    /// "1D", "1D_ARRAY", "2D", "2D_ARRAY", "3D", "CUBE".
    pub shape: &'static str,
    pub dimension: Dimension,
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub layers: u32,
    pub cube: bool,
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

/// One format of each class of [`format::TABLE`] (8/16/32-bit channels; 1, 2 and
/// 4 channels; integer, float, sRGB, BGRA) as a 2D image, and every shape.
pub const IMAGES: &[ImageCase] = &[
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
pub const BUFFERS: &[(&str, Allocator)] =
    &[("vulkan", Allocator::Vulkan), ("cuda", Allocator::Cuda)];

/// The semaphore cases.
pub const SEMAPHORES: &[(&str, Kind)] = &[("timeline", Kind::Timeline), ("binary", Kind::Binary)];

// --- patterns ------------------------------------------------------------------

/// What is written: a ramp and constant tiles (what compression engines squeeze),
/// pseudo-random bytes (what they cannot), and cleared memory with tiles as large
/// as compression pages (what they squeeze most).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Ramp,
    Tiles,
    Random,
    /// A [`ZERO_REGION`]-byte zero region, the rest constant tiles of
    /// [`SMALL_PAGE`] bytes below [`LARGE_PAGE`] of the packed bytes and of
    /// [`LARGE_PAGE`] bytes from there on.
    Cleared,
}

pub const PATTERNS: [Pattern; 4] = [
    Pattern::Ramp,
    Pattern::Tiles,
    Pattern::Random,
    Pattern::Cleared,
];

/// What every resource carries, for the checks' `seen`.
pub const DATA: &str = "ramp, 4 KiB tiles, random, 64 KiB of zeros, 64 KiB and 2 MiB tiles";

/// The zero region of [`Pattern::Cleared`]: cleared memory, which compression
/// engines squeeze most (and which no other pattern writes).
pub const ZERO_REGION: usize = 64 << 10;
/// A compression page: [`Pattern::Cleared`]'s tiles below [`LARGE_PAGE`].
pub const SMALL_PAGE: usize = 64 << 10;
/// [`Pattern::Cleared`]'s tiles from this packed offset on are this large.
pub const LARGE_PAGE: usize = 2 << 20;

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Ramp => "a ramp",
            Pattern::Tiles => "constant 4 KiB tiles",
            Pattern::Random => "random bytes",
            Pattern::Cleared => "a 64 KiB zero region and 64 KiB and 2 MiB tiles",
        }
    }
}

/// The value of constant tile `t` for `seed`: never 0 (zeros are the zero
/// region's), and never the value of the tile before or after it.
fn tile_value(t: u64, seed: u64) -> u8 {
    match t.wrapping_mul(0x9d).wrapping_add(seed) as u8 {
        0 => 0xff,
        v => v,
    }
}

/// Bytes of the random block [`fill`] repeats: odd-sized, so that no row pitch,
/// plane offset or level offset lines the repeats up with the image.
pub const RANDOM_BLOCK: usize = (1 << 20) + 4093;

/// Copies `block` over `out` again and again (memcpy speed even in a debug build).
fn repeat(block: &[u8], out: &mut [u8]) {
    for chunk in out.chunks_mut(block.len()) {
        chunk.copy_from_slice(&block[..chunk.len()]);
    }
}

/// Fills `out` with `p`; `seed` differs per direction so that data left over from
/// the other direction never passes. The ramp repeats every 256 bytes, the tiles
/// are 4 KiB of one value each, the random bytes repeat every [`RANDOM_BLOCK`]
/// bytes (far more than any compression block). [`Pattern::Cleared`]: the zero
/// region starts at 0 for an even seed and at [`ZERO_REGION`] for an odd one (the
/// two directions' seeds differ in parity, so zeros left over from one never pass
/// for the other's), tiles of [`SMALL_PAGE`] then [`LARGE_PAGE`] bytes around it.
pub fn fill(p: Pattern, seed: u64, out: &mut [u8]) {
    match p {
        Pattern::Ramp => {
            let period: Vec<u8> = (0..256u64).map(|i| i.wrapping_add(seed) as u8).collect();
            repeat(&period, out);
        }
        Pattern::Tiles => {
            for (t, tile) in out.chunks_mut(4096).enumerate() {
                tile.fill((t as u64).wrapping_mul(0x9d).wrapping_add(seed) as u8);
            }
        }
        Pattern::Random => {
            // xorshift64*: fast and good enough to defeat any compression.
            let mut block = vec![0u8; RANDOM_BLOCK.min(out.len())];
            let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for chunk in block.chunks_mut(8) {
                s ^= s >> 12;
                s ^= s << 25;
                s ^= s >> 27;
                let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
            repeat(&block, out);
        }
        Pattern::Cleared => {
            let (mut at, mut t) = (0, 0u64);
            while at < out.len() {
                let size = if at < LARGE_PAGE {
                    SMALL_PAGE
                } else {
                    LARGE_PAGE
                };
                let end = (at + size).min(out.len());
                out[at..end].fill(tile_value(t, seed));
                (at, t) = (end, t + 1);
            }
            let zero = (seed as usize & 1) * ZERO_REGION;
            let len = out.len();
            out[zero.min(len)..(zero + ZERO_REGION).min(len)].fill(0);
        }
    }
}

/// The first byte where `got` differs from `want` (offset, expected, got) and how
/// many differ.
pub fn first_difference(want: &[u8], got: &[u8]) -> Option<(usize, u8, u8, usize)> {
    if want == got {
        return None;
    }
    let mut first = None;
    let mut count = 0;
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w != g {
            count += 1;
            first.get_or_insert((i, *w, *g));
        }
    }
    first.map(|(i, w, g)| (i, w, g, count))
}

// --- the Vulkan side -------------------------------------------------------------

/// A part of the packed bytes: one level of an image (every layer), one plane of
/// a frame, or a whole buffer.
#[derive(Clone, Debug)]
struct Region {
    offset: usize,
    len: usize,
    /// Bytes per row, to say where a wrong byte is (0: a buffer).
    row_bytes: usize,
    name: String,
}

/// The standalone context, its queue, one command buffer and fence, and a staging
/// buffer.
struct Lab {
    ctx: Arc<Context>,
    queue: vk::Queue,
    family: u32,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    staging: Option<Staging>,
    /// Why the CUDA part is skipped (None: it runs).
    no_cuda: Option<String>,
    /// A submit or a semaphore did not complete in time: objects it may still use
    /// are leaked rather than destroyed, and the rest of the run is skipped.
    stuck: bool,
}

struct Staging {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: usize,
}

fn vkr<T>(call: &str, r: std::result::Result<T, vk::Result>) -> Result<T> {
    r.map_err(|e| Error::vk(call, e))
}

impl Lab {
    fn new(ctx: Arc<Context>, no_cuda: Option<String>) -> Result<Lab> {
        let owned = ctx
            .vk
            .owned
            .as_ref()
            .ok_or_else(|| Error::invalid("the self-test needs a standalone context"))?;
        let (queue, family) = (owned.queue, owned.queue_family_index);
        let d = &ctx.vk.device;
        // SAFETY: the device is the context's; the objects are destroyed in Drop.
        unsafe {
            let pool = vkr(
                "vkCreateCommandPool",
                d.create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(family)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                ),
            )?;
            let cmd = match d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1),
            ) {
                Ok(c) => c[0],
                Err(e) => {
                    d.destroy_command_pool(pool, None);
                    return Err(Error::vk("vkAllocateCommandBuffers", e));
                }
            };
            let fence = match d.create_fence(&vk::FenceCreateInfo::default(), None) {
                Ok(f) => f,
                Err(e) => {
                    d.destroy_command_pool(pool, None);
                    return Err(Error::vk("vkCreateFence", e));
                }
            };
            Ok(Lab {
                ctx,
                queue,
                family,
                pool,
                cmd,
                fence,
                staging: None,
                no_cuda,
                stuck: false,
            })
        }
    }

    fn cuda(&self) -> bool {
        self.no_cuda.is_none()
    }

    fn scope(&self) -> Scope {
        Scope::with_defaults(self.family, 0, 0)
    }

    /// The staging buffer's first `size` bytes (grown as needed).
    fn staging(&mut self, size: usize) -> Result<(vk::Buffer, &mut [u8])> {
        if !matches!(&self.staging, Some(s) if s.size >= size) {
            if let Some(old) = self.staging.take() {
                self.free_staging(old);
            }
            self.staging = Some(self.make_staging(size.max(16 << 20))?);
        }
        let s = self.staging.as_ref().expect("made above");
        // SAFETY: the mapping is `s.size` bytes, host-coherent, and only this
        // thread touches it between submits.
        Ok((s.buffer, unsafe {
            std::slice::from_raw_parts_mut(s.ptr, size)
        }))
    }

    fn make_staging(&self, size: usize) -> Result<Staging> {
        let vkd = &self.ctx.vk;
        let d = &vkd.device;
        // SAFETY: plain object creation on the context's device; released on error.
        unsafe {
            let buffer = vkr(
                "vkCreateBuffer",
                d.create_buffer(
                    &vk::BufferCreateInfo::default().size(size as u64).usage(
                        vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST,
                    ),
                    None,
                ),
            )?;
            let req = d.get_buffer_memory_requirements(buffer);
            let props = vkd
                .instance
                .get_physical_device_memory_properties(vkd.physical);
            let want =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let fits = |i: u32, flags: vk::MemoryPropertyFlags| {
                req.memory_type_bits & (1 << i) != 0
                    && props.memory_types[i as usize]
                        .property_flags
                        .contains(flags)
            };
            // Cached where there is such a type: every byte is read back on the host,
            // and reading uncached (write-combined) memory is slow.
            let cached = want | vk::MemoryPropertyFlags::HOST_CACHED;
            let index = (0..props.memory_type_count)
                .find(|&i| fits(i, cached))
                .or_else(|| (0..props.memory_type_count).find(|&i| fits(i, want)));
            let Some(index) = index else {
                d.destroy_buffer(buffer, None);
                return Err(Error::unsupported("no host-visible coherent memory type"));
            };
            let memory = match d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(index),
                None,
            ) {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(Error::vk("vkAllocateMemory", e));
                }
            };
            let mapped = d
                .bind_buffer_memory(buffer, memory, 0)
                .and_then(|_| d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()));
            match mapped {
                Ok(p) => Ok(Staging {
                    buffer,
                    memory,
                    ptr: p.cast(),
                    size,
                }),
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    Err(Error::vk("vkMapMemory", e))
                }
            }
        }
    }

    fn free_staging(&self, s: Staging) {
        let d = &self.ctx.vk.device;
        // SAFETY: no submit is pending (each one is waited for).
        unsafe {
            d.destroy_buffer(s.buffer, None);
            d.free_memory(s.memory, None);
        }
    }

    /// Records with `record` (after a barrier that orders it after every earlier
    /// transfer), submits with the semaphores, and waits up to [`WAIT`].
    fn run(
        &mut self,
        waits: &[(vk::Semaphore, u64)],
        signals: &[(vk::Semaphore, u64)],
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<()> {
        if self.stuck {
            return Err(Error::new(
                ErrorKind::Timeout,
                "an earlier submit never completed",
            ));
        }
        let d = &self.ctx.vk.device;
        let cmd = self.cmd;
        // SAFETY: the command buffer is ours and idle (the last submit was waited for).
        unsafe {
            vkr(
                "vkResetCommandBuffer",
                d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()),
            )?;
            vkr(
                "vkBeginCommandBuffer",
                d.begin_command_buffer(
                    cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                ),
            )?;
            let all = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[vk::MemoryBarrier::default()
                    .src_access_mask(all)
                    .dst_access_mask(all)],
                &[],
                &[],
            );
            record(d, cmd);
            vkr("vkEndCommandBuffer", d.end_command_buffer(cmd))?;
            let ws: Vec<_> = waits.iter().map(|w| w.0).collect();
            let wv: Vec<_> = waits.iter().map(|w| w.1).collect();
            let ss: Vec<_> = signals.iter().map(|s| s.0).collect();
            let sv: Vec<_> = signals.iter().map(|s| s.1).collect();
            let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; ws.len()];
            let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
                .wait_semaphore_values(&wv)
                .signal_semaphore_values(&sv);
            let cmds = [cmd];
            let info = vk::SubmitInfo::default()
                .command_buffers(&cmds)
                .wait_semaphores(&ws)
                .wait_dst_stage_mask(&stages)
                .signal_semaphores(&ss)
                .push_next(&mut tl);
            vkr(
                "vkQueueSubmit",
                d.queue_submit(self.queue, &[info], self.fence),
            )?;
            match d.wait_for_fences(&[self.fence], true, WAIT.as_nanos() as u64) {
                Ok(()) => {}
                Err(vk::Result::TIMEOUT) => {
                    self.stuck = true;
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!("a submit did not complete within {} s", WAIT.as_secs()),
                    ));
                }
                Err(e) => {
                    self.stuck = true;
                    return Err(Error::vk("vkWaitForFences", e));
                }
            }
            vkr("vkResetFences", d.reset_fences(&[self.fence]))?;
        }
        Ok(())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.stuck {
            // Work may still be pending on these objects and the device: leak them
            // (and the context, whose destruction would wait for the device).
            // (the staging buffer is left as it is: Staging has no Drop.)
            std::mem::forget(self.ctx.clone());
            return;
        }
        if let Some(s) = self.staging.take() {
            self.free_staging(s);
        }
        let d = &self.ctx.vk.device;
        // SAFETY: every submit was waited for.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

// --- resources ----------------------------------------------------------------------

/// What a subject records its barriers with: the device and the lab's queue family.
struct Hand {
    scope: Scope,
}

/// A shared resource as the round trip sees it.
trait Subject {
    /// Where the bytes sit in the packed form both sides copy.
    fn regions(&self) -> &[Region];
    /// Records: staging -> resource, then the release to CUDA.
    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer);
    /// Records: the acquire from CUDA, then resource -> staging.
    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer);
    /// CUDA writes the packed bytes into the resource.
    fn cuda_write(&self, host: &[u8]) -> Result<()>;
    /// CUDA reads the resource into the packed bytes.
    fn cuda_read(&self, host: &mut [u8]) -> Result<()>;
}

fn packed_size(regions: &[Region]) -> usize {
    regions.iter().map(|r| r.offset + r.len).max().unwrap_or(0)
}

fn cuda_ctx(ctx: &Context) -> Result<&Arc<cuda::CudaContext>> {
    ctx.cuda()
}

struct BufferSubject {
    buffer: Buffer,
    regions: Vec<Region>,
}

impl Subject for BufferSubject {
    fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let size = self.regions[0].len as u64;
        // SAFETY: recording into the lab's command buffer.
        unsafe {
            d.cmd_copy_buffer(
                cmd,
                staging,
                self.buffer.vk_buffer(),
                &[vk::BufferCopy::default().size(size)],
            );
            self.buffer
                .cmd_release_to_cuda(cmd, &h.scope)
                .expect("the lab's own buffer and scope");
        }
    }

    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let size = self.regions[0].len as u64;
        // SAFETY: as above.
        unsafe {
            self.buffer
                .cmd_acquire_from_cuda(cmd, &h.scope)
                .expect("the lab's own buffer and scope");
            d.cmd_copy_buffer(
                cmd,
                self.buffer.vk_buffer(),
                staging,
                &[vk::BufferCopy::default().size(size)],
            );
        }
    }

    fn cuda_write(&self, host: &[u8]) -> Result<()> {
        let ptr = self.buffer.cuda_ptr()?;
        let _g = cuda_ctx(self.buffer.context())?.enter()?;
        // SAFETY: the buffer is `host.len()` bytes; the symbols were checked.
        cu_check("cuMemcpyHtoD_v2", unsafe {
            sys::cuMemcpyHtoD_v2(ptr, host.as_ptr().cast(), host.len())
        })?;
        cu_check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    fn cuda_read(&self, host: &mut [u8]) -> Result<()> {
        let ptr = self.buffer.cuda_ptr()?;
        let _g = cuda_ctx(self.buffer.context())?.enter()?;
        // SAFETY: as above.
        cu_check("cuMemcpyDtoH_v2", unsafe {
            sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), ptr, host.len())
        })
    }
}

/// An image or a video frame: copies per level (every layer) or per plane.
struct ImageSubject {
    image: Image,
    regions: Vec<Region>,
    copies: Vec<vk::BufferImageCopy>,
    /// Per region: (width, height, depth x layers) in texels for CUDA's copies.
    extents: Vec<(usize, usize, usize)>,
    /// 1D layered: CUDA's layers are its "depth" with a height of 1.
    layout: vk::ImageLayout,
}

fn level_extent(c: &ImageCase, l: u32) -> (u32, u32, u32) {
    (
        (c.width >> l).max(1),
        (c.height >> l).max(1),
        (c.depth >> l).max(1),
    )
}

impl ImageSubject {
    fn of_image(image: Image, c: &ImageCase) -> ImageSubject {
        let levels = image.description().mip_levels;
        let bpt = image.format_info().bytes_per_texel() as usize;
        let (mut regions, mut copies, mut extents) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = 0usize;
        for l in 0..levels {
            let (w, h, dd) = level_extent(c, l);
            let len = w as usize * h as usize * dd as usize * c.layers as usize * bpt;
            regions.push(Region {
                offset,
                len,
                row_bytes: w as usize * bpt,
                name: format!("level {l} ({w}x{h}x{dd}, {} layer(s))", c.layers),
            });
            copies.push(
                vk::BufferImageCopy::default()
                    .buffer_offset(offset as u64)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: l,
                        base_array_layer: 0,
                        layer_count: c.layers,
                    })
                    .image_extent(vk::Extent3D {
                        width: w,
                        height: h,
                        depth: dd,
                    }),
            );
            extents.push((w as usize, h as usize, (dd * c.layers) as usize));
            offset = (offset + len).next_multiple_of(16);
        }
        ImageSubject {
            image,
            regions,
            copies,
            extents,
            layout: vk::ImageLayout::UNDEFINED,
        }
    }

    fn of_frame(image: Image) -> Result<ImageSubject> {
        let (mut regions, mut copies, mut extents) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = 0usize;
        for p in 0..image.plane_count() {
            let pp = image.plane_pointer(p)?;
            let row = pp.width as usize * pp.bytes_per_texel as usize;
            let len = row * pp.height as usize;
            regions.push(Region {
                offset,
                len,
                row_bytes: row,
                name: format!(
                    "plane {p} ({}x{}, {} byte(s) per texel, row pitch {})",
                    pp.width, pp.height, pp.bytes_per_texel, pp.layout.row_pitch
                ),
            });
            copies.push(
                vk::BufferImageCopy::default()
                    .buffer_offset(offset as u64)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: image.plane_aspect(p),
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D {
                        width: pp.width,
                        height: pp.height,
                        depth: 1,
                    }),
            );
            extents.push((pp.width as usize, pp.height as usize, 1));
            offset = (offset + len).next_multiple_of(16);
        }
        Ok(ImageSubject {
            image,
            regions,
            copies,
            extents,
            layout: vk::ImageLayout::UNDEFINED,
        })
    }

    fn range(&self) -> vk::ImageSubresourceRange {
        self.image.handoff_range(vk::ImageLayout::GENERAL).range
    }

    /// One copy of level `l` (every layer or slice) between host bytes and its array.
    fn memcpy3d(&self, l: usize, host: *mut u8, to_array: bool) -> Result<()> {
        let array = self.image.level_array(0, l as u32)?;
        let (w, h, depth) = self.extents[l];
        let bpt = self.image.format_info().bytes_per_texel() as usize;
        let row = w * bpt;
        let host_side = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, row, h);
        let array_side = (sys::CUmemorytype::CU_MEMORYTYPE_ARRAY, 0, 0);
        let (src, dst) = if to_array {
            (host_side, array_side)
        } else {
            (array_side, host_side)
        };
        let p = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: src.0,
            srcHost: if to_array {
                host.cast_const().cast()
            } else {
                ptr::null()
            },
            srcDevice: 0,
            srcArray: if to_array { ptr::null_mut() } else { array },
            reserved0: ptr::null_mut(),
            srcPitch: src.1,
            srcHeight: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: dst.0,
            dstHost: if to_array {
                ptr::null_mut()
            } else {
                host.cast::<c_void>()
            },
            dstDevice: 0,
            dstArray: if to_array { array } else { ptr::null_mut() },
            reserved1: ptr::null_mut(),
            dstPitch: dst.1,
            dstHeight: dst.2,
            WidthInBytes: row,
            Height: h,
            Depth: depth,
        };
        // SAFETY: the host range is the level's packed bytes; the symbol was checked.
        cu_check("cuMemcpy3D_v2", unsafe { sys::cuMemcpy3D_v2(&p) })
    }

    /// One copy of plane `p` between host bytes and its pitched device memory.
    fn memcpy2d(&self, p: usize, host: *mut u8, to_device: bool) -> Result<()> {
        let pp = self.image.plane_pointer(p)?;
        let row = pp.width as usize * pp.bytes_per_texel as usize;
        use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
        let device = (
            CU_MEMORYTYPE_DEVICE,
            pp.pointer,
            pp.layout.row_pitch as usize,
        );
        let hostside = (CU_MEMORYTYPE_HOST, 0, row);
        let (src, dst) = if to_device {
            (hostside, device)
        } else {
            (device, hostside)
        };
        let c = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src.0,
            srcHost: if to_device {
                host.cast_const().cast()
            } else {
                ptr::null()
            },
            srcDevice: src.1,
            srcArray: ptr::null_mut(),
            srcPitch: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst.0,
            dstHost: if to_device {
                ptr::null_mut()
            } else {
                host.cast::<c_void>()
            },
            dstDevice: dst.1,
            dstArray: ptr::null_mut(),
            dstPitch: dst.2,
            WidthInBytes: row,
            Height: pp.height as usize,
        };
        // SAFETY: as for memcpy3d; the plane lies inside the mapped allocation.
        cu_check("cuMemcpy2D_v2", unsafe { sys::cuMemcpy2D_v2(&c) })
    }

    fn cuda_copy(&self, host: *mut u8, to_image: bool) -> Result<()> {
        let _g = cuda_ctx(self.image.context())?.enter()?;
        for (i, r) in self.regions.iter().enumerate() {
            // SAFETY: `host` is the packed buffer; `r` lies inside it.
            let at = unsafe { host.add(r.offset) };
            if self.image.is_frame() {
                self.memcpy2d(i, at, to_image)?;
            } else {
                self.memcpy3d(i, at, to_image)?;
            }
        }
        cu_check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }
}

impl Subject for ImageSubject {
    fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
        let all = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
        // SAFETY: recording into the lab's command buffer.
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[vk::ImageMemoryBarrier::default()
                    .src_access_mask(all)
                    .dst_access_mask(all)
                    .old_layout(self.layout)
                    .new_layout(dst)
                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .image(self.image.vk_image())
                    .subresource_range(self.range())],
            );
            d.cmd_copy_buffer_to_image(cmd, staging, self.image.vk_image(), dst, &self.copies);
            self.image
                .cmd_release_to_cuda(cmd, &h.scope, dst)
                .expect("the lab's own image, scope and layout");
        }
        self.layout = vk::ImageLayout::GENERAL;
    }

    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        // SAFETY: as above.
        unsafe {
            self.image
                .cmd_acquire_from_cuda(cmd, &h.scope, src)
                .expect("the lab's own image, scope and layout");
            d.cmd_copy_image_to_buffer(cmd, self.image.vk_image(), src, staging, &self.copies);
        }
        self.layout = src;
    }

    fn cuda_write(&self, host: &[u8]) -> Result<()> {
        self.cuda_copy(host.as_ptr().cast_mut(), true)
    }

    fn cuda_read(&self, host: &mut [u8]) -> Result<()> {
        self.cuda_copy(host.as_mut_ptr(), false)
    }
}

// --- the round trip --------------------------------------------------------------

/// How one check came out: its status, what was seen, the fix.
struct Outcome {
    status: Status,
    seen: String,
    fix: String,
}

impl Outcome {
    fn pass(seen: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Pass,
            seen: seen.into(),
            fix: String::new(),
        }
    }

    fn fail(seen: impl Into<String>, fix: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Fail,
            seen: seen.into(),
            fix: fix.into(),
        }
    }

    fn skip(seen: impl Into<String>, fix: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Warn,
            seen: format!("skipped: {}", seen.into()),
            fix: fix.into(),
        }
    }

    /// An error of a library call: unsupported things are skips, the rest fail.
    fn error(what: &str, e: &Error) -> Outcome {
        match e.kind {
            ErrorKind::Unsupported | ErrorKind::ExtensionNotPresent => Outcome::skip(
                format!("{what}: {}", e.message),
                "nothing to do unless you need this kind of resource: this device or driver does not \
                 offer it",
            ),
            _ => Outcome::fail(
                format!("{what} failed: {}", e.message),
                "run vkcuda_doctor without --deep and fix what it reports; if it reports nothing, \
                 report this line with the output of vkcuda_doctor --deep --json",
            ),
        }
    }
}

const WRONG_DATA_FIX: &str = "do not share this kind of resource on this machine until this is \
    fixed: CUDA's and Vulkan's views of the same memory disagree (a driver layout or compression \
    mismatch, or a broken handoff); update the NVIDIA driver, and report this line with the \
    output of vkcuda_doctor --deep --json";

/// Says where byte `offset` of the packed bytes is.
fn locate(regions: &[Region], offset: usize) -> String {
    for r in regions {
        if offset >= r.offset && offset < r.offset + r.len {
            let k = offset - r.offset;
            return match k.checked_div(r.row_bytes) {
                None => format!("offset {k}"),
                Some(row) => format!(
                    "{}, row {row}, byte {} of the row (packed offset {offset})",
                    r.name,
                    k % r.row_bytes
                ),
            };
        }
    }
    format!("packed offset {offset}")
}

/// Compares the regions of `got` with `want`; an outcome for the first difference.
fn compare(regions: &[Region], want: &[u8], got: &[u8], what: &str) -> Option<Outcome> {
    let mut wrong = 0usize;
    let mut first = None;
    for r in regions {
        let span = r.offset..r.offset + r.len;
        if let Some((i, w, g, n)) = first_difference(&want[span.clone()], &got[span]) {
            wrong += n;
            first.get_or_insert((r.offset + i, w, g));
        }
    }
    let (at, w, g) = first?;
    let total: usize = regions.iter().map(|r| r.len).sum();
    Some(Outcome::fail(
        format!(
            "{what}: first wrong byte at {}: expected {w:#04x}, got {g:#04x} ({wrong} of {total} bytes wrong)",
            locate(regions, at)
        ),
        WRONG_DATA_FIX,
    ))
}

/// One round per pattern ([`PATTERNS`]): Vulkan writes and CUDA reads, CUDA writes
/// and Vulkan reads; without CUDA, Vulkan writes, hands over and back, and reads.
/// Ok: the bytes moved each way.
fn round_trips(lab: &mut Lab, s: &mut dyn Subject) -> std::result::Result<usize, Outcome> {
    let regions = s.regions().to_vec();
    let n = packed_size(&regions);
    let mut want = vec![0u8; n];
    let mut got = vec![0u8; n];
    let cuda = lab.cuda();
    let hand = Hand { scope: lab.scope() };
    for (i, p) in PATTERNS.into_iter().enumerate() {
        fill(p, 0x11 + i as u64, &mut want);
        let staging = {
            let (b, bytes) = lab
                .staging(n)
                .map_err(|e| Outcome::error("the staging buffer", &e))?;
            bytes.copy_from_slice(&want);
            b
        };
        lab.run(&[], &[], |d, cmd| s.upload(&hand, d, cmd, staging))
            .map_err(|e| Outcome::error("the Vulkan write", &e))?;
        if cuda {
            s.cuda_read(&mut got)
                .map_err(|e| Outcome::error("the CUDA read", &e))?;
            if let Some(o) = compare(
                &regions,
                &want,
                &got,
                &format!("Vulkan wrote {}, CUDA read", p.name()),
            ) {
                return Err(o);
            }
            fill(p, 0x5a + i as u64, &mut want);
            s.cuda_write(&want)
                .map_err(|e| Outcome::error("the CUDA write", &e))?;
        }
        lab.run(&[], &[], |d, cmd| s.download(&hand, d, cmd, staging))
            .map_err(|e| Outcome::error("the Vulkan read", &e))?;
        let (_, bytes) = lab
            .staging(n)
            .map_err(|e| Outcome::error("the staging buffer", &e))?;
        let what = if cuda {
            format!("CUDA wrote {}, Vulkan read", p.name())
        } else {
            format!(
                "Vulkan wrote {}, handed it over and back, and read",
                p.name()
            )
        };
        if let Some(o) = compare(&regions, &want, bytes, &what) {
            return Err(o);
        }
    }
    let moved: usize = regions.iter().map(|r| r.len).sum();
    Ok(moved * PATTERNS.len() * if cuda { 2 } else { 1 })
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn both_ways(lab: &Lab) -> String {
    match &lab.no_cuda {
        None => "Vulkan -> CUDA and CUDA -> Vulkan".to_string(),
        Some(_) => "Vulkan only (CUDA part skipped: see deep.cuda)".to_string(),
    }
}

fn buffer_case(lab: &mut Lab, allocator: Allocator) -> Outcome {
    if allocator == Allocator::Cuda {
        if let Some(why) = &lab.no_cuda {
            return Outcome::skip(
                format!("a CUDA-allocated buffer needs CUDA ({why})"),
                "see deep.cuda",
            );
        }
    }
    let buffer = match Buffer::create(
        &lab.ctx,
        BUFFER_BYTES,
        vk::BufferUsageFlags::empty(),
        allocator,
    ) {
        Ok(b) => b,
        Err(e) => return Outcome::error("vkcuda_buffer_create", &e),
    };
    let mut s = BufferSubject {
        buffer,
        regions: vec![Region {
            offset: 0,
            len: BUFFER_BYTES as usize,
            row_bytes: 0,
            name: "buffer".into(),
        }],
    };
    let moved = match round_trips(lab, &mut s) {
        Ok(m) => m,
        Err(o) => return o,
    };
    let mut seen = format!(
        "{} buffer, {DATA}, {}: every byte right ({} moved)",
        mib(BUFFER_BYTES as usize),
        both_ways(lab),
        mib(moved)
    );
    if lab.no_cuda.is_some() && allocator == Allocator::Vulkan {
        // The fd path: the memory exported and imported again in this context.
        match fd_round_trip(lab, &s.buffer) {
            Ok(()) => seen.push_str("; exported as an fd and imported again: same bytes"),
            Err(o) => return o,
        }
    }
    Outcome::pass(seen)
}

/// Exports `b`, imports the fd as a second buffer, writes random bytes through
/// the first and reads them through the second.
fn fd_round_trip(lab: &mut Lab, b: &Buffer) -> std::result::Result<(), Outcome> {
    let fd = b
        .export_fd()
        .map_err(|e| Outcome::error("vkcuda_buffer_export_fd", &e))?;
    let twin = Buffer::import_fd(
        &lab.ctx,
        fd.as_fd(),
        b.layout(),
        vk::BufferUsageFlags::empty(),
    )
    .map_err(|e| Outcome::error("vkcuda_buffer_import_fd", &e))?;
    let n = BUFFER_BYTES as usize;
    let mut want = vec![0u8; n];
    fill(Pattern::Random, 0x77, &mut want);
    let (staging, bytes) = lab
        .staging(n)
        .map_err(|e| Outcome::error("the staging buffer", &e))?;
    bytes.copy_from_slice(&want);
    let (src, dst) = (b.vk_buffer(), twin.vk_buffer());
    lab.run(&[], &[], |d, cmd| unsafe {
        let all = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
        d.cmd_copy_buffer(
            cmd,
            staging,
            src,
            &[vk::BufferCopy::default().size(n as u64)],
        );
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[vk::MemoryBarrier::default()
                .src_access_mask(all)
                .dst_access_mask(all)],
            &[],
            &[],
        );
        d.cmd_fill_buffer(cmd, staging, 0, n as u64, 0);
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[vk::MemoryBarrier::default()
                .src_access_mask(all)
                .dst_access_mask(all)],
            &[],
            &[],
        );
        d.cmd_copy_buffer(
            cmd,
            dst,
            staging,
            &[vk::BufferCopy::default().size(n as u64)],
        );
    })
    .map_err(|e| Outcome::error("the copy through the imported fd", &e))?;
    drop(fd);
    let (_, bytes) = lab
        .staging(n)
        .map_err(|e| Outcome::error("the staging buffer", &e))?;
    let region = [Region {
        offset: 0,
        len: n,
        row_bytes: 0,
        name: "buffer".into(),
    }];
    match compare(
        &region,
        &want,
        bytes,
        "written through the buffer, read through its exported and imported fd",
    ) {
        Some(o) => Err(o),
        None => Ok(()),
    }
}

fn transfer_features(lab: &Lab, format: vk::Format, linear: bool) -> bool {
    let vkd = &lab.ctx.vk;
    // SAFETY: a query on the context's physical device.
    let p = unsafe {
        vkd.instance
            .get_physical_device_format_properties(vkd.physical, format)
    };
    let f = if linear {
        p.linear_tiling_features
    } else {
        p.optimal_tiling_features
    };
    f.contains(vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST)
}

fn image_case(lab: &mut Lab, c: &ImageCase) -> Outcome {
    if !transfer_features(lab, c.format, false) {
        return Outcome::skip(
            format!(
                "this device cannot copy {} images",
                format::display(c.format)
            ),
            "nothing to do unless you need this format",
        );
    }
    let desc = Description {
        dimension: c.dimension,
        format: c.format,
        width: c.width,
        height: c.height,
        depth: c.depth,
        mip_levels: crate::image::max_mip_levels(c.width, c.height, c.depth),
        array_layers: c.layers,
        cube: c.cube,
        usage: vk::ImageUsageFlags::empty(),
        linear: false,
    };
    let image = match Image::create(&lab.ctx, &desc) {
        Ok(i) => i,
        Err(e) => return Outcome::error("vkcuda_image_create", &e),
    };
    let mut s = ImageSubject::of_image(image, c);
    match round_trips(lab, &mut s) {
        Ok(moved) => Outcome::pass(format!(
            "{}x{}x{}, {} layer(s){}, {} mip levels, {DATA}, {}: every byte right ({} moved)",
            c.width,
            c.height,
            c.depth,
            c.layers,
            if c.cube { " (cube)" } else { "" },
            desc.mip_levels,
            both_ways(lab),
            mib(moved)
        )),
        Err(o) => o,
    }
}

fn frame_case(lab: &mut Lab, p: &format::PlanarFormat) -> Outcome {
    if !transfer_features(lab, p.format, true) {
        return Outcome::skip(
            format!("this device cannot copy LINEAR {} images", p.name),
            "nothing to do unless you need this format",
        );
    }
    let (width, height) = FRAME_EXTENT;
    let desc = Description {
        dimension: Dimension::D2,
        format: p.format,
        width,
        height,
        depth: 1,
        mip_levels: 1,
        array_layers: 1,
        cube: false,
        // The default usage (transfers, sampled where the format allows): what a
        // decoder's frame that the engine samples has.
        usage: vk::ImageUsageFlags::empty(),
        linear: true,
    };
    let image = match Image::create(&lab.ctx, &desc) {
        Ok(i) => i,
        Err(e) => return Outcome::error("vkcuda_image_create (LINEAR frame)", &e),
    };
    let mut s = match ImageSubject::of_frame(image) {
        Ok(s) => s,
        Err(e) => return Outcome::error("vkcuda_image_get_plane_pointer", &e),
    };
    match round_trips(lab, &mut s) {
        Ok(moved) => Outcome::pass(format!(
            "{width}x{height} LINEAR {} frame, {} planes as pitched memory, {DATA}, {}: every byte \
             right ({} moved)",
            p.name,
            s.regions.len(),
            both_ways(lab),
            mib(moved)
        )),
        Err(o) => o,
    }
}

fn semaphore_case(lab: &mut Lab, kind: Kind) -> Outcome {
    let sem = match Semaphore::create(&lab.ctx, kind, 0, None) {
        Ok(s) => s,
        Err(e) => return Outcome::error("vkcuda_semaphore_create", &e),
    };
    let r = if lab.cuda() {
        semaphore_with_cuda(lab, &sem)
    } else {
        semaphore_vulkan_only(lab, &sem)
    };
    if lab.stuck {
        // A wait may still be pending on it.
        std::mem::forget(sem);
    }
    match r {
        Ok(seen) => Outcome::pass(seen),
        Err(o) => o,
    }
}

fn sem_err(what: &'static str) -> impl Fn(Error) -> Outcome {
    move |e| Outcome::error(what, &e)
}

/// Vulkan signals, CUDA waits and signals, Vulkan waits for CUDA's signal.
fn semaphore_with_cuda(lab: &mut Lab, s: &Semaphore) -> std::result::Result<String, Outcome> {
    let vs = s.vk_semaphore();
    let stream: sys::CUstream = ptr::null_mut();
    match s.kind() {
        Kind::Timeline => {
            lab.run(&[], &[(vs, 1)], |_, _| {})
                .map_err(sem_err("the Vulkan signal of 1"))?;
            s.cuda_wait(1, stream)
                .map_err(sem_err("the CUDA wait for 1"))?;
            s.cuda_signal(2, stream)
                .map_err(sem_err("the CUDA signal of 2"))?;
            lab.run(&[(vs, 2)], &[(vs, 3)], |_, _| {})
                .map_err(|e| stuck_or(e, "Vulkan waited for CUDA's signal of 2"))?;
            s.host_wait(3, WAIT)
                .map_err(sem_err("the host wait for 3"))?;
            let v = s.value().map_err(sem_err("vkGetSemaphoreCounterValue"))?;
            if v != 3 {
                return Err(Outcome::fail(
                    format!("the value is {v} after Vulkan signalled 1, CUDA 2 and Vulkan 3"),
                    WRONG_DATA_FIX,
                ));
            }
            Ok("Vulkan signalled 1, CUDA waited for it and signalled 2, a Vulkan submit waited for 2 \
                and signalled 3, the host saw 3"
                .into())
        }
        Kind::Binary => {
            lab.run(&[], &[(vs, 0)], |_, _| {})
                .map_err(sem_err("the Vulkan signal"))?;
            s.note_vulkan_signal()
                .map_err(sem_err("vkcuda_semaphore_note_vulkan_signal"))?;
            s.cuda_wait(0, stream).map_err(sem_err("the CUDA wait"))?;
            s.cuda_signal(0, stream)
                .map_err(sem_err("the CUDA signal"))?;
            lab.run(&[(vs, 0)], &[], |_, _| {})
                .map_err(|e| stuck_or(e, "Vulkan waited for CUDA's signal"))?;
            s.note_vulkan_wait()
                .map_err(sem_err("vkcuda_semaphore_note_vulkan_wait"))?;
            Ok("Vulkan signalled, CUDA waited and signalled, a Vulkan submit waited for CUDA's signal".into())
        }
    }
}

fn stuck_or(e: Error, what: &str) -> Outcome {
    if e.kind == ErrorKind::Timeout {
        Outcome::fail(
            format!("{what}: it never came ({})", e.message),
            "CUDA's signal does not reach Vulkan on this machine: update the NVIDIA driver, and \
             report this line with the output of vkcuda_doctor --deep --json",
        )
    } else {
        Outcome::error(what, &e)
    }
}

/// The semaphore exported as an fd and imported again; a Vulkan signal of one is
/// seen through the other.
fn semaphore_vulkan_only(lab: &mut Lab, s: &Semaphore) -> std::result::Result<String, Outcome> {
    let fd = s
        .export_fd()
        .map_err(sem_err("vkcuda_semaphore_export_fd"))?;
    let twin = Semaphore::import_fd(&lab.ctx, fd.as_fd(), s.kind(), None)
        .map_err(sem_err("vkcuda_semaphore_import_fd"))?;
    let r = match s.kind() {
        Kind::Timeline => {
            lab.run(&[], &[(s.vk_semaphore(), 1)], |_, _| {})
                .map_err(sem_err("the Vulkan signal of 1"))?;
            twin.host_wait(1, WAIT)
                .map_err(|e| stuck_or(e, "the imported semaphore waited for 1"))?;
            twin.host_signal(2)
                .map_err(sem_err("the host signal of 2"))?;
            s.host_wait(2, WAIT)
                .map_err(|e| stuck_or(e, "the exported semaphore waited for 2"))?;
            Ok("Vulkan only (CUDA part skipped: see deep.cuda): exported as an fd and imported again; \
                a Vulkan signal of 1 seen through the import, a host signal of 2 through the export"
                .into())
        }
        Kind::Binary => {
            lab.run(&[], &[(s.vk_semaphore(), 0)], |_, _| {})
                .map_err(sem_err("the Vulkan signal"))?;
            lab.run(&[(twin.vk_semaphore(), 0)], &[], |_, _| {})
                .map_err(|e| stuck_or(e, "a Vulkan wait on the imported semaphore"))?;
            Ok("Vulkan only (CUDA part skipped: see deep.cuda): exported as an fd and imported again; \
                a Vulkan signal of the export waited for through the import"
                .into())
        }
    };
    if lab.stuck {
        std::mem::forget(twin);
    }
    r
}

// --- the run ----------------------------------------------------------------------

/// Why the CUDA part cannot run in this process, if it cannot.
fn cuda_missing() -> Option<String> {
    if let Err(e) = cuda::driver() {
        return Some(e.message);
    }
    // SAFETY: the driver loaded (above), so culib() does not panic; get() only
    // looks up names.
    let lib = unsafe { sys::culib() };
    for name in CUDA_SYMBOLS {
        if unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err() {
            return Some(format!(
                "the CUDA driver has no {name}, which the self-test copies with"
            ));
        }
    }
    None
}

fn add(out: &mut Vec<Check>, name: String, o: Outcome, took: Duration) {
    out.push(Check {
        name,
        status: o.status,
        seen: format!("{} ({:.1} ms)", o.seen, took.as_secs_f64() * 1e3),
        fix: if o.status == Status::Pass {
            String::new()
        } else {
            o.fix
        },
    });
}

/// Runs every case and returns one check per resource, then `deep.total`.
/// `not_run`: why the self-test cannot run here at all (the loader would hang,
/// no Vulkan device); then one failing `deep.total` says so.
pub fn run(not_run: Option<&str>) -> Vec<Check> {
    let start = Instant::now();
    let mut out = Vec::new();
    if let Some(why) = not_run {
        add(
            &mut out,
            "deep.total".into(),
            Outcome::fail(format!("not run: {why}"), "fix the checks above first"),
            start.elapsed(),
        );
        return out;
    }
    let t = Instant::now();
    let mut no_cuda = cuda_missing();
    let ctx = match &no_cuda {
        None => match Context::standalone(None, CudaChoice::Primary) {
            Ok(c) => Ok(c),
            Err(e) => {
                no_cuda = Some(format!("no context with CUDA: {}", e.message));
                Context::standalone(None, CudaChoice::None)
            }
        },
        Some(_) => Context::standalone(None, CudaChoice::None),
    };
    let ctx = match ctx {
        Ok(c) => c,
        Err(e) => {
            add(
                &mut out,
                "deep.context".into(),
                Outcome::fail(
                    format!("no standalone context: {}", e.message),
                    "fix the vulkan.* checks above first",
                ),
                t.elapsed(),
            );
            add(
                &mut out,
                "deep.total".into(),
                Outcome::fail("not run: no context", "fix deep.context first"),
                start.elapsed(),
            );
            return out;
        }
    };
    let device = format!(
        "{} ({})",
        ctx.vk.props.name,
        ctx.cuda
            .as_ref()
            .map(|c| format!("CUDA device {}", c.device().ordinal))
            .unwrap_or_else(|| "Vulkan only".into())
    );
    match &no_cuda {
        None => add(
            &mut out,
            "deep.cuda".into(),
            Outcome::pass(format!("the CUDA part runs on {device}")),
            t.elapsed(),
        ),
        Some(why) => add(
            &mut out,
            "deep.cuda".into(),
            Outcome::skip(
                format!("the CUDA part ({why}); the Vulkan-only part runs on {device}"),
                "run the deep doctor on a machine with an NVIDIA GPU and driver to test CUDA's side",
            ),
            t.elapsed(),
        ),
    }
    let mut lab = match Lab::new(ctx, no_cuda) {
        Ok(l) => l,
        Err(e) => {
            add(
                &mut out,
                "deep.total".into(),
                Outcome::error("the self-test's command buffer", &e),
                start.elapsed(),
            );
            return out;
        }
    };

    type Case<'a> = (String, Box<dyn FnOnce(&mut Lab) -> Outcome + 'a>);
    let mut cases: Vec<Case> = Vec::new();
    for &(name, allocator) in BUFFERS {
        cases.push((
            format!("deep.buffer.{name}"),
            Box::new(move |l: &mut Lab| buffer_case(l, allocator)),
        ));
    }
    for c in IMAGES {
        let name = format::display(c.format)
            .trim_start_matches("VK_FORMAT_")
            .to_string();
        cases.push((
            format!("deep.image.{name}.{}", c.shape),
            Box::new(move |l: &mut Lab| image_case(l, c)),
        ));
    }
    for p in format::PLANAR.iter().filter(|p| p.verified) {
        cases.push((
            format!("deep.frame.{}", p.name),
            Box::new(move |l: &mut Lab| frame_case(l, p)),
        ));
    }
    for &(name, kind) in SEMAPHORES {
        cases.push((
            format!("deep.semaphore.{name}"),
            Box::new(move |l: &mut Lab| semaphore_case(l, kind)),
        ));
    }
    let count = cases.len();
    for (name, case) in cases {
        let t = Instant::now();
        let o = if lab.stuck {
            Outcome::fail(
                "not run: an earlier check's GPU work never completed",
                "fix the first failing deep check",
            )
        } else {
            case(&mut lab)
        };
        add(&mut out, name, o, t.elapsed());
    }
    drop(lab);
    let took = start.elapsed();
    let failed = out.iter().filter(|c| c.status == Status::Fail).count();
    let skipped = out
        .iter()
        .filter(|c| c.status == Status::Warn && c.name != "deep.cuda")
        .count();
    let seen = format!(
        "{count} resources in {:.2} s: {} passed, {failed} failed, {skipped} skipped (target <= {} s)",
        took.as_secs_f64(),
        out.iter().filter(|c| c.status == Status::Pass && c.name != "deep.cuda").count(),
        TARGET.as_secs()
    );
    let o = if failed > 0 {
        Outcome::fail(seen, "fix the failing deep checks above")
    } else if took > TARGET {
        Outcome {
            status: Status::Warn,
            seen: format!("{seen}: slower than the target"),
            fix: "a busy or slow GPU; nothing is wrong with the data".into(),
        }
    } else {
        Outcome::pass(seen)
    };
    add(&mut out, "deep.total".into(), o, took);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_per_direction_and_are_found() {
        for p in PATTERNS {
            let (mut a, mut b) = (vec![0u8; 10000], vec![0u8; 10000]);
            fill(p, 0x11, &mut a);
            fill(p, 0x5a, &mut b);
            assert!(first_difference(&a, &b).is_some(), "{p:?}");
        }
        let mut a = vec![0u8; 100];
        fill(Pattern::Ramp, 0, &mut a);
        let mut b = a.clone();
        b[42] ^= 0xff;
        b[77] = 0;
        assert_eq!(first_difference(&a, &b), Some((42, 42, 42 ^ 0xff, 2)));
    }

    #[test]
    fn cleared_memory_and_large_tiles_are_written() {
        let n = 4 << 20;
        let runs = |b: &[u8]| {
            let mut out = Vec::new();
            let mut i = 0;
            while i < b.len() {
                let j = i + b[i..].iter().take_while(|&&x| x == b[i]).count();
                out.push((i, j - i, b[i]));
                i = j;
            }
            out
        };
        // The two directions' seeds of every round differ in parity.
        for i in 0..PATTERNS.len() as u64 {
            assert_ne!((0x11 + i) & 1, (0x5a + i) & 1);
        }
        for (seed, zero_at) in [(0x14u64, 0), (0x5d, ZERO_REGION)] {
            let mut b = vec![0u8; n];
            fill(Pattern::Cleared, seed, &mut b);
            let r = runs(&b);
            // Exactly one zero run, 64 KiB long, where the seed puts it.
            let zeros: Vec<_> = r.iter().filter(|x| x.2 == 0).collect();
            assert_eq!(zeros, [&(zero_at, ZERO_REGION, 0)], "seed {seed:#x}");
            // The rest: 64 KiB tiles up to 2 MiB, then one 2 MiB tile.
            assert!(r.iter().all(|&(at, len, _)| if at < LARGE_PAGE {
                len == SMALL_PAGE
            } else {
                len == LARGE_PAGE
            }));
            assert_eq!(r.len(), LARGE_PAGE / SMALL_PAGE + 1);
        }
        // Zeros left over from the other direction never pass.
        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
        fill(Pattern::Cleared, 0x14, &mut a);
        fill(Pattern::Cleared, 0x5d, &mut b);
        assert!(a[..ZERO_REGION] != b[..ZERO_REGION]);
        assert!(a[ZERO_REGION..2 * ZERO_REGION] != b[ZERO_REGION..2 * ZERO_REGION]);
        // No other pattern has a uniform run longer than 4 KiB.
        for p in [Pattern::Ramp, Pattern::Tiles, Pattern::Random] {
            let mut b = vec![0u8; n];
            fill(p, 0x12, &mut b);
            assert!(runs(&b).iter().all(|r| r.1 <= 4096), "{p:?}");
        }
    }

    #[test]
    fn every_case_names_a_table_format() {
        for c in IMAGES {
            assert!(format::lookup(c.format).is_ok(), "{:?}", c.format);
        }
        assert!(format::PLANAR.iter().any(|p| p.verified));
    }
}
