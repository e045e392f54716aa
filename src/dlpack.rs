//! DLPack tensors over shared buffers and the planes of shared video frames: a
//! `DLManagedTensorVersioned` (DLPack 1.0,
//! <https://dmlc.github.io/dlpack/latest/c_api.html>) or, for consumers that ask
//! for the older ABI, a `DLManagedTensor`, whose data is the CUDA view.
//!
//! The tensor holds a reference to what keeps the CUDA view valid (the buffer's
//! allocation; a frame's CUDA mapping), so the memory (and the context) stays
//! valid until the tensor's deleter runs, even when the handle was destroyed
//! first. Everything about the tensor (dtype, shape, strides, offset) is checked
//! against the memory's size before anything is allocated.
//!
//! In Rust a tensor is a [`Tensor`]: it calls the deleter when dropped, or hands
//! the pointer over with [`Tensor::into_raw`] (to PyTorch's `from_dlpack` through
//! your binding, to a C consumer), which then calls the deleter exactly once.
//!
//! ```no_run
//! use vkcuda::ash::vk;
//! use vkcuda::buffer::{Allocator, Buffer};
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::dlpack::{DType, Spec};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::Primary)?; // needs CUDA
//! let buf = Buffer::create(&ctx, 4 * 256 * 256, vk::BufferUsageFlags::empty(), Allocator::Vulkan)?;
//! // The buffer as a 256x256 float32 tensor on the paired CUDA device.
//! let t = buf.export_dlpack(&Spec {
//!     dtype: DType { code: 2, bits: 32, lanes: 1 },
//!     shape: &[256, 256],
//!     ..Spec::default()
//! })?;
//! assert_eq!(t.data(), buf.cuda_ptr()?);
//! assert_eq!(t.shape(), &[256, 256]);
//! let raw = t.into_raw(); // a DLManagedTensorVersioned *: its consumer calls the deleter
//! # let _ = raw;
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use dlpack_rs::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPackVersion, DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
};

use super::cuda::context::CudaContext;
use crate::buffer::{Buffer, Keep};
#[allow(unused_imports)] // ErrorKind: named in the docs
use crate::error::{Error, ErrorKind, Result};
use crate::stats;

/// The most dimensions a tensor may have.
pub const MAX_NDIM: usize = 8;

/// The DLPack version the tensors are written for: every field and type code used
/// is in DLPack 1.0, so consumers of any 1.x read them.
pub(crate) const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };

/// A DLPack data type (`DLDataType`): type code, bits per lane, lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DType {
    /// `DLDataTypeCode`: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
    pub code: u8,
    /// Bits of one lane: 8, 16, 32 or 64 (complex: 32, 64, 128; bfloat: 16; bool: 8).
    pub bits: u8,
    /// Lanes per element, at least 1 (1 for scalars).
    pub lanes: u16,
}

impl DType {
    /// One byte per element: the type of an all-zero dtype.
    pub const UINT8: DType = DType {
        code: DLDataTypeCode::kDLUInt as u8,
        bits: 8,
        lanes: 1,
    };

    /// The dtype asked for; all zero means [`DType::UINT8`].
    fn resolve(self) -> Result<DType> {
        if self
            == (DType {
                code: 0,
                bits: 0,
                lanes: 0,
            })
        {
            return Ok(DType::UINT8);
        }
        let code = self.code as u32;
        let allowed: &[u8] = match code {
            DLDataTypeCode::kDLInt | DLDataTypeCode::kDLUInt => &[8, 16, 32, 64],
            DLDataTypeCode::kDLFloat => &[16, 32, 64],
            DLDataTypeCode::kDLBfloat => &[16],
            DLDataTypeCode::kDLComplex => &[32, 64, 128],
            DLDataTypeCode::kDLBool => &[8],
            DLDataTypeCode::kDLOpaqueHandle | 7..=18 => {
                return Err(Error::unsupported(format!(
                    "dtype code {code} is not exported: vkcuda writes DLPack 1.0 tensors of int, \
                     uint, float, bfloat, complex or bool (codes 0, 1, 2, 4, 5, 6)"
                )))
            }
            _ => {
                return Err(Error::invalid(format!(
                    "dtype code {code} is not a DLPack type code"
                )))
            }
        };
        if !allowed.contains(&self.bits) {
            return Err(Error::invalid(format!(
                "dtype code {code} with {} bits is not a type (allowed: {allowed:?} bits)",
                self.bits
            )));
        }
        if self.lanes == 0 {
            return Err(Error::invalid(
                "dtype lanes must be at least 1 (an all-zero dtype means uint8)",
            ));
        }
        Ok(self)
    }

