"""Which instruction sets the installed llama.cpp (llama-cpp-python) was built with, against the
ones this CPU has, for ``doctor``.

pip reuses a cached llama-cpp-python wheel whatever ``CMAKE_ARGS`` says, so a machine with
AVX-512 can end up with a portable AVX2 build and answer about half as fast (docs/speed.md)
without a word. llama.cpp names its build's features in its system info
(``AVX2 = 1 | AVX512 = 1 | …``: a feature it was not built with is absent or ``0``); the CPU's
are the ``flags`` of ``/proc/cpuinfo`` (Linux). The features and the flags each needs are
those of ``tools/cmake_args.py``, which builds for this CPU (a test keeps the two equal).
"""

from __future__ import annotations

import importlib.util
import platform
import re
from pathlib import Path
from typing import Any

# llama.cpp's name for a feature (ggml's option without GGML_) -> the /proc/cpuinfo flags it needs.
FEATURES: dict[str, tuple[str, ...]] = {
    "AVX": ("avx",),
    "AVX2": ("avx2",),
    "FMA": ("fma",),
    "F16C": ("f16c",),
    "BMI2": ("bmi2",),
    "AVX_VNNI": ("avx_vnni",),
    "AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "AVX512_VBMI": ("avx512f", "avx512vbmi"),
    "AVX512_VNNI": ("avx512f", "avx512_vnni"),
    "AVX512_BF16": ("avx512f", "avx512_bf16"),
}
REBUILD = (
    'CMAKE_ARGS="$(python3 tools/cmake_args.py)" pip install --no-cache-dir --force-reinstall --no-deps '
    "llama-cpp-python=={version}   (from a checkout of localmem; --no-cache-dir: pip would reuse the old wheel)"
)


def built_with(system_info: str) -> list[str]:
    """The features (of :data:`FEATURES`) a llama.cpp system info line says it was built with."""
    on = {name for name, value in re.findall(r"([A-Z0-9_]+) = (\d+)", system_info) if value != "0"}
    return [name for name in FEATURES if name in on]


def cpu_has(flags: set[str]) -> list[str]:
    """The features (of :data:`FEATURES`) a CPU with these ``/proc/cpuinfo`` flags has."""
    return [name for name, needs in FEATURES.items() if all(flag in flags for flag in needs)]


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first ``flags`` line of a /proc/cpuinfo text (every core has the same)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def compare(system_info: str | None, cpuinfo: str | None, version: str | None) -> dict[str, Any]:
    """The doctor's view: the build's features, the CPU's, what the build lacks, and how to
    rebuild when it lacks something (``status``: ok / below the CPU / unknown / not installed)."""
    if system_info is None:
        return {"status": "not installed (pip install 'localmem[llm]')"}
    built = built_with(system_info)
    report: dict[str, Any] = {"built with": built or ["none of the x86 vector extensions"]}
    flags = cpu_flags(cpuinfo) if cpuinfo else set()
    if not flags:
        report["status"] = "unknown: this CPU's features cannot be read here (no /proc/cpuinfo flags)"
        return report
    has = cpu_has(flags)
    report["this CPU has"] = has
    missing = [name for name in has if name not in built]
    if not missing:
        report["status"] = "ok: built for everything this CPU has"
        return report
    report["status"] = f"below this CPU: built without {', '.join(missing)}, which this CPU has"
    report["missing"] = missing
    report["rebuild"] = REBUILD.format(version=version or "<version>")
    return report


def system_info() -> str | None:
    """llama.cpp's system info line (loads the library, not a model), or None when
    llama-cpp-python is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    return info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)


def report() -> dict[str, Any]:
    """:func:`compare` for the installed llama-cpp-python on this machine."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {"status": f"not checked on {platform.machine()} (the check is for x86-64 vector extensions)"}
    try:
        cpuinfo: str | None = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        cpuinfo = None
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed: str | None = version("llama-cpp-python")
    except PackageNotFoundError:
        installed = None
    try:
        info = system_info()
    except Exception as exc:  # a build that does not load on this machine (ImportError, OSError, RuntimeError)
        return {"status": f"llama.cpp does not load: {exc}"}
    return compare(info, cpuinfo, installed)
