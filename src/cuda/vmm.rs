//! Exportable CUDA allocations through the virtual memory management API:
//! `cuMemCreate` with a POSIX fd handle type, reserved, mapped and made accessible.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use cudarc::driver::sys;

use super::cu_check;
use super::CudaContext;
use crate::error::{Error, Result};
use crate::fd;
use crate::stats;

fn prop(ordinal: i32) -> sys::CUmemAllocationProp {
    // SAFETY: zero is valid for every field (the enums here have a 0 = INVALID
    // value; `allocation_prop_is_valid_when_zeroed` checks this builds).
    let mut p: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    p.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes =
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    p.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = ordinal;
    p
}

/// The recommended allocation granularity of the context's device (2 MiB on the H200).
pub fn granularity(ctx: &CudaContext) -> Result<u64> {
    let p = prop(ctx.device().ordinal);
    let mut g = 0usize;
    cu_check("cuMemGetAllocationGranularity", unsafe {
        sys::cuMemGetAllocationGranularity(
            &mut g,
            &p,
            sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
        )
    })?;
    Ok(g.max(1) as u64)
}

/// A physical CUDA allocation mapped at `ptr`, exportable as a POSIX fd.
pub struct VmmAllocation {
    ctx: Arc<CudaContext>,
    handle: sys::CUmemGenericAllocationHandle,
    ptr: sys::CUdeviceptr,
    size: u64,
}

impl VmmAllocation {
    /// Allocates at least `size` bytes, rounded up to the recommended granularity.
    pub fn new(ctx: Arc<CudaContext>, size: u64) -> Result<Self> {
        let _g = ctx.enter()?;
        let gran = granularity(&ctx)?;
        let rounded = size
            .checked_next_multiple_of(gran)
            .ok_or_else(|| Error::invalid(format!("size {size} overflows when rounded")))?;
        let p = prop(ctx.device().ordinal);
        let mut handle = 0;
        cu_check("cuMemCreate", unsafe {
            sys::cuMemCreate(&mut handle, rounded as usize, &p, 0)
        })?;
        // From here on `alloc` releases whatever was set up if a later step fails.
        stats::CUDA_ALLOCATIONS.add();
        let mut alloc = VmmAllocation {
            ctx: ctx.clone(),
            handle,
            ptr: 0,
            size: rounded,
        };
        let mut ptr = 0;
        cu_check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut ptr, rounded as usize, gran as usize, 0, 0)
        })?;
        let r = unsafe { sys::cuMemMap(ptr, rounded as usize, 0, handle, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            unsafe { sys::cuMemAddressFree(ptr, rounded as usize) };
            return Err(super::error("cuMemMap", r));
        }
        alloc.ptr = ptr;
        let access = sys::CUmemAccessDesc {
            location: p.location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        cu_check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(ptr, rounded as usize, &access, 1)
        })?;
        Ok(alloc)
    }

    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The allocation size (the requested size rounded up to the granularity).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// A new POSIX fd for the allocation; the caller owns it.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let _g = self.ctx.enter()?;
        let mut raw: libc::c_int = -1;
        cu_check("cuMemExportToShareableHandle", unsafe {
            sys::cuMemExportToShareableHandle(
                (&mut raw as *mut libc::c_int).cast(),
                self.handle,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        // SAFETY: the driver created this descriptor for us.
        Ok(unsafe { fd::adopt(raw) })
    }

    /// Maps an allocation exported by [`export_fd`](Self::export_fd) (here or in
    /// another process). The driver does not take the fd: it stays the caller's.
    pub fn import_fd(
        ctx: Arc<CudaContext>,
        shared: std::os::fd::BorrowedFd<'_>,
        size: u64,
    ) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let _g = ctx.enter()?;
        let gran = granularity(&ctx)?;
        if size == 0 || size % gran != 0 {
            return Err(Error::invalid(format!(
                "allocation size {size} of a CUDA allocation must be a non-zero multiple of the granularity {gran}"
            )));
        }
        let mut handle = 0;
        cu_check("cuMemImportFromShareableHandle", unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                shared.as_raw_fd() as usize as *mut std::ffi::c_void,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        })?;
        stats::CUDA_ALLOCATIONS.add();
        let mut alloc = VmmAllocation {
            ctx: ctx.clone(),
            handle,
            ptr: 0,
            size,
        };
        let mut ptr = 0;
        cu_check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut ptr, size as usize, gran as usize, 0, 0)
        })?;
        let r = unsafe { sys::cuMemMap(ptr, size as usize, 0, handle, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            unsafe { sys::cuMemAddressFree(ptr, size as usize) };
            return Err(super::error("cuMemMap", r).context(
                "the allocation size is larger than the exported allocation, or the handle is not a CUDA allocation",
            ));
        }
        alloc.ptr = ptr;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: ctx.device().ordinal,
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        cu_check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(ptr, size as usize, &access, 1)
        })?;
        Ok(alloc)
    }
}

impl Drop for VmmAllocation {
    fn drop(&mut self) {
        // The physical allocation and the address range belong to the process, not
        // to a context: if the caller destroyed the library's context first, they
        // are still there and are released under the device's primary context.
        // A lost context (a sticky error) still gets every release call; a
        // sticky result is recorded on the context current for the call.
        let own = self.ctx.releasing();
        let fallback = match own {
            Some(_) => None,
            None => CudaContext::primary(self.ctx.device().clone()).ok(),
        };
        let _fallback_guard = fallback.as_ref().and_then(|p| p.enter().ok());
        let result = |call: &str, r: sys::CUresult| match &own {
            Some(own) => own.result(call, r),
            None => {
                if crate::lost::is_sticky(r) {
                    let _ = crate::lost::cuda(call, r);
                }
            }
        };
        // SAFETY: each call undoes one step of `new`/`import_fd` that succeeded.
        unsafe {
            if self.ptr != 0 {
                super::context::memory_freed();
                result("cuMemUnmap", sys::cuMemUnmap(self.ptr, self.size as usize));
                result(
                    "cuMemAddressFree",
                    sys::cuMemAddressFree(self.ptr, self.size as usize),
                );
            }
            result("cuMemRelease", sys::cuMemRelease(self.handle));
        }
        stats::CUDA_ALLOCATIONS.sub();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocation_prop_is_valid_when_zeroed() {
        let p = super::prop(3);
        assert_eq!(p.location.id, 3);
    }
}
