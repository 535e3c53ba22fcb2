"""Issue 30, sixth round: rules written from held-out-6 once it had been scanned (feature switches in YAML
configs and launcher flags, CUDA images made from plain bases, wheels fetched or built for later installs,
Python run from shell scripts, Kubernetes GPU resources, other CUDA-only kernel libraries) and the precision
fixes (CPU-only CUDA_VISIBLE_DEVICES, NCCL_DEBUG, `--tf32 False`, forwarded settings, type annotations,
setup.py's build-host probes and ROCm branches)."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport, scan_code


def _where(report: ScanReport, rule: str) -> list[str]:
    return locations(report, rule, info=False)


def test_feature_switches_in_yaml_configs(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "configs/model.yaml": (
                "model:\n  flash_attention: true\n  init_device: cuda\n"
                "  # flash_attention: true\n  eval_device: cpu\n"
            ),
            "configs/off.yaml": "model:\n  flash_attention: false\n  init_device: meta\n",
            "configs/trainer/ddp.yaml": "accelerator: gpu\ndevices: 4\nstrategy: ddp\n",
            "configs/trainer/cpu.yaml": "accelerator: cpu\nstrategy: auto\n",
            "configs/experiment/base.yaml": (
                "defaults:\n  - override /optimizer: adamw-apex\n  - override /trainer: default\n"
            ),
            "configs/qlora.yaml": "bnb_4bit_quant_type: nf4\n",
        },
    )
    assert _where(report, "flash-attn") == ["configs/model.yaml:2"]
    assert _where(report, "torch-cuda") == ["configs/model.yaml:3", "configs/trainer/ddp.yaml:1"]
    assert _where(report, "ddp") == ["configs/trainer/ddp.yaml:3"]
    assert _where(report, "apex") == ["configs/experiment/base.yaml:2"]
    assert _where(report, "bitsandbytes") == ["configs/qlora.yaml:1"]


def test_launcher_flags_switched_on_and_off(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "on.sh": (
                "deepspeed train.py --bits 4 --tf32 True \\\n"
                "  --model.flash_attention=true --trainer.accelerator=gpu --strategy ddp\n"
            ),
            "off.sh": (
                "python train.py --bits 16 --tf32 False --model.flash_attention=false --accelerator cpu\n"
                "CUDA_VISIBLE_DEVICES='' pytest tests/\nCUDA_VISIBLE_DEVICES= python -m unittest\n"
                "export NCCL_DEBUG=INFO\n"
            ),
            "gpu.sh": "export CUDA_VISIBLE_DEVICES=0,1\nexport NCCL_SOCKET_IFNAME=eth0\n",
        },
    )
    for rule in ("bitsandbytes", "cuda-backend-flags", "flash-attn", "torch-cuda", "ddp"):
        assert [w.split(":")[0] for w in _where(report, rule)] == ["on.sh"], rule
    assert _where(report, "cuda-visible-devices") == ["gpu.sh:1"]
    assert _where(report, "nccl-env") == ["gpu.sh:2"]


def test_plain_base_images_made_cuda_images(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "docker/Dockerfile.conda": (
                "FROM ubuntu:24.04\nENV NVIDIA_VISIBLE_DEVICES all\n"
                "RUN conda install -y pytorch==2.2.2 pytorch-cuda=11.8 cuda-nvcc -c nvidia\n"
            ),
            "docker/Dockerfile.wheels": (
                "FROM ubuntu:24.04\nENV PATH=/usr/local/cuda/bin:$PATH\n"
                "RUN uv pip install --system torch --find-links https://download.pytorch.org/whl/nightly/triton\n"
            ),
            "docker/Dockerfile.cpu": (
                "FROM ubuntu:24.04\nRUN pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
            ),
            "cog.yaml": 'build:\n  gpu: true\n  python_packages:\n    - "bitsandbytes==0.41.0"\n    - "numpy"\n',
        },
    )
    assert _where(report, "cuda-base-image") == [
        "cog.yaml:1",
        "docker/Dockerfile.conda:2",
        "docker/Dockerfile.conda:3",
        "docker/Dockerfile.wheels:2",
    ]
    assert _where(report, "triton") == [
        "docker/Dockerfile.wheels:3"
    ]  # a --find-links page named for its package
    assert _where(report, "bitsandbytes") == ["cog.yaml:4"]  # Cog's python_packages are dependencies


def test_wheels_fetched_and_built_python_heredocs_and_wheel_loops(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "mypkg/__init__.py": "",
            "docker/prepare.sh": (
                'pip wheel --no-deps -w /wheels "git+https://github.com/deepseek-ai/DeepGEMM.git@${V}"\n'
                'pip download --no-deps -d /wheels "flash-attn-3==3.0.0"\n'
                "pip install git+https://github.com/Dao-AILab/flash-attention@v2.6.3#subdirectory=csrc/fused_dense_lib\n"
            ),
            "docker/install.sh": (
                "for package in deep_ep numpy; do\n"
                '    compgen -G "/wheels/${package}-*.whl" || exit 1\n'
                "done\n"
                "for f in a b; do echo $f; done\n"
                "python - <<'PY'\nimport deep_gemm\nimport mypkg.third_party\nPY\n"
            ),
        },
    )
    assert _where(report, "other-cuda-kernels") == [
        "docker/install.sh:1",
        "docker/install.sh:6",
        "docker/prepare.sh:1",
    ]
    assert _where(report, "flash-attn") == ["docker/prepare.sh:2"]
    assert _where(report, "cpp-extension") == ["docker/prepare.sh:3"]


def test_kubernetes_gpu_resources_and_cuda_requirement_lists(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "k8s/deployment.yaml": (
                "spec:\n  containers:\n  - name: s\n    resources:\n      limits:\n"
                '        cpu: "16"\n        nvidia.com/gpu: "1"\n'
            ),
            "k8s/neuron.yaml": 'resources:\n  limits:\n    aws.amazon.com/neuroncore: "2"\n',
            "requirements/runtime_cuda.txt": "tilelang==0.1.11\ntriton\n",
            "requirements/runtime_rocm.txt": "tilelang==0.1.11\n",
        },
        task="inference",
    )
    assert _where(report, "k8s-gpu") == ["k8s/deployment.yaml:7"]
    assert _where(report, "cuda-kernel-dsl") == ["requirements/runtime_cuda.txt:1"]


def test_forwarded_settings_annotations_and_setup_build_host(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "train.py": (
                "import torch\nimport transformers\n\n"
                "def save(trainer: transformers.Trainer, out: str) -> None:\n    pass\n\n"
                "def build(model, training_args):\n"
                "    model.init_modules(fsdp=training_args.fsdp)\n"
                "    model.other(fsdp=None)\n"
            ),
            "run.py": "from transformers import Trainer\n\ntrainer = Trainer(model=None, fsdp='full_shard')\n",
            "setup.py": (
                "import torch\nfrom setuptools import setup\n"
                "if torch.cuda.is_available():\n    pass\n"
                "if ROCM_BACKEND == 'triton':\n    reqs = ['triton>=3.6.0']\nelse:\n    reqs = ['torch']\n"
                "setup(name='x', install_requires=reqs)\n"
            ),
        },
    )
    assert _where(report, "fsdp") == ["run.py:3"]
    assert _where(report, "hf-trainer") == ["run.py:3"]  # not the annotation in train.py
    assert _where(report, "torch-cuda") == []  # setup.py probes the build host
    assert _where(report, "triton") == []  # the ROCm branch's requirement


def test_more_switches_in_launchers_configs_and_images(tmp_path: Path) -> None:
    """Generalised from the same classes: Megatron's `--attention-backend flash`, diffusers' xformers switch,
    Accelerate's `--mixed_precision fp16`, a nested `deepspeed:` config path, TensorRT-LLM tools, the vLLM and
    SGLang server images, `docker run --gpus`."""
    report = _scan(
        tmp_path,
        {
            "train.sh": (
                "torchrun pretrain.py --attention-backend flash\n"
                "accelerate launch --mixed_precision fp16 train.py --enable_xformers_memory_efficient_attention\n"
                "docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest\n"
                "trtllm-build --checkpoint_dir ckpt\n"
            ),
            "cpu.sh": "torchrun pretrain.py --attention-backend auto\naccelerate launch --mixed_precision bf16 t.py\n",
            "recipe.yaml": "training:\n  deepspeed: configs/zero2.json\n",
            "serve.yaml": "containers:\n- image: lmsysorg/sglang:latest\n",
        },
    )
    assert _where(report, "flash-attn") == ["train.sh:1"]
    assert _where(report, "fp16-training") == ["train.sh:2"]
    assert _where(report, "xformers") == ["train.sh:2"]
    # round 7: `docker run --gpus` runs a CUDA container (held-out-7's labels), not a cluster resource request
    assert _where(report, "cuda-base-image") == ["serve.yaml:2", "train.sh:3"]
    assert _where(report, "k8s-gpu") == []
    assert _where(report, "vllm-cuda") == ["train.sh:3"]
    assert _where(report, "tensorrt") == ["train.sh:4"]
    assert _where(report, "deepspeed-config") == ["recipe.yaml:2"]
    assert _where(report, "sglang") == ["serve.yaml:2"]


def _items(report: ScanReport, target: str = "trainium2") -> dict[str, float]:
    return {w.item: w.weeks for w in report.target_verdicts[target].work_items}


def test_a_library_only_listed_counts_at_the_declared_share(tmp_path: Path) -> None:
    """Round 6 effort: an optional dependency that no code or config switches on is a quarter of a library in
    use (effort.yaml declared_share); once code uses it, its listing adds nothing. It is never "ready"."""
    listed = _scan(tmp_path / "listed", {"requirements.txt": "bitsandbytes\n"}, task="inference")
    used = _scan(
        tmp_path / "used",
        {"requirements.txt": "bitsandbytes\n", "load.py": "import bitsandbytes\n"},
        task="inference",
    )
    assert listed.verdict("trainium2") == "needs-work"
    assert _items(listed)["remove-cuda-only-kernels"] == 0.25  # bitsandbytes' 1.0 at the 0.25 share
    assert _items(used)["remove-cuda-only-kernels"] == 1.0  # the import's 1.0; the listing adds nothing


def test_training_parity_run_is_the_numerics_check(tmp_path: Path) -> None:
    """The validate-numerics item of a training port is the loss-parity run plus the flags' own weeks; its
    base (the GPU-vs-Neuron comparison) is not paid twice."""
    report = _scan(tmp_path, {"train.py": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"})
    assert _items(report)["validate-numerics"] == 1.02  # 1.0 parity run + one cuDNN/TF32 flag at 0.02
    inference = scan_code(tmp_path, task="inference")
    assert _items(inference)["validate-numerics"] == 0.27  # inference: base 0.25 + the flag


def test_an_engine_with_a_cuda_backend_layer_is_priced_as_a_new_neuron_backend(tmp_path: Path) -> None:
    """Round 6 effort (from lmdeploy): a device-backend layer with a CUDA backend means writing a Neuron
    backend; Trainium1 and Inferentia2 add the weeks of building it on NxD Inference without the vLLM Neuron
    plugin (Trainium2/3 only)."""
    report = _scan(
        tmp_path / "engine",
        {
            "engine/backends/cuda/attention.py": "import torch\n",
            "engine/backends/ascend/attention.py": "import torch\n",
            "engine/__init__.py": "",
        },
        task="inference",
    )
    backend = [f for f in report.findings if f.rule == "cuda-device-backend"]
    assert len(backend) == 1 and backend[0].file is None and "engine/backends/cuda" in backend[0].message
    assert _items(report)["write-neuron-backend"] == 10.0
    assert _items(report, "trainium1")["write-neuron-backend"] == 12.0
    assert report.verdict("trainium2") == "needs-work"
    plain = _scan(tmp_path / "plain", {"lib/backend_utils.py": "import torch\n", "lib/cuda.py": "x = 1\n"})
    assert not [f for f in plain.findings if f.rule == "cuda-device-backend"]


def test_classes_configs_instantiate_fp8_matmuls_and_more_switches(tmp_path: Path) -> None:
    """Hydra/torchtune/Lightning-CLI configs that instantiate a CUDA-only library's class, FP8 through
    torch._scaled_mm, Lightning's DeepSpeed strategies, Accelerate's inductor backend, Composer's amp_fp16,
    `-gpu` images and cuDNN/NCCL apt packages; `--fp16 False` and the repository's own classes are not."""
    report = _scan(
        tmp_path,
        {
            "proj/__init__.py": "",
            "configs/exp.yaml": (
                "optimizer:\n  _target_: apex.optimizers.FusedAdam\n"
                "loss:\n  _target_: flash_attn.losses.cross_entropy.CrossEntropyLoss\n"
                "model:\n  _target_: proj.models.GPT\n"
                "opt2:\n  _component_: bitsandbytes.optim.PagedAdamW8bit\n"
                "trainer:\n  strategy: deepspeed_stage_2\n  precision: amp_fp16\n"
            ),
            "accelerate.yaml": "dynamo_config:\n  dynamo_backend: INDUCTOR\n",
            "fp8.py": "import torch\n\ndef mm(a, b, sa, sb):\n    return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb)\n",
            "run.sh": "python train.py --fp16 False --bf16 True\n",
            "Dockerfile": "FROM huggingface/transformers-pytorch-gpu:latest\nRUN apt-get install -y libcudnn8\n",
        },
    )
    assert _where(report, "apex") == ["configs/exp.yaml:2"]
    assert _where(report, "flash-attn") == ["configs/exp.yaml:4"]
    assert _where(report, "bitsandbytes") == ["configs/exp.yaml:8"]
    assert _where(report, "deepspeed-config") == ["configs/exp.yaml:10"]
    assert _where(report, "fp16-training") == ["configs/exp.yaml:11"]
    assert _where(report, "inductor-modes") == ["accelerate.yaml:2"]
    assert _where(report, "fp8-cuda-matmul") == ["fp8.py:4"]
    assert _where(report, "cuda-base-image") == ["Dockerfile:1", "Dockerfile:2"]


