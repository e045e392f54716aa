//! Shared semaphores. On the CPU: lavapipe has no VK_KHR_external_semaphore_fd,
//! so creation must fail clearly; the value contract and the frame-pacing helper are
//! unit tested in src/semaphore.rs, and for real on the GPU here (`gpu_*`, ignored
//! without `--include-ignored`). The C door's argument and NULL checks are the
//! misuse matrix's (capi/tests/misuse/semaphore.rs).

mod support;
use support::*;

use std::os::fd::AsFd;
use std::ptr;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};
use vkcuda::buffer::Allocator;
use vkcuda::handoff::Scope;
use vkcuda::semaphore::Kind;
use vkcuda::{pairing, Buffer, ErrorKind, Semaphore};

#[test]
fn semaphores_where_the_device_has_them() {
    let ctx = vulkan_only_context();
    let support = pairing::enumerate()
        .unwrap()
        .into_iter()
        .flatten()
        .find(|r| r.support.props.uuid == ctx_uuid(&ctx))
        .expect("the context's device is listed");
    if !support.support.external_semaphore_fd {
        // The device lacks it: the message says so, not "add it to" (no advice to
        // enable what the device cannot do).
        let e = refused(
            Semaphore::create(&ctx, Kind::Timeline, 0, None),
            ErrorKind::ExtensionNotPresent,
            "does not support VK_KHR_external_semaphore_fd",
        );
        assert!(!e.message().contains("add it to"), "{e}");
        eprintln!("no VK_KHR_external_semaphore_fd here: the refusal was checked");
        return;
    }
    let sem = Semaphore::create(&ctx, Kind::Timeline, 5, None).unwrap();
    assert_eq!(sem.kind(), Kind::Timeline);
    assert_eq!(sem.value().unwrap(), 5);
    let s = sem.next_stage().unwrap();
    assert_eq!((s.wait, s.signal), (5, 6));
    sem.host_signal(6).unwrap();
    sem.host_wait(6, Duration::ZERO).unwrap();
    refused(
        sem.host_signal(6),
        ErrorKind::InvalidArgument,
        "strictly increase",
    );
    refused(
        sem.host_wait(7, Duration::from_millis(5)),
        ErrorKind::Timeout,
        "did not reach 7",
    );
    let fd = sem.export_fd().unwrap();
    let twin = Semaphore::import_fd(&ctx, fd.as_fd(), Kind::Timeline, None).unwrap();
    sem.host_signal(9).unwrap();
    assert_eq!(twin.value().unwrap(), 9, "one payload, two semaphores");
    refused(
        Semaphore::create(&ctx, Kind::Binary, 1, None),
        ErrorKind::InvalidArgument,
        "initial_value must be 0",
    );
}

