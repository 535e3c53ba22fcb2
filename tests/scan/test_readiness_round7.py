"""Issue 30, seventh round: rules written as classes from held-out-7's misses and false positives, each tested on
new synthetic examples (none is a line of the corpus).

One table of CUDA-only libraries (packages, aliases, top-level imports) is looked up by every file kind: pip with
options before its subcommand, uv/poetry add, repositories cloned or built by name (`make build-X`, image stages),
a local install's extras, checkouts on PYTHONPATH, images named after CUDA engines. GPU requests in any
orchestrator, launchers held in strings or built as argv lists, nvidia-smi, Python run from shell, CUDA wheel
indexes, Unsloth, trainer FP8 switches, a repository's own CUDA extensions, and existing Neuron paths in every
file kind (with the verdict and effort that say "switch to the existing path")."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport


def _where(report: ScanReport, rule: str, *, info: bool = False) -> list[str]:
    return locations(report, rule, info=info)


def _items(report: ScanReport, target: str = "trainium2") -> dict[str, float]:
    return {w.item: w.weeks for w in report.target_verdicts[target].work_items}


def test_one_library_table_for_every_file_kind(tmp_path: Path) -> None:
    """A library is found wherever a file names it to install or build it, under any of its names."""
    report = _scan(
        tmp_path,
        {
            "requirements-gpu.txt": "megablocks>=0.6\n",
            "tools/setup_env.sh": (
                "pip --disable-pip-version-check -v install megablocks==0.6.1\n"
                "uv add deep-gemm\n"
                "poetry add bitsandbytes@^0.44\n"
                "# pip install xformers\n"
            ),
            "docker/Dockerfile": (
                "FROM ubuntu:22.04 AS base\n"
                "RUN git clone https://github.com/Dao-AILab/flash-attention.git /opt/fa && cd /opt/fa && "
                "pip install .\n"
                "RUN pip -q install --no-build-isolation git+https://github.com/NVIDIA/TransformerEngine.git@v2\n"
                "FROM base AS exllamav2-kernels-builder\n"
                "RUN make build-vllm-cuda\n"
                'RUN pip install ".[bnb, serve]"\n'
            ),
        },
    )
    assert _where(report, "megablocks") == ["requirements-gpu.txt:1", "tools/setup_env.sh:1"]
    assert _where(report, "other-cuda-kernels") == ["tools/setup_env.sh:2"]
    assert _where(report, "bitsandbytes") == ["docker/Dockerfile:6", "tools/setup_env.sh:3"]
    assert _where(report, "xformers") == []  # a comment
    assert _where(report, "flash-attn") == ["docker/Dockerfile:2"]
    assert _where(report, "transformer-engine") == ["docker/Dockerfile:3"]
    assert _where(report, "gpu-quant-kernels") == ["docker/Dockerfile:4"]
    assert _where(report, "vllm-cuda") == ["docker/Dockerfile:5"]


def test_cuda_index_builds_and_local_names(tmp_path: Path) -> None:
    """A package that counts only in CUDA builds counts when installed from a CUDA wheel index; a build target
    named after the repository's own package is its own code; a checkout on PYTHONPATH is that library."""
    report = _scan(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "vllm-lite"\nversion = "0.1"\n',
            "vllm_lite/__init__.py": "",
            "install.sh": (
                "pip install tilelang --extra-index-url https://wheels.example.org/whl/cu126\n"
                "make build-vllm-lite\n"
                "export PYTHONPATH=/opt/Megatron-LM:$PYTHONPATH\n"
            ),
            "install_cpu.sh": "pip install tilelang\n",
        },
    )
    assert _where(report, "cuda-kernel-dsl") == ["install.sh:1"]
    assert _where(report, "vllm-cuda") == []
    assert _where(report, "megatron-core") == ["install.sh:3"]