def test_attribute_settings_quant_configs_serving_images_and_accelerate_flags(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "load.py": (
                "import transformers\nfrom vllm import LLM\n\n"
                "config = transformers.AutoConfig.from_pretrained('m')\n"
                'config._attn_implementation = "flash_attention_2"\n'
                "q = transformers.GPTQConfig(bits=4)\n"
                "llm = LLM(model='m', quantization='awq')\n"
            ),
            "Dockerfile": "FROM vllm/vllm-openai:v0.9.0\n",
            "Dockerfile.neuron": "FROM ghcr.io/huggingface/text-generation-inference:3.0-neuron\n",
            "launch.sh": "accelerate launch --use_deepspeed --deepspeed_config_file ds.json t.py\n"
            "accelerate launch --use_fsdp t.py\n",
        },
        task="inference",
    )
    assert _where(report, "flash-attn") == ["load.py:5"]
    assert _where(report, "gpu-quant-kernels") == ["load.py:6", "load.py:7"]
    assert _where(report, "cuda-base-image") == ["Dockerfile:1"]
    training = scan_code(tmp_path, task="training")
    assert _where(training, "deepspeed-config") == ["launch.sh:1"]
    assert _where(training, "fsdp") == ["launch.sh:2"]


def test_cuda_kernels_written_in_python_and_nvml_queries(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "k.py": "from numba import cuda\n\n@cuda.jit\ndef add(a, b):\n    pass\n",
            "p.py": "from pycuda.compiler import SourceModule\n\nmod = SourceModule('__global__ void f() {}')\n",
            "m.py": "import pynvml\nimport flash_attn_2_cuda as fa\n",
        },
    )
    assert _where(report, "other-cuda-kernels") == ["k.py:1", "k.py:4", "p.py:3"]  # the kernel at its def
    assert _where(report, "torch-cuda") == ["m.py:1"]
    assert _where(report, "flash-attn") == ["m.py:2"]
    assert _where(report, "cpp-extension") == []  # flash-attn's own extension, not a local build


