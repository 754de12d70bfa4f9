"""`doctor` compares the CPU features llama.cpp was built with to the CPU's, and says how to
rebuild when the build is below them (pip reuses an old portable wheel without a word); it also
shows the config file's path and the disk the models take."""

from __future__ import annotations

import importlib.util
import json
import platform

import pytest

from localmem.cli import cli
from localmem.models.backends import llama_build
from tests.helpers import REPO, runner

_spec = importlib.util.spec_from_file_location("cmake_args", REPO / "tools" / "cmake_args.py")
assert _spec is not None and _spec.loader is not None
cmake_args = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cmake_args)

# What llama-cpp-python 0.3.x prints: a portable AVX2 wheel, and one built for an AVX-512 CPU.
PORTABLE = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
NATIVE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
AVX512_CPU = (
    "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl "
    "avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16 amx_tile\n"
)
AVX2_CPU = "flags\t: fpu sse4_2 avx avx2 fma f16c bmi2\n"


def test_the_features_are_those_cmake_args_builds():
    assert {f"GGML_{name}": needs for name, needs in llama_build.FEATURES.items()} == {
        option: needs for option, needs, _ in cmake_args.OPTIONS if option != "GGML_SSE42"
    }


def test_a_portable_build_on_an_avx512_cpu_says_so_and_how_to_rebuild():
    report = llama_build.compare(PORTABLE, AVX512_CPU, "0.3.36")
    assert report["built with"] == ["AVX", "AVX2", "FMA", "F16C"]
    assert "AVX512" in report["this CPU has"] and "AVX512" in report["missing"]
    assert report["status"].startswith("below this CPU: built without BMI2, AVX_VNNI, AVX512")
    assert 'CMAKE_ARGS="$(python3 tools/cmake_args.py)"' in report["rebuild"]
    assert "--no-cache-dir --force-reinstall" in report["rebuild"] and "llama-cpp-python==0.3.36" in report["rebuild"]


def test_a_build_for_this_cpu_is_ok():
    assert llama_build.compare(NATIVE, AVX512_CPU, "0.3.36")["status"].startswith("ok")
    assert llama_build.compare(NATIVE, AVX2_CPU, "0.3.36")["status"].startswith("ok")  # more than the CPU: fine
    assert "rebuild" not in llama_build.compare(PORTABLE, AVX2_CPU.replace(" bmi2", ""), None)


def test_unknown_cpu_and_missing_library():
    assert llama_build.compare(PORTABLE, None, "0.3.36")["status"].startswith("unknown")
    assert llama_build.compare(None, AVX512_CPU, None)["status"].startswith("not installed")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 only")
def test_doctor_shows_config_file_llama_cpp_and_models_disk(tmp_path, isolated_home):
    (isolated_home).mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('namespace = "me"\n', encoding="utf-8")
    result = runner().invoke(cli, ["--db", str(tmp_path / "none.db"), "doctor"])
    assert result.exit_code == 0, result.output
    assert f"config file: {isolated_home / 'config.toml'} (sets namespace)" in result.output
    assert "llama.cpp and this CPU: " in result.output
    assert "models on disk: " in result.output
    data = json.loads(runner().invoke(cli, ["--json", "--db", str(tmp_path / "none.db"), "doctor"]).output)
    assert data["config_file"] == {
        "path": str(isolated_home / "config.toml"),
        "exists": True,
        "settings": ["namespace"],
    }
    assert "status" in data["llama_cpp_cpu"]
    assert data["models_disk"]["total"] == sum(
        row["packages"] + row.get("assembled", 0) for row in data["models_disk"]["models"].values()
    )
