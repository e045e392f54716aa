"""A minimal Vulkan transfer queue for a standalone context (tools, tests and
examples without an engine): fill and copy commands into and out of shared
buffers, submitted with timeline-semaphore waits and signals, and host-visible
staging buffers to upload and download bytes (the library's
``vkcuda_host_buffer``: this module allocates no Vulkan memory of its own). An
engine records the same commands (and ``vkcuda_buffer_cmd_release_to_cuda`` /
``_acquire_from_cuda``) into its own command buffers instead.

The command pool, command buffers and submits are Vulkan calls through the
context's ``vkGetInstanceProcAddr`` with ctypes.

Example (a standalone context; ``data`` is bytes)::

    from vkcuda.queue import Queue

    with vkcuda.Context.standalone() as ctx, Queue(ctx) as q, ctx.buffer(4096) as buf:
        q.upload(buf, data)                                 # staging copy; waits
        sem = ctx.semaphore()
        stage = sem.next_stage()
        cmd = q.record(lambda r: r.release_to_cuda(buf))    # reusable command buffer
        q.submit(cmd, signal=[(sem, stage.signal_value)])   # no host wait
        buf.ready_on(sem, stage.signal_value)               # consumers' streams wait for it
        t = torch.from_dlpack(buf.view("float32"))
        q.download(buf)                                     # what Vulkan reads

Objects: :class:`Queue` (``record``, ``submit``, ``run``, ``upload``,
``download``, ``host_buffer``, ``wait_idle``), :class:`Recorder` (``fill``,
``copy``, ``release_to_cuda``, ``acquire_from_cuda``), :class:`CommandBuffer`
(``handle`` is the int ``VkCommandBuffer``, which ``Buffer.cmd_release_to_cuda``
and ``vkcuda.handoff_release`` also take) and :class:`HostBuffer`. Not
thread-safe: a ``VkQueue`` is externally synchronised.
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int32, c_uint32, c_uint64, c_void_p
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._buffer import Buffer
from ._context import Context
from ._native import Error
from ._semaphore import Semaphore
from ._types import Handle, HandoffInfo, HostBufferInfo

__all__ = ["Queue", "HostBuffer", "Recorder", "CommandBuffer"]

_SUBMIT_INFO = 4
_COMMAND_POOL_CREATE_INFO = 39
_COMMAND_BUFFER_ALLOCATE_INFO = 40
_COMMAND_BUFFER_BEGIN_INFO = 42
_TIMELINE_SEMAPHORE_SUBMIT_INFO = 1000207003
_STAGE_TRANSFER = 0x1000
_ACCESS_TRANSFER_WRITE = 0x1000
_ACCESS_TRANSFER_READ = 0x800
_SIMULTANEOUS_USE = 0x4


class _CommandPoolCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("queueFamilyIndex", c_uint32)]


class _CommandBufferAllocateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("commandPool", c_uint64), ("level", c_int32),
                ("commandBufferCount", c_uint32)]


class _CommandBufferBeginInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("pInheritanceInfo", c_void_p)]


class _BufferCopy(Structure):
    _fields_ = [("srcOffset", c_uint64), ("dstOffset", c_uint64), ("size", c_uint64)]


class _TimelineSubmitInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("waitSemaphoreValueCount", c_uint32),
                ("pWaitSemaphoreValues", POINTER(c_uint64)), ("signalSemaphoreValueCount", c_uint32),
                ("pSignalSemaphoreValues", POINTER(c_uint64))]


class _SubmitInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("waitSemaphoreCount", c_uint32),
                ("pWaitSemaphores", POINTER(c_uint64)), ("pWaitDstStageMask", POINTER(c_uint32)),
                ("commandBufferCount", c_uint32), ("pCommandBuffers", POINTER(c_void_p)),
                ("signalSemaphoreCount", c_uint32), ("pSignalSemaphores", POINTER(c_uint64))]


_P, _U64, _U32, _I32 = c_void_p, c_uint64, c_uint32, c_int32
_DEVICE_FUNCTIONS: "dict[str, Tuple[Any, List[Any]]]" = {
    "vkCreateCommandPool": (_I32, [_P, _P, _P, POINTER(_U64)]),
    "vkDestroyCommandPool": (None, [_P, _U64, _P]),
    "vkAllocateCommandBuffers": (_I32, [_P, _P, POINTER(_P)]),
    "vkBeginCommandBuffer": (_I32, [_P, _P]),
    "vkEndCommandBuffer": (_I32, [_P]),
    "vkCmdCopyBuffer": (None, [_P, _U64, _U64, _U32, _P]),
    "vkCmdFillBuffer": (None, [_P, _U64, _U64, _U64, _U32]),
    "vkQueueSubmit": (_I32, [_P, _U32, _P, _U64]),
    "vkQueueWaitIdle": (_I32, [_P]),
}

_lib = _native.lib  # the handoff calls are declared by _buffer


def _vk(call: str, r: int) -> None:
    if r != 0:
        raise Error(_native.ERROR_VULKAN, f"{call} failed with VkResult {r}")


_native.declare({
    "vkcuda_host_buffer_create": (c_int32, [_P, c_uint64, POINTER(_P)]),
    "vkcuda_host_buffer_get_info": (c_int32, [_P, POINTER(HostBufferInfo)]),
    "vkcuda_host_buffer_destroy": (None, [_P]),
})


class HostBuffer(Handle):
    """A host-visible, coherent staging buffer of the library
    (``vkcuda_host_buffer``), mapped while it lives: ``vk_buffer`` is the int
    ``VkBuffer``, ``address`` the mapped bytes' address and ``data`` those
    ``size`` bytes as a ctypes array. ``close()`` it (or use ``with``) once no
    submit uses it."""

    _destroy = _lib.vkcuda_host_buffer_destroy

    def __init__(self, queue: "Queue", size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"size must be an int, not {type(size).__name__}")
        if not 0 <= size < 1 << 64:
            raise ValueError(f"size {size} is not a uint64_t")
        h = c_void_p()
        _native.check(_lib.vkcuda_host_buffer_create(queue.context.handle, size, byref(h)))
        super().__init__(h.value or 0)
        info = HostBufferInfo()
        _native.check(_lib.vkcuda_host_buffer_get_info(self._handle, byref(info)))
        self._q, self.size, self.vk_buffer = queue, info.size, info.buffer
        self.address = info.data or 0
        self.data = (ctypes.c_uint8 * self.size).from_address(self.address)

    def __repr__(self) -> str:
        return f"HostBuffer({self.size} bytes{', closed' if self.closed else ''})"


Target = Union[Buffer, HostBuffer]


def _vk_buffer(b: Target) -> int:
    return b.vk_buffer


class Recorder:
    """Records transfer commands into one command buffer."""

    def __init__(self, queue: "Queue", cmd: int) -> None:
        self._q, self.cmd = queue, cmd

    def fill(self, dst: Target, value: int, size: Optional[int] = None, offset: int = 0) -> None:
        """``vkCmdFillBuffer``: the 32-bit ``value`` over ``size`` bytes (a multiple of 4)."""
        n = (dst.size - offset) if size is None else size
        self._q._f["vkCmdFillBuffer"](self.cmd, _vk_buffer(dst), offset, n, value & 0xFFFFFFFF)

    def copy(self, src: Target, dst: Target, size: Optional[int] = None, src_offset: int = 0, dst_offset: int = 0) -> None:
        """``vkCmdCopyBuffer`` of ``size`` bytes (default: all of ``src`` from ``src_offset``)."""
        region = _BufferCopy(src_offset, dst_offset, (src.size - src_offset) if size is None else size)
        self._q._f["vkCmdCopyBuffer"](self.cmd, _vk_buffer(src), _vk_buffer(dst), 1, byref(region))

    def release_to_cuda(self, buffer: Buffer) -> None:
        """``vkcuda_buffer_cmd_release_to_cuda`` after this buffer's transfer writes."""
        h = HandoffInfo(0, self._q.family, _STAGE_TRANSFER, _ACCESS_TRANSFER_WRITE)
        _native.check(_lib.vkcuda_buffer_cmd_release_to_cuda(buffer.handle, self.cmd, byref(h)))

    def acquire_from_cuda(self, buffer: Buffer) -> None:
        """``vkcuda_buffer_cmd_acquire_from_cuda`` before transfers that use the buffer."""
        h = HandoffInfo(0, self._q.family, _STAGE_TRANSFER, _ACCESS_TRANSFER_READ | _ACCESS_TRANSFER_WRITE)
        _native.check(_lib.vkcuda_buffer_cmd_acquire_from_cuda(buffer.handle, self.cmd, byref(h)))


