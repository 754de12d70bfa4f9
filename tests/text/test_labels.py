"""localmem.text.labels: the words the CLI, the MCP tools and the page put beside ids."""

from __future__ import annotations

import re

import pytest

from localmem.text import labels


@pytest.mark.parametrize(
    ("n", "word", "said"),
    [
        (1, "source", "1 source"),
        (3, "message", "3 messages"),
        (0, "message", "0 messages"),
        (1, "entity", "1 entity"),
        (2, "entity", "2 entities"),
        (2, "knowledge", "2 knowledge statements"),
        (1204, "message", "1,204 messages"),
    ],
)
def test_plural(n, word, said):
    assert labels.plural(n, word) == said


def test_counts_by_plural_keys():
    assert labels.counts({"sources": 1, "messages": 3}) == "1 source, 3 messages"
    assert labels.counts({"unit_sources": 1, "entities": 2}) == "1 unit source, 2 entities"
    assert labels.counts({"sources": 0, "messages": 0}, skip_zero=True) == "nothing"


def test_a_message_reads_as_who_when_where():
    cited = {
        "id": "m:7",
        "external_id": "2024-09-14T21:15:00|Jonas|0",
        "conversation": "Jonas",
        "speaker": "Jonas",
        "time": "2024-09-14T21:15:00",
    }
    assert labels.message_of(cited) == "m:7 Jonas, 2024-09-14 21:15, in “Jonas”"
    source = {"message_id": 7, "speaker": "Jonas", "sent_at": None, "conversation": "c"}
    assert labels.message_of(source) == "m:7 Jonas, date unknown, in “c”"
    assert labels.external_ids(["2024-09-14T21:15:00|Jonas|0"]) == "Jonas, 2024-09-14 21:15"
    assert labels.external_ids(["L3", "L4"]) == "2 messages"


def test_sources_by_their_names():
    assert labels.source_name("/home/me/Downloads/WhatsApp Chat with Jonas.txt") == "WhatsApp Chat with Jonas.txt"
    assert labels.source_name("C:\\Users\\me\\chat.txt") == "chat.txt"
    assert labels.source(4, "add:chat", "api") == "source 4, the messages added to “chat”"
    assert labels.source(3, "/tmp/x/chat.txt", "whatsapp") == "source 3, the whatsapp file “chat.txt”"


def test_units_by_kind_and_title():
    assert labels.unit("u:3", "episode", "Dinner") == "u:3, the episode “Dinner”"
    assert labels.unit("u:3", "episode", None, "") == "u:3, the episode (no title yet)"


def test_why_names_channels_without_internal_ranks():
    said = labels.why({"vector": {"rank": 3}, "bm25": {"rank": 1}, "question": {"rank": 24}})
    assert said == "found by its words and its meaning; the reply to a question that matched"
    assert not re.search(r"\d", said)


def test_confidence_never_claims_a_small_model_is_sure():
    for value in (None, 0.0, 0.5, 0.79, 0.8, 0.99, 1.0):
        said = labels.confidence(value)
        assert "sure" not in said and "check the cited messages" in said


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (True, "yes"),
        (False, "no"),
        (None, "none"),
        (["a", "b"], "a, b"),
        ({"episode": 3, "fact": None}, "episode: 3; fact: none"),
        ([], "none"),
    ],
)
def test_values_are_never_python_reprs(data, said):
    assert labels.value(data) == said


def test_lines_nest_mappings():
    assert labels.lines({"db": {"path": "m.db", "fts5": True}, "units": {}}) == [
        "db:",
        "  path: m.db",
        "  fts5: yes",
        "units: none",
    ]
