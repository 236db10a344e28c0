"""A mistyped option is answered by the subcommand it was given to — its usage, and the option it
was probably meant to be — and a search limit the collector would cut is refused, not clamped."""

from __future__ import annotations

import pytest

from reach_otel.cli import main


def test_a_mistyped_option_names_the_subcommand_and_the_near_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["traces", "--sinse", "15m"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: reach-otel traces ")
    assert "unrecognized arguments: --sinse 15m (did you mean --since?)" in err


def test_a_nested_subcommand_says_its_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["alerts", "replay", "--since", "1h", "--untill", "0m"])
    err = capsys.readouterr().err
    assert err.startswith("usage: reach-otel alerts replay ")
    assert "unrecognized arguments: --untill 0m (did you mean --until?)" in err


def test_an_argument_near_nothing_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["traces", "--zzzzzz"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzzzzz\n" in err and "did you mean" not in err


@pytest.mark.parametrize("limit", ["5000", "0", "-3", "ten"])
def test_a_search_limit_outside_one_to_a_thousand_is_refused(
    limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["traces", "--limit", limit])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --limit:" in err and "1 to 1000" in err


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("127.0.0.1:14318", "did you mean http://127.0.0.1:14318?"),
        ("collector.internal", "did you mean http://collector.internal?"),
        ("ftp://u:secret@host:21", None),
    ],
)
def test_run_refuses_an_endpoint_that_is_not_a_url(
    given: str, hint: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Was: the child named OTEL_EXPORTER_OTLP_ENDPOINT, which the user had not set, and exported to
    # the default port, where another collector may listen.
    assert main(["run", "--endpoint", given, "--", "python", "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reach-otel run: --endpoint ") and "is not an http:// or https:// URL" in err
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in err and "secret" not in err
    assert (hint in err) if hint else ("did you mean" not in err)
