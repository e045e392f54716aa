"""PyTorch, CuPy and JAX on a real GPU: each reads and writes a Vulkan-allocated and
a CUDA-allocated buffer through DLPack (zero-copy: the framework's pointer is the
buffer's CUDA pointer), every element compared with what Vulkan copies out; a
1,000-frame handoff between a torch stream and Vulkan submits on one timeline with
no host synchronisation in the loop; leaks (fds, live objects, CUDA free memory).
Skipped without a GPU; with VKCUDA_REQUIRE_GPU=1 a missing GPU or framework fails.
Figures are printed as they come (run pytest with -s)."""

from __future__ import annotations

import ctypes
import gc
import os
import struct
import time
from typing import Any, Callable, Iterator, Tuple

import pytest

import vkcuda
from vkcuda.queue import Queue

import conftest
from conftest import fd_count, need

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX: allocate on demand
N = 1 << 20  # float32 elements per buffer (4 MiB)


def report(line: str) -> None:
    print(line, flush=True)


@pytest.fixture(scope="module")
def gpu() -> Iterator[Tuple[vkcuda.Context, Queue]]:
    if conftest.MODE != "real":
        need("torch")  # skips or fails
    ctx = vkcuda.Context.standalone()
    q = Queue(ctx)
    yield ctx, q
    q.close()
    ctx.close()


def floats(values: Any) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def source(seed: int) -> list:
    # Integers as floats: x * 2 + 1 is exact in float32.
    return [float((i * 7 + seed) % 65536) for i in range(N)]


def vulkan_writes(q: Queue, b: vkcuda.Buffer, data: bytes) -> None:
    """Vulkan copies `data` into the buffer and releases it to CUDA (the host waits)."""
    staging = q.host_buffer(len(data))
    ctypes.memmove(staging.address, data, len(data))
    q.run(lambda r: (r.copy(staging, b, len(data)), r.release_to_cuda(b)))
    staging.close()


def vulkan_reads(q: Queue, b: vkcuda.Buffer) -> list:
    staging = q.host_buffer(b.size)
    q.run(lambda r: (r.acquire_from_cuda(b), r.copy(b, staging, b.size)))
    out = list(struct.unpack(f"<{b.size // 4}f", ctypes.string_at(staging.address, b.size)))
    staging.close()
    return out


def mismatches(got: Any, want: Any) -> int:
    return sum(1 for a, c in zip(got, want) if a != c) + abs(len(got) - len(want))


