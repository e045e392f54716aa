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
:class:`Error` with the result code and that message.
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
from ._batch import BufferBatch

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
