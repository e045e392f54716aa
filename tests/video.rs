//! Shared video frames (issue 28): multi-planar images with LINEAR tiling in one
//! dedicated allocation, whose planes CUDA sees as pitched device memory
//! (`Image::plane_pointer`).
//!
//! CPU (lavapipe): single-plane frames (issue 37: LINEAR on a colour format, one
//! plane at the COLOR aspect's layout) of every format whose linear-tiling
//! features allow them, refused naming the format and feature otherwise; with
//! the stand-in CUDA driver their plane read and written both ways, the pitched
//! copy in and out and the DLPack tensor. Where the device offers a linear
//! multi-planar format (Mesa 22.3's lavapipe offers none) a frame is made, its
//! planes lie inside its allocation, and it travels through a share description
//! as one fd.
//!
//! GPU (`gpu_*`, ignored without `--include-ignored`; with VKCUDA_REQUIRE_GPU=1 a
//! missing GPU fails them): every format of `vkcuda::format::PLANAR` at 64x64,
//! 1920x1080, 3840x2160 and 1282x722, a compressible ramp and pseudo-random bytes,
//! CUDA -> Vulkan and Vulkan -> CUDA, every byte compared (the sample bits of 10-
//! and 12-bit formats); the pitched-copy helper into a frame; a frame imported
//! from its share description (and its colour description with it); GBR frames
//! (H.273 identity) sampled with RGB_IDENTITY; single-plane frames (RGBA8 and
//! the others the linear features allow) both ways through the plane pointer.

mod support;
use support::cuda::{check, copy2d, Cuda, Mem};
use support::images::{acquire, release, sample_bits};
use support::*;

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::ptr;
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys as cu;
use vkcuda::format::{PlanarFormat, PLANAR};
use vkcuda::image::{Description, PitchedPlane, PlaneMemory, PlanePointer, VideoColor};
use vkcuda::ipc::{self, Object, Options};
use vkcuda::{Context, ErrorKind, Image};

const NV12: vk::Format = vk::Format::G8_B8R8_2PLANE_420_UNORM;

fn frame_desc(format: vk::Format, w: u32, h: u32) -> Description {
    Description {
        linear: true,
        ..Description::new_2d(format, w, h)
    }
}

fn plane_pointers(im: &Image, n: usize) -> Vec<PlanePointer> {
    (0..n).map(|p| im.plane_pointer(p).unwrap()).collect()
}

/// A new linear NV12 frame of `w` x `h` and its planes' pointers.
fn nv12_frame(ctx: &Arc<Context>, w: u32, h: u32) -> (Image, Vec<PlanePointer>) {
    let im = Image::create(ctx, &frame_desc(NV12, w, h)).unwrap();
    let planes = plane_pointers(&im, 2);
    (im, planes)
}

/// Checks what a frame says of its planes: each inside the one allocation, its
/// row pitch at least a row, its extent the format's.
fn check_planes(im: &Image, p: &PlanarFormat, w: u32, h: u32) {
    assert!(im.description().linear && im.is_frame());
    assert_eq!(im.plane_count(), p.planes.len());
    for (k, pp) in plane_pointers(im, p.planes.len()).iter().enumerate() {
        let (pw, ph) = p.planes[k].extent(w, h);
        assert_eq!((pp.width, pp.height), (pw, ph), "{} plane {k}", p.name);
        assert_eq!(pp.bytes_per_texel, p.planes[k].info.bytes_per_texel());
        assert_eq!(pp.format, p.planes[k].info.format);
        let l = pp.layout;
        assert!(l.row_pitch >= pw as u64 * pp.bytes_per_texel as u64);
        let end = l.offset + l.row_pitch * (ph as u64 - 1) + pw as u64 * pp.bytes_per_texel as u64;
        assert!(
            end <= im.allocation_size(),
            "{} plane {k} ends at {end}",
            p.name
        );
        // Every plane names the frame's one allocation.
        assert_eq!(im.plane_memory(k).unwrap().memory, im.vk_memory());
    }
}

/// GBR (H.273 matrix 0) is sampled with RGB_IDENTITY, which ignores the range:
/// full range is taken, narrow range is refused as having no Vulkan model (before
/// the image is looked at); where the device makes frames, the conversion's model
/// is RGB_IDENTITY. (The sampling itself: gpu_gbr_frames_sample_as_rgb.)
#[test]
fn gbr_frames_get_the_rgb_identity_model() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let rgba = Image::create(
        &ctx,
        &Description::new_2d(vk::Format::R8G8B8A8_UNORM, 64, 64),
    )
    .unwrap();
    let narrow = VideoColor {
        full_range: false,
        ..gbr()
    };
    let m = fails_with(rgba.set_video_color(&narrow), ErrorKind::Unsupported);
    assert!(
        m.contains("matrix_coefficients 0 (identity: GBR) in narrow range"),
        "{m}"
    );
    assert!(m.contains("RGB_IDENTITY"), "{m}");
    assert!(narrow.model().is_err());
    assert_eq!(
        gbr().model().unwrap(),
        vk::SamplerYcbcrModelConversion::RGB_IDENTITY
    );
    // Full-range GBR is a colour description; this image is single-plane.
    let m = fails_with(rgba.set_video_color(&gbr()), ErrorKind::InvalidArgument);
    assert!(m.contains("multi-planar"), "{m}");
    match Image::create(&ctx, &frame_desc(NV12, 64, 64)) {
        Ok(frame) => {
            frame.set_video_color(&gbr()).unwrap();
            match frame.ycbcr_conversion() {
                Ok(c) => assert_eq!(c.model, vk::SamplerYcbcrModelConversion::RGB_IDENTITY),
                Err(e) => eprintln!("this device cannot sample LINEAR NV12 ({e}): model not read"),
            }
        }
        Err(e) => eprintln!("no LINEAR NV12 frames on this device ({e})"),
    }
}

#[test]
fn frames_where_the_device_offers_them_lie_in_one_allocation_and_travel_as_one_fd() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let mut made = 0;
    for p in PLANAR {
        let im = match Image::create(&ctx, &frame_desc(p.format, 64, 32)) {
            Ok(im) => im,
            Err(e) => {
                // lavapipe of Debian 12 offers no multi-planar format.
                assert_eq!(e.kind(), ErrorKind::Unsupported, "{}: {e}", p.name);
                continue;
            }
        };
        made += 1;
        check_planes(&im, p, 64, 32);
        for pp in plane_pointers(&im, p.planes.len()) {
            assert_eq!(pp.pointer, 0, "no CUDA in a Vulkan-only context");
        }
        // One fd, one allocation size in the description.
        let d = ipc::describe_image(&im);
        let Object::Image {
            desc,
            allocation_sizes,
            ..
        } = d.object
        else {
            panic!("{d:?}")
        };
        assert!(desc.linear);
        assert_eq!(allocation_sizes[1], 0);
        assert_eq!(d.fd_count(), 1);
        let fd = im.export_fd().unwrap();
        let back = ipc::import_image(&ctx, &d, &[fd.as_fd()]).unwrap();
        check_planes(&back, p, 64, 32);
    }
    println!("{made} linear multi-planar formats offered here");
}

// ---------------------------------------------------------------------------------
// GPU

/// The frame's context made current for the test's own driver calls.
struct Current(Cuda);

