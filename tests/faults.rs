//! Fault paths: what happens when the driver runs out of memory during creation,
//! when the context is dropped before its objects, when a device is lost, and
//! whether the library is usable again after each failure.
//!
//! On the CPU (lavapipe), out-of-memory is made real by lowering the process's
//! address-space limit (RLIMIT_AS) so that the driver's allocation of a size the
//! library accepts (up to `maxMemoryAllocationSize`) fails, and by sizes just past
//! what the device allows. On a GPU (`gpu_*`): device memory is exhausted with
//! allocations of `maxMemoryAllocationSize` (or 4 GiB) until the driver says no,
//! a CUDA context the caller made is destroyed before the objects made on it, and
//! a kernel faults on purpose. `VKCUDA_FAULT_CYCLES` sets how many create/drop
//! cycles the leak test runs (default 200; CTest's hardening_leaks runs 10,000 on
//! the H200). (The C door's part, every C call on an object of a lost device
//! refused at the door and the last-error message after each failure, is
//! capi/tests/diagnostics.rs's.)

mod support;
use support::cuda::Cuda;
use support::device::engine_handles;
use support::*;

use std::os::fd::AsFd;
use std::ptr;
use std::sync::Arc;

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::context::{BorrowedCudaContext, CudaChoice, EngineHandles};
use vkcuda::image::{Description, Sampler};
use vkcuda::semaphore::Kind;
use vkcuda::{Buffer, Context, ErrorKind, Image, Semaphore};

fn limits(ctx: &Context) -> (u64, u64) {
    let v = Vk::of(ctx);
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

/// `maxBufferSize` (Vulkan 1.3), or u64::MAX on a device that does not say.
fn max_buffer_size(ctx: &Context) -> u64 {
    let v = Vk::of(ctx);
    let p = unsafe { v.instance.get_physical_device_properties(v.physical) };
    if p.api_version < vk::API_VERSION_1_3 {
        return u64::MAX;
    }
    let mut maint4 = vk::PhysicalDeviceMaintenance4Properties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut maint4);
    unsafe {
        v.instance
            .get_physical_device_properties2(v.physical, &mut p2)
    };
    maint4.max_buffer_size
}

fn try_buffer(ctx: &Arc<Context>, size: u64, allocator: Allocator) -> vkcuda::Result<Buffer> {
    Buffer::create(ctx, size, vk::BufferUsageFlags::empty(), allocator)
}

fn buffer(ctx: &Arc<Context>, size: u64, allocator: Allocator) -> Buffer {
    try_buffer(ctx, size, allocator).unwrap()
}

fn try_image(ctx: &Arc<Context>, w: u32) -> vkcuda::Result<Image> {
    Image::create(
        ctx,
        &Description::new_2d(vk::Format::R32G32B32A32_SFLOAT, w, w),
    )
}

/// `kind` is one of `kinds`, else a panic with the error.
#[track_caller]
fn one_of(e: &vkcuda::Error, kinds: &[ErrorKind]) {
    assert!(kinds.contains(&e.kind()), "{:?}: {e}", e.kind());
}

/// The library works normally: a small buffer and image, made, used, dropped.
#[track_caller]
fn still_usable(ctx: &Arc<Context>) {
    let b = buffer(ctx, 4096, Allocator::Vulkan);
    drop(b.export_fd().unwrap());
    let im = try_image(ctx, 16).unwrap();
    drop(im.export_fd().unwrap());
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
/// cannot allocate: OutOfMemory (or Vulkan with the VkResult), a message, nothing
/// left behind, and the next call works.
#[test]
fn driver_out_of_memory_during_creation() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let cpu = device_type(&ctx) == vk::PhysicalDeviceType::CPU;
    if !cpu {
        // A GPU's memory is not in the process's address space: the limit would not
        // reach it (gpu_device_memory_exhausted exhausts it for real).
        println!("SKIPPED: driver_out_of_memory_during_creation: not a CPU device");
        return;
    }
    let (max, heap) = limits(&ctx);
    let (fds, objects) = (fd_count(), live_counts());
    let big = max.min(heap);
    let outcomes = with_address_space_limit(256 << 20, || {
        let mut seen = Vec::new();
        for size in [big, big / 2, 512 << 20] {
            match try_buffer(&ctx, size, Allocator::Vulkan) {
                // The driver may map lazily; then it is not a fault here.
                Ok(_) => seen.push(format!("buffer of {size} bytes: made")),
                Err(e) => {
                    one_of(&e, &[ErrorKind::OutOfMemory, ErrorKind::Vulkan]);
                    seen.push(format!("buffer of {size} bytes: {:?}: {e}", e.kind()));
                }
            }
        }
        // An image of 16384x16384 RGBA32F (4 GiB) or what the device allows.
        match try_image(&ctx, 16384) {
            Ok(_) => seen.push("image 16384x16384 RGBA32F: made".into()),
            Err(e) => {
                use ErrorKind::*;
                one_of(&e, &[OutOfMemory, Vulkan, Unsupported]);
                seen.push(format!("image 16384x16384 RGBA32F: {:?}: {e}", e.kind()));
            }
        }
        // Within the limit, the library still works.
        still_usable(&ctx);
        seen
    });
    for s in &outcomes {
        println!("with 256 MiB of address space left: {s}");
    }
    assert!(
        outcomes.iter().any(|s| s.contains("OutOfMemory")),
        "no allocation failed: the fault was not injected ({outcomes:?})"
    );
    assert_eq!(
        (fd_count(), live_counts()),
        (fds, objects),
        "a failed creation left something behind"
    );
    still_usable(&ctx);
}

