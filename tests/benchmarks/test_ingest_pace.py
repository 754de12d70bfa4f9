"""`bench ingest --messages N` at a small N with the fake embedder: the export it writes, the
report's fields and exact counts; not speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem.cli import cli
from localmem.config import Config
from localmem.importers import formats
from localmem_bench import ingest_pace
from tests.fakes import HashEmbedder
from tests.helpers import runner

# The bench's scratch store is its own, made plain on purpose (it measures ingest, not the cipher),
# so the suite's encrypted run does not count it as a store the test forgot to key.
pytestmark = pytest.mark.plain_stores

FIELDS = {
    "messages",
    "stored",
    "added",
    "import_s",
    "import_msgs_per_s",
    "embed_s",
    "floor_s",
    "floor_msgs_per_s",
    "ratio",
    "import_cpu_s",
    "floor_cpu_s",
    "cpu_ratio",
    "embedded_texts",
    "peak_rss_mb",
    "floor_peak_rss_mb",
    "reingest_s",
    "reingest_added",
    "wall_s",
    "file_mb",
    "db_mb",
    "model",
    "embed_batch",
    "ingest_batch",
    "cpus",
    "load_avg",
    "isolated",
}


def _parse(path: Path):
    return formats.parse(path, None, None, None, options=formats.Options.from_config(Config()))


@pytest.mark.parametrize("n", [1, 37, 1000])
def test_the_export_holds_exactly_n_messages_as_whatsapp_writes_them(tmp_path, n):
    path = tmp_path / ingest_pace.FILE_NAME
    ingest_pace.write_whatsapp_export(path, n)
    parsed = _parse(path)
    assert parsed.format == "whatsapp" and parsed.message_count == n
    assert {m.conversation for _, group in parsed.groups for m in group} == {ingest_pace.GROUP}


def test_the_export_is_varied_and_has_what_an_import_skips(tmp_path):
    path = tmp_path / ingest_pace.FILE_NAME
    ingest_pace.write_whatsapp_export(path, 3000)
    text = path.read_text(encoding="utf-8")
    assert "Messages and calls are end-to-end encrypted" in text and "This message was deleted" in text
    assert "<This message was edited>" in text
    messages = [m for _, group in _parse(path).groups for m in group]
    texts = [m.text for m in messages]
    assert len(set(texts)) > len(texts) * 0.6  # not one sentence repeated
    assert sum("\n" in t for t in texts) > 50  # multi-line messages
    assert sum(bool(m.attachments) for m in messages) > 30  # <Media omitted>
    assert len({m.speaker for m in messages}) == len(ingest_pace.MEMBERS)
    assert all("<This message was edited>" not in t for t in texts)
    times = [m.sent_at or "" for m in messages]
    assert times == sorted(times)


def test_same_seed_same_file(tmp_path):
    a, b, c = (tmp_path / d / ingest_pace.FILE_NAME for d in "abc")
    ingest_pace.write_whatsapp_export(a, 500)
    ingest_pace.write_whatsapp_export(b, 500)
    ingest_pace.write_whatsapp_export(c, 500, seed=7)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_the_report_counts_exactly(tmp_path):
    row = ingest_pace.bench_ingest_pace(300, tmp_path, Config(), embedder=HashEmbedder(), isolate=False)
    assert set(row) == FIELDS
    assert row["messages"] == row["stored"] == row["added"] == 300
    assert row["reingest_added"] == 0  # the second import is a no-op
    assert row["embedded_texts"] > 300  # messages of several long sentences add their parts
    assert row["model"] == "hash-embedder" and row["isolated"] is False
    for key in ("import_s", "floor_s", "import_msgs_per_s", "floor_msgs_per_s", "ratio", "peak_rss_mb"):
        assert row[key] > 0, key
    # ratio is rounded to 3 decimals: a slow import (a loaded machine, a PostgreSQL store) makes it
    # small enough that the rounding alone is more than 2 %
    assert row["ratio"] == pytest.approx(row["import_msgs_per_s"] / row["floor_msgs_per_s"], rel=0.02, abs=5e-4)
    assert (row["embed_batch"], row["ingest_batch"]) == (Config().embed_batch, Config().ingest_batch)


@pytest.mark.slow
def test_each_measure_runs_in_its_own_process(tmp_path):
    row = ingest_pace.bench_ingest_pace(120, tmp_path, Config(), embedder=HashEmbedder(), isolate=True)
    assert row["isolated"] is True and row["messages"] == row["stored"] == 120 and row["reingest_added"] == 0
    assert row["peak_rss_mb"] > 0 and row["floor_peak_rss_mb"] > 0


def test_the_cli_prints_the_report(tmp_path, use_models, monkeypatch):
    use_models(embedder=HashEmbedder())
    # In this process: a spawned one would not have the fake embedder registered.
    monkeypatch.setattr(ingest_pace, "_run", lambda isolate, fn, *args: fn(*args))
    args = ["bench", "ingest", "--messages", "200", "--workdir", str(tmp_path)]
    result = runner().invoke(cli, ["--db", str(tmp_path / "unused.db"), *args, "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (row["messages"], row["stored"], row["reingest_added"]) == (200, 200, 0)
    text = runner().invoke(cli, ["--db", str(tmp_path / "unused.db"), *args])
    assert text.exit_code == 0 and "import_msgs_per_s: " in text.stdout and "ratio: " in text.stdout
