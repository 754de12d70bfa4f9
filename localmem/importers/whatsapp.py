"""WhatsApp's "Export chat" text file, in both forms the apps write:

- Android: ``12/01/2024, 19:02 - Sam: text`` (also ``1/12/24, 7:02 PM - …``, ``12.01.24, 19:02 - …``);
- iOS: ``[12/01/2024, 19:02:11] Sam: text`` (the iOS file is ``_chat.txt`` inside the .zip).

A line without that header continues the message above it (multi-line messages). System lines
are skipped and counted: Android writes them without a sender (``… - Messages and calls are
end-to-end encrypted.``, ``… - Sam added Kai``); iOS gives them the chat's name as sender and
starts the text with U+200E (``[…] Trip: ‎Sam created group "Trip"``), as it does missed calls.
Deleted messages are skipped too. Media become attachments: ``<Media omitted>`` and ``image
omitted`` (exported without media; recognised by their shape and words in many languages, see
:mod:`.whatsapp_media`), ``<attached: file>`` and ``file (file attached)`` (with media); a caption stays the text,
and a message that is only media says so in its text ("[image omitted]", "[image: IMG-0001.jpg]",
:func:`~localmem.importers.common.media_note`), never an empty message. The invisible direction marks WhatsApp inserts (U+200E, U+200F, U+202A-E,
U+2066-9) are removed, and U+202F / U+00A0 in a header read as spaces; ``<This message was
edited>`` is dropped from the text (``raw`` keeps every line as exported).

Dates are written in the phone's locale. The order is decided per file: a first number above 12
means day-first, a second above 12 month-first; without one, the order that keeps the messages
in time order, then the number that changes more often (days change more often than months),
then day-first (most locales) — the report then says which was assumed and why. ``date_order``
(or ``ingest --date-order``) overrides it. Times have no zone: they are the phone's wall-clock
time and are stored as written. Speakers are the names the phone shows; there are no roles. The
conversation is named after the file (``WhatsApp Chat with Sam.txt`` -> "Sam").
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ..text.times import to_iso
from .common import MessageIn, Probe, Reader, lines, plural
from .whatsapp_media import placeholder

NAME = "whatsapp"

_INVISIBLE = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_HEADER = re.compile(
    r"^[\u200e\u200f\u202a-\u202e\ufeff]*(?P<open>\[)?(?P<date>\d{1,4}[./-] ?\d{1,2}[./-] ?\d{1,4})[,.]? "
    r"(?:[^\d\[\]]{0,12}? )?"  # a word some locales put before the time
    r"(?P<time>\d{1,2}[:.]\d{2}(?:[:.]\d{2})?)(?: ?(?P<ampm>[ap]\.? ?m\.?))?"
    r"(?(open)\] | [-\u2013] )(?P<rest>.*)$",
    re.I,
)
_ATTACHED = re.compile(
    r"<(?:attached|Anhang|adjunto|anexo|allegato|bijlage|pièce jointe) ?: (?P<file>[^>]+)>"
    r"|^(?P<file2>\S.*?) \((?:file attached|Datei angehängt|archivo adjunto|arquivo anexado)\)$",
    re.M | re.I,
)
_EDITED = re.compile(r"\s*<This message was edited>\s*$")
_DELETED = {
    "this message was deleted",
    "you deleted this message",
    "this message was deleted.",
    "you deleted this message.",
    "null",
    "diese nachricht wurde gelöscht",
    "du hast diese nachricht gelöscht",
    "se eliminó este mensaje",
    "eliminaste este mensaje",
}
# iOS notices that older versions wrote under the chat's name without the U+200E mark.
_NOTICE = re.compile(
    r"^(?:Messages and calls are end-to-end encrypted|Messages to this (?:group|chat) "
    r"are now secured with end-to-end encryption|Your security code with .{1,60} changed)",
    re.I,
)
# A call notice is the whole message ("Missed voice call", "Voice call, 12 min"), never a sentence.
_CALL = re.compile(r"^(?:Missed )?(?:group )?(?:voice|video) call(?:[,.] .{0,40})?$", re.I)
_KINDS = {
    "jpg": "image",
    "jpeg": "image",
    "png": "image",
    "webp": "sticker",
    "gif": "image",
    "heic": "image",
    "mp4": "video",
    "mov": "video",
    "3gp": "video",
    "opus": "audio",
    "ogg": "audio",
    "m4a": "audio",
    "mp3": "audio",
    "aac": "audio",
    "vcf": "contact",
}


@dataclass
class _Record:
    lineno: int
    date: tuple[str, str, str]
    time: str
    ampm: str | None
    speaker: str | None  # None: a system line
    body: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    marked: bool = False  # iOS's U+200E before the text: a system notice or a media placeholder


def probe(text: str) -> Probe:
    sample = [line for line in lines(text)[:400] if line.strip()][:200]
    hits = sum(1 for line in sample if _header(line))
    why = (
        f"{hits} of {len(sample)} lines look like WhatsApp messages "
        "('12/01/2024, 19:02 - Name: text' or '[12/01/2024, 19:02:11] Name: text')"
    )
    return Probe(bool(sample) and _header(sample[0]) is not None and hits * 4 >= len(sample), why)


def _header(line: str) -> re.Match[str] | None:
    # U+202F and U+00A0 (iOS writes "7:02\u202fPM") become spaces one for one, so the match's
    # positions are the line's.
    match = _HEADER.match(line.replace("\u202f", " ").replace("\u00a0", " "))
    if (
        match
        and match.group("open")
        and re.match(r"\d{4}", match.group("date"))
        and line[match.end("date") : match.end("date") + 1] != ","
    ):
        return None  # "[2024-01-14 19:02] Ann: hi" is a plain transcript's stamp, not WhatsApp's
    return match


def parse(text: str, reader: Reader) -> list[MessageIn]:
    records = _records(text, reader)
    order, how = _date_order([r.date for r in records], reader)
    counts = {"system": 0, "deleted": 0, "calls": 0, "media": 0}
    conv = reader.conversation or conversation_name(reader)
    messages: list[MessageIn] = []
    seen: dict[tuple[str, str], int] = {}
    for rec in records:
        if rec.speaker is None:
            counts["system"] += 1
            continue
        while len(rec.body) > 1 and not rec.body[-1].strip():
            rec.body.pop()  # the blank line at the end of the file
        body = "\n".join(rec.body)
        first = rec.body[0].strip() if rec.body else ""
        if first.lower() in _DELETED and len(rec.body) == 1:
            counts["deleted"] += 1
            continue
        if _CALL.match(first) and len(rec.body) == 1:
            counts["calls"] += 1
            continue
        attachments, body = _media(body, rec.marked)
        if (rec.marked or _NOTICE.match(first)) and not attachments:
            counts["system"] += 1  # iOS: a notice under the chat's name
            continue
        counts["media"] += len(attachments)
        body = _EDITED.sub("", body).strip("\n")
        if not body.strip() and not attachments:
            continue
        where = f"line {rec.lineno}"
        sent_at = _when(rec, order, reader, where)
        n = seen.get((sent_at, rec.speaker), 0)
        seen[(sent_at, rec.speaker)] = n + 1
        messages.append(
            MessageIn(
                conversation=conv,
                session="",
                seq=len(messages),
                external_id=f"{sent_at}|{rec.speaker}|{n}",
                speaker=rec.speaker,
                text=reader.text(body, where),
                sent_at=sent_at,
                attachments=attachments or None,
                raw="\n".join(rec.raw),
            )
        )
    speakers = sorted({m.speaker for m in messages})
    reader.note(
        f"WhatsApp: {plural(len(speakers), 'speaker')} ({', '.join(speakers[:6])}"
        f"{', …' if len(speakers) > 6 else ''}); {plural(counts['system'], 'system line')}, "
        f"{plural(counts['deleted'], 'deleted message')} and {plural(counts['calls'], 'call notice')} "
        f"skipped; {plural(counts['media'], 'media file')} kept as attachments"
    )
    if how:
        reader.note(how)
    return reader.unique(messages)


def conversation_name(reader: Reader) -> str:
    """ "WhatsApp Chat with Sam.txt" -> "Sam"; iOS's "_chat.txt" is named after its folder or .zip."""
    stem = reader.path.stem
    if stem.lower() in ("_chat", "chat") and reader.path.parent.name:
        stem = reader.path.parent.name.removesuffix(".zip")
    for prefix in (
        "WhatsApp Chat with ",
        "WhatsApp Chat - ",
        "WhatsApp Chat – ",
        "WhatsApp Chat mit ",
        "Chat de WhatsApp con ",
    ):
        if stem.startswith(prefix):
            return stem[len(prefix) :].strip() or stem
    return stem or "whatsapp"


