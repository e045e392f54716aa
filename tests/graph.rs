//! Frames as CUDA graphs (issue 20 item 1), on the GPU: a frame graph captured
//! from a stream (a kernel), with the semaphore's wait and signal added as graph
//! nodes, replayed for 10,000 frames against Vulkan submits on one timeline, the
//! values set per launch with the exec setters; every frame's data checked. The
//! same loop with the stream calls (cuda_wait, launch, cuda_signal) for the CPU
//! cost per frame. Also: a wait or signal on a capturing stream is refused, a
//! setter refuses a stale value, a value set twice, and nodes that are not this
//! semaphore's.
//!
//! Without a GPU these are ignored; `VKCUDA_REQUIRE_GPU=1 cargo test --test graph
//! -- --include-ignored` makes a missing GPU a failure.

mod support;

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys as cu;
use support::cuda::{check, Cuda};
use support::*;
use vkcuda::buffer::Allocator;
use vkcuda::handoff::Scope;
use vkcuda::semaphore::{GraphOp, Kind, Stage};
use vkcuda::{Buffer, Context, ErrorKind, Semaphore};

/// w = 2w + 1 on `n` words.
const PTX: &str = "
.version 7.0
.target sm_70
.address_size 64
.visible .entry twice_plus_one(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r6, [%rd4];
    shl.b32 %r7, %r6, 1;
    add.s32 %r7, %r7, 1;
    st.global.u32 [%rd4], %r7;
DONE:
    ret;
}
\0";

const WORDS: u32 = 65536;
const SLOTS: usize = 3;

struct Frame {
    v: Vk,
    sem: Semaphore,
    vk_sem: vk::Semaphore,
    buf: Buffer,
    vk_buf: vk::Buffer,
    ptr: u64,
    stream: cu::CUstream,
    kernel: cu::CUfunction,
    staging: HostBuffer,
    cmds: Vec<vk::CommandBuffer>,
    /// The C value of the frame that last used each slot (0: none).
    slot_done: [u64; SLOTS],
    slot_frame: [u64; SLOTS],
    checked: u64,
}

