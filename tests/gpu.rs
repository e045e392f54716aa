//! GPU tests: both halves for real on an NVIDIA GPU. Without one they skip with a
//! printed reason; with VKCUDA_REQUIRE_GPU=1 they fail instead. CUDA writes and
//! reads here with driver-API copies (the examples in c_examples/ use kernels).

mod support;
use support::*;

use std::ptr;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};

fn mismatches(data: &[u8], seed: u32) -> usize {
    data.iter()
        .enumerate()
        .filter(|(i, &x)| x != pattern(*i, seed))
        .count()
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_context_pairs_by_uuid() {
    let Some(ctx) = cuda_context_or_skip("gpu_context_pairs_by_uuid") else {
        return;
    };
    let mut c: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut c) });
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
    let mut s: vkcuda_physical_device_support = unsafe { std::mem::zeroed() };
    ok(unsafe {
        vkcuda_physical_device_query(
            h.instance,
            h.physical_device,
            h.get_instance_proc_addr,
            &mut s,
        )
    });
    assert_eq!(
        c.device_uuid, s.device_uuid,
        "the CUDA device has the Vulkan device's UUID"
    );
    assert_eq!(c.primary, 1);
    assert_eq!(s.supported, 1, "full interop support");
    println!(
        "standalone: CUDA device {} uuid {:02x?} primary context {:p}",
        c.device_ordinal, c.device_uuid, c.cuda_context
    );

    // Engine style: the test makes its own instance and device, as an engine would.
    let e = EngineDevice::new(
        &[
            ash::khr::external_memory_fd::NAME,
            ash::khr::external_semaphore_fd::NAME,
        ],
        |i, p| {
            let mut id = vk::PhysicalDeviceIDProperties::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
            unsafe { i.get_physical_device_properties2(p, &mut p2) };
            id.device_uuid == c.device_uuid
        },
    );
    let info = e.create_info(0);
    let mut ectx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ectx) });
    let mut ec: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ectx, &mut ec) });
    assert_eq!(ec.device_uuid, c.device_uuid);
    assert_eq!(
        ec.cuda_context, c.cuda_context,
        "both use the device's primary context"
    );
    println!(
        "engine-style context paired with CUDA device {}",
        ec.device_ordinal
    );
    // With the caller's own CUcontext.
    let mut info = e.create_info(0);
    info.cuda_context = c.cuda_context;
    let mut bctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut bctx) });
    let mut bc: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(bctx, &mut bc) });
    assert_eq!(
        bc.primary, 0,
        "a context passed in is borrowed, not the library's primary retain"
    );
    // A buffer on the engine context works both ways.
    let b = create_buffer(ectx, 4096, 1);
    assert_ne!(buffer_info(b).cuda_pointer, 0);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(bctx);
        vkcuda_context_destroy(ectx);
        vkcuda_context_destroy(ctx);
    }
}

