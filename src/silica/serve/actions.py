"""What the endpoints and pages share: reading uploads, calling the library on them, keeping results.

Everything here hands files to the library's own loaders and returns the library's own results; the
only decisions made here are the server's limits (sizes, scenario size, which paths an upload may name).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Request, UploadFile
from starlette.concurrency import run_in_threadpool

from silica import api
from silica.errors import SilicaError
from silica.jsonable import plain
from silica.serve.jobs import Job, JobControl, Jobs
from silica.serve.problems import ProblemError
from silica.serve.settings import ServeSettings
from silica.serve.uploads import check_json_object, check_yaml, safe_name, upload_dir, utf8_text

__all__ = ["AdviceRun", "InventoryUpload", "Reports"]

T = TypeVar("T")
MAX_SIM_CELLS = 2_000_000  # pools x steps a request may simulate; beyond it, a sweep job
MAX_SCANS = 20
JOB_TIMEOUT_S = 30 * 60  # a job still running after this stops at its next progress report


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run library work off the event loop, so one slow request does not stall the others."""
    return await run_in_threadpool(fn, *args)


async def read_upload(request: Request, upload: UploadFile) -> bytes:
    """The uploaded bytes, or a 413 when over the server's upload limit."""
    limit = request.app.state.settings.max_upload_bytes
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise ProblemError(
            413,
            f"{safe_name(upload.filename)} is larger than the upload limit ({limit // 1024} KiB).",
            "upload a smaller file, or start the server with a larger --max-upload-mb.",
        )
    if not data:
        raise ProblemError(400, f"{safe_name(upload.filename)} is empty.", "upload the file's content.")
    return data


@dataclass(frozen=True)
class InventoryUpload:
    name: str
    text: str
    scans: tuple[tuple[str, bytes], ...]


async def inventory_upload(
    request: Request, inventory: UploadFile | None, text: str | None, scans: list[UploadFile]
) -> InventoryUpload:
    """The inventory (a file, or the text of the edit box) and the scan files it names, all checked."""
    limit = request.app.state.settings.max_upload_bytes
    if inventory is not None and inventory.filename:
        name = safe_name(inventory.filename, "inventory.yaml")
        body = utf8_text(await read_upload(request, inventory), name, "inventory YAML")
    elif text and text.strip():
        name = "inventory.yaml"
        if len(text.encode()) > limit:
            raise ProblemError(413, f"The inventory text is over {limit // 1024} KiB.", "shorten it.")
        body = text
    else:
        raise ProblemError(
            400, "No inventory was sent.", "upload a YAML file as `inventory` or send its text as `text`."
        )
    check_yaml(body, name)
    files = [s for s in scans if s.filename]
    if len(files) > MAX_SCANS:
        raise ProblemError(413, f"{len(files)} scan files is more than {MAX_SCANS}.", "send fewer.")
    scan_files = [(safe_name(s.filename, "scan.json"), await read_upload(request, s)) for s in files]
    return InventoryUpload(name, body, tuple(scan_files))


class Reports:
    """Rendered reports kept for their links (newest 64), under unguessable keys."""

    def __init__(self, size: int = 64) -> None:
        self._items: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def add(self, html: str, markdown: str) -> str:
        key = secrets.token_urlsafe(12)
        with self._lock:
            self._items[key] = (html, markdown)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return key

    def add_page(self, html: str) -> str:
        """Keep a rendered result page (an advice page) for the GET its POST redirects to."""
        return self.add(html, "")

    def get(self, key: str) -> tuple[str, str]:
        with self._lock:
            found = self._items.get(key)
        if found is None:
            raise ProblemError(404, "That report is no longer kept.", "run the advice again.")
        return found


@dataclass(frozen=True)
class AdviceRun:
    advice: Any
    html: str
    markdown: str
    stored_ids: list[int]
    links: dict[str, str]