fn device_type(ctx: &Context) -> vk::PhysicalDeviceType {
    let v = Vk::of(ctx);
    unsafe { v.instance.get_physical_device_properties(v.physical) }.device_type
}

/// Sizes at and past the device's limits: past maxBufferSize or the largest heap
/// is refused by the library itself (InvalidArgument, naming the limit) before
/// the driver is asked; exactly at the limit is the driver's call.
/// (maxMemoryAllocationSize is advice: `sizes_past_max_memory_allocation_size_are_attempted`.)
#[test]
fn sizes_at_the_device_limits() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let (max, heap) = limits(&ctx);
    let max_buffer = max_buffer_size(&ctx);
    let (fds, objects) = (fd_count(), live_counts());
    for size in [
        heap + 1,
        heap.saturating_mul(2),
        max_buffer.saturating_add(1),
        i64::MAX as u64,
    ] {
        let e = try_buffer(&ctx, size, Allocator::Vulkan).unwrap_err();
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{msg}");
        assert!(
            msg.contains("maxBufferSize") || msg.contains("heap") || msg.contains("2^63"),
            "{msg}"
        );
        println!("a buffer of {size} bytes: refused: {msg}");
    }
    // At the limit: made (lavapipe maps lazily) or refused by the driver, cleanly.
    match try_buffer(&ctx, max.min(heap), Allocator::Vulkan) {
        Ok(b) => {
            assert_eq!(b.layout().size, max.min(heap));
            println!("a buffer of maxMemoryAllocationSize ({max} bytes) was made");
        }
        Err(e) => {
            println!("a buffer of maxMemoryAllocationSize ({max} bytes): {e}");
            one_of(&e, &[ErrorKind::OutOfMemory, ErrorKind::Vulkan]);
        }
    }
    assert_eq!((fd_count(), live_counts()), (fds, objects));
    still_usable(&ctx);
}

/// maxMemoryAllocationSize is advice (issue 29, item 12): a size past it and
/// within maxBufferSize and the heap goes to the driver; if the driver refuses,
/// the message says the size exceeds the advertised maxMemoryAllocationSize.
/// On lavapipe the heap is maxMemoryAllocationSize (2 GiB both): nothing lies
/// between, and the test says so; the rule itself is unit-tested with the
/// H200's figures (`vulkan::memory::size_tests`) and run for real by
/// `gpu_large_buffers_share_past_4_gib` (buffer.rs).
#[test]
fn sizes_past_max_memory_allocation_size_are_attempted() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let (max, heap) = limits(&ctx);
    let max_buffer = max_buffer_size(&ctx);
    println!(
        "this device: maxMemoryAllocationSize {max}, maxBufferSize {max_buffer}, largest heap {heap}"
    );
    let size = max + 1;
    if size > heap || size > max_buffer {
        println!(
            "NOTE: no size lies past maxMemoryAllocationSize and within the heap and maxBufferSize \
             on this device; {size} bytes must be refused for the heap or maxBufferSize"
        );
        let e = try_buffer(&ctx, size, Allocator::Vulkan).unwrap_err();
        let msg = e.to_string();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{msg}");
        assert!(
            msg.contains("heap") || msg.contains("maxBufferSize"),
            "{msg}"
        );
        assert!(
            !msg.contains("maxMemoryAllocationSize"),
            "not refused for the advice: {msg}"
        );
    } else {
        let objects = live_counts();
        match try_buffer(&ctx, size, Allocator::Vulkan) {
            Ok(b) => {
                assert_eq!(b.layout().size, size);
                println!("a buffer of {size} bytes (maxMemoryAllocationSize + 1) was made");
            }
            Err(e) => {
                let msg = e.to_string();
                println!("a buffer of {size} bytes: the driver refused: {msg}");
                assert_ne!(
                    e.kind(),
                    ErrorKind::InvalidArgument,
                    "attempted, not refused up front: {msg}"
                );
                assert!(
                    msg.contains("exceeds the device's advertised maxMemoryAllocationSize"),
                    "{msg}"
                );
            }
        }
        assert_eq!(live_counts(), objects);
    }
    still_usable(&ctx);
}

