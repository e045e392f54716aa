"""Vulkan physical devices and what each offers for interop, asked before a
context exists: an engine's device (:func:`query_device`), every device of the
system (:func:`physical_devices`) and the extensions an engine enables
(:func:`device_extensions`)."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int32, c_uint32, c_void_p
from typing import List, NamedTuple, Optional, Tuple

from ._native import check, declare, lib
from ._types import PhysicalDeviceSupport

__all__ = ["DeviceSupport", "physical_devices", "query_device", "device_extensions"]

_P = c_void_p
declare({
    "vkcuda_physical_devices_enumerate": (c_int32, [POINTER(c_uint32), POINTER(PhysicalDeviceSupport)]),
    "vkcuda_physical_device_query": (c_int32, [_P, _P, _P, POINTER(PhysicalDeviceSupport)]),
    "vkcuda_device_extensions_enumerate": (c_int32, [POINTER(c_uint32), POINTER(c_char_p)]),
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


def _support(s: PhysicalDeviceSupport) -> DeviceSupport:
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
    n = c_uint32()
    check(lib.vkcuda_physical_devices_enumerate(ctypes.byref(n), None))
    arr = (PhysicalDeviceSupport * max(1, n.value))()
    check(lib.vkcuda_physical_devices_enumerate(ctypes.byref(n), arr))
    return [_support(arr[i]) for i in range(n.value)]


def query_device(instance: int, physical_device: int, get_instance_proc_addr: int) -> DeviceSupport:
    """What an engine's physical device supports, before it creates its
    ``VkDevice`` (``vkcuda_physical_device_query``; the handles are ints)."""
    s = PhysicalDeviceSupport()
    check(lib.vkcuda_physical_device_query(instance, physical_device, get_instance_proc_addr, ctypes.byref(s)))
    return _support(s)


def device_extensions() -> List[str]:
    """The device extensions to enable on an engine's device (those it has)."""
    n = c_uint32()
    check(lib.vkcuda_device_extensions_enumerate(ctypes.byref(n), None))
    names = (c_char_p * max(1, n.value))()
    check(lib.vkcuda_device_extensions_enumerate(ctypes.byref(n), names))
    return [(names[i] or b"").decode() for i in range(n.value)]
