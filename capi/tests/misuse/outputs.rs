//! Handle outputs after a failure: every export of the header with a handle output
//! (`struct T **`, and DLPack's `void **tensor`) is called so that it fails, and
//! the output must be NULL afterwards ("handle outputs are set to NULL on failure;
//! other outputs are untouched"). One row per export; a new export with a handle
//! output and no row here fails `every_handle_output_is_null_after_a_failure`.
//!
//! Each row fails twice where it can: early (the first object argument NULL, before
//! the library looks at the output) and late (valid objects, a failure found after
//! the output was checked: a level past the last, a zeroed create-info, a closed
//! fd). Late rows that need an object this device cannot make are skipped.

use std::ffi::c_void;
use std::ptr;

use crate::env::{Driver, Env};
use crate::header::header;
use crate::matrix::poisoned;
use crate::support::*;

/// What a row's call gave: its result and what the output holds after it; None
/// when the row cannot run here (it says why).
type Seen = Result<(vkcuda_result, *mut c_void), &'static str>;

struct Row {
    f: &'static str,
    when: &'static str,
    call: Box<dyn Fn(&Env) -> Seen>,
}

fn row(f: &'static str, when: &'static str, call: impl Fn(&Env) -> Seen + 'static) -> Row {
    Row {
        f,
        when,
        call: Box::new(call),
    }
}

/// Calls `f` with a poisoned (not NULL) output and returns what it left there.
fn with_out<T>(f: impl FnOnce(*mut *mut T) -> vkcuda_result) -> Seen {
    let mut out: *mut T = poisoned();
    let r = f(&mut out);
    Ok((r, out.cast()))
}

fn zeroed<T>() -> T {
    unsafe { std::mem::zeroed() }
}

/// The handle-output parameters of a prototype.
fn handle_outputs(ty: &str) -> bool {
    ty == "void **" || (ty.starts_with("struct ") && ty.ends_with("**"))
}

