//! The C door's file descriptors: a C caller passes a raw `int`, which an import
//! takes on success only. The Rust library borrows (`BorrowedFd`) and never
//! closes what it is given; this module turns one convention into the other.

use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use vkcuda::error::{Error, ErrorKind, Result};

/// Duplicates a descriptor the caller keeps owning (close-on-exec), refusing
/// negative and closed ones.
pub(crate) fn dup_borrowed(fd: RawFd) -> Result<OwnedFd> {
    if fd < 0 {
        return Err(Error::invalid(format!("file descriptor {fd} is not valid")));
    }
    // SAFETY: the descriptor is only duplicated (F_DUPFD_CLOEXEC); a closed one
    // gives EBADF, reported below.
    unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .map_err(|err| {
            let kind = if err.raw_os_error() == Some(libc::EBADF) {
                ErrorKind::InvalidArgument
            } else {
                ErrorKind::OutOfMemory
            };
            Error::new(kind, format!("duplicating file descriptor {fd}: {err}"))
        })
}

/// Puts the caller's descriptor's file offset back when dropped: the drivers get
/// duplicates, which share the offset (lavapipe reads a memfd's header), so a
/// caller whose import failed gets its fd back untouched. Descriptors without an
/// offset (NVIDIA's opaque fds, sockets) are left alone.
pub(crate) struct OffsetGuard {
    fd: RawFd,
    offset: Option<libc::off_t>,
}

impl OffsetGuard {
    pub(crate) fn new(fd: RawFd) -> OffsetGuard {
        // SAFETY: lseek on a descriptor number; a bad or unseekable one gives -1.
        let at = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
        OffsetGuard {
            fd,
            offset: (at >= 0).then_some(at),
        }
    }

    /// The import took the descriptor: nothing to restore.
    pub(crate) fn disarm(mut self) {
        self.offset = None;
    }
}

impl Drop for OffsetGuard {
    fn drop(&mut self) {
        if let Some(at) = self.offset {
            // SAFETY: as in `new`; the caller still owns the open descriptor.
            unsafe { libc::lseek(self.fd, at, libc::SEEK_SET) };
        }
    }
}

/// Whether `fd` names an open descriptor (`F_GETFD`).
fn is_open(fd: RawFd) -> bool {
    // SAFETY: fcntl only reads the descriptor number; a closed one gives EBADF.
    fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0
}

/// A C caller's socket descriptor, checked to be open, as the Rust API takes it.
/// The borrow lasts for the call that received `fd`, during which the C caller
/// keeps it open (the header's contract).
pub(crate) fn socket<'a>(fd: RawFd) -> Result<BorrowedFd<'a>> {
    if fd < 0 {
        return Err(Error::invalid(format!("socket_fd {fd} is not valid")));
    }
    if !is_open(fd) {
        return Err(Error::invalid(format!(
            "socket_fd {fd} is not a usable socket (it is not open)"
        )));
    }
    // SAFETY: open (checked above) and kept open by the caller for this call.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// A C caller's descriptors to send, each checked to be open.
pub(crate) fn open_all<'a>(fds: &[RawFd]) -> Result<Vec<BorrowedFd<'a>>> {
    fds.iter()
        .map(|&fd| {
            if !is_open(fd) {
                return Err(Error::invalid(format!(
                    "fd {fd} is not an open file descriptor"
                )));
            }
            // SAFETY: open (checked) and kept open by the caller for this call.
            Ok(unsafe { BorrowedFd::borrow_raw(fd) })
        })
        .collect()
}
