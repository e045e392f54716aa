//! Fault paths: what happens when the driver runs out of memory during creation,
//! when the context is destroyed before its objects, and whether the library is
//! usable again after each failure.
//!
//! On the CPU (lavapipe), out-of-memory is made real by lowering the process's
//! address-space limit (RLIMIT_AS) so that the driver's allocation of a size the
//! library accepts (up to `maxMemoryAllocationSize`) fails, and by sizes just past
//! what the device allows. On a GPU (`gpu_*`): device memory is exhausted with
//! allocations of `maxMemoryAllocationSize` (or 4 GiB) until the driver says no,
//! and a CUDA context the caller made is destroyed before the objects made on it.
//! `VKCUDA_FAULT_CYCLES` sets how many create/destroy cycles the leak test runs
//! (default 200; CTest's hardening_leaks runs 10,000 on the H200).

mod support;
use support::cuda::Cuda;
use support::*;

use std::ptr;

use ash::vk;

fn limits(ctx: *const vkcuda_context) -> (u64, u64) {
    let v = Vk::new(ctx);
    let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut maint3);
    unsafe {
        v.instance
            .get_physical_device_properties2(v.physical, &mut p2)
    };
    let mem = unsafe { v.instance.get_physical_device_memory_properties(v.physical) };
    let heap = mem.memory_heaps[..mem.memory_heap_count as usize]
        .iter()
        .map(|h| h.size)
        .max()
        .unwrap();
    (maint3.max_memory_allocation_size, heap)
}

fn try_buffer(
    ctx: *const vkcuda_context,
    size: u64,
    allocator: i32,
) -> (vkcuda_result, *mut vkcuda_buffer) {
    let mut b = 0x5A5A as *mut vkcuda_buffer;
    let r = unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(size, allocator), &mut b) };
    (r, b)
}

fn try_image(ctx: *const vkcuda_context, w: u32) -> (vkcuda_result, *mut vkcuda_image) {
    let info = vkcuda_image_create_info {
        mip_levels: 1,
        array_layers: 1,
        ..image_desc(0, vk::Format::R32G32B32A32_SFLOAT, w, w, 1)
    };
    let mut im = 0x5A5A as *mut vkcuda_image;
    let r = unsafe { vkcuda_image_create(ctx, &info, &mut im) };
    (r, im)
}

/// The library works normally: a small buffer and image, made, used, destroyed.
#[track_caller]
fn still_usable(ctx: *const vkcuda_context) {
    let b = create_buffer(ctx, 4096, 0);
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    unsafe { libc::close(fd) };
    let (r, im) = try_image(ctx, 16);
    ok(r);
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_buffer_destroy(b);
    }
}