/// Dropping the context first: its objects keep it alive (and, standalone, its
/// VkDevice), stay fully usable, and release it when the last one goes.
#[test]
fn context_destroyed_before_its_objects() {
    let _g = serial();
    let (fds, objects) = (fd_count(), live_counts());
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let b = buffer(&ctx, 65536, Allocator::Vulkan);
    let im = try_image(&ctx, 64).unwrap();
    drop(ctx);
    assert_eq!(
        live_counts()[0],
        objects[0] + 2,
        "the buffer and image keep the context alive"
    );

    // Everything still works on the orphaned objects.
    let fd = b.export_fd().unwrap();
    let copy = Buffer::import_fd(&other, fd.as_fd(), b.layout(), b.usage()).unwrap();
    let ifd = im.export_fd().unwrap();
    let sizes = [im.allocation_size()];
    let image_copy = Image::import_fd(&other, &[ifd.as_fd()], im.description(), &sizes).unwrap();
    assert_ne!(im.vk_image(), vk::Image::null());

    drop(b);
    assert_eq!(live_counts()[0], objects[0] + 2, "the image still holds it");
    drop(im);
    assert_eq!(
        live_counts()[0],
        objects[0] + 1,
        "the last object released the context"
    );
    drop((image_copy, copy, other, fd, ifd));
    assert_eq!((fd_count(), live_counts()), (fds, objects));
}

/// The same with an engine context: the engine's VkDevice stays the engine's, and
/// the library's objects are dropped before the engine destroys its device
/// (the supported order; the reverse is documented misuse).
#[test]
fn engine_context_destroyed_before_its_objects() {
    let _g = serial();
    let (fds, objects) = (fd_count(), live_counts());
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    // SAFETY: the engine's live handles, which outlive the context and its objects.
    let ctx = unsafe { Context::from_engine(&engine_handles(&e, None), CudaChoice::None) }.unwrap();
    let b = buffer(&ctx, 4096, Allocator::Vulkan);
    let im = try_image(&ctx, 16).unwrap();
    drop(ctx);
    assert_ne!(b.vk_buffer(), vk::Buffer::null());
    drop(b.export_fd().unwrap());
    drop((im, b));
    assert_eq!(live_counts(), objects);
    // Only now may the engine destroy its device.
    drop(e);
    assert_eq!(fd_count(), fds);
}