def advise(state: Any, upload: InventoryUpload, settings: list[str], keep: bool) -> AdviceRun:
    """Advise the uploaded inventory; render both reports; then store every record in one transaction."""
    from silica.advise import load_inventory
    from silica.advise.records import advice_records
    from silica.report import Meta, advice_html, advice_markdown, price_facts

    with upload_dir() as folder, _scrubbed(folder):
        path = folder / upload.name
        path.write_text(upload.text, encoding="utf-8")
        if upload.scans:
            (folder / "scans").mkdir()
        for name, data in upload.scans:  # found beside the inventory or in its scans/ folder
            (folder / name).write_bytes(data)
            (folder / "scans" / name).write_bytes(data)
        inv = load_inventory(path)
        result = api.advise(inv, settings=settings).data
        meta = Meta(f"POST /api/v1/advise ({upload.name})", price_facts(inv.catalog, inv.option))
        html = _scrub(advice_html(result, meta), folder)
        markdown = _scrub(advice_markdown(result, meta), folder)
        records = [
            (k, _scrub(n, folder), _scrub(plain(p), folder)) for k, n, p in advice_records(inv, result)
        ]
        result = _scrub(plain(result), folder)
    ids: list[int] = []
    if keep:
        from silica.store import open_store

        ids = open_store(state.settings.store_url).record_many(records)
    key = state.reports.add(html, markdown)
    links = {"html": f"/reports/{key}.html", "md": f"/reports/{key}.md"}
    return AdviceRun(result, html, markdown, ids, links)


def _scrub(value: Any, folder: Path) -> Any:
    """The upload's private folder left out of names, messages and reports: it means nothing to a user."""
    if isinstance(value, str):
        return value.replace(f"{folder}{os.sep}", "").replace(str(folder), ".")
    if isinstance(value, dict):
        return {k: _scrub(v, folder) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, folder) for v in value]
    return value


@contextmanager
def _scrubbed(folder: Path) -> Iterator[None]:
    """Re-raise a library error with the private folder left out of its message."""
    try:
        yield
    except SilicaError as err:
        raise _clean_error(err, folder) from None


def _clean_error(err: SilicaError, folder: Path) -> SilicaError:
    clean = SilicaError.__new__(type(err))
    SilicaError.__init__(clean, _scrub(err.problem, folder), _scrub(err.fix, folder) if err.fix else None)
    return clean


def with_systems(systems: str | None, plan: Callable[..., Any], **kwargs: Any) -> Any:
    """`plan(**kwargs)` (`api.estimate` or `api.compare`) with the user's systems file, sent as text,
    read by the library's own loader (the format and checks of `--systems`); the result as plain data.

    The text is checked as any uploaded YAML (no alias bombs, no paths outside the upload), written
    to a private folder as `systems.yaml`, and that folder is left out of the result and of errors.
    """
    if systems is None or not systems.strip():
        return plain(plan(**kwargs))
    check_yaml(systems, "systems.yaml")
    with upload_dir() as folder, _scrubbed(folder):
        path = folder / "systems.yaml"
        path.write_text(systems, encoding="utf-8")
        return _scrub(plain(plan(**kwargs, systems=path)), folder)


def scan_registry(model: str) -> Any:
    from silica.scan import scan_model

    api._model(model)  # a bundled id only (raises the one-line error otherwise), never a path
    return scan_model(model)


def scan_config(data: bytes, filename: str | None) -> Any:
    from silica.scan import scan_model

    label = safe_name(filename, "config.json")
    check_json_object(utf8_text(data, label, "config.json"), label)
    with upload_dir() as folder, _scrubbed(folder):
        path = folder / "config.json"
        path.write_bytes(data)
        return _scrub(plain(scan_model(str(path))), folder)


def _fleet_file(folder: Path, data: bytes, filename: str | None) -> Path:
    label = safe_name(filename, "fleet.yaml")
    text = utf8_text(data, label, "fleet YAML")
    check_yaml(text, label)
    path = folder / label
    path.write_text(text, encoding="utf-8")
    return path


