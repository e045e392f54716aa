//! The bridge on any Vulkan device (lavapipe is enough): wgpu writes shared
//! buffers and textures, the handoff barriers and timeline semaphores go through
//! wgpu's queue, the host stands in for CUDA, and every element is read back.
//! The CUDA round trip is the #[ignore]d GPU test at the end.

use std::time::Duration;

use vkcuda_wgpu::{CudaChoice, Error, Handoff, Interop, Shared};

const N: u32 = 4099; // not a multiple of the workgroup size
const TIMEOUT: Duration = Duration::from_secs(20);

/// The value the fill shader writes at `i`.
fn pattern(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761).wrapping_add(12_345)
}

const FILL: &str = "
@group(0) @binding(0) var<storage, read_write> data: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&data)) { data[id.x] = id.x * 2654435761u + 12345u; }
}";

fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    // No wgpu debug messenger: the validation layer (the _vvl runs) prints its
    // messages itself, where CTest looks for them.
    desc.flags = wgpu::InstanceFlags::empty().with_env();
    desc.backend_options.noop.enable = backends.contains(wgpu::Backends::NOOP);
    wgpu::Instance::new(desc)
}

fn adapter() -> wgpu::Adapter {
    pollster::block_on(instance(wgpu::Backends::VULKAN).request_adapter(&Default::default()))
        .expect("a Vulkan adapter (lavapipe is enough)")
}

fn bridge() -> Interop {
    Interop::request_device(&adapter(), &Default::default(), CudaChoice::None)
        .expect("a Vulkan-only bridge")
}

/// A bridge with CUDA (the primary context), or None after a skip line where
/// there is no CUDA GPU (a failure with VKCUDA_REQUIRE_GPU=1).
fn cuda_bridge_or_skip(test: &str) -> Option<Interop> {
    match Interop::request_device(&adapter(), &Default::default(), CudaChoice::Primary) {
        Ok(b) => Some(b),
        Err(e) if std::env::var("VKCUDA_REQUIRE_GPU").as_deref() != Ok("1") => {
            eprintln!("SKIPPED: {test}: no CUDA GPU here ({e})");
            None
        }
        Err(e) => panic!("VKCUDA_REQUIRE_GPU=1 but no CUDA-paired wgpu device: {e}"),
    }
}

/// The bridge's timeline, or None where the device has no
/// VK_KHR_external_semaphore_fd (lavapipe of Debian 12): the test then orders the
/// two submissions with a host wait on wgpu instead, and says so.
fn timeline(b: &Interop, initial: u64, test: &str) -> Option<vkcuda_wgpu::SharedSemaphore> {
    match b.create_semaphore(initial) {
        Ok(s) => Some(s),
        Err(e) => {
            assert!(
                e.to_string().contains("VK_KHR_external_semaphore_fd"),
                "{e}"
            );
            eprintln!(
                "{test}: no shared semaphore on this device, the host orders the submissions ({e})"
            );
            None
        }
    }
}

/// Stands in for CUDA between two submissions: waits for `done` (the timeline's,
/// or wgpu's own completion without one), then signals `next`.
fn host_turn(b: &Interop, sem: Option<&vkcuda_wgpu::SharedSemaphore>, done: u64, next: u64) {
    match sem {
        Some(s) => {
            s.host_wait(done, TIMEOUT).unwrap();
            s.host_signal(next).unwrap();
        }
        None => wait_idle(b),
    }
}

fn wait_idle(b: &Interop) {
    b.device()
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(TIMEOUT),
        })
        .expect("poll");
}

