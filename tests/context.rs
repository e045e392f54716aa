//! Device pairing and the context, on whatever Vulkan this machine has (lavapipe in
//! CI): standalone contexts, contexts over an engine's device, what `pairing`
//! reports, and how objects keep their context alive. CUDA-less behaviour is tested
//! for real where no CUDA driver exists; on a GPU (`gpu_*`, ignored without
//! `--include-ignored`) the pairing with CUDA for real. The C door's argument
//! checks are the misuse matrix's (capi/tests/misuse/context.rs).

mod support;
use support::*;

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;

use ash::vk;
use vkcuda::buffer::{Allocator, Wrap};
use vkcuda::context::{BorrowedCudaContext, CudaChoice, EngineHandles};
use vkcuda::image::Description;
use vkcuda::semaphore::Kind;
use vkcuda::{pairing, Buffer, Context, ErrorKind, Image, Semaphore};

fn none() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::empty()
}

fn cuda_present() -> bool {
    pairing::cuda_driver_version().is_ok()
}

/// The handles of an engine's device, for `Context::from_engine`.
fn handles(e: &EngineDevice) -> EngineHandles {
    support::device::engine_handles(e, None)
}

/// A context over the engine's device (which outlives it: the caller drops the
/// context first).
fn engine_context(h: &EngineHandles, choice: CudaChoice) -> vkcuda::Result<Arc<Context>> {
    // SAFETY: the engine's live handles, which outlive the context.
    unsafe { Context::from_engine(h, choice) }
}

/// `pairing::DEVICE_EXTENSIONS` by name, asserted to be the two the library
/// needs.
fn device_extensions() -> Vec<&'static str> {
    let names: Vec<&str> = pairing::DEVICE_EXTENSIONS
        .iter()
        .map(|n| n.to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd"]
    );
    names
}

#[test]
fn device_extension_list() {
    let names = device_extensions();
    let ptrs = pairing::device_extension_names();
    assert_eq!(ptrs.len(), names.len());
    for (p, n) in ptrs.iter().zip(&names) {
        assert_eq!(unsafe { CStr::from_ptr(*p) }.to_str().unwrap(), *n);
    }
}

#[test]
fn physical_devices_are_listed_with_support() {
    let listed: Vec<_> = pairing::enumerate()
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert!(
        !listed.is_empty(),
        "this machine has a Vulkan device (lavapipe in CI)"
    );
    for r in &listed {
        let (s, name) = (&r.support, &r.support.props.name);
        assert!(!name.is_empty());
        assert!(s.props.api_version >= vk::API_VERSION_1_2, "{name}");
        assert_eq!(r.cuda_available, cuda_present());
        if r.cuda_ordinal.is_none() {
            assert!(!r.supported());
        }
        if name.contains("llvmpipe") {
            assert!(s.external_memory_fd);
            assert!(
                !s.external_semaphore_fd,
                "lavapipe has no VK_KHR_external_semaphore_fd"
            );
            assert!(s.timeline_semaphore);
            assert!(r.cuda_ordinal.is_none());
        }
    }
}

#[test]
fn query_from_engine_handles_and_bad_arguments() {
    let e = EngineDevice::new(&[], |_, _| true);
    let gipa = e.entry.static_fn().get_instance_proc_addr;
    // SAFETY: the engine's live instance and one of its physical devices.
    let r = unsafe { pairing::report(gipa, e.instance.handle(), e.physical) }.unwrap();
    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
    unsafe {
        e.instance
            .get_physical_device_properties2(e.physical, &mut p2)
    };
    assert_eq!(r.support.props.uuid, id.device_uuid);
}

#[test]
fn missing_cuda_driver_is_a_clear_error() {
    if cuda_present() {
        eprintln!("SKIPPED: missing_cuda_driver_is_a_clear_error: this machine has a CUDA driver");
        return;
    }
    refused(
        pairing::cuda_driver_version(),
        ErrorKind::CudaUnavailable,
        "libcuda.so.1",
    );
    // The standalone context asks for CUDA by default, and says what to do.
    let e = refused(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::CudaUnavailable,
        "libcuda.so.1",
    );
    assert!(e.message().contains("Vulkan-only"), "says what to do: {e}");
    // So does the engine path, on a real engine device.
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let h = handles(&engine);
    refused(
        engine_context(&h, CudaChoice::Primary),
        ErrorKind::CudaUnavailable,
        "",
    );
    // The Vulkan-only queries keep working.
    assert!(!pairing::enumerate().unwrap().is_empty());
}

