//! C API: cross-process sharing. Descriptions of buffers, semaphores and images,
//! their fds sent and received over connected Unix sockets, and imports from a
//! description and an fd.

use std::ffi::{c_int, c_void};
use std::os::fd::BorrowedFd;
use std::time::Duration;

use ash::vk;

use super::buffer::vkcuda_buffer;
use super::context::{ctx_arg, vkcuda_context};
use super::fd;
use super::handle;
use super::image::{
    vkcuda_image, vkcuda_image_create_info, vkcuda_image_type_raw,
    VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT, VKCUDA_IMAGE_CREATE_LINEAR_BIT,
};
use super::semaphore::vkcuda_semaphore;
use super::types::*;
use super::{
    arg, boundary, check_bool, check_flags, import_taking, out, vkcuda_result, write_handle,
};
use vkcuda::buffer::{Allocator, Layout};
use vkcuda::error::{Error, Result};
use vkcuda::image;
use vkcuda::ipc::{self, Description, Kind, Object, Options, Peer, PeerPolicy};
use vkcuda::semaphore;

/// The size in bytes of a serialized description.
///
/// @ingroup share
pub const VKCUDA_SHARE_DESCRIPTION_SIZE: u32 = 128;
/// The description format version this library writes and reads (4: a
/// multi-planar image's colour description travels in the record; 3: images carry
/// the linear flag of shared video frames, and one fd and allocation size per
/// allocation; records of versions 1 to 3 are refused with both versions named).
///
/// @ingroup share
pub const VKCUDA_SHARE_FORMAT_VERSION: u32 = 4;
/// The most fds one description comes with: one per plane of a disjoint multi-planar
/// image (buffers and semaphores: 1).
///
/// @ingroup share
pub const VKCUDA_SHARE_MAX_FDS: u32 = 3;
/// The send and receive timeout when `vkcuda_share_options::timeout_ns` is 0 (10 s).
///
/// @ingroup share
pub const VKCUDA_SHARE_DEFAULT_TIMEOUT_NS: u64 = 10_000_000_000;

/// What a share description describes.
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum vkcuda_share_kind {
    /// A `vkcuda_buffer`: `vkcuda_share_description::buffer` is set.
    VKCUDA_SHARE_KIND_BUFFER = 1,
    /// A `vkcuda_semaphore`: `vkcuda_share_description::semaphore` is set.
    VKCUDA_SHARE_KIND_SEMAPHORE = 2,
    /// A `vkcuda_image`: `vkcuda_share_description::image` is set.
    VKCUDA_SHARE_KIND_IMAGE = 3,
    /// Keeps the enum 32 bits wide.
    VKCUDA_SHARE_KIND_MAX_ENUM = 0x7FFF_FFFF,
}

/// A `vkcuda_share_kind` as C passed it.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_kind_raw(pub i32);

/// A shared buffer's memory, as an importer needs it (`vkcuda_buffer_info` of the
/// exporter).
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_buffer_description {
    /// Which API allocated the memory.
    pub allocator: vkcuda_allocator_raw,
    /// VK_TRUE when the allocation is dedicated.
    pub dedicated: VkBool32,
    /// The whole allocation's size (what CUDA and Vulkan import).
    pub allocation_size: u64,
    /// Where the buffer starts in the allocation.
    pub offset: u64,
    /// The buffer's size (at least 1; `offset + size <= allocation_size`).
    pub size: u64,
}

/// A shared semaphore.
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_semaphore_description {
    /// Timeline or binary.
    pub semaphore_type: vkcuda_semaphore_type_raw,
    /// Timeline: the counter value when the description was made (for information:
    /// the imported payload carries the real value). Binary: 0.
    pub value: u64,
}

/// A shared image. A multi-planar image's colour description
/// (`vkcuda_image_set_video_color`) is not a member: `vkcuda_image_send` puts it in
/// the record (description format version 4) and `vkcuda_image_receive` gives the
/// imported frame that colour, but a description that goes through this struct
/// (`vkcuda_image_describe`, `vkcuda_share_description_parse`,
/// `vkcuda_share_receive`) carries none, and `vkcuda_image_import_description`
/// makes a frame with the default colour (BT.709, narrow range): set it with
/// `vkcuda_image_set_video_color`.
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_image_description {
    /// The image's description with every default resolved: extent, mip levels and
    /// array layers at least 1, the usage it was created with. Import it as a
    /// `VkImage` of exactly this description (exclusive sharing,
    /// `VkExternalMemoryImageCreateInfo` OPAQUE_FD; optimal tiling, or linear and
    /// not disjoint for a shared video frame, `VKCUDA_IMAGE_CREATE_LINEAR_BIT` in
    /// `flags`; an OPTIMAL multi-planar image, which only Vulkan-only contexts
    /// make, also `VK_IMAGE_CREATE_DISJOINT_BIT`).
    pub description: vkcuda_image_create_info,
    /// The size of its dedicated allocation (`VkMemoryAllocateInfo::allocationSize`
    /// of the import, which must be dedicated to the new image): a shared video
    /// frame's one allocation; plane 0's for a disjoint multi-planar image.
    pub allocation_size: u64,
    /// The allocation size of each plane of a disjoint (OPTIMAL, Vulkan-only)
    /// multi-planar image, whose planes come as one fd each in plane order (each
    /// imported as its own allocation, bound with `VkBindImagePlaneMemoryInfo`);
    /// zeros past the allocation count (a single-plane image or a shared video
    /// frame has one allocation and one fd). `[0]` is 0 or `allocation_size` (the
    /// library writes `allocation_size`).
    pub plane_allocation_sizes: [u64; 3],
}

