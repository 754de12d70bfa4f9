"""Fuzzing every importer and the JSONL export / import path (Hypothesis).

The inputs are the import fixtures, mutated: a value anywhere in a JSON export replaced by any
JSON value (a number where text belongs, an object where a list does, a loop in the parent
links), keys deleted, items duplicated; lines of a text export replaced, repeated or cut, and
characters no chat app writes (NUL, lone surrogates, U+2028, CR) put in; and raw bytes. The
export / import path gets random messages, then its export mutated the same way (its header
too: a field given any value, or taken out).

The property, for every input: a clean refusal (one :class:`LocalmemError` line, and the store
exactly as it was), or messages that can be stored (text within max_message_chars, no NUL, no
lone surrogate) and, through a store, a store whose messages are the ones the file holds.

Budget: a fixed number of cases per test (the ``localmem-ci`` profile: the whole file runs in
well under 60 s on one core). More on demand: ``LOCALMEM_FUZZ_SCALE=20 pytest
tests/importers/test_fuzz.py`` runs 20 times as many; ``--hypothesis-show-statistics`` prints
how many ran. A failure prints the example and a ``@reproduce_failure`` blob.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="pip install 'localmem[test]' for the fuzzing suite")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from localmem.config import Config  # noqa: E402
from localmem.errors import LocalmemError  # noqa: E402
from localmem.importers import formats, slack  # noqa: E402
from localmem.importers.common import Options, Reader  # noqa: E402
from tests.fakes import HashEmbedder  # noqa: E402
from tests.helpers import open_memory, snapshot  # noqa: E402
from tests.import_fixtures import FIXTURES  # noqa: E402

pytestmark = [pytest.mark.plain_stores]

SCALE = float(os.environ.get("LOCALMEM_FUZZ_SCALE", "1"))
settings.register_profile(
    "localmem-ci",
    deadline=None,
    database=None,  # nothing written beside the tests; a failure prints its reproduce blob
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("localmem-ci")


# The stores live in memory when the machine has a RAM disk: each commit's fsync, not the work,
# is most of a store case's time on a disk.
TMP = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def cases(n: int) -> int:
    return max(1, int(n * SCALE))


MAX_CHARS = 400  # small, so that "over the limit" is met often
OPTIONS = Options(max_chars=MAX_CHARS, timezone="UTC")

# -- the inputs -------------------------------------------------------------------------------

# Characters an export may hold and a store must not (NUL, lone surrogates) or that split lines
# in some readers and not others.
ODD_CHARS = ["\x00", "\ud800", "\udfff", "\u2028", "\r", "\n", "\x85", "\ufeff", "😀", "\t", ":", "["]
ODD = st.sampled_from([*ODD_CHARS, " - ", ": ", "\r\n"])
TEXT = st.text(st.characters(codec=None, exclude_categories=()) | st.sampled_from(ODD_CHARS), max_size=30)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def _paths(doc: Any, at: tuple = ()) -> Iterator[tuple]:
    yield at
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*at, i))


def _get(doc: Any, path: tuple) -> Any:
    for step in path:
        doc = doc[step]
    return doc


@st.composite
def mutated_json(draw, template: Any) -> Any:
    """``template`` with a few values replaced, keys deleted, or items duplicated (or another
    item's value copied in, which is how loops in parent links and repeated ids come about)."""
    doc = copy.deepcopy(template)
    for _ in range(draw(st.integers(0, 4))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "copy", "delete", "duplicate"]))
        if not path:
            doc = draw(JSON_VALUES) if action == "replace" else doc
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        if action == "replace":
            parent[key] = draw(JSON_VALUES)
        elif action == "copy":  # another value of the document (an id, a parent, a whole node)
            parent[key] = copy.deepcopy(_get(doc, draw(st.sampled_from(paths))))
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[draw(TEXT)] = copy.deepcopy(parent[key])
    return doc


