//! Messages that point at the right cause, and "untouched on failure" (issue 21
//! items 6-8), on lavapipe with Vulkan-only contexts:
//! - a receive in a process with no free descriptor says so (OUT_OF_MEMORY, the
//!   code of EMFILE), instead of blaming the peer;
//! - a record with an image format outside the table is INVALID_ARGUMENT in
//!   parse, the code the header documents (serialize: misuse/share.rs's
//!   `.format` description mutations, INVALID_ARGUMENT too);
//! - cuda_array_flags is 0 where there is no CUDA view;
//! - a failed import leaves the caller's fd as it was, its file offset included;
//! - a memfd whose driver header is forged (data past the end of the file, a
//!   mapping larger than the file, unsealed) is refused before the driver maps it;
//! - after a refused import the same fd imports and the message is cleared (that a
//!   success clears the message and another thread's stays: misuse/library.rs; the
//!   fds and live objects after every failure: the misuse matrix's runner);
//! - every C call on an object of a lost device is refused at the door with
//!   DEVICE_LOST naming the first error, outputs untouched
//!   (`c_calls_on_a_lost_device_are_refused`; the loss itself through the Rust
//!   API: tests/faults.rs).

mod support;

use std::ffi::CString;
use std::os::fd::RawFd;
use std::ptr;

use ash::vk;
use support::*;

fn buffer_fd(buf: *const vkcuda_buffer) -> RawFd {
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(buf, &mut fd) });
    fd
}

fn offset_of(fd: RawFd) -> i64 {
    unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) }
}

/// A memfd of `len` bytes starting with `header`, sealed like lavapipe's exports
/// unless `seal` is false.
fn memfd(len: usize, header: &[u8], seal: bool) -> RawFd {
    let name = CString::new("vkcuda-test").unwrap();
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    assert!(fd >= 0);
    assert_eq!(unsafe { libc::ftruncate(fd, len as i64) }, 0);
    let n = unsafe { libc::pwrite(fd, header.as_ptr().cast(), header.len(), 0) };
    assert_eq!(n as usize, header.len());
    if seal {
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) }, 0);
    }
    fd
}

/// Mesa's memory header (util/os_memory_fd.c): mapping size, data offset, a driver
/// hash; 32 bytes on 64-bit.
fn header(size: u64, offset: u64, uuid: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&size.to_ne_bytes());
    h.extend_from_slice(&offset.to_ne_bytes());
    h.extend_from_slice(&uuid[..16]);
    h
}

fn import_info(allocation_size: u64, size: u64) -> vkcuda_buffer_import_info {
    vkcuda_buffer_import_info {
        flags: 0,
        allocator: vkcuda_allocator_raw(0),
        allocation_size,
        offset: 0,
        size,
        dedicated: 0,
        usage: 0,
    }
}

