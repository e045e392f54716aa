//! Threads: 8 threads create, use and destroy buffers and images on one context
//! for 1,000 cycles each (`VKCUDA_THREAD_CYCLES` changes the count), while all of
//! them also use one shared buffer and one shared image at once (getters, fd
//! exports, descriptions, barriers into their own command buffers), and the
//! timeline value book-keeping is driven from 8 threads under its lock. On a
//! device with shared semaphores (a GPU), the 8 threads also signal, wait and take
//! frame stages on one shared timeline semaphore through the C API.
//!
//! No crash, no deadlock (a watchdog aborts the process after
//! `VKCUDA_THREAD_WATCHDOG_S`, default 600 s, with what each thread was doing), no
//! leak: fds and live objects back to their start. Under ThreadSanitizer (std
//! rebuilt instrumented; the command is in docs/RELIABILITY.md):
//! `RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zsanitizer=thread cargo test -Zbuild-std
//! --target x86_64-unknown-linux-gnu --test threads`.

mod support;
use support::*;

use std::collections::HashSet;
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use ash::vk;
use vkcuda::semaphore::Book;

const THREADS: usize = 8;

fn cycles() -> usize {
    std::env::var("VKCUDA_THREAD_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

fn watchdog_s() -> u64 {
    std::env::var("VKCUDA_THREAD_WATCHDOG_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600)
}

/// A raw handle that crosses threads: the library documents its objects as usable
/// from any thread (see docs/RELIABILITY.md for each one).
struct Shared<T>(*mut T);
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// What each thread is doing, for the watchdog's report.
struct Progress {
    step: Vec<AtomicUsize>,
    cycle: Vec<AtomicUsize>,
}

const STEPS: [&str; 12] = [
    "start",
    "buffer",
    "image",
    "shared objects",
    "barriers",
    "import",
    "semaphore",
    "context create",
    "buffer on the new context",
    "context destroy",
    "buffer destroy (the last reference: device and instance destroyed)",
    "done",
];

impl Progress {
    fn new() -> Arc<Progress> {
        Arc::new(Progress {
            step: (0..THREADS).map(|_| AtomicUsize::new(0)).collect(),
            cycle: (0..THREADS).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn at(&self, t: usize, step: usize, cycle: usize) {
        self.step[t].store(step, Ordering::Relaxed);
        self.cycle[t].store(cycle, Ordering::Relaxed);
    }

    fn report(&self) -> String {
        (0..THREADS)
            .map(|t| {
                format!(
                    "thread {t}: cycle {} in {}",
                    self.cycle[t].load(Ordering::Relaxed),
                    STEPS[self.step[t].load(Ordering::Relaxed)]
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Runs `work(thread)` on 8 threads started together; aborts the process if they
/// are not all done within the watchdog time (a deadlock must not hang CI).
fn on_threads(
    name: &str,
    progress: &Arc<Progress>,
    work: impl Fn(usize) + Send + Sync + 'static,
) -> Duration {
    let work = Arc::new(work);
    let start = Arc::new(Barrier::new(THREADS));
    let (tx, rx) = mpsc::channel();
    let t0 = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (work, start, tx) = (work.clone(), start.clone(), tx.clone());
            std::thread::Builder::new()
                .name(format!("{name}-{t}"))
                .spawn(move || {
                    start.wait();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(t)));
                    tx.send((t, r.is_ok())).unwrap();
                })
                .unwrap()
        })
        .collect();
    drop(tx);
    let deadline = t0 + Duration::from_secs(watchdog_s());
    let mut failed = Vec::new();
    for _ in 0..THREADS {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((t, true)) => progress.at(t, STEPS.len() - 1, cycles()),
            Ok((t, false)) => failed.push(t),
            Err(_) => {
                eprintln!(
                    "{name}: WATCHDOG: not done after {} s (deadlock?): {}",
                    watchdog_s(),
                    progress.report()
                );
                // What each thread of the process is blocked in (a futex: a lock;
                // an ioctl: the driver), then every stack where gdb is installed.
                if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
                    for t in tasks.flatten() {
                        let p = t.path();
                        let read = |f: &str| {
                            std::fs::read_to_string(p.join(f))
                                .unwrap_or_default()
                                .trim()
                                .to_string()
                        };
                        let syscall = read("syscall");
                        eprintln!(
                            "  task {}: {} wchan {} syscall {}",
                            t.file_name().to_string_lossy(),
                            read("comm"),
                            read("wchan"),
                            syscall.split(' ').next().unwrap_or("?")
                        );
                    }
                }
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("gdb")
                    .args(["-p", &pid, "-batch", "-ex", "thread apply all bt 30"])
                    .status();
                std::process::abort();
            }
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(
        failed.is_empty(),
        "{name}: threads {failed:?} failed (see their panics above)"
    );
    t0.elapsed()
}

/// A w x w R8G8B8A8_UNORM image with `levels` levels and one layer.
fn square_image(w: u32, levels: u32) -> vkcuda_image_create_info {
    vkcuda_image_create_info {
        mip_levels: levels,
        array_layers: 1,
        ..image_desc(0, vk::Format::R8G8B8A8_UNORM, w, w, 1)
    }
}

/// One thread's cycles on the shared context.
fn cycle_work(
    t: usize,
    ctx: Shared<vkcuda_context>,
    buffer: Shared<vkcuda_buffer>,
    image: Shared<vkcuda_image>,
    semaphore: Option<Shared<vkcuda_semaphore>>,
    progress: &Progress,
) {
    let ctx = ctx.0;
    let vk = Vk::new(ctx);
    let cmd = vk.command_buffer();
    let begin = || unsafe {
        vk.device
            .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
            .unwrap()
    };
    let cuda = {
        let mut c: vkcuda_cuda_info = unsafe { std::mem::zeroed() };
        unsafe { vkcuda_context_get_cuda_info(ctx, &mut c) == VKCUDA_SUCCESS }
    };
    for i in 0..cycles() {
        // A buffer of its own: create, look at, export, destroy.
        progress.at(t, 1, i);
        let size = 4096 * (1 + ((i * 7 + t) % 16) as u64);
        let b = create_buffer(ctx, size, 0);
        let info = buffer_info(b);
        assert_eq!(info.size, size);
        let mut fd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
        assert!(fd >= 0);

        // An image of its own.
        progress.at(t, 2, i);
        let mut im = ptr::null_mut();
        ok(unsafe { vkcuda_image_create(ctx, &square_image(8 + (i % 3) as u32 * 8, 0), &mut im) });
        let mut ii: vkcuda_image_info = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_image_get_info(im, &mut ii) });
        let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_image_describe(im, &mut d) });

        // The shared objects, used by every thread at once.
        progress.at(t, 3, i);
        let shared = buffer_info(buffer.0);
        assert_eq!(shared.size, 65536);
        let mut sfd = -1;
        ok(unsafe { vkcuda_buffer_export_fd(buffer.0, &mut sfd) });
        unsafe { libc::close(sfd) };
        ok(unsafe { vkcuda_image_export_fd(image.0, &mut sfd) });
        unsafe { libc::close(sfd) };
        ok(unsafe { vkcuda_buffer_describe(buffer.0, &mut d) });
        let mut si: vkcuda_image_info = unsafe { std::mem::zeroed() };
        ok(unsafe { vkcuda_image_get_info(image.0, &mut si) });
        let mut array = ptr::null_mut();
        let r = unsafe { vkcuda_image_get_cuda_array(image.0, (i % 5) as u32, &mut array) };
        if cuda {
            ok(r);
            let mut surface = 0;
            ok(unsafe { vkcuda_image_get_surface_object(image.0, (i % 5) as u32, &mut surface) });
        } else {
            assert_eq!(r, VKCUDA_ERROR_CUDA_UNAVAILABLE);
        }

        // Barriers on the shared image and buffer, into this thread's command buffer.
        progress.at(t, 4, i);
        let h = handoff_info(0);
        let general = vk::ImageLayout::GENERAL.as_raw();
        ok(unsafe { vkcuda_image_cmd_release_to_cuda(image.0, cmd, &h, general) });
        ok(unsafe { vkcuda_image_cmd_acquire_from_cuda(image.0, cmd, &h, general) });
        ok(unsafe { vkcuda_buffer_cmd_release_to_cuda(buffer.0, cmd, &h) });
        ok(unsafe { vkcuda_buffer_cmd_acquire_from_cuda(buffer.0, cmd, &h) });
        if i % 64 == 63 {
            unsafe {
                vk.device.end_command_buffer(cmd).unwrap();
                vk.device
                    .reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
                    .unwrap();
            }
            begin();
        }

        // Every 8th cycle: import the own buffer's fd back (the import takes it).
        progress.at(t, 5, i);
        if i % 8 == 0 {
            let import = buffer_import_info(&info);
            let mut back = ptr::null_mut();
            ok(unsafe { vkcuda_buffer_import_fd(ctx, &import, fd, &mut back) });
            unsafe { vkcuda_buffer_destroy(back) };
        } else {
            unsafe { libc::close(fd) };
        }
        unsafe {
            vkcuda_image_destroy(im);
            vkcuda_buffer_destroy(b);
        }

        // The shared timeline semaphore, where there is one.
        progress.at(t, 6, i);
        if let Some(s) = semaphore {
            let mut st = vkcuda_timeline_stage {
                wait_value: 0,
                signal_value: 0,
            };
            match unsafe { vkcuda_semaphore_next_stage(s.0, &mut st) } {
                VKCUDA_SUCCESS => {
                    // Another thread may have signalled past this stage already.
                    let r = unsafe { vkcuda_semaphore_host_signal(s.0, st.signal_value) };
                    assert!(
                        r == VKCUDA_SUCCESS || r == VKCUDA_ERROR_INVALID_ARGUMENT,
                        "{r:?}: {}",
                        last_error()
                    );
                    ok(unsafe { vkcuda_semaphore_host_wait(s.0, st.wait_value, 10_000_000_000) });
                }
                VKCUDA_ERROR_INVALID_STATE => {} // too far ahead: others will catch up
                r => panic!("next_stage: {r:?}: {}", last_error()),
            }
            let mut v = 0;
            ok(unsafe { vkcuda_semaphore_get_value(s.0, &mut v) });
        }
    }
    unsafe {
        vk.device.end_command_buffer(cmd).unwrap();
        vk.device.free_command_buffers(vk.pool, &[cmd]);
    }
}

fn stress(ctx: *mut vkcuda_context, what: &str) {
    let (fds, objects) = (fd_count(), live_counts());
    let buffer = create_buffer(ctx, 65536, 0);
    let mut image = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(ctx, &square_image(16, 5), &mut image) });
    let semaphore = {
        let mut s = ptr::null_mut();
        match unsafe { vkcuda_semaphore_create(ctx, &semaphore_create_info(0, 0), &mut s) } {
            VKCUDA_SUCCESS => Some(Shared(s)),
            VKCUDA_ERROR_EXTENSION_NOT_PRESENT => {
                println!(
                    "{what}: no shared semaphores on this device: the semaphore part is skipped"
                );
                None
            }
            r => panic!("vkcuda_semaphore_create: {r:?}: {}", last_error()),
        }
    };
    let progress = Progress::new();
    let (c, b, i) = (Shared(ctx), Shared(buffer), Shared(image));
    let p = progress.clone();
    let took = on_threads(what, &progress, move |t| {
        cycle_work(t, c, b, i, semaphore, &p)
    });
    println!(
        "{what}: {THREADS} threads x {} cycles (a buffer, an image, an import every 8th cycle, \
         the shared objects, 4 barriers{}) in {:.1} s",
        cycles(),
        if semaphore.is_some() {
            ", a timeline stage"
        } else {
            ""
        },
        took.as_secs_f64()
    );
    unsafe {
        if let Some(s) = semaphore {
            vkcuda_semaphore_destroy(s.0);
        }
        vkcuda_image_destroy(image);
        vkcuda_buffer_destroy(buffer);
    }
    assert_eq!(live_counts(), objects, "{what}: live objects leaked");
    assert_eq!(fd_count(), fds, "{what}: fds leaked");
}

#[test]
fn eight_threads_on_one_vulkan_only_context() {
    let _g = serial();
    let ctx = vulkan_only_context();
    stress(ctx, "vulkan-only");
    unsafe { vkcuda_context_destroy(ctx) };
    assert_eq!(live_counts(), [0; 8]);
}

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn eight_threads_on_one_cuda_context() {
    let _g = serial();
    let Some(ctx) = cuda_context_or_skip("eight_threads_on_one_cuda_context") else {
        return;
    };
    stress(ctx, "cuda");
    unsafe { vkcuda_context_destroy(ctx) };
}

/// The value book-keeping behind its lock, as `vkcuda_semaphore` holds it, with 8
/// threads taking stages, signalling them (sometimes out of order, sometimes
/// twice) and a "GPU" advancing the value: every stage value is handed out once,
/// accepted signals strictly increase, and no value is accepted twice.
#[test]
fn semaphore_book_under_contention() {
    let _g = serial();
    let book = Arc::new(Mutex::new(Book::new(0)));
    let current = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let handed = Arc::new(Mutex::new(Vec::new()));
    let max = 1u64 << 20;
    let progress = Progress::new();
    let (b, c, a, h, p) = (
        book.clone(),
        current.clone(),
        accepted.clone(),
        handed.clone(),
        progress.clone(),
    );
    let n = cycles() * 10;
    let took = on_threads("book", &progress, move |t| {
        for i in 0..n {
            p.at(t, 6, i);
            let cur = c.load(Ordering::Acquire);
            let stage = b.lock().unwrap().next_stage(cur, max);
            let Ok(stage) = stage else {
                continue;
            };
            h.lock().unwrap().push(stage.signal);
            // Signal the stage, or a value near it, or the same one twice.
            let value = match (i + t) % 5 {
                0 => stage.signal + 1,
                1 => stage.wait,
                _ => stage.signal,
            };
            for _ in 0..(1 + (i % 3 == 0) as usize) {
                let cur = c.load(Ordering::Acquire);
                let mut book = b.lock().unwrap();
                if book.signal(value, cur, max).is_ok() {
                    a.lock().unwrap().push(value);
                    drop(book);
                    // The "GPU" reaches it (the value only goes up).
                    c.fetch_max(value, Ordering::AcqRel);
                }
            }
        }
    });
    let accepted = accepted.lock().unwrap();
    let handed = handed.lock().unwrap();
    assert!(
        accepted.windows(2).all(|w| w[0] < w[1]),
        "accepted signals went backwards"
    );
    let unique: HashSet<_> = handed.iter().collect();
    assert_eq!(
        unique.len(),
        handed.len(),
        "a stage value was handed out twice"
    );
    assert!(!accepted.is_empty());
    println!(
        "book: {THREADS} threads x {n} stages: {} handed out, {} signals accepted, in {:.2} s",
        handed.len(),
        accepted.len(),
        took.as_secs_f64()
    );
}

/// Contexts made and destroyed from 8 threads at once, each with a buffer that
/// outlives its context handle.
#[test]
fn contexts_from_eight_threads() {
    let _g = serial();
    // NVIDIA's driver 580 hung in vkDestroyDevice or crashed in 5 of 6 H200 runs of
    // this test, until the library kept one instance alive on NVIDIA devices
    // (keep_nvidia_instance in src/vulkan/standalone.rs; the same hang in raw Vulkan:
    // scripts/lab/repro/concurrent_devices.c; docs/RELIABILITY.md, "Threads").
    // fd_count puts the kept instance in the baseline.
    let (fds, objects) = (fd_count(), live_counts());
    let progress = Progress::new();
    let p = progress.clone();
    let n = (cycles() / 50).max(2);
    let took = on_threads("contexts", &progress, move |t| {
        for i in 0..n {
            p.at(t, 7, i);
            let ctx = vulkan_only_context();
            p.at(t, 8, i);
            let b = create_buffer(ctx, 4096, 0);
            unsafe {
                p.at(t, 9, i);
                vkcuda_context_destroy(ctx);
                // The buffer keeps the context alive.
                let info = buffer_info(b);
                assert_eq!(info.size, 4096);
                p.at(t, 10, i);
                vkcuda_buffer_destroy(b);
            }
        }
    });
    println!(
        "contexts: {THREADS} threads x {n} standalone contexts in {:.1} s",
        took.as_secs_f64()
    );
    assert_eq!(live_counts(), objects);
    let after = fds_back_to(fds);
    assert!(
        after <= fds,
        "{after} fds open after the threads, {fds} before: a leak"
    );
}

/// The objects behind the handles are `Send + Sync` as Rust types, so the
/// "may be called from any thread" documentation is what the compiler checks for
/// the library's own state (the handles themselves are raw pointers in C).
#[test]
fn objects_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<vkcuda::context::Context>();
    both::<vkcuda::buffer::Buffer>();
    both::<vkcuda::image::Image>();
    both::<vkcuda::semaphore::Semaphore>();
    both::<vkcuda_c::vkcuda_context>();
    both::<vkcuda_c::vkcuda_buffer>();
    both::<vkcuda_c::image::vkcuda_image>();
    both::<vkcuda_c::vkcuda_semaphore>();
}
