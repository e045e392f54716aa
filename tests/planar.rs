//! Multi-planar (YCbCr) images (`vkcuda::Image`): NV12 and the other formats of
//! `vkcuda::format::PLANAR`, one allocation, CUDA array, surface and texture per
//! plane; the pitched-copy helper (`Image::copy_pitched`); multi-fd descriptions.
//!
//! CPU (lavapipe): what the device offers for multi-planar formats (Mesa 22.3's
//! lavapipe offers none: every creation is refused with the reason; Mesa 25's
//! offers NV12 and others with DISJOINT, and then the planes cross two devices
//! here, texel by texel); every check of the pitched copies; multi-fd descriptions
//! over a socket. (The C door's part: `vkcuda_format_query`'s planes in
//! capi/tests/formats.rs; the pitched-plane struct, the header's list of checks
//! and codes, the multi-fd C calls and the one-fd ones refusing a multi-planar
//! image in capi/tests/planes.rs.)
//!
//! GPU (`gpu_*`, ignored without `--include-ignored`; with VKCUDA_REQUIRE_GPU=1 a
//! missing GPU fails them): every planar format with optimal tiling refused in a
//! CUDA context (on NVIDIA's driver the planes of a disjoint image read wrong once
//! the data compresses, see `vkcuda::format::PLANAR`; linear frames are
//! tests/video.rs); the single-plane formats a frame can be shared with instead
//! (R8, R8G8, R16, R16G16, RGBA8) at several sizes, Vulkan -> CUDA and CUDA -> Vulkan
//! through the arrays and through the pitched-copy helper, every texel compared,
//! with compressible data (even seeds: a ramp) and with pseudo-random data (odd
//! seeds); the pitched helper's refusals; 1000 frames of pitched copies handed
//! over on a timeline.

mod support;
use support::images::{create, d2, sample_bits, EngineImage, Packing, Side, Texels};
use support::*;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::ptr;
use std::sync::Arc;

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::format::{PlanarFormat, PLANAR};
use vkcuda::image::{Description, Dimension, PitchedPlane};
use vkcuda::ipc::{self, Object, Options};
use vkcuda::{Buffer, Context, ErrorKind, Image};

/// The bytes written and compared: for even seeds a ramp that compresses (as video
/// does: the planes of a disjoint image read wrong with it on NVIDIA's driver, see
/// `vkcuda::format::PLANAR`), for odd seeds pseudo-random bytes (which do not
/// compress, and show any texel out of place).
fn pattern(i: usize, seed: u32) -> u8 {
    if seed % 2 == 0 {
        ((i / 8) as u32).wrapping_mul(3).wrapping_add(seed) as u8
    } else {
        support::pattern(i, seed)
    }
}

fn name(f: vk::Format) -> String {
    vkcuda::format::display(f)
}

/// Why the device cannot make shared images of `p` with one allocation per plane
/// and transfers, or None when it can (what the library's creation must agree with).
fn unsupported_why(v: &Vk, p: &PlanarFormat) -> Option<String> {
    let feats = unsafe {
        v.instance
            .get_physical_device_format_properties(v.physical, p.format)
    }
    .optimal_tiling_features;
    let need = vk::FormatFeatureFlags::TRANSFER_SRC
        | vk::FormatFeatureFlags::TRANSFER_DST
        | vk::FormatFeatureFlags::DISJOINT;
    (!feats.contains(need)).then(|| {
        if feats.is_empty() {
            "no optimal-tiling features".to_string()
        } else {
            format!("optimal-tiling features {feats:?}")
        }
    })
}

// ---------------------------------------------------------------------------------
// Plane geometry: each plane packed in a staging buffer, 256-byte aligned.

#[derive(Clone, Copy, Debug)]
struct Plane {
    aspect: vk::ImageAspectFlags,
    extent: vk::Extent3D,
    texel: u64,
    offset: u64,
    bytes: u64,
}

fn planes(im: &Image) -> (Vec<Plane>, u64) {
    let layout = vkcuda::format::layout(im.description().format).unwrap();
    let mut out = Vec::new();
    let mut offset = 0;
    for p in 0..im.plane_count() {
        let extent = im.plane_extent(p);
        let texel = layout.plane(p).info.bytes_per_texel() as u64;
        let bytes = extent.width as u64 * extent.height as u64 * texel;
        out.push(Plane {
            aspect: im.plane_aspect(p),
            extent,
            texel,
            offset,
            bytes,
        });
        offset = (offset + bytes).next_multiple_of(256);
    }
    (out, offset)
}

/// Bits per sample: the planar format's, or a single-plane format's channel bits.
fn bits(im: &Image) -> u32 {
    let layout = vkcuda::format::layout(im.description().format).unwrap();
    layout
        .planar()
        .map_or(layout.plane(0).info.bytes_per_channel * 8, |p| p.bits)
}

fn regions(im: &Image) -> Vec<vk::BufferImageCopy> {
    planes(im)
        .0
        .iter()
        .map(|p| {
            vk::BufferImageCopy::default()
                .buffer_offset(p.offset)
                .image_subresource(vk::ImageSubresourceLayers {
                    aspect_mask: p.aspect,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                })
                .image_extent(p.extent)
        })
        .collect()
}

/// Whether the texel `got` differs from `want(byte index in the texel)` in any
/// sample bit.
fn texel_differs(bits: u32, got: &[u8], want: impl Fn(usize) -> u8) -> bool {
    got.iter()
        .enumerate()
        .any(|(b, &x)| (x ^ want(b)) & sample_bits(bits, b) != 0)
}

