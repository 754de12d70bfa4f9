"""Every page's frame: the header with the rooms (:data:`NAV`), the main part and the footer with
the keys; and a form's action with the CSRF token."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..markup import e, url

NAV = (("/", "Search & ask", "s"), ("/overview", "Overview", "o"), ("/conversations", "Conversations", "v"),
       ("/timeline", "Timeline", "t"), ("/people", "People", "p"), ("/curate", "Curate", "c"),
       ("/settings", "Settings", "g"))  # fmt: skip


def layout(request: Request, title: str, body: str, active: str = "") -> HTMLResponse:
    """The page ``title`` with ``body`` in the frame; ``active``: the menu entry it is under."""
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


def csrf_action(request: Request, path: str) -> str:
    """A form's action for a POST: the CSRF token in its query (checked before any route runs)."""
    return e(url(path, csrf=request.app.state.guard.csrf))
