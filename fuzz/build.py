"""Builds ``reach_collector/ingest/_fastflat.c`` for fuzzing, into ``fuzz/build/<mode>/`` — never over the
in-place build the collector and the other tests import.

Two modes, from the same source and the running interpreter's Python headers:
- ``sanitize`` (default): AddressSanitizer + UndefinedBehaviorSanitizer + libFuzzer's coverage
  instrumentation (``-fsanitize=address,undefined,fuzzer-no-link``); its runtime is atheris's
  ``asan_with_fuzzer.so``, preloaded by ``run.py``.
- ``coverage``: clang's source-based coverage (``-fprofile-instr-generate -fcoverage-mapping``), for
  ``coverage.py`` to replay a corpus through and report line coverage with llvm-cov.

A build is redone only when the source, the flags or the compiler changed (``stamp`` beside the .so).

    python fuzz/build.py [--coverage] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
SOURCE: Final = ROOT / "collector" / "reach_collector" / "ingest" / "_fastflat.c"
BUILD: Final = ROOT / "fuzz" / "build"
FLAGS: Final = {
    "sanitize": ["-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined,fuzzer-no-link"],
    "coverage": ["-g", "-O0", "-fprofile-instr-generate", "-fcoverage-mapping"],
}


def clang() -> str:
    """The clang to build with: ``$CC`` when it is a clang, else the first clang on PATH."""
    for name in (os.environ.get("CC", ""), "clang", *(f"clang-{v}" for v in range(20, 13, -1))):
        if name and "clang" in Path(name).name and shutil.which(name):
            return str(shutil.which(name))
    raise SystemExit("clang not found: install it (Debian: apt-get install clang)")


def clang_major(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"clang version (\d+)", out)
    return found.group(1) if found else ""


def extension(folder: str) -> Path:
    """Where the build in ``fuzz/build/<folder>`` is (or will be)."""
    return BUILD / folder / f"_fastflat{sysconfig.get_config_var('EXT_SUFFIX')}"


def build(
    mode: str = "sanitize", force: bool = False, extra: Sequence[str] = (), folder: str | None = None
) -> Path:
    """The extension built in ``mode``, compiling it first when it is missing or out of date;
    ``extra`` flags and another ``folder`` make a variant (the tests build one with a planted bug)."""
    cc = clang()
    out = extension(folder or mode)
    command = [
        cc,
        "-shared",
        "-fPIC",
        *FLAGS[mode],
        *extra,
        f"-I{sysconfig.get_paths()['include']}",
        str(SOURCE),
        "-o",
        str(out),
    ]
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(" ".join([*command, clang_major(cc)]).encode())
    stamp = out.with_name("stamp")
    if not force and out.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and moved into place: a run that has the old build loaded keeps its file.
    partial = out.with_name(f".{out.name}.{os.getpid()}")
    done = subprocess.run([*command[:-1], str(partial)], capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SystemExit(f"build failed ({' '.join(command)}):\n{done.stderr}")
    if done.stderr.strip():
        print(done.stderr, file=sys.stderr)
    os.replace(partial, out)
    stamp.write_text(digest.hexdigest())
    print(f"built {out.relative_to(ROOT)} ({mode})", file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--coverage", action="store_true", help="the coverage build instead")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args()
    print(build("coverage" if args.coverage else "sanitize", force=args.force))


if __name__ == "__main__":
    main()
