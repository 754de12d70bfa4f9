"""Forgetting one thing: each kind of target deletes exactly it and what rests only on it, and
afterwards its text is not in the database file's bytes (main file and write-ahead log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.errors import LocalmemError, NotFoundError
from localmem.models.embedding import to_blob, unit_text
from tests.fakes import HashEmbedder
from tests.helpers import count, old_store, open_memory, postgres_url, runner, snapshot, store_bytes, write_jsonl

# Unique markers. FTS5 stores a term after the first on a page as a suffix of the term before it,
# so the tail of a marker is what is counted: a copy stored either way contains it.
MARK = "qzxv7f3a9c2e1b42"  # in the secret message and everything derived from it
MARK_U = "wkjh5d8e0a6c3f97"  # in one gist only


def marker_count(path: Path, marker: str = MARK) -> int:
    """Copies of ``marker`` in the store's bytes: the file and its write-ahead log."""
    return sum(marker_counts(path, marker))


def marker_counts(path: Path, marker: str = MARK) -> tuple[int, int]:
    """Copies of ``marker`` in the file and in its write-ahead log; on PostgreSQL, in every
    relation file of the store's database (its pages) and 0 (the server's WAL is the
    operator's: docs/postgres.md)."""
    if postgres_url(path) is not None:
        return store_bytes(path).count(marker[-10:].encode()), 0
    return tuple(
        p.read_bytes().count(marker[-10:].encode()) if p.exists() else 0  # type: ignore[return-value]
        for p in (path, Path(f"{path}-wal"))
    )


def _unit(mem: Memory, kind: str, text: str, sources: list[int], episode: int | None = None) -> int:
    """A derived unit as extraction writes it: row, sources, vector (and full-text row by trigger)."""
    conn = mem.conn
    uid = conn.execute(
        "insert into units (ns, kind, conversation, episode_id, text, occurred_start, created_at) "
        "values (?, ?, 'c', ?, ?, '2023-01-15', '2024-01-01') returning id",
        (mem.namespace, kind, episode, text),
    ).fetchone()[0]
    for mid in sources:
        conn.execute("insert into unit_sources values (?, ?)", (uid, mid))
    conn.run(
        "vec_unit_insert",
        {
            "id": uid,
            "ns": mem.namespace,
            "kind": kind,
            "embedding": to_blob(mem.embedder.embed([unit_text(text, None)])[0]),
        },
    )
    return uid


def _entity(mem: Memory, name: str, kind: str, units: list[int], summary: str | None = None) -> int:
    conn = mem.conn
    eid = conn.run(
        "entity_insert",
        {"ns": mem.namespace, "name": name, "norm_name": name.lower(), "type": kind, "created_at": "2024-01-01"},
    ).fetchone()[0]
    conn.run("alias_insert", {"entity_id": eid, "alias": name, "norm_alias": name.lower()})
    for uid in units:
        conn.run("mention_insert", {"unit_id": uid, "entity_id": eid, "role": "subject", "tag": "home"})
    if summary:
        conn.execute("update entities set summary = ?, summary_at = '2024-01-01' where id = ?", (summary, eid))
    return eid


def _call(mem: Memory, episode: int, raw: str) -> None:
    mem.conn.run(
        "llm_call_log",
        {
            "ns": mem.namespace,
            "episode_id": episode,
            "stage": "extract",
            "prompt_version": "v1",
            "model_id": "m",
            "calls": 1,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "seconds": 0.1,
            "ok": 1,
            "error": None,
            "raw": raw,
            "created_at": "2024-01-01",
        },
    )


def _episode_of(mem: Memory, message_id: int) -> int:
    return mem.conn.execute(
        "select us.unit_id from unit_sources us join units u on u.id = us.unit_id "
        "where u.kind = 'episode' and us.message_id = ?",
        (message_id,),
    ).fetchone()[0]


