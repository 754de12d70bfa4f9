"""Housekeeping: stats, namespaces, sources, re-embed and the doctor report (forgetting: forget.py)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..config import DEFAULTS, EXACT_BELOW, Config, StoreLocation
from ..errors import LocalmemError, UnknownNamespaceError
from ..models.embedding import framing, turn_text
from ..models.protocols import Embedder
from ..redact import redact
from ..text.sentences import sentence_spans
from . import cipher, owner
from .engine import Store
from .results import DoctorReport, NamespaceSummary, ReembedReport, Source, Stats
from .rows import all_rows, one_row, one_value

if TYPE_CHECKING:
    import numpy as np

    from ..models.embedding import Parts


def stats(conn: Store, ns: str, path: StoreLocation) -> Stats:
    messages, conversations, sessions, first, last = one_row(conn.run("stats_messages", {"ns": ns}))
    sources, unfinished, entities, links = one_row(conn.run("stats_other", {"ns": ns}))
    units: dict[str, int] = dict(all_rows(conn.run("stats_units", {"ns": ns})))  # kind -> count
    size = conn.size_bytes()
    meta = conn.all_meta()
    index: dict[str, str] = {}
    if conn.has_vectors():
        rows = one_row(conn.run("stats_vector_rows", {"ns": ns}))
        index = {
            table: "exact" if n < EXACT_BELOW else "codes" for table, n in zip(("messages", "units", "parts"), rows)
        }
    return Stats(
        namespace=ns,
        messages=messages,
        conversations=conversations,
        sessions=sessions,
        first_message_at=first,
        last_message_at=last,
        sources=sources,
        unfinished_sources=unfinished,
        units=units,
        entities=entities,
        links=links,
        db_path=redact(path),  # shown by stats, the API, the MCP tool: never a password
        db_bytes=size,
        encrypted=conn.encrypted(),
        schema_version=conn.schema_version(),
        embedder=meta.get("embed_model_id"),
        embed_dim=int(meta["embed_dim"]) if "embed_dim" in meta else None,
        vector_index=index,  # per index: "exact" search, or "codes" (binary codes, int8 rescoring)
        owner=owner.owner(conn, ns).to_dict(),
    )


def namespaces(conn: Store) -> list[NamespaceSummary]:
    return [NamespaceSummary(*row) for row in conn.run("namespaces")]


def sources(conn: Store, ns: str) -> list[Source]:
    return [Source(*row) for row in conn.run("sources_list", {"ns": ns})]


# Messages (or units) embedded between two commits of a reembed's staged work: what a kill loses.
REEMBED_CHUNK = 256
# Passes of a reembed over the messages that arrived while it embedded the ones before, before
# it takes the write lock for the swap (and embeds what is still left inside it).
REEMBED_PASSES = 4


def reembed(
    conn: Store,
    embedder: Embedder,
    batch: int,
    progress: Callable[[int, int], None] | None = None,
    context: str = DEFAULTS.context_parts,
    chunk: int = REEMBED_CHUNK,
) -> ReembedReport:
    """Replace every vector with ``embedder``'s, and cut every message's parts again; the old
    vectors serve searches until the last step swaps them all in one transaction.

    Resumable: each ``chunk`` of messages or units embedded is committed to the table
    ``reembed_staging`` (with meta ``reembed_target``: the embedder and setting it was made for),
    so a reembed stopped half-way (Ctrl-C, a kill, a power cut) and run again with the same
    embedder embeds only what is left; ``progress(done, total)`` counts the texts embedded,
    starting from what was staged. ``context``: setting ``context_parts``.

    Other processes may go on adding (and forgetting) while it runs: what they add is embedded
    too, in passes over what arrived meanwhile, the last inside the swap's transaction, which
    writers wait for (an add that embedded with the old embedder and commits after the swap
    is refused: :class:`~localmem.errors.EmbedderMismatchError`)."""
    import numpy as np  # lazily: stats and doctor need no numpy

    from ..models.embedding import embed_stored  # lazily: a search needs neither
    from .vectors import store_vectors

    def read() -> tuple[list, list]:
        return all_rows(conn.run("messages_for_reembed")), all_rows(conn.run("units_for_reembed"))

    def texts(row: tuple) -> int:  # the message, its sentence parts, and its context part
        return 1 + len(sentence_spans(row[3])) + bool(row[3] and framing(turn_text(*row[5:8]), context))

    def staged_ids() -> set[tuple[str, int]]:
        return {(kind, int(row_id)) for kind, row_id in conn.run("reembed_staged_ids")}

    messages, units = read()
    total, counted = 0, set()

    def count(rows_m: list, rows_u: list) -> None:  # the texts to embed, each row once
        nonlocal total
        for kind, rows in (("m", rows_m), ("u", rows_u)):
            for row in rows:
                if (kind, row[0]) not in counted:
                    counted.add((kind, row[0]))
                    total += texts(row) if kind == "m" else 1

    count(messages, units)
    target = f"{embedder.model_id}|{embedder.dim}|{context}"
    with conn:
        conn.run("reembed_staging_create")
        if conn.get_meta("reembed_target") != target:  # another embedder's work: start over
            conn.run("reembed_staging_clear")
            conn.set_meta("reembed_target", target)
    staged = staged_ids()
    done = sum(texts(row) for row in messages if ("m", row[0]) in staged)
    done += sum(1 for row in units if ("u", row[0]) in staged)

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, max(total, done))

    def stage(todo_m: list, todo_u: list) -> None:
        for at in range(0, len(todo_m), chunk):
            rows = todo_m[at : at + chunk]
            vecs, its_parts, _ = embed_stored(embedder, rows, [], batch, step, context)
            with conn:
                for row, vec, pieces in zip(rows, vecs, its_parts):
                    conn.run("reembed_stage", {"kind": "m", "id": row[0], "data": _staged(vec, pieces)})
        for at in range(0, len(todo_u), chunk):
            rows = todo_u[at : at + chunk]
            _, _, vecs = embed_stored(embedder, [], rows, batch, step, context)
            with conn:
                for row, vec in zip(rows, vecs):
                    conn.run("reembed_stage", {"kind": "u", "id": row[0], "data": _staged(vec, [])})

    if progress:
        progress(done, total)
    # Stage what is not staged, then what arrived meanwhile (other processes keep adding while
    # this runs: a message added then had no vector afterwards), until a pass finds little new.
    for _ in range(REEMBED_PASSES):
        todo_m = [row for row in messages if ("m", row[0]) not in staged]
        todo_u = [row for row in units if ("u", row[0]) not in staged]
        if not todo_m and not todo_u:
            break
        stage(todo_m, todo_u)
        messages, units = read()
        staged = staged_ids()
        count(messages, units)
    with conn:
        # Writers wait from here to the swap (SQLite: this transaction holds the write lock;
        # PostgreSQL: the tables are locked against writes), so the rows read now are all there
        # are; the few that came since the last pass are embedded here.
        conn.run("reembed_lock").fetchall()
        messages, units = read()
        staged = staged_ids()
        late_m = [row for row in messages if ("m", row[0]) not in staged]
        late_u = [row for row in units if ("u", row[0]) not in staged]
        loaded = {(kind, int(row_id)): _unstaged(data) for kind, row_id, data in conn.run("reembed_staged")}
        if late_m or late_u:
            count(late_m, late_u)
            vecs, its_parts, u_late = embed_stored(embedder, late_m, late_u, batch, step, context)
            loaded.update({("m", row[0]): (vec, pieces) for row, vec, pieces in zip(late_m, vecs, its_parts)})
            loaded.update({("u", row[0]): (vec, []) for row, vec in zip(late_u, u_late)})
        m_vecs = np.array([loaded[("m", row[0])][0] for row in messages], dtype=np.float32).reshape(-1, embedder.dim)
        m_parts = [loaded[("m", row[0])][1] for row in messages]
        u_vecs = np.array([loaded[("u", row[0])][0] for row in units], dtype=np.float32).reshape(-1, embedder.dim)
        conn.unbind_embedder()
        conn.run("parts_delete_all")
        conn.bind_embedder(embedder.model_id, embedder.dim)
        store_vectors(conn, messages, m_vecs, m_parts, units, u_vecs)
        conn.run("reembed_staging_drop")
        conn.run("meta_delete", {"key": "reembed_target"})
    parts = sum(texts(row) - 1 for row in messages)
    return ReembedReport(
        embedder=embedder.model_id,
        dim=embedder.dim,
        messages=len(messages),
        parts=parts,
        units=len(units),
    )


def _staged(vector: "np.ndarray", parts: "Parts") -> bytes:
    """A row's vector and its parts as one blob: a JSON header line (the parts' start, end and
    context flag), then the float32 vectors, the row's own first."""
    import numpy as np

    head = json.dumps([[int(a), int(b), bool(c)] for a, b, _v, c in parts]).encode() + b"\n"
    body = np.concatenate(
        [np.asarray(vector, dtype=np.float32)] + [np.asarray(v, dtype=np.float32) for _a, _b, v, _c in parts]
    )
    return head + body.tobytes()


