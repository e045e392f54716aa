//! CUDA-graph handoffs: wait and signal nodes of a semaphore in a graph, and their
//! values set per launch of the instantiated graph. What needs a real graph (values
//! checked against the timeline, nodes of another semaphore) is in tests/graph.rs,
//! on the GPU; here the arguments every call checks before any CUDA call. A failed
//! add sets `*node` to NULL, as every handle output.

use std::ptr;

use crate::support::*;
use crate::env::{no_timeline, Env};
use crate::matrix::*;
use crate::nulls::not_ours;

/// A semaphore's graph node add: wait or signal.
pub type Add = unsafe extern "C" fn(
    *const vkcuda_semaphore,
    *mut CUgraph_st,
    *const *mut CUgraphNode_st,
    usize,
    u64,
    *mut *mut CUgraphNode_st,
) -> vkcuda_result;

/// The two graph node adds, by name.
pub const ADDS: [(&str, Add); 2] = [
    ("vkcuda_semaphore_cuda_graph_add_wait", vkcuda_semaphore_cuda_graph_add_wait),
    ("vkcuda_semaphore_cuda_graph_add_signal", vkcuda_semaphore_cuda_graph_add_signal),
];

type Set = unsafe extern "C" fn(
    *const vkcuda_semaphore,
    *mut CUgraphExec_st,
    *mut CUgraphNode_st,
    u64,
) -> vkcuda_result;

/// A pointer that is not NULL and is never dereferenced: every case below fails
/// before the library hands it to CUDA.
pub fn dangling<T>() -> *mut T {
    ptr::NonNull::dangling().as_ptr()
}

fn timeline(e: &Env) -> *const vkcuda_semaphore {
    e.timeline.expect("rows that use it need no_timeline")
}

pub fn cases(m: &mut Matrix) {
    for (f, add) in ADDS {
        m.nulls(nulls![
            f, "semaphore" => |_, o| unsafe { add(ptr::null(), dangling(), ptr::null(), 0, 1, o.handle(not_ours)) };
            f, "graph" @needs(no_timeline) => |e, o| unsafe {
                add(timeline(e), ptr::null_mut(), ptr::null(), 0, 1, o.handle(not_ours))
            };
            f, "dependencies" @needs(no_timeline) => |e, o| unsafe {
                add(timeline(e), dangling(), ptr::null(), 2, 1, o.handle(not_ours))
            };
            f, "node" @needs(no_timeline) => |e, _| unsafe {
                add(timeline(e), dangling(), ptr::null(), 0, 1, ptr::null_mut())
            };
        ]);
        m.case(f, "null-element:dependencies", move |c| {
            let Some(s) = c.env.timeline else {
                return Skipped("no shared semaphores on this device");
            };
            let deps = [ptr::null_mut::<CUgraphNode_st>()];
            c.refused_nulled(&[N], |node| unsafe { add(s, dangling(), deps.as_ptr(), 1, 1, node) })
        });
        m.case(f, "binary:semaphore", move |c| {
            let Some(s) = c.env.binary else {
                return Skipped("no shared semaphores on this device");
            };
            c.refused_nulled(&[I], |node| unsafe { add(s, dangling(), ptr::null(), 0, 0, node) })
        });
        m.case(f, "vulkan-only:semaphore", move |c| {
            let Some(s) = c.env.timeline else {
                return Skipped("no shared semaphores on this device");
            };
            if c.env.cuda {
                return Skipped("the context has CUDA (tests/graph.rs adds real nodes)");
            }
            c.refused_nulled(&[VKCUDA_ERROR_CUDA_UNAVAILABLE], |node| unsafe {
                add(s, dangling(), ptr::null(), 0, 1, node)
            })
        });
        m.any(
            f,
            "dependency_count",
            "any count of dependencies (0: the node is a root); each must be a node of the graph",
        );
        m.any(
            f,
            "value",
            "waits take any value; a signal's value is checked against the timeline (tests/graph.rs)",
        );
    }

    let sets: [(&'static str, Set); 2] = named![
        vkcuda_semaphore_cuda_graph_exec_set_wait;
        vkcuda_semaphore_cuda_graph_exec_set_signal;
    ];
    for (f, set) in sets {
        m.nulls(nulls![
            f, "semaphore" => |_, _| unsafe { set(ptr::null(), dangling(), dangling(), 1) };
            f, "exec" @needs(no_timeline) => |e, _| unsafe { set(timeline(e), ptr::null_mut(), dangling(), 1) };
            f, "node" @needs(no_timeline) => |e, _| unsafe { set(timeline(e), dangling(), ptr::null_mut(), 1) };
        ]);
        m.case(f, "binary:semaphore", move |c| {
            let Some(s) = c.env.binary else {
                return Skipped("no shared semaphores on this device");
            };
            c.refused(unsafe { set(s, dangling(), dangling(), 0) }, &[I]);
            Ran
        });
        m.any(
            f,
            "value",
            "waits take any value; a signal's value is checked against the timeline (tests/graph.rs)",
        );
    }
}
