//! Vulkan memory and semaphores imported into CUDA (`cuImportExternalMemory`,
//! `cuImportExternalSemaphore`).

use std::os::fd::OwnedFd;
use std::sync::Arc;

use cudarc::driver::sys;

use super::cu_check;
use super::CudaContext;
use crate::error::{Error, ErrorKind, Result};
use crate::fd;
use crate::stats;

// The descriptors are built field by field: their handle-type enums have no zero
// value, so `mem::zeroed()` would make an invalid Rust value (and panics).

fn memory_desc(
    fd: i32,
    allocation_size: u64,
    dedicated: bool,
) -> sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
    sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
        type_: sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
        handle: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 { fd },
        size: allocation_size,
        flags: if dedicated {
            sys::CUDA_EXTERNAL_MEMORY_DEDICATED
        } else {
            0
        },
        reserved: [0; 16],
    }
}

fn semaphore_desc(fd: i32, timeline: bool) -> sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
    sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
        type_: if timeline {
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
        } else {
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        },
        handle: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 { fd },
        flags: 0,
        reserved: [0; 16],
    }
}

fn signal_params(value: u64) -> sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
    // SAFETY: every field is an integer, a pointer or a union of them: zero is valid.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
    p.params.fence.value = value;
    p
}

fn wait_params(value: u64) -> sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
    // SAFETY: as for the signal parameters.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
    p.params.fence.value = value;
    p
}

/// An imported memory object, with at most one mapped buffer.
pub struct ExternalMemory {
    ctx: Arc<CudaContext>,
    ext: sys::CUexternalMemory,
    mapped: sys::CUdeviceptr,
}

// SAFETY: CUDA handles are usable from any thread.
unsafe impl Send for ExternalMemory {}
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Imports an `OPAQUE_FD` of `allocation_size` bytes (the whole Vulkan
    /// allocation). The fd is consumed on success (CUDA closes it when the import is
    /// destroyed) and closed here on failure, so it is always gone afterwards.
    pub fn import_opaque_fd(
        ctx: Arc<CudaContext>,
        handle: OwnedFd,
        allocation_size: u64,
        dedicated: bool,
    ) -> Result<Self> {
        let handle = fd::Handoff::new(handle);
        let _g = ctx.enter()?;
        let desc = memory_desc(handle.raw(), allocation_size, dedicated);
        let mut ext = std::ptr::null_mut();
        cu_check("cuImportExternalMemory", unsafe {
            sys::cuImportExternalMemory(&mut ext, &desc)
        })?;
        // Success: the driver owns the descriptor now.
        handle.taken();
        stats::CUDA_EXTERNAL_MEMORIES.add();
        Ok(ExternalMemory {
            ctx,
            ext,
            mapped: 0,
        })
    }

    /// Maps `size` bytes at `offset` as a device pointer (once).
    pub fn map_buffer(&mut self, offset: u64, size: u64) -> Result<u64> {
        if self.mapped != 0 {
            return Err(Error::invalid("the external memory is already mapped"));
        }
        let _g = self.ctx.enter()?;
        let desc = sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset,
            size,
            flags: 0,
            reserved: [0; 16],
        };
        let mut ptr = 0;
        cu_check("cuExternalMemoryGetMappedBuffer", unsafe {
            sys::cuExternalMemoryGetMappedBuffer(&mut ptr, self.ext, &desc)
        })?;
        self.mapped = ptr;
        Ok(ptr)
    }

    pub fn raw(&self) -> sys::CUexternalMemory {
        self.ext
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        stats::CUDA_EXTERNAL_MEMORIES.sub();
        let Some(r) = self.ctx.releasing() else {
            // The caller destroyed the context first: the driver freed the import
            // and its mapping with it (destroying them again corrupts its heap).
            return;
        };
        // SAFETY: the mapping is freed before the memory object it came from. In
        // a lost context both are still called: the import owns the fd until
        // cuDestroyExternalMemory.
        unsafe {
            if self.mapped != 0 {
                super::context::memory_freed();
                r.result("cuMemFree_v2", sys::cuMemFree_v2(self.mapped));
            }
            r.result(
                "cuDestroyExternalMemory",
                sys::cuDestroyExternalMemory(self.ext),
            );
        }
    }
}

/// An imported semaphore (timeline or binary).
pub struct ExternalSemaphore {
    ctx: Arc<CudaContext>,
    sem: sys::CUexternalSemaphore,
    timeline: bool,
}

