//! The DLPack group: `vkcuda_buffer_export_dlpack`. A valid spec makes a tensor on a
//! CUDA-paired context (deleted at once) and is refused with CUDA_UNAVAILABLE on a
//! Vulkan-only one, after every argument was checked.

use std::ffi::c_void;
use std::ptr;

use crate::support::*;
use crate::matrix::*;

pub fn cases(m: &mut Matrix) {
    const F: &str = "vkcuda_buffer_export_dlpack";
    /// float32 128x128: the whole 64 KiB buffer of the environment.
    fn base() -> vkcuda_dlpack_info {
        let mut shape = [0i64; 8];
        shape[0] = 128;
        shape[1] = 128;
        vkcuda_dlpack_info {
            flags: 0,
            dtype: vkcuda_dlpack_dtype {
                code: 2,
                bits: 32,
                lanes: 1,
            },
            ndim: 2,
            shape,
            strides: ptr::null(),
            offset: 0,
        }
    }
    /// A valid spec: a tensor on a CUDA-paired context (deleted here), otherwise
    /// CUDA_UNAVAILABLE after every argument was checked.
    fn valid(c: &Call, buffer: *const vkcuda_buffer, info: &vkcuda_dlpack_info) {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_buffer_export_dlpack(buffer, info, &mut t) };
        if c.env.cuda {
            c.succeeded(r);
            let t = t.cast::<dlpack_rs::ffi::DLManagedTensorVersioned>();
            unsafe { ((*t).deleter.unwrap())(t) };
        } else {
            c.refused(r, &[U]);
            assert!(t.is_null(), "the tensor output was not set to NULL");
        }
    }
    fn refused(c: &Call, info: &vkcuda_dlpack_info, want: &[vkcuda_result]) {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_buffer_export_dlpack(c.env.buffer, info, &mut t) };
        if r == VKCUDA_SUCCESS {
            let t = t.cast::<dlpack_rs::ffi::DLManagedTensorVersioned>();
            unsafe { ((*t).deleter.unwrap())(t) };
        }
        c.refused(r, want);
        assert!(t.is_null(), "the tensor output was not set to NULL");
    }
    m.ran(F, "null:buffer", |c| {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_buffer_export_dlpack(ptr::null(), &base(), &mut t) };
        c.refused(r, &[N]);
        assert!(t.is_null());
    });
    m.ran(F, "wrong-kind:buffer", |c| {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_buffer_export_dlpack(c.env.image.cast(), &base(), &mut t) };
        c.refused(r, &[I]);
        assert!(t.is_null());
    });
    m.ran(F, "null:info", |c| {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_buffer_export_dlpack(c.env.buffer, ptr::null(), &mut t) };
        c.refused(r, &[N]);
        assert!(t.is_null());
    });
    m.ran(F, "null:tensor", |c| {
        let r = unsafe { vkcuda_buffer_export_dlpack(c.env.buffer, &base(), ptr::null_mut()) };
        c.refused(r, &[N]);
    });
    m.ran(F, "valid", |c| valid(c, c.env.buffer, &base()));
    m.ran(F, "all-zero:info->flags", |c| valid(c, c.env.buffer, &unsafe { std::mem::zeroed() }));
    m.ran(F, "null-ok:info->strides", |c| valid(c, c.env.buffer, &base()));
    static GOOD_STRIDES: [i64; 2] = [1, 128];
    static NEGATIVE_STRIDES: [i64; 2] = [128, -1];
    static WIDE_STRIDES: [i64; 2] = [129, 1];
    m.ran(F, "transposed:info->strides", |c| {
        let mut i = base();
        i.strides = GOOD_STRIDES.as_ptr();
        valid(c, c.env.buffer, &i);
    });
    type Change = fn(&mut vkcuda_dlpack_info);
    let changes: [(&str, Change, vkcuda_result); 17] = [
        ("unknown-bits:info->flags", |i| i.flags = 0x4, I),
        ("high-bit:info->flags", |i| i.flags = 0x8000_0000, I),
        ("read-only-legacy:info->flags", |i| i.flags = 0x3, I),
        ("not-a-code:info->dtype.code", |i| i.dtype.code = 99, I),
        (
            "float8:info->dtype.code",
            |i| {
                i.dtype.code = 10;
                i.dtype.bits = 8
            },
            UNSUP,
        ),
        (
            "opaque:info->dtype.code",
            |i| {
                i.dtype.code = 3;
                i.dtype.bits = 64
            },
            UNSUP,
        ),
        ("7-bits:info->dtype.bits", |i| i.dtype.bits = 7, I),
        ("zero:info->dtype.bits", |i| i.dtype.bits = 0, I),
        ("zero:info->dtype.lanes", |i| i.dtype.lanes = 0, I),
        ("too-many:info->dtype.lanes", |i| i.dtype.lanes = 2, I),
        ("nine:info->ndim", |i| i.ndim = 9, I),
        ("max:info->ndim", |i| i.ndim = u32::MAX, I),
        ("negative:info->shape", |i| i.shape[0] = -1, I),
        ("too-big:info->shape", |i| i.shape[0] = 129, I),
        ("past-ndim:info->shape", |i| i.shape[7] = 1, I),
        (
            "misaligned:info->offset",
            |i| {
                i.shape[0] = 1;
                i.offset = 2
            },
            I,
        ),
        (
            "past-end:info->offset",
            |i| {
                i.shape[0] = 0;
                i.offset = 65540
            },
            I,
        ),
    ];
    for (label, change, want) in changes {
        m.ran(F, label, move |c| {
            let mut i = base();
            change(&mut i);
            refused(c, &i, &[want]);
        });
    }
    m.ran(F, "negative:info->strides", |c| {
        let mut i = base();
        i.strides = NEGATIVE_STRIDES.as_ptr();
        refused(c, &i, &[I]);
    });
    m.ran(F, "too-wide:info->strides", |c| {
        let mut i = base();
        i.strides = WIDE_STRIDES.as_ptr();
        refused(c, &i, &[I]);
    });
    m.ran(F, "without-shape:info->strides", |c| {
        let mut i: vkcuda_dlpack_info = unsafe { std::mem::zeroed() };
        i.strides = GOOD_STRIDES.as_ptr();
        refused(c, &i, &[I]);
    });
    m.ran(F, "too-far:info->offset", |c| {
        let mut i = base();
        i.offset = 4;
        refused(c, &i, &[I]);
    });
    // -- the planes of shared video frames. The environment's image is optimal and
    // single-plane: not a frame, so every valid-looking call is refused as such.
    const P: &str = "vkcuda_image_export_plane_dlpack";
    m.ran(P, "null:image", |c| {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_image_export_plane_dlpack(ptr::null(), 0, 0, &mut t) };
        c.refused(r, &[N]);
        assert!(t.is_null());
    });
    m.ran(P, "wrong-kind:image", |c| {
        let mut t: *mut c_void = poisoned();
        let r = unsafe { vkcuda_image_export_plane_dlpack(c.env.buffer.cast(), 0, 0, &mut t) };
        c.refused(r, &[I]);
        assert!(t.is_null());
    });
    m.ran(P, "null:tensor", |c| {
        let r = unsafe { vkcuda_image_export_plane_dlpack(c.env.image, 0, 0, ptr::null_mut()) };
        c.refused(r, &[N]);
    });
    for (label, plane, flags) in [
        ("not-a-frame:image", 0u32, 0u32),
        ("past-last:plane", 1, 0),
        ("absurd:plane", u32::MAX, 0),
        ("unknown-bits:flags", 0, 0x10),
        ("read-only-legacy:flags", 0, VKCUDA_DLPACK_READ_ONLY_BIT | VKCUDA_DLPACK_LEGACY_BIT),
    ] {
        m.ran(P, label, move |c| {
            let mut t: *mut c_void = poisoned();
            let r = unsafe { vkcuda_image_export_plane_dlpack(c.env.image, plane, flags, &mut t) };
            c.refused(r, &[I]);
            assert!(t.is_null(), "the tensor output was not set to NULL");
        });
    }
}
