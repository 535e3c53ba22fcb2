"""Issue 30, fourth round: rules written from held-out-4 once it had been scanned (TRL's vLLM and trainer
switches, SGLang, CUDA kernel DSLs, MPT attention keys, CUDA builds in images, vendored quantisation kernels,
flash-attn's compiled extensions, branches on a CUDA device, a repository's own kernel wrappers)."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport


def _where(report: ScanReport, rule: str) -> list[str]:
    return locations(report, rule)


def test_trl_vllm_sglang_and_kernel_dsl_dependencies(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.py": (
                "from setuptools import setup\n_deps = ['trl[vllm]==0.18.0', 'accelerate==1.4.0']\n"
                "setup(name='x', install_requires=['quack-kernels>=0.3', 'tilelang==0.1.8'])\n"
            ),
            "grpo.yaml": "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_vllm: true\nuse_liger_kernel: true\n",
            "sft.yaml": "use_vllm: false\n",
            "train.slurm": "srun trl vllm-serve --model $MODEL &\n",
            "serve.slurm": 'srun bash -c "python -m sglang.launch_server --model-path m --tp 16"\n',
        },
    )
    assert _where(report, "vllm-cuda") == ["grpo.yaml:2", "setup.py:2", "train.slurm:1"]
    assert _where(report, "liger-kernel") == ["grpo.yaml:3"]
    assert _where(report, "sglang") == ["serve.slurm:1"]
    assert _where(report, "cuda-kernel-dsl") == ["setup.py:3"]  # quack-kernels; tilelang also builds for HIP


def test_mpt_attention_keys_cuda_builds_and_image_keys(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "yamls/mpt.yaml": "model:\n  attn_config:\n    attn_impl: flash\n",
            "yamls/mpt-torch.yaml": "model:\n  attn_config:\n    attn_impl: torch\n",
            "yamls/hf.yaml": "model:\n  name: hf_causal_lm\n  use_flash_attention_2: true\n",
            "Dockerfile": 'ARG BASE_IMAGE\nFROM $BASE_IMAGE\nENV TORCH_CUDA_ARCH_LIST="8.0 9.0"\n',
            "mcli/run.yaml": "image: mosaicml/llm-foundry:2.7.0_cu128-latest\nname: run\n",
            "k8s/pod.yaml": "image: python:3.11-slim\n",
        },
    )
    assert _where(report, "flash-attn") == ["yamls/hf.yaml:3", "yamls/mpt.yaml:3"]
    assert _where(report, "cuda-base-image") == ["Dockerfile:3", "mcli/run.yaml:1"]


def test_python_wrappers_quant_loaders_extensions_and_device_branches(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "app/train/llama_flash_attn_monkey_patch.py": "import torch\n",
            "app/train/train_lora.py": (
                "from app.train.llama_flash_attn_monkey_patch import replace_llama_attn_with_flash_attn\n"
                "from trl import GRPOTrainer, get_quantization_config\n"
                "trainer = GRPOTrainer(model=None, quantization=get_quantization_config(None))\n"
            ),
            "app/modules/awq.py": "def load():\n    from tinychat.utils import load_quant\n",
            "app/modules/gptq.py": "import os\nPATH = os.path.join('repositories/GPTQ-for-LLaMa')\n",
            "lit/rotary.py": "import torch\nimport rotary_emb\n",
            "lit/norm.py": (
                "import torch\n\ndef cast(t):\n    if t.device.type == 'cuda':\n"
                "        return t.to(torch.get_autocast_gpu_dtype())\n    return t\n"
                "def cpu(t):\n    return t.device.type == 'cpu'\n"
            ),
        },
    )
    assert _where(report, "flash-attn") == ["app/train/train_lora.py:1"]
    assert _where(report, "hf-trainer") == ["app/train/train_lora.py:3"]
    assert _where(report, "bitsandbytes") == ["app/train/train_lora.py:3"]
    assert _where(report, "gpu-quant-kernels") == ["app/modules/awq.py:2", "app/modules/gptq.py:2"]
    assert _where(report, "cpp-extension") == ["lit/rotary.py:2"]
    assert _where(report, "torch-cuda") == ["lit/norm.py:4"]
    assert _where(report, "amp-autocast-cuda") == ["lit/norm.py:5"]


def test_a_folder_of_python_subpackages_is_the_repositorys_own_package(tmp_path: Path) -> None:
    """mamba_ssm/ without __init__.py but with ops/ and modules/ is mamba's own package: its files importing
    mamba_ssm.utils are not a use of the mamba-ssm library; a folder with one sub-package is not enough."""
    report = _scan(
        tmp_path,
        {
            "mamba_ssm/ops/k.py": "from mamba_ssm.utils.determinism import autotune_configs\n",
            "mamba_ssm/modules/m.py": "from causal_conv1d import causal_conv1d_fn\n",
            "app/main.py": "import mamba_ssm\n",
            "app/sub/x.py": "x = 1\n",
        },
    )
    assert _where(report, "mamba-kernels") == ["mamba_ssm/modules/m.py:1"]