impl Frame {
    fn new(ctx: &Arc<Context>) -> Frame {
        let v = Vk::of(ctx);
        Cuda::of_context(ctx).enter();
        let mut stream = ptr::null_mut();
        check(unsafe { cu::cuStreamCreate(&mut stream, 1) });
        let mut module = ptr::null_mut();
        check(unsafe { cu::cuModuleLoadData(&mut module, PTX.as_ptr().cast()) });
        let mut kernel = ptr::null_mut();
        check(unsafe { cu::cuModuleGetFunction(&mut kernel, module, c"twice_plus_one".as_ptr()) });
        let usage = vk::BufferUsageFlags::empty();
        let buf = Buffer::create(ctx, WORDS as u64 * 4, usage, Allocator::Vulkan).unwrap();
        let sem = Semaphore::create(ctx, Kind::Timeline, 0, None).unwrap();
        let (vk_sem, vk_buf, ptr) = (sem.vk_semaphore(), buf.vk_buffer(), buf.cuda_ptr().unwrap());
        let staging = v.host_buffer(WORDS as u64 * 4 * SLOTS as u64);
        let cmds = unsafe {
            v.device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(v.pool)
                    .command_buffer_count(2 * SLOTS as u32),
            )
        }
        .unwrap();
        Frame {
            v,
            sem,
            vk_sem,
            buf,
            vk_buf,
            ptr,
            stream,
            kernel,
            staging,
            cmds,
            slot_done: [0; SLOTS],
            slot_frame: [0; SLOTS],
            checked: 0,
        }
    }

    fn stage(&self) -> Stage {
        self.sem.next_stage().unwrap()
    }

    fn launch_kernel(&self) {
        let mut p = self.ptr;
        let mut n = WORDS;
        let mut args = [
            &mut p as *mut u64 as *mut c_void,
            &mut n as *mut u32 as *mut c_void,
        ];
        check(unsafe {
            cu::cuLaunchKernel(
                self.kernel,
                WORDS / 256,
                1,
                1,
                256,
                1,
                1,
                0,
                self.stream,
                args.as_mut_ptr(),
                ptr::null_mut(),
            )
        });
    }

    fn submit(&self, cmd: vk::CommandBuffer, wait: u64, signal: u64) {
        let sem = self.vk_sem;
        self.v
            .submit_timeline(&[(sem, wait)], &[(sem, signal)], cmd, vk::Fence::null());
    }

    /// Checks the slot's frame once its C stage is done.
    fn check_slot(&mut self, slot: usize) {
        if self.slot_done[slot] == 0 {
            return;
        }
        let done = self.slot_done[slot];
        self.sem.host_wait(done, Duration::from_secs(10)).unwrap();
        let f = self.slot_frame[slot] as u32;
        let want = f.wrapping_mul(2).wrapping_add(1);
        let words = unsafe {
            std::slice::from_raw_parts(
                self.staging.ptr.cast::<u32>().add(slot * WORDS as usize),
                WORDS as usize,
            )
        };
        let bad = words.iter().filter(|&&w| w != want).count();
        assert_eq!(bad, 0, "frame {f}: {bad} of {WORDS} words wrong");
        self.checked += 1;
        self.slot_done[slot] = 0;
    }

    /// Records and submits stage A (Vulkan fills the buffer with `f`, releases it
    /// to CUDA) of frame `f` in `slot`.
    fn vulkan_a(&mut self, slot: usize, f: u64, st: Stage) {
        let cmd = self.cmds[2 * slot];
        let d = &self.v.device;
        let info = Scope {
            queue_family: self.v.family,
            stages: vk::PipelineStageFlags::TRANSFER,
            access: vk::AccessFlags::TRANSFER_WRITE,
        };
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .unwrap();
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
            d.cmd_fill_buffer(cmd, self.vk_buf, 0, WORDS as u64 * 4, f as u32);
            self.buf.cmd_release_to_cuda(cmd, &info).unwrap();
            d.end_command_buffer(cmd).unwrap();
        }
        self.submit(cmd, st.wait, st.signal);
    }

    /// Stage C: acquire from CUDA, copy the buffer into the slot's staging.
    fn vulkan_c(&mut self, slot: usize, f: u64, st: Stage) {
        let cmd = self.cmds[2 * slot + 1];
        let d = &self.v.device;
        let info = Scope {
            queue_family: self.v.family,
            stages: vk::PipelineStageFlags::TRANSFER,
            access: vk::AccessFlags::TRANSFER_READ,
        };
        unsafe {
            d.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                .unwrap();
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
            self.buf.cmd_acquire_from_cuda(cmd, &info).unwrap();
            d.cmd_copy_buffer(
                cmd,
                self.vk_buf,
                self.staging.buffer,
                &[vk::BufferCopy::default()
                    .dst_offset((slot * WORDS as usize * 4) as u64)
                    .size(WORDS as u64 * 4)],
            );
            let host = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[host],
                &[],
                &[],
            );
            d.end_command_buffer(cmd).unwrap();
        }
        self.submit(cmd, st.wait, st.signal);
        self.slot_done[slot] = st.signal;
        self.slot_frame[slot] = f;
    }

    /// With `VKCUDA_GRAPH_LAYER_SEES_A=1`, the host waits for stage A's signal
    /// before stage C is submitted. The validation layer cannot see CUDA's
    /// signals: to it, C's wait on the value CUDA signals orders nothing, and
    /// C's copy looks unsynchronized with A's fill. This wait shows it A's
    /// completion, so that synchronization validation checks the rest of the
    /// frame (CTest's rust_graph_gpu_vvl runs with it; docs/GUIDE.md).
    fn let_the_layer_see(&self, a_signal: u64) {
        if std::env::var("VKCUDA_GRAPH_LAYER_SEES_A").as_deref() != Ok("1") {
            return;
        }
        let sems = [self.vk_sem];
        let values = [a_signal];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&sems)
            .values(&values);
        unsafe { self.v.device.wait_semaphores(&info, 10_000_000_000) }.unwrap();
    }

    fn drain(&mut self) {
        for slot in 0..SLOTS {
            self.check_slot(slot);
        }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        unsafe {
            let _ = self.v.device.device_wait_idle();
            cu::cuStreamSynchronize(self.stream);
            cu::cuStreamDestroy_v2(self.stream);
            self.v.device.free_command_buffers(self.v.pool, &self.cmds);
        }
        let staging = std::mem::replace(
            &mut self.staging,
            HostBuffer {
                buffer: vk::Buffer::null(),
                memory: vk::DeviceMemory::null(),
                ptr: ptr::null_mut(),
                size: 0,
            },
        );
        self.v.destroy_host_buffer(staging);
        let mut popped = ptr::null_mut();
        unsafe { cu::cuCtxPopCurrent_v2(&mut popped) };
    }
}

