//! Shared semaphores. On the CPU: lavapipe has no VK_KHR_external_semaphore_fd,
//! so creation must fail clearly; the value contract and the frame-pacing helper are
//! unit tested in src/semaphore.rs, and for real on the GPU here (`gpu_*`, ignored
//! without `--include-ignored`).

mod support;
use support::*;

use std::ptr;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};

#[test]
fn creation_without_the_extension_says_so() {
    let ctx = vulkan_only_context();
    let mut support_count = 0;
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut support_count, ptr::null_mut()) });
    let info = semaphore_create_info(0, 0);
    let mut s = 1usize as *mut vkcuda_semaphore;
    let r = unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) };
    if r == VKCUDA_SUCCESS {
        // A Vulkan driver with external semaphores (not lavapipe): must work fully.
        let mut v = 9;
        ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
        assert_eq!(v, 0);
        unsafe { vkcuda_semaphore_destroy(s) };
    } else {
        let msg = fails(r, VKCUDA_ERROR_EXTENSION_NOT_PRESENT);
        assert!(msg.contains("VK_KHR_external_semaphore_fd"), "{msg}");
        assert!(s.is_null(), "the handle is set to NULL on failure");
    }
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn arguments_are_checked_before_the_device_is_asked() {
    let ctx = vulkan_only_context();
    let mut s = ptr::null_mut();
    let good = semaphore_create_info(0, 0);
    let bad_type = vkcuda_semaphore_create_info {
        semaphore_type: vkcuda_semaphore_type_raw(42),
        ..good
    };
    let msg = fails(
        unsafe { vkcuda_semaphore_create(ctx, &bad_type, &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("vkcuda_semaphore_type"), "{msg}");
    let bad_flags = vkcuda_semaphore_create_info {
        flags: 0x10,
        ..good
    };
    fails(
        unsafe { vkcuda_semaphore_create(ctx, &bad_flags, &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn every_semaphore_function_refuses_null() {
    let null = ptr::null();
    let mut v = 0u64;
    let mut fd = 0;
    let mut st = vkcuda_timeline_stage {
        wait_value: 0,
        signal_value: 0,
    };
    let mut vs = ash::vk::Semaphore::null();
    let stream = ptr::null_mut();
    for r in [
        unsafe { vkcuda_semaphore_cuda_signal(null, 1, stream) },
        unsafe { vkcuda_semaphore_cuda_wait(null, 1, stream) },
        unsafe { vkcuda_semaphore_host_signal(null, 1) },
        unsafe { vkcuda_semaphore_host_wait(null, 1, 0) },
        unsafe { vkcuda_semaphore_get_value(null, &mut v) },
        unsafe { vkcuda_semaphore_next_stage(null, &mut st) },
        unsafe { vkcuda_semaphore_export_fd(null, &mut fd) },
        unsafe { vkcuda_semaphore_get_vk_semaphore(null, &mut vs) },
        unsafe { vkcuda_semaphore_note_vulkan_signal(null) },
        unsafe { vkcuda_semaphore_note_vulkan_wait(null) },
    ] {
        let msg = fails(r, VKCUDA_ERROR_NULL_POINTER);
        assert!(msg.contains("semaphore"), "{msg}");
    }
    unsafe { vkcuda_semaphore_destroy(ptr::null_mut()) };
}

// ---------------------------------------------------------------------------------
// GPU: both halves for real (CUDA through the driver API on a stream).

fn vk_semaphore(s: *const vkcuda_semaphore) -> vk::Semaphore {
    let mut out = vk::Semaphore::null();
    ok(unsafe { vkcuda_semaphore_get_vk_semaphore(s, &mut out) });
    out
}

fn value(s: *const vkcuda_semaphore) -> u64 {
    let mut v = 0;
    ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
    v
}

/// Submits `record` waiting for `wait` and signalling `signal` on the timeline.
fn submit(
    v: &Vk,
    sem: vk::Semaphore,
    wait: Option<u64>,
    signal: Option<u64>,
    record: impl FnOnce(vk::CommandBuffer),
) {
    let cmd = v.command_buffer();
    record(cmd);
    unsafe { v.device.end_command_buffer(cmd).unwrap() };
    let waits: Vec<_> = wait.map(|w| (sem, w)).into_iter().collect();
    let signals: Vec<_> = signal.map(|s| (sem, s)).into_iter().collect();
    v.submit_timeline(&waits, &signals, cmd, vk::Fence::null());
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_timeline_semaphore_both_ways() {
    let Some(ctx) = cuda_context_or_skip("gpu_timeline_semaphore_both_ways") else {
        return;
    };
    let v = Vk::new(ctx);
    let cuda = Cuda::of(ctx);
    let s = create_semaphore(ctx, 0, 10);
    let vs = vk_semaphore(s);
    assert_eq!(value(s), 10);
    let b = create_buffer(ctx, 1 << 20, 0);
    let info = buffer_info(b);
    let host = v.host_buffer(1 << 20);
    let h = handoff_info(v.family);
    cuda.enter();
    let mut stream = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream, 0) });
    cuda.leave();
    let stream_c: *mut CUstream_st = stream.cast();

    // Host signal -> CUDA wait -> CUDA signal -> host wait.
    ok(unsafe { vkcuda_semaphore_host_signal(s, 11) });
    ok(unsafe { vkcuda_semaphore_cuda_wait(s, 11, stream_c) });
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, 12, stream_c) });
    ok(unsafe { vkcuda_semaphore_host_wait(s, 12, 1_000_000_000) });
    assert_eq!(value(s), 12);

    // 100 frames: Vulkan fills the buffer with the frame number and signals; CUDA
    // waits, adds on its side (a memset of frame+1000 over the second half), signals;
    // Vulkan waits and copies out; the host checks every word.
    for frame in 0..100u32 {
        let mut vkstage = vkcuda_timeline_stage {
            wait_value: 0,
            signal_value: 0,
        };
        ok(unsafe { vkcuda_semaphore_next_stage(s, &mut vkstage) });
        submit(
            &v,
            vs,
            Some(vkstage.wait_value),
            Some(vkstage.signal_value),
            |cmd| unsafe {
                ok(vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h));
                v.device
                    .cmd_fill_buffer(cmd, info.buffer, 0, 1 << 20, frame);
                ok(vkcuda_buffer_cmd_release_to_cuda(b, cmd, &h));
            },
        );
        let mut custage = vkcuda_timeline_stage {
            wait_value: 0,
            signal_value: 0,
        };
        ok(unsafe { vkcuda_semaphore_next_stage(s, &mut custage) });
        assert_eq!(custage.wait_value, vkstage.signal_value);
        ok(unsafe { vkcuda_semaphore_cuda_wait(s, custage.wait_value, stream_c) });
        cuda.enter();
        check(unsafe {
            cu::cuMemsetD32Async(info.cuda_pointer + (1 << 19), frame + 1000, 1 << 17, stream)
        });
        cuda.leave();
        ok(unsafe { vkcuda_semaphore_cuda_signal(s, custage.signal_value, stream_c) });
        let mut back = vkcuda_timeline_stage {
            wait_value: 0,
            signal_value: 0,
        };
        ok(unsafe { vkcuda_semaphore_next_stage(s, &mut back) });
        submit(
            &v,
            vs,
            Some(back.wait_value),
            Some(back.signal_value),
            |cmd| unsafe {
                ok(vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h));
                v.device.cmd_copy_buffer(
                    cmd,
                    info.buffer,
                    host.buffer,
                    &[vk::BufferCopy::default().size(1 << 20)],
                );
            },
        );
        ok(unsafe { vkcuda_semaphore_host_wait(s, back.signal_value, 5_000_000_000) });
        let words: &[u32] = unsafe { std::slice::from_raw_parts(host.ptr.cast(), 1 << 18) };
        let bad = words
            .iter()
            .enumerate()
            .filter(|(i, &w)| w != if *i < (1 << 17) { frame } else { frame + 1000 })
            .count();
        assert_eq!(bad, 0, "frame {frame}: {bad} words wrong");
    }
    println!(
        "100 frames Vulkan -> CUDA -> Vulkan on one timeline, every word checked; value {}",
        value(s)
    );

    // Values must go forward.
    let cur = value(s);
    let msg = fails(
        unsafe { vkcuda_semaphore_cuda_signal(s, cur, stream_c) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("strictly increase"), "{msg}");
    fails(
        unsafe { vkcuda_semaphore_host_signal(s, cur - 1) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );

    // Timeouts: never signalled, 20 ms.
    let t = Instant::now();
    let msg = fails(
        unsafe { vkcuda_semaphore_host_wait(s, cur + 1000, 20_000_000) },
        VKCUDA_ERROR_TIMEOUT,
    );
    let took = t.elapsed();
    println!("host wait on a value never signalled: TIMEOUT after {took:?} (asked 20 ms): {msg}");
    assert!(
        took >= Duration::from_millis(20) && took < Duration::from_millis(100),
        "{took:?}"
    );
    // Zero timeout polls.
    let t = Instant::now();
    fails(
        unsafe { vkcuda_semaphore_host_wait(s, cur + 1000, 0) },
        VKCUDA_ERROR_TIMEOUT,
    );
    assert!(t.elapsed() < Duration::from_millis(5));
    ok(unsafe { vkcuda_semaphore_host_wait(s, cur, 0) });

    // A stream of another CUDA context is refused.
    let mut other = ptr::null_mut();
    let mut dev = 0;
    check(unsafe { cu::cuDeviceGet(&mut dev, 0) });
    check(unsafe { cu::cuCtxCreate_v2(&mut other, 0, dev) });
    let mut foreign = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut foreign, 0) });
    let mut popped = ptr::null_mut();
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    let msg = fails(
        unsafe { vkcuda_semaphore_cuda_signal(s, cur + 1, foreign.cast()) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    println!("foreign stream: {msg}");
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, cur + 1, ptr::null_mut()) });
    ok(unsafe { vkcuda_semaphore_host_wait(s, cur + 1, 1_000_000_000) });
    check(unsafe { cu::cuCtxPushCurrent_v2(other) });
    check(unsafe { cu::cuStreamDestroy_v2(foreign) });
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    check(unsafe { cu::cuCtxDestroy_v2(other) });

    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    cuda.enter();
    check(unsafe { cu::cuStreamSynchronize(stream) });
    check(unsafe { cu::cuStreamDestroy_v2(stream) });
    cuda.leave();
    v.destroy_host_buffer(host);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_semaphore_destroy(s);
    }
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_binary_semaphore() {
    let Some(ctx) = cuda_context_or_skip("gpu_binary_semaphore") else {
        return;
    };
    let v = Vk::new(ctx);
    let s = create_semaphore(ctx, 1, 0);
    let vs = vk_semaphore(s);
    // CUDA signals, CUDA waits: fine once.
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, 0, ptr::null_mut()) });
    ok(unsafe { vkcuda_semaphore_cuda_wait(s, 0, ptr::null_mut()) });
    let msg = fails(
        unsafe { vkcuda_semaphore_cuda_wait(s, 0, ptr::null_mut()) },
        VKCUDA_ERROR_INVALID_STATE,
    );
    assert!(msg.contains("one wait per signal"), "{msg}");
    fails(
        unsafe { vkcuda_semaphore_cuda_signal(s, 5, ptr::null_mut()) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    fails(
        unsafe { vkcuda_semaphore_host_wait(s, 1, 0) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    // CUDA signals, Vulkan waits in a submit with a fence.
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, 0, ptr::null_mut()) });
    ok(unsafe { vkcuda_semaphore_note_vulkan_wait(s) });
    let fence = unsafe { v.device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
    let waits = [vs];
    let stages = [vk::PipelineStageFlags::ALL_COMMANDS];
    let info = vk::SubmitInfo::default()
        .wait_semaphores(&waits)
        .wait_dst_stage_mask(&stages);
    unsafe { v.device.queue_submit(v.queue, &[info], fence) }.unwrap();
    unsafe { v.device.wait_for_fences(&[fence], true, 5_000_000_000) }.unwrap();
    // Vulkan signals, CUDA waits.
    let sigs = [vs];
    let info = vk::SubmitInfo::default().signal_semaphores(&sigs);
    unsafe { v.device.reset_fences(&[fence]) }.unwrap();
    unsafe { v.device.queue_submit(v.queue, &[info], fence) }.unwrap();
    ok(unsafe { vkcuda_semaphore_note_vulkan_signal(s) });
    ok(unsafe { vkcuda_semaphore_cuda_wait(s, 0, ptr::null_mut()) });
    let cuda = Cuda::of(ctx);
    cuda.enter();
    check(unsafe { cu::cuCtxSynchronize() });
    cuda.leave();
    unsafe { v.device.wait_for_fences(&[fence], true, 5_000_000_000) }.unwrap();
    unsafe { v.device.destroy_fence(fence, None) };
    println!("binary semaphore: CUDA->Vulkan and Vulkan->CUDA, second wait refused");
    unsafe { vkcuda_semaphore_destroy(s) };
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_semaphore_cycles_do_not_grow() {
    let Some(ctx) = cuda_context_or_skip("gpu_semaphore_cycles_do_not_grow") else {
        return;
    };
    unsafe { vkcuda_semaphore_destroy(create_semaphore(ctx, 0, 0)) };
    let (fds, objs) = (fd_count(), live_objects());
    for i in 0..1000 {
        let s = create_semaphore(ctx, i % 2, 0);
        unsafe { vkcuda_semaphore_destroy(s) };
    }
    let (fds2, objs2) = (fd_count(), live_objects());
    println!(
        "1000 semaphore create/destroy: fds {fds} -> {fds2}, vk semaphores {} -> {}, cuda imports {} -> {}",
        objs.vk_semaphores, objs2.vk_semaphores, objs.cuda_external_semaphores, objs2.cuda_external_semaphores
    );
    assert_eq!(fds, fds2);
    assert_eq!(objs.vk_semaphores, objs2.vk_semaphores);
    assert_eq!(
        objs.cuda_external_semaphores,
        objs2.cuda_external_semaphores
    );
    unsafe { vkcuda_context_destroy(ctx) };
}