fn storage_buffer(b: &Interop, bytes: u64) -> vkcuda_wgpu::SharedBuffer {
    b.create_buffer(&wgpu::BufferDescriptor {
        label: Some("shared"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
    .expect("a shared storage buffer")
}

/// A command buffer that runs the fill shader over `buffer`.
fn fill(b: &Interop, buffer: &wgpu::Buffer) -> wgpu::CommandBuffer {
    let d = b.device();
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("fill"),
        source: wgpu::ShaderSource::Wgsl(FILL.into()),
    });
    let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("fill"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    let mut enc = d.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups((buffer.size() as u32 / 4).div_ceil(64), 1, 1);
    }
    enc.finish()
}

/// Copies `bytes` of `src` (through `record`) into a mappable buffer and reads them.
fn read_back(
    b: &Interop,
    bytes: u64,
    record: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer),
) -> (wgpu::CommandBuffer, wgpu::Buffer) {
    let staging = b.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("staging"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = b.device().create_command_encoder(&Default::default());
    record(&mut enc, &staging);
    (enc.finish(), staging)
}

fn words(b: &Interop, staging: &wgpu::Buffer) -> Vec<u32> {
    let slice = staging.slice(..);
    slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
    b.device()
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: Some(TIMEOUT),
        })
        .expect("poll");
    let data = slice.get_mapped_range().expect("mapped range");
    data.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn check_words(got: &[u32], want: impl Fn(u32) -> u32, what: &str) {
    let wrong: Vec<_> = (0..got.len() as u32)
        .filter(|&i| got[i as usize] != want(i))
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: {} of {} words wrong, first at {} ({:#x}, want {:#x})",
        wrong.len(),
        got.len(),
        wrong[0],
        got[wrong[0] as usize],
        want(wrong[0])
    );
}

#[test]
fn a_compute_pass_fills_a_shared_buffer_across_a_handoff() {
    let b = bridge();
    let bytes = N as u64 * 4;
    let buf = storage_buffer(&b, bytes);
    let sem = timeline(
        &b,
        0,
        "a_compute_pass_fills_a_shared_buffer_across_a_handoff",
    );
    let shared: [Shared; 1] = [(&buf).into()];
    // wgpu writes, hands the buffer to "CUDA" and signals 1.
    release_to_cuda(
        &b,
        [fill(&b, buf.wgpu())],
        &shared,
        sem.as_ref().map(|s| (s, 1)),
    );
    assert!(buf.with_cuda());
    // The host stands in for CUDA: it waits for wgpu's signal, then signals 2.
    host_turn(&b, sem.as_ref(), 1, 2);
    // wgpu waits for 2, takes the buffer back and copies it out.
    let (copy, staging) = read_back(&b, bytes, |enc, staging| {
        enc.copy_buffer_to_buffer(buf.wgpu(), 0, staging, 0, bytes)
    });
    b.submit(
        [copy],
        &Handoff {
            acquire: &shared,
            wait: sem.as_ref().map(|s| (s, 2)),
            signal: sem.as_ref().map(|s| (s, 3)),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!buf.with_cuda());
    check_words(&words(&b, &staging), pattern, "the shared buffer");
    if let Some(s) = &sem {
        assert_eq!(s.value().unwrap(), 3);
    }
}

#[test]
fn a_shared_texture_keeps_its_texels_across_a_handoff() {
    let b = bridge();
    let (w, h) = (67u32, 35u32);
    let tex = b
        .create_texture(&texture_desc(
            "shared texture",
            wgpu::TextureFormat::R32Uint,
            (w, h),
            wgpu::TextureUsages::COPY_DST
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::STORAGE_BINDING,
        ))
        .unwrap();
    assert_eq!(tex.resting_layout(), ash::vk::ImageLayout::GENERAL);
    let texels: Vec<u8> = (0..w * h).flat_map(|i| pattern(i).to_le_bytes()).collect();
    b.queue().write_texture(
        tex.wgpu().as_image_copy(),
        &texels,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(w * 4),
            rows_per_image: None,
        },
        tex.wgpu().size(),
    );
    let sem = timeline(&b, 10, "a_shared_texture_keeps_its_texels_across_a_handoff");
    let shared: [Shared; 1] = [(&tex).into()];
    release_to_cuda(&b, [], &shared, sem.as_ref().map(|s| (s, 11)));
    host_turn(&b, sem.as_ref(), 11, 12);
    let row = (w * 4).next_multiple_of(256); // bytes_per_row: a multiple of 256
    let (copy, staging) = read_back(&b, row as u64 * h as u64, |enc, staging| {
        enc.copy_texture_to_buffer(
            tex.wgpu().as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: None,
                },
            },
            tex.wgpu().size(),
        )
    });
    b.submit(
        [copy],
        &Handoff {
            acquire: &shared,
            wait: sem.as_ref().map(|s| (s, 12)),
            ..Default::default()
        },
    )
    .unwrap();
    let got = words(&b, &staging);
    let texel = |i: u32| got[((i / w) * (row / 4) + i % w) as usize];
    let got: Vec<u32> = (0..w * h).map(texel).collect();
    check_words(&got, pattern, "the shared texture");
}

