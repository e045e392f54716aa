"""The doctor: whether Vulkan-CUDA interop will work on this machine, and if not,
why and what to do (``vkcuda_doctor_run`` and its report getters, the checks the
C tool ``vkcuda_doctor`` prints)."""

from __future__ import annotations

import ctypes
import enum
import json
from ctypes import POINTER, c_char_p, c_int32, c_uint32, c_void_p
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ._native import check, declare, lib, version
from ._types import (
    DOCTOR_RUN_DEEP_BIT,
    DOCTOR_STATUS_FAIL,
    DOCTOR_STATUS_PASS,
    DOCTOR_STATUS_WARN,
    DoctorDevicePair,
    DoctorOptions,
    DoctorSummary,
    Uuid,
)
from ._types import DoctorCheck as _DoctorCheck

__all__ = ["doctor", "DoctorReport", "DoctorCheck", "DevicePair", "DoctorStatus"]

_P = c_void_p
_signatures = {
    "vkcuda_doctor_run": (c_int32, [POINTER(DoctorOptions), POINTER(_P)]),
    "vkcuda_doctor_report_get_summary": (c_int32, [_P, POINTER(DoctorSummary)]),
    "vkcuda_doctor_report_get_check": (c_int32, [_P, c_uint32, POINTER(_DoctorCheck)]),
    "vkcuda_doctor_report_get_device_pair": (c_int32, [_P, c_uint32, POINTER(DoctorDevicePair)]),
    "vkcuda_doctor_report_get_json": (c_int32, [_P, POINTER(c_char_p)]),
    "vkcuda_doctor_report_destroy": (None, [_P]),
}
declare(_signatures)


class DoctorStatus(enum.Enum):
    """How a check came out: ``PASS``; ``WARN`` (worth knowing, interop can still
    work); ``FAIL`` (interop will not work until it is fixed)."""

    PASS = DOCTOR_STATUS_PASS
    WARN = DOCTOR_STATUS_WARN
    FAIL = DOCTOR_STATUS_FAIL


@dataclass(frozen=True)
class DoctorCheck:
    """One check: ``name`` ("cuda.driver", "vulkan.nvidia_icd",
    "vulkan_device[0].timeline_export", ...), its ``status``, what the doctor saw
    (``seen``) and the fix in one sentence (``fix``, "" when it passed)."""

    name: str
    status: DoctorStatus
    seen: str
    fix: str


@dataclass(frozen=True)
class DevicePair:
    """A row of the pairing table: a Vulkan device and the CUDA device with the same
    UUID; a side that is absent is None (its name "")."""

    vulkan_index: Optional[int]
    vulkan_device_type: str  # "cpu", "integrated", "discrete", "virtual", "other"; "" without one
    vulkan_uuid: Optional[str]
    vulkan_name: str
    cuda_ordinal: Optional[int]
    cuda_uuid: Optional[str]
    cuda_name: str
    ready: bool  # the Vulkan device has a CUDA twin and everything interop needs


@dataclass(frozen=True)
class DoctorReport:
    """What :func:`doctor` found. ``ready`` is True when no check failed: interop
    will work here. ``str(report)`` is the C tool's text; ``json`` its ``--json``."""

    ready: bool
    checks: Tuple[DoctorCheck, ...]
    devices: Tuple[DevicePair, ...]
    json: str

    @property
    def failed(self) -> List[DoctorCheck]:
        return [c for c in self.checks if c.status is DoctorStatus.FAIL]

    @property
    def warnings(self) -> List[DoctorCheck]:
        return [c for c in self.checks if c.status is DoctorStatus.WARN]

    def to_dict(self) -> Dict[str, Any]:
        """The JSON report as Python objects (members ``vkcuda_version``, ``ready``,
        ``summary``, ``checks``, ``devices``)."""
        result: Dict[str, Any] = json.loads(self.json)
        return result

    def __str__(self) -> str:
        lines = [f"vkcuda doctor (vkcuda {version()})", "", "Vulkan devices and their CUDA twins (same UUID):"]
        if not self.devices:
            lines.append("  (no Vulkan or CUDA device seen)")
        for p in self.devices:
            if p.vulkan_index is None:
                lines.append(f"  Vulkan -                                  <-> CUDA {p.cuda_ordinal} '{p.cuda_name}' "
                             f"{p.cuda_uuid}: no Vulkan device has this UUID")
            elif p.cuda_ordinal is None:
                lines.append(f"  Vulkan {p.vulkan_index} '{p.vulkan_name}' ({p.vulkan_device_type}) {p.vulkan_uuid} "
                             "<-> no CUDA device")
            else:
                state = ": ready for interop" if p.ready else ": lacks something (see its checks)"
                lines.append(f"  Vulkan {p.vulkan_index} '{p.vulkan_name}' ({p.vulkan_device_type}) {p.vulkan_uuid} "
                             f"<-> CUDA {p.cuda_ordinal} '{p.cuda_name}'{state}")
        lines += ["", "Checks:"]
        for c in self.checks:
            lines.append(f"  [{c.status.name}] {c.name}: {c.seen}")
            if c.fix:
                lines.append(f"         fix: {c.fix}")
        verdict = ("interop will work here" if self.ready
                   else "interop will NOT work here until the failed checks are fixed")
        passed = sum(c.status is DoctorStatus.PASS for c in self.checks)
        lines += ["", f"{passed} passed, {len(self.warnings)} warnings, {len(self.failed)} failed: {verdict}"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<DoctorReport ready={self.ready} checks={len(self.checks)} "
                f"failed={[c.name for c in self.failed]}>")


