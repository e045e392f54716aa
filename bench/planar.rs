//! 4K NV12 frames, each shared as two single-plane images (R8 luma, R8G8 CbCr:
//! the multi-planar format is refused with CUDA), in the same run as the rest of
//! bench/interop.rs, on the same device, queue, CUDA context and stream:
//!
//! - zero-copy vs copy: frames handed from CUDA to Vulkan through a ring of three
//!   shared NV12 images, three frames in flight; zero-copy (CUDA's work lands in
//!   the image, the handoff is the semaphores and barriers) against the same loop
//!   with each frame first copied plane by plane with `cuMemcpy2DAsync` from
//!   pitch-linear CUDA memory into the image (what FFmpeg's Vulkan/CUDA interop
//!   does for every frame). Per frame, medians of batches of 100 frames.
//! - the pitched-copy helper (`vkcuda_image_cuda_copy_from_pitched`, one call per
//!   plane image) against the two raw `cuMemcpy2DAsync` calls it makes, timed in
//!   alternation: per frame over batches of 10 frames with a stream sync (GPU
//!   time and host time together), and the host's enqueue time alone.

use super::*;

const W: u32 = 3840;
const H: u32 = 2160;

/// A shared 4K NV12 frame as the library shares one: two single-plane images,
/// luma (R8, W x H) and CbCr (R8G8, W/2 x H/2), and their level-0 arrays. (The
/// multi-planar format itself is refused in a CUDA context: its planes read wrong
/// once the data compresses, see `vkcuda::format::PLANAR`.)
struct Nv12 {
    images: [*mut vkcuda_image; 2],
    arrays: [cu::CUarray; 2],
}

impl Nv12 {
    fn new(env: &Env) -> Nv12 {
        let mut images = [ptr::null_mut(); 2];
        let mut arrays = [ptr::null_mut(); 2];
        for (p, (format, w, h)) in [
            (vk::Format::R8_UNORM, W, H),
            (vk::Format::R8G8_UNORM, W / 2, H / 2),
        ]
        .into_iter()
        .enumerate()
        {
            let info = vkcuda_image_create_info {
                flags: 0,
                image_type: vkcuda_image_type_raw(0),
                format: format.as_raw(),
                extent: vk::Extent3D {
                    width: w,
                    height: h,
                    depth: 1,
                },
                mip_levels: 0,
                array_layers: 0,
                usage: 0,
            };
            ok(unsafe { vkcuda_image_create(env.ctx, &info, &mut images[p]) });
            let mut x = ptr::null_mut();
            ok(unsafe { vkcuda_image_get_plane_cuda_array(images[p], 0, 0, &mut x) });
            arrays[p] = x.cast();
        }
        Nv12 { images, arrays }
    }
}

impl Drop for Nv12 {
    fn drop(&mut self) {
        for im in self.images {
            unsafe { vkcuda_image_destroy(im) };
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
    fn planes(&self) -> [vkcuda_pitched_planes; 2] {
        let one = |device_pointer| {
            let plane = |device_pointer, pitch| vkcuda_pitched_plane {
                device_pointer,
                pitch,
            };
            vkcuda_pitched_planes {
                flags: 0,
                plane_count: 1,
                planes: [
                    plane(device_pointer, self.pitch as u64),
                    plane(0, 0),
                    plane(0, 0),
                ],
            }
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
fn lib_copy(env: &Env, planes: &[vkcuda_pitched_planes; 2], dst: &Nv12) {
    for (p, pl) in planes.iter().enumerate() {
        ok(unsafe { vkcuda_image_cuda_copy_from_pitched(dst.images[p], pl, env.stream.cast()) });
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
fn release_new(env: &Env, images: &[&Nv12]) {
    let h = handoff_info(env.v.family);
    let cmd = one_shot(env, |cmd| {
        for im in images.iter().flat_map(|f| f.images) {
            ok(unsafe { vkcuda_image_cmd_release_to_cuda(im, cmd, &h, 0) });
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
fn ring(
    env: &Env,
    lib: &LibTimeline,
    images: &[Nv12; 3],
    src: Option<&Pitched>,
    frames: usize,
) -> Vec<f64> {
    let done = RawTimeline::new(env);
    let h = handoff_info(env.v.family);
    let sampled = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL.as_raw();
    let cmds: Vec<vk::CommandBuffer> = images
        .iter()
        .map(|im| {
            one_shot(env, |cmd| unsafe {
                for i in im.images {
                    ok(vkcuda_image_cmd_acquire_from_cuda(i, cmd, &h, sampled));
                    ok(vkcuda_image_cmd_release_to_cuda(i, cmd, &h, sampled));
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
            raw_copy(env, src, &images[i]);
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

    let mut z = ring(env, lib, &images, None, frames);
    let mut c = ring(env, lib, &images, Some(&src), frames);
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
        "target <= 1.02",
    );
    // The host's enqueue time alone (the stream drained, untimed, in between).
    let (mut el, mut er) = (Vec::new(), Vec::new());
    for i in 0..iters * 5 {
        let one = |lib_side: bool| {
            let t0 = Instant::now();
            if lib_side {
                lib_copy(env, &planes, &images[0]);
            } else {
                raw_copy(env, &src, &images[0]);
            }
            let us = t0.elapsed().as_secs_f64() * 1e6;
            sync();
            us
        };
        if i % 2 == 0 {
            el.push(one(true));
            er.push(one(false));
        } else {
            er.push(one(false));
            el.push(one(true));
        }
    }
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
        "host us the checks cost",
    );
    println!(
        "  [nv12 4K] zero-copy {zm:.1} us/frame, per-plane copy path {cm:.1} us/frame ({:.2}x); \
         helper/raw {:.3}; copy GPU time {gpu:.1} us",
        cm / zm,
        lm / rm
    );
}
