"""What a DLPack handoff to PyTorch costs, and proof that it is zero-copy.

Median over REPEATS (default 2000) of, in one run:
  vkcuda export        view.export() + its deleter (the C call alone)
  vkcuda -> torch      torch.from_dlpack(view): export, capsule, import
  raw: cupy -> torch   torch.from_dlpack(cupy array over the same pointer
                       through cupy.cuda.UnownedMemory): the hand-written path
  raw: torch -> torch  torch.from_dlpack(a torch tensor): torch's own round trip
and data_ptr() == the buffer's CUDA pointer for the vkcuda tensor.

    python3 bench/dlpack.py [--repeats N] [--csv FILE]
"""

import argparse
import statistics
import sys
import time

import torch

import vkcuda


def median_us(fn, repeats: int) -> float:
    for _ in range(50):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000.0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=2000)
    p.add_argument("--csv")
    args = p.parse_args()
    if args.repeats < 1000:
        print("--repeats must be at least 1000")
        return 2

    ctx = vkcuda.Context.standalone()
    buf = ctx.buffer(64 << 20)
    view = buf.view("float32", (4096, 4096))
    t = torch.from_dlpack(view)
    zero_copy = t.data_ptr() == buf.cuda_pointer
    print(f"zero copy: torch data_ptr() {t.data_ptr():#x} == buffer cuda_pointer {buf.cuda_pointer:#x}: {zero_copy}",
          flush=True)

    from vkcuda import _dlpack

    def export_only() -> None:
        ptr = view.export()
        _dlpack.DLManagedTensorVersioned.from_address(ptr).deleter(ptr)

    rows = [("vkcuda export (C call + deleter)", median_us(export_only, args.repeats)),
            ("vkcuda -> torch.from_dlpack", median_us(lambda: torch.from_dlpack(view), args.repeats))]
    try:
        import cupy

        mem = cupy.cuda.UnownedMemory(buf.cuda_pointer, 64 << 20, owner=buf)
        arr = cupy.ndarray((4096, 4096), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
        rows.append(("raw: cupy UnownedMemory -> torch.from_dlpack",
                     median_us(lambda: torch.from_dlpack(arr), args.repeats)))
    except ImportError:
        print("(no CuPy: the CuPy baseline is left out)")
    rows.append(("raw: torch tensor -> torch.from_dlpack", median_us(lambda: torch.from_dlpack(t), args.repeats)))

    print(f"median of {args.repeats} repeats each:")
    for name, us in rows:
        print(f"  {name:<46} {us:8.2f} us", flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("what,median_us,repeats\n")
            for name, us in rows:
                f.write(f"{name},{us:.3f},{args.repeats}\n")
    del t
    buf.close()
    ctx.close()
    print("PASS" if zero_copy else "FAIL: the tensor is a copy")
    return 0 if zero_copy else 1


if __name__ == "__main__":
    sys.exit(main())
