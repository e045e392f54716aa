//! Vulkan image memory seen by CUDA: the import mapped as a mipmapped array
//! (`cuExternalMemoryGetMappedMipmappedArray`), its level arrays, and the surface
//! and texture objects made on it.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::external::ExternalMemory;
use super::CudaContext;
use crate::error::{cu_check, Error, Result};

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
    shape: ArrayShape,
    objects: Mutex<Objects>,
    // Dropped last (after `Drop::drop` released everything made from it).
    ext: ExternalMemory,
}

// SAFETY: CUDA handles are usable from any thread; the object lists are locked.
unsafe impl Send for MappedImage {}
unsafe impl Sync for MappedImage {}

impl MappedImage {
    /// Imports a dedicated `OPAQUE_FD` of `allocation_size` bytes (the whole
    /// allocation) and maps it as a mipmapped array of `shape` at offset 0. The fd
    /// is always gone afterwards (taken by CUDA on success, closed on failure).
    pub fn import(
        ctx: Arc<CudaContext>,
        handle: OwnedFd,
        allocation_size: u64,
        shape: ArrayShape,
    ) -> Result<Self> {
        if shape.levels == 0 {
            return Err(Error::invalid("a mipmapped array needs at least one level"));
        }
        let ext = ExternalMemory::import_opaque_fd(ctx.clone(), handle, allocation_size, true)?;
        let _g = ctx.enter()?;
        // SAFETY: all-zero is a valid descriptor; the fields that matter are set below.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC =
            unsafe { std::mem::zeroed() };
        desc.offset = 0;
        desc.arrayDesc = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: shape.width,
            Height: shape.height,
            Depth: shape.depth,
            Format: shape.format,
            NumChannels: shape.channels,
            Flags: shape.flags,
        };
        desc.numLevels = shape.levels;
        let mut mipmap = std::ptr::null_mut();
        // On failure `ext` drops and destroys the import.
        cu_check("cuExternalMemoryGetMappedMipmappedArray", unsafe {
            sys::cuExternalMemoryGetMappedMipmappedArray(&mut mipmap, ext.raw(), &desc)
        })?;
        Ok(MappedImage {
            ctx,
            mipmap,
            shape,
            objects: Mutex::new(Objects {
                surfaces: vec![None; shape.levels as usize],
                textures: Vec::new(),
            }),
            ext,
        })
    }

    pub fn mipmapped_array(&self) -> sys::CUmipmappedArray {
        self.mipmap
    }

    pub fn shape(&self) -> &ArrayShape {
        &self.shape
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
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
        let _g = self.ctx.enter()?;
        let mut array = std::ptr::null_mut();
        cu_check("cuMipmappedArrayGetLevel", unsafe {
            sys::cuMipmappedArrayGetLevel(&mut array, self.mipmap, level)
        })?;
        Ok(array)
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
        // SAFETY: all-zero is valid; the array resource is set below.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
        res.res.array.hArray = array;
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
        // SAFETY: all-zero is valid for both descriptors.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        match t.level {
            Some(l) => {
                res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
                res.res.array.hArray = self.level(l)?;
            }
            None => {
                res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
                res.res.mipmap.hMipmappedArray = self.mipmap;
            }
        }
        let mut tex: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        tex.addressMode = [t.address; 3];
        let filter = if t.linear {
            sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR
        } else {
            sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT
        };
        tex.filterMode = filter;
        tex.flags = 0;
        if t.normalized_coordinates {
            tex.flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
        }
        if t.read_as_integer {
            tex.flags |= sys::CU_TRSF_READ_AS_INTEGER;
        }
        if t.level.is_none() {
            tex.mipmapFilterMode = filter;
            tex.maxMipmapLevelClamp = (self.shape.levels - 1) as f32;
        }
        tex.borderColor = t.border_color;
        let mut objects = self.objects.lock().unwrap_or_else(|p| p.into_inner());
        let _g = self.ctx.enter()?;
        let mut obj = 0;
        cu_check("cuTexObjectCreate", unsafe {
            sys::cuTexObjectCreate(&mut obj, &res, &tex, std::ptr::null())
        })?;
        objects.textures.push(obj);
        Ok(obj)
    }

    /// The import this array maps.
    pub fn external_memory(&self) -> &ExternalMemory {
        &self.ext
    }
}

impl Drop for MappedImage {
    fn drop(&mut self) {
        let _g = self.ctx.enter();
        let objects = std::mem::take(self.objects.get_mut().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: each object was made here on this mipmapped array and is destroyed
        // once; the mipmapped array goes before the import it maps (`ext`, dropped
        // after this body).
        unsafe {
            for t in objects.textures {
                sys::cuTexObjectDestroy(t);
            }
            for s in objects.surfaces.into_iter().flatten() {
                sys::cuSurfObjectDestroy(s);
            }
            sys::cuMipmappedArrayDestroy(self.mipmap);
        }
    }
}
