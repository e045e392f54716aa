//! Device pairing and the context, on whatever Vulkan this machine has (lavapipe in
//! CI). CUDA-less behaviour is tested for real where no CUDA driver exists; on a GPU
//! (`gpu_*`, ignored without `--include-ignored`) the pairing with CUDA for real.

mod support;
use support::*;

use std::ffi::CStr;
use std::ptr;

use ash::vk;

fn cuda_present() -> bool {
    let mut v = 0;
    unsafe { vkcuda_cuda_driver_get_version(&mut v) == VKCUDA_SUCCESS }
}

#[test]
fn device_extension_list() {
    let mut count = 0u32;
    ok(unsafe { vkcuda_device_extensions_enumerate(&mut count, ptr::null_mut()) });
    assert_eq!(count, 2);
    let mut names = [ptr::null(); 2];
    ok(unsafe { vkcuda_device_extensions_enumerate(&mut count, names.as_mut_ptr()) });
    let names: Vec<&str> = names
        .iter()
        .map(|&p| unsafe { CStr::from_ptr(p) }.to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd"]
    );
    let mut one = 1u32;
    let mut first = [ptr::null(); 1];
    fails(
        unsafe { vkcuda_device_extensions_enumerate(&mut one, first.as_mut_ptr()) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert_eq!(one, 1);
    assert!(!first[0].is_null());
}

#[test]
fn physical_devices_are_listed_with_support() {
    let mut count = 0u32;
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut count, ptr::null_mut()) });
    assert!(
        count >= 1,
        "this machine has a Vulkan device (lavapipe in CI)"
    );
    let mut list: Vec<vkcuda_physical_device_support> =
        (0..count).map(|_| unsafe { std::mem::zeroed() }).collect();
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut count, list.as_mut_ptr()) });
    for s in &list {
        let name = unsafe { CStr::from_ptr(s.device_name.as_ptr()) }
            .to_str()
            .unwrap();
        assert!(!name.is_empty());
        assert!(s.api_version >= vk::API_VERSION_1_2, "{name}");
        assert_eq!(s.cuda_available == 1, cuda_present());
        if s.cuda_device_found == 0 {
            assert_eq!(s.cuda_device_ordinal, -1);
            assert_eq!(s.supported, 0);
        }
        if name.contains("llvmpipe") {
            assert_eq!(s.external_memory_fd, 1);
            assert_eq!(
                s.external_semaphore_fd, 0,
                "lavapipe has no VK_KHR_external_semaphore_fd"
            );
            assert_eq!(s.timeline_semaphore, 1);
            assert_eq!(s.cuda_device_found, 0);
        }
    }
}

#[test]
fn query_from_engine_handles_and_bad_arguments() {
    let e = EngineDevice::new(&[], |_, _| true);
    let gipa = Some(e.entry.static_fn().get_instance_proc_addr);
    let mut s: vkcuda_physical_device_support = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_physical_device_query(e.instance.handle(), e.physical, gipa, &mut s) });
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
    unsafe {
        e.instance
            .get_physical_device_properties2(e.physical, &mut p2)
    };
    assert_eq!(s.device_uuid, id.device_uuid);
}

