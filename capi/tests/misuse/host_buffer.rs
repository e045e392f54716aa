//! The host-buffer group: create, get_info, destroy of the staging buffer.

use std::ptr;

use crate::matrix::*;
use crate::support::*;

const CREATE: &str = "vkcuda_host_buffer_create";
const INFO: &str = "vkcuda_host_buffer_get_info";

/// vkcuda_host_buffer_create of `size` bytes is refused with one of `want`.
fn create_fails(c: &Call, size: u64, want: &[vkcuda_result]) -> Outcome {
    let mut b = poisoned();
    let r = unsafe { vkcuda_host_buffer_create(c.env.ctx, size, &mut b) };
    c.refused_made(r, want, b, vkcuda_host_buffer_destroy);
    Ran
}

pub fn cases(m: &mut Matrix) {
    let out = vkcuda_host_buffer_destroy;
    m.nulls(nulls![
        CREATE, "context" => |_, o| unsafe { vkcuda_host_buffer_create(ptr::null(), 4096, o.handle(out)) };
        CREATE, "host_buffer" => |e, _| unsafe { vkcuda_host_buffer_create(e.ctx, 4096, ptr::null_mut()) };
    ]);
    m.getter(
        INFO,
        ["host_buffer", "info"],
        |e| e.host_buffer,
        vkcuda_host_buffer_get_info,
    );

    // -- vkcuda_host_buffer_create: every size refused before the driver.
    m.case(CREATE, "zero:size", |c| create_fails(
            &Call {
                says: Some("size must not be 0"),
                ..*c
            },
            0,
            &[I],
        ));
    m.case(CREATE, "absurd:size", |c| create_fails(c, u64::MAX, &[I]));
    m.case(CREATE, "2^63:size", |c| create_fails(c, 1 << 63, &[I]));
    m.case(CREATE, "over-heap:size", |c| create_fails(c, c.env.largest_heap() + 1, &[I]));
    m.ran(CREATE, "wrong-kind:context", |c| {
        let mut b = poisoned();
        let r = unsafe { vkcuda_host_buffer_create(c.env.buffer.cast(), 4096, &mut b) };
        c.refused_made(r, &[I], b, vkcuda_host_buffer_destroy);
    });

    // -- vkcuda_host_buffer_get_info
    m.case(INFO, "wrong-kind:host_buffer", |c| {
        let res = Call {
            says: Some("is a vkcuda_buffer, not a vkcuda_host_buffer"),
            ..*c
        };
        res.refused_untouched(&[I], |p| unsafe {
            vkcuda_host_buffer_get_info(c.env.buffer.cast(), p)
        })
    });
    m.ran("vkcuda_host_buffer_destroy", "null-ok:host_buffer", |_| {
        unsafe { vkcuda_host_buffer_destroy(ptr::null_mut()) };
    });
}
