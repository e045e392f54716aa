//! The queue-family ownership transfers that hand a buffer or an image between an
//! engine's queue family and `VK_QUEUE_FAMILY_EXTERNAL` (CUDA): the release
//! barrier recorded before the engine signals CUDA, the acquire barrier after it
//! waits for CUDA. Images are handed over in `GENERAL` layout, which is the layout
//! CUDA's view of the memory assumes.
//!
//! One function, [`record`], records any number of buffers and images in one
//! pipeline barrier; which resources may share it is decided a floor up, in
//! `crate::handoff` (a single buffer or image is the batch of one).

use std::cell::RefCell;

use ash::vk;

use super::VulkanDevice;
use crate::error::{Error, Result};

/// Which way the resources go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the engine's queue family to CUDA (`VK_QUEUE_FAMILY_EXTERNAL`).
    Release,
    /// From CUDA back to the engine's queue family.
    Acquire,
}

/// The engine's side of the transfer.
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The queue family the command buffer is submitted to.
    pub queue_family: u32,
    /// Release: the stages that used the resources before. Acquire: the stages
    /// that use them after.
    pub stages: vk::PipelineStageFlags,
    /// Release: the writes to make available. Acquire: the accesses that follow.
    pub access: vk::AccessFlags,
}

impl Scope {
    /// The engine's queue family with the library's defaults: every command
    /// (`ALL_COMMANDS`), every memory read and write.
    pub fn new(queue_family: u32) -> Scope {
        Scope::with_defaults(queue_family, 0, 0)
    }

    /// A scope from raw masks (`VkPipelineStageFlags`, `VkAccessFlags`; with
    /// synchronization2, the 32-bit part of the `*2` flags), with the library's
    /// defaults for zero masks: every command, every memory read and write.
    pub fn with_defaults(queue_family: u32, stages: u32, access: u32) -> Scope {
        Scope {
            queue_family,
            stages: match stages {
                0 => vk::PipelineStageFlags::ALL_COMMANDS,
                s => vk::PipelineStageFlags::from_raw(s),
            },
            access: match access {
                0 => vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
                a => vk::AccessFlags::from_raw(a),
            },
        }
    }
}

/// Every bit of `VkPipelineStageFlagBits`, core and extensions: what the stage
/// mask of `vkCmdPipelineBarrier` may hold (the barrier of a context without
/// synchronization2).
pub const STAGES_SYNC1: u32 = {
    use vk::PipelineStageFlags as S;
    S::TOP_OF_PIPE.as_raw()
        | S::DRAW_INDIRECT.as_raw()
        | S::VERTEX_INPUT.as_raw()
        | S::VERTEX_SHADER.as_raw()
        | S::TESSELLATION_CONTROL_SHADER.as_raw()
        | S::TESSELLATION_EVALUATION_SHADER.as_raw()
        | S::GEOMETRY_SHADER.as_raw()
        | S::FRAGMENT_SHADER.as_raw()
        | S::EARLY_FRAGMENT_TESTS.as_raw()
        | S::LATE_FRAGMENT_TESTS.as_raw()
        | S::COLOR_ATTACHMENT_OUTPUT.as_raw()
        | S::COMPUTE_SHADER.as_raw()
        | S::TRANSFER.as_raw()
        | S::BOTTOM_OF_PIPE.as_raw()
        | S::HOST.as_raw()
        | S::ALL_GRAPHICS.as_raw()
        | S::ALL_COMMANDS.as_raw()
        | S::TRANSFORM_FEEDBACK_EXT.as_raw()
        | S::CONDITIONAL_RENDERING_EXT.as_raw()
        | S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw()
        | S::RAY_TRACING_SHADER_KHR.as_raw()
        | S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw()
        | S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw()
        | S::COMMAND_PREPROCESS_NV.as_raw()
        | S::TASK_SHADER_EXT.as_raw()
        | S::MESH_SHADER_EXT.as_raw()
};

/// The bits of `VkPipelineStageFlagBits2` that fit the 32-bit mask the C API
/// takes: what `vkCmdPipelineBarrier2` may get from it (the same stages as
/// [`STAGES_SYNC1`] in the same bits, and a few synchronization2-only ones).
pub const STAGES_SYNC2: u32 = {
    use vk::PipelineStageFlags2 as S;
    let low = STAGES_SYNC1 as u64
        | S::VIDEO_DECODE_KHR.as_raw()
        | S::VIDEO_ENCODE_KHR.as_raw()
        | S::ACCELERATION_STRUCTURE_COPY_KHR.as_raw()
        | S::OPTICAL_FLOW_NV.as_raw()
        | S::MICROMAP_BUILD_EXT.as_raw();
    assert!(low <= u32::MAX as u64);
    low as u32
};

