"""The retrieval evaluation harness (LoCoMo and LongMemEval formats), with the fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from localmem.cli import cli
from localmem.config import Config
from localmem.errors import InputError, LocalmemError, NotFoundError
from localmem_bench.retrieval import (
    eval_db_path,
    locomo_retrieval,
    parse_evidence,
    render_markdown,
    write_report,
)
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, store_config

FIXTURE = Path(__file__).parent.parent / "fixtures" / "tiny_locomo.json"


def _rows(report: dict) -> dict:
    return {row["category"]: row for row in report["rows"]}


def _details(report: dict) -> dict:
    return {d["question"]: d for d in report["details"]}


def test_parse_evidence_tolerates_malformed_strings() -> None:
    assert parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D1:3 D1:5", "D1:3"]) == ["D1:3", "D1:5"]
    assert parse_evidence(["D", "D:11:26"]) == []  # no D<n>:<k> id in either
    assert parse_evidence([]) == []
    assert parse_evidence(None) == []


def test_recall_per_category_on_the_fixture(tmp_path: Path, embedder: HashEmbedder) -> None:
    db = tmp_path / "eval.db"
    report = locomo_retrieval(FIXTURE, store_config(db_path=db), [1, 3, 10], embedder=embedder)

    assert report["db"] == str(db) and not report["eval_store"]
    assert report["conversations"] == ["tiny-1", "tiny-2"]
    assert report["channels"] == ["vector", "bm25", "temporal"]
    assert report["ks"] == [1, 3, 10]
    assert len(report["sha256"]) == 64
    rows = _rows(report)
    assert [row["category"] for row in report["rows"]] == [1, 2, 3, 4, 5]
    assert rows[4]["name"] == "single-hop" and rows[4]["n"] == 2
    assert rows[2]["name"] == "temporal" and rows[2]["n"] == 1
    assert rows[5]["name"] == "adversarial" and rows[5]["n"] == 1
    assert rows[1]["n"] == 0 and rows[1]["recall@1"] is None
    # the overall row covers categories 1-4 only: the adversarial question is not in it
    assert report["overall"]["n"] == 3 and report["overall"]["name"] == "all 1–4"
    # The evidence message is near the top for these questions. Its exact rank is an artefact of
    # the word-hashing test embedder (the photo of a beagle puppy is as near to "puppy"), so only
    # the top 3 is asserted; recall@k must agree with the ranks whatever they are.
    details = _details(report)
    for question in ("What is the name of Ana's puppy?", "Where did Cy move?"):
        ranks = details[question]["ranks"]
        assert all(r is not None and 1 <= r <= 3 for r in ranks.values()), (question, ranks)
    for d in details.values():
        for k in (1, 3, 10):
            found = sum(1 for r in d["ranks"].values() if r is not None and r <= k)
            assert d[f"recall@{k}"] == round(found / len(d["ranks"]), 4), (d["question"], k, d)
    # with k above the conversation's size every evidence message is found
    assert report["overall"]["recall@10"] == 1.0 and rows[5]["recall@10"] == 1.0
    assert report["questions"] == 4 and report["skipped_no_evidence"] == 0
    assert report["ingest"]["added"] == 7 and report["ingest"]["seconds"] >= 0
    assert report["search"]["mean_latency_ms"] >= 0
    json.dumps(report)  # JSON-able

    # each sample went to its own namespace
    with open_memory(db, namespace="tiny-2", embedder=embedder) as mem:
        assert mem.stats().messages == 2
        assert {n.namespace: n.messages for n in mem.namespaces()} == {"tiny-1": 5, "tiny-2": 2}


def test_malformed_and_missing_evidence(tmp_path: Path, embedder: HashEmbedder) -> None:
    data = json.loads(FIXTURE.read_text())
    data[0]["qa"] = [
        {
            "question": "What did Biscuit chew and what class did Ben start?",
            "answer": "shoes; pottery",
            "evidence": ["D2:2; D2:1"],
            "category": 1,
        },
        {"question": "Anything?", "answer": "x", "evidence": [], "category": 4},
        {"question": "Anything else?", "answer": "y", "evidence": ["D"], "category": 3},
        {"question": "What breed is Biscuit?", "answer": "beagle", "evidence": ["D1:3", "D9:99"], "category": 4},
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    report = locomo_retrieval(path, store_config(db_path=tmp_path / "e.db"), [10], embedder=embedder)

    assert report["skipped_no_evidence"] == 2
    assert report["unknown_evidence_ids"] == 1
    details = _details(report)
    multi = details["What did Biscuit chew and what class did Ben start?"]
    assert multi["gold"] == ["D2:2", "D2:1"] and multi["recall@10"] == 1.0
    # an evidence id that is not in the conversation can never be found: half recall
    assert details["What breed is Biscuit?"]["recall@10"] == 0.5
    rows = _rows(report)
    assert rows[1]["n"] == 1 and rows[3]["n"] == 0 and rows[4]["n"] == 2  # tiny-2's question too
    assert report["per_conversation"][0] == {
        "conversation": "tiny-1",
        "questions": 2,
        "skipped_no_evidence": 2,
        "unknown_evidence_ids": 1,
    }


def test_conversations_limit_and_channels(tmp_path: Path, embedder: HashEmbedder) -> None:
    config = store_config(db_path=tmp_path / "e.db")
    report = locomo_retrieval(
        FIXTURE, config, [5], conversations=["tiny-1"], limit=2, channels=["bm25"], embedder=embedder
    )
    assert report["conversations"] == ["tiny-1"]
    assert report["questions"] == 2 and report["channels"] == ["bm25"]
    assert {d["conversation"] for d in report["details"]} == {"tiny-1"}

    with pytest.raises(NotFoundError, match="no conversation conv-99"):
        locomo_retrieval(FIXTURE, config, [5], conversations=["conv-99"], embedder=embedder)
    with pytest.raises(LocalmemError, match="unknown channel"):
        locomo_retrieval(FIXTURE, config, [5], channels=["telepathy"], embedder=embedder)
    with pytest.raises(LocalmemError, match="--k"):
        locomo_retrieval(FIXTURE, config, [0], embedder=embedder)


def test_rerun_reuses_the_store(tmp_path: Path, embedder: HashEmbedder) -> None:
    config = store_config(db_path=tmp_path / "e.db")
    first = locomo_retrieval(FIXTURE, config, [5], embedder=embedder)
    second = locomo_retrieval(FIXTURE, config, [5], embedder=embedder)
    assert second["ingest"]["added"] == 0 and second["ingest"]["already_loaded"]
    assert second["rows"] == first["rows"]


def test_default_store_is_a_dedicated_eval_store(isolated_home: Path, embedder: HashEmbedder) -> None:
    config = Config.load({})
    assert config.origin("db_path") == "default"
    report = locomo_retrieval(FIXTURE, config, [5], embedder=embedder)
    assert report["db"] == str(isolated_home / "eval-locomo.db") and report["eval_store"]
    assert (isolated_home / "eval-locomo.db").exists()
    assert not (isolated_home / "memory.db").exists()  # the user's memory is untouched

    given = isolated_home / "mine.db"
    assert eval_db_path(Config.load({"db_path": given})) == given
    assert eval_db_path(Config.load({}, env={"LOCALMEM_DB_PATH": str(given)})) == given


def test_not_a_benchmark_file(tmp_path: Path, embedder: HashEmbedder) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    with pytest.raises(InputError, match="not a LoCoMo file"):
        locomo_retrieval(chat, store_config(db_path=tmp_path / "e.db"), [5], embedder=embedder)
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(InputError, match="invalid JSON"):
        locomo_retrieval(broken, store_config(db_path=tmp_path / "e.db"), [5], embedder=embedder)
    with pytest.raises(InputError, match="no such file"):
        locomo_retrieval(tmp_path / "missing.json", store_config(db_path=tmp_path / "e.db"), [5], embedder=embedder)


def test_markdown_and_written_report(tmp_path: Path, embedder: HashEmbedder) -> None:
    report = locomo_retrieval(FIXTURE, store_config(db_path=tmp_path / "e.db"), [1, 10], embedder=embedder)
    text = render_markdown(report)
    assert "tiny_locomo.json" in text and "tiny-1, tiny-2" in text and "vector, bm25" in text
    assert "| category | n | recall@1 | recall@10 |" in text
    single_hop = next(row for row in report["rows"] if row["category"] == 4)
    assert f"| 4 single-hop | 2 | {100 * single_hop['recall@1']:.1f}% | 100.0% |" in text
    assert "| 1 multi-hop | 0 | — | — |" in text
    assert "| **all 1–4** | 3 |" in text

    out = tmp_path / "out"
    write_report(report, out)
    assert json.loads((out / "report.json").read_text()) == report
    assert (out / "report.md").read_text() == text


def test_cli_eval_locomo(tmp_path: Path, use_models, embedder: HashEmbedder) -> None:
    use_models(embedder=embedder)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "e.db"),
            "eval",
            "locomo",
            str(FIXTURE),
            "--retrieval-only",
            "--k",
            "1,5",
            "--channels",
            "vector",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| **all 1–4** | 3 |" in result.output and "channels: vector" in result.output
    assert json.loads((out / "report.json").read_text())["db"] == str(tmp_path / "e.db")


LONGMEMEVAL = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What breed is my dog?",
        "answer": "beagle",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00"],
        "haystack_session_ids": ["s-a", "s-b"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I got a beagle dog named Rex last week."},
                {"role": "assistant", "content": "Beagles are lovely dogs!"},
            ],
            [
                {"role": "user", "content": "Can you suggest a pasta recipe?"},
                {"role": "assistant", "content": "Try spaghetti carbonara."},
            ],
        ],
        "answer_session_ids": ["s-a"],
    },
    {
        "question_id": "q2",
        "question_type": "multi-session",
        "question": "Which cities did I visit for work?",
        "answer": "Oslo and Rome",
        "question_date": "2023/07/01 (Sat) 10:00",
        "haystack_dates": ["2023/06/01 (Thu) 08:00", "2023/06/10 (Sat) 08:00", "2023/06/20 (Tue) 08:00"],
        "haystack_session_ids": ["w-1", "w-2", "w-3"],
        "haystack_sessions": [
            [{"role": "user", "content": "I flew to Oslo for a work conference."}],
            [{"role": "user", "content": "What is a good houseplant?"}],
            [{"role": "user", "content": "My work trip to Rome was great, the cities were busy."}],
        ],
        "answer_session_ids": ["w-1", "w-3"],
    },
    {
        "question_id": "q3_abs",
        "question_type": "single-session-user",
        "question": "What is my cat's name?",
        "answer": "not mentioned",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_session_ids": ["s-c"],
        "haystack_sessions": [[{"role": "user", "content": "I like tea."}]],
        "answer_session_ids": [],
    },
]


def test_longmemeval_format(tmp_path: Path, embedder: HashEmbedder) -> None:
    path = tmp_path / "longmemeval_tiny.json"
    path.write_text(json.dumps(LONGMEMEVAL))
    db = tmp_path / "lme.db"
    report = locomo_retrieval(path, store_config(db_path=db), [1, 5], embedder=embedder)

    assert report["benchmark"] == "longmemeval"
    assert report["conversations"] == ["q1", "q2"] and report["skipped_abstention"] == 1
    rows = _rows(report)
    assert set(rows) == {"single-session-user", "multi-session"}
    assert rows["single-session-user"]["n"] == 1 and rows["single-session-user"]["recall@1"] == 1.0
    assert rows["multi-session"]["recall@5"] == 1.0  # both answer sessions among the top 5
    assert report["overall"]["n"] == 2 and report["overall"]["name"] == "all"
    assert report["ingest"]["added"] == 7
    # each haystack in its own namespace, with session ids, turn ids and times
    with open_memory(db, namespace="q1", embedder=embedder) as mem:
        hits = mem.search("beagle dog Rex", k=2)
    # the reply after it is near too: it is embedded in context, after the turn it answers
    source = next(h.sources[0] for h in hits if h.sources[0].external_id == "s-a:0")
    assert (source.session, source.external_id, source.sent_at) == ("s-a", "s-a:0", "2023-05-20T02:21:00")
    text = render_markdown(report)
    assert "| question type | n | recall@1 | recall@5 |" in text and "| **all** | 2 |" in text

    again = locomo_retrieval(path, store_config(db_path=db), [1, 5], embedder=embedder)
    assert again["ingest"]["added"] == 0 and again["rows"] == report["rows"]


def test_longmemeval_bad_dates(tmp_path: Path, embedder: HashEmbedder) -> None:
    item = json.loads(json.dumps(LONGMEMEVAL[0]))
    item["haystack_dates"] = ["someday", "2023/05/21 (Sun) 09:00"]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([item]))
    with pytest.raises(InputError, match=r"item 1 \(q1\) haystack_dates\[0\]"):
        locomo_retrieval(path, store_config(db_path=tmp_path / "e.db"), [5], embedder=embedder)


def test_report_records_promotion_and_rerank_and_refuses_an_unknown_mode(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    config = store_config(db_path=tmp_path / "e.db")
    report = locomo_retrieval(
        FIXTURE, config, [5], channels=["vector", "bm25", "entity"], promote=True, rerank="none", embedder=embedder
    )
    assert (report["promote"], report["rerank"]) == (True, "none") and report["questions"] > 0
    with pytest.raises(LocalmemError, match="rerank mode"):
        locomo_retrieval(FIXTURE, config, [5], rerank="sometimes", embedder=embedder)


def test_raw_turn_hybrid_reads_whole_messages_alone(
    tmp_path: Path, embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = store_config(db_path=tmp_path / "e.db")
    raw = locomo_retrieval(FIXTURE, config, [1, 5], embedder=embedder, raw=True)
    assert raw["channels"] == ["vector", "bm25"] and raw["system"] == "raw-hybrid"
    assert "raw-turn hybrid" in render_markdown(raw)
    with open_memory(config.db_path, embedder=embedder) as mem:
        mem.conn.execute("delete from message_parts")  # what whole-message vectors alone find
    # The baseline embeds the question as asked; so does the plain search compared with it.
    monkeypatch.setattr("localmem.retrieval.batch.vector_texts", lambda conn, ns, queries, *rest: list(queries))
    # ... and weighs no speaker (the plain search's speaker weight, off in the baseline)
    monkeypatch.setattr("localmem.retrieval.search.context_fusion", lambda conn, query, fused, *rest: fused)
    # ... and hands no question's score to its answer (off in the baseline too)
    monkeypatch.setattr("localmem.retrieval.search.question_handoff", lambda conn, fused, *rest: fused)
    monkeypatch.setattr("localmem.retrieval.search.saying_when", lambda conn, fused, *rest: fused)
    plain = locomo_retrieval(FIXTURE, config, [1, 5], channels=["vector", "bm25"], embedder=embedder)
    assert [d["ranks"] for d in raw["details"]] == [d["ranks"] for d in plain["details"]]
    # (that it ignores sentence parts is tested in tests/pipeline/test_parts.py)
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            str(tmp_path / "x.db"),
            "eval",
            "locomo",
            str(FIXTURE),
            "--retrieval-only",
            "--system",
            "full-context",
        ],
    )
    assert result.exit_code != 0 and "full-context retrieves nothing" in result.output