/// Texels (of every plane) that differ from the pattern, and texels compared.
fn texel_mismatches(im: &Image, data: &[u8], seed: u32) -> (u64, u64) {
    let (ps, _) = planes(im);
    let bits = bits(im);
    let (mut bad, mut all) = (0, 0);
    for p in ps {
        for t in 0..p.bytes / p.texel {
            let at = (p.offset + t * p.texel) as usize;
            all += 1;
            let got = &data[at..at + p.texel as usize];
            if texel_differs(bits, got, |b| pattern(at + b, seed)) {
                bad += 1;
            }
        }
    }
    (bad, all)
}

/// Every plane, as the staging buffer holds them (see [`planes`]).
fn packing(im: &Image) -> Packing {
    let (ps, total) = planes(im);
    Packing {
        total,
        regions: regions(im),
        range: vk::ImageSubresourceRange {
            aspect_mask: ps
                .iter()
                .fold(vk::ImageAspectFlags::empty(), |a, p| a | p.aspect),
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: 1,
        },
    }
}

/// Every plane with `pattern`'s bytes, packed as [`planes`] says.
const TEXELS: Texels = Texels {
    packing,
    byte: pattern,
    mismatches: texel_mismatches,
};

fn plane_fds(im: &Image) -> Vec<OwnedFd> {
    (0..im.plane_count())
        .map(|p| im.export_plane_fd(p).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------
// CPU: lavapipe (and any device).

#[test]
fn the_device_offers_what_it_offers_and_creation_follows() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let v = Vk::of(&ctx);
    let before = image_counts();
    let mut made = 0;
    println!("multi-planar formats on this device (Vulkan-only context):");
    for p in PLANAR {
        let why = unsupported_why(&v, p);
        match (Image::create(&ctx, &d2(p.format, 64, 64)), &why) {
            (Ok(im), None) => {
                assert_eq!(im.plane_count(), p.planes.len());
                let e = im.mipmapped_array(0).unwrap_err();
                assert_eq!(
                    e.kind(),
                    ErrorKind::CudaUnavailable,
                    "Vulkan-only: no CUDA view"
                );
                for (k, pl) in p.planes.iter().enumerate() {
                    let e = im.plane_extent(k);
                    assert_eq!((e.width, e.height), pl.extent(64, 64));
                    let m = im.plane_memory(k).unwrap();
                    assert_ne!(m.memory, vk::DeviceMemory::null());
                    assert!(m.allocation_size >= e.width as u64 * e.height as u64);
                }
                assert_eq!(im.vk_memory(), im.plane_memory(0).unwrap().memory);
                let m = fails_with(im.export_fd(), ErrorKind::InvalidArgument);
                has(&m, &["export_plane_fd"]);
                assert_eq!(plane_fds(&im).len(), p.planes.len());
                println!("  MADE    {:<8} {}", p.name, name(p.format));
                made += 1;
            }
            (Err(e), Some(why)) => {
                assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
                assert!(e.message().contains(&name(p.format)), "{e}");
                println!("  REFUSED {:<8} ({why}): {e}", p.name);
            }
            (Ok(_), Some(why)) => {
                panic!("{} was made although the device says {why}", p.name);
            }
            (Err(e), None) => {
                // Supported by the format features, refused by the external image
                // properties (not exportable): say so.
                assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
                println!("  REFUSED {:<8} (not exportable): {e}", p.name);
            }
        }
    }
    println!("{made} of {} multi-planar formats made here", PLANAR.len());
    assert_eq!(image_counts(), before);
}

#[test]
fn planar_shapes_are_checked_before_the_device() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let nv12 = vk::Format::G8_B8R8_2PLANE_420_UNORM;
    let invalid = ErrorKind::InvalidArgument;
    let refused = |d: &Description| fails_with(Image::create(&ctx, d), invalid);
    for (w, h) in [(1919, 1080), (1920, 1079), (1, 2), (3, 3)] {
        let m = refused(&d2(nv12, w, h));
        assert!(
            m.contains("(NV12) subsamples chroma 2x2 (4:2:0): the width and height must be even")
                && m.ends_with(&format!("not {w}x{h}")),
            "{m}"
        );
    }
    let m = refused(&d2(vk::Format::G8_B8R8_2PLANE_422_UNORM, 33, 33));
    has(&m, &["the width must be even, not 33x33"]);
    let m = refused(&Description {
        mip_levels: 2,
        ..d2(nv12, 64, 64)
    });
    has(&m, &["1 mip level, not 2"]);
    let m = refused(&Description {
        array_layers: 2,
        ..d2(nv12, 64, 64)
    });
    has(&m, &["1 array layer"]);
    refused(&Description {
        cube: true,
        array_layers: 6,
        ..d2(nv12, 64, 64)
    });
    let m = refused(&Description {
        dimension: Dimension::D1,
        height: 1,
        ..d2(nv12, 64, 1)
    });
    has(&m, &["2D, not 1D"]);
    let m = refused(&Description {
        dimension: Dimension::D3,
        depth: 2,
        ..d2(nv12, 64, 64)
    });
    has(&m, &["2D, not 3D"]);
    // 4:4:4 takes any extent.
    if let Err(e) = Image::create(&ctx, &d2(vk::Format::G8_B8_R8_3PLANE_444_UNORM, 33, 17)) {
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(!e.message().contains("even"), "{e}");
    }
}

