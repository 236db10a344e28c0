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
from datetime import date, datetime
from typing import Any, ClassVar, Final, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BeforeValidator, ConfigDict, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo
from pydantic_core import ArgsKwargs

from reach_collector.text.durations import DurationError, parse_duration_s
from reach_collector.text.redact_url import redact_url

__all__ = [
    "SECTION",
    "ConfigError",
    "Invalid",
    "Named",
    "Section",
    "as_mapping",
    "between",
    "config_error",
    "count",
    "did_you_mean",
    "duration",
    "flag",
    "invalid_all",
    "keyed",
    "listed",
    "name",
    "names",
    "non_negative",
    "one_of",
    "optional",
    "parse_duration",
    "positive_duration",
    "read",
    "read_each",
    "section_keys",
    "stamp",
    "text_or_none",
    "unknown_key",
    "url",
    "validate",
    "validate_here",
    "whole",
    "zone",
]

T = TypeVar("T")
S = TypeVar("S", bound="Section")
N = TypeVar("N", bound="Named")


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


def optional(reader: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``reader``, with null for "not given" (a field whose default is None)."""
    return lambda value: None if value is None else reader(value)


# --- the readers ---------------------------------------------------------------------------------


def duration(value: Any) -> float:
    """``30s`` / ``5m`` / ``1h`` / ``7d`` / ``1w`` / ``250ms`` or a number of seconds → seconds: the
    one duration parser (text.durations), taking bare numbers as seconds."""
    try:
        return parse_duration_s(value, numbers=True, form="a duration like 30s, 5m, 1h, 7d")
    except DurationError as exc:
        raise Invalid(exc.reason) from None


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


def positive_duration(value: Any) -> float:
    seconds = duration(value)
    if seconds == 0:
        raise Invalid("must be greater than 0")
    return seconds


def between(low: float, high: float) -> Callable[[Any], float]:
    """The reader of a number from ``low`` to ``high``."""

    def reader(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise Invalid(f"expected a number between {low:g} and {high:g}, got {value!r}")
        return float(value)

    return reader


def count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"expected a non-negative integer, got {value!r}")
    return value


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r}")
    return value


def one_of(*allowed: str) -> Callable[[Any], str]:
    """The reader of one of ``allowed`` (a severity, ``per``)."""

    def reader(value: Any) -> str:
        if value not in allowed:
            raise Invalid(f"expected one of {', '.join(allowed)}, got {value!r}")
        return str(value)

    return reader


def url(value: Any) -> str | None:
    """An http(s) URL, without its trailing slash; a bad one is shown without its secrets."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        shown = redact_url(value) if isinstance(value, str) else value  # a typo may still hold a token
        raise Invalid(f"expected an http:// or https:// URL or null, got {shown!r}")
    return value.rstrip("/")


def names(value: Any) -> tuple[str, ...]:
    """A non-empty list of names (users, labels)."""
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        unquoted = isinstance(value, (list, tuple)) and any(isinstance(v, bool) for v in value)
        hint = " (quote yes, no, on, off: unquoted, YAML reads them as true or false)" if unquoted else ""
        raise Invalid(f"expected a non-empty list of names, got {value!r}{hint}")
    return tuple(value)


def name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"expected a name, got {value!r}")
    return value


def stamp(value: Any) -> datetime:
    """A date-time (``2026-01-05T09:00:00``, a date, with or without an offset)."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
    raise Invalid(f"expected a date-time like 2026-01-05T09:00:00, got {value!r}")


def listed(value: Any) -> Any:
    """A list (absent or null: empty); its items are read by the field's type."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise Invalid(f"expected a list, got {type(value).__name__}")
    return value


