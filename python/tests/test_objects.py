"""The object model on the CPU machine (lavapipe, Vulkan-only, or the fake CUDA
driver where a CUDA side is needed): images and their levels, share
descriptions, import by fd and description, send/receive to another process,
release/acquire and the batched handoff on an engine's command buffer, device
listing, buffer batches, __cuda_array_interface__, the stream model of
ready_on, errors in Python terms, and bad input. Every test ends with the
library's live-object counters back where they started."""

from __future__ import annotations

import ctypes
import gc
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import vkcuda
from vkcuda import _image, _native
from vkcuda.queue import Queue

import conftest
from conftest import DeviceIo, fd_count

RGBA8 = "r8g8b8a8_unorm"


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Each test leaves the library's objects and this process's fds as it found them."""
    gc.collect()
    before, fds = vkcuda.live_objects(), fd_count()
    yield
    gc.collect()
    assert vkcuda.live_objects() == before
    assert fd_count() == fds


# --- errors in Python terms -------------------------------------------------------

def test_messages_get_python_spelling(vulkan_only: vkcuda.Context) -> None:
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.cuda_info
    assert "VKCUDA_CONTEXT_CREATE_VULKAN_ONLY_BIT" in e.value.message
    assert "(Python: Context.standalone(vulkan_only=True)" in e.value.message
    assert repr(e.value).startswith("vkcuda.Error(VKCUDA_ERROR_CUDA_UNAVAILABLE")
    # The mapping by itself: each C name once, longer names first.
    hint = _native.python_hint("use vkcuda_physical_device_query and vkcuda_physical_devices_enumerate")
    assert hint.endswith("(Python: vkcuda.physical_devices(); vkcuda.query_device(...) or Context.device_support)")
    assert _native.python_hint("nothing to translate") == "nothing to translate"


# --- devices ----------------------------------------------------------------------

def test_device_listing_and_support(vulkan_only: vkcuda.Context) -> None:
    devices = vkcuda.physical_devices()
    assert devices and all(isinstance(d, vkcuda.DeviceSupport) for d in devices)
    mine = vulkan_only.device_support
    assert mine in devices and mine.external_memory_fd and mine.api_version >= (1, 2, 0)
    h = vulkan_only.vulkan_handles
    assert vkcuda.query_device(h.instance, h.physical_device, h.get_instance_proc_addr) == mine
    assert "VK_KHR_external_memory_fd" in vkcuda.device_extensions()
    assert "Vulkan-only" in repr(vulkan_only) and "standalone" in repr(vulkan_only)


# --- images -----------------------------------------------------------------------

def test_image_levels_and_layers(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.image(RGBA8, (64, 32), levels=3, layers=2) as im:
        assert isinstance(im, vkcuda.Image)  # the context manager returns its own class
        i = im.info
        assert (i.type, i.extent, i.levels, i.layers, i.format) == ("2d", (64, 32, 1), 3, 2, 37)
        assert i.vk_image == im.vk_image != 0 and i.bytes_per_texel == 4 and i.channels == 4
        assert not i.wrapped and i.cuda_mipmapped_array == 0 and i.plane_count == 1
        assert [lv.extent for lv in im.levels] == [(64, 32, 1), (32, 16, 1), (16, 8, 1)]
        assert im.level(2, layer=1).layer == 1
        assert "levels=3, layers=2, Vulkan-only" in repr(im) and "layer 1" in repr(im.level(0, 1))
        for bad in ((3, None), (-1, None), (0, 2)):
            with pytest.raises(IndexError):
                im.level(*bad)
        with pytest.raises(vkcuda.Error) as e:
            im.level(0).cuda_array
        assert e.value.name == "VKCUDA_ERROR_CUDA_UNAVAILABLE" and "Python: Context.standalone" in e.value.message
        with pytest.raises(vkcuda.Error):
            im.cuda_mipmapped_array
    assert repr(im) == "Image(closed)"
    with vulkan_only.image("r32_sfloat", (128,)) as one_d, vulkan_only.image("r8_unorm", (8, 8, 4)) as three_d:
        assert one_d.info.type == "1d" and three_d.info.type == "3d" and three_d.info.extent == (8, 8, 4)


def test_image_formats_and_bad_descriptions(vulkan_only: vkcuda.Context) -> None:
    assert vkcuda.format_info(RGBA8) == vkcuda.format_info(37) == vkcuda.format_info("VK_FORMAT_R8G8B8A8_UNORM")
    assert vkcuda.format_info("b8g8r8a8_unorm").bgra
    with pytest.raises(ValueError, match="unknown format"):
        vulkan_only.image("rgb8", (4, 4))
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.image(23, (4, 4))  # VK_FORMAT_R8G8B8_UNORM: 3 channels
    assert e.value.name == "VKCUDA_ERROR_UNSUPPORTED"
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.image(RGBA8, (0, 4))
    assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT"
    with pytest.raises(ValueError, match="extent"):
        vulkan_only.image(RGBA8, (1, 2, 3, 4))
    with pytest.raises(TypeError):
        vulkan_only.image(True, (4, 4))  # type: ignore[arg-type]


def test_image_import_in_process(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.image(RGBA8, (16, 16), levels=2) as im:
        d = im.describe()
        assert d.kind == "image" and d.fd_count == 1 and "format=37" in repr(d)
        fds = im.export_fds()
        with vulkan_only.import_image(d, fds) as copy:
            a, b = im.info, copy.info
            assert (a.extent, a.levels, a.layers, a.format, a.usage) == (b.extent, b.levels, b.layers, b.format, b.usage)
            assert a.vk_image != b.vk_image


# --- share descriptions and fds ---------------------------------------------------

def test_share_descriptions(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.buffer(4096) as b:
        d = b.describe()
        raw = bytes(d)
        assert len(raw) == 128 and raw[:8] == b"VKCUDASH" and d.to_bytes() == raw
        again = vkcuda.ShareDescription.from_bytes(raw)
        assert again == d and hash(again) == hash(d) and again.kind == "buffer" and again.size == 4096
        assert again.device_uuid == vulkan_only.device_support.uuid
        for bad, what in ((raw[:100], "truncated"), (b"x" * 128, "magic"), (raw[:8] + b"\xff" * 120, "")):
            with pytest.raises(vkcuda.Error) as e:
                vkcuda.ShareDescription.from_bytes(bad)
            assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT" and what in e.value.message
        with pytest.raises(TypeError):
            vkcuda.ShareDescription.from_bytes("text")  # type: ignore[arg-type]


def test_import_by_fd_and_description(vulkan_only: vkcuda.Context) -> None:
    with Queue(vulkan_only) as q, vulkan_only.buffer(4096) as b:
        q.upload(b, bytes(range(256)) * 16)
        i = b.info
        with vulkan_only.import_buffer_fd(b.export_fd(), i.size, i.allocation_size) as by_fd, \
                vulkan_only.import_buffer(b.describe(), b.export_fd()) as by_desc:
            assert q.download(by_fd) == q.download(by_desc) == bytes(range(256)) * 16
            q.upload(by_desc, b"\x07" * 16)
            assert q.download(b, 16) == b"\x07" * 16  # one memory


def test_closed_fd_and_wrong_kind(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.buffer(4096) as b, vulkan_only.image(RGBA8, (8, 8)) as im:
        fd = b.export_fd()
        os.close(fd)
        with pytest.raises(vkcuda.Error) as e:
            vulkan_only.import_buffer(b.describe(), fd)
        assert "Bad file descriptor" in e.value.message
        with pytest.raises(vkcuda.Error) as e:
            vulkan_only.import_buffer_fd(-1, 4096, 4096)
        assert "not valid" in e.value.message
        fd = b.export_fd()
        try:  # an image's description for a buffer: refused, the fd stays ours
            with pytest.raises(vkcuda.Error) as e:
                vulkan_only.import_buffer(im.describe(), fd)
            assert "not a buffer" in e.value.message
        finally:
            os.close(fd)
        with pytest.raises(TypeError):
            vulkan_only.import_buffer(b, 3)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            vulkan_only.import_image(b.describe().raw, [3])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            vulkan_only.import_buffer_fd("3", 1, 1)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            vulkan_only.import_buffer_fd(3, 1, 1, allocator="opengl")


CHILD = textwrap.dedent("""
    import socket, sys
    import vkcuda
    from vkcuda.queue import Queue
    sock = socket.socket(fileno=int(sys.argv[1]))
    with vkcuda.Context.standalone(vulkan_only=True) as ctx, Queue(ctx) as q:
        with ctx.receive_buffer(sock, timeout=20) as b, ctx.receive_image(sock, timeout=20) as im:
            data = q.download(b)
            q.run(lambda r: r.fill(b, 0xABABABAB, 64))  # write into the parent's memory
            i = im.info
            sock.sendall(data + repr((i.extent, i.levels, i.layers, i.format)).encode().ljust(200))
        d, fds = vkcuda.receive(sock, timeout=20)
        with ctx.import_buffer(d, fds[0]) as again:
            sock.sendall(q.download(again, 16))
        sock.recv(1)
    sys.exit(0 if vkcuda.live_objects()["vk_buffers"] == 0 else 3)