class CommandBuffer:
    """A recorded command buffer; submit it with :meth:`Queue.submit` (again and
    again: it is recorded for simultaneous use)."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __repr__(self) -> str:
        return f"CommandBuffer({self.handle:#x})"


class Queue:
    """The queue of a standalone context (``Context.standalone()``), with its own
    command pool. Not thread-safe (a ``VkQueue`` is externally synchronised)."""

    def __init__(self, context: Context) -> None:
        h = context.vulkan_handles
        if not h.queue:
            raise ValueError("a Queue needs a standalone context (an engine context has no queue of the library's)")
        self.context, self.device, self.queue, self.family = context, h.device, h.queue, h.queue_family_index
        gipa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(h.get_instance_proc_addr)
        gdpa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(gipa(h.instance, b"vkGetDeviceProcAddr"))
        self._f = {}
        for name, (res, args) in _DEVICE_FUNCTIONS.items():
            addr = gdpa(self.device, name.encode())
            if not addr:
                raise Error(_native.ERROR_VULKAN, f"{name} not found")
            self._f[name] = CFUNCTYPE(res, *args)(addr)
        info = _CommandPoolCreateInfo(sType=_COMMAND_POOL_CREATE_INFO, flags=0x2, queueFamilyIndex=self.family)
        self._pool = _U64()
        _vk("vkCreateCommandPool", self._f["vkCreateCommandPool"](self.device, byref(info), None, byref(self._pool)))
        self._keep: List[object] = []

    def __repr__(self) -> str:
        return f"Queue(family {self.family}{'' if self._pool else ', closed'})"

    def host_buffer(self, size: int) -> HostBuffer:
        """A mapped staging buffer of ``size`` bytes (``vkcuda_host_buffer``;
        ``close()`` it, or use ``with``, once no submit uses it)."""
        return HostBuffer(self, size)

    def record(self, commands: Callable[[Recorder], None]) -> CommandBuffer:
        """Records ``commands(recorder)`` into a new command buffer."""
        info = _CommandBufferAllocateInfo(sType=_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self._pool.value,
                                          level=0, commandBufferCount=1)
        cmd = c_void_p()
        _vk("vkAllocateCommandBuffers", self._f["vkAllocateCommandBuffers"](self.device, byref(info), byref(cmd)))
        begin = _CommandBufferBeginInfo(sType=_COMMAND_BUFFER_BEGIN_INFO, flags=_SIMULTANEOUS_USE)
        _vk("vkBeginCommandBuffer", self._f["vkBeginCommandBuffer"](cmd, byref(begin)))
        commands(Recorder(self, cmd.value or 0))
        _vk("vkEndCommandBuffer", self._f["vkEndCommandBuffer"](cmd))
        return CommandBuffer(cmd.value or 0)

    def submit(self, cmd: CommandBuffer, wait: Sequence[Tuple[Semaphore, int]] = (),
               signal: Sequence[Tuple[Semaphore, int]] = ()) -> None:
        """``vkQueueSubmit`` of ``cmd`` waiting for and signalling timeline values
        (``(semaphore, value)`` pairs); no host wait."""
        def arrays(pairs: Iterable[Tuple[Semaphore, int]]) -> Tuple[int, object, object]:
            pairs = list(pairs)
            sems = (c_uint64 * max(1, len(pairs)))(*[s.vk_semaphore for s, _ in pairs])
            values = (c_uint64 * max(1, len(pairs)))(*[v for _, v in pairs])
            return len(pairs), sems, values
        nw, wsems, wvals = arrays(wait)
        ns, ssems, svals = arrays(signal)
        stages = (c_uint32 * max(1, nw))(*([0x10000] * nw))  # ALL_COMMANDS
        timeline = _TimelineSubmitInfo(_TIMELINE_SEMAPHORE_SUBMIT_INFO, None, nw, wvals, ns, svals)
        cmds = (c_void_p * 1)(cmd.handle)
        info = _SubmitInfo(_SUBMIT_INFO, ctypes.addressof(timeline), nw, wsems, stages, 1, cmds, ns, ssems)
        _vk("vkQueueSubmit", self._f["vkQueueSubmit"](self.queue, 1, byref(info), 0))

    def wait_idle(self) -> None:
        _vk("vkQueueWaitIdle", self._f["vkQueueWaitIdle"](self.queue))

    def run(self, commands: Callable[[Recorder], None]) -> None:
        """Records, submits and waits until the queue is idle."""
        self.submit(self.record(commands))
        self.wait_idle()

    def upload(self, buffer: Buffer, data: bytes, offset: int = 0) -> None:
        """Copies ``data`` into ``buffer`` at ``offset`` through a staging buffer (waits)."""
        staging = self.host_buffer(len(data))
        try:
            ctypes.memmove(staging.address, data, len(data))
            self.run(lambda r: r.copy(staging, buffer, len(data), 0, offset))
        finally:
            staging.close()

    def download(self, buffer: Buffer, size: Optional[int] = None, offset: int = 0) -> bytes:
        """What a Vulkan copy reads from ``buffer`` (waits)."""
        n = (buffer.size - offset) if size is None else size
        staging = self.host_buffer(n)
        try:
            self.run(lambda r: r.copy(buffer, staging, n, offset, 0))
            return ctypes.string_at(staging.address, n)
        finally:
            staging.close()

    def close(self) -> None:
        """Waits for the queue, then destroys the command pool (and its buffers)."""
        if self._pool:
            self.wait_idle()
            self._f["vkDestroyCommandPool"](self.device, self._pool, None)
            self._pool = _U64()

    def __enter__(self) -> "Queue":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