/// What a process needs to import an object another process exported: the kind,
/// the exporter's device and the object's sizes and types. It travels next to the
/// object's fd; `vkcuda_*_send` and `vkcuda_share_send` serialize it (a fixed
/// 128-byte little-endian record with a magic, a format version and its size;
/// `vkcuda_share_description_serialize` writes the same record for other
/// transports).
///
/// Only the member of `kind` is read; the other two are ignored (the library writes
/// them as zeros).
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_description {
    /// Reserved; must be 0.
    pub flags: u32,
    /// Which member below is set.
    pub kind: vkcuda_share_kind_raw,
    /// `VkPhysicalDeviceIDProperties::deviceUUID` of the exporting context's device.
    /// An import into a context of another device fails with
    /// `VKCUDA_ERROR_DEVICE_MISMATCH`.
    pub device_uuid: [u8; 16],
    /// The description when `kind` is `VKCUDA_SHARE_KIND_BUFFER` (the library fills the
    /// other members with zeros).
    pub buffer: vkcuda_share_buffer_description,
    /// The description when `kind` is `VKCUDA_SHARE_KIND_SEMAPHORE` (the library fills the
    /// other members with zeros).
    pub semaphore: vkcuda_share_semaphore_description,
    /// The description when `kind` is `VKCUDA_SHARE_KIND_IMAGE` (the library fills the
    /// other members with zeros).
    pub image: vkcuda_share_image_description,
}

/// Decides whether the process on the other end of a socket may take part:
/// return nonzero to accept it, 0 to refuse (`VKCUDA_ERROR_PERMISSION_DENIED`).
/// `pid`, `uid` and `gid` are the peer's `pid_t`, `uid_t` and `gid_t` as the
/// kernel recorded them when the connection was made (`SO_PEERCRED`). Called on the
/// thread of the send or receive, before any fd crosses; it must not throw.
///
/// @ingroup share
pub type vkcuda_peer_check_fn =
    Option<unsafe extern "C" fn(pid: i32, uid: u32, gid: u32, user: *mut c_void) -> c_int>;

/// How to send or receive over a socket; a NULL pointer or all zero: a 10 s
/// timeout and only peers of the same user.
///
/// Security model. A file descriptor is a capability: whoever holds a memory fd
/// can map, read and write the whole allocation, and whoever holds a semaphore fd
/// can signal and wait on it, for as long as they keep it. The library never
/// publishes fds; they only travel over the connected Unix socket the caller
/// gives it. So the socket decides who can get one: for a socket path, its file
/// permissions (and its directory's) decide who can connect; and both ends check
/// the peer's credentials (`SO_PEERCRED`) on every call before any fd crosses:
/// by default the peer must run as the same effective user as this process;
/// `peer_check` replaces that rule. The receiver closes every fd of a message it
/// refuses. See docs/CROSS_PROCESS.md.
///
/// @ingroup share
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct vkcuda_share_options {
    /// Reserved; must be 0.
    pub flags: u32,
    /// How long one send or receive may wait for the peer, in nanoseconds: 0 means
    /// `VKCUDA_SHARE_DEFAULT_TIMEOUT_NS`, UINT64_MAX waits for ever. A receive that
    /// times out fails with `VKCUDA_ERROR_TIMEOUT` and closes whatever fds came.
    pub timeout_ns: u64,
    /// NULL: accept only peers with this process's effective uid. Otherwise called
    /// with the peer's credentials; nonzero accepts it.
    pub peer_check: vkcuda_peer_check_fn,
    /// Passed to `peer_check`.
    pub peer_check_user: *mut c_void,
    /// `vkcuda_buffer_receive` only: the `VkBufferUsageFlags` of the imported
    /// `VkBuffer` (0: the default of `vkcuda_buffer_create`).
    pub buffer_usage: VkBufferUsageFlags,
}

impl vkcuda_share_kind_raw {
    fn get(self, what: &str) -> Result<Kind> {
        u32::try_from(self.0)
            .ok()
            .and_then(Kind::from_code)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{what} is {}, not a vkcuda_share_kind (BUFFER = 1, SEMAPHORE = 2, IMAGE = 3)",
                    self.0
                ))
            })
    }
}