fn frames() -> u64 {
    std::env::var("VKCUDA_GRAPH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn a_captured_frame_graph_replays_on_one_timeline_with_vulkan() {
    let Some(ctx) =
        cuda_context_or_skip("a_captured_frame_graph_replays_on_one_timeline_with_vulkan")
    else {
        return;
    };
    let mut fr = Frame::new(&ctx);
    let n = frames();

    // Capture the frame's CUDA work from the stream. A wait or signal on the
    // capturing stream is refused: the captured value would be replayed.
    check(unsafe {
        cu::cuStreamBeginCapture_v2(
            fr.stream,
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        )
    });
    let capturing = ErrorKind::InvalidState;
    refused(fr.sem.cuda_signal(1, fr.stream), capturing, "capturing");
    refused(fr.sem.cuda_wait(1, fr.stream), capturing, "capturing");
    fr.launch_kernel();
    let mut graph = ptr::null_mut();
    check(unsafe { cu::cuStreamEndCapture(fr.stream, &mut graph) });
    let mut kernel_node = ptr::null_mut();
    let mut roots = 1usize;
    check(unsafe { cu::cuGraphGetRootNodes(graph, &mut kernel_node, &mut roots) });
    assert_eq!(roots, 1, "the captured graph is one kernel");

    // The semaphore's nodes: wait -> kernel -> signal, with frame 0's values.
    let (a0, b0, c0) = (fr.stage(), fr.stage(), fr.stage());
    // SAFETY: `graph` is a live graph of the context's CUDA context, `kernel_node`
    // its node, used by this thread only.
    let wait_node = unsafe { fr.sem.cuda_graph_add(GraphOp::Wait, graph, &[], b0.wait) }.unwrap();
    check(unsafe { cu::cuGraphAddDependencies(graph, &wait_node, &kernel_node, 1) });
    let deps = [kernel_node];
    let signal_node = unsafe {
        fr.sem
            .cuda_graph_add(GraphOp::Signal, graph, &deps, b0.signal)
    }
    .unwrap();
    let mut exec = ptr::null_mut();
    check(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) });
    // SAFETY: `exec` was instantiated from `graph`, used by this thread only.
    let set = |s: &Semaphore, op: GraphOp, node: cu::CUgraphNode, value: u64| unsafe {
        s.cuda_graph_exec_set(op, exec, node, value)
    };

    // Nodes that are not this semaphore's, or not of that kind, are refused.
    let other = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
    let invalid = ErrorKind::InvalidArgument;
    refused(
        set(&other, GraphOp::Signal, signal_node, 1_000),
        invalid,
        "not a node of this semaphore",
    );
    let not_wait = "not an external semaphore wait node";
    refused(
        set(&fr.sem, GraphOp::Wait, signal_node, 1),
        invalid,
        not_wait,
    );
    refused(
        set(&fr.sem, GraphOp::Wait, kernel_node, 1),
        invalid,
        not_wait,
    );
    // Frame 0's signal value was recorded when the node was added: setting it
    // again is a second signal of one value.
    let e = refused(
        set(&fr.sem, GraphOp::Signal, signal_node, b0.signal),
        invalid,
        "",
    );
    assert!(
        e.message().contains("strictly increase") || e.message().contains("already signalled"),
        "{e}"
    );

    // The frame loop: A (Vulkan) -> the graph -> C (Vulkan), one timeline, no
    // host wait but for the slot reused three frames later.
    let mut set_us = Vec::with_capacity(n as usize);
    let t0 = Instant::now();
    for f in 0..n {
        let slot = (f as usize) % SLOTS;
        fr.check_slot(slot);
        let (a, b, c) = if f == 0 {
            (a0, b0, c0)
        } else {
            (fr.stage(), fr.stage(), fr.stage())
        };
        fr.vulkan_a(slot, f, a);
        let t = Instant::now();
        if f > 0 {
            set(&fr.sem, GraphOp::Wait, wait_node, b.wait).unwrap();
            set(&fr.sem, GraphOp::Signal, signal_node, b.signal).unwrap();
        }
        check(unsafe { cu::cuGraphLaunch(exec, fr.stream) });
        set_us.push(t.elapsed().as_secs_f64() * 1e6);
        fr.let_the_layer_see(a.signal);
        fr.vulkan_c(slot, f, c);
    }
    fr.drain();
    let graph_s = t0.elapsed().as_secs_f64();
    assert_eq!(fr.checked, n);
    println!(
        "graph: {n} frames (Vulkan fill -> CUDA graph [wait, kernel, signal] -> Vulkan copy), every word of every frame checked ({} words), {:.0} frames/s; host cost per frame of set_wait + set_signal + cuGraphLaunch: median {:.2} us",
        n * WORDS as u64,
        n as f64 / graph_s,
        median(&mut set_us[1..])
    );

    // The same frames with the stream calls.
    let m = (n / 5).max(100);
    let mut stream_us = Vec::with_capacity(m as usize);
    fr.checked = 0;
    for f in 0..m {
        let slot = (f as usize) % SLOTS;
        fr.check_slot(slot);
        let (a, b, c) = (fr.stage(), fr.stage(), fr.stage());
        fr.vulkan_a(slot, f, a);
        let t = Instant::now();
        fr.sem.cuda_wait(b.wait, fr.stream).unwrap();
        fr.launch_kernel();
        fr.sem.cuda_signal(b.signal, fr.stream).unwrap();
        stream_us.push(t.elapsed().as_secs_f64() * 1e6);
        fr.let_the_layer_see(a.signal);
        fr.vulkan_c(slot, f, c);
    }
    fr.drain();
    assert_eq!(fr.checked, m);
    println!(
        "stream: {m} frames, every word checked; host cost per frame of cuda_wait + cuLaunchKernel + cuda_signal: median {:.2} us",
        median(&mut stream_us)
    );
    unsafe {
        check(cu::cuGraphExecDestroy(exec));
        check(cu::cuGraphDestroy(graph));
    }
}
