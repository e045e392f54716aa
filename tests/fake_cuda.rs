//! The CUDA paths against a stand-in driver (tests/fake_cuda/libcuda.c) whose one
//! device matches no Vulkan device: pairing must fail with DEVICE_MISMATCH naming
//! both UUIDs, a driver without cuMemCreate or whose cuInit fails must give
//! CUDA_UNAVAILABLE, and nothing may leak. Each case runs in a child process (the
//! driver is loaded once per process) that runs one of the ignored tests below.

mod common;
use common::*;

use std::path::Path;
use std::ptr;

/// Set in the child processes: the `child_*` tests do nothing without it (run with
/// `--include-ignored`, they would otherwise test whatever driver this machine has).
const CHILD_ENV: &str = "VKCUDA_FAKE_CUDA_CHILD";

/// Whether this process is a child of one of the tests; prints why not.
fn in_child(case: &str) -> bool {
    let child = std::env::var_os(CHILD_ENV).is_some();
    if !child {
        println!("{case}: not started by its parent test (no {CHILD_ENV}): nothing to do");
    }
    child
}

/// Runs the ignored test `case` in a child process that loads the fake driver of
/// `lib_dir` (and no other library from LD_LIBRARY_PATH).
fn run_child(case: &str, lib_dir: &Path, env: &[(&str, &str)]) {
    let out = this_test(case, true)
        .env(CHILD_ENV, "1")
        .env("LD_LIBRARY_PATH", lib_dir)
        .envs(env.iter().copied())
        .env_remove(vkcuda::cuda::DISABLE_ENV)
        .output()
        .unwrap();
    child_passed(case, &out);
}

#[test]
fn fake_driver_device_mismatch() {
    run_child(
        "child_device_mismatch",
        // One directory per test: tests run in parallel and must not rebuild a
        // library another test's child is loading.
        &fake_cuda_driver("fake-cuda-mismatch", &[]),
        &[],
    );
}

#[test]
fn fake_driver_too_old() {
    run_child(
        "child_driver_too_old",
        &fake_cuda_driver("fake-cuda-old", &["-DOMIT_MEM_CREATE"]),
        &[],
    );
}

#[test]
fn fake_driver_init_fails() {
    run_child(
        "child_init_fails",
        &fake_cuda_driver("fake-cuda-init-fails", &[]),
        &[("FAKE_CUDA_INIT_FAILS", "1")],
    );
}

#[test]
#[ignore = "runs in a child process of fake_driver_device_mismatch"]
fn child_device_mismatch() {
    if !in_child("child_device_mismatch") {
        return;
    }
    let mut v = 0;
    ok(unsafe { vkcuda_cuda_driver_get_version(&mut v) });
    assert_eq!(v, 12080, "the fake driver is the one loaded");
    let fds = fd_count();
    let mut ctx = 1usize as *mut vkcuda_context;
    let msg = fails(
        unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    println!("standalone: {msg}");
    assert!(ctx.is_null());
    assert!(
        msg.contains("abababab-abab-abab-abab-abababababab"),
        "names the CUDA UUID: {msg}"
    );
    assert!(msg.contains("vkcuda fake GPU"), "{msg}");
    assert!(msg.contains("UUID"), "{msg}");

    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let mut s: vkcuda_physical_device_support = unsafe { std::mem::zeroed() };
    ok(unsafe {
        vkcuda_physical_device_query(
            e.instance.handle(),
            e.physical,
            Some(e.entry.static_fn().get_instance_proc_addr),
            &mut s,
        )
    });
    assert_eq!(s.cuda_available, 1);
    assert_eq!(s.cuda_device_found, 0);
    assert_eq!(s.cuda_device_ordinal, -1);
    let vk_uuid = vkcuda::cuda::format_uuid(&s.device_uuid);
    let info = e.create_info(0);
    let msg = fails(
        unsafe { vkcuda_context_create(&info, &mut ctx) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    println!("engine: {msg}");
    assert!(
        msg.contains(&vk_uuid),
        "names the Vulkan UUID {vk_uuid}: {msg}"
    );
    assert!(ctx.is_null());
    assert_eq!(live_objects().contexts, 0, "nothing left behind");
    drop(e);
    assert_eq!(fd_count(), fds, "no fd left behind");
}

/// In a child: the library's message for a driver it cannot use (asking for the
/// driver's version fails with CUDA_UNAVAILABLE). None when not in a child.
fn driver_refused(case: &str) -> Option<String> {
    if !in_child(case) {
        return None;
    }
    let mut v = 0;
    Some(fails(
        unsafe { vkcuda_cuda_driver_get_version(&mut v) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    ))
}

#[test]
#[ignore = "runs in a child process of fake_driver_too_old"]
fn child_driver_too_old() {
    let Some(msg) = driver_refused("child_driver_too_old") else {
        return;
    };
    assert!(
        msg.contains("too old") && msg.contains("cuMemCreate"),
        "{msg}"
    );
    let mut ctx = ptr::null_mut();
    fails(
        unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    // Vulkan-only use is unaffected.
    let ctx = vulkan_only_context();
    unsafe { vkcuda_context_destroy(ctx) };
}

#[test]
#[ignore = "runs in a child process of fake_driver_init_fails"]
fn child_init_fails() {
    let Some(msg) = driver_refused("child_init_fails") else {
        return;
    };
    assert!(
        msg.contains("cuInit") && msg.contains("CUDA_ERROR_NO_DEVICE"),
        "{msg}"
    );
}
