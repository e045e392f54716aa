//! Vulkan image memory seen by CUDA: the import mapped as a mipmapped array
//! (`cuExternalMemoryGetMappedMipmappedArray`), its level arrays, and the surface
//! and texture objects made on it.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::cu_check;
use super::external::ExternalMemory;
use super::CudaContext;
use crate::error::{Error, Result};

/// The shape CUDA is told the image has (`CUDA_ARRAY3D_DESCRIPTOR` plus levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayShape {
    pub width: usize,
    /// 0 for 1D (and 1D layered) arrays.
    pub height: usize,
    /// 0 for 1D/2D; the depth of 3D arrays; the layer count of layered and cubemap arrays.
    pub depth: usize,
    pub format: sys::CUarray_format,
    pub channels: u32,
    /// `CUDA_ARRAY3D_*` bits.
    pub flags: u32,
    pub levels: u32,
}

/// How a texture object samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureDesc {
    /// `None`: the whole mipmapped array (mipmapped sampling); `Some(l)`: level `l` only.
    pub level: Option<u32>,
    pub linear: bool,
    pub address: sys::CUaddress_mode,
    pub normalized_coordinates: bool,
    /// Integers come back as they are (`CU_TRSF_READ_AS_INTEGER`) instead of as
    /// normalized floats. Only meaningful for integer formats.
    pub read_as_integer: bool,
    pub border_color: [f32; 4],
}

#[derive(Default)]
struct Objects {
    /// One surface per level, made on first request.
    surfaces: Vec<Option<sys::CUsurfObject>>,
    textures: Vec<sys::CUtexObject>,
}

/// An imported image: external memory, its mipmapped array, and the objects on it.
/// Drop destroys the objects, then the mipmapped array, then the import.
pub struct MappedImage {
    ctx: Arc<CudaContext>,
    mipmap: sys::CUmipmappedArray,
    /// The array of each level (owned by the mipmapped array), looked up once.
    levels: Vec<sys::CUarray>,
    shape: ArrayShape,
    objects: Mutex<Objects>,
    // Held, and dropped last (after `Drop::drop` released everything made from it).
    _ext: ExternalMemory,
}

/// Where an image (a plane) lies in its memory: a dedicated allocation (offset 0),
/// or an allocation of its own or a block shared with other resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub offset: u64,
    pub dedicated: bool,
}

// SAFETY: CUDA handles are usable from any thread; the object lists are locked.
unsafe impl Send for MappedImage {}
unsafe impl Sync for MappedImage {}

impl MappedImage {
    /// Imports an `OPAQUE_FD` of `allocation_size` bytes (the whole allocation:
    /// dedicated to the image, imported with CUDA's dedicated flag, or not) and maps
    /// it as a mipmapped array of `shape` at `placement.offset`. The fd is always
    /// gone afterwards (taken by CUDA on success, closed on failure).
    pub fn import(
        ctx: Arc<CudaContext>,
        handle: OwnedFd,
        allocation_size: u64,
        placement: Placement,
        shape: ArrayShape,
    ) -> Result<Self> {
        if shape.levels == 0 {
            return Err(Error::invalid("a mipmapped array needs at least one level"));
        }
        let ext = ExternalMemory::import_opaque_fd(
            ctx.clone(),
            handle,
            allocation_size,
            placement.dedicated,
        )?;
        let _g = ctx.enter()?;
        let mut desc = mipmapped_array_desc(&shape);
        desc.offset = placement.offset;
        let mut mipmap = std::ptr::null_mut();
        // On failure `ext` drops and destroys the import.
        cu_check("cuExternalMemoryGetMappedMipmappedArray", unsafe {
            sys::cuExternalMemoryGetMappedMipmappedArray(&mut mipmap, ext.raw(), &desc)
        })?;
        let mut levels = Vec::with_capacity(shape.levels as usize);
        for level in 0..shape.levels {
            let mut array = std::ptr::null_mut();
            let r = unsafe { sys::cuMipmappedArrayGetLevel(&mut array, mipmap, level) };
            if let Err(e) = cu_check("cuMipmappedArrayGetLevel", r) {
                // SAFETY: made above; the import goes with `ext`.
                unsafe { sys::cuMipmappedArrayDestroy(mipmap) };
                return Err(e);
            }
            levels.push(array);
        }
        Ok(MappedImage {
            ctx,
            mipmap,
            levels,
            shape,
            objects: Mutex::new(Objects {
                surfaces: vec![None; shape.levels as usize],
                textures: Vec::new(),
            }),
            _ext: ext,
        })
    }

