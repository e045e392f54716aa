//! Machines with several NVIDIA GPUs: every Vulkan device paired with its own CUDA
//! device, by UUID. Needs two GPUs, so it is ignored by default and skips (with
//! the reason) where fewer than two Vulkan devices have a CUDA twin, even with
//! VKCUDA_REQUIRE_GPU=1 (the usual GPU machine has one); VKCUDA_REQUIRE_GPUS=2 makes
//! that a failure. Run on a 2-GPU machine:
//!
//!   VKCUDA_REQUIRE_GPU=1 VKCUDA_REQUIRE_GPUS=2 cargo test -p vkcuda-c --test multi_gpu -- --include-ignored
//!
//! The same pairing rules run on CPU with the fake driver in capi/tests/fake_cuda.rs.

mod support;
use support::*;

use std::ptr;

use cudarc::driver::sys as cu;
use support::cuda::check;

const IGNORE: &str = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)";

/// The Vulkan devices with a CUDA twin: (Vulkan index, CUDA ordinal, UUID).
fn paired() -> Vec<(u32, i32, [u8; 16])> {
    let mut n = 0u32;
    if unsafe { vkcuda_physical_devices_enumerate(&mut n, ptr::null_mut()) } != VKCUDA_SUCCESS {
        return Vec::new();
    }
    let mut list: Vec<vkcuda_physical_device_support> =
        (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
    ok(unsafe { vkcuda_physical_devices_enumerate(&mut n, list.as_mut_ptr()) });
    list.iter()
        .enumerate()
        .filter(|(_, s)| s.supported == 1)
        .map(|(i, s)| (i as u32, s.cuda_device_ordinal, s.device_uuid))
        .collect()
}

/// Two paired GPUs, or None after saying why (a failure with VKCUDA_REQUIRE_GPUS=2).
fn two_gpus(test: &str) -> Option<Vec<(u32, i32, [u8; 16])>> {
    let p = paired();
    if p.len() >= 2 {
        return Some(p);
    }
    let why = format!(
        "{} Vulkan device(s) with a CUDA twin here, 2 needed",
        p.len()
    );
    if std::env::var("VKCUDA_REQUIRE_GPUS").as_deref() == Ok("2") {
        panic!("{test}: VKCUDA_REQUIRE_GPUS=2 but {why}");
    }
    eprintln!("SKIPPED: {test}: {why}; set VKCUDA_REQUIRE_GPUS=2 to make this a failure");
    None
}

fn standalone_on(index: u32) -> Result<*mut vkcuda_context, (vkcuda_result, String)> {
    let info = vkcuda_standalone_create_info {
        flags: VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT,
        physical_device_index: index,
    };
    let mut ctx = ptr::null_mut();
    match unsafe { vkcuda_context_create_standalone(&info, &mut ctx) } {
        VKCUDA_SUCCESS => Ok(ctx),
        r => Err((r, last_error())),
    }
}

fn cuda_info(ctx: *const vkcuda_context) -> vkcuda_cuda_info {
    let mut i: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_cuda_info(ctx, &mut i) });
    i
}

fn primary(ordinal: i32) -> cu::CUcontext {
    let mut dev = 0;
    check(unsafe { cu::cuDeviceGet(&mut dev, ordinal) });
    let mut ctx = ptr::null_mut();
    check(unsafe { cu::cuDevicePrimaryCtxRetain(&mut ctx, dev) });
    ctx
}

