//! The semaphore group: create, the CUDA and Vulkan sides of signal and wait, host
//! signal and wait, value, stage, export. Cases that need a shared semaphore skip
//! where the device cannot make one (lavapipe: no VK_KHR_external_semaphore_fd).

use std::ptr;

use crate::support::*;
use crate::env::Env;
use crate::matrix::*;

const CREATE: &str = "vkcuda_semaphore_create";
const SIGNAL: &str = "vkcuda_semaphore_host_signal";
const WAIT: &str = "vkcuda_semaphore_host_wait";
const VALUE: &str = "vkcuda_semaphore_get_value";
const STAGE: &str = "vkcuda_semaphore_next_stage";

/// A case on the environment's binary (or timeline) semaphore, skipped where the
/// device makes none.
fn on(
    m: &mut Matrix,
    f: &'static str,
    label: &str,
    binary: bool,
    run: impl Fn(&Call, *mut vkcuda_semaphore) + 'static,
) {
    m.case(f, label, move |c| match need(c.env, binary) {
        Ok(s) => {
            run(c, s);
            Ran
        }
        Err(o) => o,
    });
}

/// The environment's timeline (or binary) semaphore, or the case is skipped.
fn need(e: &Env, binary: bool) -> Result<*mut vkcuda_semaphore, Outcome> {
    let s = if binary { e.binary } else { e.timeline };
    s.ok_or(Skipped("no shared semaphores on this device"))
}

