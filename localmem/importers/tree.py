"""Folders and .zip archives (the form most exports come in): every file is read on its own and
is one source, so re-running adds nothing and an edited file adds only what changed; a folder
holding ``users.json`` and ``channels.json`` is a Slack export and is read whole. Files are read
when their suffix is one an input has (.json, .jsonl, .ndjson, .txt, .md, .markdown, .text,
.log); the others (media, web pages, documents) and the files of an export that hold no
messages (ChatGPT's ``chat.html``, ``user.json``…) are reported with the reason, as are files
that could not be parsed. Hidden files and folders (``.obsidian``, ``__MACOSX``) are not read.
A .zip inside a folder is read as a folder; one inside a .zip is reported.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from ..errors import InputError, UnknownFormatError
from ..text.files import read_input
from . import slack
from .common import Options, Reader

READ_SUFFIXES = (".json", ".jsonl", ".ndjson", ".txt", ".md", ".markdown", ".text", ".log")
_MEDIA = {
    ".jpg",
    ".jpeg",
    ".png",
    ".gif",
    ".webp",
    ".heic",
    ".bmp",
    ".svg",
    ".mp4",
    ".mov",
    ".3gp",
    ".webm",
    ".opus",
    ".ogg",
    ".m4a",
    ".mp3",
    ".aac",
    ".wav",
    ".vcf",
}
_KINDS = {
    ".html": "a web page",
    ".htm": "a web page",
    ".pdf": "a document",
    ".docx": "a document",
    ".doc": "a document",
    ".csv": "a table",
    ".xlsx": "a table",
    ".zip": "a .zip inside a .zip, or one that cannot be opened",
}
# Files of known exports that hold no messages of their own.
COMPANIONS = {
    "chat.html": "ChatGPT's web view of conversations.json (read from there)",
    "user.json": "account details, no messages",
    "users.json": "account details, no messages",
    "message_feedback.json": "ChatGPT's feedback on answers, no messages",
    "model_comparisons.json": "ChatGPT's compared answers, not on any conversation's current branch",
    "shared_conversations.json": "links to shared ChatGPT conversations, no messages",
    "projects.json": "Claude projects, no messages",
}


@dataclass
class Entry:
    """A file of the tree: ``rel`` inside it, ``path`` as errors name it, ``uri`` as sources
    record it, its modification time, and how to read it."""

    rel: str
    path: Path
    uri: str
    modified: str | None
    read: Callable[[], bytes]


def is_tree(path: Path) -> bool:
    return path.is_dir() or (path.suffix.lower() == ".zip" and path.is_file())


def parse_tree(root: Path, fmt: str | None, conversation: str | None, options: Options):
    from .formats import ParsedInput, ParsedSource, Skipped, parse_source

    entries = list(_entries(root, options))
    sources: list[ParsedSource] = []
    skipped: list[Skipped] = []
    names_by_dir: dict[str, set[str]] = {}
    for e in entries:
        names_by_dir.setdefault(str(PurePosixPath(e.rel).parent), set()).add(PurePosixPath(e.rel).name)
    slack_roots = sorted(d for d, names in names_by_dir.items() if slack.is_export(names)) if fmt is None else []
    if fmt == "slack":
        slack_roots = ["."]
    consumed: set[str] = set()
    for base in slack_roots:
        inside = {
            e.rel if base == "." else e.rel[len(base) + 1 :]: e
            for e in entries
            if base == "." or e.rel.startswith(base + "/")
        }
        consumed |= {e.rel for e in inside.values()}
        name = root.name if base == "." else base
        try:
            source = _slack(root if base == "." else root / base, inside, name, conversation, options)
        except InputError as exc:
            if fmt == "slack":
                raise
            skipped.append(Skipped(name, (f"{exc.where}: " if exc.where else "") + exc.problem, failed=True))
            continue
        if source is None:
            skipped.append(Skipped(name, "a Slack export without messages"))
        else:
            sources.append(source)
    for e in entries:
        if e.rel in consumed:
            continue
        why = _not_an_input(e.rel)
        if why:
            skipped.append(Skipped(e.rel, why))
            continue
        reader = Reader(e.path, options, conversation, rel=e.rel, modified=e.modified)
        try:
            sources.append(parse_source(reader, e.read(), fmt, e.uri))
        except UnknownFormatError as exc:
            skipped.append(Skipped(e.rel, exc.problem))
        except InputError as exc:
            where = f"{exc.where}: " if exc.where else ""
            skipped.append(Skipped(e.rel, where + exc.problem, failed=True))
        except (OSError, zipfile.BadZipFile, RuntimeError) as exc:  # unreadable, encrypted member
            skipped.append(Skipped(e.rel, f"cannot read: {exc}", failed=True))
    if not sources:
        reasons = "; ".join(f"{s.path}: {s.why}" for s in skipped[:5]) or "it holds no files"
        more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        raise InputError(root, f"nothing to ingest: no file was recognised ({reasons}{more})")
    if conversation and len(sources) > 1:
        raise InputError(
            root,
            f"--conversation names one conversation, but this holds {len(sources)} "
            "inputs (each names its own); leave --conversation out",
        )
    kind = "zip" if root.is_file() else "folder"
    return ParsedInput(_uri(root), kind, sources, skipped)


def _slack(where: Path, inside: dict[str, Entry], name: str, conversation: str | None, options: Options):
    """One Slack export (``inside``: its files by path inside it) as one source, or ``None``."""
    from .formats import ParsedSource

    if "users.json" not in inside:
        raise InputError(where, "not a Slack export: no users.json")
    try:
        files = {rel: e.read() for rel, e in inside.items() if rel.endswith(".json")}
    except (OSError, zipfile.BadZipFile, RuntimeError) as exc:
        raise InputError(where, f"cannot read the Slack export: {exc}") from exc
    digest = hashlib.sha256()  # the export's files and their contents, in order
    for rel in sorted(files):
        digest.update(f"{rel}\0{hashlib.sha256(files[rel]).hexdigest()}\n".encode())
    reader = Reader(where, options, conversation)
    messages = slack.parse(files, reader)
    if not messages:
        return None
    uri = inside["users.json"].uri.rsplit("/users.json", 1)[0].removesuffix("!")
    return ParsedSource(uri, digest.hexdigest(), "slack", [(None, messages)], reader.notes, name)


def _not_an_input(rel: str) -> str | None:
    name = PurePosixPath(rel).name
    suffix = PurePosixPath(name).suffix.lower()
    if name.lower() in COMPANIONS:
        return COMPANIONS[name.lower()]
    if suffix in READ_SUFFIXES:
        return None
    if suffix in _MEDIA:
        return f"media ({suffix})"
    return f"{_KINDS.get(suffix, 'not a supported input')} ({suffix or 'no suffix'})"


def _entries(root: Path, options: Options, prefix: str = ""):
    if root.is_file():  # a .zip
        yield from _zip_entries(root, options, prefix)
        return
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        for name in sorted(files):
            if _hidden(name):
                continue
            path = Path(top) / name
            rel = prefix + path.relative_to(root).as_posix()
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                yield from _zip_entries(path, options, rel + "/")
                continue
            try:
                modified = _epoch(path.stat().st_mtime, options)
            except OSError:
                modified = None
            yield Entry(
                rel, path, str(path.resolve()), modified, lambda path=path: read_input(path, options.max_input_bytes)
            )


def _zip_entries(archive: Path, options: Options, prefix: str):
    try:
        zf = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(archive, f"cannot open the .zip: {exc}") from exc
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        parts = PurePosixPath(info.filename).parts
        if info.is_dir() or any(_hidden(p) for p in parts):
            continue
        y, mo, d, h, mi, s = info.date_time
        modified = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}"  # a zip keeps local time
        yield Entry(
            prefix + info.filename,
            archive / info.filename,
            f"{archive.resolve()}!/{info.filename}",
            modified,
            lambda info=info: _member(zf, info, archive, options.max_input_bytes),
        )


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, limit: int) -> bytes:
    """A member's bytes, at most ``limit`` of them however small it claims to be."""
    with zf.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            archive / info.filename,
            f"unpacks to more than {limit:,} bytes (the max_input_bytes setting); raise max_input_bytes",
        )
    return data


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _uri(path: Path) -> str:
    return str(path.resolve())


def _epoch(seconds: float, options: Options) -> str | None:
    return Reader(Path("."), options).time(seconds, "modification time")
