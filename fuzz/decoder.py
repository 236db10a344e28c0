"""The fuzz target for the compiled OTLP protobuf decoder (``collector/reach_collector/ingest/_fastflat.c``).

Each input is one request body, judged three ways: protobuf's own parser
(``ExportTraceServiceRequest.FromString``), the compiled path (``fast.flatten_protobuf``) and the
pure-Python reference (``rows.flatten`` over ``decode.parse_for_rows``), compared value by value with
``tests/collector/test_fast_path.py``'s helpers. A finding (``Finding.kind``):

- ``took-invalid``: the compiled path returned a batch for a body protobuf rejects (it must decline,
  so that the reference answers 400);
- ``differs``: its batch differs from the reference's (rows, lookup parts, stats, rejected counts);
- ``raised``: it failed, or called malformed, a body protobuf accepts (the collector falls back to
  the reference then, but it must decline such a body or take it);
- ``cost-raised`` / ``cost-differs``: the compiled cost pre-pass (``fast.request_cost``) failed, or
  its cost differs from ``cost.framing_cost``'s;
- ``reference-raised``: the reference raised something else than the errors the collector answers
  400 for (that would be a 500);
- ``reference-took-invalid`` / ``reference-rejected-valid``: the reference disagrees with protobuf
  on whether the body is a request at all (off with ``REACH_FUZZ_CHECK_REFERENCE=0``);
- any sanitizer report or crash of the process (under the sanitized build; ``run.py`` collects those).

``REACH_FUZZ_EXTENSION`` names the build of the extension to load (``fuzz/build.py``); unset, the
normal in-place build is used. ``REACH_FUZZ_FINDINGS`` (a folder) makes findings of the kinds above
be saved there, once per kind and message, instead of stopping the run (``run.py --keep-going``).
``REACH_FUZZ_LEAK_CHECK_EVERY=N`` runs LeakSanitizer's check every N inputs (``run.py --leaks``).

    python fuzz/decoder.py [libFuzzer flags] CORPUS...   # under atheris: use run.py, which sets it up
    python fuzz/decoder.py --replay PATH...             # files or folders, once each, no atheris
    python fuzz/decoder.py --minimize IN OUT            # shrink an oracle finding
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import logging
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
MODULE: Final = "reach_collector.ingest._fastflat"
EXTENSION_ENV: Final = "REACH_FUZZ_EXTENSION"
FINDINGS_ENV: Final = "REACH_FUZZ_FINDINGS"
REFERENCE_ENV: Final = "REACH_FUZZ_CHECK_REFERENCE"
LEAKS_ENV: Final = "REACH_FUZZ_LEAK_CHECK_EVERY"  # run.py --leaks: a LeakSanitizer check every N inputs
# Whether the reference agrees with protobuf on what is a request at all: on unless set to 0 (to
# fuzz the compiled path alone past a known leniency of the reference).
CHECK_REFERENCE: Final = os.environ.get(REFERENCE_ENV, "1") != "0"


def _load_extension(path: str) -> None:
    """Put the build at ``path`` where ``fast.py`` imports ``_fastflat`` from, before it does, so that
    ``fast.py`` configures it exactly as it configures the normal build."""
    import reach_collector.ingest as package

    if "reach_collector.ingest.fast" in sys.modules:
        raise RuntimeError(f"{EXTENSION_ENV} must be set before reach_collector.ingest.fast is imported")
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[MODULE] = module
    package._fastflat = module  # type: ignore[attr-defined]


if os.environ.get(EXTENSION_ENV):
    _load_extension(os.environ[EXTENSION_ENV])

sys.path[:0] = [str(ROOT / "fuzz"), str(ROOT / "tests" / "collector")]
from google.protobuf.message import DecodeError  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from shrink import shrink  # noqa: E402
from test_fast_path import assert_same_batch, reference  # noqa: E402

from reach_collector.ingest import fast  # noqa: E402
from reach_collector.ingest.decode import UndecodableBody  # noqa: E402
from reach_collector.ingest.rows import SpanBatch  # noqa: E402

if fast._fastflat is None:
    raise SystemExit(
        "the compiled decoder is not built or is out of date (pip install -e . or fuzz/build.py)"
    )
if (
    os.environ.get(EXTENSION_ENV)
    and Path(fast._fastflat.__file__).resolve() != Path(os.environ[EXTENSION_ENV]).resolve()
):
    raise SystemExit(f"fast.py imported {fast._fastflat.__file__}, not {os.environ[EXTENSION_ENV]}")


class Finding(AssertionError):
    """One broken invariant for one body; ``signature`` is the same for the same bug's bodies."""

    def __init__(self, kind: str, detail: str, body: bytes) -> None:
        self.kind, self.body = kind, body
        self.signature = f"{kind}: {detail.splitlines()[0].split('; body ')[0][:300] if detail else ''}"
        super().__init__(f"{self.signature}\nbody ({len(body)} bytes): {body.hex()}")