#[test]
fn a_vulkan_only_context_has_handles_and_no_cuda() {
    let ctx = vulkan_only_context();
    let h = ctx.vulkan_handles();
    assert_ne!(h.instance, vk::Instance::null());
    assert_ne!(h.device, vk::Device::null());
    let (_, queue) = h.queue.expect("a standalone context has a queue");
    assert_ne!(queue, vk::Queue::null());
    refused(
        ctx.cuda_info(),
        ErrorKind::CudaUnavailable,
        "has no CUDA side",
    );
    refused(
        ctx.check_stream(std::ptr::null_mut()),
        ErrorKind::CudaUnavailable,
        "has no CUDA side",
    );
    ctx.check_lost().unwrap();
    let debug = format!("{ctx:?}");
    has(&debug, &["standalone: true"]);
    // A device index past the end is refused with the reason.
    refused(
        Context::standalone(Some(1 << 20), CudaChoice::None),
        ErrorKind::InvalidArgument,
        "physical device index 1048576 is out of range",
    );
}

#[test]
fn engine_device_without_the_extensions() {
    // An engine that forgot VK_KHR_external_memory_fd: its functions resolve to NULL.
    let e = EngineDevice::new(&[], |_, _| true);
    let h = handles(&e);
    let ctx = engine_context(&h, CudaChoice::None).unwrap();
    refused(
        Buffer::create(&ctx, 4096, none(), Allocator::Vulkan),
        ErrorKind::ExtensionNotPresent,
        "VK_KHR_external_memory_fd",
    );
    refused(
        Semaphore::create(&ctx, Kind::Timeline, 0, None),
        ErrorKind::ExtensionNotPresent,
        "VK_KHR_external_semaphore_fd",
    );
    let vh = ctx.vulkan_handles();
    assert_eq!(vh.device, e.device.handle());
    assert!(vh.queue.is_none(), "engine contexts hand out no queue");
}

#[test]
fn engine_device_with_the_extension_shares_buffers() {
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |i, p| {
        let exts = unsafe { i.enumerate_device_extension_properties(p) }.unwrap();
        exts.iter()
            .any(|x| x.extension_name_as_c_str().unwrap() == ash::khr::external_memory_fd::NAME)
    });
    // With the engine's own vkGetDeviceProcAddr.
    let h = EngineHandles {
        get_device_proc_addr: Some(e.instance.fp_v1_0().get_device_proc_addr),
        ..handles(&e)
    };
    let ctx = engine_context(&h, CudaChoice::None).unwrap();
    let b = Buffer::create(&ctx, 1 << 20, none(), Allocator::Vulkan).unwrap();
    assert_ne!(b.vk_buffer(), vk::Buffer::null());
    assert!(b.layout().allocation_size >= 1 << 20);
    let fd = b.export_fd().unwrap();
    assert!(fd_is_open(fd.as_raw_fd()));
}