def test_guarded_imports_are_optional_integrations(tmp_path: Path) -> None:
    """An import under `except ImportError` or an availability check is still found (never "ready") but is
    sized as an optional integration (declared_share), unless the library is also used unguarded."""
    guarded = _scan(
        tmp_path / "g",
        {
            "q.py": (
                "try:\n    import bitsandbytes as bnb\nexcept ImportError:\n    bnb = None\n"
                "if is_bnb_available():\n    from bitsandbytes.nn import Linear4bit\n"
            )
        },
        task="inference",
    )
    messages = [f.message for f in guarded.findings if f.rule == "bitsandbytes"]
    # round 7: `is_bnb_available()` names bitsandbytes by its alias (the one library table), an optional check too
    assert messages == [
        "optionally imports bitsandbytes",
        "checks is_bnb_available() before using it",
        "optionally imports bitsandbytes.nn",
    ]
    assert guarded.verdict("trainium2") == "needs-work"
    assert _items(guarded)["remove-cuda-only-kernels"] == 0.25
    plain = _scan(tmp_path / "p", {"q.py": "import bitsandbytes as bnb\n"}, task="inference")
    assert _items(plain)["remove-cuda-only-kernels"] == 1.0


def test_python_c_imports_in_images_and_scripts(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "Dockerfile": 'FROM python:3.11\nRUN python -c "import torch; import flash_attn; print(1)"\n',
            "check.sh": "python3 -c 'import torch; print(torch.__version__)'\n",
        },
        task="inference",
    )
    assert _where(report, "flash-attn") == ["Dockerfile:2"]
    assert [f.location for f in report.findings if f.file == "check.sh"] == []