#[test]
fn a_receive_without_free_descriptors_blames_the_fd_limit() {
    // Lowers the process's fd limit: every test of this file holds `serial()`.
    let _s = serial();
    let ctx = vulkan_only_context();
    let buf = create_buffer(ctx, 4096, 0);
    let mut sv = [-1; 2];
    assert_eq!(
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                sv.as_mut_ptr(),
            )
        },
        0
    );
    ok(unsafe { vkcuda_buffer_send(buf, sv[0], ptr::null()) });
    // No descriptor can be installed: the limit is the lowest free number.
    let lowest_free = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0) };
    unsafe { libc::close(lowest_free) };
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
    let low = libc::rlimit {
        rlim_cur: lowest_free as u64,
        rlim_max: old.rlim_max,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
    let mut got = ptr::null_mut();
    let r = unsafe { vkcuda_buffer_receive(ctx, sv[1], ptr::null(), &mut got) };
    let msg = last_error();
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) }, 0);
    assert_eq!(r, VKCUDA_ERROR_OUT_OF_MEMORY, "{msg}");
    assert!(got.is_null());
    assert!(
        msg.contains("could not take the peer's file descriptors"),
        "{msg}"
    );
    assert!(msg.contains("RLIMIT_NOFILE"), "{msg}");
    unsafe {
        libc::close(sv[0]);
        libc::close(sv[1]);
        vkcuda_buffer_destroy(buf);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
fn a_description_with_a_format_outside_the_table_is_an_invalid_argument() {
    let _s = serial();
    let mut d: vkcuda_share_description = unsafe { std::mem::zeroed() };
    d.kind = vkcuda_share_kind_raw(3);
    d.image.description.image_type = vkcuda_image_type_raw(0);
    d.image.description.format = vk::Format::R8G8B8A8_UNORM.as_raw();
    d.image.description.extent = vk::Extent3D {
        width: 8,
        height: 8,
        depth: 1,
    };
    d.image.description.mip_levels = 1;
    d.image.description.array_layers = 1;
    d.image.description.usage = vk::ImageUsageFlags::TRANSFER_DST.as_raw();
    d.image.allocation_size = 65536;
    let size = VKCUDA_SHARE_DESCRIPTION_SIZE as usize;
    let mut bytes = vec![0u8; size];
    ok(unsafe { vkcuda_share_description_serialize(&d, bytes.as_mut_ptr(), size) });
    // A 3-channel format (no CUDA array holds it, so the library never shares it)
    // patched into a valid record (image fields start at byte 40: the type, then
    // the VkFormat).
    let rgb = vk::Format::R8G8B8_UNORM.as_raw();
    bytes[44..48].copy_from_slice(&(rgb as u32).to_le_bytes());
    let mut out: vkcuda_share_description = unsafe { std::mem::zeroed() };
    let msg = fails(
        unsafe { vkcuda_share_description_parse(bytes.as_ptr(), size, &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("VK_FORMAT_R8G8B8_UNORM"), "{msg}");
}

#[test]
fn cuda_array_flags_are_zero_without_a_cuda_view() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let info = vkcuda_image_create_info {
        mip_levels: 1,
        array_layers: 1,
        ..image_desc(0, vk::Format::R8G8B8A8_UNORM, 16, 16, 1)
    };
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(ctx, &info, &mut im) });
    let mut i = std::mem::MaybeUninit::<vkcuda_image_info>::uninit();
    ok(unsafe { vkcuda_image_get_info(im, i.as_mut_ptr()) });
    let i = unsafe { i.assume_init() };
    assert!(i.cuda_mipmapped_array.is_null());
    assert_eq!(i.cuda_array_flags, 0);
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
fn a_failed_import_leaves_the_callers_fd_and_its_offset_as_they_were() {
    let _s = serial();
    let ctx = vulkan_only_context();
    // A memfd that passes every check the library can make (sealed, a header whose
    // sizes agree with the file) but is not the driver's (its driver hash is
    // wrong): lavapipe reads its header through the shared file description, then
    // refuses it.
    let len = 65536usize;
    let fd = memfd(len, &header(len as u64, 4096, &[0x42; 16]), true);
    assert_eq!(unsafe { libc::lseek(fd, 100, libc::SEEK_SET) }, 100);
    let mut b = ptr::null_mut();
    let r = unsafe { vkcuda_buffer_import_fd(ctx, &import_info(4096, 4096), fd, &mut b) };
    assert_ne!(
        r, VKCUDA_SUCCESS,
        "a memfd the driver did not make was imported"
    );
    assert!(b.is_null());
    assert!(fd_is_open(fd), "the caller's fd was closed on failure");
    assert_eq!(offset_of(fd), 100, "the caller's file offset moved");
    unsafe { libc::close(fd) };
    // A real export refused (a size past its allocation) keeps its fd too, and the
    // same fd then imports, clearing the message; its offset is irrelevant then
    // (the fd is taken).
    let src = create_buffer(ctx, 4096, 0);
    let fd = buffer_fd(src);
    let info = buffer_info(src);
    let past = import_info(info.allocation_size, info.allocation_size + 1);
    let r = unsafe { vkcuda_buffer_import_fd(ctx, &past, fd, &mut b) };
    fails(r, VKCUDA_ERROR_INVALID_ARGUMENT);
    assert!(b.is_null() && fd_is_open(fd));
    ok(unsafe {
        vkcuda_buffer_import_fd(ctx, &import_info(info.allocation_size, 4096), fd, &mut b)
    });
    assert_eq!(last_error(), "");
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_buffer_destroy(src);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
fn a_forged_memfd_header_is_refused_before_the_driver_maps_it() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let src = create_buffer(ctx, 4096, 0);
    let fd = buffer_fd(src);
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        println!("SKIPPED: this driver's exports are not memfds (nothing to forge)");
        unsafe {
            libc::close(fd);
            vkcuda_buffer_destroy(src);
            vkcuda_context_destroy(ctx);
        }
        return;
    }
    let mut real = [0u8; 32];
    assert_eq!(
        unsafe { libc::pread(fd, real.as_mut_ptr().cast(), 32, 0) },
        32
    );
    unsafe { libc::close(fd) };
    let len = st.st_size as u64;
    let size = u64::from_ne_bytes(real[..8].try_into().unwrap());
    let offset = u64::from_ne_bytes(real[8..16].try_into().unwrap());
    assert_eq!(size, len, "lavapipe's header maps the whole file");
    let want = buffer_info(src).allocation_size;
    let cases: [(&str, Vec<u8>, bool, &str); 4] = [
        (
            "data past the end",
            header(size, len + 4096, &real[16..]),
            true,
            "forged or damaged",
        ),
        (
            "mapping larger than the file",
            header(size * 4, offset, &real[16..]),
            true,
            "forged or damaged",
        ),
        // A header that describes less than the import needs: the allocation's
        // size the library reads from the header (the payload less the driver's
        // own bytes) is smaller than the import's.
        (
            "less data than the import",
            header(size, size - 16, &real[16..]),
            true,
            "is larger than the memory object's real size 0",
        ),
        (
            "not sealed",
            real.to_vec(),
            false,
            "not sealed against shrinking",
        ),
    ];
    for (what, h, seal, expect) in cases {
        let fd = memfd(len as usize, &h, seal);
        let mut b = ptr::null_mut();
        let msg = fails(
            unsafe { vkcuda_buffer_import_fd(ctx, &import_info(want, 4096), fd, &mut b) },
            VKCUDA_ERROR_INVALID_ARGUMENT,
        );
        assert!(msg.contains(expect), "{what}: {msg}");
        assert!(fd_is_open(fd), "{what}: the fd was closed");
        unsafe { libc::close(fd) };
    }
    unsafe {
        vkcuda_buffer_destroy(src);
        vkcuda_context_destroy(ctx);
    }
}

