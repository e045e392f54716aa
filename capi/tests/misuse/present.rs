//! The present group: the ring of shared images blitted onto the engine's
//! swapchain. Each case makes its own ring (and, where the call needs one, a
//! prepared ring with a frame written: `begin_write` + `end_write`, nothing
//! submitted) and destroys it before it returns, so the runner's live-object check
//! sees every refusal leave nothing behind. Nothing is submitted: the refusals are
//! checked before anything is recorded.

use std::ptr;

use ash::vk;

use crate::env::Env;
use crate::matrix::*;
use crate::nulls::null;
use crate::support::*;

const CREATE: &str = "vkcuda_present_ring_create";
const TIMELINE: &str = "vkcuda_present_ring_get_vk_timeline";
const IMAGE: &str = "vkcuda_present_ring_get_vk_image";
const SURFACE: &str = "vkcuda_present_ring_get_surface_object";
const PREPARE: &str = "vkcuda_present_ring_cmd_prepare";
const CUDA_BEGIN: &str = "vkcuda_present_ring_cuda_begin";
const CUDA_END: &str = "vkcuda_present_ring_cuda_end";
const BEGIN: &str = "vkcuda_present_ring_begin_write";
const END: &str = "vkcuda_present_ring_end_write";
const UPLOAD: &str = "vkcuda_present_ring_cmd_upload";
const PRESENT: &str = "vkcuda_present_ring_cmd_present";
const PLANE: &str = "vkcuda_present_ring_get_plane_pointer";
const COLOR: &str = "vkcuda_present_ring_set_video_color";

const STATE: vkcuda_result = VKCUDA_ERROR_INVALID_STATE;

/// One change to an input struct.
type Change<T> = fn(&mut T);

fn create_info() -> vkcuda_present_ring_create_info {
    vkcuda_present_ring_create_info {
        flags: 0,
        format: vk::Format::R8G8B8A8_UNORM.as_raw(),
        width: 16,
        height: 8,
        image_count: 2,
    }
}

/// A ring of 2, destroyed when dropped.
struct Ring(*mut vkcuda_present_ring);

impl Ring {
    fn new(e: &Env) -> Ring {
        let mut r = ptr::null_mut();
        ok(unsafe { vkcuda_present_ring_create(e.ctx, &create_info(), &mut r) });
        Ring(r)
    }

    /// Prepared (recorded into a command buffer of its own, never submitted: the
    /// environment's would be invalid for the cases after this one once the ring's
    /// images are destroyed) with frame 1 begun and, if `end`, ended: what
    /// cmd_present and cmd_upload need before they look at their other arguments.
    /// The command buffer goes with the environment's pool.
    fn with_frame(e: &Env, end: bool) -> (Ring, vkcuda_present_write) {
        let r = Ring::new(e);
        let mut s = Poison::<vkcuda_present_submit>::new();
        let cmd = e.vk.command_buffer();
        ok(unsafe { vkcuda_present_ring_cmd_prepare(r.0, cmd, e.vk.family, s.ptr()) });
        let mut w = vkcuda_present_write::default();
        ok(unsafe { vkcuda_present_ring_begin_write(r.0, &mut w) });
        if end {
            ok(unsafe { vkcuda_present_ring_end_write(r.0, w.frame) });
        }
        (r, w)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        unsafe { vkcuda_present_ring_destroy(self.0) };
    }
}

/// BT.709, narrow range, chroma cosited: a valid colour description.
fn video_color() -> vkcuda_video_color {
    vkcuda_video_color {
        y_chroma_offset: 0,
        ..bt709()
    }
}

/// A target of the environment's device: its image (16x16 RGBA8, transfer usage)
/// as an engine's swapchain image would be given.
fn target(e: &Env) -> vkcuda_present_target {
    let mut image = vk::Image::null();
    ok(unsafe { vkcuda_image_get_vk_image(e.image, &mut image) });
    vkcuda_present_target {
        device: e.vk.device.handle(),
        image,
        format: vk::Format::B8G8R8A8_UNORM.as_raw(),
        width: 16,
        height: 16,
        old_layout: vk::ImageLayout::UNDEFINED.as_raw(),
        new_layout: vk::ImageLayout::TRANSFER_SRC_OPTIMAL.as_raw(),
        acquired: vk::Semaphore::null(),
        rendered: vk::Semaphore::null(),
        filter: vk::Filter::NEAREST.as_raw(),
    }
}

