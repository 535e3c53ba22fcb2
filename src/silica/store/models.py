"""The database schema: one table of timestamped records, each a JSON payload of a library result.

One generic table (kind, name, time, payload) rather than a table per result type, because the results
are already typed and versioned by the library (`to_dict()`); the database only has to keep them safely
and list them. Changes to this file need a new migration in `migrations/versions/`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Base", "RecordRow"]


class Base(DeclarativeBase):
    pass


class RecordRow(Base):
    __tablename__ = "silica_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(
        String(64), index=True
    )  # inventory, estimate, scan, recommendation, ...
    name: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    batch: Mapped[str] = mapped_column(String(36), index=True)  # records written in one transaction
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