fn fault_cycles() -> usize {
    std::env::var("VKCUDA_FAULT_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Create/drop cycles of every object kind the context can make: open fds and
/// live objects return to their start; on a GPU also CUDA's free memory (within
/// 64 MiB of driver slack).
fn leak_cycles(ctx: &Arc<Context>, cuda: bool, what: &str) {
    let n = fault_cycles();
    let free = || cuda.then(|| Cuda::of_context(ctx).free_memory());
    let sampler = Sampler {
        level: Some(0),
        linear: true,
        address: vkcuda::cuda_sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        normalized_coordinates: false,
        normalized_float: false,
        border_color: [0.0; 4],
    };
    // One warm-up cycle: drivers allocate pools on first use.
    let once = |i: usize| {
        let size = 65536 + (i % 7) as u64 * 4096;
        let b = buffer(ctx, size, Allocator::Vulkan);
        drop(b.export_fd().unwrap());
        if cuda {
            let c = buffer(ctx, size, Allocator::Cuda);
            assert_ne!(c.cuda_ptr().unwrap(), 0);
        }
        // Four levels: the texture of level 1 too; the image's fd exported; a refused
        // create (3-channel formats are not shareable) leaves nothing behind.
        let d = Description {
            mip_levels: 4,
            ..Description::new_2d(vk::Format::R32G32B32A32_SFLOAT, 64, 64)
        };
        let im = Image::create(ctx, &d).unwrap();
        drop(im.export_fd().unwrap());
        if cuda {
            im.surface(0, 0).unwrap();
            im.texture(0, &sampler).unwrap();
            let level_1 = Sampler {
                level: Some(1),
                ..sampler
            };
            im.texture(0, &level_1).unwrap();
        }
        drop((im, b));
        let rgb = Description::new_2d(vk::Format::R8G8B8_UNORM, 64, 64);
        let e = Image::create(ctx, &rgb).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        let kind = [Kind::Binary, Kind::Timeline][i % 2];
        match Semaphore::create(ctx, kind, 0, None) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ExtensionNotPresent => {}
            Err(e) => panic!("Semaphore::create: {e}"),
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
    leak_cycles(&vulkan_only_context(), false, "vulkan-only");
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_create_destroy_cycles_do_not_leak() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_create_destroy_cycles_do_not_leak") else {
        return;
    };
    leak_cycles(&ctx, true, "cuda");
}

/// Device memory exhausted for real: buffers of maxMemoryAllocationSize (at most
/// 4 GiB each) until the driver refuses; the refusal is OutOfMemory (or a
/// CUDA/Vulkan error naming the call), and after freeing everything the library
/// works again.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_device_memory_exhausted() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_device_memory_exhausted") else {
        return;
    };
    let (max, heap) = limits(&ctx);
    let chunk = max.min(heap).min(4 << 30);
    let objects = live_counts();
    for allocator in [Allocator::Vulkan, Allocator::Cuda] {
        let mut held = Vec::new();
        let failure = loop {
            match try_buffer(&ctx, chunk, allocator) {
                Ok(b) => held.push(b),
                Err(e) => break e,
            }
            assert!(held.len() < 4096, "never ran out");
        };
        println!(
            "{allocator:?}: {} buffers of {chunk} bytes, then {:?}: {failure}",
            held.len(),
            failure.kind()
        );
        use ErrorKind::*;
        one_of(&failure, &[OutOfMemory, Vulkan, Cuda]);
        // Nearly full: a small image may or may not fit; either way clean.
        drop(try_image(&ctx, 64));
        drop(held);
        assert_eq!(live_counts(), objects);
        still_usable(&ctx);
    }
}

/// The caller's CUDA context destroyed before the vkcuda objects made on it
/// (misuse: the borrowed context must outlive them). Dropping the objects then
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
    let c = primary.cuda_info().unwrap();
    let h = primary.vulkan_handles();
    let before = live_counts();
    let free_before = Cuda::of_context(&primary).free_memory();
    let mut mine = ptr::null_mut();
    unsafe {
        assert_eq!(
            cu::cuCtxCreate_v2(&mut mine, 0, c.device),
            cu::CUresult::CUDA_SUCCESS
        );
        let mut popped = ptr::null_mut();
        cu::cuCtxPopCurrent_v2(&mut popped);
    }
    let handles = EngineHandles {
        instance: h.instance,
        physical: h.physical_device,
        device: h.device,
        get_instance_proc_addr: h.get_instance_proc_addr,
        get_device_proc_addr: None,
        synchronization2: false,
    };
    // SAFETY: the standalone context's live handles (it outlives this one), and a
    // CUcontext of the test's (destroyed below on purpose: the misuse under test).
    let ctx = unsafe {
        let borrowed = BorrowedCudaContext::from_raw(mine);
        Context::from_engine(&handles, CudaChoice::Borrowed(borrowed))
    }
    .unwrap();
    let b = buffer(&ctx, 1 << 20, Allocator::Vulkan);
    let cb = buffer(&ctx, 1 << 20, Allocator::Cuda);
    let im = try_image(&ctx, 64).unwrap();
    im.surface(0, 0).unwrap();
    drop(ctx);
    // The misuse: the caller destroys its context first.
    assert_eq!(
        unsafe { cu::cuCtxDestroy_v2(mine) },
        cu::CUresult::CUDA_SUCCESS
    );
    println!(
        "the pointer getter after the context went: {:?} (a stored value)",
        b.cuda_ptr()
    );
    // A call that needs the CUDA context says it is gone.
    let sampler = Sampler {
        level: Some(0),
        linear: false,
        address: vkcuda::cuda_sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        normalized_coordinates: false,
        normalized_float: false,
        border_color: [0.0; 4],
    };
    let e = im.texture(0, &sampler).unwrap_err();
    println!("a texture object after the context went: {e}");
    assert_eq!(e.kind(), ErrorKind::InvalidState, "{e}");
    assert!(e.to_string().contains("destroyed or reset"), "{e}");
    drop((im, cb, b));
    println!("dropped three objects whose CUDA context was gone: no crash");
    assert_eq!(live_counts(), before, "objects left alive");
    // The CUDA allocation (cuMemCreate belongs to the process, not the context)
    // was released under the primary context: the device's free memory is back.
    let free_after = Cuda::of_context(&primary).free_memory();
    println!(
        "cuMemGetInfo free: {free_before} B before the caller's context, {free_after} B after ({:+} B)",
        free_after as i64 - free_before as i64
    );
    assert!(
        free_after + (1 << 20) >= free_before,
        "device memory lost: {free_before} -> {free_after}"
    );
    still_usable(&primary);
    let cbuf = buffer(&primary, 1 << 20, Allocator::Cuda);
    assert_ne!(cbuf.cuda_ptr().unwrap(), 0);
}

