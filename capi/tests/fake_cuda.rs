//! The CUDA paths against a stand-in driver (tests/fake_cuda/libcuda.c) whose one
//! device matches no Vulkan device: pairing must fail with DEVICE_MISMATCH naming
//! both UUIDs, a driver without cuMemCreate, whose cuInit fails or that reports
//! CUDA 11.1 must give CUDA_UNAVAILABLE, and nothing may leak. With two fake
//! devices (one with the UUID of Vulkan device 0) pairing must pick the twin by
//! UUID, and the other device's context, stream and descriptions must be refused
//! naming both devices; CUDA_VISIBLE_DEVICES is honoured as the real driver does.
//! Each case runs in a child process (the driver is loaded once per process) that
//! runs one of the ignored tests below.

mod support;
use support::*;

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
        .env_remove(vkcuda::pairing::CUDA_DISABLE_ENV)
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
fn fake_driver_version_too_old() {
    run_child(
        "child_version_too_old",
        &fake_cuda_driver("fake-cuda-version-old", &[]),
        &[("FAKE_CUDA_VERSION", "11010")],
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
    let vk_uuid = vkcuda::pairing::format_uuid(&s.device_uuid);
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

#[test]
#[ignore = "runs in a child process of fake_driver_version_too_old"]
fn child_version_too_old() {
    let Some(msg) = driver_refused("child_version_too_old") else {
        return;
    };
    assert!(
        msg.contains("too old") && msg.contains("CUDA 11.1 (11010)") && msg.contains("11.2"),
        "{msg}"
    );
    assert!(
        msg.contains("TIMELINE_SEMAPHORE_FD") && msg.contains("525"),
        "names what needs the version and the fix: {msg}"
    );
    let mut ctx = ptr::null_mut();
    let again = fails(
        unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) },
        VKCUDA_ERROR_CUDA_UNAVAILABLE,
    );
    assert!(again.contains("CUDA 11.1 (11010)"), "{again}");
}

// --- Several CUDA devices (issue: every Vulkan device paired with its own CUDA
// device). The fake driver lists two devices: 0 with a UUID no Vulkan device has,
// 1 with the UUID of Vulkan device 0 (lavapipe here, the GPU on the GPU machine).
// Pairing must pick ordinal 1, by UUID, whatever is current or first.

/// The UUID of Vulkan device 0, asked in the parent process.
fn vulkan_device0_uuid() -> [u8; 16] {
    let mut n = 1u32;
    let mut s: vkcuda_physical_device_support = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut n, &mut s) });
    assert_eq!(n, 1, "a Vulkan device");
    s.device_uuid
}

const FAKE0: [u8; 16] = [0xab; 16];

fn two_devices_env(visible: Option<&str>) -> Vec<(&'static str, String)> {
    let uuids = format!("{},{}", uuid_hex(&FAKE0), uuid_hex(&vulkan_device0_uuid()));
    let mut env = vec![
        ("FAKE_CUDA_UUIDS", uuids),
        ("VKCUDA_TEST_VK_UUID", uuid_hex(&vulkan_device0_uuid())),
    ];
    if let Some(v) = visible {
        env.push(("CUDA_VISIBLE_DEVICES", v.to_string()));
    }
    env
}

fn run_two(case: &str, dir: &str, visible: Option<&str>) {
    let env = two_devices_env(visible);
    let mut pairs: Vec<(&str, Option<&str>)> =
        env.iter().map(|(k, v)| (*k, Some(v.as_str()))).collect();
    if visible.is_none() {
        pairs.push(("CUDA_VISIBLE_DEVICES", None));
    }
    support::children::run_child(case, &fake_cuda_driver(dir, &[]), &pairs);
}

#[test]
fn fake_driver_two_devices_pair_by_uuid() {
    run_two("child_two_devices", "fake-cuda-two", None);
}

#[test]
fn fake_driver_visible_devices_twin_only() {
    // CUDA_VISIBLE_DEVICES=1: CUDA sees only the twin, as its ordinal 0.
    run_two("child_visible_twin", "fake-cuda-visible-1", Some("1"));
}

#[test]
fn fake_driver_visible_devices_no_twin() {
    // CUDA_VISIBLE_DEVICES=0: CUDA sees only the other device; Vulkan device 0 has
    // no twin and must get the clear mismatch error.
    run_two("child_visible_no_twin", "fake-cuda-visible-0", Some("0"));
}

fn test_vk_uuid() -> [u8; 16] {
    let hex = std::env::var("VKCUDA_TEST_VK_UUID").expect("set by the parent");
    let mut u = [0u8; 16];
    for (i, b) in u.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    u
}

