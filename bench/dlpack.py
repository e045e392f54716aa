"""What a DLPack handoff to PyTorch costs, and proof that it is zero-copy.

Median over REPEATS (default 2000) of, in one run:
  vkcuda export        view.export() + its deleter (the C call alone)
  vkcuda -> torch      torch.from_dlpack(view): export, capsule, import
  raw: cupy -> torch   torch.from_dlpack(cupy array over the same pointer
                       through cupy.cuda.UnownedMemory): the hand-written path
  raw: torch -> torch  torch.from_dlpack(a torch tensor): torch's own round trip
and data_ptr() == the buffer's CUDA pointer for the vkcuda tensor. Then the
target of issue 30 ("Speed"): DLPack export + torch.from_dlpack <= 5 us, the
"vkcuda -> torch.from_dlpack" figure, with the raw torch -> torch round trip of
the same run beside it.

    python3 bench/dlpack.py [--repeats N] [--csv FILE] [--strict]

Exit 0 when the tensor is zero-copy (with --strict, also the target met), 1
otherwise; 77 (SKIPPED) without torch or a CUDA GPU (bench/_pybench.py).
"""

import argparse
import sys

import _pybench
from _pybench import median_us

NAME = "dlpack"
TARGET_US = 5.0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=2000)
    p.add_argument("--csv")
    p.add_argument("--strict", action="store_true", help="exit 1 when export + from_dlpack is over 5 us")
    args = p.parse_args()
    if args.repeats < 1000:
        print("--repeats must be at least 1000")
        return 2

    torch = _pybench.torch_or_skip(NAME)
    vkcuda, ctx = _pybench.context_or_skip(NAME)
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
    lib_us, raw_us = rows[1][1], rows[-1][1]
    met = lib_us <= TARGET_US
    print(f"  {'vkcuda -> torch / torch -> torch':<46} {lib_us / raw_us:8.2f} x   (raw: torch's own round trip)")
    print(f"DLPack export + torch.from_dlpack: {lib_us:.2f} us, target <= {TARGET_US:g} us (issue 30): "
          f"{_pybench.verdict(met)}", flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("what,median_us,repeats\n")
            for name, us in rows:
                f.write(f"{name},{us:.3f},{args.repeats}\n")
    del t
    buf.close()
    ctx.close()
    if not zero_copy:
        print("FAIL: the tensor is a copy")
        return 1
    if args.strict and not met:
        print(f"FAIL: export + from_dlpack is over {TARGET_US:g} us (--strict)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
