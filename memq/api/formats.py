"""One convention for the routes that answer in markdown or JSON: the ``format`` query
parameter (``markdown`` | ``json``), whose default is each route's historical answer
(markdown for retrieval, JSON for the manifest and the session context). The ``Accept``
header is not consulted: one explicit switch, the same in a browser, curl and the docs.

The ``/raw`` routes of retrieval are deprecated aliases of ``?format=json``: they answer
the same JSON with ``Deprecation: true`` and a ``Link`` to their successor."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Query, Request, Response
from fastapi.responses import PlainTextResponse

Format = Literal["markdown", "json"]
MARKDOWN_TYPE = "text/markdown; charset=utf-8"


def format_query(default: Format) -> Any:
    other = "json" if default == "markdown" else "markdown"
    return Query(
        default,
        alias="format",
        description=f"`{default}` (the default) or `{other}`; the JSON has the markdown in `text`.",
    )


MARKDOWN_BY_DEFAULT = format_query("markdown")  # retrieval
JSON_BY_DEFAULT = format_query("json")  # the manifest, the session context


def markdown_or_json(description: str) -> dict[int | str, dict[str, Any]]:
    """The 200 answer of a route with both formats: the JSON (its ``response_model``) or markdown."""
    return {200: {"description": description, "content": {"text/markdown": {"schema": {"type": "string"}}}}}


def markdown(text: str) -> PlainTextResponse:
    return PlainTextResponse(text, media_type=MARKDOWN_TYPE)


def deprecated_alias(request: Request, response: Response, successor: str) -> None:
    """The headers of a deprecated alias: ``Deprecation: true`` and a ``Link`` (RFC 8288) to
    the form that replaces it."""
    root = request.scope.get("root_path", "").rstrip("/")
    response.headers["Deprecation"] = "true"
    response.headers["Link"] = f'<{root}{successor}>; rel="successor-version"'
