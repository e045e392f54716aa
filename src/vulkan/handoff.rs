//! The queue-family ownership transfers that hand a buffer or an image between an
//! engine's queue family and `VK_QUEUE_FAMILY_EXTERNAL` (CUDA): the release
//! barrier recorded before the engine signals CUDA, the acquire barrier after it
//! waits for CUDA. Images are handed over in `GENERAL` layout, which is the layout
//! CUDA's view of the memory assumes.
//!
//! One function records any number of buffers and images in one pipeline barrier
//! (the single-resource C calls are the batch of one).

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
    /// A scope with the library's defaults for zero masks: every command, every
    /// memory read and write.
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

/// Records one pipeline barrier that hands every buffer and image over: with
/// `vkCmdPipelineBarrier2` where the device has synchronization2 enabled,
/// `vkCmdPipelineBarrier` otherwise.
///
/// # Safety
/// `cmd` is a command buffer of `dev` in the recording state, externally
/// synchronised by the caller; the buffers and images belong to `dev`.
pub unsafe fn record(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    buffers: &[BufferRange],
    images: &[ImageRange],
) {
    match dev.sync2 {
        Some(barrier2) => record2(barrier2, cmd, dir, scope, buffers, images),
        None => record1(dev, cmd, dir, scope, buffers, images),
    }
}

thread_local! {
    /// Barrier arrays reused from call to call, so a batched handoff allocates
    /// nothing once warm.
    static SCRATCH2: RefCell<(Vec<vk::BufferMemoryBarrier2<'static>>, Vec<vk::ImageMemoryBarrier2<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
    static SCRATCH1: RefCell<(Vec<vk::BufferMemoryBarrier<'static>>, Vec<vk::ImageMemoryBarrier<'static>>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Where [`record_from`] puts each resource's barrier: the arrays of the
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

/// [`record`] in one pass: `fill` adds each resource's barrier to the sink (and
/// checks it); when it returns `Ok`, the one pipeline barrier is recorded, and
/// when it returns an error nothing is.
///
/// # Safety
/// As for [`record`]: every resource `fill` adds belongs to `dev`.
pub unsafe fn record_from<E>(
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

unsafe fn record2(
    barrier2: vk::PFN_vkCmdPipelineBarrier2,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    buffers: &[BufferRange],
    images: &[ImageRange],
) {
    SCRATCH2.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (b, i) = &mut *scratch;
        b.clear();
        i.clear();
        b.extend(buffers.iter().map(|x| buffer_barrier2(dir, scope, x)));
        i.extend(images.iter().map(|x| image_barrier2(dir, scope, x)));
        let dep = vk::DependencyInfo::default()
            .buffer_memory_barriers(b)
            .image_memory_barriers(i);
        barrier2(cmd, &dep);
    });
}

unsafe fn record1(
    dev: &VulkanDevice,
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    buffers: &[BufferRange],
    images: &[ImageRange],
) {
    let (src_stage, dst_stage) = stages(dir, scope);
    SCRATCH1.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (b, i) = &mut *scratch;
        b.clear();
        i.clear();
        b.extend(buffers.iter().map(|x| buffer_barrier(dir, scope, x)));
        i.extend(images.iter().map(|x| image_barrier(dir, scope, x)));
        dev.device.cmd_pipeline_barrier(
            cmd,
            src_stage,
            dst_stage,
            vk::DependencyFlags::empty(),
            &[],
            b,
            i,
        );
    });
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
        L::UNDEFINED if old => Ok(l),
        L::UNDEFINED => Err(Error::invalid(format!(
            "{} must not be VK_IMAGE_LAYOUT_UNDEFINED (a transition cannot go to it)",
            what()
        ))),
        L::GENERAL
        | L::COLOR_ATTACHMENT_OPTIMAL
        | L::SHADER_READ_ONLY_OPTIMAL
        | L::TRANSFER_SRC_OPTIMAL
        | L::TRANSFER_DST_OPTIMAL
        | L::READ_ONLY_OPTIMAL
        | L::ATTACHMENT_OPTIMAL => Ok(l),
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
