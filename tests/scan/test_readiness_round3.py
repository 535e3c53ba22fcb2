"""Issue 30, third round: rules written from the earlier held-out sets (Axolotl's kernel and Ray switches,
CUDA image tags, AWQ checkpoints in configs, cuDNN environment switches, device-keyed backend tables, cloned
sources, requirements folders, namespace packages, TPU-only XLA code, import probes)."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport


def _where(report: ScanReport, rule: str) -> list[str]:
    return locations(report, rule)


def test_axolotl_kernel_and_ray_switches_in_configs(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "lora-kernels.yml": (
                "adapter: lora\nlora_dropout: 0\n# lora_mlp_kernel: true\nlora_mlp_kernel: true\n"
                "lora_qkv_kernel: true\nlora_o_kernel: false\n"
            ),
            "lora-ray.yml": "adapter: lora\nuse_ray: true\nray_num_workers: 4\n",
            "no-ray.yml": "use_ray: false\n",
        },
    )
    assert _where(report, "triton-kernel") == ["lora-kernels.yml:4", "lora-kernels.yml:5"]
    assert _where(report, "ray-gpu") == ["lora-ray.yml:2"]
    # two switches in one config are one change to that file, not two kernel ports
    items = {w.item: w for w in report.target_verdicts["trainium2"].work_items}
    single = _scan(tmp_path / "one", {"k.yml": "lora_mlp_kernel: true\n"})
    one = {w.item: w for w in single.target_verdicts["trainium2"].work_items}
    assert items["port-custom-ops"].weeks == one["port-custom-ops"].weeks


def test_cuda_image_tags_awq_checkpoints_cudnn_env_and_tensor_parallel_flags(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "docker/Dockerfile": "ARG BASE_IMAGE=hiyouga/pytorch:th2.6.0-cu124-flashattn2.7.4-devel\nFROM ${BASE_IMAGE}\n",
            "docker/Dockerfile.cpu": "FROM python:3.11-slim\nRUN echo cu124\n",
            "sft_awq.yaml": "model_name_or_path: TechxGenus/Meta-Llama-3-8B-Instruct-AWQ\nstage: sft\n",
            "sft.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n",
            "serve.sh": "vllm serve m --quantization awq\n",
            "pretrain.sh": "TORCH_CUDNN_V8_API_ENABLED=1 torchrun --nproc_per_node 8 train.py\n",
            "tp.sh": "python train.py --tensor_parallel_degree 2\npython train.py --tensor_parallel_degree 1\n",
        },
    )
    assert _where(report, "cuda-base-image") == ["docker/Dockerfile:2"]
    assert _where(report, "gpu-quant-kernels") == ["serve.sh:1", "sft_awq.yaml:1"]
    assert _where(report, "cuda-backend-flags") == ["pretrain.sh:1"]
    assert _where(report, "dtensor-tp") == ["tp.sh:1"]


def test_cloned_sources_requirement_files_and_requirements_folders(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "Dockerfile": (
                "FROM python:3.11\n"
                "RUN git clone --depth 1 -b v0.12.0 https://github.com/vllm-project/vllm.git && cd vllm && pip install -e .\n"
                "RUN pip install -r requirements/metrics.txt -r requirements/deepspeed.txt\n"
                "RUN git clone https://github.com/deepseek-ai/DeepEP.git\n"
            ),
            "server/Makefile-awq": "awq:\n\tgit clone https://github.com/huggingface/llm-awq\n",
            "requirements/triton-kernels.txt": "triton_kernels @ git+https://github.com/triton-lang/triton.git\n",
            "requirements/docs.txt": "sphinx\n",
        },
    )
    assert _where(report, "vllm-cuda") == ["Dockerfile:2"]
    assert _where(report, "deepspeed") == ["Dockerfile:3"]
    assert _where(report, "gpu-quant-kernels") == ["server/Makefile-awq:2"]
    assert _where(report, "triton") == ["requirements/triton-kernels.txt:1"]


def test_namespace_packages_are_the_repositorys_own_code(tmp_path: Path) -> None:
    """A package folder without __init__.py (megablocks/layers/) is still the repository's own code; a
    single-part import of a library named like a folder still counts."""
    report = _scan(
        tmp_path,
        {
            "megablocks/layers/mpu.py": "import torch\nfrom megablocks.layers.arguments import Arguments\n",
            "megablocks/layers/gelu.py": "import stk\n",
            "kernels/readme.py": "x = 1\n",
            "use_hub.py": "from kernels import get_kernel\n",
        },
    )
    assert _where(report, "megablocks") == ["megablocks/layers/gelu.py:1"]  # stk, a real dependency
    assert _where(report, "kernels-hub") == ["use_hub.py:1"]


def test_tpu_only_xla_code_and_import_probes_are_not_neuron_paths(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "device_tpu.py": (
                "import torch\n\nclass DeviceTPU:\n    def __init__(self):\n"
                "        import torch_xla.core.xla_model as xm\n        self.device = xm.xla_device()\n"
            ),
            "probe.py": (
                "import torch\n\ndef is_xla_installed():\n    try:\n        import torch_xla\n"
                "        del torch_xla\n        return True\n    except ImportError:\n        return False\n\n"
                "def device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            ),
            "device_neuron.py": (
                "import os\nimport torch\n\nclass DeviceNeuron:\n    def __init__(self):\n"
                "        import torch_xla.core.xla_model as xm  # also runs on TPU\n"
                "        os.environ['PJRT_DEVICE'] = 'NEURON'\n"
            ),
        },
    )
    assert sorted({f.file for f in report.findings if f.rule == "neuron-path"}) == ["device_neuron.py"]
    assert "probe.py:12" in _where(report, "torch-cuda")  # its CUDA code is not on a Neuron path


def test_device_keyed_backend_tables_and_config_dicts(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "dist.py": (
                "import torch\n\nbackends = {\n    'cuda': 'nccl',\n    'cpu': 'gloo',\n}\n"
                "labels = {'name': 'nccl'}\n"
            ),
            "load.py": (
                "from transformers import AutoModelForCausalLM\n"
                "kwargs = {'attn_implementation': 'flash_attention_2', 'torch_dtype': 'auto'}\n"
                "model = AutoModelForCausalLM.from_pretrained('m', **kwargs)\n"
            ),
        },
    )
    assert _where(report, "nccl") == ["dist.py:4"]
    assert _where(report, "flash-attn") == ["load.py:2"]


def test_device_strings_built_from_a_rank_reach_device_map(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "hf_train.py": (
                "import torch\nfrom transformers import AutoModelForCausalLM\nlocal_rank = 0\n"
                'device_string = "cuda:" + str(local_rank)\n'
                "model = AutoModelForCausalLM.from_pretrained('m', device_map={'': device_string})\n"
                "other = AutoModelForCausalLM.from_pretrained('m', device_map={'': f'cuda:{local_rank}'})\n"
                "cpu = AutoModelForCausalLM.from_pretrained('m', device_map={'': 'cpu'})\n"
            ),
        },
    )
    assert _where(report, "torch-cuda") == ["hf_train.py:5", "hf_train.py:6"]
