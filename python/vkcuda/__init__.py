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

from . import _batch, _buffer, _context, _device, _doctor, _handoff, _image, _native, _semaphore, _share, _video
from ._batch import *  # noqa: F403  (each module's __all__ is its public names)
from ._buffer import *  # noqa: F403
from ._context import *  # noqa: F403
from ._device import *  # noqa: F403
from ._doctor import *  # noqa: F403
from ._handoff import *  # noqa: F403
from ._image import *  # noqa: F403
from ._native import *  # noqa: F403
from ._semaphore import *  # noqa: F403
from ._share import *  # noqa: F403
from ._video import *  # noqa: F403

#: The public names: those of each module's ``__all__`` (written there once).
__all__: "list[str]" = []
__all__ += _native.__all__
__all__ += _context.__all__
__all__ += _buffer.__all__
__all__ += _semaphore.__all__
__all__ += _device.__all__
__all__ += _doctor.__all__
__all__ += _video.__all__
__all__ += _image.__all__
__all__ += _handoff.__all__
__all__ += _batch.__all__
__all__ += _share.__all__

#: The C library's version, capi/Cargo.toml's (the package is versioned with it).
__version__: str = _native.version()
