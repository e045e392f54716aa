"""Buffers: one allocation seen by Vulkan as a ``VkBuffer`` and by CUDA as a
device pointer, and its DLPack views (:class:`TensorView`), exported on
DLPack's hot path with as few C calls as possible."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_uint64, c_void_p
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import _dlpack, _native, _types
from ._native import SUCCESS, check, declare, lib
from ._semaphore import Semaphore
from ._share import ShareDescription, share_options, socket_fd
from ._types import (
    ALLOCATOR_CUDA,
    ALLOCATOR_VULKAN,
    DLPACK_LEGACY_BIT,
    DLPACK_MAX_NDIM,
    DLPACK_READ_ONLY_BIT,
    BufferCreateInfo,
    ContextHandle,
    CudaInfo,
    DlpackInfo,
    Handle,
    HandoffInfo,
    command_buffer_handle,
)

__all__ = ["Buffer", "TensorView", "BufferInfo"]

_P = c_void_p
declare({
    "vkcuda_buffer_create": (c_int32, [_P, POINTER(BufferCreateInfo), POINTER(_P)]),
    "vkcuda_buffer_get_info": (c_int32, [_P, POINTER(_types.BufferInfo)]),
    "vkcuda_buffer_get_cuda_pointer": (c_int32, [_P, POINTER(c_uint64)]),
    "vkcuda_buffer_export_fd": (c_int32, [_P, POINTER(c_int32)]),
    "vkcuda_buffer_export_dlpack": (c_int32, [_P, POINTER(DlpackInfo), POINTER(_P)]),
    "vkcuda_buffer_destroy": (None, [_P]),
    "vkcuda_buffer_cmd_release_to_cuda": (c_int32, [_P, _P, POINTER(HandoffInfo)]),
    "vkcuda_buffer_cmd_acquire_from_cuda": (c_int32, [_P, _P, POINTER(HandoffInfo)]),
})

#: ``allocator=`` names, as ``vkcuda_allocator`` values.
ALLOCATORS = {"vulkan": ALLOCATOR_VULKAN, "cuda": ALLOCATOR_CUDA}


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


class Buffer(Handle):
    """One allocation seen by Vulkan as a ``VkBuffer`` and by CUDA as a device
    pointer. ``torch.from_dlpack(buf)`` sees it as bytes; ``buf.view(dtype, shape)``
    as any dtype and shape. Tensors made from it hold the memory: it stays valid
    after :meth:`close` until the last tensor is freed."""

    _destroy = lib.vkcuda_buffer_destroy

    def __init__(self, context: ContextHandle, size: int, *, allocator: str = "vulkan", usage: int = 0) -> None:
        if allocator not in ALLOCATORS:
            raise ValueError(f"allocator must be 'vulkan' or 'cuda', not {allocator!r}")
        info = BufferCreateInfo(flags=0, allocator=ALLOCATORS[allocator], size=size, usage=usage)
        h = ctypes.c_void_p()
        check(lib.vkcuda_buffer_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)
        self._setup(context)

    def _setup(self, context: ContextHandle) -> None:
        cuda = CudaInfo()
        paired = lib.vkcuda_context_get_cuda_info(context.handle, ctypes.byref(cuda)) == SUCCESS
        self._ordinal: Optional[int] = cuda.device_ordinal if paired else None
        # (kDLCUDA, ordinal) of a paired context, whose buffers always have a CUDA
        # view; None in a Vulkan-only one (__dlpack_device__ then asks the library).
        self._dl_device: Optional[Tuple[int, int]] = (_dlpack.KDL_CUDA, cuda.device_ordinal) if paired else None
        self._ready: Optional[Tuple[Semaphore, int]] = None
        self._cai_view: Optional[TensorView] = None

    @classmethod
    def _adopt(cls, context: ContextHandle, handle: int) -> "Buffer":
        """A Buffer owning a handle the library made (wrap, import, receive)."""
        b = cls.__new__(cls)
        Handle.__init__(b, handle)
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
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_buffer_cmd_release_to_cuda(self._handle, command_buffer_handle(command_buffer),
                                                    ctypes.byref(h)))

    def cmd_acquire_from_cuda(self, command_buffer: Any, *, queue_family_index: int = 0, stage_mask: int = 0,
                              access_mask: int = 0) -> None:
        """Records the barrier acquiring the buffer back from CUDA for the
        accesses in ``stage_mask``/``access_mask`` (0: all)."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_buffer_cmd_acquire_from_cuda(self._handle, command_buffer_handle(command_buffer),
                                                      ctypes.byref(h)))

    def ready_on(self, semaphore: Optional[Semaphore], value: int = 0) -> None:
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
    def ready(self) -> Optional[Tuple[Semaphore, int]]:
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
        i = _types.BufferInfo()
        check(lib.vkcuda_buffer_get_info(self._handle, ctypes.byref(i)))
        return BufferInfo(
            i.buffer,
            i.memory,
            i.offset,
            i.size,
            i.allocation_size,
            i.cuda_pointer,
            "cuda" if i.allocator == ALLOCATOR_CUDA else "vulkan",
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


def _bytes_info(flags: int) -> DlpackInfo:
    info = DlpackInfo(flags=flags)
    info.dtype.code, info.dtype.bits, info.dtype.lanes = _dlpack.parse_dtype("uint8")
    return info


#: The whole buffer as bytes, by versioned (False: the legacy DLManagedTensor);
#: never written after this, so any thread may pass them.
_BYTES_INFOS = (_bytes_info(DLPACK_LEGACY_BIT), _bytes_info(0))
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
        if self._shape is not None and len(self._shape) > DLPACK_MAX_NDIM:
            raise ValueError(f"shape has {len(self._shape)} dimensions; at most {DLPACK_MAX_NDIM}")
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
        info = DlpackInfo()
        info.flags = (DLPACK_READ_ONLY_BIT if self._readonly else 0) | (
            0 if versioned else DLPACK_LEGACY_BIT
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


