"""Graph, temporal and entity channels over a small hand-built memory."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from localmem.retrieval import channels
from localmem.retrieval.query_time import Range
from tests.helpers import open_memory


def _unit(conn, text, when=None, kind="gist"):
    return conn.execute(
        "insert into units (ns, kind, text, occurred_start, occurred_end, created_at) "
        "values ('test', ?, ?, ?, ?, '2024-01-01') returning id",
        (kind, text, when, when),
    ).fetchone()[0]


def _link(conn, a, b, weight, kind="semantic"):
    conn.execute(
        "insert into links (src_id, dst_id, type, weight, created_at) values (?, ?, ?, ?, '2024')", (a, b, kind, weight)
    )


def _unit_vector(conn, unit, vec):
    # the store's own query: the vector tables differ by engine (sqlite-vec, pgvector)
    conn.run("vec_unit_insert", {"id": unit, "ns": "test", "kind": "gist", "embedding": vec.tobytes()})


def _entity(conn, name, units, tag=None):
    eid = conn.execute(
        "insert into entities (ns, name, norm_name, type, created_at) values "
        "('test', ?, lower(?), 'person', '2024') returning id",
        (name, name),
    ).fetchone()[0]
    conn.execute("insert into entity_aliases values (?, ?, lower(?))", (eid, name, name))
    for unit in units:
        conn.execute("insert into mentions values (?, ?, 'mentioned', ?)", (unit, eid, tag))
    return eid


@pytest.fixture
def graph_store(mem):
    mem.add("Ann", "hello")  # binds the embedder, creating the vector tables
    conn = mem.conn
    with conn:
        ids = {name: _unit(conn, name) for name in "abcdefgx"}
        _link(conn, ids["a"], ids["b"], 1.0)  # a -> b: 0.8
        _link(conn, ids["b"], ids["c"], 1.0)  # b -> c: 0.64, and c <- d backwards
        _link(conn, ids["d"], ids["c"], 0.5)  # c -> d against the direction: 0.256
        _link(conn, ids["a"], ids["e"], 0.05)  # below the weight threshold: never followed
        _link(conn, ids["a"], ids["c"], 0.2)  # a shorter but weaker way to c: 0.16 < 0.64
        _link(conn, ids["a"], ids["x"], 0.15)  # 0.12 from a seed of 1.0, 0.06 (pruned) from 0.5
        _entity(conn, "Rex", [ids["a"], ids["f"]])  # rare entity: 1/sqrt(2) * 0.8 = 0.566
        _entity(conn, "Ann", [ids[n] for n in "abcefg"])  # a hub: 1/sqrt(6) * 0.8 = 0.327
    return mem, ids


def test_spreading_activation_decays_prunes_and_keeps_the_best_path(graph_store):
    mem, ids = graph_store
    found = dict(channels.graph(mem.conn, "test", [(("u", ids["a"]), 1.0)], budget=50))
    act = {name: found.get(("u", i)) for name, i in ids.items()}
    assert act["a"] == pytest.approx(1.0)
    assert act["b"] == pytest.approx(0.8)
    assert act["c"] == pytest.approx(0.64)  # the best of its paths, not the first or the sum
    assert act["f"] == pytest.approx(0.8 / np.sqrt(2), abs=1e-6)
    assert act["d"] == pytest.approx(0.64 * 0.5 * 0.8)  # against the link's direction
    assert act["e"] == pytest.approx(0.8 / np.sqrt(6))  # through the hub; the 0.05 link is never taken
    assert act["x"] == pytest.approx(0.12)
    order = [key for key, _ in channels.graph(mem.conn, "test", [(("u", ids["a"]), 1.0)], budget=50)]
    assert order[:3] == [("u", ids["a"]), ("u", ids["b"]), ("u", ids["c"])]


def test_entry_points_need_similarity_and_the_walk_stops_at_the_threshold(graph_store):
    mem, ids = graph_store
    assert channels.graph(mem.conn, "test", [(("u", ids["a"]), 0.45)], budget=50) == []
    weak = dict(channels.graph(mem.conn, "test", [(("u", ids["a"]), 0.5)], budget=50))
    assert all(score >= 0.1 for score in weak.values())
    assert ("u", ids["x"]) not in weak and ("u", ids["b"]) in weak
    assert len(channels.graph(mem.conn, "test", [(("u", ids["a"]), 1.0)], budget=2)) == 2


def test_temporal_channel_keeps_the_range_and_spreads_over_temporal_links(mem):
    mem.add("Ann", "hello", time="2023-06-03T10:00:00")
    conn = mem.conn
    with conn:
        june = _unit(conn, "june thing", "2023-06-10")
        july = _unit(conn, "july thing", "2023-07-02")
        august = _unit(conn, "august thing", "2023-08-20")
        _link(conn, june, july, 0.9, "temporal")
    dim = mem.embedder.dim
    for unit in (june, july, august):
        vec = (np.ones(dim) / np.sqrt(dim)).astype(np.float32)
        _unit_vector(conn, unit, vec)
    query = (np.ones(dim) / np.sqrt(dim)).astype(np.float32)
    rng = Range(dt.date(2023, 6, 1), dt.date(2023, 6, 30), "in June 2023")
    found = dict(channels.temporal(conn, "test", rng, query, budget=10, min_similarity=-1.0))
    assert found[("u", june)] == pytest.approx(1.0, abs=1e-5)
    assert found[("u", july)] == pytest.approx(0.9 * 0.8, abs=1e-5)  # spread, outside the range
    assert ("u", august) not in found
    assert any(key[0] == "m" for key in found)  # the message sent in June


def test_temporal_channel_ranks_every_message_of_the_range_however_weakly_it_matches(mem):
    # The time the question names is evidence by itself: a message said then that shares no
    # word with the question is still a candidate, below one that matches; other days' are not.
    weak = mem.add("Nate", "I made you a card!", time="2022-05-25T10:00:00")
    strong = mem.add("Nate", "Movie night: we watched Little Women", time="2022-05-25T10:05:00")
    other = mem.add("Nate", "I made you a cake!", time="2022-06-02T10:00:00")
    query = mem.embedder.embed(["Which movie did Nate watch on 25 May?"])[0]
    day = Range(dt.date(2022, 5, 25), dt.date(2022, 5, 25), "on 25 May, 2022")
    found = [key for key, _ in channels.temporal(mem.conn, "test", day, query, budget=10)]
    assert ("m", weak.id) in found and ("m", other.id) not in found
    assert found.index(("m", strong.id)) < found.index(("m", weak.id))


def test_entity_channel_is_alias_aware_and_prefers_tagged_mentions(mem):
    mem.add("Ann", "hello")
    conn = mem.conn
    with conn:
        walk, vet, _other = _unit(conn, "walk"), _unit(conn, "vet"), _unit(conn, "other")
        rex = _entity(conn, "Rex", [walk])
        conn.execute("insert into mentions values (?, ?, 'mentioned', 'vet visit')", (vet, rex))
        conn.execute("insert into entity_aliases values (?, 'Rexy', 'rexy')", (rex,))
    hits = channels.entity(conn, "test", "When did Rexy go to the vet?", budget=10)
    assert [key for key, _ in hits] == [("u", vet), ("u", walk)]
    assert channels.entity(conn, "test", "Nothing named here", budget=10) == []
    assert "caroline's mother" in channels.query_names("Where did Caroline's mom go?")


def test_all_channels_through_search(graph_store):
    mem, _ids = graph_store
    hits = mem.search("Rex and Ann in 2023", channels=["vector", "bm25", "graph", "temporal", "entity"])
    assert hits and any("entity" in h.channels for h in hits)


def test_promotion_is_stable_and_adds_nothing():
    keys = [("m", 1), ("u", 2), ("m", 3), ("u", 4), ("m", 5)]
    assert channels.promote(keys, {("m", 3), ("m", 5), ("u", 99)}) == [("m", 3), ("m", 5), ("m", 1), ("u", 2), ("u", 4)]
    assert channels.promote(keys, set()) == keys


def test_promotion_through_search_keeps_the_candidates(tmp_path):

    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.pipeline.test_pipeline import _responder, _transcript

    with open_memory(
        tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=ScriptedLLM(responder=_responder)
    ) as mem:
        mem.ingest(_transcript(tmp_path), extract="llm")
        plain = mem.search("What did Caroline's mother like to eat?", k=30)
        promoted = mem.search("What did Caroline's mother like to eat?", k=30, promote=True)
        assert sorted(h.id for h in plain) == sorted(h.id for h in promoted)


def test_token_budget_keeps_whole_hits_in_rank_order(mem):
    from localmem.retrieval.search import fit_budget
    from localmem.types import Hit

    hits = [Hit(f"m:{i}", "message", "word " * n, 0.0, {}, None) for i, n in enumerate([5, 50, 3, 4])]
    kept = fit_budget(hits, 10, lambda text: len(text.split()))
    assert [h.id for h in kept] == ["m:0", "m:2"]  # m:1 does not fit; m:3 would overflow after m:2
    for i in range(30):
        mem.add("Ann", f"message number {i} about the garden and the roses and the weather")
    counter, name = mem.token_counter()
    assert name.startswith(("embedder:", "approximate:", "llm:")) and counter("one two three") > 0
    small = mem.search("garden roses", k=20, max_tokens=40)
    assert 0 < len(small) < 20 and sum(counter(h.text) for h in small) <= 40


def _searchable_units(mem, texts):
    """Units with vectors and one source message each, so that search can find them."""
    conn = mem.conn
    ids = []
    with conn:
        for text in texts:
            mid = mem.add("Ann", text).id
            uid = _unit(conn, text)
            conn.execute("insert into unit_sources values (?, ?)", (uid, mid))
            _unit_vector(conn, uid, mem.embedder.embed([text])[0])
            ids.append(uid)
    return ids


def test_a_superseded_fact_comes_with_its_successor_first(mem):
    old, new, _other = _searchable_units(mem, ["Ann lives in Paris", "Ann moved to Berlin", "Bob likes tea"])
    with mem.conn:
        _link(mem.conn, new, old, 1.0, "supersedes")
    hits = mem.search("Paris", k=5, channels=["bm25"])
    ids = [h.id for h in hits]
    assert f"u:{new}" in ids and ids.index(f"u:{new}") < ids.index(f"u:{old}")
    by_id = {h.id: h for h in hits}
    assert by_id[f"u:{old}"].superseded_by == f"u:{new}" and by_id[f"u:{new}"].supersedes == [f"u:{old}"]


def test_near_duplicate_units_are_one_hit_with_all_sources(mem):
    a, b = _searchable_units(mem, ["Ann adopted a beagle", "Ann adopted a beagle puppy"])
    with mem.conn:
        _link(mem.conn, a, b, 0.95, "synonymy")
    hits = mem.search("beagle", k=10, channels=["bm25"])
    units = [h for h in hits if h.kind == "gist"]
    assert len(hits) == 1
    assert len(units) == 1 and len(units[0].sources) == 2 and f"u:{b}" in units[0].merged
    # and the messages they rest on are that same hit, not hits of their own
    assert [h for h in hits if h.kind == "message"] == [] and {"m:1", "m:2"} <= set(units[0].merged)


def test_a_message_and_the_gist_resting_on_it_are_one_hit_at_the_better_rank():
    from localmem.retrieval.search import collapse
    from localmem.types import Hit, HitSource

    def src(mid):
        return HitSource(mid, f"e{mid}", "c", "s", "Ann", None)

    message = Hit("m:7", "message", "Ann: I got a beagle", 0.0, {}, None, [src(7)])
    other = Hit("m:8", "message", "Ann: hello", 0.0, {}, None, [src(8)])
    gist = Hit("u:3", "gist", "Ann got a beagle (7 May 2023).", 0.0, {}, "2023-05-07", [src(7)])
    wide = Hit("u:4", "gist", "Ann talked a lot.", 0.0, {}, None, [src(7), src(8), src(9)])
    out = collapse([message, other, gist, wide])
    assert [h.id for h in out] == ["u:3", "m:8", "u:4"]  # the gist takes its message's place
    assert out[0].merged == ["m:7"]
    gist2 = Hit("u:3", "gist", "Ann got a beagle (7 May 2023).", 0.0, {}, "2023-05-07", [src(7)])
    message2 = Hit("m:7", "message", "Ann: I got a beagle", 0.0, {}, None, [src(7)])
    again = collapse([gist2, message2, Hit("m:8", "message", "Ann: hello", 0.0, {}, None, [src(8)])])
    assert [h.id for h in again] == ["u:3", "m:8"] and again[0].merged == ["m:7"]


def test_evidence_fusion_lets_units_vote_for_their_messages(mem):
    from localmem.retrieval.search import evidence_fusion

    m1, m2, m3 = (mem.add("Ann", text).id for text in ("first", "second", "third"))
    conn = mem.conn
    with conn:
        narrow, wide = _unit(conn, "Ann said something second"), _unit(conn, "Ann's whole chat", kind="episode")
        conn.execute("insert into unit_sources values (?, ?)", (narrow, m2))
        for mid in (m1, m2, m3):
            conn.execute("insert into unit_sources values (?, ?)", (wide, mid))
    fused = [
        (("m", m1), 0.030, {"bm25": 1}),
        (("u", narrow), 0.020, {"vector": 1}),
        (("u", wide), 0.015, {"vector": 2}),
        (("m", m3), 0.010, {"bm25": 2}),
    ]
    out = evidence_fusion(conn, fused, weight=0.5)
    order = [key for key, _, _ in out]
    assert order == [("m", m1), ("u", wide), ("m", m3), ("m", m2), ("u", narrow)]
    scores = {key: score for key, score, _ in out}
    assert scores[("m", m2)] == pytest.approx(0.010)  # brought in by its gist: 0.5 x 0.020
    assert scores[("u", narrow)] < scores[("m", m2)]  # right behind its message, to be folded with it
    assert scores[("u", wide)] == 0.015 and scores[("m", m1)] == 0.030  # episodes vote for nothing


def test_mention_counts_follow_inserts_ignored_duplicates_and_cascaded_deletes(mem):
    mem.add("Ann", "hello")
    conn = mem.conn

    def counts():
        return {
            eid: (kept, real)
            for eid, kept, real in conn.execute(
                "select e.id, e.mention_count, (select count(*) from mentions m where m.entity_id = e.id) "
                "from entities e"
            )
        }

    with conn:
        a, b, c = _unit(conn, "a"), _unit(conn, "b"), _unit(conn, "c")
        rex = _entity(conn, "Rex", [a, b, c])
        conn.run("mention_insert", {"unit_id": a, "entity_id": rex, "role": "mentioned", "tag": None})  # exists
        ann = _entity(conn, "Ann", [a])
    assert counts() == {rex: (3, 3), ann: (1, 1)}
    with conn:
        conn.execute("delete from units where id = ?", (a,))  # mentions go by cascade
    assert counts() == {rex: (2, 2), ann: (0, 0)}


def test_episode_counts_count_each_episode_once_and_follow_deletes(mem):
    mem.add("Ann", "hello")
    conn = mem.conn

    def counts():
        return {
            eid: (kept, real)
            for eid, kept, real in conn.execute(
                "select e.id, e.episode_count, (select count(distinct m.unit_id) from mentions m "
                "join units u on u.id = m.unit_id where m.entity_id = e.id and u.kind = 'episode') from entities e"
            )
        }

    with conn:
        e1, e2, fact = _unit(conn, "one", kind="episode"), _unit(conn, "two", kind="episode"), _unit(conn, "f")
        rex = _entity(conn, "Rex", [fact])  # a unit's mention: no episode
        conn.execute("insert into mentions values (?, ?, 'main', null)", (e1, rex))
        conn.execute("insert into mentions values (?, ?, 'supporting', null)", (e1, rex))  # same episode
        conn.execute("insert into mentions values (?, ?, 'supporting', null)", (e2, rex))
    assert counts() == {rex: (2, 2)}
    with conn:
        conn.execute("delete from mentions where unit_id = ? and role = 'main'", (e1,))  # still supporting
    assert counts() == {rex: (2, 2)}
    with conn:
        conn.execute("delete from units where id = ?", (e1,))  # cascade
    assert counts() == {rex: (1, 1)}


def test_bm25_leaves_out_words_common_to_many_documents(mem, monkeypatch):
    from localmem.retrieval import search

    for i in range(5):
        mem.add("Ann", f"Ann went running in the park, day {i}")
    mem.add("Ann", "Ann adopted a beagle")
    conn = mem.conn
    assert search.pruned_fts_query(conn, "Ann beagle running", "messages") == '"ann" OR "beagle" OR "running"'
    monkeypatch.setattr(search, "COMMON_TERM_DOCS", 2)
    assert search.pruned_fts_query(conn, "Ann beagle running", "messages") == '"beagle"'
    assert search.pruned_fts_query(conn, "Ann running", "messages") in ('"ann"', '"running"')  # one stays
    hits = mem.search("Ann beagle running", k=3, channels=["bm25"])
    assert "beagle" in hits[0].text


def test_entity_channel_reads_only_the_most_recent_mentions_of_an_entity(mem, monkeypatch):
    mem.add("Ann", "hello")
    conn = mem.conn
    with conn:
        units = [_unit(conn, f"walk {i}") for i in range(6)]
        _entity(conn, "Rex", units)
    monkeypatch.setattr(channels, "ENTITY_MENTIONS", 3)
    hits = channels.entity(conn, "test", "Where did Rex walk?", budget=10)
    assert [key[1] for key, _ in hits] == units[::-1][:3]
