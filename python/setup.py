"""Builds the vkcuda wheel: the pure-Python package plus libvkcuda.so.

The library comes from, in order: $VKCUDA_LIBRARY (a path to libvkcuda.so); a
`cargo build --release` of the checkout this directory is in (when cargo is on the
PATH); target/release or target/debug of that checkout. The wheel is tagged
py3-none-<platform>: any Python 3 on this platform (it holds a native library but
no extension module).
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def find_library() -> Path:
    env = os.environ.get("VKCUDA_LIBRARY")
    if env:
        path = Path(env)
        if not path.is_file():
            raise SystemExit(f"vkcuda: VKCUDA_LIBRARY={env} is not a file")
        return path
    if (REPO / "Cargo.toml").is_file() and shutil.which("cargo"):
        print("vkcuda: cargo build --release (set VKCUDA_LIBRARY to use a built libvkcuda.so)")
        subprocess.run(["cargo", "build", "--release", "--lib"], cwd=REPO, check=True)
    for profile in ("release", "debug"):
        path = REPO / "target" / profile / "libvkcuda.so"
        if path.is_file():
            return path
    raise SystemExit(
        "vkcuda: no libvkcuda.so: install Rust (cargo) to build it, or set VKCUDA_LIBRARY to a built one"
    )


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        lib = find_library()
        dest = Path(self.build_lib) / "vkcuda" / "libvkcuda.so"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib, dest)
        print(f"vkcuda: packaged {lib}")


class BdistWheel(bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class NativeDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel}, distclass=NativeDistribution)