    /// Bytes per element (all lanes).
    pub fn size(self) -> u64 {
        self.bits as u64 / 8 * self.lanes as u64
    }
}

impl From<DType> for DLDataType {
    fn from(d: DType) -> Self {
        DLDataType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }
}

/// What to export. The default is the whole buffer as a one-dimensional tensor of
/// bytes (uint8), writable, versioned.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spec<'a> {
    /// The element type; all zero means uint8.
    pub dtype: DType,
    /// The shape; empty means one dimension over the rest of the buffer from `offset`.
    pub shape: &'a [i64],
    /// Strides in elements, one per dimension; None means C-contiguous.
    pub strides: Option<&'a [i64]>,
    /// Where the tensor starts in the buffer, in bytes (a multiple of the element
    /// size).
    pub offset: u64,
    /// Mark the tensor read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`; versioned only).
    pub read_only: bool,
    /// A `DLManagedTensor` (no version, no flags) instead of the versioned struct.
    pub legacy: bool,
}

impl Default for DType {
    /// All zero: uint8 ([`DType::UINT8`]) when exported.
    fn default() -> Self {
        DType {
            code: 0,
            bits: 0,
            lanes: 0,
        }
    }
}

/// A checked [`Spec`]: everything the tensor's fields need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub dtype: DType,
    pub ndim: usize,
    pub shape: [i64; MAX_NDIM],
    pub strides: [i64; MAX_NDIM],
    pub offset: u64,
    /// The bytes from `offset` the tensor can touch (0 for an empty tensor).
    pub extent: u64,
    pub read_only: bool,
    pub legacy: bool,
}

