"""`scan_code`: CUDA-only dependencies, calls and kernels in a repository, each with file:line.

The scan reads files as text and parses Python with `ast`; it never imports or executes the scanned code.
A text prefilter (`PythonMatcher.needs_ast`) skips the parse for Python files that no rule can match, and
each parsed file is walked once, which keeps a 10,000-file repository within seconds. Unreadable folders,
unreadable, binary and unparsable files become findings.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from silica.errors import InputError
from silica.scan import config_reader
from silica.scan.code_deps import dependencies, is_dependency_file, normalize
from silica.scan.knowledge import TASKS, CodeRule, Knowledge, Task, knowledge
from silica.scan.python_rules import PythonMatcher
from silica.scan.report import TARGETS, Finding, ScanReport
from silica.scan.verdict import task_findings, verdicts

__all__ = ["SKIP_DIRS", "scan_code"]

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        "site-packages",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "build",
        "dist",
        ".eggs",
    }
)
MAX_BYTES = 2_000_000  # larger "source" files are generated or vendored; they are reported, not parsed
# Files whose `#` comments are blanked before the text rules run (issue 30: a commented-out flag is not used).
_HASH_COMMENTS = (
    ".sh",
    ".bash",
    ".slurm",
    ".sbatch",
    ".yaml",
    ".yml",
    ".toml",
    ".py",
    ".env",
    ".cfg",
    ".def",
)
# Round 7: `#SBATCH --gres=gpu:8` (and PBS's `#PBS`) are scheduler directives, not comments.
_COMMENT = re.compile(r"(?m)(?:^|(?<=\s))#(?!SBATCH\b|PBS\b).*$")
# `pip install A B[x]==1` / `uv pip install` / `conda install` in Dockerfiles and scripts: the packages named.
# Round 5 (issue 30, from peft's GPU image): a `#` comment line inside a continued RUN or shell command is dropped
# by Docker and (blanked) does not end the command, so a continuation runs on over blank lines.
# Round 6 (from lmdeploy's wheel builder): `pip download` and `pip wheel` fetch or build the packages they name
# for a later install, as `pip install` does.
# Round 7 (a class): options before the subcommand (`pip -v install`, `pip --no-cache-dir install`), micromamba,
# and the project managers' add commands (`uv add`, `poetry add`, `pixi add`) install what they name too.
_INSTALL = re.compile(
    r"\b(?:pip3?|uv\s+pip|conda|mamba|micromamba|uv|poetry|pixi)(?:\s+--?[\w-]+(?:=\S+)?)*"
    r"\s+(?:install|download|wheel|add)\b((?:[^\n;&|\\]|\\\n(?:[ \t]*\n)*|\\.)*)"
)
# Round 6: `pip install git+https://github.com/Dao-AILab/flash-attention@v2.6.3#subdirectory=csrc/fused_dense_lib`
# builds the C++/CUDA extension in that csrc folder, not the repository's main package.
_SUBDIR = re.compile(r"#subdirectory=(\S+)")
# Round 6: Python run from a shell script (`python - <<'PY' ... PY`): its imports are Python imports.
_HEREDOC = re.compile(
    r"\bpython[0-9.]*\s+-?\s*<<-?\s*(['\"]?)(\w+)\1[^\n]*\n(.*?)^\s*\2\s*$", re.DOTALL | re.MULTILINE
)
# `python -c "import flash_attn; print(flash_attn.__version__)"` in a Dockerfile or script: the same imports.
_PYTHON_C = re.compile(r"""\bpython[0-9.]*\s+-c\s+(["'])(.+?)\1""")
_HEREDOC_IMPORT = re.compile(r"^\s*(?:import\s+([\w.]+)|from\s+([\w.]+)\s+import\b)", re.MULTILINE)
# Round 6: `for package in deep_ep deep_gemm flash_attn_3; do ... /wheels/${package}-*.whl ... done`: the words of
# a loop whose body installs or checks wheels through the loop variable are packages.
_FOR = re.compile(
    r"^\s*for\s+(\w+)\s+in\s+([^;\n]+?)\s*(?:;\s*|\n\s*)do\b(.*?)^\s*done\b", re.DOTALL | re.MULTILINE
)
_EXT_IMPORT = re.compile(r"(?:import|from)\s+([A-Za-z_]\w*?)_cuda\b")
_INSTALL_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")
_GIT_NAME = re.compile(r"(?:\.git)?(?:@.*|#.*)?$")
# `git clone https://github.com/vllm-project/vllm.git` in a Dockerfile or Makefile, built from source next:
# the repository's name is the package it installs (issue 30).
_CLONE = re.compile(
    r"\bgit\s+clone\b[^\n]*?\s[\"']?(?:https?://|git@)\S+?/([A-Za-z0-9][\w.-]*?)(?:\.git)?[\"']?(?=\s|$)"
)
# `pip install -r requirements/deepspeed.txt`: a requirements file named after the package it installs.
_REQ_FILE = re.compile(r"(?:^|/)([A-Za-z0-9][\w.-]*?)\.(?:txt|in)$")
_INSTALL_FILES = (".dockerfile", ".Dockerfile", ".sh", ".bash", ".def", ".mk")
# Text rules whose patterns name what an install line installs (`conda install pytorch-cuda=11.8 cuda-nvcc`
# makes a CUDA image, round 6): matched inside install commands too.
_INSIDE_INSTALLS = frozenset({"cuda-base-image"})
# Round 7 (a class): what an image build or Makefile builds, named by its target or stage: `make build-vllm-cuda`,
# `make install-flash-attention-v2-cuda`, `FROM kernel-builder AS megablocks-kernels-builder`. The name, less
# build/kernel/CUDA/version suffixes, is looked up in the one table of CUDA-only libraries.
_BUILD_NAME = re.compile(
    r"\bmake\s+(?:-\S+\s+)*(?:build|install)-([\w.-]+)|^\s*FROM\s+\S+\s+(?i:AS)\s+([\w.-]+)", re.MULTILINE
)
_NAME_SUFFIX = re.compile(
    r"(?:[-_](?:builder|build|kernels?|cuda|cu\d{2,3}|v\d+(?:\.\d+)*|install|src|source))+$"
)
# Round 7: a checkout of a library put on PYTHONPATH (`PYTHONPATH=/root/Megatron-LM/`) is that library in use.
_PYTHONPATH = re.compile(r"""\bPYTHONPATH\W{0,6}[=:]\s*\W{0,3}([^\s"'\\;]+)""")
# Round 7 (a class): image references in Dockerfiles, YAML (image:, repository: of Helm values) and scripts
# (IMAGE=..., IMAGE_NAME=...): an image named after a known CUDA-only engine (vllm/vllm-openai,
# lmcache/vllm-openai, lmsysorg/sglang) is that engine; one whose tag or name says CUDA (qwenllm/qwen:cu117,
# *-gpu) is a CUDA base image; `docker run --gpus` / `--runtime nvidia` runs a CUDA container.
_IMAGE_REF = re.compile(
    r"""^\s*(?i:FROM):?\s+(?:--platform=\S+\s+)?["']?([^\s"']+)"""
    r"""|^\s*-?\s*["']?(?:image|repository|imageName|image_name)["']?\s*:\s*["']?([^\s"'#]+/[^\s"'#]+)"""
    r"""|\b[A-Z_]*IMAGE[A-Z_]*=["']?([^\s"';$]+/[^\s"';]+)"""
    r"""|\bdocker\s+(?:run|pull|create)\b[^\n]*?\s([a-z0-9][\w.-]*/[\w./-]+(?::[\w.-]+)?)(?=\s|$)""",
    re.MULTILINE,
)
_CUDA_TAG = re.compile(r"(?:^|[-_.])(?:cu(?:da)?\d{2,3}(?:\.\d+)*|cuda|gpu)(?:$|[-_.])")
_DOCKER_GPUS = re.compile(
    r"\bdocker\s+(?:container\s+)?(?:run|create)\b[^\n]*?\s--(?:gpus\b|runtime[ =]nvidia\b)"
)
_CUDA_INDEX = re.compile(r"/cu\d{2,3}\b|/cuda\b")
# Round 7 (a class): a launcher's argv list built in Python (["accelerate", "launch", "--multi_gpu", ...],
# ["torchrun", "--nproc_per_node", ...], [sys.executable, "-m", "torch.distributed.run", ...]).
_ARGV_LAUNCHER = re.compile(
    r"""\[\s*["'](?:torchrun|mpirun|deepspeed)["']\s*,|\[\s*["']accelerate["']\s*,\s*["']launch["']"""
    r"""|["']-m["']\s*,\s*["']torch\.distributed\.(?:run|launch)["']"""
)
# Round 7 (a class): a CUDA extension the repository's own build declares (setup.py `CUDAExtension(name=
# "pkg._fused", ...)`), imported by its code (`from . import _fused`): the compiled kernels are in use there.
_DECLARED_EXT = re.compile(r"""\bCUDAExtension\(\s*(?:name\s*=\s*)?["']([\w.]+)["']""")
_IMPORTED = re.compile(
    r"^[ \t]*(?:from\s+([\w.]*)\s+import\s+\(?([\w, \t]+)|import\s+([\w.]+))", re.MULTILINE
)
# Round 7 (a class): a wheel named by URL (`https://.../flash_attn-2.8.3+cu128torch2.10-cp312-...whl`) installs the
# distribution its file name starts with.
_GGML_CUDA = re.compile(
    r"\b-?D?(?:GGML_CUDA|GGML_CUBLAS|LLAMA_CUBLAS|LLAMA_CUDA)\s*=\s*[\"']?(?:1|on|ON|On)\b"
)
_RAY_GPU_READ = re.compile(r"\.num_gpus_per_(?:worker|replica|actor)\b")
_TEMPLATE = re.compile(r"(?:[-.]template|\.j2|\.jinja2?)$")
_WHEEL_URL = re.compile(r"""https?://[^\s"'<>]*?/([A-Za-z0-9][A-Za-z0-9_.]*?)-\d[^/\s"'<>]*\.whl\b""")
_KBIT_PREP = ("calls peft.prepare_model_for_kbit_training", "calls peft.prepare_model_for_int8_training")
# When an Accelerate launch config is found, its fsdp_config / deepspeed_config blocks are that finding's
# detail, not findings of their own (one finding per concern).
_COVERED_BY = {"accelerate-config": frozenset({"fsdp", "deepspeed-config"})}


def _info(rule: str, title: str, message: str, file: str, line: int | None = None) -> Finding:
    return Finding(rule, title, message, dict.fromkeys(TARGETS, "info"), file=file, line=line)


REVIEW_RULE = "unscanned-source"
_REVIEW_WEEKS = 0.1  # one file read by hand (effort.yaml work item review-unscanned)


def _review(problem: Finding) -> Finding:
    """A Python source the scan could not look at: "needs review", never "ready" (issue 15)."""
    return Finding(
        REVIEW_RULE,
        "source file not scanned: review it by hand",
        f"{problem.title}: {problem.message}",
        dict.fromkeys(TARGETS, "needs-work"),
        alternative="fix or convert the file (UTF-8 text that Python parses), then scan again",
        file=problem.file,
        line=problem.line,
        effort_weeks=_REVIEW_WEEKS,
    )


def _finding(rule: CodeRule, message: str, file: str | None, line: int | None) -> Finding:
    return Finding(
        rule=rule.id,
        title=rule.title,
        message=message,
        impact=dict.fromkeys(TARGETS, rule.impact),
        alternative=rule.alternative,
        source=rule.source,
        file=file,
        line=line,
        effort_weeks=rule.effort_weeks,
    )


_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_]\w*)=[\"']?([^\s\"']+)", re.MULTILINE | re.IGNORECASE)
_FROM_VAR = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


