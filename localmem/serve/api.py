"""The JSON HTTP API under ``/api``: each endpoint calls one method of a
:class:`~localmem.memory.Memory` (or of its parts ``browse`` and ``admin``) and answers its result as JSON (errors: the CLI's ``--json`` error, with an HTTP status
for its code). ``ask`` and ``ingest`` stream NDJSON: one JSON object a line, progress first, the
result (or the error) last. The OpenAPI document at ``/api/openapi.json`` is made from
:data:`ENDPOINTS`, the same table the routes are."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio
import anyio.from_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import __version__, progress
from ..config import ASK_MODES, DEFAULT_K, FORMATS
from ..errors import LocalmemError
from .calls import Lanes, as_json, error_dict, error_status, usage_error
from .params import json_body as _json_body
from .params import required_text as _need
from .params import text_field as _text
from .params import whole_number as _int
from .security import MAX_NONCE, hello_proof

log = logging.getLogger("localmem.serve")

MAX_K = 100
UPLOAD_CHUNK = 1 << 20
NDJSON = "application/x-ndjson"
CLIENT_HEADER = "x-localmem-client"  # "cli": a question `localmem ask` passed on

Handler = Callable[[Request, Lanes], Awaitable[Response]]


@dataclass(frozen=True)
class Endpoint:
    """One API route and what the OpenAPI document says of it."""

    method: str
    path: str
    handler: Handler
    summary: str
    params: tuple[tuple[str, str, bool, str], ...] = ()  # (name, type, required, description): query/path
    body: dict[str, Any] | None = None  # JSON schema of the request body
    streams: bool = False  # answers NDJSON
    upload: bool = False  # takes multipart/form-data with a file
    tags: tuple[str, ...] = field(default=("memory",))
    statuses: tuple[int, ...] = (200,)  # what it answers when it succeeds
    public: bool = False  # needs no token (the hello proof)


def ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(as_json(data), status_code=status)


def failed(exc: BaseException) -> JSONResponse:
    error = error_dict(exc)
    if error["code"] == "unexpected":
        log.exception("unexpected error", exc_info=exc)
    return JSONResponse(error, status_code=error_status(error))


def guarded(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A route calling ``fn(request, lanes)``; a LocalmemError (or any failure) becomes the
    CLI's JSON error."""

    async def endpoint(request: Request) -> Response:
        try:
            return await fn(request, request.app.state.lanes)
        except Exception as exc:
            return failed(exc)

    endpoint.__name__ = fn.__name__
    return endpoint


# -- endpoints ---------------------------------------------------------------------------------