#[test]
fn an_engine_device_is_paired_and_its_buffers_wrapped() {
    let has_memory_fd = |i: &ash::Instance, p: vk::PhysicalDevice| {
        unsafe { i.enumerate_device_extension_properties(p) }
            .unwrap()
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(pairing::DEVICE_EXTENSIONS[0]))
    };
    let engine = EngineDevice::new(&[pairing::DEVICE_EXTENSIONS[0]], has_memory_fd);
    let handles = handles(&engine);
    // SAFETY: the engine's live handles, which outlive the context (dropped first).
    let ctx = unsafe { Context::from_engine(&handles, CudaChoice::None) }.unwrap();
    let h = ctx.vulkan_handles();
    assert_eq!(h.device, engine.device.handle());
    assert!(h.queue.is_none(), "the engine's device: no queue of ours");
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);

    // The library's buffer on the engine's device, written and read by the engine.
    let data = bytes(8192, 3);
    let buf = Buffer::create(&ctx, 8192, none(), Allocator::Vulkan).unwrap();
    v.write(buf.vk_buffer(), &data);
    assert_same(&v.read(buf.vk_buffer(), 8192), &data, "engine device");

    // The engine's own exportable buffer, wrapped.
    let d = &engine.device;
    let mut external = vk::ExternalMemoryBufferCreateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let own = unsafe {
        d.create_buffer(
            &vk::BufferCreateInfo::default()
                .size(8192)
                .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
                .push_next(&mut external),
            None,
        )
    }
    .unwrap();
    let req = unsafe { d.get_buffer_memory_requirements(own) };
    let mut export = vk::ExportMemoryAllocateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let memory = unsafe {
        d.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(device_local_type(&v, req.memory_type_bits))
                .push_next(&mut export),
            None,
        )
    }
    .unwrap();
    unsafe { d.bind_buffer_memory(own, memory, 0) }.unwrap();
    let wrap = Wrap {
        buffer: own,
        memory,
        allocation_size: req.size,
        offset: 0,
        size: 8192,
        dedicated: false,
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD,
    };
    {
        // SAFETY: `own` is bound to `memory`, allocated exportable; both outlive it.
        let wrapped = unsafe { Buffer::wrap(&ctx, &wrap) }.unwrap();
        assert!(wrapped.is_wrapped());
        assert_eq!((wrapped.vk_buffer(), wrapped.vk_memory()), (own, memory));
        assert_eq!(wrapped.layout().size, 8192);
        // Its export is the engine's memory: imported again, it reads the same.
        v.write(own, &data);
        let fd = wrapped.export_fd().unwrap();
        let twin = Buffer::import_fd(&ctx, fd.as_fd(), wrapped.layout(), none()).unwrap();
        assert_same(&v.read(twin.vk_buffer(), 8192), &data, "wrapped");
        // Refusals, before any driver call.
        refused(
            unsafe {
                Buffer::wrap(
                    &ctx,
                    &Wrap {
                        export_handle_types: vk::ExternalMemoryHandleTypeFlags::empty(),
                        ..wrap
                    },
                )
            },
            ErrorKind::InvalidArgument,
            "OPAQUE_FD",
        );
        refused(
            unsafe {
                Buffer::wrap(
                    &ctx,
                    &Wrap {
                        buffer: vk::Buffer::null(),
                        ..wrap
                    },
                )
            },
            ErrorKind::NullPointer,
            "buffer must not be NULL",
        );
        refused(
            unsafe {
                Buffer::wrap(
                    &ctx,
                    &Wrap {
                        offset: req.size,
                        ..wrap
                    },
                )
            },
            ErrorKind::InvalidArgument,
            "past the end of the allocation",
        );
    }
    unsafe {
        d.destroy_buffer(own, None);
        d.free_memory(memory, None);
    }
    drop(buf);
    drop(v);
    drop(ctx);
}

#[test]
fn pairing_lists_what_an_engine_enables() {
    device_extensions();
    let listed: Vec<_> = pairing::enumerate()
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert!(!listed.is_empty(), "the loader lists a device");
    let ctx = vulkan_only_context();
    let uuid = ctx_uuid(&ctx);
    let mine = listed
        .iter()
        .find(|r| r.support.props.uuid == uuid)
        .unwrap();
    assert!(mine.support.external_memory_fd && mine.support.timeline_semaphore);
    assert_eq!(
        pairing::format_uuid(&uuid).len(),
        36,
        "{}",
        pairing::format_uuid(&uuid)
    );
    if !mine.cuda_available {
        assert!(mine.cuda_ordinal.is_none() && !mine.supported());
    }
}

