"""Vulkan produces an image in a shared buffer, PyTorch blurs it in place with a
small convolution on its own stream, Vulkan reads the result back; a PNG.

One timeline orders the three stages on the GPU (no host wait between them):
Vulkan writes and signals, the torch stream waits, convolves and signals, Vulkan
waits and copies out. The tensor is the buffer itself: torch's data_ptr() is the
buffer's CUDA pointer.

    python3 examples/python/conv_inplace.py [--out conv.png] [--size 512]

Needs an NVIDIA GPU, torch and torchvision (for the PNG), and the vkcuda package
(pip install . in a checkout).
"""

import argparse
import ctypes
import math
import sys

import torch
import torch.nn.functional as F

import vkcuda
from vkcuda.queue import Queue


def checkerboard_with_rings(size: int) -> torch.Tensor:
    """The picture "Vulkan renders": made here on the CPU, uploaded by a Vulkan copy."""
    y, x = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    checks = ((x // 32 + y // 32) % 2).float()
    r = torch.sqrt((x - size / 2.0) ** 2 + (y - size / 2.0) ** 2)
    rings = (torch.sin(r / 6.0) > 0).float()
    return 0.6 * checks + 0.4 * rings


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="conv_inplace.png")
    p.add_argument("--size", type=int, default=512)
    args = p.parse_args()
    n = args.size

    # 1. A context paired with the CUDA device torch uses (its primary context),
    #    a Vulkan queue, one shared buffer of n*n floats and one timeline.
    ctx = vkcuda.Context.standalone()
    queue = Queue(ctx)
    image = ctx.buffer(n * n * 4)
    timeline = ctx.semaphore()

    # 2. The buffer as a torch tensor: zero-copy, same memory.
    pixels = torch.from_dlpack(image.view("float32", (n, n)))
    assert pixels.data_ptr() == image.cuda_pointer, "DLPack import copied"

    # 3. Vulkan stage: copy the picture in, release the buffer to CUDA, signal.
    picture = checkerboard_with_rings(n)
    staging_in = queue.host_buffer(n * n * 4)
    ctypes.memmove(staging_in.address, picture.numpy().tobytes(), n * n * 4)
    render = timeline.next_stage()
    queue.submit(queue.record(lambda r: (r.copy(staging_in, image), r.release_to_cuda(image))),
                 wait=[(timeline, render.wait_value)], signal=[(timeline, render.signal_value)])

    # 4. CUDA stage on torch's stream: wait for Vulkan, blur in place, signal.
    #    (Plain float32 convolutions: cuDNN's default TF32 would round to 10 bits.)
    torch.backends.cudnn.allow_tf32 = False
    stream = torch.cuda.Stream()
    blur = timeline.next_stage()
    timeline.cuda_wait(blur.wait_value, stream)
    with torch.cuda.stream(stream):
        kernel = torch.full((1, 1, 5, 5), 1 / 25.0, device="cuda")
        blurred = F.conv2d(pixels[None, None], kernel, padding=2)[0, 0]
        pixels.copy_(blurred)  # the result goes back into the shared buffer
    timeline.cuda_signal(blur.signal_value, stream)

    # 5. Vulkan stage: wait for torch, take the buffer back, copy it out.
    staging_out = queue.host_buffer(n * n * 4)
    readback = timeline.next_stage()
    queue.submit(queue.record(lambda r: (r.acquire_from_cuda(image), r.copy(image, staging_out))),
                 wait=[(timeline, readback.wait_value)], signal=[(timeline, readback.signal_value)])
    timeline.host_wait(readback.signal_value, timeout=10.0)  # the only host wait

    # 6. Check what Vulkan read: bit for bit what torch computed, and close to the
    #    same convolution on the CPU.
    got = torch.frombuffer(bytearray(ctypes.string_at(staging_out.address, n * n * 4)),
                           dtype=torch.float32).reshape(n, n)
    torch_result = blurred.cpu()
    wrong = int((got != torch_result).sum())
    want = F.conv2d(picture[None, None], kernel.cpu(), padding=2)[0, 0]
    worst = (got - want).abs().max().item()
    print(f"{n}x{n} image: Vulkan -> torch conv2d in place -> Vulkan; {wrong} of {n * n} values differ "
          f"from torch's; max |difference| from the CPU: {worst:.2e}")
    if wrong or not math.isfinite(worst) or worst > 1e-4:
        print("FAIL: Vulkan did not read back what torch computed")
        return 1

    try:
        from torchvision.io import write_png
    except ImportError:
        print("PASS (no torchvision: no PNG written)")
        return 0
    side_by_side = torch.cat([picture, got], dim=1)
    write_png((side_by_side * 255).clamp(0, 255).to(torch.uint8)[None], args.out)
    print(f"PASS: wrote {args.out} (left: what Vulkan produced, right: what it read back)")

    del pixels, blurred
    for obj in (staging_in, staging_out, queue, timeline, image, ctx):
        obj.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
