//! 4K NV12 frames shared two ways — one shared video frame (LINEAR NV12, one
//! dedicated allocation, pitched CUDA planes) and the OPTIMAL alternative, two
//! single-plane images (R8 luma, R8G8 CbCr) — in the same run as the rest of
//! bench/interop.rs, on the same device, queue, CUDA context and stream:
//!
//! - the handoff: frames handed from CUDA to Vulkan through a ring of three shared
//!   frames, three in flight, zero-copy, linear frame vs two images; and with each
//!   frame first copied in from a decoder-shaped pitched allocation (NVDEC's
//!   output): into the linear frame (device to device, one `cuMemcpy2DAsync` per
//!   plane) and into the two images' arrays (FFmpeg's per-plane path);
//! - sampling: one full-frame pass through a `VkSamplerYcbcrConversion` into RGBA8
//!   over the LINEAR frame vs an OPTIMAL NV12 image (Vulkan's own), GPU time per
//!   pass over batches of passes;
//!
//! - zero-copy vs copy: frames handed from CUDA to Vulkan through a ring of three
//!   shared NV12 images, three frames in flight; zero-copy (CUDA's work lands in
//!   the image, the handoff is the semaphores and barriers) against the same loop
//!   with each frame first copied plane by plane with `cuMemcpy2DAsync` from
//!   pitch-linear CUDA memory into the image (what FFmpeg's Vulkan/CUDA interop
//!   does for every frame). Per frame, medians of batches of 100 frames.
//! - the pitched-copy helper (`Image::copy_pitched`, `vkcuda_image_cuda_copy_from_pitched`
//!   in C, one call per plane image) against the two raw `cuMemcpy2DAsync` calls it makes, timed in
//!   alternation: per frame over batches of 10 frames with a stream sync (GPU
//!   time and host time together), and the host's enqueue time alone.

use super::*;
use vkcuda::image::{Description, PitchedPlane, PlanePointer};
use vkcuda::Image;

const W: u32 = 3840;
const H: u32 = 2160;

/// A shared 4K NV12 frame as the library shares one: two single-plane images,
/// luma (R8, W x H) and CbCr (R8G8, W/2 x H/2), and their level-0 arrays. (The
/// multi-planar format itself is refused in a CUDA context: its planes read wrong
/// once the data compresses, see `vkcuda::format::PLANAR`.)
struct Nv12 {
    images: [Image; 2],
    arrays: [cu::CUarray; 2],
}

impl Nv12 {
    fn new(env: &Env) -> Nv12 {
        let plane = |format, w, h| {
            let im = Image::create(&env.ctx, &Description::new_2d(format, w, h)).unwrap();
            let array = im.level_array(0, 0).unwrap();
            (im, array)
        };
        let (luma, luma_array) = plane(vk::Format::R8_UNORM, W, H);
        let (chroma, chroma_array) = plane(vk::Format::R8G8_UNORM, W / 2, H / 2);
        Nv12 {
            images: [luma, chroma],
            arrays: [luma_array, chroma_array],
        }
    }
}

/// A shared 4K NV12 video frame: one LINEAR image, its planes pitched CUDA memory.
struct Linear {
    image: Image,
    planes: [PlanePointer; 2],
}

impl Linear {
    fn new(env: &Env) -> Linear {
        let image = Image::create(
            &env.ctx,
            &Description {
                linear: true,
                ..Description::new_2d(vk::Format::G8_B8R8_2PLANE_420_UNORM, W, H)
            },
        )
        .unwrap();
        let planes = [
            image.plane_pointer(0).unwrap(),
            image.plane_pointer(1).unwrap(),
        ];
        Linear { image, planes }
    }
}

/// What a ring hands over: the images of one frame, and how a decoded frame is
/// copied into it.
trait Frame {
    fn images(&self) -> Vec<&Image>;
    fn copy_in(&self, env: &Env, src: &Pitched);
}

impl Frame for Nv12 {
    fn images(&self) -> Vec<&Image> {
        self.images.iter().collect()
    }
    fn copy_in(&self, env: &Env, src: &Pitched) {
        raw_copy(env, src, self)
    }
}

