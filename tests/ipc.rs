//! Cross-process sharing (`vkcuda::ipc`), on lavapipe (Vulkan-only contexts).
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
//! for real on a CUDA GPU, every byte through CUDA and Vulkan, and leaves no live
//! object in either process (skipped without one unless VKCUDA_REQUIRE_GPU=1).
//! (A frame loop across two processes, one buffer and one timeline taking turns, is
//! the example pair's: c_examples/cross_process_producer.c, on a GPU and, with
//! `--vulkan-only`, on lavapipe.)
//! (The C door's part: the options struct, NULL outputs, descriptor numbers that
//! are not open, who owns an fd after `vkcuda_share_receive` and the imports, is
//! the misuse matrix's (capi/tests/misuse/share.rs) and capi/tests/share.rs's.)

mod support;
use support::cuda::Cuda;
use support::*;

use std::cell::Cell;
use std::ffi::c_int;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ash::vk;
use vkcuda::buffer::{Allocator, Layout};
use vkcuda::image::Description as ImageDescription;
use vkcuda::ipc::{self, Description, Object, Options, PeerPolicy};
use vkcuda::semaphore::Kind;
use vkcuda::{Buffer, Context, ErrorKind, Image, Semaphore};

const SOCKET_ENV: &str = "VKCUDA_IPC_TEST_SOCKET";
const STREAM: c_int = libc::SOCK_STREAM;
const SEQPACKET: c_int = libc::SOCK_SEQPACKET;
const INVALID: ErrorKind = ErrorKind::InvalidArgument;
const SIZE_ENV: &str = "VKCUDA_IPC_TEST_SIZE";

fn opts(timeout: Duration) -> Options<'static> {
    Options {
        timeout: Some(timeout),
        ..Options::default()
    }
}

fn secs(s: u64) -> Options<'static> {
    opts(Duration::from_secs(s))
}

fn none() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::empty()
}

fn live_tuple(l: &vkcuda::LiveObjects) -> (i64, i64, i64, i64) {
    (l.contexts, l.vk_buffers, l.vk_memories, l.vk_semaphores)
}

/// The process's open fds and the library's live contexts, buffers, memories
/// and semaphores now.
type Counts = (usize, (i64, i64, i64, i64));

fn counts() -> Counts {
    (fd_count(), live_tuple(&live_objects()))
}

