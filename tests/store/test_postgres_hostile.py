"""The PostgreSQL store's namespace roles tried as an attacker would (issue 50): a role granted
namespace ``alice`` connects with its own SQL and tries the temporary-schema tricks on the
owner's SECURITY DEFINER functions, attaches the owner's trigger functions to tables of its
own, writes ``meta``, pushes the id sequences to their end, and reads through every table,
view and function the schema defines (enumerated from the catalogs, so a table or function
added later is tried too). Each attack must show it bob's namespace nowhere and leave the
store working for everyone. Run by .ci/run against its throwaway server (docs/postgres.md,
"What a namespace role can and cannot do")."""

from __future__ import annotations

import itertools
import json

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.errors import LocalmemError
from tests.fakes import HashEmbedder
from tests.helpers import assert_one_line_error, runner

psycopg = pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
pytestmark = pytest.mark.own_keys  # its stores are PostgreSQL databases, which localmem never keys

MARK = "qzbob"  # in every text of bob's; no row alice may see holds it
BOB_IDS = range(900001, 900010)  # the ids of the rows planted for bob below
# Every statement of the attacker's is cut short: a function looping as the owner is a finding.
ATTACK_TIMEOUT = "5s"


def _as_role(url: str, role: str) -> str:
    """``url`` with ``role`` as its user (the test server trusts its Unix socket)."""
    head, rest = url.split("://", 1)
    return f"{head}://{role}@{rest.split('@', 1)[1]}"


def _attacker(url: str, role: str = "lm_alice", *, shadow: bool = False):
    """The role's own connection; ``shadow``: with the temp-schema trick in place (a TEMP
    namespace_roles naming bob, readable by the owner), the attacker's best position."""
    conn = psycopg.connect(_as_role(url, role), autocommit=True)
    conn.execute(f"SET statement_timeout = '{ATTACK_TIMEOUT}'")  # type: ignore[arg-type]
    if shadow:
        conn.execute("CREATE TEMP TABLE namespace_roles (role NAME, ns TEXT)")
        conn.execute("INSERT INTO namespace_roles VALUES (%s, 'bob'), (%s, 'alice')", (role, role))
        conn.execute("GRANT SELECT ON namespace_roles TO PUBLIC")
    return conn


# Bob's rows in every table that has a namespace or follows one (units, entities and what hangs
# off them are not made by an add: planted as the owner, with ids alice never has).
_PLANT = """
INSERT INTO units (id, ns, kind, conversation, title, text, created_at) VALUES
    (900001, 'bob', 'episode', 'c', 'qzbob title', 'qzbobvault episode of bob', '2024-01-01'),
    (900002, 'bob', 'fact', NULL, NULL, 'bob knows the qzbobvault code', '2024-01-01');
INSERT INTO unit_sources (unit_id, message_id) VALUES (900001, %(mid)s);
INSERT INTO entities (id, ns, name, norm_name, summary, created_at) VALUES
    (900003, 'bob', 'Qzbobperson', 'qzbobperson', 'qzbob summary', '2024-01-01');
INSERT INTO entity_aliases (entity_id, alias, norm_alias) VALUES (900003, 'Qzbobalias', 'qzbobalias');
INSERT INTO mentions (unit_id, entity_id, role) VALUES (900001, 900003, 'main');
INSERT INTO links (src_id, dst_id, type, created_at) VALUES (900001, 900002, 'semantic', '2024-01-01');
INSERT INTO consolidations (episode_id, mode, prompt_version, created_at) VALUES (900001, 'fast', 'v1', '2024-01-01');
INSERT INTO llm_calls (id, ns, episode_id, stage, prompt_version, model_id, ok, raw, created_at) VALUES
    (900004, 'bob', 900001, 'extract', 'v1', 'm', 1, '{"qzbob": 1}', '2024-01-01');
INSERT INTO vec_units (id, ns, kind, embedding) SELECT 900001, 'bob', 'episode', embedding FROM vec_messages LIMIT 1;
INSERT INTO id_marks (name, ns, high) VALUES ('units', 'bob', 900009);
"""


