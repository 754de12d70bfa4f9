"""One memory's page: a message in its conversation, with its corrections and what was built
from it; or a built memory (an episode, a fact) with what it rests on and what rests on it. Each
links to forgetting it."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from ..calls import Lanes
from ..markup import KIND_WORDS, clip, e, plural, ref_link, source_name, span, url, when
from .layout import csrf_action, layout
from .pieces import CONTEXT_AROUND, thread_rows, window_html


async def memory_page(request: Request, lanes: Lanes) -> Response:
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
                f'<li><span class="speaker">{e(s["speaker"])}</span>: {e(clip(s["text"], 200))}</li>'
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