_TYPES = {1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}


def _text(b: Optional[bytes]) -> str:
    return (b or b"").decode("utf-8", "replace")


def _uuid(u: Uuid) -> str:
    h = bytes(u).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def doctor(root: Optional[str] = None, deep: bool = False) -> DoctorReport:
    """Runs every check of the doctor (the Vulkan loader and ICDs, NVIDIA's ICD, the
    CUDA driver and its version, every Vulkan device against every CUDA device by
    UUID, what each device supports, the NVIDIA container toolkit's setup inside a
    container, the open-file limit) and returns the report. ``root``: the directory
    the container checks read their files under (for tests), default "/".
    ``deep=True`` also runs the deep self-test (``VKCUDA_DOCTOR_RUN_DEEP_BIT``,
    seconds): every kind of shared resource made on this machine's GPU, a ramp,
    constant tiles and random bytes written through each both ways and compared
    byte for byte, one ``deep.*`` check per resource (its time at the end of
    ``seen``) and ``deep.total``; without CUDA the Vulkan-only part runs and
    ``deep.cuda`` says why the CUDA part was skipped.
    Raises :class:`vkcuda.Error` only when the doctor itself cannot run."""
    options = DoctorOptions(flags=DOCTOR_RUN_DEEP_BIT if deep else 0,
                            root=root.encode() if root is not None else None)
    handle = c_void_p()
    check(lib.vkcuda_doctor_run(ctypes.byref(options), ctypes.byref(handle)))
    try:
        summary = DoctorSummary()
        check(lib.vkcuda_doctor_report_get_summary(handle, ctypes.byref(summary)))
        checks = []
        for i in range(summary.check_count):
            c = _DoctorCheck()
            check(lib.vkcuda_doctor_report_get_check(handle, i, ctypes.byref(c)))
            checks.append(DoctorCheck(_text(c.name), DoctorStatus(c.status), _text(c.seen), _text(c.fix)))
        devices = []
        for i in range(summary.device_pair_count):
            p = DoctorDevicePair()
            check(lib.vkcuda_doctor_report_get_device_pair(handle, i, ctypes.byref(p)))
            has_vk, has_cuda = p.vulkan_index >= 0, p.cuda_ordinal >= 0
            devices.append(DevicePair(
                vulkan_index=p.vulkan_index if has_vk else None,
                vulkan_device_type=_TYPES.get(p.vulkan_device_type, "other") if has_vk else "",
                vulkan_uuid=_uuid(p.vulkan_uuid) if has_vk else None,
                vulkan_name=_text(p.vulkan_name),
                cuda_ordinal=p.cuda_ordinal if has_cuda else None,
                cuda_uuid=_uuid(p.cuda_uuid) if has_cuda else None,
                cuda_name=_text(p.cuda_name),
                ready=bool(p.ready),
            ))
        text = c_char_p()
        check(lib.vkcuda_doctor_report_get_json(handle, ctypes.byref(text)))
        return DoctorReport(bool(summary.ready), tuple(checks), tuple(devices), _text(text.value))
    finally:
        lib.vkcuda_doctor_report_destroy(handle)