@pytest.fixture
def store(pg_url):
    """A store with bob's namespace in every table, alice's own messages, and role lm_alice
    granted namespace alice (lm_nobody: namespace nobody, which holds nothing)."""
    from localmem.store import pgpool, pgroles

    with Memory(pg_url, namespace="bob", embedder=HashEmbedder()) as bob:
        bob.add("Bob", "The qzbobvault code is 4471, says bob.")
        second = bob.add("Bob", "Bob hides qzbobkey under the mat.")
        raw = bob.conn.raw
        raw.execute(_PLANT, {"mid": second.id})  # type: ignore[arg-type]
        raw.execute("SELECT localmem_fts_maybe_fold()")  # the statistics folded: fts_terms holds bob's words
        pgroles.grant_namespace(bob.conn, "lm_alice", ["alice"])
        pgroles.grant_namespace(bob.conn, "lm_nobody", ["nobody"])
    with Memory(_as_role(pg_url, "lm_alice"), namespace="alice", embedder=HashEmbedder()) as alice:
        alice.add("Alice", "Alice grows tomatoes on the balcony.")
        alice.add("Alice", "Her cat is called Mochi.")
    yield pg_url
    pgpool.close_pools()


def _bob_state(url: str) -> dict:
    """What the owner sees of bob's namespace: rows per table, and the store's meta."""
    with psycopg.connect(url, autocommit=True) as owner:
        tables = [
            r[0]
            for r in owner.execute(
                "SELECT c.relname FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'ns' "
                "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' ORDER BY 1"
            )
        ]
        state = {
            t: owner.execute(
                f"SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM {t} AS x "  # type: ignore[arg-type]
                "WHERE x.ns = 'bob'"
            ).fetchone()[0]
            for t in tables
        }
        state["meta"] = dict(owner.execute("SELECT key, value FROM meta").fetchall())
    return state


def _changed(conn, statement: str) -> int:
    """The rows ``statement`` changed; 0 when the role may not run it at all."""
    try:
        return conn.execute(statement).rowcount
    except psycopg.errors.InsufficientPrivilege:
        return 0


def _search_as(url: str, role: str, namespace: str, query: str) -> list[str]:
    with Memory(_as_role(url, role), namespace=namespace, embedder=HashEmbedder()) as mem:
        return [h.text for h in mem.search(query)]


def _still_works(url: str) -> None:
    """Every namespace can still add and search: the owner's (bob) and the role's."""
    with Memory(url, namespace="bob", embedder=HashEmbedder()) as bob:
        added = bob.add("Bob", "A new note about the garden shed after the attack.")
        assert added.added
        assert any("garden shed" in h.text for h in bob.search("garden shed"))
    with Memory(_as_role(url, "lm_alice"), namespace="alice", embedder=HashEmbedder()) as alice:
        assert alice.add("Alice", "Alice repotted the basil after the attack.").added
        assert any("basil" in h.text for h in alice.search("basil repotted"))


# ---- finding 1: the temporary schema ----------------------------------------------------------


@pytest.mark.parametrize("path", ["default", "pg_temp first"])
def test_a_temp_namespace_roles_table_does_not_widen_the_role(store, path):
    """A role's TEMP TABLE (or view) namespace_roles naming bob: PostgreSQL searches the
    temporary schema first, and the owner's localmem_my_namespaces() answered from it."""
    before = _bob_state(store)
    with _attacker(store) as c:
        if path == "pg_temp first":
            c.execute("SET search_path = pg_temp, public")
        c.execute("CREATE TEMP TABLE namespace_roles (role NAME, ns TEXT)")
        c.execute("INSERT INTO namespace_roles VALUES ('lm_alice', 'bob'), ('lm_alice', 'alice')")
        c.execute("GRANT SELECT ON namespace_roles TO PUBLIC")
        c.execute("CREATE TEMP VIEW localmem_roles AS SELECT * FROM namespace_roles")
        seen = {r[0] for r in c.execute("SELECT ns FROM public.messages")}
        assert seen == {"alice"}
        assert c.execute("SELECT count(*) FROM public.messages WHERE text LIKE %s", (f"%{MARK}%",)).fetchone() == (0,)
        assert c.execute("SELECT count(*) FROM public.vec_messages WHERE ns = 'bob'").fetchone() == (0,)
        assert _changed(c, "UPDATE public.messages SET text = 'owned' WHERE ns = 'bob'") == 0
        assert _changed(c, "DELETE FROM public.units WHERE ns = 'bob'") == 0
        assert _changed(c, "DELETE FROM public.fts_postings WHERE ns = 'bob'") == 0
    assert _bob_state(store) == before
    assert _search_as(store, "lm_alice", "bob", "qzbobvault code") == []


