//! The Rust API (`vkcuda::{Context, Buffer, Image, Semaphore}`, `handoff`, `ipc`,
//! `dlpack`, `doctor`, `pairing`, `Error`) on its own, the way a Rust engine uses
//! it: no C function is called. On lavapipe (Vulkan-only contexts) data written
//! through Vulkan is read back through another context's import, across the
//! handoff barriers and across a socket, and every refusal is checked for its
//! kind and its words. The GPU tests (`gpu_*`, ignored without a GPU) run a
//! frame loop with CUDA and a DLPack tensor that outlives its buffer.

mod support;
use support::cuda::Cuda;
use support::{gpu_required, layout_barrier, pattern, HostBuffer, Vk};

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::context::CudaChoice;
use vkcuda::dlpack::{DType, Spec, Tensor};
use vkcuda::handoff::Scope;
use vkcuda::image::{Description, Dimension, VideoColor};
use vkcuda::ipc::{self, Options, PeerPolicy};
use vkcuda::{doctor, pairing, Buffer, Context, Error, ErrorKind, Image};

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
fn image_data_crosses_contexts_through_an_fd() {
    let a = vulkan_only();
    let b = vulkan_only();
    let (va, vb) = (vk_of(&a), vk_of(&b));
    let (w, h) = (67, 35);
    let desc = Description {
        usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        ..Description::new_2d(vk::Format::R8G8B8A8_UNORM, w, h)
    };
    let texels = bytes((w * h * 4) as usize, 21);
    let im = Image::create(&a, &desc).unwrap();
    assert_eq!(im.description(), &desc);
    assert_eq!((im.plane_count(), im.allocation_count()), (1, 1));
    assert!(im.dedicated() && !im.is_frame() && !im.is_wrapped());
    upload(&va, &im, &texels);
    // A hands the image out in GENERAL (VK_QUEUE_FAMILY_EXTERNAL), B takes it in.
    va.run(|cmd| unsafe {
        im.cmd_release_to_cuda(
            cmd,
            &Scope::new(va.family),
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        )
        .unwrap()
    });
    let fd = im.export_fd().unwrap();
    let twin = Image::import_fd(&b, &[fd.as_fd()], &desc, &[im.allocation_size()]).unwrap();
    drop(fd);
    assert_eq!(twin.description(), &desc);
    vb.run(|cmd| unsafe {
        twin.cmd_acquire_from_cuda(
            cmd,
            &Scope::new(vb.family),
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        )
        .unwrap()
    });
    assert_same(
        &download(
            &vb,
            &twin,
            texels.len(),
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        ),
        &texels,
        "read through context B's import",
    );
    // The counts of fds and sizes must be the image's.
    let again = im.export_fd().unwrap();
    kind_of(
        Image::import_fd(&b, &[again.as_fd(), again.as_fd()], &desc, &[1, 1]),
        ErrorKind::InvalidArgument,
        "has 1 plane, so it takes 1 fds, not 2",
    );
    kind_of(
        Image::import_fd(&b, &[again.as_fd()], &desc, &[0]),
        ErrorKind::InvalidArgument,
        "allocation_size must not be 0",
    );
}