impl Spec<'_> {
    /// Checks the spec against a buffer of `size` bytes.
    pub(crate) fn plan(&self, size: u64) -> Result<Plan> {
        let dtype = self.dtype.resolve()?;
        let elem = dtype.size();
        if self.read_only && self.legacy {
            return Err(Error::invalid(
                "a legacy DLManagedTensor has no flags, so it cannot be marked read-only: \
                 export the versioned tensor, or a writable legacy one",
            ));
        }
        if self.offset % elem != 0 {
            return Err(Error::invalid(format!(
                "offset {} is not a multiple of the element size {elem} (dtype code {}, {} bits, {} lanes)",
                self.offset, dtype.code, dtype.bits, dtype.lanes
            )));
        }
        if self.offset > size {
            return Err(Error::invalid(format!(
                "offset {} is past the end of the buffer ({size} bytes)",
                self.offset
            )));
        }
        if self.shape.len() > MAX_NDIM {
            return Err(Error::invalid(format!(
                "ndim {} is more than {MAX_NDIM}",
                self.shape.len()
            )));
        }
        let mut shape = [0i64; MAX_NDIM];
        let ndim = if self.shape.is_empty() {
            if self.strides.is_some() {
                return Err(Error::invalid(
                    "strides were given without a shape (ndim 0 means one dimension over the rest of the buffer)",
                ));
            }
            let rest = size - self.offset;
            if rest % elem != 0 {
                return Err(Error::invalid(format!(
                    "the rest of the buffer after offset {} ({rest} bytes) is not a whole number \
                     of {elem}-byte elements: give a shape",
                    self.offset
                )));
            }
            shape[0] = (rest / elem) as i64;
            1
        } else {
            for (i, &d) in self.shape.iter().enumerate() {
                if d < 0 {
                    return Err(Error::invalid(format!(
                        "shape[{i}] is {d}; it must be >= 0"
                    )));
                }
                shape[i] = d;
            }
            self.shape.len()
        };
        let mut strides = [0i64; MAX_NDIM];
        match self.strides {
            Some(s) => {
                if s.len() != ndim {
                    return Err(Error::invalid(format!(
                        "{} strides for {ndim} dimensions",
                        s.len()
                    )));
                }
                for (i, &st) in s.iter().enumerate() {
                    if st < 0 {
                        return Err(Error::invalid(format!(
                            "strides[{i}] is {st}: negative strides are not exported (PyTorch cannot import them)"
                        )));
                    }
                    strides[i] = st;
                }
            }
            None => {
                // C-contiguous; saturating: an absurd shape fails the extent check below.
                let mut step: i64 = 1;
                for i in (0..ndim).rev() {
                    strides[i] = step;
                    step = step.saturating_mul(shape[i].max(1));
                }
            }
        }
        let too_big = || {
            Error::invalid(format!(
                "the tensor (shape {:?}, strides {:?}, {elem}-byte elements) does not fit in a buffer of {size} bytes",
                &shape[..ndim],
                &strides[..ndim]
            ))
        };
        let extent = if shape[..ndim].contains(&0) {
            0
        } else {
            // The last element's index, then its end in bytes.
            let mut last: u128 = 0;
            for i in 0..ndim {
                let term = ((shape[i] - 1) as u128)
                    .checked_mul(strides[i] as u128)
                    .ok_or_else(too_big)?;
                last = last.checked_add(term).ok_or_else(too_big)?;
            }
            let end = (last + 1).checked_mul(elem as u128).ok_or_else(too_big)?;
            if end > (size - self.offset) as u128 {
                return Err(Error::invalid(format!(
                    "the tensor reaches byte {} of the buffer, past its end ({size} bytes): shape {:?}, \
                     strides {:?} (elements), offset {}, {elem}-byte elements",
                    self.offset as u128 + end,
                    &shape[..ndim],
                    &strides[..ndim],
                    self.offset
                )));
            }
            end as u64
        };
        Ok(Plan {
            dtype,
            ndim,
            shape,
            strides,
            offset: self.offset,
            extent,
            read_only: self.read_only,
            legacy: self.legacy,
        })
    }
}

/// The versioned tensor and what it owns, in one allocation; `tensor` comes first
/// so the tensor's address is the box's.
#[repr(C)]
struct Versioned {
    tensor: DLManagedTensorVersioned,
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    keep: Keep,
}

/// The same for the legacy `DLManagedTensor`.
#[repr(C)]
struct Legacy {
    tensor: DLManagedTensor,
    shape: [i64; MAX_NDIM],
    strides: [i64; MAX_NDIM],
    keep: Keep,
}

/// The deleter of versioned tensors: frees the tensor and drops its reference to
/// the allocation (the last reference releases the memory). No panic leaves it.
unsafe extern "C" fn delete_versioned(t: *mut DLManagedTensorVersioned) {
    if t.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: manager_ctx is the Box made in `export`, deleted once by contract.
        drop(Box::from_raw((*t).manager_ctx.cast::<Versioned>()));
        stats::DLPACK_TENSORS.sub();
    }));
}

/// The deleter of legacy tensors.
unsafe extern "C" fn delete_legacy(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as for `delete_versioned`.
        drop(Box::from_raw((*t).manager_ctx.cast::<Legacy>()));
        stats::DLPACK_TENSORS.sub();
    }));
}

