//! Batches: what handing N rendered cameras to CUDA as one tensor costs, in one run
//! on the same device, queue, CUDA context and stream. Three tables:
//!
//! 1. **Handoff per frame**, RGBA8 and D32_SFLOAT (the depth case), N in {1, 16, 64,
//!    256, 1024}, 128x128 and 640x480:
//!    - `zero-copy`: a LINEAR image batch (`vkcuda::batch`, where the device allows
//!      it): each frame records the batch's acquire and release (one barrier each);
//!    - `zero STORAGE`: the same for a compute renderer's batch (usage STORAGE |
//!      TRANSFER_SRC | TRANSFER_DST, images in GENERAL: Madrona's and Genesis's
//!      batch renderers write their views from compute or ray-tracing shaders),
//!      zero-copy where the device has LINEAR storage images (NVIDIA's LINEAR tiling
//!      has no colour attachment, so a rendered batch there takes the copy path);
//!      "n/a" for the depth format;
//!    - `copy`: the same batch forced onto the copy path: the readout region's
//!      acquire, then the release (a barrier, one `vkCmdCopyImageToBuffer` per image,
//!      a barrier);
//!    - `raw N copies`: SAPIEN's pattern written with raw Vulkan calls: N OPTIMAL
//!      images of their own memory and one buffer shared with CUDA; each frame the
//!      buffer's acquire, a barrier, N copies into the buffer, its release;
//!    - `raw layered`: the N views as the N layers of ONE OPTIMAL 2D-array image
//!      (what Madrona's batch renderer draws into), one copy of all layers into the
//!      buffer shared with CUDA: the layers land as the [N, H, W, C] tensor, no
//!      reshape; the device's `maxImageArrayLayers` bounds N;
//!    - `tiled+reshape`: Isaac Lab's pattern (TiledCamera): the N views as tiles of ONE
//!      OPTIMAL image (as square a grid as the device's largest image allows; "n/a"
//!      where none fits), one copy of it into a buffer shared with CUDA, then a CUDA
//!      kernel (bench/tiled_reshape.cu, its PTX from ptx/) that rearranges the tiles
//!      into an [N, H, W] tensor in CUDA memory.
//!
//!    Each frame: the command buffer is recorded, submitted (waiting for the last
//!    frame's CUDA signal on a timeline semaphore, signalling the next value), the
//!    CUDA stream waits for that value, runs the variant's kernel (tiled+reshape
//!    only) and signals the next, and the host waits for it: the time until the
//!    tensor is ready. The render itself is not in the frame (the same for every
//!    variant). The ratios are against the cheaper of the two raw alternatives.
//! 2. **Render cost**: N full-screen draws (the c_examples/batch_cameras shaders,
//!    seen from inside the cube: one face covers every pixel), one render pass per
//!    image, into the zero-copy batch's LINEAR images and into the copy batch's
//!    OPTIMAL ones; submit to fence, the same recorded command buffer each frame.
//! 3. **Memory per element**: the data, and what each path's allocation spends per
//!    element (alignment of the images, the copy path's readout region).
//!
//! Medians over the frames. `cargo bench -p vkcuda-c --bench batch` on a GPU;
//! `-- --quick` runs a few frames of small sizes, and without CUDA (lavapipe) it times
//! the Vulkan submits alone with a fence (no kernel).

#[path = "../capi/tests/support/mod.rs"]
mod support;

use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys as cu;
use support::{device_local_image, image_2d, median, Vk};
use vkcuda::batch::{Batch, Description, Path};
use vkcuda::buffer::Allocator;
use vkcuda::context::CudaChoice;
use vkcuda::handoff::Scope;
use vkcuda::semaphore::Kind;
use vkcuda::{Buffer, Context, Semaphore};

const RGBA8: vk::Format = vk::Format::R8G8B8A8_UNORM;
const D32: vk::Format = vk::Format::D32_SFLOAT;
/// Isaac Lab's reshape kernel (bench/tiled_reshape.cu), NUL-terminated for the driver.
const RESHAPE_PTX: &str = concat!(include_str!("../ptx/tiled_reshape.ptx"), "\0");

/// The SPIR-V words of a header made by cmake/vkcudaSpirvHeader.cmake.
fn spirv_words(header: &str) -> Vec<u32> {
    let body = &header[header.find("[] = {").unwrap()..];
    body[..body.find("};").unwrap()]
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(|t| t.strip_prefix("0x"))
        .map(|t| u32::from_str_radix(t, 16).unwrap())
        .collect()
}

