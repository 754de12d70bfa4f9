"""The web page, rendered by the server: every page works without JavaScript, and everything
taken from the store (or from the request) goes through :func:`..markup.e` (``html.escape``) on
its way into the HTML, so a stored ``<script>`` is shown as text. ``static/app.js`` only adds
progress (ask, import), the timeline's keyboard and pointer interaction, and shortcuts.

The pages, by room: :mod:`.search` (search & ask), :mod:`.browse` (a conversation, the timeline,
a period), :mod:`.people`, :mod:`.memory` (one memory), :mod:`.overview` (the conversations and
the overview), :mod:`.curate` (import, forget, correct) and :mod:`.settings`; every page in the
frame of :mod:`.layout`, its errors as :mod:`.errors` shows them, and the pieces several pages
share in :mod:`.pieces` (and :mod:`..markup`)."""

from __future__ import annotations

from starlette.routing import Route

from . import browse, curate, memory, overview, people, search, settings
from .errors import page


def routes() -> list[Route]:
    """Every page's route."""
    return [
        Route("/", page(search.home)),
        Route("/ask/stream", page(search.ask_stream)),
        Route("/conversation", page(browse.conversation)),
        Route("/timeline", page(browse.timeline)),
        Route("/period", page(browse.period_page)),
        Route("/people", page(people.people)),
        Route("/people/{name}", page(people.person)),
        Route("/memory/{item}", page(memory.memory_page)),
        Route("/curate", page(curate.curate)),
        Route("/curate/forget", page(curate.forget_preview), methods=["GET"]),
        Route("/curate/forget", page(curate.forget_confirm), methods=["POST"]),
        Route("/curate/correct", page(curate.correct_post), methods=["POST"]),
        Route("/curate/import", page(curate.import_post), methods=["POST"]),
        Route("/curate/report", page(curate.report_fragment), methods=["POST"]),
        Route("/settings", page(settings.settings)),
        Route("/curate/forgotten", page(curate.forgotten)),
        Route("/curate/imported", page(curate.imported)),
        Route("/conversations", page(overview.conversations)),
        Route("/overview", page(overview.overview)),
    ]