/// Every bit of `VkAccessFlagBits`, core and extensions: what the access masks of
/// `VkBufferMemoryBarrier` / `VkImageMemoryBarrier` may hold.
pub const ACCESS_SYNC1: u32 = {
    use vk::AccessFlags as A;
    A::INDIRECT_COMMAND_READ.as_raw()
        | A::INDEX_READ.as_raw()
        | A::VERTEX_ATTRIBUTE_READ.as_raw()
        | A::UNIFORM_READ.as_raw()
        | A::INPUT_ATTACHMENT_READ.as_raw()
        | A::SHADER_READ.as_raw()
        | A::SHADER_WRITE.as_raw()
        | A::COLOR_ATTACHMENT_READ.as_raw()
        | A::COLOR_ATTACHMENT_WRITE.as_raw()
        | A::DEPTH_STENCIL_ATTACHMENT_READ.as_raw()
        | A::DEPTH_STENCIL_ATTACHMENT_WRITE.as_raw()
        | A::TRANSFER_READ.as_raw()
        | A::TRANSFER_WRITE.as_raw()
        | A::HOST_READ.as_raw()
        | A::HOST_WRITE.as_raw()
        | A::MEMORY_READ.as_raw()
        | A::MEMORY_WRITE.as_raw()
        | A::TRANSFORM_FEEDBACK_WRITE_EXT.as_raw()
        | A::TRANSFORM_FEEDBACK_COUNTER_READ_EXT.as_raw()
        | A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw()
        | A::CONDITIONAL_RENDERING_READ_EXT.as_raw()
        | A::COLOR_ATTACHMENT_READ_NONCOHERENT_EXT.as_raw()
        | A::ACCELERATION_STRUCTURE_READ_KHR.as_raw()
        | A::ACCELERATION_STRUCTURE_WRITE_KHR.as_raw()
        | A::FRAGMENT_DENSITY_MAP_READ_EXT.as_raw()
        | A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw()
        | A::COMMAND_PREPROCESS_READ_NV.as_raw()
        | A::COMMAND_PREPROCESS_WRITE_NV.as_raw()
};

/// The bits of `VkAccessFlagBits2` that fit the 32-bit mask: the same accesses as
/// [`ACCESS_SYNC1`] in the same bits (the synchronization2-only ones are all above
/// bit 31).
pub const ACCESS_SYNC2: u32 = {
    use vk::AccessFlags2 as A;
    let low = ACCESS_SYNC1 as u64
        | A::TRANSFORM_FEEDBACK_COUNTER_WRITE_EXT.as_raw()
        | A::FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR.as_raw();
    assert!(low <= u32::MAX as u64);
    low as u32
};

/// The stages (of [`STAGES_SYNC2`], the widest mask) that the queues of a family
/// with `flags` can run: the table of supported pipeline stages in the Vulkan
/// specification (`VUID-vkCmdPipelineBarrier-srcStageMask-4098`,
/// `VUID-vkCmdPipelineBarrier2-srcStageMask-03849` and the others of the family).
/// A family of graphics or compute also runs transfers.
pub fn stages_of_queue(flags: vk::QueueFlags) -> u32 {
    use vk::PipelineStageFlags as S;
    use vk::PipelineStageFlags2 as S2;
    use vk::QueueFlags as Q;
    let graphics = flags.contains(Q::GRAPHICS);
    let compute = flags.contains(Q::COMPUTE);
    let transfer = flags.contains(Q::TRANSFER) || graphics || compute;
    let mut m = S::TOP_OF_PIPE.as_raw()
        | S::BOTTOM_OF_PIPE.as_raw()
        | S::HOST.as_raw()
        | S::ALL_COMMANDS.as_raw();
    if transfer {
        m |= S::TRANSFER.as_raw();
    }
    if graphics || compute {
        m |= S::DRAW_INDIRECT.as_raw()
            | S::CONDITIONAL_RENDERING_EXT.as_raw()
            | S::COMMAND_PREPROCESS_NV.as_raw();
    }
    if graphics {
        m |= S::VERTEX_INPUT.as_raw()
            | S::VERTEX_SHADER.as_raw()
            | S::TESSELLATION_CONTROL_SHADER.as_raw()
            | S::TESSELLATION_EVALUATION_SHADER.as_raw()
            | S::GEOMETRY_SHADER.as_raw()
            | S::FRAGMENT_SHADER.as_raw()
            | S::EARLY_FRAGMENT_TESTS.as_raw()
            | S::LATE_FRAGMENT_TESTS.as_raw()
            | S::COLOR_ATTACHMENT_OUTPUT.as_raw()
            | S::ALL_GRAPHICS.as_raw()
            | S::TRANSFORM_FEEDBACK_EXT.as_raw()
            | S::FRAGMENT_DENSITY_PROCESS_EXT.as_raw()
            | S::FRAGMENT_SHADING_RATE_ATTACHMENT_KHR.as_raw()
            | S::TASK_SHADER_EXT.as_raw()
            | S::MESH_SHADER_EXT.as_raw();
    }
    if compute {
        m |= S::COMPUTE_SHADER.as_raw()
            | S::ACCELERATION_STRUCTURE_BUILD_KHR.as_raw()
            | S::RAY_TRACING_SHADER_KHR.as_raw()
            | S2::ACCELERATION_STRUCTURE_COPY_KHR.as_raw() as u32
            | S2::MICROMAP_BUILD_EXT.as_raw() as u32;
    }
    if flags.contains(Q::VIDEO_DECODE_KHR) {
        m |= S2::VIDEO_DECODE_KHR.as_raw() as u32;
    }
    if flags.contains(Q::VIDEO_ENCODE_KHR) {
        m |= S2::VIDEO_ENCODE_KHR.as_raw() as u32;
    }
    if flags.contains(Q::OPTICAL_FLOW_NV) {
        m |= S2::OPTICAL_FLOW_NV.as_raw() as u32;
    }
    m
}

