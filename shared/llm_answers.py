"""Reading a model's JSON answer the way real models give it. Pure; no I/O.

Asked for a JSON object with a strict schema, real models still wrap it in a Markdown fence,
put a sentence before or after it ("Here is the JSON: ..."), or write an enum value in
another case ("Good", "NEW"). Each of those is repaired here and named, so the caller can
log and count which path produced an answer; anything else (a missing required field, a
wrong type, no JSON object at all) stays an error and the caller retries or falls back.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

FENCE, PROSE, ENUM_CASE = "fence", "prose", "enum_case"


def parse_answer(content: str, output: type[M]) -> tuple[M, list[str]]:
    """The answer as ``output``, and the repairs it needed (empty for a clean answer).
    Raises ``json.JSONDecodeError`` (no JSON object) or ``ValidationError``."""
    repairs: list[str] = []
    text = content.strip()
    unfenced = strip_fences(text)
    if unfenced != text:
        repairs.append(FENCE)
    try:
        data = json.loads(unfenced)
    except json.JSONDecodeError:
        data = first_object(unfenced)
        repairs.append(PROSE)
    try:
        return output.model_validate(data), repairs
    except ValidationError:
        fixed = normalise_enums(data, output.model_json_schema())
        if fixed == data:
            raise
        value = output.model_validate(fixed)
        return value, [*repairs, ENUM_CASE]


def strip_fences(text: str) -> str:
    """The inside of a Markdown code fence (```json ... ```), or the text as it is."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        if text.rstrip().endswith("```"):
            text = text.rstrip()[:-3]
    return text.strip()


def first_object(text: str) -> Any:
    """The first JSON object in ``text`` (prose around it ignored)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise json.JSONDecodeError("no JSON object in the answer", text, 0)


def normalise_enums(data: Any, schema: dict[str, Any]) -> Any:
    """``data`` with every string that the schema allows only from a set of values, and
    that equals one of them but for case or surrounding space, replaced by that value."""
    return _walk(data, schema, schema.get("$defs", {}))


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(defs.get(ref.removeprefix("#/$defs/"), {}), defs)
    return schema


def _walk(data: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    schema = _resolve(schema, defs)
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        fixed = _walk(data, branch, defs)
        if fixed is not data:
            return fixed
    if isinstance(data, str) and ("enum" in schema or "const" in schema):
        allowed = [v for v in schema.get("enum", [schema.get("const")]) if isinstance(v, str)]
        if data not in allowed:
            match = [v for v in allowed if v.casefold() == data.strip().casefold()]
            if len(match) == 1:
                return match[0]
        return data
    if isinstance(data, dict) and "properties" in schema:
        props = schema["properties"]
        out = {k: _walk(v, props[k], defs) if k in props else v for k, v in data.items()}
        return data if all(out[k] is data[k] for k in data) else out
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        items = [_walk(v, schema["items"], defs) for v in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    return data