""")


def test_cross_process_buffer_and_image(vulkan_only: vkcuda.Context) -> None:
    """Another process receives a buffer and an image over a Unix socket,
    reads the buffer with Vulkan and writes into it; the writes show here."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    if conftest.MODE == "fake":  # the child needs no CUDA: a Vulkan-only context
        env.pop("FAKE_CUDA_UUID", None)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(child.fileno())], pass_fds=[child.fileno()], env=env)
    child.close()
    try:
        with Queue(vulkan_only) as q, vulkan_only.buffer(4096) as b, \
                vulkan_only.image(RGBA8, (32, 16), levels=2, layers=3) as im:
            pattern = bytes((i * 7) & 0xFF for i in range(4096))
            q.upload(b, pattern)
            b.send(parent, timeout=20)
            im.send(parent, timeout=20)
            got = _recv_exactly(parent, 4096 + 200)
            assert got[:4096] == pattern
            assert got[4096:].decode().strip() == repr(((32, 16, 1), 2, 3, 37))
            assert q.download(b, 64) == b"\xab" * 64  # the child's Vulkan fill, in our memory
            d = b.describe()
            fd = b.export_fd()
            try:
                vkcuda.send(parent, d, [fd], timeout=20)  # the generic send: the fd stays ours
            finally:
                os.close(fd)
            assert _recv_exactly(parent, 16) == b"\xab" * 16
            parent.sendall(b"x")
        assert proc.wait(timeout=60) == 0
    finally:
        parent.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    sock.settimeout(60)
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "the child closed the socket early"
        out += chunk
    return out