#[test]
fn objects_keep_their_context_alive() {
    let ctx = vulkan_only_context();
    let buf = Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap();
    let im = Image::create(&ctx, &Description::new_2d(vk::Format::R8_UNORM, 32, 32)).unwrap();
    assert_eq!(Arc::strong_count(&ctx), 3);
    drop(ctx);
    // The context lives on in its objects: new objects can be made from it.
    let ctx = buf.context().clone();
    assert!(Arc::ptr_eq(&ctx, im.context()));
    let v = Vk::of(&ctx);
    let data = bytes(4096, 41);
    v.write(buf.vk_buffer(), &data);
    let more = Buffer::create(buf.context(), 4096, none(), Allocator::Vulkan).unwrap();
    v.copy(buf.vk_buffer(), more.vk_buffer(), 4096);
    assert_same(&v.read(more.vk_buffer(), 4096), &data, "copy");
    drop(v);
    drop(ctx);
    drop(buf);
    drop(more);
    assert_eq!(Arc::strong_count(im.context()), 1);
}

// ---------------------------------------------------------------------------------
// GPU: the pairing with CUDA for real.

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_context_pairs_by_uuid() {
    let Some(ctx) = cuda_context_or_skip("gpu_context_pairs_by_uuid") else {
        return;
    };
    let c = ctx.cuda_info().unwrap();
    let uuid = ctx_uuid(&ctx);
    assert_eq!(c.uuid, uuid, "the CUDA device has the Vulkan device's UUID");
    assert!(c.primary);
    let h = ctx.vulkan_handles();
    // SAFETY: the context's own live instance and physical device.
    let report =
        unsafe { pairing::report(h.get_instance_proc_addr, h.instance, h.physical_device) }
            .unwrap();
    assert!(report.supported(), "full interop support");
    println!(
        "standalone: CUDA device {} uuid {:02x?} primary context {:p}",
        c.ordinal, c.uuid, c.context
    );

    // Engine style: the test makes its own instance and device, as an engine would.
    let e = EngineDevice::new(&pairing::DEVICE_EXTENSIONS, |i, p| {
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
        unsafe { i.get_physical_device_properties2(p, &mut p2) };
        id.device_uuid == c.uuid
    });
    let eh = handles(&e);
    let ectx = engine_context(&eh, CudaChoice::Primary).unwrap();
    let ec = ectx.cuda_info().unwrap();
    assert_eq!(ec.uuid, c.uuid);
    assert_eq!(
        ec.context, c.context,
        "both use the device's primary context"
    );
    println!(
        "engine-style context paired with CUDA device {}",
        ec.ordinal
    );
    // With the caller's own CUcontext.
    // SAFETY: the primary context, retained by `ctx`, which outlives `bctx`.
    let borrowed = unsafe { BorrowedCudaContext::from_raw(c.context) };
    let bctx = engine_context(&eh, CudaChoice::Borrowed(borrowed)).unwrap();
    assert!(
        !bctx.cuda_info().unwrap().primary,
        "a context passed in is borrowed, not the library's primary retain"
    );
    // A buffer on the engine context works both ways.
    let b = Buffer::create(&ectx, 4096, none(), Allocator::Cuda).unwrap();
    assert_ne!(b.cuda_ptr().unwrap(), 0);
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
        let h = handles(&e);
        if !e.hides_1_1_commands() {
            // NVIDIA's driver resolves the 1.1 commands for a 1.0 instance: the
            // library cannot tell the instance's apiVersion, and what it calls works.
            let r = engine_context(&h, CudaChoice::None);
            if with_extensions {
                let b = Buffer::create(&r.unwrap(), 1 << 20, none(), Allocator::Vulkan).unwrap();
                assert_ne!(b.layout().size, 0);
                println!("this driver resolves Vulkan 1.1 commands for a 1.0 instance: accepted, and a buffer works");
            } else if let Err(e) = r {
                // Without the external memory extensions: the device's support is what lacks.
                println!("without the 1.0 engine's extensions: {:?}: {e}", e.kind());
            }
            continue;
        }
        for choice in [CudaChoice::None, CudaChoice::Primary] {
            let msg =
                refused(engine_context(&h, choice), ErrorKind::InvalidArgument, "").to_string();
            println!("extensions {with_extensions}, {choice:?}: {msg}");
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
        let told = EngineHandles {
            get_device_proc_addr: Some(e.instance.fp_v1_0().get_device_proc_addr),
            ..handles(&e)
        };
        refused(
            engine_context(&told, CudaChoice::None),
            ErrorKind::InvalidArgument,
            "apiVersion 1.0",
        );
    }
}
