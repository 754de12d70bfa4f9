"""Export a store as JSONL, and restore it.

The export holds every row of the chosen namespaces (sources, messages, units,
unit sources, entities, aliases, mentions, links, the owner's names) and, unless left out, their
vectors with the message parts they belong to; restoring it into an empty store
gives back the same ids and bytes, and the ids the exported store had already given out
(forgotten since) stay taken in it (the header's ``ids_taken``). Into a store that holds, or
ever held, any row, ids are remapped (new ones, above every id that store gave out: a printed
id never names two memories); namespaces that already exist are refused rather than merged.

The last line is a trailer: the number of records of each type and the sha256 of every
byte before it. An import reads the file a line at a time inside one transaction and checks
the trailer at the end, so a file cut short (at a line boundary too: each line is valid JSON)
or edited is refused with nothing stored. Every record must belong to a namespace the header
names: a header edited to name a new namespace cannot slip records into an existing one.
Exports made before the trailer existed (format version 1) are imported with ``force``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Sequence

import apsw

from ..config import DEFAULTS
from ..errors import EmbedderMismatchError, InputError, LocalmemError
from ..models.embedding import embed_stored
from ..models.protocols import Embedder
from ..text.language import detect
from . import db
from .engine import Store
from .results import ExportReport, RestoreReport
from .rows import one_row, one_value
from .vectors import store_vectors

FORMAT = "localmem-export"
# 1: bare numbers, no trailer; 2: the trailer line (counts and sha256); 3: messages and units
# named by their printed ids ("m:12", "u:45"), as everywhere else. All three are read.
VERSION = 3
READS = (1, 2, 3)

TRAILER = "trailer"

_TABLE_QUERIES = (
    "export_sources",
    "export_messages",
    "export_units",
    "export_unit_sources",
    "export_entities",
    "export_aliases",
    "export_mentions",
    "export_links",
    "export_owner",
)
# The record type each export query writes.
_RECORD_TYPE = {
    "sources": "source",
    "messages": "message",
    "units": "unit",
    "unit_sources": "unit_source",
    "entities": "entity",
    "aliases": "alias",
    "mentions": "mention",
    "links": "link",
    "owner": "owner",
    "parts": "part",
    "message_vectors": "vector",
    "unit_vectors": "vector",
    "part_vectors": "vector",
}


def export(conn: Store, out: IO[str], *, namespaces: Sequence[str] | None = None, vectors: bool = True) -> ExportReport:
    """Write the chosen namespaces (all by default) to ``out``, then the trailer; counts per
    record type."""
    all_ns = [row[0] for row in conn.run("export_namespaces")]
    chosen = list(namespaces) if namespaces else all_ns
    missing = [ns for ns in chosen if ns not in all_ns]
    if missing:
        raise LocalmemError(f"no such namespace: {', '.join(missing)}", "see 'localmem namespaces'")
    meta = conn.all_meta()
    with_vectors = vectors and conn.has_vectors()
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "schema": conn.schema_version(),
        "namespaces": chosen,
        "vectors": with_vectors,
        "embed_model_id": meta.get("embed_model_id"),
        "embed_dim": int(meta["embed_dim"]) if "embed_dim" in meta else None,
        # The highest id each table gave out in these namespaces (older readers ignore the key).
        "ids_taken": _ids_taken(conn, chosen),
    }
    writer = Writer(out)
    writer.record(header)
    counts: dict[str, int] = {}
    # Parts are derived from messages and go with their vectors: a restore without vectors
    # cuts and embeds them again.
    queries = _TABLE_QUERIES + (
        ("export_parts", "export_message_vectors", "export_unit_vectors", "export_part_vectors") if with_vectors else ()
    )
    # One read transaction, so the export is a consistent snapshot.
    with conn.reading():
        for ns in chosen:
            for name in queries:
                kind = name.removeprefix("export_")
                record_type = _RECORD_TYPE[kind]
                for (line,) in conn.run(name, {"ns": ns}):
                    writer.line(line, record_type)
                    counts[kind] = counts.get(kind, 0) + 1
    writer.trailer()
    return ExportReport(counts)


class Writer:
    """Writes an export's lines and then its trailer (the count of each record type and the
    sha256 of every byte before it). :func:`export` writes lines SQLite built; the synthetic
    benchmark stores write records (:meth:`record`), so both write the same format."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.digest, self.records = hashlib.sha256(), Counter()

    def line(self, text: str, record_type: str | None) -> None:
        """One record as its JSON text; ``record_type`` None for the header (not counted)."""
        data = text + "\n"
        self.digest.update(data.encode("utf-8"))
        self.out.write(data)
        if record_type is not None:
            self.records[record_type] += 1

    def record(self, rec: dict[str, Any]) -> None:
        """One record given with the store's numbers: messages and units are written under
        their printed ids, as :func:`export` writes them."""
        rec = {**rec, **{key: f"{kind}:{rec[key]}" for key, kind in _ref_fields(rec) if isinstance(rec.get(key), int)}}
        self.line(json.dumps(rec, ensure_ascii=False), None if rec["type"] == "header" else rec["type"])

    def trailer(self) -> None:
        self.out.write(
            json.dumps(
                {"type": TRAILER, "records": dict(sorted(self.records.items())), "sha256": self.digest.hexdigest()}
            )
            + "\n"
        )


