"""Issue 30, fifth round: rules written from held-out-5 once it had been scanned (continued `pip install`
commands with comment lines, package names that are also launcher names, git+ requirement lines, JSON
Accelerate configs, launcher flags for bitsandbytes, FlashAttention and vLLM, FSDP and torch.compile keys in
configs, a library's compiled `*_cuda` extension)."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport


def _where(report: ScanReport, rule: str) -> list[str]:
    return locations(report, rule)


def test_continued_pip_install_runs_over_comment_lines_and_names_packages_not_launchers(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "docker/Dockerfile": (
                "FROM python:3.11\n"
                "RUN pip install -U \\\n"
                "        scipy \\\n"
                "        # quantization kernels for tests\n"
                "        aqlm[gpu]>=1.0.2 \\\n"
                "        deepspeed \\\n"
                '        "kernels<0.16"\n'
                "RUN pip install --no-build-isolation git+https://github.com/NetEase-FuXi/EETQ.git\n"
            ),
            # a command that ends is not continued by the next line
            "run.sh": "pip install numpy\n\ndeepspeed train.py --deepspeed ds.json\n",
        },
    )
    assert _where(report, "deepspeed") == ["docker/Dockerfile:2"]
    assert _where(report, "kernels-hub") == ["docker/Dockerfile:2"]
    assert _where(report, "gpu-quant-kernels") == ["docker/Dockerfile:2", "docker/Dockerfile:8"]
    assert _where(report, "gpu-launcher") == ["run.sh:3"]  # not the `deepspeed` package in the Dockerfile


def test_git_requirement_lines_and_library_extensions(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "apps/requirements.txt": (
                "git+https://github.com/Dao-AILab/causal-conv1d.git\n"
                "git+https://github.com/org/tools.git@v1#egg=cpm_kernels\nnumpy\n"
            ),
            "ops/conv.py": "import causal_conv1d_cuda\nimport my_scan_cuda\n",
        },
    )
    assert _where(report, "mamba-kernels") == ["apps/requirements.txt:1", "ops/conv.py:1"]
    assert _where(report, "gpu-quant-kernels") == ["apps/requirements.txt:2"]
    assert _where(report, "cpp-extension") == ["ops/conv.py:2"]  # the repository's own extension only


def test_json_accelerate_config_covers_its_fsdp_block(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "fsdp2.json": '{\n  "distributed_type": "FSDP",\n  "fsdp_config": {\n    "fsdp_version": 2\n  }\n}\n',
            "ds_config.json": '{\n  "zero_optimization": {"stage": 2}\n}\n',
            "cpu.json": '{\n  "distributed_type": "NO"\n}\n',
        },
    )
    assert _where(report, "accelerate-config") == ["fsdp2.json:2"]
    assert _where(report, "fsdp") == []  # the Accelerate finding names its FSDP block
    assert _where(report, "deepspeed-config") == ["ds_config.json:2"]


def test_launcher_flags_for_bnb_flash_attention_vllm_and_wrapped_torch_run(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "qlora.sh": "swift sft \\\n  --quant_method bnb \\\n  --quant_bits 4\n",
            "peft.sh": "python train.py --use_4bit_quantization True --bnb_4bit_compute_dtype bfloat16\n",
            "full.sh": "python train.py --use_4bit_quantization False --attn_impl sdpa --use_vllm false\n",
            "sft.sh": "swift sft --attn_impl flash_attn --use_vllm true\n",
            "hf.sh": "python train.py --attn_implementation=flash_attention_2\n",
            "debug.sh": "debugpy-run -m torch.distributed.run -p 5678 -- --nproc_per_node 2 run.py\n",
        },
    )
    assert _where(report, "bitsandbytes") == ["peft.sh:1", "qlora.sh:2"]
    assert _where(report, "flash-attn") == ["hf.sh:1", "sft.sh:1"]
    assert _where(report, "vllm-cuda") == ["sft.sh:1"]
    assert _where(report, "gpu-launcher") == ["debug.sh:1"]


def test_fsdp_and_compile_switches_in_configs(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "configs/llama.yaml": "distributed:\n  fsdp_type: full_shard\n  compile: true\n",
            "configs/small.yaml": "distributed:\n  fsdp_type: no_shard\n  compile: false\ncompile: null\n",
            "train.sh": "python train.py --torch_compile True\npython eval.py --torch_compile False\n",
        },
    )
    assert _where(report, "fsdp") == ["configs/llama.yaml:2"]
    assert _where(report, "torch-compile") == ["configs/llama.yaml:3", "train.sh:1"]


def test_availability_helpers_name_the_dependency_they_switch_on(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "lora/awq.py": (
                "from .utils import is_gptqmodel_available\n\n"
                "def dispatch(layer):\n"
                "    if is_gptqmodel_available() and layer.quantized:\n"
                "        return layer\n"
            ),
            "utils.py": "def is_gptqmodel_available():\n    return False\n# is_deepspeed_available() in a comment\n",
            "io.py": "def load():\n    return is_json_available()\n",
        },
    )
    assert _where(report, "gpu-quant-kernels") == ["lora/awq.py:4"]
    assert _where(report, "deepspeed") == []