impl Frame for Linear {
    fn images(&self) -> Vec<&Image> {
        vec![&self.image]
    }
    fn copy_in(&self, env: &Env, src: &Pitched) {
        for (p, rows) in [(0, H as usize), (1, H as usize / 2)] {
            let copy = cu::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                srcHost: ptr::null(),
                srcDevice: src.ptr + (p * src.pitch * H as usize) as u64,
                srcArray: ptr::null_mut(),
                srcPitch: src.pitch,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: ptr::null_mut(),
                dstDevice: self.planes[p].pointer,
                dstArray: ptr::null_mut(),
                dstPitch: self.planes[p].layout.row_pitch as usize,
                WidthInBytes: W as usize,
                Height: rows,
            };
            check(unsafe { cu::cuMemcpy2DAsync_v2(&copy, env.stream) });
        }
    }
}

/// A decoded frame as NVDEC leaves it: luma rows, then CbCr rows, one pitch.
struct Pitched {
    ptr: u64,
    pitch: usize,
}

impl Pitched {
    fn new() -> Pitched {
        let (mut ptr, mut pitch) = (0, 0);
        check(unsafe {
            cu::cuMemAllocPitch_v2(&mut ptr, &mut pitch, W as usize, (H + H / 2) as usize, 16)
        });
        check(unsafe { cu::cuMemsetD8_v2(ptr, 0x80, pitch * (H + H / 2) as usize) });
        Pitched { ptr, pitch }
    }

    /// The luma plane and the CbCr plane, each for its own image.
    fn planes(&self) -> [[PitchedPlane; 1]; 2] {
        let one = |pointer| {
            [PitchedPlane {
                pointer,
                pitch: self.pitch as u64,
            }]
        };
        [
            one(self.ptr),
            one(self.ptr + (self.pitch * H as usize) as u64),
        ]
    }
}

impl Drop for Pitched {
    fn drop(&mut self) {
        unsafe { cu::cuMemFree_v2(self.ptr) };
    }
}

/// The raw path: one `cuMemcpy2DAsync` per plane (FFmpeg's per-frame copy).
fn raw_copy(env: &Env, src: &Pitched, dst: &Nv12) {
    for (p, rows) in [(0, H as usize), (1, H as usize / 2)] {
        let copy = cu::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: ptr::null(),
            srcDevice: src.ptr + (p * src.pitch * H as usize) as u64,
            srcArray: ptr::null_mut(),
            srcPitch: src.pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            dstHost: ptr::null_mut(),
            dstDevice: 0,
            dstArray: dst.arrays[p],
            dstPitch: 0,
            WidthInBytes: W as usize,
            Height: rows,
        };
        check(unsafe { cu::cuMemcpy2DAsync_v2(&copy, env.stream) });
    }
}

/// The library's path: one call per plane image.
fn lib_copy(env: &Env, planes: &[[PitchedPlane; 1]; 2], dst: &Nv12) {
    for (p, pl) in planes.iter().enumerate() {
        // SAFETY: `pl` is the decoder-shaped allocation of `Pitched`, rows to spare.
        unsafe { dst.images[p].copy_pitched(pl, true, env.stream) }.unwrap();
    }
}

fn one_shot(env: &Env, record: impl FnOnce(vk::CommandBuffer)) -> vk::CommandBuffer {
    let cmd = env.v.command_buffer();
    unsafe {
        record(cmd);
        env.v.device.end_command_buffer(cmd).unwrap();
    }
    cmd
}

/// Hands new images to CUDA (release from UNDEFINED) and waits.
fn release_new<F: Frame>(env: &Env, images: &[&F]) {
    let scope = env.scope();
    let cmd = one_shot(env, |cmd| {
        for im in images.iter().flat_map(|f| f.images()) {
            unsafe { im.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED) }.unwrap();
        }
    });
    env.v.submit_timeline(&[], &[], cmd, vk::Fence::null());
    env.idle();
    unsafe { env.v.device.free_command_buffers(env.v.pool, &[cmd]) };
}