#[test]
#[ignore = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn each_vulkan_gpu_pairs_with_its_cuda_twin() {
    let _ = IGNORE;
    let Some(gpus) = two_gpus("each_vulkan_gpu_pairs_with_its_cuda_twin") else {
        return;
    };
    // The doctor's table lists both, each with the CUDA device of its UUID.
    let mut report = ptr::null_mut();
    ok(unsafe { vkcuda_doctor_run(ptr::null(), &mut report) });
    let mut s: vkcuda_doctor_summary = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_doctor_report_get_summary(report, &mut s) });
    for (vk_index, ordinal, uuid) in &gpus {
        let found = (0..s.device_pair_count).any(|i| {
            let mut p: vkcuda_doctor_device_pair = unsafe { std::mem::zeroed() };
            ok(unsafe { vkcuda_doctor_report_get_device_pair(report, i, &mut p) });
            p.vulkan_index == *vk_index as i32
                && p.cuda_ordinal == *ordinal
                && p.cuda_uuid == *uuid
                && p.ready == 1
        });
        assert!(
            found,
            "the doctor pairs Vulkan {vk_index} with CUDA {ordinal}"
        );
    }
    unsafe { vkcuda_doctor_report_destroy(report) };

    // A context on the second GPU uses CUDA's twin of it, not the thread's current
    // device and not device 0: make the first GPU's context current first.
    let (vk1, cuda1, uuid1) = gpus[1];
    let first = primary(gpus[0].1);
    check(unsafe { cu::cuCtxPushCurrent_v2(first) });
    let ctx = standalone_on(vk1).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"));
    let info = cuda_info(ctx);
    assert_eq!(info.device_ordinal, cuda1);
    assert_eq!(info.device_uuid, uuid1);
    let mut current = ptr::null_mut();
    check(unsafe { cu::cuCtxGetCurrent(&mut current) });
    assert_eq!(current, first, "the caller's current context is restored");
    let mut popped = ptr::null_mut();
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    unsafe { vkcuda_context_destroy(ctx) };
}

/// A buffer of 64 MiB + 1 on one GPU: CUDA writes, Vulkan reads every byte.
fn round_trip(vk_index: u32, seed: u32) -> usize {
    let ctx = standalone_on(vk_index).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"));
    let size = (64 << 20) + 1;
    let b = create_buffer(ctx, size, 0);
    let info = buffer_info(b);
    let c = cuda_info(ctx);
    let data: Vec<u8> = (0..size as usize).map(|i| pattern(i, seed)).collect();
    check(unsafe { cu::cuCtxPushCurrent_v2(c.cuda_context.cast()) });
    check(unsafe { cu::cuMemcpyHtoD_v2(info.cuda_pointer, data.as_ptr().cast(), data.len()) });
    check(unsafe { cu::cuCtxSynchronize() });
    let mut popped = ptr::null_mut();
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    let v = Vk::new(ctx);
    let host = v.host_buffer(size);
    v.copy(info.buffer, host.buffer, size);
    let bad = host
        .bytes()
        .iter()
        .enumerate()
        .filter(|(i, b)| **b != pattern(*i, seed))
        .count();
    v.destroy_host_buffer(host);
    drop(v);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
    bad
}

#[test]
#[ignore = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn one_context_per_gpu_from_two_threads() {
    let Some(gpus) = two_gpus("one_context_per_gpu_from_two_threads") else {
        return;
    };
    let threads: Vec<_> = gpus[..2]
        .iter()
        .enumerate()
        .map(|(t, &(vk_index, _, _))| {
            std::thread::spawn(move || round_trip(vk_index, 40 + t as u32))
        })
        .collect();
    for (t, h) in threads.into_iter().enumerate() {
        let bad = h.join().expect("the thread finished");
        println!("GPU {t}: {} bytes checked, {bad} wrong", (64 << 20) + 1);
        assert_eq!(bad, 0);
    }
}

