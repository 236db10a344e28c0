"""Runs the decoder fuzz target (``decoder.py``) under atheris/libFuzzer with the sanitized build, for a
bounded time, and says what it found.

The target runs in a child process with atheris's ASan runtime (``asan_with_fuzzer.so``, which also
carries UBSan's) preloaded, as atheris documents for native extensions; UBSan halts on the first
report. The corpus grows in ``WORKDIR/corpus`` (the committed seeds in ``fuzz/corpus`` and the
reproducers in ``fuzz/crashes`` are read too, never written); each finding's input goes to
``WORKDIR/findings``, and ``WORKDIR/summary.json`` holds the run's numbers. Exit status 1 when
anything was found.

``--keep-going``: a finding does not end the run. The target then saves oracle findings and goes
on; after a sanitizer report the child is restarted, with that UBSan check suppressed in that
function (so a known bug does not hide the next one); the same crash three times ends the run.

    python fuzz/run.py --seconds 3600 [--keep-going] [--workdir DIR] [-- libFuzzer flags]
    python fuzz/run.py --reproduce FILE     # one input, with the sanitizers, full report
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import build

ROOT: Final = Path(__file__).resolve().parent.parent
FUZZ: Final = ROOT / "fuzz"
TARGET: Final = FUZZ / "decoder.py"
SEEDS: Final = (FUZZ / "corpus", FUZZ / "crashes")
LIBFUZZER_FLAGS: Final = ("-max_len=8192", "-rss_limit_mb=4096", "-print_final_stats=1")
HANG_SECONDS: Final = 10  # an input that runs longer is a finding (libFuzzer's -timeout)
# With --leaks, decoder.py's LeakSanitizer check runs inside an input: a scan of the whole heap (about
# a second, ten or more on a loaded machine) and, on a leak, the report and the exit that writes the
# input out. An input that overran the hang limit meanwhile was killed by the timer before libFuzzer
# saved it, so that limit leaves room for the check.
LEAK_HANG_SECONDS: Final = 120
SAME_CRASH_LIMIT: Final = 3
LEAK_CHECK_EVERY: Final = 2000  # inputs between two LeakSanitizer checks (each scans the whole heap)
# UBSan reports an error type; its suppressions name the -fsanitize check (ubsan_checks.inc).
UBSAN_CHECKS: Final = {
    "nullptr-with-offset": "pointer-overflow",
    "nullptr-with-nonzero-offset": "pointer-overflow",
    "nullptr-after-nonzero-offset": "pointer-overflow",
    "null-pointer-use": "null",
    "misaligned-pointer-use": "alignment",
    "alignment-assumption": "alignment",
    "insufficient-object-size": "object-size",
    "invalid-builtin-use": "builtin",
    "invalid-shift-base": "shift-base",
    "invalid-shift-exponent": "shift-exponent",
    "out-of-bounds-index": "bounds",
    "unreachable-call": "unreachable",
    "missing-return": "return",
    "non-positive-vla-index": "vla-bound",
    "invalid-bool-load": "bool",
    "invalid-enum-load": "enum",
    "function-type-mismatch": "function",
    "invalid-null-return": "returns-nonnull-attribute",
    "invalid-null-argument": "nonnull-attribute",
}


@dataclass
class Finding:
    signature: str
    input: str | None  # the saved reproducer, when libFuzzer wrote one
    suppression: str | None = None  # the UBSan suppression that lets a keep-going run past it


@dataclass
class Summary:
    seconds: float = 0.0
    executions: int = 0
    exec_per_second: float = 0.0
    coverage: int = 0  # libFuzzer's "cov:" — instrumented edges of the extension reached
    features: int = 0
    corpus: int = 0
    restarts: int = 0
    findings: list[Finding] = field(default_factory=list)


def asan_runtime() -> Path:
    """atheris's ASan + UBSan + libFuzzer runtime (it installs it beside its package)."""
    spec = importlib.util.find_spec("atheris")
    if spec is None or spec.origin is None:
        raise SystemExit("atheris is not installed: pip install atheris")
    runtime = Path(spec.origin).resolve().parent.parent / "asan_with_fuzzer.so"
    if not runtime.exists():
        raise SystemExit(f"atheris is installed without {runtime.name}")
    return runtime


