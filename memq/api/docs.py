"""The interactive docs, ``/docs`` (Swagger UI) and ``/redoc``, with their scripts and
styles served by the API itself from the fastapi-offline package (``/docs/assets/...``):
FastAPI's defaults load them from a CDN, which leaves the pages blank offline or behind a
firewall. No key needed, like ``/openapi.json``."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PATH = "/docs/assets"
ASSETS = Path(fastapi_offline.__file__).parent / "static"  # swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js


def install(app: FastAPI) -> None:
    """For an app made with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS), name="docs-assets")

    def prefix(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = prefix(request)
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            # no badge from the online validator: the page makes no request beyond this API
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = prefix(request)
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )
