//! Batches: N images or N buffers of one shape bound at aligned offsets of ONE
//! exportable (non-dedicated) `VkDeviceMemory`, plus, for OPTIMAL image batches,
//! a readout `VkBuffer` over a linear region of the same allocation; and the
//! barriers and copies that hand a whole batch over in one call.

use ash::vk;

use super::handoff::{self as barrier, Direction, Scope};
use super::image::{self as img, ImageParams};
use super::memory::{external_buffer_properties, HANDLE_TYPE};
use super::support::find_memory_type;
use super::VulkanDevice;
use crate::error::{Error, Result};
use crate::format;
use crate::stats;

/// Every element starts at a multiple of this (CUDA kernels and tensors like
/// 256-byte aligned rows of elements).
pub const MIN_ALIGNMENT: u64 = 256;

/// The readout region of an OPTIMAL image batch starts at a multiple of this.
pub const READOUT_ALIGNMENT: u64 = 65536;

pub fn align_up(v: u64, a: u64) -> Option<u64> {
    let a = a.max(1);
    v.checked_add(a - 1).map(|x| x / a * a)
}

/// The Vulkan objects of a batch.
#[derive(Debug, Default)]
pub struct BatchMemory {
    pub memory: vk::DeviceMemory,
    pub allocation_size: u64,
    /// Image batches: the N images.
    pub images: Vec<vk::Image>,
    /// Buffer batches: the N element buffers.
    pub buffers: Vec<vk::Buffer>,
    /// Buffer batches: one buffer over all N elements. OPTIMAL image batches: the
    /// readout buffer. LINEAR image batches: null.
    pub whole: vk::Buffer,
}

impl BatchMemory {
    /// Destroys the images and buffers, then frees the memory (null handles are
    /// skipped).
    fn release(&mut self, dev: &VulkanDevice) {
        // SAFETY: every handle was created on this device and nobody uses it any more.
        unsafe {
            for &i in &self.images {
                dev.device.destroy_image(i, None);
            }
            for &b in &self.buffers {
                dev.device.destroy_buffer(b, None);
            }
            if self.whole != vk::Buffer::null() {
                dev.device.destroy_buffer(self.whole, None);
            }
            if self.memory != vk::DeviceMemory::null() {
                dev.device.free_memory(self.memory, None);
            }
        }
    }

    /// Destroys a finished batch's objects and takes them off the counters.
    pub fn destroy(&mut self, dev: &VulkanDevice) {
        self.release(dev);
        for _ in &self.images {
            stats::VK_IMAGES.sub();
        }
        for _ in &self.buffers {
            stats::VK_BUFFERS.sub();
        }
        if self.whole != vk::Buffer::null() {
            stats::VK_BUFFERS.sub();
        }
        if self.memory != vk::DeviceMemory::null() {
            stats::VK_MEMORIES.sub();
        }
        *self = BatchMemory::default();
    }
}

/// Destroys what an unfinished creation made when it returns early.
struct Partial<'a> {
    dev: &'a VulkanDevice,
    mem: BatchMemory,
}

impl Partial<'_> {
    fn finish(mut self) -> BatchMemory {
        let m = std::mem::take(&mut self.mem);
        for _ in &m.images {
            stats::VK_IMAGES.add();
        }
        for _ in &m.buffers {
            stats::VK_BUFFERS.add();
        }
        if m.whole != vk::Buffer::null() {
            stats::VK_BUFFERS.add();
        }
        stats::VK_MEMORIES.add();
        m
    }
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        self.mem.release(self.dev);
    }
}

/// What one image of a batch needs, learned from a probe image.
#[derive(Clone, Copy, Debug)]
pub struct ImageNeeds {
    pub requirements: vk::MemoryRequirements,
    pub requires_dedicated: bool,
    pub prefers_dedicated: bool,
    /// LINEAR images: where the image lies in its memory (level 0, layer 0).
    pub layout: Option<vk::SubresourceLayout>,
}