def restore(
    conn: Store,
    path: Path,
    embedder_factory: Callable[[], Embedder],
    force: bool = False,
    max_chars: int = DEFAULTS.max_message_chars,
    context: str = DEFAULTS.context_parts,
) -> RestoreReport:
    """Import an export file in one transaction, reading it a line at a time; counts per
    record type. A file that is not whole (no trailer, or one that does not match) is refused,
    with nothing stored, unless ``force``: then it is imported and ``unchecked`` says why it
    could not be checked.

    A message record is checked as an ingest checks a message: its fields of the right types
    (a number where text belongs is refused, naming the line and the field, not stored as a
    number) and its text within ``max_chars`` (max_message_chars). Its text is otherwise kept
    exactly, NUL characters included: a restore gives back what the store held (``Memory.add``
    stores them; an ingest takes them out of what it reads, and says so). ``context``: which
    messages a file without vectors gives context parts (setting ``context_parts``)."""
    reader = _Reader(path)
    header = reader.header
    names, has_vectors, stored_id = _checked_header(conn, path, header)
    embedder = None if has_vectors else embedder_factory()
    keep_ids = not any(one_row(conn.run("ids_in_use")))
    ids: dict[str, dict[int, int]] = {"source": {}, "message": {}, "unit": {}, "entity": {}, "part": {}}
    counts: dict[str, int] = {}
    with conn:
        if has_vectors and not stored_id:
            conn.bind_embedder(header["embed_model_id"], int(header["embed_dim"]))
        elif embedder is not None and not stored_id:
            conn.bind_embedder(embedder.model_id, embedder.dim)
        for lineno, rec in reader:
            where = f"line {lineno}"
            if "ns" in rec and rec["ns"] not in names:
                raise InputError(
                    path,
                    f"a {rec['type']} of namespace {str(rec['ns'])[:40]!r}, which the "
                    f"header does not name ({', '.join(names)})",
                    where,
                )
            if rec["type"] in ("vector", "part") and not has_vectors:
                raise InputError(path, f"a {rec['type']} record, but the header says the file has no vectors", where)
            if rec["type"] == "message":
                _check_message(path, rec, max_chars, where)
            try:
                _restore_one(conn, rec, ids, keep_ids)
            except _Unresolved as exc:
                raise InputError(path, f"cannot restore this record: {exc}", where) from exc
            except (KeyError, TypeError) as exc:
                raise InputError(path, f"cannot restore this record: it lacks the field {exc}", where) from exc
            except apsw.Error as exc:
                raise InputError(path, f"cannot restore this record: {exc}", where) from exc
            counts[rec["type"]] = counts.get(rec["type"], 0) + 1
        problem = reader.problem()
        if problem and not force:
            raise InputError(
                path,
                f"{problem}; it may have been cut short or edited. Export it again, or import it anyway with --force",
            )
        if embedder is not None:
            # In id order, as they were first stored: their parts get ids in the same order.
            message_ids, unit_ids = sorted(ids["message"].values()), sorted(ids["unit"].values())
            _embed_restored(conn, embedder, message_ids, unit_ids, context)
        if keep_ids:
            _take_ids(conn, path, names, header.get("ids_taken"))
    conn.after_bulk_write(counts.get("message", 0))
    return RestoreReport(counts, problem or None)


