//! Shared buffers with arbitrary arguments on a Vulkan-only context: create info
//! (flags, allocator, size, usage), import info against a real exported fd, wrap
//! info against the shared buffer's own handles, and the handoff info of the
//! barriers. Every call: no panic, a message naming the function on failure,
//! outputs written only on success, the caller's fd still open after a failed
//! import, and nothing left behind.
#![no_main]

mod common;
use common::*;

use ash::vk;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Create {
        flags: u32,
        allocator: i32,
        size_sel: u8,
        size: u64,
        usage: u32,
    },
    Import {
        flags: u32,
        allocator: i32,
        alloc_sel: u8,
        allocation_size: u64,
        offset_sel: u8,
        offset: u64,
        size_sel: u8,
        size: u64,
        dedicated: u32,
        usage: u32,
    },
    Wrap {
        flags: u32,
        null_buffer: bool,
        null_memory: bool,
        alloc_sel: u8,
        allocation_size: u64,
        offset_sel: u8,
        offset: u64,
        size_sel: u8,
        size: u64,
        dedicated: u32,
    },
    Barrier {
        release: bool,
        flags: u32,
        queue_family_index: u32,
    },
}

/// A size near the shared buffer's own values, or an edge value.
fn near(sel: u8, raw: u64, real: u64, s: &Shared) -> u64 {
    match sel % 4 {
        0 => real,
        1 => real.wrapping_add(raw % 256),
        2 => real.wrapping_sub(raw % 256),
        _ => size(sel / 4, raw, s),
    }
}

fn info_of(b: *const vkcuda_buffer) -> vkcuda_buffer_info {
    let mut i: vkcuda_buffer_info = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { vkcuda_buffer_get_info(b, &mut i) }, VKCUDA_SUCCESS);
    i
}

fuzz_target!(|ops: Vec<Op>| {
    let s = shared();
    let fds = fd_count();
    let real = info_of(s.buffer);
    for op in ops.into_iter().take(16) {
        match op {
            Op::Create {
                flags,
                allocator,
                size_sel,
                size: raw,
                usage,
            } => {
                let info = vkcuda_buffer_create_info {
                    flags,
                    allocator: vkcuda_allocator_raw(allocator),
                    size: size(size_sel, raw, s),
                    usage,
                };
                let mut b = 0x5A5A as *mut vkcuda_buffer;
                let r = check("vkcuda_buffer_create", unsafe {
                    vkcuda_buffer_create(s.ctx, &info, &mut b)
                });
                if r == VKCUDA_SUCCESS {
                    assert!(
                        flags == 0 && allocator == 0 && info.size != 0,
                        "{} {flags} {allocator}",
                        info.size
                    );
                    let got = info_of(b);
                    assert_eq!(got.size, info.size);
                    assert!(got.allocation_size >= got.offset + got.size);
                    unsafe { vkcuda_buffer_destroy(b) };
                } else {
                    assert!(b.is_null(), "the handle output was not set to NULL");
                }
            }
            Op::Import {
                flags,
                allocator,
                alloc_sel,
                allocation_size,
                offset_sel,
                offset,
                size_sel,
                size: raw_size,
                dedicated,
                usage,
            } => {
                let info = vkcuda_buffer_import_info {
                    flags,
                    allocator: vkcuda_allocator_raw(allocator),
                    allocation_size: near(alloc_sel, allocation_size, real.allocation_size, s),
                    offset: near(offset_sel, offset, real.offset, s),
                    size: near(size_sel, raw_size, real.size, s),
                    dedicated,
                    usage,
                };
                let mut fd = -1;
                assert_eq!(
                    unsafe { vkcuda_buffer_export_fd(s.buffer, &mut fd) },
                    VKCUDA_SUCCESS
                );
                let mut b = 0x5A5A as *mut vkcuda_buffer;
                let r = check("vkcuda_buffer_import_fd", unsafe {
                    vkcuda_buffer_import_fd(s.ctx, &info, fd, &mut b)
                });
                if r == VKCUDA_SUCCESS {
                    assert!(!fd_is_open(fd), "a successful import takes the fd");
                    let got = info_of(b);
                    assert_eq!((got.offset, got.size), (info.offset, info.size));
                    assert!(info.offset + info.size <= info.allocation_size);
                    unsafe { vkcuda_buffer_destroy(b) };
                } else {
                    assert!(b.is_null());
                    assert!(fd_is_open(fd), "a failed import closed the caller's fd");
                    unsafe { libc::close(fd) };
                }
            }
            Op::Wrap {
                flags,
                null_buffer,
                null_memory,
                alloc_sel,
                allocation_size,
                offset_sel,
                offset,
                size_sel,
                size: raw_size,
                dedicated,
            } => {
                let info = vkcuda_buffer_wrap_info {
                    flags,
                    buffer: if null_buffer {
                        vk::Buffer::null()
                    } else {
                        real.buffer
                    },
                    memory: if null_memory {
                        vk::DeviceMemory::null()
                    } else {
                        real.memory
                    },
                    allocation_size: near(alloc_sel, allocation_size, real.allocation_size, s),
                    offset: near(offset_sel, offset, real.offset, s),
                    size: near(size_sel, raw_size, real.size, s),
                    dedicated,
                    // The library's own buffer memory: allocated with OPAQUE_FD export info.
                    export_handle_types: 1,
                };
                let mut b = 0x5A5A as *mut vkcuda_buffer;
                let r = check("vkcuda_buffer_wrap", unsafe {
                    vkcuda_buffer_wrap(s.ctx, &info, &mut b)
                });
                if r == VKCUDA_SUCCESS {
                    // Vulkan-only: the checks passed, no CUDA view; the Vulkan objects stay ours.
                    assert!(!b.is_null());
                    unsafe { vkcuda_buffer_destroy(b) };
                } else {
                    assert!(b.is_null());
                }
            }
            Op::Barrier {
                release,
                flags,
                queue_family_index,
            } => {
                let h = vkcuda_handoff_info {
                    flags,
                    queue_family_index: queue_family_index % 4,
                    stage_mask: 0,
                    access_mask: 0,
                };
                s.with_cmd(|cmd| {
                    let r = if release {
                        check("vkcuda_buffer_cmd_release_to_cuda", unsafe {
                            vkcuda_buffer_cmd_release_to_cuda(s.buffer, cmd, &h)
                        })
                    } else {
                        check("vkcuda_buffer_cmd_acquire_from_cuda", unsafe {
                            vkcuda_buffer_cmd_acquire_from_cuda(s.buffer, cmd, &h)
                        })
                    };
                    // Unknown flags are refused; so is a family past the device's (the
                    // library knows their count). Family 0 always exists.
                    if flags != 0 {
                        assert_ne!(r, VKCUDA_SUCCESS);
                    } else if queue_family_index % 4 == 0 {
                        assert_eq!(r, VKCUDA_SUCCESS);
                    }
                });
            }
        }
        s.no_leak(fds, "buffer_args");
    }
});