fn create_image(dev: &VulkanDevice, p: &ImageParams) -> Result<vk::Image> {
    let mut ext = vk::ExternalMemoryImageCreateInfo::default().handle_types(HANDLE_TYPE);
    let info = vk::ImageCreateInfo::default()
        .flags(p.flags)
        .image_type(p.image_type)
        .format(p.format)
        .extent(p.extent)
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(p.tiling)
        .usage(p.usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .push_next(&mut ext);
    // SAFETY: valid device; the create info lives for the call.
    unsafe { dev.device.create_image(&info, None) }.map_err(|r| dev.error("vkCreateImage", r))
}

/// Creates one image of `p`, reads its memory requirements, dedicated
/// requirements and (LINEAR) subresource layout, and destroys it.
pub fn image_needs(
    dev: &VulkanDevice,
    p: &ImageParams,
    aspect: vk::ImageAspectFlags,
) -> Result<ImageNeeds> {
    dev.memory_fd()?;
    let image = create_image(dev, p)?;
    let requirements = img::requirements(dev, image);
    let (requires_dedicated, prefers_dedicated) = img::dedicated_requirements(dev, image);
    let layout =
        (p.tiling == vk::ImageTiling::LINEAR).then(|| img::subresource_layout(dev, image, aspect));
    // SAFETY: made above, never used.
    unsafe { dev.device.destroy_image(image, None) };
    Ok(ImageNeeds {
        requirements,
        requires_dedicated,
        prefers_dedicated,
        layout,
    })
}

/// Why images of `p` (its tiling) cannot share one exportable allocation on this
/// device, or None when they can: the format's features for the tiling lack what
/// the usage needs, the external image query refuses the combination or the
/// extent, the memory is not exportable, or the driver exports it only as
/// dedicated allocations (`DEDICATED_ONLY`).
pub fn sharing_refusal(dev: &VulkanDevice, p: &ImageParams) -> Option<String> {
    if let Err(e) = img::check_usage_features(dev, p.format, p.tiling, p.usage) {
        return Some(e.message().to_string());
    }
    let (limits, ext) = match img::external_image_properties(dev, p) {
        Ok(v) => v,
        Err(e) => return Some(e.message().to_string()),
    };
    let f = ext.external_memory_features;
    if !f.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
        return Some(format!(
            "the device cannot export OPAQUE_FD memory for {}-tiling images of {} (external memory features: {f:?})",
            img::tiling_name(p.tiling),
            format::display(p.format)
        ));
    }
    if f.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY) {
        return Some(format!(
            "the device exports OPAQUE_FD memory for {}-tiling images of {} only as dedicated \
             allocations (VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT), and N images cannot share one",
            img::tiling_name(p.tiling),
            format::display(p.format)
        ));
    }
    let (e, m) = (p.extent, limits.max_extent);
    if e.width > m.width || e.height > m.height {
        return Some(format!(
            "{}x{} is larger than the device allows for exportable {}-tiling images of {} ({}x{})",
            e.width,
            e.height,
            img::tiling_name(p.tiling),
            format::display(p.format),
            m.width,
            m.height
        ));
    }
    None
}

/// Where each part of an image batch lies in its allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageGeometry {
    /// From one image to the next.
    pub image_stride: u64,
    /// The images' part: `image_stride * count`.
    pub images_size: u64,
    /// LINEAR: the images' row pitch and where the texels start in each image.
    pub row_pitch: u64,
    pub image_offset: u64,
    /// OPTIMAL: the readout region (0 when there is none).
    pub readout_offset: u64,
    pub readout_stride: u64,
    pub readout_size: u64,
    pub allocation_size: u64,
}

fn largest_heap(dev: &VulkanDevice) -> u64 {
    let m = &dev.props.memory;
    m.memory_heaps[..m.memory_heap_count as usize]
        .iter()
        .map(|h| h.size)
        .max()
        .unwrap_or(0)
}

fn overflow(what: &str) -> Error {
    Error::invalid(format!("{what} overflows 64 bits"))
}