/// `Image::copy_pitched` of `planes` on the default stream, into (`to_image`) or
/// out of `im`: on lavapipe only the checks run (no CUDA).
fn copy(im: &Image, planes: &[(u64, u64)], to_image: bool) -> vkcuda::Result<()> {
    let planes: Vec<PitchedPlane> = planes
        .iter()
        .map(|&(pointer, pitch)| PitchedPlane { pointer, pitch })
        .collect();
    // SAFETY: the addresses are checked before anything is enqueued; with no CUDA
    // side (or a refused call) nothing is.
    unsafe { im.copy_pitched(&planes, to_image, ptr::null_mut()) }
}

#[test]
fn pitched_copies_check_their_arguments() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let r8 = create(&ctx, &d2(vk::Format::R8_UNORM, 100, 30));
    let rgba = create(&ctx, &d2(vk::Format::R8G8B8A8_UNORM, 100, 30));
    let (invalid, no_cuda) = (ErrorKind::InvalidArgument, ErrorKind::CudaUnavailable);
    for to_image in [true, false] {
        // Everything right: the arguments pass, CUDA is missing.
        fails_with(copy(&r8, &[(0x1000, 100)], to_image), no_cuda);
        fails_with(copy(&rgba, &[(0x1000, 512)], to_image), no_cuda);
        let m = fails_with(copy(&rgba, &[(0x1000, 399)], to_image), invalid);
        let short = "pitch of pitched plane 0 (399) is less than the plane's row of 400 bytes";
        has(&m, &[&format!("{short} (100 texels of 4 bytes)")]);
        let m = fails_with(
            copy(&r8, &[(0x1000, 100), (0x2000, 100)], to_image),
            invalid,
        );
        has(
            &m,
            &["2 pitched planes were given, but VK_FORMAT_R8_UNORM has 1 plane"],
        );
        fails_with(copy(&r8, &[], to_image), invalid);
        fails_with(copy(&r8, &[(u64::MAX - 10, 100)], to_image), invalid);
        fails_with(copy(&r8, &[(0x1000, u64::MAX / 8)], to_image), invalid);
        fails_with(copy(&r8, &[(0, 100)], to_image), ErrorKind::NullPointer);
    }
    // 3D and layered images: refused (cuMemcpy3D on the level arrays instead).
    let three = create(
        &ctx,
        &Description {
            dimension: Dimension::D3,
            depth: 4,
            ..d2(vk::Format::R8_UNORM, 16, 16)
        },
    );
    let layered = create(
        &ctx,
        &Description {
            array_layers: 2,
            ..d2(vk::Format::R8_UNORM, 16, 16)
        },
    );
    for im in [&three, &layered] {
        let m = fails_with(copy(im, &[(0x1000, 16)], true), ErrorKind::Unsupported);
        has(&m, &["cuMemcpy3D"]);
    }
}

#[test]
fn single_plane_images_are_the_one_plane_case() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let im = create(&ctx, &d2(vk::Format::R8G8B8A8_UNORM, 67, 35));
    assert_eq!(im.plane_count(), 1);
    let m = im.plane_memory(0).unwrap();
    assert_eq!(m.memory, im.vk_memory());
    assert_eq!(m.allocation_size, im.allocation_size());
    assert_eq!(im.plane_memories(), vec![m]);
    let e = im.plane_extent(0);
    assert_eq!((e.width, e.height), (67, 35));
    assert_eq!(im.plane_aspect(0), vk::ImageAspectFlags::COLOR);
    let layout = vkcuda::format::layout(vk::Format::R8G8B8A8_UNORM).unwrap();
    assert_eq!(layout.plane_count(), 1);
    let fd = im.export_plane_fd(0).unwrap();
    assert!(fd_is_open(fd.as_raw_fd()));
    let m = fails_with(im.export_plane_fd(1), ErrorKind::InvalidArgument);
    has(
        &m,
        &["plane 1 is out of range: VK_FORMAT_R8G8B8A8_UNORM has 1 plane"],
    );
    fails_with(im.level_array(1, 0), ErrorKind::InvalidArgument);
    fails_with(im.level_array(0, 0), ErrorKind::CudaUnavailable);
    // The description carries one size and one fd.
    let d = ipc::describe_image(&im);
    let Object::Image {
        allocation_sizes, ..
    } = d.object
    else {
        panic!("{d:?}")
    };
    assert_eq!(allocation_sizes, [im.allocation_size(), 0, 0]);
    assert_eq!(d.fd_count(), 1);
}

/// An NV12 description (64x64) for the context's device.
fn nv12_description(ctx: &Arc<Context>) -> ipc::Description {
    let buf = Buffer::create(ctx, 4096, vk::BufferUsageFlags::empty(), Allocator::Vulkan).unwrap();
    let device_uuid = ipc::describe_buffer(&buf).device_uuid;
    ipc::Description {
        device_uuid,
        object: Object::Image {
            desc: Description {
                usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED,
                ..d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 64)
            },
            allocation_sizes: [65536, 65536, 0],
            color: Some(vkcuda::image::VideoColor::DEFAULT),
        },
    }
}

fn socketpair() -> (OwnedFd, OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut p = [0; 2];
    let ty = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    assert_eq!(
        unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, p.as_mut_ptr()) },
        0
    );
    unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) }
}

