"""The objects: contexts, buffers (with DLPack views) and semaphores, each a thin
owner of one C handle. Every check and message comes from the C library."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Sequence, Tuple

from . import _dlpack, _native
from ._native import check, lib

if TYPE_CHECKING:
    from ._video import VideoFrame

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

    def __enter__(self) -> Any:
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
        cuda = _native.CudaInfo()
        paired = lib.vkcuda_context_get_cuda_info(context.handle, ctypes.byref(cuda)) == _native.SUCCESS
        self._ordinal: Optional[int] = cuda.device_ordinal if paired else None

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
        """The whole buffer as a one-dimensional uint8 tensor (see :class:`TensorView`)."""
        return self.view().__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self.view().__dlpack_device__()


class TensorView:
    """A dtype, shape, strides and offset over a :class:`Buffer`, exported as a
    DLPack tensor each time a consumer asks (``torch.from_dlpack(view)``,
    ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``). Zero-copy: the tensor's
    data pointer is the buffer's CUDA pointer plus ``offset``.

    Synchronisation: vkcuda enqueues no CUDA work on the buffer, so there is
    nothing for the consumer's ``stream`` to wait for; order the consumer's work
    after Vulkan's with :meth:`Semaphore.cuda_wait` on that stream."""

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
        self.buffer = buffer
        self.dtype = _dlpack.parse_dtype(dtype)
        self.shape = None if shape is None else tuple(int(d) for d in shape)
        self.strides = None if strides is None else tuple(int(s) for s in strides)
        if self.shape is not None and len(self.shape) == 0:
            raise ValueError("shape () is not exported: pass None for one dimension over the buffer, or (1,)")
        if self.shape is not None and len(self.shape) > _native.DLPACK_MAX_NDIM:
            raise ValueError(f"shape has {len(self.shape)} dimensions; at most {_native.DLPACK_MAX_NDIM}")
        if self.strides is not None and (self.shape is None or len(self.strides) != len(self.shape)):
            raise ValueError("strides need a shape of the same length")
        self.offset = int(offset)
        self.readonly = bool(readonly)

    def __repr__(self) -> str:
        return (
            f"TensorView(dtype={_dlpack.dtype_name(*self.dtype)}, shape={self.shape}, strides={self.strides}, "
            f"offset={self.offset}, readonly={self.readonly})"
        )

    def export(self, *, versioned: bool = True) -> int:
        """Calls ``vkcuda_buffer_export_dlpack``; the caller owns the returned
        ``DLManagedTensorVersioned*`` (``DLManagedTensor*`` when not versioned)."""
        info = _native.DlpackInfo()
        info.flags = (_native.DLPACK_READ_ONLY_BIT if self.readonly else 0) | (
            0 if versioned else _native.DLPACK_LEGACY_BIT
        )
        info.dtype.code, info.dtype.bits, info.dtype.lanes = self.dtype
        strides = None
        if self.shape is not None:
            info.ndim = len(self.shape)
            for i, d in enumerate(self.shape):
                info.shape[i] = d
            if self.strides is not None:
                strides = (ctypes.c_int64 * len(self.strides))(*self.strides)
                info.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        info.offset = self.offset
        out = ctypes.c_void_p()
        check(lib.vkcuda_buffer_export_dlpack(self.buffer.handle, ctypes.byref(info), ctypes.byref(out)))
        return out.value or 0

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The DLPack protocol: a "dltensor_versioned" capsule when the consumer
        passes ``max_version`` >= (1, 0), else a legacy "dltensor" one (which
        cannot be read-only). ``stream`` is the consumer's stream (None, 1 or 2
        for the default streams, or a handle): vkcuda has no pending CUDA work on
        the buffer, so no wait is needed (see the class doc). ``copy=True`` and a
        ``dl_device`` other than the buffer's raise ``BufferError``."""
        if copy:
            raise BufferError("vkcuda exports its buffers without copying (copy=True is not possible)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the buffer is on DLPack device {self.__dlpack_device__()}, not {tuple(dl_device)}")
        if stream is not None:
            if isinstance(stream, bool) or not isinstance(stream, int):
                raise TypeError(f"stream must be None or an int, not {type(stream).__name__}")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if self.readonly and not versioned:
            raise BufferError("a read-only view needs a DLPack >= 1.0 consumer (max_version=(1, 0))")
        return _dlpack.make_capsule(self.export(versioned=versioned), versioned)

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(kDLCUDA, ordinal)`` of the paired CUDA device; :class:`Error`
        ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` in a Vulkan-only context."""
        self.buffer.cuda_pointer  # the library's error for a closed or Vulkan-only buffer
        return (_dlpack.KDL_CUDA, self.buffer._ordinal if self.buffer._ordinal is not None else -1)


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
