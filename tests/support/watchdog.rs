//! Where a hung test process is stuck, before the time limit kills it.
//!
//! With `VKCUDA_TEST_WATCHDOG_S=N` (the CTest GPU runs set it 15 s under each
//! test's TIMEOUT: cmake/vkcudaTesting.cmake), `arm` starts a thread that, when
//! the process has run N s, prints every thread of the process
//! (its name, which libtest sets to the test's, state, the system call it is
//! blocked in, the kernel's wait channel, its user-space frames as library and
//! address, for addr2line, and, where readable, its kernel stack) and aborts. A time-limit kill
//! says only "Timeout"; this says which test and which driver call. Without the
//! variable `arm` does nothing. `cuda_context_or_skip` arms it at both doors. A
//! test that runs many steps in one test names the current one with `note` (the
//! misuse matrix: each case), which the watchdog prints first.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// The test's last word on what it is doing (`note`).
static NOTE: Mutex<String> = Mutex::new(String::new());

/// Records the step the test is at (a case's name), for the watchdog to print.
pub fn note(what: String) {
    *NOTE.lock().unwrap_or_else(|p| p.into_inner()) = what;
}

/// Starts the watchdog once per process, if `VKCUDA_TEST_WATCHDOG_S` says when.
pub fn arm() {
    static ARMED: Once = Once::new();
    let Some(secs) = std::env::var("VKCUDA_TEST_WATCHDOG_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&s| s > 0)
    else {
        return;
    };
    ARMED.call_once(|| {
        std::thread::Builder::new()
            .name("test-watchdog".into())
            .spawn(move || {
                let limit = Duration::from_secs(secs);
                std::thread::sleep(limit.saturating_sub(process_age()));
                // Only now, with the process about to end, is a signal handler installed:
                // until then the tests and the drivers run as they would without it.
                // backtrace() loads libgcc's unwinder on its first call: not in a handler.
                let mut warm = [std::ptr::null_mut(); 4];
                // SAFETY: a buffer of 4 entries.
                unsafe { backtrace(warm.as_mut_ptr(), 4) };
                // SAFETY: installs `on_frames_signal`, which only calls backtrace() and
                // stores atomics.
                unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = on_frames_signal as extern "C" fn(libc::c_int) as usize;
                    libc::sigemptyset(&mut sa.sa_mask);
                    libc::sigaction(frames_signal(), &sa, std::ptr::null_mut());
                }
                let note = NOTE
                    .try_lock()
                    .map(|n| n.clone())
                    .unwrap_or_else(|_| "(being written)".into());
                eprintln!(
                    "WATCHDOG: pid {} still running after {secs} s (VKCUDA_TEST_WATCHDOG_S); \
                     its last note: {note}; its threads:",
                    std::process::id()
                );
                // Thread by thread: what is printed survives a kill before the end.
                report_threads(|paragraph| eprint!("{paragraph}"));
                eprintln!("WATCHDOG: aborting");
                std::process::abort();
            })
            .expect("the watchdog thread");
    });
}

/// How long this process has run: /proc/uptime less its start time (field 22 of
/// /proc/self/stat, in clock ticks since boot); zero where unreadable.
fn process_age() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let started = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.split(' ').nth(19)?.parse::<f64>().ok());
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split(' ').next()?.parse::<f64>().ok());
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    match (started, uptime) {
        (Some(s), Some(u)) if ticks > 0.0 => Duration::from_secs_f64((u - s / ticks).max(0.0)),
        _ => Duration::ZERO,
    }
}

/// One paragraph per thread of this process, from /proc/self/task, each handed
/// to `emit` as soon as it is written.
pub fn report_threads(mut emit: impl FnMut(&str)) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut tids: Vec<u64> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    for tid in tids {
        let mut out = String::new();
        let read = |what: &str| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/{what}"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|e| format!("({what}: {e})"))
        };
        let stat = read("stat");
        // The state is the first field after the parenthesised name.
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .unwrap_or("?")
            .to_string();
        let syscall = read("syscall");
        let _ = writeln!(
            out,
            "  thread {tid} '{}' state {state}: syscall {}{}; wchan {}",
            read("comm"),
            syscall_name(&syscall),
            pc_of(&syscall)
                .map(|pc| format!(" at {}", where_is(&maps, pc)))
                .unwrap_or_default(),
            read("wchan"),
        );
        if tid != unsafe { libc::gettid() } as u64 {
            for line in user_frames(tid, &maps) {
                let _ = writeln!(out, "      {line}");
            }
        }
        let stack = read("stack");
        if !stack.starts_with('(') {
            for line in stack.lines().take(12) {
                let _ = writeln!(out, "      {line}");
            }
        }
        emit(&out);
    }
}

extern "C" {
    // glibc's <execinfo.h>.
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
}