// --- A faulting kernel (issue 29, item 11). A kernel that stores to address 0x8
// makes CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error: the CUDA context (the primary
// context, which the rest of this process would share) is unusable afterwards, so
// the case runs in a child process. The first library call after the fault sees
// the sticky error and returns DeviceLost naming it; the context and its objects
// are lost from then on (`check_lost`, and every CUDA call); dropping releases
// what it can within a watchdog's time (no crash, no hang).

/// One thread stores a word at address 0x8.
const FAULT_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64
.visible .entry store_to_8()
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    mov.u64 %rd1, 8;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
\0";

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_sticky_fault_loses_the_context() {
    let Some(ctx) = cuda_context_or_skip("gpu_sticky_fault_loses_the_context") else {
        return;
    };
    drop(ctx);
    run_fault_child(
        "gpu_sticky_fault_loses_the_context",
        "child_gpu_sticky_fault",
    );
}

/// Runs `child` (a test that makes a real sticky fault) in a child process
/// within 60 s: a hang in it (a drop that waits for ever) fails here.
fn run_fault_child(test: &str, child: &str) {
    let mut process = this_test(child, true)
        .env(CHILD_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while process.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = process.kill();
            let out = process.wait_with_output().unwrap();
            panic!(
                "the child still ran after 60 s (a hang after the fault); its output:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = process.wait_with_output().unwrap();
    child_passed(child, &out);
    println!(
        "{test}: the fault gave DeviceLost on every later call and drop completed \
         ({:.1} s in the child)",
        start.elapsed().as_secs_f64()
    );
}

/// Makes a real sticky fault in `cuda`'s context (a kernel storing to 0x8) and
/// returns the sticky result's name.
fn fault(cuda: &Cuda) -> String {
    use cudarc::driver::sys as cu;
    let r = cuda.within(|| unsafe {
        let mut module = ptr::null_mut();
        support::cuda::check(cu::cuModuleLoadData(&mut module, FAULT_PTX.as_ptr().cast()));
        let mut f = ptr::null_mut();
        support::cuda::check(cu::cuModuleGetFunction(
            &mut f,
            module,
            c"store_to_8".as_ptr(),
        ));
        support::cuda::check(cu::cuLaunchKernel(
            f,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        ));
        cu::cuCtxSynchronize()
    });
    println!("the kernel storing to 0x8: cuCtxSynchronize returned {r:?}");
    // A sticky result (the CUDA driver API reference: ILLEGAL_ADDRESS or LAUNCH_FAILED
    // for a store to an unmapped address).
    assert!(
        matches!(
            r,
            cu::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS | cu::CUresult::CUDA_ERROR_LAUNCH_FAILED
        ),
        "a sticky error, got {r:?}"
    );
    format!("{r:?}")
}

/// Makes and drops one object of each kind the fault tests use, so that fds a
/// driver opens once on first use (and keeps) are open before the baseline fd
/// count is taken.
fn warm_up(ctx: &Arc<Context>) {
    let b = buffer(ctx, 1 << 20, Allocator::Vulkan);
    let c = buffer(ctx, 1 << 20, Allocator::Cuda);
    let s = Semaphore::create(ctx, Kind::Timeline, 0, None).unwrap();
    let im = try_image(ctx, 64).unwrap();
    drop((im, s, c, b));
}

/// The stage a fault child is in (one child a process): `stage(i)` moves on.
static STAGE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn stage(i: u32) {
    STAGE.store(i, std::sync::atomic::Ordering::SeqCst);
}

/// A watchdog: each stage of `stages` must end within 20 s (`stage(i)` moves
/// on; `stage(stages.len())` ends it).
fn watchdog(stages: &'static [&'static str]) {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || loop {
        let seen = STAGE.load(Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_secs(20));
        let now = STAGE.load(Ordering::SeqCst);
        if now == seen && (now as usize) < stages.len() {
            eprintln!(
                "watchdog: stage '{}' ran past 20 s: a hang",
                stages[now as usize]
            );
            std::process::exit(3);
        }
    });
}