/// The valid stage and access bits of the barrier call `dev` records with.
#[inline]
fn valid_masks(dev: &VulkanDevice) -> (u32, u32) {
    match dev.sync2 {
        Some(_) => (STAGES_SYNC2, ACCESS_SYNC2),
        None => (STAGES_SYNC1, ACCESS_SYNC1),
    }
}

impl Scope {
    /// Checks the engine's side against the device, before anything is recorded:
    /// a queue family the device has (not `VK_QUEUE_FAMILY_IGNORED`, `EXTERNAL` or
    /// `FOREIGN`: the other side of the transfer is CUDA's), stage bits that exist
    /// for the barrier call the context records with and that the family's queues
    /// can run, and access bits that exist. A bounds-checked load and three masks,
    /// against values read at context creation and constants.
    #[inline]
    pub(crate) fn check(&self, dev: &VulkanDevice) -> Result<()> {
        let (stages, access) = valid_masks(dev);
        match dev
            .props
            .queue_family_stages
            .get(self.queue_family as usize)
        {
            Some(&runs)
                if self.stages.as_raw() & !(stages & runs) == 0
                    && self.access.as_raw() & !access == 0 =>
            {
                Ok(())
            }
            _ => Err(self.refusal(dev)),
        }
    }

    /// What [`check`](Self::check) found wrong, in words.
    #[cold]
    fn refusal(&self, dev: &VulkanDevice) -> Error {
        let (stages, access) = valid_masks(dev);
        let (barrier, stage_type, access_type) = match dev.sync2 {
            Some(_) => (
                "vkCmdPipelineBarrier2 (the context has synchronization2)",
                "the 32-bit part of VkPipelineStageFlagBits2",
                "the 32-bit part of VkAccessFlagBits2",
            ),
            None => (
                "vkCmdPipelineBarrier",
                "VkPipelineStageFlagBits",
                "VkAccessFlagBits",
            ),
        };
        let n = dev.props.queue_family_stages.len() as u32;
        let q = self.queue_family;
        if q >= n {
            let which = match q {
                vk::QUEUE_FAMILY_IGNORED => " (VK_QUEUE_FAMILY_IGNORED)",
                vk::QUEUE_FAMILY_EXTERNAL => {
                    " (VK_QUEUE_FAMILY_EXTERNAL, which is CUDA's side of the transfer)"
                }
                vk::QUEUE_FAMILY_FOREIGN_EXT => " (VK_QUEUE_FAMILY_FOREIGN_EXT)",
                _ => "",
            };
            let families = match n {
                1 => "the device has 1 queue family (index 0)".to_string(),
                n => format!("the device has {n} queue families (0 to {})", n - 1),
            };
            return Error::invalid(format!(
                "info->queue_family_index is {q}{which}, but it must be the engine's queue family \
                 that the command buffer is submitted to: {families}"
            ));
        }
        let bad = self.stages.as_raw() & !stages;
        if bad != 0 {
            return Error::invalid(format!(
                "info->stage_mask {:#x} has bits {bad:#x} that are not {stage_type}, which \
                 {barrier} takes",
                self.stages.as_raw()
            ));
        }
        let runs = dev.props.queue_family_stages[q as usize];
        let bad = self.stages.as_raw() & !runs;
        if bad != 0 {
            return Error::invalid(format!(
                "info->stage_mask {:#x} has stages {bad:#x} that the queues of family {q} cannot \
                 run (the pipeline stages a queue supports follow its VkQueueFamilyProperties::\
                 queueFlags)",
                self.stages.as_raw()
            ));
        }
        let bad = self.access.as_raw() & !access;
        Error::invalid(format!(
            "info->access_mask {:#x} has bits {bad:#x} that are not {access_type}, which {barrier} \
             takes",
            self.access.as_raw()
        ))
    }
}

