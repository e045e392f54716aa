"""libvkcuda.so through ctypes: loading it, declaring its functions, the result
codes and the check that turns a failed call into :class:`Error`, and the calls
about the library itself (its version, its live objects). Everything the package
does goes through these calls, so Python and C share every check and message.
The structs the calls take are the floor's (``_types``)."""

from __future__ import annotations

import ctypes
import os
from importlib import metadata
from ctypes import POINTER, c_char_p, c_int32, c_void_p
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from ._types import CudaInfo, LiveObjects

__all__ = ["Error", "library_path", "version", "live_objects"]

#: Environment variable naming the libvkcuda.so to load instead of the packaged one.
LIBRARY_ENV = "VKCUDA_LIBRARY"


def _find_library() -> Path:
    """VKCUDA_LIBRARY, else the library in this package, else the system's
    (CMake-installed) library: the soname of this package's version, else the
    development link libvkcuda.so."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return Path(env)
    # lib/ has no __init__.py: pkgutil lists no module for the library.
    here = Path(__file__).resolve().parent / "lib" / "libvkcuda.so"
    if here.exists():
        return here
    try:
        major, minor = metadata.version("vkcuda").split(".")[:2]
        return Path(f"libvkcuda.so.{major if major != '0' else '0.' + minor}")
    except Exception:  # not installed as a distribution (a checkout on sys.path)
        return Path("libvkcuda.so")


library_path: Path = _find_library()
try:
    lib = ctypes.CDLL(str(library_path))
except OSError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        f"vkcuda: cannot load {library_path} ({e}); set {LIBRARY_ENV} to a libvkcuda.so, "
        "or reinstall the package (pip install vkcuda, or pip install . in a checkout)"
    ) from e

# Result codes (enum vkcuda_result).
SUCCESS = 0
ERROR_INVALID_ARGUMENT = -1
ERROR_NULL_POINTER = -2
ERROR_OUT_OF_MEMORY = -3
ERROR_CUDA_UNAVAILABLE = -4
ERROR_VULKAN_UNAVAILABLE = -5
ERROR_VULKAN = -6
ERROR_CUDA = -7
ERROR_EXTENSION_NOT_PRESENT = -8
ERROR_DEVICE_MISMATCH = -9
ERROR_UNSUPPORTED = -10
ERROR_TIMEOUT = -11
ERROR_PANIC = -12
ERROR_INVALID_STATE = -13
ERROR_PERMISSION_DENIED = -14
ERROR_DEVICE_LOST = -15


class Error(Exception):
    """A vkcuda call failed. ``code`` is the ``vkcuda_result`` (a negative int),
    ``name`` its name (``"VKCUDA_ERROR_INVALID_ARGUMENT"``) and ``message`` the
    library's message, which names the function and the native call that failed."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.name = result_name(code)
        self.message = message
        super().__init__(f"{self.name}: {message}")

    def __repr__(self) -> str:
        return f"vkcuda.Error({self.name}, {self.message!r})"


_signatures = {
    "vkcuda_version_string": (c_char_p, []),
    "vkcuda_result_to_string": (c_char_p, [c_int32]),
    "vkcuda_last_error_message": (c_char_p, []),
    "vkcuda_live_objects_get": (c_int32, [POINTER(LiveObjects)]),
    # Asked by the objects below the context module (is the context paired with CUDA?).
    "vkcuda_context_get_cuda_info": (c_int32, [c_void_p, POINTER(CudaInfo)]),
}


def declare(signatures: "Mapping[str, Tuple[Any, Any]]") -> None:
    """Sets restype and argtypes of the library's functions (test_abi.py checks
    every module's ``_signatures`` against vkcuda.h)."""
    for name, (res, args) in signatures.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args


declare(_signatures)


def by_address(name: str) -> Any:
    """A second prototype of the declared function ``name`` (its restype and
    argtypes, checked by test_abi, are the source) whose pointer arguments are
    ``c_void_p``: hot paths pass addresses (``ctypes.addressof``, ints) there,
    which ctypes converts faster than ``byref`` objects checked against a
    ``POINTER(struct)`` (``TensorView.__dlpack__``: about a third of its C
    call). The caller passes the address of a struct of the declared type."""
    f = getattr(lib, name)
    args = [c_void_p if issubclass(a, (ctypes._Pointer, c_void_p, c_char_p)) else a for a in f.argtypes]
    return ctypes.CFUNCTYPE(f.restype, *args)((name, lib))


def result_name(code: int) -> str:
    """The name of a result code, as ``vkcuda_result_to_string`` spells it."""
    name: Optional[bytes] = lib.vkcuda_result_to_string(code)
    return (name or b"VKCUDA_UNKNOWN_RESULT").decode()


def last_error_message() -> str:
    msg: Optional[bytes] = lib.vkcuda_last_error_message()
    return (msg or b"").decode("utf-8", "replace")