fn to_c(d: &Description) -> vkcuda_share_description {
    // Zeroed, then filled field by field: the struct has padding (after
    // `semaphore.semaphore_type`, after `image.description`), and a struct literal
    // would leave it uninitialised, copying stack bytes out to the caller.
    // SAFETY: every field is an integer, an integer array or a struct of those.
    let mut c: vkcuda_share_description = unsafe { std::mem::zeroed() };
    c.kind = vkcuda_share_kind_raw(d.kind().code() as i32);
    c.device_uuid = d.device_uuid;
    match &d.object {
        Object::Buffer(l) => {
            let b = &mut c.buffer;
            b.allocator = vkcuda_allocator_raw(match l.allocator {
                Allocator::Vulkan => 0,
                Allocator::Cuda => 1,
            });
            b.dedicated = l.dedicated as u32;
            b.allocation_size = l.allocation_size;
            b.offset = l.offset;
            b.size = l.size;
        }
        Object::Semaphore { kind, value } => {
            c.semaphore.semaphore_type = vkcuda_semaphore_type_raw(match kind {
                semaphore::Kind::Timeline => 0,
                semaphore::Kind::Binary => 1,
            });
            c.semaphore.value = *value;
        }
        // The colour does not fit the C struct (its layout is the ABI's): the
        // record carries it, this struct does not.
        Object::Image {
            desc,
            allocation_sizes,
            color: _,
        } => {
            let i = &mut c.image;
            // No padding inside the create-info (nine 32-bit fields).
            i.description = vkcuda_image_create_info {
                flags: super::image::description_flags(desc),
                image_type: vkcuda_image_type_raw::of(desc.dimension),
                format: desc.format.as_raw(),
                extent: vk::Extent3D {
                    width: desc.width,
                    height: desc.height,
                    depth: desc.depth,
                },
                mip_levels: desc.mip_levels,
                array_layers: desc.array_layers,
                usage: desc.usage.as_raw(),
            };
            i.allocation_size = allocation_sizes[0];
            i.plane_allocation_sizes = *allocation_sizes;
        }
    }
    c
}

/// Reads and checks a description from C: flags, enums, booleans, and every value
/// as strictly as a received record.
fn from_c(c: &vkcuda_share_description) -> Result<Description> {
    check_flags(c.flags, 0, "description->flags")?;
    let object = match c.kind.get("description->kind")? {
        Kind::Buffer => {
            let b = &c.buffer;
            Object::Buffer(Layout {
                allocator: b.allocator.get("description->buffer.allocator")?,
                dedicated: check_bool(b.dedicated, "description->buffer.dedicated")?,
                allocation_size: b.allocation_size,
                offset: b.offset,
                size: b.size,
            })
        }
        Kind::Semaphore => Object::Semaphore {
            kind: c
                .semaphore
                .semaphore_type
                .get("description->semaphore.semaphore_type")?,
            value: c.semaphore.value,
        },
        Kind::Image => {
            let i = &c.image.description;
            check_flags(
                i.flags,
                VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT | VKCUDA_IMAGE_CREATE_LINEAR_BIT,
                "description->image.description.flags",
            )?;
            let dimension = i
                .image_type
                .get("description->image.description.image_type")?;
            Object::Image {
                desc: image::Description {
                    dimension,
                    format: vk::Format::from_raw(i.format),
                    width: i.extent.width,
                    height: i.extent.height,
                    depth: i.extent.depth,
                    mip_levels: i.mip_levels,
                    array_layers: i.array_layers,
                    cube: i.flags & VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT != 0,
                    usage: vk::ImageUsageFlags::from_raw(i.usage),
                    linear: i.flags & VKCUDA_IMAGE_CREATE_LINEAR_BIT != 0,
                },
                allocation_sizes: image_sizes(&c.image)?,
                color: None,
            }
        }
    };
    let d = Description {
        device_uuid: c.device_uuid,
        object,
    };
    d.check().map_err(|e| e.context("description"))?;
    Ok(d)
}

/// The allocation sizes of a C image description: `allocation_size` is plane 0's;
/// `plane_allocation_sizes[0]` is 0 or the same.
fn image_sizes(i: &vkcuda_share_image_description) -> Result<[u64; 3]> {
    let mut sizes = i.plane_allocation_sizes;
    if sizes[0] != 0 && sizes[0] != i.allocation_size {
        return Err(Error::invalid(format!(
            "description->image.plane_allocation_sizes[0] ({}) is not \
             description->image.allocation_size ({}): both are plane 0's size (0 leaves it to \
             allocation_size)",
            sizes[0], i.allocation_size
        )));
    }
    sizes[0] = i.allocation_size;
    Ok(sizes)
}

/// Runs `f` with the options from C (NULL: the defaults) and the buffer usage.
unsafe fn with_options<T>(
    options: *const vkcuda_share_options,
    f: impl FnOnce(&Options, vk::BufferUsageFlags) -> Result<T>,
) -> Result<T> {
    let o = options.as_ref();
    let flags = o.map_or(0, |o| o.flags);
    check_flags(flags, 0, "options->flags")?;
    let timeout = match o.map_or(0, |o| o.timeout_ns) {
        0 => Some(Duration::from_nanos(VKCUDA_SHARE_DEFAULT_TIMEOUT_NS)),
        u64::MAX => None,
        t => Some(Duration::from_nanos(t)),
    };
    let usage = vk::BufferUsageFlags::from_raw(o.map_or(0, |o| o.buffer_usage));
    let user = o.map_or(std::ptr::null_mut(), |o| o.peer_check_user);
    let callback;
    let peer = match o.and_then(|o| o.peer_check) {
        Some(check) => {
            // SAFETY: the caller's function, called as documented.
            callback = move |p: &Peer| unsafe { check(p.pid, p.uid, p.gid, user) } != 0;
            PeerPolicy::Check(&callback)
        }
        None => PeerPolicy::SameUser,
    };
    f(&Options { timeout, peer }, usage)
}

