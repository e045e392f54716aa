"""What the Python benchmarks in bench/ share: the skip convention, the median,
the context, and the CSV.

Skips follow the project's convention (cmake/vkcudaTesting.cmake): a benchmark
that cannot run here prints ``SKIPPED: <name>: <why>`` and exits 77 (CTest:
skipped). Without a CUDA GPU and with ``VKCUDA_REQUIRE_GPU=1`` (the gpu tests set
it) it fails instead (exit 1), as the C programs do; no torch is always a skip.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any, Callable, List, NoReturn, Sequence, Tuple

SKIP = 77


def skip(name: str, why: str, *, gpu: bool = True) -> NoReturn:
    print(f"SKIPPED: {name}: {why}", flush=True)
    if gpu and os.environ.get("VKCUDA_REQUIRE_GPU") == "1":
        print(f"{name}: FAIL: VKCUDA_REQUIRE_GPU=1 and there is no usable GPU", flush=True)
        sys.exit(1)
    sys.exit(SKIP)


def torch_or_skip(name: str) -> Any:
    """torch, with a CUDA device; else the skip."""
    try:
        import torch
    except ImportError as e:
        skip(name, f"no torch ({e})", gpu=False)
    if not torch.cuda.is_available():
        skip(name, "no CUDA device (torch.cuda.is_available() is False)")
    return torch


def context_or_skip(name: str) -> Tuple[Any, Any]:
    """(the vkcuda module, a standalone Vulkan + CUDA context); the skip where the
    library finds no CUDA GPU paired with a Vulkan device (as example.c does)."""
    import vkcuda
    from vkcuda import _native

    try:
        return vkcuda, vkcuda.Context.standalone()
    except vkcuda.Error as e:
        if e.code in (_native.ERROR_CUDA_UNAVAILABLE, _native.ERROR_VULKAN_UNAVAILABLE,
                      _native.ERROR_DEVICE_MISMATCH, _native.ERROR_EXTENSION_NOT_PRESENT):
            skip(name, f"{e.name}: {e.message}")
        raise


def median_us(fn: Callable[[], Any], repeats: int, warmup: int = 50) -> float:
    """The median host time of ``fn()`` in microseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000.0


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def write_csv(path: str, header: Sequence[str], rows: List[Sequence[Any]]) -> None:
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for row in rows:
            f.write(",".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row) + "\n")
