"""The Python API on a Vulkan-only context (lavapipe here): objects, getters,
every error (one exception type with the library's code and message), the dtype
and stream arguments."""

from __future__ import annotations

import os
import re

import pytest

import vkcuda
from vkcuda import _dlpack

from conftest import REPO, fd_count


def test_version_and_library() -> None:
    cargo = (REPO / "capi" / "Cargo.toml").read_text()  # the C library's version
    want = re.search(r'^\[package\][^[]*?^version = "([^"]+)"', cargo, re.M | re.S)
    assert want and vkcuda.version() == want.group(1) == vkcuda.__version__
    assert vkcuda.library_path.name.startswith("libvkcuda.so")
    assert set(vkcuda.live_objects()) == {
        "contexts", "vk_buffers", "vk_memories", "vk_images", "vk_semaphores",
        "cuda_allocations", "cuda_external_memories", "cuda_external_semaphores",
    }


def test_buffer_getters(vulkan_only: vkcuda.Context) -> None:
    before = vkcuda.live_objects()
    with vulkan_only.buffer(1 << 20) as b:
        assert b.size == 1 << 20
        assert b.allocator == "vulkan"
        info = b.info
        assert info.vk_buffer != 0 and info.vk_memory != 0 and info.vk_buffer == b.vk_buffer
        assert info.allocation_size >= info.size and info.offset == 0 and not info.wrapped
        assert info.cuda_pointer == 0
        after = vkcuda.live_objects()
        assert after["vk_buffers"] == before["vk_buffers"] + 1
        fd = b.export_fd()
        try:
            size = os.fstat(fd).st_size  # an open fd; lavapipe's memfds tell their size
            assert size == 0 or size >= 1 << 20
        finally:
            os.close(fd)
    assert b.closed
    assert vkcuda.live_objects() == before


def test_errors_carry_code_and_message(vulkan_only: vkcuda.Context) -> None:
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.cuda_info
    assert e.value.code == -4 and e.value.name == "VKCUDA_ERROR_CUDA_UNAVAILABLE"
    assert e.value.message.startswith("vkcuda_context_get_cuda_info: ") and "VULKAN_ONLY" in e.value.message
    assert str(e.value) == f"{e.value.name}: {e.value.message}"
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.buffer(0)
    assert e.value.code == -1 and "size must not be 0" in e.value.message
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.buffer(64, usage=0x20000)  # SHADER_DEVICE_ADDRESS
    assert e.value.code == -10
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.buffer(64, usage=1 << 30)
    assert e.value.code == -1
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.buffer(64, allocator="cuda")  # a Vulkan-only context cannot allocate with CUDA
    assert e.value.code == -4
    with pytest.raises(ValueError):
        vulkan_only.buffer(64, allocator="metal")
    with pytest.raises(vkcuda.Error) as e:
        vkcuda.Context.standalone(vulkan_only=True, physical_device_index=99)
    assert e.value.code == -1 and "99" in e.value.message


def test_semaphores(vulkan_only: vkcuda.Context) -> None:
    try:
        sem = vulkan_only.semaphore(initial_value=5)
    except vkcuda.Error as e:
        # lavapipe has no VK_KHR_external_semaphore_fd.
        assert e.code == -8 and e.message.startswith("vkcuda_semaphore_create: "), e
        return
    with sem:
        assert sem.vk_semaphore != 0 and sem.value == 5
        assert sem.next_stage() == (5, 6)
        sem.host_signal(6)
        sem.host_wait(6, timeout=1.0)
        with pytest.raises(vkcuda.Error) as err:
            sem.host_wait(100, timeout=0.01)
        assert err.value.code == -11
        with pytest.raises(vkcuda.Error) as err:
            sem.cuda_wait(6)  # a Vulkan-only context
        assert err.value.code == -4
        os.close(sem.export_fd())


def test_closed_objects_raise(vulkan_only: vkcuda.Context) -> None:
    b = vulkan_only.buffer(64)
    b.close()
    b.close()  # a second close does nothing
    for get in (lambda: b.info, lambda: b.export_fd(), lambda: b.cuda_pointer, lambda: b.view().export(),
                b.__dlpack_device__, lambda: b.__dlpack__(max_version=(1, 0))):
        with pytest.raises(vkcuda.Error) as e:
            get()
        assert e.value.code == -2 and "must not be NULL" in e.value.message