/// After `CYCLES` of `what` in `who` since `start`: the open fds and live
/// objects are those of `before`.
fn same_counts(who: &str, what: &str, start: Instant, before: Counts) {
    let (fds, objs) = before;
    let (fds2, objs2) = counts();
    println!(
        "{who}: {CYCLES} {what} in {:?}: open fds {fds} -> {fds2}",
        start.elapsed()
    );
    assert_eq!(fds, fds2, "open fds in the {who}");
    assert_eq!(objs, objs2);
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

/// A Vulkan-only context and the test's Vulkan on it (`Dev` derefs to its `Vk`,
/// dropped before the context).
struct Dev {
    v: Vk,
    ctx: Arc<Context>,
}

impl Dev {
    fn open() -> Dev {
        let ctx = vulkan_only_context();
        Dev {
            v: Vk::of(&ctx),
            ctx,
        }
    }

    /// A new buffer of `size` bytes holding `seed`'s pattern.
    fn written(&self, size: u64, seed: u32) -> Buffer {
        let b = Buffer::create(&self.ctx, size, none(), Allocator::Vulkan).unwrap();
        self.v.fill_pattern(b.vk_buffer(), size, seed);
        b
    }

    /// Copies the buffer out and counts the bytes that differ from the pattern.
    fn mismatches(&self, b: &Buffer, seed: u32) -> usize {
        self.v
            .pattern_mismatches(b.vk_buffer(), b.layout().size, seed)
    }
}

impl std::ops::Deref for Dev {
    type Target = Vk;
    fn deref(&self) -> &Vk {
        &self.v
    }
}

fn record(d: &Description) -> [u8; ipc::DESCRIPTION_SIZE] {
    d.to_bytes().unwrap()
}

/// Receives a buffer into `ctx` expecting `want`; returns the message.
#[track_caller]
fn receive_fails(ctx: &Arc<Context>, sock: &impl AsFd, o: &Options, want: ErrorKind) -> String {
    fails_with(ipc::receive_buffer(ctx, sock.as_fd(), o, none()), want)
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
            Err(_) if start.elapsed() < Duration::from_secs(20) => {
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
    let v = Dev::open();
    let child = spawn_child("child_buffer_peer", &path, &[(SIZE_ENV, size.to_string())]);
    let conn = accept(&listener, Duration::from_secs(30));
    let fds = fd_count();

    let a = v.written(size, 11);
    ipc::send_buffer(&a, conn.as_fd(), &secs(30)).unwrap();
    // The child checks every byte, writes pattern 12 into the same memory, then
    // sends a buffer of its own with pattern 13.
    let b = ipc::receive_buffer(&v.ctx, conn.as_fd(), &secs(60), none()).unwrap();
    assert_eq!(b.layout().size, size);
    assert_eq!(v.mismatches(&b, 13), 0, "the child's buffer, read here");
    assert_eq!(
        v.mismatches(&a, 12),
        0,
        "the child's writes into the parent's buffer"
    );
    drop((b, a));
    assert_eq!(fd_count(), fds, "open fds in the parent");
    drop(conn);
    finish_child("child_buffer_peer", child);
}

#[test]
#[ignore = "run by buffer_crosses_two_processes_through_a_socket_path in a child process"]
fn child_buffer_peer() {
    let Some(path) = child_socket() else { return };
    let size: u64 = std::env::var(SIZE_ENV).unwrap().parse().unwrap();
    let v = Dev::open();
    let conn = connect_retry(&path);
    let a = ipc::receive_buffer(&v.ctx, conn.as_fd(), &secs(30), none()).unwrap();
    assert_eq!(a.layout().size, size);
    assert_eq!(a.layout().allocator, Allocator::Vulkan);
    assert_eq!(v.mismatches(&a, 11), 0, "the parent's buffer, read here");
    println!("child: {size} bytes from the parent checked");
    v.fill_pattern(a.vk_buffer(), size, 12);
    let b = v.written(size, 13);
    ipc::send_buffer(&b, conn.as_fd(), &secs(30)).unwrap();
    // Dropped before the parent may have imported it: the fd in flight keeps the
    // memory alive.
    drop((b, a));
}

const CYCLES: usize = 1000;

#[test]
fn thousand_cycles_leave_fd_counts_alone_in_both_processes() {
    let _s = serial();
    let dir = TempDir::new("cycles");
    let path = dir.0.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let v = Dev::open();
    let child = spawn_child("child_thousand_cycles", &path, &[]);
    let mut conn = accept(&listener, Duration::from_secs(30));
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let a = v.written(65536, 21);
    let cycle = |conn: &mut UnixStream| {
        ipc::send_buffer(&a, conn.as_fd(), &secs(30)).unwrap();
        let mut ack = [0u8; 1];
        conn.read_exact(&mut ack).unwrap();
        assert_eq!(&ack, b"k");
    };
    cycle(&mut conn); // lazy driver state
    let before = counts();
    let start = Instant::now();
    for _ in 0..CYCLES {
        cycle(&mut conn);
    }
    same_counts("parent", "sends", start, before);
    drop(conn);
    finish_child("child_thousand_cycles", child);
}

#[test]
#[ignore = "run by thousand_cycles_leave_fd_counts_alone_in_both_processes in a child process"]
fn child_thousand_cycles() {
    let Some(path) = child_socket() else { return };
    let v = Dev::open();
    let mut conn = connect_retry(&path);
    let mut before = None;
    let start = Instant::now();
    for i in 0..=CYCLES {
        let b = ipc::receive_buffer(&v.ctx, conn.as_fd(), &secs(30), none()).unwrap();
        if i == 0 || i == CYCLES {
            assert_eq!(v.mismatches(&b, 21), 0, "cycle {i}");
        }
        drop(b);
        if i == 0 {
            before = Some(counts());
        }
        conn.write_all(b"k").unwrap();
    }
    same_counts("child", "receives and imports", start, before.unwrap());
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

    let v = Dev::open();
    let a = v.written(4096, 31);
    let rec = record(&ipc::describe_buffer(&a));
    let fd = a.export_fd().unwrap();
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
    let msg = receive_fails(&v.ctx, &c1, &secs(10), ErrorKind::PermissionDenied);
    has(&msg, &["uid 65534", "not the same user"]);
    // A peer check that accepts that user lets it through.
    let c2 = accept(&open, Duration::from_secs(10));
    let nobody = |p: &ipc::Peer| p.uid == 65534;
    let o = Options {
        timeout: Some(Duration::from_secs(10)),
        peer: PeerPolicy::Check(&nobody),
    };
    let b = ipc::receive_buffer(&v.ctx, c2.as_fd(), &o, none()).unwrap();
    assert_eq!(v.mismatches(&b, 31), 0);
    drop(b);

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
}

// ---- one process, both socket types ----------------------------------------------

#[test]
fn stream_and_seqpacket_sockets_carry_buffers() {
    let _s = serial();
    let (da, db) = (Dev::open(), Dev::open());
    let buf = da.written(100_003, 41);
    let base = fd_count();
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        let (s0, s1) = pair(ty);
        // Two messages back to back, then a byte of the caller's own: each receive
        // reads exactly one description.
        ipc::send_buffer(&buf, s0.as_fd(), &Options::default()).unwrap();
        ipc::send_buffer(&buf, s0.as_fd(), &Options::default()).unwrap();
        assert_eq!(
            unsafe { libc::write(s0.as_raw_fd(), b"!".as_ptr().cast(), 1) },
            1
        );
        for _ in 0..2 {
            let r = ipc::receive_buffer(&db.ctx, s1.as_fd(), &Options::default(), none()).unwrap();
            assert_eq!(r.layout(), buf.layout());
            assert_eq!(db.mismatches(&r, 41), 0, "socket type {ty}");
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
}

#[test]
fn a_message_in_pieces_is_put_together() {
    let _s = serial();
    let (da, db) = (Dev::open(), Dev::open());
    let buf = da.written(4096, 43);
    let (rec, fd) = record_and_fd(&buf);
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
    let r = ipc::receive_buffer(&db.ctx, s1.as_fd(), &secs(10), none()).unwrap();
    assert_eq!(db.mismatches(&r, 43), 0);
    drop(r);
    drop(sender.join().unwrap());
    assert_eq!(
        fd_count(),
        base - 2,
        "the sender's socket and fd closed, nothing else left"
    );
}

extern "C" fn on_signal(_: c_int) {}

#[test]
fn signals_do_not_break_a_receive() {
    let _s = serial();
    let v = Dev::open();
    let buf = v.written(4096, 45);
    unsafe {
        // No SA_RESTART: a blocked poll or recvmsg returns EINTR.
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, ptr::null_mut()), 0);
    }
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let me = unsafe { libc::pthread_self() };
    let (rec, fd) = record_and_fd(&buf);
    let t = std::thread::spawn(move || {
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(40));
            unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
        }
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec, &[fd.as_raw_fd()]), 128);
        (s0, fd)
    });
    let start = Instant::now();
    let r = ipc::receive_buffer(&v.ctx, s1.as_fd(), &secs(10), none()).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(v.mismatches(&r, 45), 0);
    drop(t.join().unwrap());
}

