"""Input formats: parse a file, a folder, a .zip or standard input into messages, validating
everything before anything is stored. :func:`parse` is the one entry point.

Formats (``config.FORMATS``), detected from the content (and a few suffixes) unless forced:
``locomo``, ``jsonl``, ``chat`` and ``text`` (``importers.generic``), ``chatgpt``, ``claude``,
``whatsapp``, ``slack``, ``discord`` and ``notes`` (one module each in ``importers``). A folder
or a .zip is read file by file (``importers.tree``): every file that parses is one source,
the others are reported with the reason. Every problem raises :class:`InputError` naming the
file and the line or item; an input no format fits raises :class:`UnknownFormatError` listing
what each format looked for and how close the input came. Only regular files are read, up to
``max_input_bytes``; JSON nests at most ``MAX_JSON_DEPTH`` levels; lone surrogates in JSON
strings are repaired with a note (``Reader.loads``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import FORMATS
from ..errors import InputError, UnknownFormatError
from ..text.files import decode, read_input, read_stream
from . import chatgpt, claude, discord, generic, notes, whatsapp
from .common import Groups, MessageIn, Options, Probe, Reader, shape

__all__ = ["MessageIn", "Options", "ParsedInput", "ParsedSource", "Skipped", "parse", "read_input"]

STDIN = "-"
JSON_FORMATS = ("locomo", "chat", "chatgpt", "claude", "discord")


@dataclass
class ParsedSource:
    """One input stored as one source: a file, a .zip member, a Slack export or standard input."""

    uri: str
    sha256: str
    format: str
    groups: Groups = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    name: str = ""  # as the user would point at it: its path inside the folder, or the file's name

    @property
    def message_count(self) -> int:
        return sum(len(msgs) for _, msgs in self.groups)


@dataclass
class Skipped:
    """A file of a folder that was not read, and why; ``failed``: it looked like an input but
    could not be read (the error), rather than being something else (media, a web page)."""

    path: str
    why: str
    failed: bool = False


@dataclass
class ParsedInput:
    """What :func:`parse` read: its sources, and for a folder the files it did not read.

    A group's namespace is ``None`` when the caller's namespace applies. ``format`` is the
    format of a single input, or ``"folder"`` / ``"zip"``.
    """

    path: str
    format: str
    sources: list[ParsedSource] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def groups(self) -> Groups:
        return [group for source in self.sources for group in source.groups]

    @property
    def message_count(self) -> int:
        return sum(s.message_count for s in self.sources)

    @property
    def notes(self) -> list[str]:
        return [note for s in self.sources for note in s.notes]


def parse(
    path: str | Path,
    data: bytes | None = None,
    fmt: str | None = None,
    conversation: str | None = None,
    max_chars: int | None = None,
    *,
    options: Options | None = None,
) -> ParsedInput:
    """Parse ``data`` (the bytes of ``path``) in format ``fmt`` or the detected one.

    Without ``data``, ``path`` is read: a file, a folder or a .zip (every file in it, see
    ``importers.tree``), or ``"-"`` for standard input. ``conversation`` names the conversation
    of inputs that carry none.
    """
    options = options or Options()
    if max_chars is not None:
        options = replace(options, max_chars=max_chars)
    if fmt is not None and fmt not in FORMATS:
        raise UnknownFormatError(path, f"unknown format '{fmt}'", hint=f"use one of {', '.join(FORMATS)}")
    path = Path(path)
    modified = None
    if data is None:
        if str(path) == STDIN:
            reader = Reader(Path("stdin"), options, conversation, modified=_now(options))
            source = parse_source(reader, read_stream(sys.stdin.buffer, "stdin", options.max_input_bytes), fmt, "stdin")
            return ParsedInput("stdin", source.format, [source])
        from . import tree

        if tree.is_tree(path):
            return tree.parse_tree(path, fmt, conversation, options)
        data = read_input(path, options.max_input_bytes)
        modified = _modified(path, options)
    reader = Reader(path, options, conversation, modified=modified)
    source = parse_source(reader, data, fmt, _uri(path))
    return ParsedInput(_uri(path), source.format, [source])


def parse_source(reader: Reader, data: bytes, fmt: str | None, uri: str) -> ParsedSource:
    """One file's bytes as one source (``fmt`` forced or detected)."""
    text = decode(reader.path, data)
    if not text.strip():
        raise InputError(reader.path, "the file is empty")
    if fmt == "slack":
        raise InputError(
            reader.path,
            "a Slack export is read whole: pass its folder or .zip "
            "(users.json, channels.json and a folder per channel)",
        )
    if fmt is None:
        fmt, doc = detect(reader, text)
    else:
        doc = load_json(reader, text) if fmt in JSON_FORMATS else None
    groups = _read(fmt, doc, text, reader)
    reader.note_repairs()
    source = ParsedSource(
        uri,
        hashlib.sha256(data).hexdigest(),
        fmt,
        [(ns, msgs) for ns, msgs in groups if msgs],
        reader.notes,
        reader.rel or reader.path.name,
    )
    if source.message_count == 0:
        raise InputError(reader.path, f"no messages found (read as {fmt})")
    return source