def test_temp_functions_and_operators_do_not_capture_the_owners_calls(store):
    """Functions and operators the role makes in its temporary schema with the names and types
    the owner's functions use: PostgreSQL never looks there for them (only for tables), and
    the owner's functions say which schema they read."""
    before = _bob_state(store)
    with _attacker(store) as c:
        c.execute("CREATE FUNCTION pg_temp.yes(a NAME, b NAME) RETURNS BOOLEAN LANGUAGE sql AS 'SELECT true'")
        c.execute("CREATE OPERATOR pg_temp.= (LEFTARG = NAME, RIGHTARG = NAME, FUNCTION = pg_temp.yes)")
        c.execute("CREATE FUNCTION pg_temp.textyes(a TEXT, b TEXT) RETURNS BOOLEAN LANGUAGE sql AS 'SELECT true'")
        c.execute("CREATE OPERATOR pg_temp.= (LEFTARG = TEXT, RIGHTARG = TEXT, FUNCTION = pg_temp.textyes)")
        c.execute(
            "CREATE FUNCTION pg_temp.localmem_my_namespaces() RETURNS SETOF TEXT LANGUAGE sql "
            "AS $$ SELECT unnest(ARRAY['alice', 'bob']) $$"
        )
        c.execute("SET search_path = pg_temp, public")
        assert {r[0] for r in c.execute("SELECT ns FROM messages")} == {"alice"}
        assert c.execute("SELECT count(*) FROM units").fetchone() == (0,)
        assert _changed(c, "UPDATE messages SET text = 'owned' WHERE ns = 'bob'") == 0
    assert _bob_state(store) == before


def test_every_security_definer_function_runs_with_a_safe_search_path(store):
    """PostgreSQL's advice for SECURITY DEFINER functions, checked over the catalog (a function
    a later migration adds is checked too): pg_catalog first, the store's schema, pg_temp last."""
    with psycopg.connect(store, autocommit=True) as owner:
        rows = owner.execute(
            "SELECT p.proname, p.proconfig FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace "
            "AND p.prosecdef ORDER BY 1"
        ).fetchall()
    assert {name for name, _ in rows} >= {"localmem_my_namespaces", "localmem_next_id", "localmem_fts_count"}
    for name, config in rows:
        assert config is not None and "search_path=pg_catalog, public, pg_temp" in config, (name, config)


def test_a_role_that_may_create_in_the_schema_cannot_capture_the_owners_functions(store):
    """PostgreSQL before 15 let every role create objects in schema public: an overload there
    that fits the owner's call better (localmem_postings(name, ...) for its TG_TABLE_NAME)
    would run as the owner. grant takes that right away (here from a server told to give it)."""
    with psycopg.connect(store, autocommit=True) as owner:
        owner.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
    out = runner().invoke(cli, ["--db", store, "postgres", "grant", "lm_alice", "alice"])
    assert out.exit_code == 0, out.output
    with _attacker(store) as c, pytest.raises(psycopg.errors.InsufficientPrivilege):
        c.execute(
            "CREATE FUNCTION public.localmem_postings(tbl NAME, doc TSVECTOR) RETURNS TABLE (lexeme TEXT, tf REAL) "
            "LANGUAGE sql AS $$ INSERT INTO public.namespace_roles VALUES ('lm_alice', 'bob') RETURNING 'x', 1::real $$"
        )
    _still_works(store)
    assert _search_as(store, "lm_alice", "bob", "qzbobvault code") == []


# ---- finding 2: the owner's trigger functions -------------------------------------------------