/// The same as `import_taking` for several fds: all are closed when `import`
/// succeeded, none otherwise (their file offsets as they were).
unsafe fn import_taking_all<T>(
    fds: &[i32],
    import: impl FnOnce(&[BorrowedFd<'_>]) -> Result<T>,
) -> Result<T> {
    let made = import(&fd::open_all(fds)?)?;
    for &fd in fds {
        libc::close(fd);
    }
    Ok(made)
}

/// The fds of a C array: `count` of them (1 to `VKCUDA_SHARE_MAX_FDS`).
unsafe fn fds_arg<'a>(fds: *const i32, count: u32) -> Result<&'a [i32]> {
    if fds.is_null() {
        return Err(Error::null("fds"));
    }
    if count == 0 || count > VKCUDA_SHARE_MAX_FDS {
        return Err(Error::invalid(format!(
            "fd_count is {count}, not 1 to VKCUDA_SHARE_MAX_FDS ({VKCUDA_SHARE_MAX_FDS})"
        )));
    }
    let list = std::slice::from_raw_parts(fds, count as usize);
    for (i, &a) in list.iter().enumerate() {
        if list[..i].contains(&a) {
            return Err(Error::invalid(format!(
                "fds[{i}] is fd {a} again: each plane comes with an fd of its own"
            )));
        }
    }
    Ok(list)
}

/// Fills `*description` with what another process needs to import the buffer:
/// the device UUID and the buffer's allocator, allocation size, offset, size and
/// dedicated flag.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_describe(
    buffer: *const vkcuda_buffer,
    description: *mut vkcuda_share_description,
) -> vkcuda_result {
    boundary("vkcuda_buffer_describe", || {
        let b = handle::get(buffer, "buffer")?;
        let o = out(description, "description")?;
        *o = to_c(&ipc::describe_buffer(b));
        Ok(())
    })
}

/// Fills `*description` with the semaphore's type, its current value (timeline)
/// and the device UUID.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_describe(
    semaphore: *const vkcuda_semaphore,
    description: *mut vkcuda_share_description,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_describe", || {
        let s = handle::get(semaphore, "semaphore")?;
        let o = out(description, "description")?;
        *o = to_c(&ipc::describe_semaphore(s)?);
        Ok(())
    })
}

/// Fills `*description` with the image's description (defaults resolved), its
/// allocation size (each plane's for a disjoint multi-planar image) and the device
/// UUID: what another process needs to make a `VkImage` of the same description on
/// the memory fd (`vkcuda_image_export_fd`; for a disjoint multi-planar image,
/// made only in Vulkan-only contexts, one fd per plane,
/// `vkcuda_image_export_plane_fd`), or `vkcuda_image_send`.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_describe(
    image: *const vkcuda_image,
    description: *mut vkcuda_share_description,
) -> vkcuda_result {
    boundary("vkcuda_image_describe", || {
        let i = handle::get(image, "image")?;
        let o = out(description, "description")?;
        *o = to_c(&ipc::describe_image(i));
        Ok(())
    })
}

/// Writes the description as the library's little-endian record of
/// `VKCUDA_SHARE_DESCRIPTION_SIZE` bytes (magic, format version, size, kind, device UUID, the
/// kind's fields, zeros) into `bytes`, which has room for `size` bytes (at least
/// `VKCUDA_SHARE_DESCRIPTION_SIZE`). For transports other than a Unix socket; the
/// fd still has to travel by `SCM_RIGHTS` (or be duplicated by a parent). The
/// description is checked as strictly as `vkcuda_share_description_parse` checks,
/// with the same result: `VKCUDA_ERROR_INVALID_ARGUMENT` for any description it
/// refuses (`VKCUDA_ERROR_NULL_POINTER` for NULL pointers).
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_description_serialize(
    description: *const vkcuda_share_description,
    bytes: *mut u8,
    size: libc::size_t,
) -> vkcuda_result {
    boundary("vkcuda_share_description_serialize", || {
        let d = from_c(arg(description, "description")?)?;
        let bytes = out(bytes, "bytes")?;
        if size < ipc::DESCRIPTION_SIZE {
            return Err(Error::invalid(format!(
                "size {size} is less than VKCUDA_SHARE_DESCRIPTION_SIZE ({})",
                ipc::DESCRIPTION_SIZE
            )));
        }
        let record = d.to_bytes()?;
        std::ptr::copy_nonoverlapping(record.as_ptr(), bytes, record.len());
        Ok(())
    })
}

/// Reads a record written by `vkcuda_share_description_serialize` (or a send):
/// `size` must be exactly `VKCUDA_SHARE_DESCRIPTION_SIZE`. Strict:
/// `VKCUDA_ERROR_INVALID_ARGUMENT`, with a message saying which, for a truncated or
/// longer record, a wrong magic, an unknown format version or kind, a nonzero
/// reserved byte, or impossible values (a zero or overflowing size, a range past
/// its allocation, an unknown enum value, an image format the library does not
/// share). No other code: a record the library could not have written is malformed.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_description_parse(
    bytes: *const u8,
    size: libc::size_t,
    description: *mut vkcuda_share_description,
) -> vkcuda_result {
    boundary("vkcuda_share_description_parse", || {
        if bytes.is_null() {
            return Err(Error::null("bytes"));
        }
        let o = out(description, "description")?;
        // A record is never longer: refuse before making a slice of a size C made up.
        if size > ipc::DESCRIPTION_SIZE {
            return Err(Error::invalid(format!(
                "{size} bytes where a description has {}",
                ipc::DESCRIPTION_SIZE
            )));
        }
        let d = Description::parse(std::slice::from_raw_parts(bytes, size))?;
        *o = to_c(&d);
        Ok(())
    })
}

