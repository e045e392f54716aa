//! Messages that point at the right cause, and "untouched on failure" (issue 21
//! items 6-8), on lavapipe with Vulkan-only contexts:
//! - a receive in a process with no free descriptor says so (OUT_OF_MEMORY, the
//!   code of EMFILE), instead of blaming the peer;
//! - a semaphore on a device without VK_KHR_external_semaphore_fd says the device
//!   does not support it, instead of advising to enable it;
//! - a description with an image format outside the table is INVALID_ARGUMENT, the
//!   code the header documents, in parse and serialize;
//! - cuda_array_flags is 0 where there is no CUDA view;
//! - a failed import leaves the caller's fd as it was, its file offset included;
//! - a memfd whose driver header is forged (data past the end of the file, a
//!   mapping larger than the file, unsealed) is refused before the driver maps it.

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
fn a_semaphore_on_a_device_without_the_extension_says_the_device_lacks_it() {
    let _s = serial();
    let ctx = vulkan_only_context();
    let mut s = ptr::null_mut();
    let info = vkcuda_semaphore_create_info {
        flags: 0,
        semaphore_type: vkcuda_semaphore_type_raw(0),
        initial_value: 0,
        host_wait_spin_ns: 0,
    };
    let r = unsafe { vkcuda_semaphore_create(ctx, &info, &mut s) };
    if r == VKCUDA_SUCCESS {
        // A device with the extension (not lavapipe 22.3): nothing to check here.
        println!("SKIPPED: this device supports VK_KHR_external_semaphore_fd");
        unsafe { vkcuda_semaphore_destroy(s) };
    } else {
        let msg = last_error();
        assert_eq!(r, VKCUDA_ERROR_EXTENSION_NOT_PRESENT, "{msg}");
        assert!(
            msg.contains("does not support VK_KHR_external_semaphore_fd"),
            "{msg}"
        );
        assert!(!msg.contains("add it to"), "{msg}");
    }
    unsafe { vkcuda_context_destroy(ctx) };
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
    // A 3-channel format: no CUDA array holds it, so the library never shares it.
    let rgb = vk::Format::R8G8B8_UNORM.as_raw();
    let mut bad = d;
    bad.image.description.format = rgb;
    let msg = fails(
        unsafe { vkcuda_share_description_serialize(&bad, bytes.as_mut_ptr(), size) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(msg.contains("impossible image format"), "{msg}");
    // The same format patched into a valid record (image fields start at byte 40:
    // the type, then the VkFormat).
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
    // A real export imports, and its offset is irrelevant then (the fd is taken).
    let src = create_buffer(ctx, 4096, 0);
    let fd = buffer_fd(src);
    let info = buffer_info(src);
    ok(unsafe {
        vkcuda_buffer_import_fd(ctx, &import_info(info.allocation_size, 4096), fd, &mut b)
    });
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
        (
            "less data than the import",
            header(size, size - 16, &real[16..]),
            true,
            "forged or damaged",
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
