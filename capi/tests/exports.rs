//! One success case per export whose behaviour is tested through the Rust API
//! (tests/buffer.rs, tests/handoff.rs, tests/semaphore.rs, tests/graph.rs,
//! tests/context.rs): the C door's argument checks are the misuse matrix's, and
//! here each such export is called the way a C caller calls it, once, and does
//! its work. On lavapipe: the barrier exports, the context told its device's
//! create info, and the live-object counts (the floor counts through
//! `vkcuda::live_objects`); on a GPU (ignored without `--include-ignored`): the semaphore
//! exports, CUDA graph nodes included.

mod support;
use support::*;

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

    // A timeline: a stage, and a CUDA graph of a wait node and a signal node whose
    // values are set for the launch.
    let t = create_semaphore(ctx, 0, 0);
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
