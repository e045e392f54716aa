//! The shared resources as the round trip sees them ([`Subject`]): where their
//! bytes sit in the packed form both sides copy, the Vulkan copies recorded
//! around the library's release and acquire barriers, and CUDA's copies
//! (`cuMemcpyHtoD`/`DtoH` for buffers, `cuMemcpy3D` per level array of an image,
//! `cuMemcpy2D` per plane of a video frame).

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys;

use super::table::ImageCase;
use crate::buffer::Buffer;
use crate::context::Context;
use crate::cuda;
use crate::cuda::cu_check;
use crate::error::Result;
use crate::handoff::Scope;
use crate::image::Image;

/// A part of the packed bytes: one level of an image (every layer), one plane of
/// a frame, or a whole buffer.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    pub(crate) offset: usize,
    pub(crate) len: usize,
    /// Bytes per row, to say where a wrong byte is (0: a buffer).
    pub(crate) row_bytes: usize,
    pub(crate) name: String,
}

/// What a subject records its barriers with: the device and the lab's queue family.
pub(crate) struct Hand {
    pub(crate) scope: Scope,
}

/// A shared resource as the round trip sees it.
pub(crate) trait Subject {
    /// Where the bytes sit in the packed form both sides copy.
    fn regions(&self) -> &[Region];
    /// Records: staging -> resource, then the release to CUDA.
    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer);
    /// Records: the acquire from CUDA, then resource -> staging.
    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer);
    /// CUDA writes the packed bytes into the resource.
    fn cuda_write(&self, host: &[u8]) -> Result<()>;
    /// CUDA reads the resource into the packed bytes.
    fn cuda_read(&self, host: &mut [u8]) -> Result<()>;
}

pub(crate) fn packed_size(regions: &[Region]) -> usize {
    regions.iter().map(|r| r.offset + r.len).max().unwrap_or(0)
}

fn cuda_ctx(ctx: &Context) -> Result<&Arc<cuda::CudaContext>> {
    ctx.cuda()
}

pub(crate) struct BufferSubject {
    pub(crate) buffer: Buffer,
    pub(crate) regions: Vec<Region>,
}

impl Subject for BufferSubject {
    fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let size = self.regions[0].len as u64;
        // SAFETY: recording into the lab's command buffer.
        unsafe {
            d.cmd_copy_buffer(
                cmd,
                staging,
                self.buffer.vk_buffer(),
                &[vk::BufferCopy::default().size(size)],
            );
            self.buffer
                .cmd_release_to_cuda(cmd, &h.scope)
                .expect("the lab's own buffer and scope");
        }
    }

    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let size = self.regions[0].len as u64;
        // SAFETY: as above.
        unsafe {
            self.buffer
                .cmd_acquire_from_cuda(cmd, &h.scope)
                .expect("the lab's own buffer and scope");
            d.cmd_copy_buffer(
                cmd,
                self.buffer.vk_buffer(),
                staging,
                &[vk::BufferCopy::default().size(size)],
            );
        }
    }

    fn cuda_write(&self, host: &[u8]) -> Result<()> {
        let ptr = self.buffer.cuda_ptr()?;
        let _g = cuda_ctx(self.buffer.context())?.enter()?;
        // SAFETY: the buffer is `host.len()` bytes; the symbols were checked.
        cu_check("cuMemcpyHtoD_v2", unsafe {
            sys::cuMemcpyHtoD_v2(ptr, host.as_ptr().cast(), host.len())
        })?;
        cu_check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    fn cuda_read(&self, host: &mut [u8]) -> Result<()> {
        let ptr = self.buffer.cuda_ptr()?;
        let _g = cuda_ctx(self.buffer.context())?.enter()?;
        // SAFETY: as above.
        cu_check("cuMemcpyDtoH_v2", unsafe {
            sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), ptr, host.len())
        })
    }
}