@st.composite
def mutated_text(draw, template: str) -> str:
    """``template``'s lines with some replaced, repeated, dropped or cut, and odd characters in."""
    lines = template.split("\n")
    for _ in range(draw(st.integers(0, 5))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        action = draw(st.sampled_from(["replace", "insert", "delete", "cut", "odd", "repeat"]))
        if not lines:
            lines = [""]
        if action == "replace":
            lines[i] = draw(TEXT)
        elif action == "insert":
            lines.insert(i, draw(TEXT))
        elif action == "delete" and len(lines) > 1:
            del lines[i]
        elif action == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif action == "odd":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(ODD) + lines[i][at:]
        elif action == "repeat":
            lines[i] = lines[i] * draw(st.integers(2, 40))
    return "\n".join(lines)


def encode(draw, doc: Any) -> bytes:
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8", "surrogatepass")


def _fixture_text(rel: str) -> str:
    return (FIXTURES / rel).read_text(encoding="utf-8")


def _whatsapp() -> str:
    return _fixture_text("whatsapp/WhatsApp Chat with Book club.txt")


def _discord() -> Any:
    return json.loads(
        _fixture_text(next(p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "discord").glob("*.json")))
    )


JSONL_TEMPLATE = "".join(
    json.dumps({"conversation": "c", "id": f"m{i}", "speaker": s, "text": t, "time": f"2024-03-0{i + 1}T10:00:00"})
    + "\n"
    for i, (s, t) in enumerate([("Ana", "the lighthouse in Oslo"), ("Ben", "and the ferry"), ("Ana", "at 9")])
)
TRANSCRIPT_TEMPLATE = (
    "2024-03-01 10:00\nAna: the lighthouse in Oslo\nBen: and the ferry\n\n2024-03-02 09:00\nAna: at 9\n"
)
LOCOMO_TEMPLATE = json.loads((FIXTURES.parent / "tiny_locomo.json").read_text(encoding="utf-8"))

# (name the file is read as, format forced or None, how an input is drawn)
INPUTS: dict[str, tuple[str, str | None, Any]] = {
    "chatgpt": ("conversations.json", "chatgpt", lambda: json.loads(_fixture_text("chatgpt/conversations.json"))),
    "claude": ("conversations.json", "claude", lambda: json.loads(_fixture_text("claude/conversations.json"))),
    "discord": ("channel.json", "discord", _discord),
    "locomo": ("locomo.json", "locomo", lambda: LOCOMO_TEMPLATE),
    "chat": ("chat.json", "chat", lambda: [json.loads(line) for line in JSONL_TEMPLATE.splitlines()]),
    "jsonl": ("chat.jsonl", "jsonl", lambda: JSONL_TEMPLATE),
    "whatsapp": ("chat.txt", "whatsapp", _whatsapp),
    "text": ("chat.txt", "text", lambda: TRANSCRIPT_TEMPLATE),
    "notes": ("garden.md", "notes", lambda: _fixture_text("notes/projects/garden.md")),
}


@st.composite
def an_input(draw, kind: str) -> tuple[str, str | None, bytes]:
    """(file name, format or None: detected, bytes) of one mutated input of ``kind``."""
    name, fmt, template = INPUTS[kind]
    made = template()
    if isinstance(made, str):
        data = draw(mutated_text(made)).encode("utf-8", "surrogatepass")
    else:
        data = encode(draw, draw(mutated_json(made)))
    if draw(st.integers(0, 9)) == 0:  # now and then cut short, or detected rather than forced
        data = data[: draw(st.integers(0, len(data)))]
    return name, fmt if draw(st.booleans()) else None, data


# -- the property -------------------------------------------------------------------------------


def one_line(exc: LocalmemError) -> None:
    line = str(exc)
    assert line and "\n" not in line and "\r" not in line, repr(line)
    assert "Traceback" not in line


def storable(parsed: formats.ParsedInput | list, max_chars: int = MAX_CHARS) -> None:
    messages = parsed if isinstance(parsed, list) else [m for _, msgs in parsed.groups for m in msgs]
    for m in messages:
        for field in ("conversation", "external_id", "speaker", "text"):
            value = getattr(m, field)
            assert isinstance(value, str), (field, value)
            assert not any("\ud800" <= ch <= "\udfff" for ch in value), (field, value)
        assert "\x00" not in m.text and len(m.text) <= max_chars, m.text[:80]
        assert m.sent_at is None or isinstance(m.sent_at, str)
        assert m.attachments is None or all(isinstance(a, dict) for a in m.attachments)
        json.dumps(m.attachments)