/// CUDA -> Vulkan, 3 frames in flight over a ring of 3 images: frame k goes to
/// image k % 3 once Vulkan released it (CUDA waits for Vulkan's `done` value of
/// frame k - 3), optionally copied in plane by plane, then signalled; Vulkan waits,
/// acquires (for sampling) and releases it back. Per-frame µs over batches of 100.
fn ring<F: Frame>(
    env: &Env,
    lib: &LibTimeline,
    images: &[F; 3],
    src: Option<&Pitched>,
    frames: usize,
) -> Vec<f64> {
    let done = RawTimeline::new(env);
    let scope = env.scope();
    let sampled = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL;
    let cmds: Vec<vk::CommandBuffer> = images
        .iter()
        .map(|im| {
            one_shot(env, |cmd| unsafe {
                for i in im.images() {
                    i.cmd_acquire_from_cuda(cmd, &scope, sampled).unwrap();
                    i.cmd_release_to_cuda(cmd, &scope, sampled).unwrap();
                }
            })
        })
        .collect();
    let (s, b0, d0) = (lib.vk(), env.counter(lib.vk()), env.counter(done.vk()));
    let mut batch = Vec::new();
    let mut t0 = Instant::now();
    for k in 1..=frames as u64 {
        let i = (k % 3) as usize;
        if k > 3 {
            env.spin_until(done.vk(), d0 + k - 3);
            done.cuda_wait(env, d0 + k - 3);
        }
        if let Some(src) = src {
            images[i].copy_in(env, src);
        }
        lib.cuda_signal(env, b0 + k);
        env.v.submit_timeline(
            &[(s, b0 + k)],
            &[(done.vk(), d0 + k)],
            cmds[i],
            vk::Fence::null(),
        );
        if k % 100 == 0 {
            let now = Instant::now();
            batch.push((now - t0).as_secs_f64() * 1e6 / 100.0);
            t0 = now;
        }
    }
    env.spin_until(done.vk(), d0 + frames as u64);
    env.idle();
    unsafe { env.v.device.free_command_buffers(env.v.pool, &cmds) };
    batch.drain(..1);
    batch
}

/// GPU time of one frame's per-plane copy, from CUDA events around `n` copies.
fn copy_gpu_time(env: &Env, src: &Pitched, dst: &Nv12, n: usize) -> f64 {
    let (mut a, mut b) = (ptr::null_mut(), ptr::null_mut());
    check(unsafe { cu::cuEventCreate(&mut a, 0) });
    check(unsafe { cu::cuEventCreate(&mut b, 0) });
    raw_copy(env, src, dst);
    check(unsafe { cu::cuEventRecord(a, env.stream) });
    for _ in 0..n {
        raw_copy(env, src, dst);
    }
    check(unsafe { cu::cuEventRecord(b, env.stream) });
    check(unsafe { cu::cuEventSynchronize(b) });
    let mut ms = 0f32;
    check(unsafe { cu::cuEventElapsedTime_v2(&mut ms, a, b) });
    unsafe {
        cu::cuEventDestroy_v2(a);
        cu::cuEventDestroy_v2(b);
    }
    ms as f64 * 1e3 / n as f64
}

