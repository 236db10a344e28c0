"""init() patches a library only when the module imported is that library: an app's own module
that shares its name (an ``agents.py`` beside the script) is left alone, with nothing on stderr;
the library itself in a version the instrumentation does not support is one warning line."""

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


def test_a_library_in_a_version_not_supported_is_one_warning_line_not_silence(tmp_path: Path) -> None:
    """An MCP SDK 1.x (what CrewAI pins) installed beside the app: its calls cannot be traced, and
    the app is told so in one line naming the version found and the versions traced."""
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("VERSION = 1\n")
    dist = tmp_path / "mcp-1.9.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.9.0\n")
    (tmp_path / "app.py").write_text(
        'import reach_otel\nreach_otel.init(service_name="old-mcp", endpoint="http://127.0.0.1:9")\n'
        'import mcp\nprint("version", mcp.VERSION)\n'
    )
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "version 1" in result.stdout
    warned = [line for line in result.stderr.splitlines() if "mcp 1.9.0 is installed" in line]
    assert len(warned) == 1, result.stderr
    assert "mcp >= 2.0" in warned[0] and "not traced" in warned[0]
    assert "Traceback" not in result.stderr
