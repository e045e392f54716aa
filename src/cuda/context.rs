//! The CUDA context the library works in, and a guard that makes it current.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use cudarc::driver::sys;

use super::cu_check;
use super::{device_from_handle, driver, DeviceInfo};
use crate::error::{Error, ErrorKind, Result};

/// A CUDA context: the device's primary context (retained, released on drop) or one
/// the caller owns (borrowed: the caller keeps it alive longer than every object).
pub struct CudaContext {
    ctx: sys::CUcontext,
    info: DeviceInfo,
    primary: bool,
    /// A 256-byte `cuMemAlloc` made in the context when the library took it, and
    /// its process-wide unique buffer id: see `alive`.
    sentinel: sys::CUdeviceptr,
    sentinel_id: u64,
    /// The last stream `check_stream` found to be this context's (0: none). A
    /// per-frame call passes the same stream every time; it is looked up once.
    /// Forgotten when an enqueue on it fails (`forget_stream`).
    checked_stream: AtomicUsize,
}

/// How many allocation ranges a thread remembers (a decoder's pool of output
/// surfaces, a framework's memory segments).
const KNOWN_RANGES: usize = 32;

/// Counts the device memory the library freed (its buffers' and frames'
/// mappings, its CUDA allocations, a context's sentinel): a remembered range may
/// name freed memory after it moved, so every thread's list is cleared then
/// (`KnownRanges`).
static FREED: AtomicU64 = AtomicU64::new(0);

/// The library is about to free device memory: remembered ranges are dropped.
pub fn memory_freed() {
    FREED.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// The allocation ranges this thread's pitched copies found: per thread, so
    /// a per-frame call takes no lock (a decoder's frames come from one thread).
    static RANGES: RefCell<KnownRanges> = const { RefCell::new(KnownRanges::new()) };
}

/// The allocation ranges found last, `[base, end)` in a CUDA context (an
/// entry names the context's address), replaced oldest first; all dropped when
/// the library freed device memory since they were found.
struct KnownRanges {
    list: [(usize, u64, u128); KNOWN_RANGES],
    len: usize,
    next: usize,
    /// `FREED` when the list was started.
    freed: u64,
}

impl KnownRanges {
    const fn new() -> Self {
        KnownRanges {
            list: [(0, 0, 0); KNOWN_RANGES],
            len: 0,
            next: 0,
            freed: 0,
        }
    }

    /// Drops the list when the library freed memory since it was started.
    fn refresh(&mut self, freed: u64) {
        if self.freed != freed {
            self.len = 0;
            self.next = 0;
            self.freed = freed;
        }
    }

    /// Whether `[start, end)` lies inside one range remembered in `ctx`.
    fn contains(&self, ctx: usize, start: u64, end: u128) -> bool {
        self.list[..self.len]
            .iter()
            .any(|&(c, base, stop)| c == ctx && base <= start && end <= stop)
    }

