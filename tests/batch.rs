//! Batches (`vkcuda::batch`) through the Rust API: N images or buffers in one
//! exportable allocation, one CUDA import and mapping, one handoff, one tensor.
//!
//! On lavapipe: which formats get LINEAR images (printed), both paths' data
//! through the recorded handoff in both directions (every byte of every element
//! compared; the allocation is read and written through its exported memfd,
//! where CUDA would), the commands a handoff records, every refusal (kind and
//! words), and the leak counters. With the stand-in CUDA driver paired to
//! lavapipe (a child process): one import, one mapping, the tensor's shape,
//! strides, dtype and data, per-element views, and the tensor keeping the batch
//! alive. On the GPU (ignored without one): N = 256 at 640x480 for every dtype and
//! both paths, both directions, against per-image readbacks; the consumer's
//! stream waiting on the timeline; and `gpu_format_probe`, which prints what the
//! driver allows per format.

mod support;
use support::device::{device_support, fake_paired_context, lavapipe_uuid};
use support::{
    assert_same, child_passed, cuda_context_or_skip, fake_cuda_driver, fake_live, in_child,
    library_path_with, pattern, serial, this_test, vulkan_only_context, HostBuffer, Vk, CHILD_ENV,
};

use std::os::fd::AsRawFd;

use ash::vk;
use vkcuda::batch::{self, Batch, Contents, Description, FormatDesc, Path, TensorSpec, FORMATS};
use vkcuda::handoff::Scope;
use vkcuda::{Context, ErrorKind};

/// Whether the context's device is lavapipe, whose memfds the CPU can map.
fn on_lavapipe(ctx: &Context) -> bool {
    device_support(ctx).props.name.contains("llvmpipe")
}

/// The library's live Vulkan and CUDA objects.
fn counts() -> [i64; 5] {
    let l = vkcuda::live_objects();
    [
        l.vk_buffers,
        l.vk_memories,
        l.vk_images,
        l.cuda_external_memories,
        l.dlpack_tensors,
    ]
}

/// The bytes of element `i` (`w` x `h` texels of `f`, tightly packed), valid
/// values of the format: depth in [0, 1] for D32 (a copy into a depth image of a
/// value outside is undefined), the pattern elsewhere.
fn element_bytes(f: &FormatDesc, w: u32, h: u32, i: u32, seed: u32) -> Vec<u8> {
    let n = (w * h * f.texel) as usize;
    if f.format == vk::Format::D32_SFLOAT {
        return (0..n / 4)
            .flat_map(|k| {
                (((k * 7 + i as usize * 13 + seed as usize) % 1001) as f32 / 1000.0).to_ne_bytes()
            })
            .collect();
    }
    (0..n)
        .map(|k| pattern(k, seed.wrapping_mul(31).wrapping_add(i)))
        .collect()
}

fn aspect(f: &FormatDesc) -> vk::ImageAspectFlags {
    if f.depth {
        vk::ImageAspectFlags::DEPTH
    } else {
        vk::ImageAspectFlags::COLOR
    }
}

/// The layout the engine leaves the images in after drawing (and wants back).
fn drawn_layout(f: &FormatDesc) -> vk::ImageLayout {
    if f.depth {
        vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
    } else {
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
    }
}

/// The layout the engine leaves a batch's images in after drawing: the
/// attachment layout, or GENERAL for a batch made without attachment usage (a
/// compute or transfer producer's).
fn drawn_layout_of(f: &FormatDesc, b: &Batch) -> vk::ImageLayout {
    let attachments =
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT;
    if matches!(b.info().usage, batch::Usage::Images(u) if u.intersects(attachments)) {
        drawn_layout(f)
    } else {
        vk::ImageLayout::GENERAL
    }
}

fn range(f: &FormatDesc) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect(f),
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

fn region(f: &FormatDesc, w: u32, h: u32, offset: u64) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .buffer_offset(offset)
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: aspect(f),
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        })
        .image_extent(vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        })
}

fn barrier(
    image: vk::Image,
    f: &FormatDesc,
    from: vk::ImageLayout,
    to: vk::ImageLayout,
) -> vk::ImageMemoryBarrier<'static> {
    support::layout_barrier(image, range(f), from, to)
}

/// The batch's allocation seen by the CPU through its exported fd: lavapipe's
/// memfds start with Mesa's header (the file size, the data's offset), as the
/// stand-in CUDA driver maps them.
struct Mapping {
    base: *mut u8,
    len: usize,
    data: usize,
}

impl Mapping {
    fn of(b: &Batch) -> Mapping {
        let fd = b.export_fd().unwrap();
        let raw = fd.as_raw_fd();
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::fstat(raw, &mut st) }, 0);
        let len = st.st_size as usize;
        let mut header = [0u64; 2];
        assert_eq!(
            unsafe { libc::pread(raw, header.as_mut_ptr().cast(), 16, 0) },
            16
        );
        assert_eq!(header[0] as usize, len, "a Mesa memfd header");
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        assert!(header[1] as usize + b.info().allocation_size as usize <= len);
        Mapping {
            base: base.cast(),
            len,
            data: header[1] as usize,
        }
    }

    /// The allocation's bytes.
    #[allow(clippy::mut_from_ref)]
    fn bytes(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.base.add(self.data), self.len - self.data) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Element `i` of the tensor, row by row (`w * texel` bytes each), from memory
