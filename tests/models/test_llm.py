"""Structured output: validation, the repair retry, and failure bookkeeping."""

from __future__ import annotations

import pytest

from localmem.models.structured import complete_structured, validate
from localmem.prompts import agent as agent_prompt
from localmem.prompts import answer as answer_prompt
from localmem.prompts import extract as extract_prompt
from localmem.prompts import segment as segment_prompt
from tests.fakes import ScriptedLLM

SCHEMA = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 5}},
        "n": {"type": "integer", "minimum": 0},
        "kind": {"type": "string", "enum": ["a", "b"]},
    },
    "required": ["items", "n"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "value, problem",
    [
        ({"items": ["ok"], "n": 1}, None),
        ({"items": ["ok"]}, "missing 'n'"),
        ({"items": ["toolong"], "n": 1}, "longer than 5"),
        ({"items": ["a", "b", "c"], "n": 1}, "more than 2 items"),
        ({"items": [], "n": -1}, "below 0"),
        ({"items": [], "n": 1, "kind": "c"}, "must be one of"),
        ({"items": [], "n": 1, "extra": 1}, "unexpected keys"),
        ({"items": [], "n": True}, "should be integer"),
        ([], "should be object"),
    ],
)
def test_validate(value, problem):
    problems = validate(value, SCHEMA)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def test_valid_first_answer_is_one_call():
    llm = ScriptedLLM([{"items": ["x"], "n": 2}])
    result = complete_structured(llm, [{"role": "user", "content": "go"}], SCHEMA, 50)
    assert result.ok and result.data == {"items": ["x"], "n": 2} and result.calls == 1


def test_repair_retry_quotes_the_error_and_keeps_the_original_prompt():
    llm = ScriptedLLM(['{"items": ["x"', {"items": ["x"], "n": 2}])
    result = complete_structured(llm, [{"role": "user", "content": "go"}], SCHEMA, 50)
    assert result.ok and result.calls == 2
    retry = llm.calls[1]
    assert retry[0] == {"role": "user", "content": "go"}
    assert retry[1]["role"] == "assistant" and retry[2]["role"] == "user"
    assert "not valid JSON" in retry[2]["content"]


def test_failure_after_repair_keeps_both_raw_texts():
    llm = ScriptedLLM(["nope", {"items": "x", "n": 1}])
    result = complete_structured(llm, [{"role": "user", "content": "go"}], SCHEMA, 50)
    assert not result.ok and result.data is None and result.calls == 2
    assert result.raw[0] == "nope" and "should be array" in result.error


@pytest.mark.parametrize("module", [segment_prompt, extract_prompt, answer_prompt, agent_prompt])
def test_prompt_schemas_bound_every_array_and_string(module):
    def walk(schema, path="$"):
        kind = schema.get("type")
        if kind == "array":
            assert "maxItems" in schema, path
            walk(schema["items"], path + "[]")
        elif kind == "string" and "enum" not in schema:
            assert "maxLength" in schema, path
        elif kind == "object":
            for key, sub in schema["properties"].items():
                walk(sub, f"{path}.{key}")

    walk(module.SCHEMA)
    assert module.VERSION and module.MAX_TOKENS > 0


def test_static_instructions_come_first():
    a = extract_prompt.render(["Ann: hi"], "8 May 2023")
    b = extract_prompt.render(["Bob: something else"], "9 May 2023")
    assert a[0] == b[0] and a[0]["role"] == "system"
    assert segment_prompt.render(["x"])[0] == segment_prompt.render(["y"])[0]


def _max_chars(schema) -> int:
    """The longest JSON a schema allows, roughly: bounded strings/arrays plus key overhead."""
    kind = schema.get("type")
    if kind == "string":
        return schema.get("maxLength", max((len(e) for e in schema.get("enum", [""])), default=0)) + 2
    if kind == "array":
        return schema["maxItems"] * (_max_chars(schema["items"]) + 2) + 2
    if kind == "object":
        return sum(len(k) + 4 + _max_chars(v) for k, v in schema["properties"].items()) + 2
    return 8  # numbers, booleans


@pytest.mark.parametrize("module", [segment_prompt, extract_prompt, answer_prompt, agent_prompt])
def test_max_tokens_cover_the_longest_allowed_output(module):
    # ~3 characters per token for English JSON: a reply within the schema is never cut off.
    assert module.MAX_TOKENS * 3 >= _max_chars(module.SCHEMA)