impl Current {
    fn of(ctx: &Context) -> Current {
        let c = Cuda::of_context(ctx);
        c.enter();
        Current(c)
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Copies `host` (rows of `row` bytes, packed) into the plane at `device`, `pitch`.
fn to_plane(host: &[u8], device: u64, pitch: u64, row: usize) {
    let (h, d) = (host.as_ptr().cast_mut(), pitch as usize);
    copy2d(
        Mem::Host(h, row),
        Mem::Device(device, d),
        row,
        host.len() / row,
    );
}

/// Copies the plane at `device`, `pitch` into `host` (rows of `row` bytes, packed).
fn from_plane(host: &mut [u8], device: u64, pitch: u64, row: usize) {
    let rows = host.len() / row;
    copy2d(
        Mem::Device(device, pitch as usize),
        Mem::Host(host.as_mut_ptr(), row),
        row,
        rows,
    );
}

/// Plane `plane`'s bytes (rows packed): for even seeds a smooth ramp that
/// compresses, as video does; for odd seeds pseudo-random bytes.
fn plane_bytes(plane: usize, row: usize, rows: usize, seed: u32) -> Vec<u8> {
    let mut out = vec![0u8; row * rows];
    if seed % 2 == 0 {
        for y in 0..rows {
            for x in 0..row {
                out[y * row + x] = (48 + x / 8 + y / 4 + 16 * plane + seed as usize) as u8;
            }
        }
    } else {
        let mut s = 0x9E37_79B9u32 ^ seed.wrapping_mul(7919) ^ (plane as u32) << 20;
        for b in &mut out {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            *b = s as u8;
        }
    }
    out
}

/// Bytes that differ in the sample bits (10- and 12-bit samples sit in the high
/// bits of little-endian 16-bit words; the low bits are undefined).
fn wrong_bytes(bits: u32, got: &[u8], want: &[u8]) -> (u64, Option<usize>) {
    let mut n = 0;
    let mut first = None;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g ^ w) & sample_bits(bits, i) != 0 {
            n += 1;
            first.get_or_insert(i);
        }
    }
    (n, first)
}

/// The copy regions of a frame's planes, packed one after the other at `offsets`.
fn plane_regions(
    im: &Image,
    planes: &[PlanePointer],
    offsets: &[usize],
) -> Vec<vk::BufferImageCopy> {
    planes
        .iter()
        .enumerate()
        .map(|(k, pp)| vk::BufferImageCopy {
            buffer_offset: offsets[k] as u64,
            buffer_row_length: 0,
            buffer_image_height: 0,
            image_subresource: vk::ImageSubresourceLayers {
                aspect_mask: im.plane_aspect(k),
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            },
            image_offset: vk::Offset3D::default(),
            image_extent: vk::Extent3D {
                width: pp.width,
                height: pp.height,
                depth: 1,
            },
        })
        .collect()
}

/// One frame of `p` at `w` x `h`: CUDA writes (seed), Vulkan reads; Vulkan writes
/// (seed + 1), CUDA reads. Returns the bytes compared each way, or what differed.
fn both_ways(
    ctx: &Arc<Context>,
    v: &Vk,
    p: &PlanarFormat,
    (w, h): (u32, u32),
    seed: u32,
) -> Result<u64, String> {
    let im = Image::create(ctx, &frame_desc(p.format, w, h)).map_err(|e| format!("create: {e}"))?;
    check_planes(&im, p, w, h);
    frame_both_ways(v, &im, p.bits, seed)
}

