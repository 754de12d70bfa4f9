"""Curate: import an export (with the page's script, its progress; without, its report after the
upload), forget (first what would go, then for good), and correct a message."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from ...config import FORMATS
from ...errors import LocalmemError, NotFoundError
from .. import api
from ..calls import Lanes, ReportedError, error_dict, error_status, usage_error
from ..markup import e, plural, ref_link, source_name, url
from ..params import json_body, whole_number
from .errors import error_page
from .layout import csrf_action, layout


async def curate(request: Request, lanes: Lanes) -> Response:
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
    n = {k: whole_number(request.query_params.get(k), k, 0, 0, 2**62) for k in FORGOTTEN}
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

    report = request.app.state.import_reports.get(request.query_params.get("report") or "")
    if report is None:
        raise NotFoundError(
            "this import's report is no longer kept (the server keeps the last few until it stops)",
            "what was imported is on the Conversations page",
        )
    return layout(request, "Import", report_html(report), "/curate")


async def report_fragment(request: Request, lanes: Lanes) -> Response:
    """For the page's script: an import report (posted back as JSON) rendered as HTML. What is
    not a report gets one line the script can show in its place (400), not a whole page."""
    try:
        data = await json_body(request)
        check_report(data)
    except LocalmemError as exc:
        error = error_dict(exc)
        line = f'<p class="error" role="alert" data-code="{e(error["code"])}">{e(error["error"])}.</p>'
        return HTMLResponse(line, status_code=error_status(error))
    return HTMLResponse(report_html(data))


# What :func:`report_html` reads of a report, and of each of its sources and files left out.
REPORT_FIELDS = {"added": int, "format": str, "seconds": (int, float)}
REPORT_OPTIONAL = {"file": str, "path": str, "skipped": int, "conflicts": int, "sources": list, "not_read": list,
                   "notes": list}  # fmt: skip
SOURCE_FIELDS = {"name": str, "format": str, "messages": int, "added": int}
LEFT_OUT_FIELDS = {"path": str, "why": str}


def check_report(report: dict[str, Any]) -> None:
    """Raise a usage error naming the first field of ``report`` that an import's report (the
    ``report`` event of ``/api/ingest``) would not have: missing, or of another kind."""

    def check(data: Any, fields: dict[str, Any], where: str, required: bool = True) -> None:
        if not isinstance(data, dict):
            raise usage_error(f"{where} is not an object", NOT_A_REPORT)
        for name, kind in fields.items():
            value = data.get(name)
            if value is None and not required:
                continue
            if value is None or isinstance(value, bool) or not isinstance(value, kind):
                said = "is missing" if value is None else "is of the wrong kind"
                raise usage_error(f"'{name}' of {where} {said}", NOT_A_REPORT)

    check(report, REPORT_FIELDS, "the report")
    check(report, REPORT_OPTIONAL, "the report", required=False)
    for i, source in enumerate(report.get("sources") or []):
        check(source, SOURCE_FIELDS, f"the report's source {i + 1}")
    for i, left in enumerate(report.get("not_read") or []):
        check(left, LEFT_OUT_FIELDS, f"the report's file left out {i + 1}")
    if not all(isinstance(note, str) for note in report.get("notes") or []):
        raise usage_error("the report's notes are not all text", NOT_A_REPORT)


NOT_A_REPORT = "post the report /api/ingest answered, unchanged"