/// The geometry of `count` images of `needs` (`texel` bytes, `width` x
/// `height`), with a readout region when `readout`: checked arithmetic, and the
/// whole allocation against the device's largest heap.
pub fn plan_images(
    dev: &VulkanDevice,
    needs: &ImageNeeds,
    count: u32,
    width: u32,
    height: u32,
    texel: u64,
    readout: Option<&vk::MemoryRequirements>,
) -> Result<ImageGeometry> {
    let n = u64::from(count);
    let r = &needs.requirements;
    let image_stride = align_up(r.size, r.alignment.max(MIN_ALIGNMENT))
        .ok_or_else(|| overflow("the image size"))?;
    let images_size = image_stride
        .checked_mul(n)
        .ok_or_else(|| overflow(&format!("count {count} x image stride {image_stride}")))?;
    let mut g = ImageGeometry {
        image_stride,
        images_size,
        allocation_size: images_size,
        ..Default::default()
    };
    if let Some(l) = needs.layout {
        g.row_pitch = l.row_pitch;
        g.image_offset = l.offset;
    }
    if let Some(rr) = readout {
        let elem = u64::from(width) * u64::from(height) * texel;
        g.readout_stride =
            align_up(elem, MIN_ALIGNMENT).ok_or_else(|| overflow("the element size"))?;
        g.readout_size = g
            .readout_stride
            .checked_mul(n)
            .ok_or_else(|| overflow(&format!("count {count} x element {}", g.readout_stride)))?;
        g.readout_offset = align_up(images_size, rr.alignment.max(READOUT_ALIGNMENT))
            .ok_or_else(|| overflow("the readout offset"))?;
        g.allocation_size = g
            .readout_offset
            .checked_add(g.readout_size)
            .ok_or_else(|| overflow("the allocation size"))?;
    }
    let heap = largest_heap(dev);
    if g.allocation_size > heap {
        return Err(Error::invalid(format!(
            "the batch needs {} bytes ({count} images of {} bytes each{}), more than the device's \
             largest memory heap ({heap} bytes)",
            g.allocation_size,
            image_stride,
            if readout.is_some() {
                format!(" and a {}-byte readout region", g.readout_size)
            } else {
                String::new()
            }
        )));
    }
    Ok(g)
}

/// The memory requirements of a `VkBuffer` of `size` bytes and `usage` created
/// for `OPAQUE_FD` memory, read from a probe buffer.
pub fn buffer_needs(
    dev: &VulkanDevice,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<vk::MemoryRequirements> {
    dev.memory_fd()?;
    let b = create_buffer(dev, size, usage)?;
    // SAFETY: made above.
    let r = unsafe { dev.device.get_buffer_memory_requirements(b) };
    unsafe { dev.device.destroy_buffer(b, None) };
    Ok(r)
}

fn create_buffer(dev: &VulkanDevice, size: u64, usage: vk::BufferUsageFlags) -> Result<vk::Buffer> {
    let mut ext = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE_TYPE);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(usage)
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut ext);
    // SAFETY: valid device; the create info lives for the call.
    unsafe { dev.device.create_buffer(&info, None) }.map_err(|r| dev.error("vkCreateBuffer", r))
}

/// The allocation size that also holds a resource of requirements `r` bound at
/// `offset` (which must be a multiple of its alignment): `size` or more.
fn fit(size: u64, offset: u64, r: &vk::MemoryRequirements, what: &str) -> Result<u64> {
    if offset % r.alignment.max(1) != 0 {
        return Err(Error::new(
            crate::ErrorKind::Vulkan,
            format!(
                "{what} needs an alignment of {}, which its offset {offset} does not have (the \
                 probe of the same usage said otherwise)",
                r.alignment
            ),
        ));
    }
    let end = offset
        .checked_add(r.size)
        .ok_or_else(|| overflow("the allocation size"))?;
    Ok(size.max(end))
}

