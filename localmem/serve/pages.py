"""The web page, rendered by the server: every page works without JavaScript, and everything
taken from the store (or from the request) goes through :func:`e` (``html.escape``) on its way
into the HTML, so a stored ``<script>`` is shown as text. ``static/app.js`` only adds progress
(ask, import), the timeline's keyboard and pointer interaction, and shortcuts."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any, AsyncIterator, Iterable, Sequence
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import LocalmemError
from ..redact import redact
from ..store.queries import q
from ..types import caption_text
from . import api, svg
from .calls import Lanes, ReportedError, as_json, error_dict, error_status

CONTEXT_AROUND = 2  # messages shown around a cited one
WINDOW = 20  # messages on a conversation page
SEARCH_K = 10  # hits on the search page


def e(value: Any) -> str:
    """Text for HTML (quotes too, so it is safe in attributes)."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **params: Any) -> str:
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(given) if given else "")


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 message", "2 messages" (``many``: the plural when it is not ``word`` + s)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def terms(query: str) -> list[str]:
    """The query's words worth marking in what it found (content words), as the start of the
    words to mark: "moved" marks "move" and "moving" too, "flat" marks "flats"."""
    from ..text.words import content_words

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


def day(time: str | None) -> str:
    return (time or "")[:10] or "no date"


def when(time: str | None) -> str:
    return (time or "").replace("T", " ")[:16] or "no date"


NAV = (("/", "Search & ask", "s"), ("/overview", "Overview", "o"), ("/conversations", "Conversations", "v"),
       ("/timeline", "Timeline", "t"), ("/people", "People", "p"), ("/curate", "Curate", "c"),
       ("/settings", "Settings", "g"))  # fmt: skip

# What a memory's kind is called next to its id: no id is shown without a word beside it.
KIND_WORDS = {"m": "message", "episode": "episode", "fact": "fact", "gist": "gist", "knowledge": "knowledge"}


def ref_text(item: str, kind: str | None = None) -> str:
    """ "message m:12", "episode u:40", "memory u:41" (a unit whose kind is not known here)."""
    word = KIND_WORDS.get(kind or "") or ("message" if item.startswith("m:") else "memory")
    return f"{word} {item}"


def ref_link(item: str, kind: str | None = None) -> str:
    """A link to one memory, labelled with its kind and id."""
    return f'<a href="/memory/{e(item)}">{e(ref_text(item, kind))}</a>'


def layout(request: Request, title: str, body: str, active: str = "") -> HTMLResponse:
    guard = request.app.state.guard
    mem = request.app.state.lanes.reader.memory
    links = "".join(
        f'<a href="{href}" accesskey="{key}" title="{label} (g then {key})"'
        + (' aria-current="page"' if href == active else "")
        + f">{label}</a>"
        for href, label, key in NAV
    )
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf" content="{e(guard.csrf)}">
<title>{e(title)} · localmem</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head><body>
<a class="skip" href="#main">Skip to content</a>
<header><a class="brand" href="/"><img src="/static/favicon.svg" alt="" width="18" height="18"> localmem</a>
<span class="ns" title="namespace">{e(mem.namespace)}</span>
<nav aria-label="Main">{links}</nav></header>
<main id="main" tabindex="-1"><h1>{e(title)}</h1>
{body}
</main>
<footer>Everything here stays on this machine. Keys: <kbd>/</kbd> search, <kbd>g</kbd> then
<kbd>s</kbd> <kbd>o</kbd> <kbd>v</kbd> <kbd>t</kbd> <kbd>p</kbd> <kbd>c</kbd> <kbd>g</kbd> to move between pages,
<kbd>j</kbd>/<kbd>k</kbd> next / previous item.</footer>
</body></html>"""
    return HTMLResponse(html)


def refused_html(status: int, message: str, hint: str) -> str:
    """The page for a request the server refuses (no token, another site, an unknown host):
    what happened and how to get in, styled, with nothing private on it (the stylesheet and
    the icon are public)."""
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
<div class="error" role="alert"><p>{e(message)}.</p><p class="code">HTTP {status}</p></div>
{how}
<p class="note">Everything localmem holds stays on this machine; this page is all it shows without the secret.</p>
</main></body></html>"""


# What to do next on the page, per error code: the library's hints name CLI commands.
PAGE_HINTS = {
    "not_found": (
        'Look for it with <a href="/">Search</a>, in the <a href="/conversations">conversations</a> or '
        'among the <a href="/people">people</a>; what was forgotten is gone for good.'
    ),
    "no_store": 'The store has no such namespace: the <a href="/settings">Settings</a> page says which one is open.',
    "store_locked": "Another program is writing to the store: try again in a moment.",
}
PAGE_TITLES = {"not_found": "Not found", "store_locked": "Busy"}


def error_page(request: Request, exc: BaseException, title: str = "") -> HTMLResponse:
    """An error as a page: what happened, and what to do on the page (the error's code is kept
    for programs in ``data-code``, not shown)."""
    error = error_dict(exc)
    advice = PAGE_HINTS.get(error["code"])
    if advice is None and error.get("hint") and "localmem " not in error["hint"]:
        advice = e(error["hint"])
    hint = f"<p class=hint>{advice}</p>" if advice else ""
    message = str(error["error"])
    body = f'<div class="error" role="alert" data-code="{e(error["code"])}"><p>{e(message)}.</p>{hint}</div>'
    response = layout(request, title or PAGE_TITLES.get(error["code"], "Not possible"), body)
    response.status_code = error_status(error)
    return response


def page_not_found(request: Request) -> HTMLResponse:
    """A page for an address the server has no page at."""
    from ..errors import NotFoundError

    return error_page(request, NotFoundError(f"there is no page at {request.url.path}"))


def page(fn: Any) -> Any:
    """A page handler ``fn(request, lanes)``; a LocalmemError becomes an error page."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request, request.app.state.lanes)
        except LocalmemError as exc:
            return error_page(request, exc)

    endpoint.__name__ = fn.__name__
    return endpoint


def csrf_action(request: Request, path: str) -> str:
    """A form's action for a POST: the CSRF token in its query (checked before any route runs)."""
    return e(url(path, csrf=request.app.state.guard.csrf))


# -- pieces ------------------------------------------------------------------------------------