/// A frame made (`im`, samples of `bits` bits): CUDA writes every plane (seed),
/// Vulkan reads; Vulkan writes (seed + 1), CUDA reads. Returns the bytes compared
/// each way, or what differed.
fn frame_both_ways(v: &Vk, im: &Image, bits: u32, seed: u32) -> Result<u64, String> {
    let vk_image = im.vk_image();
    let planes = plane_pointers(im, im.plane_count());
    let rows: Vec<(usize, usize)> = planes
        .iter()
        .map(|pp| ((pp.width * pp.bytes_per_texel) as usize, pp.height as usize))
        .collect();
    let total: usize = rows.iter().map(|(r, n)| r * n).sum();
    let mut offsets = vec![0usize];
    for (r, n) in &rows {
        offsets.push(offsets.last().unwrap() + r * n);
    }
    let read = v.host_buffer(total as u64);
    let write = v.host_buffer(total as u64);
    let regions = plane_regions(im, &planes, &offsets);
    // The frame starts as CUDA's.
    v.run(|cmd| release(v, cmd, im, vk::ImageLayout::UNDEFINED));
    // CUDA writes every plane.
    let sent: Vec<Vec<u8>> = (0..planes.len())
        .map(|k| plane_bytes(k, rows[k].0, rows[k].1, seed))
        .collect();
    for (k, pp) in planes.iter().enumerate() {
        to_plane(&sent[k], pp.pointer, pp.layout.row_pitch, rows[k].0);
    }
    // Vulkan acquires, reads every plane, writes new bytes, and releases.
    let back: Vec<Vec<u8>> = (0..planes.len())
        .map(|k| plane_bytes(k, rows[k].0, rows[k].1, seed + 1))
        .collect();
    for k in 0..planes.len() {
        write.bytes()[offsets[k]..offsets[k + 1]].copy_from_slice(&back[k]);
    }
    let color = color_range();
    v.run(|cmd| unsafe {
        acquire(v, cmd, im, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
        v.device.cmd_copy_image_to_buffer(
            cmd,
            vk_image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            read.buffer,
            &regions,
        );
        v.image_barrier(
            cmd,
            layout_barrier(
                vk_image,
                color,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            ),
        );
        v.device.cmd_copy_buffer_to_image(
            cmd,
            write.buffer,
            vk_image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &regions,
        );
        release(v, cmd, im, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
    });
    let mut errors = Vec::new();
    for k in 0..planes.len() {
        let got = &read.bytes()[offsets[k]..offsets[k + 1]];
        if let (n @ 1.., Some(i)) = wrong_bytes(bits, got, &sent[k]) {
            errors.push(format!(
                "CUDA -> Vulkan plane {k}: {n} of {} bytes wrong, first at row {} byte {}",
                got.len(),
                i / rows[k].0,
                i % rows[k].0
            ));
        }
        let mut got = vec![0u8; rows[k].0 * rows[k].1];
        let pp = &planes[k];
        from_plane(&mut got, pp.pointer, pp.layout.row_pitch, rows[k].0);
        if let (n @ 1.., Some(i)) = wrong_bytes(bits, &got, &back[k]) {
            errors.push(format!(
                "Vulkan -> CUDA plane {k}: {n} of {} bytes wrong, first at row {} byte {}",
                got.len(),
                i / rows[k].0,
                i % rows[k].0
            ));
        }
    }
    v.destroy_host_buffer(read);
    v.destroy_host_buffer(write);
    if errors.is_empty() {
        Ok(total as u64)
    } else {
        Err(errors.join("; "))
    }
}

/// Every format of the table, four sizes (an odd one whose rows are padded), a
/// ramp and random bytes, both ways: the harness that decides `verified`.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frames_read_back_both_ways() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_frames_read_back_both_ways") else {
        return;
    };
    let v = Vk::of(&ctx);
    let _c = Current::of(&ctx);
    let start = std::time::Instant::now();
    let mut failed = Vec::new();
    for p in PLANAR {
        if !p.verified {
            let m = fails_with(
                Image::create(&ctx, &frame_desc(p.format, 64, 64)),
                ErrorKind::Unsupported,
            );
            println!("REFUSED {:<6} {m}", p.name);
            continue;
        }
        let mut bytes = 0;
        let mut ok_sizes = Vec::new();
        for size in [(64, 64), (1920, 1080), (3840, 2160), (1282, 722)] {
            for seed in [2, 7] {
                match both_ways(&ctx, &v, p, size, seed) {
                    Ok(n) => bytes += n,
                    Err(e) => {
                        failed.push(format!("{} {}x{} seed {seed}: {e}", p.name, size.0, size.1))
                    }
                }
            }
            ok_sizes.push(format!("{}x{}", size.0, size.1));
        }
        println!(
            "FRAME {:<6} {:<4} {}: {bytes} bytes each way (ramp and random), {}",
            p.name,
            p.subsampling(),
            ok_sizes.join(" "),
            if failed
                .iter()
                .any(|f| f.starts_with(&format!("{} ", p.name)))
            {
                "FAILED"
            } else {
                "0 wrong"
            }
        );
    }
    println!(
        "frames: {} formats in {:.1} s",
        PLANAR.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// An NV12 frame: OPTIMAL is refused with the fix named; the pitched-copy helper
/// fills a frame from pitched CUDA memory (as NVDEC's mapped frames are); the
/// frame imported from its share description is the same memory.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frame_pitched_copy_and_description() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_frame_pitched_copy_and_description") else {
        return;
    };
    let _c = Current::of(&ctx);
    let optimal = Description {
        linear: false,
        ..frame_desc(NV12, 64, 64)
    };
    let m = fails_with(Image::create(&ctx, &optimal), ErrorKind::Unsupported);
    assert!(m.contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"), "{m}");
    let (w, h) = (1920u32, 1080u32);
    let (im, planes) = nv12_frame(&ctx, w, h);
    // A decoder's frame: luma then chroma at pitch 2048 in one allocation.
    let pitch = 2048usize;
    let mut src = 0u64;
    check(unsafe { cu::cuMemAlloc_v2(&mut src, pitch * (h as usize * 3 / 2)) });
    let luma = plane_bytes(0, w as usize, h as usize, 4);
    let chroma = plane_bytes(1, w as usize, h as usize / 2, 4);
    to_plane(&luma, src, pitch as u64, w as usize);
    let src_chroma = src + (pitch * h as usize) as u64;
    to_plane(&chroma, src_chroma, pitch as u64, w as usize);
    let pitched = [
        PitchedPlane {
            pointer: src,
            pitch: pitch as u64,
        },
        PitchedPlane {
            pointer: src_chroma,
            pitch: pitch as u64,
        },
    ];
    // SAFETY: two cuMemAlloc'd planes with room for the frame's rows at `pitch`.
    unsafe { im.copy_pitched(&pitched, true, ptr::null_mut()) }.unwrap();
    check(unsafe { cu::cuCtxSynchronize() });
    // The same memory, imported from the frame's description (one fd).
    let d = ipc::describe_image(&im);
    let fd = im.export_fd().unwrap();
    let twin = ipc::import_image(&ctx, &d, &[fd.as_fd()]).unwrap();
    drop(fd);
    let twin_planes = plane_pointers(&twin, 2);
    for (k, want) in [luma, chroma].iter().enumerate() {
        assert_eq!(twin_planes[k].layout.row_pitch, planes[k].layout.row_pitch);
        assert_eq!(twin_planes[k].layout.offset, planes[k].layout.offset);
        let row = w as usize;
        let mut got = vec![0u8; want.len()];
        from_plane(
            &mut got,
            twin_planes[k].pointer,
            twin_planes[k].layout.row_pitch,
            row,
        );
        assert_eq!(
            wrong_bytes(8, &got, want).0,
            0,
            "plane {k} through the imported frame"
        );
    }
    println!(
        "NV12 {w}x{h}: pitched copy into the frame, read back through the frame imported from its \
         description: 0 wrong (plane 1 at offset {}, row pitch {})",
        planes[1].layout.offset, planes[1].layout.row_pitch
    );
    unsafe { cu::cuMemFree_v2(src) };
}

// ---------------------------------------------------------------------------------
// GPU: Vulkan samples a shared frame through the conversion the library describes.

/// The test frame's sample of `plane` (0 Y, 1 Cb, 2 Cr) at (x, y) of a `w` x `h`
/// plane, a code value of `bits` bits in narrow range: a luma ramp with a bright
/// disc; Cb and Cr sweep across.
fn frame_sample(plane: usize, x: usize, y: usize, w: usize, h: usize, bits: u32) -> u32 {
    let (u, v) = (x as f64 / w as f64, y as f64 / h as f64);
    let r = ((u - 0.5).powi(2) + (v - 0.5).powi(2)).sqrt();
    let s = (1u32 << (bits - 8)) as f64;
    let n = match plane {
        0 => 16.0 * s + 219.0 * s * if r < 0.25 { 0.9 } else { 0.15 + 0.6 * u },
        1 => 16.0 * s + 224.0 * s * v,
        _ => 16.0 * s + 224.0 * s * (1.0 - u),
    };
    n as u32
}

/// Chroma `c` (0 Cb, 1 Cr) at luma pixel (x, y), filtered linearly as implicit
/// reconstruction does: co-sited chroma sits on even luma samples, midpoint chroma
/// between two.
fn chroma_at(
    cbcr: &[[u32; 2]],
    (cw, ch): (usize, usize),
    c: usize,
    (x, y): (usize, usize),
    (x_cosited, y_cosited): (bool, bool),
) -> f64 {
    let u = x as f64 / 2.0 - if x_cosited { 0.0 } else { 0.25 };
    let v = y as f64 / 2.0 - if y_cosited { 0.0 } else { 0.25 };
    let (x0, y0) = (u.floor(), v.floor());
    let mut s = 0.0;
    for j in 0..2 {
        for i in 0..2 {
            let xi = (x0 as i64 + i).clamp(0, cw as i64 - 1) as usize;
            let yj = (y0 as i64 + j).clamp(0, ch as i64 - 1) as usize;
            let wx = if i == 1 { u - x0 } else { 1.0 - (u - x0) };
            let wy = if j == 1 { v - y0 } else { 1.0 - (v - y0) };
            s += wx * wy * cbcr[yj * cw + xi][c] as f64;
        }
    }
    s
}

/// One frame of NV12 (8-bit) or P010 (10-bit), written by CUDA, sampled by Vulkan
/// through the conversion `Image::ycbcr_conversion` makes of the frame's colour
/// description, every pixel compared with the host's conversion (`kr`, `kb`: the
/// matrix's luma weights). Returns the largest difference (of 255).
fn sample_frame(
    ctx: &Arc<Context>,
    v: &Vk,
    format: vk::Format,
    bits: u32,
    color: &VideoColor,
    (kr, kb): (f64, f64),
    (w, h): (u32, u32),
) -> u32 {
    let im = Image::create(ctx, &frame_desc(format, w, h)).unwrap_or_else(|e| panic!("{e}"));
    im.set_video_color(color).unwrap();
    let back = im.video_color().unwrap();
    assert_eq!(
        (back.matrix, back.transfer, back.primaries),
        (color.matrix, color.transfer, color.primaries)
    );
    let ci = im.ycbcr_conversion().unwrap().create_info();
    assert_eq!(ci.format, format);
    let (wu, hu) = (w as usize, h as usize);
    let bytes = if bits > 8 { 2 } else { 1 };
    // CUDA writes the planes: luma, then CbCr interleaved (high bits for 10-bit).
    let luma: Vec<u32> = (0..wu * hu)
        .map(|i| frame_sample(0, i % wu, i / wu, wu, hu, bits))
        .collect();
    let (cw, ch) = (wu / 2, hu / 2);
    let cbcr: Vec<[u32; 2]> = (0..cw * ch)
        .map(|i| {
            let (x, y) = (i % cw, i / cw);
            [
                frame_sample(1, x, y, cw, ch, bits),
                frame_sample(2, x, y, cw, ch, bits),
            ]
        })
        .collect();
    let to_bytes = |vals: &mut dyn Iterator<Item = u32>| -> Vec<u8> {
        let shift = if bits > 8 { 16 - bits } else { 0 };
        vals.flat_map(|s| {
            let word = s << shift;
            if bytes == 2 {
                vec![word as u8, (word >> 8) as u8]
            } else {
                vec![word as u8]
            }
        })
        .collect()
    };
    let y_bytes = to_bytes(&mut luma.iter().copied());
    let c_bytes = to_bytes(&mut cbcr.iter().flat_map(|p| p.iter().copied()));
    let planes = plane_pointers(&im, 2);
    v.run(|cmd| release(v, cmd, &im, vk::ImageLayout::UNDEFINED));
    to_plane(
        &y_bytes,
        planes[0].pointer,
        planes[0].layout.row_pitch,
        wu * bytes,
    );
    to_plane(
        &c_bytes,
        planes[1].pointer,
        planes[1].layout.row_pitch,
        cw * 2 * bytes,
    );
    // Vulkan: the conversion, a sampler and a view with it, the shader.
    let pass = support::ycbcr::YcbcrPass::new(v, im.vk_image(), &ci, (w, h), true);
    v.run(|cmd| {
        acquire(v, cmd, &im, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
        pass.record(v, cmd);
    });
    // The host's conversion of the same samples.
    let s = (1u32 << (bits - 8)) as f64;
    let x_cosited = color.x_chroma == vk::ChromaLocation::COSITED_EVEN;
    let y_cosited = color.y_chroma == vk::ChromaLocation::COSITED_EVEN;
    let got = pass.out.bytes();
    let mut worst = 0u32;
    let mut first_bad = None;
    for y in 0..hu {
        for x in 0..wu {
            let yy = (luma[y * wu + x] as f64 - 16.0 * s) / (219.0 * s);
            let cb = (chroma_at(&cbcr, (cw, ch), 0, (x, y), (x_cosited, y_cosited)) - 128.0 * s)
                / (224.0 * s);
            let cr = (chroma_at(&cbcr, (cw, ch), 1, (x, y), (x_cosited, y_cosited)) - 128.0 * s)
                / (224.0 * s);
            let kg = 1.0 - kr - kb;
            let rgb = [
                yy + 2.0 * (1.0 - kr) * cr,
                yy - 2.0 * kb * (1.0 - kb) / kg * cb - 2.0 * kr * (1.0 - kr) / kg * cr,
                yy + 2.0 * (1.0 - kb) * cb,
            ];
            for (k, c) in rgb.iter().enumerate() {
                let want = (c.clamp(0.0, 1.0) * 255.0 + 0.5).floor() as i32;
                let have = got[(y * wu + x) * 4 + k] as i32;
                let diff = (want - have).unsigned_abs();
                if diff > worst {
                    worst = diff;
                }
                if diff > 2 && first_bad.is_none() {
                    first_bad = Some((x, y, k, have, want));
                }
            }
        }
    }
    pass.destroy(v);
    if let Some((x, y, k, have, want)) = first_bad {
        panic!("{format:?}: pixel ({x}, {y}) channel {k} is {have}, the host's conversion gives {want}");
    }
    worst
}

/// BT.709 8-bit NV12 and BT.2020 10-bit P010 frames, written by CUDA and sampled
/// by Vulkan through the conversion the library makes of their colour
/// descriptions: every pixel within 2 of 255 of the host's conversion.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frames_sample_as_their_colour_says() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_frames_sample_as_their_colour_says") else {
        return;
    };
    let v = Vk::of(&ctx);
    let _c = Current::of(&ctx);
    // BT.709 narrow, chroma co-sited horizontally and between the rows.
    let bt709 = VideoColor {
        matrix: 1,
        transfer: 1,
        primaries: 1,
        full_range: false,
        x_chroma: vk::ChromaLocation::COSITED_EVEN,
        y_chroma: vk::ChromaLocation::MIDPOINT,
    };
    let bt2020 = VideoColor {
        matrix: 9,
        transfer: 14,
        primaries: 9,
        x_chroma: vk::ChromaLocation::COSITED_EVEN,
        y_chroma: vk::ChromaLocation::COSITED_EVEN,
        ..bt709
    };
    let cases = [
        (
            "NV12 BT.709 narrow",
            vk::Format::G8_B8R8_2PLANE_420_UNORM,
            8,
            bt709,
            (0.2126, 0.0722),
        ),
        (
            "P010 BT.2020 narrow",
            vk::Format::G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16,
            10,
            bt2020,
            (0.2627, 0.0593),
        ),
    ];
    for (what, format, bits, color, k) in cases {
        for size in [(1920, 1080), (1282, 722)] {
            let worst = sample_frame(&ctx, &v, format, bits, &color, k, size);
            println!(
                "SAMPLED {what} {}x{}: every pixel within {worst} of 255 of the host's conversion",
                size.0, size.1
            );
        }
    }
}

