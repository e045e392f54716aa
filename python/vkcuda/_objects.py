"""The objects: contexts, buffers (with DLPack views) and semaphores, each a thin
owner of one C handle. Every check and message comes from the C library."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from . import _dlpack, _native
from ._native import check, lib
from ._share import ShareDescription, share_options, socket_fd

if TYPE_CHECKING:
    from ._batch import BufferBatch, ImageBatch
    from ._image import Image
    from ._video import VideoFrame

_T = TypeVar("_T", bound="_Handle")

__all__ = [
    "Context",
    "Buffer",
    "TensorView",
    "Semaphore",
    "Stage",
    "CudaInfo",
    "VulkanHandles",
    "BufferInfo",
    "live_objects",
    "version",
    "DeviceSupport",
    "physical_devices",
    "query_device",
    "device_extensions",
    "command_buffer_handle",
]


def version() -> str:
    """The library's version, "major.minor.patch" (Cargo.toml's)."""
    return (lib.vkcuda_version_string() or b"").decode()


def live_objects() -> dict:
    """How many native objects the library holds in this process, by kind
    (``vkcuda_live_objects_get``): all 0 once everything is released."""
    counts = _native.LiveObjects()
    check(lib.vkcuda_live_objects_get(ctypes.byref(counts)))
    return {field[0]: getattr(counts, field[0]) for field in _native.LiveObjects._fields_}


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


class BufferInfo(NamedTuple):
    """Everything about a buffer (``vkcuda_buffer_info``)."""

    vk_buffer: int
    vk_memory: int
    offset: int
    size: int
    allocation_size: int
    cuda_pointer: int
    allocator: str
    dedicated: bool
    wrapped: bool


class Stage(NamedTuple):
    """One stage on a timeline: wait for ``wait_value``, signal ``signal_value``."""

    wait_value: int
    signal_value: int


_ALLOCATORS = {"vulkan": _native.ALLOCATOR_VULKAN, "cuda": _native.ALLOCATOR_CUDA}


class _PhysicalDeviceSupport(ctypes.Structure):
    _fields_ = [("api_version", ctypes.c_uint32), ("external_memory_fd", ctypes.c_uint32),
                ("external_semaphore_fd", ctypes.c_uint32), ("timeline_semaphore", ctypes.c_uint32),
                ("cuda_available", ctypes.c_uint32), ("cuda_device_found", ctypes.c_uint32),
                ("cuda_device_ordinal", ctypes.c_int32), ("supported", ctypes.c_uint32),
                ("device_uuid", ctypes.c_uint8 * 16), ("device_name", ctypes.c_char * 256)]


class _BufferWrapInfo(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint32), ("buffer", ctypes.c_uint64), ("memory", ctypes.c_uint64),
                ("allocation_size", ctypes.c_uint64), ("offset", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("dedicated", ctypes.c_uint32), ("export_handle_types", ctypes.c_uint32)]


class _BufferImportInfo(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint32), ("allocator", ctypes.c_int32), ("allocation_size", ctypes.c_uint64),
                ("offset", ctypes.c_uint64), ("size", ctypes.c_uint64), ("dedicated", ctypes.c_uint32),
                ("usage", ctypes.c_uint32)]


_P = ctypes.c_void_p
_native.declare({
    "vkcuda_physical_devices_enumerate": (ctypes.c_int32, [ctypes.POINTER(ctypes.c_uint32),
                                                           ctypes.POINTER(_PhysicalDeviceSupport)]),
    "vkcuda_physical_device_query": (ctypes.c_int32, [_P, _P, _P, ctypes.POINTER(_PhysicalDeviceSupport)]),
    "vkcuda_device_extensions_enumerate": (ctypes.c_int32, [ctypes.POINTER(ctypes.c_uint32),
                                                            ctypes.POINTER(ctypes.c_char_p)]),
    "vkcuda_buffer_wrap": (ctypes.c_int32, [_P, ctypes.POINTER(_BufferWrapInfo), ctypes.POINTER(_P)]),
    "vkcuda_buffer_import_fd": (ctypes.c_int32, [_P, ctypes.POINTER(_BufferImportInfo), ctypes.c_int32,
                                                 ctypes.POINTER(_P)]),
})


class DeviceSupport(NamedTuple):
    """What a Vulkan physical device offers for interop
    (``vkcuda_physical_device_support``)."""

    name: str
    uuid: bytes
    api_version: Tuple[int, int, int]
    external_memory_fd: bool
    external_semaphore_fd: bool
    timeline_semaphore: bool
    cuda_available: bool
    cuda_device_found: bool
    cuda_ordinal: Optional[int]
    supported: bool


def _support(s: _PhysicalDeviceSupport) -> DeviceSupport:
    v = s.api_version
    return DeviceSupport(
        s.device_name.decode("utf-8", "replace"), bytes(s.device_uuid), (v >> 22, (v >> 12) & 0x3FF, v & 0xFFF),
        bool(s.external_memory_fd), bool(s.external_semaphore_fd), bool(s.timeline_semaphore),
        bool(s.cuda_available), bool(s.cuda_device_found),
        s.cuda_device_ordinal if s.cuda_device_ordinal >= 0 else None, bool(s.supported),
    )


def physical_devices() -> List[DeviceSupport]:
    """Every Vulkan device the system's loader reports, with what it supports
    (``vkcuda_physical_devices_enumerate``); works without a CUDA driver."""
    n = ctypes.c_uint32()
    check(lib.vkcuda_physical_devices_enumerate(ctypes.byref(n), None))
    arr = (_PhysicalDeviceSupport * max(1, n.value))()
    check(lib.vkcuda_physical_devices_enumerate(ctypes.byref(n), arr))
    return [_support(arr[i]) for i in range(n.value)]


def query_device(instance: int, physical_device: int, get_instance_proc_addr: int) -> DeviceSupport:
    """What an engine's physical device supports, before it creates its
    ``VkDevice`` (``vkcuda_physical_device_query``; the handles are ints)."""
    s = _PhysicalDeviceSupport()
    check(lib.vkcuda_physical_device_query(instance, physical_device, get_instance_proc_addr, ctypes.byref(s)))
    return _support(s)


def device_extensions() -> List[str]:
    """The device extensions to enable on an engine's device (those it has)."""
    n = ctypes.c_uint32()
    check(lib.vkcuda_device_extensions_enumerate(ctypes.byref(n), None))
    names = (ctypes.c_char_p * max(1, n.value))()
    check(lib.vkcuda_device_extensions_enumerate(ctypes.byref(n), names))
    return [(names[i] or b"").decode() for i in range(n.value)]