/// Allocates `size` bytes of exportable, device-local memory of a type in `bits`
/// (not dedicated: the batch's resources share it).
fn allocate(dev: &VulkanDevice, size: u64, bits: u32) -> Result<vk::DeviceMemory> {
    let type_index = find_memory_type(
        &dev.props.memory,
        bits,
        vk::MemoryPropertyFlags::DEVICE_LOCAL,
        vk::MemoryPropertyFlags::empty(),
    )
    .ok_or_else(|| {
        Error::unsupported(format!(
            "no DEVICE_LOCAL memory type is allowed for every resource of the batch (memoryTypeBits {bits:#x})"
        ))
    })?;
    let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(HANDLE_TYPE);
    let alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(size)
        .memory_type_index(type_index)
        .push_next(&mut export);
    // SAFETY: valid device; the allocate info lives for the call.
    unsafe { dev.device.allocate_memory(&alloc, None) }
        .map_err(|r| dev.error("vkAllocateMemory (exportable, for a batch)", r))
}

/// The usage of the readout buffer.
pub const READOUT_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw() | vk::BufferUsageFlags::TRANSFER_DST.as_raw(),
);

/// `count` images of `p` in one exportable allocation laid out as `g`, with the
/// readout buffer when `g.readout_size` is not 0. Every image's requirements
/// must equal the probe's (`needs`).
pub fn create_images(
    dev: &VulkanDevice,
    p: &ImageParams,
    count: u32,
    needs: &ImageNeeds,
    g: &ImageGeometry,
    aspect: vk::ImageAspectFlags,
) -> Result<BatchMemory> {
    let mut partial = Partial {
        dev,
        mem: BatchMemory::default(),
    };
    let mut bits = needs.requirements.memory_type_bits;
    partial.mem.images.reserve(count as usize);
    for i in 0..count {
        let image = create_image(dev, p)?;
        partial.mem.images.push(image);
        let r = img::requirements(dev, image);
        if r.size != needs.requirements.size || r.alignment != needs.requirements.alignment {
            return Err(Error::new(
                crate::ErrorKind::Vulkan,
                format!(
                    "image {i} of the batch needs {} bytes aligned to {}, the first {} aligned to {}: \
                     the driver gives equal images different requirements",
                    r.size, r.alignment, needs.requirements.size, needs.requirements.alignment
                ),
            ));
        }
        bits &= r.memory_type_bits;
        if let Some(want) = needs.layout {
            let l = img::subresource_layout(dev, image, aspect);
            if (l.offset, l.row_pitch) != (want.offset, want.row_pitch) {
                return Err(Error::new(
                    crate::ErrorKind::Vulkan,
                    format!(
                        "LINEAR image {i} of the batch has its texels at offset {} with a row pitch \
                         of {}, the first at {} with {}: the driver lays out equal images differently",
                        l.offset, l.row_pitch, want.offset, want.row_pitch
                    ),
                ));
            }
        }
    }
    let mut size = g.allocation_size;
    if g.readout_size != 0 {
        let b = create_buffer(dev, g.readout_size, READOUT_USAGE)?;
        partial.mem.whole = b;
        // SAFETY: made above.
        let r = unsafe { dev.device.get_buffer_memory_requirements(b) };
        bits &= r.memory_type_bits;
        size = fit(size, g.readout_offset, &r, "the readout buffer")?;
    }
    partial.mem.memory = allocate(dev, size, bits)?;
    partial.mem.allocation_size = size;
    let mem = partial.mem.memory;
    let binds: Vec<vk::BindImageMemoryInfo> = partial
        .mem
        .images
        .iter()
        .enumerate()
        .map(|(i, &image)| {
            vk::BindImageMemoryInfo::default()
                .image(image)
                .memory(mem)
                .memory_offset(i as u64 * g.image_stride)
        })
        .collect();
    // SAFETY: each offset is a multiple of the images' alignment and inside the memory.
    unsafe { dev.device.bind_image_memory2(&binds) }
        .map_err(|r| dev.error("vkBindImageMemory2 (the batch's images)", r))?;
    if g.readout_size != 0 {
        // SAFETY: as above, for the readout buffer.
        unsafe {
            dev.device
                .bind_buffer_memory(partial.mem.whole, mem, g.readout_offset)
        }
        .map_err(|r| dev.error("vkBindBufferMemory (the batch's readout buffer)", r))?;
    }
    Ok(partial.finish())
}

