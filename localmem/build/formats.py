"""Input formats: parse a file into messages, validating everything before anything is stored.

Formats: ``locomo`` (LoCoMo JSON), ``jsonl`` (one message object per line),
``chat`` (a list of ``{role, content, name?, timestamp?}`` or ``{"messages": [...]}``)
and ``text`` (``Speaker: text`` lines with optional timestamp lines; lines starting
with ``#`` are comments).
Every problem raises :class:`InputError` naming the file and the line or item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import FORMATS
from ..errors import InputError, UnknownFormatError
from ..text.files import decode, read_input  # noqa: F401 (stage 1 reads files through these)
from ..text.times import looks_like_timestamp, parse_timestamp

_SPEAKER_LINE = re.compile(r"^\s*(?:\[([^\]]{1,60})\]\s*)?([^\W\d_][^:\n]{0,59}?)\s*:\s?(.*)$")
_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")
_TEXT_KEYS = ("text", "content", "message")
_SPEAKER_KEYS = ("speaker", "name", "author", "role")
_TIME_KEYS = ("time", "timestamp", "sent_at", "date", "created_at")


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


@dataclass
class ParsedInput:
    """A parsed file: its format and its messages grouped by target namespace.

    A group's namespace is ``None`` when the caller's namespace applies.
    """

    format: str
    groups: list[tuple[str | None, list[MessageIn]]] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return sum(len(msgs) for _, msgs in self.groups)


def parse(path: Path, data: bytes, fmt: str | None = None, conversation: str | None = None,
          max_chars: int = 100_000) -> ParsedInput:
    """Parse ``data`` (the bytes of ``path``) in format ``fmt`` or the detected one."""
    if fmt is not None and fmt not in FORMATS:
        raise UnknownFormatError(path, f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    text = decode(path, data)
    if not text.strip():
        raise InputError(path, "the file is empty")
    conv = conversation or path.stem or "default"
    parser = _Parser(path, conv, max_chars)
    if fmt is None:
        fmt, doc = parser.detect(text)
    else:
        doc = parser.load_json(text) if fmt in ("locomo", "chat") else None
    if fmt == "locomo":
        groups = parser.locomo(doc)
    elif fmt == "chat":
        groups = [(None, parser.chat(doc))]
    elif fmt == "jsonl":
        groups = [(None, parser.jsonl(text))]
    else:
        groups = [(None, parser.transcript(text))]
    parsed = ParsedInput(fmt, [(ns, msgs) for ns, msgs in groups if msgs])
    if parsed.message_count == 0:
        raise InputError(path, f"no messages found (read as {fmt})")
    return parsed


class _Parser:
    def __init__(self, path: Path, conversation: str, max_chars: int) -> None:
        self.path = path
        self.conversation = conversation
        self.max_chars = max_chars

    def fail(self, problem: str, where: str | None = None) -> InputError:
        return InputError(self.path, problem, where)

    # -- detection -------------------------------------------------------
    def detect(self, text: str) -> tuple[str, Any]:
        head = text.lstrip()[:1]
        suffix = self.path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            return "jsonl", None
        if head in ("[", "{"):
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                if head == "{" and "\n" in text.strip():
                    return "jsonl", None  # one object per line; jsonl() reports the bad line
                if suffix == ".json" or not _looks_like_transcript(text):
                    raise self._json_error(exc) from exc
                return "text", None  # e.g. a transcript whose first line is "[2024-01-14 19:02]"
            return self._classify(doc), doc
        if suffix == ".json":
            raise self.fail("not JSON (the file does not start with '[' or '{')")
        if _looks_like_transcript(text):
            return "text", None
        raise UnknownFormatError(
            self.path, "unrecognised format: not JSON, JSONL, or 'Speaker: text' lines; "
            f"pass --format ({', '.join(FORMATS)})")

    def _classify(self, doc: Any) -> str:
        if isinstance(doc, dict):
            if isinstance(doc.get("conversation"), dict):
                return "locomo"
            if isinstance(doc.get("messages"), list):
                return "chat"
            if any(k in doc for k in _TEXT_KEYS):
                return "jsonl"
        if isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
            first = doc[0]
            if isinstance(first.get("conversation"), dict):
                return "locomo"
            if "content" in first or "role" in first:
                return "chat"
            if "text" in first and "speaker" in first:
                return "chat"
        if isinstance(doc, list) and not doc:
            raise self.fail("the JSON list is empty")
        raise UnknownFormatError(
            self.path, f"JSON of an unknown shape ({_shape(doc)}); expected LoCoMo samples, a list "
            "of {role, content} messages or {\"messages\": [...]}; pass --format to force one")

    def load_json(self, text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._json_error(exc) from exc

    def _json_error(self, exc: json.JSONDecodeError) -> InputError:
        # A string still open at the end of the file is reported where it starts.
        truncated = exc.pos >= len(exc.doc.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        hint = " (the file looks truncated)" if truncated else ""
        return self.fail(f"invalid JSON: {exc.msg}{hint}", where=f"line {exc.lineno} col {exc.colno}")

    # -- shared checks -----------------------------------------------------
    def _text(self, value: Any, where: str) -> str:
        if isinstance(value, list):  # OpenAI-style content parts
            parts = [p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text"]
            value = "\n".join(parts)
        if not isinstance(value, str):
            raise self.fail(f"message text must be a string, got {_shape(value)}", where)
        if len(value) > self.max_chars:
            raise self.fail(
                f"message text has {len(value):,} characters, over the limit of {self.max_chars:,}; "
                "split it, or raise max_message_chars in the config", where)
        return value

    def _time(self, value: Any, where: str) -> str | None:
        try:
            return parse_timestamp(value)
        except (ValueError, OverflowError, OSError) as exc:
            raise self.fail(f"cannot read the time {value!r} ({exc})", where) from exc

    def _unique(self, messages: list[MessageIn]) -> list[MessageIn]:
        seen: dict[tuple[str, str], int] = {}
        for i, m in enumerate(messages):
            key = (m.conversation, m.external_id)
            if key in seen:
                raise self.fail(f"message id '{m.external_id}' appears twice in conversation "
                                f"'{m.conversation}' (items {seen[key] + 1} and {i + 1})")
            seen[key] = i
        return messages

    # -- formats -----------------------------------------------------------
    def locomo(self, doc: Any) -> list[tuple[str | None, list[MessageIn]]]:
        samples = doc if isinstance(doc, list) else [doc]
        groups = []
        for si, sample in enumerate(samples):
            where = f"sample {si + 1}"
            if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
                raise self.fail("a LoCoMo sample needs a 'conversation' object", where)
            sample_id = str(sample.get("sample_id") or f"sample-{si + 1}")
            if any(ns == sample_id for ns, _ in groups):
                raise self.fail(f"sample_id '{sample_id}' appears twice", where)
            conv = sample["conversation"]
            sessions = sorted(
                ((int(m.group(1)), key) for key in conv if (m := _LOCOMO_SESSION.match(key))),
                key=lambda pair: pair[0])
            if not sessions:
                raise self.fail("the conversation has no session_<n> lists", f"{where} ({sample_id})")
            messages: list[MessageIn] = []
            for num, key in sessions:
                turns = conv[key]
                swhere = f"{where} ({sample_id}) {key}"
                if not isinstance(turns, list):
                    raise self.fail(f"{key} must be a list of turns, got {_shape(turns)}", swhere)
                sent_at = self._time(conv.get(f"{key}_date_time"), f"{swhere}_date_time")
                for ti, turn in enumerate(turns):
                    twhere = f"{swhere} turn {ti + 1}"
                    if not isinstance(turn, dict):
                        raise self.fail(f"a turn must be an object, got {_shape(turn)}", twhere)
                    for req in ("speaker", "text", "dia_id"):
                        if not isinstance(turn.get(req), str):
                            raise self.fail(f"missing or non-string '{req}'", twhere)
                    messages.append(MessageIn(
                        conversation=sample_id, session=key, seq=len(messages),
                        external_id=turn["dia_id"], speaker=turn["speaker"],
                        text=self._text(turn["text"], twhere), sent_at=sent_at,
                        attachments=_locomo_attachments(turn), raw=turn))
            groups.append((sample_id, self._unique(messages)))
        return groups

    def chat(self, doc: Any) -> list[MessageIn]:
        items = doc.get("messages") if isinstance(doc, dict) else doc
        if not isinstance(items, list):
            raise self.fail("a chat JSON is a list of messages or {\"messages\": [...]}")
        conv = self.conversation
        if isinstance(doc, dict):
            conv = str(doc.get("conversation") or doc.get("id") or doc.get("title") or conv)
        messages = []
        for i, item in enumerate(items):
            messages.append(self._message(item, f"message {i + 1}", conv, len(messages), f"M{i + 1}"))
        return self._unique(messages)

    def jsonl(self, text: str) -> list[MessageIn]:
        messages = []
        for lineno, line in enumerate(_lines(text), 1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                size = f" ({len(line):,} characters)" if len(line) > 10_000 else ""
                raise self.fail(f"invalid JSON{size}: {exc.msg} at col {exc.colno}", where) from exc
            if not isinstance(item, dict):
                raise self.fail(f"each line must be a JSON object, got {_shape(item)}", where)
            conv = str(item.get("conversation") or self.conversation)
            messages.append(self._message(item, where, conv, len(messages), f"L{lineno}"))
        return self._unique(messages)

    def _message(self, item: Any, where: str, conv: str, seq: int, default_id: str) -> MessageIn:
        if not isinstance(item, dict):
            raise self.fail(f"a message must be an object, got {_shape(item)}", where)
        text_key = next((k for k in _TEXT_KEYS if k in item), None)
        if text_key is None:
            raise self.fail("missing 'text' (or 'content')", where)
        speaker = next((item[k] for k in _SPEAKER_KEYS if isinstance(item.get(k), str) and item[k]), None)
        if speaker is None:
            raise self.fail("missing 'speaker' (or 'name' / 'role')", where)
        time_key = next((k for k in _TIME_KEYS if item.get(k) not in (None, "")), None)
        role = item.get("role")
        ext = item.get("id", default_id)
        if not isinstance(ext, (str, int)) or isinstance(ext, bool):
            raise self.fail(f"'id' must be a string or number, got {_shape(ext)}", where)
        return MessageIn(
            conversation=conv, session=str(item.get("session") or ""), seq=seq,
            external_id=str(ext), speaker=speaker.strip(),
            role=role if isinstance(role, str) else None,
            text=self._text(item[text_key], where),
            sent_at=self._time(item[time_key], where) if time_key else None,
            attachments=_content_attachments(item.get(text_key)), raw=item)

    def transcript(self, text: str) -> list[MessageIn]:
        messages: list[MessageIn] = []
        current_time: str | None = None
        session = 0
        for lineno, line in enumerate(_lines(text), 1):
            where = f"line {lineno}"
            if not line.strip():
                continue
            if len(line) > self.max_chars:
                raise self.fail(f"the line has {len(line):,} characters, over the limit of "
                                f"{self.max_chars:,}", where)
            stamp = looks_like_timestamp(line)
            if stamp is not None:  # also '## 2024-04-10' headings
                current_time, session = stamp, session + 1
                continue
            if line.lstrip().startswith("#"):
                continue  # a '# comment' line
            match = _SPEAKER_LINE.match(line)
            if match and len(match.group(2).split()) <= 4:
                inline_time, speaker, body = match.groups()
                sent_at = current_time
                if inline_time:
                    sent_at, aside = _inline_time(inline_time, current_time)
                    if aside:  # "[laughs] Bob: haha": not a time, keep it in the text
                        body = f"[{inline_time}] {body}"
                messages.append(MessageIn(
                    conversation=self.conversation, session=str(session) if session else "",
                    seq=len(messages), external_id=f"L{lineno}", speaker=speaker.strip(),
                    text=body, sent_at=sent_at, raw=line))
            elif messages:  # a continuation of the previous message
                prev = messages[-1]
                prev.text = self._text(prev.text + "\n" + line, where)
                prev.raw = f"{prev.raw}\n{line}"
            else:
                raise self.fail("expected 'Speaker: text' or a timestamp line", where)
        return messages


def _lines(text: str) -> list[str]:
    """The file's lines as an editor numbers them: split on LF (and CRLF) only.

    ``str.splitlines`` also splits on U+2028, U+0085 and other characters that JSON
    strings and chat messages may contain verbatim.
    """
    if "\n" not in text and "\r" in text:  # old Mac line ends
        return text.split("\r")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


_TIME_OF_DAY = re.compile(r"^\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?m\.?)?\s*$", re.I)


def _inline_time(text: str, current: str | None) -> tuple[str | None, bool]:
    """``(sent_at, is_aside)`` for a ``[...]`` line prefix: a full time, a time of day
    (joined to the current date, when one is known), or not a time at all."""
    try:
        return parse_timestamp(text), False
    except (ValueError, OverflowError, OSError):
        pass
    match = _TIME_OF_DAY.match(text)
    if not match:
        return current, True
    hour, minute, second = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if match.group(4):
        hour = hour % 12 + (12 if match.group(4).lower().startswith("p") else 0)
    if hour > 23 or minute > 59 or second > 59:
        return current, True
    if current is None:
        return None, False
    return f"{current[:10]}T{hour:02d}:{minute:02d}:{second:02d}", False


def _looks_like_transcript(text: str) -> bool:
    return any(_SPEAKER_LINE.match(line) for line in text.splitlines()[:200] if line.strip())


def _locomo_attachments(turn: dict[str, Any]) -> list[dict[str, Any]] | None:
    if not any(k in turn for k in ("img_url", "blip_caption")):
        return None
    urls = turn.get("img_url")
    url = urls[0] if isinstance(urls, list) and urls else urls
    att = {"type": "image", "url": url, "caption": turn.get("blip_caption"),
           "query": turn.get("query")}
    return [{k: v for k, v in att.items() if v is not None}]


def _content_attachments(content: Any) -> list[dict[str, Any]] | None:
    if not isinstance(content, list):
        return None
    found = []
    for part in content:
        if isinstance(part, dict) and part.get("type") not in (None, "text"):
            kept = {k: v for k, v in part.items() if isinstance(v, (str, int, float))}
            found.append({"type": str(part["type"]), **kept})
    return found or None


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(list(value)[:5])
        return f"an object with keys [{keys}]"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__