class _Warnings(logging.Handler):
    """What ``fast`` logs while it runs: it logs, and swallows, a failure of the compiled code."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.problems: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        self.problems.append(f"{type(error).__name__}: {error}" if error else record.getMessage())


def _watched(call: Callable[[bytes], Any], body: bytes) -> tuple[Any, str | None]:
    """``call(body)``, and the first problem ``fast`` logged meanwhile (None when none); an
    ``UndecodableBody`` (the compiled path found the body malformed, protobuf agreed) answers None."""
    if not fast.enabled():
        raise RuntimeError("the compiled path is off (REACH_COLLECTOR_PURE_PYTHON is set)")
    watch = _Warnings()
    fast.log.addHandler(watch)
    try:
        result = call(body)
    except UndecodableBody:
        result = None
    finally:
        fast.log.removeHandler(watch)
    return result, (watch.problems[0] if watch.problems else None)


def _protobuf_accepts(body: bytes) -> bool:
    try:
        ExportTraceServiceRequest.FromString(body)
    except (DecodeError, ValueError, RecursionError):
        return False
    return True


def judge(body: bytes) -> SpanBatch | None:
    """The compiled path's batch for ``body`` (None when it declines); raises ``Finding``."""
    valid = _protobuf_accepts(body)
    got, problem = _watched(fast.flatten_protobuf, body)
    if problem is not None and valid:
        raise Finding("raised", problem, body)
    if got is not None and not valid:
        raise Finding("took-invalid", "the compiled path took a body protobuf rejects", body)
    try:
        want = reference(body)
    except Exception as exc:  # not one of the errors the collector answers 400 for: a 500
        raise Finding("reference-raised", f"{type(exc).__name__}: {exc}", body) from exc
    rejected = isinstance(want, Exception)
    if got is not None:
        if rejected:
            raise Finding("differs", f"the reference rejects it: {type(want).__name__}: {want}", body)
        try:
            assert_same_batch(got, want, body)
        except AssertionError as exc:
            raise Finding("differs", str(exc), body) from exc
    if CHECK_REFERENCE and rejected == valid:
        kind, detail = ("reference-rejected-valid", repr(want)) if valid else ("reference-took-invalid", "")
        raise Finding(kind, detail or "the reference took a body protobuf rejects", body)
    _judge_cost(body)
    return got


def _judge_cost(body: bytes) -> None:
    """The compiled cost pre-pass (where this version has one) against ``cost.framing_cost``."""
    if not hasattr(fast, "request_cost"):
        return
    from reach_collector.ingest import row_budget as cost

    got, problem = _watched(fast.request_cost, body)
    if problem is not None:
        raise Finding("cost-raised", problem, body)
    want = cost.framing_cost(body)  # a Cost, whose first field is the cost in bytes
    if got is not None and want is not None and got != want[0]:
        raise Finding("cost-differs", f"compiled {got}, framing_cost {want[0]}", body)