/// A function of the loaded fake driver (the library loaded it as libcuda.so).
unsafe fn fake_fn(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    let h = libc::dlopen(c"libcuda.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
    assert!(!h.is_null(), "the fake driver is loaded");
    let f = libc::dlsym(h, name.as_ptr());
    assert!(!f.is_null(), "{name:?} in the fake driver");
    f
}

/// The fake primary context of CUDA device `ordinal` (what a framework on that GPU holds).
fn fake_context(ordinal: i32) -> *mut CUctx_st {
    type Retain = unsafe extern "C" fn(*mut *mut CUctx_st, i32) -> i32;
    let retain: Retain = unsafe { std::mem::transmute(fake_fn(c"cuDevicePrimaryCtxRetain")) };
    let mut ctx = ptr::null_mut();
    assert_eq!(unsafe { retain(&mut ctx, ordinal) }, 0);
    ctx
}

fn cuda_info(ctx: *const vkcuda_context) -> vkcuda_cuda_info {
    let mut info: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut info) });
    info
}

fn doctor_pairs() -> Vec<(i32, i32)> {
    let mut report = ptr::null_mut();
    ok(unsafe { vkcuda_doctor_run(ptr::null(), &mut report) });
    let mut s: vkcuda_doctor_summary = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_doctor_report_get_summary(report, &mut s) });
    let pairs = (0..s.device_pair_count)
        .map(|i| {
            let mut p: vkcuda_doctor_device_pair = unsafe { std::mem::zeroed() };
            ok(unsafe { vkcuda_doctor_report_get_device_pair(report, i, &mut p) });
            (p.vulkan_index, p.cuda_ordinal)
        })
        .collect();
    unsafe { vkcuda_doctor_report_destroy(report) };
    pairs
}

#[test]
#[ignore = "runs in a child process of fake_driver_two_devices_pair_by_uuid"]
fn child_two_devices() {
    if !in_child("child_two_devices") {
        return;
    }
    let vk_uuid = test_vk_uuid();
    let fake0 = vkcuda::pairing::format_uuid(&FAKE0);
    let vk_text = vkcuda::pairing::format_uuid(&vk_uuid);

    // The query says ordinal 1.
    let mut n = 1u32;
    let mut s: vkcuda_physical_device_support = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut n, &mut s) });
    assert_eq!((s.cuda_device_found, s.cuda_device_ordinal), (1, 1));

    // Device 0's context is current on this thread: pairing must not take it.
    type Push = unsafe extern "C" fn(*mut CUctx_st) -> i32;
    type Pop = unsafe extern "C" fn(*mut *mut CUctx_st) -> i32;
    type GetDevice = unsafe extern "C" fn(*mut i32) -> i32;
    let push: Push = unsafe { std::mem::transmute(fake_fn(c"cuCtxPushCurrent_v2")) };
    let pop: Pop = unsafe { std::mem::transmute(fake_fn(c"cuCtxPopCurrent_v2")) };
    let get_device: GetDevice = unsafe { std::mem::transmute(fake_fn(c"cuCtxGetDevice")) };
    let ctx0 = fake_context(0);
    assert_eq!(unsafe { push(ctx0) }, 0);

    // A standalone context pairs with CUDA device 1.
    let mut standalone = ptr::null_mut();
    ok(unsafe { vkcuda_context_create_standalone(ptr::null(), &mut standalone) });
    let info = cuda_info(standalone);
    assert_eq!(info.device_ordinal, 1, "the twin by UUID, not device 0");
    assert_eq!(info.device_uuid, vk_uuid);
    assert_eq!(info.primary, 1);
    let mut current = -1;
    assert_eq!(unsafe { get_device(&mut current) }, 0);
    assert_eq!(current, 0, "the caller's current context is restored");

    // An engine's context: the primary context of device 1 by default.
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let mut info = e.create_info(0);
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    assert_eq!(cuda_info(ctx).device_ordinal, 1);
    unsafe { vkcuda_context_destroy(ctx) };

    // The caller's CUcontext of GPU 0 with the Vulkan device of GPU 1: refused, naming both.
    info.cuda_context = ctx0;
    let msg = fails(
        unsafe { vkcuda_context_create(&info, &mut ctx) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(ctx.is_null());
    assert!(
        msg.contains(&vk_text) && msg.contains(&fake0) && msg.contains("'vkcuda fake GPU'"),
        "names both devices: {msg}"
    );
    // The caller's CUcontext of the twin is taken.
    info.cuda_context = fake_context(1);
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    let borrowed = cuda_info(ctx);
    assert_eq!((borrowed.device_ordinal, borrowed.primary), (1, 0));

    // A CUDA stream of GPU 0 given to GPU 1's context: refused, naming both.
    // (Through the Rust API: the fake driver has no call that takes a stream.)
    use vkcuda::context::{Context, CudaChoice};
    let c1 = Context::standalone(None, CudaChoice::Primary).unwrap();
    type Stream = unsafe extern "C" fn(i32) -> *mut std::ffi::c_void;
    let stream_of: Stream = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_stream")) };
    let e0 = c1.check_stream(unsafe { stream_of(0) }.cast()).unwrap_err();
    assert_eq!(e0.kind, vkcuda::ErrorKind::DeviceMismatch);
    assert!(
        e0.message.contains(&fake0) && e0.message.contains(&vk_text),
        "names both devices: {}",
        e0.message
    );
    c1.check_stream(unsafe { stream_of(1) }.cast()).unwrap();
    drop(c1);

    // A cross-process description from GPU 0 imported by a context on GPU 1.
    let vonly = vulkan_only_context();
    let b = create_buffer(vonly, 4096, 0);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_describe(b, &mut d) });
    d.device_uuid = FAKE0;
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    let mut imported = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_buffer_import_description(ctx, &d, fd, 0, &mut imported) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(
        msg.contains(&fake0) && msg.contains(&vk_text),
        "names both devices: {msg}"
    );
    assert!(
        fd_is_open(fd),
        "a failed import leaves the fd to the caller"
    );
    unsafe {
        libc::close(fd);
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(vonly);
        vkcuda_context_destroy(ctx);
        vkcuda_context_destroy(standalone);
    }
    drop(e);

    // The doctor's table: Vulkan 0 with CUDA 1, and CUDA 0 alone.
    assert_eq!(doctor_pairs(), vec![(0, 1), (-1, 0)]);
    let mut out = ptr::null_mut();
    assert_eq!(unsafe { pop(&mut out) }, 0);
    assert_eq!(out, ctx0);
}

