"""The installed package: what pkgutil sees, the version, the licenses, the
public names."""

from __future__ import annotations

import importlib.metadata
import pkgutil

import pytest

import vkcuda


def test_library_is_not_a_module() -> None:
    names = {m.name for m in pkgutil.walk_packages(vkcuda.__path__, "vkcuda.")}
    assert names >= {"vkcuda._native", "vkcuda._types", "vkcuda._context"}
    assert not [n for n in names if "lib" in n.split(".")[-1]], names


def test_error_is_public() -> None:
    assert issubclass(vkcuda.Error, Exception) and "Error" in vkcuda.__all__


def test_distribution_metadata() -> None:
    try:
        dist = importlib.metadata.distribution("vkcuda")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("vkcuda is imported from a checkout, not installed")
    assert dist.version == vkcuda.__version__
    files = {f.name for f in dist.files or []}
    assert {"LICENSE-MIT", "LICENSE-APACHE"} <= files
    if "libvkcuda.so" in files:  # a wheel install (an editable one points at python/)
        assert vkcuda.library_path.parent.name == "lib"
