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
    m.nulls(nulls![
        CREATE, "context" => |_, o| unsafe { vkcuda_present_ring_create(ptr::null(), &create_info(), o.handle(out)) };
        CREATE, "info" => |e, o| unsafe { vkcuda_present_ring_create(e.ctx, ptr::null(), o.handle(out)) };
        CREATE, "ring" => |e, _| unsafe { vkcuda_present_ring_create(e.ctx, &create_info(), ptr::null_mut()) };
        TIMELINE, "ring" => |_, o| unsafe { vkcuda_present_ring_get_vk_timeline(ptr::null(), o.plain()) };
        TIMELINE, "timeline" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_vk_timeline(r.0, ptr::null_mut()) }
        };
        IMAGE, "ring" => |_, o| unsafe { vkcuda_present_ring_get_vk_image(ptr::null(), 0, o.plain()) };
        IMAGE, "image" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_vk_image(r.0, 0, ptr::null_mut()) }
        };
        SURFACE, "ring" => |_, o| unsafe { vkcuda_present_ring_get_surface_object(ptr::null(), 0, o.plain()) };
        SURFACE, "surface" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_surface_object(r.0, 0, ptr::null_mut()) }
        };
        PLANE, "ring" => |_, o| unsafe { vkcuda_present_ring_get_plane_pointer(ptr::null(), 0, 0, o.plain()) };
        PLANE, "pointer" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_get_plane_pointer(r.0, 0, 0, ptr::null_mut()) }
        };
        COLOR, "ring" => |_, _| unsafe { vkcuda_present_ring_set_video_color(ptr::null(), &video_color()) };
        COLOR, "color" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_set_video_color(r.0, ptr::null()) }
        };
        PREPARE, "ring" => |e, o| unsafe {
            vkcuda_present_ring_cmd_prepare(ptr::null(), e.cmd, e.vk.family, o.plain())
        };
        PREPARE, "command_buffer" => |e, o| {
            let r = Ring::new(e);
            unsafe {
                vkcuda_present_ring_cmd_prepare(r.0, vk::CommandBuffer::null(), e.vk.family, o.plain())
            }
        };
        PREPARE, "submit" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_cmd_prepare(r.0, e.cmd, e.vk.family, ptr::null_mut()) }
        };
        CUDA_BEGIN, "ring" => |_, o| unsafe {
            vkcuda_present_ring_cuda_begin(ptr::null(), ptr::null_mut(), o.plain())
        };
        CUDA_BEGIN, "write" => |e, _| {
            let r = Ring::new(e);
            unsafe { vkcuda_present_ring_cuda_begin(r.0, ptr::null_mut(), ptr::null_mut()) }
        };
        CUDA_END, "ring" => |_, _| unsafe { vkcuda_present_ring_cuda_end(ptr::null(), 1, ptr::null_mut()) };
        BEGIN, "ring" => |_, o| unsafe { vkcuda_present_ring_begin_write(ptr::null(), o.plain()) };
        BEGIN, "write" => |e, _| {
            let (r, _) = Ring::with_frame(e, true);
            unsafe { vkcuda_present_ring_begin_write(r.0, ptr::null_mut()) }
        };
        END, "ring" => |_, _| unsafe { vkcuda_present_ring_end_write(ptr::null(), 1) };
        UPLOAD, "ring" => |e, _| unsafe {
            let w = vkcuda_present_write::default();
            vkcuda_present_ring_cmd_upload(ptr::null(), e.cmd, e.vk.family, &w, vk::Buffer::null(), 0)
        };
        UPLOAD, "command_buffer" => |e, _| {
            let (r, w) = Ring::with_frame(e, false);
            let b = buffer_info(e.buffer).buffer;
            unsafe {
                vkcuda_present_ring_cmd_upload(r.0, vk::CommandBuffer::null(), e.vk.family, &w, b, 0)
            }
        };
        UPLOAD, "write" => |e, _| {
            let (r, _) = Ring::with_frame(e, false);
            let b = buffer_info(e.buffer).buffer;
            unsafe { vkcuda_present_ring_cmd_upload(r.0, e.cmd, e.vk.family, ptr::null(), b, 0) }
        };
        UPLOAD, "buffer" => |e, _| {
            let (r, w) = Ring::with_frame(e, false);
            unsafe {
                vkcuda_present_ring_cmd_upload(r.0, e.cmd, e.vk.family, &w, vk::Buffer::null(), 0)
            }
        };
        PRESENT, "ring" => |e, o| unsafe {
            vkcuda_present_ring_cmd_present(ptr::null(), e.cmd, e.vk.family, &target(e), o.plain())
        };
        PRESENT, "command_buffer" => |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = target(e);
            let cmd = vk::CommandBuffer::null();
            unsafe { vkcuda_present_ring_cmd_present(r.0, cmd, e.vk.family, &t, o.plain()) }
        };
        PRESENT, "target" => |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            unsafe {
                vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, ptr::null(), o.plain())
            }
        };
        PRESENT, "submit" => |e, _| {
            let (r, _) = Ring::with_frame(e, true);
            let t = target(e);
            unsafe {
                vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, ptr::null_mut())
            }
        };
        PRESENT, "target->device" => |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = vkcuda_present_target {
                device: vk::Device::null(),
                ..target(e)
            };
            unsafe { vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, o.plain()) }
        };
        PRESENT, "target->image" => |e, o| {
            let (r, _) = Ring::with_frame(e, true);
            let t = vkcuda_present_target {
                image: vk::Image::null(),
                ..target(e)
            };
            unsafe { vkcuda_present_ring_cmd_present(r.0, e.cmd, e.vk.family, &t, o.plain()) }
        };
    ]);
    m.ran("vkcuda_present_ring_destroy", "null-ok:ring", |_| {
        unsafe { vkcuda_present_ring_destroy(ptr::null_mut()) };
    });

    // Create: every field of the info.
    type CI = vkcuda_present_ring_create_info;
    let muts: Vec<Mutation<CI>> = muts![CI;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 1;
        "integer:info->format" [UNSUP] says "cannot be presented" => |_, i| i.format = vk::Format::R32_UINT.as_raw();
        "not-a-format:info->format" [UNSUP] => |_, i| i.format = -7;
        "zero:info->width" [I] => |_, i| i.width = 0;
        "zero:info->height" [I] => |_, i| i.height = 0;
        "zero:info->image_count" [I] says "1 to 16 images, not 0" => |_, i| i.image_count = 0;
        "17:info->image_count" [I] => |_, i| i.image_count = 17;
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
    let color_muts = crate::planar::color_mutations();
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
    let muts: Vec<Mutation<T>> = muts![T;
        "other-device:target->device" [MISMATCH] says "belongs to VkDevice" => |e, t| t.device = e.engine.device.handle();
        "integer:target->format" [UNSUP] says "cannot be blitted into a VK_FORMAT_R8G8B8A8_UINT image" => |_, t| t.format = vk::Format::R8G8B8A8_UINT.as_raw();
        "depth:target->format" [UNSUP] => |_, t| t.format = vk::Format::D32_SFLOAT.as_raw();
        "not-a-format:target->format" [UNSUP] => |_, t| t.format = -3;
        "depth:target->old_layout" [I] => |_, t| t.old_layout = vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL.as_raw();
        "not-a-layout:target->new_layout" [I] => |_, t| t.new_layout = 12345;
        "preinitialized:target->new_layout" [I] => |_, t| t.new_layout = vk::ImageLayout::PREINITIALIZED.as_raw();
        "cubic:target->filter" [I] => |_, t| t.filter = vk::Filter::CUBIC_EXT.as_raw();
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