pub fn nv12_4k(env: &Env, lib: &LibTimeline, rep: &mut Report, quick: bool) {
    println!("\n[nv12 4K] {W}x{H} NV12 (12.4 MB a frame): zero-copy vs per-plane copies; the pitched-copy helper vs raw calls");
    let images = [Nv12::new(env), Nv12::new(env), Nv12::new(env)];
    release_new(env, &[&images[0], &images[1], &images[2]]);
    let src = Pitched::new();
    let planes = src.planes();
    let frames = if quick { 300 } else { 3000 };

    let linear = [Linear::new(env), Linear::new(env), Linear::new(env)];
    release_new(env, &[&linear[0], &linear[1], &linear[2]]);
    let mut lz = ring(env, lib, &linear, None, frames);
    let mut lc = ring(env, lib, &linear, Some(&src), frames);
    let mut z = ring(env, lib, &images, None, frames);
    let mut c = ring(env, lib, &images, Some(&src), frames);
    let lzm = rep.add(
        "nv12-4k",
        "zero-copy handoff, linear frame",
        &mut lz,
        "per frame, 3 shared video frames in flight",
    );
    let lcm = rep.add(
        "nv12-4k",
        "decoder copy into linear frame + handoff",
        &mut lc,
        "per frame, one cuMemcpy2DAsync per plane, device to device (NVDEC's path)",
    );
    let zm = rep.add(
        "nv12-4k",
        "zero-copy handoff",
        &mut z,
        "per frame, 3 images in flight",
    );
    let cm = rep.add(
        "nv12-4k",
        "per-plane cuMemcpy2DAsync + handoff",
        &mut c,
        "per frame, FFmpeg's path: each frame copied in first",
    );
    rep.derived("nv12-4k", "copy path / zero-copy", cm / zm, "per frame");
    rep.derived(
        "nv12-4k",
        "linear frame / two images, zero-copy",
        lzm / zm,
        "per frame (<= 1: the frame costs no more than the two-image recipe)",
    );
    rep.derived(
        "nv12-4k",
        "decoder copy: linear frame / two images",
        lcm / cm,
        "per frame, the copy in included",
    );
    rep.derived(
        "nv12-4k",
        "copy path - zero-copy",
        cm - zm,
        "us a frame zero-copy saves",
    );
    let gpu = copy_gpu_time(env, &src, &images[0], if quick { 20 } else { 200 });
    let bytes = (W * H * 3 / 2) as f64;
    rep.derived(
        "nv12-4k",
        "per-plane copy GPU time",
        gpu,
        &format!(
            "us a frame (CUDA events), {:.0} GB/s read + write",
            2.0 * bytes / gpu / 1e3
        ),
    );

    // The helper against the two raw calls, alternating, 10 frames a sample.
    let batch = 10;
    let iters = if quick { 20 } else { 200 };
    let sync = || check(unsafe { cu::cuStreamSynchronize(env.stream) });
    let (mut l, mut r) = time_pair(
        iters,
        || {
            for _ in 0..batch {
                lib_copy(env, &planes, &images[0]);
            }
            sync();
        },
        || {
            for _ in 0..batch {
                raw_copy(env, &src, &images[0]);
            }
            sync();
        },
    );
    for x in l.iter_mut().chain(r.iter_mut()) {
        *x /= batch as f64;
    }
    let lm = rep.add(
        "nv12-4k",
        "pitched copy, library",
        &mut l,
        "per frame, 10 a batch + stream sync",
    );
    let rm = rep.add(
        "nv12-4k",
        "pitched copy, raw cuMemcpy2DAsync x2",
        &mut r,
        "per frame, same",
    );
    rep.derived(
        "nv12-4k",
        "pitched copy library/raw",
        lm / rm,
        super::TARGET_RATIO,
    );
    // The host's enqueue time alone (the stream drained, untimed, in between).
    let (mut el, mut er) = enqueue_pair(
        iters * 5,
        || lib_copy(env, &planes, &images[0]),
        || raw_copy(env, &src, &images[0]),
        sync,
    );
    let elm = rep.add(
        "nv12-4k",
        "enqueue, library",
        &mut el,
        "host us per frame (both plane images)",
    );
    let erm = rep.add(
        "nv12-4k",
        "enqueue, raw x2",
        &mut er,
        "host us for the two calls",
    );
    rep.derived(
        "nv12-4k",
        "enqueue library - raw",
        elm - erm,
        "host us the checks cost (two calls, one per plane image); goal <= 0.2",
    );
    rep.derived(
        "nv12-4k",
        "enqueue library / raw",
        elm / erm,
        "host time per frame, two plane images",
    );
    // The shared video frame: one call copies both planes (plane_count 2).
    let frame_planes = [planes[0][0], planes[1][0]];
    let (mut fl, mut fr) = enqueue_pair(
        iters * 5,
        // SAFETY: `src` is the decoder-shaped allocation of both planes.
        || {
            unsafe {
                linear[0]
                    .image
                    .copy_pitched(&frame_planes, true, env.stream)
            }
            .unwrap()
        },
        || linear[0].copy_in(env, &src),
        sync,
    );
    let flm = rep.add(
        "nv12-4k",
        "enqueue, library, linear frame",
        &mut fl,
        "host us per frame (one call, both planes)",
    );
    let frm = rep.add(
        "nv12-4k",
        "enqueue, raw x2, linear frame",
        &mut fr,
        "host us for the two calls",
    );
    rep.derived(
        "nv12-4k",
        "enqueue library - raw, linear frame",
        flm - frm,
        "host us the checks cost (one call); goal <= 0.2",
    );
    rep.derived(
        "nv12-4k",
        "enqueue library / raw, linear frame",
        flm / frm,
        "host time per frame",
    );
    // What the library's per-call driver queries cost alone (the range of the
    // source's allocation is asked once per allocation and then remembered).
    let query_ns = |f: &dyn Fn()| {
        let mut v: Vec<f64> = (0..if quick { 20 } else { 200 })
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..100 {
                    f();
                }
                t0.elapsed().as_secs_f64() * 1e9 / 100.0
            })
            .collect();
        median(&mut v)
    };
    let range_ns = query_ns(&|| {
        let (mut base, mut size) = (0, 0);
        check(unsafe { cu::cuMemGetAddressRange_v2(&mut base, &mut size, src.ptr) });
    });
    let id_ns = query_ns(&|| {
        let mut id = 0u64;
        check(unsafe {
            cu::cuPointerGetAttribute(
                (&mut id as *mut u64).cast(),
                cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
                src.ptr,
            )
        });
    });
    rep.derived(
        "nv12-4k",
        "cuMemGetAddressRange alone",
        range_ns / 1e3,
        "host us a call (the range check; once per allocation)",
    );
    rep.derived(
        "nv12-4k",
        "cuPointerGetAttribute(BUFFER_ID) alone",
        id_ns / 1e3,
        "host us a call (the context's liveness, every call)",
    );
    let (sl, so) = sampling(env, &linear[0], quick);
    rep.derived(
        "nv12-4k",
        "sampling pass, optimal image",
        so,
        "us per full-frame YCbCr pass (GPU, median of batches)",
    );
    rep.derived(
        "nv12-4k",
        "sampling pass, linear frame",
        sl,
        "us per full-frame YCbCr pass (GPU, median of batches)",
    );
    rep.derived("nv12-4k", "sampling linear / optimal", sl / so, "per pass");
    println!(
        "  [nv12 4K] zero-copy: linear frame {lzm:.1} us/frame, two images {zm:.1} us/frame ({:.3}); \
         copied in: linear {lcm:.1}, two images (FFmpeg's path) {cm:.1} us/frame; helper/raw {:.3}; \
         copy GPU time {gpu:.1} us; one YCbCr pass: linear {sl:.1} us, optimal {so:.1} us ({:.2}x); \
         enqueue library - raw: two images {:+.3} us ({:.3}), linear frame {:+.3} us ({:.3})",
        lzm / zm,
        lm / rm,
        sl / so,
        elm - erm,
        elm / erm,
        flm - frm,
        flm / frm
    );
}

