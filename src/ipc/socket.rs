//! One message over a connected Unix socket: a fixed number of bytes with file
//! descriptors attached (`SCM_RIGHTS`), after checking who is on the other end
//! (`SO_PEERCRED`).
//!
//! Both `SOCK_STREAM` and `SOCK_SEQPACKET` sockets are accepted. On a stream the
//! message may arrive (and leave) in pieces: the loop reads exactly the message's
//! bytes, never more, so whatever follows stays in the socket for the caller. On a
//! seqpacket socket one record is one message, and a short or long record is an
//! error of its own. Every wait is a `poll` bounded by the deadline; `EINTR` is
//! retried; sends use `MSG_NOSIGNAL` (a closed peer is an error, not `SIGPIPE`);
//! receives use `MSG_CMSG_CLOEXEC`. Received descriptors become [`OwnedFd`]s the
//! moment they arrive, so every error path closes them.

use std::mem::{size_of, zeroed};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};

/// Who is on the other end of a connection, as the kernel recorded it when the
/// connection was made (`SO_PEERCRED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The peer's process id.
    pub pid: i32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
}

/// Which peers may take part.
pub enum PeerPolicy<'a> {
    /// Only peers whose effective uid equals this process's.
    SameUser,
    /// Peers the function accepts.
    Check(&'a dyn Fn(&Peer) -> bool),
}

/// How long to wait and whom to talk to. The default: no timeout, the same user.
pub struct Options<'a> {
    /// `None`: wait for as long as it takes.
    pub timeout: Option<Duration>,
    /// Which peers may take part; checked before any fd crosses.
    pub peer: PeerPolicy<'a>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            timeout: None,
            peer: PeerPolicy::SameUser,
        }
    }
}

fn os_error(what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    let kind = match e.raw_os_error() {
        Some(libc::EBADF) | Some(libc::ENOTSOCK) | Some(libc::EINVAL) => ErrorKind::InvalidArgument,
        Some(libc::ENOMEM) | Some(libc::ENOBUFS) => ErrorKind::OutOfMemory,
        Some(libc::EMFILE) | Some(libc::ENFILE) => ErrorKind::OutOfMemory,
        _ => ErrorKind::InvalidState,
    };
    Error::new(kind, format!("{what}: {e}"))
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn sockopt_int(fd: RawFd, opt: libc::c_int) -> Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `v`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(os_error(&format!(
            "socket_fd {fd} is not a usable socket (getsockopt)"
        )));
    }
    Ok(v)
}

/// Checks `fd` is a connected Unix stream or seqpacket socket; true for seqpacket.
pub fn check_socket(fd: RawFd) -> Result<bool> {
    if fd < 0 {
        return Err(Error::invalid(format!("socket_fd {fd} is not valid")));
    }
    let domain = sockopt_int(fd, libc::SO_DOMAIN)?;
    if domain != libc::AF_UNIX {
        return Err(Error::invalid(format!(
            "socket_fd {fd} is not a Unix domain socket (domain {domain}): file descriptors \
             only travel over AF_UNIX"
        )));
    }
    let ty = sockopt_int(fd, libc::SO_TYPE)?;
    let seqpacket = match ty {
        libc::SOCK_STREAM => false,
        libc::SOCK_SEQPACKET => true,
        _ => {
            return Err(Error::invalid(format!(
                "socket_fd {fd} is a socket of type {ty}; use a connected SOCK_STREAM or SOCK_SEQPACKET socket"
            )))
        }
    };
    // SAFETY: sockaddr_un is plain data; getpeername writes at most `len` bytes.
    let mut addr: libc::sockaddr_un = unsafe { zeroed() };
    let mut len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
    if unsafe { libc::getpeername(fd, (&mut addr as *mut libc::sockaddr_un).cast(), &mut len) } != 0
    {
        if errno() == libc::ENOTCONN {
            return Err(Error::invalid(format!(
                "socket_fd {fd} is not connected (a listening socket? pass the one accept() returned)"
            )));
        }
        return Err(os_error(&format!("getpeername on socket_fd {fd}")));
    }
    Ok(seqpacket)
}

/// The credentials of the peer of a connected Unix socket.
pub fn peer_of(fd: RawFd) -> Result<Peer> {
    // SAFETY: ucred is plain data; getsockopt writes at most `len` bytes.
    let mut c: libc::ucred = unsafe { zeroed() };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut c as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(os_error(&format!("SO_PEERCRED on socket_fd {fd}")));
    }
    Ok(Peer {
        pid: c.pid,
        uid: c.uid,
        gid: c.gid,
    })
}

