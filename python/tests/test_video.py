"""Shared video frames from Python: each plane a zero-copy DLPack tensor, lifetime
safe. On the CPU machine (lavapipe offers no multi-planar format) a frame is refused
with the library's message, and a one-plane RGBA frame is made; on a GPU, torch and CuPy read and write the planes of
NV12 and P010 frames in place, the tensor's pointer is the plane's, strides follow
the row pitch, and a tensor outlives its frame."""

from __future__ import annotations

import gc
from typing import Iterator

import pytest

import vkcuda

from conftest import need


def test_frames_are_checked_by_the_library(vulkan_only: vkcuda.Context) -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        vulkan_only.video_frame(64, 64, "yuy2")
    try:
        frame = vulkan_only.video_frame(64, 64, "nv12")
    except vkcuda.Error as e:
        # Debian 12's lavapipe has no multi-planar format.
        assert "G8_B8R8_2PLANE_420_UNORM" in str(e), e
        return
    with frame:
        p = frame.pointer(0)
        assert p.cuda_pointer == 0 and p.row_pitch >= 64
        with pytest.raises(vkcuda.Error, match="out of range"):
            frame.plane(2)
        with pytest.raises(vkcuda.Error):
            frame.plane(0).__dlpack_device__()


def test_rgba_frames_have_one_plane(vulkan_only: vkcuda.Context) -> None:
    # Linear single-plane frames (issue 37): lavapipe makes them.
    with vulkan_only.video_frame(67, 35, "rgba") as frame:
        assert frame.plane_count == 1
        p = frame.pointer(0)
        assert p.cuda_pointer == 0 and p.width == 67 and p.height == 35
        assert p.bytes_per_texel == 4 and p.row_pitch >= 67 * 4
        with pytest.raises(vkcuda.Error, match="out of range"):
            frame.plane(1)
        with pytest.raises(vkcuda.Error, match="multi-planar"):
            frame.color


@pytest.fixture(scope="module")
def gpu_ctx() -> Iterator[vkcuda.Context]:
    need("torch")
    ctx = vkcuda.Context.standalone()
    yield ctx
    ctx.close()


@pytest.mark.parametrize("fmt,w,h", [("nv12", 1920, 1080), ("nv12", 1282, 722), ("p010", 1920, 1080)])
def test_planes_are_tensors_in_place(gpu_ctx: vkcuda.Context, fmt: str, w: int, h: int) -> None:
    torch = need("torch")
    cupy = need("cupy")
    before = vkcuda.live_objects()
    frame = gpu_ctx.video_frame(w, h, fmt)
    luma = torch.from_dlpack(frame.plane(0))
    chroma = torch.from_dlpack(frame.plane(1))
    p0, p1 = frame.pointer(0), frame.pointer(1)
    elem = 2 if fmt == "p010" else 1
    assert luma.shape == (h, w) and chroma.shape == (h // 2, w // 2, 2)
    assert luma.data_ptr() == p0.cuda_pointer and chroma.data_ptr() == p1.cuda_pointer
    assert luma.stride() == (p0.row_pitch // elem, 1)
    assert chroma.stride() == (p1.row_pitch // elem, 2, 1)
    # torch writes a ramp; CuPy reads it through its own tensor of the same plane.
    ys = torch.arange(h, device="cuda", dtype=torch.int32).view(h, 1)
    xs = torch.arange(w, device="cuda", dtype=torch.int32).view(1, w)
    ramp = ((ys * 7 + xs * 3) % 251).to(torch.uint8)
    if fmt == "p010":
        luma.view(torch.int16).copy_((ramp.to(torch.int16) << 6))
    else:
        luma.copy_(ramp)
    (chroma.view(torch.int16) if fmt == "p010" else chroma).fill_(0)
    torch.cuda.synchronize()
    c = cupy.from_dlpack(frame.plane(0))
    want = cupy.asarray(ramp.cpu().numpy()).astype(c.dtype)
    if fmt == "p010":
        want = want << 6
    assert int((c != want).sum()) == 0
    # The tensors outlive the frame's handle.
    frame.close()
    del c
    gc.collect()
    total = (luma.view(torch.int16) if fmt == "p010" else luma).to(torch.int64).sum().item()
    assert int(total) == int(ramp.to(torch.int64).sum().item()) << (6 if fmt == "p010" else 0)
    del luma, chroma
    gc.collect()
    torch.cuda.synchronize()
    assert vkcuda.live_objects() == before
    print(f"{fmt} {w}x{h}: planes as tensors, row pitch {p0.row_pitch}/{p1.row_pitch}, CbCr at {p1.offset}")