def _resolve_args(text: str) -> str:
    """`FROM ${CUDA_IMAGE}` with `ARG CUDA_IMAGE=nvidia/cuda:12.9.0-devel` names the image its default names:
    the FROM lines get the ARG defaults substituted (line numbers stay; the rest is untouched)."""
    defaults = dict(_ARG.findall(text))
    if not defaults:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip()[:4].upper() == "FROM":
            lines[i] = _FROM_VAR.sub(lambda m: defaults.get(m.group(1), m.group(0)), line)
    return "\n".join(lines)


def _blank_comments(text: str) -> str:
    """`#` comments replaced by spaces of the same length, so line numbers and offsets stay put."""
    return _COMMENT.sub(lambda m: " " * len(m.group(0)), text)


_NAME_VAR = re.compile(r"\bname\s*=\s*([A-Za-z_]\w*)\s*[,)]")
_DIST_NAME = re.compile(r"""^\s*name\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""", re.MULTILINE)


def local_packages(root: Path) -> dict[str, str]:
    """Top-level Python packages and modules of the repository itself (`pkg/__init__.py`,
    `src/pkg/__init__.py`, `module.py` at the root), each with its folder relative to the root: an import of
    one of them is the project's own code, never the library of the same name (gpt-neox's `megatron` is not
    Megatron-core)."""
    names: dict[str, str] = {}
    for base, prefix in ((root, ""), (root / "src", "src/")):
        try:
            children = list(base.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.endswith(".py") and base == root and child.name != "setup.py":
                names[child.name[:-3]] = child.name
            elif child.is_dir() and (child / "__init__.py").is_file():
                names[child.name] = prefix + child.name + "/"
            elif child.is_dir() and child.name.isidentifier() and child.name not in SKIP_DIRS:
                modules = _namespace_modules(child, prefix)
                names.update(modules)
                # two or more Python sub-packages make the folder itself a package tree (a namespace package,
                # or a copy that left out __init__.py): `import mamba_ssm.utils` from there is the repo's own
                if sum(1 for where in modules.values() if where.endswith("/")) >= 2:
                    names[child.name] = prefix + child.name + "/"
    return names


def _namespace_modules(folder: Path, prefix: str) -> dict[str, str]:
    """`top.sub` for each module or package of a folder without `__init__.py` (a namespace package, or a
    package whose `__init__.py` a trimmed copy left out): `from megablocks.layers.arguments import ...` inside
    the repository is its own code. Only two-part names count, so a folder `kernels/` does not hide the
    `kernels` library itself."""
    out: dict[str, str] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries[:500]:
        stem = entry.name[:-3] if entry.name.endswith(".py") else entry.name
        if not stem.isidentifier():
            continue
        where = f"{prefix}{folder.name}/{entry.name}"
        if entry.name.endswith(".py") and entry.is_file():
            out[f"{folder.name}.{stem}"] = where
        elif entry.is_dir() and _holds_python(entry.path):
            out[f"{folder.name}.{stem}"] = where + "/"
    return out


def _holds_python(path: str) -> bool:
    """Whether a folder holds a Python file directly (the first 500 entries are looked at)."""
    try:
        with os.scandir(path) as it:
            for i, entry in enumerate(it):
                if entry.name.endswith(".py") or i >= 500:
                    return entry.name.endswith(".py")
    except OSError:
        return False
    return False


def _declared_extensions(root: Path) -> frozenset[str]:
    """Last parts of the CUDA extension modules the repository's setup.py files declare (`_fused` of
    `sageattention._fused`), at most three folders down."""
    names: set[str] = set()
    for pattern in ("setup.py", "*/setup.py", "*/*/setup.py", "*/*/*/setup.py"):
        for path in root.glob(pattern):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "CUDAExtension" in text:
                names.update(m.group(1).rsplit(".", 1)[-1] for m in _DECLARED_EXT.finditer(text))
    return frozenset(names)


def declared_names(root: Path) -> frozenset[str]:
    """The distribution names the repository declares (setup.py `name=`, pyproject/setup.cfg `name =`)."""
    out: set[str] = set()
    for name in ("setup.py", "pyproject.toml", "setup.cfg"):
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")[:200_000]
        except OSError:
            continue
        out |= {normalize(m) for m in _DIST_NAME.findall(text)}
        if name == "setup.py":  # round 8: `name=package_name` with `package_name = "colossalai"` above it
            for var in _NAME_VAR.findall(text):
                out |= {
                    normalize(v)
                    for v in re.findall(rf"^{var}\s*=\s*[\"']([A-Za-z0-9][\w.-]*)[\"']", text, re.M)
                }
    return frozenset(out)


def _walk(root: Path, errors: list[OSError]) -> Iterator[tuple[str, str, str]]:
    """(path, path relative to root, file name) for each file; folders that cannot be listed go to errors."""
    top = os.fspath(root)
    for folder, dirs, files in os.walk(top, onerror=errors.append):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        prefix = os.path.relpath(folder, top).replace(os.sep, "/") + "/" if folder != top else ""
        for name in sorted(files):
            yield os.path.join(folder, name), prefix + name, name


def _read(path: str, rel: str) -> tuple[str | None, Finding | None]:
    import stat

    try:  # a FIFO or device in the repo would block or never end: only regular files are read
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, _info(
                "skipped-file", "not a regular file", "a FIFO, device or socket; not scanned", rel
            )
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as err:
        return None, _info(
            "unreadable-file", "unreadable file", f"{type(err).__name__}: {err.strerror or err}", rel
        )
    if len(data) > MAX_BYTES:
        return None, _info("skipped-file", "file too large to scan", f"over {MAX_BYTES:,} bytes", rel)
    if data.find(b"\x00", 0, 8192) >= 0:
        return None, _info(
            "binary-file", "binary file where text was expected", "contains NUL bytes; not scanned", rel
        )
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return None, _info("unreadable-file", "file is not UTF-8 text", str(err), rel)


class _Scanner:
    def __init__(self, kb: Knowledge, root: Path) -> None:
        self.kb = kb
        self.root = root
        self.findings: list[Finding] = []
        self.files = 0
        self.python_files = 0
        self.parsed = 0
        self.packages: dict[str, CodeRule] = {}
        self.extensions: dict[str, CodeRule] = {}
        for rule in kb.code_rules:
            for pkg in rule.packages:
                self.packages.setdefault(normalize(pkg), rule)
            for ext in rule.extensions:
                self.extensions.setdefault(ext, rule)
        # Round 7: one table of CUDA-only libraries for every file kind: a library rule's aliases (its repository,
        # build targets) and top-level import names (exllamav2_kernels, punica_kernels) name it as well as its
        # distribution does; names that count only in CUDA-named lists (tilelang) stay out.
        only_cuda_lists = {normalize(p) for r in kb.code_rules for p in r.cuda_list_packages}
        for rule in kb.code_rules:
            if not rule.packages:
                continue
            names = [*rule.aliases, *(m for m in rule.imports if "." not in m)]
            for name in names:
                if normalize(name) not in only_cuda_lists:
                    self.packages.setdefault(normalize(name), rule)
        self.ext_suffixes = tuple(self.extensions)
        self.cuda_list_packages = {
            normalize(pkg): rule for rule in kb.code_rules for pkg in rule.cuda_list_packages
        }
        self.rules = {r.id: r for r in kb.code_rules}
        # a repository name spelled without separators (TransformerEngine -> transformer-engine)
        self.squashed = {name.replace("-", ""): rule for name, rule in self.packages.items()}
        self.package_globs = [
            (normalize(pkg), rule) for rule in kb.code_rules for pkg in rule.packages if "*" in pkg
        ]
        self.local = local_packages(root)
        self.local_names = frozenset(normalize(n) for n in self.local)
        # A local package that is itself a library a rule names (Liger-Kernel's own `liger_kernel`): its own
        # modules are its implementation, but the repository's examples and scripts that import it use it.
        declared = declared_names(root)
        self.library_self = {
            name: folder
            for name, folder in self.local.items()
            if normalize(name) in declared and normalize(name) in self.packages
        }
        # round 8: the library the repository itself declares (setup.py/pyproject name) is its own, wherever named
        self.own_names = frozenset(n for n in declared if n in self.packages) | frozenset(
            normalize(n) for n in self.library_self
        )
        self.python = PythonMatcher(kb.code_rules, local=frozenset(self.local))
        self.cuda_extensions = _declared_extensions(root)
        # text rules: (rule, file-name pattern, line pattern), for scripts, Dockerfiles and JSON configs
        self.text_rules: list[tuple[CodeRule, re.Pattern[str], re.Pattern[str]]] = [
            (
                r,  # r.text_literals: a cheap `in` test before the pattern runs
                re.compile("|".join(fnmatch.translate(g) for g in r.files)),
                re.compile("|".join(f"(?:{t})" for t in r.text), re.MULTILINE),
            )
            for r in kb.code_rules
            if r.text
        ]
        globs = sorted({g for r in kb.code_rules for g in r.files})
        self._py_text_rules: list[tuple[CodeRule, re.Pattern[str]]] | None = None
        self._gates: dict[tuple[str, ...], re.Pattern[str] | None] = {}
        self.text_names = re.compile("|".join(fnmatch.translate(g) for g in globs)) if globs else None

    def run(self) -> None:
        errors: list[OSError] = []
        backends: set[str] = set()
        for path, rel, name in _walk(self.root, errors):
            self.files += 1
            backend = _BACKEND_LAYER.search(rel) if name.endswith(".py") else None
            if backend is not None:
                backends.add(backend.group(1))
            if name.endswith(".py"):
                self._python(path, rel, name == "setup.py")
            elif name.endswith(self.ext_suffixes):
                ext = next(e for e in self.extensions if name.endswith(e))
                self._kernel_file(path, rel, self.extensions[ext])
            else:
                # round 8: a config kept as a template (launch.yaml-template, values.yaml.j2) is read as that config
                name = _TEMPLATE.sub("", name)
                # a requirements folder's lists (requirements/triton-kernels.txt) are requirements files too
                dependency = is_dependency_file(name) or (
                    name.endswith((".txt", ".in")) and "/requirements/" in f"/{rel}"
                )
                text_rules = self.text_names is not None and self.text_names.match(name) is not None
                if dependency or text_rules:
                    self._other(path, rel, name, dependency, text_rules)
        for err in errors:
            self.findings.append(self._unlistable(err))
        rule = self.rules.get(BACKEND_RULE)
        if backends and rule is not None:
            where = ", ".join(sorted(backends)[:3])
            self.findings.append(
                _finding(rule, f"the CUDA backend of the repository's device layer: {where}", None, None)
            )

    def package_rule(self, pkg: str, extras: str = "") -> CodeRule | None:
        """The rule for a distribution name (exact, then `cupy-cuda*`-style patterns), or for one of its
        extras spelled as its own package (`trl[liger]` -> `trl-liger`)."""
        name = normalize(pkg)
        for extra in (e.strip() for e in extras.split(",") if e.strip()):
            rule = self.packages.get(f"{name}-{normalize(extra)}")
            if rule is not None:
                return rule
        rule = self.packages.get(name) or self.squashed.get(name.replace("-", ""))
        if rule is None:
            rule = next((r for pat, r in self.package_globs if fnmatch.fnmatchcase(name, pat)), None)
        return rule

    def _installs(self, text: str, rel: str, name: str) -> None:
        """Packages installed by `pip install` (and uv, conda) in a Dockerfile or shell script, including a
        requirements file named after its package (`-r requirements/deepspeed.txt`), and repositories
        cloned to be built from source (`git clone .../vllm.git`)."""
        for m in _CLONE.finditer(text):
            rule = self.package_rule(m.group(1))
            # round 8: a repository cloning and building itself (ColossalAI's image) is its own packaging
            if rule is not None and normalize(m.group(1)) not in self.own_names:
                line = text.count("\n", 0, m.start()) + 1
                self.findings.append(_finding(rule, f"clones {m.group(1)} to build it in {name}", rel, line))
        self._shell_python(text, rel, name)
        for m in _INSTALL.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            requirement_file = False
            find_links = False
            cuda_index = _CUDA_INDEX.search(m.group(1)) is not None
            args = re.sub(r"\\\n", " ", m.group(1))
            args = re.sub(r"\[([^\]\n]*)\]", lambda b: "[" + re.sub(r"\s+", "", b.group(1)) + "]", args)
            for token in args.split():
                token = token.strip("'\"")
                if find_links:  # --find-links .../whl/nightly/triton: a package's own wheel page
                    find_links = False
                    page = token.rstrip("/").rsplit("/", 1)[-1]
                    rule = (
                        self.package_rule(page) if "://" in token and _INSTALL_NAME.fullmatch(page) else None
                    )
                    if rule is not None:
                        self.findings.append(
                            _finding(rule, f"installs {page} from {token} in {name}", rel, line)
                        )
                    continue
                if token in ("-f", "--find-links"):
                    find_links = True
                    continue
                sub = _SUBDIR.search(token) if "git+" in token else None
                if sub is not None and "csrc" in sub.group(1).split("/"):
                    rule = self.rules.get("cpp-extension")
                    if rule is not None:
                        self.findings.append(
                            _finding(rule, f"builds {sub.group(1)} from {token} in {name}", rel, line)
                        )
                    continue
                if requirement_file:
                    requirement_file = False
                    req = _REQ_FILE.search(token)
                    rule = self.package_rule(req.group(1)) if req else None
                    if rule is not None:
                        self.findings.append(_finding(rule, f"installs {token} in {name}", rel, line))
                    continue
                if token in ("-r", "--requirement"):
                    requirement_file = True
                    continue
                wheel = _WHEEL_URL.search(token) if "://" in token else None
                if wheel is not None:
                    rule = self.package_rule(wheel.group(1))
                    if rule is not None:
                        self.findings.append(
                            _finding(rule, f"installs {wheel.group(1)} from a wheel URL in {name}", rel, line)
                        )
                    continue
                if "://" in token and "git+" in token:  # git+https://github.com/NVIDIA/apex.git@ref
                    token = _GIT_NAME.sub("", token.rsplit("/", 1)[-1])
                local_extras = re.fullmatch(r"[./][\w./-]*\[([\w,.-]+)\]", token)
                if (
                    local_extras is not None
                ):  # `pip install ".[bnb,peft]"`: the project's extras name libraries
                    for extra in local_extras.group(1).split(","):
                        rule = self.package_rule(extra) if extra else None
                        if rule is not None:
                            self.findings.append(
                                _finding(rule, f"installs the extra {extra} ({token}) in {name}", rel, line)
                            )
                    continue
                if token.startswith(("-", "$", ".", "/")) or "://" in token:
                    continue
                n = _INSTALL_NAME.match(token)
                if n is None:
                    continue
                rule = self.package_rule(n.group(1), n.group(2) or "")
                if (
                    rule is None and cuda_index
                ):  # `pip install tilelang -f .../whl/nightly/cu128/`: its CUDA build
                    rule = self.cuda_list_packages.get(normalize(n.group(1)))
                if rule is not None:
                    self.findings.append(_finding(rule, f"installs {token} in {name}", rel, line))

    def library_named(self, name: str) -> CodeRule | None:
        """The CUDA-only library a build target, image stage or checkout folder is named after
        (`flash-attention-v2-cuda` -> flash-attn, `exllama-kernels-builder` -> gpu-quant-kernels), or None; the
        repository's own packages are its own code."""
        for candidate in dict.fromkeys((name, _NAME_SUFFIX.sub("", name))):
            if not candidate or normalize(candidate) in self.local_names:
                continue
            rule = self.package_rule(candidate)
            if rule is not None:
                return rule
        return None

    def _builds(self, text: str, rel: str, name: str) -> None:
        """Libraries built by name (`make build-megablocks`, an image stage `AS vllm-builder`) and checkouts put
        on PYTHONPATH (round 7)."""
        seen: set[tuple[str, int]] = set()
        for m in _BUILD_NAME.finditer(text):
            target = m.group(1) or m.group(2)
            rule = self.library_named(target)
            line = text.count("\n", 0, m.start()) + 1
            if rule is not None and (rule.id, line) not in seen:
                seen.add((rule.id, line))
                self.findings.append(_finding(rule, f"builds {target} in {name}", rel, line))
        kernels = self.rules.get("other-cuda-kernels")
        ggml = _GGML_CUDA.search(text) if kernels is not None and "CU" in text else None
        if kernels is not None and ggml is not None:  # round 8: llama.cpp built with its CUDA backend
            line = text.count("\n", 0, ggml.start()) + 1
            self.findings.append(
                _finding(kernels, f"builds llama.cpp's CUDA backend ({ggml.group(0)}) in {name}", rel, line)
            )
        if "PYTHONPATH" in text:
            for m in _PYTHONPATH.finditer(text):
                for part in re.split(r"[:/]", m.group(1)):
                    rule = self.library_named(part) if re.fullmatch(r"[A-Za-z][\w.-]+", part) else None
                    if rule is not None:
                        line = text.count("\n", 0, m.start()) + 1
                        self.findings.append(
                            _finding(rule, f"puts {part} on PYTHONPATH in {name}", rel, line)
                        )

    def _images(self, text: str, rel: str, name: str, *, cuda_tags: bool) -> None:
        """Images named after a CUDA-only engine, and (where `cuda_tags`: scripts, whose lines the image text
        rule does not read) images whose tag says CUDA and `docker run --gpus` (round 7)."""
        base = self.rules.get("cuda-base-image")
        have = {(f.rule, f.line) for f in self.findings if f.file == rel}
        for m in _IMAGE_REF.finditer(text):
            ref = next(g for g in m.groups() if g)
            if "$" in ref:
                continue  # an image named by a variable
            if (
                "neuron" in ref.lower()
            ):  # a Neuron DLC or a Neuron build of an engine (neuronx-tgi, *-neuronx)
                rule = self.rules.get(NEURON_PATH_RULE)
                line = text.count("\n", 0, m.start()) + 1
                if rule is not None and (rule.id, line) not in have:
                    have.add((rule.id, line))
                    self.findings.append(_finding(rule, f"runs the Neuron image {ref} in {name}", rel, line))
                continue
            path, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
            parts = path.split("/")
            if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
                parts = parts[1:]  # a registry host
            line = text.count("\n", 0, m.start()) + 1
            for part in parts:
                words = re.split(r"[-_.]", part)
                rule = self.library_named(part) or (self.library_named(words[0]) if len(words) > 1 else None)
                if rule is not None and (rule.id, line) not in have:
                    have.add((rule.id, line))
                    self.findings.append(_finding(rule, f"runs the image {ref} in {name}", rel, line))
                    break
            cuda = _CUDA_TAG.search(tag) is not None or any(_CUDA_TAG.search(p) for p in parts)
            if cuda_tags and cuda and base is not None and (base.id, line) not in have:
                have.add((base.id, line))
                self.findings.append(_finding(base, f"a CUDA image {ref} in {name}", rel, line))
        if cuda_tags and base is not None and "docker" in text:
            for m in _DOCKER_GPUS.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                if (base.id, line) not in have:
                    have.add((base.id, line))
                    what = m.group(0).strip()[:80]
                    self.findings.append(_finding(base, f"{what!r}: a CUDA container in {name}", rel, line))

    def _shell_python(self, text: str, rel: str, name: str) -> None:
        """Imports in Python run from a shell script (`python - <<'PY'`, `python -c "import x"`), and packages
        named by a `for` loop
        whose body installs or checks their wheels through the loop variable (round 6, from lmdeploy)."""
        bodies: list[tuple[int, str, bool]] = []  # (first line, Python source, all on that one line)
        if "<<" in text and "python" in text:
            bodies += [
                (text.count("\n", 0, m.start(3)) + 1, m.group(3), False) for m in _HEREDOC.finditer(text)
            ]
        if "-c" in text and "python" in text:
            bodies += [
                (text.count("\n", 0, m.start(2)) + 1, m.group(2).replace(";", "\n"), True)
                for m in _PYTHON_C.finditer(text)
            ]
        if bodies:
            for start, body, one_line in bodies:
                if self._shell_python_rules(start, body, one_line, rel, name):
                    continue
                for imp in _HEREDOC_IMPORT.finditer(body):
                    module = imp.group(1) or imp.group(2)
                    if module.split(".", 1)[0] in self.local:
                        continue
                    hit = self.python.import_match(module)
                    if hit is not None:
                        line = start + (
                            0
                            if one_line
                            else body.count(
                                "\n", 0, imp.start() + len(imp.group(0)) - len(imp.group(0).lstrip())
                            )
                        )
                        imported = self.rules[self.python.ids[hit[0]]]
                        self.findings.append(
                            _finding(imported, f"imports {hit[1]} (Python in {name})", rel, line)
                        )
        if "for " in text and "done" in text:
            for m in _FOR.finditer(text):
                var, words, body = m.group(1), m.group(2), m.group(3)
                uses = f"${{{var}}}" in body or re.search(rf"\${var}\b", body) is not None
                if not uses or not ("pip" in body or ".whl" in body):
                    continue
                line = text.count("\n", 0, m.start() + len(m.group(0)) - len(m.group(0).lstrip())) + 1
                for word in words.split():
                    word = word.strip("'\"")
                    rule = self.package_rule(word) if _INSTALL_NAME.fullmatch(word) else None
                    if rule is not None:
                        self.findings.append(
                            _finding(rule, f"installs {word} (loop over wheels) in {name}", rel, line)
                        )

    def _shell_python_rules(self, start: int, body: str, one_line: bool, rel: str, name: str) -> bool:
        """Round 7 (a class): Python run from a shell script or image (`python -c 'import torch;
        print(torch.cuda.device_count())'`, heredocs) is Python: every Python rule applies, not only imports.
        False when the body does not parse (its imports are then matched by pattern)."""
        if one_line:  # `import torch; print(...)` split at its semicolons
            body = "\n".join(part.strip() for part in body.split("\n"))
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        local = frozenset(self.local)
        for rule_id, message, line in self.python.scan(tree, uses_torch="torch" in body, local=local):
            at = start if one_line else start + line - 1
            self.findings.append(_finding(self.rules[rule_id], f"{message} (Python in {name})", rel, at))
        return True

    def _gate(self, rules: list[tuple[CodeRule, re.Pattern[str]]]) -> re.Pattern[str] | None:
        """One pattern of every literal of these rules (None when a rule has no literals: it always runs)."""
        key = tuple(r.id for r, _ in rules)
        if key not in self._gates:
            literals = [lit for r, _ in rules for lit in r.text_literals]
            ok = rules and all(r.text_literals for r, _ in rules)
            self._gates[key] = re.compile("|".join(map(re.escape, literals))) if ok else None
        return self._gates[key]

    def _text_rules_for(self, name: str) -> list[tuple[CodeRule, re.Pattern[str]]]:
        """The text rules whose file patterns match `name` (cached for Python files, the common case)."""
        plain_py = name.endswith(".py") and not name.startswith("Dockerfile")  # not "Dockerfile.*"
        if plain_py and self._py_text_rules is not None:
            return self._py_text_rules
        rules = [(r, pattern) for r, names, pattern in self.text_rules if names.match(name)]
        if plain_py:  # the rules' globs ("*.py", "*.sh", "Dockerfile.*") match all such names alike
            self._py_text_rules = rules
        return rules

    def _text(self, text: str, rel: str, name: str) -> None:
        """Line patterns (launch commands, NCCL variables, CUDA base images, ZeRO configs): one finding per
        rule and line; `#` comments are skipped, and an Accelerate config's own blocks are not findings."""
        installs = name.startswith(("Dockerfile", "Containerfile", "Makefile")) or name.endswith(
            _INSTALL_FILES
        )
        candidates = self._text_rules_for(name)
        gate = self._gate(candidates)
        if gate is not None and not installs and gate.search(text) is None:
            return  # one pass over the text: no rule's literal occurs (most Python files)
        rules = [
            (rule, pattern)
            for rule, pattern in candidates
            if not rule.text_literals or any(lit in text for lit in rule.text_literals)
        ]
        if not rules and not installs:  # most Python files: nothing to blank or match
            return
        if name.endswith(_HASH_COMMENTS) or name.startswith(("Dockerfile", "Makefile", "Containerfile")):
            text = _blank_comments(text)
        if name.startswith(("Dockerfile", "Containerfile")) or name.endswith((".dockerfile", ".Dockerfile")):
            text = _resolve_args(text)
        spans: list[tuple[int, int]] = []
        if installs:
            self._installs(text, rel, name)
            self._builds(text, rel, name)
            spans = [m.span(1) for m in _INSTALL.finditer(text)]
        covered: set[str] = set()
        found: list[Finding] = []
        for rule, pattern in rules:
            seen: set[int] = set()
            for m in pattern.finditer(text):
                if rule.id not in _INSIDE_INSTALLS and any(a <= m.start() < b for a, b in spans):
                    continue  # a package named in `pip install ... deepspeed`, not the `deepspeed` launcher
                owner = self._library_extension(m.group(0)) if rule.id == "cpp-extension" else None
                if (
                    owner is not None
                ):  # causal-conv1d's own kernels: that library's finding, not a local build
                    at = text.count("\n", 0, m.start() + len(m.group(0)) - len(m.group(0).lstrip())) + 1
                    found.append(_finding(owner, f"{m.group(0).strip()[:80]!r} in {name}", rel, at))
                    continue
                # `^\s*key:` can start on a blank (or blanked comment) line above the key: count from the text
                at = m.start() + len(m.group(0)) - len(m.group(0).lstrip())
                line = text.count("\n", 0, at) + 1
                if line not in seen:
                    seen.add(line)
                    what = m.group(0).strip()
                    found.append(_finding(rule, f"{what[:80]!r} in {name}", rel, line))
                    covered |= _COVERED_BY.get(rule.id, frozenset())
        self.findings += [f for f in found if f.rule not in covered]

    def _image_pass(self, text: str, rel: str, name: str) -> None:
        """Image references and `docker run --gpus` in a non-Python file (after its text rules, so that a line
        the image text rule found is not found twice)."""
        containers = name.startswith(("Dockerfile", "Containerfile")) or name.endswith(
            (".dockerfile", ".Dockerfile", ".def")
        )
        # the CUDA-image text rule reads Dockerfiles' FROM lines; other files' image references are read here
        scripts = not containers
        if "image" in text.lower() or "FROM" in text or "repository" in text or "docker" in text:
            code = _blank_comments(text)
            self._images(_resolve_args(code) if containers else code, rel, name, cuda_tags=scripts)

    def _library_extension(self, statement: str) -> CodeRule | None:
        """The rule of the library whose compiled extension `import causal_conv1d_cuda` is (round 5, from
        lingua: causal-conv1d's kernels are mamba-kernels), or None for the repository's own extension."""
        m = _EXT_IMPORT.search(statement)
        rule = self.packages.get(normalize(m.group(1))) if m else None
        return rule if rule is not None and rule.id != "cpp-extension" else None

    def _unlistable(self, err: OSError) -> Finding:
        where = os.fspath(err.filename) if err.filename is not None else os.fspath(self.root)
        rel = os.path.relpath(where, self.root).replace(os.sep, "/")
        return _info(
            "unreadable-directory",
            "folder could not be listed; its files were not scanned",
            f"{type(err).__name__}: {err.strerror or err}",
            rel,
        )

    def _kernel_file(self, path: str, rel: str, rule: CodeRule) -> None:
        text, problem = _read(path, rel)
        line = None
        if text is not None:
            line = next((n for n, t in enumerate(text.splitlines(), 1) if "__global__" in t), 1)
        message = "CUDA kernel source" + (
            " (first __global__ kernel here)" if text and "__global__" in text else ""
        )
        self.findings.append(_finding(rule, message, rel, line))
        if problem is not None and problem.rule != "binary-file":
            self.findings.append(problem)

    def _other(self, path: str, rel: str, name: str, dependency: bool, text_rules: bool) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
            return
        if text_rules:
            self._text(text, rel, name)
            self._image_pass(text, rel, name)
        if name.endswith((".yaml", ".yml")) and _TARGET.search(text) is not None:
            self._config_targets(text, rel, name)
        if name.endswith((".yaml", ".yml", ".json")):
            self._config_settings(text, rel, name)
        if name == "Cargo.toml":
            self._add_hits(list(config_reader.cargo_dependencies(text, self._library_rule_id)), rel, name)
        if not dependency:
            return
        found, trouble = dependencies(name, text)
        if trouble is not None:
            self.findings.append(_info("unparsable-dependencies", f"{name} does not parse", trouble, rel))
        cuda_list = "cuda" in name.lower()
        if ".whl" in text:
            listed = set(found)
            code = (
                _blank_comments(text)
                if name.endswith((".toml", ".txt", ".in", ".cfg", ".yml", ".yaml"))
                else text
            )
            for m in _WHEEL_URL.finditer(code):
                rule = self.package_rule(m.group(1))
                at = code.count("\n", 0, m.start()) + 1
                if rule is not None and (normalize(m.group(1)), at) not in listed:
                    self.findings.append(_finding(rule, f"depends on {m.group(1)} (a wheel URL)", rel, at))
        for pkg, line in found:
            rule = self.package_rule(pkg)
            if rule is None and cuda_list:
                rule = self.cuda_list_packages.get(normalize(pkg))
            if rule is not None and rule.id == "nvidia-wheels" and "cuda-wheels" in self.rules:
                rule = self.rules["cuda-wheels"]  # round 8: NVIDIA runtime pins in a list lock a CUDA build
            if rule is not None:
                self.findings.append(_finding(rule, f"depends on {pkg}", rel, line))

    def _config_settings(self, text: str, rel: str, name: str) -> None:
        """Round 8: the generic config reader (silica.scan.config_reader): every key path and value judged by
        the classes of CUDA-only settings, and every container argv list (`command:`/`args:`) read as the
        launcher line it is by the rules written for scripts. A compose GPU reservation is a CUDA container
        (cuda-base-image, like `docker run --gpus`), not a Kubernetes request."""
        settings, argvs = config_reader.read(text)
        if not settings and not argvs:
            return
        hits = list(config_reader.judge(settings, argvs, self._library_rule_id))
        if argvs:
            script_rules = self._text_rules_for("launch.sh")
            for argv in argvs:
                line = config_reader.argv_line(argv)
                hits += [
                    config_reader.ConfigHit(rule.id, argv.line, line[:80])
                    for rule, pattern in script_rules
                    if pattern.search(line) is not None
                ]
        gpu = {h.line for h in hits if h.rule == "cuda-base-image"}
        if gpu:
            self.findings = [
                f for f in self.findings if not (f.file == rel and f.rule == "k8s-gpu" and f.line in gpu)
            ]
        off = config_reader.disabled_spans(text) if "enabled" in text else []
        if (
            off
        ):  # a block switched off (`enabled: false`) runs nothing: its images and settings are not findings
            self.findings = [
                f
                for f in self.findings
                if not (f.file == rel and f.line is not None and any(a <= f.line <= b for a, b in off))
            ]
            hits = [h for h in hits if not any(a <= h.line <= b for a, b in off)]
        self._add_hits(hits, rel, name)

    def _add_hits(self, hits: list[config_reader.ConfigHit], rel: str, name: str) -> None:
        """The config reader's findings, one per rule and line, less what the file's own findings cover."""
        here = [f for f in self.findings if f.file == rel]
        seen = {(f.rule, f.line) for f in here}
        # an Accelerate config's own FSDP/DeepSpeed blocks are that config's finding (as for the line rules)
        covered = {c for f in here for c in _COVERED_BY.get(f.rule, frozenset())}
        for hit in hits:
            rule = self.rules.get(hit.rule)
            if rule is not None and hit.rule not in covered and (hit.rule, hit.line) not in seen:
                seen.add((hit.rule, hit.line))
                self.findings.append(_finding(rule, f"{hit.what[:80]!r} in {name}", rel, hit.line))

    def _library_rule_id(self, name: str) -> str | None:
        """The rule of the CUDA-only library `name` names (the one table), for the config reader."""
        rule = self.package_rule(name)
        return rule.id if rule is not None else None

    def _config_targets(self, text: str, rel: str, name: str) -> None:
        """A class a config instantiates (Hydra `_target_: apex.optimizers.FusedAdam`, torchtune `_component_:`,
        Lightning CLI `class_path:`) is imported when the config is used: matched like a Python import, and the
        repository's own classes are its own code (round 6, from flash-attention's Hydra recipes)."""
        code = _blank_comments(text)
        seen = {(f.rule, f.line) for f in self.findings if f.file == rel}
        for m in _TARGET.finditer(code):
            module = m.group(1)
            if (
                module.split(".", 1)[0] in self.local
                or normalize(module.split(".", 1)[0]) in self.local_names
            ):
                continue
            hit = self.python.import_match(module)
            if hit is None:
                continue
            rule = self.rules[self.python.ids[hit[0]]]
            line = code.count("\n", 0, m.start(1)) + 1
            if (rule.id, line) not in seen:
                seen.add((rule.id, line))
                self.findings.append(_finding(rule, f"instantiates {module} in {name}", rel, line))

    def _python(self, path: str, rel: str, is_setup: bool) -> None:
        text, problem = _read(path, rel)
        if text is None:
            if problem is not None:
                self.findings.append(problem)
                if problem.rule != "skipped-file":
                    self.findings.append(_review(problem))
            return
        self.python_files += 1
        before = len(self.findings)
        if self.text_names is not None and self.text_names.match(os.path.basename(rel)):
            self._text(text, rel, os.path.basename(rel))
        by_text = {(f.rule, f.line) for f in self.findings[before:]}
        if self.cuda_extensions and not is_setup and "import" in text:
            self._extension_imports(text, rel)
        launcher = self.rules.get("gpu-launcher")
        if launcher is not None and ("torchrun" in text or "launch" in text or "mpirun" in text):
            m = _ARGV_LAUNCHER.search(_blank_comments(text))
            if m is not None:
                at = text.count("\n", 0, m.start()) + 1
                self.findings.append(_finding(launcher, f"launches with {m.group(0)!r}...", rel, at))
        if "_available(" in text:
            self._availability_checks(text, rel)
        ray = self.rules.get("ray-gpu")
        if ray is not None and ".num_gpus_per_" in text:
            m = _RAY_GPU_READ.search(_blank_comments(text))
            if (
                m is not None
            ):  # round 8: a Ray GPU count read in Python (`scaling_config.num_gpus_per_worker > 0`)
                at = text.count("\n", 0, m.start()) + 1
                self.findings.append(_finding(ray, f"reads {m.group(0).lstrip('.')!r}", rel, at))
        uses_torch = "torch" in text
        if not is_setup and not self.python.needs_ast(text, uses_torch=uses_torch):
            return
        self.parsed += 1
        try:
            tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            line = getattr(err, "lineno", None)
            problem = _info(
                "unparsable-python", "Python file does not parse", f"{type(err).__name__}: {err}", rel, line
            )
            self.findings += [problem, _review(problem)]
            return
        local = None
        if self.library_self:
            outside = {n for n, folder in self.library_self.items() if not rel.startswith(folder)}
            local = frozenset(self.local).difference(outside) if outside else None
        tpu_only = _tpu_only(text) and "neuron" not in rel.lower()  # lightning_neuron_patch.py is Neuron code
        guarded = "ImportError" in text or "_available(" in text or "find_spec" in text
        hits = list(self.python.scan(tree, uses_torch=uses_torch, local=local, guarded=guarded))
        # Round 7 (a class, from Qwen's GPTQ Q-LoRA): PEFT's k-bit preparation follows the quantiser the model was
        # loaded with; in a file that builds a GPTQ/AWQ config and nothing of bitsandbytes, it is that path's step.
        if any(r == "gpu-quant-kernels" and m.startswith("calls ") for r, m, _ in hits):
            bnb = [m for r, m, _ in hits if r == "bitsandbytes"]
            if bnb and all(m.startswith(_KBIT_PREP) for m in bnb):
                hits = [h for h in hits if h[0] != "bitsandbytes"]
        if any(r == "accelerate" for r, _, _ in hits) and not _accelerator_configured(tree):
            hits = [h for h in hits if not (h[0] == "accelerate" and "Accelerator" in h[1])]
        if any(r == "cuda-backend-flags" for r, _, _ in hits):
            lines = text.splitlines()
            hits = [h for h in hits if h[0] != "cuda-backend-flags" or not _switched_off(lines, h[2])]
        for rule_id, message, line in hits:
            if rule_id == NEURON_PATH_RULE and tpu_only and message.startswith(_XLA_IMPORTS):
                continue  # torch-xla code written for TPUs: an XLA path, not a Neuron one
            if rule_id == NEURON_PATH_RULE and message.startswith("compares with"):
                continue  # `if device == "neuron":` dispatches between devices; the Neuron code is elsewhere
            if is_setup and rule_id in _BUILD_HOST_RULES:
                continue  # setup.py probes the build host's GPU to choose what to compile (round 6)
            if (rule_id, line) in by_text and message.startswith("imports "):
                continue  # `import flash_attn_2_cuda`, already found as that library's compiled extension
            self.findings.append(_finding(self.rules[rule_id], message, rel, line))
        if is_setup:
            for pkg, extras, line in dict.fromkeys(self.python.string_requirements(tree)):
                rule = self.package_rule(pkg, extras)
                if rule is not None:
                    self.findings.append(_finding(rule, f"setup.py requires {pkg}", rel, line))

    def _extension_imports(self, text: str, rel: str) -> None:
        """Imports of a CUDA extension module the repository builds (`from . import _fused`): cpp-extension."""
        rule = self.rules.get("cpp-extension")
        if rule is None:
            return
        code = _blank_comments(text)
        for m in _IMPORTED.finditer(code):
            if m.group(3) is not None:
                names = [m.group(3).rsplit(".", 1)[-1]]
            else:
                names = [n.split(" as ")[0].strip() for n in m.group(2).split(",")]
                names.append((m.group(1) or "").rsplit(".", 1)[-1])
            hit = next((n for n in names if n in self.cuda_extensions), None)
            if hit is not None:
                line = code.count("\n", 0, m.start()) + 1
                # round 8: the extension of a library in the table (marlin's marlin_cuda) is that library's kernel
                owner = self._library_extension(f"import {hit}")
                self.findings.append(
                    _finding(
                        owner or rule, f"imports {hit}, a CUDA extension this repository builds", rel, line
                    )
                )
                return

    def _availability_checks(self, text: str, rel: str) -> None:
        """`if is_gptqmodel_available(): ...` switches on that optional dependency in this file (round 5, from
        peft's LoRA layers over GPTQModel's AWQ kernels): a helper judged by what it checks. Definitions of
        such helpers (`def is_..._available`) and comments are not uses."""
        code = _blank_comments(text)
        seen: set[str] = set()
        for m in _AVAILABLE.finditer(code):
            rule = self.package_rule(m.group(1))
            if rule is not None and rule.id not in seen and normalize(m.group(1)) not in self.local_names:
                seen.add(rule.id)
                line = code.count("\n", 0, m.start()) + 1
                self.findings.append(_finding(rule, f"checks {m.group(0)}) before using it", rel, line))


_OFF = re.compile(r"=\s*(?:False|0)\s*(?:#.*)?$")


def _switched_off(lines: list[str], line: int | None) -> bool:
    """Round 8: `torch.backends.cuda.matmul.allow_tf32 = False` turns a CUDA switch off: not a setting to port."""
    return line is not None and 0 < line <= len(lines) and _OFF.search(lines[line - 1]) is not None


_ACCELERATOR_SETTINGS = frozenset({"cpu", "deepspeed_plugin", "fsdp_plugin", "megatron_lm_plugin"})
_PORTABLE_PRECISION = frozenset({"bf16", "no"})


def _accelerator_configured(tree: ast.AST) -> bool:
    """Round 8 (from held-out-8's labels): Accelerate runs on XLA devices as it is (Optimum Neuron's
    NeuronAccelerator subclasses it), so an Accelerator is a port item only where it is built with a setting
    that chooses the device or a CUDA path: a precision the caller passes (it may be fp16) or fp16 itself, `cpu=`,
    a DeepSpeed/FSDP/Megatron plugin, or `**kwargs`. A subclass, `Accelerator().process_index` or
    `Accelerator(mixed_precision="bf16")` is not."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != "Accelerator":
            continue
        for kw in node.keywords:
            if kw.arg is None or kw.arg in _ACCELERATOR_SETTINGS:
                return True
            if kw.arg == "mixed_precision" and not (
                isinstance(kw.value, ast.Constant) and kw.value.value in _PORTABLE_PRECISION
            ):
                return True
    return False


NEURON_PATH_RULE = "neuron-path"
_TARGET = re.compile(
    r"""^\s*-?\s*["']?(?:_target_|_component_|class_path)["']?\s*:\s*["']?([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)""",
    re.MULTILINE,
)
# Round 6 (from lmdeploy): a device-backend layer of the repository's own code with a CUDA backend in it
# (`pkg/backends/cuda/`, `pkg/platforms/cuda.py`): an engine built to swap device backends, whose port is a new
# Neuron backend next to the CUDA one. A repository-level finding (no file): the folder is in its message.
BACKEND_RULE = "cuda-device-backend"
_BACKEND_LAYER = re.compile(r"^((?:[\w.-]+/)*?(?:backends?|platforms?)/cuda)(?:/|\.py$|_\w+\.py$)")
# setup.py runs on the build host, never on the device: its torch.cuda probes (is_available, device properties,
# `BUILD_TARGET == "cuda"`) pick what to compile, and the build itself is the finding (cpp-extension, cuda-source).
_BUILD_HOST_RULES = frozenset({"torch-cuda"})
# `is_gptqmodel_available(`: a call (not a definition) of an availability helper named after a package.
_AVAILABLE = re.compile(r"(?<!def )(?<![\w.])(?:[\w.]*\.)?is_([a-z0-9_]+?)_available\(")
# torch-xla serves TPUs as well as Neuron: its imports (and Lightning's XLA strategies) name a Neuron path only
# in a file that does not say it is for TPUs (issue 30: Composer's DeviceTPU is not its Neuron device).
_XLA_IMPORTS = (
    "imports torch_xla",
    "imports lightning.fabric.strategies.xla",
    "imports lightning.fabric.accelerators.xla",
    "imports lightning.pytorch.strategies.xla",
    "imports lightning.pytorch.accelerators.xla",
)
_TPU = re.compile(r"TPU|(?<![a-z])tpu(?![a-z])")
_NEURON_WORD = re.compile(r"(?i)neuron")


def _tpu_only(text: str) -> bool:
    """Whether a Python file's code (comments aside) names TPUs and never Neuron."""
    if "tpu" not in text.lower():
        return False
    code = _blank_comments(text)
    return _TPU.search(code) is not None and _NEURON_WORD.search(code) is None


def _on_neuron_path(findings: list[Finding]) -> list[Finding]:
    """A file that is itself on a Neuron path (it imports optimum.neuron, sets NEURON_* variables, installs
    Neuron packages) is Neuron code: its other findings become informational, since there
    `attn_implementation="flash_attention_2"` is Optimum Neuron's NKI kernel and torchrun counts
    NeuronCores (issue 30)."""
    neuron_files = {f.file for f in findings if f.rule == NEURON_PATH_RULE and f.file is not None}
    if not neuron_files:
        return findings
    return [
        replace(
            f,
            impact=dict.fromkeys(f.impact, "info"),
            message=f"{f.message} (in a file on the Neuron path)",
        )
        if f.file in neuron_files and f.rule != NEURON_PATH_RULE and f.rule != REVIEW_RULE
        else f
        for f in findings
    ]


def scan_code(directory: str | Path, *, task: Task = "inference") -> ScanReport:
    """Scan a repository directory for what stands between it and Neuron, for inference or training.
    Never runs its code."""
    root = Path(directory)
    if task not in TASKS:
        raise InputError(f"Unknown task {task!r}.", f"pass --task {' or --task '.join(TASKS)}.")
    if not root.is_dir():
        raise InputError(f"{root} is not a directory.", "pass the root folder of the repository to scan.")
    start = time.perf_counter()
    kb = knowledge()
    scanner = _Scanner(kb, root)
    scanner.run()
    if scanner.files == 0 and not scanner.findings:
        raise InputError(
            f"{root} holds no files to scan (folders named {', '.join(sorted(SKIP_DIRS)[:3])}, ... are skipped).",
            "pass the root folder of a repository that holds its source files.",
        )
    findings = sorted(
        task_findings(kb, _on_neuron_path(scanner.findings), task),
        key=lambda f: (f.file or "", f.line or 0, f.rule),
    )
    per_target, effort = verdicts(kb, kind="code", findings=findings, task=task)
    return ScanReport(
        subject=str(directory),
        kind="code",
        target_verdicts=per_target,
        findings=tuple(findings),
        effort_weeks=effort,
        method="static analysis",
        task=task,
        assumptions=(
            "text and ast only: the repository is never imported or executed",
            f"skipped folders: {', '.join(sorted(SKIP_DIRS))}",
            "torch-specific rules (methods, string 'cuda' arguments, data-dependent control flow) "
            "apply to files that mention torch",
            "light data flow: a string assigned to a plain name in a file ('cuda', 'nccl', either arm of "
            "`a if c else b`, an environment default) is matched where the name is passed to a call",
            "a Python source that cannot be read or parsed makes every target 'needs-work' (review it by hand)",
            f"{scanner.parsed} of {scanner.python_files} Python files parsed: the others hold none of the "
            "names the rules look for (so a syntax error in them is not reported); a string value spelled "
            "with escapes or split into adjacent literals ('cu' 'da') is not seen",
        ),
        seconds=time.perf_counter() - start,
        files_scanned=scanner.files,
    )