def test_images_named_after_engines_or_tagged_cuda(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "chart/values.yaml": (
                "servingEngine:\n  repository: acme/vllm-openai\n  tag: v0.9\n"
                "router:\n  repository: acme/router\n"
                "# repository: lmsysorg/sglang\n"
            ),
            "deploy/rollout.yaml": "containers:\n  - image: ghcr.io/acme/sglang:v0.4.9-cu126\n",
            "run_server.sh": (
                "SERVE_IMAGE=myorg/llm-server:cu118-runtime\n"
                "BASE_IMAGE=python:3.12-slim\n"
                "docker run --runtime=nvidia -p 8000:8000 $SERVE_IMAGE\n"
                "docker run --rm busybox true\n"
            ),
            "run_neuron.sh": "NEURON_IMAGE=public.ecr.aws/neuron/pytorch-inference-neuronx:2.5.1\n",
        },
        task="inference",
    )
    assert _where(report, "vllm-cuda") == ["chart/values.yaml:2"]
    assert _where(report, "sglang") == ["deploy/rollout.yaml:2"]
    assert _where(report, "cuda-base-image") == [
        "deploy/rollout.yaml:2",
        "run_server.sh:1",
        "run_server.sh:3",
    ]
    assert _where(report, "neuron-path", info=True) == ["run_neuron.sh:1"]


def test_gpu_requests_in_any_orchestrator(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "k8s/job.yaml": "resources:\n  limits:\n    nvidia.com/mig-3g.40gb: 1\n    cpu: 8\n",
            "helm/values.yaml": "engine:\n  requestGPU: 2\n",
            "helm/values-cpu.yaml": "engine:\n  requestGPU: 0\n",
            "helm/templates/_res.tpl": '{{- default "nvidia.com/gpu" .Values.gpuType }}\n',
            "cluster/create.sh": (
                "eksctl create nodegroup --cluster llm --node-type p4d.24xlarge --nodes 2\n"
                "eksctl create nodegroup --cluster llm --node-type m5.xlarge --nodes 2\n"
                "gcloud container node-pools create gpu --accelerator type=nvidia-l4,count=1\n"
                "ray start --head --num-gpus=4\n"
            ),
            "jobs/train.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:a100:4\n# not a --gres=gpu:8 request\n",
        },
    )
    assert _where(report, "k8s-gpu") == [
        "cluster/create.sh:1",
        "cluster/create.sh:3",
        "helm/templates/_res.tpl:1",
        "helm/values.yaml:2",
        "k8s/job.yaml:3",
    ]
    assert _where(report, "ray-gpu") == ["cluster/create.sh:4"]
    # reported (its counterpart is in the finding) but not sized: the launcher change covers the job script
    assert _where(report, "slurm-gpu", info=True) == ["jobs/train.sbatch:2"]


def test_launchers_nvidia_smi_and_python_in_shell(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "scripts/run.sh": (
                'CMD="deepspeed --num_nodes 1 pretrain.py"\n'
                "NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())')\n"
                "nvidia-smi --query-gpu=name,memory.total --format=csv\n"
                "# nvidia-smi -L\n"
            ),
            "scripts/Dockerfile": "FROM ubuntu:22.04\nRUN nvidia-smi || true\n",
            "launch.py": (
                '"""Launch with torchrun on each node."""\n'
                "import subprocess\n\n"
                'subprocess.run(["torchrun", "--nproc_per_node", "2", "train.py"], check=True)\n'
            ),
            "doc.py": '"""Run it under torchrun --nproc_per_node 8."""\n',
        },
    )
    assert _where(report, "gpu-launcher") == ["launch.py:4", "scripts/run.sh:1"]
    assert _where(report, "torch-cuda") == ["scripts/run.sh:2"]
    assert _where(report, "nvidia-smi") == ["scripts/Dockerfile:2", "scripts/run.sh:3"]


