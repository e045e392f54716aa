//! Cross-process sharing through the C ABI, on lavapipe (Vulkan-only contexts).
//!
//! Two processes (this test binary spawns itself to run one of the ignored
//! `child_*` tests, with the socket path in an environment variable) share
//! Vulkan-allocated buffers over a Unix socket path, both ways, with every byte
//! checked; 1000 send/receive cycles leave the fd counts of both processes where
//! they were. A forked child that drops to uid 65534 before it connects is refused
//! by the credential check. Bad input is refused with every received fd closed:
//! truncated records, peers that disconnect in the middle or say nothing, unknown
//! versions, magic and kinds, another device's UUID, the wrong number of fds, more
//! fds than fit, fds that are not GPU memory, sockets that are not connected Unix
//! sockets. Semaphores cannot be created on lavapipe (no
//! VK_KHR_external_semaphore_fd): their descriptions and the receive path are
//! tested as far as they go. `gpu_*` does buffers and timelines across processes
//! for real on a CUDA GPU (skipped without one unless VKCUDA_REQUIRE_GPU=1).

mod support;
use support::cuda::Cuda;
use support::*;

use std::ffi::{c_int, c_void};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::ptr;
use std::time::{Duration, Instant};

use ash::vk;

const SOCKET_ENV: &str = "VKCUDA_IPC_TEST_SOCKET";
const SIZE_ENV: &str = "VKCUDA_IPC_TEST_SIZE";
const SECOND: u64 = 1_000_000_000;

fn opts(timeout_ns: u64) -> vkcuda_share_options {
    vkcuda_share_options {
        flags: 0,
        timeout_ns,
        peer_check: None,
        peer_check_user: ptr::null_mut(),
        buffer_usage: 0,
    }
}

fn live_tuple(l: &vkcuda::LiveObjects) -> (i64, i64, i64, i64) {
    (l.contexts, l.vk_buffers, l.vk_memories, l.vk_semaphores)
}

/// A pair of connected Unix sockets of `ty`, close-on-exec.
fn pair(ty: c_int) -> (OwnedFd, OwnedFd) {
    let mut fds = [-1; 2];
    assert_eq!(
        unsafe { libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) },
        0
    );
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn write_buffer(v: &Vk, b: *const vkcuda_buffer, seed: u32) {
    let info = buffer_info(b);
    v.fill_pattern(info.buffer, info.size, seed);
}

/// A new buffer of `ctx` (`v` on its device) of `size` bytes holding `seed`'s pattern.
fn written(v: &Vk, ctx: *const vkcuda_context, size: u64, seed: u32) -> *mut vkcuda_buffer {
    let b = create_buffer(ctx, size, 0);
    write_buffer(v, b, seed);
    b
}

/// Copies the buffer out and counts the bytes that differ from the pattern.
fn mismatches(v: &Vk, b: *const vkcuda_buffer, seed: u32) -> usize {
    let info = buffer_info(b);
    v.pattern_mismatches(info.buffer, info.size, seed)
}

fn describe(b: *const vkcuda_buffer) -> vkcuda_share_description {
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_describe(b, &mut d) });
    d
}

fn export(b: *const vkcuda_buffer) -> OwnedFd {
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Receives into `ctx` expecting `want`; returns the message. The output is NULL.
#[track_caller]
fn receive_fails(
    ctx: *const vkcuda_context,
    sock: i32,
    timeout_ns: u64,
    want: vkcuda_result,
) -> String {
    let mut b = 1usize as *mut vkcuda_buffer;
    let r = unsafe { vkcuda_buffer_receive(ctx, sock, &opts(timeout_ns), &mut b) };
    let msg = fails(r, want);
    assert!(b.is_null(), "the output is NULL on failure");
    msg
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("vkcuda-ipc-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn accept(l: &UnixListener, timeout: Duration) -> UnixStream {
    let mut p = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let r = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as c_int) };
    assert_eq!(r, 1, "nobody connected within {timeout:?}");
    l.accept().unwrap().0
}

fn connect_retry(path: &Path) -> UnixStream {
    let start = Instant::now();
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return s,
            Err(e) if start.elapsed() < Duration::from_secs(20) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("connecting to {}: {e}", path.display()),
        }
    }
}

/// Runs the ignored test `case` of this binary in a child process, connected to
/// `path`.
fn spawn_child(case: &str, path: &Path, env: &[(&str, String)]) -> Child {
    this_test(case, true)
        .env(SOCKET_ENV, path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish_child(case: &str, child: Child) {
    child_passed(case, &child.wait_with_output().unwrap());
}

/// The socket path when this process is a child of one of the tests; `None` when
/// the ignored test is run by hand (it then does nothing).
fn child_socket() -> Option<PathBuf> {
    std::env::var_os(SOCKET_ENV).map(PathBuf::from)
}

// ---- two processes ----------------------------------------------------------------

#[test]
fn buffer_crosses_two_processes_through_a_socket_path() {
    let _s = serial();
    let size: u64 = (1 << 20) + 3;
    let dir = TempDir::new("share");
    let path = dir.0.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let child = spawn_child("child_buffer_peer", &path, &[(SIZE_ENV, size.to_string())]);
    let conn = accept(&listener, Duration::from_secs(30));
    let fds = fd_count();

    let a = written(&v, ctx, size, 11);
    ok(unsafe { vkcuda_buffer_send(a, conn.as_raw_fd(), &opts(30 * SECOND)) });
    // The child checks every byte, writes pattern 12 into the same memory, then
    // sends a buffer of its own with pattern 13.
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(ctx, conn.as_raw_fd(), &opts(60 * SECOND), &mut b) });
    let bi = buffer_info(b);
    assert_eq!(bi.size, size);
    assert_eq!(mismatches(&v, b, 13), 0, "the child's buffer, read here");
    assert_eq!(
        mismatches(&v, a, 12),
        0,
        "the child's writes into the parent's buffer"
    );
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_buffer_destroy(a);
    }
    assert_eq!(fd_count(), fds, "open fds in the parent");
    drop(conn);
    finish_child("child_buffer_peer", child);
}

#[test]
#[ignore = "run by buffer_crosses_two_processes_through_a_socket_path in a child process"]
fn child_buffer_peer() {
    let Some(path) = child_socket() else { return };
    let size: u64 = std::env::var(SIZE_ENV).unwrap().parse().unwrap();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let conn = connect_retry(&path);
    let mut a = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(ctx, conn.as_raw_fd(), &opts(30 * SECOND), &mut a) });
    let ai = buffer_info(a);
    assert_eq!(ai.size, size);
    assert_eq!(ai.allocator, vkcuda_allocator::VKCUDA_ALLOCATOR_VULKAN);
    assert_eq!(mismatches(&v, a, 11), 0, "the parent's buffer, read here");
    println!("child: {size} bytes from the parent checked");
    write_buffer(&v, a, 12);
    let b = written(&v, ctx, size, 13);
    ok(unsafe { vkcuda_buffer_send(b, conn.as_raw_fd(), &opts(30 * SECOND)) });
    // Destroyed before the parent may have imported it: the fd in flight keeps the
    // memory alive.
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_buffer_destroy(a);
    }
}

const CYCLES: usize = 1000;

