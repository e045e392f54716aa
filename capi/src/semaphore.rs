//! C API: shared timeline and binary semaphores.

use std::os::fd::IntoRawFd;
use std::time::Duration;

use super::context::{ctx_arg, vkcuda_context};
use super::handle::{self, handle_kind, Tagged};
use super::types::*;
use super::{arg, boundary, check_flags, out, quiet, vkcuda_result, write_handle, write_native};
use vkcuda::error::{Error, Result};
use vkcuda::semaphore::{GraphOp, Semaphore};

/// A `VkSemaphore` shared with CUDA. Released by `vkcuda_semaphore_destroy`.
///
/// Thread-safety: every function but destroy may be called from any thread at once
/// (the value book-keeping is locked); destroy must not overlap any other use.
///
/// @ingroup sync
pub struct vkcuda_semaphore {
    h: Tagged<Semaphore>,
}
handle_kind!(vkcuda_semaphore, Semaphore, handle::SEMAPHORE, |s| Some(
    s.context()
));

/// Host waits do not spin first: they poll with short sleeps from the start.
///
/// @ingroup sync
pub const VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT: u32 = 0x1;

/// How to make a shared semaphore; all zero gives a timeline starting at 0.
///
/// @ingroup sync
#[repr(C)]
pub struct vkcuda_semaphore_create_info {
    /// `VKCUDA_SEMAPHORE_CREATE_*` bits.
    pub flags: u32,
    /// Timeline (default) or binary.
    pub semaphore_type: vkcuda_semaphore_type_raw,
    /// Timeline: the initial value. Binary: must be 0.
    pub initial_value: u64,
    /// How long `vkcuda_semaphore_host_wait` spins on the counter before it polls
    /// with sleeps; 0 means the default (1 ms).
    pub host_wait_spin_ns: u64,
}

/// One stage of a frame on a timeline: wait for `wait_value`, signal `signal_value`.
///
/// @ingroup sync
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct vkcuda_timeline_stage {
    /// The value the stage waits for (the previous stage's signal).
    pub wait_value: u64,
    /// The value the stage signals when its work is done.
    pub signal_value: u64,
}

unsafe fn sem_arg<'a>(semaphore: *const vkcuda_semaphore) -> Result<&'a Semaphore> {
    handle::get(semaphore, "semaphore")
}

/// Creates an exportable `VkSemaphore` (timeline or binary, OPAQUE_FD) and imports
/// it into CUDA (`TIMELINE_SEMAPHORE_FD` or `OPAQUE_FD`). Needs
/// `VK_KHR_external_semaphore_fd` (`VKCUDA_ERROR_EXTENSION_NOT_PRESENT`
/// otherwise). `*semaphore` is written on success, set to NULL on failure.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_create(
    context: *const vkcuda_context,
    info: *const vkcuda_semaphore_create_info,
    semaphore: *mut *mut vkcuda_semaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_create", || {
        let made = (|| {
            out(semaphore, "semaphore")?;
            let ctx = ctx_arg(context)?;
            let info = arg(info, "info")?;
            check_flags(
                info.flags,
                VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT,
                "info->flags",
            )?;
            let kind = info.semaphore_type.get("info->semaphore_type")?;
            let spin = if info.flags & VKCUDA_SEMAPHORE_CREATE_NO_SPIN_BIT != 0 {
                Some(Duration::ZERO)
            } else if info.host_wait_spin_ns != 0 {
                Some(Duration::from_nanos(info.host_wait_spin_ns))
            } else {
                None
            };
            let inner = Semaphore::create(ctx, kind, info.initial_value, spin)?;
            Ok(handle::boxed::<vkcuda_semaphore>(inner))
        })();
        write_handle(semaphore, made)
    })
}

