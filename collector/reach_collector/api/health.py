"""`GET /healthz`: 200 once the store is open; needs no token."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter()


@router.get("/healthz")
def healthz(request: Request) -> JSONResponse:
    try:
        ok = request.app.state.store.ping()
    except Exception:
        ok = False
    if ok:
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "unavailable"}, status_code=503)
