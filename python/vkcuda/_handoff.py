"""Handoffs of many resources at once: ONE barrier on the engine's command
buffer that releases buffers and images to CUDA, or acquires them back
(``vkcuda_handoff_cmd_*``). One object's own handoff is its
``cmd_release_to_cuda`` / ``cmd_acquire_from_cuda``."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int32, c_uint32, c_void_p
from typing import Any, Sequence, Union

from ._buffer import Buffer
from ._image import Image, parse_layout
from ._native import check, declare, lib
from ._types import HandoffInfo, HandoffResource, command_buffer_handle

__all__ = ["handoff_release", "handoff_acquire"]

_P = c_void_p
declare({
    "vkcuda_handoff_cmd_release_to_cuda": (c_int32, [c_uint32, POINTER(HandoffResource), _P, POINTER(HandoffInfo)]),
    "vkcuda_handoff_cmd_acquire_from_cuda": (c_int32, [c_uint32, POINTER(HandoffResource), _P, POINTER(HandoffInfo)]),
})


def handoff(release: bool, command_buffer: Any, resources: Sequence[Any], *, queue_family_index: int = 0,
            stage_mask: int = 0, access_mask: int = 0) -> None:
    """Records ONE barrier for every resource (``vkcuda_handoff_cmd_*``)."""
    items = list(resources)
    arr = (HandoffResource * max(1, len(items)))()
    for i, r in enumerate(items):
        layout: Union[str, int] = "general"
        if isinstance(r, tuple):
            if len(r) != 2:
                raise ValueError("an image resource is an Image or (Image, layout)")
            r, layout = r
        if isinstance(r, Buffer):
            arr[i].buffer = r.handle
        elif isinstance(r, Image):
            arr[i].image, arr[i].layout = r.handle, parse_layout(layout)
        else:
            raise TypeError(f"resource {i} is a {type(r).__name__}: a handoff takes Buffers, Images "
                            "and (Image, layout) pairs")
        if (arr[i].buffer or arr[i].image) is None:
            raise ValueError(f"resource {i} is closed")
    h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
    call = lib.vkcuda_handoff_cmd_release_to_cuda if release else lib.vkcuda_handoff_cmd_acquire_from_cuda
    check(call(len(items), arr, command_buffer_handle(command_buffer), ctypes.byref(h)))


def handoff_release(command_buffer: Any, resources: Sequence[Any], *, queue_family_index: int = 0,
                    stage_mask: int = 0, access_mask: int = 0) -> None:
    """Records into the engine's command buffer ONE barrier releasing every
    resource to CUDA: :class:`Buffer` s, :class:`Image` s and ``(Image,
    old_layout)`` pairs (an Image alone: from GENERAL)."""
    handoff(True, command_buffer, resources, queue_family_index=queue_family_index, stage_mask=stage_mask,
            access_mask=access_mask)


def handoff_acquire(command_buffer: Any, resources: Sequence[Any], *, queue_family_index: int = 0,
                    stage_mask: int = 0, access_mask: int = 0) -> None:
    """ONE barrier acquiring every resource back from CUDA (``(Image, new_layout)``
    pairs name the layout each image goes to)."""
    handoff(False, command_buffer, resources, queue_family_index=queue_family_index, stage_mask=stage_mask,
            access_mask=access_mask)
