"""`silica compare` start-up cost against the bare import of its own dependencies, side by side.

The issue's target: `silica compare` over the whole catalog, output piped (TSV), costs at most 1.5x
the CPU of `import numpy, scipy, pydantic, typer, rich, yaml` in a fresh interpreter. Both run as
child processes, interleaved (A, B, A, B, ...) so that a busy machine slows both alike; the CPU time
(user + system) of each child is read from `resource.getrusage(RUSAGE_CHILDREN)`, which is steadier
than wall time on a shared 2-core machine. Prints the medians and their ratio.

For context it also times the same imports plus the part of typer that runs a command (its vendored
click core): what any typer command costs before its own code runs. Typer 0.29 added a pydantic
TypeAdapter per option there (~125 ms a command), which is why pyproject pins typer 0.28.

    python benchmarks/startup_speed.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

BARE = [sys.executable, "-c", "import numpy, scipy, pydantic, typer, rich, yaml"]
# typer's runtime as a command line meets it; `_adapters` is where typer 0.29 builds its pydantic
# coercion (0.28, pinned, has none: the import is skipped).
FRAMEWORK = [
    sys.executable,
    "-c",
    "import numpy, scipy, pydantic, typer, rich, yaml, importlib, typer.main, typer.core\n"
    "try:\n    importlib.import_module('typer._adapters')\nexcept ImportError:\n    pass",
]
COMPARE = [
    sys.executable,
    "-m",
    "silica.cli",
    "compare",
    "llama-3.1-8b",
    "--task",
    "inference",
    "--input-len",
    "1024",
    "--output-len",
    "256",
]


# Bytecode caching as a user's Python has it: some sandboxes set PYTHONDONTWRITEBYTECODE, which would
# charge Silica (an editable install, never byte-compiled by pip) for compiling its source every run.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_seconds(cmd: list[str]) -> float:
    """CPU seconds (user + system) one run of `cmd` takes, its output discarded (a pipe, not a tty)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, check=True, env=_ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    cpu_seconds(BARE), cpu_seconds(FRAMEWORK), cpu_seconds(COMPARE)  # warm the file cache and bytecode
    bare, framework, compare = [], [], []
    for _ in range(args.repeats):
        bare.append(cpu_seconds(BARE))
        framework.append(cpu_seconds(FRAMEWORK))
        compare.append(cpu_seconds(COMPARE))
    b, f, c = statistics.median(bare), statistics.median(framework), statistics.median(compare)
    print(f"bare import of the dependencies: median {b * 1e3:.0f} ms CPU over {args.repeats} runs")
    print(
        f"  plus typer's command runtime: median {f * 1e3:.0f} ms ({f / b:.2f}x)"
    )
    print(f"silica compare (whole catalog, piped): median {c * 1e3:.0f} ms CPU")
    print(f"ratio: {c / b:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
