"""Alembic environment for the Silica store.

`silica.store` runs migrations itself on first use, passing its open connection in
`config.attributes["connection"]`. Run by hand (`alembic -c src/silica/store/alembic.ini upgrade head`),
it connects to `SILICA_DB_URL`, else to the default SQLite file in the user's data directory.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from silica.store._db import database_url
from silica.store.models import Base


def _migrate(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _run() -> None:
    given = context.config.attributes.get("connection")
    if isinstance(given, Connection):
        _migrate(given)
        return
    url = database_url(context.config.get_main_option("sqlalchemy.url") or None)
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            _migrate(connection)
    finally:
        engine.dispose()


_run()
