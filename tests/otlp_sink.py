"""A minimal OTLP/HTTP receiver on loopback for library tests: decodes real protobuf exports.

Modes: ``ok`` answers 200, ``hang`` accepts and never answers, ``unavailable`` answers 503.
``statuses`` answers the first requests with those codes (then 200); ``attempts`` counts every
request. ``port`` lets a sink come back on the port an app was already sending to.
"""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class OtlpSink:
    def __init__(self, mode: str = "ok", *, port: int = 0, statuses: list[int] | None = None) -> None:
        self.mode = mode
        self.statuses = list(statuses or [])
        self.attempts = 0
        self.requests: list[dict[str, Any]] = []
        self._release = threading.Event()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                sink.attempts += 1
                if sink.statuses:
                    self.send_response(sink.statuses.pop(0))
                    self.send_header("retry-after", "0")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if sink.mode == "hang":
                    sink._release.wait(60)
                    return
                if sink.mode == "unavailable":
                    self.send_response(503)
                    self.send_header("retry-after", "1")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                sink.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "request": request,
                    }
                )
                data = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpSink:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[dict[str, Any]]:
        """Every received span: name, attributes, resource, and trace_id, span_id, parent_span_id in hex."""
        out = []
        for req in self.requests:
            for rs in req["request"].resource_spans:
                resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        out.append(
                            {
                                "name": span.name,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex() or None,
                                "resource": resource,
                                "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                            }
                        )
        return out

    def wait_for(self, count: int, timeout: float = 15) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.spans()
            if len(spans) >= count:
                return spans
            time.sleep(0.05)
        return self.spans()


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None