/// Imports a buffer from another process's description and memory fd into
/// `context`: a new `VkBuffer` with `usage` (0: the default of create) on the
/// imported memory and, unless the context is Vulkan-only, a CUDA view. The
/// description must be of a buffer (`VKCUDA_ERROR_INVALID_ARGUMENT`) from the
/// context's device (`VKCUDA_ERROR_DEVICE_MISMATCH`). On success the library has
/// taken `fd`; on failure `fd` is untouched and still the caller's.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_import_description(
    context: *const vkcuda_context,
    description: *const vkcuda_share_description,
    fd: i32,
    usage: VkBufferUsageFlags,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_import_description", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let ctx = ctx_arg(context)?;
            let d = from_c(arg(description, "description")?)?;
            let usage = vk::BufferUsageFlags::from_raw(usage);
            let inner = import_taking(fd, |h| ipc::import_buffer(ctx, &d, h, usage))?;
            Ok(handle::boxed::<vkcuda_buffer>(inner))
        })();
        write_handle(buffer, made)
    })
}

/// Imports a semaphore from another process's description and fd into `context`:
/// a new `VkSemaphore` of the described type whose payload is the fd's
/// (`vkImportSemaphoreFdKHR`, permanent) and, unless the context is Vulkan-only, a
/// CUDA import. Needs `VK_KHR_external_semaphore_fd`
/// (`VKCUDA_ERROR_EXTENSION_NOT_PRESENT`). The library's value checks start at
/// the timeline's current value and are this process's own: the exporter's
/// signals are not known here. On success the library has taken `fd`; on failure
/// `fd` is untouched and still the caller's.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_import_description(
    context: *const vkcuda_context,
    description: *const vkcuda_share_description,
    fd: i32,
    semaphore: *mut *mut vkcuda_semaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_import_description", || {
        let made = (|| {
            out(semaphore, "semaphore")?;
            let ctx = ctx_arg(context)?;
            let d = from_c(arg(description, "description")?)?;
            let inner = import_taking(fd, |h| ipc::import_semaphore(ctx, &d, h))?;
            Ok(handle::boxed::<vkcuda_semaphore>(inner))
        })();
        write_handle(semaphore, made)
    })
}

/// Sends a description and `fd` over `socket_fd`, a connected `AF_UNIX`
/// `SOCK_STREAM` or `SOCK_SEQPACKET` socket: one record of
/// `VKCUDA_SHARE_DESCRIPTION_SIZE` bytes with `fd` attached (`SCM_RIGHTS`). `fd` stays the caller's: the
/// peer gets its own reference to the same object. Before sending, the peer is
/// checked (see `vkcuda_share_options`; `VKCUDA_ERROR_PERMISSION_DENIED`).
/// Partial writes and `EINTR` are handled; a closed peer gives
/// `VKCUDA_ERROR_INVALID_STATE` (never `SIGPIPE`), a peer that does not read within
/// the timeout `VKCUDA_ERROR_TIMEOUT`. For objects the library has no receive of
/// its own for (images), or fds made elsewhere.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_send(
    socket_fd: i32,
    description: *const vkcuda_share_description,
    fd: i32,
    options: *const vkcuda_share_options,
) -> vkcuda_result {
    boundary("vkcuda_share_send", || {
        let d = from_c(arg(description, "description")?)?;
        if d.fd_count() != 1 {
            return Err(Error::invalid(format!(
                "the {} description comes with {} fds (one per plane): send it with \
                 vkcuda_share_send_fds",
                d.kind().name(),
                d.fd_count()
            )));
        }
        with_options(options, |o, _| {
            ipc::send(fd::socket(socket_fd)?, &d, &fd::open_all(&[fd])?, o)
        })
    })
}

/// Sends a description and its `fd_count` fds (`fds`, in plane order for a
/// disjoint multi-planar image: as many as the description says, at most
/// `VKCUDA_SHARE_MAX_FDS`) over `socket_fd`, as `vkcuda_share_send` sends one:
/// one record with every fd attached (`SCM_RIGHTS`), the same checks and errors.
/// The fds stay the caller's.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_send_fds(
    socket_fd: i32,
    description: *const vkcuda_share_description,
    fds: *const i32,
    fd_count: u32,
    options: *const vkcuda_share_options,
) -> vkcuda_result {
    boundary("vkcuda_share_send_fds", || {
        let d = from_c(arg(description, "description")?)?;
        let fds = fds_arg(fds, fd_count)?;
        with_options(options, |o, _| {
            ipc::send(fd::socket(socket_fd)?, &d, &fd::open_all(fds)?, o)
        })
    })
}

