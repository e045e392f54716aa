//! Machines with several NVIDIA GPUs: every Vulkan device paired with its own CUDA
//! device, by UUID. Needs two GPUs, so it is ignored by default and skips (with
//! the reason) where fewer than two Vulkan devices have a CUDA twin, even with
//! VKCUDA_REQUIRE_GPU=1 (the usual GPU machine has one); VKCUDA_REQUIRE_GPUS=2 makes
//! that a failure. Run on a 2-GPU machine:
//!
//!   VKCUDA_REQUIRE_GPU=1 VKCUDA_REQUIRE_GPUS=2 cargo test --test multi_gpu -- --include-ignored
//!
//! The same pairing rules run on CPU with the fake driver in tests/fake_cuda.rs.

mod support;
use support::*;

use std::os::fd::AsFd;
use std::ptr;
use std::sync::Arc;

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};
use vkcuda::buffer::Allocator;
use vkcuda::context::{BorrowedCudaContext, CudaChoice};
use vkcuda::semaphore::Kind;
use vkcuda::{doctor, ipc, pairing, Buffer, Context, ErrorKind, Semaphore};

const IGNORE: &str = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)";

/// The Vulkan devices with a CUDA twin: (Vulkan index, CUDA ordinal, UUID).
fn paired() -> Vec<(u32, i32, [u8; 16])> {
    let Ok(list) = pairing::enumerate() else {
        return Vec::new();
    };
    list.into_iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let r = r.ok().filter(|r| r.supported())?;
            Some((i as u32, r.cuda_ordinal?, r.support.props.uuid))
        })
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

fn standalone_on(index: u32) -> vkcuda::Result<Arc<Context>> {
    Context::standalone(Some(index as usize), CudaChoice::Primary)
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
    let report = doctor::run(&doctor::Options::default());
    for (vk_index, ordinal, uuid) in &gpus {
        let found = report.pairs.iter().any(|p| {
            p.vulkan_index == Some(*vk_index)
                && p.cuda_ordinal == Some(*ordinal)
                && p.cuda_uuid == Some(*uuid)
                && p.ready
        });
        assert!(
            found,
            "the doctor pairs Vulkan {vk_index} with CUDA {ordinal}"
        );
    }

    // A context on the second GPU uses CUDA's twin of it, not the thread's current
    // device and not device 0: make the first GPU's context current first.
    let (vk1, cuda1, uuid1) = gpus[1];
    let first = Cuda(primary(gpus[0].1));
    first.enter();
    let ctx = standalone_on(vk1).unwrap();
    let info = ctx.cuda_info().unwrap();
    assert_eq!(info.ordinal, cuda1);
    assert_eq!(info.uuid, uuid1);
    let mut current = ptr::null_mut();
    check(unsafe { cu::cuCtxGetCurrent(&mut current) });
    assert_eq!(current, first.0, "the caller's current context is restored");
    first.leave();
}

/// A buffer of 64 MiB + 1 on one GPU: CUDA writes, Vulkan reads every byte.
fn round_trip(vk_index: u32, seed: u32) -> usize {
    let ctx = standalone_on(vk_index).unwrap();
    let size = (64 << 20) + 1;
    let b = Buffer::create(&ctx, size, vk::BufferUsageFlags::empty(), Allocator::Vulkan).unwrap();
    Cuda::of_context(&ctx).write(b.cuda_ptr().unwrap(), &bytes(size as usize, seed));
    let v = Vk::of(&ctx);
    v.pattern_mismatches(b.vk_buffer(), size, seed)
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
    let (t0, t1) = (pairing::format_uuid(&uuid0), pairing::format_uuid(&uuid1));
    let names_both = |e: vkcuda::Error| {
        let m = e.message();
        assert!(
            m.contains(&t0) && m.contains(&t1),
            "names both devices: {e}"
        );
    };
    let mismatch = ErrorKind::DeviceMismatch;
    // GPU 0's CUcontext with GPU 1's Vulkan device.
    let e = EngineDevice::new(&pairing::DEVICE_EXTENSIONS, |i, p| {
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
        unsafe { i.get_physical_device_properties2(p, &mut p2) };
        id.device_uuid == uuid1
    });
    let ctx0 = Cuda(primary(cuda0));
    let handles = support::device::engine_handles(&e, None);
    // SAFETY: GPU 0's primary context, retained until the end of the test, and
    // the engine's live handles (the refused call keeps neither).
    let borrowed = CudaChoice::Borrowed(unsafe { BorrowedCudaContext::from_raw(ctx0.0) });
    names_both(refused(
        unsafe { Context::from_engine(&handles, borrowed) },
        mismatch,
        "",
    ));

    // A stream of GPU 0 given to a semaphore of a GPU 1 context.
    let c1 = standalone_on(vk1).unwrap();
    let sem = Semaphore::create(&c1, Kind::Timeline, 0, None).unwrap();
    let mut stream0 = ptr::null_mut();
    ctx0.within(|| check(unsafe { cu::cuStreamCreate(&mut stream0, 0) }));
    names_both(refused(sem.cuda_signal(1, stream0), mismatch, ""));
    check(unsafe { cu::cuStreamDestroy_v2(stream0) });

    // A description from GPU 0 imported by a context on GPU 1.
    let c0 = standalone_on(vk0).unwrap();
    let b0 = Buffer::create(
        &c0,
        1 << 20,
        vk::BufferUsageFlags::empty(),
        Allocator::Vulkan,
    )
    .unwrap();
    let d = ipc::describe_buffer(&b0);
    let fd = b0.export_fd().unwrap();
    let usage = vk::BufferUsageFlags::empty();
    names_both(refused(
        ipc::import_buffer(&c1, &d, fd.as_fd(), usage),
        mismatch,
        "",
    ));
    let mut dev = 0;
    check(unsafe { cu::cuDeviceGet(&mut dev, cuda0) });
    check(unsafe { cu::cuDevicePrimaryCtxRelease_v2(dev) });
}

#[test]
#[ignore = "needs two NVIDIA GPUs (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn cuda_visible_devices_hides_one_gpu() {
    let Some(gpus) = two_gpus("cuda_visible_devices_hides_one_gpu") else {
        return;
    };
    // CUDA sees only the second GPU, Vulkan both: run in a child process.
    let out = this_test("child_visible_second_gpu", true)
        .env("CUDA_VISIBLE_DEVICES", gpus[1].1.to_string())
        .env("VKCUDA_TEST_VK0", gpus[0].0.to_string())
        .env("VKCUDA_TEST_VK1", gpus[1].0.to_string())
        .output()
        .unwrap();
    child_passed("child_visible_second_gpu", &out);
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
    let ctx = standalone_on(vk1).unwrap();
    assert_eq!(
        ctx.cuda_info().unwrap().ordinal,
        0,
        "the only CUDA device is the twin"
    );
    drop(ctx);
    refused(
        standalone_on(vk0),
        ErrorKind::DeviceMismatch,
        "no CUDA device has the UUID",
    );
}