/// that starts at the tensor's first byte.
fn tensor_element(mem: &[u8], info: &batch::Info, texel: u32, i: u32) -> Vec<u8> {
    let row = (info.width * texel) as usize;
    let start = (u64::from(i) * info.element_stride) as usize;
    (0..info.height as usize)
        .flat_map(|y| {
            let at = start + y * info.row_pitch as usize;
            mem[at..at + row].to_vec()
        })
        .collect()
}

fn write_tensor_element(mem: &mut [u8], info: &batch::Info, texel: u32, i: u32, data: &[u8]) {
    let row = (info.width * texel) as usize;
    let start = (u64::from(i) * info.element_stride) as usize;
    for y in 0..info.height as usize {
        let at = start + y * info.row_pitch as usize;
        mem[at..at + row].copy_from_slice(&data[y * row..(y + 1) * row]);
    }
}

/// Where element `i` lies in the tests' staging buffers: at `i` times the
/// element's size rounded up to 16 (copies of depth formats need offsets that are
/// multiples of 4, VUID-vkCmdCopyBufferToImage-srcImage-04053).
fn stage_stride(w: u32, h: u32, f: &FormatDesc) -> u64 {
    u64::from(w * h * f.texel).div_ceil(16) * 16
}

/// Writes every element's bytes into its image (through a staging buffer, one
/// copy per image) and leaves the images in `drawn_layout`: the engine's render.
fn render(
    v: &Vk,
    b: &Batch,
    f: &FormatDesc,
    seed: u32,
    cmd: vk::CommandBuffer,
    stage: &HostBuffer,
) {
    let info = b.info();
    let (w, h) = (info.width, info.height);
    let elem = (w * h * f.texel) as usize;
    let stride = stage_stride(w, h, f) as usize;
    for i in 0..info.count as usize {
        stage.bytes()[i * stride..i * stride + elem]
            .copy_from_slice(&element_bytes(f, w, h, i as u32, seed));
    }
    for i in 0..info.count {
        let image = b.element(i).unwrap().image;
        v.image_barrier(
            cmd,
            barrier(
                image,
                f,
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            ),
        );
        unsafe {
            v.device.cmd_copy_buffer_to_image(
                cmd,
                stage.buffer,
                image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &[region(f, w, h, i as u64 * stride as u64)],
            )
        };
        v.image_barrier(
            cmd,
            barrier(
                image,
                f,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                drawn_layout_of(f, b),
            ),
        );
    }
}

/// The acquire (into TRANSFER_SRC_OPTIMAL), then every image copied into `stage`
/// and compared with what the consumer wrote (`element_bytes` of `seed`).
fn images_after_the_acquire(v: &Vk, b: &Batch, f: &FormatDesc, stage: &HostBuffer, seed: u32) {
    let info = b.info();
    let (w, h, n) = (info.width, info.height, info.count);
    let stride = stage_stride(w, h, f);
    let scope = Scope::new(v.family);
    stage.bytes().fill(0);
    v.run(|cmd| {
        unsafe { b.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL) }
            .unwrap();
        for i in 0..n {
            unsafe {
                v.device.cmd_copy_image_to_buffer(
                    cmd,
                    b.element(i).unwrap().image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    stage.buffer,
                    &[region(f, w, h, u64::from(i) * stride)],
                )
            };
        }
    });
    for i in 0..n {
        let want = element_bytes(f, w, h, i, seed);
        let at = (u64::from(i) * stride) as usize;
        let what = format!("{:?} {:?} image {i} after the acquire", f.format, info.path);
        assert_same(&stage.bytes()[at..at + want.len()], &want, &what);
    }
}

/// Both directions through the CPU mapping: the engine renders, the batch is
/// released (the tensor must then hold every element), the "consumer" writes
/// the tensor, the batch is acquired (every image must then hold it).
fn round_trip_on_lavapipe(v: &Vk, b: &Batch, f: &FormatDesc) {
    let info = b.info().clone();
    let (w, h, n) = (info.width, info.height, info.count);
    let stride = stage_stride(w, h, f);
    let stage = v.host_buffer(stride * u64::from(n));
    let scope = Scope::new(v.family);
    v.run(|cmd| {
        render(v, b, f, 1, cmd, &stage);
        unsafe { b.cmd_release_to_cuda(cmd, &scope, drawn_layout_of(f, b)) }.unwrap();
    });
    let map = Mapping::of(b);
    let start = info.tensor_offset as usize;
    {
        let tensor = &map.bytes()[start..];
        for i in 0..n {
            let what = format!(
                "{:?} {:?} element {i} after the release",
                f.format, info.path
            );
            assert_same(
                &tensor_element(tensor, &info, f.texel, i),
                &element_bytes(f, w, h, i, 1),
                &what,
            );
        }
    }
    // The consumer writes every element; the acquire brings it into the images.
    for i in 0..n {
        write_tensor_element(
            &mut map.bytes()[start..],
            &info,
            f.texel,
            i,
            &element_bytes(f, w, h, i, 2),
        );
    }
    images_after_the_acquire(v, b, f, &stage, 2);
    drop(map);
    v.destroy_host_buffer(stage);
}