    /// Remembers `[base, base + size)` of `ctx` (once), in place of the oldest
    /// when full.
    fn insert(&mut self, ctx: usize, base: u64, size: u64) {
        let entry = (ctx, base, base as u128 + size as u128);
        if self.list[..self.len].contains(&entry) {
            return;
        }
        self.list[self.next] = entry;
        self.next = (self.next + 1) % KNOWN_RANGES;
        self.len = (self.len + 1).min(KNOWN_RANGES);
    }
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
        let (sentinel, sentinel_id) = match make_sentinel(ctx) {
            Ok(s) => s,
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
            sentinel,
            sentinel_id,
            checked_stream: AtomicUsize::new(0),
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
        let info = device_from_handle(device)?;
        let (sentinel, sentinel_id) = make_sentinel(ctx)?;
        Ok(CudaContext {
            ctx,
            info,
            primary: false,
            sentinel,
            sentinel_id,
            checked_stream: AtomicUsize::new(0),
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

    /// Whether the context still exists. A context the caller destroyed
    /// (`cuCtxDestroy` before the library's objects: documented misuse) or a primary
    /// context reset (`cuDevicePrimaryCtxReset`) is a dangling handle that no driver
    /// call may be given: on the H200 `cuCtxPushCurrent`/`cuCtxGetId` with one
    /// corrupted the heap ("free(): invalid pointer"). So the context itself is not
    /// asked: the sentinel allocation made in it is looked up by address
    /// (`cuPointerGetAttribute`, which needs no context and touches none). The
    /// driver freed it with the context; an address reused since has another
    /// buffer id.
    pub fn alive(&self) -> bool {
        buffer_id(self.sentinel) == Ok(self.sentinel_id)
    }

    /// Makes this context current on the calling thread until the guard drops.
    /// Fails with `InvalidState` when the context is gone (see `alive`): the
    /// driver freed the context's objects with it, and destroying them again
    /// corrupts its heap, so `Drop` code skips them when this fails.
    pub fn enter(&self) -> Result<CurrentGuard> {
        let alive = match buffer_id(self.sentinel) {
            Ok(id) => id == self.sentinel_id,
            // The driver answers with a sticky error: the context is lost, not gone.
            Err(r) if crate::lost::is_sticky(r) => {
                return Err(crate::lost::cuda_on(
                    self.ctx,
                    "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_BUFFER_ID)",
                    r,
                ))
            }
            Err(_) => false,
        };
        if !alive {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "the CUDA context {:p} of this object was destroyed or reset: destroy the \
                     library's objects before the CUDA context they use (cuCtxDestroy, \
                     cuDevicePrimaryCtxReset)",
                    self.ctx
                ),
            ));
        }
        CurrentGuard::push(self.ctx)
    }

