"""The README stays true: its two first commands, every command it shows, every config key."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(README) if kind == lang]


def commands() -> list[list[str]]:
    """Every `reach-otel ...` / `python -m reach_collector ...` line of the README's shell blocks."""
    found = []
    for body in blocks("bash"):
        for raw in body.replace("\\\n", " ").splitlines():
            line = raw.split("#", 1)[0].strip()
            for part in line.split("&&"):
                words = shlex.split(part.strip())
                words = [w for w in words if "=" not in w.split("/")[0] or w.startswith("-")]
                if words[:1] == ["reach-otel"] or words[:3] == ["python", "-m", "reach_collector"]:
                    found.append(words)
    return found


def test_readme_starts_with_the_two_commands() -> None:
    """The title, then straight away the block of the two one-line commands: nothing before them."""
    first = FENCE.search(README)
    assert first is not None and README.startswith("# reach-otel\n\n```bash\n")
    lines = [line for line in first.group(2).splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].endswith("reach-otel demo")
    ci = (ROOT / ".ci" / "run").read_text()
    assert lines[1] in ci  # CI runs exactly the README's test command


def run_help(words: list[str]) -> str:
    """`--help` of the deepest subcommand named in ``words``; returns the help text."""
    if words[0] == "reach-otel":
        base, rest = [sys.executable, "-m", "reach_otel"], words[1:]
    else:
        base, rest = [sys.executable, "-m", "reach_collector"], words[3:]
    path = []
    for word in rest:
        if word.startswith("-") or word.startswith(("$", ".", "/")) or re.fullmatch(r"[0-9a-f]{32}", word):
            break
        path.append(word)
        probe = subprocess.run([*base, *path, "--help"], capture_output=True, text=True, timeout=60)
        if probe.returncode != 0:
            path.pop()
            break
    out = subprocess.run([*base, *path, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (words, out.stderr)
    return out.stdout


def test_every_command_and_option_in_the_readme_exists() -> None:
    seen = commands()
    assert len(seen) >= 8
    for words in seen:
        text = run_help(words)
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            if option == "--":
                continue
            assert option in text, f"{' '.join(words)}: {option} is not an option"


def test_every_config_key_in_the_reference_is_accepted(tmp_path: Path) -> None:
    from reach_collector.config import load

    reference = next(b for b in blocks("yaml") if "server:" in b and "alerting:" in b)
    doc = yaml.safe_load(reference)
    assert {"server", "storage", "auth", "prices", "alerting", "time_zone", "users", "routing"} <= set(doc)
    path = tmp_path / "reach.yaml"
    path.write_text(reference)
    settings = load(str(path))
    assert settings.port == 4318
    assert settings.prices["gpt-4o-mini"]["output"] == 0.60


def test_the_on_call_example_in_the_readme_is_valid(tmp_path: Path) -> None:
    from reach_collector.alerting import from_settings
    from reach_collector.config import load

    block = next(b for b in blocks("yaml") if "escalation_policies:" in b and "server:" not in b)
    path = tmp_path / "oncall.yaml"
    path.write_text(block)
    setup = from_settings(load(str(path)))
    assert set(setup.users) == {"alice", "bob", "mgr"}


def test_the_bootstrap_says_what_it_takes() -> None:
    """The two commands' first step: a wrong extra is a usage line and exit 2, never a traceback."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bootstrap.py"), "everything"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and out.stderr.strip() == "usage: python3 bootstrap.py {all|dev|collector}"
    first = FENCE.search(README)
    assert first is not None
    for line in first.group(2).splitlines():
        assert line.startswith("python3 bootstrap.py "), line  # a venv in the same line (PEP 668)
