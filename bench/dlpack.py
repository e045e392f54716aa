"""What a DLPack handoff to PyTorch costs, whose each part is, and proof that it is
zero-copy.

torch.from_dlpack(x) of a CUDA producer x does, in order (torch/utils/dlpack.py):
x.__dlpack_device__(); torch.cuda.current_stream(device) and its .cuda_stream;
x.__dlpack__(stream=<that stream>, max_version=(1, 0)); torch's import of the
capsule (torch._C._from_dlpack); and when the caller drops the tensor and
from_dlpack's frame drops the capsule, the producer's deleter (called by torch)
and the producer's capsule destructor. This benchmark times each step on its own,
one after the other in every repeat, for three producers over the same kind of
memory, then the whole call, all in one run (medians of REPEATS, default 2000):

  vkcuda   a vkcuda.TensorView over a shared buffer (float32, 4096 x 4096)
  cupy     a CuPy array over the same pointer (cupy.cuda.UnownedMemory): a
           producer written in Cython, what a hand-written path costs
  torch    a torch tensor (torch -> torch: torch's own round trip)

plus the vkcuda export alone (the C call and the deleter, no capsule), the
capsule path (torch.from_dlpack(view.__dlpack__(stream=s, max_version=(1, 0)))
with the caller's stream read once: torch then asks neither the device nor the
current stream) and data_ptr() == the buffer's CUDA pointer for the vkcuda tensor. Steps that are the
producer's (device, __dlpack__, the capsule destructor) and torch's (the stream,
the import, dropping the tensor) are summed apart, so the note can say what the
library costs and what torch costs on its own. Then the target of issue 30
("Speed"): DLPack export + torch.from_dlpack <= 5 us, the whole
torch.from_dlpack(view) figure, and whether torch's own steps leave room for it.

    python3 bench/dlpack.py [--repeats N] [--csv FILE] [--strict]

Exit 0 when the tensor is zero-copy (with --strict, also the target met), 1
otherwise; 2 for bad arguments; 77 (SKIPPED) without torch or a CUDA GPU
(bench/_pybench.py).
"""

import argparse
import csv
import statistics
import sys
import time
from typing import Any, Dict, List, Tuple

import _pybench
from _pybench import median_us

NAME = "dlpack"
TARGET_US = 5.0

#: The steps of torch.from_dlpack(x), in order, and whose each is.
STEPS: List[Tuple[str, str]] = [
    ("x.__dlpack_device__()", "producer"),
    ("torch.cuda.current_stream(dev).cuda_stream", "torch"),
    ("x.__dlpack__(stream=s, max_version=(1, 0))", "producer"),
    ("torch import of the capsule", "torch"),
    ("del tensor (torch; calls the deleter)", "torch"),
    ("del capsule (the producer's destructor)", "producer"),
]


def steps_us(torch: Any, x: Any, repeats: int, warmup: int = 50) -> List[float]:
    """The median of each step of torch.from_dlpack(x) in microseconds (STEPS),
    each timed on its own in every repeat, as torch does them."""
    from torch.utils.dlpack import from_dlpack  # a capsule: torch._C._from_dlpack

    kwargs: Dict[str, Any] = {"max_version": (1, 0)}
    try:
        x.__dlpack__(stream=None, **kwargs)
    except TypeError:  # a producer without max_version: torch then asks without it
        kwargs = {}
    clock = time.perf_counter_ns
    samples: List[List[int]] = [[] for _ in STEPS]
    for i in range(warmup + repeats):
        t0 = clock()
        dev = x.__dlpack_device__()
        t1 = clock()
        s = torch.cuda.current_stream(f"cuda:{dev[1]}")
        stream = 1 if s.cuda_stream == 0 else s.cuda_stream
        t2 = clock()
        capsule = x.__dlpack__(stream=stream, **kwargs)
        t3 = clock()
        t = from_dlpack(capsule)
        t4 = clock()
        del t
        t5 = clock()
        del capsule
        t6 = clock()
        if i >= warmup:
            for k, d in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                samples[k].append(d)
    return [statistics.median(s) / 1000.0 for s in samples]