#[test]
fn image_refusals_and_queries() {
    let ctx = vulkan_only();
    let rgba = |w, h| Description::new_2d(vk::Format::R8G8B8A8_UNORM, w, h);
    kind_of(
        Image::create(&ctx, &rgba(0, 8)),
        ErrorKind::InvalidArgument,
        "zero extent",
    );
    kind_of(
        Image::create(
            &ctx,
            &Description {
                mip_levels: 8,
                ..rgba(64, 32)
            },
        ),
        ErrorKind::InvalidArgument,
        "at most floor(log2(64)) + 1 = 7",
    );
    kind_of(
        Image::create(
            &ctx,
            &Description {
                dimension: Dimension::D3,
                depth: 4,
                array_layers: 2,
                ..rgba(8, 8)
            },
        ),
        ErrorKind::InvalidArgument,
        "a 3D image has one array layer",
    );
    let unknown = Image::create(
        &ctx,
        &Description::new_2d(vk::Format::from_raw(0x7fff_0000), 8, 8),
    )
    .unwrap_err();
    assert!(
        matches!(
            unknown.kind(),
            ErrorKind::InvalidArgument | ErrorKind::Unsupported
        ),
        "{unknown}"
    );
    let im = Image::create(
        &ctx,
        &Description {
            mip_levels: 3,
            ..rgba(16, 16)
        },
    )
    .unwrap();
    assert_eq!(im.plane_vk_format(0).unwrap(), vk::Format::R8G8B8A8_UNORM);
    assert_eq!(im.plane_aspect(0), vk::ImageAspectFlags::COLOR);
    assert_eq!(im.plane_extent(0).width, 16);
    kind_of(
        im.plane_vk_format(1),
        ErrorKind::InvalidArgument,
        "plane 1 is out of range",
    );
    kind_of(
        im.plane_pointer(0),
        ErrorKind::InvalidArgument,
        "not a shared video frame",
    );
    kind_of(im.video_color(), ErrorKind::InvalidArgument, "multi-planar");
    kind_of(
        im.export_plane_dlpack(0, false, false),
        ErrorKind::InvalidArgument,
        "not a shared video frame",
    );
    kind_of(
        im.mipmapped_array(0),
        ErrorKind::CudaUnavailable,
        "no CUDA side",
    );
    kind_of(
        im.level_array(0, 3),
        ErrorKind::InvalidArgument,
        "level 3 is out of range",
    );
    // A shared video frame where the device can make one (not Debian 12's lavapipe).
    let nv12 = Description {
        linear: true,
        usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        ..Description::new_2d(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 32)
    };
    match Image::create(&ctx, &nv12) {
        Ok(frame) => {
            assert!(frame.is_frame());
            let (y, c) = (
                frame.plane_pointer(0).unwrap(),
                frame.plane_pointer(1).unwrap(),
            );
            assert_eq!((y.width, y.height, y.bytes_per_texel), (64, 32, 1));
            assert_eq!((c.width, c.height, c.bytes_per_texel), (32, 16, 2));
            assert_eq!((y.pointer, c.pointer), (0, 0), "no CUDA: no pointers");
            assert!(c.layout.offset >= y.layout.offset + 32 * y.layout.row_pitch);
            assert_eq!(frame.video_color().unwrap(), VideoColor::DEFAULT);
            let bt2020 = VideoColor {
                matrix: 9,
                full_range: true,
                ..VideoColor::DEFAULT
            };
            frame.set_video_color(&bt2020).unwrap();
            assert_eq!(frame.video_color().unwrap(), bt2020);
            kind_of(
                frame.set_video_color(&VideoColor {
                    matrix: 4,
                    ..VideoColor::DEFAULT
                }),
                ErrorKind::Unsupported,
                "FCC",
            );
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(e.message().contains("G8_B8R8_2PLANE_420_UNORM"), "{e}");
            eprintln!("rust_api: no LINEAR NV12 frames on this device ({e})");
        }
    }
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
fn a_buffer_crosses_a_socket() {
    let a = vulkan_only();
    let b = vulkan_only();
    let (va, vb) = (vk_of(&a), vk_of(&b));
    let data = bytes(100_000, 31);
    let buf = Buffer::create(&a, data.len() as u64, none(), Allocator::Vulkan).unwrap();
    vulkan_write(&va, buf.vk_buffer(), &data);
    let (tx, rx) = UnixStream::pair().unwrap();
    let opts = Options {
        timeout: Some(Duration::from_secs(10)),
        ..Options::default()
    };
    va.run(|cmd| unsafe {
        buf.cmd_release_to_cuda(cmd, &Scope::new(va.family))
            .unwrap()
    });
    ipc::send_buffer(&buf, tx.as_fd(), &opts).unwrap();
    let got = ipc::receive_buffer(&b, rx.as_fd(), &opts, none()).unwrap();
    assert_eq!(got.layout(), buf.layout());
    vb.run(|cmd| unsafe {
        got.cmd_acquire_from_cuda(cmd, &Scope::new(vb.family))
            .unwrap()
    });
    assert_same(
        &vulkan_read(&vb, got.vk_buffer(), data.len()),
        &data,
        "received buffer",
    );

    // The description and fds by hand: the record round-trips.
    let d = ipc::describe_buffer(&buf);
    assert_eq!(d.kind(), ipc::Kind::Buffer);
    assert_eq!(ipc::Description::parse(&d.to_bytes().unwrap()).unwrap(), d);
    let fd = buf.export_fd().unwrap();
    ipc::send(tx.as_fd(), &d, &[fd.as_fd()], &opts).unwrap();
    let (d2, fds) = ipc::receive(rx.as_fd(), &opts).unwrap();
    assert_eq!((d2, fds.len()), (d, 1));
    let third = ipc::import_buffer(&b, &d2, fds[0].as_fd(), none()).unwrap();
    assert_same(
        &vulkan_read(&vb, third.vk_buffer(), data.len()),
        &data,
        "imported from a received description",
    );

    // A peer check that says no: nothing is sent.
    let never = |_: &ipc::Peer| false;
    let strict = Options {
        timeout: Some(Duration::from_secs(1)),
        peer: PeerPolicy::Check(&never),
    };
    kind_of(
        ipc::send_buffer(&buf, tx.as_fd(), &strict),
        ErrorKind::PermissionDenied,
        "",
    );
    // A pipe is not a socket; a closed peer is the end of the conversation.
    let (r, _w) = pipe();
    kind_of(
        ipc::receive_buffer(&b, r.as_fd(), &opts, none()),
        ErrorKind::InvalidArgument,
        "",
    );
    drop(tx);
    kind_of(ipc::receive(rx.as_fd(), &opts), ErrorKind::InvalidState, "");
    // A description of the wrong kind is refused before the import.
    kind_of(
        ipc::import_image(&b, &d, &[fd.as_fd()]),
        ErrorKind::InvalidArgument,
        "not a image",
    );
}

#[test]
fn dlpack_checks_the_spec_before_it_needs_cuda() {
    let ctx = vulkan_only();
    let buf = Buffer::create(&ctx, 1024, none(), Allocator::Vulkan).unwrap();
    let f32 = DType {
        code: 2,
        bits: 32,
        lanes: 1,
    };
    kind_of(
        buf.export_dlpack(&Spec {
            dtype: f32,
            shape: &[16, 17],
            ..Spec::default()
        }),
        ErrorKind::InvalidArgument,
        "past its end",
    );
    kind_of(
        buf.export_dlpack(&Spec {
            dtype: DType {
                code: 99,
                bits: 8,
                lanes: 1,
            },
            ..Spec::default()
        }),
        ErrorKind::InvalidArgument,
        "not a DLPack type code",
    );
    kind_of(
        buf.export_dlpack(&Spec {
            read_only: true,
            legacy: true,
            ..Spec::default()
        }),
        ErrorKind::InvalidArgument,
        "cannot be marked read-only",
    );
    kind_of(
        buf.export_dlpack(&Spec {
            dtype: f32,
            shape: &[16, 16],
            ..Spec::default()
        }),
        ErrorKind::CudaUnavailable,
        "needs the buffer's CUDA view",
    );
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
fn gpu_dlpack_tensor_outlives_its_buffer() {
    let Some(ctx) = rust_cuda_context_or_skip("gpu_dlpack_tensor_outlives_its_buffer") else {
        return;
    };
    let cuda = cuda_of(&ctx);
    let ordinal = ctx.cuda_info().unwrap().ordinal;
    let live = vkcuda::live_objects().dlpack_tensors;
    let buf = Buffer::create(&ctx, 64 * 64 * 4, none(), Allocator::Vulkan).unwrap();
    let data = bytes(64 * 64 * 4, 51);
    cuda.write(buf.cuda_ptr().unwrap(), &data);
    let t = buf
        .export_dlpack(&Spec {
            dtype: DType {
                code: 2,
                bits: 32,
                lanes: 1,
            },
            shape: &[32, 64],
            offset: 64 * 4 * 32,
            read_only: true,
            ..Spec::default()
        })
        .unwrap();
    assert_eq!(t.data(), buf.cuda_ptr().unwrap() + 64 * 4 * 32);
    assert_eq!(
        (t.shape(), t.strides()),
        (&[32i64, 64][..], &[64i64, 1][..])
    );
    assert_eq!(
        (t.device_id(), t.is_legacy(), t.is_read_only()),
        (ordinal, false, true)
    );
    assert_eq!(vkcuda::live_objects().dlpack_tensors, live + 1);
    // The buffer and the context go; the tensor's memory stays.
    let data_ptr = t.data();
    drop(buf);
    drop(ctx);
    assert_same(
        &cuda.read(data_ptr, 64 * 4 * 32),
        &data[64 * 4 * 32..],
        "the tensor's memory after the buffer was dropped",
    );
    // Handed over and taken back: one deleter call in all.
    let raw = t.into_raw();
    let t = unsafe { Tensor::from_raw(raw, false) }.unwrap();
    drop(t);
    assert_eq!(vkcuda::live_objects().dlpack_tensors, live);
}
