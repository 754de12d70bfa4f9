"""Words for people where the store has ids: one place that says how a message, a unit, a
source, a count or a time reads in text output (the CLI's, the MCP tools' text, the page).

An id stays (``m:12``, ``u:3``: what 'show', 'forget' and 'correct' take), but never alone: a
message reads as who said it, when and in which conversation; a unit as its kind and title; a
source as its file's name, never the absolute path it was read from. A message's external id
(``Jonas/2024-09-14T21:15:00|Jonas|0``: the conversation, the time, the speaker and the turn
joined by an importer) is for programs and ``--json``: text output shows its parts in words.
Counts are words with their plural right ("1 source, 3 messages"); values are never Python
reprs (no ``True``, ``None``, ``{...}`` or ``[...]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any

# Plurals that are not the word + "s" (and singulars of the plural keys results count by).
_PLURALS = {
    "entity": "entities",
    "person": "people",
    "reply": "replies",
    "summary": "summaries",
    "query": "queries",
    "match": "matches",
    "copy": "copies",
    "namespace": "namespaces",
}
_SINGULARS = {many: one for one, many in _PLURALS.items()}
# Words that need another to be counted ("2 knowledge" → "2 knowledge statements").
_COUNTED_AS = {"knowledge": "knowledge statement"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 message", "2 messages", "1 entity", "3 entities", "1,204 messages" (``many``: the
    plural when neither the table above nor word + "s" gives it)."""
    word = _COUNTED_AS.get(word, word)
    if n == 1:
        return f"1 {word}"
    return f"{n:,} {many or _PLURALS.get(word) or word + 's'}"


def singular(word: str) -> str:
    """The singular of a plural key ("messages" → "message", "entities" → "entity")."""
    if word in _SINGULARS:
        return _SINGULARS[word]
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def counts(values: Mapping[str, int], *, skip_zero: bool = False, empty: str = "nothing") -> str:
    """A count per plural key, in words: ``{"sources": 1, "messages": 3}`` → "1 source, 3 messages"."""
    shown = [plural(int(n), words(singular(key))) for key, n in values.items() if n or not skip_zero]
    return ", ".join(shown) or empty


def when(time: str | None, unknown: str = "date unknown") -> str:
    """An ISO time as people read it: "2024-09-14 21:15" (a date alone stays a date)."""
    if not time:
        return unknown
    return str(time)[:16].replace("T", " ")


def quote(text: str | None) -> str:
    """A name in quotes, so that a conversation called "chat" reads as a name."""
    return f"\u201c{text}\u201d" if text else "(no name)"


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "\u2026"


def message(
    id: str | None,
    *,
    speaker: str | None,
    time: str | None,
    conversation: str | None,
) -> str:
    """A message in words, its id first: 'm:12 Jonas, 2024-09-14 21:15, in “Jonas”'."""
    parts = [speaker or "someone", when(time)]
    words = ", ".join(parts) + (f", in {quote(conversation)}" if conversation else "")
    return f"{id} {words}" if id else words


def message_of(data: Mapping[str, Any]) -> str:
    """:func:`message` of a message's JSON (a citation, a hit's source, a shown message),
    whichever of ``time``/``sent_at`` and ``id``/``message_id`` it has."""
    ident = data.get("id") or data.get("message_id")
    if isinstance(ident, int):
        ident = f"m:{ident}"
    return message(
        ident,
        speaker=data.get("speaker"),
        time=data.get("time") or data.get("sent_at"),
        conversation=data.get("conversation"),
    )


def unit(id: str, kind: str, title: str | None = None, text: str | None = None, width: int = 80) -> str:
    """A unit in words: 'u:3, the episode “Dinner in Lisbon”' (its text when it has no title)."""
    about = title or (clip(text, width) if text and text.strip() else None)
    if about:
        return f"{id}, the {kind} {quote(about)}"
    return f"{id}, the {kind}" + (" (no title yet)" if kind == "episode" else "")


