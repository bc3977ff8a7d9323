"""``attenzione serve``'s options are checked as the other commands check theirs, before any
model is loaded (the CLI through typer's runner; serve never starts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app


@pytest.mark.parametrize("flag", ["--source-lang", "--target-lang"])
@pytest.mark.parametrize("value", ["../../etc", "en/it", "e", "en it", ""])
def test_serve_language_options_must_be_language_codes(
    tmp_path: Path, flag: str, value: str
) -> None:
    # the same check as --src-lang of translate, train and import (cli/common.language_code)
    res = CliRunner().invoke(
        app, ["serve", "--model", str(tmp_path / "no-model"), "--port", "5999", flag, value]
    )
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = [line for line in res.output.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: "), res.output
    assert f"{flag} must be a language code" in errors[0] and repr(value) in errors[0]


def test_a_region_code_is_accepted_as_the_other_commands_accept_it(tmp_path: Path) -> None:
    # "pt-BR" passes the check; what stops this run is the missing model, not the code
    res = CliRunner().invoke(
        app, ["serve", "--model", str(tmp_path / "no-model"), "--source-lang", "pt-BR"]
    )
    assert res.exit_code == 2, res.output
    assert "language code" not in res.output and "no-model" in res.output