#[test]
#[ignore = "runs in a child process of fake_driver_visible_devices_twin_only"]
fn child_visible_twin() {
    if !in_child("child_visible_twin") {
        return;
    }
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) });
    let info = cuda_info(ctx);
    assert_eq!(info.device_ordinal, 0, "the only CUDA device is the twin");
    assert_eq!(info.device_uuid, test_vk_uuid());
    unsafe { vkcuda_context_destroy(ctx) };
    assert_eq!(doctor_pairs(), vec![(0, 0)]);
}

#[test]
#[ignore = "runs in a child process of fake_driver_visible_devices_no_twin"]
fn child_visible_no_twin() {
    if !in_child("child_visible_no_twin") {
        return;
    }
    let vk_text = vkcuda::pairing::format_uuid(&test_vk_uuid());
    let mut ctx = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(
        msg.contains(&vk_text) && msg.contains(&vkcuda::pairing::format_uuid(&FAKE0)),
        "{msg}"
    );
    // The doctor: no twin for Vulkan 0, CUDA 0 alone.
    assert_eq!(doctor_pairs(), vec![(0, -1), (-1, 0)]);
}

// --- Sticky errors (issue 29, item 11). The stand-in raises a sticky CUDA error
// (CUDA_ERROR_ILLEGAL_ADDRESS, as a faulting kernel does) on the second
// cuExternalMemoryGetMappedBuffer: the call that sees it and every later call on
// the context, its objects and every other library context on the same CUDA
// context return VKCUDA_ERROR_DEVICE_LOST naming the first error; destroy still
// releases everything.

#[test]
fn fake_driver_sticky_error_loses_the_context() {
    for (code, name) in [
        ("700", "CUDA_ERROR_ILLEGAL_ADDRESS"),
        ("719", "CUDA_ERROR_LAUNCH_FAILED"),
    ] {
        let uuid = uuid_hex(&vulkan_device0_uuid());
        let out = support::children::run_child(
            "child_sticky_error",
            &fake_cuda_driver("fake-cuda-sticky", &[]),
            &[
                ("FAKE_CUDA_UUIDS", Some(uuid.as_str())),
                (
                    "FAKE_CUDA_STICKY",
                    Some("cuExternalMemoryGetMappedBuffer:2"),
                ),
                ("FAKE_CUDA_STICKY_CODE", Some(code)),
                ("VKCUDA_TEST_STICKY_NAME", Some(name)),
                ("CUDA_VISIBLE_DEVICES", None),
            ],
        );
        println!("{out}");
        println!(
            "a sticky {name} ({code}) loses the context: every call says so, destroy releases all"
        );
    }
}

