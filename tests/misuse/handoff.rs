//! The handoff barriers: a buffer or an image released to CUDA and acquired back,
//! recorded into the environment's command buffer.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::matrix::*;
use crate::nulls::null;

type BufferBarrier = unsafe extern "C" fn(
    *const vkcuda_buffer,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
) -> vkcuda_result;

type ImageBarrier = unsafe extern "C" fn(
    *const vkcuda_image,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
    VkImageLayout,
) -> vkcuda_result;

pub fn cases(m: &mut Matrix) {
    let buffers: [(&'static str, BufferBarrier); 2] = [
        (
            "vkcuda_buffer_cmd_release_to_cuda",
            vkcuda_buffer_cmd_release_to_cuda,
        ),
        (
            "vkcuda_buffer_cmd_acquire_from_cuda",
            vkcuda_buffer_cmd_acquire_from_cuda,
        ),
    ];
    for (f, call) in buffers {
        m.nulls(vec![
            null(f, "buffer", move |e, _| unsafe {
                call(ptr::null(), e.cmd, &handoff_info(0))
            }),
            null(f, "command_buffer", move |e, _| unsafe {
                call(e.buffer, vk::CommandBuffer::null(), &handoff_info(0))
            }),
            null(f, "info", move |e, _| unsafe {
                call(e.buffer, e.cmd, ptr::null())
            }),
        ]);
        handoff_cases(m, f, move |c, h, want| {
            c.refused(unsafe { call(c.env.buffer, c.env.cmd, h) }, want);
        });
    }

    let general = vk::ImageLayout::GENERAL.as_raw();
    let images: [(&'static str, ImageBarrier, &'static str, bool); 2] = [
        (
            "vkcuda_image_cmd_release_to_cuda",
            vkcuda_image_cmd_release_to_cuda,
            "old_layout",
            true,
        ),
        (
            "vkcuda_image_cmd_acquire_from_cuda",
            vkcuda_image_cmd_acquire_from_cuda,
            "new_layout",
            false,
        ),
    ];
    for (f, call, layout, release) in images {
        m.nulls(vec![
            null(f, "image", move |e, _| unsafe {
                call(ptr::null(), e.cmd, &handoff_info(0), general)
            }),
            null(f, "command_buffer", move |e, _| unsafe {
                call(
                    e.image,
                    vk::CommandBuffer::null(),
                    &handoff_info(0),
                    general,
                )
            }),
            null(f, "info", move |e, _| unsafe {
                call(e.image, e.cmd, ptr::null(), general)
            }),
        ]);
        handoff_cases(m, f, move |c, h, want| {
            c.refused(unsafe { call(c.env.image, c.env.cmd, h, general) }, want);
        });
        let mut bad = vec![
            ("not-a-layout", 12345),
            ("negative", -1),
            ("max-enum", 0x7FFF_FFFF),
            (
                "depth",
                vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL.as_raw(),
            ),
            ("present", vk::ImageLayout::PRESENT_SRC_KHR.as_raw()),
            ("preinitialized", vk::ImageLayout::PREINITIALIZED.as_raw()),
        ];
        if !release {
            bad.push(("undefined", vk::ImageLayout::UNDEFINED.as_raw()));
        }
        for (what, l) in bad {
            m.case(f, &format!("{what}:{layout}"), move |c| {
                c.refused(
                    unsafe { call(c.env.image, c.env.cmd, &handoff_info(0), l) },
                    &[I],
                );
                Ran
            });
        }
    }
    batch_cases(m);
}

/// The `vkcuda_handoff_info` cases of one barrier function.
fn handoff_cases(
    m: &mut Matrix,
    f: &'static str,
    call: impl Fn(&Call, &vkcuda_handoff_info, &[vkcuda_result]) + 'static,
) {
    type H = vkcuda_handoff_info;
    let muts: Vec<Mutation<H>> = vec![
        mutation("unknown-bits:info->flags", &[I], |_, h: &mut H| h.flags = 1),
        mutation("all-bits:info->flags", &[I], |_, h: &mut H| {
            h.flags = u32::MAX
        }),
    ];
    mutations(
        m,
        f,
        muts,
        |_| handoff_info(0),
        move |c, h, want| {
            call(c, h, want);
            Ran
        },
    );
    let why = "recorded into the engine's barrier as given; Vulkan's valid usage (checked by the \
               validation layer in CTest's rust_misuse_gpu_vvl) decides";
    m.any(f, "info->queue_family_index", why);
    m.any(f, "info->stage_mask", why);
    m.any(f, "info->access_mask", why);
}

type Batch = unsafe extern "C" fn(
    u32,
    *const vkcuda_handoff_resource,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
) -> vkcuda_result;

/// The batched barriers: one resource list, one barrier.
pub fn batch_cases(m: &mut Matrix) {
    let batches: [(&'static str, Batch, bool); 2] = [
        (
            "vkcuda_handoff_cmd_release_to_cuda",
            vkcuda_handoff_cmd_release_to_cuda,
            true,
        ),
        (
            "vkcuda_handoff_cmd_acquire_from_cuda",
            vkcuda_handoff_cmd_acquire_from_cuda,
            false,
        ),
    ];
    let general = vk::ImageLayout::GENERAL.as_raw();
    for (f, call, release) in batches {
        let one = |e: &crate::env::Env| vkcuda_handoff_resource {
            buffer: e.buffer,
            image: ptr::null(),
            layout: 0,
        };
        m.nulls(vec![
            null(f, "resources", move |e, _| unsafe {
                call(1, ptr::null(), e.cmd, &handoff_info(0))
            }),
            null(f, "command_buffer", move |e, _| unsafe {
                call(1, &one(e), vk::CommandBuffer::null(), &handoff_info(0))
            }),
            null(f, "info", move |e, _| unsafe { call(1, &one(e), e.cmd, ptr::null()) }),
        ]);
        handoff_cases(m, f, move |c, h, want| {
            c.refused(unsafe { call(1, &one(c.env), c.env.cmd, h) }, want);
        });
        m.case(f, "zero:resource_count", move |c| {
            c.succeeded(unsafe { call(0, ptr::null(), c.env.cmd, &handoff_info(0)) });
            Ran
        });
        type R = vkcuda_handoff_resource;
        type Make = fn(&crate::env::Env) -> R;
        let bad: Vec<(&str, vkcuda_result, Make)> = vec![
            ("neither:resources->buffer", N, |_| R {
                buffer: ptr::null(),
                image: ptr::null(),
                layout: 0,
            }),
            ("both:resources->image", I, |e| R {
                buffer: e.buffer,
                image: e.image,
                layout: vk::ImageLayout::GENERAL.as_raw(),
            }),
            ("wrong-kind:resources->buffer", I, |e| R {
                buffer: e.image.cast(),
                image: ptr::null(),
                layout: 0,
            }),
            ("nonzero:resources->layout", I, |e| R {
                buffer: e.buffer,
                image: ptr::null(),
                layout: vk::ImageLayout::GENERAL.as_raw(),
            }),
            ("not-a-layout:resources->layout", I, |e| R {
                buffer: ptr::null(),
                image: e.image,
                layout: 12345,
            }),
        ];
        for (label, want, make) in bad {
            m.case(f, label, move |c| {
                let r = make(c.env);
                c.refused(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) }, &[want]);
                Ran
            });
        }
        if !release {
            m.case(f, "undefined:resources->layout", move |c| {
                let r = R {
                    buffer: ptr::null(),
                    image: c.env.image,
                    layout: vk::ImageLayout::UNDEFINED.as_raw(),
                };
                c.refused(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) }, &[I]);
                Ran
            });
        }
        // NULL is valid for one of the two when the other is set.
        m.case(f, "null-ok:resources->buffer", move |c| {
            let r = R {
                buffer: ptr::null(),
                image: c.env.image,
                layout: general,
            };
            c.succeeded(unsafe { call(1, &r, c.env.cmd, &handoff_info(0)) });
            Ran
        });
        m.case(f, "null-ok:resources->image", move |c| {
            let list = [one(c.env), one(c.env)];
            c.succeeded(unsafe { call(2, list.as_ptr(), c.env.cmd, &handoff_info(0)) });
            Ran
        });
    }
}
