"""The ctypes declarations against include/vkcuda.h: a C program compiled against
the header prints every struct's size, alignment and field offsets, and the value
of every constant Python declares; each must equal what ctypes says. Every struct
of the package's modules (and the tests' own copies) is checked, found by walking
the package, so a struct added anywhere is checked without editing this file (the
Vulkan structs queue.py copies too, against vulkan_core.h); every library function
the package declares is checked against its prototype (argument count, widths,
pointer or not, the struct pointed to). An ABI change can then not silently corrupt Python
callers: this test fails and names the field."""

from __future__ import annotations

import ctypes
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Tuple, Type

import pytest

import vkcuda
from vkcuda import _native

import conftest

REPO = Path(__file__).resolve().parents[2]
HEADER = REPO / "include" / "vkcuda.h"

#: Structs whose C name does not follow from the class name (see _c_name).
C_NAMES: Dict[str, str] = {
    "vkcuda.queue._TimelineSubmitInfo": "VkTimelineSemaphoreSubmitInfo",
}
#: Modules whose structs are not in vkcuda.h: the DLPack ABI (dlpack.h's), cuda.h's CUDA_MEMCPY3D.
NOT_IN_HEADER = {"vkcuda._dlpack", "vkcuda._cuda"}
#: Modules whose integer constants are the header's VKCUDA_<name>.
CONSTANT_MODULES = ("vkcuda._native", "vkcuda._types")


def _modules() -> List[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(vkcuda.__path__, "vkcuda.") if m.name != "vkcuda.__main__"]
    return [importlib.import_module(n) for n in names] + [conftest]


def _c_name(cls: type) -> str:
    """``_c_name_`` if the class has one, else C_NAMES, else: Vk<Name> for queue.py's
    Vulkan structs, vkcuda_<snake_case name> for the rest."""
    explicit = getattr(cls, "_c_name_", None) or C_NAMES.get(f"{cls.__module__}.{cls.__name__}")
    if explicit:
        return str(explicit)
    name = cls.__name__.lstrip("_")
    if cls.__module__ == "vkcuda.queue":
        return "Vk" + name
    return "vkcuda_" + re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def python_structs() -> Dict[str, Type[ctypes.Structure]]:
    """Every ctypes struct the package (and the tests) declare for the C ABI."""
    found: Dict[str, Type[ctypes.Structure]] = {}
    for module in _modules():
        if module.__name__ in NOT_IN_HEADER:
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ctypes.Structure) and cls is not ctypes.Structure and cls.__module__ == module.__name__:
                found[_c_name(cls)] = cls
    return found


def python_constants() -> Dict[str, int]:
    """The integer constants (SUCCESS, ERROR_*, *_BIT, ALLOCATOR_*, DOCTOR_STATUS_*,
    ...) of CONSTANT_MODULES: each is VKCUDA_<name> in the header."""
    return {
        "VKCUDA_" + name: value
        for module in _modules() if module.__name__ in CONSTANT_MODULES
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }


def python_functions() -> Dict[str, Tuple[object, object]]:
    """(restype, argtypes) of every library function the package has touched, once
    all its modules are imported (ctypes caches each on the CDLL object)."""
    _modules()
    return {
        name: (f.restype, f.argtypes)
        for name, f in vars(_native.lib).items()
        if name.startswith("vkcuda_") and isinstance(f, ctypes._CFuncPtr)  # type: ignore[attr-defined]
    }


def c_layout(structs: Dict[str, Type[ctypes.Structure]], constants: Dict[str, int], tmp: Path) -> List[str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) to read the header's layout with")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "vkcuda.h"', "int main(void) {"]
    for c, cls in structs.items():
        lines.append(f'    printf("S {c} %zu %zu\\n", sizeof(struct {c}), _Alignof(struct {c}));')
        for field in cls._fields_:
            f = field[0]
            lines.append(
                f'    printf("F {c}.{f} %zu %zu\\n", offsetof(struct {c}, {f}), sizeof(((struct {c} *)0)->{f}));'
            )
    for name in constants:
        lines.append(f'    printf("C {name} %lld\\n", (long long)({name}));')
    lines += ["    return 0;", "}"]
    src = tmp / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp / "abi"
    # /usr/include has vulkan/ (vulkan_core.h, which the header includes).
    build = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", *conftest.c_include_flags(), "-o", str(exe), str(src)],
                           capture_output=True, text=True)
    assert build.returncode == 0, (
        "the C program built from the Python declarations does not compile against vkcuda.h "
        f"(a struct, field or constant Python declares is not in the header):\n{build.stderr}"
    )
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Dict[str, Type[ctypes.Structure]], Dict[str, int], List[str]]:
    structs, constants = python_structs(), python_constants()
    return structs, constants, c_layout(structs, constants, tmp_path_factory.mktemp("abi"))


def test_declarations_found() -> None:
    structs, constants = python_structs(), python_constants()
    assert len(structs) >= 11 and "vkcuda_buffer_info" in structs
    assert constants["VKCUDA_SUCCESS"] == 0 and "VKCUDA_ERROR_INVALID_ARGUMENT" in constants