/// A GBR frame's colour description (H.273 matrix 0, full range, sRGB transfer).
fn gbr() -> VideoColor {
    VideoColor {
        matrix: 0,
        transfer: 13,
        primaries: 1,
        full_range: true,
        x_chroma: vk::ChromaLocation::COSITED_EVEN,
        y_chroma: vk::ChromaLocation::COSITED_EVEN,
    }
}

/// The test GBR frame's sample of `plane` (0 G, 1 B, 2 R) at (x, y) of a `w` x
/// `h` plane: smooth sweeps over the whole 8-bit range, so that a model that
/// shifts B and R by one half (YCBCR_IDENTITY) is wrong for most pixels.
fn gbr_sample(plane: usize, x: usize, y: usize, w: usize, h: usize) -> u32 {
    let (u, v) = (x as f64 / (w - 1) as f64, y as f64 / (h - 1) as f64);
    let n = match plane {
        0 => 255.0 * (0.5 * u + 0.5 * v),
        1 => 255.0 * u,
        _ => 255.0 * (1.0 - v),
    };
    n.round() as u32
}

/// One 8-bit frame of `format` holding GBR samples (plane 0 G; then B and R as
/// two planes or interleaved in one), written by CUDA and sampled by Vulkan through
/// the conversion `Image::ycbcr_conversion` makes of a GBR colour description: the
/// model must be RGB_IDENTITY and every pixel's R, G and B the planes' samples
/// (within 1 of 255 for 4:4:4; for 4:2:0, chroma filtered as the host's
/// `chroma_at`, within 2, as `sample_frame` allows). Returns the largest
/// difference, or None where this device cannot make or sample such a frame.
fn sample_gbr_frame(
    ctx: &Arc<Context>,
    v: &Vk,
    format: vk::Format,
    (w, h): (u32, u32),
) -> Option<u32> {
    let im = match Image::create(ctx, &frame_desc(format, w, h)) {
        Ok(im) => im,
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            eprintln!("{format:?}: no frame here: {e}");
            return None;
        }
        Err(e) => panic!("{format:?}: {e}"),
    };
    im.set_video_color(&gbr()).unwrap();
    let conversion = match im.ycbcr_conversion() {
        Ok(c) => c,
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            eprintln!("{format:?}: cannot be sampled here: {e}");
            return None;
        }
        Err(e) => panic!("{format:?}: {e}"),
    };
    let ci = conversion.create_info();
    assert_eq!(
        ci.ycbcr_model,
        vk::SamplerYcbcrModelConversion::RGB_IDENTITY,
        "GBR samples each plane as it is"
    );
    assert_eq!(ci.format, format);
    let p = vkcuda::format::planar_row(format).unwrap();
    assert_eq!(p.bits, 8, "8-bit formats only");
    let (dx, dy) = p.chroma_divisors();
    let (wu, hu) = (w as usize, h as usize);
    let (cw, ch) = (wu / dx as usize, hu / dy as usize);
    let g: Vec<u32> = (0..wu * hu)
        .map(|i| gbr_sample(0, i % wu, i / wu, wu, hu))
        .collect();
    let br: Vec<[u32; 2]> = (0..cw * ch)
        .map(|i| {
            let (x, y) = (i % cw, i / cw);
            [gbr_sample(1, x, y, cw, ch), gbr_sample(2, x, y, cw, ch)]
        })
        .collect();
    let planes = plane_pointers(&im, p.planes.len());
    v.run(|cmd| release(v, cmd, &im, vk::ImageLayout::UNDEFINED));
    let g_bytes: Vec<u8> = g.iter().map(|&s| s as u8).collect();
    to_plane(&g_bytes, planes[0].pointer, planes[0].layout.row_pitch, wu);
    if p.planes.len() == 3 {
        for k in 0..2 {
            let bytes: Vec<u8> = br.iter().map(|s| s[k] as u8).collect();
            to_plane(
                &bytes,
                planes[k + 1].pointer,
                planes[k + 1].layout.row_pitch,
                cw,
            );
        }
    } else {
        let bytes: Vec<u8> = br.iter().flat_map(|s| [s[0] as u8, s[1] as u8]).collect();
        to_plane(
            &bytes,
            planes[1].pointer,
            planes[1].layout.row_pitch,
            cw * 2,
        );
    }
    let pass = support::ycbcr::YcbcrPass::new(v, im.vk_image(), &ci, (w, h), true);
    v.run(|cmd| {
        acquire(v, cmd, &im, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL);
        pass.record(v, cmd);
    });
    let got = pass.out.bytes();
    let tolerance = if (dx, dy) == (1, 1) { 1 } else { 2 };
    let (mut worst, mut first_bad, mut old_model_wrong) = (0u32, None, 0usize);
    for y in 0..hu {
        for x in 0..wu {
            let chroma = |c: usize| -> f64 {
                if (dx, dy) == (1, 1) {
                    br[y * cw + x][c] as f64
                } else {
                    chroma_at(&br, (cw, ch), c, (x, y), (true, true))
                }
            };
            // The sampler's R is the R plane (Cr), G plane 0 (Y), B the B plane (Cb).
            let rgb = [chroma(1), g[y * wu + x] as f64, chroma(0)];
            for (k, c) in rgb.iter().enumerate() {
                let want = (c + 0.5).floor() as i32;
                let have = got[(y * wu + x) * 4 + k] as i32;
                let diff = (want - have).unsigned_abs();
                worst = worst.max(diff);
                if diff > tolerance && first_bad.is_none() {
                    first_bad = Some((x, y, k, have, want));
                }
                // What YCBCR_IDENTITY gives at full range: B and R less one half.
                if k != 1 && (want - (want - 128).max(0)).unsigned_abs() > tolerance {
                    old_model_wrong += 1;
                }
            }
        }
    }
    pass.destroy(v);
    if let Some((x, y, k, have, want)) = first_bad {
        panic!("{format:?} GBR: pixel ({x}, {y}) channel {k} is {have}, the planes hold {want}");
    }
    // The comparison tells the models apart: YCBCR_IDENTITY would fail most of it.
    assert!(
        old_model_wrong > wu * hu,
        "{old_model_wrong} of {} B and R values would differ under YCBCR_IDENTITY",
        2 * wu * hu
    );
    Some(worst)
}