/// Checks the peer against the policy: `PermissionDenied` when refused.
pub fn authorize(fd: RawFd, policy: &PeerPolicy) -> Result<Peer> {
    let peer = peer_of(fd)?;
    match policy {
        PeerPolicy::SameUser => {
            // SAFETY: geteuid cannot fail.
            let me = unsafe { libc::geteuid() };
            if peer.uid != me {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "the peer (pid {}, uid {}, gid {}) is not the same user as this process \
                         (uid {me}); pass a peer_check callback to accept other users",
                        peer.pid, peer.uid, peer.gid
                    ),
                ));
            }
        }
        PeerPolicy::Check(f) => {
            if !f(&peer) {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "the peer_check callback refused the peer (pid {}, uid {}, gid {})",
                        peer.pid, peer.uid, peer.gid
                    ),
                ));
            }
        }
    }
    Ok(peer)
}

struct Deadline(Option<Instant>);

impl Deadline {
    fn new(timeout: Option<Duration>) -> Self {
        Deadline(timeout.and_then(|t| Instant::now().checked_add(t)))
    }

    /// Waits for `events` on `fd` until the deadline; `Timeout` once it has passed.
    fn wait(&self, fd: RawFd, events: libc::c_short, what: &dyn Fn() -> String) -> Result<()> {
        loop {
            let ms = match self.0 {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    // Round up, so the poll never returns just before the deadline.
                    left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
                }
            };
            let mut p = libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            // SAFETY: one pollfd we own.
            let r = unsafe { libc::poll(&mut p, 1, ms) };
            if r < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return Err(os_error("poll"));
            }
            if r == 0 {
                if self.0.is_some_and(|d| Instant::now() >= d) {
                    return Err(Error::new(ErrorKind::Timeout, what()));
                }
                continue;
            }
            if p.revents & libc::POLLNVAL != 0 {
                return Err(Error::invalid(format!("socket_fd {fd} is not open")));
            }
            // Readable, writable, hung up or failed: the next call says which.
            return Ok(());
        }
    }
}

fn closed_error(what: &str) -> Error {
    Error::new(ErrorKind::InvalidState, what.to_string())
}

/// Room for `n` descriptors of control data, 8-byte aligned.
fn control_buffer(n: usize) -> Vec<u64> {
    // SAFETY: CMSG_SPACE only computes a size.
    let bytes = unsafe { libc::CMSG_SPACE((n * size_of::<RawFd>()) as u32) } as usize;
    vec![0u64; bytes.div_ceil(8)]
}

/// Checks the socket and the peer, then sends `bytes` with `fds` attached.
pub fn send(fd: RawFd, bytes: &[u8], fds: &[RawFd], opts: &Options) -> Result<()> {
    check_socket(fd)?;
    authorize(fd, &opts.peer)?;
    transmit(fd, bytes, fds, opts.timeout)
}

/// Sends `bytes` with `fds` attached to the first byte, on a socket already
/// checked ([`check_socket`], [`authorize`]). The fds stay the caller's (the
/// kernel puts its own references into the message).
pub fn transmit(fd: RawFd, bytes: &[u8], fds: &[RawFd], timeout: Option<Duration>) -> Result<()> {
    let deadline = Deadline::new(timeout);
    let mut control = control_buffer(fds.len());
    let mut sent = 0usize;
    while sent < bytes.len() {
        let mut iov = libc::iovec {
            iov_base: bytes[sent..].as_ptr() as *mut libc::c_void,
            iov_len: bytes.len() - sent,
        };
        // SAFETY: msghdr is plain data; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if sent == 0 && !fds.is_empty() {
            let payload = std::mem::size_of_val(fds);
            msg.msg_control = control.as_mut_ptr().cast();
            // SAFETY: CMSG_* compute sizes and positions inside `control`, which
            // has CMSG_SPACE(payload) bytes.
            unsafe {
                msg.msg_controllen = libc::CMSG_SPACE(payload as u32) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
                std::ptr::copy_nonoverlapping(
                    fds.as_ptr().cast::<u8>(),
                    libc::CMSG_DATA(c),
                    payload,
                );
            }
        }
        // SAFETY: `msg` points at live buffers.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        if n < 0 {
            match errno() {
                libc::EINTR => continue,
                libc::EAGAIN => {
                    deadline.wait(fd, libc::POLLOUT, &|| {
                        format!(
                            "the peer did not take the description in time ({sent} of {} bytes sent)",
                            bytes.len()
                        )
                    })?;
                    continue;
                }
                libc::EPIPE | libc::ECONNRESET | libc::ENOTCONN => {
                    return Err(closed_error(&format!(
                        "the peer closed the connection ({sent} of {} bytes sent)",
                        bytes.len()
                    )))
                }
                _ => return Err(os_error("sendmsg")),
            }
        }
        sent += n as usize;
    }
    Ok(())
}

