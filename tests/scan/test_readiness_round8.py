"""Issue 30, eighth round: the class of config findings, read by one generic config reader
(silica.scan.config_reader), plus the round's other classes, each tested on new synthetic examples (none is a
line of the corpus).

The reader walks every key path and scalar value of a YAML or JSON file: a key or value that names a CUDA-only
feature or library with a truthy or positive value is a finding at its line; false, zero and CPU values are not.
Container argv lists are launcher lines; compose GPU reservations are CUDA containers; components switched off
(`enabled: false`) run nothing; Cargo crate lists name CUDA-only libraries too. Also: Ray GPU requests in Python,
CUDA builds chosen by distribution name (cuda-wheels), ColossalAI (no Neuron counterpart, with the plan), C++
files including CUDA headers, precision classes (an Accelerator with nothing CUDA-specific, a CUDA switch turned
off, a repository cloning itself) and the effort class for items reached only by declarations."""

from __future__ import annotations

from pathlib import Path

from tests.scan.synthetic import locations
from tests.scan.synthetic import scan_files as _scan

from silica.scan import ScanReport
from silica.scan.config_reader import cargo_dependencies, disabled_spans, judge, read


def _where(report: ScanReport, rule: str) -> list[str]:
    return locations(report, rule, info=False)


def _rules(report: ScanReport, file: str) -> set[str]:
    return {f.rule for f in report.findings if f.file == file and f.impact["trainium2"] != "info"}


def _judged(text: str) -> list[tuple[str, int]]:
    settings, argvs = read(text)
    return [(h.rule, h.line) for h in judge(settings, argvs, lambda name: None)]


def test_truthy_features_at_any_depth_and_falsy_values_are_not() -> None:
    """Any spelling of a feature key, nested anywhere, counts only when switched on."""
    text = (
        "trainer:\n"
        "  model_cfg:\n"
        "    enableFlashAttn: yes\n"  # 3
        "    flash-attention-v2: false\n"  # 4
        "    attention_implementation: fa2\n"  # 5
        "  quant:\n"
        "    load-in-4bit: true\n"  # 7
        "    load_in_8bit: 0\n"  # 8
        "    quant_method: exllamav2\n"  # 9
        "    quantization: none\n"  # 10
        "  parallel:\n"
        "    distributed_strategy: fsdp_hybrid\n"  # 12
        "    zero_optimization: {stage: 2}\n"  # 13
        "    zero_stage: 0\n"  # 14
        "  precision: {fp16_backend: apex}\n"  # 15
        "  place: {eval_device: 'cuda:1', data_device: cpu}\n"  # 16
    )
    assert _judged(text) == [
        ("flash-attn", 3),
        ("flash-attn", 5),
        ("bitsandbytes", 7),
        ("gpu-quant-kernels", 9),
        ("fsdp", 12),
        ("deepspeed-config", 13),
        ("apex", 15),
        ("torch-cuda", 16),
    ]


def test_json_settings_are_read_like_yaml() -> None:
    text = '{\n  "optim": "paged_lion_8bit",\n  "backends": {"allow_tf32": true, "use_tf32": false}\n}\n'
    assert _judged(text) == [("bitsandbytes", 2), ("cuda-backend-flags", 3)]


def test_ray_gpu_requests_only_under_ray_blocks_and_above_zero() -> None:
    text = (
        "train_loop:\n"
        "  scaling_config:\n"
        "    num_workers: 4\n"
        "    use_gpu: true\n"  # 4
        "    resources_per_worker: {GPU: 0.5, CPU: 2}\n"  # 5
        "serve:\n"
        "  ray_actor_options: {num_gpus: 0}\n"  # 7: zero
        "  gpus_per_replica: 2\n"  # 8
        "chart:\n"
        "  gpu: true\n"  # 10: not a Ray block
        "cluster:\n"
        "  available_node_types:\n"
        "    big:\n"
        "      resources: {accelerator_type_h100: 1}\n"  # 14
    )
    assert _judged(text) == [("ray-gpu", 4), ("ray-gpu", 5), ("ray-gpu", 8), ("ray-gpu", 14)]


