//! The Rust API (`vkcuda::{Context, Buffer, Image, Semaphore}`, `handoff`, `ipc`,
//! `dlpack`, `doctor`, `pairing`, `Error`) on its own, the way a Rust engine uses
//! it: no C function is called. On lavapipe (Vulkan-only contexts) data written
//! through Vulkan is read back through another context's import, across the
//! handoff barriers and across a socket, and every refusal is checked for its
//! kind and its words. The GPU test (`gpu_*`, ignored without a GPU) runs a
//! frame loop with CUDA. DLPack tensors are tests/dlpack.rs's.

mod support;
use support::cuda::{check, Cuda};
use support::{gpu_required, layout_barrier, pattern, EngineDevice, HostBuffer, Vk};

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use ash::vk;
use vkcuda::buffer::{Allocator, Layout, Wrap};
use vkcuda::context::CudaChoice;
use vkcuda::dlpack::Tensor;
use vkcuda::handoff::{self, Direction, Resource, Scope};
use vkcuda::image::Description;

use vkcuda::semaphore::Kind;
use vkcuda::{doctor, pairing, Buffer, Context, Error, ErrorKind, Image, Semaphore};

fn none() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::empty()
}

/// A Vulkan-only standalone context (lavapipe on a machine without a GPU).
fn vulkan_only() -> Arc<Context> {
    Context::standalone(None, CudaChoice::None).expect("a Vulkan-only standalone context")
}

/// The test's own Vulkan work on a standalone context's device and queue.
fn vk_of(ctx: &Context) -> Vk {
    Vk::of(ctx)
}

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    (0..n).map(|i| pattern(i, seed)).collect()
}

/// The first differing byte, for a message that says where.
#[track_caller]
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: byte {i} of {} is {:#04x}, want {:#04x}",
            want.len(),
            got[i],
            want[i]
        );
    }
}

/// Writes `data` into `buffer` through a host-visible staging buffer.
fn vulkan_write(v: &Vk, buffer: vk::Buffer, data: &[u8]) {
    let host = v.host_buffer(data.len() as u64);
    host.bytes().copy_from_slice(data);
    v.copy(host.buffer, buffer, data.len() as u64);
    v.destroy_host_buffer(host);
}

/// Reads `len` bytes of `buffer` through a staging buffer.
fn vulkan_read(v: &Vk, buffer: vk::Buffer, len: usize) -> Vec<u8> {
    let host = v.host_buffer(len as u64);
    host.bytes().fill(0);
    v.copy(buffer, host.buffer, len as u64);
    let out = host.bytes().to_vec();
    v.destroy_host_buffer(host);
    out
}

fn color() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange::default()
        .aspect_mask(vk::ImageAspectFlags::COLOR)
        .level_count(1)
        .layer_count(1)
}

fn region(w: u32, h: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(
            vk::ImageSubresourceLayers::default()
                .aspect_mask(vk::ImageAspectFlags::COLOR)
                .layer_count(1),
        )
        .image_extent(vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        })
}

/// Uploads level 0 of a single-plane 2D image (tightly packed `data`) and leaves
/// it in TRANSFER_DST_OPTIMAL.
fn upload(v: &Vk, im: &Image, data: &[u8]) {
    let d = *im.description();
    let host = v.host_buffer(data.len() as u64);
    host.bytes().copy_from_slice(data);
    let image = im.vk_image();
    v.run(|cmd| unsafe {
        v.image_barrier(
            cmd,
            layout_barrier(
                image,
                color(),
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            ),
        );
        v.device.cmd_copy_buffer_to_image(
            cmd,
            host.buffer,
            image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &[region(d.width, d.height)],
        );
    });
    v.destroy_host_buffer(host);
}

/// Downloads level 0 of a single-plane 2D image that is in `layout`.
fn download(v: &Vk, im: &Image, len: usize, layout: vk::ImageLayout) -> Vec<u8> {
    let d = *im.description();
    let host: HostBuffer = v.host_buffer(len as u64);
    host.bytes().fill(0);
    let image = im.vk_image();
    v.run(|cmd| unsafe {
        v.image_barrier(
            cmd,
            layout_barrier(
                image,
                color(),
                layout,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            ),
        );
        v.device.cmd_copy_image_to_buffer(
            cmd,
            image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            host.buffer,
            &[region(d.width, d.height)],
        );
    });
    let out = host.bytes().to_vec();
    v.destroy_host_buffer(host);
    out
}