/// A buffer range to hand over.
#[derive(Clone, Copy, Debug)]
pub struct BufferRange {
    pub buffer: vk::Buffer,
    pub offset: u64,
    pub size: u64,
}

/// An image to hand over, every subresource in `range`. `layout` is the layout
/// the engine leaves it in (release: the old layout, which becomes `GENERAL`) or
/// wants it in (acquire: the new layout, from `GENERAL`).
#[derive(Clone, Copy, Debug)]
pub struct ImageRange {
    pub image: vk::Image,
    pub range: vk::ImageSubresourceRange,
    pub layout: vk::ImageLayout,
}

fn families(dir: Direction, scope: &Scope) -> (u32, u32) {
    match dir {
        Direction::Release => (scope.queue_family, vk::QUEUE_FAMILY_EXTERNAL),
        Direction::Acquire => (vk::QUEUE_FAMILY_EXTERNAL, scope.queue_family),
    }
}

fn accesses(dir: Direction, scope: &Scope) -> (vk::AccessFlags, vk::AccessFlags) {
    match dir {
        Direction::Release => (scope.access, vk::AccessFlags::empty()),
        Direction::Acquire => (vk::AccessFlags::empty(), scope.access),
    }
}

/// The pipeline stages on each side of the barrier: the other side of a queue
/// family transfer is not this queue's, so it is the end (release) or the start
/// (acquire) of the pipe.
pub fn stages(dir: Direction, scope: &Scope) -> (vk::PipelineStageFlags, vk::PipelineStageFlags) {
    match dir {
        Direction::Release => (scope.stages, vk::PipelineStageFlags::BOTTOM_OF_PIPE),
        Direction::Acquire => (vk::PipelineStageFlags::TOP_OF_PIPE, scope.stages),
    }
}

pub fn buffer_barrier(
    dir: Direction,
    scope: &Scope,
    b: &BufferRange,
) -> vk::BufferMemoryBarrier<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let (src_access, dst_access) = accesses(dir, scope);
    vk::BufferMemoryBarrier::default()
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .buffer(b.buffer)
        .offset(b.offset)
        .size(b.size)
}

pub fn image_barrier(
    dir: Direction,
    scope: &Scope,
    i: &ImageRange,
) -> vk::ImageMemoryBarrier<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let (src_access, dst_access) = accesses(dir, scope);
    let (old, new) = match dir {
        Direction::Release => (i.layout, vk::ImageLayout::GENERAL),
        Direction::Acquire => (vk::ImageLayout::GENERAL, i.layout),
    };
    vk::ImageMemoryBarrier::default()
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .image(i.image)
        .subresource_range(i.range)
}

/// The synchronization2 stages of each side: the other side of a queue family
/// transfer is `NONE`.
pub fn stages2(
    dir: Direction,
    scope: &Scope,
) -> (vk::PipelineStageFlags2, vk::PipelineStageFlags2) {
    // The 32-bit stage bits are the same bits in the 64-bit flags.
    let engine = vk::PipelineStageFlags2::from_raw(u64::from(scope.stages.as_raw()));
    match dir {
        Direction::Release => (engine, vk::PipelineStageFlags2::NONE),
        Direction::Acquire => (vk::PipelineStageFlags2::NONE, engine),
    }
}

fn accesses2(dir: Direction, scope: &Scope) -> (vk::AccessFlags2, vk::AccessFlags2) {
    let (s, d) = accesses(dir, scope);
    (
        vk::AccessFlags2::from_raw(u64::from(s.as_raw())),
        vk::AccessFlags2::from_raw(u64::from(d.as_raw())),
    )
}

pub fn buffer_barrier2(
    dir: Direction,
    scope: &Scope,
    b: &BufferRange,
) -> vk::BufferMemoryBarrier2<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let (src_access, dst_access) = accesses2(dir, scope);
    let (src_stage, dst_stage) = stages2(dir, scope);
    vk::BufferMemoryBarrier2::default()
        .src_stage_mask(src_stage)
        .dst_stage_mask(dst_stage)
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .buffer(b.buffer)
        .offset(b.offset)
        .size(b.size)
}

