#!/usr/bin/env python3
"""The CMAKE_ARGS that build llama.cpp (llama-cpp-python) for this machine's CPU.

    CMAKE_ARGS="$(python3 tools/cmake_args.py)" pip install '.[embed,llm,model-default]'

pip compiles llama-cpp-python on the machine that installs it, so the build may use every
instruction set this CPU has. It names them one by one (``GGML_NATIVE=OFF`` and an option per
feature read from ``/proc/cpuinfo``) instead of ``-march=native``, because ``-march=native``
also turns on AMX where the CPU reports it, and a virtual machine may report AMX that its
kernel does not let a process use: that build crashed. AMX is never turned on here.

On a CPU with AVX-512 (VNNI, BF16), llama.cpp evaluates prompts about twice as fast as with
AVX2 alone (docs/speed.md). Where the features cannot be read (x86-64 but not Linux), the
portable AVX2 build of earlier releases is printed; on other machines (ARM), ggml's own native
build (ARM has no AMX).
Python 3.8+ standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

BASE = ["-DLLAVA_BUILD=OFF"]
PORTABLE_X86 = ["-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
# ggml's option → the /proc/cpuinfo flags it needs and the compiler flags ggml then passes
# (GGML_AVX512 is -mavx512f, cd, vl, dq and bw together). In ggml's order; AMX is left out on
# purpose (see above).
OPTIONS = [
    ("GGML_SSE42", ("sse4_2",), ("-msse4.2",)),
    ("GGML_AVX", ("avx",), ("-mavx",)),
    ("GGML_AVX2", ("avx2",), ("-mavx2",)),
    ("GGML_FMA", ("fma",), ("-mfma",)),
    ("GGML_F16C", ("f16c",), ("-mf16c",)),
    ("GGML_BMI2", ("bmi2",), ("-mbmi2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",), ("-mavxvnni",)),
    (
        "GGML_AVX512",
        ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
        ("-mavx512f", "-mavx512cd", "-mavx512vl", "-mavx512dq", "-mavx512bw"),
    ),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512vbmi"), ("-mavx512vbmi",)),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512_vnni"), ("-mavx512vnni",)),
    ("GGML_AVX512_BF16", ("avx512f", "avx512_bf16"), ("-mavx512bf16",)),
]


def cpu_flags(cpuinfo: str) -> set[str]:
    """The features of the first ``flags`` line of a /proc/cpuinfo text (every core has the same)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def compiles(compiler: str | None) -> Callable[[Sequence[str]], bool]:
    """Whether ``compiler`` accepts some -m flags (an older one may not know -mavxvnni);
    without a compiler to ask, every flag is taken as accepted (the build then says)."""
    if compiler is None:
        return lambda _flags: True

    def accepts(flags: Sequence[str]) -> bool:
        try:
            done = subprocess.run(
                [compiler, *flags, "-E", "-x", "c", os.devnull], capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0

    return accepts


def args_for(flags: set[str], accepts: Callable[[Sequence[str]], bool] = lambda _flags: True) -> list[str]:
    """CMAKE_ARGS for an x86-64 CPU with ``flags``: every option it has (and the compiler
    ``accepts``) on, every other off."""
    return (
        BASE
        + ["-DGGML_NATIVE=OFF"]
        + [
            f"-D{option}={'ON' if all(f in flags for f in needs) and accepts(m) else 'OFF'}"
            for option, needs, m in OPTIONS
        ]
    )


def main() -> int:
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        print(" ".join(BASE))  # ARM and others: ggml's native default has no AMX to trip on
        return 0
    try:
        flags = cpu_flags(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        flags = set()
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    print(" ".join(args_for(flags, compiles(compiler)) if flags else BASE + PORTABLE_X86))
    return 0


if __name__ == "__main__":
    sys.exit(main())