/// Takes every descriptor of every `SCM_RIGHTS` message in `msg`.
///
/// # Safety
/// `msg` was just filled by `recvmsg`.
unsafe fn take_fds(msg: &libc::msghdr, into: &mut Vec<OwnedFd>) {
    let mut c = libc::CMSG_FIRSTHDR(msg);
    while !c.is_null() {
        if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
            let data = libc::CMSG_DATA(c);
            let header = data as usize - c as usize;
            let n = ((*c).cmsg_len as usize).saturating_sub(header) / size_of::<RawFd>();
            for i in 0..n {
                let raw = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                if raw >= 0 {
                    into.push(OwnedFd::from_raw_fd(raw));
                }
            }
        }
        c = libc::CMSG_NXTHDR(msg, c);
    }
}

/// Receives exactly `len` bytes and the descriptors that came with them (room for
/// `max_fds`; more is an error). Every received descriptor is closed on error.
pub fn receive(
    fd: RawFd,
    len: usize,
    max_fds: usize,
    opts: &Options,
) -> Result<(Vec<u8>, Vec<OwnedFd>)> {
    let seqpacket = check_socket(fd)?;
    // Checked before anything is read: a refused peer's descriptors are never
    // taken into this process (they go when the socket is closed).
    authorize(fd, &opts.peer)?;
    let deadline = Deadline::new(opts.timeout);
    let mut buf = vec![0u8; len];
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut control = control_buffer(max_fds);
    let mut got = 0usize;
    while got < len {
        let mut iov = libc::iovec {
            iov_base: buf[got..].as_mut_ptr().cast(),
            iov_len: len - got,
        };
        // SAFETY: msghdr is plain data; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = (control.len() * 8) as _;
        // SAFETY: `msg` points at live buffers.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT) };
        if n < 0 {
            match errno() {
                libc::EINTR => continue,
                libc::EAGAIN => {
                    deadline.wait(fd, libc::POLLIN, &|| {
                        if got == 0 {
                            "no description arrived before the timeout".to_string()
                        } else {
                            format!(
                                "the rest of the description did not arrive before the timeout \
                                 ({got} of {len} bytes came)"
                            )
                        }
                    })?;
                    continue;
                }
                libc::ECONNRESET => {
                    return Err(closed_error(&format!(
                        "the peer reset the connection ({got} of {len} bytes came)"
                    )))
                }
                _ => return Err(os_error("recvmsg")),
            }
        }
        // SAFETY: recvmsg filled `msg`; the descriptors are ours from here on.
        unsafe { take_fds(&msg, &mut fds) };
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            // The kernel truncates the control data for two reasons: more descriptors
            // than there was room for (it fills the room), or none left to install
            // in this process (it stops at the first one it cannot install).
            if fds.len() < max_fds {
                return Err(Error::new(
                    ErrorKind::OutOfMemory,
                    format!(
                        "this process could not take the peer's file descriptors: it has no free \
                         descriptor (its limit, RLIMIT_NOFILE / ulimit -n, is reached; {} arrived and \
                         were closed): close descriptors or raise the limit, then send again",
                        fds.len()
                    ),
                ));
            }
            return Err(Error::invalid(format!(
                "the peer sent more file descriptors than a description carries (room for \
                 {max_fds}; the kernel dropped the rest): the {} that arrived were closed",
                fds.len()
            )));
        }
        if n == 0 {
            return Err(closed_error(&if got == 0 {
                "the peer closed the connection".to_string()
            } else {
                format!("the peer closed the connection in the middle of a description ({got} of {len} bytes came)")
            }));
        }
        got += n as usize;
        if seqpacket {
            if msg.msg_flags & libc::MSG_TRUNC != 0 {
                return Err(Error::invalid(format!(
                    "the peer sent a record longer than a description ({len} bytes)"
                )));
            }
            if got < len {
                return Err(Error::invalid(format!(
                    "truncated description: a record of {got} bytes, a description has {len}"
                )));
            }
        }
    }
    Ok((buf, fds))
}
