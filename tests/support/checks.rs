//! Skips and counts: what every suite asserts with, at either door (the C door's
//! suites include this file too: capi/tests/support/mod.rs).
//!
//! `gpu_required` for GPU-only tests (see the top of tests/support/mod.rs);
//! `serial` for tests that count per-process things; `fd_count`, `fds_back_to`,
//! `fd_is_open`, `fd_knows_size`, `live_objects`, `live_counts`, `image_counts`;
//! `pattern`, the bytes tests write; `assert_same` bytes; `median` of timings.

use std::sync::{Mutex, MutexGuard};

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

/// The library's live-object counts (`vkcuda::live_objects`).
pub fn live_objects() -> vkcuda::LiveObjects {
    vkcuda::live_objects()
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

/// Open fds of this process. The first call makes and destroys one standalone
/// context (its result ignored): on NVIDIA devices the library keeps one instance,
/// with its fds, from the first standalone context until the process exits
/// (`keep_nvidia_instance` in src/vulkan/standalone.rs), so a baseline taken
/// before any context would count that instance as a leak.
pub fn fd_count() -> usize {
    static WARMED: std::sync::Once = std::sync::Once::new();
    WARMED.call_once(|| {
        drop(vkcuda::Context::standalone(None, vkcuda::CudaChoice::None));
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

/// Moves `fd`'s file offset to `at` (`Some`) and returns where it is: -1 for a
/// descriptor without one (NVIDIA's opaque fds).
pub fn file_offset(fd: i32, at: Option<i64>) -> i64 {
    match at {
        Some(at) => unsafe { libc::lseek(fd, at, libc::SEEK_SET) },
        None => unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) },
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

/// Equal bytes, or a panic naming the first differing byte.
#[track_caller]
pub fn assert_same(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: byte {i} of {} is {:#04x}, want {:#04x}",
            want.len(),
            got[i],
            want[i]
        );
    }
}