/// GBR frames (H.273 matrix 0, full range), written by CUDA and sampled by Vulkan
/// through the library's conversion: RGB_IDENTITY, and every pixel's R, G and B are
/// the planes' samples (4:4:4 I444 and NV24, and NV12, where the device can sample
/// them LINEAR; at least one must).
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_gbr_frames_sample_as_rgb() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_gbr_frames_sample_as_rgb") else {
        return;
    };
    let v = Vk::of(&ctx);
    let _c = Current::of(&ctx);
    let mut sampled = Vec::new();
    for (name, format) in [
        ("I444", vk::Format::G8_B8_R8_3PLANE_444_UNORM),
        ("NV24", vk::Format::G8_B8R8_2PLANE_444_UNORM),
        ("NV12", NV12),
    ] {
        for size in [(1920, 1080), (1282, 722)] {
            match sample_gbr_frame(&ctx, &v, format, size) {
                Some(worst) => {
                    println!(
                        "SAMPLED GBR {name} {}x{}: every pixel within {worst} of 255 of its planes",
                        size.0, size.1
                    );
                    sampled.push(name);
                }
                None => {
                    eprintln!("SKIPPED GBR {name}: this device cannot sample it LINEAR");
                    break;
                }
            }
        }
    }
    assert!(!sampled.is_empty(), "no GBR frame could be sampled");
}

/// An engine's own LINEAR NV12 image (one dedicated exportable allocation, made
/// with raw Vulkan calls) wrapped as a shared video frame: CUDA writes through the
/// library's plane pointers, the engine's Vulkan copy reads every byte back. A
/// non-dedicated wrap of a linear frame is refused, naming the fix.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_engine_frames_are_wrapped() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_engine_frames_are_wrapped") else {
        return;
    };
    let v = Vk::of(&ctx);
    let _c = Current::of(&ctx);
    let (w, h) = (1282u32, 722u32);
    let usage = vk::ImageUsageFlags::TRANSFER_SRC
        | vk::ImageUsageFlags::TRANSFER_DST
        | vk::ImageUsageFlags::SAMPLED;
    let d = &v.device;
    let mut ext = vk::ExternalMemoryImageCreateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let image = unsafe {
        d.create_image(
            &image_2d(NV12, (w, h), vk::ImageTiling::LINEAR, usage)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .push_next(&mut ext),
            None,
        )
    }
    .unwrap();
    let req = unsafe { d.get_image_memory_requirements(image) };
    let mut export = vk::ExportMemoryAllocateInfo::default()
        .handle_types(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().image(image);
    let memory = unsafe {
        d.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(device_local_type(&v, req.memory_type_bits))
                .push_next(&mut export)
                .push_next(&mut dedicated),
            None,
        )
    }
    .unwrap();
    unsafe { d.bind_image_memory(image, memory, 0) }.unwrap();
    let desc = Description {
        usage,
        ..frame_desc(NV12, w, h)
    };
    let opaque = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
    let plane = |dedicated| PlaneMemory {
        memory,
        allocation_size: req.size,
        offset: 0,
        dedicated,
    };
    // SAFETY: the image and its memory made above, alive until destroyed below
    // after the wrap is dropped.
    let m = fails_with(
        unsafe { Image::wrap(&ctx, image, &[plane(false)], opaque, &desc) },
        ErrorKind::InvalidArgument,
    );
    assert!(m.contains("one dedicated allocation"), "{m}");
    // SAFETY: as above.
    let im = unsafe { Image::wrap(&ctx, image, &[plane(true)], opaque, &desc) }.unwrap();
    check_planes(&im, vkcuda::format::planar_row(NV12).unwrap(), w, h);
    let planes = plane_pointers(&im, 2);
    // CUDA writes a ramp into both planes; the engine's copy reads them.
    let rows = [(w as usize, h as usize), (w as usize, h as usize / 2)];
    let sent: Vec<Vec<u8>> = (0..2)
        .map(|k| plane_bytes(k, rows[k].0, rows[k].1, 6))
        .collect();
    let total = rows[0].0 * rows[0].1 + rows[1].0 * rows[1].1;
    let read = v.host_buffer(total as u64);
    v.run(|cmd| release(&v, cmd, &im, vk::ImageLayout::UNDEFINED));
    // CUDA writes, now that the frame is its own (released from UNDEFINED above).
    for k in 0..2 {
        to_plane(
            &sent[k],
            planes[k].pointer,
            planes[k].layout.row_pitch,
            rows[k].0,
        );
    }
    let offsets = [0, rows[0].0 * rows[0].1];
    let regions = plane_regions(&im, &planes, &offsets);
    v.run(|cmd| unsafe {
        acquire(&v, cmd, &im, vk::ImageLayout::TRANSFER_SRC_OPTIMAL);
        d.cmd_copy_image_to_buffer(
            cmd,
            image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            read.buffer,
            &regions,
        );
    });
    let got = read.bytes();
    assert_eq!(wrong_bytes(8, &got[..sent[0].len()], &sent[0]).0, 0, "luma");
    assert_eq!(
        wrong_bytes(8, &got[sent[0].len()..], &sent[1]).0,
        0,
        "chroma"
    );
    println!("engine's linear NV12 {w}x{h} wrapped: CUDA wrote, Vulkan read both planes, 0 wrong");
    v.destroy_host_buffer(read);
    drop(im);
    unsafe {
        d.destroy_image(image, None);
        d.free_memory(memory, None);
    }
}