#[test]
#[ignore = "runs in a child process of fake_driver_sticky_error_loses_the_context"]
fn child_sticky_error() {
    if !support::children::in_child("child_sticky_error") {
        return;
    }
    let name = std::env::var("VKCUDA_TEST_STICKY_NAME").unwrap();
    type Live = unsafe extern "C" fn() -> i32;

    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let info = e.create_info(0);
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut ctx) });
    // A second library context on the same (primary) CUDA context.
    let mut other = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&info, &mut other) });
    // Another VkDevice without CUDA: not touched by the loss.
    let vonly = vulkan_only_context();
    let live: Live = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_live")) };

    // The first mapping works; the second raises the sticky error. The stand-in maps
    // Vulkan memory through its fd, which memfd-backed drivers (lavapipe) allow and
    // NVIDIA's opaque fds do not: on an NVIDIA device (the GPU machine, where this
    // binary runs too) there is nothing to map, so nothing to test here; the real
    // driver's sticky fault is tests/faults.rs's gpu_sticky_fault_loses_the_context.
    let mut a = ptr::null_mut();
    let r = unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(65536, 0), &mut a) };
    if r == VKCUDA_ERROR_CUDA
        && last_error()
            .contains("cuExternalMemoryGetMappedBuffer failed with CUDA_ERROR_INVALID_VALUE")
    {
        println!(
            "SKIPPED: child_sticky_error: the stand-in driver cannot map this device's memory \
             (not memfd-backed): {}",
            last_error()
        );
        unsafe {
            vkcuda_context_destroy(vonly);
            vkcuda_context_destroy(other);
            vkcuda_context_destroy(ctx);
        }
        return;
    }
    ok(r);
    let a_info = buffer_info(a);
    let mut b = ptr::null_mut();
    let first = fails(
        unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(65536, 0), &mut b) },
        VKCUDA_ERROR_DEVICE_LOST,
    );
    println!("the failing call: {first}");
    assert!(b.is_null());
    for want in [
        name.as_str(),
        "cuExternalMemoryGetMappedBuffer",
        "sticky",
        "restart the process",
    ] {
        assert!(first.contains(want), "the message names {want:?}: {first}");
    }

    // Every later call on the context, its buffer and the other context on the
    // same CUDA context: DEVICE_LOST, naming the first error.
    let mut fd = -1;
    let mut cuda = unsafe { std::mem::zeroed::<vkcuda_cuda_info>() };
    let mut got = unsafe { std::mem::zeroed::<vkcuda_buffer_info>() };
    let mut p = 0u64;
    let later: [(&str, vkcuda_result); 6] = [
        ("vkcuda_buffer_create", unsafe {
            vkcuda_buffer_create(ctx, &buffer_create_info(4096, 0), &mut b)
        }),
        ("vkcuda_buffer_get_info", unsafe {
            vkcuda_buffer_get_info(a, &mut got)
        }),
        ("vkcuda_buffer_get_cuda_pointer", unsafe {
            vkcuda_buffer_get_cuda_pointer(a, &mut p)
        }),
        ("vkcuda_buffer_export_fd", unsafe {
            vkcuda_buffer_export_fd(a, &mut fd)
        }),
        ("vkcuda_context_get_cuda_info", unsafe {
            vkcuda_context_get_cuda_info(ctx, &mut cuda)
        }),
        (
            "vkcuda_buffer_create (another context, same CUDA context)",
            unsafe { vkcuda_buffer_create(other, &buffer_create_info(4096, 0), &mut b) },
        ),
    ];
    for (call, r) in later {
        let msg = fails(r, VKCUDA_ERROR_DEVICE_LOST);
        assert!(
            msg.contains(&name) && msg.contains("earlier call"),
            "{call} names the first error: {msg}"
        );
        println!("later: {call}: {}", vkcuda_result_name(r));
    }
    assert!(
        b.is_null() && fd == -1 && p == 0,
        "outputs untouched / NULL"
    );

    // The Vulkan-only context on another VkDevice still works.
    let c = create_buffer(vonly, 4096, 0);
    unsafe { vkcuda_buffer_destroy(c) };

    // Destroy releases everything, CUDA's side included (the stand-in releases
    // even after the error, so its count shows the library asked).
    unsafe {
        vkcuda_buffer_destroy(a);
        vkcuda_context_destroy(other);
        vkcuda_context_destroy(ctx);
        vkcuda_context_destroy(vonly);
    }
    drop(e);
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        unsafe { live() },
        0,
        "the stand-in's allocations, imports and retains"
    );
    let _ = a_info;
}

