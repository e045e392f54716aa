//! The present path (`vkcuda::present::Ring`) against the raw calls that do the
//! same, in the same run as the rest of bench/interop.rs, on the same device,
//! queue, CUDA context and stream: per frame, CUDA writes the ring's slot (the
//! fractal kernel of c_examples/image_kernels.cu at one iteration: one surface
//! write per pixel) between a wait for the slot's last copy and a signal, and
//! Vulkan blits the slot into a swapchain-sized BGRA8 target (a stand-in for the
//! swapchain image: the GPU machines have no display) between the queue-family
//! barriers, waiting for CUDA's value and signalling its own. The raw loop makes
//! the same driver calls by hand (`cuWaitExternalSemaphoresAsync`,
//! `cuSignalExternalSemaphoresAsync`, two `vkCmdPipelineBarrier` around one
//! `vkCmdBlitImage`, one `vkQueueSubmit`) on its own timeline and a second ring's
//! images (their memory is set up once, as an engine would). 1080p and 4K, 2 and 3
//! frames in flight (the ring's size); per frame: the wall time over batches of
//! frames (host never waits on the GPU but for the fence of the frame in flight
//! `n` back), and the host time of the recording alone (`cmd_present` vs the raw
//! barriers and blit). Library and raw batches alternate.

use super::*;
use vkcuda::present::{Description, Ring, Target};

const IMAGE_PTX: &str = include_str!("../ptx/image_kernels.ptx");

/// A device-local BGRA8 image the blit writes: the swapchain image's stand-in.
struct Stand {
    image: vk::Image,
    memory: vk::DeviceMemory,
    extent: vk::Extent2D,
}

impl Stand {
    fn new(v: &Vk, width: u32, height: u32) -> Stand {
        let usage = vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC;
        let info = image_2d(
            vk::Format::B8G8R8A8_UNORM,
            (width, height),
            vk::ImageTiling::OPTIMAL,
            usage,
        );
        let (image, memory) = device_local_image(v, &info);
        Stand {
            image,
            memory,
            extent: vk::Extent2D { width, height },
        }
    }

    fn destroy(self, v: &Vk) {
        unsafe {
            v.device.destroy_image(self.image, None);
            v.device.free_memory(self.memory, None);
        }
    }
}

/// Command buffers and fences of the frames in flight.
struct Frames {
    cmds: Vec<vk::CommandBuffer>,
    fences: Vec<vk::Fence>,
}

impl Frames {
    fn new(v: &Vk, n: u32) -> Frames {
        let cmds = unsafe {
            v.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(v.pool)
                    .command_buffer_count(n),
            )
        }
        .unwrap();
        let fences = (0..n)
            .map(|_| {
                let info = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
                unsafe { v.device.create_fence(&info, None) }.unwrap()
            })
            .collect();
        Frames { cmds, fences }
    }

    /// Frame `k`'s command buffer, begun, once its last use is done.
    fn begin(&self, v: &Vk, k: u64) -> (vk::CommandBuffer, vk::Fence) {
        let i = (k % self.cmds.len() as u64) as usize;
        let (cmd, fence) = (self.cmds[i], self.fences[i]);
        unsafe {
            v.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
            v.device.reset_fences(&[fence]).unwrap();
            v.device
                .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
        }
        (cmd, fence)
    }

    fn destroy(self, v: &Vk) {
        unsafe {
            v.device.queue_wait_idle(v.queue).unwrap();
            for f in self.fences {
                v.device.destroy_fence(f, None);
            }
            v.device.free_command_buffers(v.pool, &self.cmds);
        }
    }
}

/// Ends `cmd` and submits it waiting for `wait` on `sem` and signalling
/// `signal`, `fence` at the end.
fn submit(
    v: &Vk,
    cmd: vk::CommandBuffer,
    sem: vk::Semaphore,
    wait: u64,
    signal: u64,
    fence: vk::Fence,
) {
    unsafe { v.device.end_command_buffer(cmd) }.unwrap();
    v.submit_timeline(&[(sem, wait)], &[(sem, signal)], cmd, fence);
}

/// The fractal kernel at one iteration over a `w` x `h` surface.
struct Writer {
    module: cu::CUmodule,
    kernel: cu::CUfunction,
}

impl Writer {
    fn new() -> Writer {
        let ptx = std::ffi::CString::new(IMAGE_PTX).unwrap();
        let mut module = ptr::null_mut();
        check(unsafe { cu::cuModuleLoadData(&mut module, ptx.as_ptr().cast()) });
        let mut kernel = ptr::null_mut();
        check(unsafe { cu::cuModuleGetFunction(&mut kernel, module, c"mandelbrot".as_ptr()) });
        Writer { module, kernel }
    }