/// Which formats get LINEAR images here (printed), and both paths of every
/// format, both directions, every byte of every element.
#[test]
fn formats_paths_and_data_on_lavapipe() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let name = device_support(&ctx).props.name;
    if !on_lavapipe(&ctx) {
        println!("SKIPPED: the device is {name}: the CPU mapping of the memory needs lavapipe's memfds (the GPU tests cover this device)");
        return;
    }
    print_probe(&ctx);
    let before = counts();
    let mut zero_copy = 0;
    for f in FORMATS.iter() {
        for force_copy in [false, true] {
            // An odd size: rows that are not a multiple of any alignment.
            let desc = Description {
                force_copy,
                ..Description::images(5, f.format, 37, 19)
            };
            let b = match Batch::create(&ctx, &desc) {
                Ok(b) => b,
                Err(e) => panic!("{:?} (force_copy {force_copy}): {e}", f.format),
            };
            let info = b.info().clone();
            println!(
                "{:?} force_copy {force_copy}: {:?}, element stride {}, row pitch {}, allocation {} bytes{}",
                f.format,
                info.path,
                info.element_stride,
                info.row_pitch,
                info.allocation_size,
                info.linear_refusal
                    .as_deref()
                    .map(|r| format!(" (LINEAR refused: {r})"))
                    .unwrap_or_default()
            );
            check_info(&b, f);
            if force_copy {
                assert_eq!(info.path, Path::Copy);
            }
            if info.path == Path::ZeroCopy {
                zero_copy += 1;
            }
            round_trip_on_lavapipe(&v, &b, f);
            drop(b);
            assert_eq!(counts(), before, "{:?}: everything released", f.format);
        }
        // A compute or transfer producer's batch (no attachment usage), left in
        // GENERAL: where the format has STORAGE.
        if !f.depth {
            let mut desc = Description::images(5, f.format, 37, 19);
            if let Contents::Images { usage, .. } = &mut desc.contents {
                *usage = vk::ImageUsageFlags::TRANSFER_SRC
                    | vk::ImageUsageFlags::TRANSFER_DST
                    | vk::ImageUsageFlags::STORAGE;
            }
            match Batch::create(&ctx, &desc) {
                Ok(b) => {
                    println!("{:?} usage STORAGE: {:?}", f.format, b.info().path);
                    check_info(&b, f);
                    round_trip_on_lavapipe(&v, &b, f);
                }
                Err(e) => println!("{:?} usage STORAGE: not batched: {e}", f.format),
            }
            assert_eq!(counts(), before, "{:?}: everything released", f.format);
        }
    }
    println!(
        "{zero_copy} of {} formats are zero-copy here",
        FORMATS.len()
    );
}

/// The camera loop, three frames: the engine renders, releases (the copy path
/// fills the readout region), CUDA reads; the next frame takes the batch back
/// (the copy path: the readout region alone, no copy into the images) and
/// renders again. Each frame's tensor holds that frame.
#[test]
fn camera_loop_on_both_paths() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    if !on_lavapipe(&ctx) {
        println!("SKIPPED: the CPU mapping of the memory needs lavapipe's memfds");
        return;
    }
    let before = counts();
    let depth = *FORMATS
        .iter()
        .find(|f| f.format == vk::Format::D32_SFLOAT)
        .unwrap();
    for (f, force_copy) in [(FORMATS[0], false), (FORMATS[0], true), (depth, false)] {
        let b = Batch::create(
            &ctx,
            &Description {
                force_copy,
                ..Description::images(4, f.format, 20, 10)
            },
        )
        .unwrap();
        let info = b.info().clone();
        let stage = v.host_buffer(stage_stride(20, 10, &f) * 4);
        let scope = Scope::new(v.family);
        let map = Mapping::of(&b);
        for frame in 0..3u32 {
            v.run(|cmd| unsafe {
                if frame > 0 {
                    match info.path {
                        Path::Copy => b.cmd_acquire_readout_from_cuda(cmd, &scope).unwrap(),
                        _ => b
                            .cmd_acquire_from_cuda(cmd, &scope, drawn_layout(&f))
                            .unwrap(),
                    }
                }
                render(&v, &b, &f, 10 + frame, cmd, &stage);
                b.cmd_release_to_cuda(cmd, &scope, drawn_layout(&f))
                    .unwrap();
            });
            let tensor = &map.bytes()[info.tensor_offset as usize..];
            for i in 0..4 {
                assert_same(
                    &tensor_element(tensor, &info, f.texel, i),
                    &element_bytes(&f, 20, 10, i, 10 + frame),
                    &format!("{:?} {:?} frame {frame} element {i}", f.format, info.path),
                );
            }
        }
        let e = unsafe { b.cmd_acquire_readout_from_cuda(v.command_buffer(), &scope) };
        if info.path != Path::Copy {
            assert!(e.unwrap_err().message().contains("has no readout region"));
        }
        drop(map);
        v.destroy_host_buffer(stage);
        drop(b);
    }
    assert_eq!(counts(), before);
}