/// How a frame waits: a timeline shared with CUDA (the GPU), or a fence (no CUDA).
enum Sync {
    Timeline {
        sem: Semaphore,
        stream: cu::CUstream,
        value: u64,
    },
    Fence(vk::Fence),
}

impl Sync {
    /// Submits `cmd` and waits for the frame: Vulkan, then on the CUDA stream the
    /// wait, `cuda` (the consumer's kernel, if any) and the signal.
    fn frame(&mut self, v: &Vk, cmd: vk::CommandBuffer, cuda: Option<&dyn Fn(cu::CUstream)>) {
        match self {
            Sync::Timeline { sem, stream, value } => {
                let vs = sem.vk_semaphore();
                v.submit_timeline(&[(vs, *value)], &[(vs, *value + 1)], cmd, vk::Fence::null());
                sem.cuda_wait(*value + 1, *stream).unwrap();
                if let Some(kernel) = cuda {
                    kernel(*stream);
                }
                sem.cuda_signal(*value + 2, *stream).unwrap();
                sem.host_wait(*value + 2, Duration::from_secs(30)).unwrap();
                *value += 2;
            }
            Sync::Fence(f) => fence_submit(v, cmd, *f),
        }
    }
}

/// Submits `cmd` and waits for `fence`.
fn fence_submit(v: &Vk, cmd: vk::CommandBuffer, fence: vk::Fence) {
    let cmds = [cmd];
    unsafe {
        v.device
            .queue_submit(
                v.queue,
                &[vk::SubmitInfo::default().command_buffers(&cmds)],
                fence,
            )
            .unwrap();
        v.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
        v.device.reset_fences(&[fence]).unwrap();
    }
}

/// Times `n` frames recorded by `record(cmd, frame)`: microseconds each.
fn frames(
    v: &Vk,
    sync: &mut Sync,
    n: usize,
    cuda: Option<&dyn Fn(cu::CUstream)>,
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
        sync.frame(v, cmd, cuda);
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    unsafe { v.device.free_command_buffers(v.pool, &[cmd]) };
    out
}

fn is_depth(format: vk::Format) -> bool {
    format == D32
}

fn aspect(format: vk::Format) -> vk::ImageAspectFlags {
    if is_depth(format) {
        vk::ImageAspectFlags::DEPTH
    } else {
        vk::ImageAspectFlags::COLOR
    }
}

/// The layout a render leaves an attachment of `format` in.
fn attachment_layout(format: vk::Format) -> vk::ImageLayout {
    if is_depth(format) {
        vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
    } else {
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
    }
}

/// The raw alternatives: OPTIMAL images of their own memory (N of w x h for SAPIEN's
/// pattern; one of the whole tile grid for Isaac Lab's) copied each frame into one
/// buffer shared with CUDA (the library's, imported into CUDA once).
struct Raw {
    images: Vec<(vk::Image, vk::DeviceMemory)>,
    /// The layers of the one image (`Raw::layered`), else 1 per image.
    layers: u32,
    buffer: Buffer,
    format: vk::Format,
    w: u32,
    h: u32,
}

impl Raw {
    fn new(ctx: &Arc<Context>, v: &Vk, count: u32, w: u32, h: u32, format: vk::Format) -> Raw {
        Raw::with_layers(ctx, v, count, 1, w, h, format)
    }

    /// One image of `count` layers.
    fn layered(ctx: &Arc<Context>, v: &Vk, count: u32, w: u32, h: u32, format: vk::Format) -> Raw {
        Raw::with_layers(ctx, v, 1, count, w, h, format)
    }

    fn with_layers(
        ctx: &Arc<Context>,
        v: &Vk,
        images: u32,
        layers: u32,
        w: u32,
        h: u32,
        format: vk::Format,
    ) -> Raw {
        let usage = if is_depth(format) {
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
        } else {
            vk::ImageUsageFlags::COLOR_ATTACHMENT
        } | vk::ImageUsageFlags::TRANSFER_SRC;
        let count = images * layers;
        let images = (0..images)
            .map(|_| {
                let info =
                    image_2d(format, (w, h), vk::ImageTiling::OPTIMAL, usage).array_layers(layers);
                device_local_image(v, &info)
            })
            .collect();
        let size = u64::from(count) * u64::from(w) * u64::from(h) * 4;
        let usage = vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC;
        let buffer = Buffer::create(ctx, size, usage, Allocator::Vulkan).unwrap();
        Raw {
            images,
            layers,
            buffer,
            format,
            w,
            h,
        }
    }