/// Receives one description and its fd from `socket_fd` (a connected `AF_UNIX`
/// `SOCK_STREAM` or `SOCK_SEQPACKET` socket), waiting at most the timeout. Checks
/// the peer first (see `vkcuda_share_options`), reads exactly one record (never
/// more: what follows stays in the socket), takes the fds with
/// `MSG_CMSG_CLOEXEC`, parses the record strictly and checks the fd count. On
/// success `*description` is written and `*fd` is a new descriptor **the caller
/// owns**. On any failure every descriptor that arrived is closed and nothing is
/// written: `VKCUDA_ERROR_TIMEOUT` (a silent peer), `VKCUDA_ERROR_INVALID_STATE` (the
/// peer closed the connection, before or in the middle of a record),
/// `VKCUDA_ERROR_INVALID_ARGUMENT` (a bad record, a wrong number of fds, more fds than
/// fit, not a connected Unix socket), `VKCUDA_ERROR_PERMISSION_DENIED`. After a
/// failure the connection's framing is unknown: close it.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_receive(
    socket_fd: i32,
    options: *const vkcuda_share_options,
    description: *mut vkcuda_share_description,
    fd: *mut i32,
) -> vkcuda_result {
    boundary("vkcuda_share_receive", || {
        let o = out(description, "description")?;
        let fd_out = out(fd, "fd")?;
        let (d, mut handles) = with_options(options, |opts, _| {
            ipc::receive(fd::socket(socket_fd)?, opts)
        })?;
        if handles.len() != 1 {
            return Err(Error::invalid(format!(
                "the peer sent a {} description with {} fds (one per plane), which this call \
                 cannot return (they were closed): receive it with vkcuda_share_receive_fds",
                d.kind().name(),
                handles.len()
            )));
        }
        *o = to_c(&d);
        *fd_out = std::os::fd::IntoRawFd::into_raw_fd(handles.pop().expect("one fd"));
        Ok(())
    })
}

/// Receives one description and all its fds from `socket_fd`, as
/// `vkcuda_share_receive` does: the same checks, timeouts and errors. `fds` has
/// room for `fd_capacity` fds (`VKCUDA_SHARE_MAX_FDS` is always enough). On
/// success `*description`, `*fd_count` and the first `*fd_count` entries of `fds`
/// are written (in plane order for a disjoint multi-planar image), and those fds are new
/// descriptors **the caller owns**; on any failure every fd that arrived is closed
/// and nothing is written (a description with more fds than `fd_capacity`:
/// `VKCUDA_ERROR_INVALID_ARGUMENT`).
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_share_receive_fds(
    socket_fd: i32,
    options: *const vkcuda_share_options,
    description: *mut vkcuda_share_description,
    fds: *mut i32,
    fd_capacity: u32,
    fd_count: *mut u32,
) -> vkcuda_result {
    boundary("vkcuda_share_receive_fds", || {
        let o = out(description, "description")?;
        if fds.is_null() {
            return Err(Error::null("fds"));
        }
        let count_out = out(fd_count, "fd_count")?;
        if fd_capacity == 0 {
            return Err(Error::invalid(
                "fd_capacity is 0: pass room for VKCUDA_SHARE_MAX_FDS fds",
            ));
        }
        let (d, handles) = with_options(options, |opts, _| {
            ipc::receive(fd::socket(socket_fd)?, opts)
        })?;
        if handles.len() > fd_capacity as usize {
            return Err(Error::invalid(format!(
                "the peer sent a {} description with {} fds, more than fd_capacity ({fd_capacity}): \
                 all were closed",
                d.kind().name(),
                handles.len()
            )));
        }
        *o = to_c(&d);
        *count_out = handles.len() as u32;
        for (i, h) in handles.into_iter().enumerate() {
            *fds.add(i) = std::os::fd::IntoRawFd::into_raw_fd(h);
        }
        Ok(())
    })
}

/// Sends the buffer to the peer on `socket_fd`: its description and a new memory
/// fd (closed here once the kernel has it), as `vkcuda_share_send`. The peer
/// imports it with `vkcuda_buffer_receive`. The receiver can read and write the
/// whole allocation from then on, until it destroys its import, independently of
/// this buffer's lifetime.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_send(
    buffer: *const vkcuda_buffer,
    socket_fd: i32,
    options: *const vkcuda_share_options,
) -> vkcuda_result {
    boundary("vkcuda_buffer_send", || {
        let b = handle::get(buffer, "buffer")?;
        with_options(options, |o, _| {
            ipc::send_buffer(b, fd::socket(socket_fd)?, o)
        })
    })
}

/// Receives a buffer sent by `vkcuda_buffer_send` (or a buffer description with
/// `vkcuda_share_send`) and imports it into `context` (the Vulkan view, and the
/// CUDA view unless the context is Vulkan-only), with `options->buffer_usage`.
/// Errors as for `vkcuda_share_receive`, then as for
/// `vkcuda_buffer_import_description` (a description of another kind, another
/// device, an fd that is not GPU memory). Every received fd is closed or owned by
/// the new buffer, on every path. `*buffer` is written on success, set to NULL on
/// failure.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_buffer_receive(
    context: *const vkcuda_context,
    socket_fd: i32,
    options: *const vkcuda_share_options,
    buffer: *mut *mut vkcuda_buffer,
) -> vkcuda_result {
    boundary("vkcuda_buffer_receive", || {
        let made = (|| {
            out(buffer, "buffer")?;
            let ctx = ctx_arg(context)?;
            let inner = with_options(options, |o, usage| {
                ipc::receive_buffer(ctx, fd::socket(socket_fd)?, o, usage)
            })?;
            Ok(handle::boxed::<vkcuda_buffer>(inner))
        })();
        write_handle(buffer, made)
    })
}