# What found a hit, in words ("why this hit"): the search channels, then what moved it.
CHANNEL_WORDS = {
    "bm25": "its words",
    "vector": "its meaning",
    "temporal": "the time asked about",
    "graph": "memories linked to a match",
    "entity": "the people and things named",
}


def why(hit: dict[str, Any]) -> str:
    """Why a search found ``hit``, in a few words: which channels found it (and its place in
    each), and whether it is here as the reply to a question that matched."""
    channels = hit.get("channels") or {}
    found = [f"{CHANNEL_WORDS[c]} (#{channels[c]['rank']})" for c in CHANNEL_WORDS if c in channels]
    parts = ["found by " + " and ".join(found)] if found else []
    if "question" in channels:
        parts.append(f"raised as the reply to a question that matched (#{channels['question']['rank']})")
    if "neighbour" in channels:
        parts.append(f"brought in as the turn next to a match (#{channels['neighbour']['rank']})")
    if "rerank" in channels:
        parts.append(f"reordered by the reranker (#{channels['rerank']['rank']})")
    return "; ".join(parts)


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


def confidence_words(confidence: float) -> str:
    """How sure the model said it was, in words (the number is its own estimate, not a measure)."""
    if confidence >= 0.85:
        return "The model is sure of this answer"
    if confidence >= 0.6:
        return "The model is fairly sure of this answer"
    if confidence >= 0.35:
        return "The model is not very sure of this answer"
    return "The model is unsure of this answer: check the messages below"


