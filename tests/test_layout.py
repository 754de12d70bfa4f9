"""The layout's promises: experiments use only the public API, and importing localmem is cheap."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import localmem

PACKAGE = Path(localmem.__file__).parent
# The public API (see localmem/__init__.py): what evaluation and benchmark code may import.
PUBLIC = {
    "localmem",
    "localmem.config",
    "localmem.errors",
    "localmem.files",
    "localmem.models.protocols",
    "localmem.text",
    "localmem.text.files",
    "localmem.text.questions",
    "localmem.text.times",
    "localmem.text.words",
}


def _imports(path: Path) -> set[str]:
    """The localmem modules ``path`` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])  # localmem.x, localmem_bench
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "localmem" or module.startswith("localmem."):
                found.add(module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("localmem")}
    return found


# A floor measures one component below the facade on purpose: the ingest floor is the embedder alone
# over exactly the texts ingest embeds (parsed by the importer, built as ingest builds them).
FLOORS = {"ingest_pace.py": {"localmem.importers", "localmem.models", "localmem.models.embedding"}}
# The server's own timings are measured on its app, with its limits, in this process, without the CLI around it.
FLOORS["bench_serve.py"] = {
    "localmem.serve.app",
    "localmem.serve.calls",
    "localmem.serve.limits",
    "localmem.serve.security",
}
# The benchmarks' commands are a plugin of the CLI, built on its surface for plugins (CommandGroup,
# State, json_option, print_json, progress) and printing values as the core commands do.
FLOORS["cli.py"] = {"localmem.cli", "localmem.text.labels"}
BENCH = PACKAGE.parent / "localmem_bench"


def test_evaluation_and_benchmarks_use_only_the_public_api():
    paths = sorted(BENCH.glob("*.py"))
    assert len(paths) > 5
    for path in paths:
        allowed = PUBLIC | FLOORS.get(path.name, set())
        private = {m for m in _imports(path) if m not in allowed and not m.startswith("localmem_bench")}
        assert not private, f"{path.name} imports {sorted(private)}"


@pytest.mark.slow
def test_importing_localmem_loads_no_heavy_module():
    code = (
        "import sys, json, localmem; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'apsw', 'onnxruntime', 'llama_cpp', 'tokenizers', 'click') or m.startswith('localmem.'))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert loaded == ["localmem.errors", "localmem.redact"]  # errors hide passwords (redact: re and logging only)


def test_each_public_name_is_the_class_its_module_defines():
    """A lazy name loads from the module ``_LAZY`` names (a stale entry would be another class or
    an AttributeError), every exported error is a LocalmemError, and ``dir`` lists them all."""
    for name in localmem.__all__:
        value = getattr(localmem, name)
        if name == "__version__":
            assert re.fullmatch(r"\d+\.\d+\.\d+\S*", value), value
            continue
        assert isinstance(value, type) and value.__name__ == name, (name, value)
        lazy = localmem._LAZY.get(name)
        assert value.__module__ == (f"localmem.{lazy}" if lazy else "localmem.errors"), (name, value.__module__)
        if lazy is None:
            assert issubclass(value, localmem.LocalmemError), name
    assert set(localmem.__all__) <= set(dir(localmem))