    fn write(&self, env: &Env, surface: u64, w: u32, h: u32, k: u64) {
        let (mut s, mut ww, mut hh, mut mi) = (surface, w, h, 1u32);
        let (mut x0, mut y0, mut step) = (-2.0f32 + k as f32 * 1e-4, 1.0f32, 3.0f32 / w as f32);
        let mut args = [
            &mut s as *mut _ as *mut c_void,
            &mut ww as *mut _ as *mut c_void,
            &mut hh as *mut _ as *mut c_void,
            &mut x0 as *mut _ as *mut c_void,
            &mut y0 as *mut _ as *mut c_void,
            &mut step as *mut _ as *mut c_void,
            &mut mi as *mut _ as *mut c_void,
        ];
        check(unsafe {
            cu::cuLaunchKernel(
                self.kernel,
                w.div_ceil(16),
                h.div_ceil(16),
                1,
                16,
                16,
                1,
                0,
                env.stream,
                args.as_mut_ptr(),
                ptr::null_mut(),
            )
        });
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        unsafe { cu::cuModuleUnload(self.module) };
    }
}

/// A prepared ring (its slots released to CUDA, the timeline at 1).
fn prepared_ring(env: &Env, w: u32, h: u32, n: u32) -> Ring {
    let ring = Ring::create(
        &env.ctx,
        &Description::new(vk::Format::R8G8B8A8_UNORM, w, h, n),
    )
    .unwrap();
    let cmd = env.v.command_buffer();
    let s = unsafe { ring.cmd_prepare(cmd, env.v.family) }.unwrap();
    submit(
        &env.v,
        cmd,
        ring.vk_timeline(),
        0,
        s.signal_values[0],
        vk::Fence::null(),
    );
    env.idle();
    ring
}

/// `frames` frames through the library: per frame (µs), and the host time of
/// `cmd_present` alone (µs per call).
fn library(
    env: &Env,
    ring: &Ring,
    fr: &Frames,
    stand: &Stand,
    wr: &Writer,
    frames: u64,
    first: u64,
) -> (f64, f64) {
    let (w, h) = (ring.description().width, ring.description().height);
    let surfaces: Vec<u64> = ring
        .images()
        .iter()
        .map(|im| im.surface(0, 0).unwrap())
        .collect();
    let target = Target {
        new_layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        filter: vk::Filter::LINEAR,
        ..Target::new(
            env.v.device.handle(),
            stand.image,
            vk::Format::B8G8R8A8_UNORM,
            stand.extent,
        )
    };
    let mut record = Duration::ZERO;
    let t0 = Instant::now();
    for k in first..first + frames {
        let wri = ring.cuda_begin(env.stream).unwrap();
        debug_assert_eq!(wri.frame, k);
        wr.write(env, surfaces[wri.index as usize], w, h, k);
        ring.cuda_end(wri.frame, env.stream).unwrap();
        let (cmd, fence) = fr.begin(&env.v, k);
        let r0 = Instant::now();
        let s = unsafe { ring.cmd_present(cmd, env.v.family, &target) }.unwrap();
        record += r0.elapsed();
        submit(
            &env.v,
            cmd,
            s.wait_semaphores[0],
            s.wait_values[0],
            s.signal_values[0],
            fence,
        );
    }
    env.spin_until(ring.vk_timeline(), 2 * (first + frames - 1) + 1);
    let per = t0.elapsed().as_secs_f64() * 1e6 / frames as f64;
    (per, record.as_secs_f64() * 1e6 / frames as f64)
}