def _unstaged(data: bytes) -> "tuple[np.ndarray, Parts]":
    import numpy as np

    head, _, body = data.partition(b"\n")
    spans = json.loads(head)
    vectors = np.frombuffer(body, dtype=np.float32).reshape(len(spans) + 1, -1)
    return vectors[0], [(a, b, vectors[i + 1], bool(c)) for i, (a, b, c) in enumerate(spans)]


def _context_parts(conn: Store, mode: str) -> str:
    """Whether every message that setting ``context_parts`` = ``mode`` gives a context part
    has one (see migration 0012)."""
    if mode == "none":
        return "off (context_parts none)"
    if not conn.has_vectors():
        return "no vectors yet"
    missing = one_value(conn.run("messages_without_context", {"questions": int(mode == "questions")}))
    if not missing:
        return "ok"
    return f"{missing} messages stored before context parts have none (search finds them less well): localmem reembed"


def doctor(conn: Store, config: Config, path: StoreLocation) -> DoctorReport:
    """Versions, the engine's features and checks, and where each model resolves from."""
    facts = conn.doctor_facts()
    report: dict[str, Any] = {
        "localmem": cipher.dist_version("localmem"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **facts["versions"],
        "onnxruntime": cipher.dist_version("onnxruntime"),
        "tokenizers": cipher.dist_version("tokenizers"),
        "numpy": cipher.dist_version("numpy"),
        "db": {
            "path": redact(path),
            "schema_version": conn.schema_version(),
            "latest_schema": conn.latest_schema(),
            "meta": conn.all_meta(),
            **facts["db"],
            "context_parts": _context_parts(conn, config.context_parts),
        },
        "encryption": {"store": facts["encryption"], **cipher.library_info()},
    }
    return _models_report(report, conn, config)


def _models_report(report: dict[str, Any], conn: Store, config: Config) -> DoctorReport:
    """The models part of the doctor's report, and the report."""
    from ..config import config_file_path
    from ..models.backends import llama_build, onnx_providers
    from ..models.catalog import disk_usage, resolve_embedder
    from ..models.factory import cache_dir, describe_llm

    try:
        found = resolve_embedder(config)
        report["embedder"] = {
            "status": "ok",
            "id": found.model_id,
            "from": found.origin,
            "model": str(found.model_path),
            "tokenizer": str(found.tokenizer_path),
        }
        stored = conn.get_meta("embed_model_id")
        if stored and stored != found.model_id:
            report["embedder"]["status"] = f"mismatch: the store was embedded with {stored}"
    except LocalmemError as exc:
        report["embedder"] = {"status": "missing", "error": str(exc)}
    report["onnx_providers"] = onnx_providers()
    report["llm"] = {**describe_llm(config), "extract": config.extract}
    report["llama_cpp_cpu"] = llama_build.report()
    report["models_disk"] = disk_usage(cache_dir())
    found_file = config_file_path()
    report["config_file"] = {
        "path": str(found_file),
        "exists": found_file.is_file(),
        "settings": sorted(name for name, origin in config.origins if origin.startswith("config")),
    }
    report["reranker"] = (
        {
            "status": "configured" if Path(config.rerank_model).is_file() else "missing",
            "model": str(config.rerank_model),
        }
        if config.rerank_model
        else {"status": "none configured"}
    )
    return DoctorReport(**report)


def require_namespace(conn: Store, ns: str, default: str, path: StoreLocation) -> None:
    """Raise :class:`UnknownNamespaceError` (listing the ones there are) unless the store holds
    namespace ``ns``; an empty store's ``default`` namespace is fine (nothing stored yet)."""
    known = [row[0] for row in conn.run("namespace_names")]
    if ns in known or (ns == default and not known):
        return
    raise UnknownNamespaceError(ns, known, str(path))
