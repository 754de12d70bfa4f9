"""tools/cmake_args.py: the llama.cpp build options for this machine's CPU (never AMX)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from tests.helpers import REPO

SCRIPT = REPO / "tools" / "cmake_args.py"
_spec = importlib.util.spec_from_file_location("cmake_args", SCRIPT)
assert _spec is not None and _spec.loader is not None
cmake_args = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cmake_args)

AVX512_VM = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\n"
    "flags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl avx512dq avx512bw "
    "avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16\n"
    "processor\t: 1\nflags\t\t: fpu sse4_2 avx avx2\n"
)
AVX2_LAPTOP = "flags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2\n"
OLD_CPU = "flags\t\t: fpu sse4_2 avx\n"


def options(cpuinfo: str) -> dict[str, str]:
    out = {}
    for arg in cmake_args.args_for(cmake_args.cpu_flags(cpuinfo)):
        name, _, value = arg.removeprefix("-D").partition("=")
        out[name] = value
    return out


def test_every_feature_the_cpu_has_is_on_and_amx_never_is():
    got = options(AVX512_VM)
    assert got["GGML_NATIVE"] == "OFF" and got["LLAVA_BUILD"] == "OFF"
    on = {name for name, value in got.items() if value == "ON"}
    assert on == {
        "GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2", "GGML_AVX_VNNI",
        "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16",
    }  # fmt: skip
    assert not any("AMX" in name for name in got)


def test_a_cpu_without_avx512_gets_avx2_and_an_old_one_only_what_it_has():
    laptop = options(AVX2_LAPTOP)
    assert laptop["GGML_AVX2"] == "ON" and laptop["GGML_FMA"] == "ON"
    assert laptop["GGML_AVX512"] == "OFF" and laptop["GGML_AVX512_VNNI"] == "OFF" and laptop["GGML_AVX_VNNI"] == "OFF"
    old = options(OLD_CPU)
    assert old["GGML_AVX"] == "ON" and old["GGML_AVX2"] == "OFF" and old["GGML_FMA"] == "OFF"


def test_avx512_needs_all_five_of_its_parts():
    partial = "flags\t\t: avx avx2 fma f16c avx512f avx512cd avx512vl\n"  # no dq, bw
    assert options(partial)["GGML_AVX512"] == "OFF"


def test_the_script_prints_one_line_of_options_for_this_machine():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True)
    line = done.stdout.strip()
    assert "\n" not in line and line.startswith("-DLLAVA_BUILD=OFF")
    assert "AMX" not in line and all(arg.startswith("-D") for arg in line.split())


def test_an_option_the_compiler_does_not_know_stays_off():
    def old_compiler(flags):
        return "-mavxvnni" not in flags and "-mavx512bf16" not in flags

    got = {
        a.split("=")[0][2:]: a.split("=")[1] for a in cmake_args.args_for(cmake_args.cpu_flags(AVX512_VM), old_compiler)
    }
    assert got["GGML_AVX_VNNI"] == "OFF" and got["GGML_AVX512_BF16"] == "OFF"
    assert got["GGML_AVX512"] == "ON" and got["GGML_AVX512_VNNI"] == "ON"


def test_the_compiler_is_asked_for_real():
    accepts = cmake_args.compiles(sys.executable)  # not a C compiler: it refuses the flags
    assert accepts(["-mavx2"]) is False
    assert cmake_args.compiles(None)(["-mavx2"]) is True