def test_unparsable_config_gives_nothing_to_the_reader() -> None:
    assert read("key: {{ .Values.x }}\n  - : [\n") == ([], [])


def test_engine_named_after_a_library_and_container_argv_lists(tmp_path: Path) -> None:
    """`engine_type: SGLangEngine` names a library of the table; a pod's argv list is a launcher line."""
    report = _scan(
        tmp_path,
        {
            "serve/app.yaml": "llm:\n  engine_type: SGLangEngine\n  other: PlainEngine\n",
            "k8s/job.yaml": (
                "spec:\n  containers:\n    - name: trainer\n      command:\n"
                "        - /opt/conda/bin/torchrun\n        - --nproc-per-node=8\n        - pretrain.py\n"
            ),
        },
    )
    assert _where(report, "sglang") == ["serve/app.yaml:2"]
    assert "gpu-launcher" in _rules(report, "k8s/job.yaml")


def test_compose_gpu_reservation_is_a_cuda_container_and_disabled_components_run_nothing(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "compose.yaml": (
                "services:\n  api:\n    image: example/api:1\n    deploy:\n      resources:\n"
                "        reservations:\n          devices:\n            - driver: nvidia\n              count: all\n"
            ),
            "chart/values.yaml": (
                "engine:\n  enabled: false\n  image:\n    repository: lmsysorg/sglang\n"
                "worker:\n  enabled: true\n  image:\n    repository: vllm/vllm-openai\n"
            ),
        },
        task="inference",
    )
    assert _where(report, "cuda-base-image") == ["compose.yaml:8"]
    assert _where(report, "k8s-gpu") == []
    assert _where(report, "sglang") == []
    assert _where(report, "vllm-cuda") == ["chart/values.yaml:8"]


def test_disabled_list_entries_are_examples_and_stay() -> None:
    text = "models:\n  - name: demo\n    enabled: false\nsidecar:\n  enabled: off\n  image: x\n"
    assert disabled_spans(text) == [(5, 7)]


def test_config_templates_are_read_as_configs(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"deploy/job.yaml-template": "limits:\n  nvidia.com/gpu: 8\n"})
    assert _where(report, "k8s-gpu") == ["deploy/job.yaml-template:2"]


def test_cargo_crates_named_after_cuda_libraries() -> None:
    text = (
        "[package]\nname = 'embedder'\n[dependencies]\nserde = '1'\n"
        "burn-flash-attn = { version = '0.2', optional = true }\n"  # 5
        "cudarc = '0.12'\n"  # 6
        "tokenizers = { version = '0.20', features = ['cuda-12'] }\n"  # 7
        "[features]\ncuda = ['dep:cudarc']\n"
    )
    rules = {"flash-attn": "flash-attn"}
    hits = [(h.rule, h.line) for h in cargo_dependencies(text, rules.get)]
    assert hits == [("flash-attn", 5), ("other-cuda-kernels", 6), ("other-cuda-kernels", 7)]


def test_cuda_wheels_by_distribution_name_and_runtime_pins_in_lists(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "requirements/gpu.txt": "numpy\npaddlepaddle-gpu==2.6\nmxnet-cu12==1.9\nfaiss-cpu\n",
            "lock/requirements.txt": "nvidia-cusparselt-cu12==0.6.2\n",
            "Dockerfile": "FROM python:3.11\nRUN pip install nvidia-cufft-cu12\n",
        },
        task="inference",
    )
    assert _where(report, "cuda-wheels") == [
        "lock/requirements.txt:1",
        "requirements/gpu.txt:2",
        "requirements/gpu.txt:3",
    ]


def test_colossalai_has_no_counterpart_and_states_the_plan(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"train.py": "from colossalai.booster import Booster\n"})
    (finding,) = [f for f in report.findings if f.rule == "colossalai"]
    assert finding.alternative.startswith("none:") and "NxD Training" in finding.alternative