fn vkcuda_result_name(r: vkcuda_result) -> String {
    let s =
        unsafe { std::ffi::CStr::from_ptr(vkcuda_result_to_string(vkcuda_result_raw(r as i32))) };
    s.to_string_lossy().into_owned()
}

// --- Sticky errors met in a destroy (issue 39, items 2 and 3). The stand-in
// raises the sticky error in a release call of the first buffer destroyed
// (its mapping's cuMemFree, or its import's cuDestroyExternalMemory): that call
// is the one the loss names, and the sibling buffer answers DEVICE_LOST from
// then on. With FAKE_CUDA_STICKY_EVERYWHERE the library cannot even make the
// lost context current (cuPointerGetAttribute and cuCtxPushCurrent answer the
// sticky error too): destroy still calls every release, so the fds the driver
// holds for its imports are closed.

fn sticky_env<'a>(
    uuid: &'a str,
    sticky: &'a str,
    everywhere: bool,
) -> Vec<(&'a str, Option<&'a str>)> {
    vec![
        ("FAKE_CUDA_UUIDS", Some(uuid)),
        ("FAKE_CUDA_STICKY", Some(sticky)),
        ("FAKE_CUDA_STICKY_CODE", None),
        ("FAKE_CUDA_STICKY_EVERYWHERE", everywhere.then_some("1")),
        ("CUDA_VISIBLE_DEVICES", None),
    ]
}

#[test]
fn fake_driver_sticky_error_in_a_destroy_is_recorded() {
    let uuid = uuid_hex(&vulkan_device0_uuid());
    for call in ["cuMemFree_v2", "cuDestroyExternalMemory"] {
        let mut env = sticky_env(&uuid, call, false);
        env.push(("VKCUDA_TEST_STICKY_CALL", Some(call)));
        let out = support::children::run_child(
            "child_sticky_error_in_a_destroy",
            &fake_cuda_driver("fake-cuda-sticky", &[]),
            &env,
        );
        println!("{out}");
    }
}

/// Creates a CUDA context on the engine's device with the stand-in paired, and
/// one Vulkan-allocated buffer; None (after saying why) where the stand-in
/// cannot map this device's memory (not memfd-backed: NVIDIA's opaque fds).
fn paired_with_a_buffer(
    case: &str,
    e: &EngineDevice,
) -> Option<(*mut vkcuda_context, *mut vkcuda_buffer)> {
    let mut ctx = ptr::null_mut();
    ok(unsafe { vkcuda_context_create(&e.create_info(0), &mut ctx) });
    let mut a = ptr::null_mut();
    let r = unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(65536, 0), &mut a) };
    if r == VKCUDA_ERROR_CUDA
        && last_error()
            .contains("cuExternalMemoryGetMappedBuffer failed with CUDA_ERROR_INVALID_VALUE")
    {
        println!(
            "SKIPPED: {case}: the stand-in driver cannot map this device's memory (not \
             memfd-backed): {}",
            last_error()
        );
        unsafe { vkcuda_context_destroy(ctx) };
        return None;
    }
    ok(r);
    Some((ctx, a))
}

#[test]
#[ignore = "runs in a child process of fake_driver_sticky_error_in_a_destroy_is_recorded"]
fn child_sticky_error_in_a_destroy() {
    if !support::children::in_child("child_sticky_error_in_a_destroy") {
        return;
    }
    let call = std::env::var("VKCUDA_TEST_STICKY_CALL").unwrap();
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let fds = fd_count();
    let Some((ctx, a)) = paired_with_a_buffer("child_sticky_error_in_a_destroy", &e) else {
        return;
    };
    let b = create_buffer(ctx, 65536, 0);
    // Destroying A meets the sticky error in its release call.
    unsafe { vkcuda_buffer_destroy(a) };
    let want = format!("{call} failed with CUDA_ERROR_ILLEGAL_ADDRESS");
    let names_it = |what: &str, r: vkcuda_result| {
        // Read at once: the message is the thread's last one.
        let m = fails(r, VKCUDA_ERROR_DEVICE_LOST);
        println!("{what} after the destroy that met {call}'s error: {m}");
        assert!(m.contains(&want), "{what} names {call}: {m}");
        assert!(!m.contains("cuImportExternalMemory"), "{m}");
    };
    let mut info: vkcuda_buffer_info = unsafe { std::mem::zeroed() };
    names_it("vkcuda_buffer_get_info(B)", unsafe {
        vkcuda_buffer_get_info(b, &mut info)
    });
    let mut c = ptr::null_mut();
    names_it("vkcuda_buffer_create", unsafe {
        vkcuda_buffer_create(ctx, &buffer_create_info(4096, 0), &mut c)
    });
    assert!(c.is_null());
    type Live = unsafe extern "C" fn() -> i32;
    let live: Live = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_live")) };
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        unsafe { live() },
        0,
        "the stand-in's allocations, imports and retains"
    );
    assert_eq!(fd_count(), fds, "the imports' fds are closed");
    drop(e);
}