// --- What a receiver of a memfd-backed export (lavapipe) is and is not protected
// against (issue 29, item 9; docs/CROSS_PROCESS.md, "What a receiver is protected
// against"). Before the import: a header already forged is refused (above). After
// it: the peer cannot resize the file (sealed) but can write the data, as shared
// memory allows, and the header too: Mesa reads the header at the import, and
// again at vkFreeMemory, where the size it finds there is what it unmaps
// (util/os_memory_fd.c, os_free_fd): a peer decides what the receiver's free
// unmaps. Between the check and the driver's read of the header at the import
// there is a window the library cannot close: `memfd_header_race_kills_only_the_receiver`.

/// A receiver's Vulkan copy of `len` bytes of `b` from `offset`.
fn vulkan_bytes(v: &Vk, b: *const vkcuda_buffer, offset: u64, len: u64) -> Vec<u8> {
    let info = buffer_info(b);
    let host = v.host_buffer(len);
    v.run(|cmd| unsafe {
        v.device.cmd_copy_buffer(
            cmd,
            info.buffer,
            host.buffer,
            &[vk::BufferCopy::default().src_offset(offset).size(len)],
        )
    });
    let out = host.bytes().to_vec();
    v.destroy_host_buffer(host);
    out
}

/// A sender's memfd-backed export: its 64 KiB buffer, the peer's fd of the file, the
/// header as written (`size` and `offset`: its first two words), the file's length
/// and the allocation size an import states.
struct Export {
    src: *mut vkcuda_buffer,
    peer: RawFd,
    real: [u8; 32],
    size: u64,
    offset: u64,
    len: u64,
    want: u64,
}