#[test]
fn handoffs_out_of_turn_are_errors() {
    let b = bridge();
    let buf = storage_buffer(&b, 256);
    let shared: [Shared; 1] = [(&buf).into()];
    let acquire = Handoff {
        acquire: &shared,
        ..Default::default()
    };
    let e = b.submit([], &acquire).unwrap_err();
    assert!(matches!(e, Error::InvalidState(_)), "{e}");
    let release = Handoff {
        release: &shared,
        ..Default::default()
    };
    b.submit([], &release).unwrap();
    let e = b.submit([], &release).unwrap_err();
    assert!(matches!(e, Error::InvalidState(_)), "{e}");
    // Taken back and handed over again in one submission: a frame loop's step.
    let both = Handoff {
        acquire: &shared,
        release: &shared,
        ..Default::default()
    };
    b.submit([], &both).unwrap();
    assert!(buf.with_cuda());
    b.submit([], &acquire).unwrap();
    assert!(!buf.with_cuda());
    // A signal that does not move the timeline forward.
    if let Some(sem) = timeline(&b, 5, "handoffs_out_of_turn_are_errors") {
        let e = b
            .submit(
                [],
                &Handoff {
                    signal: Some((&sem, 5)),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(e.to_string().contains("strictly increase"), "{e}");
    }
    wait_idle(&b);
}

#[test]
fn resources_of_another_device_are_errors() {
    let a = bridge();
    let b = bridge();
    let buf_b = storage_buffer(&b, 256);
    let shared: [Shared; 1] = [(&buf_b).into()];
    let e = a
        .submit(
            [],
            &Handoff {
                release: &shared,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::OtherDevice { .. }), "{e}");
    if let Some(sem_b) = timeline(&b, 0, "resources_of_another_device_are_errors") {
        let e = a
            .submit(
                [],
                &Handoff {
                    signal: Some((&sem_b, 1)),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(matches!(e, Error::OtherDevice { .. }), "{e}");
    }
    // A's device with B's queue.
    let e = Interop::from_device(a.adapter(), a.device(), b.queue(), CudaChoice::None)
        .err()
        .expect("a queue of another device is refused");
    assert!(matches!(e, Error::OtherDevice { .. }), "{e}");
}

#[test]
fn objects_of_another_backend_are_errors() {
    let noop =
        pollster::block_on(instance(wgpu::Backends::NOOP).request_adapter(&Default::default()))
            .expect("wgpu's no-op adapter");
    let e = Interop::request_device(&noop, &Default::default(), CudaChoice::None)
        .err()
        .expect("a no-op adapter is refused");
    assert_eq!(e, Error::NotVulkan { what: "adapter" });
    let (device, queue) = pollster::block_on(noop.request_device(&Default::default())).unwrap();
    let e = Interop::from_device(&adapter(), &device, &queue, CudaChoice::None)
        .err()
        .expect("a no-op device is refused");
    assert_eq!(e, Error::NotVulkan { what: "device" });
}

/// wgpu enables VK_KHR_external_memory_fd by itself wherever it exists, so a
/// plain wgpu device shares buffers; shared semaphores need the device opened with
/// the bridge's extensions, and their absence is named.
#[test]
fn a_plain_wgpu_device_shares_buffers_and_names_the_missing_semaphore_extension() {
    let adapter = adapter();
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default())).unwrap();
    let b = Interop::from_device(&adapter, &device, &queue, CudaChoice::None).unwrap();
    let bytes = N as u64 * 4;
    let buf = storage_buffer(&b, bytes);
    let (copy, staging) = read_back(&b, bytes, |enc, staging| {
        enc.copy_buffer_to_buffer(buf.wgpu(), 0, staging, 0, bytes)
    });
    b.queue().submit([fill(&b, buf.wgpu()), copy]);
    check_words(
        &words(&b, &staging),
        pattern,
        "a plain device's shared buffer",
    );
    let e = b
        .create_semaphore(0)
        .err()
        .expect("no semaphore extension on a plain wgpu device");
    assert!(
        e.to_string().contains("VK_KHR_external_semaphore_fd"),
        "{e}"
    );
}

#[test]
fn descriptors_the_bridge_cannot_share_are_errors() {
    let b = bridge();
    let e = b
        .create_buffer(&wgpu::BufferDescriptor {
            label: Some("mappable"),
            size: 256,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
        .err()
        .expect("a mappable shared buffer is refused");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = b
        .create_texture(&wgpu::TextureDescriptor {
            sample_count: 4,
            ..texture_desc(
                "multisampled",
                wgpu::TextureFormat::Rgba8Unorm,
                (16, 16),
                wgpu::TextureUsages::RENDER_ATTACHMENT,
            )
        })
        .err()
        .expect("a multisampled shared texture is refused");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // A Vulkan-only bridge has no CUDA pointer: CUDA_UNAVAILABLE, not a panic.
    let buf = storage_buffer(&b, 256);
    assert!(buf.cuda_ptr().unwrap_err().cuda_unavailable());
    assert!(b.cuda().unwrap_err().cuda_unavailable());
}

#[test]
fn the_bridge_and_its_objects_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Interop>();
    send_sync::<vkcuda_wgpu::SharedBuffer>();
    send_sync::<vkcuda_wgpu::SharedTexture>();
    send_sync::<vkcuda_wgpu::SharedSemaphore>();
}

/// CUDA reads what wgpu wrote (a device-to-host copy on the stream, after the
/// wait) and writes the next values (host-to-device), wgpu reads them back.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_cuda_reads_and_writes_what_wgpu_shares() {
    use cudarc::driver::sys;
    let Some(b) = cuda_bridge_or_skip("gpu_cuda_reads_and_writes_what_wgpu_shares") else {
        return;
    };
    let bytes = N as u64 * 4;
    let buf = storage_buffer(&b, bytes);
    let sem = b.create_semaphore(0).unwrap();
    let shared: [Shared; 1] = [(&buf).into()];
    release_to_cuda(&b, [fill(&b, buf.wgpu())], &shared, Some((&sem, 1)));
    let ctx = b.cuda().unwrap().context;
    let ptr = buf.cuda_ptr().unwrap();
    let mut seen = vec![0u32; N as usize];
    let next: Vec<u32> = (0..N).map(|i| !pattern(i)).collect();
    // SAFETY: the driver is loaded (the bridge has CUDA); the pointers cover `bytes`.
    unsafe {
        assert_eq!(sys::cuCtxPushCurrent_v2(ctx), sys::CUresult::CUDA_SUCCESS);
        let stream = std::ptr::null_mut();
        sem.cuda_wait(1, stream).unwrap();
        let r = sys::cuMemcpyDtoHAsync_v2(seen.as_mut_ptr().cast(), ptr, bytes as usize, stream);
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        let r = sys::cuMemcpyHtoDAsync_v2(ptr, next.as_ptr().cast(), bytes as usize, stream);
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
        sem.cuda_signal(2, stream).unwrap();
        assert_eq!(
            sys::cuStreamSynchronize(stream),
            sys::CUresult::CUDA_SUCCESS
        );
        let mut popped = std::ptr::null_mut();
        sys::cuCtxPopCurrent_v2(&mut popped);
    }
    check_words(&seen, pattern, "CUDA's view of wgpu's writes");
    let (copy, staging) = read_back(&b, bytes, |enc, staging| {
        enc.copy_buffer_to_buffer(buf.wgpu(), 0, staging, 0, bytes)
    });
    b.submit(
        [copy],
        &Handoff {
            acquire: &shared,
            wait: Some((&sem, 2)),
            ..Default::default()
        },
    )
    .unwrap();
    check_words(
        &words(&b, &staging),
        |i| !pattern(i),
        "wgpu's view of CUDA's writes",
    );
}

/// Submits `commands`, after them handing `shared` to CUDA and signalling
/// `signal`.
fn release_to_cuda<I: IntoIterator<Item = wgpu::CommandBuffer>>(
    b: &Interop,
    commands: I,
    shared: &[Shared],
    signal: Option<(&vkcuda_wgpu::SharedSemaphore, u64)>,
) {
    let h = Handoff {
        release: shared,
        signal,
        ..Default::default()
    };
    b.submit(commands, &h).unwrap();
}

/// Texel `i` of frame `k` of the presenting tests (opaque BGRA8).
fn frame_word(k: u32, i: u32) -> u32 {
    pattern(i ^ (k * 7919)) | 0xff00_0000
}

/// A 2D texture of one level and sample, `w` by `h`.
fn texture_desc(
    label: &'static str,
    format: wgpu::TextureFormat,
    (w, h): (u32, u32),
    usage: wgpu::TextureUsages,
) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    }
}

