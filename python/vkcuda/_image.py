"""Shared images: a ``VkImage`` that CUDA sees as a mipmapped array. Each mip
level (and each layer of it) is an :class:`ImageLevel`: its ``CUarray`` handle,
surface object and texture objects are ints that CuPy (``cupy.cuda.texture``,
raw kernels), Numba or a CUDA extension take; :meth:`ImageLevel.copy_to` and
:meth:`ImageLevel.copy_from` move it to or from any CUDA tensor with one
``cuMemcpy3DAsync`` (CUDA arrays have no pointer, so tensors go through a copy).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_int32, c_uint32, c_uint64, c_void_p
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _cuda, _dlpack, _types
from ._native import ERROR_CUDA_UNAVAILABLE, Error, check, declare, lib
from ._share import ShareDescription, share_options, socket_fd
from ._types import (
    ADDRESS_MODE_BORDER,
    ADDRESS_MODE_CLAMP,
    ADDRESS_MODE_MIRROR,
    ADDRESS_MODE_WRAP,
    FILTER_LINEAR,
    FILTER_POINT,
    IMAGE_CREATE_CUBE_COMPATIBLE_BIT,
    IMAGE_TYPE_1D,
    IMAGE_TYPE_2D,
    IMAGE_TYPE_3D,
    READ_MODE_ELEMENT_TYPE,
    READ_MODE_NORMALIZED_FLOAT,
    TEXTURE_ALL_LEVELS_BIT,
    TEXTURE_NORMALIZED_COORDINATES_BIT,
    Handle,
    HandoffInfo,
    ImageCreateInfo,
    ImageWrapInfo,
    TextureInfo,
    command_buffer_handle,
)

__all__ = ["Image", "ImageLevel", "ImageInfo", "FormatInfo", "FORMATS", "LAYOUTS", "format_info"]

#: Single-plane formats by name (lower case ``VkFormat`` without ``VK_FORMAT_``);
#: any other ``VkFormat`` value may be passed as an int.
FORMATS = {
    "r8_unorm": 9, "r8_uint": 13, "r8g8_unorm": 16, "r8g8b8a8_unorm": 37, "r8g8b8a8_uint": 41,
    "r8g8b8a8_srgb": 43, "b8g8r8a8_unorm": 44, "b8g8r8a8_srgb": 50, "r16_unorm": 70, "r16_sfloat": 76,
    "r16g16_sfloat": 83, "r16g16b16a16_unorm": 91, "r16g16b16a16_sfloat": 97, "r32_uint": 98,
    "r32_sint": 99, "r32_sfloat": 100, "r32g32_sfloat": 103, "r32g32b32a32_sfloat": 109,
}
#: ``VkImageLayout`` values by name, for the handoff calls.
LAYOUTS = {
    "undefined": 0, "general": 1, "color_attachment_optimal": 2, "shader_read_only_optimal": 5,
    "transfer_src_optimal": 6, "transfer_dst_optimal": 7,
}
_TYPES = {1: IMAGE_TYPE_1D, 2: IMAGE_TYPE_2D, 3: IMAGE_TYPE_3D}  # extent length -> vkcuda_image_type
_TYPE_NAMES = {IMAGE_TYPE_2D: "2d", IMAGE_TYPE_1D: "1d", IMAGE_TYPE_3D: "3d"}
_FILTERS = {"point": FILTER_POINT, "linear": FILTER_LINEAR}
_ADDRESS_MODES = {"clamp": ADDRESS_MODE_CLAMP, "wrap": ADDRESS_MODE_WRAP, "mirror": ADDRESS_MODE_MIRROR,
                  "border": ADDRESS_MODE_BORDER}
_READ_MODES = {"element": READ_MODE_ELEMENT_TYPE, "normalized_float": READ_MODE_NORMALIZED_FLOAT}


_P = c_void_p
_H = POINTER(HandoffInfo)
_signatures = {
    "vkcuda_format_query": (c_int32, [c_int32, POINTER(_types.FormatInfo)]),
    "vkcuda_image_destroy": (None, [_P]),
    "vkcuda_image_wrap": (c_int32, [_P, POINTER(ImageWrapInfo), POINTER(_P)]),
    "vkcuda_image_get_info": (c_int32, [_P, POINTER(_types.ImageInfo)]),
    "vkcuda_image_get_vk_image": (c_int32, [_P, POINTER(c_uint64)]),
    "vkcuda_image_get_cuda_mipmapped_array": (c_int32, [_P, POINTER(_P)]),
    "vkcuda_image_get_cuda_array": (c_int32, [_P, c_uint32, POINTER(_P)]),
    "vkcuda_image_get_surface_object": (c_int32, [_P, c_uint32, POINTER(c_uint64)]),
    "vkcuda_image_create_texture_object": (c_int32, [_P, POINTER(TextureInfo), POINTER(c_uint64)]),
    "vkcuda_image_export_plane_fd": (c_int32, [_P, c_uint32, POINTER(c_int32)]),
    "vkcuda_image_cmd_release_to_cuda": (c_int32, [_P, _P, _H, c_int32]),
    "vkcuda_image_cmd_acquire_from_cuda": (c_int32, [_P, _P, _H, c_int32]),
}
declare(_signatures)


class FormatInfo(NamedTuple):
    """What CUDA sees of a ``VkFormat`` (``vkcuda_format_query``)."""

    cuda_format: int
    channels: int
    bytes_per_texel: int
    bgra: bool
    plane_count: int


class ImageInfo(NamedTuple):
    """Everything about an image (``vkcuda_image_info``); handles are ints."""

    vk_image: int
    vk_memory: int
    allocation_size: int
    type: str
    format: int
    extent: Tuple[int, int, int]
    levels: int
    layers: int
    usage: int
    cube: bool
    wrapped: bool
    cuda_mipmapped_array: int
    cuda_array_flags: int
    channels: int
    bytes_per_texel: int
    plane_count: int


def parse_format(format: Union[str, int]) -> int:
    """A ``VkFormat`` from a name of :data:`FORMATS` (or ``"VK_FORMAT_R8_UNORM"``) or an int."""
    if isinstance(format, bool):
        raise TypeError("a format is a name or a VkFormat int, not a bool")
    if isinstance(format, int):
        return format
    if isinstance(format, str):
        name = format.lower()
        name = name[len("vk_format_"):] if name.startswith("vk_format_") else name
        if name in FORMATS:
            return FORMATS[name]
        raise ValueError(f"unknown format {format!r}: one of {', '.join(FORMATS)}, or a VkFormat int")
    raise TypeError(f"a format is a name or a VkFormat int, not {type(format).__name__}")


def format_info(format: Union[str, int]) -> FormatInfo:
    """What CUDA sees of ``format`` (no device needed); :class:`Error`
    ``VKCUDA_ERROR_UNSUPPORTED`` naming a supported neighbour for the others."""
    f = _types.FormatInfo()
    check(lib.vkcuda_format_query(parse_format(format), ctypes.byref(f)))
    return FormatInfo(f.cuda_format, f.channels, f.bytes_per_texel, bool(f.bgra), f.plane_count)


def parse_layout(layout: Union[str, int]) -> int:
    """A ``VkImageLayout`` from a name of :data:`LAYOUTS` or an int."""
    if isinstance(layout, str):
        if layout.lower() not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}: one of {', '.join(LAYOUTS)}, or a VkImageLayout int")
        return LAYOUTS[layout.lower()]
    if isinstance(layout, bool) or not isinstance(layout, int):
        raise TypeError(f"a layout is a name or a VkImageLayout int, not {type(layout).__name__}")
    return layout


def create_info(format: Union[str, int], extent: Sequence[int], levels: int, layers: int, usage: int,
                cube: bool) -> ImageCreateInfo:
    ext = tuple(int(e) for e in extent)
    if len(ext) not in _TYPES:
        raise ValueError(f"extent is (width,), (width, height) or (width, height, depth), not {tuple(extent)!r}")
    info = ImageCreateInfo(flags=IMAGE_CREATE_CUBE_COMPATIBLE_BIT if cube else 0, image_type=_TYPES[len(ext)],
                           format=parse_format(format), mip_levels=levels, array_layers=layers, usage=usage)
    full = ext + (1,) * (3 - len(ext))
    if any(e < 0 or e > 0xFFFFFFFF for e in full):
        raise ValueError(f"extent {ext} is out of range")
    info.extent.width, info.extent.height, info.extent.depth = full
    return info


class Image(Handle):
    """A shared image (``vkcuda_image``): a ``VkImage`` for the engine and a CUDA
    mipmapped array. ``image.level(i)`` (or ``image.levels``) is a mip level as
    CUDA objects; ``level(i, layer=j)`` one layer of it. Made by
    :meth:`Context.image`, :meth:`Context.wrap_image`, :meth:`Context.import_image`
    or :meth:`Context.receive_image`."""

    _destroy = lib.vkcuda_image_destroy

    def __init__(self, handle: int, cuda_context: Optional[int]) -> None:
        super().__init__(handle)
        self._cuda_context = cuda_context

    def __repr__(self) -> str:
        if self.closed:
            return "Image(closed)"
        i = self.info
        name = next((n for n, v in FORMATS.items() if v == i.format), str(i.format))
        cuda = "Vulkan-only" if not i.cuda_mipmapped_array else "CUDA"
        return (f"Image({name}, {i.type} {'x'.join(map(str, i.extent))}, levels={i.levels}, layers={i.layers}, "
                f"{cuda}{', wrapped' if i.wrapped else ''})")

    @property
    def info(self) -> ImageInfo:
        i = _types.ImageInfo()
        check(lib.vkcuda_image_get_info(self._handle, ctypes.byref(i)))
        f = i.format_info
        return ImageInfo(i.image, i.memory, i.allocation_size, _TYPE_NAMES.get(i.image_type, str(i.image_type)),
                         i.format, (i.extent.width, i.extent.height, i.extent.depth), i.mip_levels, i.array_layers,
                         i.usage, bool(i.flags & IMAGE_CREATE_CUBE_COMPATIBLE_BIT), bool(i.wrapped),
                         i.cuda_mipmapped_array or 0, i.cuda_array_flags, f.channels, f.bytes_per_texel,
                         i.plane_count)

    @property
    def vk_image(self) -> int:
        """The ``VkImage`` (owned by this image unless wrapped)."""
        v = c_uint64()
        check(lib.vkcuda_image_get_vk_image(self._handle, ctypes.byref(v)))
        return v.value

    @property
    def cuda_mipmapped_array(self) -> int:
        """The ``CUmipmappedArray`` (owned by the image); :class:`Error`
        ``VKCUDA_ERROR_CUDA_UNAVAILABLE`` in a Vulkan-only context."""
        a = c_void_p()
        check(lib.vkcuda_image_get_cuda_mipmapped_array(self._handle, ctypes.byref(a)))
        return a.value or 0

    def level(self, level: int = 0, layer: Optional[int] = None) -> "ImageLevel":
        """Mip level ``level`` (every layer, or only ``layer``) as CUDA objects."""
        info = self.info
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < info.levels:
            raise IndexError(f"level {level!r} is out of range: the image has {info.levels} level(s)")
        if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)
                                  or not 0 <= layer < info.layers):
            raise IndexError(f"layer {layer!r} is out of range: the image has {info.layers} layer(s)")
        return ImageLevel(self, level, layer)

    @property
    def levels(self) -> List["ImageLevel"]:
        """Every mip level (all layers each)."""
        return [ImageLevel(self, i, None) for i in range(self.info.levels)]

    def export_fd(self) -> int:
        """A new fd of the image's memory (single-plane images); the caller owns it."""
        fd = c_int32(-1)
        check(lib.vkcuda_image_export_fd(self._handle, ctypes.byref(fd)))
        return fd.value

    def export_fds(self) -> List[int]:
        """One new fd per plane (what :meth:`Context.import_image` takes); the caller owns them."""
        fds: List[int] = []
        try:
            for plane in range(self.info.plane_count):
                fd = c_int32(-1)
                check(lib.vkcuda_image_export_plane_fd(self._handle, plane, ctypes.byref(fd)))
                fds.append(fd.value)
        except BaseException:
            for fd_ in fds:
                os.close(fd_)
            raise
        return fds

    def describe(self) -> ShareDescription:
        """What another process needs to import the image (with :meth:`export_fds`)."""
        d = ShareDescription()
        check(lib.vkcuda_image_describe(self._handle, ctypes.byref(d.raw)))
        return d

    def send(self, sock: Any, *, timeout: Optional[float] = None) -> None:
        """Sends the image over a connected Unix socket (``vkcuda_image_send``);
        the peer calls :meth:`Context.receive_image`."""
        o = share_options(timeout)
        check(lib.vkcuda_image_send(self._handle, socket_fd(sock), ctypes.byref(o)))

    def cmd_release_to_cuda(self, command_buffer: Any, old_layout: Union[str, int] = "general", *,
                            queue_family_index: int = 0, stage_mask: int = 0, access_mask: int = 0) -> None:
        """Records into the engine's command buffer (an int ``VkCommandBuffer``, or
        an object with ``.handle``) the barrier handing the image to CUDA, from
        ``old_layout`` to GENERAL ("undefined" discards the contents)."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_image_cmd_release_to_cuda(self._handle, command_buffer_handle(command_buffer),
                                                   ctypes.byref(h), parse_layout(old_layout)))

    def cmd_acquire_from_cuda(self, command_buffer: Any, new_layout: Union[str, int] = "general", *,
                              queue_family_index: int = 0, stage_mask: int = 0, access_mask: int = 0) -> None:
        """Records the barrier taking the image back from CUDA, GENERAL to ``new_layout``."""
        h = HandoffInfo(0, queue_family_index, stage_mask, access_mask)
        check(lib.vkcuda_image_cmd_acquire_from_cuda(self._handle, command_buffer_handle(command_buffer),
                                                     ctypes.byref(h), parse_layout(new_layout)))


class ImageLevel:
    """One mip level of an :class:`Image` (all its layers, or the one in
    ``layer``) as CUDA sees it. ``cuda_array`` is a ``CUarray`` (int),
    ``surface_object`` a ``CUsurfObject`` and :meth:`texture_object` makes a
    ``CUtexObject``: ints for CuPy raw kernels, Numba or an extension. They
    belong to the image (valid until it is closed). A layered level's array and
    surface cover every layer (z is the layer)."""

    def __init__(self, image: Image, level: int, layer: Optional[int]) -> None:
        self.image, self.level, self.layer = image, level, layer

    def __repr__(self) -> str:
        layer = "all layers" if self.layer is None else f"layer {self.layer}"
        if self.image.closed:
            return f"ImageLevel(level {self.level}, {layer}, image closed)"
        return f"ImageLevel(level {self.level}, {layer}, extent {self.extent})"

    @property
    def extent(self) -> Tuple[int, int, int]:
        """(width, height, depth) of this level."""
        w, h, d = self.image.info.extent
        return max(1, w >> self.level), max(1, h >> self.level), max(1, d >> self.level)

    @property
    def cuda_array(self) -> int:
        """The level's ``CUarray`` (``vkcuda_image_get_cuda_array``)."""
        a = c_void_p()
        check(lib.vkcuda_image_get_cuda_array(self.image.handle, self.level, ctypes.byref(a)))
        return a.value or 0

    @property
    def surface_object(self) -> int:
        """The level's ``CUsurfObject`` (made once; needs STORAGE usage)."""
        s = c_uint64()
        check(lib.vkcuda_image_get_surface_object(self.image.handle, self.level, ctypes.byref(s)))
        return s.value

    def texture_object(self, *, filter: str = "point", address_mode: str = "clamp", normalized: bool = False,
                       read_mode: str = "element", all_levels: bool = False,
                       border_color: Sequence[float] = (0.0, 0.0, 0.0, 0.0)) -> int:
        """A new ``CUtexObject`` on this level (every level with ``all_levels``):
        ``filter`` "point"/"linear", ``address_mode`` "clamp"/"wrap"/"mirror"/
        "border", ``read_mode`` "element"/"normalized_float". Owned by the image."""
        for value, table, what in ((filter, _FILTERS, "filter"), (address_mode, _ADDRESS_MODES, "address_mode"),
                                   (read_mode, _READ_MODES, "read_mode")):
            if value not in table:
                raise ValueError(f"{what} must be one of {', '.join(table)}, not {value!r}")
        if len(border_color) != 4:
            raise ValueError("border_color has 4 components")
        t = TextureInfo(flags=(TEXTURE_NORMALIZED_COORDINATES_BIT if normalized else 0)
                         | (TEXTURE_ALL_LEVELS_BIT if all_levels else 0),
                         level=self.level, filter=_FILTERS[filter], address_mode=_ADDRESS_MODES[address_mode],
                         read_mode=_READ_MODES[read_mode])
        for i, c in enumerate(border_color):
            t.border_color[i] = float(c)
        out = c_uint64()
        check(lib.vkcuda_image_create_texture_object(self.image.handle, ctypes.byref(t), ctypes.byref(out)))
        return out.value

    # --- copies --------------------------------------------------------------
    def _geometry(self) -> Tuple[int, int, int, int, int]:
        """(row bytes, height, depth-or-layers, first z, bytes per texel)."""
        info = self.image.info
        w, h, d = self.extent
        bpt = info.bytes_per_texel
        if info.type == "3d":
            return w * bpt, h, d, 0, bpt
        if self.layer is not None:
            return w * bpt, h, 1, self.layer, bpt
        return w * bpt, h, info.layers, 0, bpt

    def _copy(self, tensor: Any, to_tensor: bool, stream: Any) -> None:
        if self.image._cuda_context is None:
            self.cuda_array  # the library's error: Vulkan-only context, or closed
            raise Error(ERROR_CUDA_UNAVAILABLE, "the image has no CUDA side")
        array = self.cuda_array
        row, height, depth, z, bpt = self._geometry()
        ptr, pitch, ro = pitched_layout(tensor, row, height, depth, bpt)
        if to_tensor and ro:
            raise BufferError("the tensor is read-only: copy_to needs a writable tensor")
        p = _cuda.Memcpy3D(WidthInBytes=row, Height=height, Depth=depth)
        if to_tensor:
            p.srcMemoryType, p.srcArray, p.srcZ = _cuda.MEMORYTYPE_ARRAY, array, z
            p.dstMemoryType, p.dstDevice, p.dstPitch, p.dstHeight = _cuda.MEMORYTYPE_DEVICE, ptr, pitch, height
        else:
            p.dstMemoryType, p.dstArray, p.dstZ = _cuda.MEMORYTYPE_ARRAY, array, z
            p.srcMemoryType, p.srcDevice, p.srcPitch, p.srcHeight = _cuda.MEMORYTYPE_DEVICE, ptr, pitch, height
        _cuda.memcpy3d(self.image._cuda_context, p, _dlpack.stream_handle(stream))

    def copy_to(self, tensor: Any, stream: Any = None) -> None:
        """Enqueues on ``stream`` (None: the legacy default stream; a torch/CuPy
        stream or a CUstream int) ONE ``cuMemcpy3DAsync`` of this level into
        ``tensor``: anything with ``__cuda_array_interface__`` (torch, CuPy, Numba,
        a vkcuda buffer view) or ``__dlpack__``. Its shape is (height, row...)
        for one layer of a 2D level, (layers or depth, height, row...) for more,
        where row... is any C-contiguous shape of ``width * bytes_per_texel``
        bytes (e.g. (width, 4) uint8 for RGBA8, (width,) float32 for R32F); the
        rows may be padded (a row stride larger than the row). Hand the image
        to CUDA first (semaphores and :meth:`Image.cmd_release_to_cuda`)."""
        self._copy(tensor, True, stream)

    def copy_from(self, tensor: Any, stream: Any = None) -> None:
        """The reverse of :meth:`copy_to`: one copy from ``tensor`` into the level."""
        self._copy(tensor, False, stream)


