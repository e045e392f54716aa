//! The batch group: create, the getters, a buffer over an element, export, the
//! handoffs and the tensor. The environment's batches are 3 images of 8x8 RGBA8
//! and 3 buffers of 1000 bytes.

use std::ffi::c_void;
use std::ptr;

use ash::vk;

use crate::env::batch_create_info;
use crate::handoff::handoff_cases;
use crate::matrix::*;
use crate::support::*;

const CREATE: &str = "vkcuda_batch_create";
const ELEMENT: &str = "vkcuda_batch_get_element";
const BUFFER: &str = "vkcuda_batch_get_buffer";
const DLPACK: &str = "vkcuda_batch_export_dlpack";

type Handoff = unsafe extern "C" fn(
    *const vkcuda_batch,
    VkCommandBuffer,
    *const vkcuda_handoff_info,
    VkImageLayout,
) -> vkcuda_result;

fn images() -> vkcuda_batch_create_info {
    batch_create_info(VKCUDA_BATCH_KIND_IMAGES)
}

/// The dlpack call, refused with `want` (a tensor made anyway is deleted and fails).
fn dlpack_refused(c: &Call, batch: *const vkcuda_batch, info: *const vkcuda_batch_dlpack_info, want: &[vkcuda_result]) {
    let mut t: *mut c_void = poisoned();
    let r = unsafe { vkcuda_batch_export_dlpack(batch, info, &mut t) };
    if r == VKCUDA_SUCCESS {
        let t = t.cast::<dlpack_rs::ffi::DLManagedTensorVersioned>();
        unsafe { ((*t).deleter.unwrap())(t) };
    }
    c.refused(r, want);
    assert!(t.is_null(), "the tensor output was not set to NULL");
}

/// A valid call: a tensor on a CUDA-paired context (deleted here), otherwise
/// CUDA_UNAVAILABLE after every argument was checked.
fn dlpack_valid(c: &Call, info: *const vkcuda_batch_dlpack_info) {
    let mut t: *mut c_void = poisoned();
    let r = unsafe { vkcuda_batch_export_dlpack(c.env.batch, info, &mut t) };
    if c.env.cuda {
        c.succeeded(r);
        let t = t.cast::<dlpack_rs::ffi::DLManagedTensorVersioned>();
        unsafe { ((*t).deleter.unwrap())(t) };
    } else {
        c.refused(r, &[U]);
        assert!(t.is_null(), "the tensor output was not set to NULL");
    }
}

fn dlpack_info() -> vkcuda_batch_dlpack_info {
    vkcuda_batch_dlpack_info {
        flags: 0,
        index: 0,
        wait_semaphore: ptr::null(),
        wait_value: 0,
        stream: ptr::null_mut(),
    }
}

