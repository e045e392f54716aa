//! The CUDA paths against a stand-in driver (tests/fake_cuda/libcuda.c) whose one
//! device matches no Vulkan device: pairing must fail with DeviceMismatch naming
//! both UUIDs, a driver without cuMemCreate, whose cuInit fails or that reports
//! CUDA 11.1 must give CudaUnavailable, and nothing may leak. With two fake
//! devices (one with the UUID of Vulkan device 0) pairing must pick the twin by
//! UUID, and the other device's context, stream and descriptions must be refused
//! naming both devices; CUDA_VISIBLE_DEVICES is honoured as the real driver does.
//! Sticky errors lose the context (also when a drop meets them), and pitched
//! copies from addresses CUDA knows nothing of are refused. Each case runs in a
//! child process (the driver is loaded once per process) that runs one of the
//! ignored tests below. (Every C call refused at the door once a context is lost
//! is capi/tests/diagnostics.rs's `c_calls_on_a_lost_device_are_refused`.)

mod support;
use support::device::engine_context;
use support::*;

use std::os::fd::AsFd;
use std::ptr;
use std::sync::Arc;

use ash::vk;
use vkcuda::buffer::Allocator;
use vkcuda::context::BorrowedCudaContext;
use vkcuda::cuda_sys::{CUcontext, CUstream};
use vkcuda::image::{Description, PitchedPlane};
use vkcuda::pairing::{self, format_uuid};
use vkcuda::{ipc, Buffer, Context, CudaChoice, ErrorKind, Image};

/// Runs the ignored test `case` in a child process that loads the fake driver
/// built with `flags` in `dir` (and no other library from LD_LIBRARY_PATH). One
/// directory per test: tests run in parallel and must not rebuild a library
/// another test's child is loading.
fn run_fake_child(case: &str, dir: &str, flags: &[&str], env: &[(&str, &str)]) {
    let env: Vec<_> = env.iter().map(|&(k, v)| (k, Some(v))).collect();
    run_child(case, &fake_cuda_driver(dir, flags), &env);
}

fn buffer(ctx: &Arc<Context>, size: u64) -> vkcuda::Result<Buffer> {
    Buffer::create(ctx, size, vk::BufferUsageFlags::empty(), Allocator::Vulkan)
}

#[test]
fn fake_driver_device_mismatch() {
    run_fake_child("child_device_mismatch", "fake-cuda-mismatch", &[], &[]);
}

#[test]
fn fake_driver_too_old() {
    let omit = ["-DOMIT_MEM_CREATE"];
    run_fake_child("child_driver_too_old", "fake-cuda-old", &omit, &[]);
}

#[test]
fn fake_driver_init_fails() {
    let env = [("FAKE_CUDA_INIT_FAILS", "1")];
    run_fake_child("child_init_fails", "fake-cuda-init-fails", &[], &env);
}

#[test]
#[ignore = "runs in a child process of fake_driver_device_mismatch"]
fn child_device_mismatch() {
    child_only!("child_device_mismatch");
    let v = pairing::cuda_driver_version().unwrap();
    assert_eq!(v, 12080, "the fake driver is the one loaded");
    let fds = fd_count();
    let msg = fails_with(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::DeviceMismatch,
    );
    println!("standalone: {msg}");
    assert!(
        msg.contains("abababab-abab-abab-abab-abababababab"),
        "names the CUDA UUID: {msg}"
    );
    assert!(msg.contains("vkcuda fake GPU"), "{msg}");
    assert!(msg.contains("UUID"), "{msg}");

    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    // SAFETY: the engine's live instance and physical device.
    let report = unsafe {
        pairing::report(
            e.entry.static_fn().get_instance_proc_addr,
            e.instance.handle(),
            e.physical,
        )
    }
    .unwrap();
    assert!(report.cuda_available);
    assert_eq!(report.cuda_ordinal, None);
    assert!(!report.supported());
    let vk_uuid = format_uuid(&report.support.props.uuid);
    let msg = fails_with(
        engine_context(&e, CudaChoice::Primary),
        ErrorKind::DeviceMismatch,
    );
    println!("engine: {msg}");
    assert!(
        msg.contains(&vk_uuid),
        "names the Vulkan UUID {vk_uuid}: {msg}"
    );
    assert_eq!(live_objects().contexts, 0, "nothing left behind");
    drop(e);
    assert_eq!(fd_count(), fds, "no fd left behind");
}