/// Lowers the soft address-space limit to what the process uses now plus
/// `headroom`, runs `f`, and puts the limit back.
fn with_address_space_limit<T>(headroom: u64, f: impl FnOnce() -> T) -> T {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmSize in /proc/self/status");
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut old) }, 0);
    let low = libc::rlimit {
        rlim_cur: vm_kib * 1024 + headroom,
        rlim_max: old.rlim_max,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &low) }, 0);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &old) }, 0);
    match out {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// A size the library accepts (at most maxMemoryAllocationSize) that the driver
/// cannot allocate: OUT_OF_MEMORY (or VULKAN with the VkResult), a message, no
/// handle, nothing left behind, and the next call works.
#[test]
fn driver_out_of_memory_during_creation() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let cpu = {
        let v = Vk::new(ctx);
        let p = unsafe { v.instance.get_physical_device_properties(v.physical) };
        p.device_type == vk::PhysicalDeviceType::CPU
    };
    if !cpu {
        // A GPU's memory is not in the process's address space: the limit would not
        // reach it (gpu_device_memory_exhausted exhausts it for real).
        println!("SKIPPED: driver_out_of_memory_during_creation: not a CPU device");
        unsafe { vkcuda_context_destroy(ctx) };
        return;
    }
    let (max, heap) = limits(ctx);
    let (fds, objects) = (fd_count(), live_counts());
    let big = max.min(heap);
    let outcomes = with_address_space_limit(256 << 20, || {
        let mut seen = Vec::new();
        for size in [big, big / 2, 512 << 20] {
            let (r, b) = try_buffer(ctx, size, 0);
            if r == VKCUDA_SUCCESS {
                // The driver may map lazily; then it is not a fault here.
                unsafe { vkcuda_buffer_destroy(b) };
                seen.push(format!("buffer of {size} bytes: made"));
                continue;
            }
            let msg = fails(r, r);
            assert!(
                matches!(r, VKCUDA_ERROR_OUT_OF_MEMORY | VKCUDA_ERROR_VULKAN),
                "{r:?}: {msg}"
            );
            assert!(b.is_null());
            assert!(msg.starts_with("vkcuda_buffer_create: "), "{msg}");
            seen.push(format!("buffer of {size} bytes: {r:?}: {msg}"));
        }
        // An image of 16384x16384 RGBA32F (4 GiB) or what the device allows.
        let (r, im) = try_image(ctx, 16384);
        if r == VKCUDA_SUCCESS {
            unsafe { vkcuda_image_destroy(im) };
            seen.push("image 16384x16384 RGBA32F: made".into());
        } else {
            let msg = fails(r, r);
            assert!(
                matches!(
                    r,
                    VKCUDA_ERROR_OUT_OF_MEMORY | VKCUDA_ERROR_VULKAN | VKCUDA_ERROR_UNSUPPORTED
                ),
                "{r:?}: {msg}"
            );
            assert!(im.is_null());
            seen.push(format!("image 16384x16384 RGBA32F: {r:?}: {msg}"));
        }
        // Within the limit, the library still works.
        still_usable(ctx);
        seen
    });
    for s in &outcomes {
        println!("with 256 MiB of address space left: {s}");
    }
    assert!(
        outcomes.iter().any(|s| s.contains("OUT_OF_MEMORY")),
        "no allocation failed: the fault was not injected ({outcomes:?})"
    );
    assert_eq!(
        (fd_count(), live_counts()),
        (fds, objects),
        "a failed creation left something behind"
    );
    still_usable(ctx);
    unsafe { vkcuda_context_destroy(ctx) };
}

/// Sizes at and past the device's limits: past maxMemoryAllocationSize or the
/// largest heap is refused by the library itself (INVALID_ARGUMENT, naming the
/// limit) before the driver is asked; exactly at the limit is the driver's call.
#[test]
fn sizes_at_the_device_limits() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let (max, heap) = limits(ctx);
    let (fds, objects) = (fd_count(), live_counts());
    for size in [max + 1, heap + 1, heap.saturating_mul(2), i64::MAX as u64] {
        let (r, b) = try_buffer(ctx, size, 0);
        let msg = fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(
            msg.contains("maxMemoryAllocationSize") || msg.contains("heap") || msg.contains("2^63"),
            "{msg}"
        );
        assert!(b.is_null());
    }
    // At the limit: made (lavapipe maps lazily) or refused by the driver, cleanly.
    let (r, b) = try_buffer(ctx, max.min(heap), 0);
    if r == VKCUDA_SUCCESS {
        let info = buffer_info(b);
        assert_eq!(info.size, max.min(heap));
        unsafe { vkcuda_buffer_destroy(b) };
        println!("a buffer of maxMemoryAllocationSize ({max} bytes) was made");
    } else {
        let msg = fails(r, r);
        println!("a buffer of maxMemoryAllocationSize ({max} bytes): {r:?}: {msg}");
        assert!(matches!(
            r,
            VKCUDA_ERROR_OUT_OF_MEMORY | VKCUDA_ERROR_VULKAN
        ));
    }
    assert_eq!((fd_count(), live_counts()), (fds, objects));
    still_usable(ctx);
    unsafe { vkcuda_context_destroy(ctx) };
}

