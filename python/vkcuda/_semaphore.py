"""Semaphores: a timeline (or binary) ``VkSemaphore`` shared with CUDA, which
CUDA streams, CUDA graphs and stream captures wait for and signal, and the
stages a timeline hands out."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_size_t, c_uint64, c_void_p
from typing import Any, NamedTuple, Optional, Sequence

from . import _cuda, _dlpack
from ._native import check, declare, lib
from ._share import ShareDescription, share_options, socket_fd
from ._types import (
    SEMAPHORE_TYPE_BINARY,
    SEMAPHORE_TYPE_TIMELINE,
    ContextHandle,
    Handle,
    SemaphoreCreateInfo,
    TimelineStage,
    cuda_handle,
)

__all__ = ["Semaphore", "Stage"]

_P = c_void_p
declare({
    "vkcuda_semaphore_create": (c_int32, [_P, POINTER(SemaphoreCreateInfo), POINTER(_P)]),
    "vkcuda_semaphore_get_vk_semaphore": (c_int32, [_P, POINTER(c_uint64)]),
    "vkcuda_semaphore_cuda_wait": (c_int32, [_P, c_uint64, _P]),
    "vkcuda_semaphore_cuda_signal": (c_int32, [_P, c_uint64, _P]),
    "vkcuda_semaphore_host_wait": (c_int32, [_P, c_uint64, c_uint64]),
    "vkcuda_semaphore_host_signal": (c_int32, [_P, c_uint64]),
    "vkcuda_semaphore_get_value": (c_int32, [_P, POINTER(c_uint64)]),
    "vkcuda_semaphore_next_stage": (c_int32, [_P, POINTER(TimelineStage)]),
    "vkcuda_semaphore_export_fd": (c_int32, [_P, POINTER(c_int32)]),
    "vkcuda_semaphore_destroy": (None, [_P]),
    "vkcuda_semaphore_note_vulkan_signal": (c_int32, [_P]),
    "vkcuda_semaphore_note_vulkan_wait": (c_int32, [_P]),
    "vkcuda_semaphore_cuda_graph_add_wait": (c_int32, [_P, _P, POINTER(_P), c_size_t, c_uint64, POINTER(_P)]),
    "vkcuda_semaphore_cuda_graph_add_signal": (c_int32, [_P, _P, POINTER(_P), c_size_t, c_uint64, POINTER(_P)]),
    "vkcuda_semaphore_cuda_graph_exec_set_wait": (c_int32, [_P, _P, _P, c_uint64]),
    "vkcuda_semaphore_cuda_graph_exec_set_signal": (c_int32, [_P, _P, _P, c_uint64]),
})


class Stage(NamedTuple):
    """One stage on a timeline: wait for ``wait_value``, signal ``signal_value``."""

    wait_value: int
    signal_value: int


class Semaphore(Handle):
    """A timeline (or binary) ``VkSemaphore`` shared with CUDA. CUDA streams wait
    and signal with :meth:`cuda_wait` / :meth:`cuda_signal`; Vulkan submits use
    :attr:`vk_semaphore`; :meth:`next_stage` hands out the values in order."""

    _destroy = lib.vkcuda_semaphore_destroy

    def __init__(self, context: ContextHandle, *, initial_value: int = 0, binary: bool = False, host_wait_spin_ns: int = 0) -> None:
        info = SemaphoreCreateInfo(
            flags=0, semaphore_type=SEMAPHORE_TYPE_BINARY if binary else SEMAPHORE_TYPE_TIMELINE, initial_value=initial_value, host_wait_spin_ns=host_wait_spin_ns
        )
        h = ctypes.c_void_p()
        check(lib.vkcuda_semaphore_create(context.handle, ctypes.byref(info), ctypes.byref(h)))
        super().__init__(h.value or 0)

    @classmethod
    def _adopt(cls, handle: int) -> "Semaphore":
        s = cls.__new__(cls)
        Handle.__init__(s, handle)
        return s

    def __repr__(self) -> str:
        if self.closed:
            return "Semaphore(closed)"
        d = self.describe().raw.semaphore
        return "Semaphore(binary)" if d.semaphore_type else f"Semaphore(timeline, value={self.value})"

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
        s = TimelineStage()
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