    pub fn mipmapped_array(&self) -> sys::CUmipmappedArray {
        self.mipmap
    }

    fn check_level(&self, level: u32) -> Result<()> {
        if level >= self.shape.levels {
            return Err(Error::invalid(format!(
                "level {level} is out of range: the image has {} mip levels",
                self.shape.levels
            )));
        }
        Ok(())
    }

    /// The array of one mip level (owned by the mipmapped array; never freed alone).
    pub fn level(&self, level: u32) -> Result<sys::CUarray> {
        self.check_level(level)?;
        Ok(self.levels[level as usize])
    }

    /// The surface object of one level, made on the first call and kept until drop.
    pub fn surface(&self, level: u32) -> Result<sys::CUsurfObject> {
        self.check_level(level)?;
        if self.shape.flags & sys::CUDA_ARRAY3D_SURFACE_LDST == 0 {
            return Err(Error::unsupported(
                "surface objects need an image created with VK_IMAGE_USAGE_STORAGE_BIT (CUDA maps \
                 it with CUDA_ARRAY3D_SURFACE_LDST only then)",
            ));
        }
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = objects.surfaces[level as usize] {
            return Ok(s);
        }
        let array = self.level(level)?;
        let _g = self.ctx.enter()?;
        let res = array_resource(array);
        let mut surf = 0;
        cu_check("cuSurfObjectCreate", unsafe {
            sys::cuSurfObjectCreate(&mut surf, &res)
        })?;
        objects.surfaces[level as usize] = Some(surf);
        Ok(surf)
    }

    /// A new texture object, kept until drop.
    pub fn texture(&self, t: &TextureDesc) -> Result<sys::CUtexObject> {
        if let Some(l) = t.level {
            self.check_level(l)?;
        }
        let res = match t.level {
            Some(l) => array_resource(self.level(l)?),
            None => mipmapped_resource(self.mipmap),
        };
        let tex = texture_desc(t, self.shape.levels);
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let _g = self.ctx.enter()?;
        let mut obj = 0;
        cu_check("cuTexObjectCreate", unsafe {
            sys::cuTexObjectCreate(&mut obj, &res, &tex, std::ptr::null())
        })?;
        objects.textures.push(obj);
        Ok(obj)
    }
}

/// Enqueues on `stream`, for each plane, the copy of `pitched.rows` rows of
/// `pitched.row_bytes` bytes between pitch-linear memory and the image side
/// (`to_target`: into `targets`), one `cuMemcpy2DAsync` each. The caller checked
/// the sizes against the image; here, with `ctx` current, the stream is checked
/// to belong to `ctx` and each range to lie inside an allocation CUDA knows, all
/// before the first copy is enqueued.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn copy_pitched(
    ctx: &CudaContext,
    targets: &[Target],
    pitched: &[Pitched],
    to_target: bool,
    stream: sys::CUstream,
) -> Result<()> {
    let _g = ctx.enter()?;
    ctx.check_stream(stream)?;
    for (i, p) in pitched.iter().enumerate() {
        check_range(ctx, p).map_err(|e| e.context(&format!("plane {i}")))?;
    }
    for (target, p) in targets.iter().zip(pitched) {
        let copy = memcpy2d(*target, p, to_target);
        cu_check("cuMemcpy2DAsync_v2", unsafe {
            sys::cuMemcpy2DAsync_v2(&copy, stream)
        })
        // The stream may be gone (its address reused): check it again next time.
        .inspect_err(|_| ctx.forget_stream(stream))?;
    }
    Ok(())
}