impl Export {
    /// An import into `ctx` of a new duplicate of the peer's fd.
    fn import(&self, ctx: *const vkcuda_context) -> *mut vkcuda_buffer {
        let fd = unsafe { libc::dup(self.peer) };
        let mut b = ptr::null_mut();
        ok(unsafe { vkcuda_buffer_import_fd(ctx, &import_info(self.want, 65536), fd, &mut b) });
        b
    }
}

/// The export of a new buffer of `ctx`, or None (after saying so, `ctx` destroyed)
/// when this driver's exports are not memfds.
fn memfd_export(ctx: *mut vkcuda_context) -> Option<Export> {
    let src = create_buffer(ctx, 65536, 0);
    let fd = buffer_fd(src);
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        println!("SKIPPED: this driver's exports are not memfds (NVIDIA: opaque fds the driver validates)");
        unsafe {
            libc::close(fd);
            vkcuda_buffer_destroy(src);
            vkcuda_context_destroy(ctx);
        }
        return None;
    }
    let mut real = [0u8; 32];
    assert_eq!(
        unsafe { libc::pread(fd, real.as_mut_ptr().cast(), 32, 0) },
        32
    );
    let word = |i: usize| u64::from_ne_bytes(real[i..i + 8].try_into().unwrap());
    Some(Export {
        src,
        peer: fd,
        size: word(0),
        offset: word(8),
        real,
        len: st.st_size as u64,
        want: buffer_info(src).allocation_size,
    })
}

#[test]
fn after_the_import_a_peer_can_write_the_data_but_not_resize_the_file() {
    let _s = serial();
    let sender = vulkan_only_context();
    let Some(e) = memfd_export(sender) else {
        return;
    };
    let (src, peer, real, size, offset, len, want) =
        (e.src, e.peer, e.real, e.size, e.offset, e.len, e.want);
    let receiver = vulkan_only_context();
    let b = e.import(receiver);
    let v = Vk::new(receiver);

    // The peer (holding the same file) cannot shrink or grow it: sealed.
    for to in [4096, len * 2] {
        let r = unsafe { libc::ftruncate(peer, to as i64) };
        let errno = std::io::Error::last_os_error().raw_os_error();
        assert_eq!((r, errno), (-1, Some(libc::EPERM)), "ftruncate to {to}");
    }
    println!("the peer's ftruncate (shrink and grow): EPERM, the file is sealed");

    // It rewrites the header into one the pre-import check refuses: the imported
    // mapping stays as the driver made it; the receiver's whole buffer works.
    let forged = header(size + (1 << 20), size, &real[16..]);
    assert_eq!(
        unsafe { libc::pwrite(peer, forged.as_ptr().cast(), forged.len(), 0) },
        32
    );
    // It writes the data: the receiver sees it (shared memory, by design).
    let data: Vec<u8> = (0..65536).map(|i| pattern(i, 91)).collect();
    assert_eq!(
        unsafe { libc::pwrite(peer, data.as_ptr().cast(), data.len(), offset as i64) },
        65536
    );
    assert_eq!(
        vulkan_bytes(&v, b, 0, 65536),
        data,
        "the peer's data, every byte"
    );
    println!(
        "after a header rewrite the receiver's buffer reads all 65536 bytes of the peer's data"
    );

    // A new import of the rewritten file is refused before the driver maps it.
    let fd = unsafe { libc::dup(peer) };
    let mut again = ptr::null_mut();
    let msg = fails(
        unsafe { vkcuda_buffer_import_fd(receiver, &import_info(want, 65536), fd, &mut again) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("forged or damaged"), "{msg}");
    unsafe { libc::close(fd) };

    // The real header back before the frees, which read it
    // (`a_peer_rewriting_the_header_decides_what_the_receivers_free_unmaps`).
    assert_eq!(
        unsafe { libc::pwrite(peer, real.as_ptr().cast(), 32, 0) },
        32
    );
    drop(v);
    unsafe {
        libc::close(peer);
        vkcuda_buffer_destroy(b);
        vkcuda_buffer_destroy(src);
        vkcuda_context_destroy(receiver);
        vkcuda_context_destroy(sender);
    }
}

/// Bytes of this process's address space mapped from the file of inode `ino`
/// (/proc/self/maps), with the first such range.
fn mapped_from(ino: u64) -> (u64, Option<(u64, u64)>) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut total = 0;
    let mut ranges = Vec::new();
    for l in maps.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 5 && f[4].parse::<u64>().ok() == Some(ino) {
            let (a, b) = f[0].split_once('-').unwrap();
            let (a, b) = (
                u64::from_str_radix(a, 16).unwrap(),
                u64::from_str_radix(b, 16).unwrap(),
            );
            total += b - a;
            ranges.push((a, b));
        }
    }
    (total, ranges.first().copied())
}

