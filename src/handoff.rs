//! Handing buffers and images between the engine's queue family and CUDA
//! (`VK_QUEUE_FAMILY_EXTERNAL`), and which of them may share one barrier.
//!
//! A buffer or an image records its own handoff (`Buffer::cmd_release_to_cuda`,
//! `Image::cmd_acquire_from_cuda`, ...; defined here, beside the rule, so the
//! objects do not import this module back): that is the batch of one. [`batch`]
//! records any number of them in one pipeline barrier, and the rule of who may
//! share it is here, once: every resource belongs to the `VkDevice` of the first,
//! whose context records the barrier, and each image is in a layout that its
//! direction, its usage and that barrier call allow.
//!
//! ```
//! use vkcuda::ash::{self, vk};
//! use vkcuda::buffer::Allocator;
//! use vkcuda::context::CudaChoice;
//! use vkcuda::handoff::{self, Direction, Resource, Scope};
//! use vkcuda::image::Description;
//! use vkcuda::{Buffer, Context, Image};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! let buf = Buffer::create(&ctx, 4096, vk::BufferUsageFlags::empty(), Allocator::Vulkan)?;
//! let img = Image::create(&ctx, &Description::new_2d(vk::Format::R8G8B8A8_UNORM, 64, 64))?;
//!
//! // The engine's own Vulkan work, through the context's entry point.
//! let h = ctx.vulkan_handles();
//! let (family, queue) = h.queue.unwrap();
//! let static_fn = ash::StaticFn { get_instance_proc_addr: h.get_instance_proc_addr };
//! let device = unsafe {
//!     let instance = ash::Instance::load(&static_fn, h.instance);
//!     ash::Device::load(instance.fp_v1_0(), h.device)
//! };
//! let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
//! let pool = unsafe { device.create_command_pool(&pool_info, None) }.unwrap();
//! let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1);
//! let cmd = unsafe { device.allocate_command_buffers(&alloc) }.unwrap()[0];
//! unsafe { device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()) }.unwrap();
//!
//! // Both to CUDA in one barrier: the image's contents may be discarded (UNDEFINED).
//! let resources = [Resource::Buffer(&buf), Resource::Image(&img, vk::ImageLayout::UNDEFINED)];
//! // SAFETY: `cmd` is recording, on this device, used by this thread only.
//! unsafe { handoff::batch(cmd, Direction::Release, &Scope::new(family), resources.map(Ok))? };
//!
//! // A layout an image cannot be in is refused before anything is recorded.
//! let bad = [Ok(Resource::Image(&img, vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL))];
//! let e = unsafe { handoff::batch(cmd, Direction::Acquire, &Scope::new(family), bad) };
//! assert!(e.is_err());
//!
//! unsafe {
//!     device.end_command_buffer(cmd).unwrap();
//!     let cmds = [cmd];
//!     let submit = vk::SubmitInfo::default().command_buffers(&cmds);
//!     device.queue_submit(queue, &[submit], vk::Fence::null()).unwrap();
//!     device.queue_wait_idle(queue).unwrap();
//!     device.destroy_command_pool(pool, None);
//! }
//! # Ok(())
//! # }
//! ```

use ash::vk;

use super::vulkan::handoff as barrier;
use crate::buffer::Buffer;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::image::Image;

pub use super::vulkan::handoff::{Direction, Scope};

/// One resource of a handoff.
#[derive(Clone, Copy, Debug)]
pub enum Resource<'a> {
    /// A whole buffer.
    Buffer(&'a Buffer),
    /// A whole image (every level, layer and plane) and the engine's layout: on
    /// release the layout it leaves the image in (`UNDEFINED` only when the
    /// contents may be discarded), on acquire the layout it wants it in.
    Image(&'a Image, vk::ImageLayout),
}

impl<'a> Resource<'a> {
    #[inline(always)]
    fn context(self) -> &'a Context {
        match self {
            Resource::Buffer(b) => b.context(),
            Resource::Image(im, _) => im.context(),
        }
    }
}

impl Buffer {
    /// Records into `cmd` the barrier that releases the whole buffer from
    /// `scope.queue_family` to CUDA (`VK_QUEUE_FAMILY_EXTERNAL`), making the
    /// engine's writes in `scope` available: the batch of one ([`batch`]).
    ///
    /// # Safety
    /// `cmd` is a command buffer of this buffer's device in the recording state,
    /// externally synchronised by the caller.
    pub unsafe fn cmd_release_to_cuda(&self, cmd: vk::CommandBuffer, scope: &Scope) -> Result<()> {
        batch(cmd, Direction::Release, scope, [Ok(Resource::Buffer(self))])
    }

    /// Records the barrier that acquires the whole buffer back from CUDA into
    /// `scope.queue_family`, making CUDA's writes visible to the accesses in
    /// `scope` (see [`cmd_release_to_cuda`](Self::cmd_release_to_cuda)).
    ///
    /// # Safety
    /// As for [`cmd_release_to_cuda`](Self::cmd_release_to_cuda).
    pub unsafe fn cmd_acquire_from_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
    ) -> Result<()> {
        batch(cmd, Direction::Acquire, scope, [Ok(Resource::Buffer(self))])
    }
}