/// (Holds what was `a_buffer_crosses_a_socket` of the Rust API suite: the record
/// round trip, the generic send and receive, an import of the received
/// description.)
#[test]
fn generic_send_and_receive_hand_the_fd_to_the_caller() {
    let _s = serial();
    let (da, db) = (Dev::open(), Dev::open());
    let buf = da.written(12345, 47);
    let d = ipc::describe_buffer(&buf);
    assert_eq!(d.kind(), ipc::Kind::Buffer);
    assert_eq!(d.object, Object::Buffer(buf.layout()));
    assert_eq!(d.fd_count(), 1);
    assert_eq!(Description::parse(&record(&d)).unwrap(), d);
    let fd = buf.export_fd().unwrap();
    let (s0, s1) = pair(libc::SOCK_SEQPACKET);
    let base = fd_count();
    ipc::send(s0.as_fd(), &d, &[fd.as_fd()], &Options::default()).unwrap();
    assert!(fd_is_open(fd.as_raw_fd()), "the sender keeps its fd");
    let (got, fds) = ipc::receive(s1.as_fd(), &Options::default()).unwrap();
    assert_eq!(fds.len(), 1);
    assert_eq!(fd_count(), base + 1, "the caller owns the received fd");
    assert_eq!(got, d);
    let flags = unsafe { libc::fcntl(fds[0].as_raw_fd(), libc::F_GETFD) };
    assert_eq!(
        flags & libc::FD_CLOEXEC,
        libc::FD_CLOEXEC,
        "MSG_CMSG_CLOEXEC"
    );

    // An import of another device's description fails; the fd is the caller's.
    let mut other = got;
    other.device_uuid[0] ^= 0xff;
    let msg = fails_with(
        ipc::import_buffer(&db.ctx, &other, fds[0].as_fd(), none()),
        ErrorKind::DeviceMismatch,
    );
    has(&msg, &["UUID"]);
    // Success imports; the drivers got duplicates, the caller closes its own.
    let r = ipc::import_buffer(&db.ctx, &got, fds[0].as_fd(), none()).unwrap();
    drop(fds);
    assert_eq!(fd_count(), base);
    assert_eq!(db.mismatches(&r, 47), 0);
}

// ---- bad input ------------------------------------------------------------------------

/// Sends `bytes` with `fds` on a fresh pair of `ty` and receives a buffer,
/// expecting `want`; checks no fd was left behind. Returns the message.
#[track_caller]
fn refused_message(
    ctx: &Arc<Context>,
    ty: c_int,
    bytes: &[u8],
    fds: &[i32],
    want: ErrorKind,
) -> String {
    let (s0, s1) = pair(ty);
    let base = fd_count();
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), bytes, fds),
        bytes.len() as isize
    );
    let msg = receive_fails(ctx, &s1, &secs(1), want);
    assert_eq!(fd_count(), base, "every received fd was closed: {msg}");
    for &f in fds {
        assert!(fd_is_open(f), "the sender's fds are untouched");
    }
    msg
}

/// `buf`'s description's record and an fd of its memory: what a peer sends.
fn record_and_fd(buf: &Buffer) -> ([u8; ipc::DESCRIPTION_SIZE], OwnedFd) {
    (record(&ipc::describe_buffer(buf)), buf.export_fd().unwrap())
}

/// A Vulkan-only context with a 4096-byte buffer.
fn one_buffer() -> (Buffer, Arc<Context>) {
    let ctx = vulkan_only_context();
    let buf = Buffer::create(&ctx, 4096, none(), Allocator::Vulkan).unwrap();
    (buf, ctx)
}

/// Records of another version, magic or kind, or an impossible size, received
/// over both socket types: refused naming what is wrong, the fds that came closed.
/// (The same records through `Description::parse` and `to_bytes` alone, with the
/// truncated and long ones: src/ipc/description.rs's unit tests.)
#[test]
fn unknown_versions_magic_and_kinds_are_refused() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let (rec, fd) = record_and_fd(&buf);
    let f = [fd.as_raw_fd()];
    let invalid = ErrorKind::InvalidArgument;
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        // Version 1 (before multi-planar images), 2 (before video frames), 3
        // (before colour descriptions travelled) and a future version 5: both
        // versions are named.
        for version in [1u8, 2, 3, 5] {
            let mut v = rec;
            v[8] = version;
            let msg = refused_message(&ctx, ty, &v, &f, invalid);
            assert!(
                msg.contains(&format!(
                    "unknown description format version {version}: this library reads version 4"
                )) && msg.contains("different vkcuda versions"),
                "{msg}"
            );
            has(&msg, &["were closed"]);
        }
        // A bad magic, an unknown kind, an impossible size.
        for (at, bytes, want) in [
            (0, &b"NOTVKCUD"[..], "magic"),
            (12, &[9], "unknown description kind 9"),
            (64, &u64::MAX.to_le_bytes(), "impossible"),
        ] {
            let mut bad = rec;
            bad[at..at + bytes.len()].copy_from_slice(bytes);
            has(&refused_message(&ctx, ty, &bad, &f, invalid), &[want]);
        }
    }
}