/// The part of a memfd receiver that nothing protects: Mesa's vkFreeMemory
/// unmaps the size written in the shared header (and finds the header through a
/// word just before the data, shared too). A peer that rewrites the size after the
/// import decides what the receiver unmaps: here a smaller size leaves most of the
/// mapping behind (harmless, and measurable); a larger one unmaps the receiver's
/// memory next to the mapping (seen: a later free in the process crashed with
/// SIGSEGV). Deterministic: no race, one rewrite after the import.
#[test]
fn a_peer_rewriting_the_header_decides_what_the_receivers_free_unmaps() {
    let _s = serial();
    let sender = vulkan_only_context();
    let Some(e) = memfd_export(sender) else {
        return;
    };
    let (src, peer, real, offset, len) = (e.src, e.peer, e.real, e.offset, e.len);
    let receiver = vulkan_only_context();
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::fstat(peer, &mut st) }, 0);
    let ino = st.st_ino;
    let (before, _) = mapped_from(ino);
    let b = e.import(receiver);
    let (imported, _) = mapped_from(ino);
    let pages = len.div_ceil(4096) * 4096;
    assert_eq!(imported - before, pages, "the import maps the whole file");

    // The peer writes a size of one page into the header; the receiver destroys.
    let small = header(4096, offset, &real[16..]);
    assert_eq!(
        unsafe { libc::pwrite(peer, small.as_ptr().cast(), 32, 0) },
        32
    );
    unsafe { vkcuda_buffer_destroy(b) };
    let (after, _) = mapped_from(ino);
    println!(
        "receiver: the import mapped {pages} bytes; after the peer wrote size 4096 into the header \
         its destroy unmapped {} and left {} mapped",
        imported - after,
        after - before
    );
    assert_eq!(
        after - before,
        pages - 4096,
        "the receiver's free unmapped what the peer's header said, not what it mapped"
    );

    // Clean up: the real header back for the sender's free, then unmap the
    // receiver's leftover (the only mapping of the file once the sender is gone).
    assert_eq!(
        unsafe { libc::pwrite(peer, real.as_ptr().cast(), 32, 0) },
        32
    );
    unsafe {
        libc::close(peer);
        vkcuda_buffer_destroy(src);
        vkcuda_context_destroy(receiver);
        vkcuda_context_destroy(sender);
    }
    let (left, range) = mapped_from(ino);
    if let Some((a, b)) = range {
        // Only the receiver's leftover is still mapped now: unmap it.
        assert_eq!(left, pages - 4096, "only the leftover");
        assert_eq!(
            unsafe { libc::munmap(a as *mut libc::c_void, (b - a) as usize) },
            0
        );
    }
}

