//! Where the deep self-test works: a standalone context, its queue, one command
//! buffer and fence, and the library's staging buffer
//! (`vulkan::staging::HostBuffer`) that every Vulkan copy
//! goes through.

use std::sync::Arc;

use ash::vk;

use super::table::WAIT;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::handoff::Scope;
use crate::vulkan::staging::HostBuffer;

/// The standalone context, its queue, one command buffer and fence, and a staging
/// buffer.
pub(crate) struct Lab {
    pub(crate) ctx: Arc<Context>,
    queue: vk::Queue,
    family: u32,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    staging: Option<HostBuffer>,
    /// Why the CUDA part is skipped (None: it runs).
    pub(crate) no_cuda: Option<String>,
    /// A submit or a semaphore did not complete in time: objects it may still use
    /// are leaked rather than destroyed, and the rest of the run is skipped.
    pub(crate) stuck: bool,
}

/// Every earlier command's memory accesses before every later one's: the lab's
/// only barrier (its copies run one after the other; speed is not its point).
///
/// # Safety
/// `cmd` is a command buffer of `d` in the recording state.
pub(super) unsafe fn full_barrier(d: &ash::Device, cmd: vk::CommandBuffer) {
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
}

fn vkr<T>(call: &str, r: std::result::Result<T, vk::Result>) -> Result<T> {
    r.map_err(|e| Error::vk(call, e))
}

impl Lab {
    pub(crate) fn new(ctx: Arc<Context>, no_cuda: Option<String>) -> Result<Lab> {
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

    pub(crate) fn cuda(&self) -> bool {
        self.no_cuda.is_none()
    }

    pub(crate) fn scope(&self) -> Scope {
        Scope::new(self.family)
    }

    /// The staging buffer's first `size` bytes (grown as needed).
    pub(crate) fn staging(&mut self, size: usize) -> Result<(vk::Buffer, &mut [u8])> {
        if !matches!(&self.staging, Some(s) if s.size() >= size) {
            if let Some(old) = self.staging.take() {
                // SAFETY: the lab's device; no submit is pending (each one is waited for).
                unsafe { old.destroy(&self.ctx.vk) };
            }
            self.staging = Some(HostBuffer::create(&self.ctx.vk, size.max(16 << 20) as u64)?);
        }
        let s = self.staging.as_mut().expect("made above");
        Ok((s.buffer(), &mut s.bytes_mut()[..size]))
    }

    /// Records with `record` (after a barrier that orders it after every earlier
    /// transfer), submits with the semaphores, and waits up to [`WAIT`].
    pub(crate) fn run(
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
            full_barrier(d, cmd);
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
            // (the staging buffer is left as it is: HostBuffer has no Drop.)
            std::mem::forget(self.ctx.clone());
            return;
        }
        if let Some(s) = self.staging.take() {
            // SAFETY: every submit was waited for.
            unsafe { s.destroy(&self.ctx.vk) };
        }
        let d = &self.ctx.vk.device;
        // SAFETY: every submit was waited for.
        unsafe {
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}