/// The info agrees with itself: shape, strides, sizes, offsets, the commands.
fn check_info(b: &Batch, f: &FormatDesc) {
    let i = b.info();
    let (w, h, n) = (u64::from(i.width), u64::from(i.height), u64::from(i.count));
    let texel = u64::from(f.texel);
    let mut shape = vec![n as i64, h as i64, w as i64];
    if f.channels > 1 {
        shape.push(i64::from(f.channels));
    }
    assert_eq!(i.shape(), shape);
    assert_eq!(i.dtype, f.dtype);
    assert_eq!(i.element_size, w * h * texel);
    assert!(i.row_pitch >= w * texel && i.row_pitch % texel == 0);
    assert!(i.element_stride >= i.row_pitch * h && i.element_stride % 256 == 0);
    let lane = u64::from(f.dtype.bits / 8);
    let s = i.strides();
    assert_eq!(s[0] as u64 * lane, i.element_stride);
    assert_eq!(s[1] as u64 * lane, i.row_pitch);
    assert!(i.tensor_offset + i.mapped_size <= i.allocation_size);
    assert!(i.element_stride * (n - 1) + i.row_pitch * (h - 1) + w * texel <= i.mapped_size);
    match i.path {
        Path::ZeroCopy => {
            assert_eq!(i.readout_size, 0);
            assert!(i.linear_refusal.is_none());
            assert_eq!(b.handoff_commands(), (1, 0));
            assert_eq!(i.element_stride, i.image_stride);
        }
        Path::Copy => {
            assert!(i.linear_refusal.is_some());
            assert_eq!(i.row_pitch, w * texel);
            assert_eq!(i.tensor_offset, i.readout_offset);
            assert!(i.readout_offset >= i.image_stride * n);
            assert_eq!(i.readout_size, i.element_stride * n);
            assert_eq!(b.handoff_commands(), (2, n as usize));
        }
        Path::Buffers => unreachable!(),
    }
    for k in 0..i.count {
        let e = b.element(k).unwrap();
        assert_ne!(e.image, vk::Image::null());
        assert_eq!(e.memory_offset, u64::from(k) * i.image_stride);
        assert_eq!(
            e.data_offset,
            i.tensor_offset + u64::from(k) * i.element_stride
        );
    }
}

/// A buffer batch: N buffers at aligned offsets, one buffer over all, one
/// barrier per handoff; data written through element buffers reads back in the
/// whole one and through the memory.
#[test]
fn buffer_batch_on_lavapipe() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = counts();
    let size = 1000u64;
    let b = Batch::create(&ctx, &Description::buffers(7, size)).unwrap();
    let i = b.info().clone();
    assert_eq!(i.path, Path::Buffers);
    assert_eq!(i.shape(), vec![7, 1000]);
    assert_eq!(i.element_stride % 256, 0);
    assert!(i.element_stride >= size);
    assert_eq!(i.strides(), vec![i.element_stride as i64, 1]);
    assert_eq!(b.handoff_commands(), (1, 0));
    // One memory, 7 + 1 buffers.
    assert_eq!(
        counts(),
        [
            before[0] + 8,
            before[1] + 1,
            before[2],
            before[3],
            before[4]
        ]
    );
    for k in 0..7 {
        let e = b.element(k).unwrap();
        assert_eq!(e.memory_offset, u64::from(k) * i.element_stride);
        v.fill_pattern(e.buffer, size, 40 + k);
    }
    let scope = Scope::new(v.family);
    v.run(|cmd| unsafe { b.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED) }.unwrap());
    if on_lavapipe(&ctx) {
        let map = Mapping::of(&b);
        for k in 0..7u32 {
            let at = (u64::from(k) * i.element_stride) as usize;
            let want: Vec<u8> = (0..size as usize).map(|x| pattern(x, 40 + k)).collect();
            assert_same(
                &map.bytes()[at..at + size as usize],
                &want,
                &format!("element {k}"),
            );
        }
    }
    v.run(|cmd| {
        unsafe { b.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED) }.unwrap()
    });
    // A buffer view of element 3 and of the whole batch: the batch's objects.
    let whole = b.buffer(None).unwrap();
    assert_eq!(whole.vk_buffer(), b.vk_whole_buffer());
    assert_eq!(whole.layout().size, i.allocation_size);
    let third = b.buffer(Some(3)).unwrap();
    assert_eq!(third.vk_buffer(), b.element(3).unwrap().buffer);
    assert_eq!(third.layout().offset, 3 * i.element_stride);
    assert_eq!(v.pattern_mismatches(third.vk_buffer(), size, 43), 0);
    drop(b);
    // The views keep the batch's objects alive.
    assert_eq!(v.pattern_mismatches(third.vk_buffer(), size, 43), 0);
    drop((whole, third));
    assert_eq!(counts(), before);
}