const RACE_FD_ENV: &str = "VKCUDA_TEST_RACE_FD";
const RACE_SIZE_ENV: &str = "VKCUDA_TEST_RACE_ALLOCATION";

/// The window the library cannot close: between its check of the header (pread)
/// and the driver's read of it inside vkAllocateMemory, a peer that rewrites the
/// header (here: a mapping 1 MiB larger than the file, data at its old end) makes
/// lavapipe map past the end of the file, and the receiver's first access there
/// is SIGBUS. This process is the peer, flipping the header between the real one
/// and the forged one; a child imports and reads the buffer's last bytes in a loop.
/// What is asserted: the outcome is confined to the receiver (it exits or dies of
/// SIGBUS/SIGSEGV; the peer and its own buffer are unaffected). Whether the race
/// is won in a given run is timing: hence ignored, with the outcome printed.
#[test]
#[ignore = "nondeterministic: races a header rewrite against imports in a child process; run by hand with --ignored --exact memfd_header_race_kills_only_the_receiver"]
fn memfd_header_race_kills_only_the_receiver() {
    use std::os::unix::process::ExitStatusExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let _s = serial();
    let ctx = vulkan_only_context();
    let Some(Export {
        src,
        peer,
        real,
        size,
        want,
        ..
    }) = memfd_export(ctx)
    else {
        return;
    };
    let forged = header(size + (1 << 20), size, &real[16..]);
    unsafe { libc::fcntl(peer, libc::F_SETFD, 0) };
    let child = this_test("child_memfd_race_receiver", true)
        .env(CHILD_ENV, "1")
        .env(RACE_FD_ENV, peer.to_string())
        .env(RACE_SIZE_ENV, want.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let (forged, real) = (forged.clone(), real);
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for h in [&forged[..], &real[..]] {
                    unsafe { libc::pwrite(peer, h.as_ptr().cast(), h.len(), 0) };
                }
                flips += 1;
            }
            flips
        })
    };
    let out = child.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    unsafe { libc::pwrite(peer, real.as_ptr().cast(), 32, 0) };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = match (out.status.code(), out.status.signal()) {
        (Some(0), _) => "the receiver finished: the race was not won this run".to_string(),
        (_, Some(s)) if s == libc::SIGBUS || s == libc::SIGSEGV => {
            format!("the receiver died of signal {s} (SIGBUS 7, SIGSEGV 11): the race was won")
        }
        other => panic!("the receiver ended otherwise ({other:?}):\n{text}"),
    };
    println!(
        "---- receiver ----\n{text}---- end ----\n{flips} header flips by the peer; {outcome}"
    );
    // The peer is untouched: its buffer works and its header is its own again.
    let v = Vk::new(ctx);
    assert_eq!(vulkan_bytes(&v, src, 0, 16).len(), 16);
    drop(v);
    unsafe {
        libc::close(peer);
        vkcuda_buffer_destroy(src);
        vkcuda_context_destroy(ctx);
    }
}

