//! The planar group (multi-planar images, issue 18): the plane getters, the
//! pitched copies, the multi-fd sharing calls, and the plane fields of the wrap
//! info and share descriptions (their description mutations are in share.rs). The
//! shared image of the environment is single-plane: its only plane is plane 0.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::env::{Env, Kind};
use crate::matrix::*;
use crate::nulls::{get0, get00, Out};
use crate::share::{description_cases, options, receive_refused, send_cases, socket_cases};

const MIP: &str = "vkcuda_image_get_plane_cuda_mipmapped_array";
const ARRAY: &str = "vkcuda_image_get_plane_cuda_array";
const SURF: &str = "vkcuda_image_get_plane_surface_object";
const TEX: &str = "vkcuda_image_create_plane_texture_object";
const EXPORT: &str = "vkcuda_image_export_plane_fd";
const POINTER: &str = "vkcuda_image_get_plane_pointer";
const SET_COLOR: &str = "vkcuda_image_set_video_color";
const GET_COLOR: &str = "vkcuda_image_get_video_color";
const CONVERSION: &str = "vkcuda_image_get_ycbcr_conversion_info";

const COPY_FROM: &str = "vkcuda_image_cuda_copy_from_pitched";
const COPY_TO: &str = "vkcuda_image_cuda_copy_to_pitched";
const SEND: &str = "vkcuda_share_send_fds";
const RECV: &str = "vkcuda_share_receive_fds";
const IMPORT: &str = "vkcuda_image_import_description_fds";

fn pitched(e: &Env) -> vkcuda_pitched_planes {
    // 16x16 RGBA8: rows of 64 bytes, inside the shared 64 KiB buffer (its CUDA
    // pointer in a CUDA context; any nonzero address where CUDA cannot be reached).
    let pointer = if e.cuda {
        e.buffer_info().cuda_pointer
    } else {
        0x10_0000
    };
    let none = vkcuda_pitched_plane {
        device_pointer: 0,
        pitch: 0,
    };
    vkcuda_pitched_planes {
        flags: 0,
        plane_count: 1,
        planes: [
            vkcuda_pitched_plane {
                device_pointer: pointer,
                pitch: 64,
            },
            none,
            none,
        ],
    }
}

/// Planes and levels the environment's image does not have (a single plane, 5 levels).
const BAD_PLANE_LEVEL: [(&str, u32, u32); 4] = [
    ("past-last:plane", 1, 0),
    ("absurd:plane", u32::MAX, 0),
    ("past-last:level", 0, 5),
    ("absurd:level", 0, u32::MAX),
];

/// fd counts a one-fd description (the environment's buffer or image) does not have.
const BAD_FD_COUNTS: [(&str, u32); 4] = [
    ("zero:fd_count", 0),
    ("two-for-one:fd_count", 2),
    ("past-max:fd_count", 4),
    ("absurd:fd_count", u32::MAX),
];