#[test]
fn thousand_cycles_leave_fd_counts_alone_in_both_processes() {
    let _s = serial();
    let dir = TempDir::new("cycles");
    let path = dir.0.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let child = spawn_child("child_thousand_cycles", &path, &[]);
    let mut conn = accept(&listener, Duration::from_secs(30));
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let a = written(&v, ctx, 65536, 21);
    let cycle = |conn: &mut UnixStream| {
        ok(unsafe { vkcuda_buffer_send(a, conn.as_raw_fd(), &opts(30 * SECOND)) });
        let mut ack = [0u8; 1];
        conn.read_exact(&mut ack).unwrap();
        assert_eq!(&ack, b"k");
    };
    cycle(&mut conn); // lazy driver state
    let (fds, objs) = (fd_count(), live_objects());
    let start = Instant::now();
    for _ in 0..CYCLES {
        cycle(&mut conn);
    }
    let (fds2, objs2) = (fd_count(), live_objects());
    println!(
        "parent: {CYCLES} sends in {:?}: open fds {fds} -> {fds2}",
        start.elapsed()
    );
    assert_eq!(fds, fds2, "open fds in the parent");
    assert_eq!(live_tuple(&objs), live_tuple(&objs2));
    drop(conn);
    finish_child("child_thousand_cycles", child);
    unsafe { vkcuda_buffer_destroy(a) };
}

#[test]
#[ignore = "run by thousand_cycles_leave_fd_counts_alone_in_both_processes in a child process"]
fn child_thousand_cycles() {
    let Some(path) = child_socket() else { return };
    let v = OneDevice::open();
    let ctx = v.ctx;
    let mut conn = connect_retry(&path);
    let mut counts = None;
    let start = Instant::now();
    for i in 0..=CYCLES {
        let mut b = ptr::null_mut();
        ok(unsafe { vkcuda_buffer_receive(ctx, conn.as_raw_fd(), &opts(30 * SECOND), &mut b) });
        if i == 0 || i == CYCLES {
            assert_eq!(mismatches(&v, b, 21), 0, "cycle {i}");
        }
        unsafe { vkcuda_buffer_destroy(b) };
        if i == 0 {
            counts = Some((fd_count(), live_objects()));
        }
        conn.write_all(b"k").unwrap();
    }
    let (fds, objs) = counts.unwrap();
    let (fds2, objs2) = (fd_count(), live_objects());
    println!(
        "child: {CYCLES} receives and imports in {:?}: open fds {fds} -> {fds2}",
        start.elapsed()
    );
    assert_eq!(fds, fds2, "open fds in the child");
    assert_eq!(live_tuple(&objs), live_tuple(&objs2));
}

// ---- a peer of another user -------------------------------------------------------

fn sockaddr(path: &Path) -> libc::sockaddr_un {
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_encoded_bytes();
    assert!(bytes.len() < a.sun_path.len());
    for (d, s) in a.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    a
}

/// The forked child: drop to uid/gid 65534, then try the private socket (must be
/// refused by its file permissions) and connect twice to the open one, sending
/// the record and fd each time. Only async-signal-safe calls. The exit status says
/// which step failed (0: all as expected).
fn as_nobody(open: &libc::sockaddr_un, private: &libc::sockaddr_un, rec: &[u8], fd: i32) -> c_int {
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    unsafe {
        if libc::setgroups(0, ptr::null()) != 0 {
            return 10;
        }
        if libc::setgid(65534) != 0 {
            return 11;
        }
        if libc::setuid(65534) != 0 {
            return 12;
        }
        let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if libc::connect(s, (private as *const libc::sockaddr_un).cast(), len) == 0 {
            return 13;
        }
        if *libc::__errno_location() != libc::EACCES {
            return 14;
        }
        libc::close(s);
        for _ in 0..2 {
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if libc::connect(s, (open as *const libc::sockaddr_un).cast(), len) != 0 {
                return 15;
            }
            if send_with_fds(s, rec, &[fd]) != rec.len() as isize {
                return 16;
            }
            libc::close(s);
        }
    }
    0
}

unsafe extern "C" fn accept_uid(_pid: i32, uid: u32, _gid: u32, user: *mut c_void) -> c_int {
    (uid == *(user as *const u32)) as c_int
}

#[test]
fn a_peer_of_another_user_is_refused() {
    let _s = serial();
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: a_peer_of_another_user_is_refused: needs root to fork a child that changes its uid");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("uid");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (open_path, private_path) = (dir.0.join("open.sock"), dir.0.join("private.sock"));
    let open = UnixListener::bind(&open_path).unwrap();
    let _private = UnixListener::bind(&private_path).unwrap();
    std::fs::set_permissions(&open_path, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&private_path, std::fs::Permissions::from_mode(0o700)).unwrap();

    let v = OneDevice::open();
    let ctx = v.ctx;
    let a = written(&v, ctx, 4096, 31);
    let rec = record(&describe(a));
    let fd = export(a);
    let (oa, pa) = (sockaddr(&open_path), sockaddr(&private_path));
    let fds = fd_count();
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = as_nobody(&oa, &pa, &rec, fd.as_raw_fd());
        unsafe { libc::_exit(code) };
    }
    drop(fd);

    // The same-user default refuses the peer, before any fd is taken.
    let c1 = accept(&open, Duration::from_secs(10));
    let msg = receive_fails(
        ctx,
        c1.as_raw_fd(),
        10 * SECOND,
        VKCUDA_ERROR_PERMISSION_DENIED,
    );
    assert!(msg.contains("uid 65534"), "{msg}");
    assert!(msg.contains("not the same user"), "{msg}");
    // A peer check that accepts that user lets it through.
    let c2 = accept(&open, Duration::from_secs(10));
    let mut nobody: u32 = 65534;
    let mut o = opts(10 * SECOND);
    o.peer_check = Some(accept_uid);
    o.peer_check_user = (&mut nobody as *mut u32).cast();
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(ctx, c2.as_raw_fd(), &o, &mut b) });
    assert_eq!(mismatches(&v, b, 31), 0);
    unsafe { vkcuda_buffer_destroy(b) };

    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the uid-65534 child failed at step {} (13/14: the 0700 socket did not refuse it)",
        libc::WEXITSTATUS(status)
    );
    // c1 still holds the refused message and its fd: closing it releases them.
    drop((c1, c2));
    assert_eq!(
        fd_count(),
        fds - 1,
        "only the parent's exported fd was closed"
    );
    unsafe { vkcuda_buffer_destroy(a) };
}

// ---- one process, both socket types ----------------------------------------------

#[test]
fn stream_and_seqpacket_sockets_carry_buffers() {
    let _s = serial();
    let two = TwoDevices::open();
    let (a, b, va, vb) = (two.a, two.b, &*two.va, &*two.vb);
    let buf = written(va, a, 100_003, 41);
    let base = fd_count();
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        let (s0, s1) = pair(ty);
        // Two messages back to back, then a byte of the caller's own: each receive
        // reads exactly one description.
        ok(unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), ptr::null()) });
        ok(unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), ptr::null()) });
        assert_eq!(
            unsafe { libc::write(s0.as_raw_fd(), b"!".as_ptr().cast(), 1) },
            1
        );
        for _ in 0..2 {
            let mut r = ptr::null_mut();
            ok(unsafe { vkcuda_buffer_receive(b, s1.as_raw_fd(), ptr::null(), &mut r) });
            assert_eq!(mismatches(vb, r, 41), 0, "socket type {ty}");
            unsafe { vkcuda_buffer_destroy(r) };
        }
        let mut rest = [0u8; 4];
        assert_eq!(
            unsafe {
                libc::recv(
                    s1.as_raw_fd(),
                    rest.as_mut_ptr().cast(),
                    4,
                    libc::MSG_DONTWAIT,
                )
            },
            1
        );
        assert_eq!(rest[0], b'!', "the caller's byte is still there");
    }
    assert_eq!(fd_count(), base);
    unsafe { vkcuda_buffer_destroy(buf) };
}