def test_receive_errors(vulkan_only: vkcuda.Context) -> None:
    a, b = socket.socketpair()
    try:
        a.sendall(b"not a record" * 20)
        with pytest.raises(vkcuda.Error) as e:
            vulkan_only.receive_buffer(b, timeout=5)
        assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT"
        with pytest.raises(vkcuda.Error) as e:
            vkcuda.receive(b, timeout=0.05)  # nothing comes
        assert e.value.name == "VKCUDA_ERROR_TIMEOUT"
    finally:
        a.close()
        b.close()
    with pytest.raises(ValueError, match="closed"):
        vulkan_only.receive_buffer(b)
    with pytest.raises(TypeError):
        vulkan_only.receive_image("socket")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        vulkan_only.receive_semaphore(0, timeout=-1)


def test_capture_needs_a_capturing_stream() -> None:
    sem = vkcuda.Semaphore.__new__(vkcuda.Semaphore)
    sem._handle = None
    for stream in (None, 1, 2):
        with pytest.raises(ValueError, match="capture"):
            sem.cuda_capture_wait(stream, 1)


# --- handoff on an engine's command buffer -----------------------------------------

def test_handoff_on_engine_command_buffer(vulkan_only: vkcuda.Context) -> None:
    with Queue(vulkan_only) as q, vulkan_only.buffer(256) as b, vulkan_only.image(RGBA8, (8, 8)) as im, \
            vulkan_only.image(RGBA8, (8, 8), usage=0x3) as transfer_only:
        fam = q.family

        def record(r: Any) -> None:
            cmd = r.cmd  # an int VkCommandBuffer, as an engine has it
            b.cmd_release_to_cuda(cmd, queue_family_index=fam, stage_mask=0x1000, access_mask=0x1000)
            b.cmd_acquire_from_cuda(cmd, queue_family_index=fam)
            im.cmd_release_to_cuda(cmd, "undefined", queue_family_index=fam)
            im.cmd_acquire_from_cuda(cmd, "transfer_src_optimal", queue_family_index=fam)
            vkcuda.handoff_release(cmd, [b, (im, "transfer_src_optimal")], queue_family_index=fam)
            vkcuda.handoff_acquire(cmd, [b, (im, 5)], queue_family_index=fam)
            vkcuda.handoff_release(cmd, [], queue_family_index=fam)
            with pytest.raises(vkcuda.Error) as e:  # a layout the usage does not allow
                transfer_only.cmd_acquire_from_cuda(cmd, "color_attachment_optimal", queue_family_index=fam)
            assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT"
            assert "Image.cmd_acquire_from_cuda" in e.value.message
            with pytest.raises(vkcuda.Error):  # a queue family the device does not have
                b.cmd_release_to_cuda(cmd, queue_family_index=99)
            with pytest.raises(TypeError, match="handoff takes"):
                vkcuda.handoff_release(cmd, [b.view()])
            with pytest.raises(ValueError, match="unknown layout"):
                im.cmd_release_to_cuda(cmd, "sideways")
            with pytest.raises(TypeError):
                b.cmd_release_to_cuda("cmd")
            with pytest.raises(ValueError):
                b.cmd_release_to_cuda(0)

        q.run(record)


# --- buffer batches ----------------------------------------------------------------