#[test]
fn device_and_kind_mismatches_are_refused() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let d = ipc::describe_buffer(&buf);
    let fd = buf.export_fd().unwrap();
    let f = [fd.as_raw_fd()];
    let mut other = d;
    other.device_uuid = *b"another-gpu-uuid";
    let msg = refused_message(&ctx, STREAM, &record(&other), &f, ErrorKind::DeviceMismatch);
    has(&msg, &["616e6f74-6865-722d-6770-752d75756964"]);
    // A semaphore's description where a buffer is expected, and the other way.
    let sem = Description {
        object: Object::Semaphore {
            kind: Kind::Timeline,
            value: 3,
        },
        ..d
    };
    let msg = refused_message(&ctx, SEQPACKET, &record(&sem), &f, INVALID);
    has(&msg, &["of a semaphore, not a buffer"]);
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    ipc::send_buffer(&buf, s0.as_fd(), &Options::default()).unwrap();
    let msg = fails_with(
        ipc::receive_semaphore(&ctx, s1.as_fd(), &Options::default()),
        ErrorKind::InvalidArgument,
    );
    has(&msg, &["of a buffer, not a semaphore"]);
    assert_eq!(fd_count(), base);
    // And an image import of a buffer's description.
    let msg = fails_with(
        ipc::import_image(&ctx, &d, &[fd.as_fd()]),
        ErrorKind::InvalidArgument,
    );
    assert!(
        msg.contains("not a image") || msg.contains("not an image"),
        "{msg}"
    );
}

#[test]
fn truncated_messages_and_disconnects_are_refused() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let (rec, fd) = record_and_fd(&buf);
    let f = [fd.as_raw_fd()];
    // Seqpacket: a short record, and a long one.
    let msg = refused_message(&ctx, SEQPACKET, &rec[..60], &f, INVALID);
    has(&msg, &["truncated description: a record of 60 bytes"]);
    let mut long = rec.to_vec();
    long.resize(200, 0);
    let msg = refused_message(&ctx, SEQPACKET, &long, &f, INVALID);
    has(&msg, &["longer"]);

    // Stream: the peer disconnects in the middle of a message (with its fd sent).
    for with_fd in [true, false] {
        let (s0, s1) = pair(libc::SOCK_STREAM);
        let base = fd_count();
        let fds: &[i32] = if with_fd { &f } else { &[] };
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[..60], fds), 60);
        drop(s0);
        let msg = receive_fails(&ctx, &s1, &secs(1), ErrorKind::InvalidState);
        has(&msg, &["in the middle of a description (60 of 128 bytes"]);
        assert_eq!(fd_count(), base - 1, "only the sender's socket went");
    }
    // ... before sending anything.
    let (s0, s1) = pair(libc::SOCK_STREAM);
    drop(s0);
    let msg = receive_fails(&ctx, &s1, &secs(1), ErrorKind::InvalidState);
    has(&msg, &["the peer closed the connection"]);
    let msg = fails_with(ipc::receive(s1.as_fd(), &secs(1)), ErrorKind::InvalidState);
    has(&msg, &["the peer closed the connection"]);
    // A send to a closed peer is an error, not SIGPIPE.
    let (s0, s1) = pair(libc::SOCK_STREAM);
    drop(s1);
    let msg = fails_with(
        ipc::send_buffer(&buf, s0.as_fd(), &Options::default()),
        ErrorKind::InvalidState,
    );
    has(&msg, &["closed"]);

    // A peer that stops in the middle (or never starts) and stays connected: the
    // timeout ends the wait.
    for n in [60usize, 0] {
        let (s0, s1) = pair(libc::SOCK_STREAM);
        let base = fd_count();
        if n > 0 {
            assert_eq!(send_with_fds(s0.as_raw_fd(), &rec[..n], &f), n as isize);
        }
        let start = Instant::now();
        let msg = receive_fails(
            &ctx,
            &s1,
            &opts(Duration::from_millis(200)),
            ErrorKind::Timeout,
        );
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(3),
            "{took:?}"
        );
        has(&msg, &[if n > 0 { "60 of 128" } else { "no description" }]);
        assert_eq!(fd_count(), base, "the fd that came was closed");
        drop(s0);
    }
}

#[test]
fn wrong_fd_counts_are_refused() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let rec = record(&ipc::describe_buffer(&buf));
    let mine: Vec<OwnedFd> = (0..16).map(|_| buf.export_fd().unwrap()).collect();
    let raw: Vec<i32> = mine.iter().map(|f| f.as_raw_fd()).collect();
    let invalid = ErrorKind::InvalidArgument;
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        // Sixteen are more than fit: the control data is truncated (MSG_CTRUNC).
        for (n, want) in [
            (0, &["sent 0 file descriptor(s)"][..]),
            (2, &["sent 2 file descriptor(s)", "all were closed"]),
            (4, &["sent 4"]),
            (16, &["more file descriptors than a description carries"]),
        ] {
            has(&refused_message(&ctx, ty, &rec, &raw[..n], invalid), want);
        }
    }
}