#[test]
fn a_message_in_pieces_is_put_together() {
    let _s = serial();
    let two = TwoDevices::open();
    let buf = written(&two.va, two.a, 4096, 43);
    let (b, vb) = (two.b, &*two.vb);
    let rec = record(&describe(buf));
    let fd = export(buf);
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    let sender = std::thread::spawn(move || {
        assert_eq!(
            send_with_fds(s0.as_raw_fd(), &rec[..10], &[fd.as_raw_fd()]),
            10
        );
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[10..61], &[]), 51);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[61..], &[]), 67);
        (s0, fd)
    });
    let mut r = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(b, s1.as_raw_fd(), &opts(10 * SECOND), &mut r) });
    assert_eq!(mismatches(vb, r, 43), 0);
    unsafe { vkcuda_buffer_destroy(r) };
    let kept = sender.join().unwrap();
    drop(kept);
    assert_eq!(
        fd_count(),
        base - 2,
        "the sender's socket and fd closed, nothing else left"
    );
    unsafe { vkcuda_buffer_destroy(buf) };
}

extern "C" fn on_signal(_: c_int) {}

#[test]
fn signals_do_not_break_a_receive() {
    let _s = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let buf = written(&v, ctx, 4096, 45);
    unsafe {
        // No SA_RESTART: a blocked poll or recvmsg returns EINTR.
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, ptr::null_mut()), 0);
    }
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let me = unsafe { libc::pthread_self() };
    let rec = record(&describe(buf));
    let fd = export(buf);
    let t = std::thread::spawn(move || {
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(40));
            unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
        }
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec, &[fd.as_raw_fd()]), 128);
        (s0, fd)
    });
    let start = Instant::now();
    let mut r = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &opts(10 * SECOND), &mut r) });
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(mismatches(&v, r, 45), 0);
    drop(t.join().unwrap());
    unsafe {
        vkcuda_buffer_destroy(r);
        vkcuda_buffer_destroy(buf);
    }
}

#[test]
fn generic_send_and_receive_hand_the_fd_to_the_caller() {
    let _s = serial();
    let two = TwoDevices::open();
    let buf = written(&two.va, two.a, 12345, 47);
    let (b, vb) = (two.b, &*two.vb);
    let d = describe(buf);
    let info = buffer_info(buf);
    assert_eq!(d.kind.0, vkcuda_share_kind::VKCUDA_SHARE_KIND_BUFFER as i32);
    assert_eq!(d.buffer.size, info.size);
    assert_eq!(d.buffer.allocation_size, info.allocation_size);
    assert_eq!(d.buffer.offset, info.offset);
    assert_eq!(d.buffer.dedicated, info.dedicated);
    let fd = export(buf);
    let (s0, s1) = pair(libc::SOCK_SEQPACKET);
    let base = fd_count();
    ok(unsafe { vkcuda_share_send(s0.as_raw_fd(), &d, fd.as_raw_fd(), ptr::null()) });
    assert!(fd_is_open(fd.as_raw_fd()), "the sender keeps its fd");
    let mut got: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let mut gfd = -1;
    ok(unsafe { vkcuda_share_receive(s1.as_raw_fd(), ptr::null(), &mut got, &mut gfd) });
    assert_eq!(fd_count(), base + 1, "the caller owns the received fd");
    assert_eq!(record(&got), record(&d));
    let flags = unsafe { libc::fcntl(gfd, libc::F_GETFD) };
    assert_eq!(
        flags & libc::FD_CLOEXEC,
        libc::FD_CLOEXEC,
        "MSG_CMSG_CLOEXEC"
    );

    // An import of another device's description fails and leaves the fd alone.
    let mut other = got;
    other.device_uuid[0] ^= 0xff;
    let mut r = 1usize as *mut vkcuda_buffer;
    let msg = fails(
        unsafe { vkcuda_buffer_import_description(b, &other, gfd, 0, &mut r) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(msg.contains("UUID"), "{msg}");
    assert!(r.is_null());
    assert!(fd_is_open(gfd));
    // Success takes it.
    ok(unsafe { vkcuda_buffer_import_description(b, &got, gfd, 0, &mut r) });
    assert!(!fd_is_open(gfd), "the import took the fd");
    assert_eq!(fd_count(), base);
    assert_eq!(mismatches(vb, r, 47), 0);
    unsafe {
        vkcuda_buffer_destroy(r);
        vkcuda_buffer_destroy(buf);
    }
}

// ---- bad input ------------------------------------------------------------------------

/// A Vulkan-only context with a 4096-byte buffer, both destroyed when dropped.
struct OneBuffer {
    ctx: *mut vkcuda_context,
    buf: *mut vkcuda_buffer,
}

impl OneBuffer {
    fn new() -> OneBuffer {
        let ctx = vulkan_only_context();
        let buf = create_buffer(ctx, 4096, 0);
        OneBuffer { ctx, buf }
    }
}

impl Drop for OneBuffer {
    fn drop(&mut self) {
        unsafe {
            vkcuda_buffer_destroy(self.buf);
            vkcuda_context_destroy(self.ctx);
        }
    }
}

/// Sends `bytes` with `fds` on a fresh pair of `ty` and receives a buffer,
/// expecting `want`; checks no fd was left behind. Returns the message.
#[track_caller]
fn refused_message(
    ctx: *const vkcuda_context,
    ty: c_int,
    bytes: &[u8],
    fds: &[i32],
    want: vkcuda_result,
) -> String {
    let (s0, s1) = pair(ty);
    let base = fd_count();
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), bytes, fds),
        bytes.len() as isize
    );
    let msg = receive_fails(ctx, s1.as_raw_fd(), SECOND, want);
    assert_eq!(fd_count(), base, "every received fd was closed: {msg}");
    for &f in fds {
        assert!(fd_is_open(f), "the sender's fds are untouched");
    }
    msg
}