/// The `VkSemaphore`, for the engine's own submits (`VkTimelineSemaphoreSubmitInfo`
/// or `VkSemaphoreSubmitInfo`). Owned by the vkcuda semaphore.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_get_vk_semaphore(
    semaphore: *const vkcuda_semaphore,
    vk_semaphore: *mut VkSemaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_get_vk_semaphore", || {
        let s = sem_arg(semaphore)?;
        let o = out(vk_semaphore, "vk_semaphore")?;
        *o = s.vk_semaphore();
        Ok(())
    })
}

/// Enqueues on `stream` a CUDA signal of `value` (binary semaphores: `value` must be
/// 0). `stream` NULL is the legacy default stream of the context's CUcontext; a
/// stream of another context gives `VKCUDA_ERROR_DEVICE_MISMATCH`. Timeline values
/// must be greater than every value signalled through the library and than the
/// current value (`VKCUDA_ERROR_INVALID_ARGUMENT` otherwise). Does not block. A
/// stream that is capturing a CUDA graph is refused (`VKCUDA_ERROR_INVALID_STATE`):
/// use `vkcuda_semaphore_cuda_graph_add_signal` for graphs.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_signal(
    semaphore: *const vkcuda_semaphore,
    value: u64,
    stream: *mut CUstream_st,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_signal", || {
        sem_arg(semaphore)?.cuda_signal(value, stream.cast())
    })
}

/// Enqueues on `stream` a CUDA wait until the semaphore reaches `value` (binary: a
/// wait for the pending signal; `value` must be 0, and a second wait without a new
/// signal gives `VKCUDA_ERROR_INVALID_STATE`). Does not block the CPU. A stream that
/// is capturing a CUDA graph is refused (`VKCUDA_ERROR_INVALID_STATE`): use
/// `vkcuda_semaphore_cuda_graph_add_wait` for graphs.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_wait(
    semaphore: *const vkcuda_semaphore,
    value: u64,
    stream: *mut CUstream_st,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_wait", || {
        sem_arg(semaphore)?.cuda_wait(value, stream.cast())
    })
}

unsafe fn graph_add(
    semaphore: *const vkcuda_semaphore,
    op: GraphOp,
    graph: *mut CUgraph_st,
    dependencies: *const *mut CUgraphNode_st,
    dependency_count: usize,
    value: u64,
    node: *mut *mut CUgraphNode_st,
) -> Result<()> {
    let made = (|| {
        let s = sem_arg(semaphore)?;
        out(node, "node")?;
        graph_node(s, op, graph, dependencies, dependency_count, value)
    })();
    write_native(node, made)
}

unsafe fn graph_node(
    s: &Semaphore,
    op: GraphOp,
    graph: *mut CUgraph_st,
    dependencies: *const *mut CUgraphNode_st,
    dependency_count: usize,
    value: u64,
) -> Result<*mut CUgraphNode_st> {
    if graph.is_null() {
        return Err(Error::null("graph"));
    }
    let deps: &[cudarc::driver::sys::CUgraphNode] = match (dependencies.is_null(), dependency_count)
    {
        (_, 0) => &[],
        (true, _) => return Err(Error::null("dependencies")),
        (false, n) => {
            let d = std::slice::from_raw_parts(dependencies.cast(), n);
            if let Some(i) = d
                .iter()
                .position(|p: &cudarc::driver::sys::CUgraphNode| p.is_null())
            {
                return Err(Error::null(&format!("dependencies[{i}]")));
            }
            d
        }
    };
    Ok(s.cuda_graph_add(op, graph.cast(), deps, value)?.cast())
}

/// Adds to a CUDA graph a node that waits until the semaphore reaches `value`,
/// after the `dependency_count` nodes in `dependencies` (NULL when 0); `*node` is
/// the new node, owned by the graph, set to NULL on failure. Timeline semaphores
/// only. The value can be
/// changed for each launch of the instantiated graph with
/// `vkcuda_semaphore_cuda_graph_exec_set_wait`. The graph runs in the context's
/// CUcontext (`vkcuda_context_get_cuda_info`). This is how a semaphore goes into a
/// graph: `vkcuda_semaphore_cuda_wait` on a capturing stream is refused
/// (`VKCUDA_ERROR_INVALID_STATE`), since a captured wait would keep its value.
///
/// Thread-safety: the graph is externally synchronised, as in CUDA.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_graph_add_wait(
    semaphore: *const vkcuda_semaphore,
    graph: *mut CUgraph_st,
    dependencies: *const *mut CUgraphNode_st,
    dependency_count: usize,
    value: u64,
    node: *mut *mut CUgraphNode_st,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_graph_add_wait", || {
        graph_add(
            semaphore,
            GraphOp::Wait,
            graph,
            dependencies,
            dependency_count,
            value,
            node,
        )
    })
}