/// An image or a video frame: copies per level (every layer) or per plane.
pub(crate) struct ImageSubject {
    image: Image,
    pub(crate) regions: Vec<Region>,
    copies: Vec<vk::BufferImageCopy>,
    /// Per region: (width, height, depth x layers) in texels for CUDA's copies.
    extents: Vec<(usize, usize, usize)>,
    /// 1D layered: CUDA's layers are its "depth" with a height of 1.
    layout: vk::ImageLayout,
}

fn level_extent(c: &ImageCase, l: u32) -> (u32, u32, u32) {
    (
        (c.width >> l).max(1),
        (c.height >> l).max(1),
        (c.depth >> l).max(1),
    )
}

impl ImageSubject {
    pub(crate) fn of_image(image: Image, c: &ImageCase) -> ImageSubject {
        let levels = image.description().mip_levels;
        let bpt = image.format_info().bytes_per_texel() as usize;
        let (mut regions, mut copies, mut extents) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = 0usize;
        for l in 0..levels {
            let (w, h, dd) = level_extent(c, l);
            let len = w as usize * h as usize * dd as usize * c.layers as usize * bpt;
            regions.push(Region {
                offset,
                len,
                row_bytes: w as usize * bpt,
                name: format!("level {l} ({w}x{h}x{dd}, {} layer(s))", c.layers),
            });
            copies.push(
                vk::BufferImageCopy::default()
                    .buffer_offset(offset as u64)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: l,
                        base_array_layer: 0,
                        layer_count: c.layers,
                    })
                    .image_extent(vk::Extent3D {
                        width: w,
                        height: h,
                        depth: dd,
                    }),
            );
            extents.push((w as usize, h as usize, (dd * c.layers) as usize));
            offset = (offset + len).next_multiple_of(16);
        }
        ImageSubject {
            image,
            regions,
            copies,
            extents,
            layout: vk::ImageLayout::UNDEFINED,
        }
    }

    pub(crate) fn of_frame(image: Image) -> Result<ImageSubject> {
        let (mut regions, mut copies, mut extents) = (Vec::new(), Vec::new(), Vec::new());
        let mut offset = 0usize;
        for p in 0..image.plane_count() {
            let pp = image.plane_pointer(p)?;
            let row = pp.width as usize * pp.bytes_per_texel as usize;
            let len = row * pp.height as usize;
            regions.push(Region {
                offset,
                len,
                row_bytes: row,
                name: format!(
                    "plane {p} ({}x{}, {} byte(s) per texel, row pitch {})",
                    pp.width, pp.height, pp.bytes_per_texel, pp.layout.row_pitch
                ),
            });
            copies.push(
                vk::BufferImageCopy::default()
                    .buffer_offset(offset as u64)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: image.plane_aspect(p),
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D {
                        width: pp.width,
                        height: pp.height,
                        depth: 1,
                    }),
            );
            extents.push((pp.width as usize, pp.height as usize, 1));
            offset = (offset + len).next_multiple_of(16);
        }
        Ok(ImageSubject {
            image,
            regions,
            copies,
            extents,
            layout: vk::ImageLayout::UNDEFINED,
        })
    }

    fn range(&self) -> vk::ImageSubresourceRange {
        self.image.handoff_range(vk::ImageLayout::GENERAL).range
    }

    /// One copy of level `l` (every layer or slice) between host bytes and its array.
    fn memcpy3d(&self, l: usize, host: *mut u8, to_array: bool) -> Result<()> {
        let array = self.image.level_array(0, l as u32)?;
        let (w, h, depth) = self.extents[l];
        let bpt = self.image.format_info().bytes_per_texel() as usize;
        let row = w * bpt;
        let host_side = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, row, h);
        let array_side = (sys::CUmemorytype::CU_MEMORYTYPE_ARRAY, 0, 0);
        let (src, dst) = if to_array {
            (host_side, array_side)
        } else {
            (array_side, host_side)
        };
        let p = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: src.0,
            srcHost: if to_array {
                host.cast_const().cast()
            } else {
                ptr::null()
            },
            srcDevice: 0,
            srcArray: if to_array { ptr::null_mut() } else { array },
            reserved0: ptr::null_mut(),
            srcPitch: src.1,
            srcHeight: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: dst.0,
            dstHost: if to_array {
                ptr::null_mut()
            } else {
                host.cast::<c_void>()
            },
            dstDevice: 0,
            dstArray: if to_array { array } else { ptr::null_mut() },
            reserved1: ptr::null_mut(),
            dstPitch: dst.1,
            dstHeight: dst.2,
            WidthInBytes: row,
            Height: h,
            Depth: depth,
        };
        // SAFETY: the host range is the level's packed bytes; the symbol was checked.
        cu_check("cuMemcpy3D_v2", unsafe { sys::cuMemcpy3D_v2(&p) })
    }

    /// One copy of plane `p` between host bytes and its pitched device memory.
    fn memcpy2d(&self, p: usize, host: *mut u8, to_device: bool) -> Result<()> {
        let pp = self.image.plane_pointer(p)?;
        let row = pp.width as usize * pp.bytes_per_texel as usize;
        use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
        let device = (
            CU_MEMORYTYPE_DEVICE,
            pp.pointer,
            pp.layout.row_pitch as usize,
        );
        let hostside = (CU_MEMORYTYPE_HOST, 0, row);
        let (src, dst) = if to_device {
            (hostside, device)
        } else {
            (device, hostside)
        };
        let c = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src.0,
            srcHost: if to_device {
                host.cast_const().cast()
            } else {
                ptr::null()
            },
            srcDevice: src.1,
            srcArray: ptr::null_mut(),
            srcPitch: src.2,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst.0,
            dstHost: if to_device {
                ptr::null_mut()
            } else {
                host.cast::<c_void>()
            },
            dstDevice: dst.1,
            dstArray: ptr::null_mut(),
            dstPitch: dst.2,
            WidthInBytes: row,
            Height: pp.height as usize,
        };
        // SAFETY: as for memcpy3d; the plane lies inside the mapped allocation.
        cu_check("cuMemcpy2D_v2", unsafe { sys::cuMemcpy2D_v2(&c) })
    }

    fn cuda_copy(&self, host: *mut u8, to_image: bool) -> Result<()> {
        let _g = cuda_ctx(self.image.context())?.enter()?;
        for (i, r) in self.regions.iter().enumerate() {
            // SAFETY: `host` is the packed buffer; `r` lies inside it.
            let at = unsafe { host.add(r.offset) };
            if self.image.is_frame() {
                self.memcpy2d(i, at, to_image)?;
            } else {
                self.memcpy3d(i, at, to_image)?;
            }
        }
        cu_check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }
}

