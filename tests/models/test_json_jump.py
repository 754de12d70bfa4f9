"""Jump-forward decoding: the text a JSON schema fixes, as the reply is generated."""

from __future__ import annotations

import json

from localmem.models.backends.json_jump import JsonJump
from localmem.prompts import answer, consolidate


def _run(schema, model_parts):
    """Generate like the decoder does: forced text first, else the next model part.
    Returns the text and what was forced."""
    jump = JsonJump(schema)
    text, forced = "", []
    parts = iter(model_parts)
    while not jump.complete:
        fixed = jump.forced()
        if fixed:
            forced.append(fixed)
            piece = fixed
        else:
            piece = next(parts)
        text += piece
        jump.feed(piece)
    return text, forced


def test_the_answer_schema_fixes_its_keys_and_the_closing_brace():
    text, forced = _run(answer.SCHEMA, ["7 May", ' 2023"', "3", ", ", "5", "]", "0.9", "}"])
    assert json.loads(text) == {"answer": "7 May 2023", "supports": [3, 5], "confidence": 0.9}
    assert forced == ['{"answer": "', ', "supports": [', ', "confidence": ']
    # a number's end is the model's: the "}" after 0.9 was generated, and ended the reply


def test_a_string_closed_together_with_its_comma_and_escapes_inside_strings():
    text, forced = _run(answer.SCHEMA, ['say \\"hi\\", ok",', "]", "1", "}"])
    assert json.loads(text)["answer"] == 'say "hi", ok'
    assert forced == ['{"answer": "', ' "supports": [', ', "confidence": ']


def test_objects_inside_arrays_get_their_keys_and_enum_strings_their_quote():
    parts = ["Dana expects", '"', "{", 'Dana"', 'career"', 'Dana is a nurse."', "0,", "3}", "]"]
    text, forced = _run(consolidate.FAST_SCHEMA, parts)
    data = json.loads(text)
    assert data["statements"][0] == {
        "subject": "Dana",
        "aspect": "career",
        "text": "Dana is a nurse.",
        "source": 0,
        "replaces": 3,
    }
    assert forced[2] == '"subject": "' and forced[-2] == ' "replaces": '  # after the model's own comma
    assert forced[-1] == "}"  # the root's end


def test_schemas_with_optional_properties_force_nothing_inside():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}
    jump = JsonJump(schema)
    assert jump.forced() == ""
    jump.feed('{"a": "x"')
    assert jump.forced() == "" and not jump.complete