const FRAMES: usize = 48;
static FRAME: [AtomicUsize; FRAMES] = [const { AtomicUsize::new(0) }; FRAMES];
static FRAME_COUNT: AtomicUsize = AtomicUsize::new(0);
static FRAMES_DONE: AtomicBool = AtomicBool::new(false);
/// The thread the frames are of: a thread that took an earlier signal late is not
/// reported as the one asked now.
static FRAMES_TID: AtomicUsize = AtomicUsize::new(0);

fn frames_signal() -> libc::c_int {
    libc::SIGRTMIN() + 5
}

/// Runs on the thread the watchdog signalled: its return addresses, for the watchdog.
extern "C" fn on_frames_signal(_: libc::c_int) {
    let mut buf = [std::ptr::null_mut(); FRAMES];
    // SAFETY: a buffer of FRAMES entries; the unwinder was loaded by `arm`.
    let n = unsafe { backtrace(buf.as_mut_ptr(), FRAMES as libc::c_int) }.max(0) as usize;
    for (slot, pc) in FRAME.iter().zip(&buf[..n]) {
        slot.store(*pc as usize, Ordering::Relaxed);
    }
    FRAME_COUNT.store(n, Ordering::Relaxed);
    // SAFETY: gettid has no preconditions.
    FRAMES_TID.store(unsafe { libc::gettid() } as usize, Ordering::Relaxed);
    FRAMES_DONE.store(true, Ordering::Release);
}

/// Thread `tid`'s user-space frames (its signal handler's two first), each as
/// "#i library+address", or why there are none: a thread that does not run its
/// handler within 0.5 s (signals blocked, or asleep in the kernel uninterruptibly).
fn user_frames(tid: u64, maps: &str) -> Vec<String> {
    FRAMES_DONE.store(false, Ordering::Release);
    // SAFETY: signals a thread of this process with the handler `arm` installed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            tid as libc::pid_t,
            frames_signal(),
        )
    };
    if r != 0 {
        return vec![format!(
            "(no frames: tgkill: {})",
            std::io::Error::last_os_error()
        )];
    }
    let deadline = Instant::now() + Duration::from_millis(500);
    while !(FRAMES_DONE.load(Ordering::Acquire)
        && FRAMES_TID.load(Ordering::Relaxed) == tid as usize)
    {
        if Instant::now() > deadline {
            return vec!["(no frames: the thread did not take the signal within 0.5 s)".into()];
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let n = FRAME_COUNT.load(Ordering::Relaxed);
    (0..n)
        .map(|i| {
            let pc = FRAME[i].load(Ordering::Relaxed) as u64;
            format!("#{i} {}{}", where_is(maps, pc), exported_before(pc))
        })
        .collect()
}

/// " (after SYMBOL)": the nearest exported symbol at or before `pc` (dladdr), a
/// hint inside a stripped driver; "" without one.
fn exported_before(pc: u64) -> String {
    // SAFETY: dladdr only reads the loader's tables; `info` is written on success.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0
        || info.dli_sname.is_null()
    {
        return String::new();
    }
    // SAFETY: a NUL-terminated name of the loader's.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_string_lossy();
    format!(" (after {name}+{:#x})", pc - info.dli_saddr as u64)
}

/// /proc/…/syscall: "running", or the number, six arguments, SP and PC ("-1 SP PC"
/// when blocked outside a system call).
fn syscall_name(line: &str) -> String {
    let nr = line.split(' ').next().unwrap_or("?");
    let name = match nr {
        "0" => "read",
        "7" => "poll",
        "16" => "ioctl",
        "23" => "select",
        "35" => "nanosleep",
        "61" => "wait4",
        "202" => "futex",
        "230" => "clock_nanosleep",
        "232" => "epoll_wait",
        "271" => "ppoll",
        "281" => "epoll_pwait",
        _ => "",
    };
    if name.is_empty() {
        nr.to_string()
    } else {
        format!("{nr} ({name})")
    }
}

fn pc_of(line: &str) -> Option<u64> {
    let pc = line.split(' ').next_back()?;
    u64::from_str_radix(pc.strip_prefix("0x")?, 16).ok()
}

/// "path+0xaddress" of the object `pc` lies in: its address from the object's load
/// base (the start of its mapping at file offset 0), which is the address addr2line
/// takes for a shared library or a position-independent executable.
fn where_is(maps: &str, pc: u64) -> String {
    // (start, end, file offset, path) of each mapping.
    let mappings: Vec<(u64, u64, u64, &str)> = maps
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, b) = f.next()?.split_once('-')?;
            let offset = f.nth(1)?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
                u64::from_str_radix(offset, 16).ok()?,
                f.nth(2).unwrap_or("[anonymous]"),
            ))
        })
        .collect();
    let Some(&(_, _, _, path)) = mappings.iter().find(|m| (m.0..m.1).contains(&pc)) else {
        return format!("{pc:#x} (in no mapping)");
    };
    let base = mappings
        .iter()
        .filter(|m| m.3 == path && m.2 == 0 && m.0 <= pc)
        .map(|m| m.0)
        .max();
    match base {
        Some(base) => format!("{path}+{:#x}", pc - base),
        None => format!("{path} at {pc:#x}"),
    }
}
