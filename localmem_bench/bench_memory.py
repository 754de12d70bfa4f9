"""Search latency over built memory: synthetic units with entities, mentions, links and times.

Building a million units through the LLM pipeline is not possible on a laptop, so the store
is made from a synthetic export file (localmem's own JSONL export format, restored with
:meth:`Admin.restore <localmem.admin.Admin.restore>`, the public way to load memory): unit texts from templates, times
spread over three years, one to three entity mentions per unit drawn from a skewed pool (a
few hubs, many rare names), a temporal link to the previous unit and two semantic links to
nearby ones, and an episode per :data:`UNITS_PER_EPISODE` units that holds them, their
people and two messages (each with two sentence parts). Unit, message and part vectors are
random unit vectors (search cost does not depend on what they encode; recall here means
nothing); queries are embedded by the real embedder. Every number is measured in this run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from localmem import Memory, SearchParams
from localmem.config import ALL_CHANNELS, Config
from localmem.files import private_dir
from localmem.models.protocols import Embedder

from . import bench

MEMORY_COLUMNS: list[str] = [
    "units",
    "episodes",
    "entities",
    "links",
    "queries",
    "p50_ms",
    "p95_ms",
    "vector_p50_ms",
    "bm25_p50_ms",
    "graph_p50_ms",
    "temporal_p50_ms",
    "entity_p50_ms",
    "vector_index",
    "overlap@10",
    "build_s",
    "db_mb",
]
CHANNELS = ALL_CHANNELS
_TAGS = ["trip", "work", "family", "hobby", "food", "health", "move", "party", "pet", "plans"]
_BATCH = 20_000
UNITS_PER_EPISODE = 10  # conv-26's extraction has ~2; a stronger model writes more per episode
_CREATED = "2024-01-01T00:00:00"
_UNIT = {
    "type": "unit",
    "conversation": None,
    "episode_id": None,
    "title": None,
    "subject": None,
    "predicate": None,
    "object": None,
    "aspect": None,
    "time_precision": "day",
    "stage": None,
    "prompt_version": None,
    "model_id": None,
    "content_hash": None,
    "data": None,
    "created_at": _CREATED,
}
_MESSAGE = {"conversation": "bench", "session": "", "speaker": "Maya", "role": None, "attachments": None, "raw": None}


def _unit_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """Random unit vectors (search cost does not depend on what they encode)."""
    vecs = rng.standard_normal((count, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _weights(n_entities: int) -> np.ndarray:
    """How often each entity is mentioned: a few hubs, a long tail."""
    weights = 1.0 / np.arange(1, n_entities + 1) ** 1.1
    return weights / weights.sum()


def _entity_names(n: int, rng: random.Random) -> list[tuple[str, str]]:
    people = [
        f"{first} {last}"
        for first in bench.SPEAKERS
        for last in [
            "Silva",
            "Tanaka",
            "Weber",
            "Okafor",
            "Kim",
            "Novak",
            "Haddad",
            "Larsen",
            "Moreau",
            "Costa",
            "Ivanova",
            "Mendez",
            "Rossi",
            "Sato",
            "Walsh",
            "Nakamura",
            "Kowalski",
            "Dubois",
        ]
    ]
    names = (
        [(p, "person") for p in bench.SPEAKERS + people]
        + [(c, "place") for c in bench.CITIES]
        + [(h, "activity") for h in bench.HOBBIES]
    )
    i = 0
    while len(names) < n:
        i += 1
        names.append((f"{rng.choice(bench.SPEAKERS)}'s {rng.choice(bench.RELATIVES)} #{i}", "person"))
    return names[:n]


def make_store(
    path: Path, n_units: int, config: Config, embedder: Embedder | None = None, seed: int = bench.DEFAULT_SEED
) -> dict[str, Any]:
    """Write a synthetic memory of ``n_units`` units (and a message per 5 units, with random
    vectors too) into ``path``: an export file next to it, restored, then deleted."""
    started = time.perf_counter()
    export = path.with_suffix(".export.jsonl")
    with Memory(path, namespace=bench.NAMESPACE, config=config, embedder=embedder) as mem:
        emb = mem.embedder
        try:
            with export.open("w", encoding="utf-8") as out:
                built = _write_export(out, n_units, emb.model_id, emb.dim, seed)
            mem.admin.restore(export)
        finally:
            export.unlink(missing_ok=True)
    return {**built, "build_s": round(time.perf_counter() - started, 1)}


# The export format written below: version 3, as `localmem export` writes it (messages and
# units named by their printed ids, a trailer); tests/benchmarks/test_bench.py checks they agree.
EXPORT_VERSION = 3
_PRINTED = {
    "message": {"id": "m"},
    "unit": {"id": "u", "episode_id": "u"},
    "unit_source": {"unit_id": "u", "message_id": "m"},
    "mention": {"unit_id": "u"},
    "link": {"src_id": "u", "dst_id": "u"},
    "part": {"message_id": "m"},
}
_PRINTED_VECTORS = {"messages": "m", "units": "u"}


def _printed_ids(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the messages and units it names as ``m:ID`` / ``u:ID``."""
    fields = dict(_PRINTED.get(record["type"], {}))
    if record["type"] == "vector" and record["table"] in _PRINTED_VECTORS:
        fields["id"] = _PRINTED_VECTORS[record["table"]]
    return {
        **record,
        **{key: f"{kind}:{record[key]}" for key, kind in fields.items() if isinstance(record.get(key), int)},
    }


