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

import platform
import sys
from pathlib import Path

BASE = ["-DLLAVA_BUILD=OFF"]
PORTABLE_X86 = ["-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
# ggml's option → the /proc/cpuinfo flags it needs (GGML_AVX512 compiles with -mavx512f, cd,
# vl, dq and bw together). In ggml's order; AMX is left out on purpose (see above).
OPTIONS = [
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512vbmi")),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512_vnni")),
    ("GGML_AVX512_BF16", ("avx512f", "avx512_bf16")),
]


def cpu_flags(cpuinfo: str) -> set[str]:
    """The features of the first ``flags`` line of a /proc/cpuinfo text (every core has the same)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def args_for(flags: set[str]) -> list[str]:
    """CMAKE_ARGS for an x86-64 CPU with ``flags``: every option it has on, every other off."""
    return (
        BASE
        + ["-DGGML_NATIVE=OFF"]
        + [f"-D{option}={'ON' if all(f in flags for f in needs) else 'OFF'}" for option, needs in OPTIONS]
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
    print(" ".join(args_for(flags) if flags else BASE + PORTABLE_X86))
    return 0


if __name__ == "__main__":
    sys.exit(main())