/// The environment variable that gives the child the socket's fd number.
const FRAME_SOCKET: &str = "VKCUDA_TEST_FRAME_SOCKET";

/// A shared video frame across processes: this process creates an NV12 frame,
/// CUDA writes both planes, and sends it (`ipc::send_image`: the description,
/// version 4 with the linear flag and the frame's BT.2020 colour, and one fd); a
/// child process receives it (`ipc::receive_image`), finds the colour it was
/// sent with, reads both planes through its own CUDA plane pointers and writes a
/// new chroma plane, which this process then reads through its own.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_frames_cross_processes() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_frames_cross_processes") else {
        return;
    };
    let _c = Current::of(&ctx);
    let (w, h) = (1920usize, 1080usize);
    let (im, planes) = nv12_frame(&ctx, w as u32, h as u32);
    im.set_video_color(&sent_color()).unwrap();
    for (k, rows) in [(0usize, h), (1, h / 2)] {
        let data = plane_bytes(k, w, rows, 8);
        to_plane(&data, planes[k].pointer, planes[k].layout.row_pitch, w);
    }
    let mut fds = [0i32; 2];
    assert_eq!(
        unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) },
        0
    );
    let (mine, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Only the child's end crosses exec.
    unsafe { libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC) };
    let mut cmd = this_test("child_receives_a_frame", true);
    cmd.env(CHILD_ENV, "1")
        .env(FRAME_SOCKET, fds[1].to_string());
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(theirs);
    ipc::send_image(&im, mine.as_fd(), &Options::default()).unwrap();
    let out = child.wait_with_output().unwrap();
    child_passed("child_receives_a_frame", &out);
    drop(mine);
    let want = plane_bytes(1, w, h / 2, 9);
    let mut got = vec![0u8; want.len()];
    from_plane(&mut got, planes[1].pointer, planes[1].layout.row_pitch, w);
    assert_eq!(
        wrong_bytes(8, &got, &want).0,
        0,
        "the child's chroma through this process's frame"
    );
    println!(
        "NV12 {w}x{h} frame across processes: both planes read there, chroma written back, 0 wrong"
    );
}

/// The colour `gpu_frames_cross_processes` sends its frame with: BT.2020 PQ, full
/// range, chroma at the midpoint in x (none of it the default).
fn sent_color() -> VideoColor {
    VideoColor {
        matrix: 9,
        transfer: 16,
        primaries: 9,
        full_range: true,
        x_chroma: vk::ChromaLocation::MIDPOINT,
        y_chroma: vk::ChromaLocation::COSITED_EVEN,
    }
}

/// The child of `gpu_frames_cross_processes`.
#[test]
#[ignore = "runs in a child process of gpu_frames_cross_processes"]
fn child_receives_a_frame() {
    child_only!("child_receives_a_frame");
    let fd: i32 = std::env::var(FRAME_SOCKET).unwrap().parse().unwrap();
    // SAFETY: the parent passed this end of its socket pair to this process.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let ctx = cuda_context_or_skip("child_receives_a_frame").expect("a CUDA GPU in the child");
    let _c = Current::of(&ctx);
    let im = ipc::receive_image(&ctx, sock.as_fd(), &Options::default()).unwrap();
    // The colour travelled with the frame (a new frame would be BT.709).
    assert_eq!(
        im.video_color().unwrap(),
        sent_color(),
        "the received frame's colour"
    );
    let (w, h) = (1920usize, 1080usize);
    check_planes(
        &im,
        vkcuda::format::planar_row(NV12).unwrap(),
        w as u32,
        h as u32,
    );
    let planes = plane_pointers(&im, 2);
    for (k, rows) in [(0usize, h), (1, h / 2)] {
        let want = plane_bytes(k, w, rows, 8);
        let mut got = vec![0u8; want.len()];
        from_plane(&mut got, planes[k].pointer, planes[k].layout.row_pitch, w);
        assert_eq!(
            wrong_bytes(8, &got, &want).0,
            0,
            "plane {k} in the receiving process"
        );
    }
    let chroma = plane_bytes(1, w, h / 2, 9);
    to_plane(&chroma, planes[1].pointer, planes[1].layout.row_pitch, w);
    println!("child: received an NV12 frame (one fd), both planes right, chroma rewritten");
}

// ---------------------------------------------------------------------------------
// Single-plane frames (issue 37): LINEAR tiling on a colour format, one plane of
// pitched memory at the COLOR aspect's layout (what NVENC takes as RGB input).

/// The single-plane formats the tests make linear frames of: NVENC's RGB inputs
/// and the common one-, two- and four-channel ones.
const SINGLE: [vk::Format; 10] = [
    vk::Format::R8G8B8A8_UNORM,
    vk::Format::R8G8B8A8_SRGB,
    vk::Format::B8G8R8A8_UNORM,
    vk::Format::B8G8R8A8_SRGB,
    vk::Format::A2B10G10R10_UNORM_PACK32,
    vk::Format::A2R10G10B10_UNORM_PACK32,
    vk::Format::R8_UNORM,
    vk::Format::R8G8_UNORM,
    vk::Format::R16_UNORM,
    vk::Format::R16G16B16A16_SFLOAT,
];

/// Bytes per texel of a format of [`SINGLE`] (the test's own table).
fn texel_bytes(f: vk::Format) -> u32 {
    match f {
        vk::Format::R8_UNORM => 1,
        vk::Format::R8G8_UNORM | vk::Format::R16_UNORM => 2,
        vk::Format::R16G16B16A16_SFLOAT => 8,
        _ => 4,
    }
}

/// The device's linear-tiling features of `f`, asked by the test itself.
fn linear_features(v: &Vk, f: vk::Format) -> vk::FormatFeatureFlags {
    // SAFETY: the context's live instance and physical device.
    unsafe {
        v.instance
            .get_physical_device_format_properties(v.physical, f)
    }
    .linear_tiling_features
}

/// `vkGetImageSubresourceLayout` of the COLOR aspect, asked by the test itself.
fn color_layout(v: &Vk, image: vk::Image) -> vk::SubresourceLayout {
    let sub = vk::ImageSubresource {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        mip_level: 0,
        array_layer: 0,
    };
    // SAFETY: a live LINEAR image of the device.
    unsafe { v.device.get_image_subresource_layout(image, sub) }
}

const TRANSFERS: vk::FormatFeatureFlags = vk::FormatFeatureFlags::from_raw(
    vk::FormatFeatureFlags::TRANSFER_SRC.as_raw() | vk::FormatFeatureFlags::TRANSFER_DST.as_raw(),
);

/// What a single-plane frame says of its plane: one, at the COLOR aspect's
/// layout as the test asks it, inside the one allocation.
fn check_single(v: &Vk, im: &Image, f: vk::Format, w: u32, h: u32) -> PlanePointer {
    let name = format!("{f:?}");
    assert!(im.is_frame() && im.description().linear, "{name}");
    assert_eq!((im.plane_count(), im.allocation_count()), (1, 1), "{name}");
    assert_eq!(im.plane_aspect(0), vk::ImageAspectFlags::COLOR);
    let pp = im.plane_pointer(0).unwrap();
    let l = color_layout(v, im.vk_image());
    assert_eq!(
        (pp.layout.offset, pp.layout.row_pitch, pp.layout.size),
        (l.offset, l.row_pitch, l.size),
        "{name}: the plane is where vkGetImageSubresourceLayout says"
    );
    assert_eq!(
        (pp.width, pp.height, pp.bytes_per_texel, pp.format),
        (w, h, texel_bytes(f), f),
        "{name}"
    );
    let row = (w * texel_bytes(f)) as u64;
    assert!(pp.layout.row_pitch >= row, "{name}");
    assert!(
        pp.layout.offset + pp.layout.row_pitch * (h as u64 - 1) + row <= im.allocation_size(),
        "{name}: the plane fits the allocation"
    );
    pp
}