def test_cuda_torch_index_unsloth_fp8_and_quantization_switches(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "demo"\nversion = "0.1"\n'
                '[[tool.uv.index]]\nname = "torch-gpu"\nurl = "https://download.pytorch.org/whl/cu126"\n'
                '[[tool.uv.index]]\nname = "torch-cpu"\nurl = "https://download.pytorch.org/whl/cpu"\n'
            ),
            "requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.4.0\n",
            "setup.sh": "uv sync --extra cuda\n",
            "setup_cpu.sh": "uv sync --extra cpu\n",
            "train.sh": (
                "python train.py --fp8 --use_unsloth True\n"
                "python pretrain.py --fp8-format hybrid --use_unsloth False\n"
                "vllm bench --kv-cache-dtype fp8\n"
            ),
            "recipes/sft.yml": "use_unsloth: true\nquantization: int8\n",
            "recipes/serve.yml": "quantization: awq\n",
            "sft.py": "from unsloth import FastLanguageModel\n",
        },
    )
    assert _where(report, "cuda-torch-index") == ["pyproject.toml:6", "requirements.txt:1", "setup.sh:1"]
    assert _where(report, "unsloth") == ["recipes/sft.yml:1", "sft.py:1", "train.sh:1"]
    assert _where(report, "fp8-cuda-matmul") == ["train.sh:1"]
    assert _where(report, "bitsandbytes") == ["recipes/sft.yml:2"]


def test_imports_of_the_repositorys_own_cuda_extensions(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.py": (
                "from setuptools import setup\n"
                "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                'setup(name="fastq", ext_modules=[CUDAExtension("fastq._gemm", ["csrc/gemm.cu"])],\n'
                '      cmdclass={"build_ext": BuildExtension})\n'
            ),
            "fastq/__init__.py": "",
            "fastq/ops.py": "import torch\nfrom . import _gemm\n\ndef mm(a, b):\n    return _gemm.mm(a, b)\n",
            "fastq/utils.py": "from . import ops\n",
        },
        task="inference",
    )
    assert _where(report, "cpp-extension") == ["fastq/ops.py:2", "setup.py:2", "setup.py:3"]


def test_existing_neuron_paths_in_every_file_kind(tmp_path: Path) -> None:
    """Neuron runtime settings in any spelling, Neuron collectives, neuron_parallel_compile, Neuron DLC images,
    NKI and vLLM's Neuron device are existing Neuron paths; the files on that path are not CUDA work, and the
    verdict and effort say to switch to it."""
    report = _scan(
        tmp_path,
        {
            "conf/llama.yaml": "trainer:\n  devices: 32\nneuron_rt_exec_timeout: 90\nflash_attention: true\n",
            "run.sh": 'PRE="neuron_parallel_compile"\n$PRE torchrun --nproc_per_node 32 train.py\n',
            "env.sh": "export CCOM_SOCKET_IFNAME=ens5\n",
            "docker/Dockerfile": "FROM public.ecr.aws/neuron/pytorch-training-neuronx:2.5.1\n",
            "kernels/attn.py": "import neuronxcc.nki as nki\n",
            "serve.sh": "vllm serve meta-llama/Llama-3.1-8B --device neuron\n",
            "patches/lightning_neuron.py": (
                "import lightning.fabric.accelerators.xla as xla\n\n"
                "def _parse_tpu_devices(devices):\n    return devices\n"
            ),
        },
    )
    neuron = _where(report, "neuron-path", info=True)
    for where in (
        "conf/llama.yaml:3",
        "run.sh:1",
        "env.sh:1",
        "docker/Dockerfile:1",
        "kernels/attn.py:1",
        "serve.sh:1",
        "patches/lightning_neuron.py:1",
    ):
        assert where in neuron, (where, neuron)
    # on the Neuron path, flash_attention is NKI's and torchrun counts NeuronCores: nothing to port there
    assert _where(report, "flash-attn") == [] and _where(report, "gpu-launcher") == []
    tv = report.target_verdicts["trainium2"]
    assert tv.work[0].startswith("switch to the existing Neuron path")
    assert "switch-to-neuron-path" in _items(report)
    assert report.effort_weeks <= 1.5