/// Destroying the context first: its objects keep it alive (and, standalone, its
/// VkDevice), stay fully usable, and release it when the last one goes.
#[test]
fn context_destroyed_before_its_objects() {
    let _g = serial();
    let (fds, objects) = (fd_count(), live_counts());
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let b = create_buffer(ctx, 65536, 0);
    let (r, im) = try_image(ctx, 64);
    ok(r);
    let info = buffer_info(b);
    unsafe { vkcuda_context_destroy(ctx) };
    assert_eq!(
        live_counts()[0],
        objects[0] + 2,
        "the buffer and image keep the context alive"
    );

    // Everything still works on the orphaned objects.
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    let import = buffer_import_info(&info);
    let mut copy = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_import_fd(other, &import, fd, &mut copy) });
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut d) });
    let mut ifd = -1;
    ok(unsafe { vkcuda_image_export_fd(im, &mut ifd) });
    let mut image_copy = ptr::null_mut();
    ok(unsafe { vkcuda_image_import_description(other, &d, ifd, &mut image_copy) });
    let mut ii: vkcuda_image_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_get_info(im, &mut ii) });
    assert_ne!(ii.image, vk::Image::null());

    unsafe { vkcuda_buffer_destroy(b) };
    assert_eq!(live_counts()[0], objects[0] + 2, "the image still holds it");
    unsafe { vkcuda_image_destroy(im) };
    assert_eq!(
        live_counts()[0],
        objects[0] + 1,
        "the last object released the context"
    );
    unsafe {
        vkcuda_image_destroy(image_copy);
        vkcuda_buffer_destroy(copy);
        vkcuda_context_destroy(other);
    }
    assert_eq!((fd_count(), live_counts()), (fds, objects));
}

/// The same with an engine context: the engine's VkDevice stays the engine's, and
/// the library's objects are destroyed before the engine destroys its device
/// (the supported order; the reverse is documented misuse).
#[test]
fn engine_context_destroyed_before_its_objects() {
    let _g = serial();
    let (fds, objects) = (fd_count(), live_counts());
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let info = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    let b = create_buffer(ctx, 4096, 0);
    let (r, im) = try_image(ctx, 16);
    ok(r);
    unsafe { vkcuda_context_destroy(ctx) };
    let bi = buffer_info(b);
    assert_ne!(bi.buffer, vk::Buffer::null());
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_buffer_destroy(b);
    }
    assert_eq!(live_counts(), objects);
    // Only now may the engine destroy its device.
    drop(e);
    assert_eq!(fd_count(), fds);
}

/// After every kind of failure the next call on the same thread works and clears
/// the message; failures on one thread do not touch another thread's message.
#[test]
fn usable_after_each_failure() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let (fds, objects) = (fd_count(), live_counts());
    let buffer = create_buffer(ctx, 65536, 0);
    let info = buffer_info(buffer);
    let import = |fd: i32, size: u64| {
        let i = vkcuda_buffer_import_info {
            allocator: vkcuda_allocator_raw(0),
            offset: 0,
            size,
            ..buffer_import_info(&info)
        };
        let mut out = ptr::null_mut();
        let r = unsafe { vkcuda_buffer_import_fd(ctx, &i, fd, &mut out) };
        (r, out)
    };
    for round in 0..100 {
        // A failed import (size past the allocation), then the same fd imports.
        let mut fd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(buffer, &mut fd) });
        let (r, out) = import(fd, info.allocation_size + 1);
        fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(out.is_null() && fd_is_open(fd));
        let (r, out) = import(fd, info.size);
        ok(r);
        assert_eq!(last_error(), "");
        unsafe { vkcuda_buffer_destroy(out) };
        // A refused create, a CUDA call on a Vulkan-only context, a bad record.
        let (r, _) = try_buffer(ctx, 0, 0);
        fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
        let (r, _) = try_buffer(ctx, 4096, 1);
        fails(r, VKCUDA_ERROR_CUDA_UNAVAILABLE);
        let junk = [round as u8; 128];
        let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
        fails(
            unsafe { vkcuda_share_description_parse(junk.as_ptr(), junk.len(), &mut d) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        let other = std::thread::spawn(last_error).join().unwrap();
        assert_eq!(other, "", "another thread's message changed");
        still_usable(ctx);
    }
    unsafe { vkcuda_buffer_destroy(buffer) };
    assert_eq!((fd_count(), live_counts()), (fds, objects));
    unsafe { vkcuda_context_destroy(ctx) };
}