/// The start of a fault child: the watchdog over `stages` (the first is
/// "setup"), a context on the primary CUDA context, warmed up, and the
/// process's fd count then.
fn fault_child_setup(stages: &'static [&'static str]) -> (Arc<Context>, usize) {
    watchdog(stages);
    let ctx = Context::standalone(None, CudaChoice::Primary).unwrap();
    warm_up(&ctx);
    (ctx, fd_count())
}

/// The end of a fault child (its last stage): dropping `objects` (`what`) of the
/// lost context released what it could, no fd they held is left open (issue
/// 39, item 3), and after the context every object is released.
fn drop_after_fault<T>(ctx: Arc<Context>, objects: T, what: &str, fds: usize, stages: &[&str]) {
    stage(stages.len() as u32 - 1);
    let t = std::time::Instant::now();
    drop(objects);
    let after = fd_count();
    println!("fds after dropping {what} of the lost context: {after} (before: {fds})");
    assert!(after <= fds, "drop left {} fds open", after - fds);
    drop(ctx);
    println!(
        "drop of {what} and the context after the fault: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(
        live_counts(),
        [0; 8],
        "every object released (the library's counters)"
    );
    stage(stages.len() as u32);
}

/// `r` is DeviceLost and its message names `code`; returns the message.
#[track_caller]
fn lost<T: std::fmt::Debug>(r: vkcuda::Result<T>, code: &str, what: &str) -> String {
    let e = r.unwrap_err();
    let m = e.to_string();
    assert_eq!(e.kind(), ErrorKind::DeviceLost, "{what}: {m}");
    assert!(m.contains(code), "{what} names {code}: {m}");
    m
}

/// Issue 39, items 2 and 3, with a real sticky error: after the fault the
/// first library call is a drop. The drop's own driver calls meet the error;
/// it must be recorded naming a call of the drop (not a later call elsewhere),
/// so the sibling buffer's context answers DeviceLost at once; and drop still
/// releases what it can: the process's fd count after every object is dropped
/// is not above the count before they were made.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_sticky_fault_met_in_a_destroy() {
    let Some(ctx) = cuda_context_or_skip("gpu_sticky_fault_met_in_a_destroy") else {
        return;
    };
    drop(ctx);
    run_fault_child(
        "gpu_sticky_fault_met_in_a_destroy",
        "child_gpu_sticky_fault_in_a_destroy",
    );
}

#[test]
#[ignore = "runs in a child process of gpu_sticky_fault_met_in_a_destroy"]
fn child_gpu_sticky_fault_in_a_destroy() {
    child_only!("child_gpu_sticky_fault_in_a_destroy");
    static STAGES: [&str; 4] = [
        "setup",
        "the faulting kernel",
        "drop after the fault",
        "the rest",
    ];
    let (ctx, fds) = fault_child_setup(&STAGES);
    let first = buffer(&ctx, 1 << 20, Allocator::Vulkan);
    let sibling = buffer(&ctx, 1 << 20, Allocator::Vulkan);
    let cuda_alloc = buffer(&ctx, 1 << 20, Allocator::Cuda);
    let im = try_image(&ctx, 64).unwrap();
    println!(
        "fds: {fds} with the context, {} with 3 buffers and an image",
        fd_count()
    );
    let cuda = Cuda::of_context(&ctx);

    stage(1);
    let code = fault(&cuda);

    stage(2);
    // The first library call after the fault: a drop.
    drop(first);
    let release_calls = [
        "cuPointerGetAttribute",
        "cuCtxPushCurrent_v2",
        "cuMemFree_v2",
        "cuDestroyExternalMemory",
    ];
    let m = lost(sibling.context().check_lost(), &code, "the sibling");
    println!("the sibling after the drop that met the fault: {m}");
    assert!(
        release_calls
            .iter()
            .any(|c| m.contains(&format!("is lost: {c}"))),
        "names a call of the drop ({release_calls:?}): {m}"
    );
    lost(ctx.check_lost(), &code, "the context");

    drop_after_fault(ctx, (im, cuda_alloc, sibling), "every object", fds, &STAGES);
}

