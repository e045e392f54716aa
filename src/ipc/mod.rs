//! Cross-process sharing: describe a buffer, semaphore or image, send the
//! description and its fd over a connected Unix socket, and import them into
//! another process's context.
//!
//! Security model: an fd is a capability. Whoever holds a memory fd can map, read
//! and write the memory; whoever holds a semaphore fd can signal and wait on it.
//! The socket decides who can get one: the permissions of a socket path decide
//! who can connect, and both ends check the peer's credentials (`SO_PEERCRED`,
//! same user by default) before any fd crosses. See docs/CROSS_PROCESS.md.
//!
//! ```no_run
//! use std::os::unix::net::UnixStream;
//! use std::os::fd::AsFd;
//! use vkcuda::ash::vk;
//! use vkcuda::buffer::{Allocator, Buffer};
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::ipc::{self, Options};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::Primary)?;
//! let (a, b) = UnixStream::pair().expect("a socket pair");
//! // One process sends (here both ends are in one process)...
//! let buf = Buffer::create(&ctx, 1 << 20, vk::BufferUsageFlags::empty(), Allocator::Cuda)?;
//! ipc::send_buffer(&buf, a.as_fd(), &Options::default())?;
//! // ...the other receives and imports: the same memory, its own views.
//! let peer = ipc::receive_buffer(&ctx, b.as_fd(), &Options::default(), vk::BufferUsageFlags::empty())?;
//! assert_eq!(peer.layout().size, buf.layout().size);
//! # Ok(())
//! # }
//! ```

pub(crate) mod description;
pub(crate) mod socket;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

use ash::vk;

use super::cuda;
use crate::buffer::Buffer;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::image::Image;
use crate::semaphore::{self, Semaphore};

pub use description::{Description, Kind, Object};

/// The size in bytes of a serialized [`Description`] ([`Description::to_bytes`]).
pub const DESCRIPTION_SIZE: usize = description::SIZE;
/// The version of the serialized [`Description`] format this library writes.
pub const DESCRIPTION_VERSION: u16 = description::VERSION;
pub use socket::{Options, Peer, PeerPolicy};

/// The description of a shared buffer.
pub fn describe_buffer(b: &Buffer) -> Description {
    Description {
        device_uuid: b.context().vk.props.uuid,
        object: Object::Buffer(b.layout()),
    }
}

/// The description of a shared semaphore, with its current value (timeline).
pub fn describe_semaphore(s: &Semaphore) -> Result<Description> {
    let value = match s.kind() {
        semaphore::Kind::Timeline => s.value()?,
        semaphore::Kind::Binary => 0,
    };
    Ok(Description {
        device_uuid: s.context().vk.props.uuid,
        object: Object::Semaphore {
            kind: s.kind(),
            value,
        },
    })
}

/// The description of a shared image (defaults resolved, one allocation size per
/// plane, and a multi-planar image's colour description).
pub fn describe_image(i: &Image) -> Description {
    let mut allocation_sizes = [0; 3];
    for (p, m) in i.allocations().iter().enumerate() {
        allocation_sizes[p] = m.allocation_size;
    }
    Description {
        device_uuid: i.context().vk.props.uuid,
        object: Object::Image {
            desc: *i.description(),
            allocation_sizes,
            // Multi-planar images have one (single-plane ones refuse the call).
            color: i.video_color().ok(),
        },
    }
}

/// DEVICE_MISMATCH unless the description comes from the context's device.
pub(crate) fn check_device(ctx: &Context, d: &Description) -> Result<()> {
    let mine = ctx.vk.props.uuid;
    if d.device_uuid != mine {
        return Err(Error::new(
            ErrorKind::DeviceMismatch,
            format!(
                "the {} was exported from the device with UUID {}, but this context's device '{}' has \
                 UUID {}: import it into a context on the same GPU",
                d.kind().name(),
                cuda::format_uuid(&d.device_uuid),
                ctx.vk.props.name,
                cuda::format_uuid(&mine)
            ),
        ));
    }
    Ok(())
}

