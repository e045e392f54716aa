//! Batches: the per-frame cost of handing N rendered cameras to CUDA as one
//! tensor, in one run on the same device, queue, CUDA context and stream:
//!
//! - `zero-copy`: a LINEAR image batch (`vkcuda::batch`, where the device allows
//!   it): each frame records the batch's acquire and release (one barrier each);
//! - `copy`: the same batch forced onto the copy path: the readout region's
//!   acquire, then the release (a barrier, one `vkCmdCopyImageToBuffer` per image,
//!   a barrier);
//! - `raw N copies`: SAPIEN's pattern written with raw Vulkan calls: N OPTIMAL
//!   images of their own memory and one exported buffer; each frame the buffer's
//!   acquire, a barrier, N copies into the buffer, its release.
//!
//! Each frame: the command buffer is recorded, submitted (waiting for the last
//! frame's CUDA signal on a timeline semaphore, signalling the next value), the
//! CUDA stream waits for that value and signals the next, and the host waits for
//! it. The render itself is not in the frame (the same for every variant), so
//! the figures are the handoff's cost. Medians over the frames; the ratios are
//! against the cheapest raw alternative measured here (Isaac Lab's tiled image and
//! reshape kernel is not measured).
//!
//! `cargo bench -p vkcuda-c --bench batch` on a GPU; `-- --quick` runs a few frames of small
//! sizes, and without CUDA (lavapipe) it times the Vulkan submit alone with a
//! fence.

#[path = "../capi/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use support::{median, Vk};
use vkcuda::batch::{Batch, Description, Path};
use vkcuda::context::CudaChoice;
use vkcuda::handoff::Scope;
use vkcuda::semaphore::Kind;
use vkcuda::{Context, Semaphore};

const RGBA8: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// How a frame waits: a timeline shared with CUDA (the GPU), or a fence (no CUDA).
enum Sync {
    Timeline {
        sem: Semaphore,
        stream: cudarc::driver::sys::CUstream,
        value: u64,
    },
    Fence(vk::Fence),
}

impl Sync {
    /// Submits `cmd` and waits for the frame (Vulkan, then CUDA's wait and signal).
    fn frame(&mut self, v: &Vk, cmd: vk::CommandBuffer) {
        match self {
            Sync::Timeline { sem, stream, value } => {
                let vs = sem.vk_semaphore();
                v.submit_timeline(&[(vs, *value)], &[(vs, *value + 1)], cmd, vk::Fence::null());
                sem.cuda_wait(*value + 1, *stream).unwrap();
                sem.cuda_signal(*value + 2, *stream).unwrap();
                sem.host_wait(*value + 2, Duration::from_secs(30)).unwrap();
                *value += 2;
            }
            Sync::Fence(f) => unsafe {
                let cmds = [cmd];
                v.device
                    .queue_submit(
                        v.queue,
                        &[vk::SubmitInfo::default().command_buffers(&cmds)],
                        *f,
                    )
                    .unwrap();
                v.device.wait_for_fences(&[*f], true, u64::MAX).unwrap();
                v.device.reset_fences(&[*f]).unwrap();
            },
        }
    }
}