def test_buffer_batch_is_one_allocation(vulkan_only: vkcuda.Context) -> None:
    with Queue(vulkan_only) as q, vulkan_only.buffer_batch(4, 1000) as batch:
        assert isinstance(batch, vkcuda.BufferBatch) and len(batch) == 4
        assert batch.stride % 256 == 0 and batch.stride >= 1000
        whole = batch.whole
        assert whole is not None and whole.size == 4 * batch.stride and whole.info.wrapped
        memories = {whole.info.vk_memory} | {s.info.vk_memory for s in batch}
        assert len(memories) == 1
        assert [s.info.offset for s in batch] == [i * batch.stride for i in range(4)]
        assert all(s.size == 1000 for s in batch)
        for i, s in enumerate(batch):  # each slice written through its own VkBuffer...
            q.upload(s, bytes([i + 1]) * 1000)
        everything = q.download(whole)  # ...lands in the one allocation
        for i in range(4):
            assert everything[i * batch.stride:i * batch.stride + 1000] == bytes([i + 1]) * 1000
        assert "4 x 1000 bytes" in repr(batch)
        with pytest.raises(ValueError):
            batch.tensor("float32", (1000,))  # 4000 bytes do not fit a 1000-byte slice
    assert batch.closed and repr(batch).endswith("closed)")
    batch.close()  # twice: nothing
    for bad in ((0, 10), (2, 0), (True, 10)):
        with pytest.raises(ValueError):
            vulkan_only.buffer_batch(*bad)


def test_buffer_batch_tensors(cuda_ctx: vkcuda.Context, io: DeviceIo) -> None:
    with cuda_ctx.buffer_batch(3, 1024) as batch:
        assert batch.whole is not None
        base = batch.whole.cuda_pointer
        t = batch.tensor("float32", (256,))
        cai = t.__cuda_array_interface__
        assert cai["shape"] == (3, 256) and cai["data"][0] == base and cai["typestr"] == "<f4"
        assert cai["strides"] in (None, (batch.stride, 4))
        views = batch.views("uint8", (32, 32))
        ptrs = [v.__cuda_array_interface__["data"][0] for v in views]
        assert ptrs == [base + i * batch.stride for i in range(3)]
        io.write(ptrs[2], b"\x05" * 1024)  # through the view of slice 2...
        assert io.read(base + 2 * batch.stride, 1024) == b"\x05" * 1024  # ...in the whole tensor
        del t, views


# --- __cuda_array_interface__ --------------------------------------------------------

def test_cuda_array_interface(cuda_ctx: vkcuda.Context, io: DeviceIo) -> None:
    b = cuda_ctx.buffer(4096)
    view = b.view("float32", (16, 32), strides=(64, 1), offset=128, readonly=True)
    cai = view.__cuda_array_interface__
    assert cai == {"version": 3, "shape": (16, 32), "typestr": "<f4", "data": (b.cuda_pointer + 128, True),
                   "strides": (256, 4)}
    whole = b.__cuda_array_interface__
    assert whole["shape"] == (4096,) and whole["typestr"] == "|u1" and whole["strides"] is None
    assert whole["data"] == (b.cuda_pointer, False) and "stream" not in whole
    io.write(b.cuda_pointer + 128, b"\x01\x02\x03\x04")
    b.close()  # the view's export holds the memory
    assert io.read(cai["data"][0], 4) == b"\x01\x02\x03\x04"
    with pytest.raises(TypeError, match="typestr"):
        cuda_ctx.buffer(64).view("bfloat16").__cuda_array_interface__
    del view, cai, b
    held = cuda_ctx.buffer(64)  # the buffer object holds its own interface's export
    ptr = held.__cuda_array_interface__["data"][0]
    assert held.__cuda_array_interface__["data"][0] == ptr  # one export, not one per access
    io.write(ptr, b"\x09" * 8)
    held.close()
    assert io.read(ptr, 8) == b"\x09" * 8
    with cuda_ctx.buffer_batch(2, 256) as batch:
        assert batch.__cuda_array_interface__["shape"] == (2, 256)
    del held, batch


def test_cuda_array_interface_checks_are_the_librarys(cuda_ctx: vkcuda.Context) -> None:
    with cuda_ctx.buffer(1024) as b:
        for view in (b.view("float32", (512,)), b.view("uint8", (10, 10), strides=(200, 1)),
                     b.view("uint8", offset=2048), b.view((2, 12, 1)), b.view("float32", (4,), offset=2),
                     b.view("uint8", (4, 4), strides=(-4, 1))):
            with pytest.raises(vkcuda.Error) as e:
                view.__cuda_array_interface__
            assert e.value.message.startswith("vkcuda_buffer_export_dlpack:")


# --- the stream model ----------------------------------------------------------------