#: C identifiers in the library's messages, and what a Python caller writes
#: instead; :func:`python_hint` appends "(Python: ...)" naming each one found.
PYTHON_NAMES: "Tuple[Tuple[str, str], ...]" = (
    ("VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT", "Context.standalone(vulkan_only=True) or Context.from_engine(..., vulkan_only=True)"),
    ("VKCUDA_CONTEXT_CREATE_PHYSICAL_DEVICE_INDEX_BIT", "Context.standalone(physical_device_index=...)"),
    ("VKCUDA_IMAGE_CREATE_LINEAR_BIT", "Context.video_frame(...)"),
    ("VKCUDA_IMAGE_CREATE_CUBE_COMPATIBLE_BIT", "Context.image(..., cube=True)"),
    ("VKCUDA_TEXTURE_ALL_LEVELS_BIT", "ImageLevel.texture_object(all_levels=True)"),
    ("VKCUDA_TEXTURE_NORMALIZED_COORDINATES_BIT", "ImageLevel.texture_object(normalized=True)"),
    ("vkcuda_physical_devices_enumerate", "vkcuda.physical_devices()"),
    ("vkcuda_physical_device_query", "vkcuda.query_device(...) or Context.device_support"),
    ("vkcuda_device_extensions_enumerate", "vkcuda.device_extensions()"),
    ("vkcuda_context_create_standalone", "Context.standalone()"),
    ("vkcuda_context_create_with_device_info", "not in Python yet: a Context.from_engine() context accepts what every device has"),
    ("vkcuda_context_create", "Context.from_engine()"),
    ("vkcuda_buffer_cmd_release_to_cuda", "Buffer.cmd_release_to_cuda(command_buffer)"),
    ("vkcuda_buffer_cmd_acquire_from_cuda", "Buffer.cmd_acquire_from_cuda(command_buffer)"),
    ("vkcuda_image_cmd_release_to_cuda", "Image.cmd_release_to_cuda(command_buffer, old_layout)"),
    ("vkcuda_image_cmd_acquire_from_cuda", "Image.cmd_acquire_from_cuda(command_buffer, new_layout)"),
    ("vkcuda_handoff_cmd_release_to_cuda", "vkcuda.handoff_release(command_buffer, resources)"),
    ("vkcuda_handoff_cmd_acquire_from_cuda", "vkcuda.handoff_acquire(command_buffer, resources)"),
    ("vkcuda_image_export_plane_fd", "Image.export_fds()"),
    ("vkcuda_image_import_description_fds", "Context.import_image(description, fds)"),
    ("vkcuda_image_import_description", "Context.import_image(description, fds)"),
    ("vkcuda_buffer_import_description", "Context.import_buffer(description, fd)"),
    ("vkcuda_semaphore_import_description", "Context.import_semaphore(description, fd)"),
    ("vkcuda_buffer_import_fd", "Context.import_buffer_fd(fd, ...)"),
    ("vkcuda_semaphore_cuda_graph_exec_set_wait", "Semaphore.cuda_graph_exec_set_wait(exec, node, value)"),
    ("vkcuda_semaphore_cuda_graph_exec_set_signal", "Semaphore.cuda_graph_exec_set_signal(exec, node, value)"),
    ("vkcuda_semaphore_cuda_graph_add_wait", "Semaphore.cuda_graph_add_wait(graph, value)"),
    ("vkcuda_semaphore_cuda_graph_add_signal", "Semaphore.cuda_graph_add_signal(graph, value)"),
    ("vkcuda_semaphore_cuda_wait", "Semaphore.cuda_wait(value, stream)"),
    ("vkcuda_semaphore_cuda_signal", "Semaphore.cuda_signal(value, stream)"),
    ("vkcuda_semaphore_next_stage", "Semaphore.next_stage()"),
    ("vkcuda_context_get_cuda_info", "Context.cuda_info"),
    ("vkcuda_buffer_export_dlpack", "torch.from_dlpack(buffer.view(...))"),
)


def python_hint(message: str) -> str:
    """``message`` with "(Python: ...)" appended for each C name of
    :data:`PYTHON_NAMES` in it (a longer name hides the shorter names inside it)."""
    found = []
    text = message
    for c_name, py in PYTHON_NAMES:
        if c_name in text:
            found.append(py)
            text = text.replace(c_name, "")
    return f"{message} (Python: {'; '.join(dict.fromkeys(found))})" if found else message


def check(result: int) -> None:
    """Raises :class:`Error` with the thread's message unless ``result`` is 0.
    Called right after the call, on the same thread (the message is per thread).
    C names in the message get their Python spelling appended (:func:`python_hint`)."""
    if result != SUCCESS:
        raise Error(result, python_hint(last_error_message()))


def version() -> str:
    """The C library's version, "major.minor.patch" (capi/Cargo.toml's)."""
    return (lib.vkcuda_version_string() or b"").decode()


def live_objects() -> Dict[str, int]:
    """How many native objects the library holds in this process, by kind
    (``vkcuda_live_objects_get``): all 0 once everything is released."""
    counts = LiveObjects()
    check(lib.vkcuda_live_objects_get(ctypes.byref(counts)))
    return {field[0]: getattr(counts, field[0]) for field in LiveObjects._fields_}
