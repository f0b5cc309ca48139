"""Reading a trace file into JSON values: one JSON document, or JSONL (a value a line).

The only I/O of the trace readers. A file that is neither raises
:class:`~memci.errors.InvalidFileError` naming the line that failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memci.errors import InvalidFileError

__all__ = ["load_json"]


def load_json(path: Path) -> Any:
    """The file's JSON value; a JSONL file gives the list of its lines' values."""
    try:
        # utf-8-sig: files saved by some editors and PowerShell start with a BOM
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InvalidFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidFileError(f"{path} is not UTF-8 text: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError:
        pass
    except RecursionError as exc:
        raise InvalidFileError(f"{path}: the JSON is nested too deeply to read") from exc
    values: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise InvalidFileError(
                f"{path} is neither JSON nor JSONL (line {number}: {exc})") from exc
    return values
