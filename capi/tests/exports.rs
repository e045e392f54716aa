//! One success case per export whose behaviour is tested through the Rust API
//! (tests/buffer.rs, tests/handoff.rs, tests/semaphore.rs, tests/graph.rs,
//! tests/context.rs, tests/doctor.rs): the C door's argument checks are the misuse
//! matrix's, and here each such export is called the way a C caller calls it, once,
//! and does its work. On lavapipe: the barrier exports, the context told its
//! device's create info, the live-object counts (the floor counts through
//! `vkcuda::live_objects`), and the doctor's options, getters and JSON (the Rust
//! API's report, handed out); on a GPU (ignored without `--include-ignored`): the
//! semaphore exports, CUDA graph nodes included.

mod support;
use support::*;

use std::ffi::{CStr, CString};
use std::ptr;

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};

#[test]
fn cpu_exports_succeed() {
    // A context over an engine's device, told what the device was created with.
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let exts = [ash::khr::external_memory_fd::NAME.as_ptr()];
    let told = vk::DeviceCreateInfo::default().enabled_extension_names(&exts);
    let mut ctx = ptr::null_mut();
    let info = engine.create_info(VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT);
    let told_ptr = (&told as *const vk::DeviceCreateInfo).cast();
    ok(unsafe { vkcuda_context_create_with_device_info(&info, told_ptr, &mut ctx) });
    assert!(!ctx.is_null());
    let v = Vk::for_engine(&engine.instance, &engine.device, engine.physical);
    // The buffer's and the batch's barriers, around a fill: the data stays.
    let b = create_buffer(ctx, 4096, 0);
    let vk_buffer = buffer_info(b).buffer;
    let h = handoff_info(0);
    let batch = [vkcuda_handoff_resource {
        buffer: b,
        image: ptr::null(),
        layout: 0,
    }];
    v.run(|cmd| unsafe {
        v.device
            .cmd_fill_buffer(cmd, vk_buffer, 0, 4096, 0x5a5a_5a5a);
        ok(vkcuda_buffer_cmd_release_to_cuda(b, cmd, &h));
        ok(vkcuda_buffer_cmd_acquire_from_cuda(b, cmd, &h));
        ok(vkcuda_handoff_cmd_release_to_cuda(
            1,
            batch.as_ptr(),
            cmd,
            &h,
        ));
        ok(vkcuda_handoff_cmd_acquire_from_cuda(
            1,
            batch.as_ptr(),
            cmd,
            &h,
        ));
    });
    let host = v.host_buffer(4096);
    v.copy(vk_buffer, host.buffer, 4096);
    assert!(host.bytes().iter().all(|&x| x == 0x5a));
    v.destroy_host_buffer(host);
    // The C counts are the library's: this context and buffer among them.
    let mut c: vkcuda_live_objects = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_live_objects_get(&mut c) });
    let r = live_objects();
    assert_eq!(
        [c.contexts, c.vk_buffers, c.vk_memories, c.vk_semaphores],
        [r.contexts, r.vk_buffers, r.vk_memories, r.vk_semaphores]
    );
    assert!(c.contexts >= 1 && c.vk_buffers >= 1);
    drop(v);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
}

