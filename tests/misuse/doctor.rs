//! The doctor: vkcuda_doctor_run and the report's getters.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::matrix::*;

fn doctor_report() -> *mut vkcuda_doctor_report {
    let mut r = ptr::null_mut();
    ok(unsafe { vkcuda_doctor_run(ptr::null(), &mut r) });
    r
}

pub fn cases(m: &mut Matrix) {
    const RUN: &str = "vkcuda_doctor_run";
    m.case(RUN, "null-ok:options", |c| {
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(ptr::null(), &mut r) });
        assert!(!r.is_null());
        unsafe { vkcuda_doctor_report_destroy(r) };
        Ran
    });
    m.case(RUN, "null:report", |c| {
        c.refused(
            unsafe { vkcuda_doctor_run(ptr::null(), ptr::null_mut()) },
            &[N],
        );
        Ran
    });
    m.case(RUN, "unknown-bits:options->flags", |c| {
        // Every bit but VKCUDA_DOCTOR_RUN_DEEP_BIT.
        let o = vkcuda_doctor_options {
            flags: !VKCUDA_DOCTOR_RUN_DEEP_BIT,
            root: ptr::null(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_doctor_run(&o, &mut r) };
        c.refused_made(res, &[I], r, vkcuda_doctor_report_destroy);
        Ran
    });
    m.case(RUN, "unknown-bits-with-deep:options->flags", |c| {
        // A known bit does not let an unknown one through (nothing is run).
        let o = vkcuda_doctor_options {
            flags: VKCUDA_DOCTOR_RUN_DEEP_BIT | 0x8000_0000,
            root: ptr::null(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_doctor_run(&o, &mut r) };
        c.refused_made(res, &[I], r, vkcuda_doctor_report_destroy);
        Ran
    });
    m.case(RUN, "deep-ok:options->flags", |c| {
        // The deep self-test: deep.* checks, whatever this machine can run.
        let o = vkcuda_doctor_options {
            flags: VKCUDA_DOCTOR_RUN_DEEP_BIT,
            root: ptr::null(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(&o, &mut r) });
        let mut j = ptr::null();
        ok(unsafe { vkcuda_doctor_report_get_json(r, &mut j) });
        let json = unsafe { std::ffi::CStr::from_ptr(j) }.to_string_lossy().into_owned();
        unsafe { vkcuda_doctor_report_destroy(r) };
        assert!(json.contains("\"deep.total\""), "{json}");
        Ran
    });
    m.case(RUN, "null-ok:options->root", |c| {
        let o = vkcuda_doctor_options {
            flags: 0,
            root: ptr::null(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(&o, &mut r) });
        unsafe { vkcuda_doctor_report_destroy(r) };
        Ran
    });
    m.case(RUN, "empty:options->root", |c| {
        let o = vkcuda_doctor_options {
            flags: 0,
            root: c"".as_ptr(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_doctor_run(&o, &mut r) };
        c.refused_made(res, &[I], r, vkcuda_doctor_report_destroy);
        Ran
    });
    m.case(RUN, "not-utf8:options->root", |c| {
        let o = vkcuda_doctor_options {
            flags: 0,
            root: c"/tmp/\xff".as_ptr(),
            engine: ptr::null(),
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_doctor_run(&o, &mut r) };
        c.refused_made(res, &[I], r, vkcuda_doctor_report_destroy);
        Ran
    });

    m.case(RUN, "null-ok:options->engine", |c| {
        // With the engine's handles the doctor checks that device too.
        let info = c.env.engine.create_info(0);
        let o = vkcuda_doctor_options {
            flags: 0,
            root: ptr::null(),
            engine: &info,
        };
        let mut r = poisoned();
        c.succeeded(unsafe { vkcuda_doctor_run(&o, &mut r) });
        unsafe { vkcuda_doctor_report_destroy(r) };
        Ran
    });
    m.case(RUN, "null:options->engine->instance", |c| {
        let mut info = c.env.engine.create_info(0);
        info.instance = vk::Instance::null();
        let o = vkcuda_doctor_options {
            flags: 0,
            root: ptr::null(),
            engine: &info,
        };
        let mut r = poisoned();
        let res = unsafe { vkcuda_doctor_run(&o, &mut r) };
        c.refused_made(res, &[N], r, vkcuda_doctor_report_destroy);
        Ran
    });

    const SUMMARY: &str = "vkcuda_doctor_report_get_summary";
    m.case(SUMMARY, "null:report", |c| {
        let mut s = Poison::<vkcuda_doctor_summary>::new();
        c.refused(
            unsafe { vkcuda_doctor_report_get_summary(ptr::null(), s.ptr()) },
            &[N],
        );
        s.untouched();
        Ran
    });
    m.case(SUMMARY, "null:summary", |c| {
        let r = doctor_report();
        let res = unsafe { vkcuda_doctor_report_get_summary(r, ptr::null_mut()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        c.refused(res, &[N]);
        Ran
    });
    m.case(SUMMARY, "wrong-kind:report", |c| {
        let mut s = Poison::<vkcuda_doctor_summary>::new();
        let res = unsafe { vkcuda_doctor_report_get_summary(c.env.ctx.cast(), s.ptr()) };
        c.refused(res, &[I]);
        s.untouched();
        Ran
    });

    const CHECK: &str = "vkcuda_doctor_report_get_check";
    m.case(CHECK, "null:report", |c| {
        let mut k = Poison::<vkcuda_doctor_check>::new();
        c.refused(
            unsafe { vkcuda_doctor_report_get_check(ptr::null(), 0, k.ptr()) },
            &[N],
        );
        k.untouched();
        Ran
    });
    m.case(CHECK, "out-of-range:index", |c| {
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
        Ran
    });
    m.case(CHECK, "null:check", |c| {
        let r = doctor_report();
        let res = unsafe { vkcuda_doctor_report_get_check(r, 0, ptr::null_mut()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        c.refused(res, &[N]);
        Ran
    });

    const PAIR: &str = "vkcuda_doctor_report_get_device_pair";
    m.case(PAIR, "null:report", |c| {
        let mut p = Poison::<vkcuda_doctor_device_pair>::new();
        c.refused(
            unsafe { vkcuda_doctor_report_get_device_pair(ptr::null(), 0, p.ptr()) },
            &[N],
        );
        p.untouched();
        Ran
    });
    m.case(PAIR, "out-of-range:index", |c| {
        let r = doctor_report();
        let mut p = Poison::<vkcuda_doctor_device_pair>::new();
        let res = unsafe { vkcuda_doctor_report_get_device_pair(r, u32::MAX, p.ptr()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        c.refused(res, &[I]);
        p.untouched();
        Ran
    });
    m.case(PAIR, "null:pair", |c| {
        let r = doctor_report();
        let res = unsafe { vkcuda_doctor_report_get_device_pair(r, 0, ptr::null_mut()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        c.refused(res, &[N]);
        Ran
    });

    const JSON: &str = "vkcuda_doctor_report_get_json";
    m.case(JSON, "null:report", |c| {
        let mut j = Poison::<*const std::ffi::c_char>::new();
        c.refused(
            unsafe { vkcuda_doctor_report_get_json(ptr::null(), j.ptr()) },
            &[N],
        );
        j.untouched();
        Ran
    });
    m.case(JSON, "null:json", |c| {
        let r = doctor_report();
        let res = unsafe { vkcuda_doctor_report_get_json(r, ptr::null_mut()) };
        unsafe { vkcuda_doctor_report_destroy(r) };
        c.refused(res, &[N]);
        Ran
    });

    const DESTROY: &str = "vkcuda_doctor_report_destroy";
    m.case(DESTROY, "null-ok:report", |_| {
        unsafe { vkcuda_doctor_report_destroy(ptr::null_mut()) };
        Ran
    });
}
