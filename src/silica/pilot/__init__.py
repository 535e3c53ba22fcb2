"""Pilot: prove the estimate on the real thing.

`make_kit` writes the launch files, load plan and prediction for one deployment; `run_plan` drives an
OpenAI-compatible endpoint through the plan; `import_report` reads other tools' reports into the
benchmarks schema; `compare_pilot` sets measured against predicted; `fit_from_pilot` turns a run
into a bounded calibration overlay. The CLI (`silica pilot`, `silica calibrate --from-pilot`) and the
HTML report only present what these return.
"""

from silica.pilot.calibrate import fit_from_pilot, write_overlay
from silica.pilot.compare import PilotComparison, compare_pilot
from silica.pilot.importers import import_report
from silica.pilot.kit import Kit, make_kit, write_kit
from silica.pilot.loadplan import LoadPlan, default_plan, read_plan
from silica.pilot.runner import PilotResult, run_plan

__all__ = [
    "Kit",
    "LoadPlan",
    "PilotComparison",
    "PilotResult",
    "compare_pilot",
    "default_plan",
    "fit_from_pilot",
    "import_report",
    "make_kit",
    "read_plan",
    "run_plan",
    "write_kit",
    "write_overlay",
]
