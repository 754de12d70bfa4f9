"""Errors as pages: what happened and what to do next on the page, with the status of the
library's error (a LocalmemError a page raises becomes one, through :func:`page`)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ...errors import LocalmemError, NotFoundError
from ..calls import error_dict, error_status
from ..markup import e
from .layout import layout

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
