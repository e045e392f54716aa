//! Results, skips and counts: what every suite asserts with.
//!
//! `ok`/`fails`/`last_error` for results; `gpu_required` and
//! `cuda_context_or_skip` for GPU-only tests (see the top of support/mod.rs);
//! `serial` for tests that count per-process things; `fd_count`, `fd_is_open`,
//! `fd_knows_size`, `live_objects`, `live_counts`, `image_counts`; `pattern`, the bytes tests write; `median` of timings.

use std::ffi::CStr;
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use vkcuda_c::vkcuda_result::*;
use vkcuda_c::*;

pub fn last_error() -> String {
    unsafe { CStr::from_ptr(vkcuda_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Panics with the library's message unless `r` is success.
#[track_caller]
pub fn ok(r: vkcuda_result) {
    assert_eq!(r, VKCUDA_SUCCESS, "{}", last_error());
}

/// Asserts `r` is `want` and that a message was set; returns the message.
#[track_caller]
pub fn fails(r: vkcuda_result, want: vkcuda_result) -> String {
    let msg = last_error();
    assert_eq!(r, want, "message: {msg}");
    assert!(!msg.is_empty(), "no message for {want:?}");
    msg
}

/// The VkImages, VkDeviceMemorys and CUDA external memories alive and the open fds:
/// what making and destroying images leaves as it found.
pub fn image_counts() -> (i64, i64, i64, usize) {
    let l = live_objects();
    (
        l.vk_images,
        l.vk_memories,
        l.cuda_external_memories,
        fd_count(),
    )
}

/// Tests of one file that count fds or live objects, or set process limits, take
/// this lock: those counts are per process and libtest runs tests on threads.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn live_objects() -> vkcuda_live_objects {
    let mut l: vkcuda_live_objects = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_live_objects_get(&mut l) });
    l
}

/// The live-object counts as one comparable value: contexts, VkBuffers,
/// VkDeviceMemorys, VkImages, VkSemaphores, CUDA allocations, CUDA external
/// memories, CUDA external semaphores.
pub fn live_counts() -> [i64; 8] {
    let l = live_objects();
    [
        l.contexts,
        l.vk_buffers,
        l.vk_memories,
        l.vk_images,
        l.vk_semaphores,
        l.cuda_allocations,
        l.cuda_external_memories,
        l.cuda_external_semaphores,
    ]
}

pub fn gpu_required() -> bool {
    std::env::var("VKCUDA_REQUIRE_GPU")
        .map(|v| v == "1")
        .unwrap_or(false)
}

/// A standalone context paired with CUDA, or None (after printing why) when this
/// machine has no CUDA GPU. With VKCUDA_REQUIRE_GPU=1 a missing GPU fails the test.
pub fn cuda_context_or_skip(test: &str) -> Option<*mut vkcuda_context> {
    let mut ctx = ptr::null_mut();
    let r = unsafe { vkcuda_context_create_standalone(ptr::null(), &mut ctx) };
    if r == VKCUDA_SUCCESS {
        return Some(ctx);
    }
    let why = last_error();
    if gpu_required() {
        panic!("{test}: VKCUDA_REQUIRE_GPU=1 but no CUDA-paired device: {r:?}: {why}");
    }
    eprintln!("SKIPPED: {test}: no CUDA GPU here ({r:?}: {why}); set VKCUDA_REQUIRE_GPU=1 to make this a failure");
    None
}

/// Open fds of this process. The first call makes and destroys one standalone
/// context (its result ignored): on NVIDIA devices the library keeps one instance,
/// with its fds, from the first standalone context until the process exits
/// (`keep_nvidia_instance` in src/vulkan/standalone.rs), so a baseline taken
/// before any context would count that instance as a leak.
pub fn fd_count() -> usize {
    static WARMED: std::sync::Once = std::sync::Once::new();
    WARMED.call_once(|| {
        let info = vkcuda_standalone_create_info {
            flags: VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT,
            physical_device_index: 0,
        };
        let mut ctx = ptr::null_mut();
        if unsafe { vkcuda_context_create_standalone(&info, &mut ctx) } == VKCUDA_SUCCESS {
            unsafe { vkcuda_context_destroy(ctx) };
        }
    });
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// The fd count once it is back at `baseline` or under it, waiting up to 2 s: a
/// driver's own threads may still be closing a file they opened, and a file an
/// earlier test of the process left to a driver thread may close meanwhile (the
/// count then ends under the baseline: seen on lavapipe after 8 threads made and
/// destroyed contexts, 7 fds before and 6 after). Over the baseline after 2 s, the
/// open fds are printed with what they point at.
pub fn fds_back_to(baseline: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let n = fd_count();
        if n <= baseline || std::time::Instant::now() >= deadline {
            if n > baseline {
                for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
                    let to = std::fs::read_link(e.path()).unwrap_or_default();
                    eprintln!("  open fd {:?} -> {}", e.file_name(), to.display());
                }
            }
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub fn fd_is_open(fd: i32) -> bool {
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Whether the kernel knows the size of what `fd` refers to (lavapipe's memfds: yes;
/// NVIDIA's opaque fds: no).
pub fn fd_knows_size(fd: i32) -> bool {
    // fstat's size (memfd, file), else lseek to the end (dma-buf), on a duplicate
    // whose offset (shared with `fd`) is put back.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_size > 0 {
        return true;
    }
    let at = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if at >= 0 {
        unsafe { libc::lseek(fd, at, libc::SEEK_SET) };
    }
    end > 0
}

/// The byte pattern tests write: depends on the position and a seed.
pub fn pattern(i: usize, seed: u32) -> u8 {
    ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8
}

/// The median of timings (sorts them).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