#[test]
fn multi_fd_descriptions_travel_over_a_socket() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let d = nv12_description(&ctx);
    assert_eq!(d.fd_count(), 2);
    // Two memory fds stand in for the planes' (the socket path does not import).
    let buf = Buffer::create(
        &ctx,
        65536,
        vk::BufferUsageFlags::empty(),
        Allocator::Vulkan,
    )
    .unwrap();
    let fds = [buf.export_fd().unwrap(), buf.export_fd().unwrap()];
    let base = fd_count();
    let opts = Options {
        timeout: Some(std::time::Duration::from_secs(1)),
        ..Options::default()
    };
    let (a, b) = socketpair();
    // One fd is not enough for NV12.
    let m = fails_with(
        ipc::send(a.as_fd(), &d, &[fds[0].as_fd()], &opts),
        ErrorKind::InvalidArgument,
    );
    has(&m, &["comes with 2 fds"]);
    ipc::send(a.as_fd(), &d, &[fds[0].as_fd(), fds[1].as_fd()], &opts).unwrap();
    let (got, received) = ipc::receive(b.as_fd(), &opts).unwrap();
    assert_eq!(received.len(), 2);
    assert_eq!(got, d, "the description arrives as it was sent");
    assert_eq!(
        got.to_bytes().unwrap(),
        d.to_bytes().unwrap(),
        "byte for byte"
    );
    for f in &received {
        assert!(fd_is_open(f.as_raw_fd()));
    }
    drop(received);
    assert_eq!(fd_count(), base + 2, "the socket pair only");
    // Received for a context whose device cannot make NV12 (or can): the import
    // of what came is refused or made, and the fds that came are closed.
    ipc::send(a.as_fd(), &d, &[fds[0].as_fd(), fds[1].as_fd()], &opts).unwrap();
    let r = ipc::receive_image(&ctx, b.as_fd(), &opts);
    if let Err(e) = &r {
        println!("NV12 from stand-in fds: {e}");
    }
    drop(r);
    assert_eq!(fd_count(), base + 2, "the received fds were closed");
}

/// Device A makes the image and writes every plane, device B reads them through
/// its own image on the plane fds and writes them back (`Texels::cross_devices`).
/// A second import goes through the library (describe, serialize, parse, import
/// with the fds).
fn cross_device(format: vk::Format, w: u32, h: u32) -> u64 {
    let (a, b) = (vulkan_only_context(), vulkan_only_context());
    let (va, vb) = (Vk::of(&a), Vk::of(&b));
    let im = create(&a, &d2(format, w, h));
    let what = format!("{format:?} {w}x{h}");
    let (e, all) = TEXELS.cross_devices(&va, &vb, &im, plane_fds(&im), &what);

    // The library's import in B, from a record that went through bytes.
    let d = ipc::describe_image(&im);
    let parsed = ipc::Description::parse(&d.to_bytes().unwrap()).unwrap();
    let fds = plane_fds(&im);
    let m = fails_with(
        ipc::import_image(&b, &parsed, &[fds[0].as_fd()]),
        ErrorKind::InvalidArgument,
    );
    has(&m, &["fds"]);
    let handles: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    let imported = ipc::import_image(&b, &parsed, &handles).unwrap();
    drop(fds);
    assert_eq!(imported.plane_count(), im.plane_count());
    let seen = TEXELS.read(&vb, Side::Shared(&imported));
    assert_eq!(
        texel_mismatches(&im, &seen, 8).0,
        0,
        "the library's import sees A's texels"
    );

    // An engine image of B with exportable plane memory, wrapped (Vulkan-only: the
    // checks run).
    let own = EngineImage::new(&vb, &imported, None);
    let desc = *imported.description();
    let good = own.planes();
    let wrapped = own.wrap(&b, &good, &desc).unwrap();
    assert!(wrapped.is_wrapped());
    for (p, &(m, s)) in own.memory.iter().enumerate() {
        let pm = wrapped.plane_memory(p).unwrap();
        assert_eq!((pm.memory, pm.allocation_size), (m, s));
    }
    drop(wrapped);
    let mut bad = good.clone();
    bad[1].allocation_size = 1;
    let m = fails_with(own.wrap(&b, &bad, &desc), ErrorKind::InvalidArgument);
    has(&m, &["plane 1: allocation_size 1"]);
    let mut bad = good.clone();
    bad[1] = bad[0];
    let m = fails_with(own.wrap(&b, &bad, &desc), ErrorKind::InvalidArgument);
    has(&m, &["memory of an earlier plane"]);

    drop(imported);
    own.destroy(&vb);
    e.destroy(&vb);
    all
}

#[test]
fn planar_texels_cross_devices_where_the_device_has_them() {
    let _g = serial();
    let supported: Vec<&PlanarFormat> = {
        let ctx = vulkan_only_context();
        let v = Vk::of(&ctx);
        PLANAR
            .iter()
            .filter(|p| unsupported_why(&v, p).is_none())
            .collect()
    };
    if supported.is_empty() {
        println!(
            "SKIPPED: planar_texels_cross_devices: this device offers no multi-planar format \
             with DISJOINT and transfers (Mesa 22.3's lavapipe offers none; \
             the_device_offers_what_it_offers_and_creation_follows checks the refusals)"
        );
        return;
    }
    let before = image_counts();
    for p in supported {
        let (x, y) = p.chroma_divisors();
        for (w, h) in [(x, y), (64, 64), (130 * x / 2 * 2, 34)] {
            let all = cross_device(p.format, w, h);
            println!("PASS {:<6} {w}x{h}: {all} texels each way, 0 wrong", p.name);
        }
    }
    assert_eq!(image_counts(), before, "no image, memory or fd leaked");
}

