"""Code scans: dependency files, Python calls, kernels and bad files, each finding with file:line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from silica.errors import InputError
from silica.scan import scan_code
from silica.scan.code_deps import packages_in


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


GPU_REPO = {
    "requirements.txt": "torch>=2.3\nflash-attn==2.5.8  # fast attention\nnumpy\n",
    "src/model.py": (
        "import torch\n"
        "from flash_attn import flash_attn_func\n"
        "\n"
        "def attend(q, k, v):\n"
        "    if q.abs().max().item() > 1e4:\n"
        "        q = q.double()\n"
        "    torch.cuda.synchronize()\n"
        "    return flash_attn_func(q.cuda(), k, v)\n"
    ),
    "csrc/rope.cu": "#include <cuda_runtime.h>\n\n__global__ void rope(float* x) {}\n",
    "csrc/rope.cuh": "#pragma once\n",
}


def _locations(report: object, rule: str) -> list[str]:
    return [f.location for f in report.findings if f.rule == rule]  # type: ignore[attr-defined]


def test_flash_attn_and_cuda_kernel_repo_needs_work_with_file_lines(tmp_path: Path) -> None:
    report = scan_code(_write(tmp_path, GPU_REPO))
    assert {v.verdict for v in report.target_verdicts.values()} <= {"needs-work", "blocked"}
    assert report.target_verdicts["trainium2"].verdict == "needs-work"
    assert _locations(report, "flash-attn") == ["requirements.txt:2", "src/model.py:2"]
    assert _locations(report, "cuda-source") == ["csrc/rope.cu:3", "csrc/rope.cuh:1"]
    assert _locations(report, "data-dependent-control-flow") == ["src/model.py:5"]
    assert _locations(report, "torch-cuda") == ["src/model.py:7", "src/model.py:8"]
    assert _locations(report, "float64") == ["src/model.py:6"]
    flash = next(f for f in report.findings if f.rule == "flash-attn")
    assert "NKI" in flash.alternative
    cu = next(f for f in report.findings if f.rule == "cuda-source")
    assert "NKI" in cu.alternative
    # work items (effort.yaml): remove CUDA-only kernels = flash-attn used in src/model.py at 0.5 (round 6:
    # its requirements.txt line only declares it, which adds nothing once code uses it);
    # port custom ops = base 0.5 + two kernel files at 2.0; make shapes static = control flow 0.25;
    # port device code = base 0.25 + torch.cuda in one file at 0.05 (issue 30: a change counts once per
    # file, however many call sites); float64 is informational.
    # 0.5 + 4.5 + 0.25 + 0.3 = 5.55, rounded up to the half week: 6.0
    items = {w.item: w.weeks for w in report.target_verdicts["trainium2"].work_items}
    assert items == {
        "remove-cuda-only-kernels": 0.5,
        "port-custom-ops": 4.5,
        "make-shapes-static": 0.25,
        "port-device-code": 0.3,
    }
    assert report.effort_weeks == 6.0


def test_clean_repository_is_ready(tmp_path: Path) -> None:
    report = scan_code(
        _write(
            tmp_path, {"requirements.txt": "numpy\ntorch\n", "app.py": "import torch\nx = torch.ones(2)\n"}
        )
    )
    assert report.to_dict()["target_verdicts"] == dict.fromkeys(report.target_verdicts, "ready")
    assert report.findings == ()


@pytest.mark.parametrize(
    ("source", "rule", "line"),
    [
        ("import torch as T\nT.cuda.manual_seed(0)\n", "torch-cuda", 2),
        ("import torch\ns = torch.cuda.Stream()\n", "cuda-streams-graphs", 2),
        ("import torch\nx = torch.zeros(2, device='cuda:1')\n", "torch-cuda", 2),
        ("from torch.utils.cpp_extension import CUDAExtension\n", "cpp-extension", 1),
        ("import triton\n\n@triton.jit\ndef k(x):\n    pass\n", "triton-kernel", 4),
        ("import torch\nz = torch.view_as_complex(x)\n", "complex-math", 2),
        ("import torch\nwhile torch.any(x > 0):\n    x = x - 1\n", "data-dependent-control-flow", 2),
        ("import torch\nidx = x.nonzero()\n", "dynamic-shape-op", 2),
        (
            "from transformers import AutoModel\n"
            "m = AutoModel.from_pretrained('x', attn_implementation='flash_attention_2')\n",
            "flash-attn",
            2,
        ),
        (
            "import torch\nfrom torch.nn.attention import SDPBackend\nb = SDPBackend.FLASH_ATTENTION\n",
            "cuda-attention-backend",
            3,
        ),
        ("import torch.distributed as dist\ndist.init_process_group(backend='nccl')\n", "nccl", 2),
        ("import bitsandbytes as bnb\n", "bitsandbytes", 1),
        ("from vllm import LLM\n", "vllm-cuda", 1),
        ("import deepspeed\n", "deepspeed", 1),
        ("import cupy as cp\n", "cupy", 1),
        ("from apex.optimizers import FusedAdam\n", "apex", 1),
        ("import xformers.ops\n", "xformers", 1),
    ],
)
def test_python_rules(tmp_path: Path, source: str, rule: str, line: int) -> None:
    report = scan_code(_write(tmp_path, {"m.py": source}))
    assert f"m.py:{line}" in _locations(report, rule), [(f.rule, f.location) for f in report.findings]


def test_torch_rules_stay_quiet_without_torch(tmp_path: Path) -> None:
    source = "import pandas as pd\nu = df.unique()\nif s.any():\n    pass\n"
    assert scan_code(_write(tmp_path, {"m.py": source})).findings == ()


def test_dependency_files(tmp_path: Path) -> None:
    report = scan_code(
        _write(
            tmp_path,
            {
                "pyproject.toml": (
                    '[project]\nname = "x"\ndescription = "no xformers"\n'
                    'dependencies = [\n  "torch",\n  "bitsandbytes>=0.43",\n]\n'
                ),
                "setup.cfg": "[options]\ninstall_requires =\n    deepspeed\n",
                "environment.yml": "dependencies:\n  - python=3.11\n  - pip:\n    - xformers\n",
                "setup.py": (
                    "from setuptools import setup\nsetup(name='x', install_requires=['apex', 'numpy'])\n"
                ),
                "requirements-gpu.txt": "-r requirements.txt\ntriton==3.0\n",
            },
        )
    )
    got = {(f.rule, f.location) for f in report.findings}
    assert {
        ("bitsandbytes", "pyproject.toml:6"),
        ("deepspeed", "setup.cfg:3"),
        ("xformers", "environment.yml:4"),
        ("apex", "setup.py:2"),
        ("triton", "requirements-gpu.txt:2"),
    } <= got
    assert not any(f.rule == "xformers" and f.file == "pyproject.toml" for f in report.findings)


def test_bad_files_are_findings_not_crashes(tmp_path: Path) -> None:
    report = scan_code(
        _write(
            tmp_path,
            {
                "broken.py": "import torch\ndef f(:\n    return x.cuda()\n",
                "blob.py": b"\x00\x01\x02 torch",
                "latin.py": "import torch  # caf\xe9\n".encode("latin-1"),
                "requirements.txt": b"\xff\xfe\x00f\x00l",
            },
        )
    )
    rules: dict[str, set[str]] = {}
    for f in report.findings:
        rules.setdefault(f.location, set()).add(f.rule)
    assert rules["broken.py:2"] == {"unparsable-python", "unscanned-source"}
    assert rules["blob.py"] == {"binary-file", "unscanned-source"}
    assert rules["latin.py"] == {"unreadable-file", "unscanned-source"}
    assert rules["requirements.txt"] == {"binary-file"}
    # issue 15: a Python source the scan could not look at is never "ready"; the verdict names the files
    for v in report.target_verdicts.values():
        assert v.verdict == "needs-work"
        assert any("broken.py:2" in w and "blob.py" in w and "latin.py" in w for w in v.work)


def test_scan_never_imports_or_runs_the_repository(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran.txt"
    _write(
        tmp_path,
        {
            "setup.py": f"import torch\nopen({str(sentinel)!r}, 'w').write('x')\nraise SystemExit(1)\n",
            "pkg/__init__.py": f"import torch\nopen({str(sentinel)!r}, 'w').write('x')\n",
        },
    )
    scan_code(tmp_path)
    assert not sentinel.exists()


def test_skipped_folders(tmp_path: Path) -> None:
    _write(tmp_path, {".venv/lib/flash_attn/x.py": "import flash_attn\n", "node_modules/k.cu": "x"})
    report = scan_code(_write(tmp_path, {"app.py": "x = 1\n"}))
    assert report.findings == () and report.files_scanned == 1


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    """Issue 15: an empty directory (or one whose files are all in skipped folders) is not "ready"."""
    with pytest.raises(InputError, match="holds no files to scan"):
        scan_code(tmp_path)
    _write(tmp_path, {".venv/lib/x.py": "import flash_attn\n"})
    with pytest.raises(InputError, match="holds no files to scan"):
        scan_code(tmp_path)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        scan_code(tmp_path / "missing")


def test_requirement_lines_skip_options_and_comments() -> None:
    text = "# flash-attn in a comment\n-e .\n--index-url x\nflash_attn[full]>=2 ; platform_system=='Linux'\n"
    assert list(packages_in("requirements.txt", text)) == [("flash-attn", 4)]


def test_pyproject_reads_only_dependency_tables(tmp_path: Path) -> None:
    pyproject = (
        "[project]\n"  # 1
        'name = "x"\n'
        'keywords = ["triton", "cupy"]\n'
        "dependencies = [\n"
        '  "torch",\n'  # 5
        "  \"bitsandbytes>=0.43; platform_system == 'Linux'\",\n"
        "]\n"
        'optional-dependencies.gpu = ["flash-attn>=2"]\n'
        "\n"
        "[build-system]\n"  # 10
        'requires = ["setuptools", "triton"]\n'
        "\n"
        "[tool.ruff]\n"
        'extend-exclude = ["apex", "deepspeed"]\n'
        "\n"  # 15
        "[tool.poetry.dependencies]\n"
        'python = "^3.11"\n'
        'vllm = { version = "^0.5", source = "xformers" }\n'
        "\n"
        "[tool.poetry.group.gpu.dependencies]\n"  # 20
        'mamba-ssm = "*"\n'
        "\n"
        "[dependency-groups]\n"
        'trt = ["tensorrt"]\n'
    )
    report = scan_code(_write(tmp_path, {"pyproject.toml": pyproject}))
    assert {(f.rule, f.location) for f in report.findings} == {
        ("bitsandbytes", "pyproject.toml:6"),
        ("flash-attn", "pyproject.toml:8"),
        ("triton", "pyproject.toml:11"),
        ("vllm-cuda", "pyproject.toml:18"),
        ("mamba-kernels", "pyproject.toml:21"),
        ("tensorrt", "pyproject.toml:24"),
    }


def test_invalid_pyproject_is_read_within_its_dependency_tables(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nkeywords = ["cupy"]\ndependencies = [\n  "xformers",\n[tool.ruff]\nexclude = ["apex"]\n'
    )
    report = scan_code(_write(tmp_path, {"pyproject.toml": pyproject}))
    got = {(f.rule, f.location) for f in report.findings}
    assert got == {("xformers", "pyproject.toml:4"), ("unparsable-dependencies", "pyproject.toml")}
    problem = next(f for f in report.findings if f.rule == "unparsable-dependencies")
    assert "not valid TOML" in problem.message
    assert set(problem.impact.values()) == {"info"}


def test_unreadable_folder_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    _write(tmp_path, {"ok/a.py": "import flash_attn\n", "locked/b.py": "import xformers\n"})
    locked = str(tmp_path / "locked")
    real = os.scandir

    def scandir(path: str) -> object:  # as for a folder without read permission (tests may run as root)
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = scan_code(tmp_path)
    problem = next(f for f in report.findings if f.rule == "unreadable-directory")
    assert problem.location == "locked"
    assert "PermissionError" in problem.message and "Permission denied" in problem.message
    assert set(problem.impact.values()) == {"info"}
    assert _locations(report, "flash-attn") == ["ok/a.py:1"]
    assert _locations(report, "xformers") == []


# Each source needs the syntax tree: the text prefilter must not skip it, and the rule must be found.
PREFILTER_CASES = [
    ("import torch\nif (x.sum() >\n        y.item()):\n    pass\n", "data-dependent-control-flow", 2),
    ("import torch\nwhile x.\\\n      any():\n    pass\n", "data-dependent-control-flow", 2),
    ("import torch\nv = (x.  # a comment\n     cuda())\n", "torch-cuda", 2),
    (
        "import torch\nfrom torch import (nn,  # (layers)\n    any)\nif any(x):\n    pass\n",
        "data-dependent-control-flow",
        4,
    ),
    ("import torch\nimport torch.any as tany\nif tany(x):\n    pass\n", "data-dependent-control-flow", 3),
    ("import torch\nif x.item() > 0: y = 1\n", "data-dependent-control-flow", 2),
    ("import torch\r\nif (x.sum() >\r\n        y.item()):\r\n    pass\r\n", "data-dependent-control-flow", 2),
    ("import torch\nif d[')]':\n      x.item()]:\n    pass\n", "data-dependent-control-flow", 2),
    (
        "import torch\nx = torch.\uff43\uff55\uff44\uff41.synchronize()\n",
        "torch-cuda",
        2,
    ),  # NFKC: fullwidth cuda
    (
        "from torch.utils import cpp_extension as ce\nce.load(name='k', sources=['k.cu'])\n",
        "cpp-extension",
        2,
    ),
    ("import torch as T\nT.compile(m, mode='reduce-overhead')\n", "inductor-modes", 2),
    ("import torch\nif f(f\"{d['(']}\",\n     x.item()):\n    pass\n", "data-dependent-control-flow", 2),
    ('import torch\nif x == """a\nb""" or y.all():\n    pass\n', "data-dependent-control-flow", 2),
    (
        "import torch\nwhile (a and  # it's long\n       b and\n       x.any()):\n    pass\n",
        "data-dependent-control-flow",
        2,
    ),
]


@pytest.mark.parametrize(("source", "rule", "line"), PREFILTER_CASES)
def test_prefilter_never_skips_a_match(tmp_path: Path, source: str, rule: str, line: int) -> None:
    from silica.scan.knowledge import knowledge
    from silica.scan.python_rules import PythonMatcher

    matcher = PythonMatcher(knowledge().code_rules)
    assert matcher.needs_ast(source, uses_torch="torch" in source)
    (tmp_path / "m.py").write_bytes(source.encode())
    report = scan_code(tmp_path)
    assert f"m.py:{line}" in _locations(report, rule), [(f.rule, f.location) for f in report.findings]


def test_prefilter_skips_files_no_rule_can_match() -> None:
    from silica.scan.knowledge import knowledge
    from silica.scan.python_rules import PythonMatcher

    matcher = PythonMatcher(knowledge().code_rules)
    source = (
        '"""All layers; any device."""\nimport torch\n\n\ndef step(loss, log):\n'
        '    if log and "loss" in log:  # it\'s "printed" (later)\n        log["loss"] = loss.item()\n'
        "    if (\n        log is not None  # a test over lines (with a comment)\n        and step % 10 == 0\n"
        "    ):\n        print(loss.item())\n"
        "    return [t.tolist() for t in loss.all_gather()]\n"
    )
    assert matcher.scan(ast.parse(source), uses_torch=True) == []  # nothing to find: skipping is right
    assert not matcher.needs_ast(source, uses_torch=True)


def _rules_at(report: object) -> set[tuple[str, str]]:
    return {(f.location, f.rule) for f in report.findings}  # type: ignore[attr-defined]


def test_light_data_flow_finds_values_where_they_are_used(tmp_path: Path) -> None:
    """Issue 16: a device, backend or dtype held in a variable is found where it is used."""
    code = (
        "import os\n"  # 1
        "import torch\n"
        "device = 'cuda' if torch.backends.mps.is_available() is False else 'cpu'\n"
        "backend = os.environ.get('BACKEND', 'nccl')\n"
        "device_type = 'cuda'\n"  # 5
        "x = torch.ones(2).to(device)\n"
        "torch.distributed.init_process_group(backend=backend)\n"
        "ctx = torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16)\n"
        "name = 'gloo'\n"
        "torch.distributed.init_process_group(backend=name)\n"  # 10: not a finding
    )
    report = scan_code(_write(tmp_path, {"train.py": code}))
    found = _rules_at(report)
    assert ("train.py:6", "torch-cuda") in found
    assert ("train.py:7", "nccl") in found
    assert ("train.py:8", "amp-autocast-cuda") in found
    assert not any(loc == "train.py:10" for loc, _ in found)
    message = next(f.message for f in report.findings if f.location == "train.py:7")
    assert "held in `backend`, line 4" in message


def test_distributed_and_training_rules(tmp_path: Path) -> None:
    files = {
        "model.py": (
            "import torch\n"
            "from fairscale.nn.model_parallel.layers import ColumnParallelLinear\n"
            "from megatron.core import parallel_state\n"
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
            "from torch.distributed.tensor.parallel import parallelize_module\n"  # 5
            "import deepspeed\n"
            "from deepspeed.pipe import PipelineModule\n"
            "from transformers import Trainer, TrainingArguments\n"
            "scaler = torch.cuda.amp.GradScaler()\n"
            "torch.backends.cudnn.benchmark = True\n"  # 10
            "m = torch.compile(ColumnParallelLinear(2, 2), mode='max-autotune')\n"
            "args = TrainingArguments('o', fp16=True, deepspeed='ds.json')\n"
            "g = torch.cuda.CUDAGraph()\n"
            "torch.distributed.init_process_group('nccl')\n"
        ),
        # round 6: NCCL_DEBUG alone is logging (not flagged); NCCL_SOCKET_IFNAME tunes the transport
        "launch.sh": "export NCCL_SOCKET_IFNAME=eth0 NCCL_DEBUG=INFO\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=2 model.py --fp16\n",
        "Dockerfile": "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\nRUN pip install torch\n",
        "ds_config.json": '{"zero_optimization": {"stage": 3}}\n',
        "accelerate.yaml": "distributed_type: MULTI_GPU\n",
    }
    found = _rules_at(scan_code(_write(tmp_path, files), task="training"))
    expected = {
        ("model.py:2", "fairscale-model-parallel"),
        ("model.py:3", "megatron-core"),
        ("model.py:4", "fsdp"),
        ("model.py:5", "dtensor-tp"),
        ("model.py:6", "deepspeed"),
        ("model.py:7", "deepspeed-pipeline"),
        ("model.py:12", "hf-trainer"),
        ("model.py:12", "deepspeed-config"),
        ("model.py:9", "amp-gradscaler"),
        ("model.py:10", "cuda-backend-flags"),
        ("model.py:11", "torch-compile"),
        ("model.py:11", "inductor-modes"),
        ("model.py:11", "fairscale-model-parallel"),
        ("model.py:12", "fp16-training"),
        ("model.py:13", "cuda-streams-graphs"),
        ("model.py:14", "nccl"),
        ("launch.sh:1", "nccl-env"),
        ("launch.sh:2", "cuda-visible-devices"),
        ("launch.sh:2", "gpu-launcher"),
        ("launch.sh:2", "fp16-training"),
        ("Dockerfile:1", "cuda-base-image"),
        ("ds_config.json:1", "deepspeed-config"),
        ("accelerate.yaml:1", "accelerate-config"),
    }
    assert expected <= found, sorted(expected - found)


def test_training_only_rules_are_informational_for_inference(tmp_path: Path) -> None:
    files = {"t.py": "import torch\nscaler = torch.cuda.amp.GradScaler()\n"}
    inference = scan_code(_write(tmp_path, files))
    assert inference.verdict("trainium2") == "ready"
    assert [set(f.impact.values()) for f in inference.findings] == [{"info"}]
    training = scan_code(tmp_path, task="training")
    assert training.verdict("trainium2") == "needs-work"
    with pytest.raises(InputError):
        scan_code(tmp_path, task="serving")  # type: ignore[arg-type]
