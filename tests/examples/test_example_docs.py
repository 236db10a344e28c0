"""Every example folder explains itself: a README that the code's pointers lead to, listed in the index."""

from __future__ import annotations

import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _folders() -> list[Path]:
    return sorted(p for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def test_every_example_folder_has_a_readme_in_the_index() -> None:
    index = (EXAMPLES / "README.md").read_text()
    for folder in _folders():
        assert (folder / "README.md").is_file(), f"{folder.name}/ has no README.md"
        assert f"`{folder.name}/`" in index, f"examples/README.md does not list {folder.name}/"


def test_readmes_that_code_points_to_exist() -> None:
    for source in EXAMPLES.rglob("*.py"):
        if "README" in source.read_text():
            assert (source.parent / "README.md").is_file(), f"{source} points to a README that is missing"


def test_the_index_says_how_to_start_the_fake_llm_server() -> None:
    index = (EXAMPLES / "README.md").read_text()
    assert re.search(r"python examples/fake_llm_server\.py --port \d+", index)
    assert "OPENAI_BASE_URL=" in index