def _checked_header(conn: Store, path: Path, header: dict[str, Any]) -> tuple[list[str], bool, str | None]:
    """The namespaces an export's ``header`` names, whether it holds vectors and the store's
    embedder id, once the header is one this localmem reads and fits this store (no namespace
    already here, the same embedder); else the error that says why."""
    if header.get("format") != FORMAT or header.get("version") not in READS:
        raise InputError(path, f"not a {FORMAT} v{'/'.join(map(str, READS))} file (first line: {str(header)[:80]})")
    schema = header.get("schema", 0)
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise InputError(path, "the header's 'schema' must be a whole number", "line 1")
    if schema > db.latest_version():
        raise InputError(path, f"made by a newer localmem (schema {schema})", hint="upgrade localmem")
    _check_vectors_header(path, header)
    names = header.get("namespaces")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise InputError(path, "the header's 'namespaces' must be a list of namespace names", "line 1")
    present = {row[0] for row in conn.run("export_namespaces")}
    clash = sorted(set(names) & present)
    if clash:
        raise LocalmemError(
            f"namespace(s) {', '.join(clash)} already exist in this store",
            "forget them first (localmem forget --namespace NS --yes) or import elsewhere",
        )
    stored_id = conn.get_meta("embed_model_id")
    has_vectors = bool(header.get("vectors"))
    if has_vectors and stored_id and stored_id != header["embed_model_id"]:
        raise EmbedderMismatchError(
            stored_id, int(conn.get_meta("embed_dim") or 0), header["embed_model_id"], header.get("embed_dim")
        )
    return names, has_vectors, stored_id


def _check_vectors_header(path: Path, header: dict[str, Any]) -> None:
    """A header that says the file has vectors must say which embedder made them, as export
    writes it: ``embed_model_id`` (text) and ``embed_dim`` (a positive whole number)."""
    vectors = header.get("vectors", False)
    if not isinstance(vectors, bool):
        raise InputError(path, "the header's 'vectors' must be true or false", "line 1")
    if not vectors:
        return
    model, dim = header.get("embed_model_id"), header.get("embed_dim")
    if not isinstance(model, str) or not model:
        raise InputError(
            path, "the header says the file has vectors but not which embedder made them ('embed_model_id')", "line 1"
        )
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise InputError(path, "the header says the file has vectors but not their size ('embed_dim')", "line 1")


def _ids_taken(conn: Store, namespaces: Sequence[str]) -> dict[str, int]:
    """The highest id each table gave out in ``namespaces``, deleted since or not."""
    taken: dict[str, int] = {}
    for ns in namespaces:
        for name, high in conn.run("ids_taken", {"ns": ns}):
            if high is not None:
                taken[name] = max(taken.get(name, 0), high)
    return dict(sorted(taken.items()))


def _take_ids(conn: Store, path: Path, namespaces: Sequence[str], taken: object) -> None:
    """Mark the ids the exported store gave out as taken here too (when its ids were kept): a
    message forgotten there before the export keeps its id from the next one added here."""
    if taken is None:
        return
    if not isinstance(taken, dict) or not all(
        name in _MARKED and isinstance(high, int) and not isinstance(high, bool) and high >= 0
        for name, high in taken.items()
    ):
        raise InputError(path, f"the header's 'ids_taken' must map {', '.join(_MARKED)} to whole numbers", "line 1")
    for ns in namespaces:
        for name, high in taken.items():
            conn.run("ids_take", {"name": name, "ns": ns, "high": high})


# The tables whose ids are never given out twice (migration 0011).
_MARKED = ("sources", "messages", "units", "entities")


