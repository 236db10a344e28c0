"""Package discovery: the library `reach_otel/` at the top, the collector `reach_collector` inside
`collector/` (so `reach_collector.store` is `collector/reach_collector/store/`); and the collector's
optional compiled ingest path.

Everything else about the distribution lives in pyproject.toml. The extension is optional: where
no C compiler is found the build goes on without it and the collector decodes in pure Python.
"""

from setuptools import Extension, find_packages, setup

_library = find_packages(include=["reach_otel", "reach_otel.*"])
_collector = find_packages("collector", include=["reach_collector", "reach_collector.*"])

setup(
    packages=_library + _collector,
    package_dir={"reach_collector": "collector/reach_collector"},
    ext_modules=[
        Extension(
            "reach_collector.ingest._fastflat",
            ["collector/reach_collector/ingest/_fastflat.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ],
)