/// Pitch-linear device memory: `rows` rows of `row_bytes` bytes, `pitch` bytes
/// apart, from `pointer`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pitched {
    pub pointer: sys::CUdeviceptr,
    pub pitch: usize,
    pub row_bytes: usize,
    pub rows: usize,
}

impl Pitched {
    /// The bytes from `pointer` to the end of the last row, or None on overflow.
    pub fn span(&self) -> Option<u64> {
        (self.pitch as u64)
            .checked_mul(self.rows.saturating_sub(1) as u64)?
            .checked_add(self.row_bytes as u64)
    }
}

/// Refuses a range that CUDA knows no allocation for (`cuMemGetAddressRange`
/// fails: a host address, a freed or made-up pointer) or that runs past the end
/// of its allocation: the copy would fault on the GPU and leave the context —
/// by default the device's primary context, PyTorch's too — unusable for the
/// rest of the process. A range found is remembered (`CudaContext::known_range`),
/// so the driver is asked once per allocation, not every frame.
fn check_range(ctx: &CudaContext, p: &Pitched) -> Result<()> {
    let span = p.span().ok_or_else(|| {
        Error::invalid(format!(
            "pitch {} x {} rows overflows",
            p.pitch,
            p.rows.saturating_sub(1)
        ))
    })?;
    let end = p.pointer as u128 + span as u128;
    if ctx.known_range(p.pointer, end) {
        return Ok(());
    }
    let (mut base, mut size) = (0, 0usize);
    let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, p.pointer) };
    if r != sys::CUresult::CUDA_SUCCESS {
        if crate::lost::is_sticky(r) {
            return Err(super::error("cuMemGetAddressRange_v2", r));
        }
        return Err(Error::invalid(format!(
            "the pitched plane at {:#x} is in no allocation CUDA knows \
             (cuMemGetAddressRange failed with {r:?}): nothing was copied; pass memory CUDA \
             allocated (cuMemAlloc, cuMemAllocPitch, a decoder's mapped frame, a shared buffer's \
             CUDA pointer), managed memory (cuMemAllocManaged) or page-locked host memory \
             (cuMemAllocHost, cuMemHostRegister; its device pointer)",
            p.pointer
        )));
    }
    let alloc_end = base as u128 + size as u128;
    if end > alloc_end {
        return Err(Error::invalid(format!(
            "the pitched plane at {:#x} ({} rows of {} bytes, pitch {}: {span} bytes) runs {} \
             bytes past the end of its CUDA allocation ({:#x}, {size} bytes)",
            p.pointer,
            p.rows,
            p.row_bytes,
            p.pitch,
            end.saturating_sub(alloc_end),
            base
        )));
    }
    ctx.remember_range(base, size as u64);
    Ok(())
}

/// The image side of a pitched copy: a CUDA array (level 0 of a plane), or a
/// plane of a shared video frame (device memory at a row pitch).
#[derive(Clone, Copy, Debug)]
pub enum Target {
    Array(sys::CUarray),
    Device {
        pointer: sys::CUdeviceptr,
        pitch: usize,
    },
}

// SAFETY: a CUarray is a driver handle, usable from any thread (the driver
// synchronises it); a Target only names it.
unsafe impl Send for Target {}
unsafe impl Sync for Target {}

/// What `cuMemcpy2DAsync` is told (built field by field: `CUmemorytype` has no
/// zero value): `p.rows` rows of `p.row_bytes` between `p` and `target`
/// (`to_array`: into the target).
pub fn memcpy2d(target: Target, p: &Pitched, to_array: bool) -> sys::CUDA_MEMCPY2D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_DEVICE};
    // (memory type, device pointer, array, pitch) of each side.
    let user = (
        CU_MEMORYTYPE_DEVICE,
        p.pointer,
        std::ptr::null_mut(),
        p.pitch,
    );
    let image = match target {
        Target::Array(a) => (CU_MEMORYTYPE_ARRAY, 0, a, 0),
        Target::Device { pointer, pitch } => {
            (CU_MEMORYTYPE_DEVICE, pointer, std::ptr::null_mut(), pitch)
        }
    };
    let (src, dst) = if to_array {
        (user, image)
    } else {
        (image, user)
    };
    sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src.0,
        srcHost: std::ptr::null(),
        srcDevice: src.1,
        srcArray: src.2,
        srcPitch: src.3,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst.0,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst.1,
        dstArray: dst.2,
        dstPitch: dst.3,
        WidthInBytes: p.row_bytes,
        Height: p.rows,
    }
}