def fleet_simulate(data: bytes, filename: str | None) -> Any:
    from silica.fleet import build_fleet, load_fleet_file, make_policies, simulate

    with upload_dir() as folder, _scrubbed(folder):
        ff = load_fleet_file(_fleet_file(folder, data, filename))
        fleet = build_fleet(ff)
        cells = len(fleet.pools) * fleet.steps
        if cells > MAX_SIM_CELLS:
            raise ProblemError(
                413,
                f"This fleet is {len(fleet.pools)} pools x {fleet.steps:,} steps, over the "
                f"{MAX_SIM_CELLS:,} a request simulates.",
                "use longer steps (step_minutes), or run it as a job: POST /api/v1/jobs/fleet-sweep.",
            )
        return _scrub(plain(simulate(fleet, make_policies(ff, None))), folder)


def submit_sweep(state: Any, data: bytes, filename: str | None) -> Job:
    """A sweep as a job; its scenarios are stored, as `silica fleet sweep` stores them, in this
    server's store (which may be another database than SILICA_DB_URL)."""
    from dataclasses import replace

    from silica.fleet import run_sweep
    from silica.store import open_store

    folder = Path(tempfile.mkdtemp(prefix="silica-serve-"))
    url = state.settings.store_url

    def cleanup() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    def work(control: JobControl) -> Any:
        with _scrubbed(folder):
            control.report(0.0, "simulating the scenarios")
            total, done = [1], [0]

            def each(_: Any) -> None:  # a cancel or an overrun takes effect between two scenarios
                done[0] += 1
                control.report(0.9 * done[0] / total[0], f"simulated {done[0]} of {total[0]} scenarios")

            # One scenario at a time in this thread: the server's one job worker never starts processes
            # that a cancel could not stop, nor takes every core from the interactive requests.
            result = run_sweep(
                path, store=False, workers=1, on_start=lambda n: total.__setitem__(0, max(n, 1)), on_done=each
            )
            control.report(0.9, f"storing {len(result.scenarios)} scenarios")
            rows = [("fleet_sweep", r["name"], r) for r in result.scenarios]  # the library's record shape
            ids = open_store(url).record_many(rows)
            return _scrub(plain(replace(result, stored=ids)), folder)

    try:
        path = _fleet_file(folder, data, filename)
    except BaseException:
        cleanup()
        raise
    jobs: Jobs = state.jobs
    return jobs.submit("fleet-sweep", safe_name(filename, "fleet.yaml"), work, cleanup, JOB_TIMEOUT_S)


def submit_calibration(state: Any, data: bytes, filename: str | None) -> Job:
    from silica.perf.calibration import calibration_to_json
    from silica.validate.benchmarks import read_benchmarks
    from silica.validate.fit import fit_calibration

    label = safe_name(filename, "measurements.csv")
    text = utf8_text(data, label, "measurements CSV")
    folder = Path(tempfile.mkdtemp(prefix="silica-serve-"))
    path = folder / "measurements.csv"
    path.write_text(text, encoding="utf-8")

    def work(control: JobControl) -> Any:
        rows = read_benchmarks(path)
        # fit_calibration reports the full fit, then each held-out source: 1 + sources steps in all.
        steps, done = 1 + len({r.source for r in rows}), [0]

        def progress(source: str) -> None:
            control.report(done[0] / steps, f"fitting: {source}")
            done[0] += 1

        fitted = fit_calibration(rows, command="silica serve calibrate", progress=progress)
        return calibration_to_json(fitted)

    jobs: Jobs = state.jobs
    return jobs.submit(
        "calibrate", label, work, lambda: shutil.rmtree(folder, ignore_errors=True), JOB_TIMEOUT_S
    )


def store_display(settings: ServeSettings) -> str:
    from silica.store import database_url

    url = database_url(settings.store_url)
    return url.split("@", 1)[-1] if "@" in url else url  # never the password


def history(settings: ServeSettings, kind: str | None, limit: int) -> dict[str, Any]:
    from silica.store import history as run

    return {"database": store_display(settings), "records": run(kind, limit, url=settings.store_url)}


def record(settings: ServeSettings, record_id: int) -> Any:
    from silica.store import open_store

    return open_store(settings.store_url).get(record_id)