class Recorder:
    """Saves each new finding (by signature) under ``folder`` and goes on: the keep-going mode."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.seen = {p.read_text().splitlines()[0] for p in folder.glob("finding-*.txt")}

    def judge(self, body: bytes) -> None:
        try:
            judge(body)
        except Finding as finding:
            if finding.signature in self.seen:
                return
            self.seen.add(finding.signature)
            name = f"finding-{finding.kind}-{hashlib.sha1(body).hexdigest()[:16]}"
            (self.folder / name).write_bytes(body)
            (self.folder / f"{name}.txt").write_text(f"{finding.signature}\n{finding}\n")
            print(f"FINDING {finding.signature} -> {self.folder / name}", file=sys.stderr, flush=True)


def inputs(paths: list[str]) -> Iterator[Path]:
    """Every file of the given files and folders (a finding's .txt note is not an input)."""
    for path in map(Path, paths):
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file() and file.suffix != ".txt" and not file.name.startswith("."):
                yield file


def replay(paths: list[str]) -> int:
    """Judge each file once; print each finding; the number of findings."""
    found, count = 0, 0
    for file in inputs(paths):
        count += 1
        try:
            judge(file.read_bytes())
        except Finding as finding:
            found += 1
            print(f"{file}: {finding.signature}", file=sys.stderr)
    print(f"replayed {count} input(s), {found} finding(s)", file=sys.stderr)
    return found


def _signature(body: bytes) -> str | None:
    try:
        judge(body)
    except Finding as finding:
        return finding.signature
    return None


def minimize(body: bytes) -> bytes:
    """A smaller body with the same oracle finding (oracle findings only: a sanitizer report
    aborts the process; shrink those with libFuzzer's -minimize_crash)."""
    want = _signature(body)
    if want is None:
        raise SystemExit("no oracle finding for this input (a sanitizer one? use run.py --reproduce)")
    return shrink(body, lambda smaller: _signature(smaller) == want)


def _with_leak_checks(one: Callable[[bytes], Any], every: int) -> Callable[[bytes], None]:
    """``one``, and every ``every`` inputs LeakSanitizer's check for memory no longer reachable (the
    interpreter's own is suppressed by run.py): at exit it would never run, libFuzzer leaves by _exit."""
    check = ctypes.CDLL(None).__lsan_do_recoverable_leak_check
    count = 0

    def checked(body: bytes) -> None:
        nonlocal count
        one(body)
        count += 1
        if count % every == 0 and check():
            detail = f"LeakSanitizer found memory lost within the last {every} inputs (report above)"
            raise Finding("leak", detail, body)

    return checked


def main(argv: list[str]) -> None:
    os.environ.pop("REACH_COLLECTOR_PURE_PYTHON", None)  # the compiled path is what is under test
    fast.log.propagate = False  # its failures are reported as findings, not logged per input
    if argv[1:2] == ["--replay"]:
        sys.exit(1 if replay(argv[2:]) else 0)
    if argv[1:2] == ["--minimize"] and len(argv) == 4:
        small = minimize(Path(argv[2]).read_bytes())
        Path(argv[3]).write_bytes(small)
        print(f"{len(small)} bytes: {_signature(small)}\n{small.hex()}", file=sys.stderr)
        return
    import atheris

    one: Any = Recorder(Path(os.environ[FINDINGS_ENV])).judge if os.environ.get(FINDINGS_ENV) else judge
    if int(os.environ.get(LEAKS_ENV, "0")) > 0:
        one = _with_leak_checks(one, int(os.environ[LEAKS_ENV]))
    # libFuzzer's modes that re-run their binary (-minimize_crash, -merge, -fork) run argv[0]
    # through the shell: make it this interpreter on this script.
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))}"
    atheris.Setup([command, *argv[1:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