/// A DLPack tensor the library made: a `DLManagedTensorVersioned` (or, when made
/// with [`Spec::legacy`], a `DLManagedTensor`) whose data is CUDA memory of a
/// buffer or a video frame's plane. It keeps that memory (and its context)
/// alive. Dropping it calls its deleter; [`into_raw`](Self::into_raw) hands it
/// to a consumer instead.
///
/// The tensor carries no synchronisation: make the consumer's stream wait for
/// what Vulkan wrote ([`Semaphore::cuda_wait`](crate::Semaphore::cuda_wait))
/// before it reads.
///
/// Thread-safety: `Send` and `Sync` (the deleter may run on any thread).
pub struct Tensor {
    ptr: std::ptr::NonNull<c_void>,
    legacy: bool,
}

// SAFETY: the tensor's memory is owned by the library's boxes (immutable after
// export) and its deleter may run on any thread.
unsafe impl Send for Tensor {}
unsafe impl Sync for Tensor {}

impl Tensor {
    fn dl(&self) -> &DLTensor {
        // SAFETY: `ptr` is a live tensor of the kind `legacy` says until dropped.
        unsafe {
            if self.legacy {
                &(*self.ptr.as_ptr().cast::<DLManagedTensor>()).dl_tensor
            } else {
                &(*self.ptr.as_ptr().cast::<DLManagedTensorVersioned>()).dl_tensor
            }
        }
    }

    /// The tensor's first element: a CUDA device pointer (`DLTensor::data`; its
    /// `byte_offset` is 0).
    pub fn data(&self) -> u64 {
        self.dl().data as u64
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        let t = self.dl();
        // SAFETY: shape points to ndim entries owned by the tensor's box.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The strides in elements (always written: C-contiguous ones when none were
    /// given).
    pub fn strides(&self) -> &[i64] {
        let t = self.dl();
        // SAFETY: as for `shape`.
        unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        let d = self.dl().dtype;
        DType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }

    /// The CUDA device ordinal (`DLDevice::device_id`; the device type is
    /// `kDLCUDA`).
    pub fn device_id(&self) -> i32 {
        self.dl().device.device_id
    }

    /// Whether this is a legacy `DLManagedTensor` (else a
    /// `DLManagedTensorVersioned`).
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// Whether the tensor is marked read-only (versioned tensors only).
    pub fn is_read_only(&self) -> bool {
        // SAFETY: as in `dl`.
        !self.legacy
            && unsafe { (*self.ptr.as_ptr().cast::<DLManagedTensorVersioned>()).flags }
                & DLPACK_FLAG_BITMASK_READ_ONLY
                != 0
    }

    /// The `DLManagedTensorVersioned *` (or `DLManagedTensor *`), still owned by
    /// this value.
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }

    /// Hands the tensor over: the returned `DLManagedTensorVersioned *` (or
    /// `DLManagedTensor *`, [`is_legacy`](Self::is_legacy)) is the caller's, who
    /// passes it to one consumer or calls its `deleter` exactly once.
    pub fn into_raw(self) -> *mut c_void {
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes back a tensor from [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `ptr` came from `into_raw` of a tensor with the same `legacy`, and nobody
    /// has called its deleter or will.
    pub unsafe fn from_raw(ptr: *mut c_void, legacy: bool) -> Option<Tensor> {
        std::ptr::NonNull::new(ptr).map(|ptr| Tensor { ptr, legacy })
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("data", &format_args!("{:#x}", self.data()))
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("dtype", &self.dtype())
            .field("legacy", &self.legacy)
            .finish()
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: the tensor is ours; its deleter is called once, here.
        unsafe {
            if self.legacy {
                delete_legacy(self.ptr.as_ptr().cast());
            } else {
                delete_versioned(self.ptr.as_ptr().cast());
            }
        }
    }
}

impl Buffer {
    /// Exports the buffer, or a range of it, as a DLPack tensor on the context's
    /// CUDA device (`kDLCUDA`, the paired device's ordinal) without copying: its
    /// data is the buffer's CUDA pointer plus `spec.offset`. The dtype, shape,
    /// strides and offset are checked against the buffer's size first
    /// ([`ErrorKind::InvalidArgument`], or [`ErrorKind::Unsupported`] for DLPack
    /// types not exported); a Vulkan-only context has no device pointer
    /// ([`ErrorKind::CudaUnavailable`]). The tensor keeps the memory alive after
    /// the buffer is dropped. Images cannot be exported (their CUDA view is an
    /// array), but the planes of a shared video frame can
    /// ([`Image::export_plane_dlpack`](crate::Image::export_plane_dlpack)).
    pub fn export_dlpack(&self, spec: &Spec) -> Result<Tensor> {
        export(self, spec)
    }
}

/// Makes a tensor over `buffer` as `spec` says: a `DLManagedTensorVersioned *`
/// (or a `DLManagedTensor *` when `spec.legacy`) that the consumer releases with
/// its deleter. Arguments are checked first; a Vulkan-only context then gives
/// CUDA_UNAVAILABLE (a kDLCUDA tensor needs a device pointer).
pub(crate) fn export(buffer: &Buffer, spec: &Spec) -> Result<Tensor> {
    let plan = spec.plan(buffer.layout().size)?;
    let alloc = buffer.allocation();
    let base = alloc.cuda_ptr().map_err(|e| {
        e.context("a DLPack tensor is a CUDA (kDLCUDA) tensor and needs the buffer's CUDA view")
    })?;
    let cuda = alloc.context().cuda()?;
    export_plan(base, cuda, alloc.clone(), &plan)
}

/// Makes the tensor of a checked plan over CUDA memory at `base` (the plan's offset
/// is added), in `cuda`'s device, holding `keep`.
pub(crate) fn export_plan(
    base: u64,
    cuda: &CudaContext,
    keep: Keep,
    plan: &Plan,
) -> Result<Tensor> {
    if !cuda.alive() {
        return Err(Error::new(
            ErrorKind::InvalidState,
            "the CUDA context was destroyed or reset: its memory cannot be exported",
        ));
    }
    let data = base + plan.offset;
    let lane = (plan.dtype.bits as u64 / 8).max(1);
    if data % lane != 0 {
        return Err(Error::invalid(format!(
            "the data pointer {data:#x} (CUDA view + offset {}) is not aligned to the {lane}-byte lanes of the dtype",
            plan.offset
        )));
    }
    let dl = DLTensor {
        data: data as *mut c_void,
        device: DLDevice {
            device_type: DLDeviceType::kDLCUDA,
            device_id: cuda.device().ordinal,
        },
        ndim: plan.ndim as i32,
        dtype: plan.dtype.into(),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        // The offset is in `data`: PyTorch ignores byte_offset.
        byte_offset: 0,
    };
    stats::DLPACK_TENSORS.add();
    if plan.legacy {
        let b = Box::into_raw(Box::new(Legacy {
            tensor: DLManagedTensor {
                dl_tensor: dl,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_legacy),
            },
            shape: plan.shape,
            strides: plan.strides,
            keep: keep.clone(),
        }));
        // SAFETY: `b` was just allocated; the pointers point into it.
        unsafe {
            (*b).tensor.manager_ctx = b.cast();
            (*b).tensor.dl_tensor.shape = (*b).shape.as_mut_ptr();
            (*b).tensor.dl_tensor.strides = (*b).strides.as_mut_ptr();
        }
        return Ok(Tensor {
            // SAFETY: Box::into_raw never returns null.
            ptr: unsafe { std::ptr::NonNull::new_unchecked(b.cast()) },
            legacy: true,
        });
    }
    let b = Box::into_raw(Box::new(Versioned {
        tensor: DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: if plan.read_only {
                DLPACK_FLAG_BITMASK_READ_ONLY
            } else {
                0
            },
            dl_tensor: dl,
        },
        shape: plan.shape,
        strides: plan.strides,
        keep,
    }));
    // SAFETY: as above.
    unsafe {
        (*b).tensor.manager_ctx = b.cast();
        (*b).tensor.dl_tensor.shape = (*b).shape.as_mut_ptr();
        (*b).tensor.dl_tensor.strides = (*b).strides.as_mut_ptr();
    }
    Ok(Tensor {
        // SAFETY: Box::into_raw never returns null.
        ptr: unsafe { std::ptr::NonNull::new_unchecked(b.cast()) },
        legacy: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dtype: DType, shape: &[i64]) -> Spec<'_> {
        Spec {
            dtype,
            shape,
            strides: None,
            offset: 0,
            read_only: false,
            legacy: false,
        }
    }

