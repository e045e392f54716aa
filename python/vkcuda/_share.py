"""Sharing objects between processes: share descriptions (what an importer
needs besides the fd), their 128-byte records, and sending and receiving
descriptions with their fds over a connected Unix socket (``SCM_RIGHTS``).

A file descriptor is a capability: whoever holds a memory fd can read and
write the whole allocation. The library checks the peer on every send and
receive (by default: the same effective user); see docs/CROSS_PROCESS.md."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_size_t, c_uint8, c_uint32, c_void_p
from typing import Any, List, Optional, Sequence, Tuple

from ._native import check, declare, lib
from ._types import (
    ALLOCATOR_CUDA,
    SHARE_DESCRIPTION_SIZE,
    SHARE_KIND_BUFFER,
    SHARE_KIND_IMAGE,
    SHARE_KIND_SEMAPHORE,
    SHARE_MAX_FDS,
    ShareOptions,
    fields,
)
from ._types import ShareDescription as _ShareDescription

__all__ = ["ShareDescription", "send", "receive"]

_KIND_NAMES = {SHARE_KIND_BUFFER: "buffer", SHARE_KIND_SEMAPHORE: "semaphore", SHARE_KIND_IMAGE: "image"}


_P = c_void_p
_D = POINTER(_ShareDescription)
_O = POINTER(ShareOptions)
_signatures = {
    "vkcuda_buffer_describe": (c_int32, [_P, _D]),
    "vkcuda_semaphore_describe": (c_int32, [_P, _D]),
    "vkcuda_image_describe": (c_int32, [_P, _D]),
    "vkcuda_share_description_serialize": (c_int32, [_D, POINTER(c_uint8), c_size_t]),
    "vkcuda_share_description_parse": (c_int32, [POINTER(c_uint8), c_size_t, _D]),
    "vkcuda_buffer_import_description": (c_int32, [_P, _D, c_int32, c_uint32, POINTER(_P)]),
    "vkcuda_semaphore_import_description": (c_int32, [_P, _D, c_int32, POINTER(_P)]),
    "vkcuda_image_import_description": (c_int32, [_P, _D, c_int32, POINTER(_P)]),
    "vkcuda_image_import_description_fds": (c_int32, [_P, _D, POINTER(c_int32), c_uint32, POINTER(_P)]),
    "vkcuda_share_send_fds": (c_int32, [c_int32, _D, POINTER(c_int32), c_uint32, _O]),
    "vkcuda_share_receive_fds": (c_int32, [c_int32, _O, _D, POINTER(c_int32), c_uint32, POINTER(c_uint32)]),
    "vkcuda_buffer_send": (c_int32, [_P, c_int32, _O]),
    "vkcuda_buffer_receive": (c_int32, [_P, c_int32, _O, POINTER(_P)]),
    "vkcuda_semaphore_send": (c_int32, [_P, c_int32, _O]),
    "vkcuda_semaphore_receive": (c_int32, [_P, c_int32, _O, POINTER(_P)]),
    "vkcuda_image_send": (c_int32, [_P, c_int32, _O]),
    "vkcuda_image_receive": (c_int32, [_P, c_int32, _O, POINTER(_P)]),
}
declare(_signatures)


def socket_fd(sock: Any) -> int:
    """The fd of a connected Unix socket: a ``socket.socket`` (anything with
    ``fileno()``) or an int."""
    if isinstance(sock, bool):
        raise TypeError("a socket is a socket.socket or an int fd, not a bool")
    if isinstance(sock, int):
        return sock
    fileno = getattr(sock, "fileno", None)
    if callable(fileno):
        fd = fileno()
        if isinstance(fd, int) and fd >= 0:
            return fd
        raise ValueError(f"{sock!r} is closed (fileno() is {fd})")
    raise TypeError(f"{type(sock).__name__} is not a socket: pass a socket.socket or an int fd")


def share_options(timeout: Optional[float] = None, buffer_usage: int = 0) -> ShareOptions:
    """The options struct: ``timeout`` in seconds (None: the library's 10 s,
    ``float("inf")``: for ever); peers must run as this process's user."""
    o = ShareOptions(buffer_usage=buffer_usage)
    if timeout is not None:
        if timeout < 0:
            raise ValueError("timeout must be >= 0 seconds")
        o.timeout_ns = 2**64 - 1 if timeout == float("inf") else max(1, min(int(timeout * 1e9), 2**64 - 2))
    return o