fn both_directions(ctx: *mut vkcuda_context, v: &Vk, cuda: &Cuda, size: u64, allocator: i32) {
    let b = create_buffer(ctx, size, allocator);
    let info = buffer_info(b);
    assert_eq!(info.size, size);
    assert_ne!(info.cuda_pointer, 0);
    assert!(info.allocation_size >= size);
    let seed = size as u32 ^ allocator as u32;
    let host = v.host_buffer(size);

    // CUDA writes, Vulkan reads.
    let data: Vec<u8> = (0..size as usize).map(|i| pattern(i, seed)).collect();
    cuda.write(info.cuda_pointer, &data);
    host.bytes().fill(0);
    let h = handoff_info(v.family);
    v.run(|cmd| unsafe {
        ok(vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h));
        v.device.cmd_copy_buffer(
            cmd,
            info.buffer,
            host.buffer,
            &[vk::BufferCopy::default().size(size)],
        );
    });
    let bad = mismatches(host.bytes(), seed);
    assert_eq!(
        bad, 0,
        "CUDA->Vulkan, allocator {allocator}, {size} bytes: {bad} differ"
    );

    // Vulkan writes, CUDA reads.
    for (i, x) in host.bytes().iter_mut().enumerate() {
        *x = pattern(i, seed + 7);
    }
    v.run(|cmd| unsafe {
        v.device.cmd_copy_buffer(
            cmd,
            host.buffer,
            info.buffer,
            &[vk::BufferCopy::default().size(size)],
        );
        ok(vkcuda_buffer_cmd_release_to_cuda(b, cmd, &h));
    });
    let back = cuda.read(info.cuda_pointer, size as usize);
    let bad = mismatches(&back, seed + 7);
    assert_eq!(
        bad, 0,
        "Vulkan->CUDA, allocator {allocator}, {size} bytes: {bad} differ"
    );
    println!(
        "allocator {allocator}: {size} bytes (allocation {}, dedicated {}) checked both ways",
        info.allocation_size, info.dedicated
    );
    v.destroy_host_buffer(host);
    unsafe { vkcuda_buffer_destroy(b) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_buffers_both_directions() {
    let Some(ctx) = cuda_context_or_skip("gpu_buffers_both_directions") else {
        return;
    };
    let v = Vk::new(ctx);
    let cuda = Cuda::of(ctx);
    for size in [4u64, (1 << 20) + 1, 64 << 20, 1 << 30] {
        for allocator in [1, 0] {
            both_directions(ctx, &v, &cuda, size, allocator);
        }
    }
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

/// The engine's own exportable allocation holding two buffers; the second is wrapped.
struct EngineAllocation {
    memory: vk::DeviceMemory,
    buffers: [vk::Buffer; 2],
    offset: u64,
    allocation_size: u64,
}

fn engine_allocation(v: &Vk, each: u64) -> EngineAllocation {
    let mk = || {
        let mut ext = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        unsafe {
            v.device.create_buffer(
                &vk::BufferCreateInfo::default()
                    .size(each)
                    .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
                    .push_next(&mut ext),
                None,
            )
        }
        .unwrap()
    };
    let buffers = [mk(), mk()];
    let req = unsafe { v.device.get_buffer_memory_requirements(buffers[0]) };
    let offset = req.size.next_multiple_of(req.alignment);
    let allocation_size = offset + req.size;
    let props = unsafe { v.instance.get_physical_device_memory_properties(v.physical) };
    let index = (0..props.memory_type_count)
        .find(|&i| {
            req.memory_type_bits & (1 << i) != 0
                && props.memory_types[i as usize]
                    .property_flags
                    .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
        })
        .unwrap();
    let mut export = vk::ExportMemoryAllocateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let memory = unsafe {
        v.device.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(allocation_size)
                .memory_type_index(index)
                .push_next(&mut export),
            None,
        )
    }
    .unwrap();
    unsafe {
        v.device.bind_buffer_memory(buffers[0], memory, 0).unwrap();
        v.device
            .bind_buffer_memory(buffers[1], memory, offset)
            .unwrap();
    }
    EngineAllocation {
        memory,
        buffers,
        offset,
        allocation_size,
    }
}

fn free_engine_allocation(v: &Vk, a: EngineAllocation) {
    unsafe {
        v.device.destroy_buffer(a.buffers[0], None);
        v.device.destroy_buffer(a.buffers[1], None);
        v.device.free_memory(a.memory, None);
    }
}

fn wrap(ctx: *const vkcuda_context, a: &EngineAllocation, size: u64) -> *mut vkcuda_buffer {
    let info = vkcuda_buffer_wrap_info {
        flags: 0,
        buffer: a.buffers[1],
        memory: a.memory,
        allocation_size: a.allocation_size,
        offset: a.offset,
        size,
        dedicated: 0,
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
    };
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_wrap(ctx, &info, &mut b) });
    b
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_wrap_engine_memory() {
    let Some(ctx) = cuda_context_or_skip("gpu_wrap_engine_memory") else {
        return;
    };
    let v = Vk::new(ctx);
    let cuda = Cuda::of(ctx);
    let size = (3 << 20) + 5;
    let a = engine_allocation(&v, size);
    let b = wrap(ctx, &a, size);
    let info = buffer_info(b);
    assert_eq!(info.wrapped, 1);
    assert_eq!(info.buffer, a.buffers[1]);
    assert_eq!(info.offset, a.offset);
    let data: Vec<u8> = (0..size as usize).map(|i| pattern(i, 99)).collect();
    cuda.write(info.cuda_pointer, &data);
    let host = v.host_buffer(size);
    v.copy(a.buffers[1], host.buffer, size);
    assert_eq!(
        mismatches(host.bytes(), 99),
        0,
        "CUDA wrote through the wrapped view at offset {}",
        a.offset
    );
    // The first buffer of the allocation was not touched by CUDA's write.
    let zero = vec![0u8; 4096];
    host.bytes()[..4096].copy_from_slice(&zero);
    // A wrapped memory with a size larger than the allocation is refused.
    let bad = vkcuda_buffer_wrap_info {
        flags: 0,
        buffer: a.buffers[1],
        memory: a.memory,
        allocation_size: a.allocation_size,
        offset: a.offset,
        size: a.allocation_size,
        dedicated: 0,
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
    };
    let mut out = ptr::null_mut();
    fails(
        unsafe { vkcuda_buffer_wrap(ctx, &bad, &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    // What NVIDIA's opaque fds tell about their size (informational).
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    unsafe { libc::fstat(fd, &mut st) };
    println!(
        "NVIDIA OPAQUE_FD: st_size {} st_mode {:o} lseek-end {}",
        st.st_size,
        st.st_mode,
        unsafe { libc::lseek(fd, 0, libc::SEEK_END) }
    );
    unsafe { libc::close(fd) };
    v.destroy_host_buffer(host);
    unsafe { vkcuda_buffer_destroy(b) };
    free_engine_allocation(&v, a);
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_thousand_cycles_do_not_grow() {
    let Some(ctx) = cuda_context_or_skip("gpu_thousand_cycles_do_not_grow") else {
        return;
    };
    let v = Vk::new(ctx);
    let cuda = Cuda::of(ctx);
    let a = engine_allocation(&v, 1 << 20);
    // Warm up each path once (lazy driver state).
    for alloc in [0, 1] {
        unsafe { vkcuda_buffer_destroy(create_buffer(ctx, 1 << 20, alloc)) };
    }
    unsafe { vkcuda_buffer_destroy(wrap(ctx, &a, 1 << 20)) };
    let (fds, free, objs) = (fd_count(), cuda.free_memory(), live_objects());
    let start = Instant::now();
    for _ in 0..1000 {
        for alloc in [0, 1] {
            let b = create_buffer(ctx, 1 << 20, alloc);
            let mut fd = -1;
            ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
            unsafe { libc::close(fd) };
            unsafe { vkcuda_buffer_destroy(b) };
        }
        unsafe { vkcuda_buffer_destroy(wrap(ctx, &a, 1 << 20)) };
    }
    let (fds2, free2, objs2) = (fd_count(), cuda.free_memory(), live_objects());
    println!(
        "1000 x (Vulkan, CUDA, wrapped) create/export/destroy in {:?}: fds {fds} -> {fds2}, \
         CUDA free {free} -> {free2}, live vk buffers {} -> {}, vk memories {} -> {}, cuda allocations {} -> {}, \
         cuda imports {} -> {}",
        start.elapsed(),
        objs.vk_buffers,
        objs2.vk_buffers,
        objs.vk_memories,
        objs2.vk_memories,
        objs.cuda_allocations,
        objs2.cuda_allocations,
        objs.cuda_external_memories,
        objs2.cuda_external_memories
    );
    assert_eq!(fds, fds2, "open fds");
    assert!(
        free2 + (4 << 20) >= free,
        "CUDA free memory went down by {}",
        free - free2
    );
    assert_eq!(objs.vk_buffers, objs2.vk_buffers);
    assert_eq!(objs.vk_memories, objs2.vk_memories);
    assert_eq!(objs.cuda_allocations, objs2.cuda_allocations);
    assert_eq!(objs.cuda_external_memories, objs2.cuda_external_memories);
    free_engine_allocation(&v, a);
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

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
    let (wsems, wvals): (Vec<_>, Vec<_>) = wait.map(|w| (sem, w)).into_iter().unzip();
    let (ssems, svals): (Vec<_>, Vec<_>) = signal.map(|s| (sem, s)).into_iter().unzip();
    let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; wsems.len()];
    let mut tl = vk::TimelineSemaphoreSubmitInfo::default()
        .wait_semaphore_values(&wvals)
        .signal_semaphore_values(&svals);
    let cmds = [cmd];
    let info = vk::SubmitInfo::default()
        .command_buffers(&cmds)
        .wait_semaphores(&wsems)
        .wait_dst_stage_mask(&stages)
        .signal_semaphores(&ssems)
        .push_next(&mut tl);
    unsafe { v.device.queue_submit(v.queue, &[info], vk::Fence::null()) }.unwrap();
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

/// A failed import (an allocation size larger than the memory object) must leave
/// the library, the device and the exported memory usable.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_failed_imports_leave_the_library_usable() {
    let Some(ctx) = cuda_context_or_skip("gpu_failed_imports_leave_the_library_usable") else {
        return;
    };
    let b = create_buffer(ctx, 65536, 0);
    let info = buffer_info(b);
    let import = |fd: i32, allocation_size: u64| {
        let ii = vkcuda_buffer_import_info {
            allocator: vkcuda_allocator_raw(0),
            allocation_size,
            offset: 0,
            ..buffer_import_info(&info)
        };
        let mut out = ptr::null_mut();
        let r = unsafe { vkcuda_buffer_import_fd(ctx, &ii, fd, &mut out) };
        println!(
            "  import of fd {fd} with allocation_size {allocation_size}: {r:?} {}",
            last_error()
        );
        if r == VKCUDA_SUCCESS {
            unsafe { vkcuda_buffer_destroy(out) };
        }
        r
    };
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    let r1 = import(fd, info.allocation_size * 2);
    let mut fresh = ptr::null_mut();
    let bi = buffer_create_info(65536, 0);
    let r2 = unsafe { vkcuda_buffer_create(ctx, &bi, &mut fresh) };
    println!(
        "  a new buffer after the failed import: {r2:?} {}",
        last_error()
    );
    let mut fd2 = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd2) });
    let r3 = import(fd2, info.allocation_size);
    let r4 = import(fd, info.allocation_size);
    let other = cuda_context_or_skip("second context").unwrap();
    let mut in_other = ptr::null_mut();
    let r5 = unsafe { vkcuda_buffer_create(other, &bi, &mut in_other) };
    println!("  a buffer in a new context: {r5:?} {}", last_error());
    println!("failed import: {r1:?}; afterwards: new buffer {r2:?}, import of a new fd {r3:?}, of the same fd {r4:?}, new context {r5:?}");
    unsafe {
        if r4 != VKCUDA_SUCCESS {
            libc::close(fd);
        }
        vkcuda_buffer_destroy(fresh);
        vkcuda_buffer_destroy(in_other);
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(other);
        vkcuda_context_destroy(ctx);
    }
    assert_ne!(r1, VKCUDA_SUCCESS);
    assert_eq!(r2, VKCUDA_SUCCESS, "a new buffer after a failed import");
    assert_eq!(r3, VKCUDA_SUCCESS, "importing a new fd of the same memory");
    assert_eq!(r5, VKCUDA_SUCCESS, "a buffer in a new context");
}
