"""DLPack on the Python side: the ABI structs (to read a tensor back), dtype names,
and the PyCapsules of the Python DLPack protocol.

A capsule is named "dltensor_versioned" (DLManagedTensorVersioned, DLPack >= 1.0)
or "dltensor" (the legacy DLManagedTensor). A consumer that takes the tensor renames
the capsule "used_dltensor_versioned" / "used_dltensor" and calls the deleter
itself; the capsule's destructor calls the deleter only when nobody took it.
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from typing import Any, Dict, Optional, Tuple, Union

__all__ = [
    "DLDevice",
    "DLDataType",
    "DLTensor",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "parse_dtype",
    "dtype_name",
    "make_capsule",
    "call_deleter",
    "stream_handle",
    "KDL_CUDA",
    "VERSIONED_NAME",
    "LEGACY_NAME",
]

KDL_CPU = 1
KDL_CUDA = 2
FLAG_READ_ONLY = 1

VERSIONED_NAME = b"dltensor_versioned"
LEGACY_NAME = b"dltensor"
USED_VERSIONED_NAME = b"used_dltensor_versioned"
USED_LEGACY_NAME = b"used_dltensor"


class DLDevice(Structure):
    _fields_ = [("device_type", c_uint32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


Deleter = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", Deleter)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", Deleter),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


# DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool.
_DTYPES = {
    "int8": (0, 8),
    "int16": (0, 16),
    "int32": (0, 32),
    "int64": (0, 64),
    "uint8": (1, 8),
    "uint16": (1, 16),
    "uint32": (1, 32),
    "uint64": (1, 64),
    "float16": (2, 16),
    "float32": (2, 32),
    "float64": (2, 64),
    "bfloat16": (4, 16),
    "complex32": (5, 32),
    "complex64": (5, 64),
    "complex128": (5, 128),
    "bool": (6, 8),
}
_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "short": "int16",
    "int": "int32",
    "long": "int64",
    "byte": "uint8",
    "char": "int8",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "bool_": "bool",
}

DType = Union[str, Tuple[int, int, int], Any]


def parse_dtype(dtype: DType) -> Tuple[int, int, int]:
    """(code, bits, lanes) of a dtype given as a name ("float32"), a NumPy, PyTorch,
    CuPy or JAX dtype (``torch.float32``, ``numpy.dtype("float32")``) or a DLPack
    ``(code, bits, lanes)`` tuple. The library checks the values."""
    if isinstance(dtype, tuple):
        if len(dtype) != 3 or not all(isinstance(v, int) for v in dtype):
            raise TypeError(f"a DLPack dtype tuple is (code, bits, lanes) of ints, not {dtype!r}")
        code, bits, lanes = dtype
        for v, hi, what in ((code, 255, "code"), (bits, 255, "bits"), (lanes, 65535, "lanes")):
            if not 0 <= v <= hi:
                raise ValueError(f"dtype {what} {v} is out of range 0..{hi}")
        return code, bits, lanes
    name: str
    if isinstance(dtype, type):  # numpy scalar types: numpy.float32
        name = dtype.__name__
    elif isinstance(dtype, str):
        name = dtype
    else:
        attr = getattr(dtype, "name", None)
        name = attr if isinstance(attr, str) else str(dtype)
    name = name.rsplit(".", 1)[-1].lower()  # "torch.float32" -> "float32"
    name = _ALIASES.get(name, name)
    if name not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: one of {', '.join(_DTYPES)} or a (code, bits, lanes) tuple")
    code, bits = _DTYPES[name]
    return code, bits, 1


def dtype_name(code: int, bits: int, lanes: int) -> str:
    """The name of a DLPack dtype ("float32", or "(2, 32, 4)" when it has none)."""
    for name, cb in _DTYPES.items():
        if cb == (code, bits) and lanes == 1:
            return name
    return str((code, bits, lanes))


def stream_handle(stream: Any) -> int:
    """A CUstream handle from a stream object: ``None`` (0, the legacy default
    stream), an ``int``, a ``torch.cuda.Stream`` (``.cuda_stream``), a CuPy stream
    (``.ptr``), or any object with ``__cuda_stream__()`` returning (version, handle)."""
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("a stream is None, an int handle or a stream object, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream handle {stream} is negative")
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if callable(proto):
        got = proto()
        if isinstance(got, tuple) and len(got) == 2:
            return stream_handle(int(got[1]))
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return stream_handle(value)
    raise TypeError(
        f"{type(stream).__name__} is not a CUDA stream: pass None, an int CUstream, a torch.cuda.Stream, "
        "a CuPy stream or an object with __cuda_stream__"
    )


# ---------------------------------------------------------------------------------
# Capsules. PyCapsule_New keeps the name pointer: the names live in these buffers,
# which the destructor keeps alive with itself.
# Private prototypes bound to the Python C API (ctypes.pythonapi's attributes are
# shared, and other code may change their argtypes). They keep the GIL.
_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_void_p, c_void_p)(("PyCapsule_New", _api))
_PyCapsule_GetName = ctypes.PYFUNCTYPE(c_void_p, c_void_p)(("PyCapsule_GetName", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_void_p)(("PyCapsule_GetPointer", _api))
_Py_IncRef = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))

_versioned_name = ctypes.create_string_buffer(VERSIONED_NAME)
_legacy_name = ctypes.create_string_buffer(LEGACY_NAME)
#: The names' addresses: a capsule made here carries one of these pointers until a
#: consumer renames it ("used_..."), so the destructor compares pointers.
VERSIONED_NAME_ADDRESS = ctypes.addressof(_versioned_name)
LEGACY_NAME_ADDRESS = ctypes.addressof(_legacy_name)


def call_deleter(ptr: int, versioned: bool) -> None:
    """Calls the deleter of a ``DLManagedTensorVersioned*`` (``DLManagedTensor*``
    when not ``versioned``), which frees it: the one call its owner makes."""
    (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(ptr).deleter(ptr)


def _make_destructor() -> Any:
    get_name = _PyCapsule_GetName
    get_pointer = _PyCapsule_GetPointer
    versioned_name, legacy_name = VERSIONED_NAME_ADDRESS, LEGACY_NAME_ADDRESS
    delete = call_deleter
    keep = (_versioned_name, _legacy_name, DLManagedTensorVersioned, DLManagedTensor)

    def destructor(capsule: int) -> None:
        # Runs when the capsule is freed. A consumer that took the tensor renamed
        # the capsule ("used_..."): its name is then neither of ours and nothing is
        # done (one C call, the usual case: torch.from_dlpack takes the tensor).
        name = get_name(capsule)
        if name == versioned_name or name == legacy_name:
            ptr = get_pointer(capsule, name)
            if ptr:
                delete(ptr, name == versioned_name)

    destructor.keep = keep  # type: ignore[attr-defined]
    return CFUNCTYPE(None, c_void_p)(destructor)


# Never freed: a capsule may outlive this module at interpreter shutdown.
_destructor = _make_destructor()
_Py_IncRef(_destructor)
destructor_address: int = ctypes.cast(_destructor, c_void_p).value or 0


_PyCapsule_IsValidObj = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_PyCapsule_GetPointerObj = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_DTYPE_CHARS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


def typestr(code: int, bits: int, lanes: int) -> str:
    """The ``__cuda_array_interface__`` typestr of a DLPack dtype ("<f4", "|u1"),
    or ``TypeError`` for one it cannot name (bfloat16, vector lanes)."""
    if lanes != 1 or code not in _DTYPE_CHARS or bits % 8:
        raise TypeError(f"dtype {dtype_name(code, bits, lanes)} has no __cuda_array_interface__ typestr "
                        "(use DLPack: torch.from_dlpack)")
    size = bits // 8
    return f"{'|' if size == 1 else '<'}{_DTYPE_CHARS[code]}{size}"


def read_tensor(ptr: int, versioned: bool) -> "Tuple[int, Tuple[int, ...], Tuple[int, ...] | None, int, bool, int]":
    """(data pointer, shape, strides in bytes or None, itemsize, read-only,
    device type) of a DLManagedTensor(Versioned)*."""
    if versioned:
        mv = DLManagedTensorVersioned.from_address(ptr)
        t, ro = mv.dl_tensor, bool(mv.flags & FLAG_READ_ONLY)
    else:
        t, ro = DLManagedTensor.from_address(ptr).dl_tensor, False
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = max(1, t.dtype.bits * t.dtype.lanes // 8)
    strides = None if not t.strides else tuple(t.strides[i] * itemsize for i in range(t.ndim))
    return (t.data or 0) + t.byte_offset, shape, strides, itemsize, ro, t.device.device_type


def tensor_interface(obj: Any) -> "Tuple[int, Tuple[int, ...], Tuple[int, ...] | None, int, bool]":
    """What :func:`read_tensor` says of ``obj.__dlpack__()`` (a CUDA tensor; the
    export is released before returning: ``obj`` keeps the memory)."""
    try:
        capsule = obj.__dlpack__(max_version=(1, 0))
    except TypeError:
        capsule = obj.__dlpack__()
    for name, versioned in ((VERSIONED_NAME, True), (LEGACY_NAME, False)):
        if _PyCapsule_IsValidObj(capsule, name):
            ptr = _PyCapsule_GetPointerObj(capsule, name)
            data, shape, strides, itemsize, ro, device = read_tensor(ptr or 0, versioned)
            if device not in (KDL_CUDA, 13):  # kDLCUDA, kDLCUDAManaged
                raise TypeError(f"{type(obj).__name__} is not on a CUDA device (DLPack device type {device})")
            return data, shape, strides, itemsize, ro
    raise TypeError(f"{type(obj).__name__}.__dlpack__() did not return a DLPack capsule")


def make_capsule(tensor: int, versioned: bool) -> Any:
    """A PyCapsule owning ``tensor`` (a DLManagedTensorVersioned* or DLManagedTensor*
    from ``vkcuda_buffer_export_dlpack``). If the capsule is freed unconsumed, its
    destructor calls the tensor's deleter; if making it fails, the deleter runs here."""
    try:
        return _PyCapsule_New(tensor, VERSIONED_NAME_ADDRESS if versioned else LEGACY_NAME_ADDRESS, destructor_address)
    except BaseException:
        call_deleter(tensor, versioned)
        raise


class Held:
    """Owns one exported ``DLManagedTensorVersioned*`` and calls its deleter when
    released or freed: what keeps the memory behind a ``__cuda_array_interface__``
    valid for as long as the object that handed it out lives."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def release(self) -> None:
        p, self.ptr = self.ptr, 0
        if p:
            call_deleter(p, True)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def cuda_array_interface(held: Held, code: int, bits: int, lanes: int, stream: Optional[int]) -> Dict[str, Any]:
    """A ``__cuda_array_interface__`` (version 3) dict of a held tensor."""
    ptr, shape, strides, itemsize, ro, _ = read_tensor(held.ptr, True)
    if strides is not None:
        contiguous = tuple(itemsize * _prod(shape[i + 1:]) for i in range(len(shape)))
        if strides == contiguous:
            strides = None
    d: Dict[str, Any] = {"version": 3, "shape": shape, "typestr": typestr(code, bits, lanes), "data": (ptr, ro),
                         "strides": strides}
    if stream is not None:
        d["stream"] = stream
    return d


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out