#[test]
fn missing_cuda_driver_is_a_clear_error() {
    if cuda_present() {
        eprintln!("SKIPPED: missing_cuda_driver_is_a_clear_error: this machine has a CUDA driver");
        return;
    }
    let mut v = 7;
    let msg = fails(
        unsafe { vkcuda_cuda_driver_get_version(&mut v) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(msg.contains("libcuda.so.1"), "{msg}");
    assert_eq!(v, 7, "outputs are written only on success");
    // The standalone context asks for CUDA by default.
    let mut ctx = 1usize as *mut vkcuda_context;
    let msg = fails(
        unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(ctx.is_null(), "the handle is set to NULL on failure");
    assert!(
        msg.contains("VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT"),
        "says what to do: {msg}"
    );
    // So does the engine path, on a real engine device.
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let info = e.create_info(0);
    let mut ctx = 1usize as *mut vkcuda_context;
    fails(
        unsafe { vkcuda_context_create(&info, &mut ctx) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(ctx.is_null());
    // The Vulkan-only queries keep working.
    let mut count = 0;
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut count, ptr::null_mut()) });
}

#[test]
fn vulkan_only_standalone_context() {
    let ctx = vulkan_only_context();
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
    assert_ne!(h.instance, vk::Instance::null());
    assert_ne!(h.device, vk::Device::null());
    assert_ne!(h.queue, vk::Queue::null());
    assert!(h.get_instance_proc_addr.is_some());
    let mut c: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_context_get_cuda_info(ctx, &mut c) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(msg.contains("VULKAN_ONLY"), "{msg}");
    unsafe { vkcuda_context_destroy(ctx) };
    unsafe { vkcuda_context_destroy(ptr::null_mut()) };
}

#[test]
fn context_create_checks_its_arguments() {
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let mut ctx = ptr::null_mut();
    let mut bad = e.create_info(0x80);
    let msg = fails(
        unsafe { vkcuda_context_create(&bad, &mut ctx) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("flags"), "{msg}");
    bad = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    bad.cuda_context = 0x1000 as *mut CUctx_st;
    fails(
        unsafe { vkcuda_context_create(&bad, &mut ctx) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    // The standalone options are checked too.
    let opts = vkcuda_standalone_create_info {
        flags: 0x100,
        physical_device_index: 0,
    };
    fails(
        unsafe { vkcuda_context_create_standalone(&opts, &mut ctx) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let opts = vkcuda_standalone_create_info {
        flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT
            | VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT,
        physical_device_index: 999,
    };
    let msg = fails(
        unsafe { vkcuda_context_create_standalone(&opts, &mut ctx) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("999"), "{msg}");
}

#[test]
fn engine_device_without_the_extensions() {
    // An engine that forgot VK_KHR_external_memory_fd: its functions resolve to NULL.
    let e = EngineDevice::new(&[], |_, _| true);
    let info = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    let bi = buffer_create_info(4096, 0);
    let mut b = 1usize as *mut vkcuda_buffer;
    let msg = fails(
        unsafe { vkcuda_buffer_create(ctx, &bi, &mut b) },
        VKCUDA_ERROR_EXTENSION_NOT_PRESENT,
    );
    assert!(
        msg.contains("VK_KHR_external_memory_fd"),
        "names the extension: {msg}"
    );
    assert!(b.is_null());
    let si: vkcuda_semaphore_create_info = unsafe { std::mem::zeroed() };
    let mut s = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_semaphore_create(ctx, &si, &mut s) },
        VKCUDA_ERROR_EXTENSION_NOT_PRESENT,
    );
    assert!(msg.contains("VK_KHR_external_semaphore_fd"), "{msg}");
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
    assert_eq!(h.device, e.device.handle());
    assert_eq!(
        h.queue,
        vk::Queue::null(),
        "engine contexts hand out no queue"
    );
    assert_eq!(h.queue_family_index, u32::MAX);
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
fn engine_device_with_the_extension_shares_buffers() {
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |i, p| {
        let exts = unsafe { i.enumerate_device_extension_properties(p) }.unwrap();
        exts.iter()
            .any(|x| x.extension_name_as_c_str().unwrap() == ash::khr::external_memory_fd::NAME)
    });
    let mut info = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    info.get_device_proc_addr = Some(e.instance.fp_v1_0().get_device_proc_addr);
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    let b = create_buffer(ctx, 1 << 20, 0);
    let bi = buffer_info(b);
    assert_ne!(bi.buffer, vk::Buffer::null());
    assert!(bi.allocation_size >= 1 << 20);
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    assert!(fd_is_open(fd));
    unsafe { libc::close(fd) };
    unsafe { vkcuda_buffer_destroy(b) };
    unsafe { vkcuda_context_destroy(ctx) };
}

// ---------------------------------------------------------------------------------
// GPU: the pairing with CUDA for real.

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_context_pairs_by_uuid() {
    let Some(ctx) = cuda_context_or_skip("gpu_context_pairs_by_uuid") else {
        return;
    };
    let mut c: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut c) });
    let s = device_support(ctx);
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

/// What a Vulkan 1.0 engine enables for external memory: the instance extensions
/// that carry the 1.1 queries, and the device's external memory extensions.
fn vulkan_1_0_engine(with_extensions: bool) -> EngineDevice {
    let (instance_exts, device_exts): (&[&CStr], &[&CStr]) = if with_extensions {
        (
            &[
                ash::khr::get_physical_device_properties2::NAME,
                ash::khr::external_memory_capabilities::NAME,
                ash::khr::external_semaphore_capabilities::NAME,
            ],
            &[
                ash::khr::external_memory::NAME,
                ash::khr::external_memory_fd::NAME,
            ],
        )
    } else {
        (&[], &[])
    };
    EngineDevice::with_version(vk::API_VERSION_1_0, instance_exts, device_exts, |i, p| {
        // The device itself has Vulkan 1.2 or later: the instance is the old part.
        unsafe { i.get_physical_device_properties(p) }.api_version >= vk::API_VERSION_1_2
    })
}

/// An instance of apiVersion 1.0 (the header asks for 1.2): refused at create,
/// with or without the 1.0 engine's extensions, with a message that names the
/// version; before, the first buffer_create aborted the process in ash ("Unable to
/// load get_buffer_memory_requirements2"), or without the extensions it blamed the
/// device's export support.
#[test]
fn an_instance_of_vulkan_1_0_is_refused_at_create() {
    for with_extensions in [true, false] {
        let e = vulkan_1_0_engine(with_extensions);
        if !e.hides_1_1_commands() {
            // NVIDIA's driver resolves the 1.1 commands for a 1.0 instance: the
            // library cannot tell the instance's apiVersion, and what it calls works.
            let info = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
            let mut ctx = ptr::null_mut();
            let r = unsafe { vkcuda_context_create(&info, &mut ctx) };
            if with_extensions {
                ok(r);
                let b = create_buffer(ctx, 1 << 20, 0);
                assert_ne!(buffer_info(b).size, 0);
                unsafe {
                    vkcuda_buffer_destroy(b);
                    vkcuda_context_destroy(ctx);
                }
                println!("this driver resolves Vulkan 1.1 commands for a 1.0 instance: accepted, and a buffer works");
            } else if r == VKCUDA_SUCCESS {
                unsafe { vkcuda_context_destroy(ctx) };
            } else {
                // Without the external memory extensions: the device's support is what lacks.
                println!(
                    "without the 1.0 engine's extensions: {r:?}: {}",
                    last_error()
                );
            }
            continue;
        }
        for flags in [VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT, 0] {
            let info = e.create_info(flags);
            let mut ctx = 1usize as *mut vkcuda_context;
            let msg = fails(
                unsafe { vkcuda_context_create(&info, &mut ctx) },
                VKCUDA_ERROR_INVALID_ARGUMENT,
            );
            assert!(ctx.is_null());
            println!("extensions {with_extensions}, flags {flags}: {msg}");
            for want in [
                "vkGetBufferMemoryRequirements2, core in Vulkan 1.1",
                "apiVersion 1.0",
                "VK_API_VERSION_1_2",
                "the device itself supports Vulkan 1.",
            ] {
                assert!(
                    msg.contains(want),
                    "extensions {with_extensions}: wants {want:?}: {msg}"
                );
            }
            assert!(
                !msg.contains("export"),
                "not the device's export support: {msg}"
            );
        }
        // With the engine's own vkGetDeviceProcAddr too.
        let mut info = e.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
        info.get_device_proc_addr = Some(e.instance.fp_v1_0().get_device_proc_addr);
        let mut ctx = ptr::null_mut();
        let msg = fails(
            unsafe { vkcuda_context_create(&info, &mut ctx) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(msg.contains("apiVersion 1.0"), "{msg}");
    }
}