#[test]
#[ignore = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn the_other_gpus_objects_are_refused() {
    let Some(gpus) = two_gpus("the_other_gpus_objects_are_refused") else {
        return;
    };
    let (vk0, cuda0, uuid0) = gpus[0];
    let (vk1, _, uuid1) = gpus[1];
    let (t0, t1) = (
        vkcuda::pairing::format_uuid(&uuid0),
        vkcuda::pairing::format_uuid(&uuid1),
    );
    // GPU 0's CUcontext with GPU 1's Vulkan device.
    let e = EngineDevice::new(
        &[
            ash::khr::external_memory_fd::NAME,
            ash::khr::external_semaphore_fd::NAME,
        ],
        |i, p| {
            let mut id = ash::vk::PhysicalDeviceIDProperties::default();
            let mut p2 = ash::vk::PhysicalDeviceProperties2::default().push_next(&mut id);
            unsafe { i.get_physical_device_properties2(p, &mut p2) };
            id.device_uuid == uuid1
        },
    );
    let ctx0 = primary(cuda0);
    let mut info = e.create_info(0);
    info.cuda_context = ctx0.cast();
    let mut ctx = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_context_create(&info, &mut ctx) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(msg.contains(&t0) && msg.contains(&t1), "names both: {msg}");

    // A stream of GPU 0 given to a semaphore of a GPU 1 context.
    let c1 = standalone_on(vk1).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"));
    let mut sem = ptr::null_mut();
    let si: vkcuda_semaphore_create_info = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_semaphore_create(c1, &si, &mut sem) });
    check(unsafe { cu::cuCtxPushCurrent_v2(ctx0) });
    let mut stream0 = ptr::null_mut();
    check(unsafe { cu::cuStreamCreate(&mut stream0, 0) });
    let mut popped = ptr::null_mut();
    check(unsafe { cu::cuCtxPopCurrent_v2(&mut popped) });
    let msg = fails(
        unsafe { vkcuda_semaphore_cuda_signal(sem, 1, stream0.cast()) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(
        msg.contains(&t0) && msg.contains(&t1),
        "names both devices: {msg}"
    );
    check(unsafe { cu::cuStreamDestroy_v2(stream0) });

    // A description from GPU 0 imported by a context on GPU 1.
    let c0 = standalone_on(vk0).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"));
    let b0 = create_buffer(c0, 1 << 20, 0);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_describe(b0, &mut d) });
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b0, &mut fd) });
    let mut imported = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_buffer_import_description(c1, &d, fd, 0, &mut imported) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(msg.contains(&t0) && msg.contains(&t1), "names both: {msg}");
    unsafe {
        libc::close(fd);
        vkcuda_buffer_destroy(b0);
        vkcuda_semaphore_destroy(sem);
        vkcuda_context_destroy(c0);
        vkcuda_context_destroy(c1);
    }
    let mut dev = 0;
    check(unsafe { cu::cuDeviceGet(&mut dev, cuda0) });
    check(unsafe { cu::cuDevicePrimaryCtxRelease_v2(dev) });
    drop(e);
}

#[test]
#[ignore = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn cuda_visible_devices_hides_one_gpu() {
    let Some(gpus) = two_gpus("cuda_visible_devices_hides_one_gpu") else {
        return;
    };
    // CUDA sees only the second GPU, Vulkan both: run in a child process.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_visible_second_gpu",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CUDA_VISIBLE_DEVICES", gpus[1].1.to_string())
        .env("VKCUDA_TEST_VK0", gpus[0].0.to_string())
        .env("VKCUDA_TEST_VK1", gpus[1].0.to_string())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[test]
#[ignore = "runs in a child process of cuda_visible_devices_hides_one_gpu"]
fn child_visible_second_gpu() {
    if std::env::var_os("VKCUDA_TEST_VK0").is_none() {
        eprintln!("child_visible_second_gpu: runs only as the child of cuda_visible_devices_hides_one_gpu");
        return;
    }
    let vk0: u32 = std::env::var("VKCUDA_TEST_VK0").unwrap().parse().unwrap();
    let vk1: u32 = std::env::var("VKCUDA_TEST_VK1").unwrap().parse().unwrap();
    let ctx = standalone_on(vk1).unwrap_or_else(|(r, m)| panic!("{r:?}: {m}"));
    assert_eq!(
        cuda_info(ctx).device_ordinal,
        0,
        "the only CUDA device is the twin"
    );
    unsafe { vkcuda_context_destroy(ctx) };
    match standalone_on(vk0) {
        Ok(_) => panic!("the Vulkan device without a visible CUDA twin was paired"),
        Err((r, msg)) => {
            assert_eq!(r, VKCUDA_ERROR_DEVICE_MISMATCH, "{msg}");
            assert!(msg.contains("no CUDA device has the UUID"), "{msg}");
        }
    }
}