pub fn cases(m: &mut Matrix) {
    const VK_SEMAPHORE: &str = "vkcuda_semaphore_get_vk_semaphore";
    const EXPORT: &str = "vkcuda_semaphore_export_fd";
    let out = vkcuda_semaphore_destroy;
    m.constructor(CREATE, "semaphore", |_| semaphore_create_info(0, 0), vkcuda_semaphore_create, out);
    m.nulls(nulls![
        "vkcuda_semaphore_cuda_signal", "semaphore" => |_, _| unsafe {
            vkcuda_semaphore_cuda_signal(ptr::null(), 1, ptr::null_mut())
        };
        "vkcuda_semaphore_cuda_wait", "semaphore" => |_, _| unsafe {
            vkcuda_semaphore_cuda_wait(ptr::null(), 1, ptr::null_mut())
        };
        "vkcuda_semaphore_note_vulkan_signal", "semaphore" => |_, _| unsafe { vkcuda_semaphore_note_vulkan_signal(ptr::null()) };
        "vkcuda_semaphore_note_vulkan_wait", "semaphore" => |_, _| unsafe { vkcuda_semaphore_note_vulkan_wait(ptr::null()) };
        SIGNAL, "semaphore" => |_, _| unsafe { vkcuda_semaphore_host_signal(ptr::null(), 1) };
        WAIT, "semaphore" => |_, _| unsafe { vkcuda_semaphore_host_wait(ptr::null(), 1, 0) };
    ]);
    m.timeline_getter(
        VK_SEMAPHORE,
        ["semaphore", "vk_semaphore"],
        vkcuda_semaphore_get_vk_semaphore,
    );
    m.timeline_getter(VALUE, ["semaphore", "value"], vkcuda_semaphore_get_value);
    m.timeline_getter(STAGE, ["semaphore", "stage"], vkcuda_semaphore_next_stage);
    m.timeline_getter(EXPORT, ["semaphore", "fd"], vkcuda_semaphore_export_fd);

    type SC = vkcuda_semaphore_create_info;
    let muts: Vec<Mutation<SC>> = vec![
        mutation("unknown-bits:info->flags", &[I], |_, i: &mut SC| {
            i.flags = 2
        }),
        mutation("all-bits:info->flags", &[I], |_, i: &mut SC| {
            i.flags = u32::MAX
        }),
        mutation("enum-2:info->semaphore_type", &[I], |_, i: &mut SC| {
            i.semaphore_type = vkcuda_semaphore_type_raw(2)
        }),
        mutation(
            "enum-negative:info->semaphore_type",
            &[I],
            |_, i: &mut SC| i.semaphore_type = vkcuda_semaphore_type_raw(-1),
        ),
        // Checked after the extension: lavapipe says EXTENSION_NOT_PRESENT first.
        mutation(
            "binary-nonzero:info->initial_value",
            &[I, EXT],
            |_, i: &mut SC| {
                i.semaphore_type = vkcuda_semaphore_type_raw(1);
                i.initial_value = 1;
            },
        ),
    ];
    mutations(
        m,
        CREATE,
        muts,
        |_| semaphore_create_info(0, 0),
        |c, i, want| {
            let mut s = poisoned();
            let r = unsafe { vkcuda_semaphore_create(c.env.ctx, i, &mut s) };
            c.refused_made(r, want, s, vkcuda_semaphore_destroy);
            Ran
        },
    );
    m.case(CREATE, "no-extension", |c| {
        if c.env.timeline.is_some() {
            return Skipped("the device has VK_KHR_external_semaphore_fd");
        }
        let mut s = poisoned();
        let r = unsafe { vkcuda_semaphore_create(c.env.ctx, &semaphore_create_info(0, 0), &mut s) };
        c.refused_made(r, &[EXT], s, vkcuda_semaphore_destroy);
        Ran
    });
    m.any(
        CREATE,
        "info->host_wait_spin_ns",
        "any spin time is valid (0: the default)",
    );

    // Every function on a semaphore: NULL first, then misuse of a real one.
    type Cuda =
        unsafe extern "C" fn(*const vkcuda_semaphore, u64, *mut CUstream_st) -> vkcuda_result;
    let cuda: [(&'static str, Cuda, bool); 2] = named![
        vkcuda_semaphore_cuda_signal, true;
        vkcuda_semaphore_cuda_wait, false;
    ];
    for (f, call, signal) in cuda {
        on(m, f, "null-ok:stream", false, move |c, s| {
            // NULL is the legacy default stream: not a NULL_POINTER error.
            let mut v = 0;
            ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
            let r = unsafe { call(s, v + 1, ptr::null_mut()) };
            if c.env.cuda {
                c.succeeded(r);
                if signal {
                    // Let the stream run; the next cases see the value.
                    ok(unsafe { vkcuda_semaphore_host_wait(s, v + 1, 10_000_000_000) });
                } else {
                    ok(unsafe { vkcuda_semaphore_host_signal(s, v + 1) });
                }
            } else {
                c.refused(r, &[U]);
            }
        });
        on(m, f, "binary-nonzero:value", true, move |c, s| {
            let want = if c.env.cuda { I } else { U };
            c.refused(unsafe { call(s, 1, ptr::null_mut()) }, &[want]);
        });
        if signal {
            on(m, f, "backwards:value", false, move |c, s| {
                let mut v = 0;
                ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
                let want = if c.env.cuda { I } else { U };
                c.refused(unsafe { call(s, v, ptr::null_mut()) }, &[want]);
                c.refused(unsafe { call(s, 0, ptr::null_mut()) }, &[want]);
                if let Some(far) = c.env.too_far_ahead(v) {
                    c.refused(unsafe { call(s, far, ptr::null_mut()) }, &[want]);
                }
            });
        } else {
            on(m, f, "binary-twice", true, move |c, s| {
                // No signal pending: a wait has nothing to consume.
                let want = if c.env.cuda {
                    VKCUDA_ERROR_INVALID_STATE
                } else {
                    U
                };
                c.refused(unsafe { call(s, 0, ptr::null_mut()) }, &[want]);
            });
        }
        m.case(f, "foreign-stream:stream", move |c| {
            if c.env.cuda {
                // A stream pointer of another context cannot be made without the
                // driver API here; gpu_timeline_semaphore_both_ways in
                // tests/semaphore.rs covers DEVICE_MISMATCH for streams.
                return Skipped("covered by tests/semaphore.rs");
            }
            let s = match need(c.env, false) {
                Ok(s) => s,
                Err(o) => return o,
            };
            // Vulkan-only: refused before the stream is looked at.
            c.refused(
                unsafe { call(s, 1_000_000, 0x1000 as *mut CUstream_st) },
                &[U],
            );
            Ran
        });
    }
    type Note = unsafe extern "C" fn(*const vkcuda_semaphore) -> vkcuda_result;
    let notes: [(&'static str, Note); 2] = named![
        vkcuda_semaphore_note_vulkan_signal;
        vkcuda_semaphore_note_vulkan_wait;
    ];
    for (f, call) in notes {
        on(m, f, "on-timeline", false, move |c, s| {
            c.refused(unsafe { call(s) }, &[I]);
        });
    }
    on(m, "vkcuda_semaphore_note_vulkan_wait", "no-signal-pending", true, |c, s| {
            c.refused(
                unsafe { vkcuda_semaphore_note_vulkan_wait(s) },
                &[VKCUDA_ERROR_INVALID_STATE],
            );
    });
    on(m, "vkcuda_semaphore_note_vulkan_signal", "twice", true, |c, s| {
        ok(unsafe { vkcuda_semaphore_note_vulkan_signal(s) });
        let r = unsafe { vkcuda_semaphore_note_vulkan_signal(s) };
        c.refused(r, &[VKCUDA_ERROR_INVALID_STATE]);
        ok(unsafe { vkcuda_semaphore_note_vulkan_wait(s) });
    });

    on(m, SIGNAL, "backwards:value", false, |c, s| {
        let mut v = 0;
        ok(unsafe { vkcuda_semaphore_get_value(s, &mut v) });
        c.refused(unsafe { vkcuda_semaphore_host_signal(s, v) }, &[I]);
        c.refused(unsafe { vkcuda_semaphore_host_signal(s, 0) }, &[I]);
        // Past maxTimelineSemaphoreValueDifference, where the device has a limit
        // below UINT64_MAX (lavapipe; not NVIDIA, where signalling UINT64_MAX is
        // valid and would leave the shared semaphore at its end for later cases).
        if let Some(far) = c.env.too_far_ahead(v) {
            c.refused(unsafe { vkcuda_semaphore_host_signal(s, far) }, &[I]);
        }
        let mut after = 0;
        ok(unsafe { vkcuda_semaphore_get_value(s, &mut after) });
        assert_eq!(after, v, "a refused signal changed the value");
    });
    on(m, SIGNAL, "on-binary", true, |c, s| {
        c.refused(unsafe { vkcuda_semaphore_host_signal(s, 1) }, &[I]);
    });
    on(m, WAIT, "never:value", false, |c, s| {
        for t in [0, 1, 1_000_000] {
            let r = unsafe { vkcuda_semaphore_host_wait(s, u64::MAX, t) };
            c.refused(r, &[VKCUDA_ERROR_TIMEOUT]);
        }
    });
    m.any(
        WAIT,
        "timeout_ns",
        "every timeout is valid: 0 polls once, UINT64_MAX waits for ever",
    );
    on(m, WAIT, "on-binary", true, |c, s| {
        c.refused(unsafe { vkcuda_semaphore_host_wait(s, 1, 0) }, &[I]);
    });
    on(m, VALUE, "on-binary", true, |c, s| {
        let mut v = Poison::<u64>::new();
        c.refused(unsafe { vkcuda_semaphore_get_value(s, v.ptr()) }, &[I]);
        v.untouched();
    });
    on(m, STAGE, "on-binary", true, |c, s| {
        let mut st = Poison::<vkcuda_timeline_stage>::new();
        c.refused(unsafe { vkcuda_semaphore_next_stage(s, st.ptr()) }, &[I]);
        st.untouched();
    });
    m.ran("vkcuda_semaphore_destroy", "null-ok:semaphore", |_| {
        unsafe { vkcuda_semaphore_destroy(ptr::null_mut()) };
    });
}