def test_structs_match_header(layout: Tuple[Dict[str, Type[ctypes.Structure]], Dict[str, int], List[str]]) -> None:
    structs, _, lines = layout
    wrong = []
    for line in lines:
        kind, name, *values = line.split()
        if kind == "S":
            cls = structs[name]
            size, align = map(int, values)
            if (ctypes.sizeof(cls), ctypes.alignment(cls)) != (size, align):
                wrong.append(f"{name}: C size {size} align {align}, "
                             f"Python {cls.__name__} size {ctypes.sizeof(cls)} align {ctypes.alignment(cls)}")
        elif kind == "F":
            struct, field = name.split(".")
            desc = getattr(structs[struct], field)
            offset, size = map(int, values)
            if (desc.offset, desc.size) != (offset, size):
                wrong.append(f"{name}: C offset {offset} size {size}, Python offset {desc.offset} size {desc.size}")
    assert not wrong, "ctypes structs differ from vkcuda.h:\n  " + "\n  ".join(wrong)


def test_constants_match_header(layout: Tuple[Dict[str, Type[ctypes.Structure]], Dict[str, int], List[str]]) -> None:
    _, constants, lines = layout
    wrong = [
        f"{name}: C {value}, Python {constants[name]}"
        for kind, name, value in (line.split() for line in lines if line.startswith("C "))
        if int(value) != constants[name]
    ]
    assert not wrong, "constants differ from vkcuda.h:\n  " + "\n  ".join(wrong)


# --- function signatures -------------------------------------------------------

def _prototypes() -> Dict[str, Tuple[str, List[str]]]:
    """name -> (return type, parameter types) of every vkcuda_* prototype."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    protos = {}
    for m in re.finditer(r"([A-Za-z_][\w \*]*?)\b(vkcuda_\w+)\s*\(([^;{]*?)\)\s*;", text):
        ret = re.sub(r"\b(VKCUDA_API|VKCUDA_NODISCARD)\b", "", m.group(1)).strip()
        params = [p.strip() for p in m.group(3).split(",") if p.strip() and p.strip() != "void"]
        # Drop the parameter's name: "const struct vkcuda_buffer *buffer" -> "const struct vkcuda_buffer *".
        protos[m.group(2)] = (ret, [re.sub(r"\b\w+$", "", p).strip() for p in params])
    return protos


def _c_sizes(types: List[str], tmp: Path) -> Dict[str, int]:
    """sizeof each C type, as the compiler says."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (cc) to read the header's types with")
    lines = ["#include <stdio.h>", '#include "vkcuda.h"', "int main(void) {"]
    lines += [f'    printf("%zu\\n", sizeof({t}));' for t in types] + ["    return 0;", "}"]
    (tmp / "types.c").write_text("\n".join(lines) + "\n")
    subprocess.run([cc, "-std=c11", *conftest.c_include_flags(), "-o", str(tmp / "types"), str(tmp / "types.c")],
                   check=True)
    out = subprocess.run([str(tmp / "types")], capture_output=True, text=True, check=True).stdout.split()
    return dict(zip(types, map(int, out)))


def _mismatch(c_type: str, py: object, sizes: Dict[str, int]) -> bool:
    """Whether a ctypes argument/result type differs from a C type: in size (a
    pointer or a handle may be c_void_p, c_char_p, a POINTER or a 64-bit integer),
    or, for a pointer to a vkcuda struct, in the struct pointed to."""
    if ctypes.sizeof(py) != sizes[c_type]:  # type: ignore[arg-type]
        return True
    target = getattr(py, "_type_", None)
    pointee = re.fullmatch(r"(?:const\s+)?struct\s+(\w+)\s*\*", c_type)
    if isinstance(target, type) and issubclass(target, ctypes.Structure) and pointee:
        return _c_name(target) != pointee.group(1)
    return False


def test_signatures_match_header(tmp_path: Path) -> None:
    protos = _prototypes()
    functions = python_functions()
    assert len(functions) >= 25
    wrong = []
    checked = {}
    for name, (res, args) in sorted(functions.items()):
        if args is None:
            wrong.append(f"{name}: called without argtypes")
        elif name not in protos:
            wrong.append(f"{name}: not in vkcuda.h")
        elif len(protos[name][1]) != len(args):
            wrong.append(f"{name}: C takes {len(protos[name][1])} arguments, Python declares {len(args)}")
        elif (res is None) != (protos[name][0] == "void"):
            wrong.append(f"{name}: C returns {protos[name][0]}, Python {res}")
        else:
            checked[name] = (res, args)
    sizes = _c_sizes(sorted({t for n in checked for t in [protos[n][0], *protos[n][1]] if t != "void"}), tmp_path)
    for name, (res, args) in checked.items():
        c_ret, c_params = protos[name]
        if res is not None and _mismatch(c_ret, res, sizes):
            wrong.append(f"{name}: C returns {c_ret}, Python {res}")
        for i, (c_t, py) in enumerate(zip(c_params, args)):
            if _mismatch(c_t, py, sizes):
                wrong.append(f"{name}: argument {i} is {c_t} in C, {py.__name__} in Python")
    assert not wrong, "ctypes signatures differ from vkcuda.h:\n  " + "\n  ".join(wrong)


def test_address_prototypes_follow_the_declarations() -> None:
    """The hot path's prototypes (``_native.by_address``) are derived from the
    declarations checked above: same result, same arity, pointers as c_void_p."""
    from vkcuda import _buffer

    declared = _native.lib.vkcuda_buffer_export_dlpack
    fast = _buffer._export_dlpack
    assert fast.restype is declared.restype and len(fast.argtypes) == len(declared.argtypes) == 3
    assert all(a is ctypes.c_void_p for a in fast.argtypes)
    assert [a.__name__ for a in declared.argtypes] == ["c_void_p", "LP_DlpackInfo", "LP_c_void_p"]