/// Times `frames` frames recorded by `record(cmd, frame)`: microseconds each.
fn frames(
    v: &Vk,
    sync: &mut Sync,
    n: usize,
    mut record: impl FnMut(vk::CommandBuffer, usize),
) -> Vec<f64> {
    let cmd = v.command_buffer();
    unsafe { v.device.end_command_buffer(cmd) }.unwrap();
    let mut out = Vec::with_capacity(n);
    for frame in 0..n {
        let t = Instant::now();
        unsafe {
            v.device
                .reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .unwrap();
            v.device
                .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
        }
        record(cmd, frame);
        unsafe { v.device.end_command_buffer(cmd) }.unwrap();
        sync.frame(v, cmd);
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    unsafe { v.device.free_command_buffers(v.pool, &[cmd]) };
    out
}

fn memory_type(v: &Vk, bits: u32) -> u32 {
    let props = unsafe { v.instance.get_physical_device_memory_properties(v.physical) };
    (0..props.memory_type_count)
        .find(|&i| {
            bits & (1 << i) != 0
                && props.memory_types[i as usize]
                    .property_flags
                    .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
        })
        .expect("a device-local memory type")
}

/// SAPIEN's pattern, raw: N images with memory of their own, one exported buffer.
struct Raw {
    images: Vec<(vk::Image, vk::DeviceMemory)>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
}

impl Raw {
    fn new(v: &Vk, n: u32, w: u32, h: u32) -> Raw {
        let d = &v.device;
        let images = (0..n)
            .map(|_| unsafe {
                let image = d
                    .create_image(
                        &vk::ImageCreateInfo::default()
                            .image_type(vk::ImageType::TYPE_2D)
                            .format(RGBA8)
                            .extent(vk::Extent3D {
                                width: w,
                                height: h,
                                depth: 1,
                            })
                            .mip_levels(1)
                            .array_layers(1)
                            .samples(vk::SampleCountFlags::TYPE_1)
                            .tiling(vk::ImageTiling::OPTIMAL)
                            .usage(
                                vk::ImageUsageFlags::COLOR_ATTACHMENT
                                    | vk::ImageUsageFlags::TRANSFER_SRC,
                            ),
                        None,
                    )
                    .unwrap();
                let r = d.get_image_memory_requirements(image);
                let memory = d
                    .allocate_memory(
                        &vk::MemoryAllocateInfo::default()
                            .allocation_size(r.size)
                            .memory_type_index(memory_type(v, r.memory_type_bits)),
                        None,
                    )
                    .unwrap();
                d.bind_image_memory(image, memory, 0).unwrap();
                (image, memory)
            })
            .collect();
        let size = u64::from(n) * u64::from(w * h * 4);
        let mut ext = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let buffer = unsafe {
            d.create_buffer(
                &vk::BufferCreateInfo::default()
                    .size(size)
                    .usage(vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC)
                    .push_next(&mut ext),
                None,
            )
        }
        .unwrap();
        let r = unsafe { d.get_buffer_memory_requirements(buffer) };
        let mut export = vk::ExportMemoryAllocateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        let mut ded = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let memory = unsafe {
            d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(r.size)
                    .memory_type_index(memory_type(v, r.memory_type_bits))
                    .push_next(&mut export)
                    .push_next(&mut ded),
                None,
            )
        }
        .unwrap();
        unsafe { d.bind_buffer_memory(buffer, memory, 0) }.unwrap();
        Raw {
            images,
            buffer,
            memory,
            size,
        }
    }

    /// One frame: the buffer back from CUDA (after the first), the images to
    /// TRANSFER_SRC, N copies, the buffer to CUDA.
    fn record(&self, v: &Vk, cmd: vk::CommandBuffer, frame: usize, w: u32, h: u32) {
        let d = &v.device;
        let range = vk::ImageSubresourceRange {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: 1,
        };
        let old = if frame == 0 {
            vk::ImageLayout::UNDEFINED
        } else {
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL
        };
        let images: Vec<_> = self
            .images
            .iter()
            .map(|&(image, _)| {
                vk::ImageMemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                    .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
                    .old_layout(old)
                    .new_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .image(image)
                    .subresource_range(range)
            })
            .collect();
        let buffer_barrier = |release: bool| {
            let (src, dst) = if release {
                (v.family, vk::QUEUE_FAMILY_EXTERNAL)
            } else {
                (vk::QUEUE_FAMILY_EXTERNAL, v.family)
            };
            vk::BufferMemoryBarrier::default()
                .src_access_mask(if release {
                    vk::AccessFlags::TRANSFER_WRITE
                } else {
                    vk::AccessFlags::empty()
                })
                .dst_access_mask(if release {
                    vk::AccessFlags::empty()
                } else {
                    vk::AccessFlags::TRANSFER_WRITE
                })
                .src_queue_family_index(src)
                .dst_queue_family_index(dst)
                .buffer(self.buffer)
                .offset(0)
                .size(self.size)
        };
        let acquire = [buffer_barrier(false)];
        unsafe {
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[],
                if frame == 0 { &[] } else { &acquire },
                &images,
            );
            let elem = u64::from(w * h * 4);
            for (i, &(image, _)) in self.images.iter().enumerate() {
                d.cmd_copy_image_to_buffer(
                    cmd,
                    image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    self.buffer,
                    &[vk::BufferImageCopy::default()
                        .buffer_offset(i as u64 * elem)
                        .image_subresource(vk::ImageSubresourceLayers {
                            aspect_mask: vk::ImageAspectFlags::COLOR,
                            mip_level: 0,
                            base_array_layer: 0,
                            layer_count: 1,
                        })
                        .image_extent(vk::Extent3D {
                            width: w,
                            height: h,
                            depth: 1,
                        })],
                );
            }
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                vk::DependencyFlags::empty(),
                &[],
                &[buffer_barrier(true)],
                &[],
            );
        }
    }

    fn destroy(self, v: &Vk) {
        unsafe {
            for (image, memory) in self.images {
                v.device.destroy_image(image, None);
                v.device.free_memory(memory, None);
            }
            v.device.destroy_buffer(self.buffer, None);
            v.device.free_memory(self.memory, None);
        }
    }
}

