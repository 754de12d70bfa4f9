"""The bench harness at tiny sizes with the fake embedder: structure and sanity, not speed."""

from __future__ import annotations

import json
import math
from pathlib import Path

from localmem_bench import bench
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, store_config, store_connect

SIZES = [50, 120]


def test_generation_is_deterministic_and_nested() -> None:
    first = bench.generate_messages(200)
    assert first == bench.generate_messages(200)
    assert bench.generate_messages(50) == first[:50]  # smaller sizes are prefixes
    assert bench.generate_messages(200, seed=1) != first
    assert bench.generate_queries(20) == bench.generate_queries(20)
    assert bench.generate_queries(20, seed=5) != bench.generate_queries(20)


def test_generated_messages_look_like_chat() -> None:
    messages = bench.generate_messages(2000)
    assert all(set(m) == {"conversation", "session", "id", "speaker", "text", "time"} for m in messages)
    assert len({m["speaker"] for m in messages}) == len(bench.SPEAKERS)
    assert len({m["conversation"] for m in messages}) > 5
    assert len({(m["conversation"], m["session"]) for m in messages}) > 20
    assert len({(m["conversation"], m["id"]) for m in messages}) == len(messages)  # ids unique
    times = [m["time"] for m in messages]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert len({m["text"] for m in messages}) > len(messages) // 2  # varied content
    queries = set(bench.generate_queries(50))
    assert not queries & {m["text"] for m in messages}


def test_write_jsonl_round_trips(tmp_path: Path) -> None:
    messages = bench.generate_messages(10)
    path = tmp_path / "x.jsonl"
    bench.write_jsonl(messages, path)
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == messages


def test_default_workdir_under_localmem_home(isolated_home: Path) -> None:
    assert bench.default_workdir() == isolated_home / "bench"


def test_bench_ingest_and_search(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    workdir = tmp_path / "bench"
    rows = bench.bench_ingest(SIZES, workdir, store_config(), embedder=embedder)
    assert [r["messages"] for r in rows] == SIZES
    for size, row in zip(SIZES, rows):
        assert set(row) == set(bench.INGEST_COLUMNS)
        assert row["stored"] == size
        assert row["total_s"] >= row["embed_s"] >= 0
        assert row["msgs_per_s"] > 0 and row["msgs_per_s_excl_embed"] > 0
        assert row["db_mb"] > 0
        assert row["peak_rss_mb"] is None or row["peak_rss_mb"] > 0
        path = bench.store_path(workdir, size)
        with open_memory(path, namespace=bench.NAMESPACE, embedder=embedder) as mem:
            assert mem.stats().messages == size

    # Re-running starts from a fresh store rather than adding to the old one.
    again = bench.bench_ingest([SIZES[0]], workdir, store_config(), embedder=embedder)
    assert again[0]["stored"] == SIZES[0]

    results = bench.bench_search(SIZES, workdir, store_config(), n_queries=5, k=3, embedder=embedder)
    assert [r["messages"] for r in results] == SIZES
    for row in results:
        assert set(row) == set(bench.SEARCH_COLUMNS)
        assert row["queries"] == 5 and row["k"] == 3
        assert 0 < row["p50_ms"] <= row["p95_ms"]
        assert row["mean_ms"] > 0
        for col in ("vector_p50_ms", "bm25_p50_ms", "embed_p50_ms"):
            assert row[col] > 0 and not math.isnan(row[col])


def test_bench_search_builds_a_missing_store(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    rows = bench.bench_search([30], tmp_path / "w", store_config(), n_queries=3, embedder=embedder)
    assert rows[0]["messages"] == 30
    assert bench.store_path(tmp_path / "w", 30).is_file()


def test_bench_searches_find_relevant_messages(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    bench.bench_ingest([300], tmp_path, store_config(), embedder=embedder)
    with open_memory(bench.store_path(tmp_path, 300), namespace=bench.NAMESPACE, embedder=embedder) as mem:
        hits = mem.search("marathon training", k=5, channels=["bm25"])
    assert hits and any("marathon" in h.text.lower() for h in hits)


def test_memory_bench_builds_units_links_entities_and_times_every_channel(tmp_path):
    from localmem_bench.bench_memory import (
        CHANNELS,
        MEMORY_COLUMNS,
        bench_memory_search,
    )
    from tests.fakes import HashEmbedder

    rows = bench_memory_search([600], tmp_path, store_config(), n_queries=5, embedder=HashEmbedder())
    (row,) = rows
    assert set(MEMORY_COLUMNS) <= set(row) and row["units"] == 600 and row["entities"] == 200
    assert row["links"] > 600 and all(row[f"{c}_p50_ms"] > 0 for c in CHANNELS) and row["p50_ms"] > 0
    assert row["episodes"] == 60

    conn = store_connect(tmp_path / "bench-units-600.db")
    held, cast, counted = conn.execute(
        "select (select count(*) from units where kind = 'gist' and episode_id is not null), "
        "(select count(distinct unit_id) from mentions where role = 'main'), "
        "(select sum(episode_count) from entities)"
    ).fetchone()
    conn.close()
    assert held == 300 and cast == 60 and counted >= 60  # every episode holds units and has a speaker
    again = bench_memory_search([600], tmp_path, store_config(), n_queries=5, embedder=HashEmbedder())
    assert again[0]["build_s"] == row["build_s"]  # the store is reused, not rebuilt


def test_the_synthetic_export_is_written_as_localmem_exports(tmp_path):
    """bench_memory writes its stores as export files: the same version, ids and trailer as
    `localmem export`, so they import as they are."""
    import io
    import json

    from localmem.store import transfer
    from localmem_bench import bench_memory
    from tests.fakes import HashEmbedder
    from tests.helpers import open_memory

    out = io.StringIO()
    bench_memory._write_export(out, 40, "hash-embedder", 64, seed=1)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert records[0]["version"] == bench_memory.EXPORT_VERSION == transfer.VERSION
    assert records[-1]["type"] == "trailer"
    by_type = {r["type"]: r for r in records}
    assert by_type["message"]["id"].startswith("m:") and by_type["unit"]["id"].startswith("u:")
    assert by_type["unit_source"]["unit_id"].startswith("u:") and by_type["link"]["src_id"].startswith("u:")
    path = tmp_path / "synthetic.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    with open_memory(tmp_path / "m.db", namespace="other", embedder=HashEmbedder()) as mem:
        counts = mem.admin.restore(path).to_dict()
        assert "unchecked" not in counts and counts["unit"] == 40 + 4
        again = io.StringIO()
        mem.admin.export(again)
    assert [json.loads(line)["type"] for line in again.getvalue().splitlines()][-1] == "trailer"
