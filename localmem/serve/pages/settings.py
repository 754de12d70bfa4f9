"""The settings page: the store, its size and health, the settings that matter to the page, and
the models with where they come from (read only)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...redact import redact
from ..calls import Lanes
from ..markup import e, plural
from .layout import layout
from .search import model_words


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