def tensor_interface(tensor: Any) -> Tuple[int, Tuple[int, ...], Optional[Tuple[int, ...]], int, bool]:
    """(data pointer, shape, strides in bytes or None, itemsize, read-only) of a
    CUDA tensor, from ``__cuda_array_interface__`` or else a DLPack export."""
    cai = getattr(tensor, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        ptr, ro = cai["data"]
        typestr = cai["typestr"]
        itemsize = int(typestr[2:]) if len(typestr) > 2 else 1
        strides = cai.get("strides")
        return int(ptr or 0), tuple(cai["shape"]), (None if strides is None else tuple(strides)), itemsize, bool(ro)
    if hasattr(tensor, "__dlpack__"):
        return _dlpack.tensor_interface(tensor)
    raise TypeError(f"{type(tensor).__name__} is not a CUDA tensor: it has neither __cuda_array_interface__ "
                    "nor __dlpack__")


def pitched_layout(tensor: Any, row: int, height: int, depth: int, bpt: int) -> Tuple[int, int, int]:
    """(pointer, row pitch, read-only) of ``tensor`` laid out as ``depth`` x
    ``height`` rows of ``row`` bytes (see :meth:`ImageLevel.copy_to`), or
    ``ValueError`` saying what does not fit."""
    ptr, shape, strides, itemsize, ro = tensor_interface(tensor)
    if not ptr and row:
        raise ValueError("the tensor's data pointer is 0")
    if strides is None:
        strides = tuple(int(itemsize * _prod(shape[i + 1:])) for i in range(len(shape)))
    lead: Tuple[int, ...] = (height,) if depth == 1 else (depth, height)
    k = len(lead)
    if height == 1 and depth == 1 and tuple(shape[:1]) != (1,):
        k, lead = 0, ()  # a 1D level: the whole tensor is one row
    if tuple(shape[:k]) != lead:
        raise ValueError(f"the tensor's shape {tuple(shape)} does not start with {lead} "
                         f"({'layers or depth, ' if depth > 1 else ''}height)")
    tail, tail_strides = shape[k:], strides[k:]
    if itemsize * _prod(tail) != row:
        raise ValueError(f"a row of the tensor (shape {tuple(tail)}, {itemsize}-byte elements) is "
                         f"{itemsize * _prod(tail)} bytes; the level's rows are {row} bytes")
    want = itemsize
    for n, s in zip(reversed(tail), reversed(tail_strides)):
        if n != 1 and s != want:
            raise ValueError(f"the tensor's rows are not contiguous (strides {tuple(strides)} bytes)")
        want *= n
    if bpt % itemsize and itemsize % bpt:
        raise ValueError(f"{itemsize}-byte elements do not tile {bpt}-byte texels")
    pitch = strides[k - 1] if k else row
    if k and pitch < row:
        raise ValueError(f"the tensor's row stride {pitch} is shorter than a row ({row} bytes)")
    if k == 2 and strides[0] != pitch * height:
        raise ValueError(f"the tensor's layer stride {strides[0]} is not row stride x height ({pitch * height}): "
                         "one copy needs evenly pitched layers")
    return ptr, pitch, ro


def _prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def wrap_info(vk_image: int, vk_memory: int, allocation_size: int, description: ImageCreateInfo, offset: int,
              dedicated: bool, export_handle_types: int) -> ImageWrapInfo:
    return ImageWrapInfo(flags=0, image=vk_image, memory=vk_memory, allocation_size=allocation_size,
                          description=description, offset=offset, dedicated=1 if dedicated else 0,
                          export_handle_types=export_handle_types)
