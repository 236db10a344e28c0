"""Make ``.venv`` beside this file and install reach-otel into it, editable, with an extra.

    python3 bootstrap.py all     # what `reach-otel demo` needs
    python3 bootstrap.py dev     # what the tests need

Only the standard library, so it runs on a machine with nothing but ``python3``. Installing into a
virtual environment of the project's own is what PEP 668 asks for on systems whose Python is
managed by the distribution (Debian, Ubuntu), where ``pip install`` outside one is refused. Where
``python3 -m venv`` cannot give the environment a pip (Debian and Ubuntu ship ``ensurepip`` apart,
in ``python3-venv``), the environment is made without one, and pip is put in it by the machine's
own pip if there is one, else from pip's wheel on the package index. An existing ``.venv`` is
reused: running this again only installs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = HERE / ".venv"
EXTRAS = ("all", "dev", "collector")
PIP_INDEX = "https://pypi.org/pypi/pip/json"


def _python(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")


def _has_pip(python: Path) -> bool:
    return subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True).returncode == 0


def _pip_from_the_index(python: Path) -> None:
    """Put pip in the environment from pip's own wheel on the package index (a wheel runs as is)."""
    with urllib.request.urlopen(PIP_INDEX, timeout=60) as answer:
        files = json.load(answer)["urls"]
    wheel = next(f for f in files if f["filename"].endswith("py3-none-any.whl"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / wheel["filename"]
        url = urllib.parse.urljoin(PIP_INDEX, wheel["url"])  # a mirror may give it relative
        with urllib.request.urlopen(url, timeout=120) as answer, path.open("wb") as out:
            shutil.copyfileobj(answer, out)
        subprocess.run([str(python), f"{path}/pip", "install", "--quiet", str(path)], check=True)


def make_env(env: Path) -> Path:
    """``env``'s interpreter, the environment made first if needed, with a pip in it."""
    python = _python(env)
    if not python.exists():
        print(f"bootstrap: making the virtual environment {env.name}/", flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(env)
        except (subprocess.CalledProcessError, OSError):  # no ensurepip here: make it without pip
            shutil.rmtree(env, ignore_errors=True)
            venv.EnvBuilder(with_pip=False).create(env)
    if not _has_pip(python):
        print("bootstrap: this Python gives virtual environments no pip; adding one", flush=True)
        mine = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "pip"]
        if not _has_pip(Path(sys.executable)) or subprocess.run(mine).returncode != 0:
            _pip_from_the_index(python)
    return python


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in EXTRAS:
        print(f"usage: python3 bootstrap.py {{{'|'.join(EXTRAS)}}}", file=sys.stderr)
        return 2
    try:
        python = make_env(ENV)
    except Exception as exc:  # one line that says what failed, not a traceback
        print(f"bootstrap: could not make {ENV.name}/ with a pip: {exc}", file=sys.stderr)
        return 1
    print(f"bootstrap: installing reach-otel[{argv[0]}] into {ENV.name}/", flush=True)
    install = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-e", f".[{argv[0]}]"]
    return subprocess.run(install, cwd=HERE).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