def merged_windows(answer: dict[str, Any], windows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The cited messages with the messages around them, one entry per conversation (in the
    order of the first citation in each): overlapping or touching windows become one run, and
    no message is shown twice. Each entry: ``conversation``, ``cited`` (ids), ``runs`` (lists
    of messages in order)."""
    groups: dict[str, dict[str, Any]] = {}
    for c in answer.get("citations") or []:
        group = groups.setdefault(c["conversation"], {"conversation": c["conversation"], "cited": [], "seen": {}})
        group["cited"].append(c["id"])
        window = windows.get(c["id"])
        for m in window["messages"] if window else []:
            group["seen"].setdefault(m["id"], m)
        if window is None:  # its window could not be read: the citation alone
            alone = {"id": c["id"], "speaker": c["speaker"], "time": c["time"], "text": c["text"], "seq": None}
            group["seen"].setdefault(c["id"], alone)
    out = []
    for group in groups.values():
        messages = sorted(group.pop("seen").values(), key=lambda m: (m.get("seq") is None, m.get("seq") or 0))
        runs: list[list[dict[str, Any]]] = []
        for m in messages:
            last = runs[-1][-1] if runs else None
            if (
                last is not None
                and m.get("seq") is not None
                and last.get("seq") is not None
                and m["seq"] <= last["seq"] + 1
            ):
                runs[-1].append(m)
            else:
                runs.append([m])
        out.append({**group, "runs": runs})
    return out


def answer_html(answer: dict[str, Any], windows: dict[str, dict[str, Any]], words: Sequence[str] = ()) -> str:
    """The answer, and the cited messages highlighted among the messages around them, one
    window per conversation (the query's words marked)."""
    if answer["refused"]:
        evidence = answer.get("evidence") or []
        why_not = {
            "no evidence": "nothing stored matched the question",
            "model": "the messages found do not say",
            "someone else": "the messages found are about someone else",
            "no citation": "the model could not point at a message that says it",
            "invalid reply": "the model's reply could not be read",
        }.get(answer.get("refusal") or "", answer.get("refusal") or "")
        looked = "".join(hit_html(h, words) for h in evidence[:8])
        read = f" and read {plural(len(evidence), 'message or fact', 'messages or facts')}" if evidence else ""
        return (
            f'<section class="answer refused" aria-live="polite"><h2>Not in memory</h2>'
            f"<p>Searched this namespace for <q>{e(answer['question'])}</q>{read}: {e(why_not)}.</p>"
            + (f'<details><summary>What was read</summary><ol class="hits">{looked}</ol></details>' if looked else "")
            + "</section>"
        )
    cites = answer.get("citations") or []
    parts = [
        f'<section class="answer" aria-live="polite"><h2>Answer</h2><p class="answer-text">{e(answer["answer"])}</p>'
    ]
    if answer.get("confidence") is not None:
        parts.append(
            f'<p class="confidence" title="the model\'s own estimate: {answer["confidence"]:.2f}">'
            f"{e(confidence_words(answer['confidence']))}.</p>"
        )
    groups = merged_windows(answer, windows)
    where = f" in {plural(len(groups), 'conversation')}" if len(groups) > 1 else ""
    parts.append(f"<h3>It rests on {plural(len(cites), 'message')}{where}</h3>")
    for group in groups:
        cited = group["cited"]
        parts.append(
            f'<div class="cite"><p class="conv">in <strong>{e(group["conversation"])}</strong>'
            + (f" · {len(cited)} cited" if len(cited) > 1 else "")
            + "</p>"
        )
        runs = [f'<ol class="thread">{thread_rows(run, cited, words, "cited")}</ol>' for run in group["runs"]]
        parts.append('<p class="gap" aria-hidden="true">⋯</p>'.join(runs))
        parts.append(
            f'<a class="more" href="{e(url("/conversation", around=cited[0], n=10))}">more of this conversation</a>'
        )
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)


async def _windows(lanes: Lanes, answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    mem = lanes.reader.memory

    def load() -> dict[str, dict[str, Any]]:
        out = {}
        for c in answer.get("citations") or []:
            try:
                out[c["id"]] = mem.browse.context(c["id"], CONTEXT_AROUND).to_dict()
            except LocalmemError:
                pass
        return out

    return await lanes.reader(load)


# -- search & ask ------------------------------------------------------------------------------

FILTERS = ("speaker", "conversation", "since", "until")


def filters_of(params: Any) -> dict[str, str]:
    """The search filters a page was given (the CLI's --speaker, --conversation, --since, --until)."""
    return {name: str(params.get(name)).strip() for name in FILTERS if str(params.get(name) or "").strip()}


def search_form(q: str, chosen: dict[str, str] | None = None, speakers: Sequence[str] = (),
                conversations: Sequence[str] = (), note: str = "") -> str:  # fmt: skip
    chosen = chosen or {}

    def options(name: str, values: Sequence[str], anyone: str) -> str:
        picked = chosen.get(name, "")
        items = [f'<option value="">{e(anyone)}</option>']
        items += [f'<option value="{e(v)}"{" selected" if v == picked else ""}>{e(v)}</option>' for v in values]
        if picked and picked not in values:
            items.append(f'<option value="{e(picked)}" selected>{e(picked)}</option>')
        return "".join(items)

    opened = " open" if chosen else ""
    count = f" ({len(chosen)} set)" if chosen else ""
    return f"""<form class="search" action="/" method="get" role="search">
<label for="q">Search or ask your memory</label>
<div class="row"><input id="q" name="q" type="search" value="{e(q)}" autocomplete="off"
 placeholder="Where did Priya find a flat?" required>
<button name="do" value="search" type="submit">Search</button>
<button name="do" value="ask" type="submit" class="secondary" id="ask-button">Ask</button></div>
<details class="filters"{opened}><summary>Filters{count}</summary><div class="grid">
<div><label for="f-speaker">Said by</label><select id="f-speaker" name="speaker">{options("speaker", speakers, "anyone")}</select></div>
<div><label for="f-conv">In conversation</label><select id="f-conv" name="conversation">{options("conversation", conversations, "any")}</select></div>
<div><label for="f-since">From</label><input id="f-since" name="since" type="date" value="{e(chosen.get("since", "")[:10])}"></div>
<div><label for="f-until">To</label><input id="f-until" name="until" type="date" value="{e(chosen.get("until", "")[:10])}"></div>
</div><p class="note">Search and ask look only among the messages that pass (as <code>localmem search --speaker … --since …</code>).</p></details>
{note}</form><div id="ask-live" class="live" aria-live="polite"></div>"""


async def filter_choices(request: Request, lanes: Lanes) -> tuple[list[str], list[str]]:
    """The speakers and conversations the filters offer (200 of each, the largest first). Read
    again only when the store changed (SQLite's data_version): counting them on every page
    would cost a scan of the messages."""
    mem = lanes.reader.memory
    state = request.app.state

    def load() -> tuple[list[str], list[str]]:
        version = mem.conn.execute(q("data_version")).fetchall()[0][0]  # PostgreSQL's too
        cached = getattr(state, "filter_choices", None)
        if cached is not None and cached[0] == version:
            return cached[1]
        choices = mem.browse.names(200)
        state.filter_choices = (version, choices)
        return choices

    return await lanes.reader(load)


async def home(request: Request, lanes: Lanes) -> Response:
    q = (request.query_params.get("q") or "").strip()
    do = request.query_params.get("do") or "search"
    chosen = filters_of(request.query_params)
    mem = lanes.reader.memory
    speakers, conversations = await filter_choices(request, lanes)
    body = [search_form(q, chosen, speakers, conversations, model_note(request))]
    words = terms(q)
    if q and do == "ask":
        answer = as_json(await lanes.writer(lanes.writer.memory.ask, q, **chosen))
        body.append(answer_html(answer, await _windows(lanes, answer), words))
    elif q:
        hits = as_json(await lanes.reader(mem.search, q, k=SEARCH_K, **chosen))
        among = " among the filtered messages" if chosen else ""
        body.append(f'<h2 id="results">{plural(len(hits), "result")} for <q>{e(q)}</q>{among}</h2>')
        body.append(
            f'<ol class="hits list" aria-labelledby="results">{"".join(hit_html(h, words, True) for h in hits)}</ol>'
            if hits
            else f"<p>Nothing stored matches <q>{e(q)}</q>{among}.</p>"
        )
    else:
        stats, recent = await lanes.reader(lambda: (mem.stats(), as_json(mem.recent(8))))
        body.append(
            f'<p class="summary">{plural(stats["messages"], "message")} in '
            f"{plural(stats['conversations'], 'conversation')}, "
            f"from {e(day(stats.get('first_message_at')))} to {e(day(stats.get('last_message_at')))}.</p>"
        )
        if recent:
            body.append('<h2 id="recent">Latest messages</h2><ol class="hits list" aria-labelledby="recent">')
            body.append("".join(hit_html(h) for h in reversed(recent)) + "</ol>")
    return layout(request, "Search & ask", "".join(body), "/")


def model_words(load: Any) -> str:
    """Where the model stands, in words, for the page (which never waits for it)."""
    size = f" (a {load.size / 1e9:.1f} GB file)" if getattr(load, "size", None) else ""
    if load.mode == "background":
        if load.state == "loading":
            return (
                f"The model{size} is loading in the background (for {load.since():.0f} s): search and browse "
                "do not wait for it; a question asked now waits until it is ready."
            )
        if load.state == "ready":
            took = f" in {load.seconds:.1f} s" if load.seconds is not None else ""
            return f"The model{size} was loaded in the background as the server started{took}: questions are answered at once."
        if load.state == "failed":
            return f"The model could not be loaded ({load.error}); a question will say why."
    if load.mode == "first-ask":
        return (
            "The model is loaded by the first question (serve_preload is off): that answer waits for it; "
            "nothing is taken from memory until then."
        )
    return ""


def model_note(request: Request) -> str:
    words = model_words(request.app.state.model)
    state = request.app.state.model.state or request.app.state.model.mode
    return f'<p class="note model-state" data-state="{e(state)}">{e(words)}</p>' if words else ""


async def ask_stream(request: Request, lanes: Lanes) -> Response:
    """For the page's script: ask's events as NDJSON (each stage as it starts, with the time),
    and last the answer as rendered HTML."""
    q = (request.query_params.get("q") or "").strip()
    chosen = filters_of(request.query_params)
    words = terms(q)

    async def events() -> AsyncIterator[bytes]:
        async for event in api.ask_events(lanes, q, {"now": None, **chosen}, model=request.app.state.model):
            if event["event"] == "answer":
                answer = event["answer"]
                event = {"event": "html", "html": answer_html(answer, await _windows(lanes, answer), words)}
            yield (json.dumps(event, ensure_ascii=False) + "\n").encode()

    return StreamingResponse(events(), media_type=api.NDJSON)


# -- conversation ------------------------------------------------------------------------------


async def conversation(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    mem = lanes.reader.memory
    n = api._int(p.get("n"), "n", WINDOW, 1, 200)
    if p.get("around"):
        window = await lanes.reader(mem.browse.context, p["around"], n)
        focus = [p["around"]]
    else:
        name = p.get("name") or ""
        first = api._int(p.get("first"), "first", 0, -(2**31), 2**31)
        window = await lanes.reader(mem.browse.conversation, name, first, first + 2 * n)
        focus = []
    name, first, last = window["conversation"], window["first"], window["last"]
    nav = []
    if window["more_before"]:
        nav.append(f'<a href="{e(url("/conversation", name=name, first=first - 2 * n, n=n))}">earlier</a>')
    if window["more_after"]:
        nav.append(f'<a href="{e(url("/conversation", name=name, first=last + 1, n=n))}">later</a>')
    body = (
        f'<p class="conv">Conversation <strong>{e(name)}</strong></p>'
        f'<nav class="pager" aria-label="Conversation">{" · ".join(nav)}</nav>'
        f"{window_html(window, focus, more_link=False)}"
        f'<nav class="pager" aria-label="Conversation, bottom">{" · ".join(nav)}</nav>'
    )
    return layout(request, f"Conversation: {name}", body, "/conversations")


# -- timeline ----------------------------------------------------------------------------------


async def timeline(request: Request, lanes: Lanes) -> Response:
    period = request.query_params.get("period") or "month"
    speaker = request.query_params.get("speaker") or None
    periods = await lanes.reader(lanes.reader.memory.browse.timeline, period, speaker=speaker)
    other = "week" if period == "month" else "month"
    total = sum(p["messages"] for p in periods)
    whose = f' said by <strong>{e(speaker)}</strong> (<a href="/timeline">everyone</a>)' if speaker else ""
    rows = "".join(
        f'<tr><td><a href="{e(url("/period", start=p["start"], end=p["end"]))}">{e(p["start"])}</a></td>'
        f'<td class="n">{p["messages"]:,}</td><td class="n">{p["episodes"]:,}</td></tr>'
        for p in periods
    )
    body = (
        f"<p>{plural(total, 'message')}{whose} over {plural(len(periods), e(period))}. Per <strong>{e(period)}</strong> · "
        f'<a href="{e(url("/timeline", period=other, speaker=speaker))}">per {other}</a>. Click a bar (or focus it with '
        f"<kbd>Tab</kbd>, move with <kbd>←</kbd> <kbd>→</kbd>) to open that {e(period)}.</p>"
        f'<p class="legend"><span class="key messages"></span> messages <span class="key episodes"></span> episodes</p>'
        f'<div class="chart" id="chart">{svg.timeline(periods, period)}</div>'
        f'<p id="chart-info" class="live" aria-live="polite"></p>'
        f"<details><summary>As a table</summary><table><thead><tr><th scope=col>{e(period.title())} from</th>"
        f"<th scope=col>Messages</th><th scope=col>Episodes</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )
    return layout(request, f"Timeline of {speaker}" if speaker else "Timeline", body, "/timeline")


def span(first: str | None, last: str | None) -> str:
    """ "2024-02-14 19:05 to 21:40" (the day once when both are on it)."""
    a, b = when(first), when(last)
    if not first or not last or a == b:
        return a
    return f"{a} to {b[11:] if a[:10] == b[:10] else b}"


def episode_html(ep: dict[str, Any]) -> str:
    """An episode in a list: its title and narrative when the LLM wrote them, else (built
    without the LLM) its time span and first lines."""
    title = ep.get("title") or f"Episode in {ep.get('conversation') or 'a conversation'}"
    head = (
        f'<a href="/memory/{e(ep["id"])}">{e(title)}</a> '
        f'<span class="note">{e(span(ep.get("start"), ep.get("end")))} · {plural(ep["messages"], "message")}</span>'
    )
    if ep.get("narrative"):
        return f'<li class="item">{head}<p class="text">{e(ep["narrative"])}</p></li>'
    opening = ep.get("opening") or []
    lines = "".join(
        f'<li><span class="speaker">{e(m["speaker"])}</span>: {e(_clip(m["text"], 160))}</li>' for m in opening
    )
    more = ep["messages"] - len(opening)
    rest = f"and {plural(more, 'more message')} · " if more > 0 else ""
    return (
        f'<li class="item episode">{head}<ul class="opening">{lines}</ul>'
        f'<p class="note">{rest}no summary yet (built without the LLM)</p></li>'
    )


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


async def period_page(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    found = await lanes.reader(lanes.reader.memory.browse.period, p.get("start") or "", p.get("end") or "")
    convs = "".join(
        f'<li class="item"><a href="{e(url("/conversation", around=c["first_id"], n=WINDOW))}">{e(c["conversation"])}</a> '
        f'<span class="note">{plural(c["messages"], "message")}, {e(span(c["first"], c["last"]))}</span></li>'
        for c in found["conversations"]
    )
    eps = "".join(episode_html(ep) for ep in found["episodes"])
    body = (
        f'<p><a href="/timeline">back to the timeline</a></p>'
        f'<h2 id="convs">Conversations ({len(found["conversations"])})</h2>'
        + (f'<ul class="list" aria-labelledby="convs">{convs}</ul>' if convs else "<p>None.</p>")
        + f'<h2 id="eps">Episodes ({len(found["episodes"])})</h2>'
        + (f'<ul class="list" aria-labelledby="eps">{eps}</ul>' if eps else "<p>None.</p>")
    )
    return layout(request, period_title(found["start"], found["end"]), body, "/timeline")


def period_title(start: str, end: str) -> str:
    """ "January 2024" for a month, "The week of 8 January 2024" for a week, else the first and
    the last day ([start, end) holds the days before ``end``)."""
    import datetime as dt

    try:
        first, after = dt.date.fromisoformat(start[:10]), dt.date.fromisoformat(end[:10])
    except ValueError:
        return f"From {start} to {end}"
    following = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
    if first.day == 1 and after == following:
        return svg.month_name(start)
    if (after - first).days == 7 and first.weekday() == 0:
        return f"The week of {first.day} {svg.FULL_MONTHS[first.month - 1]} {first.year}"
    last = after - dt.timedelta(days=1)
    return f"{first.isoformat()}" if last <= first else f"{first.isoformat()} to {last.isoformat()}"


# -- people ------------------------------------------------------------------------------------


def person_link(name: str) -> str:
    return f"/people/{e(quote(name, safe=''))}"


async def people(request: Request, lanes: Lanes) -> Response:
    mem = lanes.reader.memory
    everyone, talkers, owner = await lanes.reader(
        lambda: (api.people_of(mem), mem.browse.speakers(), mem.owner().describe())
    )
    rows = "".join(
        f'<tr><th scope="row"><a href="{person_link(t["speaker"])}">{e(t["speaker"])}</a></th>'
        f'<td class="n">{t["messages"]:,}</td><td>{e(day(t["first"]))}</td><td>{e(day(t["last"]))}</td>'
        f'<td><a href="{e(url("/timeline", speaker=t["speaker"]))}">month by month</a></td></tr>'
        for t in talkers
    )
    speaking = (
        '<h2 id="who">Who speaks</h2><table aria-labelledby="who"><thead><tr><th scope=col>Speaker</th>'
        "<th scope=col>Messages</th><th scope=col>First</th><th scope=col>Last</th><th scope=col>Timeline</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p>No one yet: import an export on the Curate page.</p>"
    )
    items = "".join(
        f'<li class="item"><a href="{person_link(p["name"])}">{e(p["name"])}</a> '
        f'<span class="note">{plural(p["units"], "memory", "memories")}'
        + (f" · also {e(p['aliases'])}" if p.get("aliases") and p["aliases"] != p["name"] else "")
        + "</span></li>"
        for p in everyone
    )
    known = '<h2 id="known-people">What memory knows about people</h2>' + (
        f'<ul class="list people" aria-labelledby="known-people">{items}</ul>'
        if items
        else "<p>Nothing learnt yet. What is known about people (facts, what changed, who they are) is "
        "built with the local LLM (<code>localmem ingest --extract llm</code>, or <code>localmem serve "
        "--extract llm</code>); until then each speaker's page shows what they said.</p>"
    )
    you = f'<p id="owner">You ("I" in questions): {e(owner)} (<code>localmem owner set NAME</code>).</p>'
    return layout(request, "People", you + speaking + known, "/people")


SAID_PAGE = 20  # messages of a speaker on their page


async def person(request: Request, lanes: Lanes) -> Response:
    """What memory knows about a person (with the LLM), and for a speaker what they said, over
    time and the latest first; either alone is enough for a page."""
    from ..errors import NotFoundError

    name = request.path_params["name"]
    offset = api._int(request.query_params.get("from"), "from", 0, 0, 10**9)
    mem = lanes.reader.memory

    def load() -> tuple[Any, Any, Any, Any]:
        try:
            prof = as_json(mem.profile(name))
        except NotFoundError:
            prof = None
        said = next((s for s in mem.browse.speakers(10_000) if s.speaker == name), None)
        if said is None:
            return prof, None, [], []
        return (
            prof,
            as_json(said),
            as_json(mem.browse.timeline("month", speaker=name)),
            mem.browse.said_by(name, SAID_PAGE, offset),
        )

    prof, said, months, messages = await lanes.reader(load)
    if prof is None and said is None:
        raise NotFoundError(
            f"no one called {name!r} speaks or is known in namespace '{mem.namespace}'",
            "the People page lists everyone who speaks",
        )
    parts = []
    if said is not None:
        parts.append(
            f'<p class="summary">{e(name)} said {plural(said["messages"], "message")}, '
            f"from {e(day(said['first']))} to {e(day(said['last']))}.</p>"
            f'<h2 id="over-time">Over time</h2><div class="chart" id="chart">{svg.timeline(months, "month")}</div>'
            f'<p id="chart-info" class="live" aria-live="polite"></p>'
        )
        rows = "".join(
            f'<li class="item"><div class="meta"><time datetime="{e(m["time"] or "")}">{e(when(m["time"]))}</time> · '
            f"in {e(m['conversation'])} · {ref_link(m['id'])} · "
            f'<a href="{e(url("/conversation", around=m["id"]))}">in context</a></div>'
            f'<p class="text">{e(m["text"])}</p></li>'
            for m in messages
        )
        pager = []
        if offset:
            pager.append(f'<a href="{person_link(name)}?from={max(offset - SAID_PAGE, 0)}">later</a>')
        if offset + len(messages) < said["messages"]:
            pager.append(f'<a href="{person_link(name)}?from={offset + SAID_PAGE}">earlier</a>')
        shown = f"{offset + 1}–{offset + len(messages)} of {said['messages']:,}" if messages else "none"
        parts.append(
            f'<h2 id="said">What {e(name)} said <span class="note">(the latest first; {shown})</span></h2>'
            f'<ol class="list" aria-labelledby="said">{rows}</ol>'
            f'<nav class="pager" aria-label="Messages">{" · ".join(pager)}</nav>'
        )
    if prof is not None:
        parts.append(person_knowledge(prof))
    elif said is not None:
        parts.append(
            '<h2 id="known">What is known</h2><p class="note">Nothing learnt yet: facts about people are '
            "built with the local LLM (<code>localmem ingest --extract llm</code>).</p>"
        )
    return layout(request, name, "".join(parts), "/people")


def person_knowledge(prof: dict[str, Any]) -> str:
    """What the LLM's build learnt about a person: aliases, summary, facts by aspect, episodes."""
    parts = []
    if prof.get("aliases"):
        parts.append(f"<p>Also called {e(', '.join(prof['aliases']))}.</p>")
    if prof.get("summary"):
        parts.append(f'<p class="summary">{e(prof["summary"])}</p>')
    parts.append('<h2 id="known">What is known</h2>')
    if not prof["knowledge"]:
        parts.append("<p>Nothing yet.</p>")
    for aspect, statements in prof["knowledge"].items():
        rows = "".join(
            f'<li class="item{"" if s["current"] else " old"}"><a href="/memory/{e(s["unit_id"])}">{e(s["text"])}</a>'
            f' <span class="note">{e(day(s["time"]))}'
            + ("" if s["current"] else f", replaced {e(day(s.get('until')))}")
            + (f" · from {', '.join(ref_link(x) for x in s['sources'])}" if s.get("sources") else "")
            + "</span></li>"
            for s in statements
        )
        parts.append(f'<h3>{e(aspect)}</h3><ul class="list">{rows}</ul>')
    eps = prof["episodes"]
    parts.append(f'<h2 id="tl">In {plural(len(eps), "episode")}</h2>{svg.sparkline([ep["time"] for ep in eps])}')
    parts.append(
        '<ol class="list">'
        + "".join(
            f'<li class="item"><time>{e(day(ep["time"]))}</time> <a href="/memory/{e(ep["episode_id"])}">'
            f'{e(ep["title"] or ref_text(ep["episode_id"], "episode"))}</a> <span class="note">{e(ep["role"])}</span></li>'
            for ep in eps
        )
        + "</ol>"
    )
    return "".join(parts)


# -- one memory --------------------------------------------------------------------------------


async def memory_page(request: Request, lanes: Lanes) -> Response:
    from .overview import source_name

    item = request.path_params["item"]
    found = await lanes.reader(lanes.reader.memory.browse.get, item)
    word = "message" if found["kind"] == "message" else KIND_WORDS.get(found["kind"], "memory")
    parts: list[str] = []
    if found["kind"] == "message":
        window = await lanes.reader(lanes.reader.memory.browse.context, found["id"], CONTEXT_AROUND)
        src = found["source"]
        parts.append(
            f'<blockquote class="memory"><p class="text">{e(found["text"])}</p></blockquote>'
            f'<dl class="facts"><dt>Said by</dt><dd>{e(found["speaker"])}{" (" + e(found["role"]) + ")" if found["role"] else ""}</dd>'
            f"<dt>When</dt><dd>{e(when(found['time']))}</dd><dt>Conversation</dt><dd>{e(found['conversation'])}</dd>"
            f"<dt>Source</dt><dd>{e(source_name(src['kind'], src.get('uri') or ''))}</dd></dl>"
        )
        if found.get("replaces") or found.get("replaced_by"):
            parts.append("<h2>Corrections</h2><ul class=list>")
            if found.get("replaces"):
                parts.append(f"<li>This corrects {ref_link(found['replaces'])}</li>")
            if found.get("replaced_by"):
                parts.append(f"<li>Corrected by {ref_link(found['replaced_by'])}</li>")
            parts.append("</ul>")
        parts.append(f"<h2>In its conversation</h2>{window_html(window, [found['id']])}")
        parts.append(f"<h2>What rests on it ({len(found['units'])})</h2>")
        parts.append(
            "<ul class=list>"
            + "".join(
                f'<li class="item">{ref_link(u["id"], u["kind"])} {e(u["text"]) or "<span class=note>(no summary yet)</span>"}</li>'
                for u in found["units"]
            )
            + "</ul>"
            if found["units"]
            else "<p>Nothing has been built from it.</p>"
        )
        parts.append(
            f'<h2>Curate</h2><form class="inline" method="post" action="{csrf_action(request, "/curate/correct")}">'
            f'<input type="hidden" name="item" value="{e(found["id"])}">'
            f'<label for="fix">Correct it</label><textarea id="fix" name="text" rows="2" required>{e(found["text"])}</textarea>'
            f'<button type="submit">Store the correction</button></form>'
        )
    else:
        sources = found["sources"]
        times = [s["sent_at"] for s in sources if s.get("sent_at")]
        if found["text"].strip():
            said = f'<p class="text">{e(found["text"])}</p>'
        else:  # an episode closed without the LLM: no title, no narrative yet
            lines = "".join(
                f'<li><span class="speaker">{e(s["speaker"])}</span>: {e(_clip(s["text"], 200))}</li>'
                for s in sources[:3]
            )
            said = (
                f'<p class="text">{plural(len(sources), "message")}, '
                f"{e(span(min(times), max(times)) if times else 'no date')}.</p>"
                f'<ul class="opening">{lines}</ul><p class="note">No summary yet: it was built without the LLM '
                "(<code>localmem ingest --extract llm</code> writes one).</p>"
            )
        parts.append(
            f'<blockquote class="memory"><p class="kind">{e(found["kind"])}</p>'
            + (f"<h2>{e(found['title'])}</h2>" if found.get("title") else "")
            + f"{said}</blockquote>"
            f'<dl class="facts"><dt>When</dt><dd>{e(when(found.get("occurred_start") or found.get("mentioned_at")))}</dd>'
            + (f"<dt>Aspect</dt><dd>{e(found['aspect'])}</dd>" if found.get("aspect") else "")
            + (
                f"<dt>Episode</dt><dd>{ref_link(found['episode_id'], 'episode')}</dd>"
                if found.get("episode_id")
                else ""
            )
            + f"<dt>Built by</dt><dd>{e(found.get('model_id') or 'rules')}</dd></dl>"
        )
        parts.append(f"<h2>What it rests on ({plural(len(sources), 'message')})</h2><ol class=thread>")
        parts.append(
            thread_rows([{**s, "time": s["sent_at"], "replaced_by": None} for s in found["sources"]]) + "</ol>"
        )
        if found["entities"]:
            parts.append(
                "<h2>Who and what</h2><ul class=list>"
                + "".join(
                    f'<li><a href="/people/{e(quote(x["name"], safe=""))}">{e(x["name"])}</a> <span class="note">{e(x["type"])}, {e(x["role"])}</span></li>'
                    if x["type"] == "person"
                    else f'<li>{e(x["name"])} <span class="note">{e(x["type"])}</span></li>'
                    for x in found["entities"]
                )
                + "</ul>"
            )
        rest = [x for x in found["links"] if x["direction"] == "in"]
        parts.append(f"<h2>What rests on it ({len(rest)})</h2>")
        parts.append(
            "<ul class=list>"
            + "".join(
                f'<li>{ref_link(x["id"])} <span class="note">{e(x["type"])}</span> {e(x["text"])}</li>' for x in rest
            )
            + "</ul>"
            if rest
            else "<p>Nothing links to it.</p>"
        )
    parts.append(
        f'<p><a class="button danger" href="{e(url("/curate/forget", ids=found["id"]))}">Forget this {e(word)}…</a></p>'
    )
    return layout(request, f"{word.capitalize()} {found['id']}", "".join(parts))


# -- curate ------------------------------------------------------------------------------------


async def curate(request: Request, lanes: Lanes) -> Response:
    from ..config import FORMATS

    options = "".join(f'<option value="{e(f)}">{e(f)}</option>' for f in FORMATS)
    body = f"""
<section aria-labelledby="imp"><h2 id="imp">Import an export</h2>
<p>A ChatGPT or Claude export (.zip or .json), a WhatsApp chat (.txt or .zip), a Slack or Discord export,
notes, JSONL… Everything stays on this machine; the uploaded copy is removed once it is read.</p>
<form id="import-form" method="post" enctype="multipart/form-data" action="{csrf_action(request, "/curate/import")}">
<div class="drop" id="drop"><label for="file">Choose a file, or drop it here</label>
<input id="file" name="file" type="file" required></div>
<label for="format">Format</label><select id="format" name="format"><option value="">detect</option>{options}</select>
<button type="submit">Import</button></form>
<div id="import-progress" class="live" aria-live="polite"></div>
</section>
<section aria-labelledby="fg"><h2 id="fg">Forget</h2>
<p>First see exactly what would go, then confirm.</p>
<form method="get" action="/curate/forget">
<label for="ids">Ids, as shown beside each message or memory (message m:12, episode u:40)</label><input id="ids" name="ids">
<label for="conv">or a whole conversation (<a href="/conversations">the list</a> has a link for each)</label><input id="conv" name="conversation">
<label for="match">or everything containing</label><input id="match" name="match">
<button type="submit">Show what would be forgotten</button></form></section>
<section aria-labelledby="cr"><h2 id="cr">Correct a message</h2>
<form method="post" action="{csrf_action(request, "/curate/correct")}">
<label for="item">Message id</label><input id="item" name="item" placeholder="m:12" required>
<label for="text">The right text</label><textarea id="text" name="text" rows="2" required></textarea>
<button type="submit">Store the correction</button></form></section>"""
    return layout(request, "Curate", body, "/curate")


def _forget_target(source: Any) -> dict[str, Any]:
    target: dict[str, Any] = {}
    if source.get("ids"):
        target["ids"] = str(source["ids"]).replace(",", " ").split()
    for name in ("conversation", "match", "before", "source_id"):
        if source.get(name):
            target[name] = source[name]
    return target


async def forget_preview(request: Request, lanes: Lanes) -> Response:
    target = _forget_target(request.query_params)
    found = await api.forget_call(lanes, target, confirm=False)
    counts = found["counts"]
    texts = found["texts"]
    rows = "".join(
        f'<li class="item">{ref_link(i)} <span class="text">{e(texts.get(i, "")) or "<span class=note>(no text)</span>"}</span></li>'
        for i in found["messages"] + found["units"]
    )
    hidden = "".join(
        f'<input type="hidden" name="{e(k)}" value="{e(" ".join(v) if isinstance(v, list) else v)}">'
        for k, v in target.items()
    )
    kept = (
        f"<p>{plural(len(found['kept_units']), 'built memory', 'built memories')} also rest on other messages and stay: "
        f"{', '.join(ref_link(u) for u in found['kept_units'])}.</p>"
        if found["kept_units"]
        else ""
    )
    if not counts["messages"] and not counts["units"]:
        body = "<p>Nothing matches: nothing would be forgotten.</p>"
    else:
        body = (
            f'<p class="warning">This deletes for good {plural(counts["messages"], "message")}, '
            f"{plural(counts['units'], 'built memory', 'built memories')} (those resting only on them), "
            f"{plural(counts['entities'], 'person or thing', 'people or things')} and "
            f"{plural(counts['sources'], 'source')}. The text is scrubbed from the store's file.</p>"
            f'<ol class="list">{rows}</ol>{kept}'
            f'<form method="post" action="{csrf_action(request, "/curate/forget")}">{hidden}'
            f'<button type="submit" class="danger" id="confirm-forget">Forget these for good</button> '
            f'<a href="/curate">Cancel</a></form>'
        )
    return layout(request, "Forget: what would go", body, "/curate")


async def forget_confirm(request: Request, lanes: Lanes) -> Response:
    form = await request.form()
    done = await api.forget_call(lanes, _forget_target(form), confirm=True)
    counts = {k: int(v) for k, v in done["counts"].items() if k in FORGOTTEN}
    # Post/redirect/get: the address bar shows the counts, never the form's CSRF token, and a
    # reload does not post again.
    return RedirectResponse(url("/curate/forgotten", **counts), status_code=303)


FORGOTTEN = ("messages", "units", "entities", "sources")


async def forgotten(request: Request, lanes: Lanes) -> Response:
    """What a forget took, after its redirect (the counts come in the address)."""
    n = {k: api._int(request.query_params.get(k), k, 0, 0, 2**62) for k in FORGOTTEN}
    body = (
        f'<p class="done" role="status">Forgotten for good: {plural(n["messages"], "message")}, '
        f"{plural(n['units'], 'built memory', 'built memories')}, "
        f"{plural(n['entities'], 'person or thing', 'people or things')}, {plural(n['sources'], 'source')}. "
        "The text is scrubbed from the store's file.</p>"
        '<p><a href="/conversations">The conversations</a> · <a href="/">Back to search</a></p>'
    )
    return layout(request, "Forgotten", body, "/curate")


async def correct_post(request: Request, lanes: Lanes) -> Response:
    form = await request.form()
    added = await lanes.writer(lanes.writer.memory.correct, str(form.get("item") or ""), str(form.get("text") or ""))
    return RedirectResponse(f"/memory/{added['id']}", status_code=303)


def report_html(report: dict[str, Any]) -> str:
    """An import's summary: what was stored, what was left out and why, then the importer's notes."""
    from .overview import source_name

    rows = "".join(
        f"<tr><td>{e(source_name('', s['name']))}</td><td>{e(s['format'])}</td><td class=n>{s['messages']:,}</td>"
        f"<td class=n>{s['added']:,}</td></tr>"
        for s in report.get("sources", [])
    )
    left = [f"{n['path']}: {n['why']}" for n in report.get("not_read", [])]
    notes = report.get("notes", [])
    skipped = report.get("skipped", 0)
    return (
        f'<section class="report" role="status"><h2>Imported {e(report.get("file") or report.get("path"))}</h2>'
        f"<p>Stored <strong>{plural(report['added'], 'new message')}</strong> ({e(report['format'])}) in "
        f"{report['seconds']:.1f} s"
        + (f"; {skipped:,} {'was' if skipped == 1 else 'were'} already stored" if skipped else "")
        + (
            f"; {report['conflicts']:,} stored ids had other text here (kept as stored)"
            if report.get("conflicts")
            else ""
        )
        + ".</p>"
        + (
            f"<table><thead><tr><th scope=col>Source</th><th scope=col>Format</th><th scope=col>Messages</th>"
            f"<th scope=col>New</th></tr></thead><tbody>{rows}</tbody></table>"
            if rows
            else ""
        )
        + (
            f"<h3>Left out</h3><ul class=list>{''.join(f'<li>{e(x)}</li>' for x in left)}</ul>"
            if left
            else "<p>No file was left out.</p>"
        )
        + (f"<h3>Notes</h3><ul class=list>{''.join(f'<li>{e(x)}</li>' for x in notes)}</ul>" if notes else "")
        + '<p><a href="/conversations">See its conversations</a> · <a href="/timeline">the timeline</a></p></section>'
    )


async def import_post(request: Request, lanes: Lanes) -> Response:
    """Without the script: the upload is read to the end, then the summary is shown."""
    response = await api.ingest(request, lanes)
    if not isinstance(response, StreamingResponse):
        return response
    result: dict[str, Any] | None = None
    async for line in response.body_iterator:
        event = json.loads(line if isinstance(line, (str, bytes)) else bytes(line))
        if event["event"] in ("report", "error"):
            result = event
    if result is None or result["event"] == "error":
        error = (result or {}).get("error") or {"error": "the import stopped", "code": "unexpected"}
        return error_page(request, ReportedError(error), "Import failed")
    # Post/redirect/get, as after a forget: the report is kept (in this process, the last few)
    # under a random key, and the address bar shows that key, not the form's CSRF token.
    import secrets

    reports = request.app.state.import_reports
    key = secrets.token_urlsafe(12)
    reports[key] = result["report"]
    while len(reports) > KEPT_REPORTS:
        reports.pop(next(iter(reports)))
    return RedirectResponse(url("/curate/imported", report=key), status_code=303)


KEPT_REPORTS = 20  # import reports kept for the page after the no-script import's redirect


async def imported(request: Request, lanes: Lanes) -> Response:
    """An import's report, after the redirect that follows a no-script import."""
    from ..errors import NotFoundError

    report = request.app.state.import_reports.get(request.query_params.get("report") or "")
    if report is None:
        raise NotFoundError(
            "this import's report is no longer kept (the server keeps the last few until it stops)",
            "what was imported is on the Conversations page",
        )
    return layout(request, "Import", report_html(report), "/curate")


async def report_fragment(request: Request, lanes: Lanes) -> Response:
    """For the page's script: an import report (posted back as JSON) rendered as HTML."""
    data = await api._json_body(request)
    return HTMLResponse(report_html(data))


# -- settings ----------------------------------------------------------------------------------


async def settings(request: Request, lanes: Lanes) -> Response:
    mem = lanes.reader.memory
    doctor, stats = await lanes.reader(lambda: (mem.admin.doctor(), mem.stats()))
    config = mem.config
    loading = model_words(request.app.state.model)

    def model(role: str, info: dict[str, Any]) -> str:
        shown = {k: v for k, v in info.items() if k in ("id", "backend", "from", "status", "model", "path", "url")}
        items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in shown.items())
        return f'<h3>{e(role)}</h3><dl class="facts">{items}</dl>'

    body = (
        '<p class="note">Read only. Settings come from the config file, LOCALMEM_ variables and options '
        "(<code>localmem doctor</code> says which).</p>"
        f'<dl class="facts"><dt>Store</dt><dd>{e(redact(mem.path))}</dd>'
        f"<dt>Size</dt><dd>{stats['db_bytes'] / 1e6:,.1f} MB</dd>"
        f"<dt>Encrypted</dt><dd>{'yes' if mem.admin.encrypted else 'no'}</dd>"
        f"<dt>Namespace</dt><dd>{e(mem.namespace)}</dd>"
        f"<dt>Holds</dt><dd>{plural(stats['messages'], 'message')}, {plural(stats['conversations'], 'conversation')}</dd>"
        f"<dt>Integrity</dt><dd>{e(doctor.get('db', {}).get('integrity'))}</dd>"
        f"<dt>Model server</dt><dd>{e(config.llm_url or 'none: the LLM runs in this process')}</dd>"
        + (f"<dt>The model</dt><dd>{e(loading)}</dd>" if loading else "")
        + f"<dt>Extraction</dt><dd>{e(config.extract)}</dd></dl>"
        "<h2>Models and where they come from</h2>"
        + model("Embedder", doctor.get("embedder") or {})
        + model("LLM", doctor.get("llm") or {})
        + model("Reranker", doctor.get("reranker") or {})
        + f'<p class="note">localmem {e(doctor.get("localmem"))}, SQLite {e(doctor.get("sqlite"))}. '
        f'The API is described at <a href="/api/openapi.json">/api/openapi.json</a>; MCP is served at /mcp.</p>'
    )
    return layout(request, "Settings", body, "/settings")


def routes() -> list[Route]:
    from . import overview

    return [
        Route("/", page(home)),
        Route("/ask/stream", page(ask_stream)),
        Route("/conversation", page(conversation)),
        Route("/timeline", page(timeline)),
        Route("/period", page(period_page)),
        Route("/people", page(people)),
        Route("/people/{name}", page(person)),
        Route("/memory/{item}", page(memory_page)),
        Route("/curate", page(curate)),
        Route("/curate/forget", page(forget_preview), methods=["GET"]),
        Route("/curate/forget", page(forget_confirm), methods=["POST"]),
        Route("/curate/correct", page(correct_post), methods=["POST"]),
        Route("/curate/import", page(import_post), methods=["POST"]),
        Route("/curate/report", page(report_fragment), methods=["POST"]),
        Route("/settings", page(settings)),
        Route("/curate/forgotten", page(forgotten)),
        Route("/curate/imported", page(imported)),
        Route("/conversations", page(overview.conversations)),
        Route("/overview", page(overview.overview)),
    ]
