"""Contexts: a Vulkan device paired with the CUDA device of the same UUID, and
the door to every object made on it (buffers, images, video frames,
semaphores, batches; and those wrapped, imported or received). The top of the
objects' modules: it imports each of them, and none imports it."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_void_p
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

from . import _types
from ._batch import BufferBatch, ImageBatch
from ._buffer import ALLOCATORS, Buffer
from ._device import DeviceSupport, query_device
from ._image import Image
from ._image import create_info as image_create_info
from ._image import wrap_info as image_wrap_info
from ._native import SUCCESS, check, declare, lib
from ._semaphore import Semaphore
from ._share import ShareDescription, share_options, socket_fd
from ._types import (
    CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT,
    CONTEXT_CREATE_VULKAN_ONLY_BIT,
    BufferImportInfo,
    BufferWrapInfo,
    ContextCreateInfo,
    Handle,
    StandaloneCreateInfo,
)
from ._video import VideoFrame

__all__ = ["Context", "CudaInfo", "VulkanHandles"]

_P = c_void_p
declare({
    "vkcuda_context_create_standalone": (c_int32, [POINTER(StandaloneCreateInfo), POINTER(_P)]),
    "vkcuda_context_create": (c_int32, [POINTER(ContextCreateInfo), POINTER(_P)]),
    "vkcuda_context_get_vulkan_handles": (c_int32, [_P, POINTER(_types.VulkanHandles)]),
    "vkcuda_context_destroy": (None, [_P]),
    "vkcuda_buffer_wrap": (c_int32, [_P, POINTER(BufferWrapInfo), POINTER(_P)]),
    "vkcuda_buffer_import_fd": (c_int32, [_P, POINTER(BufferImportInfo), c_int32, POINTER(_P)]),
})


class CudaInfo(NamedTuple):
    """The CUDA side of a context (``vkcuda_cuda_info``)."""

    context: int
    """The CUcontext (the device's primary context by default: PyTorch's, CuPy's)."""
    device: int
    ordinal: int
    primary: bool
    uuid: bytes


class VulkanHandles(NamedTuple):
    """A context's Vulkan handles (``vkcuda_vulkan_handles``), as integers."""

    instance: int
    physical_device: int
    device: int
    get_instance_proc_addr: int
    queue_family_index: int
    queue: int


class Context(Handle):
    """A Vulkan device paired with the CUDA device of the same UUID (by default its
    primary context, the one PyTorch, CuPy and JAX use). Objects made from it keep
    it alive inside the library, so it may be closed before them."""

    _destroy = lib.vkcuda_context_destroy

    @classmethod
    def standalone(cls, *, vulkan_only: bool = False, physical_device_index: Optional[int] = None) -> Context:
        """A context with the library's own Vulkan instance, device and queue
        (``vkcuda_context_create_standalone``): the first device with a CUDA twin,
        or the device at ``physical_device_index``. ``vulkan_only`` leaves CUDA out."""
        info = StandaloneCreateInfo()
        if vulkan_only:
            info.flags |= CONTEXT_CREATE_VULKAN_ONLY_BIT
        if physical_device_index is not None:
            info.flags |= CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT
            info.physical_device_index = physical_device_index
        h = ctypes.c_void_p()
        check(lib.vkcuda_context_create_standalone(ctypes.byref(info), ctypes.byref(h)))
        return cls(h.value or 0)

    @classmethod
    def from_engine(
        cls,
        instance: int,
        physical_device: int,
        device: int,
        get_instance_proc_addr: int,
        *,
        get_device_proc_addr: Optional[int] = None,
        cuda_context: Optional[int] = None,
        vulkan_only: bool = False,
    ) -> Context:
        """Pairs an engine's own Vulkan device (``vkcuda_context_create``); the
        handles are ints (pointers and dispatchable handles). The engine keeps
        them alive longer than this context and everything made from it."""
        info = ContextCreateInfo(
            flags=CONTEXT_CREATE_VULKAN_ONLY_BIT if vulkan_only else 0,
            instance=instance,
            physical_device=physical_device,
            device=device,
            get_instance_proc_addr=get_instance_proc_addr,
            get_device_proc_addr=get_device_proc_addr,
            cuda_context=cuda_context,
        )
        h = ctypes.c_void_p()
        check(lib.vkcuda_context_create(ctypes.byref(info), ctypes.byref(h)))
        return cls(h.value or 0)

    @property
    def vulkan_handles(self) -> VulkanHandles:
        h = _types.VulkanHandles()
        check(lib.vkcuda_context_get_vulkan_handles(self._handle, ctypes.byref(h)))
        return VulkanHandles(
            h.instance or 0,
            h.physical_device or 0,
            h.device or 0,
            h.get_instance_proc_addr or 0,
            h.queue_family_index,
            h.queue or 0,
        )

    @property
    def cuda_info(self) -> CudaInfo:
        """The CUDA side; :class:`Error` ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` for a
        Vulkan-only context."""
        c = _types.CudaInfo()
        check(lib.vkcuda_context_get_cuda_info(self._handle, ctypes.byref(c)))
        return CudaInfo(c.cuda_context or 0, c.cuda_device, c.device_ordinal, bool(c.primary), bytes(c.device_uuid))

    def buffer(self, size: int, *, allocator: str = "vulkan", usage: int = 0) -> Buffer:
        """A shared buffer of ``size`` bytes allocated by ``allocator`` ("vulkan" or
        "cuda"), with ``VkBufferUsageFlags`` ``usage`` (0: storage and transfers)."""
        return Buffer(self, size, allocator=allocator, usage=usage)

    def video_frame(self, width: int, height: int, format: str = "nv12") -> VideoFrame:
        """A shared video frame (``format``: "nv12", "p010", ...; see
        :class:`vkcuda.VideoFrame`): each plane a zero-copy DLPack tensor."""

        return VideoFrame(self, width, height, format)

    def semaphore(self, *, initial_value: int = 0, binary: bool = False, host_wait_spin_ns: int = 0) -> Semaphore:
        """A timeline (or binary) semaphore shared with CUDA."""
        return Semaphore(self, initial_value=initial_value, binary=binary, host_wait_spin_ns=host_wait_spin_ns)

    def __repr__(self) -> str:
        if self.closed:
            return "Context(closed)"
        kind = "standalone" if self.vulkan_handles.queue else "engine"
        cuda = self._cuda_context()
        side = "Vulkan-only" if cuda is None else f"CUDA device {self.cuda_info.ordinal}"
        return f"Context({kind}, {side})"

    def _cuda_context(self) -> Optional[int]:
        """The CUcontext, or None in a Vulkan-only context (no error)."""
        c = _types.CudaInfo()
        if lib.vkcuda_context_get_cuda_info(self._handle, ctypes.byref(c)) != SUCCESS:
            return None
        return c.cuda_context or 0

    @property
    def device_support(self) -> DeviceSupport:
        """What this context's physical device supports (``vkcuda_physical_device_query``)."""
        h = self.vulkan_handles
        return query_device(h.instance, h.physical_device, h.get_instance_proc_addr)

    # --- images ---------------------------------------------------------------
    def image(self, format: Union[str, int], extent: Sequence[int], *, levels: int = 1, layers: int = 1,
              usage: int = 0, cube: bool = False) -> Image:
        """A shared image (``vkcuda_image_create``): ``format`` a name of
        :data:`vkcuda.FORMATS` ("r8g8b8a8_unorm", ...) or a ``VkFormat`` int;
        ``extent`` (width,) for 1D, (width, height) for 2D, (width, height, depth)
        for 3D; ``levels`` mip levels, ``layers`` array layers, ``usage``
        ``VkImageUsageFlags`` (0: transfers, sampled and storage where possible),
        ``cube`` cube-compatible."""

        info = image_create_info(format, extent, levels, layers, usage, cube)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_create(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def wrap_image(self, vk_image: int, vk_memory: int, allocation_size: int, format: Union[str, int],
                   extent: Sequence[int], *, usage: int, levels: int = 1, layers: int = 1, cube: bool = False,
                   offset: int = 0, dedicated: bool = True, export_handle_types: int = 0x1) -> Image:
        """The CUDA view of an engine's own ``VkImage`` on exportable memory
        (``vkcuda_image_wrap``): the image and memory (ints) stay the engine's and
        must outlive the returned :class:`Image`. The description is the one the
        image was created with (``usage`` its real usage)."""

        desc = image_create_info(format, extent, levels, layers, usage, cube)
        info = image_wrap_info(vk_image, vk_memory, allocation_size, desc, offset, dedicated, export_handle_types)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_wrap(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def import_image(self, description: ShareDescription, fds: Union[int, Sequence[int]]) -> Image:
        """Imports an image another process (or this one) exported: its
        :meth:`Image.describe` and :meth:`Image.export_fds`. On success the
        library owns the fds; on failure they stay the caller's."""

        _check_description(description)
        fd_list = [fds] if isinstance(fds, int) else list(fds)
        arr = (ctypes.c_int32 * max(1, len(fd_list)))(*fd_list)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_import_description_fds(self._handle, ctypes.byref(description.raw), arr,
                                                      len(fd_list), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def receive_image(self, sock: Any, *, timeout: Optional[float] = None) -> Image:
        """Receives an image sent with :meth:`Image.send` and imports it."""

        o = share_options(timeout)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    # --- buffers from elsewhere -----------------------------------------------
    def wrap_buffer(self, vk_buffer: int, vk_memory: int, allocation_size: int, size: int, *, offset: int = 0,
                    dedicated: bool = False, export_handle_types: int = 0x1) -> Buffer:
        """The CUDA view of an engine's own ``VkBuffer`` bound at ``offset`` in
        exportable memory (``vkcuda_buffer_wrap``); both stay the engine's."""
        info = BufferWrapInfo(0, vk_buffer, vk_memory, allocation_size, offset, size, 1 if dedicated else 0,
                               export_handle_types)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_wrap(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_buffer_fd(self, fd: int, size: int, allocation_size: int, *, offset: int = 0,
                         allocator: str = "vulkan", dedicated: bool = False, usage: int = 0) -> Buffer:
        """Imports a buffer fd (``Buffer.export_fd``; the values are the
        exporter's :attr:`Buffer.info`). On success the library owns ``fd``; on
        failure it stays the caller's."""
        if allocator not in ALLOCATORS:
            raise ValueError(f"allocator must be 'vulkan' or 'cuda', not {allocator!r}")
        _check_fd(fd)
        info = BufferImportInfo(0, ALLOCATORS[allocator], allocation_size, offset, size, 1 if dedicated else 0,
                                 usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_import_fd(self._handle, ctypes.byref(info), fd, ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_buffer(self, description: ShareDescription, fd: int, *, usage: int = 0) -> Buffer:
        """Imports a buffer from its :meth:`Buffer.describe` and an fd (taken on success)."""
        _check_description(description)
        _check_fd(fd)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_import_description(self._handle, ctypes.byref(description.raw), fd, usage,
                                                   ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def receive_buffer(self, sock: Any, *, usage: int = 0, timeout: Optional[float] = None) -> Buffer:
        """Receives a buffer sent with :meth:`Buffer.send` and imports it."""
        o = share_options(timeout, usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_semaphore(self, description: ShareDescription, fd: int) -> Semaphore:
        """Imports a semaphore from its :meth:`Semaphore.describe` and an fd (taken on success)."""
        _check_description(description)
        _check_fd(fd)
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_import_description(self._handle, ctypes.byref(description.raw), fd,
                                                      ctypes.byref(h)))
        return Semaphore._adopt(h.value or 0)

    def receive_semaphore(self, sock: Any, *, timeout: Optional[float] = None) -> Semaphore:
        """Receives a semaphore sent with :meth:`Semaphore.send` and imports it."""
        o = share_options(timeout)
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Semaphore._adopt(h.value or 0)

    def buffer_batch(self, n: int, nbytes: int, *, usage: int = 0) -> BufferBatch:
        """N equal buffers in ONE allocation the library makes and maps into CUDA
        once (see :class:`vkcuda.BufferBatch`): one ``(N, nbytes)`` tensor and N
        views, zero-copy, each slice a Vulkan buffer of its own."""

        return BufferBatch(self, n, nbytes, usage=usage)

    def image_batch(self, n: int, format: int, size: Tuple[int, int], *, usage: int = 0,
                    force_copy: bool = False) -> ImageBatch:
        """N 2D images of ``format`` (a ``VkFormat`` int) and ``size`` ``(width,
        height)`` in ONE allocation, one ``(N, H, W, C)`` tensor (see
        :class:`vkcuda.ImageBatch`); ``force_copy`` takes the copy path even where
        LINEAR images would do."""

        return ImageBatch(self, n, format, size, usage=usage, force_copy=force_copy)


def _check_description(description: Any) -> None:
    if not isinstance(description, ShareDescription):
        raise TypeError(f"description must be a vkcuda.ShareDescription, not {type(description).__name__}")


def _check_fd(fd: Any) -> None:
    """An fd is an int; the library checks that it is open (a closed fd: its
    "Bad file descriptor" message, nothing taken)."""
    if isinstance(fd, bool) or not isinstance(fd, int):
        raise TypeError(f"an fd is an int, not {type(fd).__name__}")