    const F32: DType = DType {
        code: 2,
        bits: 32,
        lanes: 1,
    };

    #[test]
    fn the_default_is_the_whole_buffer_as_bytes() {
        let p = spec(
            DType {
                code: 0,
                bits: 0,
                lanes: 0,
            },
            &[],
        )
        .plan(100)
        .unwrap();
        assert_eq!(p.dtype, DType::UINT8);
        assert_eq!(
            (p.ndim, p.shape[0], p.strides[0], p.extent),
            (1, 100, 1, 100)
        );
    }

    #[test]
    fn c_contiguous_strides_and_extent() {
        let p = spec(F32, &[2, 3, 4]).plan(96).unwrap();
        assert_eq!(&p.strides[..3], &[12, 4, 1]);
        assert_eq!(p.extent, 96);
        assert!(spec(F32, &[2, 3, 4]).plan(95).is_err());
        // Size-0 dimensions: nothing is touched.
        assert_eq!(spec(F32, &[0, 5]).plan(0).unwrap().extent, 0);
    }

    #[test]
    fn strides_offset_and_overflow() {
        let strides = [1i64, 4];
        let mut s = spec(F32, &[4, 2]);
        s.strides = Some(&strides);
        // Column-major 4x2: last element index 3 + 4 = 7, 32 bytes.
        assert_eq!(s.plan(32).unwrap().extent, 32);
        s.offset = 4;
        assert!(s.plan(32).is_err());
        assert_eq!(s.plan(36).unwrap().offset, 4);
        s.offset = 2;
        assert!(s.plan(64).is_err(), "misaligned offset");
        let huge = [i64::MAX, i64::MAX];
        assert!(spec(F32, &huge).plan(u64::MAX).is_err());
        let neg = [-1i64, 1];
        let mut s = spec(F32, &[4, 2]);
        s.strides = Some(&neg);
        assert!(s.plan(1 << 20).is_err());
    }

    #[test]
    fn dtypes() {
        for (code, bits, ok) in [
            (0, 8, true),
            (1, 64, true),
            (2, 16, true),
            (2, 8, false),
            (3, 64, false),
            (4, 16, true),
            (5, 128, true),
            (6, 8, true),
            (6, 1, false),
            (10, 8, false),
            (99, 8, false),
        ] {
            let r = spec(
                DType {
                    code,
                    bits,
                    lanes: 1,
                },
                &[1],
            )
            .plan(64);
            assert_eq!(r.is_ok(), ok, "code {code} bits {bits}: {r:?}");
        }
        let unsupported = spec(
            DType {
                code: 10,
                bits: 8,
                lanes: 1,
            },
            &[1],
        )
        .plan(64);
        assert_eq!(unsupported.unwrap_err().kind, ErrorKind::Unsupported);
        assert!(spec(
            DType {
                code: 2,
                bits: 32,
                lanes: 0
            },
            &[1]
        )
        .plan(64)
        .is_err());
        let four = DType {
            code: 2,
            bits: 32,
            lanes: 4,
        };
        assert_eq!(spec(four, &[4]).plan(64).unwrap().extent, 64);
    }
}
