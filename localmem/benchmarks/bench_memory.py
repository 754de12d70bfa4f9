"""Search latency over built memory: synthetic units with entities, mentions, links and times.

Building a million units through the LLM pipeline is not possible on a laptop, so the store
is written directly: unit texts from templates, times spread over three years, one to three
entity mentions per unit drawn from a skewed pool (a few hubs, many rare names), a temporal
link to the previous unit and two semantic links to nearby ones, and an episode per
:data:`UNITS_PER_EPISODE` units that holds them, their people and two messages (each with two
sentence parts). Unit, message and part vectors are random unit
vectors (search cost does not depend on what they encode; recall here means nothing);
queries are embedded by the real embedder. Every number is measured in this run.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..build import ingest
from ..build.embedding import embed_batched
from ..config import ALL_CHANNELS, Config
from ..memory import Memory
from ..models.protocols import Embedder
from ..retrieval import vector_index
from ..store.queries import q
from . import bench

MEMORY_COLUMNS: list[str] = [
    "units", "episodes", "entities", "links", "queries", "p50_ms", "p95_ms", "vector_p50_ms", "bm25_p50_ms",
    "graph_p50_ms", "temporal_p50_ms", "entity_p50_ms", "vector_index", "overlap@10", "build_s", "db_mb",
]
CHANNELS = ALL_CHANNELS
_TAGS = ["trip", "work", "family", "hobby", "food", "health", "move", "party", "pet", "plans"]
_BATCH = 20_000
UNITS_PER_EPISODE = 10  # conv-26's extraction has ~2; a stronger model writes more per episode
_CREATED = "2024-01-01T00:00:00"
_UNIT = {"conversation": None, "episode_id": None, "subject": None, "predicate": None, "object": None,
         "time_precision": "day", "prompt_version": None, "model_id": None, "content_hash": None,
         "data": None, "created_at": _CREATED}
_MESSAGE = {"conversation": "bench", "session": "", "speaker": "Maya", "role": None, "attachments": None,
            "raw": None}


def _unit_vectors(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """Random unit vectors (search cost does not depend on what they encode)."""
    vecs = rng.standard_normal((count, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _entity_names(n: int, rng: random.Random) -> list[tuple[str, str]]:
    people = [f"{first} {last}" for first in bench.SPEAKERS for last in
              ["Silva", "Tanaka", "Weber", "Okafor", "Kim", "Novak", "Haddad", "Larsen", "Moreau", "Costa",
               "Ivanova", "Mendez", "Rossi", "Sato", "Walsh", "Nakamura", "Kowalski", "Dubois"]]
    names = [(p, "person") for p in bench.SPEAKERS + people] + [(c, "place") for c in bench.CITIES] + \
        [(h, "activity") for h in bench.HOBBIES]
    i = 0
    while len(names) < n:
        i += 1
        names.append((f"{rng.choice(bench.SPEAKERS)}'s {rng.choice(bench.RELATIVES)} #{i}", "person"))
    return names[:n]


def build_store(path: Path, n_units: int, config: Config, embedder: Embedder | None = None,
                seed: int = bench.DEFAULT_SEED) -> dict[str, Any]:
    """Write a synthetic memory of ``n_units`` units (and a message per 5 units, with random
    vectors too) into ``path``."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    started = time.perf_counter()
    with Memory(path, namespace=bench.NAMESPACE, config=config, embedder=embedder) as mem:
        emb = mem.embedder
        ingest.ensure_bound(mem.conn, emb)
        conn, ns, dim = mem.conn, bench.NAMESPACE, emb.dim
        n_entities = max(200, n_units // 50)
        entities = _entity_names(n_entities, rng)
        first_day = dt.date(2022, 1, 1)
        with conn:
            source_id = conn.execute(q("source_insert"), {
                "ns": ns, "kind": "bench", "uri": "synthetic", "sha256": f"bench-units-{n_units}-{seed}",
                "status": "loaded", "created_at": _CREATED}).fetchone()[0]
            entity_ids = [conn.execute(q("entity_insert"), {
                "ns": ns, "name": name, "norm_name": name.lower(), "type": kind, "created_at": _CREATED,
            }).fetchone()[0] for name, kind in entities]
            conn.executemany(q("alias_insert"), [{"entity_id": eid, "alias": name, "norm_alias": name.lower()}
                                                 for eid, (name, _k) in zip(entity_ids, entities)])
        weights = 1.0 / np.arange(1, n_entities + 1) ** 1.1  # a few hubs, a long tail
        weights /= weights.sum()
        n_episodes = n_parts = 0
        for start in range(0, n_units, _BATCH):
            count = min(_BATCH, n_units - start)
            with conn:
                rows, messages, episodes, message_episode = [], [], [], []
                for i in range(start, start + count):
                    day = (first_day + dt.timedelta(days=int(i * 1095 / max(n_units, 1)))).isoformat()
                    speaker, hobby = rng.choice(bench.SPEAKERS), rng.choice(bench.HOBBIES)
                    text = (f"{speaker} went {hobby} with their {rng.choice(bench.RELATIVES)} in "
                            f"{rng.choice(bench.CITIES)} and cooked {rng.choice(bench.DISHES)}")
                    if (i - start) % UNITS_PER_EPISODE == 0:
                        episodes.append({**_UNIT, "ns": ns, "kind": "episode", "text": f"{speaker}'s day. {text}",
                                         "occurred_start": day, "occurred_end": day,
                                         "mentioned_at": f"{day}T12:00:00"})
                    rows.append({**_UNIT, "ns": ns, "kind": "gist" if i % 2 else "fact", "text": text,
                                 "occurred_start": day, "occurred_end": day,
                                 "mentioned_at": f"{day}T12:00:00"})
                    if i % 5 == 0:
                        messages.append({**_MESSAGE, "ns": ns, "source_id": source_id, "seq": i,
                                         "external_id": f"m{i}", "text": text, "sent_at": f"{day}T12:00:00"})
                        message_episode.append(len(episodes) - 1)
                episode_ids = [row[0] for row in conn.executemany(q("unit_insert"), episodes)]
                n_episodes += len(episode_ids)
                for offset, row in enumerate(rows):
                    row["episode_id"] = episode_ids[offset // UNITS_PER_EPISODE]
                ids = [row[0] for row in conn.executemany(q("unit_insert"), rows)]
                picks = nprng.choice(n_entities, size=(count, 3), p=weights)
                mentions, links = [], []
                cast: dict[int, dict[int, str]] = {}
                for offset, uid in enumerate(ids):
                    for j in range(1 + offset % 3):
                        entity_id = entity_ids[int(picks[offset, j])]
                        mentions.append({"unit_id": uid, "entity_id": entity_id,
                                         "role": "mentioned", "tag": rng.choice(_TAGS)})
                        # An episode's first person speaks in it; the others are mentioned.
                        roles = cast.setdefault(episode_ids[offset // UNITS_PER_EPISODE], {})
                        roles.setdefault(entity_id, "supporting" if roles else "main")
                    neighbours = [(uid - 1, "temporal", rng.uniform(0.3, 1.0))] if uid > 1 else []
                    neighbours += [(max(1, uid - rng.randint(2, 1000)), "semantic", rng.uniform(0.7, 1.0))
                                   for _ in range(2)]
                    links += [{"src_id": other, "dst_id": uid, "type": kind, "weight": round(w, 3),
                               "valid_at": None, "created_at": _CREATED}
                              for other, kind, w in neighbours if other != uid]
                mentions += [{"unit_id": episode_id, "entity_id": entity_id, "role": role, "tag": None}
                             for episode_id, roles in cast.items() for entity_id, role in roles.items()]
                conn.executemany(q("mention_insert"), mentions)
                conn.executemany(q("link_insert"), links)
                conn.executemany(q("vec_unit_insert"), [
                    {"id": uid, "embedding": vec.tobytes(), "ns": ns, "kind": row["kind"]}
                    for uid, vec, row in zip(ids + episode_ids, _unit_vectors(nprng, count + len(episode_ids), dim),
                                             rows + episodes)])
                message_ids = [row[0] for row in conn.executemany(q("message_insert"), messages)]
                conn.executemany(q("unit_source_insert"), [
                    {"unit_id": episode_ids[e], "message_id": mid} for mid, e in zip(message_ids, message_episode)])
                conn.executemany(q("vec_message_insert"), [
                    {"id": mid, "embedding": vec.tobytes(), "ns": ns}
                    for mid, vec in zip(message_ids, _unit_vectors(nprng, len(message_ids), dim))])
                # Two sentence parts per message, as a chat message of a few sentences has.
                part_ids = [row[0] for row in conn.executemany(q("part_insert"), [
                    {"message_id": mid, "ns": ns, "start": start, "end": start + 10}
                    for mid in message_ids for start in (0, 10)])]
                conn.executemany(q("vec_part_insert"), [
                    {"id": pid, "embedding": vec.tobytes(), "ns": ns}
                    for pid, vec in zip(part_ids, _unit_vectors(nprng, len(part_ids), dim))])
                n_parts += len(part_ids)
    return {"units": n_units, "episodes": n_episodes, "entities": n_entities, "parts": n_parts,
            "build_s": round(time.perf_counter() - started, 1)}


_QUERY_TEMPLATES = [
    "What did {person} do in {month} 2023?", "Who went {hobby} with {person}?",
    "When did {person} cook {dish}?", "What happened in {city} last summer?",
    "Where did {person} go {hobby} before March 2023?", "What did {person} cook between May and July 2022?",
]


def queries(n: int, seed: int = bench.QUERY_SEED) -> list[str]:
    rng = random.Random(seed)
    months = ["January", "March", "May", "June", "August", "October", "December"]
    return [rng.choice(_QUERY_TEMPLATES).format(
        person=rng.choice(bench.SPEAKERS), month=rng.choice(months), hobby=rng.choice(bench.HOBBIES),
        dish=rng.choice(bench.DISHES), city=rng.choice(bench.CITIES)) for _ in range(n)]


def _index_overlap(mem: Memory, queries: Sequence[str], k: int = 10, sample: int = 20) -> tuple[str, float]:
    """Which unit index served the queries, and the share of the exact top ``k`` units (vec0's
    full scan) that it returned, averaged over the first ``sample`` queries. The bench's unit
    vectors are random, so their neighbours are nearly equidistant: a harsh case for codes."""
    units = mem.conn.execute(q("bench_unit_vectors"), {"ns": mem.namespace}).fetchone()[0]
    kind = "codes" if units >= vector_index.EXACT_BELOW else "exact"
    shares = []
    for vec in embed_batched(mem.embedder, list(queries)[:sample], 64):
        got = {i for i, _ in vector_index.knn(mem.conn, "units", mem.namespace, vec, k)}
        exact = {i for i, _ in mem.conn.execute(q("vec_units_knn"), {"embedding": vec.astype(np.float32).tobytes(),
                                                                      "k": k, "ns": mem.namespace})}
        shares.append(len(got & exact) / max(len(exact), 1))
    return kind, round(float(np.mean(shares)) if shares else 0.0, 3)


def bench_memory_search(sizes: Sequence[int], workdir: Path | None, config: Config, n_queries: int = 100,
                        k: int = 10, embedder: Embedder | None = None) -> list[dict[str, Any]]:
    """p50/p95 of the full search (all five channels, promotion) and of each channel alone."""
    workdir = Path(workdir) if workdir is not None else bench.default_workdir()
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = bench._bench_config(config)
    qs = queries(bench.WARMUP_QUERIES + n_queries)
    warmup, timed = qs[:bench.WARMUP_QUERIES], qs[bench.WARMUP_QUERIES:]
    rows = []
    for n in sizes:
        path = workdir / f"bench-units-{n}.db"
        meta_path = path.with_suffix(".json")
        # Stores built before the bench wrote episodes and message parts are rebuilt.
        if not (path.exists() and meta_path.exists() and "parts" in json.loads(meta_path.read_text())):
            bench._remove_store(path)
            meta_path.write_text(json.dumps(build_store(path, n, cfg, embedder)))
        built = json.loads(meta_path.read_text())
        with Memory(path, namespace=bench.NAMESPACE, config=cfg, embedder=embedder) as mem:
            embedder = mem.embedder
            for query in warmup:
                mem.search(query, k=k, channels=CHANNELS, promote=True)
            full = bench._timed(lambda query: mem.search(query, k=k, channels=CHANNELS, promote=True), timed)
            row: dict[str, Any] = {"units": n, "episodes": built["episodes"], "entities": built["entities"],
                                   "links": mem.conn.execute(q("bench_link_count")).fetchone()[0],
                                   "queries": len(timed)}
            row["p50_ms"], row["p95_ms"], _ = bench._ms_stats(full)
            for channel in CHANNELS:
                samples = bench._timed(lambda query, c=channel: mem.search(query, k=k, channels=[c]), timed)
                row[f"{channel}_p50_ms"] = bench._ms_stats(samples)[0]
            row["vector_index"], row["overlap@10"] = _index_overlap(mem, timed)
            row["build_s"] = built["build_s"]
            row["db_mb"] = bench._file_mb(path)
            rows.append(row)
    return rows
