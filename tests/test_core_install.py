"""The README's first command runs on the light core: no store (SQLAlchemy), no torch, no serve extras."""

from __future__ import annotations

import subprocess
import sys

# Importing any of these raises ImportError in the child, as on a machine with only `pip install -e .`.
OPTIONAL = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "torch",
    "transformers",
    "fastapi",
    "httpx",
    "prometheus_client",
)


def test_readme_compare_runs_without_the_optional_extras() -> None:
    code = (
        "import sys\n"
        f"for name in {OPTIONAL!r}: sys.modules[name] = None\n"
        "sys.argv = ['silica', 'compare', 'llama-3.1-8b', '--task', 'inference', '--input-len', '1024',"
        " '--output-len', '256', '--output', 'csv']\n"
        "from silica.cli.app import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-1500:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("#") or "instance" in lines[0]
    assert any("inf2.xlarge" in line for line in lines)