fn fault_cycles() -> usize {
    std::env::var("VKCUDA_FAULT_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// The free device memory seen from `ctx`'s CUDA context (cuMemGetInfo).
fn cuda_free_bytes(ctx: *const vkcuda_context) -> usize {
    Cuda::of(ctx).free_memory()
}

/// Create/destroy cycles of every object kind the context can make: open fds and
/// live objects return to their start; on a GPU also CUDA's free memory (within
/// 64 MiB of driver slack).
fn leak_cycles(ctx: *mut vkcuda_context, cuda: bool, what: &str) {
    let n = fault_cycles();
    let free = || cuda.then(|| cuda_free_bytes(ctx));
    // One warm-up cycle: drivers allocate pools on first use.
    let once = |i: usize| {
        let size = 65536 + (i % 7) as u64 * 4096;
        let b = create_buffer(ctx, size, 0);
        let mut fd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
        unsafe { libc::close(fd) };
        if cuda {
            let c = create_buffer(ctx, size, 1);
            let mut p = 0;
            ok(unsafe { vkcuda_buffer_get_cuda_pointer(c, &mut p) });
            unsafe { vkcuda_buffer_destroy(c) };
        }
        let (r, im) = try_image(ctx, 64);
        ok(r);
        if cuda {
            let mut s = 0;
            ok(unsafe { vkcuda_image_get_surface_object(im, 0, &mut s) });
            let t = vkcuda_texture_info {
                filter: vkcuda_filter_raw(1),
                ..texture_info()
            };
            let mut tex = 0;
            ok(unsafe { vkcuda_image_create_texture_object(im, &t, &mut tex) });
        }
        unsafe {
            vkcuda_image_destroy(im);
            vkcuda_buffer_destroy(b);
        }
        let sinfo = semaphore_create_info((i % 2) as i32, 0);
        let mut s = ptr::null_mut();
        match unsafe { vkcuda_semaphore_create(ctx, &sinfo, &mut s) } {
            VKCUDA_SUCCESS => unsafe { vkcuda_semaphore_destroy(s) },
            VKCUDA_ERROR_EXTENSION_NOT_PRESENT => {}
            r => panic!("vkcuda_semaphore_create: {r:?}: {}", last_error()),
        }
    };
    once(0);
    let (fds, objects, free0) = (fd_count(), live_counts(), free());
    let t0 = std::time::Instant::now();
    for i in 0..n {
        once(i);
    }
    let (fds1, objects1, free1) = (fd_count(), live_counts(), free());
    println!(
        "{what}: {n} cycles in {:.1} s: fds {fds} -> {fds1}, live objects {objects:?} -> {objects1:?}{}",
        t0.elapsed().as_secs_f64(),
        match (free0, free1) {
            (Some(a), Some(b)) => format!(", CUDA free memory {a} -> {b} bytes"),
            _ => String::new(),
        }
    );
    assert_eq!(fds1, fds, "{what}: fds leaked");
    assert_eq!(objects1, objects, "{what}: live objects leaked");
    if let (Some(a), Some(b)) = (free0, free1) {
        assert!(
            b + (64 << 20) >= a,
            "{what}: CUDA free memory went down by {} bytes",
            a - b
        );
    }
}

#[test]
fn create_destroy_cycles_do_not_leak() {
    let _g = serial();
    let ctx = vulkan_only_context();
    leak_cycles(ctx, false, "vulkan-only");
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_create_destroy_cycles_do_not_leak() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_create_destroy_cycles_do_not_leak") else {
        return;
    };
    leak_cycles(ctx, true, "cuda");
    unsafe { vkcuda_context_destroy(ctx) };
}

/// Device memory exhausted for real: buffers of maxMemoryAllocationSize (at most
/// 4 GiB each) until the driver refuses; the refusal is OUT_OF_MEMORY (or a
/// CUDA/Vulkan error naming the call), and after freeing everything the library
/// works again.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_device_memory_exhausted() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_device_memory_exhausted") else {
        return;
    };
    let (max, heap) = limits(ctx);
    let chunk = max.min(heap).min(4 << 30);
    let objects = live_counts();
    for allocator in [0, 1] {
        let mut held = Vec::new();
        let failure = loop {
            let (r, b) = try_buffer(ctx, chunk, allocator);
            if r != VKCUDA_SUCCESS {
                assert!(b.is_null());
                break (r, last_error());
            }
            held.push(b);
            assert!(held.len() < 4096, "never ran out");
        };
        println!(
            "allocator {allocator}: {} buffers of {chunk} bytes, then {:?}: {}",
            held.len(),
            failure.0,
            failure.1
        );
        assert!(
            matches!(
                failure.0,
                VKCUDA_ERROR_OUT_OF_MEMORY | VKCUDA_ERROR_VULKAN | VKCUDA_ERROR_CUDA
            ),
            "{failure:?}"
        );
        // Nearly full: a small image and buffer may or may not fit; either way clean.
        let (r, im) = try_image(ctx, 64);
        if r == VKCUDA_SUCCESS {
            unsafe { vkcuda_image_destroy(im) };
        }
        for b in held {
            unsafe { vkcuda_buffer_destroy(b) };
        }
        assert_eq!(live_counts(), objects);
        still_usable(ctx);
    }
    unsafe { vkcuda_context_destroy(ctx) };
}

