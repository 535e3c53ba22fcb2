"""Create silica_records: timestamped JSON payloads of library results.

Revision ID: r0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "silica_records",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("batch", sa.String(length=36), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
    )
    op.create_index("ix_silica_records_kind", "silica_records", ["kind"])
    op.create_index("ix_silica_records_created_at", "silica_records", ["created_at"])
    op.create_index("ix_silica_records_batch", "silica_records", ["batch"])


def downgrade() -> None:
    op.drop_table("silica_records")