/// The same frames with the raw calls, on `raw`'s timeline (at 1 before frame 1)
/// and `images`' slots.
#[allow(clippy::too_many_arguments)]
fn raw_calls(
    env: &Env,
    raw: &RawTimeline,
    images: &Ring,
    fr: &Frames,
    stand: &Stand,
    wr: &Writer,
    frames: u64,
    first: u64,
) -> (f64, f64) {
    let d = *images.description();
    let (w, h, n) = (d.width, d.height, u64::from(d.count));
    let slots: Vec<(vk::Image, u64)> = images
        .images()
        .iter()
        .map(|im| (im.vk_image(), im.surface(0, 0).unwrap()))
        .collect();
    let color = color_range();
    let layers = vk::ImageSubresourceLayers {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: 1,
    };
    let corner = |x: u32, y: u32| vk::Offset3D {
        x: x as i32,
        y: y as i32,
        z: 1,
    };
    let region = vk::ImageBlit {
        src_subresource: layers,
        src_offsets: [vk::Offset3D::default(), corner(w, h)],
        dst_subresource: layers,
        dst_offsets: [
            vk::Offset3D::default(),
            corner(stand.extent.width, stand.extent.height),
        ],
    };
    let family = env.v.family;
    let mut record = Duration::ZERO;
    let t0 = Instant::now();
    for k in first..first + frames {
        let (slot, surface) = slots[((k - 1) % n) as usize];
        raw.cuda_wait(env, if k > n { 2 * (k - n) + 1 } else { 1 });
        wr.write(env, surface, w, h, k);
        raw.cuda_wait(env, 2 * k - 1);
        raw.cuda_signal(env, 2 * k);
        let (cmd, fence) = fr.begin(&env.v, k);
        let r0 = Instant::now();
        let barrier = |old, new, src_family, dst_family, src_access, dst_access, image| {
            vk::ImageMemoryBarrier::default()
                .src_access_mask(src_access)
                .dst_access_mask(dst_access)
                .old_layout(old)
                .new_layout(new)
                .src_queue_family_index(src_family)
                .dst_queue_family_index(dst_family)
                .image(image)
                .subresource_range(color)
        };
        use vk::{AccessFlags as A, ImageLayout as L};
        let ext = vk::QUEUE_FAMILY_EXTERNAL;
        let ign = vk::QUEUE_FAMILY_IGNORED;
        let before = [
            barrier(
                L::GENERAL,
                L::TRANSFER_SRC_OPTIMAL,
                ext,
                family,
                A::empty(),
                A::TRANSFER_READ,
                slot,
            ),
            barrier(
                L::UNDEFINED,
                L::TRANSFER_DST_OPTIMAL,
                ign,
                ign,
                A::empty(),
                A::TRANSFER_WRITE,
                stand.image,
            ),
        ];
        let after = [
            barrier(
                L::TRANSFER_SRC_OPTIMAL,
                L::GENERAL,
                family,
                ext,
                A::empty(),
                A::empty(),
                slot,
            ),
            barrier(
                L::TRANSFER_DST_OPTIMAL,
                L::TRANSFER_SRC_OPTIMAL,
                ign,
                ign,
                A::TRANSFER_WRITE,
                A::MEMORY_READ | A::MEMORY_WRITE,
                stand.image,
            ),
        ];
        let t = vk::PipelineStageFlags::TRANSFER;
        unsafe {
            let dev = &env.v.device;
            dev.cmd_pipeline_barrier(cmd, t, t, vk::DependencyFlags::empty(), &[], &[], &before);
            dev.cmd_blit_image(
                cmd,
                slot,
                L::TRANSFER_SRC_OPTIMAL,
                stand.image,
                L::TRANSFER_DST_OPTIMAL,
                &[region],
                vk::Filter::LINEAR,
            );
            let all = vk::PipelineStageFlags::ALL_COMMANDS;
            dev.cmd_pipeline_barrier(cmd, t, all, vk::DependencyFlags::empty(), &[], &[], &after);
        }
        record += r0.elapsed();
        submit(&env.v, cmd, raw.sem, 2 * k, 2 * k + 1, fence);
    }
    env.spin_until(raw.sem, 2 * (first + frames - 1) + 1);
    let per = t0.elapsed().as_secs_f64() * 1e6 / frames as f64;
    (per, record.as_secs_f64() * 1e6 / frames as f64)
}

/// Every configuration; library and raw batches alternate.
pub fn ring_vs_raw(env: &Env, rep: &mut Report, quick: bool) {
    println!("\n[present] CUDA writes a ring slot, Vulkan blits it into a swapchain-sized image");
    let (batches, frames) = if quick { (3, 20u64) } else { (15, 100u64) };
    let wr = Writer::new();
    for (name, w, h) in [("1080p", 1920, 1080), ("4K", 3840, 2160)] {
        for n in [2u32, 3] {
            let ring = prepared_ring(env, w, h, n);
            let images = prepared_ring(env, w, h, n);
            let raw = RawTimeline::new(env);
            unsafe {
                env.v.device.signal_semaphore(
                    &vk::SemaphoreSignalInfo::default()
                        .semaphore(raw.sem)
                        .value(1),
                )
            }
            .unwrap();
            let stand = Stand::new(&env.v, w, h);
            let fr = Frames::new(&env.v, n);
            let (mut lf, mut lr, mut rf, mut rr) = (vec![], vec![], vec![], vec![]);
            let (mut lk, mut rk) = (1u64, 1u64);
            for _ in 0..batches {
                let (f, r) = library(env, &ring, &fr, &stand, &wr, frames, lk);
                lk += frames;
                lf.push(f);
                lr.push(r);
                let (f, r) = raw_calls(env, &raw, &images, &fr, &stand, &wr, frames, rk);
                rk += frames;
                rf.push(f);
                rr.push(r);
            }
            env.idle();
            let label = format!("{name} {n} in flight");
            let lm = rep.add("present", &format!("{label} library"), &mut lf, "per frame");
            let rm = rep.add("present", &format!("{label} raw"), &mut rf, "per frame");
            rep.derived(
                "present",
                &format!("{label} library/raw"),
                lm / rm,
                TARGET_RATIO,
            );
            rep.add(
                "present",
                &format!("{label} record library"),
                &mut lr,
                "cmd_present, host",
            );
            rep.add(
                "present",
                &format!("{label} record raw"),
                &mut rr,
                "2 barriers + blit, host",
            );
            fr.destroy(&env.v);
            stand.destroy(&env.v);
            drop(raw);
            drop(images);
            drop(ring);
        }
    }
}