class _Waits:
    """A stand-in Semaphore recording the waits enqueued on it (lavapipe has
    no shareable semaphores; the GPU test runs the real one)."""

    def __init__(self) -> None:
        self.sem = vkcuda.Semaphore.__new__(vkcuda.Semaphore)
        self.sem._handle = None
        self.calls: List[Tuple[int, Any]] = []
        self.sem.cuda_wait = lambda value, stream=None: self.calls.append((value, stream))  # type: ignore


def test_ready_on_makes_consumers_wait(cuda_ctx: vkcuda.Context) -> None:
    waits = _Waits()
    with cuda_ctx.buffer(256) as b:
        b.__dlpack__(stream=5)
        assert waits.calls == []  # nothing pending: nothing enqueued
        b.ready_on(waits.sem, 7)
        assert b.ready == (waits.sem, 7)
        for stream, want in ((None, None), (1, None), (2, 2), (0x1234, 0x1234)):
            b.view("float32").__dlpack__(stream=stream, max_version=(1, 0))
            assert waits.calls[-1] == (7, want)
        n = len(waits.calls)
        b.__dlpack__(stream=-1)  # the consumer synchronises itself
        assert len(waits.calls) == n
        cai = b.view().__cuda_array_interface__
        assert cai["stream"] == 1 and waits.calls[-1] == (7, None)
        with pytest.raises(TypeError):
            b.ready_on(b, 1)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            b.ready_on(waits.sem, -1)
        b.ready_on(None)
        assert b.ready is None


# --- pitched layouts of copy_to / copy_from ---------------------------------------------

class _Tensor:
    def __init__(self, shape: Tuple[int, ...], typestr: str = "|u1", strides: Optional[Tuple[int, ...]] = None,
                 readonly: bool = False) -> None:
        self.__cuda_array_interface__: Dict[str, Any] = {
            "version": 3, "shape": shape, "typestr": typestr, "data": (0x10000, readonly), "strides": strides}


@pytest.mark.parametrize("tensor,geometry,want", [
    (_Tensor((16, 8, 4)), (32, 16, 1, 4), (0x10000, 32, False)),           # RGBA8 rows, packed
    (_Tensor((16, 8), "<f4"), (32, 16, 1, 4), (0x10000, 32, False)),       # R32F rows
    (_Tensor((16, 8, 4), strides=(64, 4, 1)), (32, 16, 1, 4), (0x10000, 64, False)),  # padded rows
    (_Tensor((3, 16, 32)), (32, 16, 3, 4), (0x10000, 32, False)),          # three layers
    (_Tensor((128,), "<f4", readonly=True), (512, 1, 1, 4), (0x10000, 512, True)),    # a 1D level
])
def test_pitched_layouts(tensor: _Tensor, geometry: Tuple[int, int, int, int], want: Tuple[int, int, bool]) -> None:
    assert _image.pitched_layout(tensor, *geometry) == want


