"""The web console's static shell and assets under ``/ui`` (SPEC §14), and ``/`` → ``/ui/``.

The pages carry no data: every datum comes from the token-guarded ``/api/*`` the browser calls with
the token the user signs in with, so these routes need none. Assets are read once from the package's
``ui`` folder (a fixed list, so no path from a request ever reaches the file system) and served with
a strict Content-Security-Policy: scripts and styles from this origin only, no inline code, no
framing, and Trusted Types required, so assigning markup from a string (``innerHTML``) throws.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

__all__ = ["CSP", "PAGES", "UI", "ui_router"]

UI: Final = "/ui"
ASSETS_DIR: Final = Path(__file__).resolve().parent.parent / "ui"
# The app shell answers for every console page, so a reload or a pasted link opens that page.
# A conversation id is any text (the path arrives decoded), so its page takes any characters.
PAGES: Final = re.compile(
    r"^(|traces|agents|conversations|topology|alerts|oncall|trace/[0-9A-Za-z]{1,64}"
    r"|conversations/[^\x00-\x1f]{1,1024})/?$"
)
CSP: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)
_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


def _load(directory: Path) -> dict[str, tuple[bytes, str, str]]:
    """Relative path → (body, content type, ETag) for every asset of a known type."""
    assets: dict[str, tuple[bytes, str, str]] = {}
    for path in sorted(directory.rglob("*")):
        kind = _TYPES.get(path.suffix)
        if kind is None or not path.is_file():
            continue
        body = path.read_bytes()
        assets[path.relative_to(directory).as_posix()] = (
            body,
            kind,
            '"' + hashlib.sha256(body).hexdigest()[:16] + '"',
        )
    return assets


def ui_router(directory: Path = ASSETS_DIR) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    assets = _load(directory)

    def answer(name: str, request: Request) -> Response:
        body, kind, etag = assets[name]
        headers = {**_HEADERS, "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=kind, headers=headers)

    def missing(what: str) -> Response:
        return Response(
            f"no console page or asset {what[:80]!r}\n", 404, media_type="text/plain", headers=_HEADERS
        )

    @router.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse(UI + "/", status_code=307)

    @router.get(UI)
    def bare() -> RedirectResponse:
        return RedirectResponse(UI + "/", status_code=307)

    @router.get(UI + "/{path:path}")
    def ui(path: str, request: Request) -> Response:
        if path in assets and path != "index.html":
            return answer(path, request)
        if PAGES.match(path) and "index.html" in assets:
            return answer("index.html", request)
        return missing(path)

    return router