/// Every format of [`SINGLE`] whose linear-tiling features have the transfers
/// makes a frame (default usage: what the features allow), with its plane where
/// the device says; one without them, and a usage whose feature the linear tiling
/// lacks, are refused naming the format and the feature. A frame has 2D, one
/// level and one layer; no arrays, surfaces, textures or YCbCr conversion; it
/// travels through a share description as one fd; nothing leaks.
#[test]
fn single_plane_frames_follow_the_linear_features() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = image_counts();
    let (w, h) = (67u32, 35u32);
    let mut made = Vec::new();
    for f in SINGLE {
        let name = format!("{f:?}");
        let features = linear_features(&v, f);
        let r = Image::create(&ctx, &frame_desc(f, w, h));
        if !features.contains(TRANSFERS) {
            let e = refused(r, ErrorKind::Unsupported, &name);
            assert!(e.message().contains("linear-tiling"), "{e}");
            println!("no linear {name} here: {e}");
            continue;
        }
        let im = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        let pp = check_single(&v, &im, f, w, h);
        assert_eq!(pp.pointer, 0, "no CUDA in a Vulkan-only context");
        // The default usage: the transfers, sampled and storage as the features allow.
        let usage = im.description().usage;
        assert!(
            usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
        );
        for (u, feature) in [
            (
                vk::ImageUsageFlags::SAMPLED,
                vk::FormatFeatureFlags::SAMPLED_IMAGE,
            ),
            (
                vk::ImageUsageFlags::STORAGE,
                vk::FormatFeatureFlags::STORAGE_IMAGE,
            ),
            (
                vk::ImageUsageFlags::COLOR_ATTACHMENT,
                vk::FormatFeatureFlags::COLOR_ATTACHMENT,
            ),
        ] {
            if usage.contains(u) {
                assert!(
                    features.contains(feature),
                    "{name}: {u:?} without {feature:?}"
                );
            }
            let asked = Description {
                usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST | u,
                ..frame_desc(f, w, h)
            };
            let r = Image::create(&ctx, &asked);
            if features.contains(feature) {
                // The features allow it; the device may still refuse to export it.
                if let Err(e) = r {
                    assert_eq!(e.kind(), ErrorKind::Unsupported, "{name} {u:?}: {e}");
                }
            } else {
                let e = refused(r, ErrorKind::Unsupported, &name);
                let want = format!("{feature:?}");
                assert!(
                    e.message().contains(&want),
                    "{name} {u:?}: names {want}: {e}"
                );
                assert!(e.message().contains("linear-tiling"), "{e}");
            }
        }
        // Pitched memory only: no arrays, no colour description.
        let m = fails_with(im.level_array(0, 0), ErrorKind::InvalidArgument);
        assert!(m.contains("is a shared frame"), "{m}");
        let m = fails_with(im.mipmapped_array(0), ErrorKind::InvalidArgument);
        assert!(m.contains("vkcuda_image_get_plane_pointer"), "{m}");
        let m = fails_with(im.ycbcr_conversion(), ErrorKind::InvalidArgument);
        assert!(m.contains("multi-planar"), "{m}");
        let m = fails_with(im.plane_pointer(1), ErrorKind::InvalidArgument);
        assert!(m.contains("plane 1 is out of range"), "{m}");
        fails_with(
            im.export_plane_dlpack(0, false, false),
            ErrorKind::CudaUnavailable,
        );
        // One fd in the share description; the import lies where the original does.
        let d = ipc::describe_image(&im);
        assert_eq!(d.fd_count(), 1);
        let fd = im.export_fd().unwrap();
        let back = ipc::import_image(&ctx, &d, &[fd.as_fd()]).unwrap();
        let twin = check_single(&v, &back, f, w, h);
        assert_eq!(twin.layout, pp.layout, "{name}");
        made.push(name);
    }
    assert!(
        made.iter().any(|n| n == "R8G8B8A8_UNORM")
            || !linear_features(&v, SINGLE[0]).contains(TRANSFERS),
        "RGBA8 frames where the features allow them"
    );

    // The shape of a frame: 2D, one level, one layer, not a cube.
    let rgba = vk::Format::R8G8B8A8_UNORM;
    for (d, words) in [
        (
            Description {
                mip_levels: 2,
                ..frame_desc(rgba, 64, 64)
            },
            "1 mip level, not 2",
        ),
        (
            Description {
                array_layers: 2,
                ..frame_desc(rgba, 64, 64)
            },
            "1 array layer",
        ),
        (
            Description {
                dimension: vkcuda::image::Dimension::D1,
                height: 1,
                ..frame_desc(rgba, 64, 64)
            },
            "are 2D, not 1D",
        ),
    ] {
        let e = refused(Image::create(&ctx, &d), ErrorKind::InvalidArgument, words);
        assert!(
            e.message().contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"),
            "{e}"
        );
    }
    // A usage no colour format's linear tiling has, refused naming both.
    let depth = Description {
        usage: vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
        ..frame_desc(rgba, 64, 64)
    };
    let e = refused(
        Image::create(&ctx, &depth),
        ErrorKind::Unsupported,
        "VK_FORMAT_R8G8B8A8_UNORM does not support VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT",
    );
    assert!(e.message().contains("linear-tiling format features"), "{e}");
    assert!(e.message().contains("lack DEPTH_STENCIL_ATTACHMENT"), "{e}");
    // Packed 10-bit formats: linear frames only (no CUDA array holds them).
    let packed = vk::Format::A2B10G10R10_UNORM_PACK32;
    let e = refused(
        Image::create(&ctx, &Description::new_2d(packed, 64, 64)),
        ErrorKind::Unsupported,
        "A2B10G10R10_UNORM_PACK32",
    );
    assert!(
        e.message().contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"),
        "{e}"
    );
    assert_eq!(image_counts(), before, "no image, memory or fd leaked");
    println!("linear single-plane frames here: {}", made.join(" "));
}

/// The bytes of a frame's plane as CUDA sees them: `rows` rows of `row` bytes,
/// `pitch` apart, from `pointer` (the stand-in's device pointers are host
/// addresses).
fn host_rows(pointer: u64, pitch: u64, row: usize, rows: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(row * rows);
    for y in 0..rows {
        // SAFETY: the stand-in maps the frame's memory at `pointer`; the rows lie
        // inside it (check_single).
        let r =
            unsafe { std::slice::from_raw_parts((pointer + y as u64 * pitch) as *const u8, row) };
        out.extend_from_slice(r);
    }
    out
}

/// Writes `data` (rows of `row` bytes) at `pointer`, rows `pitch` apart.
fn host_write_rows(pointer: u64, pitch: u64, row: usize, data: &[u8]) {
    for (y, r) in data.chunks(row).enumerate() {
        // SAFETY: as in host_rows.
        unsafe {
            std::ptr::copy_nonoverlapping(r.as_ptr(), (pointer + y as u64 * pitch) as *mut u8, row)
        };
    }
}

#[test]
fn fake_driver_single_plane_frames() {
    support::device::run_lavapipe_child("child_single_plane_frames", "fake-cuda-frames");
}

