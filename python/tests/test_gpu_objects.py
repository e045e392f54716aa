"""The object model on a real GPU: image levels and layers copied to and from
torch and CuPy tensors with one cuMemcpy3DAsync each (packed and padded rows,
one layer and all layers), the levels' CUDA arrays, surface and texture
objects; buffer batches as one (N, ...) tensor and N views in torch, CuPy and
JAX, zero-copy; image batches as one (N, H, W, C) tensor in the three;
__cuda_array_interface__ in CuPy (and Numba when installed) on buffers and
frame planes; ready_on making a torch stream wait on the GPU; the
semaphore's CUDA-graph nodes launched twice. Skipped without a GPU; with
VKCUDA_REQUIRE_GPU=1 a missing GPU or framework fails."""

from __future__ import annotations

import ctypes
import gc
import os
import struct
import time
from typing import Any, Iterator, Tuple

import pytest

import vkcuda
from vkcuda.queue import Queue

import conftest
from conftest import need

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
RGBA8 = "r8g8b8a8_unorm"


@pytest.fixture(scope="module")
def gpu() -> Iterator[Tuple[vkcuda.Context, Queue]]:
    if conftest.MODE != "real":
        need("torch")  # skips or fails
    ctx = vkcuda.Context.standalone()
    q = Queue(ctx)
    yield ctx, q
    q.close()
    ctx.close()


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """The library's objects come back to where they were (frameworks open fds
    of their own on first use, so fds are counted by test_gpu_frameworks)."""
    gc.collect()
    before = vkcuda.live_objects()
    yield
    gc.collect()
    assert vkcuda.live_objects() == before