async def search(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    query = _text(dict(p), "q")
    filters = {name: p[name] for name in ("since", "until", "as_of", "speaker", "conversation") if p.get(name)}
    k = _int(p.get("k"), "k", DEFAULT_K, 1, MAX_K)
    hits = await lanes.reader(lanes.reader.memory.search, query, k=k, **filters)
    return ok({"query": query, "hits": hits})


async def ask(request: Request, lanes: Lanes) -> Response:
    data = await _json_body(request)
    question = _need(data, "question")
    options = ask_options(data)
    if request.headers.get(CLIENT_HEADER) == "cli":
        log.info("ask from the command line")  # tests and logs see where a question came from
        # `localmem ask` reads: a namespace the store does not hold is its error, not an empty answer.
        await lanes.reader(lanes.reader.memory.require_namespace)
    if data.get("stream") is False:
        return ok(await lanes.writer(lanes.writer.memory.ask, question, **options))
    return ndjson(
        ask_events(
            lanes,
            question,
            options,
            text=data.get("text") is not False,
            trace=data.get("trace") is True,
            model=getattr(request.app.state, "model", None),
        )
    )


def ask_options(data: dict[str, Any]) -> dict[str, Any]:
    """Memory.ask's options from an ask request's body (what ``localmem ask`` may set)."""
    options: dict[str, Any] = {"now": _text(data, "now", required=False)}
    mode = _text(data, "mode", required=False)
    if mode is not None:
        options["mode"] = mode  # Memory.ask says which modes there are
    if data.get("steps") is not None:
        options["steps"] = _int(data["steps"], "steps", 0, 1, 1000)
    if data.get("max_tokens") is not None:
        options["max_tokens"] = _int(data["max_tokens"], "max_tokens", 0, 1, 1_000_000)
    channels = data.get("channels")
    if channels is not None:
        if not isinstance(channels, list) or not all(isinstance(c, str) for c in channels):
            raise usage_error("'channels' must be a list of channel names")
        options["channels"] = channels
    for name in ("since", "until", "speaker", "conversation"):
        options[name] = _text(data, name, required=False)
    if data.get("as_of") is not None:  # only when given: Memory.ask's other callers leave it out
        options["as_of"] = _text(data, "as_of", required=False)
    meta = data.get("meta")
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise usage_error("'meta' must be an object of text values")
        options["meta"] = meta or None
    return options


async def ask_events(
    lanes: Lanes,
    question: str,
    options: dict[str, Any],
    *,
    text: bool = True,
    trace: bool = False,
    model: Any = None,
) -> AsyncIterator[dict[str, Any]]:
    """``{"event": "progress", "stage", "message", "elapsed"}`` as each stage starts ("start"
    until the writer's lane takes the question, then :mod:`localmem.progress`'s: "assemble",
    "load", "search", "answer"; ``elapsed``: seconds since the question arrived), ``{"event":
    "text", "text"}`` for each piece the model writes (unless ``text`` is false), ``{"event":
    "step", "step"}`` for each tool call of the agentic mode (with ``trace``), then ``{"event":
    "answer", "answer"}`` (or ``{"event": "error", "error"}``)."""
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](1000)
    started = time.perf_counter()

    def on_text(piece: str) -> None:  # in the worker thread
        anyio.from_thread.run(send.send, {"event": "text", "text": piece})

    def on_step(step: Any) -> None:  # in the worker thread
        anyio.from_thread.run(send.send, {"event": "step", "step": as_json(step)})

    def stage(name: str, words: str) -> dict[str, Any]:
        elapsed = round(time.perf_counter() - started, 1)
        return {"event": "progress", "stage": name, "message": words, "elapsed": elapsed}

    def on_progress(name: str, words: str) -> None:  # in the worker thread
        if model is not None and model.loading and name in (progress.LOAD, progress.ANSWER):
            # The call is about to wait for serve's background load (app.ModelLoad) anyway: say
            # so, and wait here, so that the stages the page shows are the ones it waits in.
            waiting = f"waiting for the model, loading in the background for {model.since():.0f} s"
            anyio.from_thread.run(send.send, stage(progress.LOAD, waiting))
            while model.loading:
                time.sleep(0.05)
            if name == progress.LOAD:
                return
        anyio.from_thread.run(send.send, stage(name, words))

    async def run() -> None:
        async with send:
            try:
                answer = await lanes.writer(
                    lanes.writer.memory.ask,
                    question,
                    on_text=on_text if text else None,
                    trace=on_step if trace else None,
                    on_progress=on_progress,
                    **options,
                )
                await send.send({"event": "answer", "answer": as_json(answer)})
            except Exception as exc:
                await send.send({"event": "error", "error": error_dict(exc)})

    # Until the writer's lane takes the question (an import or a build may hold it), it waits.
    yield stage("start", "waiting for its turn")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        async with receive:
            async for event in receive:
                yield event


async def add(request: Request, lanes: Lanes) -> Response:
    data = await _json_body(request)
    mem = lanes.writer.memory
    added = await lanes.writer(
        mem.add,
        _text(data, "speaker"),
        _text(data, "text"),
        time=_text(data, "time", False),
        role=_text(data, "role", False),
        conversation=_text(data, "conversation", False),
        id=_text(data, "id", False),
    )
    return ok(added, 201 if added["added"] else 200)


async def correct(request: Request, lanes: Lanes) -> Response:
    data = await _json_body(request)
    return ok(await lanes.writer(lanes.writer.memory.correct, _text(data, "item"), _text(data, "text")))