def test_the_owners_trigger_functions_cannot_be_attached_to_the_roles_tables(store):
    """localmem_fts_count() runs as the owner: attached to a TEMP messages_fts it told the role
    (by a duplicate key) which words bob's messages hold, and added or deleted his postings.
    No trigger function of the store may be attached by a role (they fire without EXECUTE)."""
    with psycopg.connect(store, autocommit=True) as owner:
        triggers = [
            r[0]
            for r in owner.execute(
                "SELECT p.oid::regprocedure::text FROM pg_proc AS p WHERE p.pronamespace = 'public'::regnamespace "
                "AND p.prorettype = 'trigger'::regtype AND NOT EXISTS (SELECT 1 FROM pg_depend AS d "
                "WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e') ORDER BY 1"
            )
        ]
        (bob_mid,) = owner.execute("SELECT min(id) FROM messages WHERE ns = 'bob'").fetchone()
        postings = owner.execute("SELECT count(*) FROM fts_postings WHERE ns = 'bob'").fetchone()
    assert "localmem_fts_count()" in triggers and len(triggers) >= 5
    before = _bob_state(store)
    with _attacker(store) as c:
        c.execute("CREATE TEMP TABLE messages_fts (id BIGINT, ns TEXT, doc TSVECTOR, tokens INTEGER)")
        for i, function in enumerate(triggers):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(
                    f"CREATE TRIGGER t{i} AFTER INSERT OR UPDATE OR DELETE ON pg_temp.messages_fts "  # type: ignore[arg-type]
                    f"FOR EACH ROW EXECUTE FUNCTION {function}"
                )
        # what the oracle did: a row naming bob's message and a word of his; nothing fires
        c.execute(
            "INSERT INTO pg_temp.messages_fts VALUES (%s, 'bob', to_tsvector('simple', 'qzbobvault'), 1)", (bob_mid,)
        )
        c.execute("DELETE FROM pg_temp.messages_fts")
    with psycopg.connect(store, autocommit=True) as owner:
        assert owner.execute("SELECT count(*) FROM fts_postings WHERE ns = 'bob'").fetchone() == postings
    assert _bob_state(store) == before
    assert _search_as(store, "lm_alice", "alice", "tomatoes balcony")  # its own triggers still fire