@pytest.mark.parametrize("tensor,geometry,message", [
    (_Tensor((15, 8, 4)), (32, 16, 1, 4), "does not start with"),
    (_Tensor((16, 9, 4)), (32, 16, 1, 4), "rows are 32 bytes"),
    (_Tensor((16, 8, 4), strides=(32, 8, 2)), (32, 16, 1, 4), "not contiguous"),
    (_Tensor((16, 8, 4), strides=(16, 4, 1)), (32, 16, 1, 4), "shorter than a row"),
    (_Tensor((3, 16, 32), strides=(1024, 32, 1)), (32, 16, 3, 4), "layer stride"),
])
def test_pitched_layout_errors(tensor: _Tensor, geometry: Tuple[int, int, int, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _image.pitched_layout(tensor, *geometry)


def test_copy_needs_a_tensor_and_cuda(vulkan_only: vkcuda.Context) -> None:
    with pytest.raises(TypeError, match="not a CUDA tensor"):
        _image.tensor_interface(b"bytes")
    with vulkan_only.image(RGBA8, (8, 8)) as im:
        with pytest.raises(vkcuda.Error) as e:
            im.level(0).copy_to(_Tensor((8, 8, 4)))
        assert e.value.name == "VKCUDA_ERROR_CUDA_UNAVAILABLE"
        with pytest.raises(ValueError):
            im.level(0).texture_object(filter="cubic")


# --- bad input ---------------------------------------------------------------------------

def test_double_close_and_closed_objects(vulkan_only: vkcuda.Context) -> None:
    objects: List[Any] = [vulkan_only.buffer(64), vulkan_only.image(RGBA8, (4, 4)), vulkan_only.buffer_batch(2, 64),
                          vkcuda.Context.standalone(vulkan_only=True)]
    for o in objects:
        o.close()
        o.close()
        assert "closed" in repr(o)
    buf, im = objects[0], objects[1]
    for call in (lambda: buf.info, lambda: buf.describe(), lambda: im.info, lambda: im.export_fds(),
                 lambda: objects[3].image(RGBA8, (4, 4)), lambda: objects[2].tensor()):
        with pytest.raises(vkcuda.Error):
            call()


def test_graph_handles_are_checked(vulkan_only: vkcuda.Context) -> None:
    sem = vkcuda.Semaphore.__new__(vkcuda.Semaphore)
    sem._handle = None
    for bad in ("graph", 0, True, object()):
        with pytest.raises((TypeError, ValueError)):
            sem.cuda_graph_add_wait(bad, 1)

    class CupyLike:
        graph = 0x1000

    with pytest.raises(vkcuda.Error) as e:  # the handle is taken; the closed semaphore is refused
        sem.cuda_graph_add_signal(CupyLike(), 1)
    assert e.value.name == "VKCUDA_ERROR_NULL_POINTER"


def test_reprs(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.buffer(64) as b, Queue(vulkan_only) as q:
        assert repr(b) == "Buffer(64 bytes, vulkan-allocated, Vulkan-only)"
        assert repr(b.view("uint16", (32,))).startswith("TensorView(dtype=uint16")
        assert "ShareDescription(buffer: size=64" in repr(b.describe())
        assert repr(q).startswith("Queue(") and repr(q.record(lambda r: None)).startswith("CommandBuffer(")


# --- an engine's own image -------------------------------------------------------------

def test_wrap_an_engine_image(vulkan_only: vkcuda.Context) -> None:
    """An image the 'engine' (ctypes here) made on dedicated exportable memory."""
    import ctypes
    from ctypes import CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int32, c_uint32, c_uint64, c_void_p

    class Extent(Structure):
        _fields_ = [("width", c_uint32), ("height", c_uint32), ("depth", c_uint32)]

    class ImageCreateInfo(Structure):  # VkImageCreateInfo
        _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("imageType", c_int32),
                    ("format", c_int32), ("extent", Extent), ("mipLevels", c_uint32), ("arrayLayers", c_uint32),
                    ("samples", c_uint32), ("tiling", c_int32), ("usage", c_uint32), ("sharingMode", c_int32),
                    ("queueFamilyIndexCount", c_uint32), ("pQueueFamilyIndices", c_void_p),
                    ("initialLayout", c_int32)]

    class Chain(Structure):  # VkExternalMemoryImageCreateInfo / VkExportMemoryAllocateInfo
        _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("handleTypes", c_uint32)]

    class Dedicated(Structure):  # VkMemoryDedicatedAllocateInfo
        _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("image", c_uint64), ("buffer", c_uint64)]

    class Requirements(Structure):
        _fields_ = [("size", c_uint64), ("alignment", c_uint64), ("memoryTypeBits", c_uint32)]

    class Allocate(Structure):
        _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("allocationSize", c_uint64),
                    ("memoryTypeIndex", c_uint32)]

    h = vulkan_only.vulkan_handles
    gipa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(h.get_instance_proc_addr)
    gdpa = CFUNCTYPE(c_void_p, c_void_p, c_char_p)(gipa(h.instance, b"vkGetDeviceProcAddr"))
    P, U64 = c_void_p, c_uint64

    def fn(name: str, res: Any, *args: Any) -> Any:
        return CFUNCTYPE(res, *args)(gdpa(h.device, name.encode()))

    create = fn("vkCreateImage", c_int32, P, P, P, POINTER(U64))
    destroy = fn("vkDestroyImage", None, P, U64, P)
    requirements = fn("vkGetImageMemoryRequirements", None, P, U64, P)
    allocate = fn("vkAllocateMemory", c_int32, P, P, P, POINTER(U64))
    free = fn("vkFreeMemory", None, P, U64, P)
    bind = fn("vkBindImageMemory", c_int32, P, U64, U64, U64)

    external = Chain(1000072001, None, 1)  # OPAQUE_FD
    info = ImageCreateInfo(sType=14, pNext=ctypes.addressof(external), imageType=1, format=37,
                           extent=Extent(16, 16, 1), mipLevels=1, arrayLayers=1, samples=1, usage=0x7)
    image = U64()
    assert create(h.device, byref(info), None, byref(image)) == 0
    memory = U64()
    try:
        req = Requirements()
        requirements(h.device, image, byref(req))
        dedicated = Dedicated(1000127001, None, image.value, 0)
        export = Chain(1000072002, ctypes.addressof(dedicated), 1)
        index = (req.memoryTypeBits & -req.memoryTypeBits).bit_length() - 1
        alloc = Allocate(5, ctypes.addressof(export), req.size, index)
        assert allocate(h.device, byref(alloc), None, byref(memory)) == 0
        assert bind(h.device, image, memory, 0) == 0
        with pytest.raises(vkcuda.Error) as e:  # memory "allocated without export info"
            vulkan_only.wrap_image(image.value, memory.value, req.size, RGBA8, (16, 16), usage=0x7,
                                   export_handle_types=0)
        assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT"
        with pytest.raises(vkcuda.Error):  # memory smaller than the image needs
            vulkan_only.wrap_image(image.value, memory.value, 16, RGBA8, (16, 16), usage=0x7)
        with vulkan_only.wrap_image(image.value, memory.value, req.size, RGBA8, (16, 16), usage=0x7) as im:
            i = im.info
            assert i.wrapped and i.vk_image == image.value and i.vk_memory == memory.value
            assert (i.extent, i.usage, i.format) == ((16, 16, 1), 0x7, 37) and "wrapped" in repr(im)
    finally:
        destroy(h.device, image, None)
        if memory.value:
            free(h.device, memory, None)