pub fn image_barrier2(
    dir: Direction,
    scope: &Scope,
    i: &ImageRange,
) -> vk::ImageMemoryBarrier2<'static> {
    let (src_family, dst_family) = families(dir, scope);
    let (src_access, dst_access) = accesses2(dir, scope);
    let (src_stage, dst_stage) = stages2(dir, scope);
    let (old, new) = match dir {
        Direction::Release => (i.layout, vk::ImageLayout::GENERAL),
        Direction::Acquire => (vk::ImageLayout::GENERAL, i.layout),
    };
    vk::ImageMemoryBarrier2::default()
        .src_stage_mask(src_stage)
        .dst_stage_mask(dst_stage)
        .src_access_mask(src_access)
        .dst_access_mask(dst_access)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(src_family)
        .dst_queue_family_index(dst_family)
        .image(i.image)
        .subresource_range(i.range)
}

thread_local! {
    /// Barrier arrays reused from call to call, so a batched handoff allocates
    /// nothing once warm.
    static SCRATCH2: RefCell<(Vec<vk::BufferMemoryBarrier2<'static>>, Vec<vk::ImageMemoryBarrier2<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
    static SCRATCH1: RefCell<(Vec<vk::BufferMemoryBarrier<'static>>, Vec<vk::ImageMemoryBarrier<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Where [`record`] puts each resource's barrier: the arrays of the
/// barrier call the device will get (synchronization2 or not), built in place.
pub enum Sink<'a> {
    Sync2(
        &'a mut Vec<vk::BufferMemoryBarrier2<'static>>,
        &'a mut Vec<vk::ImageMemoryBarrier2<'static>>,
        Direction,
        &'a Scope,
    ),
    Sync1(
        &'a mut Vec<vk::BufferMemoryBarrier<'static>>,
        &'a mut Vec<vk::ImageMemoryBarrier<'static>>,
        Direction,
        &'a Scope,
    ),
}

impl Sink<'_> {
    /// Adds the barrier of a buffer.
    #[inline]
    pub fn buffer(&mut self, r: &BufferRange) {
        match self {
            Sink::Sync2(b, _, dir, scope) => b.push(buffer_barrier2(*dir, scope, r)),
            Sink::Sync1(b, _, dir, scope) => b.push(buffer_barrier(*dir, scope, r)),
        }
    }

    /// Adds the barrier of an image.
    #[inline]
    pub fn image(&mut self, r: &ImageRange) {
        match self {
            Sink::Sync2(_, i, dir, scope) => i.push(image_barrier2(*dir, scope, r)),
            Sink::Sync1(_, i, dir, scope) => i.push(image_barrier(*dir, scope, r)),
        }
    }
}

/// Records one pipeline barrier that hands every buffer and image over, in one
/// pass: `fill` adds each resource's barrier to the sink (and checks it); when it
/// returns `Ok`, the barrier is recorded (`vkCmdPipelineBarrier2` where the device
/// has synchronization2 enabled, `vkCmdPipelineBarrier` otherwise), and when it
/// returns an error nothing is.
///
/// # Safety
/// `cmd` is a command buffer of `dev` in the recording state, externally
/// synchronised by the caller; every resource `fill` adds belongs to `dev`.
pub unsafe fn record<E>(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    fill: impl FnOnce(&mut Sink) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    match dev.sync2 {
        Some(barrier2) => SCRATCH2.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let (b, i) = &mut *scratch;
            b.clear();
            i.clear();
            fill(&mut Sink::Sync2(b, i, dir, scope))?;
            let dep = vk::DependencyInfo::default()
                .buffer_memory_barriers(b)
                .image_memory_barriers(i);
            barrier2(cmd, &dep);
            Ok(())
        }),
        None => SCRATCH1.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let (b, i) = &mut *scratch;
            b.clear();
            i.clear();
            fill(&mut Sink::Sync1(b, i, dir, scope))?;
            let (src_stage, dst_stage) = stages(dir, scope);
            dev.device.cmd_pipeline_barrier(
                cmd,
                src_stage,
                dst_stage,
                vk::DependencyFlags::empty(),
                &[],
                b,
                i,
            );
            Ok(())
        }),
    }
}

fn layout_name(l: vk::ImageLayout) -> String {
    let debug = format!("{l:?}");
    let named = debug.starts_with(|c: char| c.is_ascii_uppercase())
        && debug
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if named {
        format!("VK_IMAGE_LAYOUT_{debug}")
    } else {
        format!("VkImageLayout({})", l.as_raw())
    }
}