#[test]
fn unknown_versions_magic_and_kinds_are_refused() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let rec = record(&describe(buf));
    let fd = export(buf);
    let f = [fd.as_raw_fd()];
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        // Version 1 (before multi-planar images), 2 (before video frames), 3
        // (before colour descriptions travelled) and a future version 5: both
        // versions are named.
        for version in [1u8, 2, 3, 5] {
            let mut v = rec;
            v[8] = version;
            let msg = refused_message(ctx, ty, &v, &f, VKCUDA_ERROR_INVALID_ARGUMENT);
            assert!(
                msg.contains(&format!(
                    "unknown description format version {version}: this library reads version 4"
                )) && msg.contains("different vkcuda versions"),
                "{msg}"
            );
            assert!(msg.contains("were closed"), "{msg}");
        }
        let mut magic = rec;
        magic[..8].copy_from_slice(b"NOTVKCUD");
        let msg = refused_message(ctx, ty, &magic, &f, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("magic"), "{msg}");
        let mut kind = rec;
        kind[12] = 9;
        let msg = refused_message(ctx, ty, &kind, &f, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("unknown description kind 9"), "{msg}");
        let mut size = rec;
        size[64..72].copy_from_slice(&u64::MAX.to_le_bytes());
        let msg = refused_message(ctx, ty, &size, &f, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("impossible"), "{msg}");
    }
    // The same checks on the C side of serialize and parse.
    let mut bad = rec;
    bad[8] = 7;
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_share_description_parse(bad.as_ptr(), bad.len(), &mut d) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("version 7"), "{msg}");
    for n in [0, 11, 12, 60, 127, 129] {
        let mut long = rec.to_vec();
        long.push(0);
        let msg = fails(
            unsafe { vkcuda_share_description_parse(long.as_ptr(), n, &mut d) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            msg.contains(if n < 128 { "truncated" } else { "129 bytes" }),
            "{n}: {msg}"
        );
    }
    ok(unsafe { vkcuda_share_description_parse(rec.as_ptr(), 128, &mut d) });
    let mut small = [0u8; 127];
    fails(
        unsafe { vkcuda_share_description_serialize(&d, small.as_mut_ptr(), small.len()) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let mut wrong = d;
    wrong.kind = vkcuda_share_kind_raw(0);
    let msg = fails(
        unsafe { vkcuda_share_description_serialize(&wrong, small.as_mut_ptr(), 128) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("vkcuda_share_kind"), "{msg}");
    let mut wrong = d;
    wrong.buffer.size = 0;
    fails(
        unsafe { vkcuda_share_description_serialize(&wrong, small.as_mut_ptr(), 128) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let mut wrong = d;
    wrong.buffer.dedicated = 2;
    fails(
        unsafe { vkcuda_share_description_serialize(&wrong, small.as_mut_ptr(), 128) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
}

#[test]
fn device_and_kind_mismatches_are_refused() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let d = describe(buf);
    let fd = export(buf);
    let f = [fd.as_raw_fd()];
    let mut other = d;
    other.device_uuid = *b"another-gpu-uuid";
    let msg = refused_message(
        ctx,
        libc::SOCK_STREAM,
        &record(&other),
        &f,
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(
        msg.contains("616e6f74-6865-722d-6770-752d75756964"),
        "{msg}"
    );
    // A semaphore's description where a buffer is expected, and the other way.
    let mut sem = d;
    sem.kind = vkcuda_share_kind_raw(vkcuda_share_kind::VKCUDA_SHARE_KIND_SEMAPHORE as i32);
    sem.semaphore.semaphore_type = vkcuda_semaphore_type_raw(0);
    sem.semaphore.value = 3;
    let msg = refused_message(
        ctx,
        libc::SOCK_SEQPACKET,
        &record(&sem),
        &f,
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("of a semaphore, not a buffer"), "{msg}");
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    ok(unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), ptr::null()) });
    let mut s = 1usize as *mut vkcuda_semaphore;
    let msg = fails(
        unsafe { vkcuda_semaphore_receive(ctx, s1.as_raw_fd(), ptr::null(), &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("of a buffer, not a semaphore"), "{msg}");
    assert!(s.is_null());
    assert_eq!(fd_count(), base);
}

#[test]
fn truncated_messages_and_disconnects_are_refused() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let rec = record(&describe(buf));
    let fd = export(buf);
    let f = [fd.as_raw_fd()];
    // Seqpacket: a short record, and a long one.
    let msg = refused_message(
        ctx,
        libc::SOCK_SEQPACKET,
        &rec[..60],
        &f,
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(
        msg.contains("truncated description: a record of 60 bytes"),
        "{msg}"
    );
    let mut long = rec.to_vec();
    long.resize(200, 0);
    let msg = refused_message(
        ctx,
        libc::SOCK_SEQPACKET,
        &long,
        &f,
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("longer"), "{msg}");

    // Stream: the peer disconnects in the middle of a message (with its fd sent).
    for with_fd in [true, false] {
        let (s0, s1) = pair(libc::SOCK_STREAM);
        let base = fd_count();
        let fds: &[i32] = if with_fd { &f } else { &[] };
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[..60], fds), 60);
        drop(s0);
        let msg = receive_fails(ctx, s1.as_raw_fd(), SECOND, VKCUDA_ERROR_INVALID_STATE);
        assert!(
            msg.contains("in the middle of a description (60 of 128 bytes"),
            "{msg}"
        );
        assert_eq!(fd_count(), base - 1, "only the sender's socket went");
    }
    // ... before sending anything.
    let (s0, s1) = pair(libc::SOCK_STREAM);
    drop(s0);
    let msg = receive_fails(ctx, s1.as_raw_fd(), SECOND, VKCUDA_ERROR_INVALID_STATE);
    assert!(msg.contains("the peer closed the connection"), "{msg}");
    // A send to a closed peer is an error, not SIGPIPE.
    let (s0, s1) = pair(libc::SOCK_STREAM);
    drop(s1);
    let msg = fails(
        unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), ptr::null()) },
        VKCUDA_ERROR_INVALID_STATE,
    );
    assert!(msg.contains("closed"), "{msg}");

    // A peer that stops in the middle (or never starts) and stays connected: the
    // timeout ends the wait.
    for n in [60usize, 0] {
        let (s0, s1) = pair(libc::SOCK_STREAM);
        let base = fd_count();
        if n > 0 {
            assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[..n], &f), n as isize);
        }
        let start = Instant::now();
        let msg = receive_fails(ctx, s1.as_raw_fd(), 200_000_000, VKCUDA_ERROR_TIMEOUT);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert!(
            msg.contains(if n > 0 { "60 of 128" } else { "no description" }),
            "{msg}"
        );
        assert_eq!(fd_count(), base, "the fd that came was closed");
        drop(s0);
    }
}

#[test]
fn wrong_fd_counts_are_refused() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let rec = record(&describe(buf));
    let mine: Vec<OwnedFd> = (0..16).map(|_| export(buf)).collect();
    let raw: Vec<i32> = mine.iter().map(|f| f.as_raw_fd()).collect();
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        let msg = refused_message(ctx, ty, &rec, &[], VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("sent 0 file descriptor(s)"), "{msg}");
        let msg = refused_message(ctx, ty, &rec, &raw[..2], VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("sent 2 file descriptor(s)"), "{msg}");
        assert!(msg.contains("all were closed"), "{msg}");
        let msg = refused_message(ctx, ty, &rec, &raw[..4], VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains("sent 4"), "{msg}");
        // More than fit: the control data is truncated (MSG_CTRUNC).
        let msg = refused_message(ctx, ty, &rec, &raw, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(
            msg.contains("more file descriptors than a description carries"),
            "{msg}"
        );
    }
}