#[test]
fn planar_cycles_do_not_grow() {
    let _g = serial();
    let ctx = vulkan_only_context();
    let d = d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 64, 32);
    let odd = d2(vk::Format::G8_B8R8_2PLANE_420_UNORM, 63, 32);
    drop(Image::create(&ctx, &d));
    let before = image_counts();
    for _ in 0..300 {
        match Image::create(&ctx, &d) {
            Ok(im) => drop(plane_fds(&im)),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}"),
        }
        assert!(Image::create(&ctx, &odd).is_err());
    }
    assert_eq!(image_counts(), before);
}

// ---------------------------------------------------------------------------------
// GPU: CUDA reads and writes the plane arrays (cuMemcpy2D) and pitched memory.

mod gpu {
    use super::*;
    use cudarc::driver::sys as cu;
    use support::cuda::{check, copy2d, Cuda, Mem};
    use support::images::{release, Side};
    use vkcuda::cuda_sys::CUaddress_mode;
    use vkcuda::image::Sampler;
    use vkcuda::semaphore::Kind;
    use vkcuda::Semaphore;

    /// Pitched device memory for every plane, with `pad` bytes of pitch beyond the row.
    struct Pitched {
        ptrs: Vec<(u64, usize)>,
    }

    impl Pitched {
        fn new(im: &Image, pad: usize) -> Pitched {
            let (ps, _) = planes(im);
            let ptrs = ps
                .iter()
                .map(|p| {
                    let row = (p.extent.width as u64 * p.texel) as usize;
                    let pitch = row + pad;
                    let mut d = 0;
                    check(unsafe { cu::cuMemAlloc_v2(&mut d, pitch * p.extent.height as usize) });
                    (d, pitch)
                })
                .collect();
            Pitched { ptrs }
        }
        fn planes(&self) -> Vec<(u64, u64)> {
            self.ptrs.iter().map(|&(d, p)| (d, p as u64)).collect()
        }
        fn free(self) {
            for (d, _) in self.ptrs {
                unsafe { cu::cuMemFree_v2(d) };
            }
        }
    }

    /// One plane's pitched copy on `stream`.
    fn copy_on(
        im: &Image,
        planes: &[(u64, u64)],
        to_image: bool,
        stream: cu::CUstream,
    ) -> vkcuda::Result<()> {
        let planes: Vec<PitchedPlane> = planes
            .iter()
            .map(|&(pointer, pitch)| PitchedPlane { pointer, pitch })
            .collect();
        // SAFETY: device memory of the context with room for every plane's rows.
        unsafe { im.copy_pitched(&planes, to_image, stream) }
    }