    /// For `Drop` code: makes the context current to release its objects, or
    /// `None` when the context is gone (destroyed or reset by the caller, see
    /// `alive`: the driver freed its objects with it, and releasing them again
    /// corrupts its heap). A lost context (a sticky error) is still there: its
    /// objects are released all the same (the driver gives back what it can and
    /// closes the fds it owns until `cuDestroyExternalMemory`, whatever the calls
    /// return), with the context current where even that still works. The sticky
    /// result of any release call is recorded ([`Releasing::result`]), so the
    /// first call that saw it is the one named.
    pub fn releasing(&self) -> Option<Releasing<'_>> {
        match buffer_id(self.sentinel) {
            Ok(id) if id == self.sentinel_id => {}
            Ok(_) => return None,
            Err(r) if crate::lost::is_sticky(r) => {
                let _ = crate::lost::cuda_on(
                    self.ctx,
                    "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_BUFFER_ID)",
                    r,
                );
            }
            Err(_) => return None,
        }
        Some(Releasing {
            ctx: self.ctx,
            // A push that fails with a sticky error records it itself.
            _current: CurrentGuard::push(self.ctx).ok(),
            _of: std::marker::PhantomData,
        })
    }

    /// Checks that `stream` belongs to this context. The special handles 0 (legacy
    /// default stream), `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD` always do,
    /// since they mean "the default stream of the current context".
    /// Must be called with this context current.
    // A CUstream is an opaque driver handle, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn check_stream(&self, stream: sys::CUstream) -> Result<()> {
        let raw = stream as usize;
        if raw <= 2 || raw == self.checked_stream.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut owner = std::ptr::null_mut();
        let r = unsafe { sys::cuStreamGetCtx(stream, &mut owner) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(super::error("cuStreamGetCtx", r)
                .context("the stream is not a valid CUstream (destroyed, or not a stream)"));
        }
        if owner != self.ctx {
            // Name the stream's device too: on a machine with several GPUs this is
            // the usual cause (a stream of GPU 0 given to an object of GPU 1).
            let theirs = stream_device(owner)
                .map(|d| {
                    format!(
                        " on device {} '{}' {}",
                        d.ordinal,
                        d.name,
                        super::format_uuid(&d.uuid)
                    )
                })
                .unwrap_or_default();
            return Err(Error::new(
                ErrorKind::DeviceMismatch,
                format!(
                    "the stream belongs to CUDA context {owner:p}{theirs}, not to this context's {:p} \
                     (device {} '{}' {}): create the stream in the context vkcuda_context_get_cuda_info returns",
                    self.ctx,
                    self.info.ordinal,
                    self.info.name,
                    super::format_uuid(&self.info.uuid)
                ),
            ));
        }
        self.checked_stream.store(raw, Ordering::Relaxed);
        Ok(())
    }

    /// Whether `[start, end)` lies in an allocation range this thread found
    /// before in this context ([`remember_range`](Self::remember_range)): a
    /// pitched copy from a decoder's surfaces then asks the driver once per
    /// surface, not every frame.
    /// The list is dropped whenever the library frees device memory (its
    /// buffers, frames and CUDA allocations); memory the caller frees and
    /// allocates again inside a remembered range is not looked up again (the
    /// copy's safety contract says so).
    pub fn known_range(&self, start: u64, end: u128) -> bool {
        let freed = FREED.load(Ordering::Relaxed);
        RANGES.with_borrow_mut(|r| {
            r.refresh(freed);
            r.contains(self.ctx as usize, start, end)
        })
    }

    /// Remembers the allocation `[base, base + size)` `cuMemGetAddressRange`
    /// reported, in place of the oldest when the list is full.
    pub fn remember_range(&self, base: u64, size: u64) {
        let freed = FREED.load(Ordering::Relaxed);
        RANGES.with_borrow_mut(|r| {
            r.refresh(freed);
            r.insert(self.ctx as usize, base, size);
        })
    }

    /// Forgets the stream `check_stream` remembered (an enqueue on it failed: it
    /// may have been destroyed and its address reused), so the next call checks.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn forget_stream(&self, stream: sys::CUstream) {
        let _ = self.checked_stream.compare_exchange(
            stream as usize,
            0,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

/// The device of `ctx`, a live context (the owner of a valid stream).
fn stream_device(ctx: sys::CUcontext) -> Option<DeviceInfo> {
    let _g = CurrentGuard::push(ctx).ok()?;
    let mut device = 0;
    cu_check("cuCtxGetDevice", unsafe {
        sys::cuCtxGetDevice(&mut device)
    })
    .ok()?;
    device_from_handle(device).ok()
}

/// Allocates the liveness sentinel of `ctx` (see `CudaContext::alive`).
fn make_sentinel(ctx: sys::CUcontext) -> Result<(sys::CUdeviceptr, u64)> {
    let _g = CurrentGuard::push(ctx)?;
    let mut ptr = 0;
    cu_check("cuMemAlloc_v2 (256 bytes)", unsafe {
        sys::cuMemAlloc_v2(&mut ptr, 256)
    })?;
    match buffer_id(ptr) {
        Ok(id) => Ok((ptr, id)),
        Err(r) => {
            let e = super::error("cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_BUFFER_ID)", r);
            // SAFETY: the allocation made above, in the current context.
            unsafe { sys::cuMemFree_v2(ptr) };
            Err(e)
        }
    }
}

/// The process-wide unique id of the allocation at `ptr`; fails for an address
/// that is no (longer an) allocation. Needs no current context.
fn buffer_id(ptr: sys::CUdeviceptr) -> std::result::Result<u64, sys::CUresult> {
    let mut id = 0u64;
    let r = unsafe {
        sys::cuPointerGetAttribute(
            (&mut id as *mut u64).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
            ptr,
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(id)
    } else {
        Err(r)
    }
}

impl Drop for CudaContext {
    fn drop(&mut self) {
        if let Some(r) = self.releasing() {
            // SAFETY: the sentinel made in `make_sentinel`, in this context (alive
            // or lost, not gone). A new context may come at the same address.
            memory_freed();
            r.result("cuMemFree_v2", unsafe { sys::cuMemFree_v2(self.sentinel) });
        }
        if self.primary {
            // SAFETY: balances the retain in `primary`.
            unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.info.device) };
        }
    }
}