# A message record's fields and the JSON types each may hold (None: may be null or missing).
_MESSAGE_FIELDS: dict[str, tuple[type, ...]] = {
    "ns": (str,),
    "conversation": (str,),
    "external_id": (str,),
    "speaker": (str,),
    "text": (str,),
    "seq": (int,),
    "session": (str, type(None)),
    "role": (str, type(None)),
    "sent_at": (str, type(None)),
}
_JSON_TYPE = {str: "text", int: "a whole number", type(None): "null"}


def _check_message(path: Path, rec: dict[str, Any], max_chars: int, where: str) -> None:
    """Refuse a message record whose fields have the wrong types or whose text is too long."""
    for key, types in _MESSAGE_FIELDS.items():
        value = rec.get(key)
        if key not in rec and type(None) in types:
            continue
        if not isinstance(value, types) or isinstance(value, bool):
            wanted = " or ".join(_JSON_TYPE[t] for t in types)
            got = "missing" if key not in rec else f"{type(value).__name__} {json.dumps(value)[:40]}"
            raise InputError(path, f"message field '{key}' must be {wanted}, got {got}", where)
    text = rec["text"]
    if len(text) > max_chars:
        raise InputError(
            path,
            f"message text has {len(text):,} characters, over the limit of {max_chars:,}; "
            "raise max_message_chars in the config to import it",
            where,
        )


class _Unresolved(LookupError):
    """A record names a row (by its id in the file) that no earlier line of the file holds."""


def _restore_one(conn: Store, rec: dict[str, Any], ids: dict[str, dict[int, int]], keep_ids: bool) -> None:
    _plain_ids(rec)
    kind, row = rec["type"], json.dumps(rec, ensure_ascii=False)

    def ref(table: str, key: str) -> int:
        try:
            return ids[table][rec[key]]
        except KeyError:
            raise _Unresolved(f"its {key} {rec.get(key)!r} is not a {table} of this file") from None

    def insert(table: str, query: str, **params: Any) -> None:
        new = one_value(conn.run(query, {"id": rec["id"] if keep_ids else None, "row": row, **params}))
        ids[table][rec["id"]] = new

    if kind == "source":
        insert("source", "import_source")
    elif kind == "message":
        replaces = rec.get("replaces")
        text = rec.get("text")
        insert(
            "message",
            "import_message",
            lang=detect(text) if isinstance(text, str) else None,
            source_id=ref("source", "source_id"),
            replaces=ref("message", "replaces") if replaces is not None else None,
        )
    elif kind == "unit":
        parent = rec.get("episode_id")
        insert("unit", "import_unit", episode_id=ref("unit", "episode_id") if parent is not None else None)
    elif kind == "entity":
        insert("entity", "import_entity")
    elif kind == "unit_source":
        conn.run("import_unit_source", {"unit_id": ref("unit", "unit_id"), "message_id": ref("message", "message_id")})
    elif kind == "alias":
        conn.run("import_alias", {"entity_id": ref("entity", "entity_id"), "row": row})
    elif kind == "mention":
        conn.run(
            "import_mention",
            {"unit_id": ref("unit", "unit_id"), "entity_id": ref("entity", "entity_id"), "row": row},
        )
    elif kind == "link":
        conn.run("import_link", {"src_id": ref("unit", "src_id"), "dst_id": ref("unit", "dst_id"), "row": row})
    elif kind == "owner":  # who "I" is in the namespace (store/owner.py)
        if not (isinstance(rec.get("name"), str) and rec["name"].strip() and rec.get("origin") in ("set", "suggested")):
            raise _Unresolved("an owner record needs a non-empty 'name' and an 'origin' of set or suggested")
        conn.run("import_owner", {"row": row})
    elif kind == "part":
        insert("part", "import_part", message_id=ref("message", "message_id"))
    elif kind == "vector":
        table = {"messages": "message", "units": "unit", "message_parts": "part"}.get(str(rec.get("table")))
        if table is None:
            raise _Unresolved(f"its table {rec.get('table')!r} is not one of messages, units, message_parts")
        conn.run(f"import_{table}_vector", {"id": ref(table, "id"), "row": row})
    else:
        raise _Unresolved(f"unknown record type {kind!r}")