def write_dictionary(path: Path) -> None:
    """libFuzzer's dictionary: the names the compiled path looks for, so mutations reach its rules."""
    from reach_collector.ingest import fast
    from reach_otel import semconv as sc

    words = sorted({*fast.KEYS, *fast.OPS, *fast.KINDS, *fast.TEXTS, *sc.LLM_OPERATIONS})

    def quoted(word: str) -> str:
        return (
            '"'
            + "".join(
                chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\x{b:02x}" for b in word.encode()
            )
            + '"'
        )

    path.write_text("".join(f"{quoted(w)}\n" for w in words if w))


def environment(extension: Path, workdir: Path, keep_going: bool, leaks: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("REACH_COLLECTOR_PURE_PYTHON", None)
    suppressions = workdir / "ubsan.supp"
    suppressions.touch()
    env.update(
        LD_PRELOAD=str(asan_runtime()),
        ASAN_OPTIONS=f"detect_leaks={int(leaks)}:malloc_context_size={6 if leaks else 30}:symbolize=1",
        LSAN_OPTIONS=f"suppressions={FUZZ / 'lsan.supp'}:print_suppressions=0",
        UBSAN_OPTIONS=f"halt_on_error=1:print_stacktrace=1:report_error_type=1:suppressions={suppressions}",
        REACH_FUZZ_EXTENSION=str(extension),
        PYTHONPATH=os.pathsep.join(filter(None, [str(FUZZ), env.get("PYTHONPATH")])),
    )
    env["REACH_FUZZ_LEAK_CHECK_EVERY"] = str(LEAK_CHECK_EVERY if leaks else 0)
    if keep_going:
        env["REACH_FUZZ_FINDINGS"] = str(workdir / "findings")
    else:
        env.pop("REACH_FUZZ_FINDINGS", None)
    return env


def run_child(command: list[str], env: dict[str, str], log: Path) -> tuple[int, str]:
    """Run one fuzzer process, echoing its output and appending it to ``log``; (exit code, output)."""
    lines: list[str] = []
    with log.open("a") as sink:
        child = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        try:
            assert child.stdout is not None
            for line in child.stdout:
                lines.append(line)
                sink.write(line)
                sys.stderr.write(line)
        finally:
            if child.poll() is None:
                child.terminate()
            child.wait()
    return child.returncode, "".join(lines)


def finding_of(output: str) -> Finding | None:
    """The crash a fuzzer process ended with, if it ended with one."""
    written = re.search(r"Test unit written to (\S+)", output)
    reproducer = written.group(1) if written else None
    ubsan = re.search(r"SUMMARY: UndefinedBehaviorSanitizer: (\S+) (\S+)", output)
    if ubsan:
        check, where = ubsan.groups()
        function = re.search(r"runtime error:.*?#0 0x[0-9a-f]+ in (\w+)", output, re.S)
        name = function.group(1) if function else None
        suppression = f"{UBSAN_CHECKS.get(check, check)}:{name}" if name else None
        return Finding(f"ubsan {check} at {Path(where).name} in {name}", reproducer, suppression)
    asan = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", output)
    if asan:
        frame = re.search(r"#\d+ 0x[0-9a-f]+ in (\w+) \S*_fastflat\.c:(\d+)", output)
        where = f" in {frame.group(1)} (_fastflat.c:{frame.group(2)})" if frame else ""
        return Finding(f"asan {asan.group(1)}{where}", reproducer)
    python = re.search(r"Finding: (.*)", output)
    if python:
        return Finding(python.group(1).strip(), reproducer)
    if "ERROR: LeakSanitizer" in output:
        # At exit libFuzzer is between inputs: the unit it writes then is empty, no reproducer.
        first = re.search(r"leak of .*?\n(?:.*\n)*?\s+#1 0x[0-9a-f]+ in (\S+)", output)
        return Finding(f"leak: LeakSanitizer at exit, from {first.group(1) if first else '?'}", None)
    other = re.search(r"ERROR: libFuzzer: ([\w -]+)", output) or re.search(
        r"=== Uncaught Python (exception)", output
    )
    if other or written:
        uncaught = re.findall(r"^(\w+(?:Error|Exception)\b.*)$", output, re.M)
        detail = uncaught[-1] if uncaught else (other.group(1) if other else "crash")
        return Finding(f"crash: {detail.strip()[:200]}", reproducer)
    return None


def stats(output: str, summary: Summary) -> None:
    def stat(name: str) -> float:
        found = re.findall(rf"stat::{name}:\s*([\d.]+)", output)
        return float(found[-1]) if found else 0.0

    # A crash can end the process before the final stats: then its last progress line counts.
    progress_runs = re.findall(r"^#(\d+)\s", output, re.M)
    summary.executions += int(stat("number_of_executed_units")) or int(
        progress_runs[-1] if progress_runs else 0
    )
    progress = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", output)
    if progress:
        cov, ft, corp = map(int, progress[-1])
        summary.coverage, summary.features = max(summary.coverage, cov), max(summary.features, ft)
        summary.corpus = corp


def fuzz(
    seconds: float, workdir: Path, keep_going: bool, leaks: bool, extra: list[str], extension: Path
) -> Summary:
    corpus, findings = workdir / "corpus", workdir / "findings"
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(exist_ok=True)
    dictionary = workdir / "otlp.dict"
    write_dictionary(dictionary)
    env = environment(extension, workdir, keep_going, leaks)
    log = workdir / "fuzz.log"
    log.write_text("")
    summary, crashes = Summary(), {}
    start = time.monotonic()
    deadline = start + seconds
    while (remaining := deadline - time.monotonic()) >= 1:
        command = [
            sys.executable,
            str(TARGET),
            *LIBFUZZER_FLAGS,
            f"-timeout={LEAK_HANG_SECONDS if leaks else HANG_SECONDS}",
            f"-max_total_time={int(remaining)}",
            f"-dict={dictionary}",
            f"-artifact_prefix={findings}/",
            "-detect_leaks=0",  # per input, it would check after nearly every one: decoder.py checks
            *extra,
            str(corpus),
            *(str(s) for s in SEEDS if s.is_dir()),
        ]
        code, output = run_child(command, env, log)
        stats(output, summary)
        found = finding_of(output) if code != 0 else None
        if code != 0 and found is None:
            found = Finding(f"the fuzzer exited with status {code} (see {log})", None)
        if found is None:
            break
        summary.findings.append(found)
        crashes[found.signature] = crashes.get(found.signature, 0) + 1
        if not keep_going or crashes[found.signature] >= SAME_CRASH_LIMIT:
            break
        if found.suppression:
            with (workdir / "ubsan.supp").open("a") as supp:
                supp.write(found.suppression + "\n")
        summary.restarts += 1
    summary.findings += [
        Finding(p.read_text().splitlines()[0], str(p.with_suffix(""))) for p in sorted(findings.glob("*.txt"))
    ]
    summary.seconds = round(time.monotonic() - start, 1)
    summary.exec_per_second = round(summary.executions / summary.seconds, 1) if summary.seconds else 0.0
    (workdir / "summary.json").write_text(json.dumps(asdict(summary), indent=2) + "\n")
    return summary


def report(summary: Summary) -> None:
    print(
        f"fuzz: {summary.executions} executions in {summary.seconds} s ({summary.exec_per_second} exec/s), "
        f"cov {summary.coverage}, ft {summary.features}, corpus {summary.corpus}, "
        f"restarts {summary.restarts}, {len(summary.findings)} finding(s)"
    )
    for found in summary.findings:
        print(f"  FOUND {found.signature}" + (f"\n    input: {found.input}" if found.input else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (default 60)")
    parser.add_argument("--workdir", type=Path, default=FUZZ / "work", help="corpus, findings, log")
    parser.add_argument("--keep-going", action="store_true", help="record findings and go on")
    parser.add_argument("--leaks", action="store_true", help="LeakSanitizer on too")
    parser.add_argument("--reproduce", type=Path, help="run one input through the sanitized build")
    parser.add_argument("--extension", type=Path, help="a sanitized build to use (default: build.py's)")
    parser.add_argument("libfuzzer", nargs="*", help="after --: flags passed to libFuzzer")
    args = parser.parse_args()
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    extension = args.extension.resolve() if args.extension else build.build("sanitize")
    if args.reproduce:
        env = environment(extension, workdir, keep_going=False, leaks=args.leaks)
        command = [sys.executable, str(TARGET), *args.libfuzzer, str(args.reproduce.resolve())]
        code, output = run_child(command, env, workdir / "reproduce.log")
        found = finding_of(output) if code else None
        print(f"reproduce: {found.signature if found else 'no finding'} (exit {code})")
        sys.exit(1 if code else 0)
    summary = fuzz(args.seconds, workdir, args.keep_going, args.leaks, args.libfuzzer, extension)
    report(summary)
    sys.exit(1 if summary.findings else 0)


if __name__ == "__main__":
    main()