/// The context made current for releasing objects ([`CudaContext::releasing`]).
pub struct Releasing<'a> {
    ctx: sys::CUcontext,
    _current: Option<CurrentGuard>,
    _of: std::marker::PhantomData<&'a CudaContext>,
}

impl Releasing<'_> {
    /// Takes the result of a release call: a sticky error is recorded on the
    /// context (`crate::lost`, naming `call` unless an earlier call saw it first);
    /// any other failure is dropped, since a destroy has nothing left to do about
    /// it.
    pub fn result(&self, call: &str, r: sys::CUresult) {
        if crate::lost::is_sticky(r) {
            let _ = crate::lost::cuda_on(self.ctx, call, r);
        }
    }
}

/// Makes a context current on the calling thread: pushes it on the thread's
/// stack and pops it on drop, or does nothing when it is current already (the
/// common case of a per-frame call from the thread that runs the CUDA work).
pub struct CurrentGuard {
    pushed: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CurrentGuard {
    fn push(ctx: sys::CUcontext) -> Result<Self> {
        let mut current = std::ptr::null_mut();
        if unsafe { sys::cuCtxGetCurrent(&mut current) } == sys::CUresult::CUDA_SUCCESS
            && current == ctx
        {
            return Ok(CurrentGuard {
                pushed: false,
                _not_send: std::marker::PhantomData,
            });
        }
        let r = unsafe { sys::cuCtxPushCurrent_v2(ctx) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // Not through `cu_check`: the context a sticky error belongs to is
            // `ctx`, which is not current.
            return Err(if crate::lost::is_sticky(r) {
                crate::lost::cuda_on(ctx, "cuCtxPushCurrent_v2", r)
            } else {
                Error::cuda("cuCtxPushCurrent_v2", r)
            });
        }
        Ok(CurrentGuard {
            pushed: true,
            _not_send: std::marker::PhantomData,
        })
    }
}

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = std::ptr::null_mut();
            // SAFETY: balances the push in `push` on the same thread.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ranges_hold_the_last_32_and_only_what_fits() {
        let mut r = KnownRanges::new();
        let c = 0xc0;
        assert!(!r.contains(c, 0x1000, 0x1001));
        r.insert(c, 0x1000, 0x100);
        r.insert(c, 0x1000, 0x100);
        assert_eq!(r.len, 1, "remembered once");
        assert!(r.contains(c, 0x1000, 0x1100), "the whole allocation");
        assert!(r.contains(c, 0x1080, 0x1090));
        assert!(!r.contains(c, 0x1000, 0x1101), "one byte past the end");
        assert!(!r.contains(c, 0xfff, 0x1010), "one byte before the start");
        assert!(!r.contains(0xc1, 0x1000, 0x1100), "another context's");
        // 32 more push the first out, oldest first.
        for i in 0..KNOWN_RANGES as u64 {
            r.insert(c, 0x10_0000 * (i + 1), 0x1000);
        }
        assert_eq!(r.len, KNOWN_RANGES);
        assert!(!r.contains(c, 0x1000, 0x1100), "the oldest was replaced");
        assert!(r.contains(c, 0x10_0000, 0x10_1000));
        assert!(r.contains(c, 0x10_0000 * 32, 0x10_0000 * 32 + 0x1000));
        // A range at the top of the address space does not overflow.
        r.insert(c, u64::MAX - 0xff, 0x100);
        assert!(r.contains(c, u64::MAX - 0xff, u64::MAX as u128 + 1));
        // Memory the library freed since: the list starts over.
        r.refresh(r.freed);
        assert_eq!(r.len, KNOWN_RANGES);
        r.refresh(r.freed + 1);
        assert_eq!(r.len, 0);
        assert!(!r.contains(c, 0x10_0000, 0x10_1000));
    }
}