fn expect_kind(d: &Description, want: Kind) -> Result<()> {
    if d.kind() != want {
        return Err(Error::invalid(format!(
            "the description is of a {}, not a {}",
            d.kind().name(),
            want.name()
        )));
    }
    Ok(())
}

/// Imports a buffer from its description and fd (borrowed: the drivers get
/// duplicates). A description of another kind or another device, or an fd that
/// is certainly not a GPU handle (a pipe, a socket, ...), is refused before the
/// import.
pub fn import_buffer(
    ctx: &Arc<Context>,
    d: &Description,
    handle: BorrowedFd<'_>,
    usage: vk::BufferUsageFlags,
) -> Result<Buffer> {
    expect_kind(d, Kind::Buffer)?;
    d.check()?;
    check_device(ctx, d)?;
    let Object::Buffer(layout) = d.object else {
        unreachable!("checked above")
    };
    check_handle(d, handle)?;
    Buffer::import_fd(ctx, handle, layout, usage)
}

/// Imports a semaphore from its description and fd (borrowed).
pub fn import_semaphore(
    ctx: &Arc<Context>,
    d: &Description,
    handle: BorrowedFd<'_>,
) -> Result<Semaphore> {
    expect_kind(d, Kind::Semaphore)?;
    d.check()?;
    check_device(ctx, d)?;
    let Object::Semaphore { kind, .. } = d.object else {
        unreachable!("checked above")
    };
    check_handle(d, handle)?;
    Semaphore::import_fd(ctx, handle, kind, None)
}