/// With the stand-in CUDA driver paired to lavapipe (a CUDA pointer is the host
/// address of the memory Vulkan uses): each single-plane frame lavapipe makes, at
/// an odd width, Vulkan -> CUDA and CUDA -> Vulkan through the plane pointer, and
/// the pitched copy in and out (through buffers CUDA knows, at other pitches),
/// for a ramp that compresses and random bytes, every byte compared; the plane's
/// DLPack tensor is (H, W, C) of the channel type with the row pitch as stride.
#[test]
#[ignore = "runs in a child process of fake_driver_single_plane_frames"]
fn child_single_plane_frames() {
    child_only!("child_single_plane_frames");
    let ctx = support::device::fake_paired_context();
    let v = Vk::of(&ctx);
    let (w, h) = (67u32, 35u32);
    let mut done = Vec::new();
    for f in SINGLE {
        if !linear_features(&v, f).contains(TRANSFERS) {
            continue;
        }
        let name = format!("{f:?}");
        let im = Image::create(&ctx, &frame_desc(f, w, h)).unwrap();
        let pp = check_single(&v, &im, f, w, h);
        assert_ne!(pp.pointer, 0, "{name}: CUDA's pointer");
        let (row, rows, pitch) = (
            (w * pp.bytes_per_texel) as usize,
            h as usize,
            pp.layout.row_pitch,
        );
        // Buffers CUDA knows (mapped by the stand-in), at pitches of their own.
        let (pitch_in, pitch_out) = (row + 13, row + 64);
        let buffer = |pitch: usize| {
            let usage = vk::BufferUsageFlags::empty();
            let size = (pitch * rows) as u64;
            vkcuda::Buffer::create(&ctx, size, usage, vkcuda::buffer::Allocator::Vulkan).unwrap()
        };
        let (src, dst) = (buffer(pitch_in), buffer(pitch_out));
        for seed in [2u32, 7] {
            // Vulkan writes (a staging copy), CUDA reads through the plane pointer.
            let sent = plane_bytes(0, row, rows, seed);
            v.upload(im.vk_image(), w, h, &sent);
            assert_same(
                &host_rows(pp.pointer, pitch, row, rows),
                &sent,
                &format!("{name} Vulkan -> CUDA"),
            );
            // CUDA writes through the pointer, Vulkan reads.
            let back = plane_bytes(0, row, rows, seed + 1);
            host_write_rows(pp.pointer, pitch, row, &back);
            let got = v.download(
                im.vk_image(),
                w,
                h,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                row * rows,
            );
            assert_same(&got, &back, &format!("{name} CUDA -> Vulkan"));
            // The pitched copy in, read by Vulkan, and out again.
            let data = plane_bytes(0, row, rows, seed + 2);
            host_write_rows(src.cuda_ptr().unwrap(), pitch_in as u64, row, &data);
            let plane = |b: &vkcuda::Buffer, p: usize| PitchedPlane {
                pointer: b.cuda_ptr().unwrap(),
                pitch: p as u64,
            };
            // SAFETY: buffers CUDA knows with room for the rows at their pitches.
            unsafe { im.copy_pitched(&[plane(&src, pitch_in)], true, ptr::null_mut()) }.unwrap();
            let got = v.download(
                im.vk_image(),
                w,
                h,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                row * rows,
            );
            assert_same(&got, &data, &format!("{name} pitched copy in"));
            // SAFETY: as above.
            unsafe { im.copy_pitched(&[plane(&dst, pitch_out)], false, ptr::null_mut()) }.unwrap();
            let out = host_rows(dst.cuda_ptr().unwrap(), pitch_out as u64, row, rows);
            assert_same(&out, &data, &format!("{name} pitched copy out"));
        }
        // The DLPack tensor of the plane.
        let t = im.export_plane_dlpack(0, false, false).unwrap();
        let info = vkcuda::format::layout_of(f, true).unwrap().plane(0).info;
        let (c, bytes) = (info.channels as i64, info.bytes_per_channel as i64);
        let (shape, strides): (Vec<i64>, Vec<i64>) = if c == 1 {
            (vec![h as i64, w as i64], vec![pitch as i64 / bytes, 1])
        } else {
            (
                vec![h as i64, w as i64, c],
                vec![pitch as i64 / bytes, c, 1],
            )
        };
        assert_eq!(
            (t.shape(), t.strides()),
            (&shape[..], &strides[..]),
            "{name}"
        );
        let code = if f == vk::Format::R16G16B16A16_SFLOAT {
            2
        } else {
            1
        };
        assert_eq!(
            (t.dtype().code, t.dtype().bits),
            (code, 8 * bytes as u8),
            "{name}"
        );
        assert_eq!(t.data(), pp.pointer, "{name}: the tensor is the plane");
        done.push(format!("{name} (row pitch {pitch})"));
    }
    assert!(!done.is_empty(), "lavapipe makes linear RGBA8 frames");
    println!(
        "single-plane frames {w}x{h} through the stand-in CUDA: {}",
        done.join(", ")
    );
}

/// On the GPU: an RGBA8 (and every other single-plane format the device's linear
/// features allow) frame at 1920x1080 and an odd 1282x722, Vulkan writes it from
/// a staging buffer and CUDA reads it through the plane pointer (cuMemcpy2D to
/// host), and CUDA writes and Vulkan reads, a ramp and random bytes, every byte
/// compared; then the pitched copy from cuMemAlloc'd memory into an RGBA8 frame
/// read back through the plane pointer.
#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_single_plane_frames_read_back_both_ways() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_single_plane_frames_read_back_both_ways") else {
        return;
    };
    let v = Vk::of(&ctx);
    let _c = Current::of(&ctx);
    let mut failed = Vec::new();
    for f in SINGLE {
        let features = linear_features(&v, f);
        if !features.contains(TRANSFERS) {
            assert_ne!(
                f,
                vk::Format::R8G8B8A8_UNORM,
                "linear RGBA8 has transfers on NVIDIA"
            );
            let e = refused(
                Image::create(&ctx, &frame_desc(f, 64, 64)),
                ErrorKind::Unsupported,
                &format!("{f:?}"),
            );
            println!("REFUSED {f:?}: {e}");
            continue;
        }
        let mut bytes = 0;
        for (w, h) in [(1920u32, 1080u32), (1282, 722)] {
            let im = Image::create(&ctx, &frame_desc(f, w, h)).unwrap();
            let pp = check_single(&v, &im, f, w, h);
            for seed in [2, 7] {
                match frame_both_ways(&v, &im, 8, seed) {
                    Ok(n) => bytes += n,
                    Err(e) => failed.push(format!("{f:?} {w}x{h} seed {seed}: {e}")),
                }
            }
            if w == 1920 {
                println!(
                    "FRAME {f:?} {w}x{h}: row pitch {}, size {}, features {features:?}, usage {:?}",
                    pp.layout.row_pitch,
                    pp.layout.size,
                    im.description().usage
                );
            }
        }
        println!("FRAME {f:?}: {bytes} bytes each way (ramp and random)");
    }
    // The pitched copy into an RGBA8 frame (a CUDA producer's pitched RGBA).
    let (w, h) = (1920u32, 1080u32);
    let im = Image::create(&ctx, &frame_desc(vk::Format::R8G8B8A8_UNORM, w, h)).unwrap();
    let pp = im.plane_pointer(0).unwrap();
    let (row, pitch) = (w as usize * 4, 8192usize);
    let mut src = 0u64;
    check(unsafe { cu::cuMemAlloc_v2(&mut src, pitch * h as usize) });
    let data = plane_bytes(0, row, h as usize, 9);
    to_plane(&data, src, pitch as u64, row);
    let plane = PitchedPlane {
        pointer: src,
        pitch: pitch as u64,
    };
    // SAFETY: a cuMemAlloc'd block with room for the frame's rows at `pitch`.
    unsafe { im.copy_pitched(&[plane], true, ptr::null_mut()) }.unwrap();
    check(unsafe { cu::cuCtxSynchronize() });
    let mut got = vec![0u8; data.len()];
    from_plane(&mut got, pp.pointer, pp.layout.row_pitch, row);
    unsafe { cu::cuMemFree_v2(src) };
    if got != data {
        failed.push(format!(
            "pitched copy into RGBA8: {} bytes wrong",
            wrong_bytes(8, &got, &data).0
        ));
    }
    let t = im.export_plane_dlpack(0, true, false).unwrap();
    let stride = pp.layout.row_pitch as i64;
    assert_eq!(t.shape(), &[h as i64, w as i64, 4][..]);
    assert_eq!(t.strides(), &[stride, 4, 1][..]);
    assert_eq!(t.data(), pp.pointer);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