/// A 2D texture of the bridge's device (a stand-in for the surface texture wgpu
/// hands out: BGRA8 with RENDER_ATTACHMENT | COPY_DST; COPY_SRC too, to read it).
fn plain_texture(
    b: &Interop,
    format: wgpu::TextureFormat,
    (w, h): (u32, u32),
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    b.device()
        .create_texture(&texture_desc("surface stand-in", format, (w, h), usage))
}

/// Reads a 4-byte-texel texture back, row by row, as words.
fn texture_words(b: &Interop, t: &wgpu::Texture) -> Vec<u32> {
    let (w, h) = (t.width(), t.height());
    let row = (w * 4).next_multiple_of(256);
    let (copy, staging) = read_back(b, row as u64 * h as u64, |enc, staging| {
        enc.copy_texture_to_buffer(
            t.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: None,
                },
            },
            t.size(),
        )
    });
    b.queue().submit([copy]);
    let got = words(b, &staging);
    (0..w * h)
        .map(|i| got[((i / w) * (row / 4) + i % w) as usize])
        .collect()
}

/// The presenting path without a window: a shared BGRA8 texture that the
/// producer (the host standing in for CUDA: a copy from a buffer between an
/// acquire and a release) writes frame after frame is copied by
/// `Interop::present_copy` into a texture made like a surface texture
/// (BGRA8, RENDER_ATTACHMENT | COPY_DST) of the same size, a smaller one (a
/// window made smaller) and a larger one (made larger: the rest stays as it
/// was, zero), every texel read back; then every refusal, with nothing
/// submitted (CUDA still holds the texture).
#[test]
fn a_shared_texture_is_copied_into_a_surface_texture() {
    use wgpu::TextureUsages as U;
    let b = bridge();
    let (w, h) = (61u32, 37u32);
    let bgra = wgpu::TextureFormat::Bgra8Unorm;
    let tex = b
        .create_texture(&texture_desc(
            "shared frame",
            bgra,
            (w, h),
            U::COPY_SRC | U::COPY_DST | U::TEXTURE_BINDING,
        ))
        .unwrap();
    let surface = U::RENDER_ATTACHMENT | U::COPY_DST | U::COPY_SRC;
    let targets = [(w, h), (w - 20, h - 9), (w + 13, h + 6)]
        .map(|size| plain_texture(&b, bgra, size, surface));
    let sem = timeline(&b, 0, "a_shared_texture_is_copied_into_a_surface_texture");
    let shared: [Shared; 1] = [(&tex).into()];
    // Before the first frame the texture goes to CUDA.
    release_to_cuda(&b, [], &shared, sem.as_ref().map(|s| (s, 1)));
    let row = (w * 4).next_multiple_of(256);
    let mut value = 1;
    for (k, target) in (1u32..).zip(&targets) {
        // The producer's turn: waits for the previous copy, writes frame k.
        let bytes: Vec<u8> = (0..h)
            .flat_map(|y| {
                (0..row / 4).flat_map(move |x| frame_word(k, y * w + x.min(w - 1)).to_le_bytes())
            })
            .collect();
        let upload = b.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame"),
            size: bytes.len() as u64,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        b.queue().write_buffer(&upload, 0, &bytes);
        let mut enc = b.device().create_command_encoder(&Default::default());
        enc.copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: &upload,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row),
                    rows_per_image: None,
                },
            },
            tex.wgpu().as_image_copy(),
            tex.wgpu().size(),
        );
        b.submit(
            [enc.finish()],
            &Handoff {
                acquire: &shared,
                release: &shared,
                wait: sem.as_ref().map(|s| (s, value)),
                signal: sem.as_ref().map(|s| (s, value + 1)),
            },
        )
        .unwrap();
        value += 1;
        // The engine's turn: the copy into the surface texture.
        b.present_copy(
            &tex,
            target,
            sem.as_ref().map(|s| (s, value)),
            sem.as_ref().map(|s| (s, value + 1)),
        )
        .unwrap();
        value += 1;
        assert!(tex.with_cuda(), "handed back to CUDA");
        let got = texture_words(&b, target);
        let (tw, th) = (target.width(), target.height());
        let want = |i: u32| {
            let (x, y) = (i % tw, i / tw);
            if x < w && y < h {
                frame_word(k, y * w + x)
            } else {
                0
            }
        };
        check_words(
            &got,
            want,
            &format!("frame {k} in a {tw}x{th} surface texture"),
        );
    }
    wait_idle(&b);
    // Refusals: nothing submitted, CUDA still holds the texture.
    let no_dst = plain_texture(&b, bgra, (w, h), U::RENDER_ATTACHMENT | U::COPY_SRC);
    let rgba = plain_texture(&b, wgpu::TextureFormat::Rgba8Unorm, (w, h), surface);
    let other = bridge();
    let elsewhere = plain_texture(&other, bgra, (w, h), surface);
    for (t, says) in [
        (&no_dst, "COPY_DST"),
        (&rgba, "does not convert formats"),
        (&elsewhere, "wgpu refused the copy"),
    ] {
        match b.present_copy(&tex, t, None, None) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("{says}: {other:?}"),
        }
        assert!(tex.with_cuda());
    }
    if let Some(s) = &sem {
        let e = b
            .present_copy(&tex, &targets[0], None, Some((s, 1)))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidState(_)), "{e:?}");
    }
    // Taken back once: a copy of a texture CUDA does not hold is out of turn.
    b.submit(
        [],
        &Handoff {
            acquire: &shared,
            wait: sem.as_ref().map(|s| (s, value)),
            ..Default::default()
        },
    )
    .unwrap();
    let e = b.present_copy(&tex, &targets[0], None, None).unwrap_err();
    assert!(matches!(e, Error::InvalidState(_)), "{e:?}");
    wait_idle(&b);
}