def test_a_role_may_call_only_the_functions_its_queries_need(store):
    with _attacker(store) as c:
        for function in (
            "localmem_fts_fold()",
            "localmem_protect(text)",
            "localmem_grant_role(name)",
            "localmem_secure()",
        ):
            assert c.execute("SELECT has_function_privilege(%s, 'EXECUTE')", (function,)).fetchone() == (False,), (
                function
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT localmem_grant_role('lm_alice')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT localmem_protect('messages')")


# ---- finding 5: meta and the sequences --------------------------------------------------------


def test_a_role_cannot_write_meta(store):
    """Schema version 999, another embedder, the rows deleted: each blocked every namespace."""
    before = _bob_state(store)
    with _attacker(store) as c:
        for statement in (
            "UPDATE meta SET value = '999' WHERE key = 'pg_schema_version'",
            "UPDATE meta SET value = 'other-embedder' WHERE key = 'embed_model_id'",
            "DELETE FROM meta",
            "INSERT INTO meta (key, value) VALUES ('pg_schema_version_x', '1')",
            "INSERT INTO meta (key, value) VALUES ('language_advice', repeat('x', 1000))",
            "TRUNCATE meta",
        ):
            assert _changed(c, statement) == 0, statement
        assert dict(c.execute("SELECT key, value FROM meta").fetchall()) == before["meta"]  # it reads it
    assert _bob_state(store) == before
    _still_works(store)


def test_a_role_cannot_move_any_sequence(store):
    """setval to the maximum (every sequence of the schema, found in the catalog), nextval,
    an id near the end written directly or as a mark that the id taker moves past, and the id
    taker called on a table that is not one of ids (it looped for ever as the owner)."""
    with psycopg.connect(store, autocommit=True) as owner:
        sequences = [
            r[0]
            for r in owner.execute(
                "SELECT c.oid::regclass::text FROM pg_class AS c WHERE c.relnamespace = 'public'::regnamespace "
                "AND c.relkind = 'S' ORDER BY 1"
            )
        ]
        (alice_mid,) = owner.execute("SELECT min(id) FROM messages WHERE ns = 'alice'").fetchone()
        (alice_src,) = owner.execute("SELECT min(id) FROM sources WHERE ns = 'alice'").fetchone()
    assert "messages_id_seq" in sequences and "fts_changes" in sequences
    near_end = 9223372036854775806
    with _attacker(store) as c:
        for seq in sequences:
            for statement in (f"SELECT setval('{seq}', {near_end})", f"SELECT nextval('{seq}')"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    c.execute(statement)  # type: ignore[arg-type]
        for statement, args in (
            (
                "INSERT INTO messages (id, ns, source_id, conversation, seq, external_id, speaker, text) "
                "VALUES (%s, 'alice', %s, 'x', 1, 'far', 'A', 'far away')",
                (near_end, alice_src),
            ),
            ("UPDATE messages SET id = %s WHERE id = %s", (near_end, alice_mid)),
            ("INSERT INTO id_marks (name, ns, high) VALUES ('messages', 'alice', %s)", (near_end,)),
            ("INSERT INTO id_marks (name, ns, high) VALUES ('message_parts', 'alice', %s)", (near_end,)),
            (
                "INSERT INTO llm_calls (id, ns, stage, prompt_version, model_id, ok, created_at) "
                "VALUES (%s, 'alice', 's', 'v', 'm', 1, 'now')",
                (near_end,),
            ),
        ):
            with pytest.raises((psycopg.errors.CheckViolation, psycopg.errors.InsufficientPrivilege)):
                c.execute(statement, args)  # type: ignore[arg-type]
        for table in ("fts_postings", "namespace_roles", "meta", "pg_temp.x", "no_such_table"):
            with pytest.raises((psycopg.errors.InvalidParameterValue, psycopg.errors.InsufficientPrivilege)):
                c.execute("SELECT localmem_next_id(%s)", (table,))
        # the id taker itself, as often as an attacker likes: ids go on, none is reused
        taken = [c.execute("SELECT localmem_next_id('messages')").fetchone()[0] for _ in range(200)]
        assert taken == sorted(set(taken))
    _still_works(store)


def test_ids_a_role_takes_ahead_of_a_sequence_fail_no_other_write(store):
    """Rows the role writes in its own namespace with the ids the sequences hand out next (in
    the tables whose rows took the identity's next value: message parts, model calls): the
    other namespaces' next rows of those tables take other ids, not a duplicate-key error."""

    with psycopg.connect(store, autocommit=True) as owner:
        (alice_mid,) = owner.execute("SELECT min(id) FROM messages WHERE ns = 'alice'").fetchone()
        ahead = {
            t: owner.execute(f"SELECT last_value FROM {t}_id_seq").fetchone()[0]  # type: ignore[arg-type]
            for t in ("message_parts", "llm_calls")
        }
    with _attacker(store) as c:
        c.execute(
            'INSERT INTO message_parts (id, message_id, ns, start, "end") '
            "SELECT %s + x, %s, 'alice', 0, 1 FROM generate_series(0, 20) AS x",
            (ahead["message_parts"], alice_mid),
        )
        c.execute(
            "INSERT INTO llm_calls (id, ns, stage, prompt_version, model_id, ok, created_at) "
            "SELECT %s + x, 'alice', 's', 'v', 'm', 1, 'now' FROM generate_series(0, 20) AS x",
            (ahead["llm_calls"],),
        )
    with Memory(store, namespace="bob", embedder=HashEmbedder()) as bob:
        (bob_mid,) = bob.conn.raw.execute("SELECT min(id) FROM messages WHERE ns = 'bob'").fetchone()
        for i in range(3):
            with bob.conn:
                part = bob.conn.run(
                    "part_insert", {"message_id": bob_mid, "ns": "bob", "start": i, "end": i + 1, "context": 0}
                ).fetchone()
                assert part is not None and part[0] > ahead["message_parts"] + 20
                bob.conn.run(
                    "llm_call_log",
                    {
                        "ns": "bob",
                        "episode_id": None,
                        "stage": "extract",
                        "prompt_version": "v1",
                        "model_id": "m",
                        "calls": 1,
                        "prompt_tokens": 1,
                        "completion_tokens": 1,
                        "seconds": 0.1,
                        "ok": 1,
                        "error": None,
                        "raw": None,
                        "created_at": "2024-01-01",
                    },
                )
        assert bob.conn.raw.execute(
            "SELECT count(*) FROM llm_calls WHERE ns = 'bob' AND stage = 'extract' "
            "AND created_at = '2024-01-01' AND id <> 900004"
        ).fetchone() == (3,)


# ---- reading through everything the schema defines --------------------------------------------


def _leaks(row: dict) -> list[str]:
    """Why a row alice read belongs to bob: his namespace, his marker, one of his planted ids."""
    text = json.dumps(row, default=str).lower()
    why = []
    if row.get("ns") not in (None, "alice"):
        why.append(f"ns {row['ns']}")
    if MARK in text:
        why.append("bob's text")
    if any(isinstance(v, int) and v in BOB_IDS for v in row.values()):
        why.append("bob's id")
    return why


def test_every_table_and_view_shows_the_role_its_namespace_only(store):
    """Every relation of the schema, from pg_class, read with the temp-schema trick in place:
    either the role may not read it, or each of its rows is alice's. A table without row-level
    security must not be readable at all."""
    with psycopg.connect(store, autocommit=True) as owner:
        relations = owner.execute(
            "SELECT c.relname, c.relkind, c.relrowsecurity FROM pg_class AS c WHERE c.relnamespace = 'public'::regnamespace "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT EXISTS (SELECT 1 FROM pg_depend AS d "
            "WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e') ORDER BY 1"
        ).fetchall()
        holds_bob = {
            name
            for name, kind, _ in relations
            if kind != "v"
            and owner.execute(
                f"SELECT count(*) FROM {name} AS t WHERE to_jsonb(t)::text ILIKE '%%qzbob%%' "  # type: ignore[arg-type]
                "OR to_jsonb(t) ->> 'ns' = 'bob' OR to_jsonb(t)::text ~ '\\m90000[1-9]\\M'"
            ).fetchone()[0]
        }
    names = {name for name, _, _ in relations}
    assert {"messages", "units", "entities", "vec_messages", "fts_postings", "meta", "messages_fts_vocab"} <= names
    # bob is in every table that has rows of a namespace, so a leak anywhere would show
    assert {
        "messages",
        "messages_fts",
        "units",
        "units_fts",
        "entities",
        "entity_aliases",
        "mentions",
        "llm_calls",
        "vec_messages",
        "vec_units",
        "fts_postings",
        "fts_terms",
        "id_marks",
        "sources",
        "unit_sources",
        "links",
        "consolidations",
    } <= holds_bob
    read = 0
    with _attacker(store, shadow=True) as c:
        for name, kind, rls in relations:
            try:
                cur = c.execute(f"SELECT to_jsonb(t) FROM public.{name} AS t")  # type: ignore[arg-type]
            except psycopg.errors.InsufficientPrivilege:
                continue
            assert kind == "v" or rls or name == "meta", f"{name}: readable without row-level security"
            read += 1
            for (row,) in cur:
                assert not _leaks(row), (name, _leaks(row), row)
    assert read >= 20


# Values to call the schema's functions with, by argument type: bob's words, ids and tables.
def _arguments(owner) -> dict[str, list]:
    mids = [r[0] for r in owner.execute("SELECT id FROM messages WHERE ns = 'bob' ORDER BY id")]
    return {
        "text": ["messages_fts", "units_fts", "messages_fts_intl", "qzbobvault", json.dumps(mids + [900001])],
        "bigint": [mids[0], 900001],
        "text[]": [["qzbobvault", "qzbobkey"]],
        "tsvector": ["qzbobvault:1A"],
        "name": ["lm_alice"],
    }


def test_every_function_shows_the_role_its_namespace_only(store):
    """Every function of the schema, from pg_proc, called by the role with bob's words, ids and
    the tables' names: none hangs, none answers with bob's text (beyond what it answers a role
    that sees no namespace at all: a function that only echoes its argument), and bob's rows
    are as they were."""
    with psycopg.connect(store, autocommit=True) as owner:
        functions = owner.execute(
            "SELECT p.proname, p.oid::regprocedure::text, "
            "ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) AS t) FROM pg_proc AS p "
            "WHERE p.pronamespace = 'public'::regnamespace AND p.prokind = 'f' AND NOT EXISTS (SELECT 1 FROM pg_depend AS d "
            "WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e') ORDER BY 1, 2"
        ).fetchall()
        values = _arguments(owner)
    before = _bob_state(store)
    called = 0
    with _attacker(store, shadow=True) as alice, _attacker(store, "lm_nobody") as nobody:
        for name, signature, types in functions:
            if alice.execute("SELECT has_function_privilege(%s, 'EXECUTE')", (signature,)).fetchone() == (False,):
                continue
            casts = ", ".join(f"%s::{t}" for t in types)
            sql = f"SELECT to_jsonb(r) FROM public.{name}({casts}) AS r"
            for args in itertools.islice(itertools.product(*(values.get(t, [None]) for t in types)), 30):
                answers = []
                for conn in (alice, nobody):
                    try:
                        with conn.transaction():
                            answers.append(json.dumps(conn.execute(sql, args).fetchall()).lower())  # type: ignore[arg-type]
                    except psycopg.errors.QueryCanceled:
                        pytest.fail(f"{signature}{args}: still running after {ATTACK_TIMEOUT}")
                    except psycopg.Error as exc:
                        answers.append(type(exc).__name__)
                called += 1
                assert MARK not in answers[0] or MARK in answers[1], (signature, args, answers[0][:300])
    assert called >= 20
    assert _bob_state(store) == before


# ---- finding 10: grant to a role row-level security does not bind ----------------------------


def test_grant_refuses_a_role_that_row_level_security_does_not_bind(store):
    """A superuser, a BYPASSRLS role, the store's owner, a member of the owner, a built-in pg_*
    role: each was reported as restricted while it saw every namespace."""
    with psycopg.connect(store, autocommit=True) as owner:
        for statement in (
            "CREATE ROLE lm_su LOGIN SUPERUSER",
            "CREATE ROLE lm_bypass LOGIN BYPASSRLS",
            "CREATE ROLE lm_member LOGIN IN ROLE postgres",
        ):
            owner.execute(f"DROP ROLE IF EXISTS {statement.split()[2]}")  # type: ignore[arg-type]
            owner.execute(statement)  # type: ignore[arg-type]
    try:
        for role, why in (
            ("lm_su", "is a superuser"),
            ("lm_bypass", "has BYPASSRLS"),
            ("postgres", "is a superuser"),
            ("lm_member", "owns the store"),
            ("pg_read_all_data", "built-in"),
            ("pg_new_role", "PostgreSQL's own roles"),
        ):
            err = assert_one_line_error(runner().invoke(cli, ["--db", store, "postgres", "grant", role, "bob"]))
            assert why in err and "grant a new role" in err or "choose another name" in err, err
        with psycopg.connect(store, autocommit=True) as owner:
            assert owner.execute(
                "SELECT count(*) FROM namespace_roles WHERE role NOT IN ('lm_alice', 'lm_nobody')"
            ).fetchone() == (0,)
    finally:
        with psycopg.connect(store, autocommit=True) as owner:
            for role in ("lm_su", "lm_bypass", "lm_member"):
                owner.execute(f"DROP OWNED BY {role}")  # what a grant that was not refused gave it  # type: ignore[arg-type]
                owner.execute(f"DROP ROLE {role}")  # type: ignore[arg-type]


def test_an_ordinary_owner_is_not_the_role_and_its_store_holds_too(postgres_server):
    """The store owned by an ordinary role (not a superuser): the temp-schema trick and the
    trigger trick fail the same way, grant refuses the owner itself, and the trust warning
    comes from the owner's own connection (it may not read the server's rules)."""
    from localmem.store import pgpool, pgroles

    name = "pgt_hostile_ordinary_owner"
    postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    postgres_server.admin("DROP ROLE IF EXISTS lm_owner")
    postgres_server.admin("CREATE ROLE lm_owner LOGIN")
    postgres_server.admin(f'CREATE DATABASE "{name}" OWNER lm_owner')
    url = postgres_server.url(name)
    with psycopg.connect(url, autocommit=True) as su:
        su.execute("CREATE EXTENSION vector")  # the one step a superuser takes
    owner_url = _as_role(url, "lm_owner")
    try:
        with Memory(owner_url, namespace="bob", embedder=HashEmbedder()) as bob:
            bob.add("Bob", "The qzbobvault code is 4471, says bob.")
            pgroles.grant_namespace(bob.conn, "lm_alice", ["alice"])
            # it may not read pg_hba.conf's rules: its own unauthenticated connection says it
            (warning,) = pgroles.trust_warnings(bob.conn, "lm_alice")  # type: ignore[arg-type]
            assert warning.startswith("this connection was let in without a password (trust)"), warning
        with _attacker(url) as c:
            c.execute("CREATE TEMP TABLE namespace_roles (role NAME, ns TEXT)")
            c.execute("INSERT INTO namespace_roles VALUES ('lm_alice', 'bob')")
            c.execute("GRANT SELECT ON namespace_roles TO PUBLIC")  # an ordinary owner must read it too
            assert c.execute("SELECT count(*) FROM public.messages").fetchone() == (0,)
            c.execute("CREATE TEMP TABLE messages_fts (id BIGINT, ns TEXT, doc TSVECTOR, tokens INTEGER)")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(
                    "CREATE TRIGGER t AFTER INSERT ON pg_temp.messages_fts FOR EACH ROW EXECUTE FUNCTION localmem_fts_count()"
                )
        with Memory(owner_url, namespace="bob", embedder=HashEmbedder()) as bob:
            with pytest.raises(LocalmemError, match="lm_owner owns the store"):
                pgroles.grant_namespace(bob.conn, "lm_owner", ["alice"])
            assert bob.search("qzbobvault code")  # the owner keeps its own store
    finally:
        pgpool.close_pools()
        postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        postgres_server.admin("DROP ROLE IF EXISTS lm_owner")


# ---- finding 13 (its last part): the trust socket ---------------------------------------------


def test_grant_on_a_trusting_server_says_the_password_protects_nothing(store, monkeypatch):
    """`localmem postgres start`'s server trusts its Unix socket: any password connects."""
    monkeypatch.setenv("LM_HOSTILE_PW", "a-password-that-protects-nothing")
    out = runner().invoke(
        cli, ["--db", store, "postgres", "grant", "lm_alice", "alice", "--password-env", "LM_HOSTILE_PW"]
    )
    assert out.exit_code == 0, out.output
    warning = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and "trusts its local socket" in warning[0] and "scram-sha-256" in warning[0], out.stderr
    assert "a-password-that-protects-nothing" not in out.output + out.stderr
    # what the warning says, shown: a wrong password connects
    wrong = _as_role(store, "lm_alice").replace("lm_alice@", "lm_alice:wrong-password@")
    with psycopg.connect(wrong) as c:
        assert c.execute("SELECT current_user").fetchone() == ("lm_alice",)
    as_json = runner().invoke(cli, ["--db", store, "postgres", "grant", "lm_alice", "alice", "--json"])
    assert json.loads(as_json.stdout)["warnings"] == [warning[0].removeprefix("warning: ")]


# ---- an existing store: migration 0009 fixes it ----------------------------------------------


def test_a_store_granted_before_migration_0009_is_locked_down_when_opened(postgres_server):
    """A store at migration 0008 with a role granted the old way (every table, every sequence):
    opened by this version, migration 0009 takes the role's reach back to what grant gives now,
    and the role still adds and searches its namespace."""
    from localmem.store import pgpool, pgsql

    name = "pgt_hostile_old_store"
    postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    postgres_server.admin(f'CREATE DATABASE "{name}"')
    url = postgres_server.url(name)
    try:
        with psycopg.connect(url, autocommit=True) as su:
            with su.transaction():
                for version, _name, sql in pgsql.pg_migrations()[:8]:
                    su.execute(sql)  # type: ignore[arg-type]
                    su.execute(
                        "INSERT INTO meta (key, value) VALUES ('pg_schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(version),),
                    )
            su.execute("DO $$ BEGIN CREATE ROLE lm_alice LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
            for statement in (  # what grant gave until now
                "GRANT USAGE ON SCHEMA public TO lm_alice",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO lm_alice",
                "REVOKE ALL ON namespace_roles FROM lm_alice",
                "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO lm_alice",
                "INSERT INTO namespace_roles (role, ns) VALUES ('lm_alice', 'alice')",
            ):
                su.execute(statement)  # type: ignore[arg-type]
        with Memory(url, namespace="bob", embedder=HashEmbedder()) as bob:  # the owner opens it: 0009 runs
            bob.add("Bob", "The qzbobvault code is 4471, says bob.")
            assert pgpool.schema_version(bob.conn) >= 9  # type: ignore[arg-type]
        with _attacker(url, shadow=True) as c:
            assert c.execute("SELECT count(*) FROM public.messages").fetchone() == (0,)
            assert _changed(c, "UPDATE public.meta SET value = '999' WHERE key = 'pg_schema_version'") == 0
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("SELECT setval('public.messages_id_seq', 9223372036854775806)")
        with Memory(_as_role(url, "lm_alice"), namespace="alice", embedder=HashEmbedder()) as alice:
            assert alice.add("Alice", "Alice grows tomatoes on the balcony.").added
            assert any("tomatoes" in h.text for h in alice.search("tomatoes balcony"))
            assert all(MARK not in h.text.lower() for h in alice.search("qzbobvault code"))
    finally:
        pgpool.close_pools()
        postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