def test_ray_gpu_in_python(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "a.py": "from ray.train import ScalingConfig\ncfg = ScalingConfig(num_workers=2, use_gpu=True)\n",
            "b.py": "def check(pc):\n    return pc.scaling.num_gpus_per_replica >= 1\n",
            "c.py": "from ray.train import ScalingConfig\ncfg = ScalingConfig(num_workers=2, use_gpu=False)\n",
        },
    )
    assert _where(report, "ray-gpu") == ["a.py:2", "b.py:2"]


def test_cpp_files_including_cuda_headers_are_cuda_source(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "ops/bind.cpp": "#include <torch/extension.h>\n#include <c10/cuda/CUDAGuard.h>\n",
            "ops/host.cpp": "#include <vector>\n// #include <cuda_runtime.h> in the GPU build\n",
        },
    )
    assert _where(report, "cuda-source") == ["ops/bind.cpp:2"]


def test_accelerator_counts_only_with_a_cuda_or_device_setting(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "plain.py": "from accelerate import Accelerator\nacc = Accelerator(gradient_accumulation_steps=4)\n",
            "bf16.py": "import accelerate\nacc = accelerate.Accelerator(mixed_precision='bf16')\n",
            "passed.py": "from accelerate import Accelerator\ndef f(p):\n    return Accelerator(mixed_precision=p)\n",
            "plugin.py": "from accelerate import Accelerator\nacc = Accelerator(fsdp_plugin=object())\n",
        },
    )
    files = {loc.split(":")[0] for loc in _where(report, "accelerate")}
    assert files == {"passed.py", "plugin.py"}


def test_cuda_switch_turned_off_is_not_a_finding(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "off.py": "import torch\ntorch.backends.cudnn.allow_tf32 = False\n",
            "on.py": "import torch\ntorch.backends.cudnn.allow_tf32 = True\n",
        },
    )
    assert [loc.split(":")[0] for loc in _where(report, "cuda-backend-flags")] == ["on.py"]


def test_repository_cloning_itself_is_its_own_packaging(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\npkg_name = 'unsloth'\nsetup(name=pkg_name)\n",
            "docker/Dockerfile": "FROM python:3.11\nRUN git clone https://github.com/unslothai/unsloth.git\n",
        },
    )
    assert _where(report, "unsloth") == []


def test_ggml_cuda_build_is_a_declaration_without_the_kernel_base(tmp_path: Path) -> None:
    """llama.cpp built with its CUDA backend: other-cuda-kernels, sized as a declared build (no NKI base)."""
    report = _scan(
        tmp_path,
        {"build.sh": 'CMAKE_ARGS="-DGGML_CUDA=on" pip install llama-cpp-python\n'},
        task="inference",
    )
    assert _where(report, "other-cuda-kernels") == ["build.sh:1"]
    items = {w.item: w.weeks for w in report.target_verdicts["trainium2"].work_items}
    assert 0 < items["port-custom-ops"] < 0.5


def test_launcher_and_image_classes(tmp_path: Path) -> None:
    """FSDP's sharding strategy on a launcher, ring attention chosen by a flag, ColossalAI's launcher, and CUDA
    bases named without a CUDA tag (pytorch/pytorch, NCCL test images)."""
    report = _scan(
        tmp_path,
        {
            "run.sh": (
                "colossalai run --nproc_per_node 4 pretrain.py \\\n"
                "  --sharding-strategy hybrid_shard --seq_parallel stripe_ring_attn\n"
            ),
            "off.sh": "python pretrain.py --sharding_strategy no_shard --attn sdpa\n",
            "a/Dockerfile": "FROM pytorch/pytorch\n",
            "b/Dockerfile": "FROM registry.example.com/hpc/nccl-tests:2.21 AS base\n",
            "c/Dockerfile": "FROM python:3.11-slim\n",
        },
    )
    assert _where(report, "gpu-launcher") == ["run.sh:1"]
    assert _where(report, "fsdp") == ["run.sh:2"]
    assert _where(report, "flash-attn") == ["run.sh:2"]
    assert _where(report, "cuda-base-image") == ["a/Dockerfile:1", "b/Dockerfile:1"]
