"""Plain values the store keeps and hands out: what crosses the storage protocols.

Every record is a frozen value; none holds a connection, a cursor or a backend's type, so
each backend (SQLite, PostgreSQL) reads and writes the same records.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memci._dataclasses import dataclass

__all__ = ["SessionRecord"]


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session's row: its key, tenant, name, owner and saved settings."""

    id: int
    tenant: str
    name: str
    user: str | None
    settings: Mapping[str, Any]
    created_at: datetime
