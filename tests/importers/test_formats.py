"""Parsing of every input format, detection, forcing, and timestamps."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from localmem.errors import InputError, UnknownFormatError
from localmem.importers import formats
from localmem.text.times import looks_like_timestamp, parse_timestamp
from tests.conftest import FIXTURES
from tests.helpers import SAMPLE_CHAT, open_memory, write_jsonl

LOCOMO = FIXTURES / "tiny_locomo.json"


def parse_file(
    path: Path, fmt: str | None = None, conversation: str | None = None, max_chars: int = 100_000
) -> formats.ParsedInput:
    return formats.parse(path, path.read_bytes(), fmt, conversation, max_chars)


def only_group(parsed: formats.ParsedInput) -> list[formats.MessageIn]:
    assert len(parsed.groups) == 1
    ns, messages = parsed.groups[0]
    assert ns is None
    return messages


# -- LoCoMo -------------------------------------------------------------------------


def test_locomo_groups_by_sample_id():
    parsed = parse_file(LOCOMO)
    assert parsed.format == "locomo"
    assert [ns for ns, _ in parsed.groups] == ["tiny-1", "tiny-2"]
    assert [len(msgs) for _, msgs in parsed.groups] == [5, 2]
    for ns, msgs in parsed.groups:
        assert {m.conversation for m in msgs} == {ns}


def test_locomo_ids_sessions_times_and_order():
    msgs = parse_file(LOCOMO).groups[0][1]
    assert [m.external_id for m in msgs] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [m.seq for m in msgs] == [0, 1, 2, 3, 4]
    assert [m.session for m in msgs] == ["session_1"] * 3 + ["session_2"] * 2
    assert msgs[0].sent_at == "2023-05-08T13:56:00"  # "1:56 pm on 8 May, 2023"
    assert msgs[3].sent_at == "2023-06-27T10:37:00"  # "10:37 am on 27 June, 2023"
    assert msgs[0].speaker == "Ana" and msgs[1].speaker == "Ben"
    assert msgs[0].text == "I adopted a puppy named Biscuit yesterday!"


def test_locomo_keeps_image_caption_as_attachment():
    msgs = parse_file(LOCOMO).groups[0][1]
    assert msgs[0].attachments is None
    assert msgs[2].attachments == [
        {
            "type": "image",
            "url": "http://example.invalid/b.jpg",
            "caption": "a photo of a beagle puppy asleep on a sofa",
            "query": "beagle puppy",
        }
    ]
    assert msgs[2].raw["blip_caption"].startswith("a photo of a beagle")


def test_a_locomo_caption_that_is_not_text_is_left_out_and_the_message_still_stored(tmp_path: Path):
    doc = json.loads(LOCOMO.read_text())
    turn = doc[0]["conversation"]["session_1"][0]
    turn.update(blip_caption=7, query=["x"], img_url=["http://example.invalid/c.jpg"])
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc), encoding="utf-8")
    first = parse_file(odd).groups[0][1][0]
    assert first.attachments == [{"type": "image", "url": "http://example.invalid/c.jpg"}]
    with open_memory(tmp_path / "m.db") as mem:
        assert mem.ingest(odd, format="locomo").added > 0  # was a TypeError while embedding


def test_locomo_date_time_without_session_is_ignored():
    doc = json.loads(LOCOMO.read_text())
    assert "session_3_date_time" in doc[0]["conversation"] and "session_3" not in doc[0]["conversation"]
    sessions = {m.session for m in parse_file(LOCOMO).groups[0][1]}
    assert sessions == {"session_1", "session_2"}


def test_locomo_sessions_sorted_numerically(tmp_path):
    conv = {
        "session_10": [{"speaker": "A", "dia_id": "D10:1", "text": "ten"}],
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "two"}],
        "session_10_date_time": "9:00 am on 1 July, 2023",
        "session_2_date_time": "9:00 am on 1 June, 2023",
    }
    path = tmp_path / "lc.json"
    path.write_text(json.dumps({"sample_id": "s", "conversation": conv}))
    parsed = parse_file(path)
    assert parsed.format == "locomo"
    assert [m.text for m in parsed.groups[0][1]] == ["two", "ten"]


def test_locomo_ingest_uses_namespace_per_sample(mem):
    report = mem.ingest(LOCOMO)
    assert {n.namespace: n.added for n in report.namespaces} == {"tiny-1": 5, "tiny-2": 2}
    assert {r.namespace: r.messages for r in mem.namespaces()} == {"tiny-1": 5, "tiny-2": 2}
    assert mem.stats().messages == 0  # nothing went to the caller's namespace "test"


def test_locomo_ingest_with_forced_namespace(mem):
    report = mem.ingest(LOCOMO, namespace="all")
    assert report.added == 7
    assert [r.namespace for r in mem.namespaces()] == ["all"]


def test_locomo_caption_is_searchable_and_shown(mem):
    mem.ingest(LOCOMO)

    with open_memory(mem.path, namespace="tiny-1", embedder=mem.embedder) as m1:
        hits = m1.search("sofa", channels=["bm25"])  # only in the caption
        assert [h.sources[0].external_id for h in hits] == ["D1:3"]
        assert "[image: a photo of a beagle puppy asleep on a sofa]" in hits[0].text


# -- JSONL ----------------------------------------------------------------------------


def test_jsonl_fields_and_default_ids(tmp_path):
    path = write_jsonl(
        tmp_path / "talk.jsonl",
        [
            {
                "conversation": "c1",
                "session": "s1",
                "id": "x1",
                "speaker": "Alice",
                "role": "user",
                "text": "Hi there",
                "time": "2024-01-01T10:00:00Z",
            },
            {"speaker": "Bob", "text": "Hello"},
        ],
    )
    with path.open("a") as fh:
        fh.write("\n")  # blank lines are skipped but still count for line numbers
        fh.write(json.dumps({"speaker": "Bob", "text": "Later", "time": 1700000000, "id": 7}) + "\n")
        fh.write(json.dumps({"name": "Cy", "content": "by name"}) + "\n")
    msgs = only_group(parse_file(path))
    first, second, third, fourth = msgs
    assert (
        first.conversation,
        first.session,
        first.external_id,
        first.speaker,
        first.role,
        first.text,
        first.sent_at,
    ) == ("c1", "s1", "x1", "Alice", "user", "Hi there", "2024-01-01T10:00:00+00:00")
    assert (second.conversation, second.session, second.external_id, second.role, second.sent_at) == (
        "talk",
        "",
        "L2",
        None,
        None,
    )
    assert third.external_id == "7" and third.sent_at == "2023-11-14T22:13:20+00:00"
    assert fourth.external_id == "L5" and fourth.speaker == "Cy" and fourth.text == "by name"
    assert [m.seq for m in msgs] == [0, 1, 2, 3]


def test_jsonl_conversation_option_names_unlabelled_lines(tmp_path):
    path = write_jsonl(
        tmp_path / "x.jsonl", [{"speaker": "A", "text": "a"}, {"speaker": "B", "text": "b", "conversation": "own"}]
    )
    msgs = only_group(parse_file(path, conversation="given"))
    assert [m.conversation for m in msgs] == ["given", "own"]


def test_jsonl_missing_text_or_speaker_names_the_line(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"speaker": "A", "text": "ok"}, {"speaker": "B"}])
    with pytest.raises(InputError, match="line 2.*missing 'text'"):
        parse_file(path)
    path = write_jsonl(tmp_path / "y.jsonl", [{"text": "no speaker"}])
    with pytest.raises(InputError, match="line 1.*missing 'speaker'"):
        parse_file(path)


def test_jsonl_bad_time_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"speaker": "A", "text": "a", "time": "someday"}])
    with pytest.raises(InputError, match="cannot read the time 'someday'"):
        parse_file(path)


# -- chat JSON ------------------------------------------------------------------------


def test_chat_list_of_messages(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "name": "Alice", "content": "Hi", "timestamp": "2024-03-01 10:00"},
                {"role": "assistant", "content": "Hello Alice"},
            ]
        )
    )
    parsed = parse_file(path)
    assert parsed.format == "chat"
    a, b = only_group(parsed)
    assert (a.speaker, a.role, a.text, a.sent_at, a.external_id, a.conversation) == (
        "Alice",
        "user",
        "Hi",
        "2024-03-01T10:00:00",
        "M1",
        "chat",
    )
    assert (b.speaker, b.role, b.text, b.sent_at, b.external_id) == (
        "assistant",
        "assistant",
        "Hello Alice",
        None,
        "M2",
    )


def test_chat_messages_object_and_title(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(
        json.dumps(
            {
                "title": "Trip planning",
                "messages": [{"role": "user", "content": "Where to?"}, {"role": "assistant", "content": "Lisbon."}],
            }
        )
    )
    parsed = parse_file(path)
    assert parsed.format == "chat"
    msgs = only_group(parsed)
    assert [m.conversation for m in msgs] == ["Trip planning"] * 2
    assert [m.text for m in msgs] == ["Where to?", "Lisbon."]


def test_chat_openai_content_parts(tmp_path):
    path = tmp_path / "parts.json"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is in"},
                            {"type": "image_url", "image_url": {"url": "data:..."}, "detail": "low"},
                            {"type": "text", "text": "this picture?"},
                        ],
                    }
                ]
            }
        )
    )
    (msg,) = only_group(parse_file(path))
    assert msg.text == "What is in\nthis picture?"
    assert msg.attachments == [{"type": "image_url", "detail": "low"}]


def test_chat_message_not_an_object(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "ok"}, "oops"]}))
    with pytest.raises(InputError, match="message 2: a message must be an object"):
        parse_file(path)


# -- text transcripts ------------------------------------------------------------------

TRANSCRIPT = """\
[2024-01-14 19:02]
Alice: Hi Bob, how was the trip?
Bob: Great, thanks.
  We saw the whales.

