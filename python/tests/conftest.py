"""Test setup. The CUDA side the tests get, decided once per process before the
library first loads a CUDA driver:

- "real": libcuda.so.1 loads (an NVIDIA machine); device pointers are read with cuMemcpy.
- "fake": no driver here. tests/fake_cuda/libcuda.c is built with cc, loaded first
  (its soname is what the library asks for), and paired with the lavapipe device
  (FAKE_CUDA_UUID): a CUDA pointer is then the host address of the very memory
  Vulkan uses, so the DLPack structs, refcounting and data checks are real.
- "none": neither (no cc, or not lavapipe): CUDA tests skip, or fail with
  VKCUDA_REQUIRE_GPU=1.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


def c_include_flags() -> "list[str]":
    """-I flags for C programs the tests compile against vkcuda.h: the repo's
    include/, and Vulkan's headers where the system has none (the GPU bundle's
    .dev/gpu/include, or the directories in VKCUDA_C_INCLUDE, colon-separated)."""
    dirs = [REPO / "include"]
    dirs += [Path(d) for d in os.environ.get("VKCUDA_C_INCLUDE", "").split(":") if d]
    bundle = REPO / ".dev" / "gpu" / "include"
    if not Path("/usr/include/vulkan/vulkan_core.h").exists() and bundle.is_dir():
        dirs.append(bundle)
    return [f"-I{d}" for d in dirs]
REQUIRE_GPU = os.environ.get("VKCUDA_REQUIRE_GPU") == "1"


def _real_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def _load_fake() -> "ctypes.CDLL | None":
    src = REPO / "tests" / "fake_cuda" / "libcuda.c"
    cc = shutil.which("cc") or shutil.which("gcc")
    if not src.is_file() or not cc:
        return None
    out = Path(tempfile.mkdtemp(prefix="vkcuda-fake-cuda-")) / "libcuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-Wl,-soname,libcuda.so",
                    "-o", str(out), str(src)], check=True)
    return ctypes.CDLL(str(out))


MODE = "real" if _real_driver() and not os.environ.get("VKCUDA_TEST_FAKE_CUDA") else "none"
FAKE = None
if MODE == "none":
    FAKE = _load_fake()

import vkcuda  # noqa: E402  (after the fake driver is loaded)
from vkcuda import _native  # noqa: E402

if FAKE is not None:
    with vkcuda.Context.standalone(vulkan_only=True) as probe:
        support = probe.device_support  # vkcuda_physical_device_query
    if "llvmpipe" in support.name:
        os.environ["FAKE_CUDA_UUID"] = support.uuid.hex()
        MODE = "fake"


def need(module: str) -> Any:
    """The GPU tests' gate: `module` (torch, cupy, jax, ...) imported, on the real driver.
    Without one it skips, or fails under VKCUDA_REQUIRE_GPU=1."""
    if MODE != "real":
        if REQUIRE_GPU:
            pytest.fail("VKCUDA_REQUIRE_GPU=1 but no NVIDIA driver")
        pytest.skip("needs an NVIDIA GPU (VKCUDA_REQUIRE_GPU=1 makes this a failure)")
    try:
        return __import__(module)
    except ImportError as e:
        if REQUIRE_GPU:
            pytest.fail(f"VKCUDA_REQUIRE_GPU=1 but {module} is not installed: {e}")
        pytest.skip(f"{module} is not installed")


def fake_live() -> int:
    """What the fake driver still holds (0 in real mode: not counted there)."""
    return FAKE.fake_cuda_live() if (FAKE is not None and MODE == "fake") else 0


class DeviceIo:
    """Reads and writes device memory: host addresses with the fake driver,
    cuMemcpy in the context's CUcontext with the real one."""

    def __init__(self, ctx: vkcuda.Context) -> None:
        self.fake = MODE == "fake"
        if not self.fake:
            self.cu = ctypes.CDLL("libcuda.so.1")
            self.ctx = ctx.cuda_info.context

    def _in_context(self, call: str, *args: object) -> None:
        assert self.cu.cuCtxPushCurrent_v2(ctypes.c_void_p(self.ctx)) == 0
        try:
            assert getattr(self.cu, call)(*args) == 0, call
            assert self.cu.cuCtxSynchronize() == 0
        finally:
            self.cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))

    def read(self, ptr: int, n: int) -> bytes:
        if self.fake:
            return ctypes.string_at(ptr, n)
        buf = ctypes.create_string_buffer(n)
        self._in_context("cuMemcpyDtoH_v2", buf, ctypes.c_uint64(ptr), ctypes.c_size_t(n))
        return buf.raw

    def write(self, ptr: int, data: bytes) -> None:
        if self.fake:
            ctypes.memmove(ptr, data, len(data))
        else:
            self._in_context("cuMemcpyHtoD_v2", ctypes.c_uint64(ptr), data, ctypes.c_size_t(len(data)))


@pytest.fixture
def vulkan_only() -> Iterator[vkcuda.Context]:
    with vkcuda.Context.standalone(vulkan_only=True) as ctx:
        yield ctx


@pytest.fixture
def cuda_ctx() -> Iterator[vkcuda.Context]:
    """A CUDA-paired standalone context (the fake or the real driver)."""
    if MODE == "none":
        if REQUIRE_GPU:
            pytest.fail("VKCUDA_REQUIRE_GPU=1 but no CUDA driver (and no fake one) is loaded")
        pytest.skip("no CUDA driver, and the fake one could not be built or paired here")
    with vkcuda.Context.standalone() as ctx:
        yield ctx


@pytest.fixture
def io(cuda_ctx: vkcuda.Context) -> DeviceIo:
    return DeviceIo(cuda_ctx)


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))
