"""vkcuda from Python: share GPU memory and timeline semaphores between a Vulkan
device and CUDA, zero-copy, and hand the memory to PyTorch, CuPy or JAX through
DLPack::

    import torch, vkcuda

    ctx = vkcuda.Context.standalone()              # or Context.from_engine(...)
    buf = ctx.buffer(1 << 20)                      # Vulkan allocates; allocator="cuda" too
    t = torch.from_dlpack(buf.view("float32", (512, 512)))
    assert t.data_ptr() == buf.cuda_pointer        # no copy

A thin, typed layer over libvkcuda.so (the C ABI of ``vkcuda.h``) through ctypes:
every check and message is the C library's, and every failure raises
:class:`Error` with the result code and that message (C names in it are
followed by their Python spelling).

The objects: :class:`Context`; :class:`Buffer` (and its :class:`TensorView` s),
:class:`BufferBatch` and :class:`ImageBatch` (N buffers or images in one allocation, one tensor), :class:`Image` and its
:class:`ImageLevel` s (CUDA arrays, surfaces, textures, ``copy_to`` /
``copy_from`` tensors), :class:`VideoFrame`, :class:`Semaphore` (CUDA streams,
graphs and stream captures); sharing with :class:`ShareDescription`,
:func:`send` / :func:`receive` and ``Context.import_*`` / ``receive_*``; the
handoff barriers on an engine's command buffer (``cmd_release_to_cuda``,
:func:`handoff_release`); :func:`physical_devices` and :func:`query_device`;
:mod:`vkcuda.queue` for a standalone Vulkan queue. Buffers, views, batches and
frame planes are DLPack producers and have ``__cuda_array_interface__``;
``Buffer.ready_on(semaphore, value)`` makes each consumer's stream wait for the
engine's write (see python/README.md, "Tensors and the stream model").
"""

from ._doctor import DevicePair, DoctorCheck, DoctorReport, DoctorStatus, doctor
from ._native import Error, library_path
from ._objects import (
    Buffer,
    BufferInfo,
    Context,
    CudaInfo,
    DeviceSupport,
    Semaphore,
    Stage,
    TensorView,
    VulkanHandles,
    device_extensions,
    live_objects,
    physical_devices,
    query_device,
    version,
)
from ._share import ShareDescription, receive, send
from ._video import Plane, PlanePointer, VideoColor, VideoFrame
from ._image import (  # noqa: I001  (after _objects: it builds on it)
    FORMATS,
    LAYOUTS,
    FormatInfo,
    Image,
    ImageInfo,
    ImageLevel,
    format_info,
    handoff_acquire,
    handoff_release,
)
from ._batch import BufferBatch, ImageBatch

__all__ = [
    "Error",
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
    "library_path",
    "doctor",
    "DoctorReport",
    "DoctorCheck",
    "DoctorStatus",
    "DevicePair",
    "VideoFrame",
    "Plane",
    "PlanePointer",
    "VideoColor",
    "Image",
    "ImageLevel",
    "ImageInfo",
    "FormatInfo",
    "FORMATS",
    "LAYOUTS",
    "format_info",
    "handoff_release",
    "handoff_acquire",
    "BufferBatch",
    "ImageBatch",
    "ShareDescription",
    "send",
    "receive",
    "DeviceSupport",
    "physical_devices",
    "query_device",
    "device_extensions",
]
#: The library's version, which is Cargo.toml's (the package is versioned with it).
__version__: str = version()