def test_torchtitan_style_toml_job_configs(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "train_configs/llama3_8b.toml": (
                '[model]\nconverters = ["float8"]\n\n[training]\ncompile = true\nmixed_precision_param = "float16"\n'
                "\n[parallelism]\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 2\n"
            ),
            "train_configs/debug.toml": "[parallelism]\ndata_parallel_shard_degree = 1\ntensor_parallel_degree = 1\n",
        },
    )
    assert _where(report, "fp8-cuda-matmul") == ["train_configs/llama3_8b.toml:2"]
    assert _where(report, "torch-compile") == ["train_configs/llama3_8b.toml:5"]
    assert _where(report, "fp16-training") == ["train_configs/llama3_8b.toml:6"]
    assert _where(report, "fsdp") == ["train_configs/llama3_8b.toml:9"]
    assert _where(report, "dtensor-tp") == ["train_configs/llama3_8b.toml:10"]


def test_a_file_that_installs_and_uses_a_library_counts_the_use(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"Dockerfile": 'FROM python:3.11\nRUN pip install flash-attn\nRUN python -c "import flash_attn"\n'},
        task="inference",
    )
    assert _where(report, "flash-attn") == ["Dockerfile:2", "Dockerfile:3"]
    assert _items(report)["remove-cuda-only-kernels"] == 0.5  # flash-attn's 0.5, not the declared share
