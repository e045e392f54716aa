"""Builds the `vkcuda` Python package: python/vkcuda plus libvkcuda.so from this
crate, through setuptools-rust (pyproject.toml holds the metadata).

The package has no Python extension module: it loads the C library with ctypes.
So the cdylib goes into the package as a plain data file, vkcuda/lib/libvkcuda.so
(a directory without __init__.py, so pkgutil lists no module for it), and the
wheel is tagged py3-none-<platform>: one wheel for every Python 3. maturin was
tried first; its modes without PyO3 (cffi, uniffi, bin) each generate their own
bindings or ship executables, none packages a bare cdylib.

Only the cdylib is built (`cargo rustc --lib --crate-type cdylib`), stripped;
CARGO_TARGET_DIR, CARGO (e.g. cargo-zigbuild) and CARGO_BUILD_TARGET are honoured,
`pip -v` shows cargo's output. The version is the C library's, capi/Cargo.toml's
(the crate vkcuda-c; the root Cargo.toml versions the Rust library).
"""

import os
import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustExtension, Strip
from setuptools_rust.build import build_rust

HERE = Path(__file__).resolve().parent


def cargo_version() -> str:
    """`version` of capi/Cargo.toml's [package] table: the C library's version (the
    one place it is written), which the package carries."""
    text = (HERE / "capi" / "Cargo.toml").read_text(encoding="utf-8")
    package = re.search(r"^\[package\]\s*$(.*?)(?=^\[)", text, re.M | re.S)
    version = package and re.search(r'^version\s*=\s*"([^"]+)"', package.group(1), re.M)
    if not version:
        raise SystemExit("vkcuda: no version in the [package] table of capi/Cargo.toml")
    return version.group(1)


class BuildRust(build_rust):
    """Puts the cdylib at vkcuda/lib/libvkcuda.so, not at an extension module's name."""

    def run(self) -> None:
        cargo = os.environ.get("CARGO", "cargo")
        if not shutil.which(cargo):
            raise SystemExit(
                f"vkcuda: building libvkcuda.so needs Rust's cargo, and '{cargo}' is not on the PATH: "
                "install Rust (https://rustup.rs), or install a prebuilt vkcuda wheel"
            )
        super().run()

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        build_ext = self.get_finalized_command("build_ext")
        return os.path.join(os.path.dirname(build_ext.get_ext_fullpath(target_fname)), "libvkcuda.so")


class BdistWheel(bdist_wheel):
    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(
    version=cargo_version(),
    rust_extensions=[
        RustExtension(
            "vkcuda.lib.libvkcuda",
            path="capi/Cargo.toml",  # the C door, crate vkcuda-c (libvkcuda_c.so)
            cargo_manifest_args=["--locked"],  # the Cargo.lock the sdist ships
            binding=Binding.NoBinding,
            strip=Strip.All,
            rustc_flags=["-Cstrip=symbols"],  # the exports stay in .dynsym
            py_limited_api=False,
        )
    ],
    cmdclass={"build_rust": BuildRust, "bdist_wheel": BdistWheel},
    # Not setuptools' build/: that is the CMake build directory here.
    options={"build": {"build_base": "target/setuptools"}},
    zip_safe=False,
)
