//! Owned file descriptors: closed exactly once, duplicated explicitly.

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

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

/// Hands ownership of the descriptor to a driver that takes it on success.
/// Call only after the driver reported success.
pub fn release_to_driver(fd: OwnedFd) -> RawFd {
    fd.into_raw_fd()
}

/// The size of what `fd` refers to when the kernel knows it (memfd, dma-buf, file),
/// or `None` (for example an NVIDIA opaque handle, which reports 0).
pub fn known_size(fd: &OwnedFd) -> Option<u64> {
    let raw = fd.as_raw_fd();
    // SAFETY: fstat writes into a zeroed struct we own; the descriptor is open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(raw, &mut st) } == 0 && st.st_size > 0 {
        return Some(st.st_size as u64);
    }
    // dma-bufs report their size through lseek.
    let end = unsafe { libc::lseek(raw, 0, libc::SEEK_END) };
    if end > 0 {
        unsafe { libc::lseek(raw, 0, libc::SEEK_SET) };
        return Some(end as u64);
    }
    None
}

/// The number of open descriptors of this process (for leak tests).
pub fn open_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}