def timer_us(repeats: int) -> float:
    """What one clock read costs (each step above includes it once)."""
    clock = time.perf_counter_ns
    samples = []
    for _ in range(repeats):
        t0 = clock()
        t1 = clock()
        samples.append(t1 - t0)
    return statistics.median(samples) / 1000.0


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
        _dlpack.call_deleter(view.export(), True)

    producers: List[Tuple[str, Any]] = [("vkcuda", view)]
    try:
        import cupy

        mem = cupy.cuda.UnownedMemory(buf.cuda_pointer, 64 << 20, owner=buf)
        arr = cupy.ndarray((4096, 4096), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))
        producers.append(("cupy", arr))
    except ImportError:
        print("(no CuPy: the CuPy column is left out)")
    producers.append(("torch", t))

    n = args.repeats
    export_us = median_us(export_only, n)
    steps = {name: steps_us(torch, x, n) for name, x in producers}
    whole = {name: median_us(lambda x=x: torch.from_dlpack(x), n) for name, x in producers}
    # The capsule path: the caller knows its stream (read once) and hands torch the
    # capsule, so torch asks neither the device nor the current stream.
    cur = torch.cuda.current_stream(f"cuda:{view.__dlpack_device__()[1]}")
    stream = 1 if cur.cuda_stream == 0 else cur.cuda_stream
    capsule_us = median_us(lambda: torch.from_dlpack(view.__dlpack__(stream=stream, max_version=(1, 0))), n)
    clock_us = timer_us(n)

    names = [name for name, _ in producers]
    print(f"median of {n} repeats each, in us (each step also holds one clock read, {clock_us:.3f} us):")
    print(f"  {'step of torch.from_dlpack(x)':<46} {'whose':<9}" + "".join(f"{k:>9}" for k in names))
    for k, (step, whose) in enumerate(STEPS):
        print(f"  {step:<46} {whose:<9}" + "".join(f"{steps[m][k]:9.2f}" for m in names))
    part: Dict[str, Dict[str, float]] = {m: {"producer": 0.0, "torch": 0.0} for m in names}
    for m in names:
        for k, (_, whose) in enumerate(STEPS):
            part[m][whose] += steps[m][k]
    for whose in ("producer", "torch"):
        print(f"  {'sum of the ' + whose + ' steps':<46} {'':<9}" + "".join(f"{part[m][whose]:9.2f}" for m in names))
    print(f"  {'whole torch.from_dlpack(x)':<46} {'':<9}" + "".join(f"{whole[m]:9.2f}" for m in names))
    print(f"  {'vkcuda export alone (C call + deleter)':<46} {'producer':<9}{export_us:9.2f}")
    print(f"  {'vkcuda capsule path (see below)':<46} {'':<9}{capsule_us:9.2f}", flush=True)

    lib_us = whole["vkcuda"]
    met = lib_us <= TARGET_US
    torch_floor = part["vkcuda"]["torch"]
    print(f"vkcuda's steps {part['vkcuda']['producer']:.2f} us"
          + (f" (CuPy's {part['cupy']['producer']:.2f} us)" if "cupy" in part else "")
          + f", torch's steps {torch_floor:.2f} us; vkcuda -> torch / torch -> torch "
          f"{lib_us / whole['torch']:.2f} x", flush=True)
    print(f"DLPack export + torch.from_dlpack: {lib_us:.2f} us, target <= {TARGET_US:g} us (issue 30): "
          f"{_pybench.verdict(met)}", flush=True)
    if not met and torch_floor >= TARGET_US:
        print(f"  out of reach for any producer here: torch's own steps take {torch_floor:.2f} us", flush=True)
    elif not met:
        print(f"  torch's own steps take {torch_floor:.2f} us: the target leaves "
              f"{TARGET_US - torch_floor:.2f} us to the producer", flush=True)
    print(f"the capsule path, torch.from_dlpack(view.__dlpack__(stream=s, max_version=(1, 0))) with the "
          f"caller's stream read once: {capsule_us:.2f} us ({_pybench.verdict(capsule_us <= TARGET_US)} "
          f"on that path)", flush=True)

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["what", "median_us", "repeats"])
            w.writerow(["vkcuda export alone (C call + deleter)", f"{export_us:.3f}", n])
            for m in names:
                for k, (step, whose) in enumerate(STEPS):
                    w.writerow([f"{m}: {step} ({whose})", f"{steps[m][k]:.3f}", n])
                w.writerow([f"{m}: producer steps", f"{part[m]['producer']:.3f}", n])
                w.writerow([f"{m}: torch steps", f"{part[m]['torch']:.3f}", n])
                w.writerow([f"{m}: whole torch.from_dlpack", f"{whole[m]:.3f}", n])
            w.writerow(["vkcuda: capsule path torch.from_dlpack(view.__dlpack__(...))", f"{capsule_us:.3f}", n])
    del t, producers
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