pub fn cases(m: &mut Matrix) {
    // NULL for every pointer and handle argument of the new functions.
    let image_out = vkcuda_image_destroy;
    let copy_from = vkcuda_image_cuda_copy_from_pitched;
    let copy_to = vkcuda_image_cuda_copy_to_pitched;
    m.nulls(nulls![
        TEX, "image" => |_, o| unsafe {
            vkcuda_image_create_plane_texture_object(ptr::null(), 0, &texture_info(), o.plain())
        };
        TEX, "info" => |e, o| unsafe { vkcuda_image_create_plane_texture_object(e.image, 0, ptr::null(), o.plain()) };
        TEX, "texture" => |e, _| unsafe {
            vkcuda_image_create_plane_texture_object(e.image, 0, &texture_info(), ptr::null_mut())
        };
        SET_COLOR, "image" => |_, _| unsafe { vkcuda_image_set_video_color(ptr::null(), &bt709()) };
        SET_COLOR, "color" => |e, _| unsafe { vkcuda_image_set_video_color(e.image, ptr::null()) };
        COPY_FROM, "image" => |e, _| unsafe { copy_from(ptr::null(), &pitched(e), ptr::null_mut()) };
        COPY_FROM, "planes" => |e, _| unsafe { copy_from(e.image, ptr::null(), ptr::null_mut()) };
        COPY_TO, "image" => |e, _| unsafe { copy_to(ptr::null(), &pitched(e), ptr::null_mut()) };
        COPY_TO, "planes" => |e, _| unsafe { copy_to(e.image, ptr::null(), ptr::null_mut()) };
        SEND, "description" => |e, _| {
            let fd = e.buffer_fd();
            let r = with_socket(|s| unsafe {
                vkcuda_share_send_fds(s, ptr::null(), &fd, 1, &options())
            });
            close(fd);
            r
        };
        SEND, "fds" => |e, _| {
            let d = e.describe(Kind::Buffer);
            with_socket(|s| unsafe { vkcuda_share_send_fds(s, &d, ptr::null(), 1, &options()) })
        };
        RECV, "description" => |_, o| {
            let (fds, n) = (o.plain::<[i32; 3]>(), o.plain());
            with_socket(|s| unsafe {
                vkcuda_share_receive_fds(s, &options(), ptr::null_mut(), fds.cast(), 3, n)
            })
        };
        RECV, "fds" => |_, o| {
            let (d, n) = (o.plain(), o.plain());
            with_socket(|s| unsafe {
                vkcuda_share_receive_fds(s, &options(), d, ptr::null_mut(), 3, n)
            })
        };
        RECV, "fd_count" => |_, o| {
            let (d, fds) = (o.plain(), o.plain::<[i32; 3]>());
            with_socket(|s| unsafe {
                vkcuda_share_receive_fds(s, &options(), d, fds.cast(), 3, ptr::null_mut())
            })
        };
        IMPORT, "context" => |e, o| {
            let d = e.describe(Kind::Image);
            let fd = e.image_fd();
            let r = unsafe {
                vkcuda_image_import_description_fds(ptr::null(), &d, &fd, 1, o.handle(image_out))
            };
            close(fd);
            r
        };
        IMPORT, "description" => |e, o| {
            let fd = e.image_fd();
            let r = unsafe {
                vkcuda_image_import_description_fds(e.ctx, ptr::null(), &fd, 1, o.handle(image_out))
            };
            close(fd);
            r
        };
        IMPORT, "fds" => |e, o| unsafe {
            let d = e.describe(Kind::Image);
            vkcuda_image_import_description_fds(e.ctx, &d, ptr::null(), 1, o.handle(image_out))
        };
        IMPORT, "image" => |e, _| {
            let d = e.describe(Kind::Image);
            let fd = e.image_fd();
            let r = unsafe { vkcuda_image_import_description_fds(e.ctx, &d, &fd, 1, ptr::null_mut()) };
            close(fd);
            r
        };
    ]);
    m.image_getter(MIP, "array", Out::lent, get0(vkcuda_image_get_plane_cuda_mipmapped_array));
    m.image_getter(ARRAY, "array", Out::lent, get00(vkcuda_image_get_plane_cuda_array));
    m.image_getter(SURF, "surface", Out::plain, get00(vkcuda_image_get_plane_surface_object));
    m.image_getter(POINTER, "pointer", Out::plain, get0(vkcuda_image_get_plane_pointer));
    m.image_getter(EXPORT, "fd", Out::plain, get0(vkcuda_image_export_plane_fd));
    // -- plane getters
    for (label, plane) in [("past-last:plane", 1), ("absurd:plane", u32::MAX)] {
        m.case(MIP, label, move |c| c.refused_nulled(&[I], |a| unsafe {
                vkcuda_image_get_plane_cuda_mipmapped_array(c.env.image, plane, a)
            }));
    }
    m.ran(MIP, "plane-0", |c| {
        let mut a = Poison::<*mut CUmipmappedArray_st>::new();
        let r = unsafe { vkcuda_image_get_plane_cuda_mipmapped_array(c.env.image, 0, a.ptr()) };
        if c.env.cuda {
            c.succeeded(r);
            let mut b = ptr::null_mut();
            ok(unsafe { vkcuda_image_get_cuda_mipmapped_array(c.env.image, &mut b) });
            assert_eq!(unsafe { *a.ptr() }, b, "plane 0 is the image's array");
        } else {
            c.refused(r, &[U]);
            a.nulled();
        }
    });
    for (label, plane, level) in BAD_PLANE_LEVEL {
        m.case(ARRAY, label, move |c| c.refused_nulled(&[I], |a| unsafe {
                vkcuda_image_get_plane_cuda_array(c.env.image, plane, level, a)
            }));
    }
    m.vulkan_only(ARRAY, "vulkan-only", |c| c.refused_nulled(&[U], |a| unsafe {
            vkcuda_image_get_plane_cuda_array(c.env.image, 0, 4, a)
        }));
    for (label, plane, level) in BAD_PLANE_LEVEL {
        m.ran(SURF, label, move |c| {
            let mut s = Poison::<u64>::new();
            let r = unsafe {
                vkcuda_image_get_plane_surface_object(c.env.image, plane, level, s.ptr())
            };
            c.refused(r, &[I]);
            s.untouched();
        });
    }
    m.case(SURF, "no-storage-usage", |c| c.refused_untouched(&[UNSUP], |s| unsafe {
            vkcuda_image_get_plane_surface_object(c.env.image_no_storage, 0, 0, s)
        }));
    for (label, plane) in [("past-last:plane", 1), ("absurd:plane", u32::MAX)] {
        m.case(TEX, label, move |c| c.refused_untouched(&[I], |t| unsafe {
                vkcuda_image_create_plane_texture_object(c.env.image, plane, &texture_info(), t)
            }));
    }
    // The same bad descriptions as the whole image's texture object.
    crate::image::texture_cases(m, TEX, |im, t, out| unsafe {
        vkcuda_image_create_plane_texture_object(im, 0, t, out)
    });
    // -- colour descriptions: every field's bad values are refused before the
    // image is looked at (the environment's image is single-plane, which the last
    // rows check: colour is for multi-planar images).
    let color_muts = color_mutations();
    mutations(
        m,
        SET_COLOR,
        color_muts,
        |_| bt709(),
        |c, color, want| {
            let r = unsafe { vkcuda_image_set_video_color(c.env.image, color) };
            c.refused(r, want);
            Ran
        },
    );
    m.getter(GET_COLOR, ["image", "color"], |e| e.image, vkcuda_image_get_video_color);
    m.getter(CONVERSION, ["image", "info"], |e| e.image, vkcuda_image_get_ycbcr_conversion_info);
    m.ran(SET_COLOR, "single-plane:image", |c| {
        let r = unsafe { vkcuda_image_set_video_color(c.env.image, &bt709()) };
        c.refused(r, &[I]);
    });
    m.case(GET_COLOR, "single-plane:image", |c| c.refused_untouched(&[I], |out| unsafe { vkcuda_image_get_video_color(c.env.image, out) }));
    m.case(CONVERSION, "single-plane:image", |c| c.refused_untouched(&[I], |out| unsafe {
            vkcuda_image_get_ycbcr_conversion_info(c.env.image, out)
        }));

    // The environment's image is single-plane and optimal: not a video frame, so
    // even plane 0 has no pitched pointer (its CUDA view is an array).
    for (label, plane) in [
        ("not-a-frame:image", 0),
        ("past-last:plane", 1),
        ("absurd:plane", u32::MAX),
    ] {
        m.case(POINTER, label, move |c| c.refused_untouched(&[I], |p| unsafe {
                vkcuda_image_get_plane_pointer(c.env.image, plane, p)
            }));
    }
    for (label, plane) in [("past-last:plane", 1), ("absurd:plane", u32::MAX)] {
        m.case(EXPORT, label, move |c| c.refused_untouched(&[I], |fd| unsafe {
                vkcuda_image_export_plane_fd(c.env.image, plane, fd)
            }));
    }

    // -- pitched copies
    type Copy = unsafe extern "C" fn(
        *const vkcuda_image,
        *const vkcuda_pitched_planes,
        *mut CUstream_st,
    ) -> vkcuda_result;
    let copies: [(&'static str, Copy); 2] = named![
        vkcuda_image_cuda_copy_from_pitched;
        vkcuda_image_cuda_copy_to_pitched;
    ];
    for (f, copy) in copies {
        m.ran(f, "null-ok:stream", move |c| {
            // NULL is the legacy default stream: a real copy with CUDA.
            let p = pitched(c.env);
            let r = unsafe { copy(c.env.image, &p, ptr::null_mut()) };
            if c.env.cuda {
                c.succeeded(r);
                crate::support::cuda::Cuda::of(c.env.ctx).synchronize();
            } else {
                c.refused(r, &[U]);
            }
        });
        m.case(f, "foreign-stream:stream", move |c| {
            if c.env.cuda {
                return Skipped("tests/planar.rs covers DEVICE_MISMATCH for streams");
            }
            let p = pitched(c.env);
            c.refused(
                unsafe { copy(c.env.image, &p, 0x1000 as *mut CUstream_st) },
                &[U],
            );
            Ran
        });
        m.case(f, "past-allocation:planes->planes", move |c| {
            if !c.env.cuda {
                return Skipped("only CUDA knows where an allocation ends");
            }
            let mut p = pitched(c.env);
            // 16 rows of 64 bytes from 100 bytes before the end of the 64 KiB buffer.
            p.planes[0].device_pointer += 65536 - 100;
            c.refused(unsafe { copy(c.env.image, &p, ptr::null_mut()) }, &[I]);
            Ran
        });
        type P = vkcuda_pitched_planes;
        let muts: Vec<Mutation<P>> = muts![P;
            "unknown-bits:planes->flags" [I] => |_, p| p.flags = 1;
            "all-bits:planes->flags" [I] => |_, p| p.flags = u32::MAX;
            "zero:planes->plane_count" [I] => |_, p| p.plane_count = 0;
            "two-for-one:planes->plane_count" [I] => |_, p| { p.plane_count = 2; p.planes[1] = p.planes[0]; };
            "absurd:planes->plane_count" [I] => |_, p| p.plane_count = u32::MAX;
            "null-pointer:planes->planes" [N] says "device pointer of pitched plane 0" => |_, p| p.planes[0].device_pointer = 0;
            "short-pitch:planes->planes" [I] => |_, p| p.planes[0].pitch = 63;
            "zero-pitch:planes->planes" [I] => |_, p| p.planes[0].pitch = 0;
            "overflow:planes->planes" [I] => |_, p| p.planes[0].pitch = u64::MAX / 4;
            "unused-set:planes->planes" [I] => |_, p| p.planes[2].pitch = 64;
        ];
        mutations(m, f, muts, pitched, move |c, p, want| {
            c.refused(unsafe { copy(c.env.image, p, ptr::null_mut()) }, want);
            Ran
        });
    }

    // -- the wrap info's planes
    type IW = vkcuda_image_wrap_info;
    let muts: Vec<Mutation<IW>> = muts![IW;
        "second-plane:info->planes" [I] => |_, i| i.planes[1] = vkcuda_image_plane_memory { memory: i.memory, allocation_size: i.allocation_size, offset: 0 };
        "not-memory:info->planes" [I] => |_, i| i.planes[0] = vkcuda_image_plane_memory { memory: i.memory, allocation_size: i.allocation_size + 1, offset: 0 };
    ];
    crate::image::wrap_cases(m, muts);
    m.ran("vkcuda_image_wrap", "same-as-memory:info->planes", |c| {
        // planes[0] equal to memory/allocation_size is plane 0 given twice: fine.
        let mut i = c.env.image_wrap_info();
        i.planes[0] = vkcuda_image_plane_memory {
            memory: i.memory,
            allocation_size: i.allocation_size, offset: 0,
        };
        let mut im = ptr::null_mut();
        c.succeeded(unsafe { vkcuda_image_wrap(c.env.ctx, &i, &mut im) });
        unsafe { vkcuda_image_destroy(im) };
    });

    // -- multi-fd sharing
    for (label, count) in BAD_FD_COUNTS {
        m.ran(SEND, label, move |c| {
            let (a, b) = socketpair();
            let d = c.env.describe(Kind::Buffer);
            let fds = [c.env.buffer_fd(), c.env.buffer_fd()];
            let r = unsafe { vkcuda_share_send_fds(a, &d, fds.as_ptr(), count, &options()) };
            c.refused(r, &[I]);
            [a, b, fds[0], fds[1]].into_iter().for_each(close);
        });
    }
    m.ran(SEND, "closed:fds", |c| {
        let (a, b) = socketpair();
        let d = c.env.describe(Kind::Buffer);
        let fd = closed_fd();
        let r = unsafe { vkcuda_share_send_fds(a, &d, &fd, 1, &options()) };
        c.refused(r, &[I]);
        [a, b].into_iter().for_each(close);
    });
    send_cases(m, SEND, |s, d, fd, o| unsafe { vkcuda_share_send_fds(s, d, &fd, 1, o) });
    m.ran("vkcuda_share_send", "multi-fd-description", |c| {
        // A description that comes with 2 fds: vkcuda_share_send takes one.
        let (a, b) = socketpair();
        let d = nv12_description(c.env);
        let fd = c.env.buffer_fd();
        c.refused(unsafe { vkcuda_share_send(a, &d, fd, &options()) }, &[I]);
        [a, b, fd].into_iter().for_each(close);
    });
    m.ran(RECV, "zero:fd_capacity", |c| {
        let (a, b) = socketpair();
        receive_fds_refused(c, a, &options(), 0, &[I]);
        [a, b].into_iter().for_each(close);
    });
    m.ran(RECV, "too-small:fd_capacity", |c| {
        // A 2-fd description to a caller with room for 1: both fds closed.
        let (a, b) = socketpair();
        send_nv12(c.env, b);
        receive_fds_refused(c, a, &options(), 1, &[I]);
        [a, b].into_iter().for_each(close);
    });
    m.case("vkcuda_share_receive", "multi-fd-description", |c| {
        // vkcuda_share_receive returns one fd: a 2-fd description is refused, both closed.
        let (a, b) = socketpair();
        send_nv12(c.env, b);
        receive_refused(c, a, &options(), &[I]);
        [a, b].into_iter().for_each(close);
        Ran
    });
    socket_cases(m, RECV, true, |_| None, |c, socket, o, want| {
        receive_fds_refused(c, socket, o, 3, want)
    });
    let import_fails = |c: &Call,
                        ctx: *const vkcuda_context,
                        d: *const vkcuda_share_description,
                        fds: *const i32,
                        n: u32,
                        want: &[vkcuda_result]| {
        let mut out = poisoned();
        let r = unsafe { vkcuda_image_import_description_fds(ctx, d, fds, n, &mut out) };
        c.refused_made(r, want, out, vkcuda_image_destroy);
    };
    for (label, count) in BAD_FD_COUNTS {
        m.ran(IMPORT, label, move |c| {
            let d = c.env.describe(Kind::Image);
            let fds = [c.env.image_fd(), c.env.image_fd()];
            import_fails(c, c.env.ctx, &d, fds.as_ptr(), count, &[I]);
            for f in fds {
                assert!(fd_is_open(f), "a refused import leaves the fds alone");
                close(f);
            }
        });
    }
    m.ran(IMPORT, "same-fd-twice:fds", move |c| {
        let d = nv12_description(c.env);
        let fd = c.env.image_fd();
        let fds = [fd, fd];
        import_fails(c, c.env.ctx, &d, fds.as_ptr(), 2, &[I]);
        assert!(fd_is_open(fd));
        close(fd);
    });
    m.ran(IMPORT, "pipe:fds", move |c| {
        let d = c.env.describe(Kind::Image);
        let (r, w) = pipe();
        import_fails(c, c.env.ctx, &d, &r, 1, &[I, VKCUDA_ERROR_VULKAN]);
        assert!(fd_is_open(r));
        [r, w].into_iter().for_each(close);
    });
    m.ran(IMPORT, "other-device:description->device_uuid", move |c| {
        let mut d = c.env.describe(Kind::Image);
        d.device_uuid[0] ^= 0xFF;
        let fd = c.env.image_fd();
        import_fails(c, c.env.ctx, &d, &fd, 1, &[MISMATCH]);
        assert!(fd_is_open(fd));
        close(fd);
    });
    m.ran(IMPORT, "wrong-kind:description->kind", move |c| {
        let d = c.env.describe(Kind::Buffer);
        let fd = c.env.buffer_fd();
        import_fails(c, c.env.ctx, &d, &fd, 1, &[I]);
        close(fd);
    });
    description_cases(m, IMPORT, move |c, d, want| {
        let fd = c.env.image_fd();
        let device: &[vkcuda_result] = &[I, UNSUP, VKCUDA_ERROR_VULKAN, EXT];
        import_fails(
            c,
            c.env.ctx,
            d,
            &fd,
            1,
            if want.is_empty() { device } else { want },
        );
        assert!(fd_is_open(fd));
        close(fd);
    });
    m.case(
        "vkcuda_image_import_description",
        "multi-fd-description",
        |c| {
            let d = nv12_description(c.env);
            let fd = c.env.image_fd();
            let mut out = poisoned();
            let r = unsafe { vkcuda_image_import_description(c.env.ctx, &d, fd, &mut out) };
            c.refused_made(r, &[I], out, vkcuda_image_destroy);
            assert!(fd_is_open(fd));
            close(fd);
            Ran
        },
    );
    m.ran("vkcuda_image_export_fd", "multi-planar", |c| {
        // Without a multi-planar image on this device the refusal is checked in
        // tests/planar.rs; here: a single-plane image exports as before.
        let mut fd = -1;
        c.succeeded(unsafe { vkcuda_image_export_fd(c.env.image, &mut fd) });
        close(fd);
    });
}

/// vkcuda_share_receive_fds on `socket` with room for `capacity` fds is refused with
/// one of `want`; its outputs stay untouched.
fn receive_fds_refused(
    c: &Call,
    socket: i32,
    o: *const vkcuda_share_options,
    capacity: u32,
    want: &[vkcuda_result],
) {
    let mut d = Poison::<vkcuda_share_description>::new();
    let mut fds = Poison::<[i32; 3]>::new();
    let mut n = Poison::<u32>::new();
    let r = unsafe {
        vkcuda_share_receive_fds(socket, o, d.ptr(), fds.ptr().cast(), capacity, n.ptr())
    };
    c.refused(r, want);
    d.untouched();
    fds.untouched();
    n.untouched();
}

/// A possible description of a 64x64 NV12 image on the environment's device.
fn nv12_description(e: &Env) -> vkcuda_share_description {
    let mut d = e.describe(Kind::Image);
    let i = &mut d.image;
    i.description.format = vk::Format::G8_B8R8_2PLANE_420_UNORM.as_raw();
    i.description.extent = vk::Extent3D {
        width: 64,
        height: 64,
        depth: 1,
    };
    i.description.mip_levels = 1;
    i.description.array_layers = 1;
    i.description.flags = 0;
    i.description.usage =
        (vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED).as_raw();
    i.allocation_size = 65536;
    i.plane_allocation_sizes = [65536, 65536, 0];
    d
}

/// The NV12 description's record sent on `socket` with two fds (the environment's
/// buffer's, standing in for the planes'); ours closed.
fn send_nv12(e: &Env, socket: i32) {
    let fds = [e.buffer_fd(), e.buffer_fd()];
    assert_eq!(send_with_fds(socket, &record(&nv12_description(e)), &fds), 128);
    fds.into_iter().for_each(close);
}

/// Every field of a colour description with a bad value.
pub fn color_mutations() -> Vec<Mutation<vkcuda_video_color>> {
    type C = vkcuda_video_color;
    muts![C;
        "unknown-bits:color->flags" [I] => |_, c| c.flags = 1;
        "no-vulkan-model:color->matrix_coefficients" [UNSUP] => |_, c| c.matrix_coefficients = 10;
        "past-255:color->matrix_coefficients" [I] => |_, c| c.matrix_coefficients = 256;
        "past-255:color->transfer_characteristics" [I] => |_, c| c.transfer_characteristics = 300;
        "past-255:color->colour_primaries" [I] => |_, c| c.colour_primaries = u32::MAX;
        "not-bool:color->full_range" [I] => |_, c| c.full_range = 2;
        "enum-2:color->x_chroma_offset" [I] => |_, c| c.x_chroma_offset = 2;
        "negative:color->y_chroma_offset" [I] => |_, c| c.y_chroma_offset = -1;
    ]
}