// ---------------------------------------------------------------------------------
// GPU: both halves for real (CUDA through the driver API on a stream).

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_timeline_semaphore_both_ways() {
    let Some(ctx) = cuda_context_or_skip("gpu_timeline_semaphore_both_ways") else {
        return;
    };
    let cuda = Cuda::of_context(&ctx);
    let s = Semaphore::create(&ctx, Kind::Timeline, 10, None).unwrap();
    assert_eq!(s.value().unwrap(), 10);
    let mut stream = ptr::null_mut();
    cuda.within(|| check(unsafe { cu::cuStreamCreate(&mut stream, 0) }));

    // Host signal -> CUDA wait -> CUDA signal -> host wait (the Vulkan side, queue
    // submits that wait and signal: gpu_frame_loop_through_the_rust_api).
    let second = Duration::from_secs(1);
    s.host_signal(11).unwrap();
    s.cuda_wait(11, stream).unwrap();
    s.cuda_signal(12, stream).unwrap();
    s.host_wait(12, second).unwrap();
    assert_eq!(s.value().unwrap(), 12);

    // Values must go forward.
    let cur = s.value().unwrap();
    let msg = fails(s.cuda_signal(cur, stream), ErrorKind::InvalidArgument);
    assert!(msg.contains("strictly increase"), "{msg}");
    fails(s.host_signal(cur - 1), ErrorKind::InvalidArgument);

    // Timeouts: never signalled, 20 ms; a zero timeout polls once. The same with
    // a semaphore that never spins (spin time zero: the C door's NO_SPIN flag).
    let no_spin = Semaphore::create(&ctx, Kind::Timeline, cur, Some(Duration::ZERO)).unwrap();
    for (what, sem) in [("spinning first", &s), ("no spin", &no_spin)] {
        let t = Instant::now();
        let msg = fails(
            sem.host_wait(cur + 1000, Duration::from_millis(20)),
            ErrorKind::Timeout,
        );
        let took = t.elapsed();
        println!("{what}: host wait on a value never signalled: TIMEOUT after {took:?} (asked 20 ms): {msg}");
        assert!(
            took >= Duration::from_millis(20) && took < Duration::from_millis(100),
            "{what}: {took:?}"
        );
        let t = Instant::now();
        fails(
            sem.host_wait(cur + 1000, Duration::ZERO),
            ErrorKind::Timeout,
        );
        assert!(t.elapsed() < Duration::from_millis(5), "{what}");
        sem.host_wait(cur, Duration::ZERO).unwrap();
    }

    // A stream of another CUDA context is refused.
    let mut other = ptr::null_mut();
    let mut dev = 0;
    check(unsafe { cu::cuDeviceGet(&mut dev, 0) });
    check(unsafe { cu::cuCtxCreate_v2(&mut other, 0, dev) });
    let mut foreign = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut foreign, 0) });
    let mut popped = ptr::null_mut();
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    let msg = fails(s.cuda_signal(cur + 1, foreign), ErrorKind::DeviceMismatch);
    println!("foreign stream: {msg}");
    fails(s.cuda_wait(cur, foreign), ErrorKind::DeviceMismatch);
    // The refused signal did not use up the value.
    s.cuda_signal(cur + 1, ptr::null_mut()).unwrap();
    s.host_wait(cur + 1, second).unwrap();
    let other = Cuda(other);
    other.within(|| check(unsafe { cu::cuStreamDestroy_v2(foreign) }));
    check(unsafe { cu::cuCtxDestroy_v2(other.0) });

    cuda.within(|| {
        check(unsafe { cu::cuStreamSynchronize(stream) });
        check(unsafe { cu::cuStreamDestroy_v2(stream) });
    });
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_binary_semaphore() {
    let Some(ctx) = cuda_context_or_skip("gpu_binary_semaphore") else {
        return;
    };
    let v = Vk::of(&ctx);
    let msg = fails(
        Semaphore::create(&ctx, Kind::Binary, 1, None),
        ErrorKind::InvalidArgument,
    );
    assert!(msg.contains("initial_value must be 0"), "{msg}");
    let s = Semaphore::create(&ctx, Kind::Binary, 0, None).unwrap();
    let vs = s.vk_semaphore();
    let default_stream = ptr::null_mut();
    // CUDA signals, CUDA waits: fine once.
    s.cuda_signal(0, default_stream).unwrap();
    s.cuda_wait(0, default_stream).unwrap();
    let msg = fails(s.cuda_wait(0, default_stream), ErrorKind::InvalidState);
    assert!(msg.contains("one wait per signal"), "{msg}");
    fails(s.cuda_signal(5, default_stream), ErrorKind::InvalidArgument);
    fails(s.host_wait(1, Duration::ZERO), ErrorKind::InvalidArgument);
    // CUDA signals, Vulkan waits in a submit with a fence.
    s.cuda_signal(0, default_stream).unwrap();
    s.note_vulkan_wait().unwrap();
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
    s.note_vulkan_signal().unwrap();
    s.cuda_wait(0, default_stream).unwrap();
    Cuda::of_context(&ctx).synchronize();
    unsafe { v.device.wait_for_fences(&[fence], true, 5_000_000_000) }.unwrap();
    unsafe { v.device.destroy_fence(fence, None) };
    println!("binary semaphore: CUDA->Vulkan and Vulkan->CUDA, second wait refused");
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frame_loop_through_the_rust_api() {
    let Some(ctx) = cuda_context_or_skip("gpu_frame_loop_through_the_rust_api") else {
        return;
    };
    let info = ctx.cuda_info().unwrap();
    assert!(info.primary);
    let v = Vk::of(&ctx);
    let cuda = Cuda::of_context(&ctx);
    let scope = Scope::new(v.family);
    const N: usize = 1 << 20;
    for allocator in [Allocator::Vulkan, Allocator::Cuda] {
        let buf = Buffer::create(&ctx, N as u64, vk::BufferUsageFlags::empty(), allocator).unwrap();
        let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
        let ptr = buf.cuda_ptr().unwrap();
        assert_ne!(ptr, 0);
        let mut stream = std::ptr::null_mut();
        cuda.within(|| {
            check(unsafe { cu::cuStreamCreate(&mut stream, 0) });
        });
        ctx.check_stream(stream).unwrap();
        let host = v.host_buffer(N as u64);
        let mut back = vec![0u8; N];
        for frame in 0..8u32 {
            // Vulkan writes the frame's bytes and hands the buffer to CUDA.
            let written = bytes(N, frame);
            host.bytes().copy_from_slice(&written);
            let vulkan = sem.next_stage().unwrap();
            let cmd = v.command_buffer();
            unsafe {
                v.device.cmd_copy_buffer(
                    cmd,
                    host.buffer,
                    buf.vk_buffer(),
                    &[vk::BufferCopy::default().size(N as u64)],
                );
                buf.cmd_release_to_cuda(cmd, &scope).unwrap();
                v.device.end_command_buffer(cmd).unwrap();
            }
            v.submit_timeline(
                &[(sem.vk_semaphore(), vulkan.wait)],
                &[(sem.vk_semaphore(), vulkan.signal)],
                cmd,
                vk::Fence::null(),
            );
            // CUDA waits, reads what Vulkan wrote, writes the next pattern, signals.
            let c = sem.next_stage().unwrap();
            sem.cuda_wait(c.wait, stream).unwrap();
            let answer = bytes(N, frame + 1000);
            cuda.within(|| unsafe {
                check(cu::cuMemcpyDtoHAsync_v2(
                    back.as_mut_ptr().cast(),
                    ptr,
                    N,
                    stream,
                ));
                check(cu::cuMemcpyHtoDAsync_v2(
                    ptr,
                    answer.as_ptr().cast(),
                    N,
                    stream,
                ));
            });
            sem.cuda_signal(c.signal, stream).unwrap();
            // Vulkan takes it back and reads CUDA's bytes.
            let cmd = v.command_buffer();
            unsafe {
                buf.cmd_acquire_from_cuda(cmd, &scope).unwrap();
                v.device.cmd_copy_buffer(
                    cmd,
                    buf.vk_buffer(),
                    host.buffer,
                    &[vk::BufferCopy::default().size(N as u64)],
                );
                v.device.end_command_buffer(cmd).unwrap();
            }
            let next = sem.next_stage().unwrap();
            v.submit_timeline(
                &[(sem.vk_semaphore(), next.wait)],
                &[(sem.vk_semaphore(), next.signal)],
                cmd,
                vk::Fence::null(),
            );
            sem.host_wait(next.signal, Duration::from_secs(10)).unwrap();
            cuda.within(|| check(unsafe { cu::cuStreamSynchronize(stream) }));
            assert_same(
                &back,
                &written,
                &format!("{allocator:?} frame {frame}: CUDA read"),
            );
            assert_same(
                host.bytes(),
                &answer,
                &format!("{allocator:?} frame {frame}: Vulkan read"),
            );
            unsafe {
                v.device
                    .reset_command_pool(v.pool, vk::CommandPoolResetFlags::empty())
            }
            .unwrap();
        }
        v.destroy_host_buffer(host);
        cuda.within(|| check(unsafe { cu::cuStreamDestroy_v2(stream) }));
    }
}