def roundtrip(name: str, allocator: str, gpu: Tuple[vkcuda.Context, Queue],
              read: Callable[[vkcuda.TensorView], Tuple[list, int]],
              write: Callable[[vkcuda.TensorView], None]) -> None:
    ctx, q = gpu
    with ctx.buffer(N * 4, allocator=allocator) as b:
        data = source(3)
        vulkan_writes(q, b, floats(data))
        view = b.view("float32", (N // 1024, 1024))
        seen, ptr = read(view)
        assert ptr == b.cuda_pointer, f"{name}: not zero-copy ({ptr:#x} != {b.cuda_pointer:#x})"
        bad_read = mismatches(seen, data)
        write(view)  # x * 2 + 1, in the buffer
        back = vulkan_reads(q, b)
        bad_write = mismatches(back, [x * 2 + 1 for x in data])
        report(f"{name} {allocator}-allocated: read {N} elements compared, {bad_read} mismatches; "
               f"wrote {N} elements, Vulkan read them back: {bad_write} mismatches; data pointer == cuda_pointer")
        assert bad_read == 0 and bad_write == 0


@pytest.mark.parametrize("allocator", ["vulkan", "cuda"])
def test_torch(gpu: Tuple[vkcuda.Context, Queue], allocator: str) -> None:
    torch = need("torch")

    def read(view: vkcuda.TensorView) -> Tuple[list, int]:
        t = torch.from_dlpack(view)
        assert t.device.type == "cuda" and t.dtype == torch.float32 and tuple(t.shape) == (N // 1024, 1024)
        return t.flatten().tolist(), t.data_ptr()

    def write(view: vkcuda.TensorView) -> None:
        t = torch.from_dlpack(view)
        t.mul_(2).add_(1)
        torch.cuda.synchronize()

    roundtrip("torch", allocator, gpu, read, write)


@pytest.mark.parametrize("allocator", ["vulkan", "cuda"])
def test_cupy(gpu: Tuple[vkcuda.Context, Queue], allocator: str) -> None:
    cupy = need("cupy")

    def read(view: vkcuda.TensorView) -> Tuple[list, int]:
        a = cupy.from_dlpack(view)
        assert a.dtype == cupy.float32 and a.shape == (N // 1024, 1024)
        return a.ravel().get().tolist(), a.data.ptr

    def write(view: vkcuda.TensorView) -> None:
        a = cupy.from_dlpack(view)
        a *= 2
        a += 1
        cupy.cuda.runtime.deviceSynchronize()

    roundtrip("cupy", allocator, gpu, read, write)


@pytest.mark.parametrize("allocator", ["vulkan", "cuda"])
def test_jax(gpu: Tuple[vkcuda.Context, Queue], allocator: str) -> None:
    jax = need("jax")
    import jax.dlpack  # noqa: F401

    cu = ctypes.CDLL("libcuda.so.1")

    def read(view: vkcuda.TensorView) -> Tuple[list, int]:
        x = jax.dlpack.from_dlpack(view)
        assert x.shape == (N // 1024, 1024) and str(x.dtype) == "float32"
        return [float(v) for v in jax.device_get(x).ravel()], x.unsafe_buffer_pointer()

    def write(view: vkcuda.TensorView) -> None:
        # JAX arrays are immutable: JAX computes from the zero-copy input, and its
        # result is copied into the shared buffer on the device (cuMemcpyDtoD).
        x = jax.dlpack.from_dlpack(view)
        y = (x * 2 + 1).block_until_ready()
        cuda_ctx = gpu[0].cuda_info.context  # the buffer's pointer is valid in this CUcontext
        assert cu.cuCtxPushCurrent_v2(ctypes.c_void_p(cuda_ctx)) == 0
        try:
            assert cu.cuMemcpyDtoD_v2(ctypes.c_uint64(view.buffer.cuda_pointer), ctypes.c_uint64(y.unsafe_buffer_pointer()),
                                      ctypes.c_size_t(N * 4)) == 0
            assert cu.cuCtxSynchronize() == 0
        finally:
            cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))

    roundtrip("jax", allocator, gpu, read, write)


@pytest.mark.parametrize("allocator", ["vulkan", "cuda"])
def test_torch_tensors_past_4_gib(gpu: Tuple[vkcuda.Context, Queue], allocator: str) -> None:
    """A 4.5 GiB buffer (past maxMemoryAllocationSize on the H200) as torch tensors: the
    whole buffer's element count and a mark written past 4 GiB through it, read back
    through a second tensor whose DLPack offset is past 4 GiB (64-bit sizes, offsets
    and shapes end to end)."""
    torch = need("torch")
    ctx, _ = gpu
    size = (9 << 30) // 2  # 4.5 GiB
    with ctx.buffer(size, allocator=allocator) as buf:
        whole = torch.from_dlpack(buf.view("uint8", (size,)))
        assert whole.numel() == size and whole.data_ptr() == buf.cuda_pointer
        mark = torch.arange(4096, device="cuda", dtype=torch.int32).to(torch.uint8)
        at = (4 << 30) + 12345  # past 4 GiB
        whole[at:at + 4096].copy_(mark)
        torch.cuda.synchronize()
        tail = torch.from_dlpack(buf.view("uint8", (4096,), offset=at))
        assert tail.data_ptr() == buf.cuda_pointer + at
        assert torch.equal(tail, mark)
        del whole, tail, mark
        torch.cuda.synchronize()
    report(f"torch over a {allocator}-allocated 4.5 GiB buffer: numel {size}, a mark at {at} read back")


def test_torch_vulkan_frame_loop(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    """1,000 frames on one timeline: Vulkan fills the buffer with the frame number,
    a torch stream adds 1 in place, Vulkan copies the result into frame k's slot.
    No host wait in the loop; every element of every frame checked afterwards."""
    torch = need("torch")
    ctx, q = gpu
    frames, m = 1000, 1024
    stream = torch.cuda.Stream()
    with ctx.buffer(m * 4) as b, ctx.semaphore() as tl:
        t = torch.from_dlpack(b.view("int32", (m,)))
        results = q.host_buffer(frames * m * 4)
        fills = [q.record(lambda r, k=k: (r.acquire_from_cuda(b), r.fill(b, k), r.release_to_cuda(b)))
                 for k in range(frames)]
        copy_out = [q.record(lambda r, k=k: (r.acquire_from_cuda(b), r.copy(b, results, m * 4, 0, k * m * 4),
                                             r.release_to_cuda(b))) for k in range(frames)]
        t0 = time.perf_counter()
        for k in range(frames):
            s = tl.next_stage()
            q.submit(fills[k], wait=[(tl, s.wait_value)], signal=[(tl, s.signal_value)])
            s = tl.next_stage()
            tl.cuda_wait(s.wait_value, stream)
            with torch.cuda.stream(stream):
                t.add_(1)
            tl.cuda_signal(s.signal_value, stream)
            s = tl.next_stage()
            q.submit(copy_out[k], wait=[(tl, s.wait_value)], signal=[(tl, s.signal_value)])
        enqueued = time.perf_counter() - t0
        tl.host_wait(s.signal_value, timeout=60.0)
        total = time.perf_counter() - t0
        q.wait_idle()
        got = struct.unpack(f"<{frames * m}i", ctypes.string_at(results.address, frames * m * 4))
        bad = sum(1 for k in range(frames) for i in range(m) if got[k * m + i] != k + 1)
        report(f"torch/Vulkan frame loop: {frames} frames on one timeline, no host wait in the loop "
               f"(enqueued in {enqueued * 1e3:.1f} ms, done in {total * 1e3:.1f} ms, {frames / total:.0f} frames/s); "
               f"{frames * m} elements compared, {bad} mismatches")
        results.close()
        del t
        assert bad == 0


def cuda_free(ctx: vkcuda.Context) -> int:
    cu = ctypes.CDLL("libcuda.so.1")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    assert cu.cuCtxPushCurrent_v2(ctypes.c_void_p(ctx.cuda_info.context)) == 0
    try:
        assert cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0
    finally:
        cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
    return free.value


def test_leaks_back_to_start(gpu: Tuple[vkcuda.Context, Queue]) -> None:
    torch = need("torch")
    cupy = need("cupy")
    ctx, _ = gpu
    for allocator in ("vulkan", "cuda"):  # warm the drivers' own state first
        with ctx.buffer(N * 4, allocator=allocator) as b:
            torch.from_dlpack(b.view("float32")).add_(0)
            a = cupy.from_dlpack(b.view("int32", (N,)))
            a += 0  # loads CuPy's kernel before the baseline
            del a
    torch.cuda.synchronize()
    cupy.cuda.runtime.deviceSynchronize()
    gc.collect()
    start = (fd_count(), vkcuda.live_objects(), cuda_free(ctx))
    cycles = 200
    for i in range(cycles):
        allocator = "cuda" if i % 2 else "vulkan"
        b = ctx.buffer(N * 4, allocator=allocator)
        t = torch.from_dlpack(b.view("float32"))
        a = cupy.from_dlpack(b.view("int32", (N,)))
        b.close()  # the tensors outlive the handle
        t.add_(1)
        a += 1
        del t, a
    torch.cuda.synchronize()
    cupy.cuda.runtime.deviceSynchronize()
    gc.collect()
    end = (fd_count(), vkcuda.live_objects(), cuda_free(ctx))
    report(f"leaks after {cycles} create/torch+cupy import/destroy cycles: fds {start[0]} -> {end[0]}, "
           f"live objects {sum(start[1].values())} -> {sum(end[1].values())}, "
           f"CUDA free memory {start[2]} -> {end[2]} bytes")
    assert end == start