#[track_caller]
fn kind_of<T: std::fmt::Debug>(r: vkcuda::Result<T>, want: ErrorKind, words: &str) -> Error {
    let e = r.expect_err("the call must fail");
    assert_eq!(e.kind(), want, "{e}");
    assert!(
        e.message().contains(words),
        "the message says {words:?}: {e}"
    );
    e
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    unsafe {
        use std::os::fd::FromRawFd;
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

#[test]
fn the_objects_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Context>();
    both::<Buffer>();
    both::<Image>();
    both::<Semaphore>();
    both::<Tensor>();
    both::<Error>();
    both::<vkcuda::context::BorrowedCudaContext>();
    // And they are usable across threads for real: one buffer, four threads.
    let ctx = vulkan_only();
    let buf = Arc::new(Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let b = buf.clone();
            std::thread::spawn(move || {
                let fd = b.export_fd().unwrap();
                (b.vk_buffer(), b.layout(), fd.as_raw_fd() >= 0)
            })
        })
        .collect();
    for t in threads {
        let (vk_buffer, layout, fd_ok) = t.join().unwrap();
        assert_eq!(vk_buffer, buf.vk_buffer());
        assert_eq!(layout, buf.layout());
        assert!(fd_ok);
    }
}

#[test]
fn a_vulkan_only_context_has_handles_and_no_cuda() {
    let ctx = vulkan_only();
    let h = ctx.vulkan_handles();
    assert_ne!(h.instance, vk::Instance::null());
    assert_ne!(h.device, vk::Device::null());
    let (_, queue) = h.queue.expect("a standalone context has a queue");
    assert_ne!(queue, vk::Queue::null());
    kind_of(
        ctx.cuda_info(),
        ErrorKind::CudaUnavailable,
        "has no CUDA side",
    );
    kind_of(
        ctx.check_stream(std::ptr::null_mut()),
        ErrorKind::CudaUnavailable,
        "has no CUDA side",
    );
    ctx.check_lost().unwrap();
    let debug = format!("{ctx:?}");
    assert!(debug.contains("standalone: true"), "{debug}");
    // A device index past the end is refused with the reason.
    kind_of(
        Context::standalone(Some(1 << 20), CudaChoice::None),
        ErrorKind::InvalidArgument,
        "physical device index 1048576 is out of range",
    );
}

#[test]
fn buffer_data_crosses_contexts_through_an_fd() {
    let a = vulkan_only();
    let b = vulkan_only();
    let (va, vb) = (vk_of(&a), vk_of(&b));
    let size = 256 * 1024 + 12;
    let data = bytes(size, 7);
    let shared = Buffer::create(&a, size as u64, none(), Allocator::Vulkan).unwrap();
    vulkan_write(&va, shared.vk_buffer(), &data);
    // A hands the memory out (VK_QUEUE_FAMILY_EXTERNAL), B takes it in.
    va.run(|cmd| unsafe {
        shared
            .cmd_release_to_cuda(cmd, &Scope::new(va.family))
            .unwrap()
    });
    let fd = shared.export_fd().unwrap();
    let second_fd = shared.export_fd().unwrap();
    let imported = Buffer::import_fd(&b, fd.as_fd(), shared.layout(), none()).unwrap();
    vb.run(|cmd| unsafe {
        imported
            .cmd_acquire_from_cuda(cmd, &Scope::new(vb.family))
            .unwrap()
    });
    // The fd stays the caller's: the drivers took duplicates.
    drop(fd);
    assert_eq!(imported.layout(), shared.layout());
    assert_ne!(imported.vk_buffer(), vk::Buffer::null());
    assert!(!imported.is_wrapped());
    // Context A and its buffer go first: the import keeps the memory.
    let layout = shared.layout();
    drop(shared);
    drop(va);
    drop(a);
    assert_same(
        &vulkan_read(&vb, imported.vk_buffer(), size),
        &data,
        "read through context B's import",
    );
    // A second import of the same memory: what B writes through one, it reads
    // through the other.
    let third = Buffer::import_fd(&b, second_fd.as_fd(), layout, none()).unwrap();
    let fresh = bytes(size, 99);
    vulkan_write(&vb, third.vk_buffer(), &fresh);
    assert_same(
        &vulkan_read(&vb, imported.vk_buffer(), size),
        &fresh,
        "one memory, two imports",
    );
}