#[test]
fn fds_that_are_not_gpu_memory_are_refused() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let d = ipc::describe_buffer(&buf);
    let rec = record(&d);
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
            let msg = refused_message(&ctx, ty, &rec, &[f.as_raw_fd()], ErrorKind::InvalidArgument);
            assert!(msg.contains(words), "{words}: {msg}");
            has(&msg, &["not a GPU handle"]);
        }
    }
    // A file smaller than the allocation the description claims.
    let msg = refused_message(&ctx, STREAM, &rec, &[small.as_raw_fd()], INVALID);
    has(&msg, &["real size 100"]);
    // The driver refuses the rest (lavapipe: /dev/null has no memfd header).
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), &rec, &[null.as_raw_fd()]),
        128
    );
    let e = ipc::receive_buffer(&ctx, s1.as_fd(), &secs(1), none()).unwrap_err();
    println!("/dev/null: {:?}: {e}", e.kind());
    assert!(!e.to_string().is_empty());
    assert_eq!(fd_count(), base, "the received fd was closed (once)");
    assert!(fd_is_open(null.as_raw_fd()));
    // The same checks when the caller imports a description itself.
    let msg = fails_with(
        ipc::import_buffer(&ctx, &d, pipe[0].as_fd(), none()),
        ErrorKind::InvalidArgument,
    );
    has(&msg, &["a pipe"]);
    assert!(fd_is_open(pipe[0].as_raw_fd()));
}

// ---- who may connect ---------------------------------------------------------------

#[test]
fn the_peer_check_decides_before_anything_is_read() {
    let _s = serial();
    let v = Dev::open();
    let buf = v.written(4096, 51);
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let (calls, seen, answer) = (Cell::new(0), Cell::new(None), Cell::new(false));
    let check = |p: &ipc::Peer| {
        calls.set(calls.get() + 1);
        seen.set(Some(*p));
        answer.get()
    };
    let o = Options {
        timeout: Some(Duration::from_secs(1)),
        peer: PeerPolicy::Check(&check),
    };

    // The sender's check refuses: nothing is sent.
    let msg = fails_with(
        ipc::send_buffer(&buf, s0.as_fd(), &o),
        ErrorKind::PermissionDenied,
    );
    has(&msg, &["refused"]);
    assert_eq!(calls.get(), 1);
    let me = ipc::Peer {
        pid: unsafe { libc::getpid() },
        uid: unsafe { libc::geteuid() },
        gid: unsafe { libc::getegid() },
    };
    assert_eq!(
        seen.get(),
        Some(me),
        "SO_PEERCRED of a socketpair: this process"
    );
    let base = fd_count();
    receive_fails(
        &v.ctx,
        &s1,
        &opts(Duration::from_millis(100)),
        ErrorKind::Timeout,
    );

    // Sent with the default check (same user); the receiver's check refuses and
    // leaves the message where it is.
    ipc::send_buffer(&buf, s0.as_fd(), &Options::default()).unwrap();
    let after_send = fd_count();
    let msg = receive_fails(&v.ctx, &s1, &o, ErrorKind::PermissionDenied);
    has(&msg, &[&format!("pid {}", me.pid)]);
    assert_eq!(calls.get(), 2);
    assert_eq!(
        fd_count(),
        after_send,
        "no fd was taken from a refused peer"
    );
    // Accepted: the same message arrives.
    answer.set(true);
    let b = ipc::receive_buffer(&v.ctx, s1.as_fd(), &o, none()).unwrap();
    assert_eq!(calls.get(), 3);
    assert_eq!(v.mismatches(&b, 51), 0);
    drop(b);
    assert_eq!(fd_count(), base);
}

#[test]
fn sockets_and_options_are_checked() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let d = ipc::describe_buffer(&buf);
    let fd = buf.export_fd().unwrap();
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
    let cases: [(std::os::fd::BorrowedFd, &str); 4] = [
        (pipe[0].as_fd(), "not a usable socket"),
        (udp.as_fd(), "not a Unix domain socket"),
        (dgram.as_fd(), "SOCK_STREAM or SOCK_SEQPACKET"),
        (listener.as_fd(), "not connected"),
    ];
    let base = fd_count();
    let invalid = ErrorKind::InvalidArgument;
    for (sock, words) in cases {
        let raw = sock.as_raw_fd();
        let msg = receive_fails(&ctx, &sock, &secs(1), invalid);
        assert!(msg.contains(words), "receive on {raw}: {msg}");
        let msg = fails_with(ipc::send_buffer(&buf, sock, &Options::default()), invalid);
        assert!(msg.contains(words), "send on {raw}: {msg}");
        let msg = fails_with(
            ipc::send(sock, &d, &[fd.as_fd()], &Options::default()),
            invalid,
        );
        assert!(msg.contains(words), "generic send on {raw}: {msg}");
        let msg = fails_with(ipc::receive(sock, &secs(1)), invalid);
        assert!(msg.contains(words), "generic receive on {raw}: {msg}");
    }
    assert_eq!(
        fd_count(),
        base,
        "the exported fds of the failed sends were closed"
    );
    // A usage the library does not support for shared buffers is refused.
    let (s0, s1) = pair(libc::SOCK_STREAM);
    ipc::send_buffer(&buf, s0.as_fd(), &Options::default()).unwrap();
    let e = ipc::receive_buffer(
        &ctx,
        s1.as_fd(),
        &secs(1),
        vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
    );
    let msg = fails_with(e, ErrorKind::Unsupported);
    has(&msg, &["SHADER_DEVICE_ADDRESS"]);
    // The generic receive times out on a quiet socket.
    let (_s2, s3) = pair(libc::SOCK_STREAM);
    fails_with(
        ipc::receive(s3.as_fd(), &opts(Duration::from_millis(1))),
        ErrorKind::Timeout,
    );
    assert!(fd_is_open(fd.as_raw_fd()));
}

