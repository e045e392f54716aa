"""DLPack from Python with a CUDA side (the fake driver paired with lavapipe on a
CPU machine, the real driver on a GPU): the capsule and the struct's fields read
back, the data through the tensor against what Vulkan copies out (and back), the
capsule protocol (consumed or not), reference counting (a tensor outlives the
Python buffer and the C handle and is freed exactly once), and no fd or object left
after 10,000 export/delete cycles."""

from __future__ import annotations

import ctypes
import gc

import pytest

import vkcuda
from vkcuda import _dlpack
from vkcuda.queue import Queue

from conftest import DeviceIo, fake_live, fd_count

api = ctypes.pythonapi
api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetName.restype = ctypes.c_char_p
USED_VERSIONED = ctypes.create_string_buffer(b"used_dltensor_versioned")
USED_LEGACY = ctypes.create_string_buffer(b"used_dltensor")


def consume(capsule: object, versioned: bool = True) -> int:
    """What a consumer does: take the tensor and rename the capsule."""
    name = _dlpack.VERSIONED_NAME if versioned else _dlpack.LEGACY_NAME
    assert api.PyCapsule_GetName(capsule) == name
    ptr = api.PyCapsule_GetPointer(capsule, name)
    assert ptr
    assert api.PyCapsule_SetName(capsule, USED_VERSIONED if versioned else USED_LEGACY) == 0
    return ptr


def pattern(n: int, seed: int) -> bytes:
    return bytes(((i * 2654435761 + seed) >> 13) & 0xFF for i in range(n))


def test_versioned_capsule_fields_and_data(cuda_ctx: vkcuda.Context, io: DeviceIo) -> None:
    ordinal = cuda_ctx.cuda_info.ordinal
    with Queue(cuda_ctx) as q, cuda_ctx.buffer(1 << 16) as b:
        data = pattern(1 << 16, 5)
        q.upload(b, data)
        view = b.view("float32", (64, 128), offset=4096)
        assert view.__dlpack_device__() == (2, ordinal)
        cap = view.__dlpack__(max_version=(1, 0), stream=None)
        assert api.PyCapsule_IsValid(cap, b"dltensor_versioned")
        ptr = consume(cap)
        t = _dlpack.DLManagedTensorVersioned.from_address(ptr)
        assert (t.version.major, t.version.minor) == (1, 0)
        assert t.flags == 0
        d = t.dl_tensor
        assert d.data == b.cuda_pointer + 4096 and d.byte_offset == 0
        assert (d.device.device_type, d.device.device_id) == (2, ordinal)
        assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (2, 32, 1)
        assert d.ndim == 2 and [d.shape[i] for i in range(2)] == [64, 128] and [d.strides[i] for i in range(2)] == [128, 1]
        got = io.read(d.data, 64 * 128 * 4)
        mismatches = sum(1 for a, c in zip(got, data[4096:]) if a != c)
        assert mismatches == 0
        mine = pattern(64 * 128 * 4, 77)
        io.write(d.data, mine)
        back = q.download(b)
        assert back[:4096] == data[:4096] and back[4096:4096 + len(mine)] == mine
        del cap  # consumed: the destructor leaves the tensor alone
        gc.collect()
        assert vkcuda.live_objects()["vk_buffers"] >= 1
        t.deleter(ptr)


def test_legacy_capsule_and_readonly(cuda_ctx: vkcuda.Context) -> None:
    with cuda_ctx.buffer(4096) as b:
        cap = b.__dlpack__()  # no max_version: the legacy capsule
        ptr = consume(cap, versioned=False)
        t = _dlpack.DLManagedTensor.from_address(ptr)
        assert t.dl_tensor.ndim == 1 and t.dl_tensor.shape[0] == 4096 and t.dl_tensor.data == b.cuda_pointer
        t.deleter(ptr)
        ro = b.view("uint16", (8, 8), readonly=True)
        ptr = consume(ro.__dlpack__(max_version=(1, 1)))
        t2 = _dlpack.DLManagedTensorVersioned.from_address(ptr)
        assert t2.flags == 1 and [t2.dl_tensor.strides[i] for i in range(2)] == [8, 1]
        t2.deleter(ptr)
        with pytest.raises(BufferError):
            ro.__dlpack__()  # a legacy consumer cannot honour read-only
        with pytest.raises(BufferError):
            b.__dlpack__(copy=True)
        with pytest.raises(BufferError):
            b.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
        assert b.__dlpack__(max_version=(1, 0), dl_device=b.__dlpack_device__(), copy=False) is not None
        with pytest.raises(TypeError):
            b.__dlpack__(stream="default")
        strided = b.view("float32", (4, 8), strides=(1, 4))
        ptr = strided.export()
        t3 = _dlpack.DLManagedTensorVersioned.from_address(ptr)
        assert [t3.dl_tensor.strides[i] for i in range(2)] == [1, 4]
        t3.deleter(ptr)