#[test]
fn buffer_refusals_say_why() {
    let ctx = vulkan_only();
    kind_of(
        Buffer::create(&ctx, 0, none(), Allocator::Vulkan),
        ErrorKind::InvalidArgument,
        "size must not be 0",
    );
    kind_of(
        Buffer::create(&ctx, 1 << 63, none(), Allocator::Vulkan),
        ErrorKind::InvalidArgument,
        "absurd",
    );
    kind_of(
        Buffer::create(
            &ctx,
            64,
            vk::BufferUsageFlags::from_raw(0x4000_0000),
            Allocator::Vulkan,
        ),
        ErrorKind::InvalidArgument,
        "not buffer usages the library accepts",
    );
    kind_of(
        Buffer::create(
            &ctx,
            64,
            vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
            Allocator::Vulkan,
        ),
        ErrorKind::Unsupported,
        "SHADER_DEVICE_ADDRESS",
    );
    kind_of(
        Buffer::create(&ctx, 64, none(), Allocator::Cuda),
        ErrorKind::CudaUnavailable,
        "no CUDA side",
    );
    let buf = Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap();
    assert_eq!(buf.usage(), vkcuda::buffer::DEFAULT_USAGE);
    kind_of(buf.cuda_ptr(), ErrorKind::CudaUnavailable, "no CUDA side");
    // A pipe is not a memory handle: refused before any driver sees it.
    let (r, _w) = pipe();
    kind_of(
        Buffer::import_fd(&ctx, r.as_fd(), buf.layout(), none()),
        ErrorKind::InvalidArgument,
        "not a memory handle",
    );
    // A layout larger than the memory object (where the kernel knows its size:
    // lavapipe's memfds, not NVIDIA's opaque fds), and one that overflows.
    let fd = buf.export_fd().unwrap();
    if support::fd_knows_size(fd.as_raw_fd()) {
        let big = Layout {
            allocation_size: buf.layout().allocation_size * 4,
            size: buf.layout().allocation_size * 4,
            ..buf.layout()
        };
        kind_of(
            Buffer::import_fd(&ctx, fd.as_fd(), big, none()),
            ErrorKind::InvalidArgument,
            "larger than the memory object's real size",
        );
    }
    let overflow = Layout {
        offset: u64::MAX - 8,
        ..buf.layout()
    };
    kind_of(
        Buffer::import_fd(&ctx, fd.as_fd(), overflow, none()),
        ErrorKind::InvalidArgument,
        "overflows",
    );
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
    let handles = vkcuda::context::EngineHandles {
        instance: engine.instance.handle(),
        physical: engine.physical,
        device: engine.device.handle(),
        get_instance_proc_addr: engine.entry.static_fn().get_instance_proc_addr,
        get_device_proc_addr: None,
        synchronization2: false,
    };
    // SAFETY: the engine's live handles, which outlive the context (dropped first).
    let ctx = unsafe { Context::from_engine(&handles, CudaChoice::None) }.unwrap();
    let h = ctx.vulkan_handles();
    assert_eq!(h.device, engine.device.handle());
    assert!(h.queue.is_none(), "the engine's device: no queue of ours");
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);

    // The library's buffer on the engine's device, written and read by the engine.
    let data = bytes(8192, 3);
    let buf = Buffer::create(&ctx, 8192, none(), Allocator::Vulkan).unwrap();
    vulkan_write(&v, buf.vk_buffer(), &data);
    assert_same(
        &vulkan_read(&v, buf.vk_buffer(), 8192),
        &data,
        "engine device",
    );

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
                .memory_type_index(support::device_local_type(&v, req.memory_type_bits))
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
        export_handle_types: vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD.as_raw(),
    };
    {
        // SAFETY: `own` is bound to `memory`, allocated exportable; both outlive it.
        let wrapped = unsafe { Buffer::wrap(&ctx, &wrap) }.unwrap();
        assert!(wrapped.is_wrapped());
        assert_eq!((wrapped.vk_buffer(), wrapped.vk_memory()), (own, memory));
        assert_eq!(wrapped.layout().size, 8192);
        // Its export is the engine's memory: imported again, it reads the same.
        vulkan_write(&v, own, &data);
        let fd = wrapped.export_fd().unwrap();
        let twin = Buffer::import_fd(&ctx, fd.as_fd(), wrapped.layout(), none()).unwrap();
        assert_same(&vulkan_read(&v, twin.vk_buffer(), 8192), &data, "wrapped");
        // Refusals, before any driver call.
        kind_of(
            unsafe {
                Buffer::wrap(
                    &ctx,
                    &Wrap {
                        export_handle_types: 0,
                        ..wrap
                    },
                )
            },
            ErrorKind::InvalidArgument,
            "OPAQUE_FD",
        );
        kind_of(
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
        kind_of(
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

/// Issue 39 item 5 through the Rust API: a context over the engine's device knows
/// only what every device has, unless told (`from_engine_with_features`); a
/// standalone context knows what it enabled. The stage's feature is named.
#[test]
fn barriers_take_the_stages_the_context_knows_are_enabled() {
    use vk::PipelineStageFlags as S;
    let engine = EngineDevice::new(&[pairing::DEVICE_EXTENSIONS[0]], |_, _| true);
    let handles = vkcuda::context::EngineHandles {
        instance: engine.instance.handle(),
        physical: engine.physical,
        device: engine.device.handle(),
        get_instance_proc_addr: engine.entry.static_fn().get_instance_proc_addr,
        get_device_proc_addr: None,
        synchronization2: false,
    };
    let mut told = vkcuda::context::EnabledFeatures::default();
    told.geometry_shader = true;
    // SAFETY: the engine's live handles, which outlive the contexts (dropped first).
    // (EngineDevice enables no optional feature: the `told` context is only used to
    // see the rules, its barrier is never submitted.)
    let plain = unsafe { Context::from_engine(&handles, CudaChoice::None) }.unwrap();
    assert_eq!(plain.enabled_features(), Default::default());
    let standalone = vulkan_only();
    assert!(!standalone.enabled_features().geometry_shader);
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    let buf = Buffer::create(&plain, 4096, none(), Allocator::Vulkan).unwrap();
    let geometry = Scope::with_defaults(0, (S::GEOMETRY_SHADER | S::TRANSFER).as_raw(), 0);
    let cmd = v.command_buffer();
    // SAFETY: `cmd` is recording, on this device, used by this thread only.
    let e = unsafe { buf.cmd_release_to_cuda(cmd, &geometry) }.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains(
            "VK_PIPELINE_STAGE_GEOMETRY_SHADER_BIT, which needs the geometryShader feature"
        ),
        "{}",
        e.message
    );
    let scope = Scope::with_defaults(
        0,
        S::TRANSFER.as_raw(),
        vk::AccessFlags::COLOR_ATTACHMENT_WRITE.as_raw(),
    );
    let e = unsafe {
        handoff::batch(
            cmd,
            Direction::Acquire,
            &scope,
            [Ok(Resource::Buffer(&buf))],
        )
    }
    .unwrap_err();
    assert!(
        e.message.contains("VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT"),
        "{}",
        e.message
    );
    unsafe {
        v.device.end_command_buffer(cmd).unwrap();
        v.device.free_command_buffers(v.pool, &[cmd]);
    }
    drop(buf);
    let ctx =
        unsafe { Context::from_engine_with_features(&handles, &told, CudaChoice::None) }.unwrap();
    assert!(ctx.enabled_features().geometry_shader && !ctx.enabled_features().synchronization2);
    drop((v, ctx, plain, standalone));
}

#[test]
fn handoffs_keep_the_data() {
    let ctx = vulkan_only();
    let v = vk_of(&ctx);
    let scope = Scope::new(v.family);
    // A buffer: written, released to CUDA and acquired back, read.
    let data = bytes(65536, 11);
    let buf = Buffer::create(&ctx, 65536, none(), Allocator::Vulkan).unwrap();
    vulkan_write(&v, buf.vk_buffer(), &data);
    v.run(|cmd| unsafe {
        buf.cmd_release_to_cuda(cmd, &scope).unwrap();
        buf.cmd_acquire_from_cuda(cmd, &scope).unwrap();
    });
    assert_same(&vulkan_read(&v, buf.vk_buffer(), 65536), &data, "buffer");

    // An image and a buffer in one batch each way.
    let (w, h) = (40, 24);
    let texels = bytes(w * h * 4, 12);
    let im = Image::create(
        &ctx,
        &Description::new_2d(vk::Format::R8G8B8A8_UNORM, w as u32, h as u32),
    )
    .unwrap();
    upload(&v, &im, &texels);
    v.run(|cmd| unsafe {
        let release = [
            Resource::Image(&im, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
            Resource::Buffer(&buf),
        ];
        handoff::batch(cmd, Direction::Release, &scope, release.map(Ok)).unwrap();
        let acquire = [
            Resource::Buffer(&buf),
            Resource::Image(&im, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        ];
        handoff::batch(cmd, Direction::Acquire, &scope, acquire.map(Ok)).unwrap();
    });
    assert_same(
        &download(&v, &im, texels.len(), vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        &texels,
        "image after a batched handoff",
    );
    assert_same(
        &vulkan_read(&v, buf.vk_buffer(), 65536),
        &data,
        "buffer after a batched handoff",
    );
    // The single-image calls: from the layout the engine left, to GENERAL and back.
    v.run(|cmd| unsafe {
        im.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .unwrap();
        im.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
            .unwrap();
    });
    assert_same(
        &download(&v, &im, texels.len(), vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        &texels,
        "image after its own handoff",
    );
}

#[test]
fn handoff_refusals_name_the_entry() {
    let a = vulkan_only();
    let b = vulkan_only();
    let v = vk_of(&a);
    let buf_a = Buffer::create(&a, 1024, none(), Allocator::Vulkan).unwrap();
    let buf_b = Buffer::create(&b, 1024, none(), Allocator::Vulkan).unwrap();
    let im = Image::create(&a, &Description::new_2d(vk::Format::R8G8B8A8_UNORM, 8, 8)).unwrap();
    let scope = Scope::new(v.family);
    let cmd = v.command_buffer();
    unsafe {
        kind_of(
            buf_a.cmd_release_to_cuda(cmd, &Scope::new(99)),
            ErrorKind::InvalidArgument,
            "queue_family_index is 99",
        );
        kind_of(
            buf_a.cmd_release_to_cuda(cmd, &Scope::new(vk::QUEUE_FAMILY_EXTERNAL)),
            ErrorKind::InvalidArgument,
            "CUDA's side of the transfer",
        );
        let two_devices = [Resource::Buffer(&buf_a), Resource::Buffer(&buf_b)];
        kind_of(
            handoff::batch(cmd, Direction::Release, &scope, two_devices.map(Ok)),
            ErrorKind::InvalidArgument,
            "resources[1] belongs to another VkDevice",
        );
        kind_of(
            im.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED),
            ErrorKind::InvalidArgument,
            "new_layout",
        );
        let depth = [Ok(Resource::Image(
            &im,
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        ))];
        kind_of(
            handoff::batch(cmd, Direction::Release, &scope, depth),
            ErrorKind::InvalidArgument,
            "resources[0].layout",
        );
        // An entry the caller could not read comes back as it is.
        let theirs = [
            Ok(Resource::Buffer(&buf_a)),
            Err(Error::new(ErrorKind::NullPointer, "my entry 1")),
        ];
        let e = handoff::batch(cmd, Direction::Release, &scope, theirs).unwrap_err();
        assert_eq!(e, Error::new(ErrorKind::NullPointer, "my entry 1"));
        // Nothing at all: nothing recorded, no error.
        handoff::batch(cmd, Direction::Acquire, &scope, []).unwrap();
        v.device.end_command_buffer(cmd).unwrap();
        v.device.free_command_buffers(v.pool, &[cmd]);
    }
}

#[test]
fn semaphores_where_the_device_has_them() {
    let ctx = vulkan_only();
    let support = pairing::enumerate()
        .unwrap()
        .into_iter()
        .flatten()
        .find(|r| r.support.props.uuid == ctx_uuid(&ctx))
        .expect("the context's device is listed");
    if !support.support.external_semaphore_fd {
        kind_of(
            Semaphore::create(&ctx, Kind::Timeline, 0, None),
            ErrorKind::ExtensionNotPresent,
            "VK_KHR_external_semaphore_fd",
        );
        eprintln!("rust_api: no VK_KHR_external_semaphore_fd here: the refusal was checked");
        return;
    }
    let sem = Semaphore::create(&ctx, Kind::Timeline, 5, None).unwrap();
    assert_eq!(sem.kind(), Kind::Timeline);
    assert_eq!(sem.value().unwrap(), 5);
    let s = sem.next_stage().unwrap();
    assert_eq!((s.wait, s.signal), (5, 6));
    sem.host_signal(6).unwrap();
    sem.host_wait(6, Duration::ZERO).unwrap();
    kind_of(
        sem.host_signal(6),
        ErrorKind::InvalidArgument,
        "strictly increase",
    );
    kind_of(
        sem.host_wait(7, Duration::from_millis(5)),
        ErrorKind::Timeout,
        "did not reach 7",
    );
    let fd = sem.export_fd().unwrap();
    let twin = Semaphore::import_fd(&ctx, fd.as_fd(), Kind::Timeline, None).unwrap();
    sem.host_signal(9).unwrap();
    assert_eq!(twin.value().unwrap(), 9, "one payload, two semaphores");
    kind_of(
        Semaphore::create(&ctx, Kind::Binary, 1, None),
        ErrorKind::InvalidArgument,
        "initial_value must be 0",
    );
}

fn ctx_uuid(ctx: &Context) -> [u8; 16] {
    let h = ctx.vulkan_handles();
    // SAFETY: the context's own live instance and physical device.
    unsafe { pairing::report(h.get_instance_proc_addr, h.instance, h.physical_device) }
        .unwrap()
        .support
        .props
        .uuid
}

#[test]
fn the_doctor_reports_this_machine() {
    let root = support::empty_dir("rust-api-doctor");
    let mut opts = doctor::Options::default();
    opts.root = root.clone();
    let report = doctor::run(&opts);
    assert!(report.checks.len() >= 5, "{report:?}");
    for c in &report.checks {
        assert!(!c.name.is_empty());
        assert_eq!(
            c.fix.is_empty(),
            c.status == doctor::Status::Pass,
            "a check has a fix exactly when it did not pass: {c:?}"
        );
    }
    assert_eq!(
        report.count(doctor::Status::Pass)
            + report.count(doctor::Status::Warn)
            + report.count(doctor::Status::Fail),
        report.checks.len()
    );
    assert_eq!(
        report.ready(),
        report.count(doctor::Status::Fail) == 0,
        "ready means nothing failed"
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["ready"], serde_json::json!(report.ready()));
    assert_eq!(
        json["checks"].as_array().unwrap().len(),
        report.checks.len()
    );
    // The lavapipe device this suite runs on is in the pairing table.
    let ctx = vulkan_only();
    let uuid = ctx_uuid(&ctx);
    let pair = report
        .pairs
        .iter()
        .find(|p| p.vulkan_uuid == Some(uuid))
        .expect("the context's device is in the pairing table");
    let name = pairing::enumerate()
        .unwrap()
        .into_iter()
        .flatten()
        .find(|r| r.support.props.uuid == uuid)
        .unwrap()
        .support
        .props
        .name;
    assert_eq!(pair.vulkan_name, name);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn pairing_lists_what_an_engine_enables() {
    let names: Vec<&str> = pairing::DEVICE_EXTENSIONS
        .iter()
        .map(|n| n.to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["VK_KHR_external_memory_fd", "VK_KHR_external_semaphore_fd"]
    );
    let listed: Vec<_> = pairing::enumerate()
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert!(!listed.is_empty(), "the loader lists a device");
    let ctx = vulkan_only();
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
fn errors_carry_the_c_codes() {
    use vkcuda_c::vkcuda_result::*;
    for (kind, code) in [
        (ErrorKind::InvalidArgument, VKCUDA_ERROR_INVALID_ARGUMENT),
        (ErrorKind::NullPointer, VKCUDA_ERROR_NULL_POINTER),
        (ErrorKind::CudaUnavailable, VKCUDA_ERROR_CUDA_UNAVAILABLE),
        (ErrorKind::Unsupported, VKCUDA_ERROR_UNSUPPORTED),
        (ErrorKind::Timeout, VKCUDA_ERROR_TIMEOUT),
        (ErrorKind::PermissionDenied, VKCUDA_ERROR_PERMISSION_DENIED),
        (ErrorKind::DeviceLost, VKCUDA_ERROR_DEVICE_LOST),
    ] {
        assert_eq!(kind.code(), code as i32, "{kind:?}");
    }
    let e = Error::new(ErrorKind::Timeout, "late");
    assert_eq!((e.to_string(), e.code()), ("late".to_string(), -11));
    let dyn_error: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    assert_eq!(dyn_error.to_string(), "late");
}

#[test]
fn objects_keep_their_context_alive() {
    let ctx = vulkan_only();
    let buf = Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap();
    let im = Image::create(&ctx, &Description::new_2d(vk::Format::R8_UNORM, 32, 32)).unwrap();
    assert_eq!(Arc::strong_count(&ctx), 3);
    drop(ctx);
    // The context lives on in its objects: new objects can be made from it.
    let ctx = buf.context().clone();
    assert!(Arc::ptr_eq(&ctx, im.context()));
    let v = vk_of(&ctx);
    let data = bytes(4096, 41);
    vulkan_write(&v, buf.vk_buffer(), &data);
    let more = Buffer::create(buf.context(), 4096, none(), Allocator::Vulkan).unwrap();
    v.copy(buf.vk_buffer(), more.vk_buffer(), 4096);
    assert_same(&vulkan_read(&v, more.vk_buffer(), 4096), &data, "copy");
    drop(v);
    drop(ctx);
    drop(buf);
    drop(more);
    assert_eq!(Arc::strong_count(im.context()), 1);
}

// --- GPU -------------------------------------------------------------------------

/// A standalone context paired with CUDA through the Rust API, or None (after
/// saying why) on a machine without a CUDA GPU; VKCUDA_REQUIRE_GPU=1 fails instead.
fn rust_cuda_context_or_skip(test: &str) -> Option<Arc<Context>> {
    match Context::standalone(None, CudaChoice::Primary) {
        Ok(ctx) => Some(ctx),
        Err(e) if gpu_required() => {
            panic!("{test}: VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: {test}: no CUDA GPU here ({e}); set VKCUDA_REQUIRE_GPU=1 to make this a failure");
            None
        }
    }
}

/// CUDA's view of a context through its info.
fn cuda_of(ctx: &Context) -> Cuda {
    Cuda::of_context(ctx)
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frame_loop_through_the_rust_api() {
    let Some(ctx) = rust_cuda_context_or_skip("gpu_frame_loop_through_the_rust_api") else {
        return;
    };
    use cudarc::driver::sys as cu;
    let info = ctx.cuda_info().unwrap();
    assert!(info.primary);
    let v = vk_of(&ctx);
    let cuda = cuda_of(&ctx);
    let scope = Scope::new(v.family);
    const N: usize = 1 << 20;
    for allocator in [Allocator::Vulkan, Allocator::Cuda] {
        let buf = Buffer::create(&ctx, N as u64, none(), allocator).unwrap();
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
