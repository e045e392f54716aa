//! Vulkan memory and semaphores imported into CUDA (`cuImportExternalMemory`,
//! `cuImportExternalSemaphore`).

use std::os::fd::OwnedFd;
use std::sync::Arc;

use cudarc::driver::sys;

use super::CudaContext;
use crate::error::{cu_check, Error, Result};
use crate::fd;
use crate::stats;

/// An imported memory object, with at most one mapped buffer.
pub struct ExternalMemory {
    ctx: Arc<CudaContext>,
    ext: sys::CUexternalMemory,
    mapped: sys::CUdeviceptr,
}

// SAFETY: CUDA handles are usable from any thread.
unsafe impl Send for ExternalMemory {}
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Imports an `OPAQUE_FD` of `allocation_size` bytes (the whole Vulkan
    /// allocation). The fd is consumed on success (CUDA closes it when the import is
    /// destroyed) and closed here on failure, so it is always gone afterwards.
    pub fn import_opaque_fd(
        ctx: Arc<CudaContext>,
        handle: OwnedFd,
        allocation_size: u64,
        dedicated: bool,
    ) -> Result<Self> {
        let handle = fd::Handoff::new(handle);
        let _g = ctx.enter()?;
        // SAFETY: all-zero is a valid descriptor; the fields that matter are set below.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        desc.handle.fd = handle.raw();
        desc.size = allocation_size;
        desc.flags = if dedicated {
            sys::CUDA_EXTERNAL_MEMORY_DEDICATED
        } else {
            0
        };
        let mut ext = std::ptr::null_mut();
        cu_check("cuImportExternalMemory", unsafe {
            sys::cuImportExternalMemory(&mut ext, &desc)
        })?;
        // Success: the driver owns the descriptor now.
        handle.taken();
        stats::CUDA_EXTERNAL_MEMORIES.add();
        Ok(ExternalMemory {
            ctx,
            ext,
            mapped: 0,
        })
    }

    /// Maps `size` bytes at `offset` as a device pointer (once).
    pub fn map_buffer(&mut self, offset: u64, size: u64) -> Result<u64> {
        if self.mapped != 0 {
            return Err(Error::invalid("the external memory is already mapped"));
        }
        let _g = self.ctx.enter()?;
        // SAFETY: all-zero is valid; offset and size are set below.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
        desc.offset = offset;
        desc.size = size;
        let mut ptr = 0;
        cu_check("cuExternalMemoryGetMappedBuffer", unsafe {
            sys::cuExternalMemoryGetMappedBuffer(&mut ptr, self.ext, &desc)
        })?;
        self.mapped = ptr;
        Ok(ptr)
    }

    pub fn raw(&self) -> sys::CUexternalMemory {
        self.ext
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        let _g = self.ctx.enter();
        // SAFETY: the mapping is freed before the memory object it came from.
        unsafe {
            if self.mapped != 0 {
                sys::cuMemFree_v2(self.mapped);
            }
            sys::cuDestroyExternalMemory(self.ext);
        }
        stats::CUDA_EXTERNAL_MEMORIES.sub();
    }
}

/// An imported semaphore (timeline or binary).
pub struct ExternalSemaphore {
    ctx: Arc<CudaContext>,
    sem: sys::CUexternalSemaphore,
    timeline: bool,
}

// SAFETY: CUDA handles are usable from any thread.
unsafe impl Send for ExternalSemaphore {}
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// Imports a semaphore fd; consumed on success, closed on failure.
    pub fn import_fd(ctx: Arc<CudaContext>, handle: OwnedFd, timeline: bool) -> Result<Self> {
        let handle = fd::Handoff::new(handle);
        let _g = ctx.enter()?;
        // SAFETY: all-zero is a valid descriptor.
        let mut desc: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = if timeline {
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
        } else {
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        };
        desc.handle.fd = handle.raw();
        let mut sem = std::ptr::null_mut();
        cu_check("cuImportExternalSemaphore", unsafe {
            sys::cuImportExternalSemaphore(&mut sem, &desc)
        })?;
        handle.taken();
        stats::CUDA_EXTERNAL_SEMAPHORES.add();
        Ok(ExternalSemaphore { ctx, sem, timeline })
    }

    /// Enqueues a signal of `value` (ignored for binary semaphores) on `stream`.
    // A CUstream is an opaque driver handle, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn signal(&self, value: u64, stream: sys::CUstream) -> Result<()> {
        let _g = self.ctx.enter()?;
        self.ctx.check_stream(stream)?;
        // SAFETY: all-zero is valid.
        let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        if self.timeline {
            p.params.fence.value = value;
        }
        cu_check("cuSignalExternalSemaphoresAsync", unsafe {
            sys::cuSignalExternalSemaphoresAsync(&self.sem, &p, 1, stream)
        })
    }

    /// Enqueues a wait for `value` (ignored for binary semaphores) on `stream`.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn wait(&self, value: u64, stream: sys::CUstream) -> Result<()> {
        let _g = self.ctx.enter()?;
        self.ctx.check_stream(stream)?;
        // SAFETY: all-zero is valid.
        let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        if self.timeline {
            p.params.fence.value = value;
        }
        cu_check("cuWaitExternalSemaphoresAsync", unsafe {
            sys::cuWaitExternalSemaphoresAsync(&self.sem, &p, 1, stream)
        })
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        let _g = self.ctx.enter();
        // SAFETY: destroys the import made in `import_fd`.
        unsafe { sys::cuDestroyExternalSemaphore(self.sem) };
        stats::CUDA_EXTERNAL_SEMAPHORES.sub();
    }
}