@pytest.fixture
def store(tmp_path):
    """Namespace 'me': 40 daily notes (February 2023, their own file) and a secret chat (January
    2023, another file): the secret message holds MARK; the reply after it holds it as its
    full-text context. Built memory as extraction and consolidation write it: the episodes'
    narratives (MARK-free), a gist resting only on the secret message (MARK, MARK_U), a fact
    resting on it and on a daily note (kept when it goes), an entity only the gist mentions
    (named with MARK), a person whose written summary repeats MARK, and the secret episode's
    logged model reply (MARK). Namespace 'other' holds the same daily notes."""
    daily = [
        {
            "conversation": "daily",
            "id": f"d{i}",
            "speaker": "Ana" if i % 2 else "Ben",
            "text": f"daily note {i} about the garden and weather",
            "time": f"2023-02-{1 + i % 27:02d}T10:{i:02d}",
        }
        for i in range(40)
    ]
    secret = [
        {
            "conversation": "secret",
            "id": "s1",
            "speaker": "Ana",
            "text": f"The door code is {MARK}, keep it between us",
            "time": "2023-01-15T09:00",
        },
        {
            "conversation": "secret",
            "id": "s2",
            "speaker": "Ben",
            "text": "Sure, I will remember it",
            "time": "2023-01-15T09:01",
        },
    ]
    mem = open_memory(tmp_path / "m.db", namespace="me", embedder=HashEmbedder())
    mem.ingest(write_jsonl(tmp_path / "daily.jsonl", daily))
    mem.ingest(write_jsonl(tmp_path / "secret.jsonl", secret))
    with open_memory(mem.path, namespace="other", embedder=HashEmbedder()) as other:
        other.ingest(tmp_path / "daily.jsonl")
    ids = dict(mem.conn.execute("select external_id, id from messages where ns = 'me'").fetchall())
    with mem.conn:
        secret_ep, daily_ep = _episode_of(mem, ids["s1"]), _episode_of(mem, ids["d3"])
        mem.conn.execute(
            "update units set title = 'House talk', text = 'Ana and Ben talked about the house', "
            "stage = 'extracted' where id = ?",
            (secret_ep,),
        )
        gist = _unit(mem, "gist", f"Ana's door code is {MARK} ({MARK_U})", [ids["s1"]], secret_ep)
        fact = _unit(mem, "fact", "Ana keeps notes about the house", [ids["s1"], ids["d3"]], daily_ep)
        _entity(mem, f"code {MARK}", "object", [gist])
        _entity(mem, "Ana", "person", [gist, fact], summary=f"Ana's door code is {MARK}.")
        _call(mem, secret_ep, json.dumps({"narrative": f"Ana said the code {MARK}"}))
    if postgres_url(mem.path) is None:
        mem.conn.execute("pragma wal_checkpoint(TRUNCATE)").fetchall()
    mem.ids = {**ids, "gist": gist, "fact": fact, "secret_episode": secret_ep, "daily_episode": daily_ep}
    yield mem
    mem.close()


def _source_of(mem: Memory, conversation: str) -> int:
    return mem.conn.execute(
        "select source_id from messages where ns = 'me' and conversation = ?", (conversation,)
    ).fetchone()[0]


# What is forgotten: the Memory.forget arguments, the same as `localmem forget` arguments, and the
# marker that must be gone.
KINDS = {
    "m:ID": (lambda m: {"ids": [f"m:{m.ids['s1']}"]}, lambda m: [f"m:{m.ids['s1']}"], MARK),
    "u:ID": (lambda m: {"ids": [f"u:{m.ids['gist']}"]}, lambda m: [f"u:{m.ids['gist']}"], MARK_U),
    "--conversation": (lambda m: {"conversation": "secret"}, lambda m: ["--conversation", "secret"], MARK),
    "--before": (lambda m: {"before": "2023-02-01"}, lambda m: ["--before", "2023-02-01"], MARK),
    "--match": (lambda m: {"match": MARK.upper()}, lambda m: ["--match", MARK.upper()], MARK),  # any case
    "--source": (
        lambda m: {"source_id": _source_of(m, "secret")},
        lambda m: ["--source", str(_source_of(m, "secret"))],
        MARK,
    ),
    "--namespace": (lambda m: {"namespace": "me"}, lambda m: ["--namespace", "me"], MARK),
}


