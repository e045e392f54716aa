//! Cross-process sharing at the C door: who owns a descriptor number after each C
//! call (`vkcuda_share_send` leaves it to the caller, `vkcuda_share_receive` hands
//! one to the caller, close-on-exec; an import from a description takes it on
//! success and leaves it on failure), and one success of
//! `vkcuda_share_description_parse` and `_serialize`. The behaviour behind them
//! (sockets, peers, records, refusals) is tests/ipc.rs's, through the Rust API;
//! every argument of every share function is the misuse matrix's
//! (capi/tests/misuse/share.rs).

mod support;
use support::*;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;

use ash::vk;

fn pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [-1; 2];
    let ty = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    assert_eq!(
        unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) },
        0
    );
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Sends `d` with `fd` and receives it: the received description and descriptor
/// number, which the caller owns, close-on-exec.
fn send_and_receive(d: &vkcuda_share_description, fd: i32) -> (vkcuda_share_description, i32) {
    let (s0, s1) = pair();
    let base = fd_count();
    ok(unsafe { vkcuda_share_send(s0.as_raw_fd(), d, fd, ptr::null()) });
    assert!(fd_is_open(fd), "the sender keeps its fd");
    let mut got: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let mut gfd = -1;
    ok(unsafe { vkcuda_share_receive(s1.as_raw_fd(), ptr::null(), &mut got, &mut gfd) });
    assert_eq!(fd_count(), base + 1, "the caller owns the received fd");
    assert_eq!(record(&got), record(d));
    let flags = unsafe { libc::fcntl(gfd, libc::F_GETFD) };
    assert_eq!(
        flags & libc::FD_CLOEXEC,
        libc::FD_CLOEXEC,
        "MSG_CMSG_CLOEXEC"
    );
    (got, gfd)
}

/// A buffer and an image cross a socket with the generic C calls; a refused
/// import leaves the received fd to the caller, a successful one takes it.
#[test]
fn share_send_and_receive_in_c_hand_the_fd_to_the_caller() {
    let _s = serial();
    let two = TwoDevices::open();
    let b = create_buffer(two.a, 12345, 0);
    two.va.fill_pattern(buffer_info(b).buffer, 12345, 47);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_describe(b, &mut d) });
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(b, &mut fd) });
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let base = fd_count();
    let (got, gfd) = send_and_receive(&d, fd.as_raw_fd());
    let mut other = got;
    other.device_uuid[0] ^= 0xff;
    let mut r = 1usize as *mut vkcuda_buffer;
    let msg = fails(
        unsafe { vkcuda_buffer_import_description(two.b, &other, gfd, 0, &mut r) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(msg.contains("UUID"), "{msg}");
    assert!(r.is_null());
    assert!(fd_is_open(gfd), "a refused import leaves the fd alone");
    ok(unsafe { vkcuda_buffer_import_description(two.b, &got, gfd, 0, &mut r) });
    assert!(!fd_is_open(gfd), "the import took the fd");
    assert_eq!(fd_count(), base);
    let ri = buffer_info(r);
    assert_eq!(two.vb.pattern_mismatches(ri.buffer, ri.size, 47), 0);
    unsafe {
        vkcuda_buffer_destroy(r);
        vkcuda_buffer_destroy(b);
    }

    let info = image_desc(0, vk::Format::R8G8B8A8_UNORM, 64, 32, 1);
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(two.a, &info, &mut im) });
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_image_describe(im, &mut d) });
    let mut raw = -1;
    ok(unsafe { vkcuda_image_export_fd(im, &mut raw) });
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let base = fd_count();
    let (got, gfd) = send_and_receive(&d, fd.as_raw_fd());
    let mut bad = got;
    bad.device_uuid[0] ^= 1;
    let mut imported = 1usize as *mut vkcuda_image;
    fails(
        unsafe { vkcuda_image_import_description(two.b, &bad, gfd, &mut imported) },
        VKCUDA_ERROR_DEVICE_MISMATCH,
    );
    assert!(imported.is_null() && fd_is_open(gfd));
    ok(unsafe { vkcuda_image_import_description(two.b, &got, gfd, &mut imported) });
    assert!(!fd_is_open(gfd), "the import took the fd");
    assert_eq!(
        image_info(imported).allocation_size,
        image_info(im).allocation_size
    );
    unsafe { vkcuda_image_destroy(imported) };
    assert_eq!(fd_count(), base, "the received fd went with the memory");
    unsafe { vkcuda_image_destroy(im) };
}

/// The one success case of serialize and parse: a record parses back into the
/// same description. (Their refusals: misuse/share.rs, the `serialize`/`parse`
/// rows and the description mutations; the words: tests/ipc.rs
/// `unknown_versions_magic_and_kinds_are_refused` and src/ipc/description.rs.)
#[test]
fn share_description_parse_and_serialize_in_c() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let b = create_buffer(ctx, 4096, 0);
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_buffer_describe(b, &mut d) });
    let rec = record(&d);
    let mut back: vkcuda_share_description = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_share_description_parse(rec.as_ptr(), 128, &mut back) });
    assert_eq!(record(&back), rec);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
    }
}
