//! `vkcuda_format_query`, the C door's view of the format table: every row of
//! `vkcuda::format::TABLE` and every planar format of `PLANAR` (its planes) read
//! back through the C struct. (The refusals: their codes and the function's name
//! in the message, capi/tests/misuse/image.rs's `vkcuda_format_query` rows; their
//! words, src/format.rs's unit tests `refusals_say_why` and
//! `every_other_known_format_is_refused_with_a_supported_neighbour`. Images
//! themselves, through the Rust API: tests/image.rs; every argument of the image
//! functions: the misuse matrix, capi/tests/misuse/image.rs.)

mod support;
use support::*;

use ash::vk;
use vkcuda::format::PLANAR;

/// Every row of the table read back through the C struct, and three rows against
/// the numbers of the CUDA header (`CUarray_format`) and the numeric enum.
#[test]
fn format_query_answers_both_ways() {
    let _g = serial();
    for row in vkcuda::format::TABLE {
        let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_format_query(row.format.as_raw(), &mut q) });
        assert_eq!(q.cuda_format, row.cuda as u32);
        assert_eq!(q.channels, row.channels);
        assert_eq!(q.bytes_per_texel, row.channels * row.bytes_per_channel);
        assert_eq!(q.bgra == 1, row.order == vkcuda::format::Order::Bgra);
    }
    let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_format_query(vk::Format::B8G8R8A8_SRGB.as_raw(), &mut q) });
    assert_eq!(
        (q.cuda_format, q.channels, q.bytes_per_texel, q.bgra),
        (0x01, 4, 4, 1)
    );
    assert_eq!(q.numeric, vkcuda_format_numeric::VKCUDA_FORMAT_NUMERIC_SRGB);
    ok(unsafe { vkcuda_format_query(vk::Format::R16G16_SFLOAT.as_raw(), &mut q) });
    assert_eq!((q.cuda_format, q.channels, q.bytes_per_texel), (0x10, 2, 4));
    ok(unsafe { vkcuda_format_query(vk::Format::R32G32B32A32_SINT.as_raw(), &mut q) });
    assert_eq!(
        (q.cuda_format, q.channels, q.bytes_per_texel),
        (0x0a, 4, 16)
    );
}

#[test]
fn format_query_describes_every_plane() {
    for p in PLANAR {
        let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
        let r = unsafe { vkcuda_format_query(p.format.as_raw(), &mut q) };
        if !p.verified {
            let m = fails(r, VKCUDA_ERROR_UNSUPPORTED);
            assert!(m.contains("as a linear video frame"), "{m}");
            continue;
        }
        ok(r);
        assert_eq!(q.plane_count as usize, p.planes.len(), "{}", p.name);
        assert_eq!(
            (q.chroma_width_divisor, q.chroma_height_divisor),
            p.chroma_divisors()
        );
        assert_eq!(q.bits, p.bits);
        // The format's own fields are luma's (plane 0): one channel of 8 or 16 bits.
        let (cuda, bytes) = if p.bits == 8 { (0x01, 1) } else { (0x02, 2) };
        assert_eq!(
            (q.cuda_format, q.channels, q.bytes_per_texel),
            (cuda, 1, bytes)
        );
        for (k, pl) in p.planes.iter().enumerate() {
            let c = &q.planes[k];
            assert_eq!(c.format, pl.info.format.as_raw());
            assert_eq!(c.cuda_format, pl.info.cuda as u32);
            assert_eq!(c.channels, pl.info.channels);
            assert_eq!(c.bytes_per_texel, pl.info.bytes_per_texel());
            assert_eq!(
                (c.width_divisor, c.height_divisor),
                (pl.width_divisor, pl.height_divisor)
            );
            assert_eq!(c.aspect, vk::ImageAspectFlags::PLANE_0.as_raw() << k);
        }
        for k in p.planes.len()..3 {
            assert_eq!(q.planes[k].channels, 0, "unused planes are zero");
        }
    }
    let mut q: vkcuda_format_info = unsafe { std::mem::zeroed() };
    // Single-plane formats are the one-plane case.
    ok(unsafe { vkcuda_format_query(vk::Format::R16G16_SFLOAT.as_raw(), &mut q) });
    assert_eq!(q.plane_count, 1);
    assert_eq!((q.chroma_width_divisor, q.chroma_height_divisor), (1, 1));
    assert_eq!(q.bits, 16);
    assert_eq!(q.planes[0].format, vk::Format::R16G16_SFLOAT.as_raw());
    assert_eq!(
        (
            q.planes[0].cuda_format,
            q.planes[0].channels,
            q.planes[0].bytes_per_texel
        ),
        (q.cuda_format, q.channels, q.bytes_per_texel)
    );
    assert_eq!(q.planes[0].aspect, vk::ImageAspectFlags::COLOR.as_raw());
    // Packed 4:2:2 is no planar format: refused with the planar one to use.
    let m = fails(
        unsafe { vkcuda_format_query(vk::Format::G8B8G8R8_422_UNORM.as_raw(), &mut q) },
        VKCUDA_ERROR_UNSUPPORTED,
    );
    assert!(m.contains("use VK_FORMAT_G8_B8R8_2PLANE_422_UNORM"), "{m}");
}