pub fn cases(m: &mut Matrix) {
    let out = vkcuda_present_ring_destroy;
    m.nulls(vec![
        null(CREATE, "context", move |_, o| unsafe {
            vkcuda_present_ring_create(ptr::null(), &create_info(), o.handle(out))
        }),
        null(CREATE, "info", move |e, o| unsafe {
            vkcuda_present_ring_create(e.ctx, ptr::null(), o.handle(out))
        }),
        null(CREATE, "ring", |e, _| unsafe {
            vkcuda_present_ring_create(e.ctx, &create_info(), ptr::null_mut())
        }),
        null(TIMELINE, "ring", |_, o| unsafe {
            vkcuda_present_ring_get_vk_timeline(ptr::null(), o.plain())
        }),
        null(TIMELINE, "timeline", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_vk_timeline(r.0, ptr::null_mut()) }
        }),
        null(IMAGE, "ring", |_, o| unsafe {
            vkcuda_present_ring_get_vk_image(ptr::null(), 0, o.plain())
        }),
        null(IMAGE, "image", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_vk_image(r.0, 0, ptr::null_mut()) }
        }),
        null(SURFACE, "ring", |_, o| unsafe {
            vkcuda_present_ring_get_surface_object(ptr::null(), 0, o.plain())
        }),
        null(SURFACE, "surface", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_surface_object(r.0, 0, ptr::null_mut()) }
        }),
        null(PLANE, "ring", |_, o| unsafe {
            vkcuda_present_ring_get_plane_pointer(ptr::null(), 0, 0, o.plain())
        }),
        null(PLANE, "pointer", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_plane_pointer(r.0, 0, 0, ptr::null_mut()) }
        }),
        null(COLOR, "ring", |_, _| unsafe {
            vkcuda_present_ring_set_video_color(ptr::null(), &video_color())
        }),
        null(COLOR, "color", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_set_video_color(r.0, ptr::null()) }
        }),
        null(PREPARE, "ring", |e, o| unsafe {
            vkcuda_present_ring_cmd_prepare(ptr::null(), e.cmd, e.vk.family, o.plain())
        }),
        null(PREPARE, "command_buffer", |e, o| {
            let r = Ring::new(e);
            unsafe {
                vkcuda_present_ring_cmd_prepare(r.0, vk::CommandBuffer::null(), e.vk.family, o.plain())
            }
        }),
        null(PREPARE, "submit", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_cmd_prepare(r.0, e.cmd, e.vk.family, ptr::null_mut()) }
        }),
        null(CUDA_BEGIN, "ring", |_, o| unsafe {
            vkcuda_present_ring_cuda_begin(ptr::null(), ptr::null_mut(), o.plain())
        }),
        null(CUDA_BEGIN, "write", |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_cuda_begin(r.0, ptr::null_mut(), ptr::null_mut()) }
        }),
        null(CUDA_END, "ring", |_, _| unsafe {
            vkcuda_present_ring_cuda_end(ptr::null(), 1, ptr::null_mut())
        }),
        null(BEGIN, "ring", |_, o| unsafe {
            vkcuda_present_ring_begin_write(ptr::null(), o.plain())
        }),
        null(BEGIN, "write", |e, _| {
            let (r, _) = Ring::with_frame(e, true);
            unsafe { vkcuda_present_ring_begin_write(r.0, ptr::null_mut()) }
        }),
        null(END, "ring", |_, _| unsafe {
            vkcuda_present_ring_end_write(ptr::null(), 1)
        }),
        null(UPLOAD, "ring", |e, _| unsafe {
            let w = vkcuda_present_write::default();
            vkcuda_present_ring_cmd_upload(ptr::null(), e.cmd, e.vk.family, &w, vk::Buffer::null(), 0)
        }),
        null(UPLOAD, "command_buffer", |e, _| {
            let (r, w) = Ring::with_frame(e, false);
            let b = buffer_info(e.buffer).buffer;
            unsafe {
                vkcuda_present_ring_cmd_upload(r.0, vk::CommandBuffer::null(), e.vk.family, &w, b, 0)
            }
        }),
        null(UPLOAD, "write", |e, _| {
            let (r, _) = Ring::with_frame(e, false);
            let b = buffer_info(e.buffer).buffer;
            unsafe { vkcuda_present_ring_cmd_upload(r.0, e.cmd, e.vk.family, ptr::null(), b, 0) }
        }),
        null(UPLOAD, "buffer", |e, _| {
            let (r, w) = Ring::with_frame(e, false);
            unsafe {
                vkcuda_present_ring_cmd_upload(r.0, e.cmd, e.vk.family, &w, vk::Buffer::null(), 0)
            }
        }),
        null(PRESENT, "ring", |e, o| unsafe {
            vkcuda_present_ring_cmd_present(ptr::null(), e.cmd, e.vk.family, &target(e), o.plain())
        }),
        null(PRESENT, "command_buffer", |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = target(e);
            let cmd = vk::CommandBuffer::null();
            unsafe { vkcuda_present_ring_cmd_present(r.0, cmd, e.vk.family, &t, o.plain()) }
        }),
        null(PRESENT, "target", |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            unsafe {
                vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, ptr::null(), o.plain())
            }
        }),
        null(PRESENT, "submit", |e, _| {
            let (r, _) = Ring::with_frame(e, true);
            let t = target(e);
            unsafe {
                vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, ptr::null_mut())
            }
        }),
        null(PRESENT, "target->device", |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = vkcuda_present_target {
                device: vk::Device::null(),
                ..target(e)
            };
            unsafe { vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, o.plain()) }
        }),
        null(PRESENT, "target->image", |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = vkcuda_present_target {
                image: vk::Image::null(),
                ..target(e)
            };
            unsafe { vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, o.plain()) }
        }),
    ]);
    m.ran("vkcuda_present_ring_destroy", "null-ok:ring", |_| {
        unsafe { vkcuda_present_ring_destroy(ptr::null_mut()) };
    });

    // Create: every field of the info.
    type CI = vkcuda_present_ring_create_info;
    let muts: Vec<Mutation<CI>> = vec![
        mutation("unknown-bits:info->flags", &[I], |_, i: &mut CI| i.flags = 1),
        says(
            "cannot be presented",
            mutation("integer:info->format", &[UNSUP], |_, i: &mut CI| {
                i.format = vk::Format::R32_UINT.as_raw()
            }),
        ),
        mutation("not-a-format:info->format", &[UNSUP], |_, i: &mut CI| {
            i.format = -7
        }),
        mutation("zero:info->width", &[I], |_, i: &mut CI| i.width = 0),
        mutation("zero:info->height", &[I], |_, i: &mut CI| i.height = 0),
        says(
            "1 to 16 images, not 0",
            mutation("zero:info->image_count", &[I], |_, i: &mut CI| {
                i.image_count = 0
            }),
        ),
        mutation("17:info->image_count", &[I], |_, i: &mut CI| {
            i.image_count = 17
        }),
    ];
    mutations(m, CREATE, muts, |_| create_info(), |c, i, want| {
        let mut r = poisoned();
        let res = unsafe { vkcuda_present_ring_create(c.env.ctx, i, &mut r) };
        c.refused_made(res, want, r, vkcuda_present_ring_destroy);
        Ran
    });
    m.ran(CREATE, "too-large:info->width", |c| {
        let i = CI {
            width: 1 << 30,
            ..create_info()
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_present_ring_create(c.env.ctx, &i, &mut r) };
        c.refused_made(res, &[I, UNSUP], r, vkcuda_present_ring_destroy);
    });

    // Slots past the end.
    m.case(IMAGE, "past-end:image_index", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vk::Image>(&[I], |o| unsafe {
            vkcuda_present_ring_get_vk_image(r.0, 2, o)
        })
    });
    m.case(SURFACE, "past-end:image_index", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<u64>(&[I], |o| unsafe {
            vkcuda_present_ring_get_surface_object(r.0, 2, o)
        })
    });

    // Video frames' calls on a ring of RGBA images (Debian 12's lavapipe makes no
    // video frame; capi/tests/planes.rs covers a video ring where the device does).
    m.case(PLANE, "past-end:image_index", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vkcuda_image_plane_pointer>(&[I], |o| unsafe {
            vkcuda_present_ring_get_plane_pointer(r.0, 2, 0, o)
        })
    });
    m.case(PLANE, "not-video:ring", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vkcuda_image_plane_pointer>(&[I], |o| unsafe {
            vkcuda_present_ring_get_plane_pointer(r.0, 0, 0, o)
        })
    });
    m.any(
        PLANE,
        "plane",
        "a plane past the format's is refused by vkcuda_image_get_plane_pointer's check \
         (capi/tests/misuse/planar.rs); only a video ring has planes to name",
    );
    // A colour description is checked before the ring is looked at: every bad
    // field is refused on a ring of RGBA images too.
    type VC = vkcuda_video_color;
    let color_muts: Vec<Mutation<VC>> = vec![
        mutation("unknown-bits:color->flags", &[I], |_, c: &mut VC| c.flags = 1),
        mutation("no-vulkan-model:color->matrix_coefficients", &[UNSUP], |_, c: &mut VC| {
            c.matrix_coefficients = 10
        }),
        mutation("past-255:color->matrix_coefficients", &[I], |_, c: &mut VC| {
            c.matrix_coefficients = 256
        }),
        mutation("past-255:color->transfer_characteristics", &[I], |_, c: &mut VC| {
            c.transfer_characteristics = 300
        }),
        mutation("past-255:color->colour_primaries", &[I], |_, c: &mut VC| {
            c.colour_primaries = u32::MAX
        }),
        mutation("not-bool:color->full_range", &[I], |_, c: &mut VC| c.full_range = 2),
        mutation("enum-2:color->x_chroma_offset", &[I], |_, c: &mut VC| {
            c.x_chroma_offset = 2
        }),
        mutation("negative:color->y_chroma_offset", &[I], |_, c: &mut VC| {
            c.y_chroma_offset = -1
        }),
    ];
    mutations(m, COLOR, color_muts, |_| video_color(), |c, color, want| {
        let r = Ring::new(c.env);
        c.refused(unsafe { vkcuda_present_ring_set_video_color(r.0, color) }, want);
        Ran
    });
    m.ran(COLOR, "not-video:ring", |c| {
        let r = Ring::new(c.env);
        c.refused(
            unsafe { vkcuda_present_ring_set_video_color(r.0, &video_color()) },
            &[I],
        );
    });

    // Queue families the device has not.
    m.case(PREPARE, "bad:queue_family_index", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vkcuda_present_submit>(&[I], |o| unsafe {
            vkcuda_present_ring_cmd_prepare(r.0, c.env.cmd, 99, o)
        })
    });
    m.case(PREPARE, "twice", |c| {
        let (r, _) = Ring::with_frame(c.env, false);
        c.refused_untouched::<vkcuda_present_submit>(&[STATE], |o| unsafe {
            vkcuda_present_ring_cmd_prepare(r.0, c.env.cmd, c.env.vk.family, o)
        })
    });

    // The CUDA side: in a Vulkan-only context CUDA_UNAVAILABLE; with CUDA the ring
    // is refused for its state (not prepared, no frame begun), before the stream.
    m.case(CUDA_BEGIN, "null-ok:stream", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vkcuda_present_write>(&[U, STATE], |o| unsafe {
            vkcuda_present_ring_cuda_begin(r.0, ptr::null_mut(), o)
        })
    });
    m.ran(CUDA_END, "not-begun:frame", |c| {
        let r = Ring::new(c.env);
        c.refused(
            unsafe { vkcuda_present_ring_cuda_end(r.0, 1, ptr::null_mut()) },
            &[U, STATE],
        );
    });
    m.ran(CUDA_END, "null-ok:stream", |c| {
        let (r, w) = Ring::with_frame(c.env, true);
        c.refused(
            unsafe { vkcuda_present_ring_cuda_end(r.0, w.frame, ptr::null_mut()) },
            &[U, STATE],
        );
    });

    // The producer's book-keeping.
    m.case(BEGIN, "not-prepared", |c| {
        let r = Ring::new(c.env);
        c.refused_untouched::<vkcuda_present_write>(&[STATE], |o| unsafe {
            vkcuda_present_ring_begin_write(r.0, o)
        })
    });
    m.case(BEGIN, "frame-open", |c| {
        let (r, _) = Ring::with_frame(c.env, false);
        c.refused_untouched::<vkcuda_present_write>(&[STATE], |o| unsafe {
            vkcuda_present_ring_begin_write(r.0, o)
        })
    });
    m.ran(END, "other:frame", |c| {
        let (r, w) = Ring::with_frame(c.env, false);
        c.refused(
            unsafe { vkcuda_present_ring_end_write(r.0, w.frame + 1) },
            &[STATE],
        );
    });

    // Upload: the write must be the one begin_write handed out.
    m.ran(UPLOAD, "bad:queue_family_index", |c| {
        let (r, w) = Ring::with_frame(c.env, false);
        let b = buffer_info(c.env.buffer).buffer;
        c.refused(
            unsafe { vkcuda_present_ring_cmd_upload(r.0, c.env.cmd, 99, &w, b, 0) },
            &[I],
        );
    });
    type W = vkcuda_present_write;
    let fields: [(&str, Change<W>, vkcuda_result); 6] = [
        ("other:write->frame", |w| w.frame += 1, STATE),
        ("other:write->image_index", |w| w.image_index = 1, I),
        ("nonzero:write->reserved", |w| w.reserved = 1, I),
        ("other:write->free_value", |w| w.free_value += 2, I),
        ("other:write->order_value", |w| w.order_value += 2, I),
        ("other:write->signal_value", |w| w.signal_value += 2, I),
    ];
    for (label, change, want) in fields {
        m.ran(UPLOAD, label, move |c| {
            let (r, mut w) = Ring::with_frame(c.env, false);
            change(&mut w);
            let b = buffer_info(c.env.buffer).buffer;
            c.refused(
                unsafe { vkcuda_present_ring_cmd_upload(r.0, c.env.cmd, c.env.vk.family, &w, b, 0) },
                &[want],
            );
        });
    }
    m.any(
        UPLOAD,
        "offset",
        "the buffer is the engine's: the library cannot know its size (documented: it \
         holds the image's bytes at offset)",
    );

    // Present: nothing to present, then every field of the target.
    m.case(PRESENT, "not-released", |c| {
        let (r, _) = Ring::with_frame(c.env, false);
        let t = target(c.env);
        c.refused_untouched::<vkcuda_present_submit>(&[STATE], |o| unsafe {
            vkcuda_present_ring_cmd_present(r.0, c.env.cmd, c.env.vk.family, &t, o)
        })
    });
    m.case(PRESENT, "bad:queue_family_index", |c| {
        let (r, _) = Ring::with_frame(c.env, true);
        let t = target(c.env);
        c.refused_untouched::<vkcuda_present_submit>(&[I], |o| unsafe {
            vkcuda_present_ring_cmd_present(r.0, c.env.cmd, 99, &t, o)
        })
    });
    type T = vkcuda_present_target;
    let muts: Vec<Mutation<T>> = vec![
        says(
            "belongs to VkDevice",
            mutation("other-device:target->device", &[MISMATCH], |e, t: &mut T| {
                t.device = e.engine.device.handle()
            }),
        ),
        says(
            "cannot be blitted into a VK_FORMAT_R8G8B8A8_UINT image",
            mutation("integer:target->format", &[UNSUP], |_, t: &mut T| {
                t.format = vk::Format::R8G8B8A8_UINT.as_raw()
            }),
        ),
        mutation("depth:target->format", &[UNSUP], |_, t: &mut T| {
            t.format = vk::Format::D32_SFLOAT.as_raw()
        }),
        mutation("not-a-format:target->format", &[UNSUP], |_, t: &mut T| {
            t.format = -3
        }),
        mutation("depth:target->old_layout", &[I], |_, t: &mut T| {
            t.old_layout = vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL.as_raw()
        }),
        mutation("not-a-layout:target->new_layout", &[I], |_, t: &mut T| {
            t.new_layout = 12345
        }),
        mutation("preinitialized:target->new_layout", &[I], |_, t: &mut T| {
            t.new_layout = vk::ImageLayout::PREINITIALIZED.as_raw()
        }),
        mutation("cubic:target->filter", &[I], |_, t: &mut T| {
            t.filter = vk::Filter::CUBIC_EXT.as_raw()
        }),
    ];
    mutations(m, PRESENT, muts, target, |c, t, want| {
        let (r, _) = Ring::with_frame(c.env, true);
        c.refused_untouched::<vkcuda_present_submit>(want, |o| unsafe {
            vkcuda_present_ring_cmd_present(r.0, c.env.cmd, c.env.vk.family, t, o)
        })
    });
    let dims: [(&str, Change<T>); 2] = [
        ("zero-records-nothing:target->width", |t| t.width = 0),
        ("zero-records-nothing:target->height", |t| t.height = 0),
    ];
    for (label, change) in dims {
        m.ran(PRESENT, label, move |c| {
            let (r, _) = Ring::with_frame(c.env, true);
            let mut t = target(c.env);
            change(&mut t);
            let mut s = Poison::<vkcuda_present_submit>::new();
            let res =
                unsafe { vkcuda_present_ring_cmd_present(r.0, c.env.cmd, c.env.vk.family, &t, s.ptr()) };
            c.succeeded(res);
            assert_eq!(unsafe { (*s.ptr()).recorded }, 0, "{label}: a zero extent records nothing");
        });
    }
    for (path, why) in [
        (
            "target->acquired",
            "the engine's semaphore, passed through to the submit's waits (or none)",
        ),
        (
            "target->rendered",
            "the engine's semaphore, passed through to the submit's signals (or none)",
        ),
    ] {
        m.any(PRESENT, path, why);
    }
}
