"""Line coverage of ``_fastflat.c`` reached by a fuzzing corpus: the corpus (``WORKDIR/corpus`` as
``run.py`` left it, plus the seeds and reproducers) is replayed through the coverage build
(``build.py --coverage``, clang's source-based coverage) and llvm-cov reports on the source.

    python fuzz/coverage.py [--workdir DIR] [--html]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

import build

FUZZ: Final = Path(__file__).resolve().parent
COLUMNS: Final = ("regions", "functions", "lines", "branches")


def llvm_tool(name: str) -> str:
    """``llvm-cov``/``llvm-profdata`` of the clang that built the extension (their formats must match)."""
    major = build.clang_major(build.clang())
    for candidate in (f"{name}-{major}", name):
        if shutil.which(candidate):
            return str(shutil.which(candidate))
    raise SystemExit(f"{name} not found: install llvm (Debian: apt-get install llvm)")


def measure(workdir: Path, html: bool) -> dict[str, tuple[int, int]]:
    """(covered, total) of each of COLUMNS for _fastflat.c."""
    extension = build.build("coverage")
    profiles = workdir / "coverage"
    shutil.rmtree(profiles, ignore_errors=True)
    profiles.mkdir(parents=True)
    env = {**os.environ, "REACH_FUZZ_EXTENSION": str(extension)}
    env["LLVM_PROFILE_FILE"] = str(profiles / "%p.profraw")
    inputs = [str(p) for p in (workdir / "corpus", FUZZ / "corpus", FUZZ / "crashes") if p.is_dir()]
    # Findings are reported by run.py; here they only make the exit status 1.
    subprocess.run([sys.executable, str(FUZZ / "decoder.py"), "--replay", *inputs], env=env, check=False)
    merged = profiles / "merged.profdata"
    raw = sorted(str(p) for p in profiles.glob("*.profraw"))
    if not raw:
        raise SystemExit("the replay wrote no coverage profile")
    subprocess.run([llvm_tool("llvm-profdata"), "merge", "-sparse", *raw, "-o", str(merged)], check=True)
    cov = llvm_tool("llvm-cov")
    common = [str(extension), f"-instr-profile={merged}", str(build.SOURCE)]
    table = subprocess.run([cov, "report", *common], capture_output=True, text=True, check=True).stdout
    if html:
        subprocess.run([cov, "show", *common, "-format=html", f"-output-dir={profiles / 'html'}"], check=True)
    return parse_report(table)


def parse_report(table: str) -> dict[str, tuple[int, int]]:
    """llvm-cov report's TOTAL row: for each kind of column, its count, the missed count, a percentage."""
    lines = table.splitlines()
    words = next(line for line in lines if line.startswith("Filename")).split()
    kinds = [w.lower() for i, w in enumerate(words) if w[0].isupper() and words[i - 1] != "Missed"]
    kinds = [k for k in kinds if k in (*COLUMNS, "instantiations")]
    total = next(line for line in lines if line.startswith("TOTAL")).split()[1:]
    out = {}
    for n, kind in enumerate(kinds):
        count, missed = int(total[3 * n]), int(total[3 * n + 1])
        if kind in COLUMNS:
            out[kind] = (count - missed, count)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=FUZZ / "work", help="as given to run.py")
    parser.add_argument("--html", action="store_true", help="also WORKDIR/coverage/html, line by line")
    args = parser.parse_args()
    found = measure(args.workdir.resolve(), args.html)
    for column, (covered, count) in found.items():
        print(f"{column:10} {covered:5} / {count:5}  {100 * covered / max(count, 1):5.1f} %")


if __name__ == "__main__":
    main()
