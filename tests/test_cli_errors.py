"""Errors of the memci command keep their text whole (brackets are not markup)."""

from __future__ import annotations

from click.testing import CliRunner

import memci
from memci.cli import main


def test_error_text_with_brackets_survives(tmp_path: object) -> None:
    @main.command("raise-extra", hidden=True)
    def _raise() -> None:
        """Raise a missing-extra error (test only)."""
        raise memci.MissingExtraError("server", "fastapi", "memci serve")

    try:
        result = CliRunner().invoke(main, ["raise-extra"])
    finally:
        del main.commands["raise-extra"]
    assert result.exit_code == 2
    assert "pip install 'memci[server]'" in result.output