# --- image batches -------------------------------------------------------------------

RGBA8_UNORM, R32_SFLOAT, D32_SFLOAT = 37, 100, 126


def test_batch_constants_are_the_headers() -> None:
    import re
    from vkcuda import _batch, _types

    header = (Path(__file__).resolve().parents[2] / "include" / "vkcuda.h").read_text()

    def value(name: str) -> int:
        m = re.search(rf"#define {name} \(?(\w+)", header) or re.search(rf"{name} = (\w+)", header)
        assert m, name
        return int(m.group(1).rstrip("u").rstrip("U"), 0)

    assert value("VKCUDA_BATCH_KIND_IMAGES") == _types.BATCH_KIND_IMAGES
    assert value("VKCUDA_BATCH_KIND_BUFFERS") == _types.BATCH_KIND_BUFFERS
    assert value("VKCUDA_BATCH_CREATE_FORCE_COPY_BIT") == _types.BATCH_CREATE_FORCE_COPY_BIT
    assert value("VKCUDA_BATCH_DLPACK_ELEMENT_BIT") == _types.BATCH_DLPACK_ELEMENT_BIT
    for code, name in _batch.PATHS.items():
        assert value("VKCUDA_BATCH_PATH_" + name.upper().replace("-", "_")) == code


def test_the_package_allocates_no_vulkan_memory_for_batches() -> None:
    """The batches are the library's: _batch.py makes no Vulkan call of its own."""
    from vkcuda import _batch

    source = Path(_batch.__file__).read_text()
    for call in ("vkAllocateMemory", "vkCreateBuffer", "vkBindBufferMemory", "vkGetDeviceProcAddr"):
        assert call not in source, call


def test_the_queue_allocates_no_vulkan_memory() -> None:
    """Staging buffers are the library's (vkcuda_host_buffer): queue.py makes no
    allocation of its own (issues 35 and 36)."""
    from vkcuda import queue

    source = Path(queue.__file__).read_text()
    for call in ("vkAllocateMemory", "vkCreateBuffer", "vkBindBufferMemory", "vkMapMemory",
                 "vkGetPhysicalDeviceMemoryProperties"):
        assert call not in source, call


def test_host_buffer_is_the_librarys(vulkan_only: vkcuda.Context) -> None:
    from vkcuda.queue import HostBuffer

    before = vkcuda.live_objects()
    data = bytes((i * 7 + 3) % 256 for i in range(4099))
    with Queue(vulkan_only) as q, vulkan_only.buffer(4099) as b:
        counted = vkcuda.live_objects()
        with q.host_buffer(4099) as up:
            assert isinstance(up, HostBuffer) and up.handle and not up.closed
            assert up.size == len(up.data) == 4099 and up.address == ctypes.addressof(up.data)
            assert isinstance(up.vk_buffer, int) and up.vk_buffer != 0 and up.vk_buffer != b.vk_buffer
            held = vkcuda.live_objects()
            assert (held["vk_buffers"], held["vk_memories"]) == (counted["vk_buffers"] + 1, counted["vk_memories"] + 1)
            assert repr(up) == "HostBuffer(4099 bytes)"
            ctypes.memmove(up.address, data, len(data))
            q.run(lambda r: r.copy(up, b))
        assert up.closed and repr(up) == "HostBuffer(4099 bytes, closed)"
        up.close()  # a second close does nothing
        assert vkcuda.live_objects() == counted
        down = q.host_buffer(4099)
        q.run(lambda r: r.copy(b, down))
        assert bytes(down.data) == data
        down.close()
        assert q.download(b) == data
        for bad in (0, 1 << 63):
            with pytest.raises(vkcuda.Error) as e:
                q.host_buffer(bad)
            assert e.value.name == "VKCUDA_ERROR_INVALID_ARGUMENT" and "size" in e.value.message
        with pytest.raises(ValueError):
            q.host_buffer(-1)
        with pytest.raises(TypeError):
            q.host_buffer(4.0)  # type: ignore[arg-type]
    assert vkcuda.live_objects() == before


