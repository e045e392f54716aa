//! Counts of the native objects the library holds right now, for leak checks:
//! each create adds one and each release takes it away again.

use std::sync::atomic::{AtomicI64, Ordering};

/// One counter per kind of native object.
pub struct Counter(AtomicI64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicI64::new(0))
    }
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub fn sub(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub static VK_BUFFERS: Counter = Counter::new();
pub static VK_MEMORIES: Counter = Counter::new();
pub static VK_SEMAPHORES: Counter = Counter::new();
pub static VK_IMAGES: Counter = Counter::new();
pub static CUDA_EXTERNAL_MEMORIES: Counter = Counter::new();
pub static CUDA_ALLOCATIONS: Counter = Counter::new();
pub static CUDA_EXTERNAL_SEMAPHORES: Counter = Counter::new();
pub static CONTEXTS: Counter = Counter::new();
/// DLPack tensors made and not yet deleted (not in `vkcuda_live_objects`: the
/// native objects a tensor keeps alive are counted there).
pub static DLPACK_TENSORS: Counter = Counter::new();
