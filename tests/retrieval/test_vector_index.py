"""The binary-code index for large namespaces: same neighbours as the exact scan where it
matters, and a cache that follows inserts, deletes and re-bound stores."""

from __future__ import annotations

import numpy as np
import pytest

from localmem.retrieval import vector_index
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, store_connect

DIM = 64


def _store(tmp_path, n=400, seed=0):
    mem = open_memory(tmp_path / "v.db", namespace="t", embedder=HashEmbedder(dim=DIM))
    mem.add("Ann", "hello")  # binds the embedder: vector tables and codes
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with mem.conn:
        ids = []
        for i, v in enumerate(vecs):
            uid = mem.conn.execute(
                "insert into units (ns, kind, text, created_at) values ('t', ?, ?, '2024') returning id",
                ("fact" if i % 2 else "gist", f"u{i}"),
            ).fetchone()[0]
            mem.conn.run(
                "vec_unit_insert",
                {"id": uid, "ns": "t", "kind": "fact" if i % 2 else "gist", "embedding": v.tobytes()},
            )
            ids.append(uid)
    return mem, ids, vecs


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setattr(vector_index, "EXACT_BELOW", 0)  # every namespace takes the code path


def _exact(mem, vec, k, kind=None):
    if kind:
        rows = mem.conn.run("vec_units_knn_kind", {"embedding": vec.tobytes(), "k": k, "ns": "t", "kind": kind})
    else:
        rows = mem.conn.run("vec_units_knn", {"embedding": vec.tobytes(), "k": k, "ns": "t"})
    return [(int(i), float(d)) for i, d in rows]


def test_codes_find_the_near_neighbours_and_rescore_with_int8(tmp_path, forced):
    mem, ids, vecs = _store(tmp_path)
    with mem:
        rng = np.random.default_rng(1)
        overlap = []
        for target in (3, 17, 250):
            query = (vecs[target] + 0.3 / np.sqrt(DIM) * rng.standard_normal(DIM)).astype(np.float32)
            got = vector_index.knn(mem.conn, "units", "t", query, 10)
            exact = _exact(mem, query, 10)
            assert got[0][0] == ids[target] == exact[0][0]
            assert [d for _, d in got] == sorted(d for _, d in got)
            exact_d = dict(exact)
            for uid, d in got:  # cosine distances of the int8 copies, not Hamming
                if uid in exact_d:
                    assert d == pytest.approx(exact_d[uid], abs=2e-3)
            overlap.append(len({u for u, _ in got} & set(exact_d)))
        assert min(overlap) >= 6
        only_gists = vector_index.knn(mem.conn, "units", "t", vecs[4], 5, kind="gist")
        assert only_gists[0][0] == ids[4]
        kinds = {r[0]: r[1] for r in mem.conn.execute("select id, kind from units")}
        assert {kinds[u] for u, _ in only_gists} == {"gist"}


def test_small_namespaces_are_searched_exactly(tmp_path):
    mem, _ids, vecs = _store(tmp_path, n=50)
    with mem:
        assert vector_index.knn(mem.conn, "units", "t", vecs[7], 5) == _exact(mem, vecs[7], 5)
        assert vector_index.knn(mem.conn, "units", "t", vecs[7], 5, kind="fact") == _exact(mem, vecs[7], 5, kind="fact")


def test_the_cache_follows_inserts_and_deletes(tmp_path, forced):
    mem, ids, vecs = _store(tmp_path, n=100)
    with mem:
        new = -vecs[0]
        assert vector_index.knn(mem.conn, "units", "t", new, 1)[0][0] != ids[0]
        with mem.conn:
            uid = mem.conn.execute(
                "insert into units (ns, kind, text, created_at) values ('t', 'gist', 'new', '2024') returning id"
            ).fetchone()[0]
            mem.conn.run("vec_unit_insert", {"id": uid, "ns": "t", "kind": "gist", "embedding": new.tobytes()})
        assert vector_index.knn(mem.conn, "units", "t", new, 1)[0][0] == uid  # appended
        with mem.conn:
            mem.conn.execute("delete from units where id = ?", (uid,))
        assert vector_index.knn(mem.conn, "units", "t", new, 1)[0][0] != uid  # reloaded
        assert mem.conn.execute("select count(*) from vec_unit_codes").fetchone()[0] == 100


def test_stores_bound_before_the_codes_get_them_on_open(tmp_path):
    mem, _ids, _vecs = _store(tmp_path, n=30)
    path = mem.conn.raw.filename
    with mem.conn:
        mem.conn.execute("drop table vec_unit_codes; drop table vec_message_codes; drop table vec_code_changes")
    mem.close()
    conn = store_connect(path)
    try:
        assert conn.execute("select count(*) from vec_unit_codes").fetchone()[0] == 30
        assert conn.execute("select count(*) from vec_message_codes").fetchone()[0] == 1
        code = conn.execute("select code from vec_unit_codes limit 1").fetchone()[0]
        assert len(code) == DIM // 8
    finally:
        conn.close()


def test_search_uses_the_codes_on_large_namespaces(tmp_path, forced):
    mem, ids, vecs = _store(tmp_path, n=200)
    with mem:
        hits = mem.search("u5", k=5, channels=["vector"])
        assert hits  # the vector channel ran through the code path without error


def test_shortlist_keeps_the_candidates_closest_in_code(tmp_path, forced):
    mem, ids, vecs = _store(tmp_path, n=300)
    with mem:
        chosen = vector_index.shortlist(mem.conn, "units", "t", vecs[10], ids[:200], 5)
        assert len(chosen) == 5 and chosen[0] == ids[10] and set(chosen) <= set(ids[:200])
        assert vector_index.shortlist(mem.conn, "units", "t", vecs[10], ids[:3], 5) == ids[:3]


def test_rows_without_int8_are_rescored_from_their_floats(tmp_path, forced):
    mem, ids, vecs = _store(tmp_path)
    with mem:
        with mem.conn:  # as a store written before q8 existed, for a third of the rows
            mem.conn.execute("update vec_unit_codes set q8 = NULL where id % 3 = 0")
        query = vecs[9].astype(np.float32)
        got = vector_index.knn(mem.conn, "units", "t", query, 10)
        exact = dict(_exact(mem, query, 10))
        assert got[0][0] == ids[9]
        assert any(uid % 3 == 0 for uid, _ in got)
        for uid, d in got:
            if uid in exact:
                assert d == pytest.approx(exact[uid], abs=2e-3 if uid % 3 else 1e-5)


def test_a_store_whose_codes_predate_int8_gets_them_on_open(tmp_path):
    mem, ids, vecs = _store(tmp_path)
    path = tmp_path / "v.db"
    mem.close()
    conn = store_connect(path)
    conn.execute("alter table vec_unit_codes drop column q8")
    conn.execute("alter table vec_message_codes drop column q8")
    conn.close()
    with open_memory(path, namespace="t", embedder=mem.embedder) as again:
        total, filled = again.conn.execute("select count(*), count(q8) from vec_unit_codes").fetchone()
        assert total == filled == len(ids)
        blob = again.conn.execute("select q8 from vec_unit_codes where id = ?", (ids[5],)).fetchone()[0]
        restored = np.frombuffer(blob, dtype=np.int8).astype(np.float32)
        cosine = restored @ vecs[5] / np.linalg.norm(restored) / np.linalg.norm(vecs[5])
        assert cosine > 0.999