fn rows() -> Vec<Row> {
    let mut v = vec![
        row("vkcuda_context_create", "early", |_| {
            with_out(|o| unsafe { vkcuda_context_create(ptr::null(), o) })
        }),
        row("vkcuda_context_create", "late", |_| {
            let info: vkcuda_context_create_info = zeroed();
            with_out(|o| unsafe { vkcuda_context_create(&info, o) })
        }),
        row("vkcuda_context_create_with_device_info", "early", |_| {
            with_out(|o| unsafe {
                vkcuda_context_create_with_device_info(ptr::null(), ptr::null(), o)
            })
        }),
        row("vkcuda_context_create_with_device_info", "late", |_| {
            let info: vkcuda_context_create_info = zeroed();
            with_out(|o| unsafe { vkcuda_context_create_with_device_info(&info, ptr::null(), o) })
        }),
        row("vkcuda_context_create_standalone", "late", |_| {
            let info = vkcuda_standalone_create_info {
                flags: 0x4000_0000,
                physical_device_index: 0,
            };
            with_out(|o| unsafe { vkcuda_context_create_standalone(&info, o) })
        }),
        row("vkcuda_doctor_run", "late", |_| {
            let o = vkcuda_doctor_options {
                flags: !VKCUDA_DOCTOR_RUN_DEEP_BIT,
                root: ptr::null(),
                engine: ptr::null(),
            };
            with_out(|out| unsafe { vkcuda_doctor_run(&o, out) })
        }),
        row("vkcuda_batch_create", "early", |_| {
            let info = crate::env::batch_create_info(VKCUDA_BATCH_KIND_IMAGES);
            with_out(|o| unsafe { vkcuda_batch_create(ptr::null(), &info, o) })
        }),
        row("vkcuda_batch_create", "late", |e| {
            let info: vkcuda_batch_create_info = zeroed();
            with_out(|o| unsafe { vkcuda_batch_create(e.ctx, &info, o) })
        }),
        row("vkcuda_batch_get_buffer", "early", |_| {
            with_out(|o| unsafe { vkcuda_batch_get_buffer(ptr::null(), 0, o) })
        }),
        row("vkcuda_batch_get_buffer", "late", |e| {
            with_out(|o| unsafe { vkcuda_batch_get_buffer(e.buffer_batch, 3, o) })
        }),
        row("vkcuda_batch_export_dlpack", "early", |_| {
            with_out(|o: *mut *mut c_void| unsafe {
                vkcuda_batch_export_dlpack(ptr::null(), ptr::null(), o)
            })
        }),
        row("vkcuda_batch_export_dlpack", "late", |e| {
            let info = vkcuda_batch_dlpack_info {
                flags: VKCUDA_BATCH_DLPACK_ELEMENT_BIT,
                index: 3,
                wait_semaphore: ptr::null(),
                wait_value: 0,
                stream: ptr::null_mut(),
            };
            with_out(|o: *mut *mut c_void| unsafe { vkcuda_batch_export_dlpack(e.batch, &info, o) })
        }),
        row("vkcuda_buffer_create", "early", |_| {
            let info = buffer_create_info(4096, 0);
            with_out(|o| unsafe { vkcuda_buffer_create(ptr::null(), &info, o) })
        }),
        row("vkcuda_buffer_create", "late", |e| {
            let info = buffer_create_info(0, 0);
            with_out(|o| unsafe { vkcuda_buffer_create(e.ctx, &info, o) })
        }),
        row("vkcuda_host_buffer_create", "early", |_| {
            with_out(|o| unsafe { vkcuda_host_buffer_create(ptr::null(), 4096, o) })
        }),
        row("vkcuda_host_buffer_create", "late", |e| {
            with_out(|o| unsafe { vkcuda_host_buffer_create(e.ctx, 0, o) })
        }),
        row("vkcuda_buffer_wrap", "late", |e| {
            let info: vkcuda_buffer_wrap_info = zeroed();
            with_out(|o| unsafe { vkcuda_buffer_wrap(e.ctx, &info, o) })
        }),
        row("vkcuda_buffer_import_fd", "late", |e| {
            let info: vkcuda_buffer_import_info = zeroed();
            with_out(|o| unsafe { vkcuda_buffer_import_fd(e.ctx, &info, -1, o) })
        }),
        row("vkcuda_buffer_import_description", "late", |e| {
            let d: vkcuda_share_description = zeroed();
            with_out(|o| unsafe { vkcuda_buffer_import_description(e.ctx, &d, -1, 0, o) })
        }),
        row("vkcuda_buffer_receive", "late", |e| {
            with_out(|o| unsafe { vkcuda_buffer_receive(e.ctx, -1, ptr::null(), o) })
        }),
        row("vkcuda_buffer_export_dlpack", "early", |_| {
            let info: vkcuda_dlpack_info = zeroed();
            with_out(|o: *mut *mut c_void| unsafe {
                vkcuda_buffer_export_dlpack(ptr::null(), &info, o)
            })
        }),
        row("vkcuda_buffer_export_dlpack", "late", |e| {
            with_out(|o: *mut *mut c_void| unsafe {
                vkcuda_buffer_export_dlpack(e.buffer, ptr::null(), o)
            })
        }),
        row("vkcuda_image_export_plane_dlpack", "early", |_| {
            with_out(|o: *mut *mut c_void| unsafe {
                vkcuda_image_export_plane_dlpack(ptr::null(), 0, 0, o)
            })
        }),
        row("vkcuda_image_export_plane_dlpack", "late", |e| {
            // Not a frame (the environment's image is optimal, single-plane).
            with_out(|o: *mut *mut c_void| unsafe {
                vkcuda_image_export_plane_dlpack(e.image, 0, 0, o)
            })
        }),
        row("vkcuda_image_create", "late", |e| {
            let info: vkcuda_image_create_info = zeroed();
            with_out(|o| unsafe { vkcuda_image_create(e.ctx, &info, o) })
        }),
        row("vkcuda_image_wrap", "late", |e| {
            let info: vkcuda_image_wrap_info = zeroed();
            with_out(|o| unsafe { vkcuda_image_wrap(e.ctx, &info, o) })
        }),
        row("vkcuda_image_import_description", "late", |e| {
            let d: vkcuda_share_description = zeroed();
            with_out(|o| unsafe { vkcuda_image_import_description(e.ctx, &d, -1, o) })
        }),
        row("vkcuda_image_import_description_fds", "late", |e| {
            let d: vkcuda_share_description = zeroed();
            let fds = [-1];
            with_out(|o| unsafe {
                vkcuda_image_import_description_fds(e.ctx, &d, fds.as_ptr(), 1, o)
            })
        }),
        row("vkcuda_image_receive", "late", |e| {
            with_out(|o| unsafe { vkcuda_image_receive(e.ctx, -1, ptr::null(), o) })
        }),
        row("vkcuda_semaphore_create", "late", |e| {
            let info = semaphore_create_info(0x7000, 0);
            with_out(|o| unsafe { vkcuda_semaphore_create(e.ctx, &info, o) })
        }),
        row("vkcuda_semaphore_import_description", "late", |e| {
            let d: vkcuda_share_description = zeroed();
            with_out(|o| unsafe { vkcuda_semaphore_import_description(e.ctx, &d, -1, o) })
        }),
        row("vkcuda_semaphore_receive", "late", |e| {
            with_out(|o| unsafe { vkcuda_semaphore_receive(e.ctx, -1, ptr::null(), o) })
        }),
        row("vkcuda_present_ring_create", "late", |e| {
            let info = vkcuda_present_ring_create_info {
                flags: 0,
                format: ash::vk::Format::R8G8B8A8_UNORM.as_raw(),
                width: 16,
                height: 16,
                image_count: 0,
            };
            with_out(|o| unsafe { vkcuda_present_ring_create(e.ctx, &info, o) })
        }),
        // The CUDA arrays an image lends.
        row("vkcuda_image_get_cuda_mipmapped_array", "early", |_| {
            with_out(|o| unsafe { vkcuda_image_get_cuda_mipmapped_array(ptr::null(), o) })
        }),
        row("vkcuda_image_get_cuda_mipmapped_array", "late", |e| {
            if e.cuda {
                return Err("the context has CUDA: the call succeeds");
            }
            with_out(|o| unsafe { vkcuda_image_get_cuda_mipmapped_array(e.image, o) })
        }),
        row("vkcuda_image_get_cuda_array", "early", |_| {
            with_out(|o| unsafe { vkcuda_image_get_cuda_array(ptr::null(), 0, o) })
        }),
        row("vkcuda_image_get_cuda_array", "late", |e| {
            with_out(|o| unsafe { vkcuda_image_get_cuda_array(e.image, 99, o) })
        }),
        row(
            "vkcuda_image_get_plane_cuda_mipmapped_array",
            "early",
            |_| {
                with_out(|o| unsafe {
                    vkcuda_image_get_plane_cuda_mipmapped_array(ptr::null(), 0, o)
                })
            },
        ),
        row("vkcuda_image_get_plane_cuda_mipmapped_array", "late", |e| {
            with_out(|o| unsafe { vkcuda_image_get_plane_cuda_mipmapped_array(e.image, 9, o) })
        }),
        row("vkcuda_image_get_plane_cuda_array", "early", |_| {
            with_out(|o| unsafe { vkcuda_image_get_plane_cuda_array(ptr::null(), 0, 0, o) })
        }),
        row("vkcuda_image_get_plane_cuda_array", "late", |e| {
            with_out(|o| unsafe { vkcuda_image_get_plane_cuda_array(e.image, 0, 99, o) })
        }),
    ];
    // The graph nodes a semaphore adds (issue 29: a failed add left `*node` as it was).
    for (f, add) in crate::graph::ADDS {
        v.push(row(f, "early", move |_| {
            let graph = crate::graph::dangling();
            with_out(|o| unsafe { add(ptr::null(), graph, ptr::null(), 0, 1, o) })
        }));
        v.push(row(f, "late", move |e| {
            let Some(s) = e.timeline else {
                return Err("no shared semaphores on this device");
            };
            // A NULL graph, found after the semaphore and the output were checked.
            with_out(|o| unsafe { add(s, ptr::null_mut(), ptr::null(), 0, 1, o) })
        }));
    }
    v
}