2024-04-10 09:30
Alice: Back home now.
[2024-04-11 08:00] Bob: Inline time here.
Bob: No time of its own.
"""


def test_transcript_speakers_sessions_times_and_continuations(tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text(TRANSCRIPT)
    parsed = parse_file(path)
    assert parsed.format == "text"
    msgs = only_group(parsed)
    assert [(m.speaker, m.text) for m in msgs] == [
        ("Alice", "Hi Bob, how was the trip?"),
        ("Bob", "Great, thanks.\n  We saw the whales."),
        ("Alice", "Back home now."),
        ("Bob", "Inline time here."),
        ("Bob", "No time of its own."),
    ]
    assert [m.session for m in msgs] == ["1", "1", "2", "2", "2"]
    assert [m.sent_at for m in msgs] == [
        "2024-01-14T19:02:00",
        "2024-01-14T19:02:00",
        "2024-04-10T09:30:00",
        "2024-04-11T08:00:00",
        "2024-04-10T09:30:00",
    ]
    assert [m.external_id for m in msgs] == ["L2", "L3", "L7", "L8", "L9"]
    assert all(m.conversation == "talk" for m in msgs)


def test_transcript_without_timestamps(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("Ann: one\nBo Li: two: with a colon\n")
    msgs = only_group(parse_file(path))
    assert [(m.speaker, m.text, m.session, m.sent_at) for m in msgs] == [
        ("Ann", "one", "", None),
        ("Bo Li", "two: with a colon", "", None),
    ]


def test_transcript_comment_lines_are_skipped(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("# exported by some tool\nAnn: hello\n# a note\nBo: hi\n")
    msgs = only_group(parse_file(path))
    assert [(m.speaker, m.text) for m in msgs] == [("Ann", "hello"), ("Bo", "hi")]


def test_transcript_heading_timestamps_are_sessions_not_comments(tmp_path):
    path = tmp_path / "h.md"
    path.write_text("# Chat log\n## 2024-04-10 09:30\nAnn: hello\n## 2024-04-11\nBo: hi\n")
    msgs = only_group(parse_file(path, "text"))
    assert [(m.text, m.session, m.sent_at) for m in msgs] == [
        ("hello", "1", "2024-04-10T09:30:00"),
        ("hi", "2", "2024-04-11T00:00:00"),
    ]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_transcript_line_endings(tmp_path, newline):
    path = tmp_path / "t.txt"
    path.write_bytes(newline.join(["Ann: one", "  more", "Bo: two", ""]).encode())
    msgs = only_group(parse_file(path))
    assert [(m.external_id, m.text) for m in msgs] == [("L1", "one\n  more"), ("L3", "two")]


def test_unicode_line_separators_stay_inside_messages(tmp_path):
    """U+2028, U+0085 and form feeds are text, not line ends (JSON does not escape them)."""
    odd = "one\u2028two\x85three\x0cfour\u2029five"
    path = write_jsonl(tmp_path / "u.jsonl", [{"speaker": "A", "text": odd}, {"speaker": "B", "text": "ok"}])
    assert "\u2028" in path.read_text(encoding="utf-8")  # written verbatim, not escaped
    msgs = only_group(parse_file(path))
    assert [(m.external_id, m.text) for m in msgs] == [("L1", odd), ("L2", "ok")]
    path = tmp_path / "u.txt"
    path.write_text(f"Ann: {odd}\nBo: ok\n", encoding="utf-8")
    msgs = only_group(parse_file(path))
    assert [(m.external_id, m.text) for m in msgs] == [("L1", odd), ("L2", "ok")]


def test_transcript_text_before_any_speaker_is_an_error(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("just some prose without a speaker\nAnn: hi\n")
    with pytest.raises(InputError, match="line 1: expected 'Speaker: text'"):
        parse_file(path, "text")


def test_shipped_sample_chat_parses():
    msgs = only_group(parse_file(SAMPLE_CHAT))
    assert len(msgs) == 25
    assert {m.speaker for m in msgs} == {"Priya", "Tom"}
    assert len({m.session for m in msgs}) == 3
    assert msgs[0].sent_at == "2024-01-14T19:02:00"


# -- detection and forcing ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("a.jsonl", '{"speaker": "A", "text": "x"}\n', "jsonl"),
        ("a.ndjson", '{"speaker": "A", "text": "x"}\n', "jsonl"),
        ("a.txt", '{"speaker": "A", "text": "x"}\n{"speaker": "B", "text": "y"}\n', "jsonl"),
        ("a.json", '{"speaker": "A", "text": "single object"}', "jsonl"),
        ("a.json", '[{"role": "user", "content": "x"}]', "chat"),
        ("a.json", '[{"speaker": "A", "text": "x"}]', "chat"),
        ("a", '{"messages": [{"role": "user", "content": "x"}]}', "chat"),
        (
            "a.data",
            json.dumps(
                {"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "x"}]}}
            ),
            "locomo",
        ),
        ("a.txt", "Ann: hello\n", "text"),
        ("a.log", "[2024-01-14 19:02]\nAnn: hello\n", "text"),
        ("a.md", "[2024-01-14 19:02] Ann: hello\n", "text"),
    ],
)
def test_detection(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    assert parse_file(path).format == expected


def test_forcing_a_format_overrides_detection(tmp_path):
    path = tmp_path / "lines.jsonl"  # the suffix says JSONL, the content is a transcript
    path.write_text("Ann: hello\nBo: hi\n")
    with pytest.raises(InputError, match="line 1: invalid JSON"):
        parse_file(path)
    parsed = parse_file(path, "text")
    assert parsed.format == "text" and len(only_group(parsed)) == 2


def test_forcing_a_wrong_format_fails_cleanly(tmp_path):
    with pytest.raises(InputError, match="missing 'text'"):
        parse_file(LOCOMO, "chat")
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"role": "user", "content": "x"}]))
    with pytest.raises(InputError, match="needs a 'conversation' object"):
        parse_file(path, "locomo")


def test_unknown_format_name():
    with pytest.raises(UnknownFormatError, match="unknown format 'csv'"):
        parse_file(LOCOMO, "csv")


def test_forced_format_through_memory(mem, tmp_path):
    path = tmp_path / "lines.jsonl"
    path.write_text("Ann: hello\nBo: hi\n")
    report = mem.ingest(path, format="text")
    assert report.format == "text" and report.added == 2
    with pytest.raises(UnknownFormatError):
        mem.ingest(path, format="yaml")


def test_max_message_chars(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"speaker": "A", "text": "y" * 101}])
    with pytest.raises(InputError, match="over the limit of 100"):
        parse_file(path, max_chars=100)
    assert only_group(parse_file(path, max_chars=101))[0].text == "y" * 101


def test_utf8_bom_and_utf16_are_read(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffAnn: café\n".encode("utf-8"))
    assert only_group(parse_file(path))[0].text == "café"
    path = tmp_path / "u16.txt"
    path.write_bytes("Ann: naïve\n".encode("utf-16"))
    assert only_group(parse_file(path))[0].text == "naïve"


# -- timestamps ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2024-01-14T19:02:00Z", "2024-01-14T19:02:00+00:00"),
        ("2024-01-14T19:02:00z", "2024-01-14T19:02:00+00:00"),
        ("2024-01-14T19:02:00.123456+02:00", "2024-01-14T19:02:00+02:00"),
        ("2024-01-14", "2024-01-14T00:00:00"),
        ("2024-01-14 19:02", "2024-01-14T19:02:00"),
        ("  2024-01-14 19:02:05  ", "2024-01-14T19:02:05"),
        ("2024/01/14 19:02", "2024-01-14T19:02:00"),
        ("14 January 2024", "2024-01-14T00:00:00"),
        ("Jan 14, 2024", "2024-01-14T00:00:00"),
        ("January 14, 2024 7:02 PM", "2024-01-14T19:02:00"),
        ("14.01.2024 19:02", "2024-01-14T19:02:00"),
        ("Sunday, January 14, 2024", "2024-01-14T00:00:00"),
        (1700000000, "2023-11-14T22:13:20+00:00"),
        (1700000000.75, "2023-11-14T22:13:20+00:00"),
        (1700000000000, "2023-11-14T22:13:20+00:00"),
        ("1700000000", "2023-11-14T22:13:20+00:00"),
        ("1700000000000", "2023-11-14T22:13:20+00:00"),
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
        ("10:37 am on 27 June, 2023", "2023-06-27T10:37:00"),
        ("12:05 am on 1 Jan, 2020", "2020-01-01T00:05:00"),
        ("12:30 pm on 3 Sept, 2020", "2020-09-03T12:30:00"),
        (None, None),
        ("", None),
    ],
)
def test_parse_timestamp(value, expected):
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize(
    "value", ["someday", "2024-13-45", "1:56 pm on 8 Smarch, 2023", True, ["2024-01-01"], {"t": 1}, "12345"]
)
def test_parse_timestamp_rejects(value):
    with pytest.raises(ValueError):
        parse_timestamp(value)


def test_parse_timestamp_output_sorts_chronologically():
    stamps = ["3 March 2022", "2023-05-08 13:56", "1:56 pm on 8 May, 2023", "2024/01/14"]
    parsed = [parse_timestamp(s) for s in stamps]
    assert sorted(parsed) == parsed
    assert all(dt.datetime.fromisoformat(p) for p in parsed)


@pytest.mark.parametrize(
    "line, expected",
    [
        ("[2024-01-14 19:02]", "2024-01-14T19:02:00"),
        ("2024-04-10 09:30", "2024-04-10T09:30:00"),
        ("=== 2024-04-10 ===", "2024-04-10T00:00:00"),
        ("Alice: see you 2024-04-10", None),
        ("[2024-04-11 08:00] Bob: hi", None),
        ("no digits here", None),
        ("", None),
    ],
)
def test_looks_like_timestamp(line, expected):
    assert looks_like_timestamp(line) == expected


def test_transcript_time_of_day_prefix_joins_the_current_date():
    data = b"[2024-01-14 19:02]\n[10:30] Bob: hi\n[7:05 pm] Ann: later\n"
    msgs = formats.parse(Path("chat.txt"), data).groups[0][1]
    assert [(m.speaker, m.sent_at, m.text) for m in msgs] == [
        ("Bob", "2024-01-14T10:30:00", "hi"),
        ("Ann", "2024-01-14T19:05:00", "later"),
    ]


def test_transcript_time_of_day_without_a_date_has_no_time():
    msgs = formats.parse(Path("chat.txt"), b"[10:30] Bob: hi\n").groups[0][1]
    assert (msgs[0].speaker, msgs[0].sent_at, msgs[0].text) == ("Bob", None, "hi")


def test_transcript_bracketed_aside_stays_in_the_text():
    data = b"[2024-01-14 19:02]\n[laughs] Ann: haha\n"
    msg = formats.parse(Path("chat.txt"), data).groups[0][1][0]
    assert (msg.speaker, msg.sent_at, msg.text) == ("Ann", "2024-01-14T19:02:00", "[laughs] haha")