pub fn cases(m: &mut Matrix) {
    let out = vkcuda_batch_destroy;
    m.nulls(nulls![
        CREATE, "context" => |_, o| unsafe { vkcuda_batch_create(ptr::null(), &images(), o.handle(out)) };
        CREATE, "info" => |e, o| unsafe { vkcuda_batch_create(e.ctx, ptr::null(), o.handle(out)) };
        CREATE, "batch" => |e, _| unsafe { vkcuda_batch_create(e.ctx, &images(), ptr::null_mut()) };
        ELEMENT, "batch" => |_, o| unsafe { vkcuda_batch_get_element(ptr::null(), 0, o.plain()) };
        ELEMENT, "element" => |e, _| unsafe { vkcuda_batch_get_element(e.batch, 0, ptr::null_mut()) };
        BUFFER, "batch" => |_, o| unsafe { vkcuda_batch_get_buffer(ptr::null(), 0, o.handle(vkcuda_buffer_destroy)) };
        BUFFER, "buffer" => |e, _| unsafe { vkcuda_batch_get_buffer(e.buffer_batch, 0, ptr::null_mut()) };
    ]);
    m.getter(
        "vkcuda_batch_get_info",
        ["batch", "info"],
        |e| e.batch,
        vkcuda_batch_get_info,
    );
    m.getter(
        "vkcuda_batch_export_fd",
        ["batch", "fd"],
        |e| e.batch,
        vkcuda_batch_export_fd,
    );
    m.ran("vkcuda_batch_destroy", "null-ok:batch", |_| {
        unsafe { vkcuda_batch_destroy(ptr::null_mut()) };
    });

    // -- vkcuda_batch_create
    type BC = vkcuda_batch_create_info;
    let muts: Vec<Mutation<BC>> = muts![BC;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 0x2;
        "enum-2:info->kind" [I] => |_, i| i.kind = 2;
        "max:info->kind" [I] => |_, i| i.kind = u32::MAX;
        "zero:info->count" [I] says "count must not be 0" => |_, i| i.count = 0;
        "past-max:info->count" [I] says "more than a batch may hold" => |_, i| i.count = u32::MAX;
        "overflow:info->count" [I] says "overflows 64 bits" => |_, i| { i.count = 1 << 16; i.width = u32::MAX; i.height = u32::MAX; };
        "rgb8:info->format" [UNSUP] says "is not a format a batch can hold" => |_, i| i.format = vk::Format::R8G8B8_UNORM.as_raw();
        "undefined:info->format" [UNSUP] => |_, i| i.format = 0;
        "negative:info->format" [UNSUP] => |_, i| i.format = -1;
        "zero:info->width" [I] says "must not be 0" => |_, i| i.width = 0;
        "zero:info->height" [I] says "must not be 0" => |_, i| i.height = 0;
        "over-heap:info->width" [I] says "largest memory heap" => |_, i| { i.count = 1024; i.format = vk::Format::R32G32B32A32_SFLOAT.as_raw(); i.width = 8192; i.height = 8192; };
        "unknown-bits:info->image_usage" [I] => |_, i| i.image_usage = 0x8000_0000;
        "depth-on-colour:info->image_usage" [UNSUP] says "colour format" => |_, i| i.image_usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT.as_raw();
        "unknown-bits:info->buffer_usage" [I] => |_, i| { i.kind = VKCUDA_BATCH_KIND_BUFFERS; i.buffer_usage = 0x4000_0000 };
        "zero:info->size" [I] says "size must not be 0" => |_, i| { i.kind = VKCUDA_BATCH_KIND_BUFFERS; i.size = 0 };
        "overflow:info->size" [I] says "overflows 64 bits" => |_, i| { i.kind = VKCUDA_BATCH_KIND_BUFFERS; i.count = 1 << 16; i.size = 1 << 50; };
        "over-heap:info->size" [I] says "largest memory heap" => |e, i| { i.kind = VKCUDA_BATCH_KIND_BUFFERS; i.size = e.largest_heap() + 1; };
    ];
    mutations(m, CREATE, muts, |_| images(), |c, i, want| {
        let mut b = poisoned();
        let r = unsafe { vkcuda_batch_create(c.env.ctx, i, &mut b) };
        c.refused_made(r, want, b, vkcuda_batch_destroy);
        Ran
    });

    // -- the element getters: an index past the last.
    m.ran(ELEMENT, "past-count:index", |c| {
        let mut p = Poison::<vkcuda_batch_element>::new();
        let r = unsafe { vkcuda_batch_get_element(c.env.batch, 3, p.ptr()) };
        Call {
            says: Some("index 3 is out of range"),
            ..*c
        }
        .refused(r, &[I]);
        p.untouched();
    });
    m.ran(BUFFER, "past-count:index", |c| {
        let mut b = poisoned();
        let r = unsafe { vkcuda_batch_get_buffer(c.env.buffer_batch, 3, &mut b) };
        c.refused_made(r, &[I], b, vkcuda_buffer_destroy);
    });
    m.ran(BUFFER, "image-batch:index", |c| {
        let mut b = poisoned();
        let r = unsafe { vkcuda_batch_get_buffer(c.env.batch, 0, &mut b) };
        c.refused_made(r, &[UNSUP], b, vkcuda_buffer_destroy);
    });

    // -- the handoffs
    let calls: [(&'static str, Handoff, &'static str, bool); 2] = [
        ("vkcuda_batch_cmd_release_to_cuda", vkcuda_batch_cmd_release_to_cuda, "old_layout", true),
        ("vkcuda_batch_cmd_acquire_from_cuda", vkcuda_batch_cmd_acquire_from_cuda, "new_layout", false),
    ];
    let general = vk::ImageLayout::GENERAL.as_raw();
    for (f, call, layout, release) in calls {
        m.nulls(nulls![
            f, "batch" => |e, _| unsafe { call(ptr::null(), e.cmd, &handoff_info(0), general) };
            f, "command_buffer" => |e, _| unsafe {
                call(e.batch, vk::CommandBuffer::null(), &handoff_info(0), general)
            };
            f, "info" => |e, _| unsafe { call(e.batch, e.cmd, ptr::null(), general) };
        ]);
        handoff_cases(m, f, move |c, h| unsafe { call(c.env.batch, c.env.cmd, h, general) });
        let mut bad = vec![
            ("not-a-layout", 12345),
            ("negative", -1),
            ("depth", vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL.as_raw()),
            ("present", vk::ImageLayout::PRESENT_SRC_KHR.as_raw()),
            // The default usage has no SAMPLED or INPUT_ATTACHMENT.
            ("usage", vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL.as_raw()),
        ];
        if !release {
            bad.push(("undefined", vk::ImageLayout::UNDEFINED.as_raw()));
        }
        for (what, l) in bad {
            m.ran(f, &format!("{what}:{layout}"), move |c| c.refused(unsafe { call(c.env.batch, c.env.cmd, &handoff_info(0), l) }, &[I]));
        }
    }

    // -- the readout acquire (the copy path only)
    const READOUT: &str = "vkcuda_batch_cmd_acquire_readout_from_cuda";
    m.nulls(nulls![
        READOUT, "batch" => |e, _| unsafe {
            vkcuda_batch_cmd_acquire_readout_from_cuda(ptr::null(), e.cmd, &handoff_info(0))
        };
        READOUT, "command_buffer" => |e, _| unsafe {
            vkcuda_batch_cmd_acquire_readout_from_cuda(e.copy_batch, vk::CommandBuffer::null(), &handoff_info(0))
        };
        READOUT, "info" => |e, _| unsafe {
            vkcuda_batch_cmd_acquire_readout_from_cuda(e.copy_batch, e.cmd, ptr::null())
        };
    ]);
    handoff_cases(m, READOUT, |c, h| unsafe {
        vkcuda_batch_cmd_acquire_readout_from_cuda(c.env.copy_batch, c.env.cmd, h)
    });
    m.ran(READOUT, "zero-copy-or-buffers:batch", |c| {
        let r = unsafe { vkcuda_batch_cmd_acquire_readout_from_cuda(c.env.buffer_batch, c.env.cmd, &handoff_info(0)) };
        Call {
            says: Some("has no readout region"),
            ..*c
        }
        .refused(r, &[I]);
    });

    // -- the tensor
    m.ran(DLPACK, "null:batch", |c| dlpack_refused(c, ptr::null(), &dlpack_info(), &[N]));
    m.ran(DLPACK, "null:tensor", |c| {
        let r = unsafe { vkcuda_batch_export_dlpack(c.env.batch, &dlpack_info(), ptr::null_mut()) };
        c.refused(r, &[N]);
    });
    m.ran(DLPACK, "null-ok:info", |c| dlpack_valid(c, ptr::null()));
    m.ran(DLPACK, "null-ok:info->wait_semaphore", |c| dlpack_valid(c, &dlpack_info()));
    m.ran(DLPACK, "null-ok:info->stream", |c| {
        let i = vkcuda_batch_dlpack_info {
            flags: VKCUDA_BATCH_DLPACK_ELEMENT_BIT | VKCUDA_DLPACK_READ_ONLY_BIT,
            index: 2,
            ..dlpack_info()
        };
        dlpack_valid(c, &i);
    });
    m.any(
        DLPACK,
        "info->wait_value",
        "any timeline value may be waited for (a value never signalled makes the consumer's stream wait)",
    );
    type DI = vkcuda_batch_dlpack_info;
    let muts: Vec<Mutation<DI>> = muts![DI;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 0x8;
        "read-only-legacy:info->flags" [I] => |_, i| i.flags = VKCUDA_DLPACK_READ_ONLY_BIT | VKCUDA_DLPACK_LEGACY_BIT;
        "past-count:info->index" [I] says "index 3 is out of range" => |_, i| { i.flags = VKCUDA_BATCH_DLPACK_ELEMENT_BIT; i.index = 3 };
        "not-a-semaphore:info->wait_semaphore" [I] => |e, i| i.wait_semaphore = e.buffer.cast_const().cast();
    ];
    mutations(m, DLPACK, muts, |_| dlpack_info(), |c, i, want| {
        dlpack_refused(c, c.env.batch, i, want);
        Ran
    });
}