#[test]
fn fake_driver_lost_context_destroy_closes_the_fds() {
    let uuid = uuid_hex(&vulkan_device0_uuid());
    // The third mapping raises the error; A and B were made before it.
    let env = sticky_env(&uuid, "cuExternalMemoryGetMappedBuffer:3", true);
    let out = support::children::run_child(
        "child_lost_context_destroy_closes_the_fds",
        &fake_cuda_driver("fake-cuda-sticky", &[]),
        &env,
    );
    println!("{out}");
}

#[test]
#[ignore = "runs in a child process of fake_driver_lost_context_destroy_closes_the_fds"]
fn child_lost_context_destroy_closes_the_fds() {
    let case = "child_lost_context_destroy_closes_the_fds";
    if !support::children::in_child(case) {
        return;
    }
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let fds = fd_count();
    let Some((ctx, a)) = paired_with_a_buffer(case, &e) else {
        return;
    };
    let b = create_buffer(ctx, 65536, 0);
    let held = fd_count();
    println!("fds: {fds} before, {held} with two buffers (the driver holds their imports' fds)");
    let mut c = ptr::null_mut();
    let m = fails(
        unsafe { vkcuda_buffer_create(ctx, &buffer_create_info(65536, 0), &mut c) },
        VKCUDA_ERROR_DEVICE_LOST,
    );
    assert!(m.contains("cuExternalMemoryGetMappedBuffer"), "{m}");
    // The context cannot even be made current now.
    let mut p = 0u64;
    fails(
        unsafe { vkcuda_buffer_get_cuda_pointer(a, &mut p) },
        VKCUDA_ERROR_DEVICE_LOST,
    );
    type Live = unsafe extern "C" fn() -> i32;
    let live: Live = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_live")) };
    unsafe {
        vkcuda_buffer_destroy(a);
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        unsafe { live() },
        0,
        "the stand-in's allocations, mappings, imports and retains"
    );
    assert_eq!(
        fd_count(),
        fds,
        "every fd the driver held for the imports is closed ({held} with the buffers)"
    );
    drop(e);
}

// --- Pitched copies from addresses CUDA knows nothing of (issue 39, item 4).
// The stand-in (built with its arrays) knows its cuMemAlloc blocks and the
// mappings of imported memory through cuMemGetAddressRange; its
// cuMemcpy2DAsync copies between them and level arrays, and a copy that touches
// anything else "faults" (raises the sticky error). A copy from such an address
// must be refused with INVALID_ARGUMENT naming the plane and the address, with
// nothing enqueued; copies from known memory go through and land. The images are
// the two single-plane images of an NV12 frame (R8 luma, R8G8 CbCr): lavapipe
// has no linear NV12 for a shared video frame (the GPU test covers frames).

#[test]
fn fake_driver_pitched_copy_refuses_unknown_addresses() {
    let uuid = uuid_hex(&vulkan_device0_uuid());
    let out = support::children::run_child(
        "child_pitched_copy_unknown_addresses",
        &fake_cuda_driver("fake-cuda-arrays", &["-DWITH_ARRAYS"]),
        &[
            ("FAKE_CUDA_UUIDS", Some(uuid.as_str())),
            ("FAKE_CUDA_STICKY", None),
            ("FAKE_CUDA_STICKY_EVERYWHERE", None),
            ("CUDA_VISIBLE_DEVICES", None),
        ],
    );
    println!("{out}");
}

type PushFn = unsafe extern "C" fn(*mut CUctx_st) -> i32;
type PopFn = unsafe extern "C" fn(*mut *mut CUctx_st) -> i32;
type AllocFn = unsafe extern "C" fn(*mut u64, usize) -> i32;
type FreeFn = unsafe extern "C" fn(u64) -> i32;
type CountFn = unsafe extern "C" fn() -> i32;

/// The stand-in's functions the pitched-copy child calls itself.
struct FakeMemory {
    ctx: *mut CUctx_st,
    push: PushFn,
    pop: PopFn,
    alloc: AllocFn,
    free: FreeFn,
    copies: CountFn,
    range_queries: CountFn,
}