    /// One frame: the buffer back from CUDA (after the first), the images to
    /// TRANSFER_SRC, a copy of each, the buffer to CUDA.
    fn record(&self, v: &Vk, cmd: vk::CommandBuffer, frame: usize) {
        let d = &v.device;
        let range = vk::ImageSubresourceRange {
            aspect_mask: aspect(self.format),
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: self.layers,
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
                    .src_access_mask(
                        vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                            | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                    )
                    .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
                    .old_layout(old)
                    .new_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .image(image)
                    .subresource_range(range)
            })
            .collect();
        let size = self.buffer.layout().size;
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
                .buffer(self.buffer.vk_buffer())
                .offset(0)
                .size(size)
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
            let elem = u64::from(self.w) * u64::from(self.h) * 4 * u64::from(self.layers);
            for (i, &(image, _)) in self.images.iter().enumerate() {
                d.cmd_copy_image_to_buffer(
                    cmd,
                    image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    self.buffer.vk_buffer(),
                    &[vk::BufferImageCopy::default()
                        .buffer_offset(i as u64 * elem)
                        .image_subresource(vk::ImageSubresourceLayers {
                            aspect_mask: aspect(self.format),
                            mip_level: 0,
                            base_array_layer: 0,
                            layer_count: self.layers,
                        })
                        .image_extent(vk::Extent3D {
                            width: self.w,
                            height: self.h,
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
        }
    }
}

/// The tile grid of Isaac Lab's pattern: (columns, rows), as square as the device's
/// largest 2D image allows; None where N tiles do not fit in one image.
fn tile_grid(n: u32, w: u32, h: u32, max: u32) -> Option<(u32, u32)> {
    let cols = ((n as f64).sqrt().ceil() as u32).min(max / w).max(1);
    let rows = n.div_ceil(cols);
    (cols * w <= max && rows * h <= max).then_some((cols, rows))
}

/// The CUDA half of Isaac Lab's pattern: the reshape kernel and its output tensor.
struct Reshape {
    function: cu::CUfunction,
    out: cu::CUdeviceptr,
}

impl Reshape {
    fn new(module: cu::CUmodule, n: u32, w: u32, h: u32) -> Reshape {
        let mut function = std::ptr::null_mut();
        support::cuda::check(unsafe {
            cu::cuModuleGetFunction(&mut function, module, c"tiled_reshape".as_ptr())
        });
        let mut out = 0;
        let bytes = u64::from(n) * u64::from(w) * u64::from(h) * 4;
        support::cuda::check(unsafe { cu::cuMemAlloc_v2(&mut out, bytes as usize) });
        Reshape { function, out }
    }

    /// Launches the reshape of `tiled` (pitch `cols * w` texels) on `stream`.
    fn launch(&self, stream: cu::CUstream, tiled: u64, cols: u32, n: u32, w: u32, h: u32) {
        let (mut tiled, mut pitch, mut cols, mut w2, mut h2, mut n2, mut out) =
            (tiled, u64::from(cols * w), cols, w, h, n, self.out);
        let mut args: [*mut c_void; 7] = [
            (&mut tiled as *mut u64).cast(),
            (&mut pitch as *mut u64).cast(),
            (&mut cols as *mut u32).cast(),
            (&mut w2 as *mut u32).cast(),
            (&mut h2 as *mut u32).cast(),
            (&mut n2 as *mut u32).cast(),
            (&mut out as *mut u64).cast(),
        ];
        let texels = u64::from(n) * u64::from(w) * u64::from(h);
        let blocks = texels.div_ceil(256).clamp(1, 65_535) as u32;
        support::cuda::check(unsafe {
            cu::cuLaunchKernel(
                self.function,
                blocks,
                1,
                1,
                256,
                1,
                1,
                0,
                stream,
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        });
    }
}

impl Drop for Reshape {
    fn drop(&mut self) {
        support::cuda::check(unsafe { cu::cuMemFree_v2(self.out) });
    }
}

/// A batch's frames: acquire (after the first), release.
fn batch_frames(v: &Vk, sync: &mut Sync, b: &Batch, n: usize, storage: bool) -> Vec<f64> {
    let scope = Scope::new(v.family);
    let copy = b.info().path == Path::Copy;
    let attachment = if storage {
        vk::ImageLayout::GENERAL
    } else {
        attachment_layout(b.info().format)
    };
    frames(v, sync, n, None, |cmd, frame| unsafe {
        let layout = match (frame, copy) {
            (0, _) => vk::ImageLayout::UNDEFINED,
            (_, true) => vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            (_, false) => attachment,
        };
        if frame > 0 {
            if copy {
                b.cmd_acquire_readout_from_cuda(cmd, &scope).unwrap();
            } else {
                b.cmd_acquire_from_cuda(cmd, &scope, attachment).unwrap();
            }
        }
        b.cmd_release_to_cuda(cmd, &scope, layout).unwrap();
    })
}

/// A full-screen draw into RGBA8 colour attachments: the c_examples/batch_cameras
/// shaders with the eye at the cube's centre, looking down -z (the -z face covers the
/// whole view), viewport and scissor dynamic.
struct Draw {
    pass: vk::RenderPass,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    shaders: [vk::ShaderModule; 2],
    matrix: Vec<u8>,
}

impl Draw {
    fn new(v: &Vk) -> Draw {
        let d = &v.device;
        let att = [vk::AttachmentDescription::default()
            .format(RGBA8)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::DONT_CARE)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
        let refs = [vk::AttachmentReference {
            attachment: 0,
            layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        }];
        let sub = [vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .color_attachments(&refs)];
        let push = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::VERTEX,
            offset: 0,
            size: 64,
        }];
        let vert = spirv_words(include_str!("../c_examples/spirv/batch_cameras_vert_spv.h"));
        let frag = spirv_words(include_str!("../c_examples/spirv/batch_cameras_frag_spv.h"));
        unsafe {
            let pass = d
                .create_render_pass(
                    &vk::RenderPassCreateInfo::default()
                        .attachments(&att)
                        .subpasses(&sub),
                    None,
                )
                .unwrap();
            let layout = d
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&push),
                    None,
                )
                .unwrap();
            let shaders = [&vert, &frag].map(|code| {
                d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(code), None)
                    .unwrap()
            });
            let stages = [
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::VERTEX)
                    .module(shaders[0])
                    .name(c"main"),
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(shaders[1])
                    .name(c"main"),
            ];
            let vin = vk::PipelineVertexInputStateCreateInfo::default();
            let ia = vk::PipelineInputAssemblyStateCreateInfo::default()
                .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
            let vp = vk::PipelineViewportStateCreateInfo::default()
                .viewport_count(1)
                .scissor_count(1);
            let rs = vk::PipelineRasterizationStateCreateInfo::default()
                .polygon_mode(vk::PolygonMode::FILL)
                .cull_mode(vk::CullModeFlags::NONE)
                .line_width(1.0);
            let ms = vk::PipelineMultisampleStateCreateInfo::default()
                .rasterization_samples(vk::SampleCountFlags::TYPE_1);
            let blend = [vk::PipelineColorBlendAttachmentState::default()
                .color_write_mask(vk::ColorComponentFlags::RGBA)];
            let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
            let dynamic = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
            let dy = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic);
            let info = vk::GraphicsPipelineCreateInfo::default()
                .stages(&stages)
                .vertex_input_state(&vin)
                .input_assembly_state(&ia)
                .viewport_state(&vp)
                .rasterization_state(&rs)
                .multisample_state(&ms)
                .color_blend_state(&cb)
                .dynamic_state(&dy)
                .layout(layout)
                .render_pass(pass);
            let pipeline = d
                .create_graphics_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|e| e.1)
                .unwrap()[0];
            // Perspective, 45 degrees, near 0.1, far 10, Vulkan's clip space; the
            // identity view (column-major).
            let (s, near, far) = (1.0 / 22.5f32.to_radians().tan(), 0.1f32, 10.0f32);
            let mut m = [0f32; 16];
            m[0] = s;
            m[5] = -s;
            m[10] = far / (near - far);
            m[11] = -1.0;
            m[14] = near * far / (near - far);
            let matrix = m.iter().flat_map(|x| x.to_ne_bytes()).collect();
            Draw {
                pass,
                layout,
                pipeline,
                shaders,
                matrix,
            }
        }
    }

    /// Times `n` frames of one full-screen draw into every element of `b`.
    fn frames(&self, v: &Vk, fence: vk::Fence, b: &Batch, n: usize) -> Vec<f64> {
        let d = &v.device;
        let (w, h) = (b.info().width, b.info().height);
        let mut targets = Vec::new();
        let cmd = v.command_buffer();
        for i in 0..b.info().count {
            let view = unsafe {
                d.create_image_view(
                    &vk::ImageViewCreateInfo::default()
                        .image(b.element(i).unwrap().image)
                        .view_type(vk::ImageViewType::TYPE_2D)
                        .format(RGBA8)
                        .subresource_range(support::color_range()),
                    None,
                )
            }
            .unwrap();
            let views = [view];
            let fb = unsafe {
                d.create_framebuffer(
                    &vk::FramebufferCreateInfo::default()
                        .render_pass(self.pass)
                        .attachments(&views)
                        .width(w)
                        .height(h)
                        .layers(1),
                    None,
                )
            }
            .unwrap();
            let area = vk::Rect2D {
                offset: vk::Offset2D { x: 0, y: 0 },
                extent: vk::Extent2D {
                    width: w,
                    height: h,
                },
            };
            unsafe {
                d.cmd_begin_render_pass(
                    cmd,
                    &vk::RenderPassBeginInfo::default()
                        .render_pass(self.pass)
                        .framebuffer(fb)
                        .render_area(area),
                    vk::SubpassContents::INLINE,
                );
                d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipeline);
                d.cmd_set_viewport(
                    cmd,
                    0,
                    &[vk::Viewport {
                        x: 0.0,
                        y: 0.0,
                        width: w as f32,
                        height: h as f32,
                        min_depth: 0.0,
                        max_depth: 1.0,
                    }],
                );
                d.cmd_set_scissor(cmd, 0, &[area]);
                d.cmd_push_constants(
                    cmd,
                    self.layout,
                    vk::ShaderStageFlags::VERTEX,
                    0,
                    &self.matrix,
                );
                d.cmd_draw(cmd, 36, 1, 0, 0);
                d.cmd_end_render_pass(cmd);
            }
            targets.push((view, fb));
        }
        unsafe { d.end_command_buffer(cmd) }.unwrap();
        let out = (0..n)
            .map(|_| {
                let t = Instant::now();
                fence_submit(v, cmd, fence);
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        unsafe {
            d.free_command_buffers(v.pool, &[cmd]);
            for (view, fb) in targets {
                d.destroy_framebuffer(fb, None);
                d.destroy_image_view(view, None);
            }
        }
        out
    }

    fn destroy(self, v: &Vk) {
        unsafe {
            v.device.destroy_pipeline(self.pipeline, None);
            for s in self.shaders {
                v.device.destroy_shader_module(s, None);
            }
            v.device.destroy_pipeline_layout(self.layout, None);
            v.device.destroy_render_pass(self.pass, None);
        }
    }
}