/// Imports an image from its description and memory fds, one per plane
/// (borrowed). A multi-planar image takes the description's colour.
pub fn import_image(
    ctx: &Arc<Context>,
    d: &Description,
    handles: &[BorrowedFd<'_>],
) -> Result<Image> {
    expect_kind(d, Kind::Image)?;
    d.check()?;
    check_device(ctx, d)?;
    let Object::Image {
        desc,
        allocation_sizes,
        color,
    } = d.object
    else {
        unreachable!("checked above")
    };
    check_fd_count(d, handles.len())?;
    for h in handles {
        check_handle(d, *h)?;
    }
    let image = Image::import_fd(ctx, handles, &desc, &allocation_sizes[..d.fd_count()])?;
    if let Some(c) = color {
        image.set_video_color(&c)?;
    }
    Ok(image)
}

/// Refuses a number of fds other than the description's.
pub(crate) fn check_fd_count(d: &Description, given: usize) -> Result<()> {
    if given != d.fd_count() {
        return Err(Error::invalid(format!(
            "the {} description comes with {} fd{} (one per plane of a multi-planar image), not {given}",
            d.kind().name(),
            d.fd_count(),
            if d.fd_count() == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// Receives an image and imports it into `ctx`.
pub fn receive_image(ctx: &Arc<Context>, socket: BorrowedFd<'_>, opts: &Options) -> Result<Image> {
    receive_image_raw(ctx, socket.as_raw_fd(), opts)
}

fn receive_image_raw(ctx: &Arc<Context>, socket: RawFd, opts: &Options) -> Result<Image> {
    let (d, fds) = receive_raw(socket, opts)?;
    let borrowed: Vec<BorrowedFd> = fds.iter().map(|f| f.as_fd()).collect();
    import_image(ctx, &d, &borrowed)
}

/// Sends a description and its fds over `socket` (a connected Unix stream or
/// seqpacket socket) after checking the peer (`opts.peer`). The fds stay the
/// caller's: the peer gets its own references.
pub fn send(
    socket: BorrowedFd<'_>,
    d: &Description,
    handles: &[BorrowedFd<'_>],
    opts: &Options,
) -> Result<()> {
    let raw: Vec<RawFd> = handles.iter().map(|h| h.as_raw_fd()).collect();
    send_raw(socket.as_raw_fd(), d, &raw, opts)
}

/// [`send`] with descriptor numbers, each checked to be open (the C API's).
fn send_raw(socket: RawFd, d: &Description, handles: &[RawFd], opts: &Options) -> Result<()> {
    let bytes = d.to_bytes()?;
    check_fd_count(d, handles.len())?;
    for &handle in handles {
        // SAFETY: fcntl only reads the descriptor number.
        if handle < 0 || unsafe { libc::fcntl(handle, libc::F_GETFD) } < 0 {
            return Err(Error::invalid(format!(
                "fd {handle} is not an open file descriptor"
            )));
        }
    }
    socket::send(socket, &bytes, handles, opts)
}

/// Sends an object's description with new fds of it, after the socket and peer
/// checks (so no fd is exported for nothing).
fn send_object(
    socket: RawFd,
    opts: &Options,
    describe: impl FnOnce() -> Result<Description>,
    export: impl FnOnce() -> Result<Vec<OwnedFd>>,
) -> Result<()> {
    socket::check_socket(socket)?;
    socket::authorize(socket, &opts.peer)?;
    let bytes = describe()?.to_bytes()?;
    let fds = export()?;
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    socket::transmit(socket, &bytes, &raw, opts.timeout)
}

fn is_regular_file(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: fstat writes into a zeroed struct we own; the descriptor is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0;
    ok && st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// What an fd is, when it is certainly not a GPU memory or semaphore handle:
/// pipes, sockets, directories, terminals and the event-like anonymous inodes.
/// Some drivers read() a handle on import (Mesa's lavapipe reads a header from
/// its memfds), which blocks for ever on those: a peer could hang the receiver.
fn certainly_foreign(fd: BorrowedFd<'_>) -> Option<String> {
    let raw = fd.as_raw_fd();
    // SAFETY: fstat writes into a zeroed struct we own; the descriptor is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(raw, &mut st) } != 0 {
        return Some("a descriptor fstat cannot read".into());
    }
    let what = match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => Some("a pipe or FIFO"),
        libc::S_IFSOCK => Some("a socket"),
        libc::S_IFDIR => Some("a directory"),
        // SAFETY: isatty only reads the descriptor number.
        _ if unsafe { libc::isatty(raw) } == 1 => Some("a terminal"),
        _ => None,
    };
    if let Some(w) = what {
        return Some(w.to_string());
    }
    let target = std::fs::read_link(format!("/proc/self/fd/{raw}")).ok()?;
    let name = target.to_string_lossy();
    const EVENTS: [&str; 9] = [
        "[eventfd]",
        "[timerfd]",
        "[signalfd]",
        "[eventpoll]",
        "inotify",
        "[pidfd]",
        "[userfaultfd]",
        "[io_uring]",
        "[fanotify]",
    ];
    (name.starts_with("anon_inode:") && EVENTS.iter().any(|e| name.ends_with(e)))
        .then(|| format!("an event descriptor ({name})"))
}

fn check_handle(d: &Description, fd: BorrowedFd<'_>) -> Result<()> {
    // No driver's semaphore payload is a regular file. On the H200, after NVIDIA's
    // vkImportSemaphoreFdKHR was handed a memfd (VK_ERROR_INITIALIZATION_FAILED),
    // every later vkAllocateMemory of that test process failed: refuse it here.
    if d.kind() == Kind::Semaphore && is_regular_file(fd) {
        return Err(Error::invalid(
            "the fd for the semaphore is a regular file (a memfd or file), not a semaphore handle: refused before the import",
        ));
    }
    match certainly_foreign(fd) {
        Some(what) => Err(Error::invalid(format!(
            "the fd for the {} is {what}, not a GPU handle: refused before the import",
            d.kind().name()
        ))),
        None => Ok(()),
    }
}

/// Receives one description and its fds, checked: strict parsing, and exactly the
/// number of fds the description says (every received fd is closed otherwise).
/// The fds are the caller's to import ([`import_buffer`], ...) and close.
pub fn receive(socket: BorrowedFd<'_>, opts: &Options) -> Result<(Description, Vec<OwnedFd>)> {
    receive_raw(socket.as_raw_fd(), opts)
}

/// [`receive`] on a descriptor number (the C API's; checked by the socket calls).
fn receive_raw(socket: RawFd, opts: &Options) -> Result<(Description, Vec<OwnedFd>)> {
    let (bytes, fds) = socket::receive(socket, description::SIZE, description::MAX_FDS, opts)?;
    let d = Description::parse(&bytes).map_err(|e| {
        if fds.is_empty() {
            e
        } else {
            e.context(&format!(
                "the received description is not valid (the {} file descriptor(s) that came with it were closed)",
                fds.len()
            ))
        }
    })?;
    if fds.len() != d.fd_count() {
        return Err(Error::invalid(format!(
            "the peer sent {} file descriptor(s) with a {} description, which carries {}: {}",
            fds.len(),
            d.kind().name(),
            d.fd_count(),
            if fds.is_empty() {
                "nothing to import".to_string()
            } else {
                "all were closed".to_string()
            }
        )));
    }
    Ok((d, fds))
}

/// Receives a description of an object that comes with one fd.
fn receive_one(socket: RawFd, opts: &Options) -> Result<(Description, OwnedFd)> {
    let (d, mut fds) = receive_raw(socket, opts)?;
    if fds.len() != 1 {
        return Err(Error::invalid(format!(
            "the peer sent a {} description with {} fds (all were closed); this call takes one",
            d.kind().name(),
            fds.len()
        )));
    }
    Ok((d, fds.pop().expect("one fd")))
}

/// Sends a buffer: its description and a new fd (closed here once sent), after
/// the socket and peer checks (so no fd is exported for nothing).
pub fn send_buffer(b: &Buffer, socket: BorrowedFd<'_>, opts: &Options) -> Result<()> {
    send_buffer_raw(b, socket.as_raw_fd(), opts)
}

fn send_buffer_raw(b: &Buffer, socket: RawFd, opts: &Options) -> Result<()> {
    send_object(
        socket,
        opts,
        || Ok(describe_buffer(b)),
        || Ok(vec![b.export_fd()?]),
    )
}

/// Receives a buffer and imports it into `ctx`.
pub fn receive_buffer(
    ctx: &Arc<Context>,
    socket: BorrowedFd<'_>,
    opts: &Options,
    usage: vk::BufferUsageFlags,
) -> Result<Buffer> {
    receive_buffer_raw(ctx, socket.as_raw_fd(), opts, usage)
}

fn receive_buffer_raw(
    ctx: &Arc<Context>,
    socket: RawFd,
    opts: &Options,
    usage: vk::BufferUsageFlags,
) -> Result<Buffer> {
    crate::buffer::check_usage(usage)?;
    let (d, fd) = receive_one(socket, opts)?;
    import_buffer(ctx, &d, fd.as_fd(), usage)
}

/// Sends a semaphore: its description and a new fd (closed here once sent).
pub fn send_semaphore(s: &Semaphore, socket: BorrowedFd<'_>, opts: &Options) -> Result<()> {
    send_semaphore_raw(s, socket.as_raw_fd(), opts)
}

fn send_semaphore_raw(s: &Semaphore, socket: RawFd, opts: &Options) -> Result<()> {
    send_object(
        socket,
        opts,
        || describe_semaphore(s),
        || Ok(vec![s.export_fd()?]),
    )
}

/// Receives a semaphore and imports it into `ctx`.
pub fn receive_semaphore(
    ctx: &Arc<Context>,
    socket: BorrowedFd<'_>,
    opts: &Options,
) -> Result<Semaphore> {
    receive_semaphore_raw(ctx, socket.as_raw_fd(), opts)
}

fn receive_semaphore_raw(ctx: &Arc<Context>, socket: RawFd, opts: &Options) -> Result<Semaphore> {
    let (d, fd) = receive_one(socket, opts)?;
    import_semaphore(ctx, &d, fd.as_fd())
}

/// Sends an image: its description and a new fd per allocation (closed here once
/// sent).
pub fn send_image(i: &Image, socket: BorrowedFd<'_>, opts: &Options) -> Result<()> {
    send_image_raw(i, socket.as_raw_fd(), opts)
}

fn send_image_raw(i: &Image, socket: RawFd, opts: &Options) -> Result<()> {
    send_object(
        socket,
        opts,
        || Ok(describe_image(i)),
        // One fd per allocation: per plane of a disjoint image, else one (a video
        // frame's planes share its allocation).
        || {
            (0..i.allocation_count())
                .map(|p| i.export_plane_fd(p))
                .collect()
        },
    )
}