/// In a child: the library's message for a driver it cannot use (asking for the
/// driver's version fails with CudaUnavailable). None when not in a child.
fn driver_refused(case: &str) -> Option<String> {
    if !in_child(case) {
        return None;
    }
    Some(fails_with(
        pairing::cuda_driver_version(),
        ErrorKind::CudaUnavailable,
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
    fails_with(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::CudaUnavailable,
    );
    // Vulkan-only use is unaffected.
    drop(buffer(&vulkan_only_context(), 4096).unwrap());
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

// --- Several CUDA devices (issue: every Vulkan device paired with its own CUDA
// device). The fake driver lists two devices: 0 with a UUID no Vulkan device has,
// 1 with the UUID of Vulkan device 0 (lavapipe here, the GPU on the GPU machine).
// Pairing must pick ordinal 1, by UUID, whatever is current or first.

/// The UUID of Vulkan device 0, asked in the parent process.
fn vulkan_device0_uuid() -> [u8; 16] {
    let list = pairing::enumerate().unwrap();
    assert!(!list.is_empty(), "a Vulkan device");
    list[0].as_ref().unwrap().support.props.uuid
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
    run_child(case, &fake_cuda_driver(dir, &[]), &pairs);
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
fn fake_fn(name: &std::ffi::CStr) -> *mut std::ffi::c_void {
    // SAFETY: dlopen with RTLD_NOLOAD of a loaded library, dlsym of a name.
    unsafe {
        let h = libc::dlopen(c"libcuda.so".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!h.is_null(), "the fake driver is loaded");
        let f = libc::dlsym(h, name.as_ptr());
        assert!(!f.is_null(), "{name:?} in the fake driver");
        f
    }
}

/// What the stand-in still holds (allocations, mappings, imports, retains).
fn fake_live() -> i32 {
    type Live = unsafe extern "C" fn() -> i32;
    // SAFETY: the stand-in's `int fake_cuda_live(void)`.
    unsafe { std::mem::transmute::<*mut std::ffi::c_void, Live>(fake_fn(c"fake_cuda_live"))() }
}

/// The fake primary context of CUDA device `ordinal` (what a framework on that GPU holds).
fn fake_context(ordinal: i32) -> CUcontext {
    type Retain = unsafe extern "C" fn(*mut CUcontext, i32) -> i32;
    let retain: Retain = unsafe { std::mem::transmute(fake_fn(c"cuDevicePrimaryCtxRetain")) };
    let mut ctx = ptr::null_mut();
    assert_eq!(unsafe { retain(&mut ctx, ordinal) }, 0);
    ctx
}

/// The doctor's table: (Vulkan index, CUDA ordinal), -1 for none.
fn doctor_pairs() -> Vec<(i32, i32)> {
    let report = vkcuda::doctor::run(&vkcuda::doctor::Options::default());
    report
        .pairs
        .iter()
        .map(|p| {
            (
                p.vulkan_index.map_or(-1, |v| v as i32),
                p.cuda_ordinal.unwrap_or(-1),
            )
        })
        .collect()
}

#[test]
#[ignore = "runs in a child process of fake_driver_two_devices_pair_by_uuid"]
fn child_two_devices() {
    child_only!("child_two_devices");
    let vk_uuid = test_vk_uuid();
    let fake0 = format_uuid(&FAKE0);
    let vk_text = format_uuid(&vk_uuid);

    // The report says ordinal 1.
    let list = pairing::enumerate().unwrap();
    assert_eq!(list[0].as_ref().unwrap().cuda_ordinal, Some(1));

    // Device 0's context is current on this thread: pairing must not take it.
    type Push = unsafe extern "C" fn(CUcontext) -> i32;
    type Pop = unsafe extern "C" fn(*mut CUcontext) -> i32;
    type GetDevice = unsafe extern "C" fn(*mut i32) -> i32;
    let push: Push = unsafe { std::mem::transmute(fake_fn(c"cuCtxPushCurrent_v2")) };
    let pop: Pop = unsafe { std::mem::transmute(fake_fn(c"cuCtxPopCurrent_v2")) };
    let get_device: GetDevice = unsafe { std::mem::transmute(fake_fn(c"cuCtxGetDevice")) };
    let ctx0 = fake_context(0);
    assert_eq!(unsafe { push(ctx0) }, 0);

    // A standalone context pairs with CUDA device 1.
    let standalone = Context::standalone(None, CudaChoice::Primary).unwrap();
    let info = standalone.cuda_info().unwrap();
    assert_eq!(info.ordinal, 1, "the twin by UUID, not device 0");
    assert_eq!(info.uuid, vk_uuid);
    assert!(info.primary);
    let mut current = -1;
    assert_eq!(unsafe { get_device(&mut current) }, 0);
    assert_eq!(current, 0, "the caller's current context is restored");

    // An engine's context: the primary context of device 1 by default.
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let ctx = engine_context(&e, CudaChoice::Primary).unwrap();
    assert_eq!(ctx.cuda_info().unwrap().ordinal, 1);
    drop(ctx);

    // The caller's CUcontext of GPU 0 with the Vulkan device of GPU 1: refused, naming both.
    // SAFETY: the stand-in's contexts, retained for the whole process.
    let borrowed = |c| CudaChoice::Borrowed(unsafe { BorrowedCudaContext::from_raw(c) });
    let msg = fails_with(
        engine_context(&e, borrowed(ctx0)),
        ErrorKind::DeviceMismatch,
    );
    assert!(
        msg.contains(&vk_text) && msg.contains(&fake0) && msg.contains("'vkcuda fake GPU'"),
        "names both devices: {msg}"
    );
    // The caller's CUcontext of the twin is taken.
    let ctx = engine_context(&e, borrowed(fake_context(1))).unwrap();
    let b = ctx.cuda_info().unwrap();
    assert_eq!((b.ordinal, b.primary), (1, false));

    // A CUDA stream of GPU 0 given to GPU 1's context: refused, naming both.
    type Stream = unsafe extern "C" fn(i32) -> *mut std::ffi::c_void;
    let stream_of: Stream = unsafe { std::mem::transmute(fake_fn(c"fake_cuda_stream")) };
    let e0 = standalone
        .check_stream(unsafe { stream_of(0) }.cast())
        .unwrap_err();
    assert_eq!(e0.kind, ErrorKind::DeviceMismatch);
    assert!(
        e0.message.contains(&fake0) && e0.message.contains(&vk_text),
        "names both devices: {}",
        e0.message
    );
    standalone
        .check_stream(unsafe { stream_of(1) }.cast())
        .unwrap();

    // A cross-process description from GPU 0 imported by a context on GPU 1.
    let vonly = vulkan_only_context();
    let b = buffer(&vonly, 4096).unwrap();
    let mut d = ipc::describe_buffer(&b);
    d.device_uuid = FAKE0;
    let fd = b.export_fd().unwrap();
    let msg = fails_with(
        ipc::import_buffer(&ctx, &d, fd.as_fd(), vk::BufferUsageFlags::empty()),
        ErrorKind::DeviceMismatch,
    );
    assert!(
        msg.contains(&fake0) && msg.contains(&vk_text),
        "names both devices: {msg}"
    );
    drop((fd, b, vonly, ctx, standalone));
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
    child_only!("child_visible_twin");
    let ctx = Context::standalone(None, CudaChoice::Primary).unwrap();
    let info = ctx.cuda_info().unwrap();
    assert_eq!(info.ordinal, 0, "the only CUDA device is the twin");
    assert_eq!(info.uuid, test_vk_uuid());
    drop(ctx);
    assert_eq!(doctor_pairs(), vec![(0, 0)]);
}

#[test]
#[ignore = "runs in a child process of fake_driver_visible_devices_no_twin"]
fn child_visible_no_twin() {
    child_only!("child_visible_no_twin");
    let vk_text = format_uuid(&test_vk_uuid());
    let msg = fails_with(
        Context::standalone(None, CudaChoice::Primary),
        ErrorKind::DeviceMismatch,
    );
    assert!(
        msg.contains(&vk_text) && msg.contains(&format_uuid(&FAKE0)),
        "{msg}"
    );
    // The doctor: no twin for Vulkan 0, CUDA 0 alone.
    assert_eq!(doctor_pairs(), vec![(0, -1), (-1, 0)]);
}

// --- Sticky errors (issue 29, item 11). The stand-in raises a sticky CUDA error
// (CUDA_ERROR_ILLEGAL_ADDRESS, as a faulting kernel does) on the second
// cuExternalMemoryGetMappedBuffer: the call that sees it returns DeviceLost
// naming it, and from then on the context, its objects and every other library
// context on the same CUDA context are lost (`check_lost`); dropping still
// releases everything.

#[test]
fn fake_driver_sticky_error_loses_the_context() {
    for (code, name) in [
        ("700", "CUDA_ERROR_ILLEGAL_ADDRESS"),
        ("719", "CUDA_ERROR_LAUNCH_FAILED"),
    ] {
        let uuid = uuid_hex(&vulkan_device0_uuid());
        let out = run_child(
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
            "a sticky {name} ({code}) loses the context: every call says so, drop releases all"
        );
    }
}

/// A context on the engine's device with the stand-in paired, and one
/// Vulkan-allocated buffer; None (after saying why) where the stand-in cannot map
/// this device's memory (not memfd-backed: NVIDIA's opaque fds).
fn paired_with_a_buffer(case: &str, e: &EngineDevice) -> Option<(Arc<Context>, Buffer)> {
    let ctx = engine_context(e, CudaChoice::Primary).unwrap();
    match buffer(&ctx, 65536) {
        Err(err)
            if err.kind() == ErrorKind::Cuda
                && err.to_string().contains(
                    "cuExternalMemoryGetMappedBuffer failed with CUDA_ERROR_INVALID_VALUE",
                ) =>
        {
            println!(
                "SKIPPED: {case}: the stand-in driver cannot map this device's memory (not \
                 memfd-backed): {err}"
            );
            None
        }
        r => Some((ctx, r.unwrap())),
    }
}

#[test]
#[ignore = "runs in a child process of fake_driver_sticky_error_loses_the_context"]
fn child_sticky_error() {
    child_only!("child_sticky_error");
    let name = std::env::var("VKCUDA_TEST_STICKY_NAME").unwrap();
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    // The first mapping works; the second raises the sticky error. The stand-in maps
    // Vulkan memory through its fd, which memfd-backed drivers (lavapipe) allow and
    // NVIDIA's opaque fds do not: on an NVIDIA device (the GPU machine, where this
    // binary runs too) there is nothing to map, so nothing to test here; the real
    // driver's sticky fault is tests/faults.rs's gpu_sticky_fault_loses_the_context.
    let Some((ctx, a)) = paired_with_a_buffer("child_sticky_error", &e) else {
        return;
    };
    // A second library context on the same (primary) CUDA context.
    let other = engine_context(&e, CudaChoice::Primary).unwrap();
    // Another VkDevice without CUDA: not touched by the loss.
    let vonly = vulkan_only_context();

    let first = fails_with(buffer(&ctx, 65536), ErrorKind::DeviceLost);
    println!("the failing call: {first}");
    for want in [
        name.as_str(),
        "cuExternalMemoryGetMappedBuffer",
        "sticky",
        "restart the process",
    ] {
        assert!(first.contains(want), "the message names {want:?}: {first}");
    }

    // From then on the context, its buffer and the other context on the same CUDA
    // context are lost, naming the first error.
    for (what, r) in [
        ("the context", ctx.check_lost()),
        ("the buffer's context", a.context().check_lost()),
        ("another context, same CUDA context", other.check_lost()),
    ] {
        let msg = fails_with(r, ErrorKind::DeviceLost);
        assert!(
            msg.contains(&name) && msg.contains("earlier call"),
            "{what} names the first error: {msg}"
        );
        println!("later: {what}: DeviceLost");
    }

    // The Vulkan-only context on another VkDevice still works.
    vonly.check_lost().unwrap();
    drop(buffer(&vonly, 4096).unwrap());

    // Dropping releases everything, CUDA's side included (the stand-in releases
    // even after the error, so its count shows the library asked).
    drop((a, other, ctx, vonly));
    drop(e);
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        fake_live(),
        0,
        "the stand-in's allocations, imports and retains"
    );
}

// --- Sticky errors met in a drop (issue 39, items 2 and 3). The stand-in raises
// the sticky error in a release call of the first buffer dropped (its mapping's
// cuMemFree, or its import's cuDestroyExternalMemory): that call is the one the
// loss names, and the sibling buffer's context answers DeviceLost from then on.
// With FAKE_CUDA_STICKY_EVERYWHERE the library cannot even make the lost context
// current (cuPointerGetAttribute and cuCtxPushCurrent answer the sticky error
// too): drop still calls every release, so the fds the driver holds for its
// imports are closed.

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
        let out = run_child(
            "child_sticky_error_in_a_destroy",
            &fake_cuda_driver("fake-cuda-sticky", &[]),
            &env,
        );
        println!("{out}");
    }
}

#[test]
#[ignore = "runs in a child process of fake_driver_sticky_error_in_a_destroy_is_recorded"]
fn child_sticky_error_in_a_destroy() {
    child_only!("child_sticky_error_in_a_destroy");
    let call = std::env::var("VKCUDA_TEST_STICKY_CALL").unwrap();
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let fds = fd_count();
    let Some((ctx, a)) = paired_with_a_buffer("child_sticky_error_in_a_destroy", &e) else {
        return;
    };
    let b = buffer(&ctx, 65536).unwrap();
    // Dropping A meets the sticky error in its release call.
    drop(a);
    let want = format!("{call} failed with CUDA_ERROR_ILLEGAL_ADDRESS");
    for (what, r) in [
        ("B's context", b.context().check_lost()),
        ("the context", ctx.check_lost()),
    ] {
        let m = fails_with(r, ErrorKind::DeviceLost);
        println!("{what} after the drop that met {call}'s error: {m}");
        assert!(m.contains(&want), "{what} names {call}: {m}");
        assert!(!m.contains("cuImportExternalMemory"), "{m}");
    }
    drop((b, ctx));
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        fake_live(),
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
    let out = run_child(
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
    child_only!(case);
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let fds = fd_count();
    let Some((ctx, a)) = paired_with_a_buffer(case, &e) else {
        return;
    };
    let b = buffer(&ctx, 65536).unwrap();
    let held = fd_count();
    println!("fds: {fds} before, {held} with two buffers (the driver holds their imports' fds)");
    let m = fails_with(buffer(&ctx, 65536), ErrorKind::DeviceLost);
    assert!(m.contains("cuExternalMemoryGetMappedBuffer"), "{m}");
    fails_with(a.context().check_lost(), ErrorKind::DeviceLost);
    drop((a, b, ctx));
    assert_eq!(live_counts(), [0; 8], "the library's live objects");
    assert_eq!(
        fake_live(),
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
// must be refused with InvalidArgument naming the plane and the address, with
// nothing enqueued; copies from known memory go through and land. The images are
// the two single-plane images of an NV12 frame (R8 luma, R8G8 CbCr): lavapipe
// has no linear NV12 for a shared video frame (the GPU test covers frames).

#[test]
fn fake_driver_pitched_copy_refuses_unknown_addresses() {
    let uuid = uuid_hex(&vulkan_device0_uuid());
    let out = run_child(
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

type PushFn = unsafe extern "C" fn(CUcontext) -> i32;
type PopFn = unsafe extern "C" fn(*mut CUcontext) -> i32;
type AllocFn = unsafe extern "C" fn(*mut u64, usize) -> i32;
type FreeFn = unsafe extern "C" fn(u64) -> i32;
type CountFn = unsafe extern "C" fn() -> i32;
type CallsFn = unsafe extern "C" fn(*const std::ffi::c_char) -> i32;
type StreamFn = unsafe extern "C" fn(i32) -> CUstream;

/// The stand-in's functions the pitched-copy child calls itself.
struct FakeMemory {
    ctx: CUcontext,
    push: PushFn,
    pop: PopFn,
    alloc: AllocFn,
    free: FreeFn,
    copies: CountFn,
    calls: CallsFn,
    stream: StreamFn,
}

impl FakeMemory {
    fn of(ctx: &Context) -> FakeMemory {
        type P = *mut std::ffi::c_void;
        // SAFETY: the stand-in's functions, of these C types.
        unsafe {
            FakeMemory {
                ctx: ctx.cuda_info().unwrap().context,
                push: std::mem::transmute::<P, PushFn>(fake_fn(c"cuCtxPushCurrent_v2")),
                pop: std::mem::transmute::<P, PopFn>(fake_fn(c"cuCtxPopCurrent_v2")),
                alloc: std::mem::transmute::<P, AllocFn>(fake_fn(c"cuMemAlloc_v2")),
                free: std::mem::transmute::<P, FreeFn>(fake_fn(c"cuMemFree_v2")),
                copies: std::mem::transmute::<P, CountFn>(fake_fn(c"fake_cuda_copies")),
                calls: std::mem::transmute::<P, CallsFn>(fake_fn(c"fake_cuda_calls")),
                stream: std::mem::transmute::<P, StreamFn>(fake_fn(c"fake_cuda_stream")),
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

    /// How many times the stand-in's `name` was called (one of the calls a
    /// per-frame call may make: `counted` in tests/fake_cuda/libcuda.c).
    fn calls(&self, name: &str) -> i32 {
        let c = std::ffi::CString::new(name).unwrap();
        let n = unsafe { (self.calls)(c.as_ptr()) };
        assert!(n >= 0, "the stand-in does not count {name}");
        n
    }

    /// How many times the library asked cuMemGetAddressRange.
    fn range_queries(&self) -> i32 {
        self.calls("cuMemGetAddressRange_v2")
    }

    /// A stream of device `ordinal`'s primary context.
    fn stream(&self, ordinal: i32) -> CUstream {
        unsafe { (self.stream)(ordinal) }
    }
}

/// One plane's pitched copy into (`to_image`) or out of `im`, on the default stream.
fn copy(im: &Image, pointer: u64, pitch: usize, to_image: bool) -> vkcuda::Result<()> {
    let plane = PitchedPlane {
        pointer,
        pitch: pitch as u64,
    };
    // SAFETY: the stand-in checks every address (a copy it does not know "faults");
    // the known ones are cuMemAlloc blocks with room for the plane's rows.
    unsafe { im.copy_pitched(&[plane], to_image, ptr::null_mut()) }
}

#[test]
#[ignore = "runs in a child process of fake_driver_pitched_copy_refuses_unknown_addresses"]
fn child_pitched_copy_unknown_addresses() {
    let case = "child_pitched_copy_unknown_addresses";
    child_only!(case);
    let e = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let Some((ctx, probe)) = paired_with_a_buffer(case, &e) else {
        return;
    };
    drop(probe);
    let (w, h) = (64u32, 32u32);
    let image = |f, w, h| Image::create(&ctx, &Description::new_2d(f, w, h)).unwrap();
    let luma = image(vk::Format::R8_UNORM, w, h);
    let chroma = image(vk::Format::R8G8_UNORM, w / 2, h / 2);
    let m = FakeMemory::of(&ctx);
    // A decoder-shaped frame: luma rows, then CbCr rows, one pitch.
    let (pitch, rows) = (128usize, (h + h / 2) as usize);
    let src = m.alloc(pitch * rows);
    let src_chroma = src + (pitch * h as usize) as u64;
    let host = vec![0u8; 1 << 16];
    for (name, to_image) in [("copy_from_pitched", true), ("copy_to_pitched", false)] {
        for (what, bad) in [
            ("0x10000", 0x10000u64),
            ("host memory", host.as_ptr() as u64),
            ("just past the allocation", src + (pitch * rows) as u64),
        ] {
            for (im, is_luma) in [(&luma, true), (&chroma, false)] {
                let before = m.copies();
                let msg = fails_with(copy(im, bad, pitch, to_image), ErrorKind::InvalidArgument);
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
                if is_luma {
                    println!("{name} with {what}: {msg}");
                }
            }
        }
        // Rows that end past the end of a known allocation.
        let before = m.copies();
        let msg = fails_with(
            copy(&chroma, src_chroma + 65, pitch, to_image),
            ErrorKind::InvalidArgument,
        );
        assert!(
            msg.contains("runs 1 bytes past the end of its CUDA allocation"),
            "{msg}"
        );
        assert_eq!(m.copies(), before);
    }
    // Nothing faulted: the context is not lost.
    ctx.check_lost().unwrap();

    // Known memory: the copies go through and land, every byte checked on the
    // way back out into a second allocation of another pitch.
    let bytes: Vec<u8> = (0..pitch * rows)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
        .collect();
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), src as *mut u8, bytes.len()) };
    let (before, queries) = (m.copies(), m.range_queries());
    for _ in 0..3 {
        copy(&luma, src, pitch, true).unwrap();
        copy(&chroma, src_chroma, pitch, true).unwrap();
    }
    assert_eq!(m.copies(), before + 6, "one copy a call");
    // Both planes lie in one allocation: looked up once for six calls, then
    // remembered (the per-frame cost, issue 39 item 14).
    assert_eq!(m.range_queries(), queries + 1, "range lookups for 6 calls");
    // A decoder's frames: its thread has the context current and copies on a
    // stream of it from surfaces already looked up. Each call asks the driver for
    // the context's liveness and the current context, then copies: no push or
    // pop, and the stream's context once for four calls (each driver call costs
    // 36 to 76 ns on the H100: docs/PERFORMANCE.md).
    let stream = m.stream(ctx.cuda_info().unwrap().ordinal);
    let counted = [
        "cuCtxPushCurrent_v2",
        "cuCtxPopCurrent_v2",
        "cuCtxGetCurrent",
        "cuStreamGetCtx",
        "cuPointerGetAttribute",
        "cuMemGetAddressRange_v2",
        "cuMemcpy2DAsync_v2",
    ];
    let made = m.within(|| {
        let before = counted.map(|n| m.calls(n));
        let plane = [PitchedPlane {
            pointer: src,
            pitch: pitch as u64,
        }];
        for _ in 0..4 {
            // SAFETY: as in `copy`.
            unsafe { luma.copy_pitched(&plane, true, stream) }.unwrap();
        }
        let after = counted.map(|n| m.calls(n));
        after
            .iter()
            .zip(before)
            .map(|(a, b)| a - b)
            .collect::<Vec<_>>()
    });
    assert_eq!(
        counted.iter().zip(made).collect::<Vec<_>>(),
        counted
            .iter()
            .zip([0, 0, 4, 1, 4, 0, 4])
            .collect::<Vec<_>>(),
        "the driver calls of four per-frame copies"
    );
    let out_pitch = 96usize;
    let dst = m.alloc(out_pitch * rows);
    unsafe { std::ptr::write_bytes(dst as *mut u8, 0xEE, out_pitch * rows) };
    copy(&luma, dst, out_pitch, false).unwrap();
    let dst_chroma = dst + (out_pitch * h as usize) as u64;
    copy(&chroma, dst_chroma, out_pitch, false).unwrap();
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
    drop(buffer(&ctx, 65536).unwrap());
    for _ in 0..2 {
        copy(&luma, src, pitch, true).unwrap();
    }
    assert_eq!(m.range_queries(), queries + 1, "looked up again once");
    println!(
        "copies from and to cuMemAlloc'd memory: {} bytes of both planes right, padding untouched",
        w as usize * rows
    );

    m.free(dst);
    m.free(src);
    drop((chroma, luma, ctx));
    assert_eq!(fake_live(), 0, "the stand-in's arrays, imports and retains");
    drop(host);
    drop(e);
}