fn images(n: u32, format: vk::Format, w: u32, h: u32, force_copy: bool) -> Description {
    Description {
        force_copy,
        ..Description::images(n, format, w, h)
    }
}

/// A compute renderer's batch: STORAGE images (and transfers), written in GENERAL.
fn storage_images(n: u32, format: vk::Format, w: u32, h: u32) -> Description {
    let mut d = images(n, format, w, h, false);
    if let vkcuda::batch::Contents::Images { usage, .. } = &mut d.contents {
        *usage = vk::ImageUsageFlags::STORAGE
            | vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST;
    }
    d
}

fn format_name(format: vk::Format) -> &'static str {
    if is_depth(format) {
        "D32"
    } else {
        "RGBA8"
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (ctx, cuda): (Arc<Context>, bool) = match Context::standalone(None, CudaChoice::Primary) {
        Ok(c) => (c, true),
        Err(e) => {
            println!("no CUDA ({e}): the Vulkan submits alone, with a fence (no kernel)");
            (Context::standalone(None, CudaChoice::None).unwrap(), false)
        }
    };
    let v = Vk::of(&ctx);
    let fence = unsafe { v.device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
    // With CUDA its context stays current on this thread: the reshape kernel's module,
    // launches and memory live in it.
    let (mut sync, module) = if cuda {
        support::cuda::Cuda::of_context(&ctx).enter();
        let mut stream = std::ptr::null_mut();
        support::cuda::check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        let mut module = std::ptr::null_mut();
        support::cuda::check(unsafe {
            cu::cuModuleLoadData(&mut module, RESHAPE_PTX.as_ptr().cast())
        });
        let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
        (
            Sync::Timeline {
                sem,
                stream,
                value: 0,
            },
            Some(module),
        )
    } else {
        (Sync::Fence(fence), None)
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
    // The largest tiled image of each format: what the device takes for an OPTIMAL
    // attachment that is copied from.
    let max_dim = |format: vk::Format| {
        let usage = if is_depth(format) {
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
        } else {
            vk::ImageUsageFlags::COLOR_ATTACHMENT
        } | vk::ImageUsageFlags::TRANSFER_SRC;
        let p = unsafe {
            v.instance.get_physical_device_image_format_properties(
                v.physical,
                format,
                vk::ImageType::TYPE_2D,
                vk::ImageTiling::OPTIMAL,
                usage,
                vk::ImageCreateFlags::empty(),
            )
        }
        .unwrap();
        p.max_extent.width.min(p.max_extent.height)
    };
    let mut memory = Vec::new();
    let max_layers = unsafe { v.instance.get_physical_device_properties(v.physical) }
        .limits
        .max_image_array_layers;

    println!("1. Handoff of N cameras to CUDA as one tensor, per frame (us, medians of {n_frames} frames;");
    println!("   zero/raw and copy/raw: against the cheaper of raw N copies and tiled+reshape)");
    println!(
        "{:>6} {:>8} {:>5} {:>10} {:>12} {:>10} {:>13} {:>12} {:>14} {:>9} {:>12} {:>9}",
        "format",
        "size",
        "N",
        "zero-copy",
        "zero STORAGE",
        "copy",
        "raw N copies",
        "raw layered",
        "tiled+reshape",
        "zero/raw",
        "STORAGE/raw",
        "copy/raw"
    );
    for format in [RGBA8, D32] {
        for &(w, h) in sizes {
            for &n in counts {
                let zero = Batch::create(&ctx, &images(n, format, w, h, false)).unwrap();
                let zinfo = zero.info().clone();
                let mut z = batch_frames(&v, &mut sync, &zero, n_frames, false);
                drop(zero);
                // The compute renderer's batch: colour formats only.
                let storage = (!is_depth(format))
                    .then(
                        || match Batch::create(&ctx, &storage_images(n, format, w, h)) {
                            Ok(b) => Some(b),
                            Err(e) => {
                                println!("  (no STORAGE batch of {n} x {w}x{h}: {e})");
                                None
                            }
                        },
                    )
                    .flatten()
                    .map(|b| {
                        let path = b.info().path;
                        (
                            median(&mut batch_frames(&v, &mut sync, &b, n_frames, true)),
                            path,
                        )
                    });
                let forced = Batch::create(&ctx, &images(n, format, w, h, true)).unwrap();
                let cinfo = forced.info().clone();
                let mut c = batch_frames(&v, &mut sync, &forced, n_frames, false);
                drop(forced);
                let raw = Raw::new(&ctx, &v, n, w, h, format);
                let mut r = frames(&v, &mut sync, n_frames, None, |cmd, frame| {
                    raw.record(&v, cmd, frame)
                });
                raw.destroy(&v);
                let layered = (n <= max_layers).then(|| {
                    let raw = Raw::layered(&ctx, &v, n, w, h, format);
                    let mut t = frames(&v, &mut sync, n_frames, None, |cmd, frame| {
                        raw.record(&v, cmd, frame)
                    });
                    raw.destroy(&v);
                    median(&mut t)
                });
                let tiled = tile_grid(n, w, h, max_dim(format)).map(|(cols, rows)| {
                    let raw = Raw::new(&ctx, &v, 1, cols * w, rows * h, format);
                    let reshape = module.map(|m| Reshape::new(m, n, w, h));
                    let tiled_ptr = if cuda {
                        raw.buffer.cuda_ptr().unwrap()
                    } else {
                        0
                    };
                    let kernel = |stream: cu::CUstream| {
                        if let Some(k) = &reshape {
                            k.launch(stream, tiled_ptr, cols, n, w, h);
                        }
                    };
                    let mut t = frames(&v, &mut sync, n_frames, Some(&kernel), |cmd, frame| {
                        raw.record(&v, cmd, frame)
                    });
                    raw.destroy(&v);
                    median(&mut t)
                });
                let (z, c, r) = (median(&mut z), median(&mut c), median(&mut r));
                // The cheaper of the two patterns simulators use today (the layered
                // copy is the library's candidate, not one of them: printed beside).
                let best = tiled.map_or(r, |t| t.min(r));
                let storage_cell = |f: &dyn Fn(f64, Path) -> String| {
                    storage.map_or("n/a".to_string(), |(t, path)| f(t, path))
                };
                println!(
                    "{:>6} {:>8} {n:>5} {z:>10.1} {:>12} {c:>10.1} {r:>13.1} {:>12} {:>14} {:>9.3} {:>12} {:>9.3}{}",
                    format_name(format),
                    format!("{w}x{h}"),
                    storage_cell(&|t, path| match path {
                        Path::ZeroCopy => format!("{t:.1}"),
                        _ => format!("{t:.1} (copy)"),
                    }),
                    layered.map_or("n/a".to_string(), |t| format!("{t:.1}")),
                    tiled.map_or("n/a".to_string(), |t| format!("{t:.1}")),
                    z / best,
                    storage_cell(&|t, _| format!("{:.3}", t / best)),
                    c / best,
                    match (zinfo.path, &zinfo.linear_refusal) {
                        (Path::ZeroCopy, _) => String::new(),
                        (_, Some(why)) => format!("  (zero-copy refused: {why})"),
                        (_, None) => "  (zero-copy refused: copy path)".to_string(),
                    }
                );
                memory.push((format, w, h, n, zinfo, cinfo));
            }
        }
    }

    println!();
    println!("2. Render cost: N full-screen draws into RGBA8 attachments (us per frame, medians of {n_frames})");
    println!(
        "{:>8} {:>5} {:>12} {:>12} {:>14}",
        "size", "N", "LINEAR", "OPTIMAL", "LINEAR/OPTIMAL"
    );
    let draw = Draw::new(&v);
    for &(w, h) in sizes {
        for &n in counts {
            let linear = Batch::create(&ctx, &images(n, RGBA8, w, h, false)).unwrap();
            let tiling = if linear.info().path == Path::ZeroCopy {
                ""
            } else {
                "  (no LINEAR attachments here: both OPTIMAL)"
            };
            let mut l = draw.frames(&v, fence, &linear, n_frames);
            drop(linear);
            let optimal = Batch::create(&ctx, &images(n, RGBA8, w, h, true)).unwrap();
            let mut o = draw.frames(&v, fence, &optimal, n_frames);
            drop(optimal);
            let (l, o) = (median(&mut l), median(&mut o));
            println!(
                "{:>8} {n:>5} {l:>12.1} {o:>12.1} {:>14.3}{tiling}",
                format!("{w}x{h}"),
                l / o
            );
        }
    }
    draw.destroy(&v);

    println!();
    println!("3. Memory per element (bytes): the data, and each path's allocation / N");
    println!(
        "{:>6} {:>8} {:>5} {:>10} {:>12} {:>9} {:>12} {:>9}",
        "format", "size", "N", "data", "zero-copy", "overhead", "copy path", "overhead"
    );
    for (format, w, h, n, z, c) in &memory {
        let per = |i: &vkcuda::batch::Info| i.allocation_size as f64 / f64::from(*n);
        let data = z.element_size as f64;
        println!(
            "{:>6} {:>8} {n:>5} {data:>10.0} {:>12.0} {:>8.1}% {:>12.0} {:>8.1}%{}",
            format_name(*format),
            format!("{w}x{h}"),
            per(z),
            (per(z) / data - 1.0) * 100.0,
            per(c),
            (per(c) / data - 1.0) * 100.0,
            if z.path == Path::ZeroCopy {
                ""
            } else {
                "  (zero-copy refused: both copy path)"
            }
        );
    }

    match sync {
        Sync::Fence(_) => {}
        Sync::Timeline { stream, .. } => {
            support::cuda::check(unsafe { cu::cuModuleUnload(module.unwrap()) });
            support::cuda::check(unsafe { cu::cuStreamDestroy_v2(stream) });
            support::cuda::Cuda::of_context(&ctx).leave();
        }
    }
    unsafe { v.device.destroy_fence(fence, None) };
}