#[test]
#[ignore = "runs in a child process of memfd_header_race_kills_only_the_receiver"]
fn child_memfd_race_receiver() {
    if !in_child("child_memfd_race_receiver") {
        return;
    }
    let fd: RawFd = std::env::var(RACE_FD_ENV).unwrap().parse().unwrap();
    let want: u64 = std::env::var(RACE_SIZE_ENV).unwrap().parse().unwrap();
    let v = OneDevice::open();
    let ctx = v.ctx;
    let (mut imported, mut refused) = (0, 0);
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(10) && imported + refused < 2000 {
        let dup = unsafe { libc::dup(fd) };
        let mut b = ptr::null_mut();
        let r = unsafe { vkcuda_buffer_import_fd(ctx, &import_info(want, 65536), dup, &mut b) };
        if r != VKCUDA_SUCCESS {
            refused += 1;
            unsafe { libc::close(dup) };
            continue;
        }
        imported += 1;
        // The buffer's last bytes: past the end of the file if the driver read a forged header.
        let _ = vulkan_bytes(&v, b, 65536 - 16, 16);
        unsafe { vkcuda_buffer_destroy(b) };
    }
    println!(
        "child: {imported} imports read to their end, {refused} refused by the pre-import check"
    );
}

// --- The C door on a lost device (the loss itself: tests/faults.rs).

/// The C door works normally: a small buffer and image, made, exported, destroyed.
#[track_caller]
fn still_usable(ctx: *const vkcuda_context) {
    let b = create_buffer(ctx, 4096, 0);
    unsafe { libc::close(buffer_fd(b)) };
    let info = vkcuda_image_create_info {
        mip_levels: 1,
        array_layers: 1,
        ..image_desc(0, vk::Format::R32G32B32A32_SFLOAT, 16, 16, 1)
    };
    let mut im = ptr::null_mut();
    ok(unsafe { vkcuda_image_create(ctx, &info, &mut im) });
    unsafe {
        vkcuda_image_destroy(im);
        vkcuda_buffer_destroy(b);
    }
}

/// A lost VkDevice (recorded with `vkcuda::fault_injection::device_lost`, as the
/// library records VK_ERROR_DEVICE_LOST): every C call on the context and its
/// objects returns VKCUDA_ERROR_DEVICE_LOST naming the first error, outputs are
/// untouched, another device's context works, and destroy still releases.
/// (The C half of `a_lost_vulkan_device_refuses_every_call_and_destroy_still_releases`,
/// tests/faults.rs.)
#[test]
fn c_calls_on_a_lost_device_are_refused() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let other = vulkan_only_context();
    let b = create_buffer(ctx, 4096, 0);
    let mut h: vkcuda_vulkan_handles = unsafe { std::mem::zeroed() };
    ok(unsafe { vkcuda_context_get_vulkan_handles(ctx, &mut h) });
    vkcuda::fault_injection::device_lost(
        h.device,
        "vkQueueSubmit (the test's stand-in for the driver)",
    );
    let mut info: vkcuda_buffer_info = unsafe { std::mem::zeroed() };
    let mut nb = ptr::null_mut();
    let mut fd = -1;
    let later: [(&str, vkcuda_result); 4] = [
        ("vkcuda_buffer_get_info", unsafe {
            vkcuda_buffer_get_info(b, &mut info)
        }),
        ("vkcuda_buffer_export_fd", unsafe {
            vkcuda_buffer_export_fd(b, &mut fd)
        }),
        ("vkcuda_buffer_create", unsafe {
            vkcuda_buffer_create(ctx, &buffer_create_info(4096, 0), &mut nb)
        }),
        ("vkcuda_context_get_vulkan_handles", unsafe {
            vkcuda_context_get_vulkan_handles(ctx, &mut h)
        }),
    ];
    for (call, r) in later {
        let msg = fails(r, VKCUDA_ERROR_DEVICE_LOST);
        assert!(
            msg.contains("VK_ERROR_DEVICE_LOST") && msg.contains("vkQueueSubmit"),
            "{call}: {msg}"
        );
    }
    assert!(nb.is_null() && fd == -1 && info.size == 0);
    still_usable(other);
    unsafe {
        vkcuda_buffer_destroy(b);
        vkcuda_context_destroy(ctx);
        vkcuda_context_destroy(other);
    }
}
