"""A Python frame loop against the same loop in C (issue 30, "Speed": the Python
loop within 1.05x of C on the H200).

The loop, frame k = 1..N, at most D frames in flight, all on one timeline
semaphore (initial value 0 in C; continuing from its value here):

  if k > D: spin on the timeline's value until it is >= 2(k-D)
  torch, on its stream: t.add_(1) where t is word 0 of a shared buffer
                         (torch.from_dlpack of a vkcuda view: the kernel writes it)
  sem.cuda_signal(2k-1, torch's stream)                  CUDA -> Vulkan
  Queue.submit(cmd, wait 2k-1, signal 2k)                Vulkan: acquire the buffer
       from CUDA, copy word 0 to a host-visible buffer, release it to CUDA
  sem.cuda_wait(2k, torch's stream)                      Vulkan -> CUDA

The host clock is read every --batch frames; a sample is the time per frame over
a batch (the first batch is the warm-up). Also printed: the Python loop's own
host work per frame (the loop's time less its spins on the timeline): where it
is above the C loop's time per frame, Python, not the GPU, sets the pace. The C loop is bench/c/frame_loop_ref.c
(the same semaphores and command buffer through the library, a one-thread PTX
kernel doing word += 1 through the driver API, a non-blocking stream), run as a
subprocess; the two alternate for --rounds rounds, and each side's figure is the
median over rounds of its per-round median. Checked: the word Vulkan copied out
is the number of frames run.

    python3 bench/python_frames.py --c-binary build/bench/c/frame_loop_ref \\
        [--frames 5000] [--in-flight 2] [--batch 100] [--rounds 3] [--csv FILE] [--strict]

Prints per round each side's median, then the two medians, "python / C" and the
target (<= 1.05). Exit 0 when every frame checked out (with --strict, also the
target met), 1 otherwise; 77 (SKIPPED) without torch or a CUDA GPU. Without
--c-binary only the Python loop runs (no ratio).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any, List, Optional, Tuple

import _pybench

NAME = "python_frames"
TARGET = 1.05
C_LINE = re.compile(r"median_us_per_frame ([0-9.]+)")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--c-binary", help="frame_loop_ref (bench/c), built by CMake with -DVKCUDA_BUILD_EXAMPLES=ON")
    p.add_argument("--frames", type=int, default=5000)
    p.add_argument("--in-flight", type=int, default=2)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--csv")
    p.add_argument("--strict", action="store_true", help="exit 1 when python / C is over the target")
    a = p.parse_args(argv)
    for what in ("frames", "in_flight", "batch", "rounds"):
        if getattr(a, what) < 1:
            p.error(f"--{what.replace('_', '-')} must be at least 1")
    if a.frames < 2 * a.batch:
        p.error(f"--frames must be at least 2 x --batch ({2 * a.batch})")
    if a.c_binary is not None and not os.access(a.c_binary, os.X_OK):
        p.error(f"--c-binary {a.c_binary}: not an executable file")
    return a


class PythonLoop:
    """The vkcuda objects and the torch tensor of the loop, made once."""

    def __init__(self, torch: Any, vkcuda: Any, ctx: Any) -> None:
        from vkcuda.queue import Queue

        self.torch, self.ctx = torch, ctx
        self.queue = Queue(ctx)
        self.buf = ctx.buffer(4096)
        self.sem = ctx.semaphore()
        self.readback = self.queue.host_buffer(4)

        def record(r: Any) -> None:
            r.acquire_from_cuda(self.buf)
            r.copy(self.buf, self.readback, 4)
            r.release_to_cuda(self.buf)

        self.cmd = self.queue.record(record)
        self.stream = torch.cuda.Stream()
        with torch.cuda.stream(self.stream):
            self.t = torch.from_dlpack(self.buf.view("int32", (1,)))
            self.t.zero_()
        self.stream.synchronize()
        self.frames_run = 0

    def run(self, frames: int, in_flight: int, batch: int) -> Tuple[List[float], float]:
        """One round: (per-frame times (us) over batches, the warm-up batch
        dropped; the host's own work per frame (us): the loop less its spins)."""
        torch, sem, q, cmd, t, stream = self.torch, self.sem, self.queue, self.cmd, self.t, self.stream
        base = sem.value
        samples: List[float] = []
        spun = 0
        with torch.cuda.stream(stream):
            start = t0 = time.perf_counter_ns()
            for k in range(1, frames + 1):
                if k > in_flight:
                    s0 = time.perf_counter_ns()
                    spin_until(sem, base + 2 * (k - in_flight))
                    spun += time.perf_counter_ns() - s0
                t.add_(1)
                sem.cuda_signal(base + 2 * k - 1, stream)
                q.submit(cmd, wait=[(sem, base + 2 * k - 1)], signal=[(sem, base + 2 * k)])
                sem.cuda_wait(base + 2 * k, stream)
                if k % batch == 0:
                    t1 = time.perf_counter_ns()
                    samples.append((t1 - t0) / 1000.0 / batch)
                    t0 = t1
            host_us = (time.perf_counter_ns() - start - spun) / 1000.0 / frames
            spin_until(sem, base + 2 * frames)
        stream.synchronize()
        q.wait_idle()
        self.frames_run += frames
        return samples[1:], host_us

    def check(self) -> Tuple[bool, str]:
        got = int.from_bytes(bytes(self.readback.data), "little")
        tensor = int(self.t.item())
        ok = got == self.frames_run and tensor == self.frames_run
        return ok, f"Vulkan read {got}, the tensor holds {tensor}, {self.frames_run} frames run"

    def close(self) -> None:
        del self.t
        self.queue.close()
        self.readback.close()
        self.sem.close()
        self.buf.close()


def spin_until(sem: Any, value: int) -> None:
    if sem.value >= value:
        return
    t0 = time.monotonic()
    while sem.value < value:
        if time.monotonic() - t0 > 10:
            raise RuntimeError(f"the timeline is stuck at {sem.value} below {value}")


def run_c(binary: str, a: argparse.Namespace) -> Tuple[Optional[float], str]:
    """(the C loop's per-frame median in us, or None, and its output)."""
    cmd = [binary, "--frames", str(a.frames), "--in-flight", str(a.in_flight), "--batch", str(a.batch)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    m = C_LINE.search(r.stdout)
    if r.returncode != 0 or m is None:
        return None, f"exit {r.returncode}: {r.stdout.strip()}"
    return float(m.group(1)), r.stdout


def main(argv: Optional[List[str]] = None) -> int:
    a = parse_args(argv)
    torch = _pybench.torch_or_skip(NAME)
    vkcuda, ctx = _pybench.context_or_skip(NAME)
    print(f"{NAME}: torch {torch.__version__}, vkcuda {vkcuda.version()}, {torch.cuda.get_device_name()}; "
          f"{a.frames} frames, {a.in_flight} in flight, batches of {a.batch}, {a.rounds} rounds", flush=True)
    loop = PythonLoop(torch, vkcuda, ctx)
    py_medians: List[float] = []
    c_medians: List[float] = []
    host: List[float] = []
    c_fail = ""
    for r in range(1, a.rounds + 1):
        samples, host_us = loop.run(a.frames, a.in_flight, a.batch)
        py = statistics.median(samples)
        py_medians.append(py)
        host.append(host_us)
        line = f"  round {r}: python {py:8.2f} us/frame (its host work {host_us:6.2f})"
        if a.c_binary:
            c, out = run_c(a.c_binary, a)
            if c is None:
                c_fail = out
                print(line, flush=True)
                break
            c_medians.append(c)
            line += f"   C {c:8.2f} us/frame   python / C {py / c:6.3f}"
        print(line, flush=True)
    ok, what = loop.check()
    loop.close()
    ctx.close()

    py_m = statistics.median(py_medians)
    rows: List[Tuple[str, float, str]] = [("python frame loop (vkcuda + torch)", py_m, "us per frame")]
    print(f"median over {len(py_medians)} rounds of the per-round medians:")
    print(f"  {'python frame loop (vkcuda + torch)':<40} {py_m:10.2f} us per frame")
    host_m = statistics.median(host)
    rows.append(("python host work (loop less spins)", host_m, "us per frame"))
    print(f"  {'  of which its host work (less spins)':<40} {host_m:10.2f} us per frame "
          "(where above the C figure, Python sets the pace)")
    ratio_met = True
    if c_medians:
        c_m = statistics.median(c_medians)
        ratio = py_m / c_m
        ratio_met = ratio <= TARGET
        rows += [("C frame loop (frame_loop_ref)", c_m, "us per frame"),
                 ("python / C", ratio, f"target <= {TARGET}")]
        print(f"  {'C frame loop (frame_loop_ref)':<40} {c_m:10.2f} us per frame")
        print(f"  {'python / C':<40} {ratio:10.3f}    target <= {TARGET} (issue 30): {_pybench.verdict(ratio_met)}")
    elif not a.c_binary:
        print("  (no --c-binary: the C loop did not run, no ratio)")
    if a.csv:
        _pybench.write_csv(a.csv, ("what", "value", "unit", "frames", "in_flight", "rounds"),
                           [(w, v, u, a.frames, a.in_flight, a.rounds) for w, v, u in rows])
    print(f"check: {what}")
    if c_fail:
        print(f"{NAME}: FAIL: the C loop: {c_fail}")
        return 1
    if not ok:
        print(f"{NAME}: FAIL: {what}")
        return 1
    if a.strict and not ratio_met:
        print(f"{NAME}: FAIL: python / C is over {TARGET} (--strict)")
        return 1
    print(f"{NAME}: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
