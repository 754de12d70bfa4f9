"""What every importer shares: the message it produces, the settings it reads with, and one
reader per input that checks text and times and turns problems into errors naming the place."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import DEFAULTS, MAX_JSON_DEPTH, NOTE_SPLIT_CHARS
from ..errors import InputError
from ..text.files import SURROGATE_ESCAPE, each_string, without_nuls, without_surrogates
from ..text.times import parse_timestamp


@dataclass
class MessageIn:
    """One message as parsed, before it is stored."""

    conversation: str
    session: str
    seq: int
    external_id: str
    speaker: str
    text: str
    role: str | None = None
    sent_at: str | None = None
    attachments: list[dict[str, Any]] | None = None
    raw: Any = None


# The fields of a MessageIn that NUL characters are taken out of (all but its position).
_MESSAGE_FIELDS = ("conversation", "session", "external_id", "speaker", "text", "role", "sent_at", "attachments", "raw")

Groups = list[tuple[str | None, list[MessageIn]]]  # (namespace or None: the caller's, messages)


@dataclass(frozen=True)
class Options:
    """The settings an input is read with (from the config; see ``Config``)."""

    max_chars: int = DEFAULTS.max_message_chars
    timezone: str | None = DEFAULTS.timezone  # None: times kept with the offset they came with
    notes_author: str = DEFAULTS.notes_author
    date_order: str = DEFAULTS.date_order
    note_split_chars: int = NOTE_SPLIT_CHARS
    max_input_bytes: int = DEFAULTS.max_input_bytes

    @classmethod
    def from_config(cls, config: Any, *, date_order: str | None = None) -> "Options":
        """The options a :class:`~localmem.config.Config` sets (its time zone checked)."""
        from ..config import DATE_ORDERS, check_choice
        from ..errors import ConfigError
        from ..text.times import zone

        if date_order is not None:
            check_choice("--date-order", date_order, DATE_ORDERS)
        try:
            zone(config.timezone)
        except ValueError as exc:
            raise ConfigError(f"setting timezone: {exc}") from exc
        return cls(
            max_chars=config.max_message_chars,
            timezone=config.timezone,
            notes_author=config.notes_author,
            date_order=date_order or config.date_order,
            max_input_bytes=config.max_input_bytes,
        )


@dataclass
class Reader:
    """Reads one input: ``path`` names it in errors (a zip member is ``archive.zip/member``),
    ``rel`` is its path inside the folder or archive being walked (``None`` for a file given
    alone), ``conversation`` the caller's name for inputs that carry none, ``modified`` its
    modification time (ISO) when known. ``notes`` collects what the report should say;
    ``repaired`` counts the lone surrogates replaced (:meth:`loads`), ``repaired_at`` where;
    ``nuls`` the NUL characters taken out of messages (:meth:`without_nuls`), ``nuls_at`` where."""

    path: Path
    options: Options = field(default_factory=Options)
    conversation: str | None = None
    rel: str | None = None
    modified: str | None = None
    notes: list[str] = field(default_factory=list)
    repaired: int = 0
    repaired_at: list[str] = field(default_factory=list)
    nuls: int = 0
    nuls_at: list[str] = field(default_factory=list)

    @property
    def default_conversation(self) -> str:
        """The caller's name, else the file's name without its suffix (a file name that is not
        UTF-8 reaches Python with surrogates: they are replaced, so it can be stored)."""
        return without_surrogates(self.conversation or self.path.stem or "default")

    def loads(self, text: str, where: str | None = None) -> Any:
        """``json.loads(text)`` (raising its ``JSONDecodeError``), refused when it nests more than
        ``MAX_JSON_DEPTH`` levels, and with lone surrogates in its strings replaced by U+FFFD.

        A lone surrogate is half of a UTF-16 pair ("\\ud83d", half an emoji, as exports that cut
        text by UTF-16 units write it): it cannot be stored, embedded or even encoded as UTF-8,
        so it is repaired (and reported) rather than the whole input refused."""
        try:
            value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
        except RecursionError:
            raise self.too_deep(where) from None
        except _NotJSON as exc:  # Python reads NaN and Infinity; JSON (and SQLite's json_valid) does not
            raise self.fail(f"invalid JSON: {exc} is not a JSON value (a number must be finite)", where) from None
        if deeper_than(value, MAX_JSON_DEPTH):
            raise self.too_deep(where)
        if SURROGATE_ESCAPE.search(text):
            value, count = _without_surrogates(value)
            if count:
                self.repaired += count
                if where:
                    self.repaired_at.append(where)
        return value

    def too_deep(self, where: str | None = None) -> InputError:
        return self.fail(
            f"JSON nested more than {MAX_JSON_DEPTH} levels deep (chat exports nest a few "
            "levels); is this the right file?",
            where,
        )

    def note_repairs(self) -> None:
        """Say in the notes what :meth:`loads` and :meth:`text` repaired."""
        if self.nuls:
            at = ", ".join(self.nuls_at[:3]) + (" and more" if len(self.nuls_at) > 3 else "")
            self.note(
                f"{self.nuls} NUL character(s) (U+0000: a byte no chat app types; text cut by a C "
                f"program ends at one) removed from {at}"
            )
        if self.repaired:
            at = ", ".join(self.repaired_at[:3]) + (" and more" if len(self.repaired_at) > 3 else "")
            self.note(
                f"{self.repaired} lone surrogate(s) (half of an emoji, as a cut UTF-16 pair) "
                f"replaced by U+FFFD{' in ' + at if at else ''}"
            )

    def fail(self, problem: str, where: str | None = None, *, hint: str | None = None) -> InputError:
        return InputError(self.path, problem, where, hint=hint)

    def text(self, value: Any, where: str) -> str:
        """Message text, checked: a string (OpenAI-style content parts are joined) within the
        length limit."""
        if isinstance(value, list):
            parts = [p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text"]
            value = "\n".join(parts)
        if not isinstance(value, str):
            raise self.fail(f"message text must be a string, got {shape(value)}", where)
        if len(value) > self.options.max_chars:
            raise self.fail(
                f"message text has {len(value):,} characters, over the limit of {self.options.max_chars:,}; "
                "split it, or raise max_message_chars in the config",
                where,
            )
        return value

    def time(self, value: Any, where: str) -> str | None:
        """ISO text for a time; one that names its zone is moved to the configured zone."""
        try:
            return parse_timestamp(value, self.options.timezone)
        except (ValueError, OverflowError, OSError) as exc:
            raise self.fail(f"cannot read the time {value!r} ({exc})", where) from exc

    def unique(self, messages: list[MessageIn]) -> list[MessageIn]:
        """``messages``, after checking that no id appears twice in a conversation; a message
        that is only media (no text) says what it was (:func:`media_note`).

        Every importer ends here, so this is where NUL characters leave every field of every
        message (:meth:`without_nuls`), on either engine, before anything is embedded."""
        seen: dict[tuple[str, str], int] = {}
        emptied = {id(m) for m in messages if self.without_nuls(m) and not m.text.strip() and not m.attachments}
        messages = [m for m in messages if id(m) not in emptied]  # its text was only NULs
        for i, m in enumerate(messages):
            if m.attachments and not m.text.strip():
                m.text = media_note(m.attachments)
            key = (m.conversation, m.external_id)
            if key in seen:
                raise self.fail(
                    f"message id '{m.external_id}' appears twice in conversation "
                    f"'{m.conversation}' (items {seen[key] + 1} and {i + 1})"
                )
            seen[key] = i
        return messages

    def without_nuls(self, m: MessageIn) -> bool:
        """Take the NUL characters out of every field of ``m`` (its text, names, ids, time,
        attachments and raw record), counted for the notes (:func:`without_nuls`); whether
        there were any."""
        found = {"raw": 0, "fields": 0}  # the raw record mostly repeats the fields: counted once
        for name in _MESSAGE_FIELDS:
            value = getattr(m, name)
            if name in ("raw", "attachments") and value is not None:
                # most records hold none: one C-speed look before a walk (JSON escapes a NUL as \u0000)
                if "\\u0000" not in json.dumps(value, ensure_ascii=False):
                    continue
            elif not (isinstance(value, str) and "\x00" in value):
                continue
            value, n = without_nuls(value)
            setattr(m, name, value)
            found["raw" if name == "raw" else "fields"] += n
        if not (found["raw"] or found["fields"]):
            return False
        self.nuls += found["fields"] or found["raw"]
        self.nuls_at.append(f"message '{m.external_id}' of '{m.conversation}'")
        return True

    def name(self, value: str) -> str:
        """A name read from the input that is not a message's field (a LoCoMo sample's namespace),
        without NUL characters, as :meth:`without_nuls` does for messages."""
        clean, n = without_nuls(value)
        if n:
            self.nuls += n
            self.nuls_at.append(f"the name '{clean}'")
        return clean

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def media_note(attachments: list[dict[str, Any]]) -> str:
    """The text of a message that is only media: what each file was ("[image omitted]" for one
    left out of the export, "[image: IMG-0001.jpg]" for one named, "[file]" when nothing is
    known), so that it is never stored or shown as an empty message."""
    said = []
    for item in attachments:
        kind = str(item.get("type") or "file")
        name = item.get("file") or item.get("name")
        said.append(f"{kind} omitted" if item.get("omitted") else f"{kind}: {name}" if name else kind)
    return "[" + "; ".join(said) + "]"


@dataclass(frozen=True)
class Probe:
    """How close an input came to a format: ``fits`` or not, and ``why`` in a few words."""

    fits: bool
    why: str


class _NotJSON(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a JSON text."""