def test_dlpack_needs_cuda(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.buffer(4096) as b:
        for call in (b.__dlpack__, b.__dlpack_device__, lambda: b.view("float32", (32, 32)).__dlpack__(max_version=(1, 0))):
            with pytest.raises(vkcuda.Error) as e:
                call()
            assert e.value.code == -4 and "VULKAN_ONLY" in e.value.message
        # The arguments are checked first, with the C library's messages.
        with pytest.raises(vkcuda.Error) as e:
            b.view("float32", (33, 32)).export()
        assert e.value.code == -1 and "past its end" in e.value.message
        with pytest.raises(vkcuda.Error) as e:
            b.view("float32", (4,), offset=2).export()
        assert e.value.code == -1 and "multiple of the element size" in e.value.message
        with pytest.raises(vkcuda.Error) as e:
            b.view((10, 8, 1), (4,)).export()
        assert e.value.code == -10


def test_context_from_engine_handles(vulkan_only: vkcuda.Context) -> None:
    h = vulkan_only.vulkan_handles
    assert h.instance and h.physical_device and h.device and h.get_instance_proc_addr and h.queue
    with vkcuda.Context.from_engine(h.instance, h.physical_device, h.device, h.get_instance_proc_addr,
                                    vulkan_only=True) as engine:
        e = engine.vulkan_handles
        assert (e.instance, e.device) == (h.instance, h.device)
        assert e.queue == 0 and e.queue_family_index == 0xFFFFFFFF
        with engine.buffer(256) as b:
            assert b.size == 256
    with pytest.raises(vkcuda.Error) as err:
        vkcuda.Context.from_engine(0, h.physical_device, h.device, h.get_instance_proc_addr)
    assert err.value.code == -2 and "instance" in err.value.message


def test_fd_and_objects_after_many_cycles(vulkan_only: vkcuda.Context) -> None:
    fds, objects = fd_count(), vkcuda.live_objects()
    for _ in range(200):
        with vulkan_only.buffer(4096) as b:
            os.close(b.export_fd())
    assert (fd_count(), vkcuda.live_objects()) == (fds, objects)


@pytest.mark.parametrize("given,want", [
    ("float32", (2, 32, 1)), ("uint8", (1, 8, 1)), ("bfloat16", (4, 16, 1)), ("bool", (6, 8, 1)),
    ("torch.float16", (2, 16, 1)), ("half", (2, 16, 1)), ("long", (0, 64, 1)), ("complex64", (5, 64, 1)),
    ((2, 32, 4), (2, 32, 4)),
])
def test_dtypes(given: object, want: tuple) -> None:
    assert _dlpack.parse_dtype(given) == want


def test_bad_dtypes() -> None:
    with pytest.raises(ValueError):
        _dlpack.parse_dtype("float31")
    with pytest.raises(TypeError):
        _dlpack.parse_dtype((2, 32))
    with pytest.raises(ValueError):
        _dlpack.parse_dtype((2, 300, 1))


class _TorchLike:
    cuda_stream = 0x1234


class _CupyLike:
    ptr = 0x5678


class _Protocol:
    def __cuda_stream__(self) -> tuple:
        return (0, 0x9ABC)


def test_stream_arguments() -> None:
    assert _dlpack.stream_handle(None) == 0
    assert _dlpack.stream_handle(7) == 7
    assert _dlpack.stream_handle(_TorchLike()) == 0x1234
    assert _dlpack.stream_handle(_CupyLike()) == 0x5678
    assert _dlpack.stream_handle(_Protocol()) == 0x9ABC
    for bad in ("stream", 1.5, True, object()):
        with pytest.raises(TypeError):
            _dlpack.stream_handle(bad)
    with pytest.raises(ValueError):
        _dlpack.stream_handle(-1)


def test_view_arguments(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.buffer(64) as b:
        with pytest.raises(ValueError):
            b.view("uint8", ())
        with pytest.raises(ValueError):
            b.view("uint8", (1,) * 9)
        with pytest.raises(ValueError):
            b.view("uint8", None, strides=(1,))
        assert "float32" in repr(b.view("float32", (4, 4)))
