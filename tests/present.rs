//! Presenting shared images (`vkcuda::present::Ring`) through the Rust API: frames
//! written into the ring, blitted into a stand-in for the engine's swapchain image
//! (an ordinary `VkImage` of the test: the swapchain itself is tested under Xvfb by
//! the `present_window` example, c_examples/), read back and compared byte for
//! byte, with frames in flight, a resize (a target of another extent), a minimised
//! window (extent 0) and every refusal. On lavapipe the producer is a Vulkan queue
//! (`Ring::cmd_upload`, the Vulkan-only stand-in for CUDA); the GPU test
//! (`gpu_ring_with_the_cuda_kernel_every_byte`, ignored without a GPU) runs the
//! same ring with the fractal kernel of c_examples/image_kernels.cu writing through
//! CUDA surfaces.

mod support;
use support::{
    assert_same, color_region, cuda_context_or_skip, device_local_image, image_2d, live_counts,
    pattern, serial, vulkan_only_context, HostBuffer, Vk,
};

use std::sync::Arc;

use ash::vk;
use vkcuda::present::{Description, Ring, Submit, Target, Write};
use vkcuda::{Context, ErrorKind};

const RGBA8: vk::Format = vk::Format::R8G8B8A8_UNORM;
const BGRA8: vk::Format = vk::Format::B8G8R8A8_UNORM;

/// The test's stand-in for a swapchain image: a device-local OPTIMAL image the
/// blit writes and the test copies out.
struct TargetImage {
    image: vk::Image,
    memory: vk::DeviceMemory,
    format: vk::Format,
    extent: vk::Extent2D,
}

impl TargetImage {
    fn new(v: &Vk, format: vk::Format, width: u32, height: u32) -> TargetImage {
        let usage = vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC;
        let info = image_2d(format, (width, height), vk::ImageTiling::OPTIMAL, usage);
        let (image, memory) = device_local_image(v, &info);
        TargetImage {
            image,
            memory,
            format,
            extent: vk::Extent2D { width, height },
        }
    }

    /// Its size in bytes (8 per texel of RGBA16F, 4 of the 8-bit formats).
    fn bytes(&self) -> u64 {
        let texel = if self.format == vk::Format::R16G16B16A16_SFLOAT {
            8
        } else {
            4
        };
        u64::from(self.extent.width) * u64::from(self.extent.height) * texel
    }

    /// The ring's target: from UNDEFINED (as an acquired swapchain image) to
    /// TRANSFER_SRC_OPTIMAL (the test copies it out next), `filter` scaling.
    fn target(&self, v: &Vk, filter: vk::Filter) -> Target {
        Target {
            new_layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            filter,
            ..Target::new(v.device.handle(), self.image, self.format, self.extent)
        }
    }

    /// Records the copy of the whole image into `out` after the blit.
    fn record_copy_out(&self, v: &Vk, cmd: vk::CommandBuffer, out: &HostBuffer) {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ);
        let region = color_region(self.extent.width, self.extent.height);
        unsafe {
            v.device.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::TRANSFER,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
            v.device.cmd_copy_image_to_buffer(
                cmd,
                self.image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                out.buffer,
                &[region],
            );
        }
    }

    fn destroy(self, v: &Vk) {
        unsafe {
            v.device.destroy_image(self.image, None);
            v.device.free_memory(self.memory, None);
        }
    }
}

/// Submits `cmd` (ended) with a ring's waits and signals, as an engine does.
fn submit(v: &Vk, cmd: vk::CommandBuffer, s: &Submit, fence: vk::Fence) {
    let waits = s.wait_count as usize;
    let signals = s.signal_count as usize;
    let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
        .wait_semaphore_values(&s.wait_values[..waits])
        .signal_semaphore_values(&s.signal_values[..signals]);
    let cmds = [cmd];
    let info = vk::SubmitInfo::default()
        .command_buffers(&cmds)
        .wait_semaphores(&s.wait_semaphores[..waits])
        .wait_dst_stage_mask(&s.wait_stages[..waits])
        .signal_semaphores(&s.signal_semaphores[..signals])
        .push_next(&mut tl);
    unsafe { v.device.queue_submit(v.queue, &[info], fence) }.unwrap();
}

fn end(v: &Vk, cmd: vk::CommandBuffer) {
    unsafe { v.device.end_command_buffer(cmd) }.unwrap();
}

/// The bytes of frame `k` of a `w` x `h` RGBA8 ring: a pattern that differs per
/// frame and per byte (random-looking), or, for odd seeds, a compressible one.
fn frame_bytes(k: u64, w: u32, h: u32) -> Vec<u8> {
    let n = (w * h * 4) as usize;
    if k % 2 == 0 {
        (0..n).map(|i| pattern(i, k as u32 * 7919)).collect()
    } else {
        (0..n).map(|i| ((i / 4) as u64 % 61 + k) as u8).collect()
    }
}

/// What an RGBA8 source shows in a BGRA8 target of `tw` x `th`, nearest
/// sampling (exact for whole-number upscales).
fn expected_bgra(src: &[u8], w: u32, h: u32, tw: u32, th: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((tw * th * 4) as usize);
    for y in 0..th {
        for x in 0..tw {
            let sx = (x * w / tw) as usize;
            let sy = (y * h / th) as usize;
            let p = (sy * w as usize + sx) * 4;
            out.extend_from_slice(&[src[p + 2], src[p + 1], src[p], src[p + 3]]);
        }
    }
    out
}

/// Records and submits the ring's prepare, and waits for it.
fn prepare(v: &Vk, ring: &Ring) {
    let cmd = v.command_buffer();
    let s = unsafe { ring.cmd_prepare(cmd, v.family) }.unwrap();
    assert_eq!((s.wait_count, s.signal_count), (0, 1));
    assert_eq!(s.signal_values[0], 1);
    end(v, cmd);
    submit(v, cmd, &s, vk::Fence::null());
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
}