#[test]
fn every_handle_output_is_null_after_a_failure() {
    let _g = serial();
    let h = header();
    let exports: Vec<&str> = h
        .protos
        .iter()
        .filter(|p| p.params.iter().any(|q| handle_outputs(&q.ty)))
        .map(|p| p.name.as_str())
        .collect();
    assert!(exports.len() >= 20, "{exports:?}");
    let rows = rows();
    let mut problems = Vec::new();
    for f in &exports {
        if !rows.iter().any(|r| r.f == *f) {
            problems.push(format!("{f}: has a handle output and no row here"));
        }
    }
    for r in &rows {
        if !exports.contains(&r.f) {
            problems.push(format!(
                "{}: a row, but no handle output in the header",
                r.f
            ));
        }
    }
    let ctx = vulkan_only_context();
    let mut v = 0;
    let driver = match unsafe { vkcuda_cuda_driver_get_version(&mut v) } {
        VKCUDA_SUCCESS => Driver::Real,
        _ => Driver::None,
    };
    let env = Env::new(ctx, false, driver);
    let (mut ran, mut skipped) = (0, 0);
    for r in &rows {
        match (r.call)(&env) {
            Err(why) => {
                skipped += 1;
                println!("{} ({}): skipped: {why}", r.f, r.when);
            }
            Ok((res, out)) => {
                ran += 1;
                let msg = last_error();
                println!("{} ({}): {res:?}: {msg}", r.f, r.when);
                if res == VKCUDA_SUCCESS {
                    problems.push(format!(
                        "{} ({}): succeeded; the row must fail",
                        r.f, r.when
                    ));
                } else if !out.is_null() {
                    problems.push(format!(
                        "{} ({}): returned {res:?} and left {out:?} in its handle output, not NULL",
                        r.f, r.when
                    ));
                }
            }
        }
    }
    drop(env);
    unsafe { vkcuda_context_destroy(ctx) };
    println!(
        "{} exports with a handle output; {ran} failing calls checked, {skipped} skipped here",
        exports.len()
    );
    assert!(problems.is_empty(), "\n  {}", problems.join("\n  "));
}