def _write_export(out: Any, n_units: int, model_id: str, dim: int, seed: int) -> dict[str, Any]:
    """The synthetic memory as export records (ids given: the store it is restored into is new)."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    ns = bench.NAMESPACE
    digest, records = hashlib.sha256(), Counter()

    def write(record: dict[str, Any]) -> None:
        record = _printed_ids(record)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        digest.update(line.encode("utf-8"))
        records[record["type"]] += record["type"] != "header"
        out.write(line)

    def vectors(table: str, ids: Sequence[int], kinds: Sequence[str | None] | None = None) -> None:
        for i, (row_id, vec) in enumerate(zip(ids, _unit_vectors(nprng, len(ids), dim))):
            write(
                {
                    "type": "vector",
                    "table": table,
                    "id": row_id,
                    "ns": ns,
                    "embedding": vec.tobytes().hex(),
                    **({"kind": kinds[i]} if kinds is not None else {}),
                }
            )

    n_entities = _write_header_and_entities(write, rng, n_units, model_id, dim, seed)
    weights = _weights(n_entities)
    next_unit = next_message = next_part = 1
    n_episodes = n_parts = 0
    for start in range(0, n_units, _BATCH):
        count = min(_BATCH, n_units - start)
        units, messages, next_unit, next_message = _batch_rows(rng, start, count, n_units, next_unit, next_message)
        n_episodes += sum(u["kind"] == "episode" for u in units)
        for unit in units:
            write(unit)
        _write_mentions_and_links(write, rng, nprng, units, n_entities, weights)
        for message, episode in messages:
            write(message)
            write({"type": "unit_source", "unit_id": episode, "message_id": message["id"]})
        # Two sentence parts per message, as a chat message of a few sentences has.
        part_ids = []
        for message, _episode in messages:
            for offset in (0, 10):
                write(
                    {
                        "type": "part",
                        "id": next_part,
                        "ns": ns,
                        "message_id": message["id"],
                        "start": offset,
                        "end": offset + 10,
                    }
                )
                part_ids.append(next_part)
                next_part += 1
        n_parts += len(part_ids)
        vectors("units", [u["id"] for u in units], [u["kind"] for u in units])
        vectors("messages", [m["id"] for m, _e in messages])
        vectors("message_parts", part_ids)
    # The trailer: what the file holds and its checksum (an import refuses a file without it).
    out.write(
        json.dumps(
            {
                "type": "trailer",
                "records": {k: v for k, v in sorted(records.items()) if v},
                "sha256": digest.hexdigest(),
            }
        )
        + "\n"
    )
    return {"units": n_units, "episodes": n_episodes, "entities": n_entities, "parts": n_parts}


def _write_header_and_entities(
    write: Callable[[dict[str, Any]], None], rng: random.Random, n_units: int, model_id: str, dim: int, seed: int
) -> int:
    """The export's header, its one source and the entities (with their aliases) the units
    mention; how many entities."""
    ns = bench.NAMESPACE
    write(
        {
            "type": "header",
            "format": "localmem-export",
            "version": EXPORT_VERSION,
            "namespaces": [ns],
            "vectors": True,
            "embed_model_id": model_id,
            "embed_dim": dim,
        }
    )
    write(
        {
            "type": "source",
            "id": 1,
            "ns": ns,
            "kind": "bench",
            "uri": "synthetic",
            "sha256": f"bench-units-{n_units}-{seed}",
            "status": "loaded",
            "created_at": _CREATED,
        }
    )
    n_entities = max(200, n_units // 50)
    entities = _entity_names(n_entities, rng)
    for eid, (name, kind) in enumerate(entities, 1):
        write(
            {
                "type": "entity",
                "id": eid,
                "ns": ns,
                "name": name,
                "norm_name": name.lower(),
                "entity_type": kind,
                "created_at": _CREATED,
            }
        )
        write({"type": "alias", "entity_id": eid, "alias": name, "norm_alias": name.lower()})
    return n_entities


def _batch_rows(
    rng: random.Random, start: int, count: int, n_units: int, next_unit: int, next_message: int
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], int]], int, int]:
    """Units ``start`` .. ``start + count`` of the synthetic memory (an episode opening every
    :data:`UNITS_PER_EPISODE`, then its gists and facts) and a message for every 5th, with the
    next free unit and message ids."""
    ns = bench.NAMESPACE
    first_day = dt.date(2022, 1, 1)
    units: list[dict[str, Any]] = []  # episodes first in each group, as their members point to them
    messages: list[tuple[dict[str, Any], int]] = []  # (message, its episode's id)
    episode_id = 0
    for i in range(start, start + count):
        day = (first_day + dt.timedelta(days=int(i * 1095 / max(n_units, 1)))).isoformat()
        speaker, hobby = rng.choice(bench.SPEAKERS), rng.choice(bench.HOBBIES)
        text = (
            f"{speaker} went {hobby} with their {rng.choice(bench.RELATIVES)} in "
            f"{rng.choice(bench.CITIES)} and cooked {rng.choice(bench.DISHES)}"
        )
        if (i - start) % UNITS_PER_EPISODE == 0:
            episode_id, next_unit = next_unit, next_unit + 1
            units.append(
                {
                    **_UNIT,
                    "id": episode_id,
                    "ns": ns,
                    "kind": "episode",
                    "text": f"{speaker}'s day. {text}",
                    "occurred_start": day,
                    "occurred_end": day,
                    "mentioned_at": f"{day}T12:00:00",
                }
            )
        units.append(
            {
                **_UNIT,
                "id": next_unit,
                "ns": ns,
                "kind": "gist" if i % 2 else "fact",
                "episode_id": episode_id,
                "text": text,
                "occurred_start": day,
                "occurred_end": day,
                "mentioned_at": f"{day}T12:00:00",
            }
        )
        next_unit += 1
        if i % 5 == 0:
            messages.append(
                (
                    {
                        **_MESSAGE,
                        "type": "message",
                        "id": next_message,
                        "ns": ns,
                        "source_id": 1,
                        "seq": i,
                        "external_id": f"m{i}",
                        "text": text,
                        "sent_at": f"{day}T12:00:00",
                    },
                    episode_id,
                )
            )
            next_message += 1
    return units, messages, next_unit, next_message


def _write_mentions_and_links(
    write: Callable[[dict[str, Any]], None],
    rng: random.Random,
    nprng: np.random.Generator,
    units: list[dict[str, Any]],
    n_entities: int,
    weights: np.ndarray,
) -> None:
    """Who each gist and fact mentions (an episode's first person speaks in it), and their
    temporal and semantic links."""
    members = [u for u in units if u["kind"] != "episode"]
    picks = nprng.choice(n_entities, size=(len(members), 3), p=weights)
    cast: dict[int, dict[int, str]] = {}
    for offset, unit in enumerate(members):
        uid = unit["id"]
        mentioned: set[int] = set()
        for j in range(1 + offset % 3):
            entity_id = int(picks[offset, j]) + 1
            tag = rng.choice(_TAGS)
            if entity_id not in mentioned:  # a unit mentions an entity once
                mentioned.add(entity_id)
                write({"type": "mention", "unit_id": uid, "entity_id": entity_id, "role": "mentioned", "tag": tag})
            # An episode's first person speaks in it; the others are mentioned.
            roles = cast.setdefault(unit["episode_id"], {})
            roles.setdefault(entity_id, "supporting" if roles else "main")
        neighbours = [(uid - 1, "temporal", rng.uniform(0.3, 1.0))] if uid > 1 else []
        neighbours += [(max(1, uid - rng.randint(2, 1000)), "semantic", rng.uniform(0.7, 1.0)) for _ in range(2)]
        seen: set[tuple[int, str]] = set()
        for other, kind, weight in neighbours:
            if other != uid and (other, kind) not in seen:  # two draws can pick one neighbour
                seen.add((other, kind))
                write(
                    {
                        "type": "link",
                        "src_id": other,
                        "dst_id": uid,
                        "link_type": kind,
                        "weight": round(weight, 3),
                        "valid_at": None,
                        "created_at": _CREATED,
                    }
                )
    for episode, roles in cast.items():
        for entity_id, role in roles.items():
            write({"type": "mention", "unit_id": episode, "entity_id": entity_id, "role": role, "tag": None})


_QUERY_TEMPLATES = [
    "What did {person} do in {month} 2023?",
    "Who went {hobby} with {person}?",
    "When did {person} cook {dish}?",
    "What happened in {city} last summer?",
    "Where did {person} go {hobby} before March 2023?",
    "What did {person} cook between May and July 2022?",
]


def queries(n: int, seed: int = bench.QUERY_SEED) -> list[str]:
    rng = random.Random(seed)
    months = ["January", "March", "May", "June", "August", "October", "December"]
    return [
        rng.choice(_QUERY_TEMPLATES).format(
            person=rng.choice(bench.SPEAKERS),
            month=rng.choice(months),
            hobby=rng.choice(bench.HOBBIES),
            dish=rng.choice(bench.DISHES),
            city=rng.choice(bench.CITIES),
        )
        for _ in range(n)
    ]


def _index_overlap(
    mem: Memory, queries: Sequence[str], n_units: int, seed: int, k: int = 10, sample: int = 20
) -> tuple[str, float]:
    """Which unit index served the queries, and the share of the exact top ``k`` units (cosine
    over every unit vector the bench wrote, recomputed here) that the vector channel returned,
    averaged over the first ``sample`` queries. The bench's unit vectors are random, so their
    neighbours are nearly equidistant: a harsh case for codes."""
    index = mem.stats().vector_index.get("units", "exact")
    exact_units = _exact_unit_vectors(mem.embedder.dim, n_units, seed)
    ids = np.arange(1, len(exact_units) + 1)
    recipe = SearchParams(
        channels=("vector",),
        parts=False,
        evidence_fusion=False,
        session_weight=0.0,
        speaker_weight=0.0,
        question_handoff=0.0,
        when_weight=0.0,
    )
    shares = []
    for query in list(queries)[:sample]:
        vec = mem.embedder.embed([query], role="query")[0]
        exact = set(ids[np.argsort(-(exact_units @ vec))[:k]].tolist())
        hits = mem.search(query, k=4 * k, recipe=recipe, rerank="none")
        got = [int(h.id[2:]) for h in hits if h.id.startswith("u:")][:k]
        shares.append(len(set(got) & exact) / max(len(exact), 1))
    return index, round(float(np.mean(shares)) if shares else 0.0, 3)


def _exact_unit_vectors(dim: int, n_units: int, seed: int) -> np.ndarray:
    """Every unit vector :func:`_write_export` wrote, in unit id order (drawn again from the seed)."""
    nprng = np.random.default_rng(seed)
    n_entities = max(200, n_units // 50)
    out = []
    for start in range(0, n_units, _BATCH):
        count = min(_BATCH, n_units - start)
        n_episode = (count + UNITS_PER_EPISODE - 1) // UNITS_PER_EPISODE
        n_messages = len(range(start + (-start % 5), start + count, 5))
        nprng.choice(n_entities, size=(count, 3), p=_weights(n_entities))
        out.append(_unit_vectors(nprng, count + n_episode, dim))
        _unit_vectors(nprng, n_messages, dim)
        _unit_vectors(nprng, 2 * n_messages, dim)
    return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)


def bench_memory_search(
    sizes: Sequence[int],
    workdir: Path | None,
    config: Config,
    n_queries: int = 100,
    k: int = 10,
    embedder: Embedder | None = None,
) -> list[dict[str, Any]]:
    """p50/p95 of the full search (all five channels, promotion) and of each channel alone."""
    workdir = Path(workdir) if workdir is not None else bench.default_workdir()
    private_dir(workdir)
    cfg = bench._bench_config(config)
    qs = queries(bench.WARMUP_QUERIES + n_queries)
    warmup, timed = qs[: bench.WARMUP_QUERIES], qs[bench.WARMUP_QUERIES :]
    rows = []
    for n in sizes:
        path = workdir / f"bench-units-{n}.db"
        meta_path = path.with_suffix(".json")
        # Stores built before the bench wrote episodes and message parts are rebuilt.
        if not (path.exists() and meta_path.exists() and "parts" in json.loads(meta_path.read_text())):
            bench._remove_store(path)
            meta_path.write_text(json.dumps(make_store(path, n, cfg, embedder)))
        built = json.loads(meta_path.read_text())
        with Memory(path, namespace=bench.NAMESPACE, config=cfg, embedder=embedder) as mem:
            embedder = mem.embedder
            for query in warmup:
                mem.search(query, k=k, channels=CHANNELS, promote=True)
            full = bench._timed(lambda query: mem.search(query, k=k, channels=CHANNELS, promote=True), timed)
            row: dict[str, Any] = {
                "units": n,
                "episodes": built["episodes"],
                "entities": built["entities"],
                "links": mem.stats().links,
                "queries": len(timed),
            }
            row["p50_ms"], row["p95_ms"], _ = bench._ms_stats(full)
            for channel in CHANNELS:
                samples = bench._timed(lambda query, c=channel: mem.search(query, k=k, channels=[c]), timed)
                row[f"{channel}_p50_ms"] = bench._ms_stats(samples)[0]
            row["vector_index"], row["overlap@10"] = _index_overlap(mem, timed, n, bench.DEFAULT_SEED)
            row["build_s"] = built["build_s"]
            row["db_mb"] = bench._store_mb(mem)
            rows.append(row)
    return rows