/// The host's enqueue time of `lib` and `raw` alone, in alternation (the order
/// swapped every round), the stream drained by `sync`, untimed, after each.
fn enqueue_pair(
    rounds: usize,
    lib: impl Fn(),
    raw: impl Fn(),
    sync: impl Fn(),
) -> (Vec<f64>, Vec<f64>) {
    let (mut l, mut r) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    let one = |f: &dyn Fn()| {
        let t0 = Instant::now();
        f();
        let us = t0.elapsed().as_secs_f64() * 1e6;
        sync();
        us
    };
    // One untimed round first (the first call looks the source's range up).
    one(&lib);
    one(&raw);
    for i in 0..rounds {
        if i % 2 == 0 {
            l.push(one(&lib));
            r.push(one(&raw));
        } else {
            r.push(one(&raw));
            l.push(one(&lib));
        }
    }
    (l, r)
}

/// GPU time of one full-frame YCbCr sampling pass (timestamp queries around
/// batches of passes) over the linear frame and over an OPTIMAL NV12 image of
/// Vulkan's own, both filled with the same ramp: medians in µs.
fn sampling(env: &Env, frame: &Linear, quick: bool) -> (f64, f64) {
    let v = &env.v;
    let d = &v.device;
    let nv12 = vk::Format::G8_B8R8_2PLANE_420_UNORM;
    // Vulkan's own optimal NV12 image.
    let usage = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
    let info = image_2d(nv12, (W, H), vk::ImageTiling::OPTIMAL, usage);
    let (optimal, memory) = device_local_image(v, &info);
    let frame_image = frame.image.vk_image();
    // The same ramp into both (luma then CbCr), through a staging buffer.
    let luma = (W * H) as usize;
    let staging = v.host_buffer((luma + luma / 2) as u64);
    for (i, b) in staging.bytes().iter_mut().enumerate() {
        *b = (48 + (i % W as usize) / 16 + (i / W as usize) / 16) as u8;
    }
    let regions = [
        vk::BufferImageCopy::default()
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::PLANE_0,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            })
            .image_extent(vk::Extent3D {
                width: W,
                height: H,
                depth: 1,
            }),
        vk::BufferImageCopy::default()
            .buffer_offset(luma as u64)
            .image_subresource(vk::ImageSubresourceLayers {
                aspect_mask: vk::ImageAspectFlags::PLANE_1,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            })
            .image_extent(vk::Extent3D {
                width: W / 2,
                height: H / 2,
                depth: 1,
            }),
    ];
    let color = color_range();
    // The frame is CUDA's after the ring: Vulkan acquires it for the copy.
    let scope = env.scope();
    v.run(|cmd| unsafe {
        frame
            .image
            .cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_DST_OPTIMAL)
            .unwrap();
        v.image_barrier(
            cmd,
            layout_barrier(
                optimal,
                color,
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            ),
        );
        for image in [frame_image, optimal] {
            d.cmd_copy_buffer_to_image(
                cmd,
                staging.buffer,
                image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &regions,
            );
            v.image_barrier(
                cmd,
                layout_barrier(
                    image,
                    color,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                ),
            );
        }
    });
    v.destroy_host_buffer(staging);
    let conv = frame.image.ycbcr_conversion().unwrap().create_info();
    // Device-local output: the pass's time is the sampling, not writes across PCIe.
    let passes = [
        support::ycbcr::YcbcrPass::new(v, frame_image, &conv, (W, H), false),
        support::ycbcr::YcbcrPass::new(v, optimal, &conv, (W, H), false),
    ];
    let queries = unsafe {
        d.create_query_pool(
            &vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(4),
            None,
        )
    }
    .unwrap();
    let period = unsafe { env.v.instance.get_physical_device_properties(v.physical) }
        .limits
        .timestamp_period as f64;
    let (batch, rounds) = if quick { (5, 5) } else { (20, 30) };
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        v.run(|cmd| unsafe {
            d.cmd_reset_query_pool(cmd, queries, 0, 4);
            for (k, pass) in passes.iter().enumerate() {
                d.cmd_write_timestamp(
                    cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    queries,
                    2 * k as u32,
                );
                for _ in 0..batch {
                    pass.record(v, cmd);
                }
                d.cmd_write_timestamp(
                    cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    queries,
                    2 * k as u32 + 1,
                );
            }
        });
        let mut ts = [0u64; 4];
        unsafe {
            d.get_query_pool_results(
                queries,
                0,
                &mut ts,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .unwrap();
        for k in 0..2 {
            times[k].push((ts[2 * k + 1] - ts[2 * k]) as f64 * period / 1e3 / batch as f64);
        }
    }
    // Hand the frame back to CUDA as the ring left it.
    v.run(|cmd| unsafe {
        frame
            .image
            .cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
            .unwrap()
    });
    for pass in passes {
        pass.destroy(v);
    }
    unsafe {
        d.destroy_query_pool(queries, None);
        d.destroy_image(optimal, None);
        d.free_memory(memory, None);
    }
    (median(&mut times[0]), median(&mut times[1]))
}
