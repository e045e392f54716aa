"""The package's floor: every struct and constant of vkcuda.h that Python
passes through ctypes, the handle base every object builds on, and the small
checks of handles given as arguments. It imports nothing of the package, so
every other module may import it (test_abi.py checks each struct's layout and
each constant against the header).

Struct names follow the C names: ``BufferInfo`` is ``struct vkcuda_buffer_info``
(``_c_name_`` where the C name does not follow from the class name). The public
objects of the same names (``vkcuda.BufferInfo`` is a NamedTuple) live in their
own modules and read these."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_char, c_char_p, c_float, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from typing import Any, Optional, Protocol, Sequence, TypeVar

__all__: "list[str]" = []  # nothing public: the objects' modules hand these on

# --- constants (each is VKCUDA_<name> in vkcuda.h) ----------------------------------

CONTEXT_CREATE_VULKAN_ONLY_BIT = 0x1
CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT = 0x2
SEMAPHORE_CREATE_NO_SPIN_BIT = 0x1
SEMAPHORE_TYPE_TIMELINE = 0
SEMAPHORE_TYPE_BINARY = 1
DLPACK_READ_ONLY_BIT = 0x1
DLPACK_LEGACY_BIT = 0x2
DLPACK_MAX_NDIM = 8
ALLOCATOR_VULKAN = 0
ALLOCATOR_CUDA = 1
IMAGE_CREATE_CUBE_COMPATIBLE_BIT = 0x1
IMAGE_CREATE_LINEAR_BIT = 0x2
IMAGE_TYPE_2D = 0
IMAGE_TYPE_1D = 1
IMAGE_TYPE_3D = 3
TEXTURE_NORMALIZED_COORDINATES_BIT = 0x1
TEXTURE_ALL_LEVELS_BIT = 0x2
FILTER_POINT = 0
FILTER_LINEAR = 1
ADDRESS_MODE_CLAMP = 0
ADDRESS_MODE_WRAP = 1
ADDRESS_MODE_MIRROR = 2
ADDRESS_MODE_BORDER = 3
READ_MODE_ELEMENT_TYPE = 0
READ_MODE_NORMALIZED_FLOAT = 1
SHARE_KIND_BUFFER = 1
SHARE_KIND_SEMAPHORE = 2
SHARE_KIND_IMAGE = 3
SHARE_DESCRIPTION_SIZE = 128
SHARE_MAX_FDS = 3
BATCH_KIND_IMAGES = 0
BATCH_KIND_BUFFERS = 1
BATCH_CREATE_FORCE_COPY_BIT = 0x1
BATCH_DLPACK_ELEMENT_BIT = 0x4
BATCH_WHOLE = 0xFFFFFFFF
BATCH_PATH_ZERO_COPY = 0
BATCH_PATH_COPY = 1
BATCH_PATH_BUFFERS = 2
DOCTOR_STATUS_PASS = 0
DOCTOR_STATUS_WARN = 1
DOCTOR_STATUS_FAIL = 2
DOCTOR_RUN_DEEP_BIT = 0x1


# --- the library --------------------------------------------------------------------

class Uuid(ctypes.Array):  # type: ignore[type-arg]
    _type_ = c_uint8
    _length_ = 16


class LiveObjects(Structure):
    _fields_ = [
        ("contexts", c_int64),
        ("vk_buffers", c_int64),
        ("vk_memories", c_int64),
        ("vk_images", c_int64),
        ("vk_semaphores", c_int64),
        ("cuda_allocations", c_int64),
        ("cuda_external_memories", c_int64),
        ("cuda_external_semaphores", c_int64),
    ]


# --- contexts and devices -----------------------------------------------------------

class StandaloneCreateInfo(Structure):
    _fields_ = [("flags", c_uint32), ("physical_device_index", c_uint32)]


class ContextCreateInfo(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("instance", c_void_p),
        ("physical_device", c_void_p),
        ("device", c_void_p),
        ("get_instance_proc_addr", c_void_p),
        ("get_device_proc_addr", c_void_p),
        ("cuda_context", c_void_p),
    ]


class VulkanHandles(Structure):
    _fields_ = [
        ("instance", c_void_p),
        ("physical_device", c_void_p),
        ("device", c_void_p),
        ("get_instance_proc_addr", c_void_p),
        ("queue_family_index", c_uint32),
        ("queue", c_void_p),
    ]


class CudaInfo(Structure):
    _fields_ = [
        ("cuda_context", c_void_p),
        ("cuda_device", c_int32),
        ("device_ordinal", c_int32),
        ("primary", c_uint32),
        ("device_uuid", Uuid),
    ]


class PhysicalDeviceSupport(Structure):
    _fields_ = [("api_version", c_uint32), ("external_memory_fd", c_uint32), ("external_semaphore_fd", c_uint32),
                ("timeline_semaphore", c_uint32), ("cuda_available", c_uint32), ("cuda_device_found", c_uint32),
                ("cuda_device_ordinal", c_int32), ("supported", c_uint32), ("device_uuid", c_uint8 * 16),
                ("device_name", c_char * 256)]


# --- buffers, DLPack and handoffs -----------------------------------------------------

class BufferCreateInfo(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("allocator", c_int32),
        ("size", c_uint64),
        ("usage", c_uint32),
    ]


class BufferInfo(Structure):
    _fields_ = [
        ("buffer", c_uint64),
        ("memory", c_uint64),
        ("offset", c_uint64),
        ("size", c_uint64),
        ("allocation_size", c_uint64),
        ("cuda_pointer", c_uint64),
        ("allocator", c_int32),
        ("dedicated", c_uint32),
        ("wrapped", c_uint32),
    ]


class HostBufferInfo(Structure):
    _fields_ = [("buffer", c_uint64), ("size", c_uint64), ("data", c_void_p)]


class BufferWrapInfo(Structure):
    _fields_ = [("flags", c_uint32), ("buffer", c_uint64), ("memory", c_uint64), ("allocation_size", c_uint64),
                ("offset", c_uint64), ("size", c_uint64), ("dedicated", c_uint32), ("export_handle_types", c_uint32)]


class BufferImportInfo(Structure):
    _fields_ = [("flags", c_uint32), ("allocator", c_int32), ("allocation_size", c_uint64), ("offset", c_uint64),
                ("size", c_uint64), ("dedicated", c_uint32), ("usage", c_uint32)]


class DlpackDtype(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DlpackInfo(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("dtype", DlpackDtype),
        ("ndim", c_uint32),
        ("shape", c_int64 * 8),
        ("strides", POINTER(c_int64)),
        ("offset", c_uint64),
    ]


class HandoffInfo(Structure):
    _fields_ = [("flags", c_uint32), ("queue_family_index", c_uint32), ("stage_mask", c_uint32),
                ("access_mask", c_uint32)]


class HandoffResource(Structure):
    _fields_ = [("buffer", c_void_p), ("image", c_void_p), ("layout", c_int32)]


# --- semaphores -----------------------------------------------------------------------

class SemaphoreCreateInfo(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("semaphore_type", c_int32),
        ("initial_value", c_uint64),
        ("host_wait_spin_ns", c_uint64),
    ]


class TimelineStage(Structure):
    _fields_ = [("wait_value", c_uint64), ("signal_value", c_uint64)]


# --- images and video frames --------------------------------------------------------

class Extent3D(Structure):
    _c_name_ = "VkExtent3D"
    _fields_ = [("width", c_uint32), ("height", c_uint32), ("depth", c_uint32)]


class ImageCreateInfo(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("image_type", c_int32),
        ("format", c_int32),
        ("extent", Extent3D),
        ("mip_levels", c_uint32),
        ("array_layers", c_uint32),
        ("usage", c_uint32),
    ]


class FormatPlaneInfo(Structure):
    _fields_ = [("format", c_int32), ("cuda_format", c_uint32), ("channels", c_uint32), ("bytes_per_texel", c_uint32),
                ("width_divisor", c_uint32), ("height_divisor", c_uint32), ("aspect", c_uint32)]


class FormatInfo(Structure):
    _fields_ = [("cuda_format", c_uint32), ("channels", c_uint32), ("bytes_per_texel", c_uint32), ("numeric", c_int32),
                ("bgra", c_uint32), ("plane_count", c_uint32), ("chroma_width_divisor", c_uint32),
                ("chroma_height_divisor", c_uint32), ("bits", c_uint32), ("planes", FormatPlaneInfo * 3)]


class ImagePlaneMemory(Structure):
    _fields_ = [("memory", c_uint64), ("allocation_size", c_uint64), ("offset", c_uint64)]


class ImageWrapInfo(Structure):
    _fields_ = [("flags", c_uint32), ("image", c_uint64), ("memory", c_uint64), ("allocation_size", c_uint64),
                ("description", ImageCreateInfo), ("offset", c_uint64), ("dedicated", c_uint32),
                ("export_handle_types", c_uint32), ("planes", ImagePlaneMemory * 3)]


class ImagePlaneInfo(Structure):
    _fields_ = [("memory", c_uint64), ("allocation_size", c_uint64), ("extent", Extent3D), ("aspect", c_uint32),
                ("cuda_mipmapped_array", c_void_p), ("cuda_array_flags", c_uint32)]


class ImageInfo(Structure):
    _fields_ = [("image", c_uint64), ("memory", c_uint64), ("allocation_size", c_uint64), ("image_type", c_int32),
                ("format", c_int32), ("extent", Extent3D), ("mip_levels", c_uint32), ("array_layers", c_uint32),
                ("usage", c_uint32), ("flags", c_uint32), ("wrapped", c_uint32), ("cuda_mipmapped_array", c_void_p),
                ("cuda_array_flags", c_uint32), ("format_info", FormatInfo), ("plane_count", c_uint32),
                ("planes", ImagePlaneInfo * 3)]


class TextureInfo(Structure):
    _fields_ = [("flags", c_uint32), ("level", c_uint32), ("filter", c_int32), ("address_mode", c_int32),
                ("read_mode", c_int32), ("border_color", c_float * 4)]


class ImagePlanePointer(Structure):
    _fields_ = [
        ("cuda_pointer", c_uint64),
        ("offset", c_uint64),
        ("row_pitch", c_uint64),
        ("size", c_uint64),
        ("width", c_uint32),
        ("height", c_uint32),
        ("bytes_per_texel", c_uint32),
        ("format", c_int32),
        ("aspect", c_uint32),
    ]


class VideoColor(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("matrix_coefficients", c_uint32),
        ("transfer_characteristics", c_uint32),
        ("colour_primaries", c_uint32),
        ("full_range", c_uint32),
        ("x_chroma_offset", c_int32),
        ("y_chroma_offset", c_int32),
    ]


# --- batches --------------------------------------------------------------------------

class BatchCreateInfo(Structure):
    _fields_ = [("flags", c_uint32), ("kind", c_uint32), ("count", c_uint32), ("format", c_int32),
                ("width", c_uint32), ("height", c_uint32), ("image_usage", c_uint32), ("buffer_usage", c_uint32),
                ("size", c_uint64)]


class BatchInfo(Structure):
    _fields_ = [("count", c_uint32), ("path", c_uint32), ("format", c_int32), ("width", c_uint32),
                ("height", c_uint32), ("channels", c_uint32), ("dtype", DlpackDtype), ("usage", c_uint32),
                ("memory", c_uint64), ("whole_buffer", c_uint64), ("allocation_size", c_uint64),
                ("tensor_offset", c_uint64), ("element_stride", c_uint64), ("row_pitch", c_uint64),
                ("element_size", c_uint64), ("mapped_size", c_uint64), ("image_stride", c_uint64),
                ("readout_offset", c_uint64), ("readout_size", c_uint64), ("cuda_pointer", c_uint64)]


class BatchElement(Structure):
    _fields_ = [("image", c_uint64), ("buffer", c_uint64), ("memory_offset", c_uint64), ("data_offset", c_uint64),
                ("cuda_pointer", c_uint64)]


class BatchDlpackInfo(Structure):
    _fields_ = [("flags", c_uint32), ("index", c_uint32), ("wait_semaphore", c_void_p), ("wait_value", c_uint64),
                ("stream", c_void_p)]


# --- sharing between processes --------------------------------------------------------

class ShareBufferDescription(Structure):
    _fields_ = [
        ("allocator", c_int32),
        ("dedicated", c_uint32),
        ("allocation_size", c_uint64),
        ("offset", c_uint64),
        ("size", c_uint64),
    ]


class ShareSemaphoreDescription(Structure):
    _fields_ = [("semaphore_type", c_int32), ("value", c_uint64)]


class ShareImageDescription(Structure):
    _fields_ = [
        ("description", ImageCreateInfo),
        ("allocation_size", c_uint64),
        ("plane_allocation_sizes", c_uint64 * 3),
    ]


class ShareDescription(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("kind", c_int32),
        ("device_uuid", c_uint8 * 16),
        ("buffer", ShareBufferDescription),
        ("semaphore", ShareSemaphoreDescription),
        ("image", ShareImageDescription),
    ]


class ShareOptions(Structure):
    _fields_ = [
        ("flags", c_uint32),
        ("timeout_ns", c_uint64),
        ("peer_check", c_void_p),
        ("peer_check_user", c_void_p),
        ("buffer_usage", c_uint32),
    ]


# --- the doctor -----------------------------------------------------------------------

class DoctorOptions(Structure):
    _fields_ = [("flags", c_uint32), ("root", c_char_p), ("engine", POINTER(ContextCreateInfo))]


class DoctorSummary(Structure):
    _fields_ = [
        ("check_count", c_uint32),
        ("pass_count", c_uint32),
        ("warn_count", c_uint32),
        ("fail_count", c_uint32),
        ("device_pair_count", c_uint32),
        ("ready", c_uint32),
    ]


class DoctorCheck(Structure):
    _fields_ = [("name", c_char_p), ("status", c_int32), ("seen", c_char_p), ("fix", c_char_p)]


class DoctorDevicePair(Structure):
    _fields_ = [
        ("vulkan_index", c_int32),
        ("vulkan_device_type", c_int32),
        ("vulkan_uuid", Uuid),
        ("vulkan_name", c_char_p),
        ("cuda_ordinal", c_int32),
        ("cuda_uuid", Uuid),
        ("cuda_name", c_char_p),
        ("ready", c_uint32),
    ]


def fields(struct: Structure) -> Any:
    """A struct's field values as nested tuples (arrays and inner structs too):
    what two structs are compared by, with no padding byte in it."""
    if isinstance(struct, Structure):
        return tuple(fields(getattr(struct, f[0])) for f in struct._fields_)
    if isinstance(struct, ctypes.Array):
        return tuple(fields(v) for v in struct)
    return struct


# --- handles --------------------------------------------------------------------------

_T = TypeVar("_T", bound="Handle")


class Handle:
    """Owns one C handle; ``close()`` (or garbage collection) destroys it with
    the class's ``_destroy`` (the library's ``vkcuda_*_destroy``)."""

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


class ContextHandle(Protocol):
    """What an object needs of the context it is made in: its C handle
    (``vkcuda.Context`` is one; the objects' modules lie below it)."""

    @property
    def handle(self) -> Optional[int]: ...


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
