//! The test's own CUDA work, through the driver API (`cudarc`'s bindings, loaded
//! at run time like the library's): one guard of a context's CUcontext, one
//! check of a CUresult, and one synchronous 2D copy (`copy2d`). (`Cuda::of`, the
//! CUcontext of a C context, is the C door's: capi/tests/support/door.rs.)

use std::ptr;

use cudarc::driver::sys as cu;

/// Panics unless `r` is CUDA_SUCCESS (at the caller's line).
#[track_caller]
pub fn check(r: cu::CUresult) {
    assert_eq!(r, cu::CUresult::CUDA_SUCCESS);
}

/// The CUcontext a vkcuda context works in, made current around the test's
/// driver calls.
pub struct Cuda(pub cu::CUcontext);

impl Cuda {
    /// The CUcontext of a Rust API context (`vkcuda::Context`) with CUDA.
    pub fn of_context(ctx: &vkcuda::Context) -> Cuda {
        Cuda(ctx.cuda_info().expect("a context with CUDA").context)
    }

    /// Makes the context current on this thread (until `leave`).
    #[track_caller]
    pub fn enter(&self) {
        check(unsafe { cu::cuCtxPushCurrent_v2(self.0) });
    }

    #[track_caller]
    pub fn leave(&self) {
        let mut c = ptr::null_mut();
        check(unsafe { cu::cuCtxPopCurrent_v2(&mut c) });
    }

    /// `f` with the context current.
    pub fn within<T>(&self, f: impl FnOnce() -> T) -> T {
        self.enter();
        let t = f();
        self.leave();
        t
    }

    /// Copies `data` to device memory at `dst` and waits for it.
    pub fn write(&self, dst: u64, data: &[u8]) {
        self.within(|| {
            check(unsafe { cu::cuMemcpyHtoD_v2(dst, data.as_ptr().cast(), data.len()) });
            check(unsafe { cu::cuCtxSynchronize() });
        })
    }

    /// `len` bytes of device memory at `src`, after the context's work.
    pub fn read(&self, src: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.within(|| {
            check(unsafe { cu::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), src, len) });
            check(unsafe { cu::cuCtxSynchronize() });
        });
        v
    }

    /// Waits for all work of the context.
    pub fn synchronize(&self) {
        self.within(|| check(unsafe { cu::cuCtxSynchronize() }));
    }

    /// The device's free memory in bytes.
    pub fn free_memory(&self) -> usize {
        let (mut free, mut total) = (0, 0);
        self.within(|| check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) }));
        free
    }
}

/// What one side of a 2D copy is: host or device memory with its pitch, or an array.
#[derive(Clone, Copy)]
pub enum Mem {
    Host(*mut u8, usize),
    Device(u64, usize),
    Array(cu::CUarray),
}

/// A synchronous 2D copy of `rows` rows of `row` bytes (in the current context).
#[track_caller]
pub fn copy2d(src: Mem, dst: Mem, row: usize, rows: usize) {
    use cu::CUmemorytype::*;
    let side = |m: Mem| match m {
        Mem::Host(p, pitch) => (CU_MEMORYTYPE_HOST, p, 0u64, ptr::null_mut(), pitch),
        Mem::Device(d, pitch) => (
            CU_MEMORYTYPE_DEVICE,
            ptr::null_mut(),
            d,
            ptr::null_mut(),
            pitch,
        ),
        Mem::Array(a) => (CU_MEMORYTYPE_ARRAY, ptr::null_mut(), 0, a, 0),
    };
    let (st, sh, sd, sa, sp) = side(src);
    let (dt, dh, dd, da, dp) = side(dst);
    let p = cu::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: st,
        srcHost: sh.cast_const().cast(),
        srcDevice: sd,
        srcArray: sa.cast(),
        srcPitch: sp,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dt,
        dstHost: dh.cast(),
        dstDevice: dd,
        dstArray: da.cast(),
        dstPitch: dp,
        WidthInBytes: row,
        Height: rows,
    };
    check(unsafe { cu::cuMemcpy2D_v2(&p) });
}