async def forget(request: Request, lanes: Lanes) -> Response:
    data = await _json_body(request)
    return ok(await forget_call(lanes, data, confirm=data.get("confirm") is True))


async def forget_call(lanes: Lanes, data: dict[str, Any], confirm: bool) -> dict[str, Any]:
    """Memory.forget on the one target ``data`` names; a dry run unless ``confirm``. A dry run
    also lists the text of each message and unit that would go (``texts``)."""
    target: dict[str, Any] = {}
    if data.get("ids"):
        ids = data["ids"]
        ids = [ids] if isinstance(ids, str) else ids
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise usage_error("'ids' must be a memory id or a list of them (m:ID, u:ID)")
        target["ids"] = ids
    for name in ("conversation", "before", "match"):
        if data.get(name):
            target[name] = _text(data, name)
    if data.get("source_id") not in (None, ""):
        target["source_id"] = _int(data["source_id"], "source_id", 0, 1, 2**62)
    mem = lanes.writer.memory
    result = await lanes.writer(mem.forget, dry_run=not confirm, **target)
    if not confirm:
        result["texts"] = await lanes.reader(_texts, lanes.reader.memory, result["messages"] + result["units"])
    return result


def _texts(mem: Any, items: list[str], limit: int = 200) -> dict[str, str]:
    out = {}
    for item in items[:limit]:
        try:
            found = as_json(mem.browse.get(item))
        except LocalmemError:
            continue
        who = f"{found['speaker']}: " if found.get("speaker") else ""
        out[item] = who + (found.get("text") or found.get("title") or "")
    return out


async def show(request: Request, lanes: Lanes) -> Response:
    return ok(await lanes.reader(lanes.reader.memory.browse.get, request.path_params["item"]))


async def context(request: Request, lanes: Lanes) -> Response:
    around = _int(request.query_params.get("around"), "around", 3, 0, 200)
    return ok(await lanes.reader(lanes.reader.memory.browse.context, request.path_params["item"], around))


async def profile(request: Request, lanes: Lanes) -> Response:
    return ok(await lanes.reader(lanes.reader.memory.profile, request.path_params["name"]))


async def people(request: Request, lanes: Lanes) -> Response:
    return ok({"people": await lanes.reader(people_of, lanes.reader.memory)})


def people_of(mem: Any) -> list[dict[str, Any]]:
    """Everyone memory knows of (entities of type person), the most mentioned first."""
    return [e for e in as_json(mem.browse.entities()) if e["type"] == "person"]


async def episodes(request: Request, lanes: Lanes) -> Response:
    limit = _int(request.query_params.get("limit"), "limit", 1000, 1, 100_000)
    return ok({"episodes": await lanes.reader(lanes.reader.memory.browse.episodes, limit)})


async def timeline(request: Request, lanes: Lanes) -> Response:
    period = request.query_params.get("period") or "month"
    speaker = request.query_params.get("speaker") or None
    periods = await lanes.reader(lanes.reader.memory.browse.timeline, period, speaker=speaker)
    return ok({"period": period, "speaker": speaker, "periods": periods})


async def speakers(request: Request, lanes: Lanes) -> Response:
    return ok({"speakers": await lanes.reader(lanes.reader.memory.browse.speakers)})