class ShareDescription:
    """What another process needs to import a buffer, image or semaphore besides
    its fd(s): the kind, the exporter's device UUID, sizes and types
    (``vkcuda_share_description``). ``bytes(d)`` is the library's 128-byte
    record; :meth:`from_bytes` parses one strictly."""

    def __init__(self, raw: Optional[_ShareDescription] = None) -> None:
        self.raw = raw if raw is not None else _ShareDescription()

    @classmethod
    def from_bytes(cls, data: bytes) -> "ShareDescription":
        """Parses a record (``vkcuda_share_description_parse``): :class:`Error`
        ``VKCUDA_ERROR_INVALID_ARGUMENT`` naming what is wrong for anything the
        library could not have written."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a share description record is bytes, not {type(data).__name__}")
        data = bytes(data)
        buf = (c_uint8 * max(1, len(data))).from_buffer_copy(data or b"\0")
        d = _ShareDescription()
        check(lib.vkcuda_share_description_parse(buf, len(data), ctypes.byref(d)))
        return cls(d)

    def __bytes__(self) -> bytes:
        out = (c_uint8 * SHARE_DESCRIPTION_SIZE)()
        check(lib.vkcuda_share_description_serialize(ctypes.byref(self.raw), out, SHARE_DESCRIPTION_SIZE))
        return bytes(out)

    def to_bytes(self) -> bytes:
        """The 128-byte record (``vkcuda_share_description_serialize``)."""
        return bytes(self)

    @property
    def kind(self) -> str:
        """"buffer", "image" or "semaphore"."""
        return _KIND_NAMES.get(self.raw.kind, str(self.raw.kind))

    @property
    def device_uuid(self) -> bytes:
        return bytes(self.raw.device_uuid)

    @property
    def fd_count(self) -> int:
        """How many fds travel with it (one per plane of a multi-planar image)."""
        if self.raw.kind != SHARE_KIND_IMAGE:
            return 1
        return max(1, sum(1 for s in self.raw.image.plane_allocation_sizes if s))

    @property
    def size(self) -> int:
        """A buffer's size in bytes; an image's allocation size; 0 for a semaphore."""
        if self.raw.kind == SHARE_KIND_BUFFER:
            return int(self.raw.buffer.size)
        if self.raw.kind == SHARE_KIND_IMAGE:
            return int(self.raw.image.allocation_size)
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShareDescription) and fields(self.raw) == fields(other.raw)

    def __hash__(self) -> int:
        return hash(fields(self.raw))

    def __repr__(self) -> str:
        r = self.raw
        if r.kind == SHARE_KIND_BUFFER:
            b = r.buffer
            what = f"size={b.size}, offset={b.offset}, allocation_size={b.allocation_size}, " \
                   f"allocator={'cuda' if b.allocator == ALLOCATOR_CUDA else 'vulkan'}"
        elif r.kind == SHARE_KIND_IMAGE:
            d = r.image.description
            what = f"format={d.format}, extent=({d.extent.width}, {d.extent.height}, {d.extent.depth}), " \
                   f"levels={d.mip_levels}, layers={d.array_layers}, allocation_size={r.image.allocation_size}"
        elif r.kind == SHARE_KIND_SEMAPHORE:
            what = f"{'binary' if r.semaphore.semaphore_type else 'timeline'}, value={r.semaphore.value}"
        else:
            what = "empty"
        return f"ShareDescription({self.kind}: {what}, device {self.device_uuid.hex()[:8]}…)"


def send(sock: Any, description: ShareDescription, fds: Sequence[int], *, timeout: Optional[float] = None) -> None:
    """Sends a description and its fds over a connected Unix socket
    (``vkcuda_share_send_fds``); the fds stay the caller's."""
    if not isinstance(description, ShareDescription):
        raise TypeError(f"description must be a ShareDescription, not {type(description).__name__}")
    fds = list(fds)
    arr = (c_int32 * max(1, len(fds)))(*fds)
    opts = share_options(timeout)
    check(lib.vkcuda_share_send_fds(socket_fd(sock), ctypes.byref(description.raw), arr, len(fds),
                                    ctypes.byref(opts)))


def receive(sock: Any, *, timeout: Optional[float] = None) -> Tuple[ShareDescription, List[int]]:
    """Receives one description and its fds (``vkcuda_share_receive_fds``): the
    caller owns the fds (import them with ``Context.import_*``, or ``os.close``)."""
    d = _ShareDescription()
    arr = (c_int32 * SHARE_MAX_FDS)()
    n = c_uint32()
    opts = share_options(timeout)
    check(lib.vkcuda_share_receive_fds(socket_fd(sock), ctypes.byref(opts), ctypes.byref(d), arr, SHARE_MAX_FDS,
                                       ctypes.byref(n)))
    return ShareDescription(d), [arr[i] for i in range(n.value)]