/// `present_copy` with CUDA drawing: frames written into the shared BGRA8
/// texture's CUDA array by `cuMemcpy2DAsync` on one stream (waiting for the
/// previous copy on the timeline, signalling its frame), each copied into a
/// surface-like texture and read back, every texel compared.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_present_copy_shows_what_cuda_drew() {
    use cudarc::driver::sys;
    use wgpu::TextureUsages as U;
    let Some(b) = cuda_bridge_or_skip("gpu_present_copy_shows_what_cuda_drew") else {
        return;
    };
    let (w, h) = (1920u32, 1080u32);
    let bgra = wgpu::TextureFormat::Bgra8Unorm;
    let tex = b
        .create_texture(&texture_desc(
            "shared frame",
            bgra,
            (w, h),
            U::COPY_SRC | U::TEXTURE_BINDING,
        ))
        .unwrap();
    let target = plain_texture(
        &b,
        bgra,
        (w, h),
        U::RENDER_ATTACHMENT | U::COPY_DST | U::COPY_SRC,
    );
    let sem = b.create_semaphore(0).unwrap();
    let shared: [Shared; 1] = [(&tex).into()];
    release_to_cuda(&b, [], &shared, Some((&sem, 1)));
    let ctx = b.cuda().unwrap().context;
    let array = tex.cuda_array(0).unwrap();
    for k in 1..=4u32 {
        let texels: Vec<u32> = (0..w * h).map(|i| frame_word(k, i)).collect();
        // SAFETY: the driver is loaded (the bridge has CUDA); the copy covers the array.
        unsafe {
            assert_eq!(sys::cuCtxPushCurrent_v2(ctx), sys::CUresult::CUDA_SUCCESS);
            let stream = std::ptr::null_mut();
            sem.cuda_wait(2 * u64::from(k) - 1, stream).unwrap();
            let copy = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: texels.as_ptr().cast(),
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: (w * 4) as usize,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
                dstHost: std::ptr::null_mut(),
                dstDevice: 0,
                dstArray: array,
                dstPitch: 0,
                WidthInBytes: (w * 4) as usize,
                Height: h as usize,
            };
            let r = sys::cuMemcpy2DAsync_v2(&copy, stream);
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            sem.cuda_signal(2 * u64::from(k), stream).unwrap();
            assert_eq!(
                sys::cuStreamSynchronize(stream),
                sys::CUresult::CUDA_SUCCESS
            );
            let mut popped = std::ptr::null_mut();
            sys::cuCtxPopCurrent_v2(&mut popped);
        }
        let v = 2 * u64::from(k);
        b.present_copy(&tex, &target, Some((&sem, v)), Some((&sem, v + 1)))
            .unwrap();
        let got = texture_words(&b, &target);
        check_words(
            &got,
            |i| frame_word(k, i),
            &format!("frame {k} as the window shows it"),
        );
    }
}