/// The image usage a layout needs in a queue family ownership transfer (one of
/// them: `VUID-VkImageMemoryBarrier-oldLayout-01208`, `-01211`, `-01212`,
/// `-01213`, `-srcQueueFamilyIndex-03938`, `-03939`, and the same of
/// `VkImageMemoryBarrier2`), and the VUID; empty for a layout any usage allows.
const fn usage_for(l: vk::ImageLayout) -> (vk::ImageUsageFlags, &'static str) {
    use vk::ImageLayout as L;
    use vk::ImageUsageFlags as U;
    match l {
        L::COLOR_ATTACHMENT_OPTIMAL => (U::COLOR_ATTACHMENT, "oldLayout-01208"),
        L::SHADER_READ_ONLY_OPTIMAL => (
            U::from_raw(U::SAMPLED.as_raw() | U::INPUT_ATTACHMENT.as_raw()),
            "oldLayout-01211",
        ),
        L::TRANSFER_SRC_OPTIMAL => (U::TRANSFER_SRC, "oldLayout-01212"),
        L::TRANSFER_DST_OPTIMAL => (U::TRANSFER_DST, "oldLayout-01213"),
        L::ATTACHMENT_OPTIMAL => (
            U::from_raw(U::COLOR_ATTACHMENT.as_raw() | U::DEPTH_STENCIL_ATTACHMENT.as_raw()),
            "srcQueueFamilyIndex-03938",
        ),
        L::READ_ONLY_OPTIMAL => (
            U::from_raw(
                U::DEPTH_STENCIL_ATTACHMENT.as_raw()
                    | U::SAMPLED.as_raw()
                    | U::INPUT_ATTACHMENT.as_raw(),
            ),
            "srcQueueFamilyIndex-03939",
        ),
        _ => (U::empty(), ""),
    }
}

/// `VK_IMAGE_USAGE_SAMPLED_BIT{sep}VK_IMAGE_USAGE_STORAGE_BIT`, for messages.
fn usage_names(usage: vk::ImageUsageFlags, sep: &str) -> String {
    if usage.is_empty() {
        return "0".into();
    }
    format!("{usage:?}")
        .split(" | ")
        .map(|n| format!("VK_IMAGE_USAGE_{n}_BIT"))
        .collect::<Vec<_>>()
        .join(sep)
}

/// Whether an image of `usage` may be handed over in layout `l` (which
/// [`check_layout`] accepted) by the barrier call of a context with (`sync2`) or
/// without synchronization2: the fast path of [`check_layout_usage`].
#[inline]
pub fn layout_fits(l: vk::ImageLayout, usage: vk::ImageUsageFlags, sync2: bool) -> bool {
    let (need, _) = usage_for(l);
    (need.is_empty() || usage.intersects(need))
        && (sync2
            || !matches!(
                l,
                vk::ImageLayout::ATTACHMENT_OPTIMAL | vk::ImageLayout::READ_ONLY_OPTIMAL
            ))
}

/// Checks that an image of `usage` may be in layout `l` (a layout
/// [`check_layout`] accepted) on either side of the transfer: the usage the
/// layout needs, and synchronization2 for `ATTACHMENT_OPTIMAL` and
/// `READ_ONLY_OPTIMAL` (`VUID-VkImageMemoryBarrier-synchronization2-07793`).
#[inline]
pub fn check_layout_usage(
    l: vk::ImageLayout,
    usage: vk::ImageUsageFlags,
    sync2: bool,
    what: impl FnOnce() -> String,
) -> Result<()> {
    if layout_fits(l, usage, sync2) {
        return Ok(());
    }
    let (need, vuid) = usage_for(l);
    let name = layout_name(l);
    if !need.is_empty() && !usage.intersects(need) {
        let need = usage_names(need, " or ");
        let usage = usage_names(usage, " | ");
        return Err(Error::invalid(format!(
            "{} is {name}, which needs an image created with usage {need} \
             (VUID-VkImageMemoryBarrier-{vuid}); this image's usage is {usage}: use \
             VK_IMAGE_LAYOUT_GENERAL or a layout its usage allows",
            what()
        )));
    }
    Err(Error::invalid(format!(
        "{} is {name}, which needs the synchronization2 feature \
         (VUID-VkImageMemoryBarrier-synchronization2-07793): create the context with \
         VKCUDA_CONTEXT_CREATE_SYNCHRONIZATION2_BIT on a device with the feature enabled, or use \
         another layout",
        what()
    )))
}

