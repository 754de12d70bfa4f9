"""What several pages show the same way: a search hit and why it was found, a message among its
conversation's (the cited one marked), and the query's words marked in the text."""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from ...text import labels
from ...types import caption_text
from ..markup import day, e, ref_link, ref_text, url, when

CONTEXT_AROUND = 2  # messages shown around a cited one


def terms(query: str) -> list[str]:
    """The query's words worth marking in what it found (content words), as the start of the
    words to mark: "moved" marks "move" and "moving" too, "flat" marks "flats"."""
    from ...text.words import content_words

    starts = {w[: max(4, len(w) - 2)] if len(w) > 4 else w for w in content_words(query)}
    return sorted(starts, key=len, reverse=True)


def marked(text: str, words: Sequence[str] = ()) -> str:
    """``text`` for HTML, with each word that starts with one of ``words`` in ``<mark>``."""
    if not words:
        return e(text)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)
    out, at = [], 0
    for found in pattern.finditer(text):
        out.append(e(text[at : found.start()]) + f"<mark>{e(found.group())}</mark>")
        at = found.end()
    return "".join(out) + e(text[at:])


def why(hit: dict[str, Any]) -> str:
    """Why a search found ``hit``, in a few words (:func:`localmem.text.labels.why`: the
    channels that found it, without their internal ranks)."""
    return labels.why(hit.get("channels") or {})


def hit_html(hit: dict[str, Any], words: Sequence[str] = (), explain: bool = False) -> str:
    src = hit["sources"][0] if hit.get("sources") else {}
    speaker = hit.get("speaker") or src.get("speaker") or ""
    text = hit["text"]
    if hit["kind"] == "message" and hit.get("said") is not None:  # the speaker is shown apart
        text = hit["said"] + caption_text(hit.get("captions") or [])
    meta = [f'<span class="speaker">{e(speaker)}</span>' if speaker else f'<span class="kind">{e(hit["kind"])}</span>']
    meta.append(f'<time datetime="{e(hit.get("time") or "")}">{e(when(hit.get("time")))}</time>')
    if src.get("conversation"):
        meta.append(f'<span class="conv">in {e(src["conversation"])}</span>')
    links = [ref_link(hit["id"], "m" if hit["kind"] == "message" else hit["kind"])]
    if hit["kind"] == "message":
        links.append(f'<a href="{e(url("/conversation", around=hit["id"]))}">in context</a>')
    extra = (
        f' <span class="note">replaced by {ref_link(hit["superseded_by"])}</span>' if hit.get("superseded_by") else ""
    )
    reason = why(hit) if explain else ""
    return (
        f'<li class="item hit" tabindex="-1"><div class="meta">{" · ".join(meta)}</div>'
        f'<p class="text">{marked(text, words)}</p><div class="links">{" · ".join(links)}{extra}'
        + (f' <span class="why">· {e(reason)}</span>' if reason else "")
        + "</div></li>"
    )


def message_row(
    m: dict[str, Any], focus: Iterable[str] = (), words: Sequence[str] = (), badge: str | None = "cited"
) -> str:
    """One message of a conversation: who, when (a link to the message), what. ``focus``: the
    messages to mark, with ``badge`` ("cited" in an answer; None: marked without a word, as the
    message a conversation was opened at)."""
    marked_here = m["id"] in focus
    cls = ("msg cited" if badge == "cited" else "msg focus") if marked_here else "msg"
    mark = ' aria-current="true"' if marked_here else ""
    note = f' <a class="note" href="/memory/{e(m["replaced_by"])}">corrected</a>' if m.get("replaced_by") else ""
    shown = f' <span class="badge">{e(badge)}</span>' if marked_here and badge else ""
    return (
        f'<li class="{cls}"{mark} id="{e(m["id"])}"><div class="meta"><span class="speaker">{e(m["speaker"])}</span> '
        f'<a class="when" href="/memory/{e(m["id"])}" title="{e(ref_text(m["id"]))}: details, corrections, forget">'
        f'<time datetime="{e(m["time"] or "")}">{e(when(m["time"]))}</time></a>{note}{shown}</div>'
        f'<p class="text">{marked(m["text"], words)}</p></li>'
    )


SESSION_GAP_HOURS = 6  # a pause this long starts a new sitting when the export names no sessions


def thread_rows(
    messages: Sequence[dict[str, Any]], focus: Iterable[str] = (), words: Sequence[str] = (), badge: str | None = None
) -> str:
    """Messages in order, a line between two sessions (the export's, or a pause of hours)."""
    import datetime as dt

    rows: list[str] = []
    before: dict[str, Any] | None = None
    for m in messages:
        if before is not None and _new_session(before, m, dt):
            rows.append(f'<li class="session" role="separator"><span>{e(day(m["time"]))}</span></li>')
        rows.append(message_row(m, focus, words, badge))
        before = m
    return "".join(rows)


def _new_session(a: dict[str, Any], b: dict[str, Any], dt: Any) -> bool:
    if a.get("session") != b.get("session"):
        return True
    try:
        gap = dt.datetime.fromisoformat(b["time"][:19]) - dt.datetime.fromisoformat(a["time"][:19])
    except (TypeError, ValueError):
        return False
    return gap.total_seconds() >= SESSION_GAP_HOURS * 3600


def window_html(window: dict[str, Any], focus: Sequence[str], more_link: bool = True, words: Sequence[str] = ()) -> str:
    rows = thread_rows(window["messages"], focus, words)
    more = ""
    if more_link and focus:
        more = f'<a class="more" href="{e(url("/conversation", around=focus[0], n=10))}">more of this conversation</a>'
    return f'<ol class="thread">{rows}</ol>{more}'