def test_image_batch_on_vulkan_only(vulkan_only: vkcuda.Context) -> None:
    with vulkan_only.image_batch(5, RGBA8_UNORM, (37, 19)) as batch:
        assert isinstance(batch, vkcuda.ImageBatch) and len(batch) == 5
        assert batch.shape == (5, 19, 37, 4) and batch.dtype == (1, 8, 1)
        assert batch.path in ("zero-copy", "copy")
        assert batch.element_stride % 256 == 0 and batch.row_pitch >= 37 * 4
        elements = [batch.element(i) for i in range(5)]
        assert all(e["image"] != 0 and e["cuda_pointer"] == 0 for e in elements)
        assert len({e["image"] for e in elements}) == 5
        with pytest.raises(vkcuda.Error, match="index 5 is out of range"):
            batch.element(5)
        with pytest.raises(vkcuda.Error) as e:
            batch.__dlpack__()
        assert e.value.code == vkcuda._native.ERROR_CUDA_UNAVAILABLE
        assert "ImageBatch((5, 19, 37, 4)" in repr(batch)
    assert batch.closed and repr(batch) == "ImageBatch(closed)"
    with pytest.raises(vkcuda.Error, match="closed"):
        batch.element(0)
    with vulkan_only.image_batch(2, R32_SFLOAT, (8, 8), force_copy=True) as copy:
        assert copy.path == "copy" and copy.shape == (2, 8, 8) and copy.dtype == (2, 32, 1)
    with vulkan_only.image_batch(2, D32_SFLOAT, (8, 8)) as depth:
        assert depth.shape == (2, 8, 8)
    with pytest.raises(vkcuda.Error) as e:
        vulkan_only.image_batch(2, 23, (4, 4))  # VK_FORMAT_R8G8B8_UNORM
    assert e.value.code == vkcuda._native.ERROR_UNSUPPORTED and "not a format a batch can hold" in str(e.value)
    with pytest.raises(ValueError):
        vulkan_only.image_batch(0, RGBA8_UNORM, (4, 4))


def test_image_batch_release_and_tensor(cuda_ctx: vkcuda.Context, io: DeviceIo) -> None:
    """The engine writes each image, the batch is released in one call, and the
    tensor (DLPack and __cuda_array_interface__) holds every element."""
    for force_copy in (False, True):
        with Queue(cuda_ctx) as q, cuda_ctx.image_batch(3, R32_SFLOAT, (16, 4), force_copy=force_copy,
                                                        usage=0x1 | 0x2 | 0x10) as batch:
            assert batch.shape == (3, 4, 16)
            cai = batch.__cuda_array_interface__
            base = cai["data"][0]
            assert cai["shape"] == (3, 4, 16) and cai["typestr"] == "<f4"
            assert cai["strides"] in (None, (batch.element_stride, batch.row_pitch, 4))
            assert [batch.element(i)["cuda_pointer"] for i in range(3)] == [
                base + i * batch.element_stride for i in range(3)]
            # Handed to CUDA (contents discarded); the consumer writes the tensor;
            # the acquire copies it into the images (copy path) or hands the
            # images back (zero-copy); the copy path's readout region is zeroed;
            # the release brings the images' contents out again, unchanged.
            q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 0))
            data = [bytes([(i * 40 + k) % 251 for k in range(16 * 4)]) * 4 for i in range(3)]
            for i in range(3):
                for y in range(4):
                    io.write(base + i * batch.element_stride + y * batch.row_pitch, data[i][y * 64:(y + 1) * 64])
            q.run(lambda r: batch.cmd_acquire_from_cuda(r.cmd, q.family, 6))  # TRANSFER_SRC_OPTIMAL
            for i in range(3 if batch.path == "copy" else 0):  # zero-copy: the tensor IS the images
                for y in range(4):
                    io.write(base + i * batch.element_stride + y * batch.row_pitch, b"\0" * 64)
            q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 6))
            for i in range(3):
                for y in range(4):
                    got = io.read(base + i * batch.element_stride + y * batch.row_pitch, 64)
                    assert got == data[i][y * 64:(y + 1) * 64], (force_copy, i, y)
            # The camera loop: the readout region back alone (the images are not
            # touched), the next release copies the same images out again.
            if batch.path == "copy":
                q.run(lambda r: batch.cmd_acquire_readout_from_cuda(r.cmd, q.family))
                io.write(base, b"\0" * 64)
                q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 6))
                assert io.read(base, 64) == data[0][:64]
            else:
                with pytest.raises(vkcuda.Error, match="has no readout region"):
                    q.run(lambda r: batch.cmd_acquire_readout_from_cuda(r.cmd, q.family))
            capsule = batch.__dlpack__(max_version=(1, 0))
            assert type(capsule).__name__ == "PyCapsule"
            del capsule, cai
