"""Folders and .zip archives (the form most exports come in): every file is read on its own and
is one source, so re-running adds nothing and an edited file adds only what changed; a folder
holding ``users.json`` and ``channels.json`` is a Slack export and is read whole. Files are read
when their suffix is one an input has (.json, .jsonl, .ndjson, .txt, .md, .markdown, .text,
.log); the others (media, web pages, documents) and the files of an export that hold no
messages (ChatGPT's ``chat.html``, ``user.json``…) are reported with the reason, as are files
that could not be parsed. Hidden files and folders (``.obsidian``, ``__MACOSX``) are not read.
A .zip inside a folder is read as a folder; one inside a .zip is reported.

Only what is inside is read, and everything not read is reported with why: a symbolic link
leading out of the folder (``d/passwd.txt -> /etc/passwd``), a linked folder (never followed),
a folder that cannot be listed, a .zip member whose name leads out of the archive (``../x``,
``/etc/x``) or that is a link, and a member that declares, or unpacks to, more than
``max_input_bytes`` or far more than a text compresses from (a zip bomb: 700 MiB from 713 KB).
A member's declared size is checked before a byte of it is unpacked, and it is unpacked in
chunks that stop at that size, so no zip takes more memory than its largest acceptable member.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

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

    sources: list[ParsedSource] = []
    skipped: list[Skipped] = []
    entries: list[Entry] = []
    for found in _entries(root, options):
        if isinstance(found, Entry):
            entries.append(found)
        else:
            skipped.append(Skipped(found.rel, found.why, found.failed))
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
    reader.note_repairs()
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


@dataclass
class NotRead:
    """An entry of the tree that is not read: ``rel`` inside it, and why (``failed``: it could
    not be read, rather than being something that is not an input)."""

    rel: str
    why: str
    failed: bool = False


# A member unpacking to more than this many times its packed size, and to more than
# BOMB_FLOOR bytes, is a zip bomb: text and JSON deflate 3 to 20 times, a log of repeated lines
# up to ~100; the bomb of the trial unpacked 1,000 times (713 KB to 700 MiB).
BOMB_RATIO = 200
BOMB_FLOOR = 16 * 2**20
CHUNK = 1 << 20


def _entries(root: Path, options: Options, prefix: str = "") -> Iterator[Entry | NotRead]:
    if root.is_file():  # a .zip
        yield from _zip_entries(root, options, prefix)
        return
    inside = os.path.realpath(root)
    problems: list[OSError] = []
    for top, dirs, files in os.walk(root, onerror=problems.append):
        for problem in problems:  # a folder os.walk could not list (reported as it is met)
            yield NotRead(_rel(root, problem.filename, prefix), f"cannot list the folder: {problem.strerror}", True)
        problems.clear()
        kept = []
        for d in sorted(dirs):
            rel = prefix + (Path(top) / d).relative_to(root).as_posix()
            if _hidden(d):
                yield NotRead(rel, "a hidden folder (not read)")
            elif os.path.islink(Path(top) / d):
                yield NotRead(
                    rel, f"a symbolic link to a folder ({os.readlink(Path(top) / d)}): links are not followed"
                )
            else:
                kept.append(d)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(top) / name
            rel = prefix + path.relative_to(root).as_posix()
            if _hidden(name):
                yield NotRead(rel, "a hidden file (not read)")
                continue
            link = path.is_symlink()
            if link:
                target = os.path.realpath(path)
                if os.path.commonpath([inside, target]) != inside:
                    yield NotRead(rel, f"a symbolic link leading out of the folder (to {target}): not followed")
                    continue
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                try:
                    yield from _zip_entries(path, options, rel + "/")
                except InputError as exc:
                    yield NotRead(rel, exc.problem, True)
                continue
            try:
                seen = path.stat()  # the file the walk saw (a link inside the folder: its target)
            except OSError as exc:
                yield NotRead(rel, f"cannot read: {exc.strerror or exc}", True)
                continue
            modified = _epoch(seen.st_mtime, options)
            # Read that file and no other: a file swapped for a link, or a link re-pointed out of
            # the folder, between this walk and the read is refused (see read_input).
            yield Entry(
                rel,
                path,
                str(path.resolve()),
                modified,
                lambda path=path, link=link, seen=(seen.st_dev, seen.st_ino): read_input(
                    path, options.max_input_bytes, follow=link, same_as=seen
                ),
            )
    for problem in problems:  # the root itself
        yield NotRead(_rel(root, problem.filename, prefix), f"cannot list the folder: {problem.strerror}", True)


def _rel(root: Path, filename: str | None, prefix: str) -> str:
    try:
        return prefix + Path(filename or root).relative_to(root).as_posix()
    except ValueError:
        return str(filename)


def _zip_entries(archive: Path, options: Options, prefix: str) -> Iterator[Entry | NotRead]:
    try:
        zf = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(archive, f"cannot open the .zip: {exc}") from exc
    hidden_reported: set[str] = set()
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", name):
            yield NotRead(prefix + name, "a .zip member whose name leads out of the archive: not read")
            continue
        if info.is_dir():
            continue
        hidden = next((i for i, p in enumerate(parts) if _hidden(p)), None)
        if hidden is not None:
            top = "/".join(parts[: hidden + 1])
            if top not in hidden_reported:
                hidden_reported.add(top)
                kind = "file" if hidden == len(parts) - 1 else "folder"
                yield NotRead(prefix + top, f"a hidden {kind} (not read)")
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            yield NotRead(prefix + name, "a symbolic link inside the .zip: not followed")
            continue
        too_big = _declared_too_big(info, options.max_input_bytes)
        if too_big:
            yield NotRead(prefix + name, too_big, True)
            continue
        y, mo, d, h, mi, s = info.date_time
        modified = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}"  # a zip keeps local time
        yield Entry(
            prefix + name,
            archive / name,
            f"{archive.resolve()}!/{name}",
            modified,
            lambda info=info: _member(zf, info, archive, options.max_input_bytes),
        )


def _declared_too_big(info: zipfile.ZipInfo, limit: int) -> str | None:
    """Why a member is refused from its declared sizes alone (before it is unpacked), or None."""
    if info.file_size > limit:
        return (
            f"declares {info.file_size:,} bytes unpacked, more than {limit:,} (the max_input_bytes setting); "
            "raise max_input_bytes"
        )
    if info.file_size > BOMB_FLOOR and info.file_size > BOMB_RATIO * max(info.compress_size, 1):
        return (
            f"a zip bomb: {info.compress_size:,} bytes declare {info.file_size:,} unpacked "
            f"(more than {BOMB_RATIO} times; text packs 3 to 20 times); not unpacked"
        )
    return None


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, limit: int) -> bytes:
    """A member's bytes, unpacked in chunks that stop at its declared size (and ``limit``):
    a member that unpacks to more than it declares is refused, not read to its end."""
    cap = min(info.file_size, limit)
    data = bytearray()
    with zf.open(info) as fh:
        while len(data) <= cap:
            chunk = fh.read(min(CHUNK, cap + 1 - len(data)))
            if not chunk:
                break
            data += chunk
    if len(data) > cap:
        raise InputError(
            archive / info.filename,
            f"unpacks to more than the {cap:,} bytes it declares (a damaged or crafted .zip)"
            if cap < limit
            else f"unpacks to more than {limit:,} bytes (the max_input_bytes setting); raise max_input_bytes",
        )
    return bytes(data)


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _uri(path: Path) -> str:
    return str(path.resolve())


def _epoch(seconds: float, options: Options) -> str | None:
    return Reader(Path("."), options).time(seconds, "modification time")