// ---- semaphores, as far as lavapipe goes ---------------------------------------------

#[test]
fn semaphores_go_as_far_as_lavapipe_allows() {
    let _s = serial();
    let (buf, ctx) = one_buffer();
    let d = Description {
        object: Object::Semaphore {
            kind: Kind::Timeline,
            value: 5,
        },
        ..ipc::describe_buffer(&buf)
    };
    assert_eq!(d.kind(), ipc::Kind::Semaphore);
    // The record round trip.
    let rec = record(&d);
    assert_eq!(&rec[12..16], &[2, 0, 0, 0]);
    assert_eq!(&rec[48..56], &5u64.to_le_bytes());
    let back = Description::parse(&rec).unwrap();
    assert_eq!(back, d);
    let binary = Description {
        object: Object::Semaphore {
            kind: Kind::Binary,
            value: 5,
        },
        ..d
    };
    let msg = fails_with(binary.to_bytes(), ErrorKind::InvalidArgument);
    has(&msg, &["binary"]);

    // A stand-in payload: a regular file passes the checks that come before the
    // driver's import.
    let event =
        unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"payload".as_ptr(), libc::MFD_CLOEXEC)) };
    let not_a_semaphore = unsafe { OwnedFd::from_raw_fd(libc::eventfd(0, libc::EFD_CLOEXEC)) };
    let msg = fails_with(
        ipc::import_semaphore(&ctx, &d, not_a_semaphore.as_fd()),
        ErrorKind::InvalidArgument,
    );
    has(&msg, &["eventfd"]);
    // A regular file is never a semaphore payload: refused before any driver sees
    // it (NVIDIA's import of one was followed by failing allocations).
    let msg = fails_with(
        ipc::import_semaphore(&ctx, &d, event.as_fd()),
        ErrorKind::InvalidArgument,
    );
    has(&msg, &["regular file"]);
    assert!(fd_is_open(event.as_raw_fd()));
    // Another device's semaphore is refused before that.
    let mut other = d;
    other.device_uuid[15] ^= 1;
    fails_with(
        ipc::import_semaphore(&ctx, &other, event.as_fd()),
        ErrorKind::DeviceMismatch,
    );
    // Over a socket, with the generic send: received, parsed, checked, the import
    // refused, and the received fd closed.
    for ty in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
        let (s0, s1) = pair(ty);
        let base = fd_count();
        ipc::send(s0.as_fd(), &d, &[event.as_fd()], &Options::default()).unwrap();
        let msg = fails_with(
            ipc::receive_semaphore(&ctx, s1.as_fd(), &Options::default()),
            ErrorKind::InvalidArgument,
        );
        has(&msg, &["regular file"]);
        assert_eq!(fd_count(), base);
        // A semaphore description with two fds: the count is checked first.
        let two = [event.as_raw_fd(), event.as_raw_fd()];
        assert_eq!(send_with_fds(s0.as_raw_fd(), &rec, &two), 128);
        let msg = fails_with(
            ipc::receive_semaphore(&ctx, s1.as_fd(), &secs(1)),
            ErrorKind::InvalidArgument,
        );
        has(&msg, &["sent 2 file descriptor(s) with a semaphore"]);
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
    let level0 = color_range();
    v.image_barrier(cmd, layout_barrier(image, level0, from, to));
}

