//! The buffer group: create, wrap, import an fd, the getters, export.

use std::ptr;

use ash::vk;

use crate::support::*;
use crate::env::Kind;
use crate::matrix::*;

const CREATE: &str = "vkcuda_buffer_create";
const WRAP: &str = "vkcuda_buffer_wrap";
const IMPORT: &str = "vkcuda_buffer_import_fd";

fn import_fails(c: &Call, info: *const vkcuda_buffer_import_info, fd: i32, want: &[vkcuda_result]) {
    let mut b = poisoned();
    let r = unsafe { vkcuda_buffer_import_fd(c.env.ctx, info, fd, &mut b) };
    c.refused_made(r, want, b, vkcuda_buffer_destroy);
}

pub fn cases(m: &mut Matrix) {
    const INFO: &str = "vkcuda_buffer_get_info";
    const POINTER: &str = "vkcuda_buffer_get_cuda_pointer";
    const VK_BUFFER: &str = "vkcuda_buffer_get_vk_buffer";
    const EXPORT: &str = "vkcuda_buffer_export_fd";
    let out = vkcuda_buffer_destroy;
    m.constructor(CREATE, "buffer", |_| buffer_create_info(4096, 0), vkcuda_buffer_create, out);
    m.constructor(WRAP, "buffer", |e| e.wrap_info(), vkcuda_buffer_wrap, out);
    m.nulls(nulls![
        WRAP, "info->buffer" => |e, o| unsafe {
            vkcuda_buffer_wrap(e.ctx, &vkcuda_buffer_wrap_info { buffer: vk::Buffer::null(), ..e.wrap_info() }, o.handle(out))
        };
        WRAP, "info->memory" => |e, o| unsafe {
            vkcuda_buffer_wrap(e.ctx, &vkcuda_buffer_wrap_info { memory: vk::DeviceMemory::null(), ..e.wrap_info() }, o.handle(out))
        };
        IMPORT, "context" => |e, o| e.with_fd(Kind::Buffer, |fd| unsafe { vkcuda_buffer_import_fd(ptr::null(), &e.import_info(), fd, o.handle(out)) });
        IMPORT, "info" => |e, o| e.with_fd(Kind::Buffer, |fd| unsafe { vkcuda_buffer_import_fd(e.ctx, ptr::null(), fd, o.handle(out)) });
        IMPORT, "buffer" => |e, _| e.with_fd(Kind::Buffer, |fd| unsafe { vkcuda_buffer_import_fd(e.ctx, &e.import_info(), fd, ptr::null_mut()) });
    ]);
    m.getter(INFO, ["buffer", "info"], |e| e.buffer, vkcuda_buffer_get_info);
    m.getter(POINTER, ["buffer", "pointer"], |e| e.buffer, vkcuda_buffer_get_cuda_pointer);
    m.getter(VK_BUFFER, ["buffer", "vk_buffer"], |e| e.buffer, vkcuda_buffer_get_vk_buffer);
    m.getter(EXPORT, ["buffer", "fd"], |e| e.buffer, vkcuda_buffer_export_fd);

    // -- vkcuda_buffer_create
    type BC = vkcuda_buffer_create_info;
    let muts = muts![BC;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 1;
        "enum-2:info->allocator" [I] => |_, i| i.allocator = vkcuda_allocator_raw(2);
        "enum-negative:info->allocator" [I] => |_, i| i.allocator = vkcuda_allocator_raw(-1);
        "enum-max:info->allocator" [I] => |_, i| i.allocator = vkcuda_allocator_raw(0x7FFF_FFFF);
        "zero:info->size" [I] says "size" => |_, i| i.size = 0;
        "absurd:info->size" [I] => |_, i| i.size = u64::MAX;
        "2^63:info->size" [I] => |_, i| i.size = 1 << 63;
        "over-heap:info->size" [I] => |e, i| i.size = e.largest_heap() + 1;
        "unknown-bits:info->usage" [I] => |_, i| i.usage = 0x4000_0000;
        "device-address:info->usage" [UNSUP] => |_, i| i.usage = vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS.as_raw();
    ];
    mutations(
        m,
        CREATE,
        muts,
        |_| buffer_create_info(4096, 0),
        |c, i, want| {
            let mut b = poisoned();
            let r = unsafe { vkcuda_buffer_create(c.env.ctx, i, &mut b) };
            c.refused_made(r, want, b, vkcuda_buffer_destroy);
            Ran
        },
    );
    m.vulkan_only(CREATE, "cuda-on-vulkan-only:info->allocator", |c| {
        let mut i = buffer_create_info(4096, 0);
        i.allocator = vkcuda_allocator_raw(1);
        let mut b = poisoned();
        let r = unsafe { vkcuda_buffer_create(c.env.ctx, &i, &mut b) };
        let c = Call {
            says: Some("VULKAN_ONLY"),
            ..*c
        };
        c.refused_made(r, &[U], b, vkcuda_buffer_destroy);
        Ran
    });

    // -- vkcuda_buffer_wrap: the shared buffer's own VkBuffer and memory, borrowed.
    m.vulkan_only(WRAP, "valid-on-vulkan-only", |c| {
        // Vulkan-only: the checks pass and no CUDA view is made.
        let mut b = poisoned();
        let r = unsafe { vkcuda_buffer_wrap(c.env.ctx, &c.env.wrap_info(), &mut b) };
        c.succeeded(r);
        assert_eq!(buffer_info(b).cuda_pointer, 0);
        unsafe { vkcuda_buffer_destroy(b) };
        Ran
    });
    type BW = vkcuda_buffer_wrap_info;
    let muts = muts![BW;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 1;
        "zero:info->allocation_size" [I] => |_, i| i.allocation_size = 0;
        "too-small:info->allocation_size" [I] => |_, i| i.allocation_size = i.size - 1;
        "past-end:info->offset" [I] => |_, i| i.offset = i.allocation_size;
        "misaligned:info->offset" [I] => |_, i| { i.offset = 1; i.size -= 1 };
        "overflow:info->offset" [I] => |_, i| i.offset = u64::MAX;
        "zero:info->size" [I] => |_, i| i.size = 0;
        "absurd:info->size" [I] => |_, i| i.size = u64::MAX;
        "bool-2:info->dedicated" [I] => |_, i| i.dedicated = 2;
        "bool-max:info->dedicated" [I] => |_, i| i.dedicated = u32::MAX;
        "zero:info->export_handle_types" [I] => |_, i| i.export_handle_types = 0;
        "no-opaque-fd:info->export_handle_types" [I] => |_, i| {
            i.export_handle_types = vk::ExternalMemoryHandleTypeFlags::DMA_BUF_EXT.as_raw()
        };
    ];
    mutations(
        m,
        WRAP,
        muts,
        |e| e.wrap_info(),
        |c, i, want| {
            let mut b = poisoned();
            let r = unsafe { vkcuda_buffer_wrap(c.env.ctx, i, &mut b) };
            c.refused_made(r, want, b, vkcuda_buffer_destroy);
            Ran
        },
    );

    // -- vkcuda_buffer_import_fd: fresh fds; on failure the fd stays the caller's.
    type BI = vkcuda_buffer_import_info;
    let muts = muts![BI;
        "unknown-bits:info->flags" [I] => |_, i| i.flags = 1;
        "enum-2:info->allocator" [I] => |_, i| i.allocator = vkcuda_allocator_raw(2);
        "enum-negative:info->allocator" [I] => |_, i| i.allocator = vkcuda_allocator_raw(-1);
        "zero:info->allocation_size" [I] => |_, i| i.allocation_size = 0;
        // Where the fd tells its size, the library itself sees the lie.
        "larger-than-fd:info->allocation_size" [I] says "real size" @fd_size => |_, i| {
            i.allocation_size *= 2;
            i.size = i.allocation_size;
        };
        "absurd:info->allocation_size" [I, VKCUDA_ERROR_VULKAN, VKCUDA_ERROR_OUT_OF_MEMORY] => |_, i| {
            i.allocation_size = u64::MAX
        };
        "past-end:info->offset" [I] => |_, i| i.offset = i.allocation_size;
        "misaligned:info->offset" [I] says "alignment" => |_, i| { i.offset = 3; i.size -= 3 };
        "overflow:info->offset" [I] => |_, i| i.offset = u64::MAX;
        "zero:info->size" [I] => |_, i| i.size = 0;
        "absurd:info->size" [I] => |_, i| i.size = u64::MAX;
        "bool-2:info->dedicated" [I] => |_, i| i.dedicated = 2;
        "unknown-bits:info->usage" [I] => |_, i| i.usage = 0x4000_0000;
    ];
    mutations(
        m,
        IMPORT,
        muts,
        |e| e.import_info(),
        |c, i, want| {
            let fd = c.env.buffer_fd();
            import_fails(c, i, fd, want);
            assert!(fd_is_open(fd), "a failed import closed the caller's fd");
            close(fd);
            Ran
        },
    );
    m.ran(IMPORT, "negative:fd", |c| import_fails(c, &c.env.import_info(), -1, &[I]));
    m.ran(IMPORT, "closed:fd", |c| import_fails(c, &c.env.import_info(), closed_fd(), &[I]));
    m.ran(IMPORT, "absurd:fd", |c| import_fails(c, &c.env.import_info(), i32::MAX, &[I]));
    m.ran(IMPORT, "pipe:fd", |c| {
        // Not memory at all.
        let (r, w) = pipe();
        import_fails(c, &c.env.import_info(), r, &[I, VKCUDA_ERROR_VULKAN]);
        assert!(fd_is_open(r));
        close(r);
        close(w);
    });
    m.ran(IMPORT, "small-memfd:fd", |c| {
        // Memory, but smaller than the import says (another kind of fd).
        let fd = unsafe { libc::memfd_create(c"vkcuda-misuse".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        assert_eq!(unsafe { libc::ftruncate(fd, 4096) }, 0);
        import_fails(c, &c.env.import_info(), fd, &[I, VKCUDA_ERROR_VULKAN]);
        assert!(fd_is_open(fd));
        close(fd);
    });
    m.case(IMPORT, "image-fd:fd", |c| {
        // An image's memory fd with a buffer's description that claims more than it has.
        if !c.env.fd_sizes_known {
            return Skipped(NO_FD_SIZE);
        }
        let fd = c.env.image_fd();
        let mut info = c.env.import_info();
        info.allocation_size = 1 << 30;
        info.size = 1 << 30;
        import_fails(c, &info, fd, &[I, VKCUDA_ERROR_VULKAN]);
        assert!(fd_is_open(fd));
        close(fd);
        Ran
    });

    // -- getters
    m.vulkan_only(POINTER, "vulkan-only", |c| c.refused_untouched(&[U], |p| unsafe { vkcuda_buffer_get_cuda_pointer(c.env.buffer, p) }));
    m.ran("vkcuda_buffer_destroy", "null-ok:buffer", |_| {
        unsafe { vkcuda_buffer_destroy(ptr::null_mut()) };
    });
}

/// The C door's fd ownership: `vkcuda_buffer_import_fd` takes the fd only on
/// success (the Rust API borrows it); each refusal leaves it open and the caller's.
#[test]
fn import_takes_the_fd_only_on_success() {
    let _g = serial();
    let a = vulkan_only_context();
    let buf = create_buffer(a, 65536, 0);
    let info = buffer_info(buf);
    let mut fd = -1;
    ok(unsafe { vkcuda_buffer_export_fd(buf, &mut fd) });

    // Failures leave the fd open and the caller's (each field's refusal on its
    // own, with a fresh fd: the misuse matrix; here one fd through several).
    let mut out = 1usize as *mut vkcuda_buffer;
    let mut bad = buffer_import_info(&info);
    bad.size = info.allocation_size + 1;
    fails(
        unsafe { vkcuda_buffer_import_fd(a, &bad, fd, &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(out.is_null());
    assert!(fd_is_open(fd));
    if !fd_knows_size(fd) {
        // NVIDIA's opaque fds do not tell their size (where they do, the library
        // itself sees the lie: the misuse matrix); its Vulkan import refuses.
        let mut bad = buffer_import_info(&info);
        bad.allocation_size = info.allocation_size * 2;
        bad.size = info.allocation_size * 2;
        let r = unsafe { vkcuda_buffer_import_fd(a, &bad, fd, &mut out) };
        assert_ne!(r, VKCUDA_SUCCESS, "an import twice the real size must fail");
        println!(
            "fd size unknown to the kernel; the import failed with {r:?}: {}",
            last_error()
        );
    } else {
        // Where the fd says its size, an import must state the allocation's size to
        // the byte (VUID-VkMemoryAllocateInfo-allocationSize-01742): one byte or a
        // page more (the size of lavapipe's header, which is not the allocation's)
        // is refused, for a non-dedicated allocation too.
        assert_eq!((info.allocation_size, info.dedicated), (65536, 0));
        for claimed in [65536 + 1, 65536 + 4096] {
            let mut bad = buffer_import_info(&info);
            bad.allocation_size = claimed;
            let msg = fails(
                unsafe { vkcuda_buffer_import_fd(a, &bad, fd, &mut out) },
                VKCUDA_ERROR_INVALID_ARGUMENT,
            );
            assert!(
                msg.contains(&format!(
                    "allocation_size {claimed} is larger than the memory object's real size 65536"
                )),
                "{msg}"
            );
        }
    }
    let mut bad = buffer_import_info(&info);
    bad.allocator = vkcuda_allocator_raw(7);
    fails(
        unsafe { vkcuda_buffer_import_fd(a, &bad, fd, &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    // An fd that is not GPU memory.
    let not_memory = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    // Refused before the driver sees it (NVIDIA's import of /dev/null was followed
    // by failing imports in the whole process).
    let msg = fails(
        unsafe { vkcuda_buffer_import_fd(a, &buffer_import_info(&info), not_memory, &mut out) },
        VKCUDA_ERROR_INVALID_ARGUMENT,
    );
    assert!(
        msg.contains("not a memory handle of this Vulkan driver"),
        "{msg}"
    );
    assert!(fd_is_open(not_memory));
    unsafe { libc::close(not_memory) };
    assert!(fd_is_open(fd), "every failure left the fd alone");

    // Success takes it. NVIDIA's driver: after a failed import the same open file
    // description no longer imports (a duplicate shares it), so a new fd is exported
    // for the successful import there; the failed fd is still the caller's to close.
    let fd = if fd_knows_size(fd) {
        fd
    } else {
        unsafe { libc::close(fd) };
        let mut fresh = -1;
        ok(unsafe { vkcuda_buffer_export_fd(buf, &mut fresh) });
        fresh
    };
    ok(unsafe { vkcuda_buffer_import_fd(a, &buffer_import_info(&info), fd, &mut out) });
    assert!(!out.is_null());
    assert!(!fd_is_open(fd), "the library took the fd on success");
    unsafe {
        vkcuda_buffer_destroy(out);
        vkcuda_buffer_destroy(buf);
        vkcuda_context_destroy(a);
    }
}