/// Every refusal: a code and words, nothing made, nothing leaked.
#[test]
fn bad_input_is_refused_with_reasons() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = counts();
    let refused = |d: Description, kind: ErrorKind, words: &str| {
        let e = Batch::create(&ctx, &d).expect_err(words);
        assert_eq!(e.kind(), kind, "{e}");
        assert!(e.message().contains(words), "{e}: want {words:?}");
        assert_eq!(counts(), before, "{words}: nothing left behind");
    };
    let rgba = vk::Format::R8G8B8A8_UNORM;
    refused(
        Description::images(0, rgba, 4, 4),
        ErrorKind::InvalidArgument,
        "count must not be 0",
    );
    refused(
        Description::buffers(0, 16),
        ErrorKind::InvalidArgument,
        "count must not be 0",
    );
    refused(
        Description::images(batch::MAX_COUNT + 1, rgba, 4, 4),
        ErrorKind::InvalidArgument,
        "more than a batch may hold",
    );
    refused(
        Description::buffers(1 << 16, 1 << 50),
        ErrorKind::InvalidArgument,
        "overflows 64 bits",
    );
    refused(
        Description::images(1 << 16, vk::Format::R32G32B32A32_SFLOAT, u32::MAX, u32::MAX),
        ErrorKind::InvalidArgument,
        "overflows 64 bits",
    );
    refused(
        Description::buffers(4, 0),
        ErrorKind::InvalidArgument,
        "size must not be 0",
    );
    refused(
        Description::images(4, rgba, 0, 4),
        ErrorKind::InvalidArgument,
        "must not be 0",
    );
    // Past the heap: 1,024 images of 8192 x 8192 RGBA32F are 1 TiB.
    refused(
        Description::images(1024, vk::Format::R32G32B32A32_SFLOAT, 8192, 8192),
        ErrorKind::InvalidArgument,
        "largest memory heap",
    );
    refused(
        Description::buffers(1024, 1 << 40),
        ErrorKind::InvalidArgument,
        "largest memory heap",
    );
    refused(
        Description::images(2, vk::Format::R8G8B8_UNORM, 4, 4),
        ErrorKind::Unsupported,
        "is not a format a batch can hold",
    );
    let with_usage = |format, usage| Description {
        count: 2,
        contents: Contents::Images {
            format,
            width: 8,
            height: 8,
            usage,
        },
        force_copy: false,
    };
    refused(
        with_usage(
            vk::Format::D32_SFLOAT,
            vk::ImageUsageFlags::COLOR_ATTACHMENT,
        ),
        ErrorKind::Unsupported,
        "it is a depth format",
    );
    refused(
        with_usage(rgba, vk::ImageUsageFlags::from_raw(0x8000_0000)),
        ErrorKind::InvalidArgument,
        "that a batch's images cannot have",
    );
    // A usage the format's features do not allow on any tiling: named with why.
    let e = Batch::create(
        &ctx,
        &with_usage(vk::Format::R8G8B8A8_SRGB, vk::ImageUsageFlags::STORAGE),
    );
    match e {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(
                e.message().contains("cannot be batched on this device"),
                "{e}"
            );
            assert!(e.message().contains("STORAGE"), "{e}");
            println!("SRGB storage: {e}");
        }
        Ok(b) => println!(
            "this device batches SRGB storage images ({:?})",
            b.info().path
        ),
    }
    assert_eq!(counts(), before);

    // The handoffs and the elements.
    let b = Batch::create(&ctx, &Description::images(3, rgba, 8, 8)).unwrap();
    let e = b.element(3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        e.message(),
        "index 3 is out of range: the batch has 3 elements (0 to 2)"
    );
    let e = b.buffer(Some(0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let cmd = v.command_buffer();
    let scope = Scope::new(v.family);
    let e =
        unsafe { b.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL) }
            .unwrap_err();
    assert!(
        e.message()
            .contains("old_layout is VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL"),
        "{e}"
    );
    let e =
        unsafe { b.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::UNDEFINED) }.unwrap_err();
    assert!(
        e.message()
            .contains("new_layout must not be VK_IMAGE_LAYOUT_UNDEFINED"),
        "{e}"
    );
    let e =
        unsafe { b.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL) }
            .unwrap_err();
    assert!(
        e.message().contains("needs an image created with usage"),
        "{e}"
    );
    let e = unsafe {
        b.cmd_release_to_cuda(
            cmd,
            &Scope::new(vk::QUEUE_FAMILY_EXTERNAL),
            vk::ImageLayout::GENERAL,
        )
    }
    .unwrap_err();
    assert!(e.message().contains("queue_family_index"), "{e}");
    let e = unsafe {
        b.cmd_release_to_cuda(vk::CommandBuffer::null(), &scope, vk::ImageLayout::GENERAL)
    }
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NullPointer);
    // A depth batch refuses colour layouts.
    let d = Batch::create(&ctx, &Description::images(2, vk::Format::D32_SFLOAT, 8, 8)).unwrap();
    let e =
        unsafe { d.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL) }
            .unwrap_err();
    assert!(e.message().contains("not a layout of a depth image"), "{e}");
    // Vulkan-only: no tensor.
    let e = b.export_dlpack(&TensorSpec::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CudaUnavailable, "{e}");
    unsafe { v.device.end_command_buffer(cmd) }.unwrap();
    unsafe { v.device.free_command_buffers(v.pool, &[cmd]) };
    drop((b, d));
    assert_eq!(counts(), before);
}

// ---------------------------------------------------------------------------------
// The stand-in CUDA driver paired with lavapipe, in a child process.

#[test]
fn fake_driver_one_import_one_mapping_one_tensor() {
    let Some(uuid) = lavapipe_uuid() else { return };
    let dir = fake_cuda_driver("fake-cuda-batch", &["-Wl,-soname,libcuda.so.1"]);
    let case = "child_one_import_one_mapping_one_tensor";
    let out = this_test(case, true)
        .env(CHILD_ENV, "1")
        .env("LD_LIBRARY_PATH", library_path_with(&dir))
        .env("FAKE_CUDA_UUID", uuid)
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV)
        .output()
        .unwrap();
    child_passed(case, &out);
}

fn shape_strides(t: &vkcuda::dlpack::Tensor) -> (Vec<i64>, Vec<i64>) {
    (t.shape().to_vec(), t.strides().to_vec())
}