/// Sends the semaphore to the peer on `socket_fd`: its description and a new
/// payload fd (closed here once the kernel has it). The receiver can signal and
/// wait on it from then on.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_send(
    semaphore: *const vkcuda_semaphore,
    socket_fd: i32,
    options: *const vkcuda_share_options,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_send", || {
        let s = handle::get(semaphore, "semaphore")?;
        with_options(options, |o, _| {
            ipc::send_semaphore(s, fd::socket(socket_fd)?, o)
        })
    })
}

/// Receives a semaphore sent by `vkcuda_semaphore_send` and imports it into
/// `context` as `vkcuda_semaphore_import_description` does. Errors as for
/// `vkcuda_share_receive`, then as for the import. Every received fd is closed or
/// owned by the new semaphore, on every path. `*semaphore` is written on success,
/// set to NULL on failure.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_semaphore_receive(
    context: *const vkcuda_context,
    socket_fd: i32,
    options: *const vkcuda_share_options,
    semaphore: *mut *mut vkcuda_semaphore,
) -> vkcuda_result {
    boundary("vkcuda_semaphore_receive", || {
        let made = (|| {
            out(semaphore, "semaphore")?;
            let ctx = ctx_arg(context)?;
            let inner = with_options(options, |o, _| {
                ipc::receive_semaphore(ctx, fd::socket(socket_fd)?, o)
            })?;
            Ok(handle::boxed::<vkcuda_semaphore>(inner))
        })();
        write_handle(semaphore, made)
    })
}

/// Sends the image to the peer on `socket_fd`: its description and a new memory
/// fd (one per plane of a disjoint multi-planar image; closed here once the kernel has them). The peer receives it with
/// `vkcuda_image_receive` (or `vkcuda_share_receive` and
/// `vkcuda_image_import_description`, which do not carry the colour). A
/// multi-planar image's colour description travels in the record.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_send(
    image: *const vkcuda_image,
    socket_fd: i32,
    options: *const vkcuda_share_options,
) -> vkcuda_result {
    boundary("vkcuda_image_send", || {
        let i = handle::get(image, "image")?;
        with_options(options, |o, _| {
            ipc::send_image(i, fd::socket(socket_fd)?, o)
        })
    })
}

/// Imports an image from another process's description and memory fd into
/// `context`: a new `VkImage` of `description->image.description` on a dedicated
/// allocation of `description->image.allocation_size` bytes imported from `fd` and,
/// unless the context is Vulkan-only, its CUDA view (a single-plane image's
/// mipmapped array, a shared video frame's pitched planes). The description
/// must be of an image (`VKCUDA_ERROR_INVALID_ARGUMENT`) from the context's device
/// (`VKCUDA_ERROR_DEVICE_MISMATCH`); a disjoint multi-planar image comes with one
/// fd per plane: `VKCUDA_ERROR_INVALID_ARGUMENT`, use
/// `vkcuda_image_import_description_fds`. On success the library has taken `fd`;
/// on failure `fd` is untouched and still the caller's.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_import_description(
    context: *const vkcuda_context,
    description: *const vkcuda_share_description,
    fd: i32,
    image: *mut *mut vkcuda_image,
) -> vkcuda_result {
    boundary("vkcuda_image_import_description", || {
        let made = (|| {
            out(image, "image")?;
            let ctx = ctx_arg(context)?;
            let d = from_c(arg(description, "description")?)?;
            if d.kind() == Kind::Image && d.fd_count() != 1 {
                return Err(Error::invalid(format!(
                    "the image has {} planes, each with its own memory fd: import it with \
                     vkcuda_image_import_description_fds",
                    d.fd_count()
                )));
            }
            let inner = import_taking(fd, |h| ipc::import_image(ctx, &d, &[h]))?;
            Ok(handle::boxed::<vkcuda_image>(inner))
        })();
        write_handle(image, made)
    })
}

/// Imports an image from another process's description and its memory fds, one
/// per allocation (`fd_count` of them: 1, or the plane count of a disjoint
/// multi-planar image, in plane order), into `context`, as
/// `vkcuda_image_import_description` does: a new `VkImage` of the description on
/// the imported memory (a disjoint multi-planar image: one allocation per plane of
/// `description->image.plane_allocation_sizes`, Vulkan-only contexts alone) and,
/// unless the context is Vulkan-only, the CUDA view: a single-plane image's
/// mipmapped array, or a shared video frame's mapped allocation (pitched planes,
/// `vkcuda_image_get_plane_pointer`). On success the
/// library has taken every fd; on failure none is touched.
///
/// Thread-safety: may be called from any thread.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_import_description_fds(
    context: *const vkcuda_context,
    description: *const vkcuda_share_description,
    fds: *const i32,
    fd_count: u32,
    image: *mut *mut vkcuda_image,
) -> vkcuda_result {
    boundary("vkcuda_image_import_description_fds", || {
        let made = (|| {
            out(image, "image")?;
            let ctx = ctx_arg(context)?;
            let d = from_c(arg(description, "description")?)?;
            let fds = fds_arg(fds, fd_count)?;
            let inner = import_taking_all(fds, |h| ipc::import_image(ctx, &d, h))?;
            Ok(handle::boxed::<vkcuda_image>(inner))
        })();
        write_handle(image, made)
    })
}

