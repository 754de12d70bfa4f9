"""Search latency at 100,000 and 1,000,000 messages, SQLite and PostgreSQL side by side (docs/scale.md).

A bench, not product API. Ingesting a million messages through ``Memory.ingest`` takes hours
on this machine (one statement per message and vector, a trigger per row, an HNSW insert per
vector), so this script **bulk-loads** both stores with the rows that ingest writes, and then
times the same queries on both, taking turns query by query as ``evals/pg_scale.py`` does.

The rows are computed in this process by the product's own code: the input is parsed by
``importers.formats.parse`` (as ``ingest`` reads a JSONL file), each message's language by
``text.language.detect`` (as ingest does), its vector and parts by
``models.embedding.embed_messages`` with the turn before it as ``ingest._turn_before`` finds it,
and the episodes that ``ingest(extract="none")`` closes by ``pipeline.segment.plan`` with the
``EmbeddingDetector`` over those vectors. Then:

- **SQLite**: every row inserted with ``executemany`` in one transaction, by the product's own
  named queries (the id and language given instead of computed per row); the FTS5 and code
  triggers run as usual.
- **PostgreSQL**: the rows sent with ``COPY`` (vectors in binary) with the per-row triggers
  off (``session_replication_role = replica``: also the foreign-key checks); their work done
  after as set-based statements: the full-text rows as ``localmem_reindex_message`` makes them
  (each message's previous turn in its session as context) and BM25's statistics and postings
  by migration 0004's own backfill statements. The full-text, statistics and vector tables'
  indexes are dropped before the load and built after it (HNSW last, with
  ``maintenance_work_mem`` and two parallel workers), then ``VACUUM ANALYZE``.

What it differs from the normal path in: no per-batch transactions, no per-row id lookups or
"already stored?" checks, foreign keys not checked while loading (on PostgreSQL), BM25's
statistics folded at once (the normal path leaves up to 255 changes in its delta tables; search
sums both), and the indexes built once after the rows rather than row by row. ``--check N``
(default 2,000; run first) ingests the same N messages through ``Memory.ingest`` and through
the bulk load into fresh stores on each engine, compares the stores table by table and the
top-10 of 100 queries, and prints what differs; ``tests/benchmarks/test_pg_big.py`` runs the
same check on 300 messages.

Usage::

    localmem postgres start --data /tmp/lm-pg        # prints the server's URL
    python evals/pg_big.py --url 'postgresql://postgres@/postgres?host=/tmp/lm-pg' --size 100000

``--url`` names a server whose role is a superuser (``session_replication_role``) and may create
databases: the run makes ``lm_big_<size>`` there (dropped first if present, and at the end
unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pg_scale import fresh_database, print_latency_table, time_searches  # noqa: E402

from localmem import Memory  # noqa: E402
from localmem.importers.common import MessageIn  # noqa: E402
from localmem_bench.bench import generate_messages, generate_queries, write_jsonl  # noqa: E402

NAMESPACE = "bench"


class BulkHashEmbedder:
    """The tests' hashing embedder (``tests.fakes.HashEmbedder``: the same vectors), without its
    record of every text it embedded (a million messages' worth)."""

    def __init__(self) -> None:
        from tests.fakes import HashEmbedder

        self._inner = HashEmbedder()
        self.model_id = self._inner.model_id
        self.dim = self._inner.dim

    def embed(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        out = self._inner.embed(texts, role)
        self._inner.calls.clear()
        self._inner.roles.clear()
        return out


# -- the rows ingest writes -----------------------------------------------------------------


@dataclass
class Rows:
    """Everything ``Memory.ingest(path, extract="none")`` writes into a fresh store, computed
    by the product's code; ids as a fresh store numbers them (1, 2, ... in insertion order)."""

    ns: str
    source: dict[str, Any]
    messages: list[tuple]  # message_insert's columns, id first
    vectors: np.ndarray  # per message, in id order
    parts: list[tuple]  # (id, message_id, ns, start, end, context)
    part_vectors: np.ndarray
    episodes: list[tuple]  # (id, ns, conversation, start, end, data, created_at)
    episode_messages: list[tuple]  # (unit_id, message_id)
    seconds: dict[str, float] = field(default_factory=dict)


def prepare(path: Path, embedder: Any, config: Any, ns: str = NAMESPACE, chunk: int = 16384) -> Rows:
    """Parse ``path`` (JSONL) and compute the rows a fresh store gets from ingesting it."""
    from localmem.importers import formats
    from localmem.models.embedding import embed_messages, message_text
    from localmem.pipeline import segment
    from localmem.store.engine import now_iso
    from localmem.text.language import detect

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    parsed = formats.parse(path, None, "jsonl", None, options=formats.Options.from_config(config))
    if len(parsed.sources) != 1:
        raise SystemExit("the bench input is one JSONL file")
    source = parsed.sources[0]
    messages: list[MessageIn] = [m for group_ns, ms in source.groups for m in ms if group_ns in (None, ns)]
    if len(messages) != source.message_count:
        raise SystemExit("the bench input must go to one namespace")
    seconds["parse"] = time.perf_counter() - t0

    # The turn before each message, as ingest embeds it (ingest._turn_before, query
    # message_before: the conversation's message stored before it, if in its session) and as
    # the full-text trigger takes it as context (the session's message stored before it). The
    # two agree when a conversation's sessions do not interleave and its messages come in
    # order, as in the bench's input: checked here, so the bulk load assumes nothing unsaid.
    t0 = time.perf_counter()
    last: dict[str, MessageIn] = {}
    sessions_seen: set[tuple[str, str]] = set()
    before: list[str | None] = []
    seen: set[tuple[str, str]] = set()
    for m in messages:
        key = (m.conversation, m.external_id)
        if key in seen:
            raise SystemExit(f"duplicate message id {key}: the bench's bulk load assumes none")
        seen.add(key)
        prev = last.get(m.conversation)
        if prev is not None and prev.seq >= m.seq:
            raise SystemExit("the bench's bulk load assumes each conversation's messages in order")
        if prev is not None and prev.session != m.session and (m.conversation, m.session) in sessions_seen:
            raise SystemExit("the bench's bulk load assumes a conversation's sessions do not interleave")
        same = prev is not None and m.session != "" and prev.session == m.session
        before.append(message_text(prev.speaker, prev.text, prev.attachments) if same and prev else None)
        last[m.conversation] = m
        sessions_seen.add((m.conversation, m.session))
    langs: dict[str, str | None] = {}
    rows = []
    for i, m in enumerate(messages, 1):
        lang = langs.get(m.text)
        if lang is None and m.text not in langs:
            lang = langs[m.text] = detect(m.text)
        rows.append(
            (
                i,
                ns,
                1,  # the source's id
                m.conversation,
                m.session,
                m.seq,
                m.external_id,
                m.speaker,
                m.role,
                m.text,
                m.sent_at,
                json.dumps(m.attachments, ensure_ascii=False) if m.attachments else None,
                json.dumps(m.raw, ensure_ascii=False) if m.raw is not None else None,
                None,  # meta
                None,  # replaces
                lang,
            )
        )
    seconds["language"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    vectors = np.zeros((len(messages), embedder.dim), dtype=np.float32)
    parts: list[tuple] = []
    part_vecs: list[np.ndarray] = []
    for start in range(0, len(messages), chunk):
        batch = messages[start : start + chunk]
        vecs, its_parts = embed_messages(
            embedder,
            [(m.speaker, m.text, m.attachments) for m in batch],
            config.embed_batch,
            before=before[start : start + chunk],
            context=config.context_parts,
        )
        vectors[start : start + len(batch)] = vecs
        for offset, message_parts in enumerate(its_parts):
            for a, b, vec, context in message_parts:
                parts.append((len(parts) + 1, start + offset + 1, ns, a, b, int(context)))
                part_vecs.append(vec)
    part_vectors = np.array(part_vecs, dtype=np.float32).reshape(len(part_vecs), embedder.dim)
    seconds["embed"] = time.perf_counter() - t0

    # The episodes segment_without_llm closes: conversation by conversation (pending_conversations
    # orders them by name), each conversation's messages by seq.
    t0 = time.perf_counter()
    by_conv: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        by_conv.setdefault(m.conversation, []).append(i)
    detector = segment.EmbeddingDetector(lambda window: vectors[[w.id - 1 for w in window]])
    episodes: list[tuple] = []
    members: list[tuple] = []
    created = now_iso()
    for conv in sorted(by_conv):
        pending = [
            segment.PendingMessage(
                i + 1,
                messages[i].session,
                messages[i].seq,
                messages[i].speaker,
                messages[i].text,
                messages[i].sent_at,
                messages[i].attachments,
            )
            for i in sorted(by_conv[conv], key=lambda i: messages[i].seq)
        ]
        for episode in segment.plan(pending, detector, final=True):
            times = [m.sent_at for m in episode if m.sent_at]
            unit_id = len(episodes) + 1
            data = json.dumps({"session": episode[0].session, "messages": len(episode)})
            episodes.append(
                (unit_id, ns, conv, min(times) if times else None, max(times) if times else None, data, created)
            )
            members.extend((unit_id, m.id) for m in episode)
    seconds["segment"] = time.perf_counter() - t0
    src = {
        "id": 1,
        "ns": ns,
        "kind": source.format,
        "uri": source.uri,
        "sha256": source.sha256,
        "created_at": created,
        "finished_at": created,
    }
    return Rows(ns, src, rows, vectors, parts, part_vectors, episodes, members, seconds)


# -- SQLite ---------------------------------------------------------------------------------


def _with_id(sql: str, table: str, first_column: str) -> str:
    """A named insert with its id given (``:id``) instead of taken by the statement."""
    out = sql.replace(f"(SELECT id FROM next_ids WHERE name = '{table}')", ":id")
    if out == sql:  # an insert that left the id to the table
        out = sql.replace(f"({first_column},", f"(id, {first_column},", 1).replace(
            f"VALUES (:{first_column}", f"VALUES (:id, :{first_column}", 1
        )
    out = out.split("RETURNING")[0].rstrip()
    if ":id" not in out:
        raise RuntimeError(f"the named insert into {table} changed: the bench cannot give it ids")
    return out


_MESSAGE_KEYS = (
    "id",
    "ns",
    "source_id",
    "conversation",
    "session",
    "seq",
    "external_id",
    "speaker",
    "role",
    "text",
    "sent_at",
    "attachments",
    "raw",
    "meta",
    "replaces",
    "lang",
)


def load_sqlite(mem: Memory, rows: Rows) -> dict[str, float]:
    """Write ``rows`` into the fresh SQLite store of ``mem`` in one transaction."""
    from localmem.pipeline.ingest import ensure_bound
    from localmem.store.queries import q

    conn = mem.conn
    ensure_bound(conn, mem.embedder)
    t0 = time.perf_counter()
    # The full-text trigger reads each message's previous turn in its session; the store's
    # messages_by_session index (migration 0014) makes that one index step (before it, the
    # lookup walked back over the whole conversation for each session's first turn, and this
    # load added the index for itself). A larger page cache keeps the transaction's B-tree
    # pages in memory; it changes no stored row.
    cache = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute("PRAGMA cache_size = -2000000")
    blob = lambda v: np.asarray(v, dtype=np.float32).tobytes()  # noqa: E731 (models.embedding.to_blob)
    with conn:
        source_id = conn.run("source_insert", {**_source_params(rows), "status": "loading"}).fetchone()
        assert source_id == (1,), source_id
        conn.raw.executemany(
            _with_id(q("message_insert"), "messages", "ns"),
            (dict(zip(_MESSAGE_KEYS, r)) for r in rows.messages),
        )
        conn.raw.executemany(
            q("vec_message_insert"),
            ({"id": i + 1, "embedding": blob(v), "ns": rows.ns} for i, v in enumerate(rows.vectors)),
        )
        conn.raw.executemany(
            _with_id(q("part_insert"), "message_parts", "message_id"),
            (dict(zip(("id", "message_id", "ns", "start", "end", "context"), p)) for p in rows.parts),
        )
        conn.raw.executemany(
            q("vec_part_insert"),
            ({"id": p[0], "embedding": blob(v), "ns": rows.ns} for p, v in zip(rows.parts, rows.part_vectors)),
        )
        conn.raw.executemany(
            _with_id(q("episode_insert"), "units", "ns"),
            (dict(zip(("id", "ns", "conversation", "start", "end", "data", "created_at"), e)) for e in rows.episodes),
        )
        conn.raw.executemany(
            q("unit_source_insert"), ({"unit_id": u, "message_id": m} for u, m in rows.episode_messages)
        )
        conn.run("source_finish", {"id": 1, "finished_at": rows.source["finished_at"]})
    conn.execute(f"PRAGMA cache_size = {int(cache)}")
    return {"load": time.perf_counter() - t0}


def _source_params(rows: Rows) -> dict[str, Any]:
    s = rows.source
    return {"ns": s["ns"], "kind": s["kind"], "uri": s["uri"], "sha256": s["sha256"], "created_at": s["created_at"]}


# -- PostgreSQL -----------------------------------------------------------------------------

# The tables whose indexes (primary keys included: nothing references them) are dropped for the
# load and built after it: the full-text, BM25 and vector tables.
_REBUILT = (
    "messages_fts",
    "messages_fts_intl",
    "units_fts",
    "fts_postings",
    "fts_terms",
    "fts_stats",
    "vec_messages",
    "vec_message_parts",
)

# The full-text rows localmem_reindex_message (migrations 0003/0005) writes for each message,
# for all of them at once: the context is the turn before it in its session (the messages are
# loaded in seq order, so the one with the next lower seq is the one stored before it).
_MESSAGES_FTS = """
WITH m AS (
    SELECT id, ns, lang,
           lag(speaker || ': ' || text) OVER (PARTITION BY ns, conversation, session ORDER BY seq) AS ctx,
           speaker || ': ' || text || coalesce(' ' || (
               SELECT string_agg(a ->> 'caption', ' ') FROM jsonb_array_elements(
                   CASE WHEN jsonb_typeof(attachments::jsonb) = 'array' THEN attachments::jsonb ELSE '[]'::jsonb END) AS a
               WHERE a ->> 'caption' IS NOT NULL), '') AS body
    FROM messages
), v AS (
    SELECT id, ns, {fn}(coalesce(ctx, '')) AS cv, {fn}(body) AS bv FROM m WHERE {which}
)
INSERT INTO {table} (id, ns, doc, tokens)
SELECT id, ns, setweight(cv, 'B') || setweight(bv, 'A'), localmem_tokens(cv) + localmem_tokens(bv) FROM v
"""
_UNITS_FTS = """
INSERT INTO units_fts (id, ns, doc, tokens)
SELECT id, ns, v, localmem_tokens(v) FROM (
    SELECT id, ns, localmem_en_tsvector(coalesce(title || '. ', '') || text) AS v FROM units) AS u
"""


def _backfill_statements() -> str:
    """Migration 0004's own statements that give a store made before it its BM25 statistics
    and postings from its full-text rows."""
    from localmem.store.queries import sql_dir

    text = (sql_dir() / "postgres" / "migrations" / "0004_fts_statistics.sql").read_text(encoding="utf-8")
    marker = "-- A store made before this migration: its statistics from its rows."
    if marker not in text:
        raise RuntimeError("migration 0004's backfill moved: the bench cannot reuse it")
    return text.split(marker, 1)[1]


def _copy_header() -> bytes:
    return b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def _vector_copy(ids: np.ndarray, ns: str, vectors: np.ndarray) -> bytes:
    """``(id, ns, embedding)`` rows in COPY's binary format (pgvector's: int16 dim, int16 0,
    float4s), the float32 values as they are."""
    name = ns.encode()
    dim = vectors.shape[1]
    layout = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("ns_len", ">i4"),
            ("ns", f"S{len(name)}"),
            ("vec_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vec", ">f4", (dim,)),
        ]
    )
    out = np.zeros(len(ids), dtype=layout)
    out["fields"], out["id_len"], out["id"] = 3, 8, ids
    out["ns_len"], out["ns"] = len(name), name
    out["vec_len"], out["dim"], out["vec"] = 4 + 4 * dim, dim, vectors
    return out.tobytes()


def _copy_rows(cur: Any, table: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
    cols = ", ".join(f'"{c}"' for c in columns)
    with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:  # type: ignore[arg-type]
        for row in rows:
            copy.write_row(row)


def _copy_vectors(cur: Any, table: str, ns: str, ids: np.ndarray, vectors: np.ndarray, chunk: int = 100_000) -> None:
    with cur.copy(f"COPY {table} (id, ns, embedding) FROM STDIN (FORMAT BINARY)") as copy:  # type: ignore[arg-type]
        copy.write(_copy_header())
        for start in range(0, len(ids), chunk):
            copy.write(_vector_copy(ids[start : start + chunk], ns, vectors[start : start + chunk]))
        copy.write(struct.pack(">h", -1))


def _index_plan(raw: Any) -> list[tuple[str, str, str]]:
    """``(table, drop, create)`` for every index of the rebuilt tables."""
    plan = []
    for table, index, indexdef, conname, condef in raw.execute(
        "SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), "
        "c.conname, pg_get_constraintdef(c.oid) FROM pg_index AS i "
        "LEFT JOIN pg_constraint AS c ON c.conindid = i.indexrelid AND c.contype IN ('p', 'u') "
        "WHERE i.indrelid::regclass::text = ANY (%s) ORDER BY 1, 2",
        (list(_REBUILT),),
    ):
        if conname:
            plan.append(
                (
                    table,
                    f'ALTER TABLE {table} DROP CONSTRAINT "{conname}"',
                    f'ALTER TABLE {table} ADD CONSTRAINT "{conname}" {condef}',
                )
            )
        else:
            plan.append((table, f"DROP INDEX {index}", indexdef))
    return plan


def load_postgres(mem: Memory, url: str, rows: Rows, progress: Callable[[str], None] = print) -> dict[str, float]:
    """Write ``rows`` into the fresh PostgreSQL store of ``mem`` (at ``url``); the seconds of
    each phase."""
    import psycopg

    from localmem.pipeline.ingest import ensure_bound

    ensure_bound(mem.conn, mem.embedder)
    seconds: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("SET session_replication_role = replica")  # no per-row triggers (their work is below)
        raw.execute("SET maintenance_work_mem = '4GB'")
        raw.execute("SET max_parallel_maintenance_workers = 2")
        raw.execute("SET TimeZone = 'UTC'")
        plan = _index_plan(raw)
        for _table, drop, _create in plan:
            raw.execute(drop)  # type: ignore[arg-type]
        t0 = time.perf_counter()
        with raw.transaction(), raw.cursor() as cur:
            s = rows.source
            cur.execute(
                "INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at, finished_at) "
                "VALUES (%s, %s, %s, %s, %s, 'loaded', %s, %s)",
                (s["id"], s["ns"], s["kind"], s["uri"], s["sha256"], s["created_at"], s["finished_at"]),
            )
            _copy_rows(cur, "messages", _MESSAGE_KEYS, rows.messages)
            _copy_rows(cur, "message_parts", ("id", "message_id", "ns", "start", "end", "context"), rows.parts)
            _copy_rows(
                cur,
                "units",
                (
                    "id",
                    "ns",
                    "kind",
                    "conversation",
                    "title",
                    "text",
                    "occurred_start",
                    "occurred_end",
                    "time_precision",
                    "mentioned_at",
                    "stage",
                    "data",
                    "created_at",
                ),
                [
                    (i, ns, "episode", c, None, "", a, b, "minute", b, "segmented", d, at)
                    for i, ns, c, a, b, d, at in rows.episodes
                ],
            )
            _copy_rows(cur, "unit_sources", ("unit_id", "message_id"), rows.episode_messages)
            seconds["copy_rows"] = time.perf_counter() - t0
            progress(f"  postgres: rows copied in {seconds['copy_rows']:.1f} s")
            t0 = time.perf_counter()
            ids = np.arange(1, len(rows.vectors) + 1, dtype=np.int64)
            _copy_vectors(cur, "vec_messages", rows.ns, ids, rows.vectors)
            _copy_vectors(
                cur,
                "vec_message_parts",
                rows.ns,
                np.array([p[0] for p in rows.parts], dtype=np.int64),
                rows.part_vectors,
            )
            seconds["copy_vectors"] = time.perf_counter() - t0
            progress(f"  postgres: vectors copied in {seconds['copy_vectors']:.1f} s")
            t0 = time.perf_counter()
            for table, fn, which in (
                ("messages_fts", "localmem_en_tsvector", "lang IS NULL OR lang IN ('en', 'und')"),
                ("messages_fts_intl", "localmem_intl_tsvector", "lang NOT IN ('en', 'und')"),
            ):
                cur.execute(_MESSAGES_FTS.format(fn=fn, which=which, table=table))  # type: ignore[arg-type]
            cur.execute(_UNITS_FTS)  # type: ignore[arg-type]
            seconds["fts"] = time.perf_counter() - t0
            progress(f"  postgres: full-text rows in {seconds['fts']:.1f} s")
            t0 = time.perf_counter()
            cur.execute(_backfill_statements())  # type: ignore[arg-type]
            seconds["bm25_stats"] = time.perf_counter() - t0
            progress(f"  postgres: BM25 statistics and postings in {seconds['bm25_stats']:.1f} s")
            for table in ("sources", "messages", "message_parts", "units"):
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"  # type: ignore[arg-type]
                )
        t0 = time.perf_counter()
        for _table, _drop, create in plan:
            if "hnsw" not in create:
                raw.execute(create)  # type: ignore[arg-type]
        seconds["indexes"] = time.perf_counter() - t0
        progress(f"  postgres: b-tree and GIN indexes in {seconds['indexes']:.1f} s")
        t0 = time.perf_counter()
        for _table, _drop, create in plan:
            if "hnsw" in create:
                raw.execute(create)  # type: ignore[arg-type]
        seconds["hnsw"] = time.perf_counter() - t0
        progress(f"  postgres: HNSW indexes in {seconds['hnsw']:.1f} s")
        t0 = time.perf_counter()
        raw.execute("VACUUM ANALYZE")
        seconds["vacuum_analyze"] = time.perf_counter() - t0
        progress(f"  postgres: VACUUM ANALYZE in {seconds['vacuum_analyze']:.1f} s")
    return seconds


# -- the honesty check ----------------------------------------------------------------------

_COMMON_TABLES = {
    "sources": "SELECT id, ns, kind, uri, sha256, status FROM sources ORDER BY id",
    "messages": "SELECT * FROM messages ORDER BY id",
    "message_parts": "SELECT * FROM message_parts ORDER BY id",
    "units": "SELECT id, ns, kind, conversation, episode_id, title, text, occurred_start, occurred_end, "
    "time_precision, mentioned_at, stage, data FROM units ORDER BY id",
    "unit_sources": "SELECT * FROM unit_sources ORDER BY unit_id, message_id",
}
_SQLITE_TABLES = {
    "vec_messages": "SELECT rowid, embedding, ns FROM vec_messages ORDER BY rowid",
    "vec_message_parts": "SELECT rowid, embedding, ns FROM vec_message_parts ORDER BY rowid",
    "vec_message_codes": "SELECT * FROM vec_message_codes ORDER BY id",
    "vec_part_codes": "SELECT * FROM vec_part_codes ORDER BY id",
    "vec_code_changes": "SELECT * FROM vec_code_changes ORDER BY name",
    "messages_fts_vocab": "SELECT * FROM messages_fts_vocab ORDER BY term",
    "messages_fts_intl_vocab": "SELECT * FROM messages_fts_intl_vocab ORDER BY term",
    "units_fts_vocab": "SELECT * FROM units_fts_vocab ORDER BY term",
    "messages_fts_docsize": "SELECT * FROM messages_fts_docsize ORDER BY id",
    "units_fts_docsize": "SELECT * FROM units_fts_docsize ORDER BY id",
}
_PG_TABLES = {
    "vec_messages": "SELECT id, ns, embedding::text FROM vec_messages ORDER BY id",
    "vec_message_parts": "SELECT id, ns, embedding::text FROM vec_message_parts ORDER BY id",
    "messages_fts": "SELECT id, ns, doc::text, tokens FROM messages_fts ORDER BY id",
    "messages_fts_intl": "SELECT id, ns, doc::text, tokens FROM messages_fts_intl ORDER BY id",
    "units_fts": "SELECT id, ns, doc::text, tokens FROM units_fts ORDER BY id",
    "fts_postings": "SELECT * FROM fts_postings ORDER BY tbl, lexeme, ns, id",
    # folded and pending together, as search sums them
    "fts_terms": "SELECT tbl, lexeme, ns, sum(ndoc) FROM (SELECT tbl, lexeme, ns, ndoc FROM fts_terms UNION ALL "
    "SELECT tbl, lexeme, ns, ndoc FROM fts_terms_delta) AS x GROUP BY 1, 2, 3 HAVING sum(ndoc) <> 0 ORDER BY 1, 2, 3",
    "fts_stats": "SELECT tbl, ns, sum(n_rows), sum(total_tokens) FROM (SELECT tbl, ns, n_rows, total_tokens FROM fts_stats "
    "UNION ALL SELECT tbl, ns, n_rows, total_tokens FROM fts_stats_delta) AS x GROUP BY 1, 2 "
    "HAVING sum(n_rows) <> 0 ORDER BY 1, 2",
}


def dump(mem: Memory) -> dict[str, list[tuple]]:
    """The rows of every table ingest writes (times of writing left out), as this engine keeps them."""
    from localmem.store.sqlite import SqliteStore

    store = mem.conn
    tables = {**_COMMON_TABLES, **(_SQLITE_TABLES if isinstance(store, SqliteStore) else _PG_TABLES)}
    # each engine's own connection (apsw, psycopg) runs its own dialect's text
    return {name: [tuple(r) for r in store.raw.execute(sql)] for name, sql in tables.items()}  # type: ignore[attr-defined]


def top_ids(mem: Memory, queries: Sequence[str], channels: Sequence[str] | None = None) -> list[list[str]]:
    return [[h.id for h in mem.search(q, **({"channels": list(channels)} if channels else {}))] for q in queries]


def agreement(a: Memory, b: Memory, queries: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per search (hybrid, vector, bm25): the queries whose top-10 ids are the same in the same
    order on ``a`` and ``b`` (percent), and the mean share of ``a``'s top-10 that ``b`` returns."""
    out = {}
    for name, channels in (("hybrid", None), ("vector", ["vector"]), ("bm25", ["bm25"])):
        x, y = top_ids(a, queries, channels), top_ids(b, queries, channels)
        same = sum(i == j for i, j in zip(x, y))
        overlap = [len(set(i) & set(j)) / len(i) for i, j in zip(x, y) if i]
        out[name] = {
            "same_top10_pct": round(100 * same / len(queries), 1),
            "overlap_at_10_pct": round(100 * statistics.fmean(overlap), 1) if overlap else 0.0,
        }
    return out


def compare(normal: Memory, bulk: Memory, queries: Sequence[str]) -> list[str]:
    """What differs between a store ingested normally and one bulk-loaded with the same
    messages: each table that differs (with its first differing row) and each query whose
    top-10 differs, per search (hybrid, vector, bm25). Empty: none."""
    out = []
    a, b = dump(normal), dump(bulk)
    for name in a:
        if a[name] != b[name]:
            first = next(
                (i for i, (x, y) in enumerate(zip(a[name], b[name])) if x != y), min(len(a[name]), len(b[name]))
            )
            out.append(
                f"table {name}: {len(a[name])} rows normally, {len(b[name])} bulk; first difference at row {first}: "
                f"{a[name][first] if first < len(a[name]) else None!r} vs {b[name][first] if first < len(b[name]) else None!r}"
            )
    for channels in (None, ["vector"], ["bm25"]):
        x, y = top_ids(normal, queries, channels), top_ids(bulk, queries, channels)
        differ = [i for i in range(len(queries)) if x[i] != y[i]]
        if differ:
            out.append(
                f"search {channels or 'hybrid'}: top-10 differs for {len(differ)} of {len(queries)} queries, e.g. {queries[differ[0]]!r}: {x[differ[0]]} vs {y[differ[0]]}"
            )
    return out


def check(
    size: int, url: str | None, work: Path, queries: int = 100, progress: Callable[[str], None] = print
) -> dict[str, list[str]]:
    """Ingest ``size`` messages normally and bulk into fresh stores of each engine (PostgreSQL
    when ``url`` names a server) and :func:`compare` them; the differences per engine."""
    data = work / f"check-{size}.jsonl"
    write_jsonl(generate_messages(size), data)
    qs = generate_queries(queries)
    targets = {"sqlite": (str(work / f"check-normal-{size}.db"), str(work / f"check-bulk-{size}.db"))}
    if url:
        targets["postgres"] = (
            fresh_database(url, f"lm_check_normal_{size}"),
            fresh_database(url, f"lm_check_bulk_{size}"),
        )
    found: dict[str, list[str]] = {}
    for engine, (normal_at, bulk_at) in targets.items():
        embedder = BulkHashEmbedder()
        with (
            Memory(normal_at, namespace=NAMESPACE, embedder=embedder) as normal,
            Memory(bulk_at, namespace=NAMESPACE, embedder=embedder) as bulk,
        ):
            t0 = time.perf_counter()
            normal.ingest(data, format="jsonl", extract="none")
            took = time.perf_counter() - t0
            rows = prepare(data, embedder, bulk.config)
            t0 = time.perf_counter()
            if engine == "postgres":
                load_postgres(bulk, bulk_at, rows, progress=lambda _line: None)
            else:
                load_sqlite(bulk, rows)
            loaded = time.perf_counter() - t0
            found[engine] = compare(normal, bulk, qs)
        progress(
            f"check {engine}, {size:,} messages: ingest {took:.1f} s, bulk load {loaded:.1f} s; "
            + ("tables and top-10s equal" if not found[engine] else "DIFFERENCES:\n  " + "\n  ".join(found[engine]))
        )
    if url:
        _drop_databases(url, ["lm_check_normal_%d" % size, "lm_check_bulk_%d" % size])
    return found


def _drop_databases(url: str, names: Sequence[str]) -> None:
    import psycopg
    from pg_scale import database_url

    from localmem.store import pgpool

    pgpool.close_pools()
    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


# -- the run --------------------------------------------------------------------------------


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def _uptime() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split(" ")[:3])
    except OSError:
        return "?"


def _server_processes(url: str) -> list[int]:
    """The PostgreSQL server at ``url``: its postmaster and the processes it started."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # its backend's parent, read while it lives
        postmaster = int(Path(f"/proc/{conn.info.backend_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == postmaster:
            children.append(int(stat.parent.name))
    return [postmaster, *children]


def _renice(pids: Sequence[int], value: int) -> None:
    """Set the niceness of ``pids`` (children started later inherit the postmaster's)."""
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, value)
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL server (a superuser that may create databases)")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--check", type=int, default=2000, help="messages of the honesty check first (0: skip it)")
    parser.add_argument("--nice", type=int, default=10, help="niceness of the load (the queries run at the start's)")
    parser.add_argument("--keep", action="store_true", help="keep the stores (default: delete them at the end)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    def say(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} load {_uptime()}] {line}", flush=True)

    work = Path(tempfile.mkdtemp(prefix="lm-big-"))
    result: dict[str, Any] = {"size": args.size, "phases": {}, "load_average": []}
    try:
        if args.check:
            result["check"] = check(args.check, args.url, work, progress=say)
        # The load runs niced, this process and the server's (the other engineers' tests keep
        # their share); the queries at normal priority.
        server = _server_processes(args.url)
        _renice([os.getpid(), *server], args.nice)
        t0 = time.perf_counter()
        data = work / "messages.jsonl"
        write_jsonl(generate_messages(args.size), data)
        result["phases"]["generate"] = round(time.perf_counter() - t0, 1)
        say(f"generated {args.size:,} messages in {result['phases']['generate']} s")
        embedder = BulkHashEmbedder()
        sqlite_path = work / "bench.db"
        pg_url = fresh_database(args.url, f"lm_big_{args.size}")
        mems = {
            "sqlite": Memory(str(sqlite_path), namespace=NAMESPACE, embedder=embedder),
            "postgres": Memory(pg_url, namespace=NAMESPACE, embedder=embedder),
        }
        rows = prepare(data, embedder, mems["sqlite"].config)
        for phase, s in rows.seconds.items():
            result["phases"][f"prepare_{phase}"] = round(s, 1)
        say(
            f"rows computed: {len(rows.messages):,} messages, {len(rows.parts):,} parts, {len(rows.episodes):,} episodes; {rows.seconds}"
        )
        s = load_sqlite(mems["sqlite"], rows)
        result["phases"]["sqlite_load"] = round(s["load"], 1)
        say(f"sqlite loaded in {s['load']:.1f} s")
        for phase, sec in load_postgres(mems["postgres"], pg_url, rows, progress=say).items():
            result["phases"][f"postgres_{phase}"] = round(sec, 1)
        counts = {e: m.stats().messages for e, m in mems.items()}
        del rows
        _renice([os.getpid(), *_server_processes(args.url)], 0)
        result["query_niceness"] = os.getpriority(os.PRIO_PROCESS, 0)
        # the WAL's pages into the file, and the WAL emptied: the store's own size
        mems["sqlite"].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        result["sizes_mb"] = {
            "sqlite": round(_sqlite_bytes(sqlite_path) / 2**20, 1),
            "postgres": round(
                mems["postgres"].conn.raw.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20,
                1,  # type: ignore[attr-defined]
            ),
        }
        result["load_average"].append(_uptime())
        say(f"stores: {counts}, on disk {result['sizes_mb']} MB; timing {args.queries} queries")
        t0 = time.perf_counter()
        timings = time_searches(mems, generate_queries(args.queries + 10))
        result["phases"]["queries"] = round(time.perf_counter() - t0, 1)
        result["load_average"].append(_uptime())
        for engine, r in timings.items():
            r["messages"] = counts[engine]
        result["latency"] = timings
        # How far the engines' top-10s agree (after the timing, so it does not warm it): the
        # vector channel is HNSW (approximate) on PostgreSQL, exact over rescored codes on SQLite.
        result["agreement"] = agreement(mems["sqlite"], mems["postgres"], generate_queries(args.queries + 10)[10:])
        say(f"top-10 agreement, SQLite against PostgreSQL: {result['agreement']}")
        result["peak_rss_mb"] = round(_peak_rss_mb(), 1)
        for mem in mems.values():
            mem.close()
        print_latency_table(timings, "store MB", {e: f"{mb:,}" for e, mb in result["sizes_mb"].items()})
        print("phases (s):", json.dumps(result["phases"]))
        print("peak RSS of this process:", result["peak_rss_mb"], "MB; load average", result["load_average"])
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            _drop_databases(args.url, [f"lm_big_{args.size}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