/// Adds to a CUDA graph a node that signals `value`, after the `dependency_count`
/// nodes in `dependencies`; `*node` is the new node, owned by the graph, set to
/// NULL on failure. Timeline semaphores only. `value` is what the graph's first launch signals, so it is
/// checked like a `vkcuda_semaphore_cuda_signal` (a value from
/// `vkcuda_semaphore_next_stage`, greater than every value signalled before) and
/// recorded as signalled. Before every further launch, give the node its next value
/// with `vkcuda_semaphore_cuda_graph_exec_set_signal`: a graph launched twice with
/// one value would signal it twice, which the timeline forbids. `vkcuda_semaphore_cuda_signal`
/// on a capturing stream is refused (`VKCUDA_ERROR_INVALID_STATE`) for that reason.
///
/// Thread-safety: the graph is externally synchronised, as in CUDA.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_graph_add_signal(
    semaphore: *const vkcuda_semaphore,
    graph: *mut CUgraph_st,
    dependencies: *const *mut CUgraphNode_st,
    dependency_count: usize,
    value: u64,
    node: *mut *mut CUgraphNode_st,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_graph_add_signal", || {
        graph_add(
            semaphore,
            GraphOp::Signal,
            graph,
            dependencies,
            dependency_count,
            value,
            node,
        )
    })
}

unsafe fn graph_exec_set(
    semaphore: *const vkcuda_semaphore,
    op: GraphOp,
    exec: *mut CUgraphExec_st,
    node: *mut CUgraphNode_st,
    value: u64,
) -> Result<()> {
    let s = sem_arg(semaphore)?;
    if exec.is_null() {
        return Err(Error::null("exec"));
    }
    if node.is_null() {
        return Err(Error::null("node"));
    }
    s.cuda_graph_exec_set(op, exec.cast(), node.cast(), value)
}

/// Sets the value the wait node `node` (made by
/// `vkcuda_semaphore_cuda_graph_add_wait` on this semaphore, in the graph `exec`
/// was instantiated from) waits for in the next launches of `exec`. A node of
/// another semaphore or of another kind is refused (`VKCUDA_ERROR_INVALID_ARGUMENT`).
///
/// Thread-safety: `exec` is externally synchronised, as in CUDA; call it between
/// launches, not while another thread launches `exec`.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_graph_exec_set_wait(
    semaphore: *const vkcuda_semaphore,
    exec: *mut CUgraphExec_st,
    node: *mut CUgraphNode_st,
    value: u64,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_graph_exec_set_wait", || {
        graph_exec_set(semaphore, GraphOp::Wait, exec, node, value)
    })
}

/// Sets the value the signal node `node` (made by
/// `vkcuda_semaphore_cuda_graph_add_signal` on this semaphore) signals in the next
/// launch of `exec`. The value is checked like a `vkcuda_semaphore_cuda_signal`
/// (from `vkcuda_semaphore_next_stage`, greater than every value signalled before,
/// `VKCUDA_ERROR_INVALID_ARGUMENT` otherwise) and recorded as signalled, so set it
/// once before each launch. A node of another semaphore or kind is refused.
///
/// Thread-safety: `exec` is externally synchronised, as in CUDA; call it between
/// launches, not while another thread launches `exec`.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_cuda_graph_exec_set_signal(
    semaphore: *const vkcuda_semaphore,
    exec: *mut CUgraphExec_st,
    node: *mut CUgraphNode_st,
    value: u64,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_cuda_graph_exec_set_signal", || {
        graph_exec_set(semaphore, GraphOp::Signal, exec, node, value)
    })
}