impl Image {
    /// Records into `cmd` the barrier that releases the whole image (every level,
    /// layer and plane) from `scope.queue_family` to CUDA (`VK_QUEUE_FAMILY_EXTERNAL`),
    /// from `old_layout` (the layout the engine left it in; `UNDEFINED` discards
    /// the contents) to `GENERAL`, the layout CUDA works on, making the engine's
    /// writes in `scope` available: the batch of one ([`batch`]). A
    /// layout that is not a colour image's, or that the image's usage or the
    /// context's barrier call does not allow, is refused.
    ///
    /// # Safety
    /// `cmd` is a command buffer of this image's device in the recording state,
    /// externally synchronised by the caller.
    pub unsafe fn cmd_release_to_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
        old_layout: vk::ImageLayout,
    ) -> Result<()> {
        self.cmd_handoff(cmd, Direction::Release, scope, old_layout, "old_layout")
    }

    /// Records the barrier that acquires the whole image back from CUDA into
    /// `scope.queue_family`, from `GENERAL` to `new_layout` (not `UNDEFINED`),
    /// making CUDA's writes visible to the accesses in `scope` (see
    /// [`cmd_release_to_cuda`](Self::cmd_release_to_cuda)).
    ///
    /// # Safety
    /// As for [`cmd_release_to_cuda`](Self::cmd_release_to_cuda).
    pub unsafe fn cmd_acquire_from_cuda(
        &self,
        cmd: vk::CommandBuffer,
        scope: &Scope,
        new_layout: vk::ImageLayout,
    ) -> Result<()> {
        self.cmd_handoff(cmd, Direction::Acquire, scope, new_layout, "new_layout")
    }

    /// The layout checked with its argument's name in the messages, then the
    /// batch of one.
    unsafe fn cmd_handoff(
        &self,
        cmd: vk::CommandBuffer,
        dir: Direction,
        scope: &Scope,
        layout: vk::ImageLayout,
        what: &str,
    ) -> Result<()> {
        let layout = barrier::check_layout(layout, dir, what)?;
        let sync2 = self.context().vk.sync2.is_some();
        barrier::check_layout_usage(layout, self.description().usage, sync2, || what.into())?;
        batch(cmd, dir, scope, [Ok(Resource::Image(self, layout))])
    }
}

/// Records into `cmd` ONE pipeline barrier that hands every resource over in
/// direction `dir`: `vkCmdPipelineBarrier2` where the first resource's context
/// has synchronization2, `vkCmdPipelineBarrier` otherwise. The resources come as
/// the caller read them: an `Err` among them (an entry the caller could not turn
/// into a resource) is returned as it is. The scope is checked against the first
/// resource's device; entry `i` that may not share the barrier is refused,
/// naming `resources[i]`. Nothing is recorded on failure; an empty batch records
/// nothing.
///
/// # Safety
/// `cmd` is a command buffer of the resources' device in the recording state,
/// externally synchronised by the caller.
pub unsafe fn batch<'a>(
    cmd: vk::CommandBuffer,
    dir: Direction,
    scope: &Scope,
    resources: impl IntoIterator<Item = Result<Resource<'a>>>,
) -> Result<()> {
    let mut resources = resources.into_iter();
    let first = match resources.next() {
        Some(r) => r?,
        None => return Ok(()),
    };
    let ctx = first.context();
    let rule = Rule {
        context: ctx,
        device: ctx.vk.device.handle(),
        sync2: ctx.vk.sync2.is_some(),
        dir,
    };
    if !rule.admits(first) {
        return Err(rule.refusal(0, &first));
    }
    scope.check(&ctx.vk.rules, dir)?;
    barrier::record(&ctx.vk, cmd, dir, scope, |sink| {
        add(sink, first);
        for (i, r) in resources.enumerate() {
            let r = r?;
            if !rule.admits(r) {
                return Err(rule.refusal(i + 1, &r));
            }
            add(sink, r);
        }
        Ok(())
    })
}

/// What a resource must agree with to share the barrier.
struct Rule<'a> {
    /// The context that records (the first resource's).
    context: &'a Context,
    device: vk::Device,
    sync2: bool,
    dir: Direction,
}

impl Rule<'_> {
    /// Whether a resource may share the barrier: an image in a layout its
    /// direction, its usage and the barrier call allow, on the recording device
    /// (two contexts of one `VkDevice` may share a barrier). A few comparisons.
    #[inline(always)]
    fn admits(&self, r: Resource) -> bool {
        let fits = match r {
            Resource::Buffer(_) => true,
            Resource::Image(im, layout) => {
                barrier::layout_ok(layout, self.dir)
                    && barrier::layout_fits(layout, im.description().usage, self.sync2)
            }
        };
        let c = r.context();
        fits && (std::ptr::eq(c, self.context) || c.vk.device.handle() == self.device)
    }

    /// Why entry `i` may not share the barrier, in words: an image's layout
    /// first, then its device.
    #[cold]
    fn refusal(&self, i: usize, r: &Resource) -> Error {
        if let Resource::Image(im, layout) = *r {
            let what = match self.dir {
                Direction::Release => "old layout",
                Direction::Acquire => "new layout",
            };
            let name = || format!("resources[{i}].layout ({what})");
            if let Err(e) = barrier::check_layout_named(layout, self.dir, name).and_then(|_| {
                barrier::check_layout_usage(layout, im.description().usage, self.sync2, name)
            }) {
                return e;
            }
        }
        Error::invalid(format!(
            "resources[{i}] belongs to another VkDevice than resources[0]: one barrier \
             records into one device's command buffer"
        ))
    }
}

#[inline(always)]
fn add(sink: &mut barrier::Sink, r: Resource) {
    match r {
        Resource::Buffer(b) => sink.buffer(&b.handoff_range()),
        Resource::Image(im, layout) => sink.image(&im.handoff_range(layout)),
    }
}
