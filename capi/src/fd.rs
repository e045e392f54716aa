//! The C door's file descriptors: a C caller passes a raw `int`, which an import
//! takes on success only. The Rust library borrows (`BorrowedFd`), never closes
//! what it is given and leaves its file offset as it was; this module checks the
//! caller's numbers and lends them to it.

use std::os::fd::{BorrowedFd, RawFd};

use vkcuda::error::{Error, Result};

/// A C caller's descriptor `what`, checked to be open (a negative or closed one
/// is `VKCUDA_ERROR_INVALID_ARGUMENT`, with the system's words), as the Rust API
/// takes it. The borrow lasts for the call that received `fd`, during which the C
/// caller keeps it open (the header's contract).
pub(crate) fn borrow_open<'a>(fd: RawFd, what: &str) -> Result<BorrowedFd<'a>> {
    if fd < 0 {
        return Err(Error::invalid(format!("{what} {fd} is not valid")));
    }
    // SAFETY: fcntl only reads the descriptor number; a closed one gives EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::invalid(format!(
            "{what} {fd} is not an open file descriptor: {err}"
        )));
    }
    // SAFETY: open (checked above) and kept open by the caller for this call.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// A C caller's socket descriptor, checked to be open.
pub(crate) fn socket<'a>(fd: RawFd) -> Result<BorrowedFd<'a>> {
    borrow_open(fd, "socket_fd")
}

/// A C caller's descriptors to send, each checked to be open.
pub(crate) fn open_all<'a>(fds: &[RawFd]) -> Result<Vec<BorrowedFd<'a>>> {
    fds.iter().map(|&fd| borrow_open(fd, "fd")).collect()
}
