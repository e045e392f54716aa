//! Counts of the native objects the library holds right now, for leak checks:
//! each create adds one and each release takes it away again.

use std::sync::atomic::{AtomicI64, Ordering};

/// One counter per kind of native object.
pub(crate) struct Counter(AtomicI64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicI64::new(0))
    }
    pub(crate) fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn sub(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
    pub(crate) fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub(crate) static VK_BUFFERS: Counter = Counter::new();
pub(crate) static VK_MEMORIES: Counter = Counter::new();
pub(crate) static VK_SEMAPHORES: Counter = Counter::new();
pub(crate) static VK_IMAGES: Counter = Counter::new();
pub(crate) static CUDA_EXTERNAL_MEMORIES: Counter = Counter::new();
pub(crate) static CUDA_ALLOCATIONS: Counter = Counter::new();
pub(crate) static CUDA_EXTERNAL_SEMAPHORES: Counter = Counter::new();
pub(crate) static CONTEXTS: Counter = Counter::new();
/// DLPack tensors made and not yet deleted (not in `vkcuda_live_objects`: the
/// native objects a tensor keeps alive are counted there).
pub(crate) static DLPACK_TENSORS: Counter = Counter::new();

/// How many native objects of each kind the library holds right now (every
/// context, buffer, image, semaphore and DLPack tensor of the process): a leak
/// check reads this before and after and compares. The C API's
/// `vkcuda_live_objects_get` reads the same counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveObjects {
    /// Library contexts.
    pub contexts: i64,
    /// `VkBuffer`s.
    pub vk_buffers: i64,
    /// `VkDeviceMemory` allocations (made or imported).
    pub vk_memories: i64,
    /// `VkImage`s.
    pub vk_images: i64,
    /// `VkSemaphore`s.
    pub vk_semaphores: i64,
    /// CUDA allocations (`cuMemCreate`).
    pub cuda_allocations: i64,
    /// CUDA external memory imports (`cuImportExternalMemory`).
    pub cuda_external_memories: i64,
    /// CUDA external semaphore imports (`cuImportExternalSemaphore`).
    pub cuda_external_semaphores: i64,
    /// DLPack tensors handed out and not yet deleted.
    pub dlpack_tensors: i64,
}

/// The counts of [`LiveObjects`] now. Counts from other threads' concurrent calls
/// may or may not be included.
pub fn live_objects() -> LiveObjects {
    LiveObjects {
        contexts: CONTEXTS.get(),
        vk_buffers: VK_BUFFERS.get(),
        vk_memories: VK_MEMORIES.get(),
        vk_images: VK_IMAGES.get(),
        vk_semaphores: VK_SEMAPHORES.get(),
        cuda_allocations: CUDA_ALLOCATIONS.get(),
        cuda_external_memories: CUDA_EXTERNAL_MEMORIES.get(),
        cuda_external_semaphores: CUDA_EXTERNAL_SEMAPHORES.get(),
        dlpack_tensors: DLPACK_TENSORS.get(),
    }
}