// SAFETY: CUDA handles are usable from any thread.
unsafe impl Send for ExternalSemaphore {}
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// Imports a semaphore fd; consumed on success, closed on failure.
    pub fn import_fd(ctx: Arc<CudaContext>, handle: OwnedFd, timeline: bool) -> Result<Self> {
        let handle = fd::Handoff::new(handle);
        let _g = ctx.enter()?;
        let desc = semaphore_desc(handle.raw(), timeline);
        let mut sem = std::ptr::null_mut();
        cu_check("cuImportExternalSemaphore", unsafe {
            sys::cuImportExternalSemaphore(&mut sem, &desc)
        })?;
        handle.taken();
        stats::CUDA_EXTERNAL_SEMAPHORES.add();
        Ok(ExternalSemaphore { ctx, sem, timeline })
    }

    /// Enqueues a signal of `value` (ignored for binary semaphores) on `stream`.
    // A CUstream is an opaque driver handle, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn signal(&self, value: u64, stream: sys::CUstream) -> Result<()> {
        let _g = self.ctx.enter()?;
        self.ctx.check_stream(stream)?;
        self.refuse_capture(stream, "a signal")?;
        let p = signal_params(if self.timeline { value } else { 0 });
        cu_check("cuSignalExternalSemaphoresAsync", unsafe {
            sys::cuSignalExternalSemaphoresAsync(&self.sem, &p, 1, stream)
        })
        .inspect_err(|_| self.ctx.forget_stream(stream))
    }

    /// Enqueues a wait for `value` (ignored for binary semaphores) on `stream`.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn wait(&self, value: u64, stream: sys::CUstream) -> Result<()> {
        let _g = self.ctx.enter()?;
        self.ctx.check_stream(stream)?;
        self.refuse_capture(stream, "a wait")?;
        let p = wait_params(if self.timeline { value } else { 0 });
        cu_check("cuWaitExternalSemaphoresAsync", unsafe {
            sys::cuWaitExternalSemaphoresAsync(&self.sem, &p, 1, stream)
        })
        .inspect_err(|_| self.ctx.forget_stream(stream))
    }
}

/// Which graph node of an external semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GraphOp {
    /// A node that waits for a value (`cuGraphAddExternalSemaphoresWaitNode`).
    Wait,
    /// A node that signals a value (`cuGraphAddExternalSemaphoresSignalNode`).
    Signal,
}

