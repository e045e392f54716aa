//! The doctor: vkcuda_doctor_run and the report's getters.

use std::ffi::{c_char, CStr};
use std::ptr;

use ash::vk;

use crate::matrix::*;
use crate::support::*;

fn doctor_report() -> *mut vkcuda_doctor_report {
    let mut r = ptr::null_mut();
    ok(unsafe { vkcuda_doctor_run(ptr::null(), &mut r) });
    r
}

/// `getter` on a fresh report, destroyed after; its result.
fn on_report(getter: impl Fn(*mut vkcuda_doctor_report) -> vkcuda_result) -> vkcuda_result {
    let r = doctor_report();
    let res = getter(r);
    unsafe { vkcuda_doctor_report_destroy(r) };
    res
}

fn options(
    flags: u32,
    root: *const c_char,
    engine: *const vkcuda_context_create_info,
) -> vkcuda_doctor_options {
    vkcuda_doctor_options {
        flags,
        root,
        engine,
    }
}

/// vkcuda_doctor_run with `o`: it must succeed (`refused` empty) or be refused with
/// one of `refused`, leaving no report.
fn run_with(c: &Call, o: &vkcuda_doctor_options, refused: &[vkcuda_result]) -> Outcome {
    let mut r = poisoned();
    let res = unsafe { vkcuda_doctor_run(o, &mut r) };
    if refused.is_empty() {
        c.succeeded(res);
        assert!(!r.is_null());
        unsafe { vkcuda_doctor_report_destroy(r) };
    } else {
        c.refused_made(res, refused, r, vkcuda_doctor_report_destroy);
    }
    Ran
}

pub fn cases(m: &mut Matrix) {
    const RUN: &str = "vkcuda_doctor_run";
    const SUMMARY: &str = "vkcuda_doctor_report_get_summary";
    const CHECK: &str = "vkcuda_doctor_report_get_check";
    const PAIR: &str = "vkcuda_doctor_report_get_device_pair";
    const JSON: &str = "vkcuda_doctor_report_get_json";
    let out = vkcuda_doctor_report_destroy;
    m.nulls(nulls![
        RUN, "report" => |_, _| unsafe { vkcuda_doctor_run(ptr::null(), ptr::null_mut()) };
        RUN, "options->engine->instance" => |e, o| {
            let mut info = e.engine.create_info(0);
            info.instance = vk::Instance::null();
            unsafe { vkcuda_doctor_run(&options(0, ptr::null(), &info), o.handle(out)) }
        };
        SUMMARY, "report" => |_, o| unsafe { vkcuda_doctor_report_get_summary(ptr::null(), o.plain()) };
        SUMMARY, "summary" => |_, _| {
            on_report(|r| unsafe { vkcuda_doctor_report_get_summary(r, ptr::null_mut()) })
        };
        CHECK, "report" => |_, o| unsafe { vkcuda_doctor_report_get_check(ptr::null(), 0, o.plain()) };
        CHECK, "check" => |_, _| on_report(|r| unsafe { vkcuda_doctor_report_get_check(r, 0, ptr::null_mut()) });
        PAIR, "report" => |_, o| unsafe { vkcuda_doctor_report_get_device_pair(ptr::null(), 0, o.plain()) };
        PAIR, "pair" => |_, _| {
            on_report(|r| unsafe { vkcuda_doctor_report_get_device_pair(r, 0, ptr::null_mut()) })
        };
        JSON, "report" => |_, o| unsafe { vkcuda_doctor_report_get_json(ptr::null(), o.plain()) };
        JSON, "json" => |_, _| on_report(|r| unsafe { vkcuda_doctor_report_get_json(r, ptr::null_mut()) });
    ]);

    m.ran(RUN, "null-ok:options", |c| {
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(ptr::null(), &mut r) });
        assert!(!r.is_null());
        unsafe { vkcuda_doctor_report_destroy(r) };
    });
    // Every bit but VKCUDA_DOCTOR_RUN_DEEP_BIT; and a known bit does not let an
    // unknown one through (nothing is run).
    m.case(RUN, "unknown-bits:options->flags", |c| {
        let o = options(!VKCUDA_DOCTOR_RUN_DEEP_BIT, ptr::null(), ptr::null());
        run_with(c, &o, &[I])
    });
    m.case(RUN, "unknown-bits-with-deep:options->flags", |c| {
        let o = options(
            VKCUDA_DOCTOR_RUN_DEEP_BIT | 0x8000_0000,
            ptr::null(),
            ptr::null(),
        );
        run_with(c, &o, &[I])
    });
    m.ran(RUN, "deep-ok:options->flags", |c| {
        // The deep self-test: deep.* checks, whatever this machine can run.
        let o = options(VKCUDA_DOCTOR_RUN_DEEP_BIT, ptr::null(), ptr::null());
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(&o, &mut r) });
        let mut j = ptr::null();
        ok(unsafe { vkcuda_doctor_report_get_json(r, &mut j) });
        let json = unsafe { CStr::from_ptr(j) }.to_string_lossy().into_owned();
        unsafe { vkcuda_doctor_report_destroy(r) };
        assert!(json.contains("\"deep.total\""), "{json}");
    });
    m.case(RUN, "null-ok:options->root", |c| run_with(c, &options(0, ptr::null(), ptr::null()), &[]));
    m.case(RUN, "empty:options->root", |c| run_with(c, &options(0, c"".as_ptr(), ptr::null()), &[I]));
    m.case(RUN, "not-utf8:options->root", |c| run_with(c, &options(0, c"/tmp/\xff".as_ptr(), ptr::null()), &[I]));
    m.case(RUN, "null-ok:options->engine", |c| {
        // With the engine's handles the doctor checks that device too.
        let info = c.env.engine.create_info(0);
        run_with(c, &options(0, ptr::null(), &info), &[])
    });

    m.ran(SUMMARY, "wrong-kind:report", |c| {
        let mut s = Poison::<vkcuda_doctor_summary>::new();
        let res = unsafe { vkcuda_doctor_report_get_summary(c.env.ctx.cast(), s.ptr()) };
        c.refused(res, &[I]);
        s.untouched();
    });
    m.ran(CHECK, "out-of-range:index", |c| {
        let r = doctor_report();
        let mut k = Poison::<vkcuda_doctor_check>::new();
        let a = unsafe { vkcuda_doctor_report_get_check(r, u32::MAX, k.ptr()) };
        let mut s: vkcuda_doctor_summary = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_doctor_report_get_summary(r, &mut s) });
        let b = unsafe { vkcuda_doctor_report_get_check(r, s.check_count, k.ptr()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        assert_eq!(a, I);
        c.refused(b, &[I]);
        k.untouched();
    });
    m.ran(PAIR, "out-of-range:index", |c| {
        let mut p = Poison::<vkcuda_doctor_device_pair>::new();
        let out = p.ptr();
        let res = on_report(|r| unsafe { vkcuda_doctor_report_get_device_pair(r, u32::MAX, out) });
        c.refused(res, &[I]);
        p.untouched();
    });
    const DESTROY: &str = "vkcuda_doctor_report_destroy";
    m.ran(DESTROY, "null-ok:report", |_| {
        unsafe { vkcuda_doctor_report_destroy(ptr::null_mut()) };
    });
}
