"""The readers every configuration section is checked with, and the typed tree they build.

A reader takes one value and returns it typed or raises ``Invalid`` (the reason, without the key).
The config's sections are pydantic models (``Section``) whose fields read their values with these
readers (``read``), so a value means the same in a file, in the environment and on the command line;
``config_error`` turns a failed validation into one ``ConfigError`` line per problem, each naming the
key path, the reason and, where it helps, the value (``alerting.rules.X.for: expected a duration
like 30s, 5m, 1h, 7d; got 'soon'``). ``keyed`` gives a reader's verdict on a value read outside the
tree (an environment variable, a flag) the same wording under that name.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from reach_collector.text.durations import DurationError, parse_duration_s

__all__ = [
    "ConfigError",
    "Invalid",
    "Section",
    "as_mapping",
    "config_error",
    "duration",
    "integer",
    "keyed",
    "mapping",
    "non_negative",
    "number",
    "only",
    "optional_str",
    "parse_duration",
    "read",
    "text_or_none",
    "unknown_key",
    "whole",
]

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key and the reason."""


class Invalid(ValueError):
    """Why a value cannot be used, without its key; ``at`` is a key path below the value's own
    (``layers[0].end``) when a check of a whole section blames one of its keys."""

    def __init__(self, reason: str, at: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.at = at


def keyed(reader: Callable[[Any], T], value: Any, key: str) -> T:
    """``reader(value)``, its ``Invalid`` raised as a ``ConfigError`` naming ``key``."""
    try:
        return reader(value)
    except Invalid as exc:
        raise ConfigError(f"{_join(key, exc.at)}: {exc.reason}") from None


def read(reader: Callable[[Any], Any]) -> BeforeValidator:
    """A field of the tree read with ``reader`` (given only when the key is present)."""
    return BeforeValidator(reader)


# --- the readers ---------------------------------------------------------------------------------


def duration(value: Any) -> float:
    """``30s`` / ``5m`` / ``1h`` / ``7d`` / ``1w`` / ``250ms`` or a number of seconds → seconds."""
    if isinstance(value, bool):
        raise Invalid(f"expected a duration like 30s, 5m, 1h, 7d; got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise Invalid("must not be negative")
        if not value <= 1e12:  # NaN and infinity too: a number of seconds, not 31 700 years
            raise Invalid(f"expected at most 1e12 seconds; got {value!r:.60}")
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration_s(value, "duration")
        except DurationError:
            pass
    raise Invalid(f"expected a duration like 30s, 5m, 1h, 7d; got {value!r:.60}")


def as_mapping(value: Any) -> Mapping[str, Any]:
    """A section: a mapping with string keys (absent or null: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid(f"expected a mapping, got {type(value).__name__}")
    for k in value:
        if not isinstance(k, str):
            raise Invalid(f"keys must be strings, got {k!r}")
    return value


def whole(low: int, high: int) -> Callable[[Any], int]:
    """The reader of an integer from ``low`` to ``high``."""

    def reader(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise Invalid(f"expected an integer between {low} and {high}, got {value!r}")
        return value

    return reader


def non_negative(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise Invalid(f"expected a non-negative number, got {value!r}")
    return float(value)


def text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise Invalid(f"expected a non-empty string or null, got {value!r}")
    return value


def unknown_key(name: str, known: Iterable[str]) -> str:
    """The reason an unknown key is refused: what is known, and the near name if there is one."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown key (expected one of {', '.join(known)}){hint}"


# --- keyed forms, for values read outside the tree -------------------------------------------------


def parse_duration(value: Any, key: str = "duration") -> float:
    return keyed(duration, value, key)


def mapping(value: Any, key: str) -> Mapping[str, Any]:
    return keyed(as_mapping, value, key)


def only(section: Mapping[str, Any], key: str, allowed: set[str]) -> None:
    for name in section:
        if name not in allowed:
            raise ConfigError(f"{key}.{name}: {unknown_key(name, allowed)}")


def integer(value: Any, key: str, low: int, high: int) -> int:
    return keyed(whole(low, high), value, key)


def number(value: Any, key: str) -> float:
    return keyed(non_negative, value, key)


def optional_str(value: Any, key: str) -> str | None:
    return keyed(text_or_none, value, key)


# --- the tree ------------------------------------------------------------------------------------


class Section(BaseModel):
    """A mapping of the config with known keys (their aliases, as written in the file): absent or
    null is every default; a key it does not know is refused, naming the keys it does."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # Keys a subclass takes besides its fields (handed on to another section's reader).
    other_keys: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        doc = as_mapping(value)
        known = {field.alias or name for name, field in cls.model_fields.items()} | cls.other_keys
        for name in doc:
            if name not in known:
                raise Invalid(unknown_key(name, known), at=name)
        return {k: v for k, v in doc.items() if k not in cls.other_keys}


_MAPPING_ERRORS = frozenset({"model_type", "model_attributes_type", "dict_type", "dataclass_type"})


def config_error(exc: ValidationError, source: str | None = None) -> ConfigError:
    """One line per problem: ``source: key.path: reason``."""
    lines = []
    for error in exc.errors(include_url=False):
        path = _path(error["loc"])
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, Invalid):
            path, reason = _join(path, cause.at), cause.reason
        elif error["type"] == "missing":
            reason = "required"
        elif error["type"] in _MAPPING_ERRORS:
            reason = f"expected a mapping, got {type(error['input']).__name__}"
        else:
            reason = f"{error['msg']}; got {error['input']!r:.60}"
        line = f"{path or '(top level)'}: {reason}"
        lines.append(f"{source}: {line}" if source else line)
    return ConfigError("\n".join(lines))


def _path(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _join(path: str, below: str) -> str:
    if not below:
        return path
    if not path or below.startswith("["):
        return f"{path}{below}"
    return f"{path}.{below}"
