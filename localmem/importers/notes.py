"""Markdown and plain-text notes: a file, or every note in a folder (Obsidian vaults, journals).

A note is a message by its author: front matter's ``author`` if it has one, else the
``notes_author`` setting ("me" by default), with the role "user" when it is that setting (the
notes are the user's own). Its time is, in this order: front matter's ``date`` (or ``created``),
a date in the file name (``2024-01-12.md``, as daily notes are named: the day the note is
about, where the modification time is only when it was last touched), the file's modification
time. Front matter (``---`` YAML or ``+++`` TOML, flat ``key: value`` lines) is not part of the
text; ``raw`` keeps it, with the note's path.

A note longer than ``NOTE_SPLIT_CHARS`` (900 characters: what one vector of the embedder still
covers, see config) is split at its headings (``#`` to ``######``, outside code fences): each
section is one message, with its heading line; a heading with no text of its own joins the
next section. Each note is one conversation, named by its path without the suffix: inside its
Obsidian vault when it is in one (``journal/2024-01-12``, however the vault is ingested), else
inside the folder being ingested, else its file name. Message ids are ``note`` for a note read
whole, and the section's heading as a slug (``groceries``, ``groceries-2``, ``intro`` for
the text before the first heading) otherwise, so that an edited note changes only the ids of
the sections that changed.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import InputError
from .common import MessageIn, Probe, Reader, lines

NAME = "notes"
SUFFIXES = (".md", ".markdown", ".txt", ".text")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_FM_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*[:=]\s*(.*)$")


def probe(reader: Reader) -> Probe:
    if reader.path.suffix.lower() in SUFFIXES:
        return Probe(True, "a .md or .txt note")
    return Probe(False, "only .md and .txt files are read as notes (pass --format notes)")


def parse(text: str, reader: Reader) -> list[MessageIn]:
    meta, body, fm_lines = front_matter(text)
    conv = reader.conversation or _conversation(reader)
    author = meta.get("author")
    speaker = author if isinstance(author, str) and author.strip() else reader.options.notes_author
    sent_at = _when(meta, reader)
    if not body.strip():
        return []
    sections: list[tuple[str | None, str]] = [(None, body)]
    if len(body) > reader.options.note_split_chars:
        sections = _sections(body)
        if len(sections) > 1:
            reader.note(
                f"notes: {len(body):,} characters, over {reader.options.note_split_chars}: "
                f"split at its headings into {len(sections)} messages"
            )
    ids: dict[str, int] = {}
    messages = []
    for heading, chunk in sections:
        slug = "note" if len(sections) == 1 else _slug(heading) if heading is not None else "intro"
        ids[slug] = ids.get(slug, 0) + 1
        ext = slug if ids[slug] == 1 else f"{slug}-{ids[slug]}"
        where = f"line {fm_lines + _line_of(body, chunk)}"
        messages.append(
            MessageIn(
                conversation=conv,
                session="",
                seq=len(messages),
                external_id=ext,
                speaker=speaker.strip(),
                role="user" if speaker == reader.options.notes_author else None,
                text=reader.text(chunk.strip("\n"), where),
                sent_at=sent_at,
                raw={"path": reader.rel or reader.path.name, "front_matter": meta or None, "section": heading},
            )
        )
    return reader.unique(messages)


def front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """``(fields, the text after it, how many lines it took)``; flat ``key: value`` lines only."""
    all_lines = lines(text.lstrip("\ufeff"))
    if not all_lines or all_lines[0].strip() not in ("---", "+++"):
        return {}, text, 0
    fence = all_lines[0].strip()
    ends = ("---", "...") if fence == "---" else ("+++",)
    for end, line in enumerate(all_lines[1:200], 1):
        if line.strip() in ends:
            break
    else:
        return {}, text, 0
    meta: dict[str, Any] = {}
    for line in all_lines[1:end]:
        found = _FM_LINE.match(line)
        if found:
            key, value = found.group(1).lower(), found.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            elif value.startswith("[") and value.endswith("]"):
                value = [v.strip().strip("\"'") for v in value[1:-1].split(",") if v.strip()]
            meta[key] = value
    return meta, "\n".join(all_lines[end + 1 :]), end + 1


def _conversation(reader: Reader) -> str:
    """The note's path without its suffix: inside its Obsidian vault when it is in one (a
    folder holding ``.obsidian``), so that ingesting the vault, a folder of it or one note
    names it alike; else inside the folder being ingested; else its file name."""
    rel = reader.rel
    vault = _vault(reader.path)
    if vault is not None:
        rel = reader.path.resolve().relative_to(vault).as_posix()
    if not rel:
        return reader.path.stem or "notes"
    for suffix in SUFFIXES:
        if rel.lower().endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def _vault(path) -> Any:
    try:
        if not path.is_file():
            return None  # a .zip member, standard input
        for parent in path.resolve().parents:
            if (parent / ".obsidian").is_dir():
                return parent
    except OSError:
        return None
    return None


def _when(meta: dict[str, Any], reader: Reader) -> str | None:
    for key in ("date", "created"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            try:
                return reader.time(value, f"front matter {key}")
            except InputError:  # an unreadable date falls back, with a note
                reader.note(
                    f"notes: front matter {key} {value!r} of {reader.rel or reader.path.name} "
                    "is not a date; used the file's time"
                )
    found = _NAME_DATE.search(reader.path.stem)
    if found:
        try:
            return reader.time("-".join(found.groups()), "file name")
        except InputError:  # "2024-13-45" in a name is not a date
            pass
    return reader.modified


def _sections(body: str) -> list[tuple[str | None, str]]:
    """``(heading or None, text)`` per heading, outside code fences; a heading with no text of
    its own joins the section after it."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in lines(body):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            name, held = sections[-1]
            if any(x.strip() for x in held if not _HEADING.match(x)) or (name is None and any(x.strip() for x in held)):
                sections.append((heading.group(2), [line]))
            else:  # nothing but headings so far: this heading joins them
                sections[-1] = (name if name is not None else heading.group(2), held + [line])
            continue
        sections[-1][1].append(line)
    return [(name, "\n".join(held)) for name, held in sections if any(x.strip() for x in held)]


def _slug(heading: str) -> str:
    slug = re.sub(r"[^\w]+", "-", heading.lower()).strip("-")
    return slug[:60] or "section"


def _line_of(body: str, chunk: str) -> int:
    at = body.find(chunk)
    return body.count("\n", 0, at) + 1 if at >= 0 else 1