# The fields that name a message ("m:12") or a unit ("u:45"); version 1 and 2 files hold bare
# numbers there, which are taken as they are. A record's own "id" is named by its type.
_REF_KIND = {"message_id": "m", "replaces": "m", "unit_id": "u", "episode_id": "u", "src_id": "u", "dst_id": "u"}
_ID_KIND = {"message": "m", "unit": "u", "messages": "m", "units": "u"}


def _ref_fields(rec: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, "m" or "u") for each field of ``rec`` that names a message or a unit."""
    own = _ID_KIND.get(str(rec.get("table") if rec.get("type") == "vector" else rec.get("type")))
    return [*_REF_KIND.items(), *((("id", own),) if own else ())]


def _plain_ids(rec: dict[str, Any]) -> None:
    """Turn the printed ids of ``rec`` into the numbers the store uses, in place."""
    for key, kind in _ref_fields(rec):
        value = rec.get(key)
        if isinstance(value, str):
            prefix, _, number = value.partition(":")
            if prefix != kind or not number.isdigit():
                raise _Unresolved(f"its {key} {value!r} is not a {'message (m:ID)' if kind == 'm' else 'unit (u:ID)'}")
            rec[key] = int(number)


def _embed_restored(conn: Store, embedder: Embedder, message_ids: list[int], unit_ids: list[int], context: str) -> None:
    msgs = conn.run("messages_without_vectors", {"ids": json.dumps(message_ids)}).fetchall()
    units = conn.run("units_without_vectors", {"ids": json.dumps(unit_ids)}).fetchall()
    m_vecs, m_parts, u_vecs = embed_stored(embedder, msgs, units, 32, context=context)
    store_vectors(conn, msgs, m_vecs, m_parts, units, u_vecs)


class _Reader:
    """An export's records, one per line, read as they are needed (an export can be larger than
    memory). The header is read, and checked to be a record, when this is made; the trailer is
    kept apart, and every line before it is hashed and counted for :meth:`problem`."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise InputError(path, "no such file" if not path.exists() else "not a file")
        self.path = path
        self.digest, self.counts = hashlib.sha256(), Counter()
        self.trailer: dict[str, Any] | None = None
        self._records = self._read()
        try:
            self.header = next(self._records)[1]
        except StopIteration:
            raise InputError(path, "the file is empty" if self.trailer is None else "it has no header line") from None
        self.version = self.header.get("version")

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return self._records

    def problem(self) -> str | None:
        """Why the file cannot be shown to be whole, or None when its trailer matches it."""
        if self.trailer is None:
            return (
                "it has no trailer line (an export made before localmem wrote one)"
                if self.version == 1
                else "its trailer line is missing"
            )
        records = self.trailer.get("records")
        if records != dict(sorted(self.counts.items())):
            return f"its trailer counts {records} but the file holds {dict(sorted(self.counts.items()))}"
        if self.trailer.get("sha256") != self.digest.hexdigest():
            return "its contents do not match the checksum in its trailer"
        return None

    def _read(self) -> Iterator[tuple[int, dict[str, Any]]]:
        # Binary lines: only b"\n" ends a record (text may hold U+2028 and friends, which
        # str.splitlines() splits on), and the hash is over the bytes as they are in the file.
        with self.path.open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if self.trailer is not None:
                    if raw.strip():
                        raise InputError(self.path, "a record after the trailer line", f"line {lineno}")
                    continue
                rec = self._parse(raw, lineno) if raw.strip() else None
                if rec is not None and rec["type"] == TRAILER:
                    self.trailer = rec
                    continue
                self.digest.update(raw)
                if rec is not None:
                    if lineno > 1:
                        self.counts[rec["type"]] += 1
                    yield lineno, rec

    def _parse(self, raw: bytes, lineno: int) -> dict[str, Any]:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(self.path, f"not valid UTF-8 (line {lineno})", hint="is it a localmem export?") from exc
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(self.path, f"invalid JSON: {exc.msg}", f"line {lineno}") from exc
        if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
            raise InputError(self.path, "each line must be an object with a 'type' (text)", f"line {lineno}")
        return rec