def parse_or_refuse(name: str, fmt: str | None, data: bytes) -> formats.ParsedInput | None:
    try:
        parsed = formats.parse(Path(name), data=data, fmt=fmt, options=OPTIONS)
    except LocalmemError as exc:
        one_line(exc)
        return None
    storable(parsed)
    return parsed


FOUND: dict[str, int] = {}


def tally(kind: str, parsed: object) -> None:
    key = f"{kind}:{'read' if parsed else 'refused'}"
    FOUND[key] = FOUND.get(key, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def report_tally():
    yield
    if FOUND:
        print("\nfuzz cases:", ", ".join(f"{k} {v}" for k, v in sorted(FOUND.items())))


# -- every importer, parsing --------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_every_importer_reads_or_refuses_cleanly(kind):
    @settings(max_examples=cases(120))
    @given(an_input(kind))
    def run(case):
        parsed = parse_or_refuse(*case)
        tally(kind, parsed)

    run()


@settings(max_examples=cases(200))
@given(st.sampled_from(["x.json", "x.jsonl", "x.txt", "x.md", "x"]), st.binary(max_size=300))
def test_any_bytes_are_read_or_refused_cleanly(name, data):
    tally("bytes", parse_or_refuse(name, None, data))


SLACK_FILES = {
    p.relative_to(FIXTURES / "slack-export").as_posix(): json.loads(p.read_text(encoding="utf-8"))
    for p in (FIXTURES / "slack-export").rglob("*.json")
}


@settings(max_examples=cases(120))
@given(st.data())
def test_a_slack_export_reads_or_refuses_cleanly(data):
    files = {rel: json.dumps(doc).encode() for rel, doc in SLACK_FILES.items()}
    for rel in data.draw(st.lists(st.sampled_from(sorted(SLACK_FILES)), max_size=3, unique=True)):
        files[rel] = encode(data.draw, data.draw(mutated_json(SLACK_FILES[rel])))
    reader = Reader(Path("slack-export"), OPTIONS)
    try:
        messages = slack.parse(files, reader)
    except LocalmemError as exc:
        one_line(exc)
        tally("slack", None)
        return
    storable(messages)
    tally("slack", messages)


# -- through a store ------------------------------------------------------------------------------


@contextmanager
def fresh_store() -> Iterator[Any]:
    """A store holding one message already (what a refusal must leave exactly as it was)."""
    folder = Path(tempfile.mkdtemp(prefix="localmem-fuzz-", dir=TMP))
    try:
        config = Config(max_message_chars=MAX_CHARS, timezone="UTC")
        with open_memory(folder / "m.db", "fuzz", config=config, embedder=HashEmbedder()) as mem:
            mem.add("Seed", "already stored before the input", conversation="seed", id="seed")
            yield mem, folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def stored_messages(mem) -> list[tuple]:
    rows = mem.conn.execute(
        "select conversation, external_id, speaker, text from messages where conversation != 'seed' or "
        "external_id != 'seed'"
    ).fetchall()
    return sorted(tuple(r) for r in rows)


@settings(max_examples=cases(60))
@given(st.sampled_from(sorted(INPUTS)).flatmap(lambda kind: st.tuples(st.just(kind), an_input(kind))))
def test_an_ingest_refuses_with_the_store_unchanged_or_stores_what_the_file_holds(drawn):
    kind, (name, fmt, data) = drawn
    with fresh_store() as (mem, folder):
        path = folder / name
        path.write_bytes(data)
        expected = parse_or_refuse(str(path), fmt, data)  # named as the ingest names it
        before = snapshot(mem.path)
        try:
            mem.ingest(path, format=fmt)
        except LocalmemError as exc:
            one_line(exc)
            assert expected is None, f"parsed, but the ingest refused: {exc}"
            assert snapshot(mem.path) == before
            tally(f"store-{kind}", None)
            return
        assert expected is not None, "refused by the parser, yet ingested"
        held = sorted((m.conversation, m.external_id, m.speaker, m.text) for _, msgs in expected.groups for m in msgs)
        assert stored_messages(mem) == held
        tally(f"store-{kind}", expected)


# -- export and import ---------------------------------------------------------------------------

MESSAGES = st.lists(
    st.tuples(st.sampled_from(["c1", "c 2", "ç"]), st.sampled_from(["Ana", "Ben", "Zoë"]), TEXT.filter(str.strip)),
    min_size=1,
    max_size=6,
)


def exported(messages: list[tuple[str, str, str]], folder: Path) -> tuple[str, list[tuple]]:
    """The export of a store holding ``messages`` (as Memory.add stores them), and its messages."""
    from localmem.text.files import without_surrogates

    config = Config(max_message_chars=MAX_CHARS, timezone="UTC")
    with open_memory(folder / "source.db", "src", config=config, embedder=HashEmbedder()) as mem:
        for i, (conv, speaker, text) in enumerate(messages):
            try:
                mem.add(speaker, text, conversation=conv, id=f"m{i}", time="2024-03-01T10:00:00")
            except LocalmemError as exc:  # a lone surrogate is refused by add, one line
                one_line(exc)
                mem.add(speaker, without_surrogates(text), conversation=conv, id=f"m{i}", time="2024-03-01T10:00:00")
        buf = io.StringIO()
        mem.admin.export(buf)
        return buf.getvalue(), stored_messages(mem)


@settings(max_examples=cases(40))
@given(MESSAGES)
def test_an_export_imports_back_exactly(messages):
    folder = Path(tempfile.mkdtemp(prefix="localmem-fuzz-", dir=TMP))
    try:
        text, held = exported(messages, folder)
        (folder / "export.jsonl").write_text(text, encoding="utf-8")
        with open_memory(folder / "copy.db", "fuzz", embedder=HashEmbedder()) as copy_:
            copy_.admin.restore(folder / "export.jsonl")
            assert stored_messages(copy_) == held
        tally("export-roundtrip", True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# 150, not 60: a header edited as the hostile test did it ("vectors": true without its
# "embed_model_id") crashed restore with a KeyError that 60 cases missed and scale 8 found.
@settings(max_examples=cases(150))
@given(MESSAGES, st.data())
def test_an_edited_export_is_refused_with_the_store_unchanged_or_imported_as_it_reads(messages, data):
    folder = Path(tempfile.mkdtemp(prefix="localmem-fuzz-", dir=TMP))
    try:
        text, _held = exported(messages, folder)
        records = [json.loads(line) for line in text.split("\n") if line]
        edit = data.draw(st.sampled_from(["none", "field", "records", "header"]))
        if edit == "header":  # a header field given another value, or taken out
            key = data.draw(st.sampled_from(sorted(records[0])))
            if key != "type" and data.draw(st.booleans()):
                del records[0][key]
            else:
                records[0][key] = data.draw(TEXT | JSON_VALUES)
        elif edit == "field":  # a message's field given other text, or another value
            at = data.draw(st.sampled_from([i for i, r in enumerate(records) if r.get("type") == "message"]))
            key = data.draw(st.sampled_from(["text", "speaker", "conversation", "external_id", "seq", "role"]))
            records[at][key] = data.draw(TEXT | JSON_VALUES)
        elif edit == "records":  # any record edited (but the header and trailer)
            inner = data.draw(mutated_json(records[1:-1]))
            records = [records[0], *(inner if isinstance(inner, list) else [inner]), records[-1]]
        lines = [json.dumps(r, ensure_ascii=data.draw(st.booleans())) for r in records]
        raw = "\n".join(lines) + "\n"
        if data.draw(st.integers(0, 3)) == 0:  # and now and then the file's lines too
            raw = data.draw(mutated_text(raw))
        path = folder / "export.jsonl"
        path.write_bytes(raw.encode("utf-8", "surrogatepass"))
        force = data.draw(st.booleans())
        with fresh_store() as (mem, _):
            before = snapshot(mem.path)
            try:
                mem.admin.restore(path, force=force)
            except LocalmemError as exc:
                one_line(exc)
                assert snapshot(mem.path) == before
                tally("export-edited", None)
                return
            in_file = []
            for line in raw.split("\n"):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("type") == "message":
                    in_file.append((rec["conversation"], rec["external_id"], rec["speaker"], rec["text"]))
            assert stored_messages(mem) == sorted(in_file)
            tally("export-edited", True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
