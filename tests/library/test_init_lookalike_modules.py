"""init() patches a library only when the module imported is that library: an app's own module
that shares its name (an ``agents.py`` beside the script) is left alone, with nothing on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

APP = """
import reach_otel

reach_otel.init(service_name="lookalike", endpoint="http://127.0.0.1:9")
import agents  # the app's own module, not the OpenAI Agents SDK
print("answer", agents.ANSWER)
import sys
print("applied", "reach_otel.instrumentation.openai_agents" in sys.modules)
"""


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "app.py"], cwd=folder, capture_output=True, text=True, timeout=120)


def test_an_app_module_named_like_a_library_is_not_patched(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text("ANSWER = 42\n")
    (tmp_path / "app.py").write_text(APP)
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "answer 42" in result.stdout
    assert "applied False" in result.stdout
    assert "Traceback" not in result.stderr and "could not instrument" not in result.stderr


def test_the_app_module_already_imported_before_init_is_left_alone_too(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text("ANSWER = 7\n")
    (tmp_path / "app.py").write_text("import agents\n" + APP)
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "answer 7" in result.stdout and "applied False" in result.stdout
    assert "Traceback" not in result.stderr