/// The Vulkan-only producer: uploads `bytes` as frame `w.frame` (a submit that
/// waits for `w.order_value` and signals `w.signal_value`).
fn produce(v: &Vk, ring: &Ring, w: &Write, staging: &HostBuffer, bytes: &[u8]) {
    staging.bytes()[..bytes.len()].copy_from_slice(bytes);
    let cmd = v.command_buffer();
    unsafe { ring.cmd_upload(cmd, v.family, w, staging.buffer, 0) }.unwrap();
    end(v, cmd);
    let t = ring.vk_timeline();
    v.submit_timeline(
        &[(t, w.order_value)],
        &[(t, w.signal_value)],
        cmd,
        vk::Fence::null(),
    );
}

/// Frames 1..=frames through a ring of `count`: each frame's upload submitted after
/// the previous frame's present (a producer on the same queue as the copies), no
/// host wait between frames but the one before a slot's staging buffer is reused,
/// each present copied out into its own buffer and checked at the end (so frames
/// are really in flight): every byte of every frame.
fn frames_in_flight(count: u32, frames: u64) {
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let (w, h) = (40, 24);
    let ring = Ring::create(&ctx, &Description::new(RGBA8, w, h, count)).unwrap();
    let target = TargetImage::new(&v, BGRA8, w, h);
    prepare(&v, &ring);
    let staging: Vec<HostBuffer> = (0..count)
        .map(|_| v.host_buffer(u64::from(w * h * 4)))
        .collect();
    let outs: Vec<HostBuffer> = (0..frames).map(|_| v.host_buffer(target.bytes())).collect();
    for k in 1..=frames {
        let wr = ring.begin_write().unwrap();
        assert_eq!(wr.frame, k);
        assert_eq!(wr.index as u64, (k - 1) % u64::from(count));
        assert_eq!((wr.order_value, wr.signal_value), (2 * k - 1, 2 * k));
        // The slot's staging buffer is reused: its last upload ran once the frame
        // `count` back was copied out (free_value).
        let t = [ring.vk_timeline()];
        let values = [wr.free_value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&t)
            .values(&values);
        unsafe { v.device.wait_semaphores(&info, u64::MAX) }.unwrap();
        produce(
            &v,
            &ring,
            &wr,
            &staging[wr.index as usize],
            &frame_bytes(k, w, h),
        );
        let cmd = v.command_buffer();
        let s = unsafe { ring.cmd_present(cmd, v.family, &target.target(&v, vk::Filter::NEAREST)) }
            .unwrap();
        assert_eq!(s.frame, k);
        assert!(s.recorded);
        assert_eq!(s.index, wr.index);
        assert_eq!((s.wait_values[0], s.signal_values[0]), (2 * k, 2 * k + 1));
        target.record_copy_out(&v, cmd, &outs[(k - 1) as usize]);
        end(&v, cmd);
        submit(&v, cmd, &s, vk::Fence::null());
    }
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    for k in 1..=frames {
        let want = expected_bgra(&frame_bytes(k, w, h), w, h, w, h);
        let got = &outs[(k - 1) as usize].bytes()[..want.len()];
        assert_same(got, &want, &format!("ring of {count}, frame {k}"));
    }
    for b in staging.into_iter().chain(outs) {
        v.destroy_host_buffer(b);
    }
    target.destroy(&v);
}

#[test]
fn two_frames_in_flight_every_byte() {
    let _serial = serial();
    frames_in_flight(2, 7);
}

#[test]
fn three_frames_in_flight_every_byte() {
    let _serial = serial();
    frames_in_flight(3, 8);
}

/// One frame written, presented into `target` with `filter`, copied out.
fn one_frame(
    v: &Vk,
    ring: &Ring,
    target: &TargetImage,
    bytes: &[u8],
    filter: vk::Filter,
) -> Vec<u8> {
    let staging = v.host_buffer(bytes.len() as u64);
    let wr = ring.begin_write().unwrap();
    produce(v, ring, &wr, &staging, bytes);
    let out = v.host_buffer(target.bytes().max(8));
    let cmd = v.command_buffer();
    let s = unsafe { ring.cmd_present(cmd, v.family, &target.target(v, filter)) }.unwrap();
    target.record_copy_out(v, cmd, &out);
    end(v, cmd);
    submit(v, cmd, &s, vk::Fence::null());
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    let got = out.bytes()[..target.bytes() as usize].to_vec();
    v.destroy_host_buffer(out);
    v.destroy_host_buffer(staging);
    got
}