def zone(value: Any) -> str:
    """An IANA time zone name (``UTC``, ``Europe/Berlin``)."""
    if not isinstance(value, str):
        raise Invalid(f"expected an IANA zone name like UTC or Europe/Berlin, got {value!r}")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"unknown time zone {value!r}") from None
    return value


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """``; did you mean X?`` with the known name nearest ``given``, or nothing when none is near."""
    close = difflib.get_close_matches(given, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def unknown_key(name: str, known: Iterable[str]) -> str:
    """The reason an unknown key is refused: what is known, and the near name if there is one."""
    known = sorted(known)
    return f"unknown key (expected one of {', '.join(known)}){did_you_mean(name, known)}"


# --- keyed forms, for values read outside the tree -------------------------------------------------


def parse_duration(value: Any, key: str = "duration") -> float:
    return keyed(duration, value, key)


# --- the tree ------------------------------------------------------------------------------------


# How every section is declared: ``@dataclass(frozen=True, config=SECTION)``, a subclass of
# ``Section``. Fields take their key as written in the file as ``validation_alias`` (``for``); code
# builds them by field name (``for_s``), positionally too.
SECTION: Final = ConfigDict(extra="forbid", populate_by_name=True)


@dataclass(frozen=True, config=SECTION)
class Section:
    """A mapping of the config with known keys: absent or null is every default; a key it does not
    know is refused, naming the keys it does. Built in code, it is checked like a file's."""

    # Keys a subclass takes besides its fields, dropped before its fields are read (``type:``).
    other_keys: ClassVar[frozenset[str]] = frozenset()
    # Fields given by the key the section is under (its ``name``), not written in it.
    from_key: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if isinstance(value, (ArgsKwargs, cls)):  # built in code, by field name
            return value
        doc = as_mapping(value)
        known = section_keys(cls) | cls.other_keys
        for name in doc:
            if name not in known:
                raise Invalid(unknown_key(name, known - cls.from_key), at=name)
        return {k: v for k, v in doc.items() if k not in cls.other_keys}


class Named(Section):
    """A section under a mapping of them whose key is its ``name`` (a user, a policy, a rule)."""

    from_key = frozenset({"name"})

    @classmethod
    def under(cls: type[N], key: str, spec: Mapping[str, Any]) -> N:
        """The entry ``spec`` under ``key``, read with ``key`` as its name (a ``name:`` of its own
        is refused as the unknown key it is)."""
        if "name" in spec:
            raise Invalid(unknown_key("name", (section_keys(cls) | cls.other_keys) - cls.from_key), at="name")
        return validate_here(cls, {**spec, "name": key})


def section_keys(cls: type[Section]) -> frozenset[str]:
    """The keys of a section as written in the file."""
    fields: dict[str, FieldInfo] = getattr(cls, "__pydantic_fields__")  # noqa: B009 (set by pydantic)
    return frozenset(
        f.validation_alias if isinstance(f.validation_alias, str) else n for n, f in fields.items()
    )


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def validate(cls: type[S], doc: Any, source: str | None = None) -> S:
    """``doc`` read into the section ``cls``; a ``ConfigError`` naming every problem otherwise."""
    try:
        return validate_here(cls, doc)
    except ValidationError as exc:
        raise config_error(exc, source) from None


def validate_here(cls: type[S], doc: Any) -> S:
    """``doc`` read into ``cls`` inside a reader of the tree (its errors join the tree's)."""
    adapter = _ADAPTERS.get(cls) or _ADAPTERS.setdefault(cls, TypeAdapter(cls))
    read_: S = adapter.validate_python(doc)
    return read_


def _problem(loc: tuple[str | int, ...], exc: Invalid, value: Any) -> Any:
    return {"type": "value_error", "loc": loc, "input": value, "ctx": {"error": exc}}


def invalid_all(problems: Iterable[tuple[str, Invalid]], value: Any) -> ValidationError:
    """Several problems of one value at once, each at its key below it (``""``: the value's own)."""
    return ValidationError.from_exception_data(
        "config", [_problem((at,) if at else (), exc, value) for at, exc in problems]
    )


def read_each(value: Any, reader: Callable[[str, Any], T]) -> dict[str, T]:
    """A mapping whose values ``reader(key, value)`` reads, each by its own kind (the rules): every
    problem is reported, at its key."""
    out: dict[str, T] = {}
    problems: list[Any] = []
    for key, item in as_mapping(value).items():
        try:
            out[key] = reader(key, item)
        except Invalid as exc:
            problems.append(_problem((key,), exc, item))
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                kept = {k: error[k] for k in ("type", "input", "ctx") if k in error}
                problems.append({**kept, "loc": (key, *error["loc"])})
    if problems:
        raise ValidationError.from_exception_data("config", problems)
    return out


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
    """A key path: ``alerting.rules.Slo.windows[0]``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _join(path: str, below: str) -> str:
    if not below:
        return path
    if not path or below.startswith("["):
        return f"{path}{below}"
    return f"{path}.{below}"