@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.plain_only
def test_forgotten_text_is_not_in_the_file(store, kind, via, use_models):
    api_args, cli_args, marker = KINDS[kind]
    before = marker_counts(store.path, marker)
    assert sum(before) > 0
    if via == "api":
        command = f"Memory.forget(**{api_args(store)})"
        result = store.forget(**api_args(store)).to_dict()
        assert marker_count(store.path, marker) == 0, (kind, before)  # at once, the store still open
        store.close()
    else:
        args = cli_args(store)
        command = f"localmem --db m.db -n me forget {' '.join(args)} --yes"
        store.close()
        use_models(embedder=HashEmbedder())
        out = runner().invoke(cli, ["--db", str(store.path), "-n", "me", "forget", *args, "--yes", "--json"])
        assert out.exit_code == 0, out.output
        result = json.loads(out.stdout)
    after = marker_counts(store.path, marker)
    print(
        f"\nbytes: {command}: {marker} file+WAL {before[0]}+{before[1]} -> {after[0]}+{after[1]} "
        f"(vacuumed: {result['file']['vacuumed']})"
    )
    assert result["counts"]["messages"] + result["counts"]["units"] > 0 and result["file"]["wal_emptied"] is True
    assert after == (0, 0), (kind, before)
    assert marker_count(store.path, "daily note") > 0  # the rest is still there


def test_forgetting_a_message_takes_what_rests_only_on_it(store):
    ids, conn = store.ids, store.conn
    plan = store.forget(ids=[f"m:{ids['s1']}"], dry_run=True).to_dict()
    assert plan["messages"] == [f"m:{ids['s1']}"] and plan["units"] == [f"u:{ids['gist']}"]
    assert plan["entities"] == ["e:1"] and plan["sources"] == []  # the reply keeps the source
    assert sorted(plan["kept_units"]) == sorted([f"u:{ids['fact']}", f"u:{ids['secret_episode']}"])
    done = store.forget(ids=[f"m:{ids['s1']}"]).to_dict()
    assert plan.pop("file") is None and done.pop("file")["wal_emptied"] is True
    assert done == {**plan, "dry_run": False}
    # the fact rested on the secret and on a daily note: it stays, with the daily note
    assert [r[0] for r in conn.execute("select message_id from unit_sources where unit_id = ?", (ids["fact"],))] == [
        ids["d3"]
    ]
    # the episode stays with the reply; its logged reply no longer holds what it read
    assert [
        r[0] for r in conn.execute("select message_id from unit_sources where unit_id = ?", (ids["secret_episode"],))
    ] == [ids["s2"]]
    assert conn.execute("select raw from llm_calls where episode_id = ?", (ids["secret_episode"],)).fetchone() == (
        None,
    )
    # Ana stays (the fact mentions her); her summary repeated the deleted gist
    assert conn.execute("select summary from entities where name = 'Ana'").fetchone() == (None,)
    assert count(conn, f"select count(*) from entities where name like '%{MARK}%'") == 0
    # the reply was indexed with the secret as its context: not any more
    assert store.search(MARK, channels=["bm25"]) == []
    assert store.search("remember", channels=["bm25"])[0].id == f"m:{ids['s2']}"
    assert count(conn, "select count(*) from messages where ns = 'me'") == 41


def test_a_dry_run_changes_nothing(store):
    before = snapshot(store.path)
    for target, _args, _marker in KINDS.values():
        assert store.forget(**target(store), dry_run=True).dry_run is True
    assert snapshot(store.path) == before


def test_forgetting_a_unit_keeps_its_messages(store):
    ids = store.ids
    result = store.forget(ids=[f"u:{ids['secret_episode']}"]).to_dict()
    # an episode goes with what was extracted from it; its messages stay (a later build groups them again)
    assert sorted(result["units"]) == sorted([f"u:{ids['secret_episode']}", f"u:{ids['gist']}"])
    assert result["messages"] == [] and result["kept_units"] == []
    assert count(store.conn, "select count(*) from messages where ns = 'me' and conversation = 'secret'") == 2
    assert count(store.conn, "select count(*) from llm_calls") == 0
    assert store.extraction.segment_without_llm() == 1