#[test]
fn a_resized_target_minimised_window_and_the_same_ring() {
    let _serial = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let (w, h) = (32, 20);
    let ring = Ring::create(&ctx, &Description::new(RGBA8, w, h, 2)).unwrap();
    let image = ring.images()[0].vk_image();
    prepare(&v, &ring);

    // The window at the ring's size.
    let small = TargetImage::new(&v, BGRA8, w, h);
    let f1 = frame_bytes(1, w, h);
    let got = one_frame(&v, &ring, &small, &f1, vk::Filter::NEAREST);
    assert_same(&got, &expected_bgra(&f1, w, h, w, h), "frame 1, same size");

    // Resized to twice the size: a new swapchain image, the same ring (no new
    // memory), nearest scaling is exact for a whole-number factor.
    let big = TargetImage::new(&v, BGRA8, 2 * w, 3 * h);
    let f2 = frame_bytes(2, w, h);
    let got = one_frame(&v, &ring, &big, &f2, vk::Filter::NEAREST);
    assert_same(
        &got,
        &expected_bgra(&f2, w, h, 2 * w, 3 * h),
        "frame 2, 2x3 upscale",
    );
    assert_eq!(
        ring.images()[0].vk_image(),
        image,
        "the ring keeps its images"
    );

    // Minimised: extent 0 records nothing, the frame passes on (the submit waits
    // and signals the timeline only), and the next frame is presented.
    let staging = v.host_buffer(u64::from(w * h * 4));
    let wr = ring.begin_write().unwrap();
    produce(&v, &ring, &wr, &staging, &frame_bytes(3, w, h));
    let zero = Target::new(
        v.device.handle(),
        vk::Image::null(),
        BGRA8,
        vk::Extent2D::default(),
    );
    let cmd = v.command_buffer();
    let s = unsafe { ring.cmd_present(cmd, v.family, &zero) }.unwrap();
    assert!(!s.recorded);
    assert_eq!((s.wait_count, s.signal_count), (1, 1));
    end(&v, cmd);
    submit(&v, cmd, &s, vk::Fence::null());
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    v.destroy_host_buffer(staging);
    let f4 = frame_bytes(4, w, h);
    let got = one_frame(&v, &ring, &small, &f4, vk::Filter::NEAREST);
    assert_same(
        &got,
        &expected_bgra(&f4, w, h, w, h),
        "frame 4, after the minimised one",
    );

    // Linear scaling to an odd size: every texel is between its neighbours' values
    // (a constant picture stays that constant).
    let odd = TargetImage::new(&v, BGRA8, 45, 31);
    let flat: Vec<u8> = (0..w * h).flat_map(|_| [10u8, 200, 77, 255]).collect();
    let got = one_frame(&v, &ring, &odd, &flat, vk::Filter::LINEAR);
    assert_same(
        &got,
        &expected_bgra(&flat, w, h, 45, 31),
        "frame 5, linear 45x31",
    );
    for t in [small, big, odd] {
        t.destroy(&v);
    }
}

#[test]
fn rgba16f_and_bgra8_rings_copy_exactly() {
    let _serial = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let (w, h) = (16, 9);
    // RGBA16F into RGBA16F: the same bytes (finite half floats: the pattern's
    // exponent bits are kept below all ones).
    let ring = Ring::create(
        &ctx,
        &Description::new(vk::Format::R16G16B16A16_SFLOAT, w, h, 1),
    )
    .unwrap();
    prepare(&v, &ring);
    let target = TargetImage::new(&v, vk::Format::R16G16B16A16_SFLOAT, w, h);
    let bytes: Vec<u8> = (0..(w * h * 8) as usize)
        .map(|i| {
            if i % 2 == 1 {
                pattern(i, 3) & 0x3b
            } else {
                pattern(i, 3)
            }
        })
        .collect();
    let got = one_frame(&v, &ring, &target, &bytes, vk::Filter::NEAREST);
    assert_same(&got, &bytes, "RGBA16F");
    target.destroy(&v);

    // BGRA8 ring into a BGRA8 target: the same bytes, no swizzle.
    let ring = Ring::create(&ctx, &Description::new(BGRA8, w, h, 2)).unwrap();
    prepare(&v, &ring);
    let target = TargetImage::new(&v, BGRA8, w, h);
    let f = frame_bytes(2, w, h);
    let got = one_frame(&v, &ring, &target, &f, vk::Filter::NEAREST);
    assert_same(&got, &f, "BGRA8 into BGRA8");
    target.destroy(&v);
}