/// Where each part of a buffer batch lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferGeometry {
    pub stride: u64,
    pub allocation_size: u64,
}

/// Checks that buffers of `usage` may share one exportable allocation, and plans
/// `count` buffers of `size` bytes (checked arithmetic, the heap).
pub fn plan_buffers(
    dev: &VulkanDevice,
    count: u32,
    size: u64,
    usage: vk::BufferUsageFlags,
) -> Result<(BufferGeometry, vk::MemoryRequirements)> {
    let f = external_buffer_properties(dev, usage).external_memory_features;
    if !f.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
        return Err(Error::unsupported(format!(
            "the device cannot export OPAQUE_FD memory for buffers with usage {usage:?}"
        )));
    }
    if f.contains(vk::ExternalMemoryFeatureFlags::DEDICATED_ONLY) {
        return Err(Error::unsupported(format!(
            "the device exports OPAQUE_FD memory for buffers with usage {usage:?} only as dedicated \
             allocations (DEDICATED_ONLY), and N buffers cannot share one"
        )));
    }
    let max = dev.props.max_buffer_size;
    let heap = largest_heap(dev);
    if (max != 0 && size > max) || size > heap {
        return Err(Error::invalid(format!(
            "size {size} is larger than the device's maxBufferSize {max} or its largest memory heap ({heap} bytes)"
        )));
    }
    let r = buffer_needs(dev, size, usage)?;
    let stride = align_up(size, r.alignment.max(MIN_ALIGNMENT))
        .ok_or_else(|| overflow("the buffer size"))?;
    let total = stride
        .checked_mul(u64::from(count))
        .ok_or_else(|| overflow(&format!("count {count} x stride {stride}")))?;
    if total > heap {
        return Err(Error::invalid(format!(
            "the batch needs {total} bytes ({count} buffers at a stride of {stride}), more than the \
             device's largest memory heap ({heap} bytes)"
        )));
    }
    if max != 0 && total > max {
        return Err(Error::invalid(format!(
            "the batch's {total} bytes are more than the device's maxBufferSize {max} (the batch has \
             a buffer over all its elements)"
        )));
    }
    Ok((
        BufferGeometry {
            stride,
            allocation_size: total,
        },
        r,
    ))
}

/// `count` buffers of `size` bytes at `g.stride` and one over all of them, in
/// one exportable allocation.
pub fn create_buffers(
    dev: &VulkanDevice,
    count: u32,
    size: u64,
    usage: vk::BufferUsageFlags,
    g: &BufferGeometry,
) -> Result<BatchMemory> {
    let mut partial = Partial {
        dev,
        mem: BatchMemory::default(),
    };
    let mut bits = u32::MAX;
    partial.mem.buffers.reserve(count as usize);
    for _ in 0..count {
        let b = create_buffer(dev, size, usage)?;
        partial.mem.buffers.push(b);
        // SAFETY: made above.
        bits &= unsafe { dev.device.get_buffer_memory_requirements(b) }.memory_type_bits;
    }
    let whole = create_buffer(dev, g.allocation_size, usage)?;
    partial.mem.whole = whole;
    // SAFETY: made above.
    let r = unsafe { dev.device.get_buffer_memory_requirements(whole) };
    bits &= r.memory_type_bits;
    let size = fit(g.allocation_size, 0, &r, "the buffer over the batch")?;
    partial.mem.memory = allocate(dev, size, bits)?;
    partial.mem.allocation_size = size;
    let mem = partial.mem.memory;
    let binds: Vec<vk::BindBufferMemoryInfo> = partial
        .mem
        .buffers
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            vk::BindBufferMemoryInfo::default()
                .buffer(b)
                .memory(mem)
                .memory_offset(i as u64 * g.stride)
        })
        .chain(std::iter::once(
            vk::BindBufferMemoryInfo::default()
                .buffer(whole)
                .memory(mem)
                .memory_offset(0),
        ))
        .collect();
    // SAFETY: each offset is a multiple of the buffers' alignment and inside the memory.
    unsafe { dev.device.bind_buffer_memory2(&binds) }
        .map_err(|r| dev.error("vkBindBufferMemory2 (the batch's buffers)", r))?;
    Ok(partial.finish())
}