def _not_json(name: str) -> Any:
    raise _NotJSON(name)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400: read as infinity, which JSON cannot hold
        raise _NotJSON(text)
    return value


def find_loop(parents: dict[Any, Any]) -> Any:
    """A node whose chain of parents (``parents[node]``, ending at a parent that is not a node)
    comes back to a node already on it (a message its own parent, or ancestor), or None."""
    done: set[Any] = set()
    for start in parents:
        chain: set[Any] = set()
        node = start
        while node in parents and node not in done:
            if node in chain:
                return node
            chain.add(node)
            node = parents[node]
        done |= chain
    return None


def deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest more than ``limit`` levels (iteratively:
    a recursive walk would fail where the nesting is the problem)."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _without_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with lone surrogates in its strings (keys too) replaced, and how many strings
    held one. Recursive: only called on values :func:`deeper_than` has bounded."""

    def fix(text: str) -> tuple[str, int]:
        fixed = without_surrogates(text)
        return fixed, int(fixed != text)

    return each_string(value, fix)


def lines(text: str) -> list[str]:
    """The file's lines as an editor numbers them: split on LF (and CRLF) only.

    ``str.splitlines`` also splits on U+2028, U+0085 and other characters that JSON
    strings and chat messages may contain verbatim.
    """
    if "\n" not in text and "\r" in text:  # old Mac line ends
        return text.split("\r")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def dict_field(item: dict[str, Any], key: str) -> dict[str, Any]:
    """``item[key]`` when it is an object, else an empty one (exports leave fields out, or null)."""
    value = item.get(key)
    return value if isinstance(value, dict) else {}


def str_field(item: dict[str, Any], key: str) -> str:
    """``item[key]`` when it is a string, else an empty one."""
    value = item.get(key)
    return value if isinstance(value, str) else ""


def shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(list(value)[:5])
        return f"an object with keys [{keys}]"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__


def first_item(doc: Any, key: str | None = None) -> Any:
    """The first element of a list (or of ``doc[key]`` when ``doc`` is an object holding one)."""
    if isinstance(doc, dict) and key is not None and isinstance(doc.get(key), list):
        doc = doc[key]
    if isinstance(doc, list):
        return doc[0] if doc else None
    return doc


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def titled(items: list[tuple[Any, str | None, str]]) -> list[str]:
    """Conversation names for an export's ``(title, start time, id)`` items: ``"Title (2024-01-12)"``.

    The start date is part of the name because titles repeat ("New chat") and a conversation
    is keyed by its name: without it two chats would merge, and a suffix given only on a clash
    would change when a later export adds a chat of the same title. Chats that still clash
    all get the start time too, then their id, so no name depends on the export's order.
    """

    def base(title: Any) -> str:
        text = re.sub(r"\s+", " ", title).strip() if isinstance(title, str) else ""
        return text or "Untitled"

    levels = [
        [f"{base(t)} ({w[:10]})" if w else base(t) for t, w, _ in items],
        [f"{base(t)} ({w[:10]} {w[11:16]})" if w else base(t) for t, w, _ in items],
        [f"{base(t)} ({w[:10]} {w[11:16]}, {i[:8]})" if w else f"{base(t)} ({i[:8]})" for t, w, i in items],
    ]
    names = levels[0]
    for level in levels[1:]:
        counts: dict[str, int] = {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        names = [level[k] if counts[name] > 1 else name for k, name in enumerate(names)]
    return names