/// Receives an image from the peer on `socket_fd` (`vkcuda_image_send`), checks
/// the peer, the description and the fd count, and imports it into `context` as
/// `vkcuda_image_import_description` does; a multi-planar image takes the colour
/// description it was sent with. Every received fd is closed or owned by the new
/// image, on every path.
///
/// Thread-safety: sends and receives on one socket must not overlap.
///
/// @ingroup share
#[no_mangle]
#[must_use]
pub unsafe extern "C" fn vkcuda_image_receive(
    context: *const vkcuda_context,
    socket_fd: i32,
    options: *const vkcuda_share_options,
    image: *mut *mut vkcuda_image,
) -> vkcuda_result {
    boundary("vkcuda_image_receive", || {
        let made = (|| {
            out(image, "image")?;
            let ctx = ctx_arg(context)?;
            let inner = with_options(options, |o, _| {
                ipc::receive_image(ctx, fd::socket(socket_fd)?, o)
            })?;
            Ok(handle::boxed::<vkcuda_image>(inner))
        })();
        write_handle(image, made)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constants_match_the_format() {
        assert_eq!(
            VKCUDA_SHARE_DESCRIPTION_SIZE as usize,
            ipc::DESCRIPTION_SIZE
        );
        assert_eq!(VKCUDA_SHARE_FORMAT_VERSION, ipc::DESCRIPTION_VERSION as u32);
    }

    #[test]
    fn parse_refuses_sizes_past_a_record_without_reading_them() {
        let d = Description {
            device_uuid: [3; 16],
            object: Object::Semaphore {
                kind: vkcuda::semaphore::Kind::Timeline,
                value: 9,
            },
        };
        let mut bytes = [0u8; 2 * ipc::DESCRIPTION_SIZE];
        bytes[..ipc::DESCRIPTION_SIZE].copy_from_slice(&d.to_bytes().unwrap());
        let mut c = to_c(&d);
        for size in [ipc::DESCRIPTION_SIZE + 1, isize::MAX as usize, usize::MAX] {
            let r = unsafe { vkcuda_share_description_parse(bytes.as_ptr(), size, &mut c) };
            assert_eq!(r, vkcuda_result::VKCUDA_ERROR_INVALID_ARGUMENT, "{size}");
        }
        let r = unsafe {
            vkcuda_share_description_parse(bytes.as_ptr(), ipc::DESCRIPTION_SIZE, &mut c)
        };
        assert_eq!(r, vkcuda_result::VKCUDA_SUCCESS);
    }

    #[test]
    fn descriptions_written_out_carry_no_stack_bytes_in_their_padding() {
        let d = Description {
            device_uuid: [3; 16],
            object: Object::Semaphore {
                kind: vkcuda::semaphore::Kind::Timeline,
                value: 9,
            },
        };
        let bytes = d.to_bytes().unwrap();
        let size = std::mem::size_of::<vkcuda_share_description>();
        let mut c = std::mem::MaybeUninit::<vkcuda_share_description>::uninit();
        // SAFETY: `c` is `size` bytes; the parse writes the whole struct.
        let raw = unsafe {
            std::ptr::write_bytes(c.as_mut_ptr().cast::<u8>(), 0xAA, size);
            let r = vkcuda_share_description_parse(bytes.as_ptr(), bytes.len(), c.as_mut_ptr());
            assert_eq!(r, vkcuda_result::VKCUDA_SUCCESS);
            std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), size)
        };
        // After semaphore_type (4 bytes, then a u64) and after the image's
        // create-info (nine u32, then a u64).
        let holes = [
            std::mem::offset_of!(vkcuda_share_description, semaphore) + 4,
            std::mem::offset_of!(vkcuda_share_description, image)
                + std::mem::size_of::<vkcuda_image_create_info>(),
        ];
        for at in holes {
            assert_eq!(raw[at..at + 4], [0; 4], "padding at byte {at}");
        }
    }

    #[test]
    fn c_descriptions_are_checked_like_records() {
        let d = Description {
            device_uuid: [3; 16],
            object: Object::Semaphore {
                kind: vkcuda::semaphore::Kind::Timeline,
                value: 9,
            },
        };
        let c = to_c(&d);
        assert_eq!(from_c(&c).unwrap(), d);
        let mut bad = c;
        bad.kind = vkcuda_share_kind_raw(0);
        assert!(from_c(&bad)
            .unwrap_err()
            .message
            .contains("vkcuda_share_kind"));
        let mut bad = c;
        bad.semaphore.semaphore_type = vkcuda_semaphore_type_raw(5);
        assert!(from_c(&bad).is_err());
        let mut bad = c;
        bad.flags = 1;
        assert!(from_c(&bad).is_err());
        let mut bin = c;
        bin.semaphore.semaphore_type = vkcuda_semaphore_type_raw(1);
        assert!(from_c(&bin).unwrap_err().message.contains("binary"));
        bin.semaphore.value = 0;
        from_c(&bin).unwrap();
    }
}