/// The doctor through its C exports, with a root and an engine's device in the
/// options: the summary, every check, every pairing row and the JSON are what the
/// Rust API's report with the same options says (`vkcuda::doctor::run`; the checks
/// themselves: tests/doctor.rs), and an index one past the end is refused, named.
#[test]
fn doctor_exports_succeed() {
    let root = empty_dir("exports-doctor-root");
    let engine = EngineDevice::new(&[ash::khr::external_memory_fd::NAME], |_, _| true);
    let info = engine.create_info(0);
    let root_c = CString::new(root.to_str().unwrap()).unwrap();
    let options = vkcuda_doctor_options {
        flags: 0,
        root: root_c.as_ptr(),
        engine: &info,
    };
    let mut report = ptr::null_mut();
    ok(unsafe { vkcuda_doctor_run(&options, &mut report) });
    let mut rust = vkcuda::doctor::Options::default();
    rust.root = root;
    let handles = vkcuda::context::EngineHandles {
        instance: engine.instance.handle(),
        physical: engine.physical,
        device: engine.device.handle(),
        get_instance_proc_addr: engine.entry.static_fn().get_instance_proc_addr,
        get_device_proc_addr: None,
        synchronization2: false,
    };
    // SAFETY: the engine's live handles, which outlive the run.
    let want = vkcuda::doctor::run(&unsafe { rust.with_engine(handles) });
    assert!(
        want.check("engine.device").is_some(),
        "the engine was checked"
    );
    let text = |p: *const std::ffi::c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap();

    let mut s: vkcuda_doctor_summary = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_doctor_report_get_summary(report, &mut s) });
    use vkcuda::doctor::Status;
    let counts = [Status::Pass, Status::Warn, Status::Fail].map(|k| want.count(k) as u32);
    assert_eq!(
        [s.check_count, s.pass_count, s.warn_count, s.fail_count],
        [want.checks.len() as u32, counts[0], counts[1], counts[2]]
    );
    assert_eq!(s.ready, u32::from(want.ready()));
    assert!(s.check_count > 10, "{want:?}");
    for (i, w) in want.checks.iter().enumerate() {
        let mut c: vkcuda_doctor_check = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_doctor_report_get_check(report, i as u32, &mut c) });
        let status = match c.status {
            vkcuda_doctor_status::VKCUDA_DOCTOR_STATUS_PASS => Status::Pass,
            vkcuda_doctor_status::VKCUDA_DOCTOR_STATUS_WARN => Status::Warn,
            _ => Status::Fail,
        };
        assert_eq!(status, w.status, "{w:?}");
        assert_eq!(
            (
                text(c.name),
                steady(text(c.name), text(c.seen)),
                text(c.fix)
            ),
            (&*w.name, steady(&w.name, &w.seen), &*w.fix)
        );
    }
    assert_eq!(s.device_pair_count as usize, want.pairs.len());
    for (i, w) in want.pairs.iter().enumerate() {
        let mut p: vkcuda_doctor_device_pair = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_doctor_report_get_device_pair(report, i as u32, &mut p) });
        let vulkan_index = w.vulkan_index.map_or(-1, |k| k as i32);
        let indices = (vulkan_index, w.cuda_ordinal.unwrap_or(-1));
        assert_eq!((p.vulkan_index, p.cuda_ordinal), indices, "{w:?}");
        assert_eq!(
            (text(p.vulkan_name), text(p.cuda_name)),
            (&*w.vulkan_name, &*w.cuda_name)
        );
        assert_eq!(p.vulkan_uuid, w.vulkan_uuid.unwrap_or_default());
        assert_eq!(p.cuda_uuid, w.cuda_uuid.unwrap_or_default());
        assert_eq!(p.ready, u32::from(w.ready));
    }
    let mut json = ptr::null();
    ok(unsafe { vkcuda_doctor_report_get_json(report, &mut json) });
    // The Rust report's JSON, except that C callers are told the C library's version
    // (this crate's, `vkcuda_version_string`'s), not the Rust library's.
    let mut got: serde_json::Value = serde_json::from_str(text(json)).unwrap();
    let mut expected: serde_json::Value = serde_json::from_str(&want.to_json()).unwrap();
    expected["vkcuda_version"] = env!("CARGO_PKG_VERSION").into();
    let steady_json = |v: &mut serde_json::Value| {
        for c in v["checks"].as_array_mut().unwrap() {
            let seen = steady(c["name"].as_str().unwrap(), c["seen"].as_str().unwrap());
            c["seen"] = seen.into();
        }
    };
    steady_json(&mut got);
    steady_json(&mut expected);
    assert_eq!(got, expected);
    assert_eq!(
        got["vkcuda_version"],
        text(vkcuda_version_string()).to_string()
    );

    let mut c: vkcuda_doctor_check = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_doctor_report_get_check(report, s.check_count, &mut c) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("out of range"), "{msg}");
    let mut p: vkcuda_doctor_device_pair = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_doctor_report_get_device_pair(report, s.device_pair_count, &mut p) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("out of range"), "{msg}");
    unsafe { vkcuda_doctor_report_destroy(report) };
}

