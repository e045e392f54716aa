"""Shared video frames: a multi-planar (YCbCr) image with linear tiling in one
allocation, whose planes CUDA sees as pitched device memory. Each plane is a
DLPack tensor, zero-copy: ``torch.from_dlpack(frame.plane(0))`` is the luma as
(height, width), ``frame.plane(1)`` NV12's interleaved CbCr as
(height / 2, width / 2, 2); uint8 for 8-bit formats, uint16 for P010/P012/P016
(10/12-bit samples in the high bits). Strides follow the row pitch, which is
padded: the tensors are not contiguous.

"rgba" and "bgra" are one-plane frames (linear ``R8G8B8A8_UNORM`` and
``B8G8R8A8_UNORM``: what NVENC takes as RGB input): ``frame.plane(0)`` is
(height, width, 4) uint8; they have no colour description."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_uint32, c_void_p
from typing import Any, Dict, NamedTuple, Optional, Tuple

from . import _dlpack, _types
from ._native import ERROR_CUDA_UNAVAILABLE, SUCCESS, Error, check, declare, lib
from ._semaphore import Semaphore
from ._types import (
    DLPACK_LEGACY_BIT,
    DLPACK_READ_ONLY_BIT,
    IMAGE_CREATE_LINEAR_BIT,
    ContextHandle,
    CudaInfo,
    Handle,
    ImageCreateInfo,
    ImagePlanePointer,
)

__all__ = ["VideoFrame", "Plane", "PlanePointer", "VideoColor"]

#: The multi-planar formats by the names video code uses, as ``VkFormat`` values.
FORMATS = {
    "nv12": 1000156003,  # VK_FORMAT_G8_B8R8_2PLANE_420_UNORM
    "nv16": 1000156005,  # VK_FORMAT_G8_B8R8_2PLANE_422_UNORM
    "nv24": 1000330000,  # VK_FORMAT_G8_B8R8_2PLANE_444_UNORM
    "i420": 1000156002,  # VK_FORMAT_G8_B8_R8_3PLANE_420_UNORM
    "i444": 1000156006,  # VK_FORMAT_G8_B8_R8_3PLANE_444_UNORM
    "p010": 1000156013,  # VK_FORMAT_G10X6_B10X6R10X6_2PLANE_420_UNORM_3PACK16
    "p012": 1000156023,  # VK_FORMAT_G12X4_B12X4R12X4_2PLANE_420_UNORM_3PACK16
    "p016": 1000156030,  # VK_FORMAT_G16_B16R16_2PLANE_420_UNORM
    "rgba": 37,  # VK_FORMAT_R8G8B8A8_UNORM, one plane
    "bgra": 44,  # VK_FORMAT_B8G8R8A8_UNORM, one plane
}

#: Planes per format (2 unless listed).
_PLANES = {"i420": 3, "i444": 3, "rgba": 1, "bgra": 1}

_P = c_void_p
_signatures = {
    "vkcuda_image_create": (c_int32, [_P, POINTER(ImageCreateInfo), POINTER(_P)]),
    "vkcuda_image_get_plane_pointer": (c_int32, [_P, c_uint32, POINTER(ImagePlanePointer)]),
    "vkcuda_image_export_plane_dlpack": (c_int32, [_P, c_uint32, c_uint32, POINTER(_P)]),
    "vkcuda_image_set_video_color": (c_int32, [_P, POINTER(_types.VideoColor)]),
    "vkcuda_image_get_video_color": (c_int32, [_P, POINTER(_types.VideoColor)]),
    "vkcuda_image_export_fd": (c_int32, [_P, POINTER(c_int32)]),
    "vkcuda_image_destroy": (None, [_P]),
}
declare(_signatures)


class PlanePointer(NamedTuple):
    """One plane as pitched CUDA memory: what ``cuMemcpy2D``, NPP and NVDEC take."""

    cuda_pointer: int
    offset: int
    row_pitch: int
    width: int
    height: int
    bytes_per_texel: int


class VideoColor(NamedTuple):
    """ITU-T H.273 code points (as a decoder reports them), the range, and where
    chroma sits (0 co-sited, 1 midpoint)."""

    matrix_coefficients: int = 1
    transfer_characteristics: int = 1
    colour_primaries: int = 1
    full_range: bool = False
    x_chroma_offset: int = 0
    y_chroma_offset: int = 1


class VideoFrame(Handle):
    """A shared video frame (see the module doc). ``close()`` releases the handle;
    plane tensors already handed out keep the memory valid until freed."""

    _destroy = lib.vkcuda_image_destroy

    def __init__(self, context: ContextHandle, width: int, height: int, format: str = "nv12") -> None:
        if format not in FORMATS:
            raise ValueError(f"format must be one of {sorted(FORMATS)}, not {format!r}")
        info = ImageCreateInfo(flags=IMAGE_CREATE_LINEAR_BIT, format=FORMATS[format])
        info.extent.width, info.extent.height, info.extent.depth = width, height, 1
        h = c_void_p()
        check(lib.vkcuda_image_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)
        self.format = format
        self.width, self.height = width, height
        self.plane_count = _PLANES.get(format, 2)
        cuda = CudaInfo()
        paired = lib.vkcuda_context_get_cuda_info(context.handle, ctypes.byref(cuda)) == SUCCESS
        self._ordinal: Optional[int] = cuda.device_ordinal if paired else None
        self._ready: Optional[Tuple[Semaphore, int]] = None

    def ready_on(self, semaphore: Any, value: int = 0) -> None:
        """The frame is ready when ``semaphore`` reaches ``value`` (the Vulkan or
        decoder submit that writes it signals that value): each plane's
        ``__dlpack__(stream=s)`` then enqueues the wait on the consumer's stream
        ``s``, as :meth:`vkcuda.Buffer.ready_on` does; ``ready_on(None)`` forgets it."""
        if semaphore is None:
            self._ready = None
            return
        if not isinstance(semaphore, Semaphore):
            raise TypeError(f"ready_on takes a vkcuda.Semaphore, not {type(semaphore).__name__}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"value must be a timeline value (an int >= 0), not {value!r}")
        self._ready = (semaphore, value)

    def _consumer_wait(self, stream: Any) -> None:
        if self._ready is None or stream == -1:
            return
        sem, value = self._ready
        sem.cuda_wait(value, None if stream in (None, 1) else stream)

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{self.plane_count} planes"
        return f"VideoFrame({self.format}, {self.width}x{self.height}, {state})"

    def pointer(self, plane: int) -> PlanePointer:
        """Plane ``plane`` as pitched CUDA memory (``cuda_pointer`` is 0 in a
        Vulkan-only context)."""
        p = ImagePlanePointer()
        check(lib.vkcuda_image_get_plane_pointer(self._handle, plane, ctypes.byref(p)))
        return PlanePointer(p.cuda_pointer, p.offset, p.row_pitch, p.width, p.height, p.bytes_per_texel)

    def plane(self, plane: int, *, readonly: bool = False) -> "Plane":
        """Plane ``plane`` as a DLPack producer (``torch.from_dlpack``,
        ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``)."""
        self.pointer(plane)  # the library's checks: a closed frame, a plane out of range
        return Plane(self, plane, readonly)

    @property
    def color(self) -> VideoColor:
        c = _types.VideoColor()
        check(lib.vkcuda_image_get_video_color(self._handle, ctypes.byref(c)))
        return VideoColor(
            c.matrix_coefficients, c.transfer_characteristics, c.colour_primaries, bool(c.full_range),
            c.x_chroma_offset, c.y_chroma_offset,
        )

    @color.setter
    def color(self, value: VideoColor) -> None:
        c = _types.VideoColor(0, value.matrix_coefficients, value.transfer_characteristics, value.colour_primaries,
                        1 if value.full_range else 0, value.x_chroma_offset, value.y_chroma_offset)
        check(lib.vkcuda_image_set_video_color(self._handle, ctypes.byref(c)))


class Plane:
    """One plane of a :class:`VideoFrame` as a DLPack producer: each ``__dlpack__``
    exports a new tensor over the plane (the tensor keeps the frame's memory)."""

    def __init__(self, frame: VideoFrame, index: int, readonly: bool) -> None:
        self.frame, self.index, self.readonly = frame, index, readonly
        self._cai: Optional[_dlpack.Held] = None

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The plane for Numba and CuPy (CUDA Array Interface version 3): one
        DLPack export held by this Plane object, so the memory stays valid while
        it lives, even after ``frame.close()``. Strides follow the row pitch."""
        if self._cai is None:
            out = c_void_p()
            flags = DLPACK_READ_ONLY_BIT if self.readonly else 0
            check(lib.vkcuda_image_export_plane_dlpack(self.frame.handle, self.index, flags, ctypes.byref(out)))
            self._cai = _dlpack.Held(out.value or 0)
        mv = _dlpack.DLManagedTensorVersioned.from_address(self._cai.ptr)
        dt = mv.dl_tensor.dtype
        stream = None
        if self.frame._ready is not None:
            self.frame._consumer_wait(None)
            stream = 1
        return _dlpack.cuda_array_interface(self._cai, dt.code, dt.bits, dt.lanes, stream)

    def __repr__(self) -> str:
        p = self.frame.pointer(self.index)
        return f"Plane({self.frame.format} plane {self.index}, {p.width}x{p.height}, row pitch {p.row_pitch})"

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The DLPack protocol, as :meth:`vkcuda.TensorView.__dlpack__`: with a
        pending write (:meth:`VideoFrame.ready_on`) the consumer's ``stream``
        waits for it on the GPU (-1: no wait); otherwise nothing is enqueued and
        the frame is handed over with the semaphores as for any CUDA access."""
        if copy:
            raise BufferError("vkcuda exports its frames without copying (copy=True is not possible)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the frame is on DLPack device {self.__dlpack_device__()}, not {tuple(dl_device)}")
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
            raise TypeError(f"stream must be None or an int, not {type(stream).__name__}")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if self.readonly and not versioned:
            raise BufferError("a read-only plane needs a DLPack >= 1.0 consumer (max_version=(1, 0))")
        flags = (DLPACK_READ_ONLY_BIT if self.readonly else 0) | (0 if versioned else DLPACK_LEGACY_BIT)
        out = c_void_p()
        check(lib.vkcuda_image_export_plane_dlpack(self.frame.handle, self.index, flags, ctypes.byref(out)))
        capsule = _dlpack.make_capsule(out.value or 0, versioned)
        self.frame._consumer_wait(stream)  # VideoFrame.ready_on: the consumer's stream waits on the GPU
        return capsule

    def __dlpack_device__(self) -> Tuple[int, int]:
        if self.frame._ordinal is None:
            self.frame.pointer(self.index)
            raise Error(ERROR_CUDA_UNAVAILABLE, "a Vulkan-only context has no CUDA device: the plane has no DLPack device")
        return (_dlpack.KDL_CUDA, self.frame._ordinal)
