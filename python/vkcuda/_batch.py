"""A batch of N equal buffers carved from ONE Vulkan allocation: N cameras, N
environments rendering N views. The allocation is made here (exportable,
OPAQUE_FD) with N + 1 ``VkBuffer`` s bound into it, and each is given its CUDA
view by ``vkcuda_buffer_wrap`` (the C API's way to share a buffer at an offset
of a larger allocation): the whole range, and each slice.

The CUDA side of the batch is the whole range's single mapping: the
``(N, ...)`` tensor and the N per-slice views are offsets into it, so slice
``i``'s tensor pointer is ``whole.cuda_pointer + i * stride``, zero-copy. Each
slice is also a :class:`vkcuda.Buffer` of its own (``batch[i]``) for the
engine's descriptors and the handoff barriers; its ``cuda_pointer`` is a
second mapping of the same memory (the library imports the allocation once
per wrap), so prefer the views for CUDA work.
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int32, c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import _dlpack, _native
from ._native import Error
from ._objects import Buffer, TensorView

if TYPE_CHECKING:
    from ._objects import Context

__all__ = ["BufferBatch"]

_BUFFER_CREATE_INFO = 12
_MEMORY_ALLOCATE_INFO = 5
_EXTERNAL_MEMORY_BUFFER_CREATE_INFO = 1000072000
_EXPORT_MEMORY_ALLOCATE_INFO = 1000072002
_OPAQUE_FD = 0x1
_DEVICE_LOCAL = 0x1
_DEFAULT_USAGE = 0x1 | 0x2 | 0x20  # TRANSFER_SRC | TRANSFER_DST | STORAGE_BUFFER
_MIN_ALIGNMENT = 256  # slices start where CUDA kernels and tensors like them


class _ExportMemoryAllocateInfo(Structure):
    _c_name_ = "VkExportMemoryAllocateInfo"
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("handleTypes", c_uint32)]


class _ExternalMemoryBufferCreateInfo(Structure):
    _c_name_ = "VkExternalMemoryBufferCreateInfo"
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("handleTypes", c_uint32)]


def _vulkan(context: "Context") -> Tuple[int, Dict[str, Any], Any]:
    from .queue import _BufferCreateInfo, _MemoryAllocateInfo, _MemoryProperties, _MemoryRequirements  # noqa: F401

    h = context.vulkan_handles
    gipa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(h.get_instance_proc_addr)
    gdpa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(gipa(h.instance, b"vkGetDeviceProcAddr"))
    P, U64 = c_void_p, c_uint64
    protos: Dict[str, Tuple[Any, List[Any]]] = {
        "vkCreateBuffer": (c_int32, [P, P, P, POINTER(U64)]),
        "vkDestroyBuffer": (None, [P, U64, P]),
        "vkGetBufferMemoryRequirements": (None, [P, U64, P]),
        "vkAllocateMemory": (c_int32, [P, P, P, POINTER(U64)]),
        "vkFreeMemory": (None, [P, U64, P]),
        "vkBindBufferMemory": (c_int32, [P, U64, U64, U64]),
    }
    f: Dict[str, Any] = {}
    for name, (res, args) in protos.items():
        addr = gdpa(h.device, name.encode())
        if not addr:
            raise Error(_native.ERROR_VULKAN, f"{name} not found")
        f[name] = CFUNCTYPE(res, *args)(addr)
    props = _MemoryProperties()
    CFUNCTYPE(None, c_void_p, POINTER(_MemoryProperties))(
        gipa(h.instance, b"vkGetPhysicalDeviceMemoryProperties"))(h.physical_device, byref(props))
    return h.device, f, props


def _vk(call: str, r: int) -> None:
    if r != 0:
        raise Error(_native.ERROR_VULKAN, f"{call} failed with VkResult {r}")


class BufferBatch:
    """N equal buffers of ``nbytes`` in one allocation (see the module doc),
    made by :meth:`Context.buffer_batch`. ``batch.tensor(dtype, shape)`` is the
    ``(N, *shape)`` tensor, ``batch.views(dtype, shape)`` the N tensors,
    ``batch[i]`` slice ``i``'s :class:`Buffer`, ``batch.whole`` the whole range.
    ``close()`` (or ``with``) releases everything; DLPack tensors already handed
    out keep the CUDA mapping (and with it the memory) until freed."""

    def __init__(self, context: "Context", n: int, nbytes: int, *, usage: int = 0) -> None:
        from .queue import _BufferCreateInfo, _MemoryAllocateInfo, _MemoryRequirements

        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, not {n!r}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ValueError(f"nbytes must be an int >= 1, not {nbytes!r}")
        self.n, self.nbytes = n, nbytes
        self._device, self._f, props = _vulkan(context)
        self._vk_buffers: List[int] = []
        self._memory = 0
        self._buffers: List[Buffer] = []
        self.whole: Optional[Buffer] = None
        self._view: Optional[TensorView] = None  # the (N, nbytes) uint8 tensor
        usage = usage or _DEFAULT_USAGE
        try:
            one = self._create_buffer(_BufferCreateInfo, nbytes, usage)
            req = _MemoryRequirements()
            self._f["vkGetBufferMemoryRequirements"](self._device, one, byref(req))
            align = max(req.alignment, _MIN_ALIGNMENT)
            self.stride = (nbytes + align - 1) // align * align
            whole = self._create_buffer(_BufferCreateInfo, self.stride * n, usage)
            wreq = _MemoryRequirements()
            self._f["vkGetBufferMemoryRequirements"](self._device, whole, byref(wreq))
            bits = req.memoryTypeBits & wreq.memoryTypeBits
            index = next((i for i in range(props.memoryTypeCount)
                          if bits & (1 << i) and props.memoryTypes[i].propertyFlags & _DEVICE_LOCAL), None)
            if index is None:
                raise Error(_native.ERROR_UNSUPPORTED, "no device-local memory type for the batch's buffers")
            self.allocation_size = max(wreq.size, self.stride * n)
            export = _ExportMemoryAllocateInfo(_EXPORT_MEMORY_ALLOCATE_INFO, None, _OPAQUE_FD)
            alloc = _MemoryAllocateInfo(sType=_MEMORY_ALLOCATE_INFO, pNext=ctypes.addressof(export),
                                        allocationSize=self.allocation_size, memoryTypeIndex=index)
            mem = c_uint64()
            _vk("vkAllocateMemory", self._f["vkAllocateMemory"](self._device, byref(alloc), None, byref(mem)))
            self._memory = mem.value
            _vk("vkBindBufferMemory", self._f["vkBindBufferMemory"](self._device, whole, self._memory, 0))
            self.whole = context.wrap_buffer(whole, self._memory, self.allocation_size, self.stride * n)
            for i in range(n):
                vb = one if i == 0 else self._create_buffer(_BufferCreateInfo, nbytes, usage)
                _vk("vkBindBufferMemory",
                    self._f["vkBindBufferMemory"](self._device, vb, self._memory, i * self.stride))
                self._buffers.append(context.wrap_buffer(vb, self._memory, self.allocation_size, nbytes,
                                                         offset=i * self.stride))
        except BaseException:
            self.close()
            raise

    def _create_buffer(self, create_info: Any, size: int, usage: int) -> int:
        ext = _ExternalMemoryBufferCreateInfo(_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, None, _OPAQUE_FD)
        info = create_info(sType=_BUFFER_CREATE_INFO, pNext=ctypes.addressof(ext), size=size, usage=usage)
        out = c_uint64()
        _vk("vkCreateBuffer", self._f["vkCreateBuffer"](self._device, byref(info), None, byref(out)))
        self._vk_buffers.append(out.value)
        return out.value

    def __len__(self) -> int:
        return len(self._buffers)

    def __getitem__(self, i: int) -> Buffer:
        return self._buffers[i]

    def __iter__(self) -> Any:
        return iter(self._buffers)

    @property
    def buffers(self) -> List[Buffer]:
        """The N slices as :class:`Buffer` s (Vulkan buffers of their own)."""
        return list(self._buffers)

    def _whole(self) -> Buffer:
        if self.whole is None or self.whole.closed:
            raise Error(_native.ERROR_INVALID_STATE, "the buffer batch is closed")
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
        """Destroys the N + 1 vkcuda buffers, then the Vulkan buffers and memory
        (a second close does nothing)."""
        for b in self._buffers:
            b.close()
        self._buffers = []
        if self.whole is not None:
            self.whole.close()
        f = getattr(self, "_f", None)
        if f is not None:
            for vb in self._vk_buffers:
                f["vkDestroyBuffer"](self._device, vb, None)
            self._vk_buffers = []
            if self._memory:
                f["vkFreeMemory"](self._device, self._memory, None)
                self._memory = 0

    @property
    def closed(self) -> bool:
        return self.whole is None or self.whole.closed

    def __enter__(self) -> "BufferBatch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"stride {self.stride}, one allocation of {self.allocation_size} bytes"
        return f"BufferBatch({self.n} x {self.nbytes} bytes, {state})"