def command_buffer_handle(command_buffer: Any) -> int:
    """A ``VkCommandBuffer`` as an int: an int, or an object with an int
    ``handle`` (``vkcuda.queue.CommandBuffer``) or ``value`` (``ctypes.c_void_p``)."""
    if isinstance(command_buffer, bool):
        raise TypeError("a command buffer is an int VkCommandBuffer, not a bool")
    if isinstance(command_buffer, int):
        if command_buffer <= 0:
            raise ValueError(f"command buffer handle {command_buffer} is not a VkCommandBuffer")
        return command_buffer
    for attr in ("handle", "value"):
        v = getattr(command_buffer, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return command_buffer_handle(v)
    raise TypeError(f"{type(command_buffer).__name__} is not a VkCommandBuffer: pass an int handle")


def cuda_handle(obj: Any, what: str, attrs: Sequence[str]) -> int:
    """A CUDA handle (graph, graph exec, node) as an int: an int, or an object
    with one of ``attrs`` (an int, or a method returning one)."""
    if isinstance(obj, bool):
        raise TypeError(f"a {what} is an int handle or an object with {' / '.join(attrs)}, not a bool")
    if isinstance(obj, int):
        if obj <= 0:
            raise ValueError(f"{what} handle {obj} is not valid")
        return obj
    for attr in attrs:
        v = getattr(obj, attr, None)
        if callable(v):
            v = v()
        if isinstance(v, int) and not isinstance(v, bool):
            return cuda_handle(v, what, attrs)
    raise TypeError(f"{type(obj).__name__} is not a {what}: pass an int handle or an object with "
                    f"{' / '.join(attrs)}")


class _Handle:
    """Owns one C handle; ``close()`` (or garbage collection) destroys it."""

    _destroy: Any = None

    def __init__(self, handle: int) -> None:
        self._handle: Optional[int] = handle

    @property
    def handle(self) -> Optional[int]:
        """The C handle (a pointer as an int), or None once closed."""
        return self._handle

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Destroys the C handle now (a second close does nothing). What the handle
        lent out (DLPack tensors of a buffer) keeps working until released."""
        h, self._handle = self._handle, None
        if h is not None:
            type(self)._destroy(h)

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class Context(_Handle):
    """A Vulkan device paired with the CUDA device of the same UUID (by default its
    primary context, the one PyTorch, CuPy and JAX use). Objects made from it keep
    it alive inside the library, so it may be closed before them."""

    _destroy = lib.vkcuda_context_destroy

    @classmethod
    def standalone(cls, *, vulkan_only: bool = False, physical_device_index: Optional[int] = None) -> "Context":
        """A context with the library's own Vulkan instance, device and queue
        (``vkcuda_context_create_standalone``): the first device with a CUDA twin,
        or the device at ``physical_device_index``. ``vulkan_only`` leaves CUDA out."""
        info = _native.StandaloneCreateInfo()
        if vulkan_only:
            info.flags |= _native.CONTEXT_CREATE_VULKAN_ONLY_BIT
        if physical_device_index is not None:
            info.flags |= _native.CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT
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
    ) -> "Context":
        """Pairs an engine's own Vulkan device (``vkcuda_context_create``); the
        handles are ints (pointers and dispatchable handles). The engine keeps
        them alive longer than this context and everything made from it."""
        info = _native.ContextCreateInfo(
            flags=_native.CONTEXT_CREATE_VULKAN_ONLY_BIT if vulkan_only else 0,
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
        h = _native.VulkanHandles()
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
        c = _native.CudaInfo()
        check(lib.vkcuda_context_get_cuda_info(self._handle, ctypes.byref(c)))
        return CudaInfo(c.cuda_context or 0, c.cuda_device, c.device_ordinal, bool(c.primary), bytes(c.device_uuid))

    def buffer(self, size: int, *, allocator: str = "vulkan", usage: int = 0) -> "Buffer":
        """A shared buffer of ``size`` bytes allocated by ``allocator`` ("vulkan" or
        "cuda"), with ``VkBufferUsageFlags`` ``usage`` (0: storage and transfers)."""
        return Buffer(self, size, allocator=allocator, usage=usage)

    def video_frame(self, width: int, height: int, format: str = "nv12") -> "VideoFrame":
        """A shared video frame (``format``: "nv12", "p010", ...; see
        :class:`vkcuda.VideoFrame`): each plane a zero-copy DLPack tensor."""
        from ._video import VideoFrame

        return VideoFrame(self, width, height, format)

    def semaphore(self, *, initial_value: int = 0, binary: bool = False, host_wait_spin_ns: int = 0) -> "Semaphore":
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
        c = _native.CudaInfo()
        if lib.vkcuda_context_get_cuda_info(self._handle, ctypes.byref(c)) != _native.SUCCESS:
            return None
        return c.cuda_context or 0

    @property
    def device_support(self) -> DeviceSupport:
        """What this context's physical device supports (``vkcuda_physical_device_query``)."""
        h = self.vulkan_handles
        return query_device(h.instance, h.physical_device, h.get_instance_proc_addr)

    # --- images ---------------------------------------------------------------
    def image(self, format: Union[str, int], extent: Sequence[int], *, levels: int = 1, layers: int = 1,
              usage: int = 0, cube: bool = False) -> "Image":
        """A shared image (``vkcuda_image_create``): ``format`` a name of
        :data:`vkcuda.FORMATS` ("r8g8b8a8_unorm", ...) or a ``VkFormat`` int;
        ``extent`` (width,) for 1D, (width, height) for 2D, (width, height, depth)
        for 3D; ``levels`` mip levels, ``layers`` array layers, ``usage``
        ``VkImageUsageFlags`` (0: transfers, sampled and storage where possible),
        ``cube`` cube-compatible."""
        from ._image import Image, create_info

        info = create_info(format, extent, levels, layers, usage, cube)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_create(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def wrap_image(self, vk_image: int, vk_memory: int, allocation_size: int, format: Union[str, int],
                   extent: Sequence[int], *, usage: int, levels: int = 1, layers: int = 1, cube: bool = False,
                   offset: int = 0, dedicated: bool = True, export_handle_types: int = 0x1) -> "Image":
        """The CUDA view of an engine's own ``VkImage`` on exportable memory
        (``vkcuda_image_wrap``): the image and memory (ints) stay the engine's and
        must outlive the returned :class:`Image`. The description is the one the
        image was created with (``usage`` its real usage)."""
        from ._image import Image, create_info, wrap_info

        desc = create_info(format, extent, levels, layers, usage, cube)
        info = wrap_info(vk_image, vk_memory, allocation_size, desc, offset, dedicated, export_handle_types)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_wrap(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def import_image(self, description: ShareDescription, fds: Union[int, Sequence[int]]) -> "Image":
        """Imports an image another process (or this one) exported: its
        :meth:`Image.describe` and :meth:`Image.export_fds`. On success the
        library owns the fds; on failure they stay the caller's."""
        from ._image import Image

        _check_description(description)
        fd_list = [fds] if isinstance(fds, int) else list(fds)
        arr = (ctypes.c_int32 * max(1, len(fd_list)))(*fd_list)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_import_description_fds(self._handle, ctypes.byref(description.raw), arr,
                                                      len(fd_list), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    def receive_image(self, sock: Any, *, timeout: Optional[float] = None) -> "Image":
        """Receives an image sent with :meth:`Image.send` and imports it."""
        from ._image import Image

        o = share_options(timeout)
        h = ctypes.c_void_p()
        check(lib.vkcuda_image_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Image(h.value or 0, self._cuda_context())

    # --- buffers from elsewhere -----------------------------------------------
    def wrap_buffer(self, vk_buffer: int, vk_memory: int, allocation_size: int, size: int, *, offset: int = 0,
                    dedicated: bool = False, export_handle_types: int = 0x1) -> "Buffer":
        """The CUDA view of an engine's own ``VkBuffer`` bound at ``offset`` in
        exportable memory (``vkcuda_buffer_wrap``); both stay the engine's."""
        info = _BufferWrapInfo(0, vk_buffer, vk_memory, allocation_size, offset, size, 1 if dedicated else 0,
                               export_handle_types)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_wrap(self._handle, ctypes.byref(info), ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_buffer_fd(self, fd: int, size: int, allocation_size: int, *, offset: int = 0,
                         allocator: str = "vulkan", dedicated: bool = False, usage: int = 0) -> "Buffer":
        """Imports a buffer fd (``Buffer.export_fd``; the values are the
        exporter's :attr:`Buffer.info`). On success the library owns ``fd``; on
        failure it stays the caller's."""
        if allocator not in _ALLOCATORS:
            raise ValueError(f"allocator must be 'vulkan' or 'cuda', not {allocator!r}")
        _check_fd(fd)
        info = _BufferImportInfo(0, _ALLOCATORS[allocator], allocation_size, offset, size, 1 if dedicated else 0,
                                 usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_import_fd(self._handle, ctypes.byref(info), fd, ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_buffer(self, description: ShareDescription, fd: int, *, usage: int = 0) -> "Buffer":
        """Imports a buffer from its :meth:`Buffer.describe` and an fd (taken on success)."""
        _check_description(description)
        _check_fd(fd)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_import_description(self._handle, ctypes.byref(description.raw), fd, usage,
                                                   ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def receive_buffer(self, sock: Any, *, usage: int = 0, timeout: Optional[float] = None) -> "Buffer":
        """Receives a buffer sent with :meth:`Buffer.send` and imports it."""
        o = share_options(timeout, usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Buffer._adopt(self, h.value or 0)

    def import_semaphore(self, description: ShareDescription, fd: int) -> "Semaphore":
        """Imports a semaphore from its :meth:`Semaphore.describe` and an fd (taken on success)."""
        _check_description(description)
        _check_fd(fd)
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_import_description(self._handle, ctypes.byref(description.raw), fd,
                                                      ctypes.byref(h)))
        return Semaphore._adopt(h.value or 0)

    def receive_semaphore(self, sock: Any, *, timeout: Optional[float] = None) -> "Semaphore":
        """Receives a semaphore sent with :meth:`Semaphore.send` and imports it."""
        o = share_options(timeout)
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_receive(self._handle, socket_fd(sock), ctypes.byref(o), ctypes.byref(h)))
        return Semaphore._adopt(h.value or 0)

    def buffer_batch(self, n: int, nbytes: int, *, usage: int = 0) -> "BufferBatch":
        """N equal buffers in ONE allocation the library makes and maps into CUDA
        once (see :class:`vkcuda.BufferBatch`): one ``(N, nbytes)`` tensor and N
        views, zero-copy, each slice a Vulkan buffer of its own."""
        from ._batch import BufferBatch

        return BufferBatch(self, n, nbytes, usage=usage)

    def image_batch(self, n: int, format: int, size: Tuple[int, int], *, usage: int = 0,
                    force_copy: bool = False) -> "ImageBatch":
        """N 2D images of ``format`` (a ``VkFormat`` int) and ``size`` ``(width,
        height)`` in ONE allocation, one ``(N, H, W, C)`` tensor (see
        :class:`vkcuda.ImageBatch`); ``force_copy`` takes the copy path even where
        LINEAR images would do."""
        from ._batch import ImageBatch

        return ImageBatch(self, n, format, size, usage=usage, force_copy=force_copy)


def _check_description(description: Any) -> None:
    if not isinstance(description, ShareDescription):
        raise TypeError(f"description must be a vkcuda.ShareDescription, not {type(description).__name__}")


def _check_fd(fd: Any) -> None:
    """An fd is an int; the library checks that it is open (a closed fd: its
    "Bad file descriptor" message, nothing taken)."""
    if isinstance(fd, bool) or not isinstance(fd, int):
        raise TypeError(f"an fd is an int, not {type(fd).__name__}")


class Buffer(_Handle):
    """One allocation seen by Vulkan as a ``VkBuffer`` and by CUDA as a device
    pointer. ``torch.from_dlpack(buf)`` sees it as bytes; ``buf.view(dtype, shape)``
    as any dtype and shape. Tensors made from it hold the memory: it stays valid
    after :meth:`close` until the last tensor is freed."""

    _destroy = lib.vkcuda_buffer_destroy

    def __init__(self, context: Context, size: int, *, allocator: str = "vulkan", usage: int = 0) -> None:
        if allocator not in _ALLOCATORS:
            raise ValueError(f"allocator must be 'vulkan' or 'cuda', not {allocator!r}")
        info = _native.BufferCreateInfo(flags=0, allocator=_ALLOCATORS[allocator], size=size, usage=usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)
        self._setup(context)

    def _setup(self, context: Context) -> None:
        cuda = _native.CudaInfo()
        paired = lib.vkcuda_context_get_cuda_info(context.handle, ctypes.byref(cuda)) == _native.SUCCESS
        self._ordinal: Optional[int] = cuda.device_ordinal if paired else None
        # (kDLCUDA, ordinal) of a paired context, whose buffers always have a CUDA
        # view; None in a Vulkan-only one (__dlpack_device__ then asks the library).
        self._dl_device: Optional[Tuple[int, int]] = (_dlpack.KDL_CUDA, cuda.device_ordinal) if paired else None
        self._ready: Optional[Tuple["Semaphore", int]] = None
        self._cai_view: Optional[TensorView] = None

    @classmethod
    def _adopt(cls, context: Context, handle: int) -> "Buffer":
        """A Buffer owning a handle the library made (wrap, import, receive)."""
        b = cls.__new__(cls)
        _Handle.__init__(b, handle)
        b._setup(context)
        return b

    def __repr__(self) -> str:
        if self.closed:
            return "Buffer(closed)"
        i = self.info
        side = "Vulkan-only" if not i.cuda_pointer else f"cuda_pointer={i.cuda_pointer:#x}"
        extra = ", wrapped" if i.wrapped else ""
        return f"Buffer({i.size} bytes, {i.allocator}-allocated, {side}{extra})"

    def describe(self) -> ShareDescription:
        """What another process needs to import the buffer (with :meth:`export_fd`)."""
        d = ShareDescription()
        check(lib.vkcuda_buffer_describe(self._handle, ctypes.byref(d.raw)))
        return d

    def send(self, sock: Any, *, timeout: Optional[float] = None) -> None:
        """Sends the buffer over a connected Unix socket (``vkcuda_buffer_send``:
        a description and a new fd, closed here); the peer calls
        :meth:`Context.receive_buffer`."""
        o = share_options(timeout)
        check(lib.vkcuda_buffer_send(self._handle, socket_fd(sock), ctypes.byref(o)))

    def cmd_release_to_cuda(self, command_buffer: Any, *, queue_family_index: int = 0, stage_mask: int = 0,
                            access_mask: int = 0) -> None:
        """Records into the engine's command buffer (an int ``VkCommandBuffer``)
        the barrier releasing the buffer to CUDA (``vkcuda_buffer_cmd_release_to_cuda``):
        the engine's writes at ``stage_mask``/``access_mask`` (0: all) on
        ``queue_family_index`` become available."""
        h = _native.HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_buffer_cmd_release_to_cuda(self._handle, command_buffer_handle(command_buffer),
                                                    ctypes.byref(h)))

    def cmd_acquire_from_cuda(self, command_buffer: Any, *, queue_family_index: int = 0, stage_mask: int = 0,
                              access_mask: int = 0) -> None:
        """Records the barrier acquiring the buffer back from CUDA for the
        accesses in ``stage_mask``/``access_mask`` (0: all)."""
        h = _native.HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_buffer_cmd_acquire_from_cuda(self._handle, command_buffer_handle(command_buffer),
                                                      ctypes.byref(h)))

    def ready_on(self, semaphore: Optional["Semaphore"], value: int = 0) -> None:
        """Says that the buffer's contents are ready when ``semaphore`` reaches
        ``value`` (the Vulkan submit that writes it signals that value). From
        then on every export makes the consumer wait for it on the GPU:
        ``__dlpack__(stream=s)`` enqueues ``vkcuda_semaphore_cuda_wait(semaphore,
        value, s)`` on the consumer's stream ``s`` (None or 1: the legacy default
        stream; -1: no wait, the consumer synchronises itself), and
        ``__cuda_array_interface__`` enqueues it on the legacy default stream and
        names that stream (``"stream": 1``). ``ready_on(None)`` forgets it."""
        if semaphore is None:
            self._ready = None
            return
        if not isinstance(semaphore, Semaphore):
            raise TypeError(f"ready_on takes a vkcuda.Semaphore, not {type(semaphore).__name__}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"value must be a timeline value (an int >= 0), not {value!r}")
        self._ready = (semaphore, value)

    @property
    def ready(self) -> Optional[Tuple["Semaphore", int]]:
        """The (semaphore, value) a consumer waits for (:meth:`ready_on`), or None."""
        return self._ready

    def _consumer_wait(self, stream: Any) -> None:
        """Enqueues the wait of :meth:`ready_on` on a DLPack consumer's ``stream``."""
        if self._ready is None or stream == -1:
            return
        sem, value = self._ready
        sem.cuda_wait(value, None if stream in (None, 1) else stream)

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The whole buffer as bytes, for Numba and CuPy (version 3; see
        :meth:`TensorView.__cuda_array_interface__`). The export is held by this
        Buffer object: a consumer holding the buffer keeps the memory valid
        after :meth:`close`, until the object is freed."""
        if self._cai_view is None:
            self._cai_view = self.view()
        return self._cai_view.__cuda_array_interface__

    @property
    def info(self) -> BufferInfo:
        i = _native.BufferInfo()
        check(lib.vkcuda_buffer_get_info(self._handle, ctypes.byref(i)))
        return BufferInfo(
            i.buffer,
            i.memory,
            i.offset,
            i.size,
            i.allocation_size,
            i.cuda_pointer,
            "cuda" if i.allocator == _native.ALLOCATOR_CUDA else "vulkan",
            bool(i.dedicated),
            bool(i.wrapped),
        )

    @property
    def size(self) -> int:
        """The size in bytes of both views."""
        return self.info.size

    @property
    def allocator(self) -> str:
        """"vulkan" or "cuda": which side allocated the memory."""
        return self.info.allocator

    @property
    def vk_buffer(self) -> int:
        """The ``VkBuffer`` handle (owned by this buffer)."""
        return self.info.vk_buffer

    @property
    def cuda_pointer(self) -> int:
        """The ``CUdeviceptr`` of the first byte; :class:`Error`
        ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` in a Vulkan-only context."""
        p = ctypes.c_uint64()
        check(lib.vkcuda_buffer_get_cuda_pointer(self._handle, ctypes.byref(p)))
        return p.value

    def export_fd(self) -> int:
        """A new file descriptor of the memory; the caller owns it (``os.close``)."""
        fd = ctypes.c_int32(-1)
        check(lib.vkcuda_buffer_export_fd(self._handle, ctypes.byref(fd)))
        return fd.value

    def view(
        self,
        dtype: _dlpack.DType = "uint8",
        shape: Optional[Sequence[int]] = None,
        *,
        strides: Optional[Sequence[int]] = None,
        offset: int = 0,
        readonly: bool = False,
    ) -> "TensorView":
        """A DLPack view of the buffer: ``dtype`` (a name, a NumPy/PyTorch dtype or
        a DLPack ``(code, bits, lanes)``), ``shape`` (None: one dimension over the
        rest of the buffer), ``strides`` in elements (None: C-contiguous), ``offset``
        in bytes. Checked by the library when a consumer imports it."""
        return TensorView(self, dtype, shape, strides=strides, offset=offset, readonly=readonly)

    def export_dlpack(self, view: Optional["TensorView"] = None, *, versioned: bool = True) -> int:
        """The raw ``vkcuda_buffer_export_dlpack``: a ``DLManagedTensorVersioned*``
        (or ``DLManagedTensor*``) as an int, owned by the caller, who passes it to a
        consumer or calls its deleter once. Most code uses ``__dlpack__`` instead."""
        return (view or self.view()).export(versioned=versioned)

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The whole buffer as a one-dimensional uint8 tensor (see :meth:`TensorView.__dlpack__`)."""
        if copy or dl_device is not None or (stream is not None and type(stream) is not int):
            _check_dlpack_args(self, stream, dl_device, copy)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _capsule(self, _BYTES_INFO[versioned], versioned, stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(kDLCUDA, ordinal)`` of the paired CUDA device; :class:`Error`
        ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` in a Vulkan-only context (and the
        library's error for a closed buffer)."""
        d = self._dl_device
        if d is None or self._handle is None:
            self.cuda_pointer  # the library's error for a closed or Vulkan-only buffer
            return (_dlpack.KDL_CUDA, -1) if d is None else d
        return d


# DLPack's hot path (TensorView.__dlpack__ under torch.from_dlpack): the export
# takes addresses (the prototype checked by test_abi, pointers as ints), each
# view builds its vkcuda_dlpack_info once, and nothing else crosses into C but
# PyCapsule_New. A pending write (Buffer.ready_on) adds the consumer's wait.
_export_dlpack = _native.by_address("vkcuda_buffer_export_dlpack")
_PyCapsule_New = _dlpack._PyCapsule_New
_CAPSULE_NAMES = (_dlpack.LEGACY_NAME_ADDRESS, _dlpack.VERSIONED_NAME_ADDRESS)


def _bytes_info(flags: int) -> "_native.DlpackInfo":
    info = _native.DlpackInfo(flags=flags)
    info.dtype.code, info.dtype.bits, info.dtype.lanes = _dlpack.parse_dtype("uint8")
    return info


#: The whole buffer as bytes, by versioned (False: the legacy DLManagedTensor);
#: never written after this, so any thread may pass them.
_BYTES_INFOS = (_bytes_info(_native.DLPACK_LEGACY_BIT), _bytes_info(0))
_BYTES_INFO = tuple(ctypes.addressof(i) for i in _BYTES_INFOS)


def _check_dlpack_args(owner: Any, stream: Any, dl_device: Any, copy: Any) -> None:
    """The checks of ``__dlpack__``'s rarer arguments (``copy``, ``dl_device``, a
    ``stream`` that is not a plain int)."""
    if copy:
        raise BufferError("vkcuda exports its buffers without copying (copy=True is not possible)")
    if dl_device is not None and tuple(dl_device) != owner.__dlpack_device__():
        raise BufferError(f"the buffer is on DLPack device {owner.__dlpack_device__()}, not {tuple(dl_device)}")
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise TypeError(f"stream must be None or an int, not {type(stream).__name__}")


def _export(buffer: Buffer, info: int) -> int:
    """``vkcuda_buffer_export_dlpack`` of the ``vkcuda_dlpack_info`` at address
    ``info``: the tensor's address, owned by the caller."""
    out = ctypes.c_void_p()
    result = _export_dlpack(buffer._handle, info, ctypes.addressof(out))
    if result:
        check(result)
    return out.value or 0


def _capsule(buffer: Buffer, info: int, versioned: bool, stream: Any) -> Any:
    """The capsule of ``__dlpack__``: the export of ``info`` (an address), then,
    only with a pending write (:meth:`Buffer.ready_on`), the consumer's wait
    (after the export: its checks come first; a failed wait frees the capsule
    unconsumed, whose destructor deletes the tensor)."""
    out = ctypes.c_void_p()
    result = _export_dlpack(buffer._handle, info, ctypes.addressof(out))
    if result:
        check(result)
    try:
        capsule = _PyCapsule_New(out.value, _CAPSULE_NAMES[versioned], _dlpack.destructor_address)
    except BaseException:
        _dlpack.call_deleter(out.value or 0, versioned)
        raise
    if buffer._ready is not None and stream != -1:
        buffer._consumer_wait(stream)
    return capsule


class TensorView:
    """A dtype, shape, strides and offset over a :class:`Buffer`, exported as a
    DLPack tensor each time a consumer asks (``torch.from_dlpack(view)``,
    ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``). Zero-copy: the tensor's
    data pointer is the buffer's CUDA pointer plus ``offset``.

    Synchronisation (the stream model): vkcuda itself enqueues no CUDA work on a
    buffer. What the consumer must wait for is the engine's Vulkan write, known
    as a timeline value: after ``buffer.ready_on(semaphore, value)`` (the value
    the engine's submit signals), ``__dlpack__(stream=s)`` enqueues on the
    consumer's stream ``s`` a GPU wait for ``value`` before returning the
    tensor, so the consumer's kernels on ``s`` read what Vulkan wrote, with no
    host wait. Without ``ready_on`` nothing is pending and no wait is enqueued;
    order the consumer's work yourself with :meth:`Semaphore.cuda_wait`."""

    def __init__(
        self,
        buffer: Buffer,
        dtype: _dlpack.DType = "uint8",
        shape: Optional[Sequence[int]] = None,
        *,
        strides: Optional[Sequence[int]] = None,
        offset: int = 0,
        readonly: bool = False,
    ) -> None:
        self._buffer = buffer
        self._dtype = _dlpack.parse_dtype(dtype)
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        self._strides = None if strides is None else tuple(int(s) for s in strides)
        if self._shape is not None and len(self._shape) == 0:
            raise ValueError("shape () is not exported: pass None for one dimension over the buffer, or (1,)")
        if self._shape is not None and len(self._shape) > _native.DLPACK_MAX_NDIM:
            raise ValueError(f"shape has {len(self._shape)} dimensions; at most {_native.DLPACK_MAX_NDIM}")
        if self._strides is not None and (self._shape is None or len(self._strides) != len(self._shape)):
            raise ValueError("strides need a shape of the same length")
        self._offset = int(offset)
        self._readonly = bool(readonly)
        # The address of this view's vkcuda_dlpack_info, by versioned (legacy,
        # versioned), made on first export and never written after (any thread
        # may pass it); the struct and its strides live in _plan_keep.
        self._plans: List[Optional[int]] = [None, None]
        self._plan_keep: List[Any] = []
        self._cai: Optional[_dlpack.Held] = None

    # Read-only: each export reuses the vkcuda_dlpack_info made from them.
    @property
    def buffer(self) -> Buffer:
        """The buffer the view is over."""
        return self._buffer

    @property
    def dtype(self) -> Tuple[int, int, int]:
        """The DLPack ``(code, bits, lanes)``."""
        return self._dtype

    @property
    def shape(self) -> Optional[Tuple[int, ...]]:
        """The shape, or None: one dimension over the rest of the buffer."""
        return self._shape

    @property
    def strides(self) -> Optional[Tuple[int, ...]]:
        """Strides in elements, or None: C-contiguous."""
        return self._strides

    @property
    def offset(self) -> int:
        """Where the tensor starts in the buffer, in bytes."""
        return self._offset

    @property
    def readonly(self) -> bool:
        """Whether the tensor is marked read-only (DLPack >= 1.0 consumers)."""
        return self._readonly

    def _plan(self, versioned: bool) -> int:
        """The address of the ``vkcuda_dlpack_info`` of this view (made once)."""
        plan = self._plans[versioned]
        if plan is not None:
            return plan
        info = _native.DlpackInfo()
        info.flags = (_native.DLPACK_READ_ONLY_BIT if self._readonly else 0) | (
            0 if versioned else _native.DLPACK_LEGACY_BIT
        )
        info.dtype.code, info.dtype.bits, info.dtype.lanes = self._dtype
        strides = None
        if self._shape is not None:
            info.ndim = len(self._shape)
            for i, d in enumerate(self._shape):
                info.shape[i] = d
            if self._strides is not None:
                strides = (ctypes.c_int64 * len(self._strides))(*self._strides)
                info.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        info.offset = self._offset
        self._plan_keep.append((info, strides))
        plan = self._plans[versioned] = ctypes.addressof(info)
        return plan

    def __repr__(self) -> str:
        return (
            f"TensorView(dtype={_dlpack.dtype_name(*self.dtype)}, shape={self.shape}, strides={self.strides}, "
            f"offset={self.offset}, readonly={self.readonly})"
        )

    def export(self, *, versioned: bool = True) -> int:
        """Calls ``vkcuda_buffer_export_dlpack``; the caller owns the returned
        ``DLManagedTensorVersioned*`` (``DLManagedTensor*`` when not versioned)."""
        return _export(self._buffer, self._plan(versioned))

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The DLPack protocol: a "dltensor_versioned" capsule when the consumer
        passes ``max_version`` >= (1, 0), else a legacy "dltensor" one (which
        cannot be read-only). ``stream`` is the consumer's stream (None, 1 or 2
        for the default streams, a handle, or -1 for "no synchronisation"): with
        a pending write (:meth:`Buffer.ready_on`) the stream waits for it on the
        GPU, otherwise nothing is enqueued (see the class doc). ``copy=True`` and a
        ``dl_device`` other than the buffer's raise ``BufferError``.

        Its cost is one C call for the export and one for the capsule (each view
        builds its ``vkcuda_dlpack_info`` once); ``bench/dlpack.py`` measures it."""
        if copy or dl_device is not None or (stream is not None and type(stream) is not int):
            _check_dlpack_args(self, stream, dl_device, copy)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if self._readonly and not versioned:
            raise BufferError("a read-only view needs a DLPack >= 1.0 consumer (max_version=(1, 0))")
        plan = self._plans[versioned]
        return _capsule(self._buffer, self._plan(versioned) if plan is None else plan, versioned, stream)

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA Array Interface (version 3) for Numba and CuPy: the view's
        pointer, shape, typestr and strides in bytes, checked by the library (one
        DLPack export, held by this view: the memory stays valid while the view
        lives, even after ``buffer.close()``). With :meth:`Buffer.ready_on` the
        legacy default stream waits for the semaphore and ``"stream"`` is 1 (the
        consumer orders its stream after it). bfloat16 and vector dtypes have no
        typestr: ``TypeError`` (use DLPack)."""
        if self._cai is None:
            self._cai = _dlpack.Held(self.export(versioned=True))
        stream = None
        if self.buffer._ready is not None:
            self.buffer._consumer_wait(None)
            stream = 1
        return _dlpack.cuda_array_interface(self._cai, *self.dtype, stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(kDLCUDA, ordinal)`` of the paired CUDA device; :class:`Error`
        ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` in a Vulkan-only context."""
        return self._buffer.__dlpack_device__()


class Semaphore(_Handle):
    """A timeline (or binary) ``VkSemaphore`` shared with CUDA. CUDA streams wait
    and signal with :meth:`cuda_wait` / :meth:`cuda_signal`; Vulkan submits use
    :attr:`vk_semaphore`; :meth:`next_stage` hands out the values in order."""

    _destroy = lib.vkcuda_semaphore_destroy

    def __init__(self, context: Context, *, initial_value: int = 0, binary: bool = False, host_wait_spin_ns: int = 0) -> None:
        info = _native.SemaphoreCreateInfo(
            flags=0, semaphore_type=1 if binary else 0, initial_value=initial_value, host_wait_spin_ns=host_wait_spin_ns
        )
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)

    @classmethod
    def _adopt(cls, handle: int) -> "Semaphore":
        s = cls.__new__(cls)
        _Handle.__init__(s, handle)
        return s

    def __repr__(self) -> str:
        if self.closed:
            return "Semaphore(closed)"
        d = self.describe().raw.semaphore
        return f"Semaphore(binary)" if d.semaphore_type else f"Semaphore(timeline, value={self.value})"

    def describe(self) -> ShareDescription:
        """What another process needs to import the semaphore (with :meth:`export_fd`)."""
        d = ShareDescription()
        check(lib.vkcuda_semaphore_describe(self._handle, ctypes.byref(d.raw)))
        return d

    def send(self, sock: Any, *, timeout: Optional[float] = None) -> None:
        """Sends the semaphore over a connected Unix socket; the peer calls
        :meth:`Context.receive_semaphore`."""
        o = share_options(timeout)
        check(lib.vkcuda_semaphore_send(self._handle, socket_fd(sock), ctypes.byref(o)))

    def note_vulkan_signal(self) -> None:
        """Binary semaphores: the engine put it in a submit's signal list."""
        check(lib.vkcuda_semaphore_note_vulkan_signal(self._handle))

    def note_vulkan_wait(self) -> None:
        """Binary semaphores: the engine put it in a submit's wait list."""
        check(lib.vkcuda_semaphore_note_vulkan_wait(self._handle))

    _GRAPH_ATTRS = ("ptr", "graph", "raw_cuda_graph", "handle")
    _EXEC_ATTRS = ("ptr", "graph_exec", "graphExec", "raw_cuda_graph_exec", "handle")

    def _graph_add(self, signal: bool, graph: Any, value: int, dependencies: Sequence[Any]) -> int:
        g = cuda_handle(graph, "CUDA graph", self._GRAPH_ATTRS)
        deps = [cuda_handle(d, "CUDA graph node", ("ptr", "handle")) for d in dependencies]
        arr = (ctypes.c_void_p * max(1, len(deps)))(*deps)
        node = ctypes.c_void_p()
        add = lib.vkcuda_semaphore_cuda_graph_add_signal if signal else lib.vkcuda_semaphore_cuda_graph_add_wait
        check(add(self._handle, g, arr if deps else None, len(deps), value, ctypes.byref(node)))
        return node.value or 0

    def cuda_graph_add_wait(self, graph: Any, value: int, dependencies: Sequence[Any] = ()) -> int:
        """Adds to a CUDA graph (a ``CUgraph`` int, or an object with ``ptr``,
        ``graph`` or ``raw_cuda_graph()``: CuPy's ``cupy.cuda.graph.Graph``,
        torch's ``CUDAGraph(keep_graph=True)``) a node waiting for ``value``
        after ``dependencies`` (node ints); returns the node (an int, owned by the
        graph). Set the value per launch with :meth:`cuda_graph_exec_set_wait`."""
        return self._graph_add(False, graph, value, dependencies)

    def cuda_graph_add_signal(self, graph: Any, value: int, dependencies: Sequence[Any] = ()) -> int:
        """Adds a node signalling ``value`` (the first launch's; give each later
        launch its own with :meth:`cuda_graph_exec_set_signal`)."""
        return self._graph_add(True, graph, value, dependencies)

    def _capture_add(self, signal: bool, stream: Any, value: int) -> int:
        from . import _cuda

        s = _dlpack.stream_handle(stream)
        if s in (0, 1, 2):
            raise ValueError("a graph capture runs on a stream of its own, not a default stream: pass the "
                             "capturing stream (torch.cuda.current_stream() inside torch.cuda.graph(...))")
        graph, deps = _cuda.capture_graph(s)
        node = self._graph_add(signal, graph, value, deps)
        _cuda.capture_continue_after(s, node)
        return node

    def cuda_capture_wait(self, stream: Any, value: int) -> int:
        """Inside a stream capture (``torch.cuda.graph``, CuPy's
        ``stream.begin_capture()``): adds the wait node to the graph being
        captured on ``stream``, after the work captured so far, and makes the
        work captured next depend on it (``cuda_wait`` is refused on a capturing
        stream: a captured wait would keep its value). Returns the node; every
        replay waits for ``value`` unless changed with
        :meth:`cuda_graph_exec_set_wait`."""
        return self._capture_add(False, stream, value)

    def cuda_capture_signal(self, stream: Any, value: int) -> int:
        """The signal node, as :meth:`cuda_capture_wait`: ``value`` is the first
        replay's; give each later replay a new one with
        :meth:`cuda_graph_exec_set_signal` (a timeline cannot signal a value twice)."""
        return self._capture_add(True, stream, value)

    def cuda_graph_exec_set_wait(self, graph_exec: Any, node: Any, value: int) -> None:
        """The value the wait ``node`` waits for in the next launches of ``graph_exec``."""
        e = cuda_handle(graph_exec, "CUDA graph exec", self._EXEC_ATTRS)
        n = cuda_handle(node, "CUDA graph node", ("ptr", "handle"))
        check(lib.vkcuda_semaphore_cuda_graph_exec_set_wait(self._handle, e, n, value))

    def cuda_graph_exec_set_signal(self, graph_exec: Any, node: Any, value: int) -> None:
        """The value the signal ``node`` signals in the next launch of ``graph_exec``."""
        e = cuda_handle(graph_exec, "CUDA graph exec", self._EXEC_ATTRS)
        n = cuda_handle(node, "CUDA graph node", ("ptr", "handle"))
        check(lib.vkcuda_semaphore_cuda_graph_exec_set_signal(self._handle, e, n, value))

    @property
    def vk_semaphore(self) -> int:
        """The ``VkSemaphore`` handle for the engine's submits (owned by this object)."""
        v = ctypes.c_uint64()
        check(lib.vkcuda_semaphore_get_vk_semaphore(self._handle, ctypes.byref(v)))
        return v.value

    @property
    def value(self) -> int:
        """The timeline's current value."""
        v = ctypes.c_uint64()
        check(lib.vkcuda_semaphore_get_value(self._handle, ctypes.byref(v)))
        return v.value

    def next_stage(self) -> Stage:
        """The next stage's (wait_value, signal_value)."""
        s = _native.TimelineStage()
        check(lib.vkcuda_semaphore_next_stage(self._handle, ctypes.byref(s)))
        return Stage(s.wait_value, s.signal_value)

    def cuda_wait(self, value: int, stream: Any = None) -> None:
        """Enqueues on ``stream`` a wait for ``value`` (no CPU wait). ``stream``:
        None (the legacy default stream), a ``torch.cuda.Stream``, a CuPy stream,
        an object with ``__cuda_stream__``, or a raw ``CUstream`` int."""
        check(lib.vkcuda_semaphore_cuda_wait(self._handle, value, _dlpack.stream_handle(stream) or None))

    def cuda_signal(self, value: int, stream: Any = None) -> None:
        """Enqueues on ``stream`` a signal of ``value`` (it must go forward)."""
        check(lib.vkcuda_semaphore_cuda_signal(self._handle, value, _dlpack.stream_handle(stream) or None))

    def host_signal(self, value: int) -> None:
        """Signals ``value`` from the host."""
        check(lib.vkcuda_semaphore_host_signal(self._handle, value))

    def host_wait(self, value: int, timeout: float = 1.0) -> None:
        """Waits on the host until the timeline reaches ``value``; :class:`Error`
        ``VKCUDA_ERROR_TIMEOUT`` after ``timeout`` seconds."""
        if timeout < 0:
            raise ValueError("timeout must be >= 0 seconds")
        ns = min(int(timeout * 1e9), 2**64 - 1)
        check(lib.vkcuda_semaphore_host_wait(self._handle, value, ns))

    def export_fd(self) -> int:
        """A new fd of the semaphore; the caller owns it."""
        fd = ctypes.c_int32(-1)
        check(lib.vkcuda_semaphore_export_fd(self._handle, ctypes.byref(fd)))
        return fd.value