#[test]
fn bad_input_is_refused_with_nothing_recorded_and_nothing_leaked() {
    let _serial = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = live_counts();
    let desc = |format, count| Description::new(format, 16, 16, count);

    let e = Ring::create(&ctx, &desc(RGBA8, 0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(e.message(), "a present ring has 1 to 16 images, not 0");
    let e = Ring::create(&ctx, &desc(RGBA8, 17)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = Ring::create(&ctx, &Description::new(RGBA8, 0, 16, 2)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    for f in [
        vk::Format::R32_UINT,
        vk::Format::D32_SFLOAT,
        vk::Format::BC1_RGB_UNORM_BLOCK,
    ] {
        let e = Ring::create(&ctx, &desc(f, 2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let name = vkcuda::format::display(f);
        assert!(
            e.message()
                .starts_with(&format!("{name} cannot be presented")),
            "{}",
            e.message()
        );
    }
    assert_eq!(live_counts(), before, "refused rings leave nothing behind");

    let ring = Ring::create(&ctx, &desc(RGBA8, 2)).unwrap();
    let target = TargetImage::new(&v, BGRA8, 16, 16);
    let cmd = v.command_buffer();

    // Before the prepare: no frame to write or present.
    let e = ring.begin_write().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    assert!(e.message().contains("not prepared"), "{}", e.message());
    let e = unsafe { ring.cmd_present(cmd, v.family, &target.target(&v, vk::Filter::NEAREST)) }
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    // CUDA calls in a Vulkan-only context.
    let e = ring.cuda_begin(std::ptr::null_mut()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CudaUnavailable);
    unsafe { v.device.end_command_buffer(cmd) }.unwrap();
    prepare(&v, &ring);
    let e = unsafe { ring.cmd_prepare(v.command_buffer(), v.family) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);

    // Presenting an image CUDA has not released: frame 1 begun, not ended.
    let staging = v.host_buffer(16 * 16 * 4);
    let wr = ring.begin_write().unwrap();
    let cmd = v.command_buffer();
    let e = unsafe { ring.cmd_present(cmd, v.family, &target.target(&v, vk::Filter::NEAREST)) }
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    assert_eq!(
        e.message(),
        "frame 1 is still being written: CUDA has not released it (cuda_end)"
    );
    assert_eq!(
        ring.begin_write().unwrap_err().kind(),
        ErrorKind::InvalidState
    );
    let e = ring.end_write(2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    let bytes = frame_bytes(1, 16, 16);
    produce(&v, &ring, &wr, &staging, &bytes);

    // A swapchain image of another device: a second context's device.
    let other = vulkan_only_context();
    let mut t = target.target(&v, vk::Filter::NEAREST);
    t.device = other.vulkan_handles().device;
    let e = unsafe { ring.cmd_present(cmd, v.family, &t) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeviceMismatch);
    assert!(
        e.message()
            .starts_with("the target image belongs to VkDevice"),
        "{}",
        e.message()
    );
    // Target formats a blit cannot write, named.
    for (f, why) in [
        (vk::Format::R8G8B8A8_UINT, "an integer format"),
        (vk::Format::D32_SFLOAT, "a depth/stencil format"),
        (
            vk::Format::BC1_RGB_UNORM_BLOCK,
            "the device has no VK_FORMAT_FEATURE_BLIT_DST_BIT",
        ),
    ] {
        let mut t = target.target(&v, vk::Filter::NEAREST);
        t.format = f;
        let e = unsafe { ring.cmd_present(cmd, v.family, &t) }.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let name = vkcuda::format::display(f);
        assert!(
            e.message()
                .contains(&format!("cannot be blitted into a {name} image: {why}")),
            "{}",
            e.message()
        );
    }
    // A null image with a visible extent, a layout a target cannot be in, a
    // queue family the device has not.
    let mut t = target.target(&v, vk::Filter::NEAREST);
    t.image = vk::Image::null();
    assert_eq!(
        unsafe { ring.cmd_present(cmd, v.family, &t) }
            .unwrap_err()
            .kind(),
        ErrorKind::NullPointer
    );
    let mut t = target.target(&v, vk::Filter::NEAREST);
    t.old_layout = vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL;
    assert_eq!(
        unsafe { ring.cmd_present(cmd, v.family, &t) }
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let t = target.target(&v, vk::Filter::NEAREST);
    assert_eq!(
        unsafe { ring.cmd_present(cmd, 99, &t) }.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );

    // Every refusal recorded nothing and moved nothing: frame 1 is still the one
    // presented, byte for byte.
    let out = v.host_buffer(target.bytes());
    let s = unsafe { ring.cmd_present(cmd, v.family, &t) }.unwrap();
    assert_eq!(s.frame, 1);
    target.record_copy_out(&v, cmd, &out);
    end(&v, cmd);
    submit(&v, cmd, &s, vk::Fence::null());
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    assert_same(
        &out.bytes()[..(16 * 16 * 4)],
        &expected_bgra(&bytes, 16, 16, 16, 16),
        "frame 1 after the refusals",
    );
    // Nothing to present now.
    let cmd = v.command_buffer();
    let e = unsafe { ring.cmd_present(cmd, v.family, &t) }.unwrap_err();
    assert_eq!(
        e.message(),
        "no frame waits to be presented: frame 2 was not written yet"
    );
    end(&v, cmd);

    v.destroy_host_buffer(out);
    v.destroy_host_buffer(staging);
    target.destroy(&v);
    drop(ring);
    drop(other);
    assert_eq!(
        live_counts(),
        before,
        "the ring's images and timeline are released"
    );
}

#[test]
fn the_ring_is_full_until_a_frame_is_presented() {
    let _serial = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let ring = Ring::create(&ctx, &Description::new(RGBA8, 8, 8, 1)).unwrap();
    prepare(&v, &ring);
    let staging = v.host_buffer(8 * 8 * 4);
    let wr = ring.begin_write().unwrap();
    assert_eq!((wr.frame, wr.free_value, wr.order_value), (1, 1, 1));
    produce(&v, &ring, &wr, &staging, &frame_bytes(1, 8, 8));
    let e = ring.begin_write().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    assert_eq!(
        e.message(),
        "every slot of the ring holds a frame not yet presented: record the present of frame 1 \
         before writing frame 2"
    );
    let target = TargetImage::new(&v, BGRA8, 8, 8);
    let cmd = v.command_buffer();
    let s = unsafe { ring.cmd_present(cmd, v.family, &target.target(&v, vk::Filter::NEAREST)) }
        .unwrap();
    end(&v, cmd);
    submit(&v, cmd, &s, vk::Fence::null());
    let wr = ring.begin_write().unwrap();
    assert_eq!((wr.frame, wr.free_value, wr.order_value), (2, 3, 3));
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    v.destroy_host_buffer(staging);
    target.destroy(&v);
}

#[test]
fn a_vulkan_upload_waits_for_the_previous_present_to_be_recorded() {
    let _serial = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let ring = Ring::create(&ctx, &Description::new(RGBA8, 8, 8, 3)).unwrap();
    prepare(&v, &ring);
    let staging = v.host_buffer(8 * 8 * 4);
    let wr = ring.begin_write().unwrap();
    produce(&v, &ring, &wr, &staging, &frame_bytes(1, 8, 8));
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    // Frame 2 may be begun (CUDA, on its own stream, could write it now), but its
    // upload on the copies' queue would wait for frame 1's copy, not yet submitted.
    let wr = ring.begin_write().unwrap();
    let cmd = v.command_buffer();
    let e = unsafe { ring.cmd_upload(cmd, v.family, &wr, staging.buffer, 0) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    assert!(
        e.message()
            .starts_with("frame 2 is uploaded on a Vulkan queue after the present of frame 1"),
        "{}",
        e.message()
    );
    end(&v, cmd);
    v.destroy_host_buffer(staging);
}

// --- GPU -------------------------------------------------------------------------

/// The fractal of c_examples/fractal.h (the host reference of image_kernels.cu's
/// `mandelbrot`, which is compiled with -fmad=false: the same floats, bit for bit).
mod fractal {
    pub fn colour(iter: u32, max_iter: u32) -> u32 {
        const KEYS: [[u32; 3]; 5] = [
            [0, 7, 100],
            [32, 107, 203],
            [237, 255, 255],
            [255, 170, 0],
            [100, 2, 0],
        ];
        if iter >= max_iter {
            return 0xff00_0000;
        }
        let t = (iter * 5) % 320;
        let (k, f) = ((t / 64) as usize, t % 64);
        let n = (k + 1) % 5;
        let c = |i: usize| (KEYS[k][i] * (64 - f) + KEYS[n][i] * f) / 64;
        0xff00_0000 | c(2) << 16 | c(1) << 8 | c(0)
    }

    pub fn iterations(cr: f32, ci: f32, max_iter: u32) -> u32 {
        let (mut zr, mut zi) = (0.0f32, 0.0f32);
        let mut i = 0;
        while i < max_iter {
            let (zr2, zi2) = (zr * zr, zi * zi);
            if zr2 + zi2 > 4.0 {
                break;
            }
            zi = 2.0 * zr * zi + ci;
            zr = zr2 - zi2 + cr;
            i += 1;
        }
        i
    }

    /// RGBA8 bytes of the picture at `(x0, y0)`, `step` per pixel.
    pub fn picture(w: u32, h: u32, x0: f32, y0: f32, step: f32, max_iter: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity((w * h * 4) as usize);
        for y in 0..h {
            for x in 0..w {
                let c = colour(
                    iterations(x0 + step * x as f32, y0 - step * y as f32, max_iter),
                    max_iter,
                );
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        out
    }
}

const IMAGE_PTX: &str = include_str!("../ptx/image_kernels.ptx");

/// The ring with CUDA writing: the fractal kernel draws frame k (its view moves
/// every frame) through the slot's surface between `cuda_begin` and `cuda_end`
/// on one stream, never synchronised with the host; the engine presents into a
/// stand-in of the ring's size (BGRA8) and one of twice its size, frames in flight,
/// and every byte of every frame is compared with the host reference. Rings of 2
/// and 3. Run it under the validation layer and compute-sanitizer too.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_ring_with_the_cuda_kernel_every_byte() {
    let _serial = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_ring_with_the_cuda_kernel_every_byte") else {
        return;
    };
    use cudarc::driver::sys as cu;
    use std::ffi::c_void;
    use support::cuda::{check, Cuda};
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    cuda.enter();
    let ptx = std::ffi::CString::new(IMAGE_PTX).unwrap();
    let mut module = std::ptr::null_mut();
    check(unsafe { cu::cuModuleLoadData(&mut module, ptx.as_ptr().cast()) });
    let mut kernel = std::ptr::null_mut();
    check(unsafe { cu::cuModuleGetFunction(&mut kernel, module, c"mandelbrot".as_ptr()) });
    let mut stream = std::ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
    let (w, h, max_iter) = (320u32, 200u32, 256u32);
    let view = |k: u64| {
        (
            -2.2f32 + 0.01 * k as f32,
            1.2f32,
            3.2f32 / w as f32 * (1.0 - 0.02 * k as f32),
        )
    };
    for count in [2u32, 3] {
        let frames = 3 * u64::from(count) + 1;
        let ring = Ring::create(&ctx, &Description::new(RGBA8, w, h, count)).unwrap();
        prepare(&v, &ring);
        let same = TargetImage::new(&v, BGRA8, w, h);
        let twice = TargetImage::new(&v, BGRA8, 2 * w, 2 * h);
        let outs: Vec<(HostBuffer, HostBuffer)> = (0..frames)
            .map(|_| (v.host_buffer(same.bytes()), v.host_buffer(twice.bytes())))
            .collect();
        let mut written = 0;
        for k in 1..=frames {
            while written < frames && written < k - 1 + u64::from(count) {
                let wr = ring.cuda_begin(stream).unwrap();
                let surface = ring.image(wr.index).unwrap().surface(0, 0).unwrap();
                let (x0, y0, step) = view(wr.frame);
                let (mut s, mut ww, mut hh, mut x0, mut y0, mut step, mut mi) =
                    (surface, w, h, x0, y0, step, max_iter);
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
                        kernel,
                        w.div_ceil(16),
                        h.div_ceil(16),
                        1,
                        16,
                        16,
                        1,
                        0,
                        stream,
                        args.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                });
                ring.cuda_end(wr.frame, stream).unwrap();
                written += 1;
            }
            // Two presents of one frame are two frames of the ring: present frame
            // k into the stand-in of the ring's size; the 2x target gets it with
            // the next present (the same frame again would need a second write).
            let cmd = v.command_buffer();
            let t = if k % 2 == 0 { &twice } else { &same };
            let s = unsafe { ring.cmd_present(cmd, v.family, &t.target(&v, vk::Filter::NEAREST)) }
                .unwrap();
            let out = &outs[(k - 1) as usize];
            t.record_copy_out(&v, cmd, if k % 2 == 0 { &out.1 } else { &out.0 });
            end(&v, cmd);
            submit(&v, cmd, &s, vk::Fence::null());
        }
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        check(unsafe { cu::cuStreamSynchronize(stream) });
        for k in 1..=frames {
            let (x0, y0, step) = view(k);
            let src = fractal::picture(w, h, x0, y0, step, max_iter);
            let (tw, th, buf) = if k % 2 == 0 {
                (2 * w, 2 * h, &outs[(k - 1) as usize].1)
            } else {
                (w, h, &outs[(k - 1) as usize].0)
            };
            let want = expected_bgra(&src, w, h, tw, th);
            assert_same(
                &buf.bytes()[..want.len()],
                &want,
                &format!("ring of {count}, frame {k}"),
            );
        }
        for (a, b) in outs {
            v.destroy_host_buffer(a);
            v.destroy_host_buffer(b);
        }
        same.destroy(&v);
        twice.destroy(&v);
        eprintln!(
            "ring of {count}: {frames} CUDA frames presented, every byte as the host reference"
        );
    }
    check(unsafe { cu::cuStreamDestroy_v2(stream) });
    check(unsafe { cu::cuModuleUnload(module) });
    cuda.leave();
}

/// Shared video frames in the ring: NV12 (8-bit) and P010 (10-bit), a luma plane
/// that differs per pixel (random samples or a ramp) and chroma in blocks of 4x4
/// chroma samples, so that a pixel whose neighbouring chroma samples are one
/// block's has one colour whatever the chroma siting and filter. The host's
/// conversion (BT.709, narrow or full range) is the reference, within 2 of 255
/// per channel.
mod video {
    use super::pattern;
    use ash::vk;

    pub const NV12: vk::Format = vk::Format::G8_B8R8_2PLANE_420_UNORM;
    pub const P010: vk::Format = vk::Format::G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16;
    const BLOCK: usize = 4;

    /// A frame's samples: luma (`w` x `h`), CbCr interleaved (`w/2` x `h/2`
    /// pairs), `bits` per sample.
    pub struct Frame {
        pub luma: Vec<u32>,
        pub cbcr: Vec<u32>,
        pub bits: u32,
    }

    /// Frame `k` of `w` x `h`.
    pub fn frame(k: u64, w: u32, h: u32, bits: u32) -> Frame {
        let (w, h) = (w as usize, h as usize);
        let max = (1u32 << bits) - 1;
        let s = 1u32 << (bits - 8);
        let luma = (0..w * h)
            .map(|i| {
                if k % 2 == 0 {
                    (u32::from(pattern(i, k as u32 * 7919)) << 8
                        | u32::from(pattern(i, k as u32 * 31 + 1)))
                        & max
                } else {
                    (((i % w) * 3 + (i / w) * 5) as u32 * s + k as u32) & max
                }
            })
            .collect();
        let (cw, ch) = (w / 2, h / 2);
        let mut cbcr = Vec::with_capacity(cw * ch * 2);
        for cy in 0..ch {
            for cx in 0..cw {
                let (bx, by, k) = (cx / BLOCK, cy / BLOCK, k as usize);
                cbcr.push((48 + (bx * 37 + by * 11 + k * 5) % 160) as u32 * s);
                cbcr.push((48 + (bx * 13 + by * 29 + k * 7) % 160) as u32 * s);
            }
        }
        Frame { luma, cbcr, bits }
    }

    impl Frame {
        /// The planes' bytes as the frame holds them, each plane packed: 8-bit
        /// samples, or 16-bit words with the sample in the high bits.
        pub fn plane_bytes(&self, plane: usize) -> Vec<u8> {
            let samples = if plane == 0 { &self.luma } else { &self.cbcr };
            if self.bits == 8 {
                samples.iter().map(|&s| s as u8).collect()
            } else {
                samples
                    .iter()
                    .flat_map(|&s| ((s << (16 - self.bits)) as u16).to_le_bytes())
                    .collect()
            }
        }

        /// Both planes, one after the other (what `cmd_upload` takes).
        pub fn bytes(&self) -> Vec<u8> {
            let mut b = self.plane_bytes(0);
            b.extend(self.plane_bytes(1));
            b
        }

        /// BT.709 Y'CbCr to 8-bit R'G'B'.
        fn rgb(&self, y: u32, cb: u32, cr: u32, full: bool) -> [i32; 3] {
            let (y, cb, cr) = (f64::from(y), f64::from(cb), f64::from(cr));
            let s = f64::from(1u32 << (self.bits - 8));
            let max = f64::from((1u32 << self.bits) - 1);
            let (yy, cb, cr) = if full {
                (y / max, (cb - 128.0 * s) / max, (cr - 128.0 * s) / max)
            } else {
                (
                    (y - 16.0 * s) / (219.0 * s),
                    (cb - 128.0 * s) / (224.0 * s),
                    (cr - 128.0 * s) / (224.0 * s),
                )
            };
            let (kr, kb) = (0.2126, 0.0722);
            let kg = 1.0 - kr - kb;
            [
                yy + 2.0 * (1.0 - kr) * cr,
                yy - 2.0 * kb * (1.0 - kb) / kg * cb - 2.0 * kr * (1.0 - kr) / kg * cr,
                yy + 2.0 * (1.0 - kb) * cb,
            ]
            .map(|c| (c.clamp(0.0, 1.0) * 255.0 + 0.5).floor() as i32)
        }

        /// Checks a BGRA8 target of `tw` x `th` that shows this frame of `w` x
        /// `h` (nearest scaling by a whole factor): every pixel whose chroma
        /// neighbourhood is one block's, within 2 per channel; alpha 255 everywhere.
        /// Returns the pixels checked.
        #[track_caller]
        pub fn check(
            &self,
            got: &[u8],
            (w, h): (u32, u32),
            (tw, th): (u32, u32),
            full: bool,
            what: &str,
        ) -> usize {
            let (w, h) = (w as usize, h as usize);
            let (cw, ch) = (w / 2, h / 2);
            let one_block =
                |c: usize, n: usize| c.saturating_sub(1) / BLOCK == (c + 1).min(n - 1) / BLOCK;
            let mut checked = 0;
            for ty in 0..th as usize {
                for tx in 0..tw as usize {
                    let (x, y) = (tx * w / tw as usize, ty * h / th as usize);
                    let (cx, cy) = (x / 2, y / 2);
                    let p = (ty * tw as usize + tx) * 4;
                    assert_eq!(got[p + 3], 255, "{what}: alpha of ({tx}, {ty})");
                    if !one_block(cx, cw) || !one_block(cy, ch) {
                        continue;
                    }
                    let c = (cy * cw + cx) * 2;
                    let want = self.rgb(self.luma[y * w + x], self.cbcr[c], self.cbcr[c + 1], full);
                    let have = [got[p + 2], got[p + 1], got[p]].map(i32::from);
                    for k in 0..3 {
                        assert!(
                            (want[k] - have[k]).abs() <= 2,
                            "{what}: pixel ({tx}, {ty}) channel {k} is {}, the host's \
                             conversion gives {}",
                            have[k],
                            want[k]
                        );
                    }
                    checked += 1;
                }
            }
            checked
        }
    }
}

/// `VKCUDA_EXPECT_VIDEO_FRAMES=1` (the CTest on a lavapipe with linear NV12):
/// a device without video frames fails the test instead of skipping its part.
fn expect_video_frames() -> bool {
    std::env::var_os("VKCUDA_EXPECT_VIDEO_FRAMES").is_some_and(|v| v == "1")
}

/// How a video ring's frames are written: by a Vulkan queue (`cmd_upload`, the
/// planes one after the other) or by CUDA on a stream.
trait Producer {
    /// Writes `frame` into slot `wr` (begun by the producer itself) and ends it.
    fn write(&mut self, ring: &Ring, frame: &video::Frame) -> Write;
    /// Waits for the producer's own queued work (before the ring is dropped).
    fn finish(&mut self) {}
}

/// The Vulkan-only producer: one staging buffer per slot.
struct VulkanProducer<'a> {
    v: &'a Vk,
    staging: Vec<HostBuffer>,
}

impl Producer for VulkanProducer<'_> {
    fn write(&mut self, ring: &Ring, frame: &video::Frame) -> Write {
        let wr = ring.begin_write().unwrap();
        // The slot's staging buffer is reused once the slot's last frame is copied out.
        let t = [ring.vk_timeline()];
        let values = [wr.free_value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&t)
            .values(&values);
        unsafe { self.v.device.wait_semaphores(&info, u64::MAX) }.unwrap();
        let bytes = frame.bytes();
        if self.staging.len() <= wr.index as usize {
            self.staging.push(self.v.host_buffer(bytes.len() as u64));
        }
        produce(self.v, ring, &wr, &self.staging[wr.index as usize], &bytes);
        wr
    }
}

/// A ring of `count` video frames of `format`, `w` x `h`, frames in flight: each
/// frame written by `producer`, presented through the sampling pass into a BGRA8
/// stand-in of the ring's size (odd frames) or twice its size (even frames),
/// copied out, and every frame checked at the end against the host's conversion.
/// The colour: the default where the device samples it (else the prepare is
/// refused naming MIDPOINT, and chroma is cosited), or full range (cosited) when
/// `full`. Returns the ring's creation error, for the caller to skip on.
#[allow(clippy::too_many_arguments)]
fn video_ring(
    ctx: &Arc<Context>,
    v: &Vk,
    producer: &mut dyn Producer,
    (format, bits): (vk::Format, u32),
    (w, h): (u32, u32),
    count: u32,
    full: bool,
) -> vkcuda::Result<()> {
    let at_start = vkcuda::live_objects().vk_images;
    let ring = Ring::create(ctx, &Description::new(format, w, h, count))?;
    let name = vkcuda::format::display(format);
    assert!(ring.is_video());
    assert!(ring.images().iter().all(|im| im.is_frame()));
    let default = vkcuda::image::VideoColor::DEFAULT;
    assert_eq!(ring.video_color().unwrap(), default);
    let mut prepared = false;
    if !full {
        let cmd = v.command_buffer();
        match unsafe { ring.cmd_prepare(cmd, v.family) } {
            Ok(s) => {
                end(v, cmd);
                submit(v, cmd, &s, vk::Fence::null());
                unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
                prepared = true;
            }
            Err(e) if e.message().contains("MIDPOINT") => {
                assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
                eprintln!("{name}: the default colour is refused here: {e}");
                end(v, cmd);
            }
            Err(e) => panic!("{name} ring: {e}"),
        }
    }
    if !prepared {
        let color = vkcuda::image::VideoColor {
            full_range: full,
            x_chroma: vk::ChromaLocation::COSITED_EVEN,
            y_chroma: vk::ChromaLocation::COSITED_EVEN,
            ..default
        };
        ring.set_video_color(&color).unwrap();
        assert_eq!(ring.video_color().unwrap(), color);
        if !full {
            // The default was refused by the prepare: set again, it is refused
            // at once, and the ring keeps the colour it had.
            let e = ring.set_video_color(&default).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(e.message().contains("MIDPOINT"), "{e}");
        }
        assert_eq!(ring.video_color().unwrap(), color);
        assert!(ring
            .images()
            .iter()
            .all(|im| im.video_color().unwrap() == color));
        prepare(v, &ring);
    }
    let e = ring.set_video_color(&default).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
    // Prepared: the frames and the sampling pass's RGB image are live objects.
    assert_eq!(
        vkcuda::live_objects().vk_images - at_start,
        i64::from(count) + 1,
        "{name}: the ring's {count} frames and its RGB image"
    );
    let same = TargetImage::new(v, BGRA8, w, h);
    let twice = TargetImage::new(v, BGRA8, 2 * w, 2 * h);
    let frames = 2 * u64::from(count) + 1;
    let outs: Vec<HostBuffer> = (0..frames).map(|_| v.host_buffer(twice.bytes())).collect();
    for k in 1..=frames {
        let wr = producer.write(&ring, &video::frame(k, w, h, bits));
        assert_eq!(wr.frame, k);
        let target = if k % 2 == 0 { &twice } else { &same };
        let cmd = v.command_buffer();
        let s = unsafe { ring.cmd_present(cmd, v.family, &target.target(v, vk::Filter::NEAREST)) }
            .unwrap();
        assert_eq!((s.frame, s.index, s.recorded), (k, wr.index, true));
        assert_eq!(s.wait_stages[0], vk::PipelineStageFlags::COMPUTE_SHADER);
        target.record_copy_out(v, cmd, &outs[(k - 1) as usize]);
        end(v, cmd);
        submit(v, cmd, &s, vk::Fence::null());
    }
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    producer.finish();
    for k in 1..=frames {
        let t = if k % 2 == 0 { &twice } else { &same };
        let got = &outs[(k - 1) as usize].bytes()[..t.bytes() as usize];
        let what = format!("{name} {w}x{h} ring of {count} (full range: {full}), frame {k}");
        let checked = video::frame(k, w, h, bits).check(
            got,
            (w, h),
            (t.extent.width, t.extent.height),
            full,
            &what,
        );
        assert!(
            checked * 5 >= (t.extent.width * t.extent.height) as usize,
            "{what}: only {checked} pixels checked"
        );
    }
    eprintln!(
        "{name} {w}x{h} ring of {count} (full range: {full}): {frames} frames sampled and \
         presented, every checked pixel within 2 of the host's conversion"
    );
    for b in outs {
        v.destroy_host_buffer(b);
    }
    same.destroy(v);
    twice.destroy(v);
    Ok(())
}

/// Rings of shared video frames on lavapipe (Mesa 25 makes linear NV12 and
/// P010; Debian 12's Mesa 22.3 makes no multi-planar format, and then this test
/// says so and checks only the refusals): frames uploaded by a Vulkan queue,
/// presented through the YCbCr sampling pass (RGBA8 for NV12, RGBA16F for
/// P010), frames in flight, scaled, every checked pixel compared with the
/// host's conversion; narrow range with rings of 2, full range with a ring of 3;
/// the colour refused once prepared and on a ring of RGBA images; nothing leaked.
#[test]
fn a_ring_of_video_frames_is_sampled_through_its_conversion() {
    let _serial = serial();
    let before = live_counts();
    {
        let ctx = vulkan_only_context();
        let v = Vk::of(&ctx);
        let rgba = Ring::create(&ctx, &Description::new(RGBA8, 64, 32, 2)).unwrap();
        assert!(!rgba.is_video());
        let e = rgba
            .set_video_color(&vkcuda::image::VideoColor::DEFAULT)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(rgba.video_color().is_err());
        drop(rgba);
        let mut producer = VulkanProducer {
            v: &v,
            staging: Vec::new(),
        };
        let cases = [
            (video::NV12, 8, 2, false),
            (video::NV12, 8, 3, true),
            (video::P010, 10, 2, false),
        ];
        for (format, bits, count, full) in cases {
            producer
                .staging
                .drain(..)
                .for_each(|b| v.destroy_host_buffer(b));
            let r = video_ring(
                &ctx,
                &v,
                &mut producer,
                (format, bits),
                (64, 32),
                count,
                full,
            );
            match r {
                Ok(()) => {}
                Err(e)
                    if e.kind() == ErrorKind::Unsupported
                        && (format != video::NV12 || !expect_video_frames()) =>
                {
                    eprintln!(
                        "a_ring_of_video_frames_is_sampled_through_its_conversion: this device \
                         makes no {} video frames (Debian 12's lavapipe offers no multi-planar \
                         format; scripts/lab/fetch-lavapipe.sh fetches one that does): {e}; \
                         that ring left out",
                        vkcuda::format::display(format)
                    );
                }
                Err(e) => panic!("{}: {e}", vkcuda::format::display(format)),
            }
        }
        producer
            .staging
            .drain(..)
            .for_each(|b| v.destroy_host_buffer(b));
    }
    assert_eq!(live_counts(), before, "live objects after the video rings");
}

/// The CUDA producer of a video ring: `cuda_begin` on its stream, one
/// `cuMemcpy2DAsync` per plane from the host into the slot's pitched plane, and
/// `cuda_end`; the stream is never synchronised with the host between frames
/// (the frames' host bytes are kept until the end).
struct CudaProducer {
    stream: cudarc::driver::sys::CUstream,
    kept: Vec<Vec<u8>>,
}

impl Producer for CudaProducer {
    fn write(&mut self, ring: &Ring, frame: &video::Frame) -> Write {
        use cudarc::driver::sys as cu;
        let wr = ring.cuda_begin(self.stream).unwrap();
        let im = ring.image(wr.index).unwrap();
        for plane in 0..2 {
            let bytes = frame.plane_bytes(plane);
            let p = im.plane_pointer(plane).unwrap();
            let row = (p.width * p.bytes_per_texel) as usize;
            let copy = cu::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: bytes.as_ptr().cast(),
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: row,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: cu::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: p.pointer,
                dstArray: std::ptr::null_mut(),
                dstPitch: p.layout.row_pitch as usize,
                WidthInBytes: row,
                Height: p.height as usize,
            };
            support::cuda::check(unsafe { cu::cuMemcpy2DAsync_v2(&copy, self.stream) });
            self.kept.push(bytes);
        }
        ring.cuda_end(wr.frame, self.stream).unwrap();
        wr
    }

    fn finish(&mut self) {
        support::cuda::check(unsafe { cudarc::driver::sys::cuStreamSynchronize(self.stream) });
        self.kept.clear();
    }
}

/// The video ring with CUDA writing each frame's planes into the shared frame
/// (as NVDEC's output is copied in), on one stream never synchronised with the
/// host between frames; presented through the YCbCr pass into stand-ins of the
/// ring's size and twice it, frames in flight: NV12 (RGBA8 pass) and P010
/// (RGBA16F pass) at 1280x720, rings of 2 and 3, narrow and full range, every
/// checked pixel within 2 of the host's conversion. Run it under the
/// validation layer and compute-sanitizer too.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_video_ring_with_cuda_writing_the_planes() {
    let _serial = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_video_ring_with_cuda_writing_the_planes") else {
        return;
    };
    use cudarc::driver::sys as cu;
    use support::cuda::{check, Cuda};
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    cuda.enter();
    let mut stream = std::ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
    let cases = [
        (video::NV12, 8, 2, false),
        (video::NV12, 8, 3, true),
        (video::P010, 10, 2, false),
        (video::P010, 10, 3, true),
    ];
    for (format, bits, count, full) in cases {
        let mut producer = CudaProducer {
            stream,
            kept: Vec::new(),
        };
        video_ring(
            &ctx,
            &v,
            &mut producer,
            (format, bits),
            (1280, 720),
            count,
            full,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", vkcuda::format::display(format)));
    }
    check(unsafe { cu::cuStreamDestroy_v2(stream) });
    cuda.leave();
}
