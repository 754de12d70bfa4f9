"""The page's words and marks that need no request: text escaped for HTML (:func:`e`, which
everything taken from the store or the request goes through), links, counts, dates and names in
words, and the page a refused request gets. It imports nothing of the server, so that every part
of it (the guard that refuses, the pages, the API) may use it."""

from __future__ import annotations

from html import escape
from pathlib import PurePath
from typing import Any
from urllib.parse import quote, urlencode


def e(value: Any) -> str:
    """Text for HTML (quotes too, so it is safe in attributes)."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **params: Any) -> str:
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(given) if given else "")


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 message", "2 messages" (``many``: the plural when it is not ``word`` + s)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def day(time: str | None) -> str:
    return (time or "")[:10] or "no date"


def when(time: str | None) -> str:
    return (time or "").replace("T", " ")[:16] or "no date"


def span(first: str | None, last: str | None) -> str:
    """ "2024-02-14 19:05 to 21:40" (the day once when both are on it)."""
    a, b = when(first), when(last)
    if not first or not last or a == b:
        return a
    return f"{a} to {b[11:] if a[:10] == b[:10] else b}"


def clip(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (an ellipsis where it was cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def person_link(name: str) -> str:
    return f"/people/{e(quote(name, safe=''))}"


# What a memory's kind is called next to its id: no id is shown without a word beside it.
KIND_WORDS = {"m": "message", "episode": "episode", "fact": "fact", "gist": "gist", "knowledge": "knowledge"}


def ref_text(item: str, kind: str | None = None) -> str:
    """ "message m:12", "episode u:40", "memory u:41" (a unit whose kind is not known here)."""
    word = KIND_WORDS.get(kind or "") or ("message" if item.startswith("m:") else "memory")
    return f"{word} {item}"


def ref_link(item: str, kind: str | None = None) -> str:
    """A link to one memory, labelled with its kind and id."""
    return f'<a href="/memory/{e(item)}">{e(ref_text(item, kind))}</a>'


# What each importer's sources are called on the page.
KINDS = {
    "chatgpt": "ChatGPT export",
    "claude": "Claude export",
    "whatsapp": "WhatsApp export",
    "slack": "Slack export",
    "discord": "Discord export",
    "notes": "notes",
    "jsonl": "JSONL",
    "chat": "chat JSON",
    "text": "text transcript",
    "locomo": "LoCoMo JSON",
}


def source_name(kind: str, uri: str) -> str:
    """What a source is called on the page: the file's name and what it is ("WhatsApp Chat with
    Book club.txt, a WhatsApp export"), never the absolute path it was read from."""
    name = PurePath(uri.removeprefix("file://")).name if uri else ""
    what = KINDS.get(kind, kind)
    if not name:
        return f"messages added one by one ({what})" if what else "messages added one by one"
    return f"{name} ({what})" if what else name


def refused_html(status: int, message: str, hint: str) -> str:
    """The page for a request the server refuses (no token, another site, an unknown host):
    what happened and how to get in, styled, with nothing private on it (the stylesheet and
    the icon are public). The status is said in words, as on the other error pages; programs
    find it in ``data-status``."""
    if status == 401:
        title = "This page needs the link localmem printed"
        how = (
            "<p>Nothing is shown here without the secret in the address <code>localmem serve</code> printed "
            "when it started (it ends in <code>?token=…</code>). To get in:</p><ol>"
            "<li>Find the terminal where <code>localmem serve</code> runs and open the address it printed "
            "(<code>http://127.0.0.1:…/?token=…</code>); the browser then remembers it until the server stops.</li>"
            "<li>Lost it, or the server was restarted? Each start makes a new one: stop it (Ctrl-C) and run "
            "<code>localmem serve</code> again.</li>"
            "<li>A program (not a browser) sends <code>Authorization: Bearer TOKEN</code> instead.</li></ol>"
        )
    else:
        title = "Refused"
        how = f"<p>{e(hint)}.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>localmem: {e(title)}</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css">
</head><body class="refused">
<header><span class="brand"><img src="/static/favicon.svg" alt="" width="18" height="18"> localmem</span></header>
<main id="main"><h1>{e(title)}</h1>
<div class="error" role="alert" data-status="{status}"><p>{e(message)}.</p></div>
{how}
<p class="note">Everything localmem holds stays on this machine; this page is all it shows without the secret.</p>
</main></body></html>"""