def _read(fmt: str, doc: Any, text: str, reader: Reader) -> Groups:
    if fmt == "locomo":
        return generic.locomo(doc, reader)
    readers = {
        "chat": lambda: generic.chat(doc, reader),
        "jsonl": lambda: generic.jsonl(text, reader),
        "text": lambda: generic.transcript(text, reader),
        "chatgpt": lambda: chatgpt.parse(doc, reader),
        "claude": lambda: claude.parse(doc, reader),
        "discord": lambda: discord.parse(doc, reader),
        "whatsapp": lambda: whatsapp.parse(text, reader),
        "notes": lambda: notes.parse(text, reader),
    }
    return [(None, readers[fmt]())]


# -- detection ------------------------------------------------------------------------------


def detect(reader: Reader, text: str) -> tuple[str, Any]:
    """``(format, the parsed JSON or None)``; raises :class:`UnknownFormatError` listing what
    was tried."""
    nul = text.find("\x00", 0, 8192)
    if nul >= 0:
        raise UnknownFormatError(
            reader.path, f"unrecognised format: binary data (a NUL byte at offset {nul}), not a chat export or notes"
        )
    head = text.lstrip()[:1]
    suffix = reader.path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl", None
    tried: list[tuple[str, Probe]] = []
    if head in ("[", "{"):
        try:
            doc = reader.loads(text)
        except json.JSONDecodeError as exc:
            if head == "{" and "\n" in text.strip():
                return "jsonl", None  # one object per line; jsonl() reports the bad line
            if suffix != ".json":  # e.g. an iOS WhatsApp chat: "[12/01/2024, 19:02:11] Sam: hi"
                found, tried = _text_format(reader, text)
                if found:
                    return found, None
            raise _json_error(reader, exc) from exc
        return _classify(reader, doc), doc
    if suffix == ".json":
        raise reader.fail("not JSON (the file does not start with '[' or '{')")
    found, tried = _text_format(reader, text)
    if found:
        return found, None
    raise UnknownFormatError(
        reader.path,
        "unrecognised format; tried " + "; ".join(f"{name}: {p.why}" for name, p in tried),
        hint=f"pass --format ({', '.join(FORMATS)})",
    )


def _text_format(reader: Reader, text: str) -> tuple[str | None, list[tuple[str, Probe]]]:
    tried = [("whatsapp", whatsapp.probe(text)), ("text", generic.probe_text(text)), ("notes", notes.probe(reader))]
    return next((name for name, p in tried if p.fits), None), tried


def _classify(reader: Reader, doc: Any) -> str:
    if isinstance(doc, list) and not doc:
        raise reader.fail("the JSON list is empty")
    tried = [
        ("locomo", generic.probe_locomo(doc)),
        ("chatgpt", chatgpt.probe(doc)),
        ("claude", claude.probe(doc)),
        ("discord", discord.probe(doc)),
        ("chat", generic.probe_chat(doc)),
        ("jsonl", generic.probe_object(doc)),
    ]
    found = next((name for name, p in tried if p.fits), None)
    if found:
        return found
    slack = Probe(False, "an export is read whole, from its folder or .zip")
    raise UnknownFormatError(
        reader.path,
        f"JSON of an unknown shape ({shape(doc)}); tried "
        + "; ".join(f"{name}: {p.why}" for name, p in [*tried, ("slack", slack)]),
        hint="pass --format to force one",
    )


def load_json(reader: Reader, text: str) -> Any:
    try:
        return reader.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(reader, exc) from exc


def _json_error(reader: Reader, exc: json.JSONDecodeError) -> InputError:
    # A string still open at the end of the file is reported where it starts.
    truncated = exc.pos >= len(exc.doc.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
    hint = " (the file looks truncated)" if truncated else ""
    return reader.fail(f"invalid JSON: {exc.msg}{hint}", where=f"line {exc.lineno} col {exc.colno}")


def rename(parsed: ParsedInput, name: str) -> None:
    """Name ``parsed`` and its sources after ``name`` instead of the path they were read from
    (a .zip's members keep their place inside it): what a copy of the user's file is stored
    under, so that its source says what the user gave, not where the copy was."""
    base = parsed.path
    parsed.path = name
    for source in parsed.sources:
        if source.uri == base or source.uri.startswith(base + "!") or source.uri.startswith(base + "/"):
            source.uri = name + source.uri[len(base) :]


# -- where an input is and when it was written ---------------------------------------------


def _uri(path: Path) -> str:
    return str(path.resolve())


def _modified(path: Path, options: Options) -> str | None:
    try:
        return reader_time(path.stat().st_mtime, options)
    except OSError:
        return None


def _now(options: Options) -> str | None:
    import time

    return reader_time(time.time(), options)


def reader_time(epoch: float, options: Options) -> str | None:
    """An epoch time (a file's modification time) as ISO text in the configured zone."""
    return Reader(Path("."), options).time(epoch, "modification time")