/// Whether `l` is a layout [`check_layout`] accepts (the fast path; the check
/// itself says what is wrong).
#[inline]
pub fn layout_ok(l: vk::ImageLayout, dir: Direction) -> bool {
    use vk::ImageLayout as L;
    matches!(
        l,
        L::GENERAL
            | L::COLOR_ATTACHMENT_OPTIMAL
            | L::SHADER_READ_ONLY_OPTIMAL
            | L::TRANSFER_SRC_OPTIMAL
            | L::TRANSFER_DST_OPTIMAL
            | L::READ_ONLY_OPTIMAL
            | L::ATTACHMENT_OPTIMAL
    ) || (l == L::UNDEFINED && dir == Direction::Release)
}

/// Checks the engine's layout of a colour image it hands over: one a colour image
/// with optimal tiling can be in, and UNDEFINED only as the layout it leaves
/// (release: the contents are then not kept).
pub fn check_layout(l: vk::ImageLayout, dir: Direction, what: &str) -> Result<vk::ImageLayout> {
    check_layout_named(l, dir, || what.to_string())
}

/// [`check_layout`], with the argument's name made only for the message.
pub fn check_layout_named(
    l: vk::ImageLayout,
    dir: Direction,
    what: impl FnOnce() -> String,
) -> Result<vk::ImageLayout> {
    use vk::ImageLayout as L;
    let old = dir == Direction::Release;
    match l {
        _ if layout_ok(l, dir) => Ok(l),
        L::UNDEFINED => Err(Error::invalid(format!(
            "{} must not be VK_IMAGE_LAYOUT_UNDEFINED (a transition cannot go to it)",
            what()
        ))),
        _ => {
            let what = what();
            let name = layout_name(l);
            if name.starts_with("VK_IMAGE_LAYOUT_") {
                Err(Error::invalid(format!(
                    "{what} is {name}, which is not a layout of a colour image with optimal tiling \
                     shared with CUDA (GENERAL, COLOR_ATTACHMENT_OPTIMAL, SHADER_READ_ONLY_OPTIMAL, \
                     TRANSFER_SRC/DST_OPTIMAL, READ_ONLY_OPTIMAL, ATTACHMENT_OPTIMAL{})",
                    if old { ", or UNDEFINED" } else { "" }
                )))
            } else {
                Err(Error::invalid(format!(
                    "{what} is {}, not a VkImageLayout",
                    l.as_raw()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_checked() {
        use vk::ImageLayout as L;
        let rel = Direction::Release;
        let acq = Direction::Acquire;
        assert_eq!(
            check_layout(L::UNDEFINED, rel, "old_layout").unwrap(),
            L::UNDEFINED
        );
        assert!(check_layout(L::UNDEFINED, acq, "new_layout").is_err());
        assert_eq!(
            check_layout(L::TRANSFER_SRC_OPTIMAL, acq, "new_layout").unwrap(),
            L::TRANSFER_SRC_OPTIMAL
        );
        let e = check_layout(L::DEPTH_STENCIL_ATTACHMENT_OPTIMAL, rel, "old_layout").unwrap_err();
        assert!(
            e.message
                .contains("VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL"),
            "{}",
            e.message
        );
        let e = check_layout(L::from_raw(12345), rel, "old_layout").unwrap_err();
        assert!(
            e.message.contains("12345, not a VkImageLayout"),
            "{}",
            e.message
        );
    }

    #[test]
    fn masks_hold_the_bits_of_each_barrier_call() {
        use vk::PipelineStageFlags as S;
        assert_eq!(STAGES_SYNC1 & 0x1_FFFF, 0x1_FFFF, "every core stage");
        assert_eq!(STAGES_SYNC2 & STAGES_SYNC1, STAGES_SYNC1);
        let video = vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32;
        assert!(STAGES_SYNC2 & video != 0 && STAGES_SYNC1 & video == 0);
        assert!(STAGES_SYNC1 & S::MESH_SHADER_EXT.as_raw() != 0);
        assert_eq!(ACCESS_SYNC1 & 0x1_FFFF, 0x1_FFFF, "every core access");
        assert_eq!(ACCESS_SYNC2, ACCESS_SYNC1);
        for m in [STAGES_SYNC1, STAGES_SYNC2, ACCESS_SYNC1, ACCESS_SYNC2] {
            assert_eq!(m & 1 << 31, 0, "bit 31 is no stage or access");
        }
    }

    #[test]
    fn queues_run_the_stages_of_their_flags() {
        use vk::PipelineStageFlags as S;
        use vk::QueueFlags as Q;
        let video = vk::PipelineStageFlags2::VIDEO_DECODE_KHR.as_raw() as u32;
        let all = stages_of_queue(Q::GRAPHICS | Q::COMPUTE | Q::TRANSFER);
        assert_eq!(
            all & STAGES_SYNC1,
            STAGES_SYNC1,
            "a universal queue runs every stage"
        );
        assert_eq!(all & video, 0);
        let compute = stages_of_queue(Q::COMPUTE);
        assert!(
            compute & S::TRANSFER.as_raw() != 0,
            "compute implies transfer"
        );
        assert_eq!(compute & S::VERTEX_SHADER.as_raw(), 0);
        assert_eq!(compute & S::ALL_GRAPHICS.as_raw(), 0);
        let transfer = stages_of_queue(Q::TRANSFER);
        assert_eq!(
            transfer,
            (S::TOP_OF_PIPE | S::BOTTOM_OF_PIPE | S::HOST | S::ALL_COMMANDS | S::TRANSFER).as_raw()
        );
        assert!(stages_of_queue(Q::VIDEO_DECODE_KHR) & video != 0);
    }

    #[test]
    fn layouts_need_the_usage_they_are_for() {
        use vk::ImageLayout as L;
        use vk::ImageUsageFlags as U;
        let storage = U::STORAGE;
        for l in [
            L::TRANSFER_SRC_OPTIMAL,
            L::TRANSFER_DST_OPTIMAL,
            L::SHADER_READ_ONLY_OPTIMAL,
            L::COLOR_ATTACHMENT_OPTIMAL,
            L::ATTACHMENT_OPTIMAL,
            L::READ_ONLY_OPTIMAL,
        ] {
            assert!(!layout_fits(l, storage, true), "{l:?}");
        }
        assert!(layout_fits(L::GENERAL, storage, false));
        assert!(layout_fits(L::UNDEFINED, storage, false));
        assert!(layout_fits(
            L::SHADER_READ_ONLY_OPTIMAL,
            U::INPUT_ATTACHMENT,
            false
        ));
        assert!(layout_fits(L::READ_ONLY_OPTIMAL, U::SAMPLED, true));
        // synchronization2's layouts need it.
        assert!(!layout_fits(L::READ_ONLY_OPTIMAL, U::SAMPLED, false));
        assert!(!layout_fits(
            L::ATTACHMENT_OPTIMAL,
            U::COLOR_ATTACHMENT,
            false
        ));
        let e = check_layout_usage(L::TRANSFER_SRC_OPTIMAL, storage, true, || {
            "new_layout".into()
        })
        .unwrap_err();
        assert!(
            e.message.contains("VK_IMAGE_USAGE_TRANSFER_SRC_BIT")
                && e.message.contains("usage is VK_IMAGE_USAGE_STORAGE_BIT")
                && e.message.contains("01212"),
            "{}",
            e.message
        );
        let e =
            check_layout_usage(L::READ_ONLY_OPTIMAL, U::SAMPLED, false, || "x".into()).unwrap_err();
        assert!(e.message.contains("synchronization2"), "{}", e.message);
    }

    #[test]
    fn barriers_transfer_ownership_both_ways() {
        let scope = Scope::with_defaults(3, 0, 0);
        let b = BufferRange {
            buffer: vk::Buffer::null(),
            offset: 16,
            size: 64,
        };
        let r = buffer_barrier(Direction::Release, &scope, &b);
        assert_eq!(
            (r.src_queue_family_index, r.dst_queue_family_index),
            (3, vk::QUEUE_FAMILY_EXTERNAL)
        );
        assert_eq!(r.dst_access_mask, vk::AccessFlags::empty());
        assert_eq!((r.offset, r.size), (16, 64));
        let a = buffer_barrier(Direction::Acquire, &scope, &b);
        assert_eq!(
            (a.src_queue_family_index, a.dst_queue_family_index),
            (vk::QUEUE_FAMILY_EXTERNAL, 3)
        );
        assert_eq!(
            a.dst_access_mask,
            vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE
        );
        let img = ImageRange {
            image: vk::Image::null(),
            range: vk::ImageSubresourceRange::default(),
            layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        };
        let r = image_barrier(Direction::Release, &scope, &img);
        assert_eq!(
            (r.old_layout, r.new_layout),
            (
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                vk::ImageLayout::GENERAL
            )
        );
        let a = image_barrier(Direction::Acquire, &scope, &img);
        assert_eq!(
            (a.old_layout, a.new_layout),
            (
                vk::ImageLayout::GENERAL,
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL
            )
        );
        assert_eq!(
            stages(Direction::Release, &scope),
            (
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE
            )
        );
    }
}