async def period(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    return ok(await lanes.reader(lanes.reader.memory.browse.period, _text(dict(p), "start"), _text(dict(p), "end")))


async def stats(request: Request, lanes: Lanes) -> Response:
    return ok(await lanes.writer(lanes.writer.memory.stats))  # the writer knows the background extraction


async def namespaces(request: Request, lanes: Lanes) -> Response:
    return ok({"namespaces": await lanes.reader(lanes.reader.memory.namespaces)})


async def doctor(request: Request, lanes: Lanes) -> Response:
    return ok(await lanes.reader(lanes.reader.memory.admin.doctor))


async def ingest(request: Request, lanes: Lanes) -> Response:
    if not request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        raise usage_error("send the file as multipart/form-data, in the field 'file'")
    form = await request.form(max_files=1, max_fields=8, max_part_size=1 << 20)
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise usage_error("send the file as multipart/form-data, in the field 'file'")
    fmt = form.get("format") or None
    if fmt is not None and fmt not in FORMATS:
        raise usage_error(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    conversation = form.get("conversation") or None
    if conversation is not None and not isinstance(conversation, str):
        raise usage_error("'conversation' must be text")
    folder = Path(tempfile.mkdtemp(prefix="localmem-upload-"))  # 0700: only this user reads it
    path = folder / _safe_name(upload.filename or "upload")
    try:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            while chunk := await upload.read(UPLOAD_CHUNK):
                out.write(chunk)
    except OSError as exc:  # said without the private folder's path
        _remove(folder)
        raise LocalmemError(
            f"the upload could not be kept while it is read: {exc.strerror or type(exc).__name__}",
            "check the free space of the temporary folder",
        ) from None
    except BaseException:
        _remove(folder)
        raise
    finally:
        await upload.close()
    return ndjson(ingest_events(lanes, folder, path, str(fmt) if fmt else None, str(conversation or "") or None))


async def ingest_events(
    lanes: Lanes, folder: Path, path: Path, fmt: str | None, conversation: str | None
) -> AsyncIterator[dict[str, Any]]:
    """``{"event": "progress", "done", "total"}`` as batches are stored, then ``{"event":
    "report", "report"}`` (or ``{"event": "error", "error"}``). The uploaded file is removed
    at the end, whatever happened."""
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](1000)

    def progress(done: int, total: int) -> None:  # in the worker thread
        anyio.from_thread.run(send.send, {"event": "progress", "done": done, "total": total})

    async def run() -> None:
        async with send:
            try:
                report = await lanes.writer(
                    lanes.writer.memory.ingest,
                    path,
                    format=fmt,
                    conversation=conversation,
                    progress=progress,
                    source_name=path.name,  # the file's own name, not the private copy's path
                )
                # The report names the private copy: name the file as the user gave it instead.
                folder_text = json.dumps(f"{folder}{os.sep}")[1:-1]
                data = json.loads(json.dumps(as_json(report)).replace(folder_text, ""))
                data["file"] = path.name
                await send.send({"event": "report", "report": data})
            except Exception as exc:
                await send.send({"event": "error", "error": _without_folder(error_dict(exc), folder)})
            finally:
                _remove(folder)

    yield {"event": "progress", "done": 0, "total": 0}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        async with receive:
            async for event in receive:
                yield event


def _safe_name(name: str, limit: int = 200) -> str:
    """The uploaded file's own name (format detection reads its suffix), without any folder,
    at most ``limit`` bytes in UTF-8 (a file name may have 255): a long name loses the end of
    its stem, never its suffix."""
    base = Path(name.replace("\\", "/")).name.strip(". ") or "upload"
    safe = "".join(ch if ch.isalnum() or ch in "._- " else "_" for ch in base)
    if len(safe.encode()) <= limit:
        return safe
    stem, dot, suffix = safe.rpartition(".")
    suffix = f".{suffix}" if dot and stem and len(suffix.encode()) <= 16 else ""
    stem = stem if suffix else safe
    while len((stem + suffix).encode()) > limit:
        stem = stem[:-1]
    return (stem + suffix) or "upload"


def _without_folder(error: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Errors name the temporary copy: show the name the user gave instead."""
    return {k: v.replace(f"{folder}{os.sep}", "") if isinstance(v, str) else v for k, v in error.items()}


def _remove(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink(missing_ok=True)
    folder.rmdir()


def ndjson(events: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    async def lines() -> AsyncIterator[bytes]:
        async for event in events:
            yield (json.dumps(event, ensure_ascii=False) + "\n").encode()

    return StreamingResponse(lines(), media_type=NDJSON, headers={"x-accel-buffering": "no"})


async def openapi(request: Request, lanes: Lanes) -> Response:
    return JSONResponse(openapi_document())


async def hello(request: Request, lanes: Lanes) -> Response:
    """No token: the proof that this server holds the command line's token (an HMAC of the
    nonce keyed with it), which it never sends (:func:`.security.hello_proof`)."""
    guard = request.app.state.guard
    nonce = request.query_params.get("nonce", "")
    if not guard.cli_token or not 16 <= len(nonce) <= MAX_NONCE:
        raise usage_error("give ?nonce= (16 to 128 characters)", "see docs/serve.md")
    return ok({"proof": hello_proof(guard.cli_token, nonce), "pid": os.getpid()})


_ITEM = ("item", "string", True, "A memory's id: m:ID (a message) or u:ID (a unit).")
_FORGET_BODY = {
    "type": "object",
    "description": "Exactly one target. Without confirm: true, nothing is deleted (a dry run).",
    "properties": {
        "ids": {"type": "array", "items": {"type": "string"}, "description": "m:ID and u:ID"},
        "conversation": {"type": "string"},
        "before": {"type": "string", "description": "a date or time"},
        "match": {"type": "string", "description": "text contained (case-insensitive)"},
        "source_id": {"type": "integer"},
        "confirm": {"type": "boolean", "default": False},
    },
}

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/api/search",
        search,
        "Search memory (no LLM): the best hits with speaker, time and conversation.",
        (
            ("q", "string", True, "What to look for."),
            ("k", "integer", False, f"How many hits (1 to {MAX_K})."),
            ("since", "string", False, "Only what was said on or after this date."),
            ("until", "string", False, "Only what was said on or before this date."),
            ("as_of", "string", False, "What was known then: only what was said by this date, 'now' that day."),
            ("speaker", "string", False, "Only this speaker."),
            ("conversation", "string", False, "Only this conversation."),
        ),
    ),
    Endpoint(
        "POST",
        "/api/ask",
        ask,
        "Answer a question with the local LLM and the messages it rests on. Streams NDJSON events "
        "(progress, text, then answer or error) unless stream is false.",
        body={
            "type": "object",
            "required": ["question"],
            "properties": {
                "question": {"type": "string"},
                "now": {"type": "string", "description": "the date relative questions count from"},
                "stream": {"type": "boolean", "default": True},
                "text": {"type": "boolean", "default": True, "description": "stream the answer's text as written"},
                "mode": {"type": "string", "enum": list(ASK_MODES), "default": ASK_MODES[0]},
                "steps": {"type": "integer", "description": "agentic mode: at most this many tool calls"},
                "trace": {"type": "boolean", "default": False, "description": "agentic mode: a step event per call"},
                "max_tokens": {"type": "integer", "description": "evidence tokens given to the model"},
                "channels": {"type": "array", "items": {"type": "string"}},
                "since": {"type": "string"},
                "until": {"type": "string"},
                "as_of": {"type": "string", "description": "answer with what was known then (a date)"},
                "speaker": {"type": "string"},
                "conversation": {"type": "string"},
                "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        streams=True,
    ),
    Endpoint(
        "POST",
        "/api/add",
        add,
        "Store one message (201 when added, 200 when its id was already stored).",
        statuses=(201, 200),
        body={
            "type": "object",
            "required": ["speaker", "text"],
            "properties": {
                name: {"type": "string"} for name in ("speaker", "text", "time", "role", "conversation", "id")
            },
        },
    ),
    Endpoint(
        "POST",
        "/api/ingest",
        ingest,
        "Import an uploaded export (every format the CLI reads). Streams NDJSON: progress events, then "
        "the report (what was stored, what was left out and why) or an error.",
        streams=True,
        upload=True,
    ),
    Endpoint("GET", "/api/show/{item}", show, "One memory in full: what it rests on, what rests on it.", (_ITEM,)),
    Endpoint(
        "GET",
        "/api/context/{item}",
        context,
        "A message among the messages around it in its conversation.",
        (_ITEM, ("around", "integer", False, "How many messages on each side (default 3).")),
    ),
    Endpoint(
        "POST", "/api/forget", forget, "Forget one target: a dry run, then again with confirm.", body=_FORGET_BODY
    ),
    Endpoint(
        "POST",
        "/api/correct",
        correct,
        "Store a correction of a message (the old one stays, marked replaced).",
        body={
            "type": "object",
            "required": ["item", "text"],
            "properties": {"item": {"type": "string"}, "text": {"type": "string"}},
        },
    ),
    Endpoint(
        "GET",
        "/api/profile/{name}",
        profile,
        "What memory knows about one person.",
        (("name", "string", True, "A name or alias."),),
    ),
    Endpoint("GET", "/api/people", people, "Everyone who appears (people found by extraction)."),
    Endpoint(
        "GET",
        "/api/episodes",
        episodes,
        "Episodes in time order.",
        (("limit", "integer", False, "At most this many."),),
    ),
    Endpoint(
        "GET",
        "/api/timeline",
        timeline,
        "Messages and episodes per week or month (empty periods included).",
        (
            ("period", "string", False, "week or month (default)."),
            ("speaker", "string", False, "Only this speaker's messages, and the episodes they speak in."),
        ),
    ),
    Endpoint("GET", "/api/speakers", speakers, "Who speaks: messages, first and last, the most first."),
    Endpoint(
        "GET",
        "/api/period",
        period,
        "The conversations and episodes of one period.",
        (("start", "string", True, "ISO date, included."), ("end", "string", True, "ISO date, excluded.")),
    ),
    Endpoint("GET", "/api/stats", stats, "What this memory holds."),
    Endpoint("GET", "/api/namespaces", namespaces, "The namespaces of the store."),
    Endpoint("GET", "/api/doctor", doctor, "Versions, the store's health, the models and where they come from."),
    Endpoint("GET", "/api/openapi.json", openapi, "This document.", tags=("meta",)),
    Endpoint(
        "GET",
        "/api/hello",
        hello,
        "No token: proof that this server holds the command line's token, HMAC-SHA256 of the nonce "
        "keyed with it (docs/serve.md, the discovery file).",
        (("nonce", "string", True, "16 to 128 random characters."),),
        tags=("meta",),
        public=True,
    ),
)


def routes() -> list[Route]:
    return [Route(e.path, guarded(e.handler), methods=[e.method]) for e in ENDPOINTS]


_ERROR = {
    "type": "object",
    "required": ["error", "code"],
    "properties": {
        "error": {"type": "string"},
        "code": {"type": "string", "description": "as the CLI's --json errors (not_found, bad_input, usage...)"},
        "hint": {"type": ["string", "null"]},
        "exit_code": {"type": "integer", "description": "the CLI's exit code for this error"},
    },
}


_STATUS_TEXT = {200: "OK", 201: "Created"}


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for :data:`ENDPOINTS`."""
    paths: dict[str, Any] = {}
    for e in ENDPOINTS:
        op: dict[str, Any] = {"summary": e.summary, "operationId": e.handler.__name__, "tags": list(e.tags)}
        op["parameters"] = [
            {
                "name": name,
                "in": "path" if "{" + name + "}" in e.path else "query",
                "required": required,
                "description": text,
                "schema": {"type": kind},
            }
            for name, kind, required, text in e.params
        ]
        if e.body is not None:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": e.body}}}
        if e.upload:
            op["requestBody"] = {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "required": ["file"],
                            "properties": {
                                "file": {"type": "string", "format": "binary"},
                                "format": {"type": "string", "enum": list(FORMATS)},
                                "conversation": {"type": "string"},
                            },
                        }
                    }
                },
            }
        media = NDJSON if e.streams else "application/json"
        op["responses"] = {
            **{
                str(status): {"description": _STATUS_TEXT[status], "content": {media: {"schema": {"type": "object"}}}}
                for status in e.statuses
            },
            "default": {"description": "An error", "content": {"application/json": {"schema": _ERROR}}},
        }
        if e.public:
            op["security"] = []
        if e.method == "POST":
            op["description"] = "Needs the Bearer token, or the cookie and the X-CSRF-Token header."
        paths.setdefault(e.path, {})[e.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "localmem",
            "version": __version__,
            "description": "The local HTTP API of 'localmem serve'. MCP (streamable HTTP) is at /mcp.",
        },
        "servers": [{"url": "/"}],
        "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": _ERROR},
        },
        "security": [{"token": []}],
        "paths": paths,
    }