impl ExternalSemaphore {
    /// Refuses a stream that is capturing: a wait or signal captured into a graph
    /// keeps the value it was captured with, and every replay would wait for or
    /// signal that same value again (graph nodes, whose values are set per launch,
    /// are the way to put a semaphore into a graph). Must run with the context current.
    fn refuse_capture(&self, stream: sys::CUstream, what: &str) -> Result<()> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let r = unsafe { sys::cuStreamIsCapturing(stream, &mut status) };
        if r == sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "{what} on the legacy default stream while another stream is capturing \
                     (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT): use a stream of your own"
                ),
            ));
        }
        cu_check("cuStreamIsCapturing", r)?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "{what} on a stream that is capturing a CUDA graph: the captured node would keep \
                     this value and every replay would repeat it, so the timeline would go backwards; \
                     add the semaphore to the graph with vkcuda_semaphore_cuda_graph_add_{} and set \
                     each launch's value with vkcuda_semaphore_cuda_graph_exec_set_{}",
                    if what.contains("signal") { "signal" } else { "wait" },
                    if what.contains("signal") { "signal" } else { "wait" },
                ),
            ));
        }
        Ok(())
    }

    /// Adds a wait or signal node of `value` to `graph` after `dependencies`.
    // Graphs, nodes and execs are opaque driver handles, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn graph_add(
        &self,
        op: GraphOp,
        graph: sys::CUgraph,
        dependencies: &[sys::CUgraphNode],
        value: u64,
    ) -> Result<sys::CUgraphNode> {
        let _g = self.ctx.enter()?;
        let mut sem = self.sem;
        let mut node = std::ptr::null_mut();
        match op {
            GraphOp::Wait => {
                let p = wait_params(if self.timeline { value } else { 0 });
                let params = sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS {
                    extSemArray: &mut sem,
                    paramsArray: &p,
                    numExtSems: 1,
                };
                cu_check("cuGraphAddExternalSemaphoresWaitNode", unsafe {
                    sys::cuGraphAddExternalSemaphoresWaitNode(
                        &mut node,
                        graph,
                        dependencies.as_ptr(),
                        dependencies.len(),
                        &params,
                    )
                })?;
            }
            GraphOp::Signal => {
                let p = signal_params(if self.timeline { value } else { 0 });
                let params = sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
                    extSemArray: &mut sem,
                    paramsArray: &p,
                    numExtSems: 1,
                };
                cu_check("cuGraphAddExternalSemaphoresSignalNode", unsafe {
                    sys::cuGraphAddExternalSemaphoresSignalNode(
                        &mut node,
                        graph,
                        dependencies.as_ptr(),
                        dependencies.len(),
                        &params,
                    )
                })?;
            }
        }
        Ok(node)
    }

    /// Sets the value of a wait or signal node of this semaphore in an
    /// instantiated graph, for its next launches; a node of another semaphore or
    /// of another kind is refused first (see `check_graph_node`).
    // Graphs, nodes and execs are opaque driver handles, passed through, never dereferenced here.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn graph_exec_set(
        &self,
        op: GraphOp,
        exec: sys::CUgraphExec,
        node: sys::CUgraphNode,
        value: u64,
    ) -> Result<()> {
        let _g = self.ctx.enter()?;
        self.check_graph_node(op, node)?;
        let mut sem = self.sem;
        match op {
            GraphOp::Wait => {
                let p = wait_params(value);
                let params = sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS {
                    extSemArray: &mut sem,
                    paramsArray: &p,
                    numExtSems: 1,
                };
                cu_check("cuGraphExecExternalSemaphoresWaitNodeSetParams", unsafe {
                    sys::cuGraphExecExternalSemaphoresWaitNodeSetParams(exec, node, &params)
                })
            }
            GraphOp::Signal => {
                let p = signal_params(value);
                let params = sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS {
                    extSemArray: &mut sem,
                    paramsArray: &p,
                    numExtSems: 1,
                };
                cu_check("cuGraphExecExternalSemaphoresSignalNodeSetParams", unsafe {
                    sys::cuGraphExecExternalSemaphoresSignalNodeSetParams(exec, node, &params)
                })
            }
        }
    }

    /// Checks that `node` is a node of this semaphore of the kind `op` (the
    /// template graph's node), so that a value is never set on another semaphore's
    /// node or on a node of another kind. The type first (`cuGraphNodeGetType`),
    /// then the parameters (`cuGraphExternalSemaphores*NodeGetParams`, which name
    /// the node's semaphore): no driver call is made that fails on a node of
    /// another kind (compute-sanitizer reports such failures). Runs with the
    /// context current.
    fn check_graph_node(&self, op: GraphOp, node: sys::CUgraphNode) -> Result<()> {
        let (want, name) = match op {
            GraphOp::Wait => (
                sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT,
                "an external semaphore wait node",
            ),
            GraphOp::Signal => (
                sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL,
                "an external semaphore signal node",
            ),
        };
        let mut ty = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        cu_check("cuGraphNodeGetType", unsafe {
            sys::cuGraphNodeGetType(node, &mut ty)
        })?;
        if ty != want {
            return Err(Error::invalid(format!(
                "node is a graph node of type {ty:?}, not {name}"
            )));
        }
        let found = match op {
            GraphOp::Wait => {
                let mut p: sys::CUDA_EXT_SEM_WAIT_NODE_PARAMS = unsafe { std::mem::zeroed() };
                cu_check("cuGraphExternalSemaphoresWaitNodeGetParams", unsafe {
                    sys::cuGraphExternalSemaphoresWaitNodeGetParams(node, &mut p)
                })?;
                (p.numExtSems == 1 && !p.extSemArray.is_null()).then(|| unsafe { *p.extSemArray })
            }
            GraphOp::Signal => {
                let mut p: sys::CUDA_EXT_SEM_SIGNAL_NODE_PARAMS = unsafe { std::mem::zeroed() };
                cu_check("cuGraphExternalSemaphoresSignalNodeGetParams", unsafe {
                    sys::cuGraphExternalSemaphoresSignalNodeGetParams(node, &mut p)
                })?;
                (p.numExtSems == 1 && !p.extSemArray.is_null()).then(|| unsafe { *p.extSemArray })
            }
        };
        if found == Some(self.sem) {
            return Ok(());
        }
        Err(Error::invalid(
            "node is not a node of this semaphore (made by vkcuda_semaphore_cuda_graph_add_* on another \
             semaphore, or by hand)",
        ))
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        stats::CUDA_EXTERNAL_SEMAPHORES.sub();
        // A context the caller destroyed first took the import with it.
        let Some(r) = self.ctx.releasing() else {
            return;
        };
        // SAFETY: destroys the import made in `import_fd`.
        r.result("cuDestroyExternalSemaphore", unsafe {
            sys::cuDestroyExternalSemaphore(self.sem)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptors are valid Rust values (building one with a zeroed enum
    /// panicked on the GPU machine before they were built field by field).
    #[test]
    fn descriptors_build_without_a_driver() {
        let m = memory_desc(7, 1 << 20, true);
        assert_eq!(m.size, 1 << 20);
        assert_eq!(m.flags, sys::CUDA_EXTERNAL_MEMORY_DEDICATED);
        assert_eq!(unsafe { m.handle.fd }, 7);
        let s = semaphore_desc(9, true);
        assert_eq!(
            s.type_,
            sys::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
        );
        assert_eq!(signal_params(5).params.fence.value, 5);
        assert_eq!(wait_params(6).params.fence.value, 6);
    }
}