#[test]
#[ignore = "runs in a child process of fake_driver_one_import_one_mapping_one_tensor"]
fn child_one_import_one_mapping_one_tensor() {
    if !in_child("child_one_import_one_mapping_one_tensor") {
        return;
    }
    let ctx = fake_paired_context();
    let v = Vk::of(&ctx);
    let before = (counts(), fake_live());
    let rgba = FORMATS[0];
    let r32f = *FORMATS
        .iter()
        .find(|f| f.format == vk::Format::R32_SFLOAT)
        .unwrap();
    for (f, force_copy) in [(rgba, false), (rgba, true), (r32f, false), (r32f, true)] {
        let desc = Description {
            force_copy,
            ..Description::images(6, f.format, 33, 17)
        };
        let b = Batch::create(&ctx, &desc).unwrap();
        let info = b.info().clone();
        // One import and one mapping for the whole batch.
        assert_eq!(counts()[3], before.0[3] + 1, "one CUDA import");
        assert_eq!(
            fake_live(),
            before.1 + 2,
            "one import and one mapping in the driver"
        );
        let scope = Scope::new(v.family);
        let stage = v.host_buffer(stage_stride(33, 17, &f) * 6);
        v.run(|cmd| {
            render(&v, &b, &f, 7, cmd, &stage);
            unsafe { b.cmd_release_to_cuda(cmd, &scope, drawn_layout(&f)) }.unwrap();
        });
        v.destroy_host_buffer(stage);
        let t = b.export_dlpack(&TensorSpec::default()).unwrap();
        assert_eq!(t.data(), b.cuda_ptr().unwrap());
        assert_eq!(t.dtype(), f.dtype);
        let (shape, strides) = shape_strides(&t);
        assert_eq!(shape, info.shape());
        assert_eq!(strides, info.strides());
        let lane = u64::from(f.dtype.bits / 8);
        assert_eq!(strides[0] as u64 * lane, info.element_stride);
        // The fake driver's pointer is the host address of the memory: read the
        // tensor through its own strides.
        let mem =
            unsafe { std::slice::from_raw_parts(t.data() as *const u8, info.mapped_size as usize) };
        for i in 0..6 {
            assert_same(
                &tensor_element(mem, &info, f.texel, i),
                &element_bytes(&f, 33, 17, i, 7),
                &format!("{:?} {:?} tensor[{i}]", f.format, info.path),
            );
        }
        // Per-element views.
        for i in [0u32, 5] {
            let e = b
                .export_dlpack(&TensorSpec {
                    index: Some(i),
                    read_only: true,
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(e.data(), b.element(i).unwrap().cuda_pointer);
            assert_eq!(e.data(), t.data() + u64::from(i) * info.element_stride);
            assert_eq!(e.shape(), &info.shape()[1..]);
            assert_eq!(e.strides(), &info.strides()[1..]);
            assert!(e.is_read_only());
        }
        let e = b
            .export_dlpack(&TensorSpec {
                index: Some(6),
                ..Default::default()
            })
            .unwrap_err();
        assert!(e.message().contains("index 6 is out of range"), "{e}");
        // The tensor keeps the batch alive after the batch is dropped.
        drop(b);
        assert_eq!(fake_live(), before.1 + 2, "the tensor holds the mapping");
        let again =
            unsafe { std::slice::from_raw_parts(t.data() as *const u8, info.mapped_size as usize) };
        assert_same(
            &tensor_element(again, &info, f.texel, 5),
            &element_bytes(&f, 33, 17, 5, 7),
            "tensor[5] after the batch is dropped",
        );
        drop(t);
        assert_eq!((counts(), fake_live()), before, "everything released");
    }
    // A buffer batch: (N, size) uint8, one import, one mapping.
    let b = Batch::create(&ctx, &Description::buffers(4, 300)).unwrap();
    assert_eq!(fake_live(), before.1 + 2);
    let t = b.export_dlpack(&TensorSpec::default()).unwrap();
    assert_eq!(t.shape(), &[4, 300]);
    assert_eq!(t.strides(), &[b.info().element_stride as i64, 1]);
    for k in 0..4 {
        v.fill_pattern(b.element(k).unwrap().buffer, 300, 90 + k);
        let at = t.data() + u64::from(k) * b.info().element_stride;
        let got = unsafe { std::slice::from_raw_parts(at as *const u8, 300) };
        let want: Vec<u8> = (0..300).map(|x| pattern(x, 90 + k)).collect();
        assert_same(got, &want, &format!("buffer element {k}"));
    }
    // A buffer view of element 2 shares the mapping (no new import).
    let view = b.buffer(Some(2)).unwrap();
    assert_eq!(view.cuda_ptr().unwrap(), b.element(2).unwrap().cuda_pointer);
    assert_eq!(fake_live(), before.1 + 2, "a view makes no new import");
    drop((b, t, view));
    assert_eq!((counts(), fake_live()), before);
}

// ---------------------------------------------------------------------------------
// The GPU.

/// What the driver allows, per format: prints it (for the notes).
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_format_probe() {
    if let Some(ctx) = cuda_context_or_skip("gpu_format_probe") {
        print_probe(&ctx);
    }
}

/// What the context's device allows per batch format (`batch::probe`), printed.
fn print_probe(ctx: &std::sync::Arc<Context>) {
    let name = device_support(ctx).props.name;
    println!("what {name} allows (640x480, default usage):");
    for p in batch::probe(ctx) {
        println!("{:?} (usage {:?}):", p.format, p.usage);
        println!("  linear features:  {:?}", p.linear_features);
        println!("  optimal features: {:?}", p.optimal_features);
        println!(
            "  LINEAR exportable image: external features {:?}, dedicated (requires, prefers) {:?}, row pitch at 640 wide {:?}",
            p.linear_external, p.linear_dedicated, p.linear_row_pitch
        );
        println!(
            "  OPTIMAL exportable image: external features {:?}, dedicated (requires, prefers) {:?}",
            p.optimal_external, p.optimal_dedicated
        );
        println!(
            "  LINEAR refusal: {}",
            p.linear_refusal.as_deref().unwrap_or("none (zero-copy)")
        );
        println!("  batch path: {:?}", p.path);
    }
}

mod gpu {
    use super::*;
    use cudarc::driver::sys as cu;
    use support::cuda::{check, Cuda};

    /// Every byte of every element of N = 256 640x480 images, for each dtype and
    /// both paths, both directions, against per-image Vulkan readbacks.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_every_element_both_paths_both_directions() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_every_element_both_paths_both_directions") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let before = counts();
        let (n, w, h) = (256u32, 640u32, 480u32);
        // The default usage (a render target), the copy path forced, and a compute
        // or transfer producer's usage (STORAGE): NVIDIA's LINEAR tiling has no
        // COLOR_ATTACHMENT (the H100, driver 580), so only the last reaches the
        // zero-copy path there.
        let storage = vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::TRANSFER_DST
            | vk::ImageUsageFlags::STORAGE;
        let mut zero_copy = 0;
        for f in FORMATS.iter() {
            let variants: &[(bool, vk::ImageUsageFlags)] = if f.depth {
                &[
                    (false, vk::ImageUsageFlags::empty()),
                    (true, vk::ImageUsageFlags::empty()),
                ]
            } else {
                &[
                    (false, vk::ImageUsageFlags::empty()),
                    (true, vk::ImageUsageFlags::empty()),
                    (false, storage),
                ]
            };
            for &(force_copy, usage) in variants {
                let mut desc = Description {
                    force_copy,
                    ..Description::images(n, f.format, w, h)
                };
                if let Contents::Images { usage: u, .. } = &mut desc.contents {
                    *u = usage;
                }
                let b = match Batch::create(&ctx, &desc) {
                    Ok(b) => b,
                    // Not every format has STORAGE (SRGB, for one): said, not failed.
                    Err(e) if usage == storage => {
                        println!("{:?} usage {usage:?}: not batched: {e}", f.format);
                        continue;
                    }
                    Err(e) => panic!(
                        "{:?} force_copy {force_copy} usage {usage:?}: {e}",
                        f.format
                    ),
                };
                let info = b.info().clone();
                zero_copy += usize::from(info.path == Path::ZeroCopy);
                println!(
                    "{:?} force_copy {force_copy} usage {usage:?}: {:?}, element stride {}, row pitch {}, {} bytes{}",
                    f.format,
                    info.path,
                    info.element_stride,
                    info.row_pitch,
                    info.allocation_size,
                    info.linear_refusal
                        .as_deref()
                        .map(|r| format!(" (LINEAR refused: {r})"))
                        .unwrap_or_default()
                );
                check_info(&b, f);
                let stride = stage_stride(w, h, f);
                let stage = v.host_buffer(stride * u64::from(n));
                let scope = Scope::new(v.family);
                v.run(|cmd| {
                    render(&v, &b, f, 3, cmd, &stage);
                    unsafe { b.cmd_release_to_cuda(cmd, &scope, drawn_layout_of(f, &b)) }.unwrap();
                });
                // Vulkan -> CUDA: the tensor, read by CUDA, element by element.
                let t = b.export_dlpack(&TensorSpec::default()).unwrap();
                let all = c.read(t.data(), info.mapped_size as usize);
                for i in 0..n {
                    assert_same(
                        &tensor_element(&all, &info, f.texel, i),
                        &element_bytes(f, w, h, i, 3),
                        &format!("{:?} {:?} tensor[{i}]", f.format, info.path),
                    );
                }
                // CUDA -> Vulkan: CUDA writes each element through the tensor's
                // strides; the acquire; per-image readbacks.
                let mut img = all;
                for i in 0..n {
                    write_tensor_element(
                        &mut img,
                        &info,
                        f.texel,
                        i,
                        &element_bytes(f, w, h, i, 4),
                    );
                }
                c.write(t.data(), &img);
                images_after_the_acquire(&v, &b, f, &stage, 4);
                v.destroy_host_buffer(stage);
                drop((t, b));
                assert_eq!(counts(), before);
            }
        }
        assert!(
            zero_copy > 0,
            "no batch took the zero-copy path on this device"
        );
    }

    /// Past 4 GiB: 1,024 1920x1080 RGBA8 images (8.5 GB zero-copy, twice that
    /// on the copy path), both paths: the last element written by Vulkan is read
    /// through the tensor at its 64-bit offset, and written through the tensor is
    /// read back from its image.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_past_4_gib() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_past_4_gib") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let f = FORMATS[0];
        let (n, w, h) = (1024u32, 1920u32, 1080u32);
        let before = counts();
        for force_copy in [false, true] {
            let b = Batch::create(
                &ctx,
                &Description {
                    force_copy,
                    ..Description::images(n, f.format, w, h)
                },
            )
            .unwrap();
            let info = b.info().clone();
            println!(
                "{:?}: {} bytes, element stride {}",
                info.path, info.allocation_size, info.element_stride
            );
            assert!(info.allocation_size > 4 << 30);
            let last = n - 1;
            let elem = info.element_size;
            let stage = v.host_buffer(elem);
            stage
                .bytes()
                .copy_from_slice(&element_bytes(&f, w, h, last, 5));
            let scope = Scope::new(v.family);
            let sub = range(&f);
            v.run(|cmd| unsafe {
                for i in 0..n {
                    let image = b.element(i).unwrap().image;
                    v.image_barrier(
                        cmd,
                        support::layout_barrier(
                            image,
                            sub,
                            vk::ImageLayout::UNDEFINED,
                            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        ),
                    );
                }
                v.device.cmd_copy_buffer_to_image(
                    cmd,
                    stage.buffer,
                    b.element(last).unwrap().image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &[region(&f, w, h, 0)],
                );
                b.cmd_release_to_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_DST_OPTIMAL)
                    .unwrap();
            });
            let e = b.element(last).unwrap();
            assert!(e.data_offset > 4 << 30);
            let t = b
                .export_dlpack(&TensorSpec {
                    index: Some(last),
                    ..Default::default()
                })
                .unwrap();
            assert_eq!(t.data(), e.cuda_pointer);
            let span = (info.row_pitch * u64::from(h - 1) + u64::from(w * f.texel)) as usize;
            let got = c.read(t.data(), span);
            let one = batch::Info {
                count: 1,
                ..info.clone()
            };
            assert_same(
                &tensor_element(&got, &one, f.texel, 0),
                &element_bytes(&f, w, h, last, 5),
                &format!("{:?} the last element past 4 GiB", info.path),
            );
            // CUDA writes it; the acquire; the image read back.
            let mut mine = got;
            write_tensor_element(
                &mut mine,
                &one,
                f.texel,
                0,
                &element_bytes(&f, w, h, last, 6),
            );
            c.write(t.data(), &mine);
            stage.bytes().fill(0);
            v.run(|cmd| unsafe {
                b.cmd_acquire_from_cuda(cmd, &scope, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)
                    .unwrap();
                v.device.cmd_copy_image_to_buffer(
                    cmd,
                    b.element(last).unwrap().image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    stage.buffer,
                    &[region(&f, w, h, 0)],
                );
            });
            assert_same(
                stage.bytes(),
                &element_bytes(&f, w, h, last, 6),
                &format!("{:?} the last image after the acquire", info.path),
            );
            v.destroy_host_buffer(stage);
            drop((t, b));
            assert_eq!(counts(), before);
        }
    }

    /// The consumer's stream waits on the timeline, not the host: Vulkan's
    /// release (which fills the tensor) waits for a value the host signals only
    /// after CUDA's copy of the tensor is enqueued on a stream that waits through
    /// `export_dlpack_after`. Without that wait the copy would read the stale
    /// (zero) memory at once.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_consumer_stream_waits_on_the_timeline() {
        let _g = serial();
        use vkcuda::semaphore::Kind;
        use vkcuda::Semaphore;
        let Some(ctx) = cuda_context_or_skip("gpu_consumer_stream_waits_on_the_timeline") else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let f = FORMATS[0];
        for force_copy in [false, true] {
            let (n, w, h) = (64u32, 640u32, 480u32);
            let b = Batch::create(
                &ctx,
                &Description {
                    force_copy,
                    ..Description::images(n, f.format, w, h)
                },
            )
            .unwrap();
            let info = b.info().clone();
            let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
            let vs = sem.vk_semaphore();
            // Zero the tensor first (CUDA), so stale data is recognisable.
            let t0 = b.export_dlpack(&TensorSpec::default()).unwrap();
            c.write(t0.data(), &vec![0u8; info.mapped_size as usize]);
            drop(t0);
            let stage = v.host_buffer(stage_stride(w, h, &f) * u64::from(n));
            let scope = Scope::new(v.family);
            let cmd = v.command_buffer();
            render(&v, &b, &f, 9, cmd, &stage);
            unsafe { b.cmd_release_to_cuda(cmd, &scope, drawn_layout(&f)) }.unwrap();
            unsafe { v.device.end_command_buffer(cmd) }.unwrap();
            // Vulkan waits for 1 (the host, later) and signals 2.
            v.submit_timeline(&[(vs, 1)], &[(vs, 2)], cmd, vk::Fence::null());
            c.enter();
            let mut stream = std::ptr::null_mut();
            check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
            let mut scratch = 0;
            check(unsafe { cu::cuMemAlloc_v2(&mut scratch, info.mapped_size as usize) });
            c.leave();
            let t = b
                .export_dlpack_after(&TensorSpec::default(), &sem, 2, stream)
                .unwrap();
            c.enter();
            check(unsafe {
                cu::cuMemcpyDtoDAsync_v2(scratch, t.data(), info.mapped_size as usize, stream)
            });
            c.leave();
            // Only now may Vulkan run.
            sem.host_signal(1).unwrap();
            c.enter();
            check(unsafe { cu::cuStreamSynchronize(stream) });
            c.leave();
            let got = c.read(scratch, info.mapped_size as usize);
            for i in 0..n {
                assert_same(
                    &tensor_element(&got, &info, f.texel, i),
                    &element_bytes(&f, w, h, i, 9),
                    &format!("{:?} element {i} read on the consumer's stream", info.path),
                );
            }
            sem.host_wait(2, std::time::Duration::from_secs(10))
                .unwrap();
            c.enter();
            check(unsafe { cu::cuMemFree_v2(scratch) });
            check(unsafe { cu::cuStreamDestroy_v2(stream) });
            c.leave();
            unsafe { v.device.free_command_buffers(v.pool, &[cmd]) };
            v.destroy_host_buffer(stage);
        }
    }
}