// The descriptors are built field by field: several CUDA enums have no zero value,
// so `mem::zeroed()` would make invalid Rust values (and panics at run time).

/// What `cuExternalMemoryGetMappedMipmappedArray` is told.
pub fn mipmapped_array_desc(shape: &ArrayShape) -> sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC {
    sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC {
        offset: 0,
        arrayDesc: sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: shape.width,
            Height: shape.height,
            Depth: shape.depth,
            Format: shape.format,
            NumChannels: shape.channels,
            Flags: shape.flags,
        },
        numLevels: shape.levels,
        reserved: [0; 16],
    }
}

fn resource(
    res: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1,
    ty: sys::CUresourcetype,
) -> sys::CUDA_RESOURCE_DESC {
    sys::CUDA_RESOURCE_DESC {
        resType: ty,
        res,
        flags: 0,
    }
}

fn zeroed_union() -> sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
    sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
        reserved: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_5 { reserved: [0; 32] },
    }
}

/// A resource description of one CUDA array.
pub fn array_resource(array: sys::CUarray) -> sys::CUDA_RESOURCE_DESC {
    let mut u = zeroed_union();
    u.array = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: array };
    resource(u, sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY)
}

/// A resource description of a whole mipmapped array.
pub fn mipmapped_resource(mipmap: sys::CUmipmappedArray) -> sys::CUDA_RESOURCE_DESC {
    let mut u = zeroed_union();
    u.mipmap = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_2 {
        hMipmappedArray: mipmap,
    };
    resource(u, sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
}

/// The texture description of a sampler over an array of `levels` levels.
pub fn texture_desc(t: &TextureDesc, levels: u32) -> sys::CUDA_TEXTURE_DESC {
    let filter = if t.linear {
        sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR
    } else {
        sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT
    };
    let mut flags = 0;
    if t.normalized_coordinates {
        flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
    }
    if t.read_as_integer {
        flags |= sys::CU_TRSF_READ_AS_INTEGER;
    }
    let all_levels = t.level.is_none();
    sys::CUDA_TEXTURE_DESC {
        addressMode: [t.address; 3],
        filterMode: filter,
        flags,
        maxAnisotropy: 0,
        mipmapFilterMode: filter,
        mipmapLevelBias: 0.0,
        minMipmapLevelClamp: 0.0,
        maxMipmapLevelClamp: if all_levels {
            levels.saturating_sub(1) as f32
        } else {
            0.0
        },
        borderColor: t.border_color,
        reserved: [0; 12],
    }
}

impl Drop for MappedImage {
    fn drop(&mut self) {
        // A context the caller destroyed first took the array, its surface and
        // texture objects (and the import below) with it.
        // A lost context (a sticky error) still gets every release call.
        let Some(r) = self.ctx.releasing() else {
            return;
        };
        let objects = std::mem::take(self.objects.get_mut().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: each object was made here on this mipmapped array and is destroyed
        // once; the mipmapped array goes before the import it maps (`ext`, dropped
        // after this body).
        unsafe {
            for t in objects.textures {
                r.result("cuTexObjectDestroy", sys::cuTexObjectDestroy(t));
            }
            for s in objects.surfaces.into_iter().flatten() {
                r.result("cuSurfObjectDestroy", sys::cuSurfObjectDestroy(s));
            }
            r.result(
                "cuMipmappedArrayDestroy",
                sys::cuMipmappedArrayDestroy(self.mipmap),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Builds every descriptor on the CPU: an invalid value (a zeroed enum without a
    // zero variant) would panic here, not on the GPU machine.
    #[test]
    fn descriptors_are_valid_values() {
        let shape = ArrayShape {
            width: 64,
            height: 32,
            depth: 6,
            format: sys::CUarray_format::CU_AD_FORMAT_HALF,
            channels: 4,
            flags: sys::CUDA_ARRAY3D_CUBEMAP | sys::CUDA_ARRAY3D_SURFACE_LDST,
            levels: 3,
        };
        let d = mipmapped_array_desc(&shape);
        assert_eq!(
            (d.arrayDesc.Width, d.arrayDesc.Height, d.arrayDesc.Depth),
            (64, 32, 6)
        );
        assert_eq!(d.arrayDesc.Format, sys::CUarray_format::CU_AD_FORMAT_HALF);
        assert_eq!((d.numLevels, d.offset), (3, 0));
        let a = array_resource(0x1234 as sys::CUarray);
        assert_eq!(a.resType, sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        assert_eq!(unsafe { a.res.array.hArray } as usize, 0x1234);
        let m = mipmapped_resource(0x5678 as sys::CUmipmappedArray);
        assert_eq!(
            m.resType,
            sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        );
        assert_eq!(unsafe { m.res.mipmap.hMipmappedArray } as usize, 0x5678);
        let mut t = TextureDesc {
            level: None,
            linear: true,
            address: sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
            normalized_coordinates: true,
            read_as_integer: false,
            border_color: [1.0, 0.0, 0.0, 1.0],
        };
        let d = texture_desc(&t, 3);
        assert_eq!(d.flags, sys::CU_TRSF_NORMALIZED_COORDINATES);
        assert_eq!(d.maxMipmapLevelClamp, 2.0);
        assert_eq!(d.filterMode, sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR);
        t.level = Some(1);
        t.read_as_integer = true;
        t.linear = false;
        let d = texture_desc(&t, 3);
        assert_eq!(
            d.flags,
            sys::CU_TRSF_NORMALIZED_COORDINATES | sys::CU_TRSF_READ_AS_INTEGER
        );
        assert_eq!(d.maxMipmapLevelClamp, 0.0);
    }

    #[test]
    fn pitched_copies_go_both_ways() {
        let p = Pitched {
            pointer: 0x1000,
            pitch: 2048,
            row_bytes: 1920,
            rows: 1080,
        };
        assert_eq!(p.span(), Some(2048 * 1079 + 1920));
        let a = 0x77 as sys::CUarray;
        let to = memcpy2d(Target::Array(a), &p, true);
        assert_eq!(to.srcMemoryType, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
        assert_eq!((to.srcDevice, to.srcPitch), (0x1000, 2048));
        assert_eq!(to.dstMemoryType, sys::CUmemorytype::CU_MEMORYTYPE_ARRAY);
        assert_eq!(to.dstArray, a);
        assert_eq!((to.WidthInBytes, to.Height), (1920, 1080));
        let from = memcpy2d(Target::Array(a), &p, false);
        assert_eq!(from.srcArray, a);
        assert_eq!((from.dstDevice, from.dstPitch), (0x1000, 2048));
        assert!(from.srcHost.is_null() && from.dstHost.is_null());
        // A video frame's plane: device memory on both sides, each with its pitch.
        let plane = Target::Device {
            pointer: 0x9000,
            pitch: 2304,
        };
        let into = memcpy2d(plane, &p, true);
        assert_eq!(into.dstMemoryType, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
        assert_eq!((into.dstDevice, into.dstPitch), (0x9000, 2304));
        assert_eq!((into.srcDevice, into.srcPitch), (0x1000, 2048));
        assert!(into.dstArray.is_null() && into.srcArray.is_null());
        let out = memcpy2d(plane, &p, false);
        assert_eq!((out.srcDevice, out.srcPitch), (0x9000, 2304));
        assert_eq!((out.dstDevice, out.dstPitch), (0x1000, 2048));
        let huge = Pitched {
            pitch: usize::MAX,
            rows: 3,
            ..p
        };
        assert_eq!(huge.span(), None);
    }
}