/// A batch's frames: acquire (after the first frame), release.
fn batch_frames(v: &Vk, sync: &mut Sync, b: &Batch, n: usize) -> Vec<f64> {
    let scope = Scope::new(v.family);
    let copy = b.info().path == Path::Copy;
    frames(v, sync, n, |cmd, frame| unsafe {
        let layout = match (frame, copy) {
            (0, _) => vk::ImageLayout::UNDEFINED,
            (_, true) => vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            (_, false) => vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        };
        if frame > 0 {
            if copy {
                b.cmd_acquire_readout_from_cuda(cmd, &scope).unwrap();
            } else {
                b.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .unwrap();
            }
        }
        b.cmd_release_to_cuda(cmd, &scope, layout).unwrap();
    })
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (ctx, cuda): (Arc<Context>, bool) = match Context::standalone(None, CudaChoice::Primary) {
        Ok(c) => (c, true),
        Err(e) => {
            println!("no CUDA ({e}): the Vulkan submits alone, with a fence");
            (Context::standalone(None, CudaChoice::None).unwrap(), false)
        }
    };
    let v = Vk::of(&ctx);
    let mut sync = if cuda {
        let c = support::cuda::Cuda::of_context(&ctx);
        c.enter();
        let mut stream = std::ptr::null_mut();
        support::cuda::check(unsafe { cudarc::driver::sys::cuStreamCreate(&mut stream, 1) });
        c.leave();
        Sync::Timeline {
            sem: Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap(),
            stream,
            value: 0,
        }
    } else {
        Sync::Fence(
            unsafe { v.device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap(),
        )
    };
    let counts: &[u32] = if quick {
        &[1, 16]
    } else {
        &[1, 16, 64, 256, 1024]
    };
    let sizes: &[(u32, u32)] = if quick {
        &[(128, 128)]
    } else {
        &[(128, 128), (640, 480)]
    };
    let n_frames = if quick { 5 } else { 100 };
    println!("batch handoff per frame (us, medians of {n_frames} frames): RGBA8");
    println!(
        "{:>5} {:>9} {:>11} {:>11} {:>13} {:>13} {:>13}",
        "N", "size", "zero-copy", "copy", "raw N copies", "zero/raw", "copy/raw"
    );
    for &(w, h) in sizes {
        for &n in counts {
            let zero = Batch::create(&ctx, &Description::images(n, RGBA8, w, h)).unwrap();
            let path = zero.info().path;
            let mut z = batch_frames(&v, &mut sync, &zero, n_frames);
            drop(zero);
            let forced = Batch::create(
                &ctx,
                &Description {
                    force_copy: true,
                    ..Description::images(n, RGBA8, w, h)
                },
            )
            .unwrap();
            let mut c = batch_frames(&v, &mut sync, &forced, n_frames);
            drop(forced);
            let raw = Raw::new(&v, n, w, h);
            let mut r = frames(&v, &mut sync, n_frames, |cmd, frame| {
                raw.record(&v, cmd, frame, w, h)
            });
            raw.destroy(&v);
            let (z, c, r) = (median(&mut z), median(&mut c), median(&mut r));
            println!(
                "{n:>5} {:>9} {z:>11.1} {c:>11.1} {r:>13.1} {:>13.3} {:>13.3}{}",
                format!("{w}x{h}"),
                z / r,
                c / r,
                if path == Path::ZeroCopy {
                    ""
                } else {
                    "  (zero-copy refused: copy path)"
                }
            );
        }
    }
    match sync {
        Sync::Fence(f) => unsafe { v.device.destroy_fence(f, None) },
        Sync::Timeline { stream, .. } => {
            let c = support::cuda::Cuda::of_context(&ctx);
            c.enter();
            support::cuda::check(unsafe { cudarc::driver::sys::cuStreamDestroy_v2(stream) });
            c.leave();
        }
    }
}