// ---------------------------------------------------------------------------------
// Recording.

/// The barriers of one pipeline barrier, in synchronization2 form; recorded with
/// `vkCmdPipelineBarrier2` where the device has it, else as one
/// `vkCmdPipelineBarrier` whose stage masks are the union of the barriers'.
#[derive(Default)]
struct Barriers {
    buffers: Vec<vk::BufferMemoryBarrier2<'static>>,
    images: Vec<vk::ImageMemoryBarrier2<'static>>,
}

impl Barriers {
    /// Records the barriers ([`barrier::record_barriers`]); nothing when there
    /// are none.
    ///
    /// # Safety
    /// `cmd` is a recording command buffer of `dev`; every resource belongs to `dev`.
    unsafe fn record(&self, dev: &VulkanDevice, cmd: vk::CommandBuffer) {
        barrier::record_barriers(dev, cmd, &self.buffers, &self.images);
    }
}

fn range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

fn stage2(s: vk::PipelineStageFlags) -> vk::PipelineStageFlags2 {
    vk::PipelineStageFlags2::from_raw(u64::from(s.as_raw()))
}

fn access2(a: vk::AccessFlags) -> vk::AccessFlags2 {
    vk::AccessFlags2::from_raw(u64::from(a.as_raw()))
}

/// A layout transition of `image` inside the engine's queue family.
#[allow(clippy::too_many_arguments)]
fn transition(
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
    src: (vk::PipelineStageFlags, vk::AccessFlags),
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) -> vk::ImageMemoryBarrier2<'static> {
    vk::ImageMemoryBarrier2::default()
        .src_stage_mask(stage2(src.0))
        .src_access_mask(access2(src.1))
        .dst_stage_mask(stage2(dst.0))
        .dst_access_mask(access2(dst.1))
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range(aspect))
}

/// What a recorded handoff of a batch is over.
pub struct HandoffTarget<'a> {
    pub mem: &'a BatchMemory,
    pub aspect: vk::ImageAspectFlags,
    pub extent: vk::Extent3D,
    pub geometry: ImageGeometry,
    /// Buffer batches: the element size.
    pub buffer_size: u64,
}

/// Records the acquire of the copy path's readout region alone, back from CUDA
/// into `scope`: one barrier; the images are not touched.
///
/// # Safety
/// As for [`record_handoff`].
pub unsafe fn record_readout_acquire(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    scope: &Scope,
    t: &HandoffTarget,
) {
    let mut b = Barriers::default();
    b.buffers.push(barrier::buffer_barrier(
        Direction::Acquire,
        scope,
        &barrier::BufferRange {
            buffer: t.mem.whole,
            offset: 0,
            size: t.geometry.readout_size,
        },
    ));
    b.record(dev, cmd);
}

/// How many pipeline barriers and copy commands [`record_handoff`] records for a
/// batch: (barriers, copies). For the tests and the docs.
pub fn commands(t: &HandoffTarget) -> (usize, usize) {
    if !t.mem.images.is_empty() && t.mem.whole != vk::Buffer::null() {
        (2, t.mem.images.len())
    } else {
        (1, 0)
    }
}