def test_effort_classes_of_round_seven(tmp_path: Path) -> None:
    """An engine run only as a prebuilt image is a declaration; a launcher flag that switches on a feature the
    repository's Python implements is part of that change; a repository that already trains on Neuron pays its
    training check at the Neuron-path share."""
    image_only = _scan(
        tmp_path / "img",
        {"deploy.yaml": "containers:\n  - image: vllm/vllm-openai:v0.9.0\n"},
        task="inference",
    )
    code = _scan(tmp_path / "code", {"serve.py": "from vllm import LLM\n"}, task="inference")
    assert _items(image_only)["remove-cuda-only-kernels"] < _items(code)["remove-cuda-only-kernels"]
    fp8_code = "import torch\n\ndef mm(a, b, s):\n    return torch._scaled_mm(a, b, scale_a=s, scale_b=s)\n"
    alone = _scan(tmp_path / "a", {"fp8.py": fp8_code})
    with_flag = _scan(tmp_path / "b", {"fp8.py": fp8_code, "run.sh": "python train.py --fp8\n"})
    extra = _items(with_flag)["validate-numerics"] - _items(alone)["validate-numerics"]
    assert 0 < extra < 0.5  # the flag is found (never "ready"), sized as part of the code's change
    plain = _scan(tmp_path / "p", {"train.py": "import torch\nx = torch.ones(2).cuda()\n"})
    neuron = _scan(
        tmp_path / "n",
        {
            "train.py": "import torch\nx = torch.ones(2).cuda()\n",
            "env.sh": "export NEURON_RT_LOG_LEVEL=INFO\n",
        },
    )
    assert _items(neuron)["validate-numerics"] < _items(plain)["validate-numerics"]


def test_neuron_devices_images_and_cuda_runtime_wheels(tmp_path: Path) -> None:
    """The TorchNeuron device named in code and any image built for Neuron are Neuron paths; a device dispatcher
    that compares with "neuron" is not; any of NVIDIA's CUDA runtime wheels is found by its name pattern."""
    report = _scan(
        tmp_path,
        {
            "run_native.py": "import torch\nmodel = torch.nn.Linear(2, 2).to('neuron')\n",
            "pick.py": "import torch\n\ndef pick(name):\n    if name == 'neuron':\n        return 1\n    return 0\n",
            "deploy/tgi.yaml": "containers:\n  - image: ghcr.io/example/neuronx-tgi:0.3\n",
            "env/install.sh": "pip install nvidia-cusparselt-cu12==0.6.3\n",
        },
        task="inference",
    )
    neuron = _where(report, "neuron-path", info=True)
    assert "run_native.py:2" in neuron and "deploy/tgi.yaml:2" in neuron
    assert not any(w.startswith("pick.py") for w in neuron)
    assert _where(report, "nvidia-wheels", info=True) == ["env/install.sh:1"]  # reported, not sized


def test_wheel_urls_cuda_libraries_and_the_nvidia_conda_channel(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "demo"\nversion = "0.1"\n'
                "[tool.uv.sources]\n"
                'liger-kernel = { url = "https://example.org/wheels/liger_kernel-0.5.0-py3-none-any.whl" }\n'
            ),
            "get.sh": "pip install https://example.org/w/deep_ep-1.1.0+cu126-cp311-cp311-linux_x86_64.whl\n",
            "docker/Dockerfile": (
                "FROM ubuntu:22.04\n"
                "RUN apt-get install -y libcublas-12-4 libcusparselt0\n"
                "RUN conda install -y magma -c nvidia/label/cuda-12.4.0\n"
                "RUN pip install https://example.org/w/requests-2.32.0-py3-none-any.whl\n"
            ),
        },
    )
    assert _where(report, "liger-kernel") == ["pyproject.toml:5"]
    assert _where(report, "other-cuda-kernels") == ["get.sh:1"]
    assert _where(report, "cuda-base-image") == ["docker/Dockerfile:2", "docker/Dockerfile:3"]


def test_kbit_preparation_follows_the_quantiser(tmp_path: Path) -> None:
    gptq = (
        "from transformers import AutoModelForCausalLM, GPTQConfig\n"
        "from peft import prepare_model_for_kbit_training\n"
        "m = AutoModelForCausalLM.from_pretrained('x', quantization_config=GPTQConfig(bits=4))\n"
        "m = prepare_model_for_kbit_training(m)\n"
    )
    bnb = gptq.replace("GPTQConfig(bits=4)", "BitsAndBytesConfig(load_in_4bit=True)").replace(
        "GPTQConfig", "BitsAndBytesConfig"
    )
    report = _scan(tmp_path, {"gptq_lora.py": gptq, "bnb_lora.py": bnb})
    assert _where(report, "gpu-quant-kernels") == ["gptq_lora.py:3"]
    assert [w.split(":")[0] for w in _where(report, "bitsandbytes")] == ["bnb_lora.py"] * 3