#[test]
fn fds_that_are_not_gpu_memory_are_refused() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let rec = record(&describe(buf));
    let open = |path: &std::ffi::CStr, flags: c_int| {
        let f = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
        assert!(f >= 0, "{path:?}");
        unsafe { OwnedFd::from_raw_fd(f) }
    };
    let null = open(c"/dev/null", libc::O_RDWR);
    let dir = open(c"/tmp", libc::O_RDONLY | libc::O_DIRECTORY);
    let terminal = open(c"/dev/ptmx", libc::O_RDWR | libc::O_NOCTTY);
    let mut p = [-1; 2];
    assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let pipe: Vec<OwnedFd> = p
        .iter()
        .map(|&f| unsafe { OwnedFd::from_raw_fd(f) })
        .collect();
    let event = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
    let timer = unsafe {
        OwnedFd::from_raw_fd(libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC,
        ))
    };
    let (sock, _peer) = pair(libc::SOCK_STREAM);
    let small =
        unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"small".as_ptr(), libc::MFD_CLOEXEC)) };
    assert_eq!(unsafe { libc::ftruncate(small.as_raw_fd(), 100) }, 0);

    // What is certainly not GPU memory is refused before the driver sees it: some
    // drivers read() the fd on import (lavapipe does), which would block for ever
    // on a pipe, a socket, a terminal or an empty eventfd.
    for (f, words) in [
        (&pipe[0], "a pipe or FIFO"),
        (&pipe[1], "a pipe or FIFO"),
        (&sock, "a socket"),
        (&dir, "a directory"),
        (&terminal, "a terminal"),
        (&event, "an event descriptor (anon_inode:[eventfd])"),
        (&timer, "an event descriptor (anon_inode:[timerfd])"),
    ] {
        for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
            let msg = refused_message(
                ctx,
                ty,
                &rec,
                &[f.as_raw_fd()],
                VKCUDA_ERROR_INVALID_ARGUMENT,
            );
            assert!(msg.contains(words), "{words}: {msg}");
            assert!(msg.contains("not a GPU handle"), "{msg}");
        }
    }
    // A file smaller than the allocation the description claims.
    let msg = refused_message(
        ctx,
        libc::SOCK_STREAM,
        &rec,
        &[small.as_raw_fd()],
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("real size 100"), "{msg}");
    // The driver refuses the rest (lavapipe: /dev/null has no memfd header).
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), &rec, &[null.as_raw_fd()]),
        128
    );
    let mut b = 1usize as *mut vkcuda_buffer;
    let r = unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &opts(SECOND), &mut b) };
    let msg = last_error();
    println!("/dev/null: {r:?}: {msg}");
    assert_ne!(r, VKCUDA_SUCCESS, "/dev/null imported as GPU memory");
    assert!(!msg.is_empty());
    assert!(b.is_null());
    assert_eq!(fd_count(), base, "the received fd was closed (once)");
    assert!(fd_is_open(null.as_raw_fd()));
    // The same checks when the caller imports a description itself; the fd stays its.
    let d = describe(buf);
    let mut r = 1usize as *mut vkcuda_buffer;
    let msg = fails(
        unsafe { vkcuda_buffer_import_description(ctx, &d, pipe[0].as_raw_fd(), 0, &mut r) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("a pipe"), "{msg}");
    assert!(r.is_null());
    assert!(fd_is_open(pipe[0].as_raw_fd()));
}

// ---- who may connect ---------------------------------------------------------------

#[repr(C)]
struct Seen {
    calls: u32,
    pid: i32,
    uid: u32,
    gid: u32,
    answer: c_int,
}

unsafe extern "C" fn record_peer(pid: i32, uid: u32, gid: u32, user: *mut c_void) -> c_int {
    let s = &mut *(user as *mut Seen);
    s.calls += 1;
    s.pid = pid;
    s.uid = uid;
    s.gid = gid;
    s.answer
}

#[test]
fn the_peer_check_decides_before_anything_is_read() {
    let _s = serial();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let buf = written(&v, ctx, 4096, 51);
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let mut seen = Seen {
        calls: 0,
        pid: 0,
        uid: 0,
        gid: 0,
        answer: 0,
    };
    let mut o = opts(SECOND);
    o.peer_check = Some(record_peer);
    o.peer_check_user = (&mut seen as *mut Seen).cast();

    // The sender's check refuses: nothing is sent.
    let msg = fails(
        unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), &o) },
        VKCUDA_ERROR_PERMISSION_DENIED,
    );
    assert!(msg.contains("peer_check callback refused"), "{msg}");
    assert_eq!(seen.calls, 1);
    let me = (
        unsafe { libc::getpid() },
        unsafe { libc::geteuid() },
        unsafe { libc::getegid() },
    );
    assert_eq!(
        (seen.pid, seen.uid, seen.gid),
        me,
        "SO_PEERCRED of a socketpair: this process"
    );
    let base = fd_count();
    receive_fails(ctx, s1.as_raw_fd(), 100_000_000, VKCUDA_ERROR_TIMEOUT);

    // Sent with the default check (same user); the receiver's check refuses and
    // leaves the message where it is.
    ok(unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), ptr::null()) });
    let after_send = fd_count();
    let mut b = 1usize as *mut vkcuda_buffer;
    let msg = fails(
        unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &o, &mut b) },
        VKCUDA_ERROR_PERMISSION_DENIED,
    );
    assert!(msg.contains(&format!("pid {}", me.0)), "{msg}");
    assert!(b.is_null());
    assert_eq!(seen.calls, 2);
    assert_eq!(
        fd_count(),
        after_send,
        "no fd was taken from a refused peer"
    );
    // Accepted: the same message arrives.
    seen.answer = 1;
    ok(unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &o, &mut b) });
    assert_eq!(seen.calls, 3);
    assert_eq!(mismatches(&v, b, 51), 0);
    unsafe { vkcuda_buffer_destroy(b) };
    assert_eq!(fd_count(), base);
    unsafe { vkcuda_buffer_destroy(buf) };
}

