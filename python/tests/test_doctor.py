"""The doctor from Python: vkcuda.doctor() and `python -m vkcuda doctor`. Here (CPU
machine: lavapipe, no NVIDIA driver) the doctor must say that interop will not
work, why, and exit with status 1, as the C tool does."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vkcuda

import conftest

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> "subprocess.CompletedProcess[str]":
    # A fresh process: the fake libcuda the tests load in this one is not there.
    return subprocess.run([sys.executable, "-m", "vkcuda", *args], capture_output=True, text=True, timeout=120)


def test_report_object() -> None:
    report = vkcuda.doctor()
    assert isinstance(report, vkcuda.DoctorReport) and report.checks
    assert all(isinstance(c, vkcuda.DoctorCheck) and c.name and isinstance(c.status, vkcuda.DoctorStatus)
               for c in report.checks)
    assert report.ready == (not report.failed)
    assert all(c.fix for c in report.failed)
    data = report.to_dict()
    assert data["ready"] == report.ready and data["vkcuda_version"] == vkcuda.__version__
    assert [c["name"] for c in data["checks"]] == [c.name for c in report.checks]
    assert data["summary"]["fail"] == len(report.failed) and data["summary"]["warn"] == len(report.warnings)
    assert len(data["devices"]) == len(report.devices)
    assert str(report).startswith(f"vkcuda doctor (vkcuda {vkcuda.__version__})")
    assert "ready=" in repr(report)
    if conftest.MODE == "none":
        assert not report.ready and "cuda.driver" in {c.name for c in report.failed}


def test_root_option(tmp_path: Path) -> None:
    """The container checks read their files under root: an empty directory is no
    container."""
    names = {c.name: c for c in vkcuda.doctor(root=str(tmp_path)).checks}
    assert "container" in names and not any(n.startswith("container.") for n in names)


@pytest.mark.skipif(conftest.MODE == "real", reason="an NVIDIA driver is here: interop may work")
def test_cli_text_without_cuda() -> None:
    r = cli("doctor")
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^  \[FAIL\] cuda\.driver: .*\n         fix: ", r.stdout, re.M), r.stdout
    assert r.stdout.rstrip().endswith("interop will NOT work here until the failed checks are fixed")


@pytest.mark.skipif(conftest.MODE == "real", reason="an NVIDIA driver is here: interop may work")
def test_cli_json_without_cuda() -> None:
    r = cli("doctor", "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["ready"] is False
    assert {"name": "cuda.driver", "status": "fail"}.items() <= next(
        c for c in data["checks"] if c["name"] == "cuda.driver").items()


def test_cli_exit_status_follows_report() -> None:
    r = cli("doctor", "--json")
    assert r.returncode == (0 if json.loads(r.stdout)["ready"] else 1)


def test_cli_usage() -> None:
    assert cli("doctor", "--bogus").returncode == 2
    assert cli().returncode == 2
    help_ = cli("doctor", "--help")
    assert help_.returncode == 0 and "--json" in help_.stdout


def test_text_is_the_c_tools(tmp_path: Path) -> None:
    """`python -m vkcuda doctor` prints what tools/vkcuda_doctor.c prints."""
    cc = shutil.which("cc")
    if not cc or not vkcuda.library_path.is_file():
        pytest.skip("no C compiler, or the library is not a file to link with")
    exe = tmp_path / "vkcuda_doctor"
    subprocess.run([cc, "-std=c11", *conftest.c_include_flags(), "-o", str(exe), str(REPO / "tools" / "vkcuda_doctor.c"),
                    str(vkcuda.library_path)], check=True)
    # LD_PRELOAD: the loaded library's soname satisfies the tool's NEEDED entry.
    env = dict(os.environ, LD_PRELOAD=str(vkcuda.library_path))
    c = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    py = cli("doctor")
    assert c.returncode == py.returncode

    def same(text: str) -> str:  # what differs between two processes
        return re.sub(r"\d+ open now", "N open now", text)

    assert same(py.stdout) == same(c.stdout)


def test_deep() -> None:
    """vkcuda.doctor(deep=True): one deep.* check per resource, each with its time,
    and deep.total; here (no NVIDIA driver) the Vulkan-only part runs."""
    report = vkcuda.doctor(deep=True)
    deep = {c.name: c for c in report.checks if c.name.startswith("deep.")}
    assert "deep.total" in deep and "deep.buffer.vulkan" in deep and "deep.image.R8G8B8A8_UNORM.2D" in deep
    assert all(re.search(r" \(\d+\.\d ms\)$", c.seen) for c in deep.values()), deep
    assert deep["deep.buffer.vulkan"].status is vkcuda.DoctorStatus.PASS, deep["deep.buffer.vulkan"]
    if conftest.MODE != "real":
        assert deep["deep.cuda"].status is vkcuda.DoctorStatus.WARN
        assert deep["deep.cuda"].seen.startswith("skipped: the CUDA part (")
    if conftest.MODE == "real":
        assert all(c.status is vkcuda.DoctorStatus.PASS for c in deep.values()), [
            (c.name, c.seen) for c in deep.values() if c.status is not vkcuda.DoctorStatus.PASS]
    assert not [c for c in deep.values() if c.status is vkcuda.DoctorStatus.FAIL]


def test_cli_deep() -> None:
    r = cli("doctor", "--deep", "--json")
    names = [c["name"] for c in json.loads(r.stdout)["checks"]]
    assert "deep.total" in names and names[-1] == "deep.total", names
    help_ = cli("doctor", "--help")
    assert "--deep" in help_.stdout