def _records(text: str, reader: Reader) -> list[_Record]:
    records: list[_Record] = []
    for lineno, line in enumerate(lines(text), 1):
        match = _header(line)
        if match is None:
            if not records:
                if not line.strip():
                    continue
                raise reader.fail(
                    "expected a WhatsApp message line ('12/01/2024, 19:02 - Name: "
                    "text' or '[12/01/2024, 19:02:11] Name: text')",
                    f"line {lineno}",
                )
            records[-1].body.append(_INVISIBLE.sub("", line))
            records[-1].raw.append(line)
            continue
        speaker, body = _split(line[match.start("rest") :])
        marked = speaker is not None and body[:1] in ("\u200e", "\u200f")
        first, second, third = re.split(r"[./-] ?", match.group("date"))  # the pattern has three numbers
        date = (first, second, third)
        records.append(
            _Record(
                lineno,
                date,
                match.group("time"),
                match.group("ampm"),  # type: ignore[arg-type]
                speaker,
                [_INVISIBLE.sub("", body)],
                [line],
                marked,
            )
        )
    return records


def _split(rest: str) -> tuple[str | None, str]:
    """``(speaker, text)``, or ``(None, rest)`` for a system line (no "Name: " before the text,
    or a "name" no one has: quotes or more than 60 characters, as in a subject change)."""
    at = rest.find(": ")
    if at <= 0:
        return None, rest
    name = _INVISIBLE.sub("", rest[:at]).strip()
    if not name or len(name) > 60 or any(q in name for q in '"\u201c\u201d'):
        return None, rest
    return name, rest[at + 2 :]