/// The caller's CUDA context destroyed before the vkcuda objects made on it
/// (misuse: the borrowed context must outlive them). Destroying the objects then
/// must not crash; the CUDA calls fail inside the driver and are ignored; the
/// library keeps working on another context.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_cuda_context_destroyed_first() {
    use cudarc::driver::sys as cu;
    let _g = serial();
    let Some(primary) = cuda_context_or_skip("gpu_cuda_context_destroyed_first") else {
        return;
    };
    let mut c: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(primary, &mut c) });
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(primary, &mut h) });
    let before = live_counts();
    let free_before = cuda_free_bytes(primary);
    let mut mine = ptr::null_mut();
    unsafe {
        assert_eq!(
            cu::cuCtxCreate_v2(&mut mine, 0, c.cuda_device),
            cu::CUresult::CUDA_SUCCESS
        );
        let mut popped = ptr::null_mut();
        cu::cuCtxPopCurrent_v2(&mut popped);
    }
    let info = vkcuda_context_create_info {
        flags: 0,
        instance: h.instance,
        physical_device: h.physical_device,
        device: h.device,
        get_instance_proc_addr: h.get_instance_proc_addr,
        get_device_proc_addr: None,
        cuda_context: mine.cast(),
    };
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    let b = create_buffer(ctx, 1 << 20, 0);
    let cb = create_buffer(ctx, 1 << 20, 1);
    let (r, im) = try_image(ctx, 64);
    ok(r);
    let mut s = 0;
    ok(unsafe { vkcuda_image_get_surface_object(im, 0, &mut s) });
    unsafe { vkcuda_context_destroy(ctx) };
    // The misuse: the caller destroys its context first.
    assert_eq!(
        unsafe { cu::cuCtxDestroy_v2(mine) },
        cu::CUresult::CUDA_SUCCESS
    );
    let mut p = 0;
    let r = unsafe { vkcuda_buffer_get_cuda_pointer(b, &mut p) };
    println!("the pointer getter after the context went: {r:?} (a stored value)");
    // A call that needs the CUDA context says it is gone, and changes nothing.
    let tex = vkcuda_texture_info {
        flags: 0,
        level: 0,
        filter: unsafe { std::mem::transmute::<i32, vkcuda_filter_raw>(0) },
        address_mode: unsafe { std::mem::transmute::<i32, vkcuda_address_mode_raw>(0) },
        read_mode: unsafe { std::mem::transmute::<i32, vkcuda_read_mode_raw>(0) },
        border_color: [0.0; 4],
    };
    let mut t = 77u64;
    let r = unsafe { vkcuda_image_create_texture_object(im, &tex, &mut t) };
    let m = last_error();
    println!("a texture object after the context went: {r:?}: {m}");
    assert_eq!(r, vkcuda_result::VKCUDA_ERROR_INVALID_STATE, "{m}");
    assert!(m.contains("destroyed or reset"), "{m}");
    assert_eq!(t, 77, "an output was written on failure");
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_buffer_destroy(cb);
        vkcuda_buffer_destroy(b);
    }
    println!("destroyed three objects whose CUDA context was gone: no crash");
    assert_eq!(live_counts(), before, "objects left alive");
    // The CUDA allocation (cuMemCreate belongs to the process, not the context)
    // was released under the primary context: the device's free memory is back.
    let free_after = cuda_free_bytes(primary);
    println!(
        "cuMemGetInfo free: {free_before} B before the caller's context, {free_after} B after ({:+} B)",
        free_after as i64 - free_before as i64
    );
    assert!(
        free_after + (1 << 20) >= free_before,
        "device memory lost: {free_before} -> {free_after}"
    );
    still_usable(primary);
    let cbuf = create_buffer(primary, 1 << 20, 1);
    ok(unsafe { vkcuda_buffer_get_cuda_pointer(cbuf, &mut p) });
    unsafe {
        vkcuda_buffer_destroy(cbuf);
        vkcuda_context_destroy(primary);
    }
}
