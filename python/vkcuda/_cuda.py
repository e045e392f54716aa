"""The few CUDA driver calls the package makes itself, through ctypes: the one
``cuMemcpy3DAsync`` of ``ImageLevel.copy_to`` / ``copy_from`` (CUDA arrays have
no pointer a framework could copy with). libcuda is loaded on first use, so the
package imports and works without a driver."""

from __future__ import annotations

import ctypes
from ctypes import Structure, c_int, c_size_t, c_uint64, c_void_p
from typing import Any, Optional

from . import _native

__all__ = ["Memcpy3D", "memcpy3d", "MEMORYTYPE_DEVICE", "MEMORYTYPE_ARRAY"]

MEMORYTYPE_HOST = 1
MEMORYTYPE_DEVICE = 2
MEMORYTYPE_ARRAY = 3


class Memcpy3D(Structure):
    """``CUDA_MEMCPY3D`` of cuda.h (not vkcuda.h: not checked by test_abi)."""

    _fields_ = [
        ("srcXInBytes", c_size_t), ("srcY", c_size_t), ("srcZ", c_size_t), ("srcLOD", c_size_t),
        ("srcMemoryType", c_int), ("srcHost", c_void_p), ("srcDevice", c_uint64), ("srcArray", c_void_p),
        ("reserved0", c_void_p), ("srcPitch", c_size_t), ("srcHeight", c_size_t),
        ("dstXInBytes", c_size_t), ("dstY", c_size_t), ("dstZ", c_size_t), ("dstLOD", c_size_t),
        ("dstMemoryType", c_int), ("dstHost", c_void_p), ("dstDevice", c_uint64), ("dstArray", c_void_p),
        ("reserved1", c_void_p), ("dstPitch", c_size_t), ("dstHeight", c_size_t),
        ("WidthInBytes", c_size_t), ("Height", c_size_t), ("Depth", c_size_t),
    ]


_cu: Optional[Any] = None


def driver() -> Any:
    """libcuda (the one the library loaded, found by its soname)."""
    global _cu
    if _cu is None:
        for name in ("libcuda.so.1", "libcuda.so"):
            try:
                cu = ctypes.CDLL(name)
                break
            except OSError:
                continue
        else:
            raise _native.Error(_native.ERROR_CUDA_UNAVAILABLE, "cannot load libcuda.so.1 (no NVIDIA driver)")
        cu.cuCtxPushCurrent_v2.argtypes = [c_void_p]
        cu.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(c_void_p)]
        cu.cuGetErrorName.argtypes = [c_int, ctypes.POINTER(ctypes.c_char_p)]
        _cu = cu
    return _cu


def _call(cu: Any, name: str, *args: Any) -> None:
    f = getattr(cu, name, None)
    if f is None:
        raise _native.Error(_native.ERROR_CUDA, f"{name} is not in the loaded libcuda")
    r = f(*args)
    if r != 0:
        text = ctypes.c_char_p()
        try:
            cu.cuGetErrorName(r, ctypes.byref(text))
        except Exception:  # pragma: no cover - a driver without cuGetErrorName
            pass
        raise _native.Error(_native.ERROR_CUDA, f"{name} failed: {(text.value or b'CUresult').decode()} ({r})")


def memcpy3d(context: int, params: Memcpy3D, stream: int) -> None:
    """Enqueues ``cuMemcpy3DAsync_v2(params, stream)`` in CUcontext ``context``."""
    cu = driver()
    cu.cuMemcpy3DAsync_v2.argtypes = [ctypes.POINTER(Memcpy3D), c_void_p]
    _call(cu, "cuCtxPushCurrent_v2", c_void_p(context))
    try:
        _call(cu, "cuMemcpy3DAsync_v2", ctypes.byref(params), c_void_p(stream or None))
    finally:
        cu.cuCtxPopCurrent_v2(ctypes.byref(c_void_p()))


CAPTURE_STATUS_ACTIVE = 1
SET_CAPTURE_DEPENDENCIES = 1


def capture_graph(stream: int) -> "tuple[int, list[int]]":
    """(graph, current dependencies) of a stream that is capturing a CUDA graph
    (``cuStreamGetCaptureInfo_v2``); :class:`Error` ``VKCUDA_ERROR_INVALID_STATE``
    when it is not capturing."""
    cu = driver()
    status, cid, graph = c_int(), c_uint64(), c_void_p()
    deps, count = ctypes.POINTER(c_void_p)(), c_size_t()
    _call(cu, "cuStreamGetCaptureInfo_v2", c_void_p(stream), ctypes.byref(status), ctypes.byref(cid),
          ctypes.byref(graph), ctypes.byref(deps), ctypes.byref(count))
    if status.value != CAPTURE_STATUS_ACTIVE:
        raise _native.Error(_native.ERROR_INVALID_STATE, "the stream is not capturing a CUDA graph (use "
                            "Semaphore.cuda_wait/cuda_signal outside a capture, cuda_graph_add_* on a graph)")
    return graph.value or 0, [deps[i] or 0 for i in range(count.value)]


def capture_continue_after(stream: int, node: int) -> None:
    """Makes ``node`` the only dependency of the capture's next work
    (``cuStreamUpdateCaptureDependencies``, SET)."""
    cu = driver()
    nodes = (c_void_p * 1)(node)
    _call(cu, "cuStreamUpdateCaptureDependencies", c_void_p(stream), nodes, c_size_t(1),
          ctypes.c_uint(SET_CAPTURE_DEPENDENCIES))
