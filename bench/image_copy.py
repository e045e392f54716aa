"""ImageLevel.copy_to(tensor) of a 4K RGBA8 image against a raw cuMemcpy2DAsync
of the same CUDA array into a tensor (issue 30, "Speed": >= 0.9x the raw
copy's device bandwidth).

  vkcuda copy_to     image.level(0).copy_to(dst, stream): the package's one
                     cuMemcpy3DAsync (its Python: tensor layout, context push/pop)
  raw cuMemcpy2D     cuMemcpy2DAsync_v2 through ctypes (libcuda as the package's
                     _cuda helper loads it) from level 0's CUarray into dst_raw
                     on the same stream

Device bandwidth: each repeat enqueues torch.cuda._sleep (so the host enqueues
every copy before the GPU starts them), a CUDA event, --copies copies, an event;
GB/s = bytes copied / the events' elapsed time. The two paths alternate within a
repeat; each figure is the median over --repeats. The host's enqueue time per
call is printed beside it (informative). Checked: both tensors equal what
copy_from wrote into the image.

    python3 bench/image_copy.py [--width 3840 --height 2160] [--copies 20]
        [--repeats 30] [--csv FILE] [--strict]

Exit 0 when the copies are right (with --strict, also the ratio >= 0.9), 1
otherwise; 77 (SKIPPED) without torch or a CUDA GPU.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from ctypes import Structure, c_int, c_size_t, c_uint64, c_void_p
from typing import Any, Callable, List, Optional, Tuple

import _pybench

NAME = "image_copy"
TARGET = 0.9
SLEEP_CYCLES = 4_000_000  # ~2 ms at ~2 GHz: longer than enqueueing the copies


class Memcpy2D(Structure):
    """``CUDA_MEMCPY2D`` of cuda.h."""

    _fields_ = [
        ("srcXInBytes", c_size_t), ("srcY", c_size_t), ("srcMemoryType", c_int), ("srcHost", c_void_p),
        ("srcDevice", c_uint64), ("srcArray", c_void_p), ("srcPitch", c_size_t),
        ("dstXInBytes", c_size_t), ("dstY", c_size_t), ("dstMemoryType", c_int), ("dstHost", c_void_p),
        ("dstDevice", c_uint64), ("dstArray", c_void_p), ("dstPitch", c_size_t),
        ("WidthInBytes", c_size_t), ("Height", c_size_t),
    ]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=3840)
    p.add_argument("--height", type=int, default=2160)
    p.add_argument("--copies", type=int, default=20, help="copies between the two events of a repeat")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--csv")
    p.add_argument("--strict", action="store_true", help="exit 1 when copy_to is under the target")
    a = p.parse_args(argv)
    for what in ("width", "height", "copies", "repeats"):
        if getattr(a, what) < 1:
            p.error(f"--{what} must be at least 1")
    if a.width > 16384 or a.height > 16384:
        p.error("--width and --height are at most 16384")
    return a


def device_gbps(torch: Any, stream: Any, copy: Callable[[], None], copies: int, nbytes: int) -> Tuple[float, float]:
    """(GB/s on the GPU, host enqueue us per call) of one repeat."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        sleep = getattr(torch.cuda, "_sleep", None)  # private; without it the host may lag
        if sleep is not None:
            sleep(SLEEP_CYCLES)
        start.record(stream)
        t0 = time.perf_counter_ns()
        for _ in range(copies):
            copy()
        host_us = (time.perf_counter_ns() - t0) / 1000.0 / copies
        end.record(stream)
    end.synchronize()
    ms = start.elapsed_time(end)
    return nbytes * copies / (ms * 1e-3) / 1e9, host_us


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    torch = _pybench.torch_or_skip(NAME)
    vkcuda, ctx = _pybench.context_or_skip(NAME)
    from vkcuda import _cuda

    w, h = a.width, a.height
    nbytes = w * h * 4
    print(f"{NAME}: torch {torch.__version__}, vkcuda {vkcuda.version()}, {torch.cuda.get_device_name()}; "
          f"{w}x{h} r8g8b8a8_unorm ({nbytes / 1e6:.1f} MB), {a.copies} copies per repeat, {a.repeats} repeats",
          flush=True)
    image = ctx.image("r8g8b8a8_unorm", (w, h))
    level = image.level(0)
    array = level.cuda_array
    stream = torch.cuda.Stream()
    src = torch.randint(0, 256, (h, w, 4), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst_raw = torch.empty_like(src)
    torch.cuda.synchronize()

    cu = _cuda.driver()
    cu.cuMemcpy2DAsync_v2.argtypes = [ctypes.POINTER(Memcpy2D), c_void_p]
    cu.cuMemcpy2DAsync_v2.restype = c_int
    raw = Memcpy2D(srcMemoryType=_cuda.MEMORYTYPE_ARRAY, srcArray=array,
                   dstMemoryType=_cuda.MEMORYTYPE_DEVICE, dstDevice=dst_raw.data_ptr(), dstPitch=w * 4,
                   WidthInBytes=w * 4, Height=h)
    raw_ref, raw_stream = ctypes.byref(raw), c_void_p(stream.cuda_stream)
    # The library's CUDA context (the device's primary one, torch's) current for the raw calls.
    cu.cuCtxPushCurrent_v2(c_void_p(ctx.cuda_info.context))

    def raw_copy() -> None:
        r = cu.cuMemcpy2DAsync_v2(raw_ref, raw_stream)
        if r != 0:
            raise RuntimeError(f"cuMemcpy2DAsync_v2 failed: CUresult {r}")

    def lib_copy() -> None:
        level.copy_to(dst, stream)

    level.copy_from(src, stream)
    lib_copy()
    raw_copy()
    stream.synchronize()
    ok_lib, ok_raw = bool(torch.equal(dst, src)), bool(torch.equal(dst_raw, src))

    lib_gbps: List[float] = []
    raw_gbps: List[float] = []
    lib_host: List[float] = []
    raw_host: List[float] = []
    for r in range(a.repeats + 1):
        (lg, lh), (rg, rh) = (device_gbps(torch, stream, lib_copy, a.copies, nbytes),
                              device_gbps(torch, stream, raw_copy, a.copies, nbytes))
        if r == 0:
            continue  # warm-up
        lib_gbps.append(lg)
        lib_host.append(lh)
        raw_gbps.append(rg)
        raw_host.append(rh)
    stream.synchronize()
    cu.cuCtxPopCurrent_v2(ctypes.byref(c_void_p()))

    lm, rm = statistics.median(lib_gbps), statistics.median(raw_gbps)
    lhm, rhm = statistics.median(lib_host), statistics.median(raw_host)
    ratio = lm / rm
    met = ratio >= TARGET
    print(f"median of {a.repeats} repeats ({a.copies} copies each, device time between CUDA events):")
    print(f"  {'vkcuda ImageLevel.copy_to':<34} {lm:9.1f} GB/s   host {lhm:7.2f} us per call")
    print(f"  {'raw cuMemcpy2DAsync (ctypes)':<34} {rm:9.1f} GB/s   host {rhm:7.2f} us per call")
    print(f"  {'copy_to / raw (bandwidth)':<34} {ratio:9.3f}        target >= {TARGET} (issue 30): "
          f"{_pybench.verdict(met)}")
    if a.csv:
        _pybench.write_csv(a.csv, ("what", "value", "unit", "width", "height", "copies", "repeats"), [
            (w_, v, u, w, h, a.copies, a.repeats) for w_, v, u in (
                ("vkcuda copy_to", lm, "GB/s"), ("raw cuMemcpy2DAsync", rm, "GB/s"),
                ("vkcuda copy_to host", lhm, "us per call"), ("raw cuMemcpy2DAsync host", rhm, "us per call"),
                ("copy_to / raw", ratio, f"target >= {TARGET}"))])
    del dst, dst_raw, src
    image.close()
    ctx.close()
    print(f"check: copy_to {'equals' if ok_lib else 'DIFFERS FROM'} the source, "
          f"cuMemcpy2D {'equals' if ok_raw else 'DIFFERS FROM'} the source")
    if not (ok_lib and ok_raw):
        print(f"{NAME}: FAIL: a copy differs from what copy_from wrote")
        return 1
    if a.strict and not met:
        print(f"{NAME}: FAIL: copy_to / raw is under {TARGET} (--strict)")
        return 1
    print(f"{NAME}: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