#[test]
fn images_are_described_sent_and_imported() {
    let _s = serial();
    let (va, vb) = (Dev::open(), Dev::open());
    let (w, h) = (64u32, 32u32);
    let desc = ImageDescription {
        usage: vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        ..ImageDescription::new_2d(vk::Format::R8G8B8A8_UNORM, w, h)
    };
    let im = Image::create(&va.ctx, &desc).unwrap();
    let bytes = (w * h * 4) as u64;
    // Device A writes a pattern.
    let stage = va.host_buffer(bytes);
    for (i, x) in stage.bytes().iter_mut().enumerate() {
        *x = pattern(i, 61);
    }
    va.run(|cmd| unsafe {
        image_barrier(
            &va,
            cmd,
            im.vk_image(),
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        );
        va.device.cmd_copy_buffer_to_image(
            cmd,
            stage.buffer,
            im.vk_image(),
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &[color_region(w, h)],
        );
        image_barrier(
            &va,
            cmd,
            im.vk_image(),
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::ImageLayout::GENERAL,
        );
    });
    va.destroy_host_buffer(stage);

    let (s0, s1) = pair(libc::SOCK_SEQPACKET);
    let base = fd_count();
    ipc::send_image(&im, s0.as_fd(), &Options::default()).unwrap();
    let (d, fds) = ipc::receive(s1.as_fd(), &Options::default()).unwrap();
    assert_eq!(d.kind(), ipc::Kind::Image);
    let Object::Image {
        desc: got,
        allocation_sizes,
        color,
    } = d.object
    else {
        panic!("{d:?}")
    };
    assert_eq!(allocation_sizes, [im.allocation_size(), 0, 0]);
    assert_eq!(&got, im.description());
    assert_eq!(
        (got.format, got.width, got.height, got.usage),
        (desc.format, w, h, desc.usage)
    );
    assert_eq!(color, None, "a single-plane image has no colour");
    assert_eq!(d, ipc::describe_image(&im));
    assert_eq!(d.fd_count(), 1);

    // Device B imports it from the description: a new VkImage on the fd's memory.
    let mut bad = d;
    bad.device_uuid[0] ^= 1;
    let handles = [fds[0].as_fd()];
    fails_with(
        ipc::import_image(&vb.ctx, &bad, &handles),
        ErrorKind::DeviceMismatch,
    );
    let imported = ipc::import_image(&vb.ctx, &d, &handles).unwrap();
    drop(fds);
    let image = imported.vk_image();
    assert_eq!(imported.allocation_size(), im.allocation_size());

    let out = vb.host_buffer(bytes);
    out.bytes().fill(0);
    vb.run(|cmd| unsafe {
        image_barrier(
            &vb,
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
            &[color_region(w, h)],
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
    drop(imported);
    assert_eq!(fd_count(), base, "the received fd went with the memory");
    // And over the socket in one call.
    ipc::send_image(&im, s0.as_fd(), &Options::default()).unwrap();
    let received = ipc::receive_image(&vb.ctx, s1.as_fd(), &Options::default()).unwrap();
    assert_eq!(received.description(), im.description());
    drop(received);
    assert_eq!(fd_count(), base);
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
    let live = live_counts();
    let cu = Cuda::of_context(&ctx);
    let buf = Buffer::create(&ctx, GPU_SIZE as u64, none(), Allocator::Cuda).unwrap();
    let ptr_a = buf.cuda_ptr().unwrap();
    cu.write(ptr_a, &pattern_bytes(GPU_SIZE, 71));
    let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None).unwrap();
    let sd = ipc::describe_semaphore(&sem).unwrap();
    assert_eq!(sd.kind(), ipc::Kind::Semaphore);

    let dir = TempDir::new("gpu");
    let path = dir.0.join("sock");
    let listener = UnixListener::bind(&path).unwrap();
    let child = spawn_child("child_gpu_peer", &path, &[]);
    let conn = accept(&listener, Duration::from_secs(60));
    ipc::send_buffer(&buf, conn.as_fd(), &secs(60)).unwrap();
    ipc::send_semaphore(&sem, conn.as_fd(), &secs(60)).unwrap();
    // Value 1: the data is there. The child checks it with CUDA and Vulkan, writes
    // pattern 72 with CUDA and signals 2 on a CUDA stream.
    sem.host_signal(1).unwrap();
    sem.host_wait(2, Duration::from_secs(60)).unwrap();
    let back = cu.read(ptr_a, GPU_SIZE);
    assert_eq!(
        count_bad(&back, 72),
        0,
        "the child's CUDA writes, read here"
    );
    drop(conn);
    finish_child("child_gpu_peer", child);
    drop((sem, buf));
    assert_eq!(live_counts(), live, "the parent's objects, dropped");
}

#[test]
#[ignore = "run by gpu_buffer_and_timeline_cross_processes in a child process"]
fn child_gpu_peer() {
    let Some(path) = child_socket() else { return };
    let ctx = cuda_context_or_skip("child_gpu_peer").expect("the parent has a GPU");
    let live = live_counts();
    let v = Vk::of(&ctx);
    let cu = Cuda::of_context(&ctx);
    let conn = connect_retry(&path);
    let b = ipc::receive_buffer(&ctx, conn.as_fd(), &secs(60), none()).unwrap();
    let s = ipc::receive_semaphore(&ctx, conn.as_fd(), &secs(60)).unwrap();
    assert_eq!(b.layout().allocator, Allocator::Cuda);
    assert_eq!(b.layout().size, GPU_SIZE as u64);
    s.host_wait(1, Duration::from_secs(60)).unwrap();
    let p = b.cuda_ptr().unwrap();
    let seen = cu.read(p, GPU_SIZE);
    assert_eq!(
        count_bad(&seen, 71),
        0,
        "the parent's data through CUDA here"
    );
    assert_eq!(
        v.pattern_mismatches(b.vk_buffer(), GPU_SIZE as u64, 71),
        0,
        "the parent's data through Vulkan here"
    );
    cu.write(p, &pattern_bytes(GPU_SIZE, 72));
    s.cuda_signal(2, ptr::null_mut()).unwrap();
    cu.synchronize();
    println!("child: checked {GPU_SIZE} bytes through CUDA and Vulkan, wrote and signalled 2");
    drop((s, b, v));
    // The imports (Vulkan and CUDA views of the memory, the semaphore's) are gone.
    assert_eq!(live_counts(), live, "the child's imports, dropped");
}

/// Sends `d` serialized with `fd` on a fresh socket pair and receives an image,
/// expecting `want`; no received fd is left open. Returns the message.
#[track_caller]
fn image_refused_message(ctx: &Arc<Context>, d: &Description, fd: i32, want: ErrorKind) -> String {
    let (s0, s1) = pair(libc::SOCK_STREAM);
    let base = fd_count();
    let bytes = record(d);
    assert_eq!(
        send_with_fds(s0.as_raw_fd(), &bytes, &[fd]),
        bytes.len() as isize
    );
    let msg = fails_with(ipc::receive_image(ctx, s1.as_fd(), &secs(1)), want);
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
    let invalid = ErrorKind::InvalidArgument;

    // Buffers. lavapipe does not make them dedicated: the import says it is.
    let buf = Buffer::create(&ctx, 65536 + 3, none(), Allocator::Vulkan).unwrap();
    let bl = buf.layout();
    let fd = buf.export_fd().unwrap();
    let dedicated = Layout {
        dedicated: true,
        ..bl
    };
    let d = |l: Layout| Description {
        object: Object::Buffer(l),
        ..ipc::describe_buffer(&buf)
    };
    let all_paths = |l: Layout| {
        let msg = fails_with(Buffer::import_fd(&ctx, fd.as_fd(), l, none()), invalid);
        let msg2 = fails_with(ipc::import_buffer(&ctx, &d(l), fd.as_fd(), none()), invalid);
        let msg3 = refused_message(&ctx, STREAM, &record(&d(l)), &[fd.as_raw_fd()], invalid);
        assert!(fd_is_open(fd.as_raw_fd()));
        [msg, msg2, msg3]
    };
    for extra in [16u64, 4096] {
        let wrong = bl.allocation_size + extra;
        let ms = all_paths(Layout {
            allocation_size: wrong,
            ..dedicated
        });
        assert!(ms[0].contains(&wrong.to_string()), "{}", ms[0]);
        for m in &ms {
            assert!(
                m.contains("VUID-VkMemoryDedicatedAllocateInfo-buffer-01435")
                    || m.contains("larger than the memory object's real size"),
                "{m}"
            );
        }
    }
    // The allocation's size, but a 1-byte buffer: not what a dedicated allocation
    // of it would be.
    for m in all_paths(Layout {
        size: 1,
        ..dedicated
    }) {
        assert!(
            m.contains(&format!(
                "allocation_size {} differs from the ",
                bl.allocation_size
            )) && m.contains(" bytes a buffer of 1 bytes needs")
                && m.contains("VUID-VkMemoryDedicatedAllocateInfo-buffer-01435"),
            "{m}"
        );
    }
    // Dedicated memory is bound at offset 0.
    let msg = fails_with(
        Buffer::import_fd(
            &ctx,
            fd.as_fd(),
            Layout {
                offset: 256,
                size: bl.size - 256,
                ..dedicated
            },
            none(),
        ),
        invalid,
    );
    has(&msg, &["offset 0"]);
    // The right size imports.
    let good = Buffer::import_fd(&ctx, fd.as_fd(), dedicated, none()).unwrap();
    assert!(good.layout().dedicated);
    drop((good, fd, buf));

    // Images: always one dedicated allocation.
    let desc = ImageDescription::new_2d(vk::Format::R8G8B8A8_UNORM, 64, 48);
    let im = Image::create(&ctx, &desc).unwrap();
    let d = ipc::describe_image(&im);
    let fd = im.export_fd().unwrap();
    let Object::Image {
        desc: idesc,
        allocation_sizes,
        color,
    } = d.object
    else {
        panic!("{d:?}")
    };
    let with = |desc: ImageDescription, size: u64| Description {
        object: Object::Image {
            desc,
            allocation_sizes: [size, 0, 0],
            color,
        },
        ..d
    };
    for extra in [16u64, 4096] {
        let wrong = allocation_sizes[0] + extra;
        let bad = with(idesc, wrong);
        let msg = fails_with(ipc::import_image(&ctx, &bad, &[fd.as_fd()]), invalid);
        assert!(fd_is_open(fd.as_raw_fd()));
        has(&msg, &[&wrong.to_string()]);
        let msg2 = image_refused_message(&ctx, &bad, fd.as_raw_fd(), invalid);
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
        let one = ImageDescription {
            width: 1,
            height: 1,
            mip_levels: 1,
            ..idesc
        };
        let bad = with(one, allocation_sizes[0]);
        let msg = fails_with(ipc::import_image(&ctx, &bad, &[fd.as_fd()]), invalid);
        assert!(fd_is_open(fd.as_raw_fd()));
        let msg2 = image_refused_message(&ctx, &bad, fd.as_raw_fd(), invalid);
        for m in [&msg, &msg2] {
            assert!(
                m.contains(&format!(
                    "allocation_size {} differs from the ",
                    allocation_sizes[0]
                )) && m.contains("VUID-VkMemoryDedicatedAllocateInfo-image-01433"),
                "{m}"
            );
        }
    }
    let good = ipc::import_image(&ctx, &d, &[fd.as_fd()]).unwrap();
    assert_eq!(good.allocation_size(), allocation_sizes[0]);
    drop((good, fd, im));
    assert_eq!(fd_count(), fds, "no fd leaked");
    assert_eq!(live_tuple(&live_objects()), live_tuple(&objects));
}