    /// Vulkan writes / CUDA reads, CUDA writes / Vulkan reads, through the plane
    /// arrays and through the pitched helper; surfaces and textures per plane.
    /// Returns the texels compared in one direction.
    fn both_ways(ctx: &Arc<Context>, v: &Vk, c: &Cuda, d: &Description) -> u64 {
        let im = create(ctx, d);
        let (ps, _) = planes(&im);
        let what = format!("{} {}x{}", name(d.format), d.width, d.height);
        for p in 0..im.plane_count() {
            assert!(
                !im.mipmapped_array(p).unwrap().is_null(),
                "{what}: plane {p}"
            );
        }

        // Vulkan -> CUDA and CUDA -> Vulkan, through the arrays.
        let (bad, bad_back, all) = TEXELS.through_cuda(v, c, &im, |host, to_array| {
            for (k, p) in ps.iter().enumerate() {
                let row = (p.extent.width as u64 * p.texel) as usize;
                let h = host[p.offset as usize..].as_mut_ptr();
                let a = im.level_array(k, 0).unwrap();
                let (src, dst) = (Mem::Array(a), Mem::Host(h, row));
                let (src, dst) = if to_array { (dst, src) } else { (src, dst) };
                copy2d(src, dst, row, p.extent.height as usize);
            }
        });
        assert_eq!(bad, 0, "{what}: CUDA read {bad} of {all} texels wrong");
        assert_eq!(
            bad_back, 0,
            "{what}: Vulkan read {bad_back} of {all} texels wrong after CUDA wrote"
        );

        // The pitched helper, both ways, with padded pitches whose padding must
        // stay untouched.
        c.enter();
        let pitched = Pitched::new(&im, 192);
        let pad = 0xEEu8;
        for (k, p) in ps.iter().enumerate() {
            let (dp, pitch) = pitched.ptrs[k];
            let mut src = vec![pad; pitch * p.extent.height as usize];
            let row = (p.extent.width as u64 * p.texel) as usize;
            for y in 0..p.extent.height as usize {
                for x in 0..row {
                    src[y * pitch + x] = pattern(p.offset as usize + y * row + x, 13);
                }
            }
            check(unsafe { cu::cuMemcpyHtoD_v2(dp, src.as_ptr().cast(), src.len()) });
        }
        c.leave();
        // TEXELS.read left the image Vulkan's, in TRANSFER_SRC_OPTIMAL: hand it to CUDA.
        v.run(|cmd| release(v, cmd, &im, vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
        copy_on(&im, &pitched.planes(), true, ptr::null_mut()).unwrap();
        c.synchronize();
        let seen = TEXELS.read(v, Side::Shared(&im));
        let (bad, _) = texel_mismatches(&im, &seen, 13);
        assert_eq!(
            bad, 0,
            "{what}: copy_from_pitched: Vulkan read {bad} of {all} texels wrong"
        );
        TEXELS.write(
            v,
            Side::Shared(&im),
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            14,
        );
        unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
        // Padding bytes everywhere, then the copy out: only the rows change.
        c.enter();
        for (k, p) in ps.iter().enumerate() {
            let (dp, pitch) = pitched.ptrs[k];
            check(unsafe { cu::cuMemsetD8_v2(dp, pad, pitch * p.extent.height as usize) });
        }
        c.leave();
        copy_on(&im, &pitched.planes(), false, ptr::null_mut()).unwrap();
        c.enter();
        check(unsafe { cu::cuCtxSynchronize() });
        let bits = bits(&im);
        let mut bad_texels = 0u64;
        let mut bad_padding = 0u64;
        for (k, p) in ps.iter().enumerate() {
            let (dp, pitch) = pitched.ptrs[k];
            let mut got = vec![0u8; pitch * p.extent.height as usize];
            check(unsafe { cu::cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), dp, got.len()) });
            let row = (p.extent.width as u64 * p.texel) as usize;
            for y in 0..p.extent.height as usize {
                for t in 0..p.extent.width as usize {
                    let at = y * pitch + t * p.texel as usize;
                    let want = p.offset as usize + y * row + t * p.texel as usize;
                    let texel = &got[at..at + p.texel as usize];
                    if texel_differs(bits, texel, |b| pattern(want + b, 14)) {
                        bad_texels += 1;
                    }
                }
                bad_padding += got[y * pitch + row..(y + 1) * pitch]
                    .iter()
                    .filter(|&&x| x != pad)
                    .count() as u64;
            }
        }
        pitched.free();
        c.leave();
        assert_eq!(
            bad_texels, 0,
            "{what}: copy_to_pitched: {bad_texels} of {all} texels wrong"
        );
        assert_eq!(
            bad_padding, 0,
            "{what}: copy_to_pitched wrote {bad_padding} padding bytes"
        );

        // Surfaces (kept, one per plane; every plane of a multi-planar image has
        // them, a single-plane image with STORAGE usage) and textures on every plane.
        for p in 0..im.plane_count() {
            let surfaces = im.cuda_array_flags(p) & 0x2 != 0;
            assert!(
                surfaces || im.plane_count() == 1,
                "{what}: plane {p} has no SURFACE_LDST"
            );
            if surfaces {
                let (s1, s2) = (im.surface(p, 0).unwrap(), im.surface(p, 0).unwrap());
                assert!(s1 != 0 && s1 == s2);
            }
            let t = Sampler {
                level: Some(0),
                linear: true,
                address: CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
                normalized_coordinates: true,
                normalized_float: true,
                border_color: [0.0; 4],
            };
            assert_ne!(im.texture(p, &t).unwrap(), 0);
        }
        all
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_planar_formats_are_refused_and_single_plane_images_carry_frames() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip(
            "gpu_planar_formats_are_refused_and_single_plane_images_carry_frames",
        ) else {
            return;
        };
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        // With optimal tiling every planar format is refused in a CUDA context,
        // saying why and naming the shared video frame (tests/video.rs) as the fix.
        for p in PLANAR {
            let m = fails_with(
                Image::create(&ctx, &d2(p.format, 64, 64)),
                ErrorKind::Unsupported,
            );
            assert!(m.contains("with optimal tiling cannot be shared"), "{m}");
            assert!(m.contains("VKCUDA_IMAGE_CREATE_LINEAR_BIT"), "{m}");
            println!("REFUSED {:<6} {} (optimal)", p.name, name(p.format));
        }
        // What a frame is shared with instead: one single-plane image per plane
        // (R8 + R8G8 for 8-bit 4:2:0, R16 + R16G16 for P010/P016), and RGBA8.
        let mut formats = 0;
        for (f, w, h) in [
            (vk::Format::R8_UNORM, 1920, 1080),
            (vk::Format::R8G8_UNORM, 960, 540),
            (vk::Format::R16_UNORM, 3840, 2160),
            (vk::Format::R16G16_UNORM, 1920, 1080),
            (vk::Format::R8G8B8A8_UNORM, 1282, 722),
        ] {
            let all = both_ways(&ctx, &v, &c, &d2(f, w, h));
            formats += 1;
            println!(
                "PASS {:<24} {w}x{h}: {all} texels each way (ramp and random bytes; arrays and \
                 pitched helper), 0 mismatches",
                name(f)
            );
        }
        assert_eq!(formats, 5);
    }

    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_pitched_copy_refusals() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_pitched_copy_refusals") else {
            return;
        };
        let c = Cuda::of_context(&ctx);
        let im = create(&ctx, &d2(vk::Format::R8G8_UNORM, 64, 64));
        c.enter();
        let p = Pitched::new(&im, 0);
        // A stream of another context: DeviceMismatch.
        let mut other = ptr::null_mut();
        check(unsafe { cu::cuCtxCreate_v2(&mut other, 0, 0) });
        let mut stream = ptr::null_mut();
        check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        let mut popped = ptr::null_mut();
        unsafe { cu::cuCtxPopCurrent_v2(&mut popped) };
        c.leave();
        let m = fails_with(
            copy_on(&im, &p.planes(), true, stream),
            ErrorKind::DeviceMismatch,
        );
        println!("foreign stream: {m}");
        // Rows past the end of the allocation.
        let mut short = p.planes();
        short[0].0 += 64;
        let m = fails_with(
            copy_on(&im, &short, false, ptr::null_mut()),
            ErrorKind::InvalidArgument,
        );
        assert!(
            m.contains("plane 0") && m.contains("past the end of its CUDA allocation"),
            "{m}"
        );
        println!("past the allocation: {m}");
        unsafe {
            cu::cuStreamDestroy_v2(stream);
            cu::cuCtxDestroy_v2(other);
        }
        c.enter();
        p.free();
        c.leave();
    }

    /// Issue 39, item 4: a pitched copy from or to an address CUDA knows nothing
    /// of (a made-up address, plain host memory) is refused with InvalidArgument
    /// before anything is enqueued, and the context is not lost; every kind of
    /// memory the documentation names as accepted goes through both ways, every
    /// byte checked: cuMemAlloc'd device memory, managed memory, page-locked host
    /// memory (cuMemAllocHost) and registered host memory (cuMemHostRegister),
    /// and the CUDA pointers of shared buffers (Vulkan-allocated and
    /// CUDA-allocated). Each refusal and each kind is printed.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_pitched_copy_unknown_addresses_are_refused() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_pitched_copy_unknown_addresses_are_refused")
        else {
            return;
        };
        let c = Cuda::of_context(&ctx);
        let (w, h) = (96u32, 40u32);
        let im = create(&ctx, &d2(vk::Format::R8G8_UNORM, w, h));
        let row = w as usize * 2;
        let pitch = row + 64;
        let len = pitch * h as usize;
        // Refused: nothing enqueued (a fault would lose the context, and every
        // later call here would fail).
        let host = vec![0u8; len];
        for (what, bad) in [
            ("0x10000", 0x10000u64),
            ("plain host memory", host.as_ptr() as u64),
        ] {
            for (dir, to_image) in [("from", true), ("to", false)] {
                let m = fails_with(
                    copy_on(&im, &[(bad, pitch as u64)], to_image, ptr::null_mut()),
                    ErrorKind::InvalidArgument,
                );
                assert!(
                    m.contains("in no allocation CUDA knows") && m.contains("cuMemGetAddressRange"),
                    "copy {dir} {what}: {m}"
                );
                println!("copy {dir} {what}: refused: {m}");
            }
        }
        c.synchronize();

        // Accepted: each kind of memory, both ways, every byte.
        let bytes: Vec<u8> = (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        let none = vk::BufferUsageFlags::empty();
        let shared_vk = Buffer::create(&ctx, len as u64, none, Allocator::Vulkan).unwrap();
        let shared_cuda = Buffer::create(&ctx, len as u64, none, Allocator::Cuda).unwrap();
        // Whole pages of a Vec of our own, registered with CUDA.
        let page = 4096;
        let reg_len = len.div_ceil(page) * page;
        let mut registered = vec![0u8; reg_len + page];
        let reg_host = {
            let a = registered.as_mut_ptr() as usize;
            (a.div_ceil(page) * page) as *mut u8
        };
        let mut kinds: Vec<(&str, u64)> = Vec::new();
        c.enter();
        let mut dev = 0;
        check(unsafe { cu::cuMemAlloc_v2(&mut dev, len) });
        kinds.push(("cuMemAlloc", dev));
        let mut managed = 0;
        check(unsafe { cu::cuMemAllocManaged(&mut managed, len, 1) });
        kinds.push(("cuMemAllocManaged", managed));
        let mut pinned: *mut std::ffi::c_void = ptr::null_mut();
        check(unsafe { cu::cuMemAllocHost_v2(&mut pinned, len) });
        let mut pinned_dev = 0;
        check(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut pinned_dev, pinned, 0) });
        kinds.push(("cuMemAllocHost", pinned_dev));
        check(unsafe { cu::cuMemHostRegister_v2(reg_host.cast(), reg_len, 2) });
        let mut reg_dev = 0;
        check(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut reg_dev, reg_host.cast(), 0) });
        kinds.push(("cuMemHostRegister", reg_dev));
        let mut out = 0;
        check(unsafe { cu::cuMemAlloc_v2(&mut out, len) });
        c.leave();
        kinds.push((
            "a shared buffer's CUDA pointer (Vulkan-allocated)",
            shared_vk.cuda_ptr().unwrap(),
        ));
        kinds.push((
            "a shared buffer's CUDA pointer (CUDA-allocated)",
            shared_cuda.cuda_ptr().unwrap(),
        ));
        for (what, src) in &kinds {
            c.write(*src, &bytes);
            c.write(out, &vec![0xEE; len]);
            copy_on(&im, &[(*src, pitch as u64)], true, ptr::null_mut()).unwrap();
            copy_on(&im, &[(out, pitch as u64)], false, ptr::null_mut()).unwrap();
            c.synchronize();
            let back = c.read(out, len);
            let (mut wrong, mut padding) = (0, 0);
            for (i, (&got, &want)) in back.iter().zip(&bytes).enumerate() {
                if i % pitch < row {
                    wrong += usize::from(got != want);
                } else {
                    padding += usize::from(got != 0xEE);
                }
            }
            assert_eq!(
                (wrong, padding),
                (0, 0),
                "{what}: wrong bytes, padding bytes written"
            );
            println!(
                "copy from and to {what}: accepted, {} bytes right both ways",
                row * h as usize
            );
        }
        c.enter();
        unsafe {
            cu::cuMemFree_v2(out);
            cu::cuMemHostUnregister(reg_host.cast());
            cu::cuMemFreeHost(pinned);
            cu::cuMemFree_v2(managed);
            cu::cuMemFree_v2(dev);
        }
        c.leave();
        drop((registered, host));
    }

    /// 1000 frames of luma (R8, 1920x1080: the Y of an NV12 frame shared the way a
    /// planar format is shared instead): CUDA copies frame k (one of three pitched
    /// frames, two of them ramps that compress, so that consecutive frames differ)
    /// into the shared image with the pitched helper and signals; Vulkan waits,
    /// acquires, copies the planes out, releases and signals; the host compares
    /// every texel of every frame.
    #[test]
    #[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
    fn gpu_thousand_frame_pitched_handoff() {
        let _g = serial();
        let Some(ctx) = cuda_context_or_skip("gpu_thousand_frame_pitched_handoff") else {
            return;
        };
        let frames: u32 = std::env::var("VKCUDA_PLANAR_FRAMES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1000);
        let v = Vk::of(&ctx);
        let c = Cuda::of_context(&ctx);
        let im = create(&ctx, &d2(vk::Format::R8_UNORM, 1920, 1080));
        let (ps, total) = planes(&im);
        // Three source frames, pitched like a decoder's output.
        c.enter();
        let sources: Vec<Pitched> = (0..3).map(|_| Pitched::new(&im, 128)).collect();
        let mut expect = Vec::new();
        for (f, src) in sources.iter().enumerate() {
            let mut packed = vec![0u8; total as usize];
            for (k, x) in packed.iter_mut().enumerate() {
                *x = pattern(k, 100 + f as u32);
            }
            for (k, p) in ps.iter().enumerate() {
                let (dp, pitch) = src.ptrs[k];
                let row = (p.extent.width as u64 * p.texel) as usize;
                let hp = packed[p.offset as usize..].as_mut_ptr();
                copy2d(
                    Mem::Host(hp, row),
                    Mem::Device(dp, pitch),
                    row,
                    p.extent.height as usize,
                );
            }
            expect.push(packed);
        }
        let mut stream = ptr::null_mut();
        check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        c.leave();
        let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
        let vs = sem.vk_semaphore();
        let out = v.host_buffer(total);
        let src_layout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        // One command buffer for every frame: acquire, copy out, release.
        let alloc = |record: &dyn Fn(vk::CommandBuffer)| {
            let cmd = v.command_buffer();
            record(cmd);
            unsafe { v.device.end_command_buffer(cmd).unwrap() };
            cmd
        };
        let first = alloc(&|cmd| release(&v, cmd, &im, vk::ImageLayout::UNDEFINED));
        let frame_cmd = alloc(&|cmd| {
            support::images::acquire(&v, cmd, &im, src_layout);
            unsafe {
                v.device.cmd_copy_image_to_buffer(
                    cmd,
                    im.vk_image(),
                    src_layout,
                    out.buffer,
                    &regions(&im),
                )
            };
            release(&v, cmd, &im, src_layout);
        });
        let fence =
            unsafe { v.device.create_fence(&vk::FenceCreateInfo::default(), None) }.unwrap();
        let submit = |cmd: vk::CommandBuffer, wait: Option<u64>, signal: u64| {
            let waits: Vec<_> = wait.map(|w| (vs, w)).into_iter().collect();
            v.submit_timeline(&waits, &[(vs, signal)], cmd, fence);
            unsafe {
                v.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
                v.device.reset_fences(&[fence]).unwrap();
            }
        };
        // The new image goes to CUDA (its contents do not matter yet).
        let s0 = sem.next_stage().unwrap();
        submit(first, None, s0.signal);
        let t0 = std::time::Instant::now();
        let (mut bad_frames, mut bad_texels, mut texels) = (0u32, 0u64, 0u64);
        for k in 0..frames {
            let f = (k % 3) as usize;
            let cuda_stage = sem.next_stage().unwrap();
            sem.cuda_wait(cuda_stage.wait, stream).unwrap();
            copy_on(&im, &sources[f].planes(), true, stream).unwrap();
            sem.cuda_signal(cuda_stage.signal, stream).unwrap();
            let vk_stage = sem.next_stage().unwrap();
            submit(frame_cmd, Some(vk_stage.wait), vk_stage.signal);
            let (bad, all) = texel_mismatches_against(&im, out.bytes(), &expect[f]);
            texels += all;
            if bad != 0 {
                bad_frames += 1;
                bad_texels += bad;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "R8 1920x1080 (luma) handoff loop: {frames} frames, {texels} texels compared, {bad_texels} wrong \
             in {bad_frames} frames, {:.1} us per frame (copy, semaphores, Vulkan copy-out, host compare)",
            secs * 1e6 / frames as f64
        );
        assert_eq!(bad_texels, 0);
        unsafe {
            v.device.destroy_fence(fence, None);
            v.device.free_command_buffers(v.pool, &[first, frame_cmd]);
        }
        v.destroy_host_buffer(out);
        c.enter();
        check(unsafe { cu::cuStreamSynchronize(stream) });
        unsafe { cu::cuStreamDestroy_v2(stream) };
        for s in sources {
            s.free();
        }
        c.leave();
    }

    /// Texels of every plane that differ from `expect` (packed as [`planes`]).
    fn texel_mismatches_against(im: &Image, data: &[u8], expect: &[u8]) -> (u64, u64) {
        let (ps, _) = planes(im);
        let (mut bad, mut all) = (0, 0);
        for p in ps {
            let (a, b) = (p.offset as usize, (p.offset + p.bytes) as usize);
            let (got, want) = (&data[a..b], &expect[a..b]);
            all += p.bytes / p.texel;
            if got != want {
                bad += got
                    .chunks(p.texel as usize)
                    .zip(want.chunks(p.texel as usize))
                    .filter(|(x, y)| x != y)
                    .count() as u64;
            }
        }
        (bad, all)
    }
}