/// Binary semaphores: tell the library the engine put the semaphore in a submit's
/// signal list, so it can enforce one wait per signal across both APIs.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_note_vulkan_signal(
    semaphore: *const vkcuda_semaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_note_vulkan_signal", || {
        sem_arg(semaphore)?.note_vulkan_signal()
    })
}

/// Binary semaphores: tell the library the engine put the semaphore in a submit's
/// wait list.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_note_vulkan_wait(
    semaphore: *const vkcuda_semaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_note_vulkan_wait", || {
        sem_arg(semaphore)?.note_vulkan_wait()
    })
}

/// Timeline: signals `value` from the host (`vkSignalSemaphore`), under the same
/// value rules as `vkcuda_semaphore_cuda_signal`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_host_signal(
    semaphore: *const vkcuda_semaphore,
    value: u64,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_host_signal", || {
        sem_arg(semaphore)?.host_signal(value)
    })
}

/// Timeline: blocks the calling thread until the value reaches `value` or
/// `timeout_ns` passes (`VKCUDA_ERROR_TIMEOUT`; never hangs longer; 0 polls once,
/// UINT64_MAX waits for ever). It spins on `vkGetSemaphoreCounterValue` for the
/// spin time (default 1 ms), then polls every 50 µs: `vkWaitSemaphores` was seen to
/// wake milliseconds late on CUDA-signalled values.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_host_wait(
    semaphore: *const vkcuda_semaphore,
    value: u64,
    timeout_ns: u64,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_host_wait", || {
        sem_arg(semaphore)?.host_wait(value, Duration::from_nanos(timeout_ns))
    })
}

/// Timeline: the current value (`vkGetSemaphoreCounterValue`).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_get_value(
    semaphore: *const vkcuda_semaphore,
    value: *mut u64,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_get_value", || {
        let s = sem_arg(semaphore)?;
        let value = out(value, "value")?;
        *value = s.value()?;
        Ok(())
    })
}

/// Timeline: hands out the next stage of the frame chain, so the engine never
/// computes values: each stage waits for the previous stage's signal and signals
/// the next value. A frame is typically one Vulkan stage (submit waits
/// `wait_value`, signals `signal_value`), then one CUDA stage
/// (`vkcuda_semaphore_cuda_wait(wait_value)`, kernels,
/// `vkcuda_semaphore_cuda_signal(signal_value)`), and so on.
/// `VKCUDA_ERROR_INVALID_STATE` when the chain would run more than
/// `maxTimelineSemaphoreValueDifference` ahead of the current value.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_next_stage(
    semaphore: *const vkcuda_semaphore,
    stage: *mut vkcuda_timeline_stage,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_next_stage", || {
        let s = sem_arg(semaphore)?;
        let o = out(stage, "stage")?;
        let st = s.next_stage()?;
        *o = vkcuda_timeline_stage {
            wait_value: st.wait,
            signal_value: st.signal,
        };
        Ok(())
    })
}

/// Exports the semaphore's payload as a new OPAQUE_FD; **the caller owns it**
/// (close it, or import it elsewhere).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup sync
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_export_fd(
    semaphore: *const vkcuda_semaphore,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_export_fd", || {
        let s = sem_arg(semaphore)?;
        let fd = out(fd, "fd")?;
        *fd = s.export_fd()?.into_raw_fd();
        Ok(())
    })
}

/// Destroys the CUDA import, then the `VkSemaphore`. The caller guarantees no
/// pending GPU work waits on or signals it. NULL does nothing.
///
/// Thread-safety: must not overlap any other use of the semaphore.
///
/// @ingroup sync
#[no_mangle]
pub unsafe extern "C" fn vkcuda_semaphore_destroy(semaphore: *mut vkcuda_semaphore) {
    quiet((), || {
        handle::destroy(semaphore, "vkcuda_semaphore_destroy")
    })
}