def test_image_copies_torch(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    torch = need("torch")
    ctx, _ = gpu
    W, H = 320, 200
    # All 9 levels: layered images with CUDA take 1 level or the full chain (a partial
    # chain is refused: CUDA places its layers elsewhere than Vulkan does).
    with ctx.image(RGBA8, (W, H), levels=9, layers=3) as im:
        one = im.level(0, layer=1)
        assert one.cuda_array and im.level(1).cuda_array and one.cuda_array != im.level(1).cuda_array
        assert one.surface_object and one.surface_object == im.level(0).surface_object
        assert im.level(1).texture_object(filter="linear", read_mode="normalized_float", normalized=True)
        stream = torch.cuda.current_stream()
        src = torch.randint(0, 256, (H, W, 4), dtype=torch.uint8, device="cuda")
        one.copy_from(src, stream)
        packed = torch.zeros_like(src)
        one.copy_to(packed, stream)
        wide = torch.zeros((H, W + 24, 4), dtype=torch.uint8, device="cuda")
        one.copy_to(wide[:, :W], stream)  # padded rows: row stride > row
        layers = torch.zeros((3, H, W, 4), dtype=torch.uint8, device="cuda")
        im.level(0).copy_to(layers, stream)  # every layer in one copy
        small = torch.full((3, H // 2, W // 2, 4), 9, dtype=torch.uint8, device="cuda")
        im.level(1).copy_from(small, stream)
        back = torch.zeros_like(small)
        im.level(1).copy_to(back, stream)
        torch.cuda.synchronize()
        assert torch.equal(packed, src) and torch.equal(wide[:, :W], src) and torch.equal(layers[1], src)
        assert torch.equal(back, small)
        with pytest.raises(ValueError, match="does not start with"):
            one.copy_to(torch.zeros((H + 1, W, 4), dtype=torch.uint8, device="cuda"), stream)
        with pytest.raises(TypeError):
            one.copy_to(torch.zeros((H, W, 4), dtype=torch.uint8), stream)  # a CPU tensor
        del src, packed, wide, layers, small, back


def test_image_copies_cupy_float(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    cp = need("cupy")
    ctx, _ = gpu
    with ctx.image("r32_sfloat", (64, 48, 8)) as vol:  # a 3D image: depth slices in one copy
        src = cp.arange(8 * 48 * 64, dtype=cp.float32).reshape(8, 48, 64)
        s = cp.cuda.Stream(non_blocking=True)
        vol.level(0).copy_from(src, s)
        out = cp.zeros_like(src)
        vol.level(0).copy_to(out, s)
        s.synchronize()
        assert bool((out == src).all())
        del src, out


def _batch_tensors(fw: Any, framework: str, batch: vkcuda.BufferBatch, n: int, floats: int) -> None:
    """The framework's view of the batch; every tensor is freed on return."""
    assert batch.whole is not None
    base = batch.whole.cuda_pointer
    if framework == "torch":
        t = fw.from_dlpack(batch.tensor("float32", (floats,)))
        assert tuple(t.shape) == (n, floats) and t.data_ptr() == base
        views = [fw.from_dlpack(v) for v in batch.views("float32", (floats,))]
        assert [v.data_ptr() for v in views] == [base + i * batch.stride for i in range(n)]
        for i in range(n):
            t[i] = float(i + 1)
        fw.cuda.synchronize()
        assert all(float(views[i][5]) == i + 1 for i in range(n))
    elif framework == "cupy":
        t = fw.from_dlpack(batch.tensor("float32", (floats,)))
        assert t.shape == (n, floats) and t.data.ptr == base
        via_cai = fw.asarray(batch.views("float32", (floats,))[2])
        assert via_cai.data.ptr == base + 2 * batch.stride
        for i in range(n):
            t[i] = float(i + 1)
        fw.cuda.runtime.deviceSynchronize()
        assert float(via_cai[7]) == 3.0
    else:
        import jax.dlpack

        t = jax.dlpack.from_dlpack(batch.tensor("float32", (floats,)))
        assert t.shape == (n, floats) and t.unsafe_buffer_pointer() == base
        t.block_until_ready()


@pytest.mark.parametrize("framework", ["torch", "cupy", "jax"])
def test_buffer_batch_in_frameworks(gpu: Tuple[vkcuda.Context, Queue], framework: str) -> None:
    fw = need(framework)
    ctx, q = gpu
    n = 6
    floats = 1024 if framework == "jax" else 1000  # JAX takes contiguous tensors: 4096-byte slices, no gap
    with ctx.buffer_batch(n, floats * 4) as batch:
        _batch_tensors(fw, framework, batch, n, floats)
        gc.collect()
        if framework != "jax":  # Vulkan reads each slice through its own VkBuffer
            for i in range(n):
                staging = q.host_buffer(16)
                q.run(lambda r: (r.acquire_from_cuda(batch[i]), r.copy(batch[i], staging, 16)))
                assert struct.unpack("<4f", ctypes.string_at(staging.address, 16)) == (float(i + 1),) * 4
                staging.close()


def _cai_consumers(cp: Any, b: vkcuda.Buffer) -> None:
    a = cp.asarray(b.view("float32", (128, 128)))
    assert a.data.ptr == b.cuda_pointer and a.shape == (128, 128)
    strided = cp.asarray(b.view("float32", (64, 64), strides=(256, 2)))
    assert strided.strides == (1024, 8)
    try:
        import numba.cuda
    except ImportError:
        return
    d = numba.cuda.as_cuda_array(b.view("uint8"))
    assert d.device_ctypes_pointer.value == b.cuda_pointer


def test_cuda_array_interface_consumers(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    cp = need("cupy")
    ctx, _ = gpu
    with ctx.buffer(1 << 16) as b:
        _cai_consumers(cp, b)
        gc.collect()
    frame = ctx.video_frame(1280, 720, "nv12")
    try:
        luma = cp.asarray(frame.plane(0))
        p = frame.pointer(0)
        assert luma.data.ptr == p.cuda_pointer and luma.shape == (720, 1280) and luma.strides == (p.row_pitch, 1)
        del luma
    finally:
        frame.close()


def test_ready_on_makes_the_torch_stream_wait(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    torch = need("torch")
    ctx, _ = gpu
    with ctx.semaphore() as sem, ctx.buffer(4096) as b:
        stage = sem.next_stage()
        b.ready_on(sem, stage.signal_value)  # "Vulkan writes it and signals this value"
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            t = torch.from_dlpack(b.view("float32", (1024,)))  # torch passes stream=side
            t.fill_(3.0)
            done = torch.cuda.Event()
            done.record(side)
        time.sleep(0.1)
        assert not done.query(), "the consumer's stream did not wait for the semaphore"
        sem.host_signal(stage.signal_value)
        done.synchronize()
        assert float(t[17]) == 3.0
        del t


def test_graph_nodes(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    need("torch")  # a GPU; the graph is made with the driver API below
    ctx, _ = gpu
    cu = ctypes.CDLL("libcuda.so.1")
    P = ctypes.c_void_p
    assert cu.cuCtxPushCurrent_v2(P(ctx.cuda_info.context)) == 0
    graph, exec_ = P(), P()
    try:
        with ctx.semaphore() as sem:
            a, b = sem.next_stage(), sem.next_stage()
            assert cu.cuGraphCreate(ctypes.byref(graph), 0) == 0

            class CupyLikeGraph:  # an object with .ptr, as the frameworks hand out
                ptr = graph.value

            # Signals must go forward: the host signals what the wait node waits
            # for before the signal node records its (larger) value.
            wait = sem.cuda_graph_add_wait(CupyLikeGraph(), a.signal_value)
            sem.host_signal(a.signal_value)
            signal = sem.cuda_graph_add_signal(graph.value, b.signal_value, dependencies=[wait])
            assert wait and signal
            assert cu.cuGraphInstantiateWithFlags(ctypes.byref(exec_), graph, ctypes.c_ulonglong(0)) == 0
            assert cu.cuGraphLaunch(exec_, P(0)) == 0
            sem.host_wait(b.signal_value, timeout=5)
            c, d = sem.next_stage(), sem.next_stage()  # the second launch, with new values
            sem.cuda_graph_exec_set_wait(exec_.value, wait, c.signal_value)
            sem.host_signal(c.signal_value)
            sem.cuda_graph_exec_set_signal(exec_.value, signal, d.signal_value)
            assert cu.cuGraphLaunch(exec_, P(0)) == 0
            sem.host_wait(d.signal_value, timeout=5)
            assert cu.cuCtxSynchronize() == 0
    finally:
        if exec_.value:
            cu.cuGraphExecDestroy(exec_)
        if graph.value:
            cu.cuGraphDestroy(graph)
        cu.cuCtxPopCurrent_v2(ctypes.byref(P()))


def test_capture_nodes_in_a_torch_graph(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    torch = need("torch")
    ctx, _ = gpu
    with ctx.semaphore() as sem:
        a, b = sem.next_stage(), sem.next_stage()
        x = torch.zeros(1024, device="cuda")
        torch.cuda.synchronize()
        sem.host_signal(a.signal_value)  # before the signal node records the larger value
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            s = torch.cuda.current_stream()  # the capturing stream
            assert sem.cuda_capture_wait(s, a.signal_value)
            x.add_(1)
            assert sem.cuda_capture_signal(s, b.signal_value)
        g.replay()
        sem.host_wait(b.signal_value, timeout=5)  # the captured signal ran after the kernel
        torch.cuda.synchronize()
        assert float(x[0]) == 1.0
        with pytest.raises(vkcuda.Error) as e:  # not capturing
            sem.cuda_capture_wait(torch.cuda.Stream(), a.signal_value)
        assert e.value.name == "VKCUDA_ERROR_INVALID_STATE"
        del g, x


def test_semaphore_import_and_receive(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    """lavapipe has no shareable semaphores: their import and receive run here."""
    need("torch")
    import socket

    ctx, _ = gpu
    with ctx.semaphore() as sem:
        d = sem.describe()
        assert d.kind == "semaphore" and vkcuda.ShareDescription.from_bytes(bytes(d)) == d
        with ctx.import_semaphore(d, sem.export_fd()) as twin:
            stage = sem.next_stage()
            sem.host_signal(stage.signal_value)
            twin.host_wait(stage.signal_value, timeout=5)  # one payload
        a, b = socket.socketpair()
        try:
            sem.send(a, timeout=5)
            with ctx.receive_semaphore(b, timeout=5) as third:
                stage = sem.next_stage()
                third.host_signal(stage.signal_value)
                sem.host_wait(stage.signal_value, timeout=5)
        finally:
            a.close()
            b.close()


def test_frame_ready_on(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    torch = need("torch")
    ctx, _ = gpu
    with ctx.semaphore() as sem:
        frame = ctx.video_frame(640, 360, "nv12")
        try:
            stage = sem.next_stage()
            frame.ready_on(sem, stage.signal_value)
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                luma = torch.from_dlpack(frame.plane(0))
                luma.fill_(16)
                done = torch.cuda.Event()
                done.record(side)
            time.sleep(0.1)
            assert not done.query(), "the consumer's stream did not wait for the frame"
            sem.host_signal(stage.signal_value)
            done.synchronize()
            assert int(luma[0, 0]) == 16
            del luma
        finally:
            frame.close()


@pytest.mark.parametrize("force_copy", [False, True])
def test_image_batch_in_torch(gpu: Tuple[vkcuda.Context, Queue], force_copy: bool) -> None:
    """An image batch as one (N, H, W, C) torch tensor, both paths: torch writes
    a value per camera, the acquire brings it into the images (the copy path
    copies), the release brings the images out again; then the stream model:
    Vulkan's release waits for a value the host signals only after torch's read
    is enqueued on its current stream through ``ready_on``, so torch reads what
    Vulkan wrote with no host wait in between."""
    torch = need("torch")
    ctx, q = gpu
    n, w, h = 8, 64, 48
    with ctx.image_batch(n, 37, (w, h), force_copy=force_copy) as batch, ctx.semaphore() as sem:
        assert batch.path == ("copy" if force_copy else batch.path)
        q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 0))
        t = torch.from_dlpack(batch)
        assert tuple(t.shape) == (n, h, w, 4) and t.dtype == torch.uint8
        assert t.stride() == (batch.element_stride, batch.row_pitch, 4, 1)
        assert t.data_ptr() == batch.element(0)["cuda_pointer"]
        for i in range(n):
            t[i] = i + 1
        torch.cuda.synchronize()
        q.run(lambda r: batch.cmd_acquire_from_cuda(r.cmd, q.family, 6))  # TRANSFER_SRC_OPTIMAL
        if batch.path == "copy":
            t.zero_()
            torch.cuda.synchronize()
        # Vulkan waits for 1 (the host, below) and signals 2; torch's copy is
        # enqueued first, on a stream that waits for 2.
        cmd = q.record(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 6))
        q.submit(cmd, wait=[(sem, 1)], signal=[(sem, 2)])
        batch.ready_on(sem, 2)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            seen = torch.from_dlpack(batch).clone()  # __dlpack__(stream=s): s waits for 2
        sem.host_signal(1)
        s.synchronize()
        means = seen.float().mean(dim=(1, 2, 3)).tolist()
        assert means == [float(i + 1) for i in range(n)], means
        sem.host_wait(2)
        del t, seen, cmd
        gc.collect()


@pytest.mark.parametrize("framework", ["cupy", "jax"])
def test_image_batch_in_cupy_and_jax(gpu: Tuple[vkcuda.Context, Queue], framework: str) -> None:
    """The image batch's (N, H, W, C) tensor in CuPy and JAX (torch: above), on the
    copy path (the one NVIDIA gives images a renderer draws into): element 0's CUDA
    pointer, the batch's strides, and values that went through the images: CuPy
    writes one value per camera, the acquire copies them into the images, the
    tensor is cleared, the release copies the images out again, and the framework
    reads each camera's value back."""
    cp = need("cupy")
    need(framework)
    ctx, q = gpu
    n, w, h = 8, 64, 48
    with ctx.image_batch(n, 37, (w, h), force_copy=True) as batch:
        base = batch.element(0)["cuda_pointer"]
        q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 0))
        a = cp.from_dlpack(batch)
        assert a.shape == (n, h, w, 4) and a.dtype == cp.uint8 and a.data.ptr == base
        assert a.strides == (batch.element_stride, batch.row_pitch, 4, 1)
        for i in range(n):
            a[i] = i + 1
        cp.cuda.runtime.deviceSynchronize()
        q.run(lambda r: batch.cmd_acquire_from_cuda(r.cmd, q.family, 6))  # TRANSFER_SRC_OPTIMAL
        a.fill(0)
        cp.cuda.runtime.deviceSynchronize()
        q.run(lambda r: batch.cmd_release_to_cuda(r.cmd, q.family, 6))
        if framework == "cupy":
            means = a.astype(cp.float32).mean(axis=(1, 2, 3)).tolist()
        else:
            import jax.dlpack
            import numpy as np

            x = jax.dlpack.from_dlpack(batch)
            assert x.shape == (n, h, w, 4) and x.unsafe_buffer_pointer() == base
            means = np.asarray(x, dtype=np.float32).mean(axis=(1, 2, 3)).tolist()
            del x
        assert means == [float(i + 1) for i in range(n)], means
        del a
        gc.collect()
