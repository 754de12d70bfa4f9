"""Export a store as JSONL, and restore it.

The export holds every row of the chosen namespaces (sources, messages, units,
unit sources, entities, aliases, mentions, links) and, unless left out, their
vectors with the message parts they belong to; restoring it into an empty store
gives back the same ids and bytes. Into a non-empty store, ids are remapped;
namespaces that already exist are refused rather than merged.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Sequence

import apsw

from ..build import ingest
from ..errors import EmbedderMismatchError, InputError, LocalmemError
from ..models.protocols import Embedder
from . import db
from .queries import q

FORMAT = "localmem-export"
VERSION = 1

_TABLE_QUERIES = ("export_sources", "export_messages", "export_units", "export_unit_sources",
                  "export_entities", "export_aliases", "export_mentions", "export_links")


def export(conn: apsw.Connection, out: IO[str], *, namespaces: Sequence[str] | None = None,
           vectors: bool = True) -> dict[str, int]:
    """Write the chosen namespaces (all by default) to ``out``; counts per record type."""
    all_ns = [row[0] for row in conn.execute(q("export_namespaces"))]
    chosen = list(namespaces) if namespaces else all_ns
    missing = [ns for ns in chosen if ns not in all_ns]
    if missing:
        raise LocalmemError(f"no such namespace: {', '.join(missing)}; see 'localmem namespaces'")
    meta = db.all_meta(conn)
    with_vectors = vectors and db.has_vectors(conn)
    header = {"type": "header", "format": FORMAT, "version": VERSION,
              "schema": db.schema_version(conn), "namespaces": chosen, "vectors": with_vectors,
              "embed_model_id": meta.get("embed_model_id"),
              "embed_dim": int(meta["embed_dim"]) if "embed_dim" in meta else None}
    out.write(json.dumps(header, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    # Parts are derived from messages and go with their vectors: a restore without vectors
    # cuts and embeds them again.
    queries = _TABLE_QUERIES + (("export_parts", "export_message_vectors", "export_unit_vectors",
                                 "export_part_vectors") if with_vectors else ())
    # One read transaction, so the export is a consistent snapshot.
    with db.reading(conn):
        for ns in chosen:
            for name in queries:
                for (line,) in conn.execute(q(name), {"ns": ns}):
                    out.write(line + "\n")
                    kind = name.removeprefix("export_")
                    counts[kind] = counts.get(kind, 0) + 1
    return counts


def restore(conn: apsw.Connection, path: Path, embedder_factory: Callable[[], Embedder]) -> dict[str, int]:
    """Import an export file in one transaction, reading it a line at a time; counts per
    record type."""
    records = _read(path)
    header = next(records)
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise InputError(path, f"not a {FORMAT} v{VERSION} file (first line: {str(header)[:80]})")
    if header.get("schema", 0) > db.latest_version():
        raise InputError(path, f"made by a newer localmem (schema {header['schema']}); upgrade localmem")
    present = {row[0] for row in conn.execute(q("export_namespaces"))}
    clash = sorted(set(header["namespaces"]) & present)
    if clash:
        raise LocalmemError(f"namespace(s) {', '.join(clash)} already exist in this store; forget "
                            "them first (localmem forget --namespace NS --yes) or import elsewhere")
    stored_id = db.get_meta(conn, "embed_model_id")
    has_vectors = bool(header.get("vectors"))
    if has_vectors and stored_id and stored_id != header["embed_model_id"]:
        raise EmbedderMismatchError(stored_id, int(db.get_meta(conn, "embed_dim") or 0),
                                    header["embed_model_id"], header.get("embed_dim"))
    embedder = None if has_vectors else embedder_factory()
    keep_ids = not any(conn.execute(q("ids_in_use")).fetchone())
    ids: dict[str, dict[int, int]] = {"source": {}, "message": {}, "unit": {}, "entity": {}, "part": {}}
    counts: dict[str, int] = {}
    with conn:
        if has_vectors and not stored_id:
            db.bind_embedder(conn, header["embed_model_id"], int(header["embed_dim"]))
        elif embedder is not None and not stored_id:
            db.bind_embedder(conn, embedder.model_id, embedder.dim)
        for lineno, rec in enumerate(records, 2):
            try:
                _restore_one(conn, rec, ids, keep_ids)
            except (KeyError, apsw.Error) as exc:
                raise InputError(path, f"cannot restore this record: {exc}", f"line {lineno}") from exc
            counts[rec["type"]] = counts.get(rec["type"], 0) + 1
        if embedder is not None:
            _embed_restored(conn, embedder, list(ids["message"].values()), list(ids["unit"].values()))
    return counts


def _restore_one(conn: apsw.Connection, rec: dict[str, Any], ids: dict[str, dict[int, int]],
                 keep_ids: bool) -> None:
    kind, row = rec["type"], json.dumps(rec, ensure_ascii=False)

    def insert(table: str, query: str, **params: Any) -> None:
        new = conn.execute(q(query), {"id": rec["id"] if keep_ids else None, "row": row,
                                      **params}).fetchone()[0]
        ids[table][rec["id"]] = new

    if kind == "source":
        insert("source", "import_source")
    elif kind == "message":
        insert("message", "import_message", source_id=ids["source"][rec["source_id"]])
    elif kind == "unit":
        parent = rec.get("episode_id")
        insert("unit", "import_unit", episode_id=ids["unit"][parent] if parent is not None else None)
    elif kind == "entity":
        insert("entity", "import_entity")
    elif kind == "unit_source":
        conn.execute(q("import_unit_source"), {"unit_id": ids["unit"][rec["unit_id"]],
                                               "message_id": ids["message"][rec["message_id"]]})
    elif kind == "alias":
        conn.execute(q("import_alias"), {"entity_id": ids["entity"][rec["entity_id"]], "row": row})
    elif kind == "mention":
        conn.execute(q("import_mention"), {"unit_id": ids["unit"][rec["unit_id"]],
                                           "entity_id": ids["entity"][rec["entity_id"]], "row": row})
    elif kind == "link":
        conn.execute(q("import_link"), {"src_id": ids["unit"][rec["src_id"]],
                                        "dst_id": ids["unit"][rec["dst_id"]], "row": row})
    elif kind == "part":
        insert("part", "import_part", message_id=ids["message"][rec["message_id"]])
    elif kind == "vector":
        table = {"messages": "message", "units": "unit", "message_parts": "part"}[rec["table"]]
        conn.execute(q(f"import_{table}_vector"), {"id": ids[table][rec["id"]], "row": row})
    else:
        raise KeyError(f"unknown record type {kind!r}")


def _embed_restored(conn: apsw.Connection, embedder: Embedder, message_ids: list[int],
                    unit_ids: list[int]) -> None:
    msgs = conn.execute(q("messages_without_vectors"), {"ids": json.dumps(message_ids)}).fetchall()
    units = conn.execute(q("units_without_vectors"), {"ids": json.dumps(unit_ids)}).fetchall()
    m_vecs, m_parts, u_vecs = ingest.embed_stored(embedder, msgs, units, 32)
    ingest.store_vectors(conn, msgs, m_vecs, m_parts, units, u_vecs)


def _read(path: Path) -> Iterator[dict[str, Any]]:
    """The file's records, one per line, read as they are needed (an export can be larger than
    memory); the first is read, and checked to be a record, before this returns."""
    if not path.is_file():
        raise InputError(path, "no such file" if not path.exists() else "not a file")
    records = _records(path)
    try:
        first = next(records)
    except StopIteration:
        raise InputError(path, "the file is empty") from None
    return itertools.chain([first], records)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    # Only '\n' ends a record: text may hold U+2028 and friends, which str.splitlines() splits on.
    with path.open("r", encoding="utf-8", newline="\n") as fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                raise InputError(path, f"not valid UTF-8 (after line {lineno}); is it a localmem export?") from exc
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"invalid JSON: {exc.msg}", f"line {lineno}") from exc
            if not isinstance(rec, dict) or "type" not in rec:
                raise InputError(path, "each line must be an object with a 'type'", f"line {lineno}")
            yield rec