impl Subject for ImageSubject {
    fn regions(&self) -> &[Region] {
        &self.regions
    }

    fn upload(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let dst = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
        let all = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
        // SAFETY: recording into the lab's command buffer.
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &[vk::ImageMemoryBarrier::default()
                    .src_access_mask(all)
                    .dst_access_mask(all)
                    .old_layout(self.layout)
                    .new_layout(dst)
                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .image(self.image.vk_image())
                    .subresource_range(self.range())],
            );
            d.cmd_copy_buffer_to_image(cmd, staging, self.image.vk_image(), dst, &self.copies);
            self.image
                .cmd_release_to_cuda(cmd, &h.scope, dst)
                .expect("the lab's own image, scope and layout");
        }
        self.layout = vk::ImageLayout::GENERAL;
    }

    fn download(&mut self, h: &Hand, d: &ash::Device, cmd: vk::CommandBuffer, staging: vk::Buffer) {
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        // SAFETY: as above.
        unsafe {
            self.image
                .cmd_acquire_from_cuda(cmd, &h.scope, src)
                .expect("the lab's own image, scope and layout");
            d.cmd_copy_image_to_buffer(cmd, self.image.vk_image(), src, staging, &self.copies);
        }
        self.layout = src;
    }

    fn cuda_write(&self, host: &[u8]) -> Result<()> {
        self.cuda_copy(host.as_ptr().cast_mut(), true)
    }

    fn cuda_read(&self, host: &mut [u8]) -> Result<()> {
        self.cuda_copy(host.as_mut_ptr(), false)
    }
}
