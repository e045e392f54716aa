"""Batches: N buffers (or N images) of one shape in ONE allocation, imported into
CUDA once and mapped once by the library (``vkcuda_batch_*``); this module only
calls the C ABI.

:class:`BufferBatch` (``ctx.buffer_batch(n, nbytes)``): ``batch.tensor(dtype,
shape)`` is the ``(N, *shape)`` tensor, ``batch.views(...)`` the N per-slice
tensors, ``batch[i]`` slice ``i``'s :class:`vkcuda.Buffer` (the batch's own
``VkBuffer`` and its one CUDA mapping: no new import), ``batch.whole`` a Buffer
over all N.

:class:`ImageBatch` (``ctx.image_batch(n, format, (width, height))``): N 2D
images; ``torch.from_dlpack(batch)`` is the ``(N, H, W, C)`` tensor (``(N, H,
W)`` for one channel), zero-copy where the device lets LINEAR images share the
allocation, else over a readout region that the release fills with one recorded
copy (``batch.path``). With ``batch.ready_on(semaphore, value)`` the consumer's
stream waits on the GPU for ``value`` before it reads.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_uint32, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _dlpack
from ._buffer import Buffer, TensorView
from ._native import ERROR_INVALID_STATE, Error, check, declare, lib
from ._semaphore import Semaphore
from ._types import (
    BATCH_CREATE_FORCE_COPY_BIT,
    BATCH_DLPACK_ELEMENT_BIT,
    BATCH_KIND_BUFFERS,
    BATCH_KIND_IMAGES,
    BATCH_PATH_BUFFERS,
    BATCH_PATH_COPY,
    BATCH_PATH_ZERO_COPY,
    BATCH_WHOLE,
    DLPACK_LEGACY_BIT,
    DLPACK_READ_ONLY_BIT,
    BatchCreateInfo,
    BatchDlpackInfo,
    BatchElement,
    BatchInfo,
    ContextHandle,
    CudaInfo,
    Handle,
    HandoffInfo,
)

__all__ = ["BufferBatch", "ImageBatch"]

_P = c_void_p
declare({
    "vkcuda_batch_create": (c_int32, [_P, POINTER(BatchCreateInfo), POINTER(_P)]),
    "vkcuda_batch_get_info": (c_int32, [_P, POINTER(BatchInfo)]),
    "vkcuda_batch_get_element": (c_int32, [_P, c_uint32, POINTER(BatchElement)]),
    "vkcuda_batch_get_buffer": (c_int32, [_P, c_uint32, POINTER(_P)]),
    "vkcuda_batch_export_dlpack": (c_int32, [_P, POINTER(BatchDlpackInfo), POINTER(_P)]),
    "vkcuda_batch_cmd_release_to_cuda": (c_int32, [_P, _P, POINTER(HandoffInfo), c_int32]),
    "vkcuda_batch_cmd_acquire_from_cuda": (c_int32, [_P, _P, POINTER(HandoffInfo), c_int32]),
    "vkcuda_batch_cmd_acquire_readout_from_cuda": (c_int32, [_P, _P, POINTER(HandoffInfo)]),
    "vkcuda_batch_destroy": (None, [_P]),
})

#: ``batch.path`` by ``vkcuda_batch_path``.
PATHS = {BATCH_PATH_ZERO_COPY: "zero-copy", BATCH_PATH_COPY: "copy", BATCH_PATH_BUFFERS: "buffers"}


class _Batch(Handle):
    """The C handle and what every batch shares: info, the handoffs, close."""

    _destroy = lib.vkcuda_batch_destroy

    def __init__(self, context: ContextHandle, info: BatchCreateInfo) -> None:
        h = c_void_p()
        check(lib.vkcuda_batch_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)
        self._context = context
        i = BatchInfo()
        check(lib.vkcuda_batch_get_info(self._handle, ctypes.byref(i)))
        self._info = i

    def _h(self) -> int:
        if self._handle is None:
            raise Error(ERROR_INVALID_STATE, f"the {type(self).__name__} is closed")
        return self._handle

    @property
    def path(self) -> str:
        """``"zero-copy"`` (LINEAR images: the memory is the tensor), ``"copy"``
        (OPTIMAL images and a readout region the release fills) or ``"buffers"``."""
        return PATHS[self._info.path]

    @property
    def allocation_size(self) -> int:
        """The one allocation's size in bytes."""
        return int(self._info.allocation_size)

    @property
    def element_stride(self) -> int:
        """Bytes from one element of the tensor to the next (a multiple of 256)."""
        return int(self._info.element_stride)

    @property
    def vk_memory(self) -> int:
        """The one ``VkDeviceMemory`` (owned by the batch)."""
        return int(self._info.memory)

    def cmd_release_to_cuda(self, command_buffer: int, queue_family_index: int, old_layout: int = 0, *,
                            stage_mask: int = 0, access_mask: int = 0) -> None:
        """Records the release of every element to CUDA in one call
        (``vkcuda_batch_cmd_release_to_cuda``; ``old_layout`` is a ``VkImageLayout``,
        ignored for buffers)."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_batch_cmd_release_to_cuda(self._h(), command_buffer, ctypes.byref(h), old_layout))

    def cmd_acquire_from_cuda(self, command_buffer: int, queue_family_index: int, new_layout: int = 1, *,
                              stage_mask: int = 0, access_mask: int = 0) -> None:
        """Records the acquire of every element back from CUDA
        (``vkcuda_batch_cmd_acquire_from_cuda``; ``new_layout`` defaults to GENERAL)."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_batch_cmd_acquire_from_cuda(self._h(), command_buffer, ctypes.byref(h), new_layout))

    def cmd_acquire_readout_from_cuda(self, command_buffer: int, queue_family_index: int, *,
                                      stage_mask: int = 0, access_mask: int = 0) -> None:
        """The copy path's camera loop: records the acquire of the readout region
        alone, leaving the images as they are (``vkcuda_batch_cmd_acquire_readout_from_cuda``);
        before every release but the first."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_batch_cmd_acquire_readout_from_cuda(self._h(), command_buffer, ctypes.byref(h)))

    def _close_batch(self) -> None:
        """Destroys the batch (a second close does nothing). Tensors and buffers
        already handed out keep its memory until freed."""
        Handle.close(self)


class BufferBatch(_Batch):
    """N equal buffers of ``nbytes`` in one allocation (see the module doc),
    made by :meth:`Context.buffer_batch`. ``batch.tensor(dtype, shape)`` is the
    ``(N, *shape)`` tensor, ``batch.views(dtype, shape)`` the N tensors,
    ``batch[i]`` slice ``i``'s :class:`Buffer`, ``batch.whole`` the whole range.
    ``close()`` (or ``with``) releases everything; DLPack tensors already handed
    out keep the CUDA mapping (and with it the memory) until freed."""

    def __init__(self, context: ContextHandle, n: int, nbytes: int, *, usage: int = 0) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, not {n!r}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ValueError(f"nbytes must be an int >= 1, not {nbytes!r}")
        self._handle = None
        self._buffers: List[Buffer] = []
        self.whole: Optional[Buffer] = None
        self._view: Optional[TensorView] = None  # the (N, nbytes) uint8 tensor
        self.n, self.nbytes = n, nbytes
        super().__init__(context, BatchCreateInfo(kind=BATCH_KIND_BUFFERS, count=n, size=nbytes, buffer_usage=usage))
        self.stride = self.element_stride
        try:
            self.whole = self._buffer(BATCH_WHOLE)
            self._buffers = [self._buffer(i) for i in range(n)]
        except BaseException:
            self.close()
            raise

    def _buffer(self, index: int) -> Buffer:
        h = c_void_p()
        check(lib.vkcuda_batch_get_buffer(self._h(), index, ctypes.byref(h)))
        return Buffer._adopt(self._context, h.value or 0)

    def __len__(self) -> int:
        return len(self._buffers)

    def __getitem__(self, i: int) -> Buffer:
        return self._buffers[i]

    def __iter__(self) -> Any:
        return iter(self._buffers)

    @property
    def buffers(self) -> List[Buffer]:
        """The N slices as :class:`Buffer` s (the batch's Vulkan buffers)."""
        return list(self._buffers)

    def _whole(self) -> Buffer:
        if self.whole is None or self.whole.closed:
            raise Error(ERROR_INVALID_STATE, "the buffer batch is closed")
        return self.whole

    def _shape(self, dtype: _dlpack.DType, shape: Optional[Sequence[int]]) -> Tuple[Tuple[int, int, int], Tuple[int, ...], int]:
        dt = _dlpack.parse_dtype(dtype)
        itemsize = max(1, dt[1] * dt[2] // 8)
        if shape is None:
            if self.nbytes % itemsize:
                raise ValueError(f"{self.nbytes} bytes are not a whole number of {itemsize}-byte elements")
            shape = (self.nbytes // itemsize,)
        shape = tuple(int(d) for d in shape)
        if self.stride % itemsize:
            raise ValueError(f"the slice stride {self.stride} is not a multiple of the {itemsize}-byte element")
        return dt, shape, itemsize

    def tensor(self, dtype: _dlpack.DType = "uint8", shape: Optional[Sequence[int]] = None, *,
               readonly: bool = False) -> TensorView:
        """The whole batch as one ``(N, *shape)`` tensor (``shape`` of one slice,
        C-contiguous; None: one dimension over ``nbytes``). Zero-copy: element
        ``[i]`` is slice ``i``. The library checks it fits the slice."""
        dt, shape, itemsize = self._shape(dtype, shape)
        inner = [1] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            inner[k] = inner[k + 1] * shape[k + 1]
        per = 1
        for d in shape:
            per *= d
        if per * itemsize > self.nbytes:
            raise ValueError(f"shape {shape} of {itemsize}-byte elements is {per * itemsize} bytes; "
                             f"a slice has {self.nbytes}")
        return self._whole().view(dt, (self.n, *shape), strides=(self.stride // itemsize, *inner), readonly=readonly)

    def views(self, dtype: _dlpack.DType = "uint8", shape: Optional[Sequence[int]] = None, *,
              readonly: bool = False) -> List[TensorView]:
        """The N slices as N tensors of ``shape`` (offsets into the one mapping)."""
        dt, shape, _ = self._shape(dtype, shape)
        whole = self._whole()
        return [whole.view(dt, shape, offset=i * self.stride, readonly=readonly) for i in range(self.n)]

    def ready_on(self, semaphore: Any, value: int = 0) -> None:
        """:meth:`Buffer.ready_on` for the whole batch (every tensor of it)."""
        self._whole().ready_on(semaphore, value)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """The ``(N, nbytes)`` uint8 tensor (one view, made once, exported each time)."""
        self._whole()  # "the buffer batch is closed"
        if self._view is None:
            self._view = self.tensor()
        return self._view.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self._whole().__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The ``(N, nbytes)`` uint8 tensor, held by this object (see
        :meth:`Buffer.__cuda_array_interface__`)."""
        if self._view is None:
            self._view = self.tensor()
        return self._view.__cuda_array_interface__

    def close(self) -> None:
        """Destroys the N + 1 buffer views, then the batch: its buffers and its
        one allocation (a second close does nothing)."""
        for b in self._buffers:
            b.close()
        self._buffers = []
        if self.whole is not None:
            self.whole.close()
        self._close_batch()

    @property
    def closed(self) -> bool:
        return self.whole is None or self.whole.closed

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"stride {self.stride}, one allocation of {self.allocation_size} bytes"
        return f"BufferBatch({self.n} x {self.nbytes} bytes, {state})"


class ImageBatch(_Batch):
    """N 2D images of one format and size in one allocation (see the module doc),
    made by :meth:`Context.image_batch`. ``torch.from_dlpack(batch)`` is the ``(N,
    H, W, C)`` tensor; ``batch.element(i)`` image ``i`` (``VkImage`` and its CUDA
    pointer); :meth:`cmd_release_to_cuda` / :meth:`cmd_acquire_from_cuda` record
    the handoff of all N in one call."""

    def __init__(self, context: ContextHandle, n: int, format: int, size: Tuple[int, int], *, usage: int = 0,
                 force_copy: bool = False) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, not {n!r}")
        width, height = (int(d) for d in size)
        self._handle = None
        self._ready: Optional[Tuple[Semaphore, int]] = None
        self._cai: Optional[_dlpack.Held] = None
        super().__init__(context, BatchCreateInfo(
            flags=BATCH_CREATE_FORCE_COPY_BIT if force_copy else 0, kind=BATCH_KIND_IMAGES, count=n, format=format, width=width,
            height=height, image_usage=usage))
        self.n = n

    def __len__(self) -> int:
        return self.n

    @property
    def shape(self) -> Tuple[int, ...]:
        """``(N, H, W, C)``, or ``(N, H, W)`` for one channel."""
        i = self._info
        tail = () if i.channels == 1 else (int(i.channels),)
        return (int(i.count), int(i.height), int(i.width), *tail)

    @property
    def dtype(self) -> Tuple[int, int, int]:
        """The DLPack ``(code, bits, lanes)`` of one channel."""
        d = self._info.dtype
        return (int(d.code), int(d.bits), int(d.lanes))

    @property
    def row_pitch(self) -> int:
        """Bytes from one row to the next."""
        return int(self._info.row_pitch)

    def element(self, i: int) -> Dict[str, int]:
        """Image ``i``: ``image`` (the ``VkImage``), ``memory_offset``,
        ``data_offset`` and ``cuda_pointer`` (0 without CUDA)."""
        e = BatchElement()
        check(lib.vkcuda_batch_get_element(self._h(), i, ctypes.byref(e)))
        return {f[0]: int(getattr(e, f[0])) for f in BatchElement._fields_}

    def ready_on(self, semaphore: Optional[Semaphore], value: int = 0) -> None:
        """The timeline value the engine's submit with the release signals: each
        ``__dlpack__(stream=s)`` then makes ``s`` wait for it on the GPU (None or
        1: the legacy default stream; -1: no wait). ``ready_on(None)`` forgets it."""
        if semaphore is None:
            self._ready = None
            return
        if not isinstance(semaphore, Semaphore):
            raise TypeError(f"ready_on takes a vkcuda.Semaphore, not {type(semaphore).__name__}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"value must be a timeline value (an int >= 0), not {value!r}")
        self._ready = (semaphore, value)

    def export_dlpack(self, *, index: Optional[int] = None, versioned: bool = True, readonly: bool = False,
                      stream: Any = None) -> int:
        """The raw ``vkcuda_batch_export_dlpack``: the whole batch (or element
        ``index``) as a ``DLManagedTensorVersioned*`` (or ``DLManagedTensor*``) int,
        owned by the caller; with :meth:`ready_on`, ``stream`` waits first."""
        flags = (0 if versioned else DLPACK_LEGACY_BIT) | (DLPACK_READ_ONLY_BIT if readonly else 0)
        info = BatchDlpackInfo(flags=flags | (BATCH_DLPACK_ELEMENT_BIT if index is not None else 0), index=index or 0)
        if self._ready is not None and stream != -1:
            sem, value = self._ready
            info.wait_semaphore = sem.handle
            info.wait_value = value
            info.stream = _dlpack.stream_handle(None if stream in (None, 1) else stream) or None
        out = c_void_p()
        check(lib.vkcuda_batch_export_dlpack(self._h(), ctypes.byref(info), ctypes.byref(out)))
        return out.value or 0

    def __dlpack__(self, *, stream: Any = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """The ``(N, H, W, C)`` tensor; ``stream`` (the consumer's) waits for the
        :meth:`ready_on` value on the GPU, with no host wait."""
        if copy:
            raise BufferError("vkcuda exports its batches without copying (copy=True is not possible)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the batch is on DLPack device {self.__dlpack_device__()}, not {tuple(dl_device)}")
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
            raise TypeError(f"stream must be None or an int, not {type(stream).__name__}")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        ptr = self.export_dlpack(versioned=versioned, stream=stream)
        names = (_dlpack.LEGACY_NAME_ADDRESS, _dlpack.VERSIONED_NAME_ADDRESS)
        try:
            return _dlpack._PyCapsule_New(ptr, names[versioned], _dlpack.destructor_address)
        except BaseException:
            _dlpack.call_deleter(ptr, versioned)
            raise

    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(kDLCUDA, ordinal)``; :class:`Error` without CUDA."""
        cuda = CudaInfo()
        check(lib.vkcuda_context_get_cuda_info(self._context.handle, ctypes.byref(cuda)))
        return (_dlpack.KDL_CUDA, int(cuda.device_ordinal))

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The ``(N, H, W, C)`` tensor for Numba and CuPy (version 3, strides in
        bytes), held by this object; with :meth:`ready_on` the legacy default
        stream waits and ``"stream"`` is 1."""
        if self._cai is None:
            self._cai = _dlpack.Held(self.export_dlpack())
        stream = None
        if self._ready is not None:
            sem, value = self._ready
            sem.cuda_wait(value, None)
            stream = 1
        return _dlpack.cuda_array_interface(self._cai, *self.dtype, stream)

    def close(self) -> None:
        """Destroys the batch (the held ``__cuda_array_interface__`` export keeps
        the memory until this object goes)."""
        self._close_batch()

    def __repr__(self) -> str:
        if self.closed:
            return "ImageBatch(closed)"
        return f"ImageBatch({self.shape}, {self.path}, one allocation of {self.allocation_size} bytes)"