/// A check's `seen` without what changes between two runs in one process: the
/// number of open files, which the test running beside this one moves.
fn steady(name: &str, seen: &str) -> String {
    match (name, seen.split_once(", ")) {
        ("process.open_files", Some((limit, now))) if now.ends_with(" open now") => {
            format!("{limit}, N open now")
        }
        _ => seen.to_string(),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_semaphore_exports_succeed() {
    let Some(ctx) = cuda_context_or_skip("gpu_semaphore_exports_succeed") else {
        return;
    };
    let v = Vk::new(ctx);
    let cuda = Cuda::of(ctx);
    let second = 1_000_000_000;

    // A binary semaphore: CUDA signals, Vulkan waits; Vulkan signals, CUDA waits.
    let s = create_semaphore(ctx, 1, 0);
    let mut vs = vk::Semaphore::null();
    ok(unsafe { vkcuda_semaphore_get_vk_semaphore(s, &mut vs) });
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, 0, ptr::null_mut()) });
    ok(unsafe { vkcuda_semaphore_note_vulkan_wait(s) });
    let (sems, stages) = ([vs], [vk::PipelineStageFlags::ALL_COMMANDS]);
    let wait = vk::SubmitInfo::default()
        .wait_semaphores(&sems)
        .wait_dst_stage_mask(&stages);
    let signal = vk::SubmitInfo::default().signal_semaphores(&sems);
    unsafe {
        v.device
            .queue_submit(v.queue, &[wait, signal], vk::Fence::null())
    }
    .unwrap();
    ok(unsafe { vkcuda_semaphore_note_vulkan_signal(s) });
    ok(unsafe { vkcuda_semaphore_cuda_wait(s, 0, ptr::null_mut()) });
    cuda.synchronize();
    unsafe { v.device.queue_wait_idle(v.queue) }.unwrap();
    unsafe { vkcuda_semaphore_destroy(s) };

    // A timeline that never spins in its host waits (the flag's timeouts:
    // tests/semaphore.rs): a stage, and a CUDA graph of a wait node and a signal
    // node whose values are set for the launch.
    let mut t = ptr::null_mut();
    let info = vkcuda_semaphore_create_info {
        flags: VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT,
        ..semaphore_create_info(0, 0)
    };
    ok(unsafe { vkcuda_semaphore_create(ctx, &info, &mut t) });
    let mut st = vkcuda_timeline_stage {
        wait_value: 9,
        signal_value: 9,
    };
    ok(unsafe { vkcuda_semaphore_next_stage(t, &mut st) });
    assert_eq!((st.wait_value, st.signal_value), (0, 1));
    cuda.enter();
    let mut graph = ptr::null_mut();
    check(unsafe { cu::cuGraphCreate(&mut graph, 0) });
    let mut wait_node = ptr::null_mut();
    ok(unsafe {
        vkcuda_semaphore_cuda_graph_add_wait(t, graph.cast(), ptr::null(), 0, 1, &mut wait_node)
    });
    let mut signal_node = ptr::null_mut();
    ok(unsafe {
        vkcuda_semaphore_cuda_graph_add_signal(t, graph.cast(), &wait_node, 1, 2, &mut signal_node)
    });
    let mut exec = ptr::null_mut();
    check(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
    // The launch waits for 3 (the host signals it first: a later signal than the
    // node's 2) and signals 4.
    ok(unsafe { vkcuda_semaphore_host_signal(t, 3) });
    ok(unsafe { vkcuda_semaphore_cuda_graph_exec_set_wait(t, exec.cast(), wait_node, 3) });
    ok(unsafe { vkcuda_semaphore_cuda_graph_exec_set_signal(t, exec.cast(), signal_node, 4) });
    check(unsafe { cu::cuGraphLaunch(exec, ptr::null_mut()) });
    cuda.leave();
    ok(unsafe { vkcuda_semaphore_host_wait(t, 4, 5 * second) });
    let mut value = 0;
    ok(unsafe { vkcuda_semaphore_get_value(t, &mut value) });
    assert_eq!(value, 4);
    cuda.within(|| unsafe {
        check(cu::cuCtxSynchronize());
        check(cu::cuGraphExecDestroy(exec));
        check(cu::cuGraphDestroy(graph));
    });
    drop(v);
    unsafe {
        vkcuda_semaphore_destroy(t);
        vkcuda_context_destroy(ctx);
    }
}