/// Records the handoff of a whole batch in direction `dir` (layouts checked by
/// the caller; `layout` is ignored for buffer batches):
/// - buffer batches: one barrier, a queue family transfer per element buffer;
/// - LINEAR image batches: one barrier, a queue family transfer and a transition
///   to (release) or from (acquire) `GENERAL` per image;
/// - OPTIMAL image batches, release: one barrier moving every image from `layout`
///   to `TRANSFER_SRC_OPTIMAL`, one `vkCmdCopyImageToBuffer` per image into the
///   readout buffer, one barrier releasing the readout buffer to CUDA. The images
///   stay the engine's, in `TRANSFER_SRC_OPTIMAL`. Acquire: one barrier acquiring
///   the readout buffer from CUDA and moving every image (contents discarded) to
///   `TRANSFER_DST_OPTIMAL`, one `vkCmdCopyBufferToImage` per image, one barrier
///   moving every image to `layout`.
///
/// # Safety
/// `cmd` is a recording command buffer of `dev`, externally synchronised; the
/// scope was checked against `dev`.
pub unsafe fn record_handoff(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    t: &HandoffTarget,
    layout: vk::ImageLayout,
) {
    let mem = t.mem;
    let mut first = Barriers::default();
    if mem.images.is_empty() {
        for &b in &mem.buffers {
            let r = barrier::BufferRange {
                buffer: b,
                offset: 0,
                size: t.buffer_size,
            };
            first.buffers.push(barrier::buffer_barrier(dir, scope, &r));
        }
        first.record(dev, cmd);
        return;
    }
    if mem.whole == vk::Buffer::null() {
        for &image in &mem.images {
            let r = barrier::ImageRange {
                image,
                range: range(t.aspect),
                layout,
            };
            first.images.push(barrier::image_barrier(dir, scope, &r));
        }
        first.record(dev, cmd);
        return;
    }
    // The copy path.
    use vk::AccessFlags as A;
    use vk::ImageLayout as L;
    use vk::PipelineStageFlags as S;
    let g = &t.geometry;
    let readout = barrier::BufferRange {
        buffer: mem.whole,
        offset: 0,
        size: g.readout_size,
    };
    let sub = vk::ImageSubresourceLayers {
        aspect_mask: t.aspect,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: 1,
    };
    let region = |i: usize| {
        vk::BufferImageCopy::default()
            .buffer_offset(i as u64 * g.readout_stride)
            .image_subresource(sub)
            .image_extent(t.extent)
    };
    let transfer_scope = |access| Scope {
        queue_family: scope.queue_family,
        stages: S::TRANSFER,
        access,
    };
    match dir {
        Direction::Release => {
            for &image in &mem.images {
                first.images.push(transition(
                    image,
                    t.aspect,
                    layout,
                    L::TRANSFER_SRC_OPTIMAL,
                    (scope.stages, scope.access),
                    (S::TRANSFER, A::TRANSFER_READ),
                ));
            }
            first.record(dev, cmd);
            for (i, &image) in mem.images.iter().enumerate() {
                dev.device.cmd_copy_image_to_buffer(
                    cmd,
                    image,
                    L::TRANSFER_SRC_OPTIMAL,
                    mem.whole,
                    &[region(i)],
                );
            }
            let mut last = Barriers::default();
            last.buffers.push(barrier::buffer_barrier(
                Direction::Release,
                &transfer_scope(A::TRANSFER_WRITE),
                &readout,
            ));
            last.record(dev, cmd);
        }
        Direction::Acquire => {
            first.buffers.push(barrier::buffer_barrier(
                Direction::Acquire,
                &transfer_scope(A::TRANSFER_READ),
                &readout,
            ));
            for &image in &mem.images {
                first.images.push(transition(
                    image,
                    t.aspect,
                    L::UNDEFINED,
                    L::TRANSFER_DST_OPTIMAL,
                    (S::TOP_OF_PIPE, A::empty()),
                    (S::TRANSFER, A::TRANSFER_WRITE),
                ));
            }
            first.record(dev, cmd);
            for (i, &image) in mem.images.iter().enumerate() {
                dev.device.cmd_copy_buffer_to_image(
                    cmd,
                    mem.whole,
                    image,
                    L::TRANSFER_DST_OPTIMAL,
                    &[region(i)],
                );
            }
            let mut last = Barriers::default();
            for &image in &mem.images {
                last.images.push(transition(
                    image,
                    t.aspect,
                    L::TRANSFER_DST_OPTIMAL,
                    layout,
                    (S::TRANSFER, A::TRANSFER_WRITE),
                    (scope.stages, scope.access),
                ));
            }
            last.record(dev, cmd);
        }
    }
}