def _media(body: str, marked: bool = False) -> tuple[list[dict[str, Any]], str]:
    attachments: list[dict[str, Any]] = []
    first, _, rest = body.partition("\n")
    kind = placeholder(first, marked=marked)  # a file left out of the export (whatsapp_media)
    if kind is not None:
        return [{"type": kind, "omitted": True}], rest

    def attach(match: re.Match[str]) -> str:
        name = (match.group("file") or match.group("file2")).strip()
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        attachments.append({"type": _KINDS.get(ext, "document"), "file": name})
        return ""

    text = _ATTACHED.sub(attach, body)
    return attachments, text.strip() if attachments else body


def _date_order(dates: list[tuple[str, str, str]], reader: Reader) -> tuple[str, str | None]:
    """``("ymd" | "dmy" | "mdy", what the report should say or None)``."""
    if dates and len(dates[0][0]) == 4:
        return "ymd", None
    setting = reader.options.date_order
    if setting != "auto":
        return ("dmy" if setting == "day-first" else "mdy"), None
    nums = [(int(a), int(b), _year(c)) for a, b, c in dates]
    if any(a > 12 for a, _, _ in nums):
        if any(b > 12 for _, b, _ in nums):
            raise reader.fail(
                "the dates mix day-first and month-first (both numbers go above 12)", hint="pass --date-order"
            )
        return "dmy", None
    if any(b > 12 for _, b, _ in nums):
        return "mdy", None
    if not nums:
        return "dmy", None
    back_dmy = _backwards([(y, b, a) for a, b, y in nums])
    back_mdy = _backwards([(y, a, b) for a, b, y in nums])
    if back_dmy != back_mdy:
        order = "dmy" if back_dmy < back_mdy else "mdy"
        why = "only that order keeps the messages in time order"
    else:
        changes_first = sum(1 for p, q in zip(nums, nums[1:]) if p[0] != q[0])
        changes_second = sum(1 for p, q in zip(nums, nums[1:]) if p[1] != q[1])
        if changes_first != changes_second:
            order = "dmy" if changes_first > changes_second else "mdy"
            why = "the number that changes more often is taken for the day"
        else:
            order, why = "dmy", "nothing in the file decides it; day-first is the most common"
    read = "day-first (01/02 = 1 February)" if order == "dmy" else "month-first (01/02 = 2 January)"
    other = "month-first" if order == "dmy" else "day-first"
    return order, (
        f"WhatsApp dates are ambiguous (no number above 12): read {read}, because {why}; "
        f"if that is wrong, forget this source and ingest again with --date-order {other}"
    )


def _year(text: str) -> int:
    year = int(text)
    return year + 2000 if year < 100 else year


def _backwards(days: list[tuple[int, int, int]]) -> int:
    return sum(1 for p, q in zip(days, days[1:]) if q < p)


def _when(rec: _Record, order: str, reader: Reader, where: str) -> str:
    try:
        return _stamp(rec.date, rec.time, rec.ampm, order)
    except ValueError as exc:
        raise reader.fail(f"cannot read the date {'/'.join(rec.date)} {rec.time} ({exc})", where) from exc


@functools.lru_cache(maxsize=4096)  # a chat repeats its dates and minutes
def _stamp(date: tuple[str, str, str], time: str, ampm: str | None, order: str) -> str:
    """The wall-clock time, as written (WhatsApp gives no zone); ``ValueError`` if not a date."""
    a, b, c = date
    if order == "ymd":
        year, month, day = int(a), int(b), int(c)
    elif order == "dmy":
        day, month, year = int(a), int(b), _year(c)
    else:
        month, day, year = int(a), int(b), _year(c)
    parts = [int(x) for x in re.split(r"[:.]", time)]
    hour, minute, second = parts[0], parts[1], parts[2] if len(parts) > 2 else 0
    if ampm:
        hour = hour % 12 + (12 if ampm.lower().startswith("p") else 0)
    return to_iso(dt.datetime(year, month, day, hour, minute, second))
