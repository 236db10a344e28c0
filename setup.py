"""Package discovery: the collector's source folder `collector/` installs as `reach_collector`.

Everything else about the distribution lives in pyproject.toml.
"""

from setuptools import find_packages, setup

_library = find_packages(include=["reach_otel", "reach_otel.*"])
_collector = ["reach_collector"] + [f"reach_collector.{name}" for name in find_packages("collector")]

setup(
    packages=_library + _collector,
    package_dir={"reach_collector": "collector"},
)