impl FakeMemory {
    fn of(ctx: *const vkcuda_context) -> FakeMemory {
        unsafe {
            FakeMemory {
                ctx: cuda_info(ctx).cuda_context,
                push: std::mem::transmute::<*mut std::ffi::c_void, PushFn>(fake_fn(
                    c"cuCtxPushCurrent_v2",
                )),
                pop: std::mem::transmute::<*mut std::ffi::c_void, PopFn>(fake_fn(
                    c"cuCtxPopCurrent_v2",
                )),
                alloc: std::mem::transmute::<*mut std::ffi::c_void, AllocFn>(fake_fn(
                    c"cuMemAlloc_v2",
                )),
                free: std::mem::transmute::<*mut std::ffi::c_void, FreeFn>(fake_fn(
                    c"cuMemFree_v2",
                )),
                copies: std::mem::transmute::<*mut std::ffi::c_void, CountFn>(fake_fn(
                    c"fake_cuda_copies",
                )),
                range_queries: std::mem::transmute::<*mut std::ffi::c_void, CountFn>(fake_fn(
                    c"fake_cuda_range_queries",
                )),
            }
        }
    }

    /// `f` with the context current, as the caller's own CUDA code would run.
    fn within<T>(&self, f: impl FnOnce() -> T) -> T {
        assert_eq!(unsafe { (self.push)(self.ctx) }, 0);
        let out = f();
        let mut popped = ptr::null_mut();
        assert_eq!(unsafe { (self.pop)(&mut popped) }, 0);
        out
    }

    /// A cuMemAlloc block (host memory in the stand-in) of `size` bytes.
    fn alloc(&self, size: usize) -> u64 {
        let mut p = 0;
        self.within(|| assert_eq!(unsafe { (self.alloc)(&mut p, size) }, 0));
        p
    }

    fn free(&self, p: u64) {
        self.within(|| assert_eq!(unsafe { (self.free)(p) }, 0));
    }

    fn copies(&self) -> i32 {
        unsafe { (self.copies)() }
    }

    /// How many times the library asked cuMemGetAddressRange.
    fn range_queries(&self) -> i32 {
        unsafe { (self.range_queries)() }
    }
}

fn one_plane(pointer: u64, pitch: u64) -> vkcuda_pitched_planes {
    let zero = vkcuda_pitched_plane {
        device_pointer: 0,
        pitch: 0,
    };
    vkcuda_pitched_planes {
        flags: 0,
        plane_count: 1,
        planes: [
            vkcuda_pitched_plane {
                device_pointer: pointer,
                pitch,
            },
            zero,
            zero,
        ],
    }
}