#[test]
fn sockets_and_options_are_checked() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let d = describe(buf);
    let fd = export(buf);
    let mut p = [-1; 2];
    assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let pipe: Vec<OwnedFd> = p
        .iter()
        .map(|&f| unsafe { OwnedFd::from_raw_fd(f) })
        .collect();
    let udp = unsafe {
        OwnedFd::from_raw_fd(libc::socket(
            libc::AF_INET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
        ))
    };
    let (dgram, _dgram_peer) = pair(libc::SOCK_DGRAM);
    let dir = TempDir::new("listen");
    let listener = UnixListener::bind(dir.0.join("sock")).unwrap();
    let closed = {
        let (x, _y) = pair(libc::SOCK_STREAM);
        x.as_raw_fd()
    };
    let cases: [(i32, &str); 6] = [
        (-1, "not valid"),
        (closed, "not a usable socket"),
        (pipe[0].as_raw_fd(), "not a usable socket"),
        (udp.as_raw_fd(), "not a Unix domain socket"),
        (dgram.as_raw_fd(), "SOCK_STREAM or SOCK_SEQPACKET"),
        (listener.as_raw_fd(), "not connected"),
    ];
    let base = fd_count();
    for (sock, words) in cases {
        let msg = receive_fails(ctx, sock, SECOND, VKCUDA_ERROR_INVALID_ARGUMENT);
        assert!(msg.contains(words), "receive on {sock}: {msg}");
        let msg = fails(
            unsafe { vkcuda_buffer_send(buf, sock, ptr::null()) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(msg.contains(words), "send on {sock}: {msg}");
        let msg = fails(
            unsafe { vkcuda_share_send(sock, &d, fd.as_raw_fd(), ptr::null()) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(msg.contains(words), "share_send on {sock}: {msg}");
    }
    assert_eq!(
        fd_count(),
        base,
        "the exported fds of the failed sends were closed"
    );

    let (s0, s1) = pair(libc::SOCK_STREAM);
    let mut o = opts(SECOND);
    o.flags = 1;
    let mut b = 1usize as *mut vkcuda_buffer;
    fails(
        unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &o, &mut b) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(b.is_null());
    fails(
        unsafe { vkcuda_buffer_send(buf, s0.as_raw_fd(), &o) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let mut o = opts(SECOND);
    o.buffer_usage = 0x8000_0000;
    fails(
        unsafe { vkcuda_buffer_receive(ctx, s1.as_raw_fd(), &o, &mut b) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    fails(
        unsafe { vkcuda_share_send(s0.as_raw_fd(), &d, -1, ptr::null()) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    let mut got: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let mut gfd = -7;
    fails(
        unsafe { vkcuda_share_receive(s1.as_raw_fd(), &opts(1_000_000), &mut got, &mut gfd) },
        VKCUDA_ERROR_TIMEOUT,
    );
    assert_eq!(gfd, -7, "nothing written on failure");
    let mut r = 1usize as *mut vkcuda_buffer;
    fails(
        unsafe { vkcuda_buffer_import_description(ctx, &d, -1, 0, &mut r) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(fd_is_open(fd.as_raw_fd()));
}

// ---- semaphores, as far as lavapipe goes ---------------------------------------------

#[test]
fn semaphores_go_as_far_as_lavapipe_allows() {
    let _s = serial();
    let one = OneBuffer::new();
    let (ctx, buf) = (one.ctx, one.buf);
    let mut d = describe(buf);
    d.kind = vkcuda_share_kind_raw(vkcuda_share_kind::VKCUDA_SHARE_KIND_SEMAPHORE as i32);
    d.buffer = unsafe { std::mem::zeroed() };
    d.semaphore.semaphore_type =
        vkcuda_semaphore_type_raw(vkcuda_semaphore_type::VKCUDA_SEMAPHORE_TYPE_TIMELINE as i32);
    d.semaphore.value = 5;
    // The record round trip.
    let rec = record(&d);
    assert_eq!(&rec[12..16], &[2, 0, 0, 0]);
    assert_eq!(&rec[48..56], &5u64.to_le_bytes());
    let mut back: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_share_description_parse(rec.as_ptr(), rec.len(), &mut back) });
    assert_eq!(record(&back), rec);
    assert_eq!(back.semaphore.value, 5);
    let mut binary = d;
    binary.semaphore.semaphore_type = vkcuda_semaphore_type_raw(1);
    let mut scratch = [0u8; 128];
    let msg = fails(
        unsafe { vkcuda_share_description_serialize(&binary, scratch.as_mut_ptr(), 128) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("binary"), "{msg}");

    // A stand-in payload: a regular file passes the checks that come before the
    // driver's import.
    let event =
        unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"payload".as_ptr(), libc::MFD_CLOEXEC)) };
    let not_a_semaphore = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
    let mut s = 1usize as *mut vkcuda_semaphore;
    let msg = fails(
        unsafe {
            vkcuda_semaphore_import_description(ctx, &d, not_a_semaphore.as_raw_fd(), &mut s)
        },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("eventfd"), "{msg}");
    // A regular file is never a semaphore payload: refused before any driver sees
    // it (NVIDIA's import of one was followed by failing allocations); the fd stays
    // the caller's.
    let msg = fails(
        unsafe { vkcuda_semaphore_import_description(ctx, &d, event.as_raw_fd(), &mut s) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("regular file"), "{msg}");
    assert!(s.is_null());
    assert!(fd_is_open(event.as_raw_fd()));
    // Another device's semaphore is refused before that.
    let mut other = d;
    other.device_uuid[15] ^= 1;
    fails(
        unsafe { vkcuda_semaphore_import_description(ctx, &other, event.as_raw_fd(), &mut s) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    // Over a socket, with the generic send: received, parsed, checked, the import
    // refused, and the received fd closed.
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        let (s0, s1) = pair(ty);
        let base = fd_count();
        ok(unsafe { vkcuda_share_send(s0.as_raw_fd(), &d, event.as_raw_fd(), ptr::null()) });
        let msg = fails(
            unsafe { vkcuda_semaphore_receive(ctx, s1.as_raw_fd(), ptr::null(), &mut s) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(msg.contains("regular file"), "{msg}");
        assert!(s.is_null());
        assert_eq!(fd_count(), base);
        // A semaphore description with two fds: the count is checked first.
        let two = [event.as_raw_fd(), event.as_raw_fd()];
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec, &two), 128);
        let msg = fails(
            unsafe { vkcuda_semaphore_receive(ctx, s1.as_raw_fd(), &opts(SECOND), &mut s) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(
            msg.contains("sent 2 file descriptor(s) with a semaphore"),
            "{msg}"
        );
        assert_eq!(fd_count(), base);
    }
}

// ---- images: described and sent by the library, made by the engine -----------------

fn image_barrier(
    v: &Vk,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    from: vk::ImageLayout,
    to: vk::ImageLayout,
) {
    let level0 = vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    };
    v.image_barrier(cmd, layout_barrier(image, level0, from, to));
}

fn level0_copy(w: u32, h: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        })
        .image_extent(vk::Extent3D {
            width: w,
            height: h,
            depth: 1,
        })
}

#[test]
fn images_are_described_sent_and_imported() {
    let _s = serial();
    let two = TwoDevices::open();
    let (a, b, va, vb) = (two.a, two.b, &*two.va, &*two.vb);
    let (w, h) = (64u32, 32u32);
    let info = vkcuda_image_create_info {
        usage: (vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST).as_raw(),
        ..image_desc(0, vk::Format::R8G8B8A8_UNORM, w, h, 0)
    };
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(a, &info, &mut im) });
    let ii = image_info(im);
    let bytes = (w * h * 4) as u64;
    // Device A writes a pattern.
    let stage = va.host_buffer(bytes);
    for (i, x) in stage.bytes().iter_mut().enumerate() {
        *x = pattern(i, 61);
    }
    va.run(|cmd| unsafe {
        image_barrier(
            va,
            cmd,
            ii.image,
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        );
        va.device.cmd_copy_buffer_to_image(
            cmd,
            stage.buffer,
            ii.image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &[level0_copy(w, h)],
        );
        image_barrier(
            va,
            cmd,
            ii.image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::ImageLayout::GENERAL,
        );
    });
    va.destroy_host_buffer(stage);

    let (s0, s1) = pair(libc::SOCK_SEQPACKET);
    let base = fd_count();
    ok(unsafe { vkcuda_image_send(im, s0.as_raw_fd(), ptr::null()) });
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let mut fd = -1;
    ok(unsafe { vkcuda_share_receive(s1.as_raw_fd(), ptr::null(), &mut d, &mut fd) });
    assert_eq!(d.kind.0, vkcuda_share_kind::VKCUDA_SHARE_KIND_IMAGE as i32);
    let di = d.image.description;
    assert_eq!(d.image.allocation_size, ii.allocation_size);
    assert_eq!(
        (
            di.format,
            di.extent,
            di.mip_levels,
            di.array_layers,
            di.usage
        ),
        (
            ii.format,
            ii.extent,
            ii.mip_levels,
            ii.array_layers,
            ii.usage
        )
    );
    assert_eq!(di.image_type.0, ii.image_type as i32);
    let mut mine: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut mine) });
    assert_eq!(record(&mine), record(&d));

    // Device B imports it from the description: a new VkImage on the fd's memory.
    let mut imported = ptr::null_mut();
    let mut bad = d;
    bad.device_uuid[0] ^= 1;
    fails(
        unsafe { vkcuda_image_import_description(b, &bad, fd, &mut imported) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(
        imported.is_null() && fd_is_open(fd),
        "a refused import leaves the fd alone"
    );
    ok(unsafe { vkcuda_image_import_description(b, &d, fd, &mut imported) });
    assert!(!fd_is_open(fd), "the import took the fd");
    let bi = image_info(imported);
    let image = bi.image;
    assert_eq!(bi.allocation_size, ii.allocation_size);

    let out = vb.host_buffer(bytes);
    out.bytes().fill(0);
    vb.run(|cmd| unsafe {
        image_barrier(
            vb,
            cmd,
            image,
            vk::ImageLayout::GENERAL,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        );
        vb.device.cmd_copy_image_to_buffer(
            cmd,
            image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            out.buffer,
            &[level0_copy(w, h)],
        );
    });
    let bad = out
        .bytes()
        .iter()
        .enumerate()
        .filter(|(i, &x)| x != pattern(*i, 61))
        .count();
    assert_eq!(
        bad, 0,
        "{bad} of {bytes} bytes differ in the engine's import"
    );
    vb.destroy_host_buffer(out);
    unsafe { vkcuda_image_destroy(imported) };
    assert_eq!(fd_count(), base, "the received fd went with the memory");
    // And over the socket in one call.
    ok(unsafe { vkcuda_image_send(im, s0.as_raw_fd(), ptr::null()) });
    let mut received = ptr::null_mut();
    ok(unsafe { vkcuda_image_receive(b, s1.as_raw_fd(), ptr::null(), &mut received) });
    let ri = image_info(received);
    assert_eq!((ri.format, ri.extent), (ii.format, ii.extent));
    unsafe { vkcuda_image_destroy(received) };
    assert_eq!(fd_count(), base);
    unsafe { vkcuda_image_destroy(im) };
}

// ---- on a GPU: a CUDA-allocated buffer and a timeline across processes ----------------

fn pattern_bytes(len: usize, seed: u32) -> Vec<u8> {
    (0..len).map(|i| pattern(i, seed)).collect()
}

fn count_bad(data: &[u8], seed: u32) -> usize {
    data.iter()
        .enumerate()
        .filter(|(i, &x)| x != pattern(*i, seed))
        .count()
}

const GPU_SIZE: usize = (1 << 20) + 1;

#[test]
#[ignore = "needs an NVIDIA GPU (run with VKCUDA_REQUIRE_GPU=1 -- --include-ignored)"]
fn gpu_buffer_and_timeline_cross_processes() {
    let _s = serial();
    let Some(ctx) = cuda_context_or_skip("gpu_buffer_and_timeline_cross_processes") else {
        return;
    };
    let cu = Cuda::of(ctx);
    let buf = create_buffer(ctx, GPU_SIZE as u64, 1);
    let ptr_a = buffer_info(buf).cuda_pointer;
    cu.write(ptr_a, &pattern_bytes(GPU_SIZE, 71));
    let sem = create_semaphore(ctx, 0, 0);
    let mut sd: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_semaphore_describe(sem, &mut sd) });
    assert_eq!(
        sd.kind.0,
        vkcuda_share_kind::VKCUDA_SHARE_KIND_SEMAPHORE as i32
    );

    let dir = TempDir::new("gpu");
    let path = dir.0.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let child = spawn_child("child_gpu_peer", &path, &[]);
    let conn = accept(&listener, Duration::from_secs(60));
    ok(unsafe { vkcuda_buffer_send(buf, conn.as_raw_fd(), &opts(60 * SECOND)) });
    ok(unsafe { vkcuda_semaphore_send(sem, conn.as_raw_fd(), &opts(60 * SECOND)) });
    // Value 1: the data is there. The child checks it with CUDA and Vulkan, writes
    // pattern 72 with CUDA and signals 2 on a CUDA stream.
    ok(unsafe { vkcuda_semaphore_host_signal(sem, 1) });
    ok(unsafe { vkcuda_semaphore_host_wait(sem, 2, 60 * SECOND) });
    let back = cu.read(ptr_a, GPU_SIZE);
    assert_eq!(
        count_bad(&back, 72),
        0,
        "the child's CUDA writes, read here"
    );
    drop(conn);
    finish_child("child_gpu_peer", child);
    unsafe {
        vkcuda_semaphore_destroy(sem);
        vkcuda_buffer_destroy(buf);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
#[ignore = "run by gpu_buffer_and_timeline_cross_processes in a child process"]
fn child_gpu_peer() {
    let Some(path) = child_socket() else { return };
    let ctx = cuda_context_or_skip("child_gpu_peer").expect("the parent has a GPU");
    let v = Vk::new(ctx);
    let cu = Cuda::of(ctx);
    let conn = connect_retry(&path);
    let mut b = ptr::null_mut();
    ok(unsafe { vkcuda_buffer_receive(ctx, conn.as_raw_fd(), &opts(60 * SECOND), &mut b) });
    let mut s = ptr::null_mut();
    ok(unsafe { vkcuda_semaphore_receive(ctx, conn.as_raw_fd(), &opts(60 * SECOND), &mut s) });
    let bi = buffer_info(b);
    assert_eq!(bi.allocator, vkcuda_allocator::VKCUDA_ALLOCATOR_CUDA);
    assert_eq!(bi.size, GPU_SIZE as u64);
    ok(unsafe { vkcuda_semaphore_host_wait(s, 1, 60 * SECOND) });
    let seen = cu.read(bi.cuda_pointer, GPU_SIZE);
    assert_eq!(
        count_bad(&seen, 71),
        0,
        "the parent's data through CUDA here"
    );
    assert_eq!(
        mismatches(&v, b, 71),
        0,
        "the parent's data through Vulkan here"
    );
    cu.write(bi.cuda_pointer, &pattern_bytes(GPU_SIZE, 72));
    ok(unsafe { vkcuda_semaphore_cuda_signal(s, 2, ptr::null_mut()) });
    cu.synchronize();
    println!("child: checked {GPU_SIZE} bytes through CUDA and Vulkan, wrote and signalled 2");
    unsafe {
        vkcuda_semaphore_destroy(s);
        vkcuda_buffer_destroy(b);
    }
    drop(v);
    unsafe { vkcuda_context_destroy(ctx) };
}

/// Sends `d` serialized with `fd` on a fresh socket pair and receives an image,
/// expecting `want`; no received fd is left open. Returns the message.
#[track_caller]
fn image_refused_message(
    ctx: *const vkcuda_context,
    d: &vkcuda_share_description,
    fd: i32,
    want: vkcuda_result,
) -> String {
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    let bytes = record(d);
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), &bytes, &[fd]),
        bytes.len() as isize
    );
    let mut im = 1usize as *mut vkcuda_image;
    let msg = fails(
        unsafe { vkcuda_image_receive(ctx, s1.as_raw_fd(), &opts(SECOND), &mut im) },
        want,
    );
    assert!(im.is_null());
    assert_eq!(fd_count(), base, "every received fd was closed: {msg}");
    msg
}

/// Dedicated imports whose allocation_size is not the memory requirement of the
/// resource made for them are refused before the driver sees the fd
/// (VUID-VkMemoryDedicatedAllocateInfo-buffer-01435, -image-01433), through every
/// import path; the right size imports; nothing leaks. A larger size (+16,
/// +4096) is refused by whichever check comes first: where the fd tells the
/// allocation's size (lavapipe's memfds, to the byte: their header is not counted)
/// the real-size check, on NVIDIA, whose fds tell no size, the requirement check.
/// The allocation's own size with a smaller resource (1 byte, a 1x1 image) is
/// refused by the requirement check on every driver.
#[test]
fn dedicated_imports_must_match_the_requirement() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let (fds, objects) = (fd_count(), live_objects());

    // Buffers. lavapipe does not make them dedicated: the import says it is.
    let buf = create_buffer(ctx, 65536 + 3, 0);
    let bi = buffer_info(buf);
    // Not closed by unwinding: a regression would have the library own it.
    let fd = std::mem::ManuallyDrop::new(export(buf));
    let info = || vkcuda_buffer_import_info {
        dedicated: 1,
        ..buffer_import_info(&bi)
    };
    let mut out = 1usize as *mut vkcuda_buffer;
    let mut d = describe(buf);
    d.buffer.dedicated = 1;
    for extra in [16u64, 4096] {
        let wrong = bi.allocation_size + extra;
        let mut bad = info();
        bad.allocation_size = wrong;
        let msg = fails(
            unsafe { vkcuda_buffer_import_fd(ctx, &bad, fd.as_raw_fd(), &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(out.is_null() && fd_is_open(fd.as_raw_fd()));
        assert!(msg.contains(&wrong.to_string()), "{msg}");
        let mut bad = d;
        bad.buffer.allocation_size = wrong;
        let msg2 = fails(
            unsafe { vkcuda_buffer_import_description(ctx, &bad, fd.as_raw_fd(), 0, &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(out.is_null() && fd_is_open(fd.as_raw_fd()));
        let msg3 = refused_message(
            ctx,
            libc::SOCK_STREAM,
            &record(&bad),
            &[fd.as_raw_fd()],
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        for m in [&msg, &msg2, &msg3] {
            assert!(
                m.contains("VUID-VkMemoryDedicatedAllocateInfo-buffer-01435")
                    || m.contains("larger than the memory object's real size"),
                "{m}"
            );
        }
    }
    // The allocation's size, but a 1-byte buffer: not what a dedicated allocation
    // of it would be.
    {
        let mut bad = info();
        bad.size = 1;
        let msg = fails(
            unsafe { vkcuda_buffer_import_fd(ctx, &bad, fd.as_raw_fd(), &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(out.is_null() && fd_is_open(fd.as_raw_fd()));
        let mut bad_d = d;
        bad_d.buffer.size = 1;
        let msg2 = fails(
            unsafe { vkcuda_buffer_import_description(ctx, &bad_d, fd.as_raw_fd(), 0, &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        let msg3 = refused_message(
            ctx,
            libc::SOCK_STREAM,
            &record(&bad_d),
            &[fd.as_raw_fd()],
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        for m in [&msg, &msg2, &msg3] {
            assert!(
                m.contains(&format!(
                    "allocation_size {} differs from the ",
                    bi.allocation_size
                )) && m.contains(" bytes a buffer of 1 bytes needs")
                    && m.contains("VUID-VkMemoryDedicatedAllocateInfo-buffer-01435"),
                "{m}"
            );
        }
    }
    // Dedicated memory is bound at offset 0.
    let mut bad = info();
    bad.offset = 256;
    bad.size = bi.size - 256;
    let msg = fails(
        unsafe { vkcuda_buffer_import_fd(ctx, &bad, fd.as_raw_fd(), &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("offset 0"), "{msg}");
    // The right size imports (and takes the fd).
    let mut good = ptr::null_mut();
    let fd2 = export(buf);
    ok(unsafe { vkcuda_buffer_import_fd(ctx, &info(), fd2.as_raw_fd(), &mut good) });
    std::mem::forget(fd2);
    assert_eq!(buffer_info(good).dedicated, 1);
    unsafe { vkcuda_buffer_destroy(good) };
    drop(std::mem::ManuallyDrop::into_inner(fd));
    unsafe { vkcuda_buffer_destroy(buf) };

    // Images: always one dedicated allocation.
    let desc = image_desc(0, vk::Format::R8G8B8A8_UNORM, 64, 48, 1);
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(ctx, &desc, &mut im) });
    let ii = image_info(im);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut d) });
    let mut raw = -1;
    ok(unsafe { vkcuda_image_export_fd(im, &mut raw) });
    let fd = std::mem::ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(raw) });
    let mut out = 1usize as *mut vkcuda_image;
    for extra in [16u64, 4096] {
        let wrong = ii.allocation_size + extra;
        let mut bad = d;
        bad.image.allocation_size = wrong;
        bad.image.plane_allocation_sizes[0] = 0;
        let msg = fails(
            unsafe { vkcuda_image_import_description(ctx, &bad, fd.as_raw_fd(), &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(out.is_null() && fd_is_open(fd.as_raw_fd()));
        assert!(msg.contains(&wrong.to_string()), "{msg}");
        let msg2 = image_refused_message(ctx, &bad, fd.as_raw_fd(), VKCUDA_ERROR_INVALID_ARGUMENT);
        for m in [&msg, &msg2] {
            assert!(
                m.contains("VUID-VkMemoryDedicatedAllocateInfo-image-01433")
                    || m.contains("larger than the memory object's real size"),
                "{m}"
            );
        }
    }
    // The allocation's size, but a 1x1 image.
    {
        let mut bad = d;
        bad.image.description.extent.width = 1;
        bad.image.description.extent.height = 1;
        bad.image.description.mip_levels = 1;
        let msg = fails(
            unsafe { vkcuda_image_import_description(ctx, &bad, fd.as_raw_fd(), &mut out) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(out.is_null() && fd_is_open(fd.as_raw_fd()));
        let msg2 = image_refused_message(ctx, &bad, fd.as_raw_fd(), VKCUDA_ERROR_INVALID_ARGUMENT);
        for m in [&msg, &msg2] {
            assert!(
                m.contains(&format!(
                    "allocation_size {} differs from the ",
                    ii.allocation_size
                )) && m.contains("VUID-VkMemoryDedicatedAllocateInfo-image-01433"),
                "{m}"
            );
        }
    }
    let mut good = ptr::null_mut();
    // Taken by the library on success.
    ok(unsafe { vkcuda_image_import_description(ctx, &d, fd.as_raw_fd(), &mut good) });
    assert_eq!(image_info(good).allocation_size, ii.allocation_size);
    unsafe {
        vkcuda_image_destroy(good);
        vkcuda_image_destroy(im);
    }
    assert_eq!(fd_count(), fds, "no fd leaked");
    assert_eq!(live_tuple(&live_objects()), live_tuple(&objects));
    unsafe { vkcuda_context_destroy(ctx) };
}
