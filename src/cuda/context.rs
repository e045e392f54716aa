//! The CUDA context the library works in, and a guard that makes it current.

use cudarc::driver::sys;

use super::{device_from_handle, driver, DeviceInfo};
use crate::error::{cu_check, Error, ErrorKind, Result};

/// A CUDA context: the device's primary context (retained, released on drop) or one
/// the caller owns (borrowed: the caller keeps it alive longer than every object).
pub struct CudaContext {
    ctx: sys::CUcontext,
    info: DeviceInfo,
    primary: bool,
    /// `cuCtxGetId` when the library took the context: a context the caller
    /// destroyed (or a primary context reset) no longer answers with it.
    id: u64,
}

// SAFETY: a CUcontext may be used from any thread; the driver synchronises it.
unsafe impl Send for CudaContext {}
unsafe impl Sync for CudaContext {}

impl CudaContext {
    /// Retains the primary context of `info`'s device.
    pub fn primary(info: DeviceInfo) -> Result<Self> {
        driver()?;
        let mut ctx = std::ptr::null_mut();
        cu_check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, info.device)
        })?;
        let id = match context_id(ctx) {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: balances the retain above.
                unsafe { sys::cuDevicePrimaryCtxRelease_v2(info.device) };
                return Err(e);
            }
        };
        Ok(CudaContext {
            ctx,
            info,
            primary: true,
            id,
        })
    }

    /// Uses a context the caller created; finds out which device it belongs to.
    pub fn borrowed(ctx: sys::CUcontext) -> Result<Self> {
        driver()?;
        if ctx.is_null() {
            return Err(Error::null("cuda_context"));
        }
        let mut device = 0;
        {
            let _g = CurrentGuard::push(ctx)?;
            cu_check("cuCtxGetDevice", unsafe {
                sys::cuCtxGetDevice(&mut device)
            })?;
        }
        Ok(CudaContext {
            ctx,
            info: device_from_handle(device)?,
            primary: false,
            id: context_id(ctx)?,
        })
    }

    pub fn raw(&self) -> sys::CUcontext {
        self.ctx
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// Makes this context current on the calling thread until the guard drops.
    /// Fails with `InvalidState` when the context is gone: destroyed by the caller
    /// (`cuCtxDestroy` before the library's objects, a documented misuse) or a
    /// primary context reset (`cuDevicePrimaryCtxReset`). The driver freed the
    /// context's objects with it then; destroying them again corrupts its heap
    /// (seen on the H200), so `Drop` code skips them when this fails.
    pub fn enter(&self) -> Result<CurrentGuard> {
        let guard = CurrentGuard::push(self.ctx)?;
        let mut id = 0;
        let r = unsafe { sys::cuCtxGetId(self.ctx, &mut id) };
        if r != sys::CUresult::CUDA_SUCCESS || id != self.id {
            let why = if r == sys::CUresult::CUDA_SUCCESS {
                format!("it is now context id {id}, not {}", self.id)
            } else {
                format!("cuCtxGetId returned {r:?}")
            };
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "the CUDA context {:p} of this object was destroyed or reset ({why}): \
                     destroy the library's objects before the CUDA context they use",
                    self.ctx
                ),
            ));
        }
        Ok(guard)
    }

    /// Checks that `stream` belongs to this context. The special handles 0 (legacy
    /// default stream), `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD` always do,
    /// since they mean "the default stream of the current context".
    /// Must be called with this context current.
    // A CUstream is an opaque driver handle, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn check_stream(&self, stream: sys::CUstream) -> Result<()> {
        let raw = stream as usize;
        if raw <= 2 {
            return Ok(());
        }
        let mut owner = std::ptr::null_mut();
        let r = unsafe { sys::cuStreamGetCtx(stream, &mut owner) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::cuda("cuStreamGetCtx", r)
                .context("the stream is not a valid CUstream (destroyed, or not a stream)"));
        }
        if owner != self.ctx {
            return Err(Error::new(
                ErrorKind::DeviceMismatch,
                format!(
                    "the stream belongs to CUDA context {owner:p}, not to this context's {:p} \
                     (device {} '{}'): create the stream in the context vkcuda_context_get_cuda returns",
                    self.ctx, self.info.ordinal, self.info.name
                ),
            ));
        }
        Ok(())
    }
}

/// The unique id the driver gives a context (never reused in the process).
fn context_id(ctx: sys::CUcontext) -> Result<u64> {
    let mut id = 0;
    cu_check("cuCtxGetId", unsafe { sys::cuCtxGetId(ctx, &mut id) })?;
    Ok(id)
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        if self.primary {
            // SAFETY: balances the retain in `primary`.
            unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.info.device) };
        }
    }
}

/// Pushes a context on the calling thread's stack and pops it on drop.
pub struct CurrentGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CurrentGuard {
    fn push(ctx: sys::CUcontext) -> Result<Self> {
        cu_check("cuCtxPushCurrent_v2", unsafe {
            sys::cuCtxPushCurrent_v2(ctx)
        })?;
        Ok(CurrentGuard {
            _not_send: std::marker::PhantomData,
        })
    }
}

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        let mut popped = std::ptr::null_mut();
        // SAFETY: balances the push in `push` on the same thread.
        unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    }
}
