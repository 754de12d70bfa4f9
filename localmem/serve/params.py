"""What a request gives, checked: its JSON body, its text fields and its whole numbers. A value
that is missing or of the wrong kind is a usage error (HTTP 400) that says which field. Both the
API (:mod:`.api`) and the page (:mod:`.pages`) read their requests with these."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from .calls import usage_error


async def json_body(request: Request) -> dict[str, Any]:
    """The request's body, which must be a JSON object (an empty body is ``{}``)."""
    try:
        data = json.loads(await request.body() or b"{}")
    except RecursionError:
        raise usage_error("the request body is JSON nested too deeply") from None
    except ValueError as exc:  # not JSON, not UTF-8, a number of more than 4,300 digits
        raise usage_error(f"the request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise usage_error("the request body must be a JSON object")
    return data


def required_text(data: dict[str, Any], name: str) -> str:
    """The text field ``name`` of ``data``, which must be given."""
    value = text_field(data, name)
    assert value is not None  # text_field raised when it is missing
    return value


def text_field(data: dict[str, Any], name: str, required: bool = True) -> str | None:
    """The text field ``name`` of ``data``; None when it is absent or empty and not ``required``."""
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise usage_error(f"'{name}' is required")
        return None
    if not isinstance(value, str):
        raise usage_error(f"'{name}' must be text")
    return value


def whole_number(value: Any, name: str, default: int, low: int, high: int) -> int:
    """``value`` (a query parameter or a JSON value named ``name``) as a whole number from
    ``low`` to ``high``; ``default`` when it is absent or empty."""
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: 1e400 in JSON is infinity
        raise usage_error(f"'{name}' must be a whole number") from None
    if not low <= number <= high:
        raise usage_error(f"'{name}' must be from {low} to {high}")
    return number