#[test]
#[ignore = "runs in a child process of gpu_sticky_fault_loses_the_context"]
fn child_gpu_sticky_fault() {
    child_only!("child_gpu_sticky_fault");
    static STAGES: [&str; 4] = [
        "setup",
        "the faulting kernel",
        "calls after the fault",
        "drop",
    ];
    let (ctx, fds) = fault_child_setup(&STAGES);
    let vk_alloc = buffer(&ctx, 1 << 20, Allocator::Vulkan);
    let cuda_alloc = buffer(&ctx, 1 << 20, Allocator::Cuda);
    let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
    let cuda = Cuda::of_context(&ctx);

    stage(1);
    let code = fault(&cuda);

    stage(2);
    // The first library call that calls CUDA sees the sticky error.
    let first = lost(sem.cuda_signal(1, ptr::null_mut()), &code, "cuda_signal");
    println!("first call after the fault, Semaphore::cuda_signal: {first}");
    assert!(first.contains("restart the process"), "{first}");
    // From then on the context and its objects are lost, and every CUDA call fails.
    lost(ctx.check_lost(), &code, "Context::check_lost");
    lost(
        vk_alloc.context().check_lost(),
        &code,
        "check_lost of a Vulkan-allocated buffer",
    );
    lost(
        try_buffer(&ctx, 4096, Allocator::Vulkan),
        &code,
        "Buffer::create",
    );
    lost(
        sem.cuda_wait(0, ptr::null_mut()),
        &code,
        "Semaphore::cuda_wait",
    );
    println!("later: check_lost, Buffer::create, Semaphore::cuda_wait: DeviceLost");

    drop_after_fault(
        ctx,
        (sem, cuda_alloc, vk_alloc),
        "2 buffers and a semaphore",
        fds,
        &STAGES,
    );
}

/// VK_ERROR_DEVICE_LOST (issue 29, item 11). No driver here loses its device on
/// demand, so the test records the loss as the library does when a Vulkan call
/// returns it (`vkcuda::fault_injection::device_lost`): the context and its
/// objects' context then answer DeviceLost naming the first error
/// (`check_lost`), another device's context is not affected, dropping releases
/// everything, and a context made afterwards (an engine's new device, which may
/// get the same handle value) works. (Every C call on them refused at the door:
/// `c_calls_on_a_lost_device_are_refused` in capi/tests/diagnostics.rs.)
#[test]
fn a_lost_vulkan_device_refuses_every_call_and_destroy_still_releases() {
    let _g = serial();
    let objects = live_counts();
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let b = buffer(&ctx, 4096, Allocator::Vulkan);
    vkcuda::fault_injection::device_lost(
        ctx.vulkan_handles().device,
        "vkQueueSubmit (the test's stand-in for the driver)",
    );
    for (what, r) in [
        ("Context::check_lost", ctx.check_lost()),
        ("the buffer's context", b.context().check_lost()),
    ] {
        let m = lost(r, "VK_ERROR_DEVICE_LOST", what);
        assert!(m.contains("vkQueueSubmit"), "{what}: {m}");
        println!("{what}: {m}");
    }
    // Another device's context is not affected.
    other.check_lost().unwrap();
    drop(buffer(&other, 4096, Allocator::Vulkan));
    drop((b, ctx, other));
    assert_eq!(live_counts(), objects, "drop released everything");
    // A new device works, whatever handle value it gets.
    let again = vulkan_only_context();
    again.check_lost().unwrap();
    drop(buffer(&again, 4096, Allocator::Vulkan));
}

// --- A lost VkDevice stays lost while anything of it lives (issue 39, item 1).
// The engine's vkGetDeviceProcAddr is wrapped so that vkAllocateMemory starts
// returning VK_ERROR_DEVICE_LOST on demand, as a lost device's driver does.