#[test]
#[ignore = "runs in a child process of fake_driver_pitched_copy_refuses_unknown_addresses"]
fn child_pitched_copy_unknown_addresses() {
    let case = "child_pitched_copy_unknown_addresses";
    if !support::children::in_child(case) {
        return;
    }
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let Some((ctx, probe)) = paired_with_a_buffer(case, &e) else {
        return;
    };
    unsafe { vkcuda_buffer_destroy(probe) };
    let (w, h) = (64u32, 32u32);
    let luma = support::images::create(ctx, &image_desc(0, ash::vk::Format::R8_UNORM, w, h, 1));
    let chroma = support::images::create(
        ctx,
        &image_desc(0, ash::vk::Format::R8G8_UNORM, w / 2, h / 2, 1),
    );
    let m = FakeMemory::of(ctx);
    // A decoder-shaped frame: luma rows, then CbCr rows, one pitch.
    let (pitch, rows) = (128usize, (h + h / 2) as usize);
    let src = m.alloc(pitch * rows);
    let src_chroma = src + (pitch * h as usize) as u64;
    let host = vec![0u8; 1 << 16];
    type Copy = unsafe extern "C" fn(
        *const vkcuda_image,
        *const vkcuda_pitched_planes,
        *mut CUstream_st,
    ) -> vkcuda_result;
    let calls: [(&str, Copy); 2] = [
        ("copy_from_pitched", vkcuda_image_cuda_copy_from_pitched),
        ("copy_to_pitched", vkcuda_image_cuda_copy_to_pitched),
    ];
    for (name, call) in calls {
        for (what, bad) in [
            ("0x10000", 0x10000u64),
            ("host memory", host.as_ptr() as u64),
            ("just past the allocation", src + (pitch * rows) as u64),
        ] {
            for image in [luma, chroma] {
                let before = m.copies();
                let msg = fails(
                    unsafe { call(image, &one_plane(bad, pitch as u64), ptr::null_mut()) },
                    VKCUDA_ERROR_INVALID_ARGUMENT,
                );
                assert_eq!(m.copies(), before, "{name} from {what}: nothing enqueued");
                for want in [
                    "plane 0",
                    "in no allocation CUDA knows",
                    "cuMemGetAddressRange failed with CUDA_ERROR_INVALID_VALUE",
                    "nothing was copied",
                    &format!("{bad:#x}"),
                ] {
                    assert!(msg.contains(want), "{name} from {what}: {want:?}: {msg}");
                }
                if image == luma {
                    println!("{name} with {what}: {msg}");
                }
            }
        }
        // Rows that end past the end of a known allocation.
        let before = m.copies();
        let msg = fails(
            unsafe {
                call(
                    chroma,
                    &one_plane(src_chroma + 65, pitch as u64),
                    ptr::null_mut(),
                )
            },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            msg.contains("runs 1 bytes past the end of its CUDA allocation"),
            "{msg}"
        );
        assert_eq!(m.copies(), before);
    }
    // Nothing faulted: the context is not lost.
    cuda_info(ctx);

    // Known memory: the copies go through and land, every byte checked on the
    // way back out into a second allocation of another pitch.
    let bytes: Vec<u8> = (0..pitch * rows)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
        .collect();
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), src as *mut u8, bytes.len()) };
    let (before, queries) = (m.copies(), m.range_queries());
    for _ in 0..3 {
        ok(unsafe {
            vkcuda_image_cuda_copy_from_pitched(
                luma,
                &one_plane(src, pitch as u64),
                ptr::null_mut(),
            )
        });
        ok(unsafe {
            vkcuda_image_cuda_copy_from_pitched(
                chroma,
                &one_plane(src_chroma, pitch as u64),
                ptr::null_mut(),
            )
        });
    }
    assert_eq!(m.copies(), before + 6, "one copy a call");
    // Both planes lie in one allocation: looked up once for six calls, then
    // remembered (the per-frame cost, issue 39 item 14).
    assert_eq!(m.range_queries(), queries + 1, "range lookups for 6 calls");
    let out_pitch = 96usize;
    let dst = m.alloc(out_pitch * rows);
    unsafe { std::ptr::write_bytes(dst as *mut u8, 0xEE, out_pitch * rows) };
    ok(unsafe {
        vkcuda_image_cuda_copy_to_pitched(luma, &one_plane(dst, out_pitch as u64), ptr::null_mut())
    });
    ok(unsafe {
        vkcuda_image_cuda_copy_to_pitched(
            chroma,
            &one_plane(dst + (out_pitch * h as usize) as u64, out_pitch as u64),
            ptr::null_mut(),
        )
    });
    assert_eq!(
        m.range_queries(),
        queries + 2,
        "one lookup for the new allocation"
    );
    let back = unsafe { std::slice::from_raw_parts(dst as *const u8, out_pitch * rows) };
    let (mut wrong, mut padding) = (0, 0);
    for y in 0..rows {
        for x in 0..out_pitch {
            let got = back[y * out_pitch + x];
            if x < w as usize {
                wrong += usize::from(got != bytes[y * pitch + x]);
            } else {
                padding += usize::from(got != 0xEE);
            }
        }
    }
    assert_eq!(wrong, 0, "bytes of {rows} rows wrong after the round trip");
    assert_eq!(padding, 0, "padding bytes written");
    // Memory the library frees (a buffer's mapping) drops the remembered ranges:
    // the next copy looks its allocation up again, the one after does not.
    let queries = m.range_queries();
    let b = create_buffer(ctx, 65536, 0);
    unsafe { vkcuda_buffer_destroy(b) };
    for _ in 0..2 {
        ok(unsafe {
            vkcuda_image_cuda_copy_from_pitched(
                luma,
                &one_plane(src, pitch as u64),
                ptr::null_mut(),
            )
        });
    }
    assert_eq!(m.range_queries(), queries + 1, "looked up again once");
    println!(
        "copies from and to cuMemAlloc'd memory: {} bytes of both planes right, padding untouched",
        w as usize * rows
    );

    m.free(dst);
    m.free(src);
    type Live = unsafe extern "C" fn() -> i32;
    let live: Live = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_live")) };
    unsafe {
        vkcuda_image_destroy(chroma);
        vkcuda_image_destroy(luma);
        vkcuda_context_destroy(ctx);
    }
    assert_eq!(
        unsafe { live() },
        0,
        "the stand-in's arrays, imports and retains"
    );
    drop(host);
    drop(e);
}
