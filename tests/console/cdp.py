"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no driver binary, no extra package, no debugging port. Debian's ``chromium`` is installed when it
is missing and we are root (``apt-get``), as the dashboards tests install Prometheus.

Used by the console tests and by ``bench/console.py``."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import itertools
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from debian_packages import ensure_installed

PACKAGES = ("chromium",)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


class BrowserError(RuntimeError):
    """The browser failed, or a DevTools call answered with an error."""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_chromium() -> str:
    """The chromium binary, installing Debian's package first when it is missing and we are root."""
    return ensure_installed("chromium", find_chromium, PACKAGES)


@dataclass
class PageEvents:
    """What one page reported: errors (exceptions, console errors, error log entries) and URLs."""

    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    request_headers: list[dict[str, str]] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


class Browser:
    """One Chromium process; ``page()`` opens a tab with its own event log."""

    def __init__(self, binary: str | None = None, *, width: int = 1280, height: int = 800) -> None:
        self.binary = binary or ensure_chromium()
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="reach-console-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()

        def fds() -> None:  # in the child: the pipe ends at fd 3 (commands) and fd 4 (answers)
            # Through fds above 10 first, so neither end can be overwritten by the other's dup2.
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [self.binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]
        self.log_path = Path(self.profile) / "chromium.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*args, "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            pass_fds=(3, 4),  # kept open past close_fds, which runs after preexec_fn
            preexec_fn=fds,  # dup2 only: safe between fork and exec
            close_fds=True,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._in = os.fdopen(from_browser_r, "rb", buffering=0)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.call("Target.setDiscoverTargets", {"discover": False}, timeout=30)

    # -- protocol -------------------------------------------------------------------------------
    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._in.read(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                for waiting in list(self._waiting.values()):
                    waiting.put({"error": {"message": "browser closed the pipe"}})
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    waiting = self._waiting.pop(message["id"], None)
                    if waiting is not None:
                        waiting.put(message)
                else:
                    for listener in list(self._listeners.get(message.get("sessionId", ""), ())):
                        listener(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str = "", timeout: float = 30
    ) -> dict[str, Any]:
        ident = next(self._ids)
        answer: queue.Queue[dict[str, Any]] = queue.Queue(1)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        with self._lock:
            self._waiting[ident] = answer
            self._out.write(json.dumps(message).encode() + b"\0")
        try:
            reply = answer.get(timeout=timeout)
        except queue.Empty:
            self._waiting.pop(ident, None)
            raise BrowserError(f"{method}: no answer within {timeout}s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return dict(reply.get("result", {}))

    def page(self) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return Page(self, target, session)

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for stream in (self._out, self._in):
            with contextlib.suppress(OSError):
                stream.close()
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Page:
    """A tab: navigate, evaluate JavaScript, wait for a condition, screenshot; records errors and
    every request URL (``events``)."""

    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session
        self.events = PageEvents()
        self._loaded = threading.Event()
        browser._listeners.setdefault(session, []).append(self._on_event)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": browser.width, "height": browser.height, "deviceScaleFactor": 1, "mobile": False},
        )

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def _on_event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            self.events.errors.append(f"exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            self.events.errors.append("console.error: " + " ".join(map(str, args)))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.events.errors.append(
                f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}"
            )
        elif method == "Network.requestWillBeSent":
            request = params.get("request", {})
            self.events.requests.append(request.get("url", ""))
            self.events.request_headers.append(dict(request.get("headers", {})))
        elif method == "Page.javascriptDialogOpening":
            self.events.dialogs.append(params.get("message", ""))
            self.call("Page.handleJavaScriptDialog", {"accept": False})
        elif method == "Page.loadEventFired":
            self._loaded.set()

    def goto(self, url: str, timeout: float = 30) -> None:
        self._loaded.clear()
        answer = self.call("Page.navigate", {"url": url}, timeout=timeout)
        if answer.get("errorText"):
            raise BrowserError(f"navigate {url}: {answer['errorText']}")
        if not self._loaded.wait(timeout):
            raise BrowserError(f"navigate {url}: no load event within {timeout}s")

    def js(self, expression: str, timeout: float = 30) -> Any:
        """The value of a JavaScript expression (promises awaited); exceptions raise BrowserError."""
        answer = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text"))
        return answer.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 15, interval: float = 0.05) -> Any:
        """Poll a JavaScript expression until it is truthy; its value. Raises on timeout."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(interval)
        raise BrowserError(f"timed out after {timeout}s waiting for {expression!r} (last {value!r})")

    def before_each_load(self, source: str) -> None:
        """Run ``source`` in every document this tab loads from now on, before its own scripts."""
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def each(self, selector: str, expression: str) -> list[Any]:
        """``expression`` (of ``el``) for every element matching ``selector``."""
        return list(
            self.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(el => {expression})")
        )

    def click(self, selector: str) -> None:
        """A click event on the first element matching ``selector`` (SVG elements included)."""
        self.js(
            f"document.querySelector({json.dumps(selector)})"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window})); 0"
        )

    def fill(self, element_id: str, value: str) -> None:
        self.js(f"document.getElementById({json.dumps(element_id)}).value = {json.dumps(value)}; 0")

    def text(self, selector: str = "body") -> str:
        return str(self.js(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''"))

    def screenshot(self, path: Path, *, full: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, timeout=60)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.browser.call("Target.closeTarget", {"targetId": self.target}, timeout=10)
        self.browser._listeners.pop(self.session, None)
