"""The compiled OTLP decoder under its fuzz target (``fuzz/``): the seed corpus and the saved
reproducers agree on the normal build, the oracle catches a decoder that breaks its invariants, and
60 s of coverage-guided fuzzing under AddressSanitizer, UndefinedBehaviorSanitizer and
LeakSanitizer find nothing (and do find bugs planted in a build of the decoder).

The sanitized run needs clang (Debian's, installed here when missing and running as root) and
atheris (from PyPI, installed when missing); on CI a missing prerequisite fails, elsewhere it skips.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest
from debian_packages import install_lock

from reach_collector.ingest import fast

ROOT: Final = Path(__file__).resolve().parents[2]
FUZZ: Final = ROOT / "fuzz"
FUZZ_SECONDS: Final = 60
# A planted-bug run ends on its finding, or after this many inputs (twice run.py's LEAK_CHECK_EVERY, so
# the leak check runs whatever the machine's speed); the time is only a bound for a run that hangs.
PLANTED_RUNS: Final = 4_000
PLANTED_SECONDS: Final = 600
# Far below what the target runs (thousands a second): only a run that barely ran falls short.
MIN_EXECUTIONS: Final = 5_000
ON_CI: Final = os.environ.get("CI", "").lower() in ("true", "1")


def _unavailable(reason: str) -> None:
    if ON_CI:
        pytest.fail(f"fuzzing prerequisite unavailable on CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _run(command: list[str], timeout: float) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        _unavailable(f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()[-500:]}")


def _ensure_prerequisites() -> None:
    """clang and atheris, installed when missing (clang only as root, from Debian)."""
    if shutil.which("clang") is None or importlib.util.find_spec("atheris") is None:
        with install_lock():  # one install at a time across the test processes
            _install_prerequisites()


def _install_prerequisites() -> None:
    importlib.invalidate_caches()  # another process may have installed atheris while this one waited
    if shutil.which("clang") is None:
        if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
            _unavailable("clang is missing and apt-get as root is not available")
        _run(["apt-get", "update"], timeout=600)
        _run(["apt-get", "install", "-y", "clang"], timeout=900)
        if shutil.which("clang") is None:
            _unavailable("installed clang but it is still not on PATH")
    if importlib.util.find_spec("atheris") is None:
        _run([sys.executable, "-m", "pip", "install", "atheris"], timeout=600)
        importlib.invalidate_caches()
        if importlib.util.find_spec("atheris") is None:
            _unavailable("pip installed atheris but it does not import")


@pytest.fixture(scope="module")
def decoder() -> ModuleType:
    """``fuzz/decoder.py`` on the normal in-place build (the one this process already imported)."""
    if fast._fastflat is None:
        if ON_CI:
            pytest.fail("the _fastflat extension is not built; CI must build it", pytrace=False)
        pytest.skip("the _fastflat extension is not built (no compiler at install)")
    if os.environ.get("REACH_FUZZ_EXTENSION"):
        pytest.fail("REACH_FUZZ_EXTENSION is set: unset it to test the normal build", pytrace=False)
    spec = importlib.util.spec_from_file_location("fuzz_decoder", FUZZ / "decoder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _fast_path_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REACH_COLLECTOR_PURE_PYTHON", raising=False)


def test_seed_corpus_and_reproducers_agree_on_the_normal_build(decoder: ModuleType) -> None:
    files = list(decoder.inputs([str(FUZZ / "corpus"), str(FUZZ / "crashes")]))
    assert len(files) >= 40, "the seed corpus is missing (python fuzz/seeds.py writes it)"
    found, taken = [], 0
    for file in files:
        try:
            taken += decoder.judge(file.read_bytes()) is not None
        except decoder.Finding as finding:
            found.append(f"{file.relative_to(ROOT)}: {finding.signature}")
    assert not found, f"{len(found)} finding(s) on the normal build:\n" + "\n".join(found)
    # Most seeds are requests the compiled path takes itself, so their rows were compared.
    assert taken >= len(files) // 2, f"the compiled path took only {taken} of {len(files)} inputs"


def test_the_oracle_catches_a_decoder_that_breaks_its_invariants(
    decoder: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, other = ((FUZZ / "corpus" / name).read_bytes() for name in ("compact.pb", "realistic-1-trace.pb"))
    batch = fast.flatten_protobuf(one)
    assert batch is not None
    # A compiled path that answers one body's batch for any body: it takes invalid bodies, and
    # for another valid body its batch differs from the reference's.
    monkeypatch.setattr(fast, "flatten_protobuf", lambda body: batch)
    with pytest.raises(decoder.Finding, match="took-invalid"):
        decoder.judge(b"\x0a\x05\x12\x03\x12\x01\xff")  # a span field that is not a message
    with pytest.raises(decoder.Finding, match="differs"):
        decoder.judge(other)

    def failing(body: bytes) -> Any:
        fast.log.warning("the compiled decoder failed", exc_info=ValueError("simulated"))
        return None

    monkeypatch.setattr(fast, "flatten_protobuf", failing)
    with pytest.raises(decoder.Finding, match="raised: ValueError: simulated"):
        decoder.judge(one)


def _fuzz_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REACH_FUZZ_")}
    env.pop("REACH_COLLECTOR_PURE_PYTHON", None)
    return env


# Bugs planted in a build of the decoder by a header included first, each of which the sanitized run
# must report, with the input that showed it:
# - every growth of a buffer to 512 bytes or more gets half of what it asked for (configure() only
#   allocates short names), so writing the rows of a request overflows it (AddressSanitizer);
# - nothing the decoder allocates is freed (LeakSanitizer, in run.py --leaks).
PLANTED: Final = {
    "overflow": (
        "#include <stdlib.h>\n#define realloc(p, n) realloc(p, (n) >= 512 ? (n) / 2 : (n))\n",
        "asan ",
    ),
    "leak": ("#include <stdlib.h>\n#define free(p) ((void)(p))\n", "leak: "),
}


@pytest.mark.parametrize("bug", PLANTED)
def test_the_sanitized_run_reports_a_planted_bug(bug: str, tmp_path: Path) -> None:
    _ensure_prerequisites()
    header, expected = PLANTED[bug]
    (tmp_path / "planted.h").write_text(header)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import build; "
        "print(build.build('sanitize', True, ['-include', sys.argv[2]], sys.argv[3]))"
    )
    built = subprocess.run(
        [sys.executable, "-c", script, str(FUZZ), str(tmp_path / "planted.h"), f"planted-{bug}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    extension = built.stdout.strip().splitlines()[-1]
    work = tmp_path / "work"
    command = [
        *(sys.executable, str(FUZZ / "run.py"), "--seconds", str(PLANTED_SECONDS), "--leaks"),
        *("--workdir", str(work), "--extension", extension, "--", f"-runs={PLANTED_RUNS}"),
    ]
    done = subprocess.run(
        command, env=_fuzz_env(), capture_output=True, text=True, timeout=PLANTED_SECONDS + 120
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    summary = json.loads((work / "summary.json").read_text())
    signatures = [f["signature"] for f in summary["findings"]]
    assert len(signatures) == 1 and signatures[0].startswith(expected), signatures
    reproducer = summary["findings"][0]["input"]
    assert reproducer, "libFuzzer saved no reproducer"
    assert Path(reproducer).stat().st_size > 0, f"the reproducer {reproducer} is empty"
    assert "_fastflat.c" in (work / "fuzz.log").read_text(errors="replace")  # the report's stack


@pytest.mark.slow
def test_sixty_seconds_of_fuzzing_under_sanitizers_find_nothing(tmp_path: Path) -> None:
    """The bounded fuzz run: build the sanitized extension, fuzz for 60 s with ASan, UBSan and
    LeakSanitizer, fail on any finding."""
    _ensure_prerequisites()
    env = _fuzz_env()
    built = subprocess.run(
        [sys.executable, str(FUZZ / "build.py")], env=env, capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, f"sanitized build failed:\n{built.stdout}{built.stderr}"
    command = [
        sys.executable,
        str(FUZZ / "run.py"),
        "--seconds",
        str(FUZZ_SECONDS),
        "--leaks",
        "--workdir",
        str(tmp_path),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=FUZZ_SECONDS + 300)
    summary_file = tmp_path / "summary.json"
    assert summary_file.exists(), f"the fuzz run wrote no summary:\n{done.stdout}\n{done.stderr[-3000:]}"
    summary = json.loads(summary_file.read_text())
    findings = [f"{f['signature']} (input {f['input']})" for f in summary["findings"]]
    log = (tmp_path / "fuzz.log").read_text(errors="replace")
    assert not findings, (
        f"the fuzzer found {len(findings)} problem(s); reproduce with fuzz/run.py --reproduce INPUT:\n"
        + "\n".join(findings)
        + f"\n--- end of the log ---\n{log[-4000:]}"
    )
    assert done.returncode == 0, f"{done.stdout}\n{log[-3000:]}"
    assert summary["executions"] >= MIN_EXECUTIONS, summary
    assert summary["coverage"] > 0, summary
    print(done.stdout.strip())