def source_name(uri: str | None, kind: str | None = None) -> str:
    """A source as its name: a file's name (not the absolute path it was read from), or the
    conversation messages were added to (``add:chat`` → "chat")."""
    if not uri:
        return "(unnamed)"
    if kind == "api" or uri.startswith("add:"):
        return uri.removeprefix("add:")
    path: PurePath = PureWindowsPath(uri) if "\\" in uri and "/" not in uri else PurePosixPath(uri)
    return path.name or uri


def source(id: int | str, uri: str | None, kind: str | None = None) -> str:
    """A source in words, its id first: 'source 3, the whatsapp file “WhatsApp Chat with Jonas.txt”',
    'source 4, the messages added to “chat”'."""
    if kind == "api" or (uri or "").startswith("add:"):
        return f"source {id}, the messages added to {quote(source_name(uri, kind))}"
    return f"source {id}, the {kind + ' ' if kind else ''}file {quote(source_name(uri, kind))}"


def external_ids(ids: Sequence[str]) -> str:
    """Messages named by their external ids, in words where an id says who and when (a
    WhatsApp message's is "time|speaker|turn": "Jonas, 2024-09-14 21:15"); otherwise a count."""
    said = []
    for ext in ids:
        parts = str(ext).rsplit("/", 1)[-1].split("|")
        if len(parts) != 3 or not parts[0][:4].isdigit():
            return plural(len(ids), "message")
        said.append(f"{parts[1]}, {when(parts[0])}")
    return "; ".join(said)


# How each search channel found a hit, as the end of "found by …".
CHANNEL_WORDS = {
    "bm25": "its words",
    "vector": "its meaning",
    "temporal": "the time asked about",
    "graph": "memories linked to a match",
    "entity": "the people and things named",
}


def why(channels: Mapping[str, Any]) -> str:
    """Why a search found a hit, in words and without its internal ranks: which channels found
    it, and whether it is here as the reply to a question that matched or as the turn next to
    a match."""
    found = [CHANNEL_WORDS[c] for c in CHANNEL_WORDS if c in channels]
    parts = ["found by " + _and(found)] if found else []
    if "question" in channels:
        parts.append("the reply to a question that matched")
    if "neighbour" in channels:
        parts.append("the turn next to a match")
    if "rerank" in channels:
        parts.append("reordered by the reranker")
    return "; ".join(parts)


def confidence(value: float | None) -> str:
    """The model's own rating of an answer, said for what it is: a small local model's guess,
    not a measured probability (it is often sure and wrong), so the cited messages decide."""
    if value is None:
        return "The model gave no rating of its answer: check the cited messages."
    if value >= 0.8:
        return (
            "The model rates this answer high, but a small model's rating is a rough guide: check the cited messages."
        )
    if value >= 0.5:
        return "The model rates this answer middling: check the cited messages."
    return "The model rates this answer low: check the cited messages before you rely on it."


def value(data: Any) -> str:
    """A value as text for people, never a Python repr: yes/no, "none", lists joined by
    commas, mappings as "key: value" pairs."""
    if data is None:
        return "none"
    if isinstance(data, bool):
        return "yes" if data else "no"
    if isinstance(data, Mapping):
        return "; ".join(f"{words(k)}: {value(v)}" for k, v in data.items()) or "none"
    if isinstance(data, Sequence) and not isinstance(data, str):
        return ", ".join(value(v) for v in data) or "none"
    return str(data)


def words(key: str) -> str:
    """A result's key as words: "first_message_at" → "first message at"."""
    return str(key).replace("_", " ")


def lines(data: Mapping[str, Any], indent: str = "") -> list[str]:
    """A nested mapping as indented "key: value" lines for people (a mapping value gets lines
    of its own; everything else one :func:`value`)."""
    out: list[str] = []
    for key, item in data.items():
        if isinstance(item, Mapping) and item:
            out.append(f"{indent}{words(key)}:")
            out.extend(lines(item, indent + "  "))
        else:
            out.append(f"{indent}{words(key)}: {value(item)}")
    return out


def size(n_bytes: int | float) -> str:
    """A size in bytes as people read it: "1.1 GB", "640 MB", "12 KB"."""
    n = float(n_bytes)
    for unit_name, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit_name}" if n < scale * 10 else f"{n / scale:,.0f} {unit_name}"
    return plural(int(n), "byte")


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
