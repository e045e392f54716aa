//! `vkcuda_format_query` on every 32-bit value, checked against what a shared
//! image of that format does on the device: a format the table takes has 1, 2 or
//! 4 channels of 1, 2 or 4 bytes, and a 4x4 image of it is either made or refused
//! as UNSUPPORTED by the device, never as an invalid argument; a format the table
//! refuses is refused the same way by vkcuda_image_create.
#![no_main]

mod common;
use common::*;

use std::mem::{size_of, MaybeUninit};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: (i32, bool)| {
    let (raw, near) = data;
    // Near the table most of the time: the real formats are below 200 and in
    // the extension ranges 1000xxx000 + n.
    let format = if near {
        if raw % 2 == 0 {
            raw.rem_euclid(200)
        } else {
            1_000_000_000 + raw.rem_euclid(1000) * 1000 + raw.rem_euclid(64)
        }
    } else {
        raw
    };
    let s = shared();
    let fds = fd_count();
    let mut info = MaybeUninit::<vkcuda_format_info>::uninit();
    unsafe {
        std::ptr::write_bytes(
            info.as_mut_ptr().cast::<u8>(),
            0xA5,
            size_of::<vkcuda_format_info>(),
        )
    };
    let r = check("vkcuda_format_query", unsafe {
        vkcuda_format_query(format, info.as_mut_ptr())
    });
    let mut desc = image_info(4, 4, 1);
    desc.format = format;
    let mut im = 0x5A5A as *mut vkcuda_image;
    let made = check("vkcuda_image_create", unsafe {
        vkcuda_image_create(s.ctx, &desc, &mut im)
    });
    if r == VKCUDA_SUCCESS {
        let i = unsafe { info.assume_init() };
        assert!(matches!(i.channels, 1 | 2 | 4), "{i:?}");
        assert!(i.bytes_per_texel % i.channels == 0, "{i:?}");
        assert!(matches!(i.bytes_per_texel / i.channels, 1 | 2 | 4), "{i:?}");
        assert!(i.bgra <= 1);
        assert!(
            matches!(made, VKCUDA_SUCCESS | VKCUDA_ERROR_UNSUPPORTED),
            "a table format refused by image create with {made:?}"
        );
    } else {
        assert!(matches!(
            r,
            VKCUDA_ERROR_INVALID_ARGUMENT | VKCUDA_ERROR_UNSUPPORTED
        ));
        let bytes = unsafe {
            std::slice::from_raw_parts(info.as_ptr().cast::<u8>(), size_of::<vkcuda_format_info>())
        };
        assert!(
            bytes.iter().all(|&b| b == 0xA5),
            "a refused format wrote the output"
        );
        // A multi-planar format whose CUDA view is not verified: the query (what
        // CUDA sees) refuses it; a Vulkan-only context may still make the image.
        let unverified = vkcuda::format::planar_row(ash::vk::Format::from_raw(format))
            .is_some_and(|p| !p.verified);
        if !(unverified && made == VKCUDA_SUCCESS) {
            assert_eq!(
                made, r,
                "image create and format query disagree on {format}"
            );
        }
    }
    if made == VKCUDA_SUCCESS {
        unsafe { vkcuda_image_destroy(im) };
    } else {
        assert!(im.is_null());
    }
    s.no_leak(fds, "format_query");
});