mod lossy {
    use ash::vk;
    use std::ffi::{c_char, CStr};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    /// While set, vkAllocateMemory returns VK_ERROR_DEVICE_LOST.
    pub static LOSE: AtomicBool = AtomicBool::new(false);
    pub static REAL_GDPA: OnceLock<vk::PFN_vkGetDeviceProcAddr> = OnceLock::new();
    static REAL_ALLOCATE: OnceLock<vk::PFN_vkAllocateMemory> = OnceLock::new();

    unsafe extern "system" fn allocate(
        device: vk::Device,
        info: *const vk::MemoryAllocateInfo<'_>,
        allocator: *const vk::AllocationCallbacks<'_>,
        memory: *mut vk::DeviceMemory,
    ) -> vk::Result {
        if LOSE.load(Ordering::SeqCst) {
            return vk::Result::ERROR_DEVICE_LOST;
        }
        (REAL_ALLOCATE.get().unwrap())(device, info, allocator, memory)
    }

    /// The engine's vkGetDeviceProcAddr with vkAllocateMemory wrapped.
    pub unsafe extern "system" fn get_device_proc_addr(
        device: vk::Device,
        name: *const c_char,
    ) -> vk::PFN_vkVoidFunction {
        let f = (REAL_GDPA.get().unwrap())(device, name);
        if CStr::from_ptr(name) == c"vkAllocateMemory" {
            let real = f?;
            REAL_ALLOCATE.get_or_init(|| {
                std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkAllocateMemory>(real)
            });
            return Some(std::mem::transmute::<
                vk::PFN_vkAllocateMemory,
                unsafe extern "system" fn(),
            >(allocate));
        }
        f
    }
}

/// After vkAllocateMemory returned VK_ERROR_DEVICE_LOST, a second context on
/// the same VkDevice must not erase the loss: it is refused (DeviceLost, naming
/// the first error), and the first context's buffer and image still answer
/// DeviceLost. Once every object of the device is dropped, a context on the
/// same handle value is a new device and starts clean.
#[test]
fn a_second_context_on_a_lost_device_does_not_resurrect_the_first() {
    use std::sync::atomic::Ordering;
    let _g = serial();
    let objects = live_counts();
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    lossy::REAL_GDPA.get_or_init(|| e.instance.fp_v1_0().get_device_proc_addr);
    let handles = engine_handles(&e, Some(lossy::get_device_proc_addr));
    // SAFETY: the engine's live handles, which outlive every context made here.
    let open = || unsafe { Context::from_engine(&handles, CudaChoice::None) };
    let c1 = open().unwrap();
    let a = buffer(&c1, 4096, Allocator::Vulkan);
    let im = try_image(&c1, 16).unwrap();

    lossy::LOSE.store(true, Ordering::SeqCst);
    const FIRST: &str = "vkAllocateMemory failed with VK_ERROR_DEVICE_LOST";
    let first = lost(try_buffer(&c1, 4096, Allocator::Vulkan), FIRST, "create");
    println!("the call that met the loss: {first}");
    let still_lost = |when: &str| {
        lost(a.context().check_lost(), FIRST, &format!("{when}: A"));
        lost(im.context().check_lost(), FIRST, &format!("{when}: I"));
    };
    still_lost("after the loss");

    // A second context with the same handles, while A and I live: refused with
    // the first error, and the record stays.
    for _ in 0..2 {
        let m = lost(open(), FIRST, "a second context");
        println!("a second context on the lost device: {m}");
        assert!(m.contains("objects of it are still alive"), "{m}");
        still_lost("after a second context was asked for");
    }
    // The objects keep the record after their context handle is dropped too.
    drop(c1);
    still_lost("after the first context's handle was dropped");
    drop((a, im));
    assert_eq!(live_counts(), objects, "drop released everything");

    // Nothing of the device is alive: the same handle value is a new device (an
    // engine that recreated its VkDevice may get it back), which starts clean.
    lossy::LOSE.store(false, Ordering::SeqCst);
    let c3 = open().unwrap();
    assert_eq!(
        c3.vulkan_handles().device,
        e.device.handle(),
        "the same handle value"
    );
    c3.check_lost().unwrap();
    still_usable(&c3);
    // ...and a second context beside it is fine while nothing is lost.
    let c4 = open().unwrap();
    still_usable(&c4);
    drop((c4, c3));
    assert_eq!(live_counts(), objects);
    drop(e);
}