@pytest.mark.plain_only
def test_kept_summaries_are_reported_and_match_removes_them(store):
    """A unit that also rests on other messages stays, and its model-written text may still
    repeat the deleted words: the result names it, and --match finds it."""
    ids = store.ids
    store.conn.execute(
        "update units set text = ? where id = ?", (f"Ana told Ben the code {MARK}", ids["secret_episode"])
    )
    result = store.forget(ids=[f"m:{ids['s1']}"]).to_dict()
    assert f"u:{ids['secret_episode']}" in result["kept_units"]
    assert marker_count(store.path) > 0  # the narrative still says it
    again = store.forget(match=MARK).to_dict()
    assert again["units"] == [f"u:{ids['secret_episode']}"] and again["messages"] == []
    assert marker_count(store.path) == 0


def test_before_takes_a_time(store):
    result = store.forget(before="2023-01-15T09:01", dry_run=True).to_dict()
    assert result["messages"] == [f"m:{store.ids['s1']}"]


def test_what_cannot_be_forgotten_is_an_error(store):
    with pytest.raises(NotFoundError, match=r"no message m:999999 in namespace 'me'"):
        store.forget(ids=["m:999999"])
    other_id = store.conn.execute("select id from messages where ns = 'other' limit 1").fetchone()[0]
    with pytest.raises(NotFoundError, match=f"no message m:{other_id} in namespace 'me'"):
        store.forget(ids=[f"m:{other_id}"])  # ids of another namespace are not this one's to forget
    with pytest.raises(LocalmemError, match="not a memory id: '12'"):
        store.forget(ids=["12"])
    with pytest.raises(NotFoundError, match="no conversation 'nope' in namespace 'me'"):
        store.forget(conversation="nope")
    with pytest.raises(LocalmemError, match="exactly one target, got 2"):
        store.forget(conversation="secret", before="2023-01-01")
    assert store.forget(match="no such words anywhere").counts == {
        "sources": 0,
        "messages": 0,
        "units": 0,
        "entities": 0,
    }


def test_adds_to_each_conversation_are_a_source_of_their_own(tmp_path):
    with open_memory(tmp_path / "a.db", embedder=HashEmbedder()) as mem:
        mem.add("Ana", "lunch at noon?", conversation="work")
        mem.add("Ana", "love you", conversation="home")
        mem.add("Ben", "sure", conversation="work")
        sources = {s.uri: s for s in mem.browse.sources()}
        assert set(sources) == {"add:work", "add:home"} and sources["add:work"].messages == 2
        result = mem.forget(source_id=sources["add:work"].id).to_dict()
        assert result["counts"]["messages"] == 2
        assert [h.text for h in mem.recent(5)] == ["Ana: love you"]
        mem.add("Ben", "back again", conversation="work")  # a new source for it
        assert sorted(s.uri for s in mem.browse.sources()) == ["add:home", "add:work"]


def test_the_shared_add_source_of_older_stores_is_split_by_conversation(tmp_path):
    """Migration 0010: a store where every add went to one 'api' source gets one per conversation."""
    path = tmp_path / "old.db"
    old = old_store(path, 8)
    old.execute(
        "insert into sources (ns, kind, uri, sha256, status, created_at) "
        "values ('default', 'api', 'api:add', 'api', 'loaded', '2024-01-01'), "
        "('default', 'jsonl', 'f.jsonl', 'abc', 'loaded', '2024-01-02')"
    )
    for i, conv in enumerate(["work", "home", "work"]):
        old.execute(
            "insert into messages (ns, source_id, conversation, seq, external_id, speaker, text) "
            "values ('default', 1, ?, ?, ?, 'Ana', 'hello')",
            (conv, i, f"a{i}"),
        )
    old.execute(
        "insert into messages (ns, source_id, conversation, seq, external_id, speaker, text) "
        "values ('default', 2, 'file', 0, 'x', 'Ana', 'from a file')"
    )
    old.close()
    with open_memory(path, embedder=HashEmbedder()) as mem:
        found = {s.uri: (s.kind, s.messages, s.created_at) for s in mem.browse.sources()}
    assert found == {
        "f.jsonl": ("jsonl", 1, "2024-01-02"),
        "add:work": ("api", 2, "2024-01-01"),
        "add:home": ("api", 1, "2024-01-01"),
    }
