"""``python -m vkcuda doctor [--deep] [--json] [--root DIR]``: whether Vulkan-CUDA
interop will work here, each failed check with its fix (the C tool
``vkcuda_doctor``); ``--deep`` also runs the deep self-test.
Exit status 0 when interop will work, 1 when a check failed, 2 when the doctor
itself could not run or the arguments are wrong."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from ._doctor import doctor
from ._native import Error


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vkcuda", description="vkcuda: Vulkan-CUDA interop.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = commands.add_parser(
        "doctor",
        help="check whether Vulkan-CUDA interop will work here",
        description="Checks whether Vulkan-CUDA interop (vkcuda) will work here. Exit status 0: it will; "
        "1: a check failed (each says how to fix it); 2: error.",
    )
    d.add_argument("--deep", action="store_true",
                   help="also create every kind of shared resource and compare every byte written through it "
                   "both ways (seconds)")
    d.add_argument("--json", action="store_true", help="print the report as JSON (for CI systems and tickets)")
    d.add_argument("--root", metavar="DIR", help="read the container checks' files under DIR (tests)")
    args = parser.parse_args(argv)

    try:
        report = doctor(root=args.root, deep=args.deep)
    except Error as e:
        print(f"vkcuda doctor: {e}", file=sys.stderr)
        return 2
    try:
        print(report.json if args.json else report, flush=True)
    except BrokenPipeError:  # `python -m vkcuda doctor | head`: nothing left to flush at exit
        sys.stdout = None  # type: ignore[assignment]
    return 0 if report.ready else 1


if __name__ == "__main__":
    sys.exit(main())
