"""The generic formats: ``locomo`` (LoCoMo JSON), ``jsonl`` (one message object per line),
``chat`` (a list of ``{role, content, name?, timestamp?}`` or ``{"messages": [...]}``) and
``text`` (``Speaker: text`` lines with optional timestamp lines; lines starting with ``#`` are
comments)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..config import MAX_NAMESPACE_CHARS
from ..text.times import in_zone, looks_like_timestamp, parse_timestamp
from .common import Groups, MessageIn, Probe, Reader, lines, shape

_SPEAKER_LINE = re.compile(r"^\s*(?:\[([^\]]{1,60})\]\s*)?([^\W\d_][^:\n]{0,59}?)\s*:\s?(.*)$")
_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")
_TEXT_KEYS = ("text", "content", "message")
_SPEAKER_KEYS = ("speaker", "name", "author", "role")
_TIME_KEYS = ("time", "timestamp", "sent_at", "date", "created_at")


# -- probes (see formats.detect) -----------------------------------------------------


def probe_locomo(doc: Any) -> Probe:
    first = doc[0] if isinstance(doc, list) and doc else doc
    if isinstance(first, dict) and isinstance(first.get("conversation"), dict):
        return Probe(True, "LoCoMo samples")
    return Probe(False, "no 'conversation' object")


def probe_chat(doc: Any) -> Probe:
    if isinstance(doc, dict):
        if isinstance(doc.get("messages"), list):
            return Probe(True, '{"messages": [...]}')
        return Probe(False, "no 'messages' list")
    if isinstance(doc, list) and doc and all(isinstance(x, dict) for x in doc):
        first = doc[0]
        if "content" in first or "role" in first or ("text" in first and "speaker" in first):
            return Probe(True, "a list of messages")
        return Probe(False, f"the first item has no 'role'/'content' (keys: {', '.join(list(first)[:5])})")
    return Probe(False, "not a list of message objects")


def probe_object(doc: Any) -> Probe:
    """One message object (a JSONL file of one line)."""
    if isinstance(doc, dict) and any(k in doc for k in _TEXT_KEYS):
        return Probe(True, "one message object")
    return Probe(False, "not a message object (no 'text' or 'content')")


def probe_text(text: str) -> Probe:
    """``Speaker: text`` lines: the first line that is not blank or a ``#`` comment is a speaker
    or timestamp line, and at least a third of the lines are speaker lines."""
    sample = [ln for ln in lines(text)[:400] if ln.strip()][:200]
    content = [ln for ln in sample if not (ln.lstrip().startswith("#") and looks_like_timestamp(ln) is None)]
    hits = sum(1 for ln in content if _speaker_line(ln))
    why = f"{hits} of {len(content)} lines look like 'Speaker: text'"
    if not content:
        return Probe(False, why)
    first = content[0]
    starts = looks_like_timestamp(first) is not None or _speaker_line(first)
    return Probe(bool(starts) and hits * 3 >= len(content), why)


def _speaker_line(line: str) -> bool:
    """A line a transcript would start: a name of one word ("user", "Ann"), or of up to four
    capitalised ones ("Bo Li"); "Gift ideas for Sam: …" in a note is not one."""
    match = _SPEAKER_LINE.match(line)
    if not match:
        return False
    words = match.group(2).split()
    return len(words) == 1 or (len(words) <= 4 and all(w[:1].isupper() or not w[:1].isalpha() for w in words))


# -- parsers -----------------------------------------------------------------------------


def locomo(doc: Any, reader: Reader) -> Groups:
    samples = doc if isinstance(doc, list) else [doc]
    groups: Groups = []
    for si, sample in enumerate(samples):
        where = f"sample {si + 1}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise reader.fail("a LoCoMo sample needs a 'conversation' object", where)
        sample_id = reader.name(str(sample.get("sample_id") or f"sample-{si + 1}"))
        if len(sample_id) > MAX_NAMESPACE_CHARS:  # its namespace's name
            raise reader.fail(
                f"sample_id has {len(sample_id):,} characters, over the limit of {MAX_NAMESPACE_CHARS}", where
            )
        if any(ns == sample_id for ns, _ in groups):
            raise reader.fail(f"sample_id '{sample_id}' appears twice", where)
        conv = sample["conversation"]
        sessions = sorted(
            ((int(m.group(1)), key) for key in conv if (m := _LOCOMO_SESSION.match(key))), key=lambda pair: pair[0]
        )
        if not sessions:
            raise reader.fail("the conversation has no session_<n> lists", f"{where} ({sample_id})")
        messages: list[MessageIn] = []
        for num, key in sessions:
            turns = conv[key]
            swhere = f"{where} ({sample_id}) {key}"
            if not isinstance(turns, list):
                raise reader.fail(f"{key} must be a list of turns, got {shape(turns)}", swhere)
            sent_at = reader.time(conv.get(f"{key}_date_time"), f"{swhere}_date_time")
            for ti, turn in enumerate(turns):
                twhere = f"{swhere} turn {ti + 1}"
                if not isinstance(turn, dict):
                    raise reader.fail(f"a turn must be an object, got {shape(turn)}", twhere)
                for req in ("speaker", "text", "dia_id"):
                    if not isinstance(turn.get(req), str):
                        raise reader.fail(f"missing or non-string '{req}'", twhere)
                messages.append(
                    MessageIn(
                        conversation=sample_id,
                        session=key,
                        seq=len(messages),
                        external_id=turn["dia_id"],
                        speaker=turn["speaker"],
                        text=reader.text(turn["text"], twhere),
                        sent_at=sent_at,
                        attachments=_locomo_attachments(turn),
                        raw=turn,
                    )
                )
        groups.append((sample_id, reader.unique(messages)))
    return groups


def chat(doc: Any, reader: Reader) -> list[MessageIn]:
    items = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise reader.fail('a chat JSON is a list of messages or {"messages": [...]}')
    conv = reader.default_conversation
    if isinstance(doc, dict):
        conv = str(doc.get("conversation") or doc.get("id") or doc.get("title") or conv)
    messages = []
    for i, item in enumerate(items):
        messages.append(_message(reader, item, f"message {i + 1}", conv, len(messages), f"M{i + 1}"))
    return reader.unique(messages)


def jsonl(text: str, reader: Reader) -> list[MessageIn]:
    messages = []
    for lineno, line in enumerate(lines(text), 1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        try:
            item = reader.loads(line, where)
        except json.JSONDecodeError as exc:
            size = f" ({len(line):,} characters)" if len(line) > 10_000 else ""
            raise reader.fail(f"invalid JSON{size}: {exc.msg} at col {exc.colno}", where) from exc
        if not isinstance(item, dict):
            raise reader.fail(f"each line must be a JSON object, got {shape(item)}", where)
        conv = str(item.get("conversation") or reader.default_conversation)
        messages.append(_message(reader, item, where, conv, len(messages), f"L{lineno}"))
    return reader.unique(messages)


def _message(reader: Reader, item: Any, where: str, conv: str, seq: int, default_id: str) -> MessageIn:
    if not isinstance(item, dict):
        raise reader.fail(f"a message must be an object, got {shape(item)}", where)
    text_key = next((k for k in _TEXT_KEYS if k in item), None)
    if text_key is None:
        raise reader.fail("missing 'text' (or 'content')", where)
    speaker = next((item[k] for k in _SPEAKER_KEYS if isinstance(item.get(k), str) and item[k]), None)
    if speaker is None:
        raise reader.fail("missing 'speaker' (or 'name' / 'role')", where)
    time_key = next((k for k in _TIME_KEYS if item.get(k) not in (None, "")), None)
    role = item.get("role")
    ext = item.get("id", default_id)
    if not isinstance(ext, (str, int)) or isinstance(ext, bool):
        raise reader.fail(f"'id' must be a string or number, got {shape(ext)}", where)
    return MessageIn(
        conversation=conv,
        session=str(item.get("session") or ""),
        seq=seq,
        external_id=str(ext),
        speaker=speaker.strip(),
        role=role if isinstance(role, str) else None,
        text=reader.text(item[text_key], where),
        sent_at=reader.time(item[time_key], where) if time_key else None,
        attachments=_content_attachments(item.get(text_key)),
        raw=item,
    )


def transcript(text: str, reader: Reader) -> list[MessageIn]:
    messages: list[MessageIn] = []
    current_time: str | None = None
    session = 0
    conv = reader.default_conversation
    for lineno, line in enumerate(lines(text), 1):
        where = f"line {lineno}"
        if not line.strip():
            continue
        if len(line) > reader.options.max_chars:
            raise reader.fail(
                f"the line has {len(line):,} characters, over the limit of {reader.options.max_chars:,}", where
            )
        stamp = looks_like_timestamp(line)
        if stamp is not None:  # also '## 2024-04-10' headings
            current_time, session = in_zone(stamp, reader.options.timezone), session + 1
            continue
        if line.lstrip().startswith("#"):
            continue  # a '# comment' line
        match = _SPEAKER_LINE.match(line)
        if match and len(match.group(2).split()) <= 4:
            inline_time, speaker, body = match.groups()
            sent_at = current_time
            if inline_time:
                sent_at, aside = _inline_time(inline_time, current_time)
                sent_at = in_zone(sent_at, reader.options.timezone)
                if aside:  # "[laughs] Bob: haha": not a time, keep it in the text
                    body = f"[{inline_time}] {body}"
            messages.append(
                MessageIn(
                    conversation=conv,
                    session=str(session) if session else "",
                    seq=len(messages),
                    external_id=f"L{lineno}",
                    speaker=speaker.strip(),
                    text=reader.text(body, where),
                    sent_at=sent_at,
                    raw=line,
                )
            )
        elif messages:  # a continuation of the previous message
            prev = messages[-1]
            prev.text = reader.text(prev.text + "\n" + line, where)
            prev.raw = f"{prev.raw}\n{line}"
        else:
            raise reader.fail("expected 'Speaker: text' or a timestamp line", where)
    return reader.unique(messages)


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


def _locomo_attachments(turn: dict[str, Any]) -> list[dict[str, Any]] | None:
    if not any(k in turn for k in ("img_url", "blip_caption")):
        return None
    urls = turn.get("img_url")
    url = urls[0] if isinstance(urls, list) and urls else urls
    att = {"type": "image", "url": url, "caption": turn.get("blip_caption"), "query": turn.get("query")}
    # Only text is kept: a caption or query of another type (a number, a list) is not a description.
    return [{k: v for k, v in att.items() if k == "type" or (isinstance(v, str) and v)}]


def _content_attachments(content: Any) -> list[dict[str, Any]] | None:
    if not isinstance(content, list):
        return None
    found = []
    for part in content:
        if isinstance(part, dict) and part.get("type") not in (None, "text"):
            kept = {k: v for k, v in part.items() if isinstance(v, (str, int, float))}
            found.append({"type": str(part["type"]), **kept})
    return found or None