def test_a_view_exports_the_same_tensor_each_time(cuda_ctx: vkcuda.Context) -> None:
    """A view builds its vkcuda_dlpack_info once and reuses it (legacy and
    versioned apart): every export is a new tensor with the view's fields, its
    strides survive a collection, and the fields cannot change under it."""
    with cuda_ctx.buffer(1 << 16) as b:
        view = b.view("int16", (6, 10), strides=(20, 2), offset=256)
        seen = set()
        for i in range(6):
            versioned = i % 2 == 0
            gc.collect()  # the view's struct and strides array must outlive this
            cap = view.__dlpack__(stream=1, max_version=(1, 0) if versioned else None)
            ptr = consume(cap, versioned)
            seen.add(ptr)
            kind = _dlpack.DLManagedTensorVersioned if versioned else _dlpack.DLManagedTensor
            t = kind.from_address(ptr)
            d = t.dl_tensor
            assert d.data == b.cuda_pointer + 256 and d.ndim == 2
            assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (0, 16, 1)
            assert [d.shape[k] for k in range(2)] == [6, 10] and [d.strides[k] for k in range(2)] == [20, 2]
            t.deleter(ptr)
        assert len(seen) >= 2, "each export is a tensor of its own"
        for field, value in (("dtype", (2, 32, 1)), ("shape", (1,)), ("strides", None), ("offset", 0),
                             ("readonly", True), ("buffer", b)):
            with pytest.raises(AttributeError):
                setattr(view, field, value)
        assert (view.dtype, view.shape, view.strides, view.offset, view.readonly) == ((0, 16, 1), (6, 10), (20, 2),
                                                                                       256, False)
        whole = consume(b.__dlpack__(stream=None, max_version=(1, 0)))
        d = _dlpack.DLManagedTensorVersioned.from_address(whole).dl_tensor
        assert (d.ndim, d.shape[0], d.dtype.code, d.dtype.bits) == (1, 1 << 16, 1, 8)
        _dlpack.call_deleter(whole, True)
    for call in (b.__dlpack_device__, view.__dlpack_device__, lambda: view.__dlpack__(max_version=(1, 0)),
                 lambda: b.__dlpack__(max_version=(1, 0))):
        with pytest.raises(vkcuda.Error) as e:
            call()  # the buffer is closed: the library's message
        assert e.value.code == -2 and "must not be NULL" in e.value.message


def test_unconsumed_capsule_runs_the_deleter(cuda_ctx: vkcuda.Context) -> None:
    before = vkcuda.live_objects()
    b = cuda_ctx.buffer(4096)
    caps = [b.view("float32", (32, 32)).__dlpack__(max_version=(1, 0)), b.__dlpack__()]
    b.close()
    held = vkcuda.live_objects()
    assert held["vk_buffers"] == before["vk_buffers"] + 1, "the capsules hold the buffer"
    del caps
    gc.collect()
    assert vkcuda.live_objects() == before


def test_tensor_outlives_buffer_and_context(io: DeviceIo) -> None:
    warm = vkcuda.Context.standalone()  # the driver's own state in the baseline
    warm.close()
    before, fds, fake = vkcuda.live_objects(), fd_count(), fake_live()
    ctx = vkcuda.Context.standalone()
    q = Queue(ctx)
    b = ctx.buffer(1 << 20)
    data = pattern(1 << 20, 9)
    q.upload(b, data)
    q.close()
    ptr = consume(b.view("uint32").__dlpack__(max_version=(1, 0)))
    del b  # the Python object goes: its C handle is destroyed
    ctx.close()
    gc.collect()
    held = vkcuda.live_objects()
    assert held["contexts"] == before["contexts"] + 1 and held["vk_memories"] == before["vk_memories"] + 1
    t = _dlpack.DLManagedTensorVersioned.from_address(ptr)
    if io.fake:
        assert io.read(t.dl_tensor.data, 1 << 20) == data, "still readable"
    t.deleter(ptr)  # freed once: the counts return to the baseline, not below
    assert vkcuda.live_objects() == before
    assert fd_count() == fds and fake_live() == fake


def test_ten_thousand_export_delete_cycles(cuda_ctx: vkcuda.Context) -> None:
    with cuda_ctx.buffer(1 << 16) as b:
        view = b.view("float32", (128, 128))
        gc.collect()
        before = (fd_count(), vkcuda.live_objects(), fake_live())
        for i in range(10_000):
            cap = view.__dlpack__(max_version=(1, 0))
            if i % 2:
                ptr = consume(cap)
                _dlpack.DLManagedTensorVersioned.from_address(ptr).deleter(ptr)
            del cap
        gc.collect()
        assert (fd_count(), vkcuda.live_objects(), fake_live()) == before
