"""Schema-constrained LLM calls, with validation and one repair.

Every call names a JSON schema with bounded arrays and strings and a ``max_tokens``
cap (small models loop until the cap on unbounded schemas). The output is parsed
and validated here; on failure the model gets one retry that quotes the error;
after that the caller receives a failed :class:`Structured` with the raw text kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .protocols import LLM, Message


@dataclass
class Structured:
    """A validated structured answer, or the failure with every raw text kept."""

    data: dict[str, Any] | None
    raw: list[str] = field(default_factory=list)
    error: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    reused: int = 0  # prompt tokens taken from the model's cache
    prompt_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.data is not None


def complete_structured(
    llm: LLM,
    messages: Sequence[Message],
    schema: dict[str, Any],
    max_tokens: int,
    retries: int = 1,
    on_text: Callable[[str], None] | None = None,
) -> Structured:
    """Call ``llm`` for JSON matching ``schema``; retry ``retries`` times quoting the error.
    ``on_text`` streams the first attempt's text (a repaired reply is not streamed)."""
    result = Structured(data=None)
    convo = list(messages)
    for attempt in range(retries + 1):
        if attempt == 0 and on_text is not None:
            done = llm.complete_json(convo, schema, max_tokens, on_text=on_text)
        else:
            done = llm.complete_json(convo, schema, max_tokens)
        result.calls += 1
        result.prompt_tokens += done.prompt_tokens
        result.completion_tokens += done.completion_tokens
        result.seconds += done.seconds
        result.reused += done.reused
        result.prompt_seconds += done.prompt_seconds
        result.raw.append(done.text)
        try:
            value = json.loads(done.text)
        except json.JSONDecodeError as exc:
            problems = [f"not valid JSON ({exc.msg} at char {exc.pos}); the output may have been cut off"]
        else:
            problems = validate(value, schema)
            if not problems:
                result.data, result.error = value, None
                return result
        result.error = "; ".join(problems[:5])
        convo = list(messages) + [
            {"role": "assistant", "content": done.text[:2000]},
            {
                "role": "user",
                "content": "That output is invalid: "
                + result.error
                + ". Reply again with corrected JSON only, shorter if needed.",
            },
        ]
    return result


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Problems of ``value`` against the subset of JSON Schema our prompts use.

    Supports ``type`` (incl. lists of types), ``properties``, ``required``,
    ``additionalProperties: false``, ``items``, ``minItems``/``maxItems``,
    ``minLength``/``maxLength``, ``enum``, ``minimum``/``maximum`` and ``anyOf``.
    """
    if "anyOf" in schema:
        options = [validate(value, option, path) for option in schema["anyOf"]]
        return [] if any(not p for p in options) else min(options, key=len)
    problems: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, t) for t in types):
            return [f"{path} should be {' or '.join(types)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", 1 << 30):
            problems.append(f"{path} is longer than {schema['maxLength']} characters")
        if len(value) < schema.get("minLength", 0):
            problems.append(f"{path} is shorter than {schema['minLength']} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path} is above {schema['maximum']}")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", 1 << 30):
            problems.append(f"{path} has more than {schema['maxItems']} items")
        if len(value) < schema.get("minItems", 0):
            problems.append(f"{path} has fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                problems += validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path} is missing '{key}'")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                problems.append(f"{path} has unexpected keys {extra}")
        for key, sub in props.items():
            if key in value:
                problems += validate(value[key], sub, f"{path}.{key}")
    return problems


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    return False


class JsonFieldStream:
    """Feeds on a JSON reply as it is generated and passes on the characters of one top-level
    string field (e.g. ``answer``), unescaped, as soon as they are known."""

    _ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

    def __init__(self, key: str, emit: Callable[[str], None]) -> None:
        self._marker = f'"{key}"'
        self._emit = emit
        self._seen = ""  # text before the value starts
        self._state = "seek"  # seek -> colon -> value -> done
        self._escape = ""  # a pending backslash sequence

    def __call__(self, piece: str) -> None:
        for ch in piece:
            self._feed(ch)

    def _feed(self, ch: str) -> None:
        if self._state == "seek":
            self._seen += ch
            if self._seen.endswith(self._marker):
                self._state = "colon"
        elif self._state == "colon":
            if ch == '"':
                self._state = "value"
        elif self._state == "value":
            if self._escape:
                self._escape += ch
                if self._escape[1] == "u":
                    if len(self._escape) == 6:
                        try:
                            self._emit(chr(int(self._escape[2:], 16)))
                        except ValueError:
                            pass
                        self._escape = ""
                else:
                    self._emit(self._ESCAPES.get(ch, ch))
                    self._escape = ""
            elif ch == "\\":
                self._escape = ch
            elif ch == '"':
                self._state = "done"
            else:
                self._emit(ch)
