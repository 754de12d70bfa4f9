"""The one reader of question files (`search --queries`, `ask --questions`, `bench ask`): what it
accepts, and a one-line error naming the file and the line for what it does not."""

from __future__ import annotations

import json

import pytest

from localmem.errors import LocalmemError
from localmem.text.questions import Question, read_questions


def test_plain_lines_and_json_lines_in_one_file(tmp_path):
    path = tmp_path / "q.jsonl"
    lines = [
        "Where did Ann move?",
        "",
        json.dumps({"query": "Who is Zed?", "namespace": "t", "now": "2024-05-01", "id": 7, "answer": "a friend"}),
        "   ",
        json.dumps({"question": "What does Ann run?"}),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())  # a UTF-8 BOM is not part of the first question
    assert read_questions(path) == [
        Question("Where did Ann move?", line=1),
        Question("Who is Zed?", "t", "2024-05-01", line=3),
        Question("What does Ann run?", line=5),
    ]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    assert read_questions(empty) == []


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"query": "unclosed', "q.jsonl:2: invalid JSON: Unterminated string"),
        ('{"q": "no query key"}', "q.jsonl:2: a JSON line needs a string 'query', got nothing"),
        ('{"query": 5}', "q.jsonl:2: a JSON line needs a string 'query', got 5"),
        ('{"query": "  "}', "q.jsonl:2: a JSON line needs a string 'query', got \"  \""),
        ('{"query": "x", "namespace": 3}', "q.jsonl:2: 'namespace' must be text, got 3"),
        ('{"query": "x", "now": ""}', "q.jsonl:2: 'now' must be text, got \"\""),
    ],
)
def test_a_bad_line_is_one_line_naming_the_file_and_line(tmp_path, line, said):
    path = tmp_path / "q.jsonl"
    path.write_text(f"a fine question\n{line}\nanother\n", encoding="utf-8")
    with pytest.raises(LocalmemError) as caught:
        read_questions(path)
    text = str(caught.value)
    assert said in text and "\n" not in text
    assert caught.value.hint and caught.value.hint.startswith("give")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    path = tmp_path / "q.txt"
    path.write_bytes(b"one\ntwo\ncaf\xe9\n")
    with pytest.raises(LocalmemError, match=r"q.txt:3: not valid UTF-8 \(byte offset 11\); save it as UTF-8"):
        read_questions(path)


def test_a_missing_file_or_a_folder_is_refused_in_one_line(tmp_path):
    with pytest.raises(LocalmemError, match=r"cannot read .*missing.txt: no such file; give a file of questions"):
        read_questions(tmp_path / "missing.txt")
    with pytest.raises(LocalmemError, match=r"cannot read .*: is a directory; give a file of questions"):
        read_questions(tmp_path)
