//! Owned file descriptors: closed exactly once, duplicated explicitly.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use crate::error::{Error, ErrorKind, Result};

/// Takes ownership of `fd` (closed when the returned value drops).
///
/// # Safety
/// `fd` must be open and owned by nobody else.
pub unsafe fn adopt(fd: RawFd) -> OwnedFd {
    OwnedFd::from_raw_fd(fd)
}

/// Duplicates a descriptor the caller keeps owning (`F_DUPFD_CLOEXEC`).
pub fn dup_borrowed(fd: RawFd) -> Result<OwnedFd> {
    if fd < 0 {
        return Err(Error::invalid(format!("file descriptor {fd} is not valid")));
    }
    // SAFETY: fcntl only reads the descriptor number; a bad one gives EBADF.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        let err = std::io::Error::last_os_error();
        let kind = if err.raw_os_error() == Some(libc::EBADF) {
            ErrorKind::InvalidArgument
        } else {
            ErrorKind::OutOfMemory
        };
        return Err(Error::new(
            kind,
            format!("duplicating file descriptor {fd}: {err}"),
        ));
    }
    // SAFETY: `new` was just created by fcntl and is owned by nobody else.
    Ok(unsafe { adopt(new) })
}

fn identity(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat writes into a zeroed struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// A descriptor handed to a driver import that takes ownership on success.
///
/// On success the driver owns it. On failure the spec says it is still ours, but
/// some drivers close it anyway (Mesa's lavapipe 22.3 does for a bad OPAQUE_FD), so
/// it is closed only if it is still open and still the same file; otherwise it is
/// forgotten. Either way it is never closed twice.
pub struct Handoff {
    fd: Option<OwnedFd>,
    id: Option<(u64, u64)>,
}

impl Handoff {
    pub fn new(fd: OwnedFd) -> Self {
        let id = identity(fd.as_raw_fd());
        Handoff { fd: Some(fd), id }
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    /// The driver reported success: it owns the descriptor now.
    pub fn taken(mut self) {
        if let Some(fd) = self.fd.take() {
            let _ = fd.into_raw_fd();
        }
    }
}

impl Drop for Handoff {
    /// The import failed (or never ran): close the descriptor if it is still ours.
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            let raw = fd.into_raw_fd();
            let still_ours = self.id.is_some() && identity(raw) == self.id;
            if still_ours {
                // SAFETY: the descriptor is open and refers to the file we handed over.
                unsafe { libc::close(raw) };
            }
        }
    }
}

/// The size of what `fd` refers to when the kernel knows it (memfd, dma-buf, file),
/// or `None` (for example an NVIDIA opaque handle, which reports 0).
pub fn known_size(fd: impl AsFd) -> Option<u64> {
    let raw = fd.as_fd().as_raw_fd();
    // SAFETY: fstat writes into a zeroed struct we own; the descriptor is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(raw, &mut st) } == 0 && st.st_size > 0 {
        return Some(st.st_size as u64);
    }
    // dma-bufs report their size through lseek; the offset is shared with every
    // duplicate of the descriptor (the caller's too), so it is put back.
    let _offset = OffsetGuard::new(raw);
    let end = unsafe { libc::lseek(raw, 0, libc::SEEK_END) };
    (end > 0).then_some(end as u64)
}

/// Puts a descriptor's file offset back where it was when dropped. Duplicates of a
/// descriptor share its open file description, offset included, so a driver that
/// reads through the duplicate the library gave it (lavapipe reads a memfd's header)
/// moves the caller's offset too: the borrowing imports (`Buffer::import_fd`,
/// `Image::import_fd`, `Semaphore::import_fd`) hold one, so the caller's fd comes
/// back as it was, whether the import succeeded or failed. Descriptors without an
/// offset (NVIDIA's opaque fds, sockets) are left alone.
pub struct OffsetGuard {
    fd: RawFd,
    offset: Option<libc::off_t>,
}

impl OffsetGuard {
    pub fn new(fd: RawFd) -> OffsetGuard {
        // SAFETY: lseek on a descriptor number; a bad or unseekable one gives -1.
        let at = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
        OffsetGuard {
            fd,
            offset: (at >= 0).then_some(at),
        }
    }
}

impl Drop for OffsetGuard {
    fn drop(&mut self) {
        if let Some(at) = self.offset {
            // SAFETY: as in `new`; the descriptor is still open (its owner holds it).
            unsafe { libc::lseek(self.fd, at, libc::SEEK_SET) };
        }
    }
}
