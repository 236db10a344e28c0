"""Package discovery: the collector's source folder `collector/` installs as `reach_collector`;
and the collector's optional compiled ingest path.

Everything else about the distribution lives in pyproject.toml. The extension is optional: where
no C compiler is found the build goes on without it and the collector decodes in pure Python.
"""

from setuptools import Extension, find_packages, setup

_library = find_packages(include=["reach_otel", "reach_otel.*"])
_collector = ["reach_collector"] + [f"reach_collector.{name}" for name in find_packages("collector")]

setup(
    packages=_library + _collector,
    package_dir={"reach_collector": "collector"},
    ext_modules=[
        Extension(
            "reach_collector.ingest._fastflat",
            ["collector/ingest/_fastflat.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ],
)
