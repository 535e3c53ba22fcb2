"""`silica pilot plan`: the kit that launches the estimate's layout and the load that tests it.

The layout (tp, max concurrent sequences, max model length, dtype) comes from the library's
`estimate`; the engine flags that carry it come from `data/pilot/engines.yaml`; the prediction at
each load step is `estimate` again at that concurrency, with its band. Nothing here is launched:
SkyPilot, Kubernetes or a shell runs the files.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from silica.errors import InputError
from silica.pilot.engines import Engine, engine_for
from silica.pilot.loadplan import PLAN_FILE, PREDICTION_FILE, Deployed, LoadPlan
from silica.plan import estimate
from silica.results import InferenceEstimate
from silica.workload import Deployment, InferenceWorkload, check_dtype

__all__ = ["Kit", "make_kit", "predict_steps", "write_kit"]

PORT = 8000
# Neuron compiles static shapes: the max model length is the sequence bucket, a power of two.
MIN_NEURON_BUCKET = 128
# Tokens of room above input + output: the tokenizer's BOS, a chat template, and a word-built prompt
# a little longer in tokens than in words. Without it vLLM shortens the answer to fit (a pilot then
# measures fewer tokens than asked).
LEN_MARGIN = 32
# Seconds a server may take to answer /health: Neuron compiles the model at start (5-10 min for 8B).
STARTUP_S = {"aws": 1800, "nvidia": 900}
NEURON_CACHE = "/root/.cache/neuron"
HF_CACHE = "/root/.cache/huggingface"
HELM_VALUES = "helm-values.yaml"  # for the vLLM production stack's chart; written for vLLM (CUDA) kits


@dataclass(frozen=True, slots=True)
class Kit:
    plan: LoadPlan
    prediction: dict[str, Any]
    files: dict[str, str]  # file name -> text

    def to_dict(self) -> dict[str, Any]:
        return {"plan": self.plan.to_dict(), "prediction": self.prediction, "files": sorted(self.files)}


def _bucket(n: int) -> int:
    size = MIN_NEURON_BUCKET
    while size < n:
        size *= 2
    return size


def _steps(capacity: int) -> tuple[int, ...]:
    """Around the predicted capacity: light load, a quarter, half, at capacity, and past it."""
    picks = {1, capacity // 4, capacity // 2, capacity, capacity * 3 // 2}
    return tuple(sorted(c for c in picks if c >= 1))


def estimate_step(
    model: str,
    dep: Deployed,
    plan: LoadPlan,
    concurrency: int,
    calibration: Any,
    input_len: int | None = None,
) -> InferenceEstimate:
    """The estimate for one load step: the deployed layout at `concurrency` sequences of `input_len`
    prompt tokens (default the plan's; static shapes on Neuron, whose max length is the compiled bucket)."""
    wl = InferenceWorkload(
        input_len=input_len or plan.input_len,
        output_len=plan.output_len,
        batch=concurrency,
        weight_dtype=dep.dtype,  # type: ignore[arg-type]
        compute_dtype=dep.dtype,  # type: ignore[arg-type]
        seq_len=dep.max_len if dep.vendor == "aws" else None,
    )
    e = estimate(
        model, wl, Deployment(instance=dep.instance, tp=dep.tp), calibration=calibration, engine=dep.engine
    )
    assert isinstance(e, InferenceEstimate)  # an inference workload always gives one
    return e


def predict_steps(model: str, plan: LoadPlan, calibration: Any = None) -> dict[str, Any]:
    """What the estimate expects at each concurrency step of the plan, with its band."""
    dep = plan.deployed
    if dep is None:
        raise InputError(
            "The load plan names no deployment to predict for.", "write it with `silica pilot plan`."
        )
    steps = []
    note = ""
    loads = [(c, plan.input_len) for c in plan.concurrency]
    loads += [(plan.sweep_concurrency, n) for n in plan.input_lens]
    for c, n in loads:
        e = estimate_step(model, dep, plan, c, calibration, n)
        note = e.calibration
        steps.append(
            {
                "concurrency": c,
                "input_len": n,
                "feasible": e.feasible,
                "reasons": list(e.reasons),
                "ttft_ms": e.ttft_ms,
                "tpot_ms": e.tpot_ms,
                "output_tokens_per_s": e.output_tokens_per_s,
                "bands": {k: [b.low, b.high] for k, b in e.bands.items()},
            }
        )
    return {
        "schema": "silica.pilot.prediction/1",
        "model": dep.model,
        "instance": dep.instance,
        "engine": dep.engine,
        "calibration": note,
        "usd_per_hour": e.usd_per_hour if plan.concurrency else None,
        "steps": steps,
    }


def make_kit(
    model: str,
    instance: str,
    *,
    engine: str | None = None,
    input_len: int = 512,
    output_len: int = 128,
    dtype: str = "bf16",
    ttft_slo_ms: float | None = None,
    tpot_slo_ms: float | None = None,
    concurrency: tuple[int, ...] | None = None,
    requests_per_step: int = 64,
    serve_model: str | None = None,
    calibration: Any = None,
    duration_s: float | None = 60.0,
    input_lens: tuple[int, ...] | None = None,
) -> Kit:
    """Choose the layout with `estimate`, then write the launch files and the load plan around it.

    `input_lens`: the prompt-length sweep at one request in flight (None: an eighth and a half of
    `input_len`, so the sweep never raises the max model length; () : none)."""
    if input_lens is None:
        input_lens = tuple(sorted({n for n in (input_len // 8, input_len // 2) if 16 <= n < input_len}))
    check_dtype(dtype, "dtype")
    if serve_model is not None and (not serve_model.strip() or not serve_model.isprintable()):
        raise InputError(
            f"--hf-model {serve_model[:80]!r} is empty or holds a newline or control character.",
            "pass the model name the server serves, e.g. --hf-model meta-llama/Llama-3.1-8B.",
        )
    base = InferenceWorkload(
        input_len=input_len,
        output_len=output_len,
        ttft_slo_ms=ttft_slo_ms,
        tpot_slo_ms=tpot_slo_ms,
        weight_dtype=dtype,  # type: ignore[arg-type]
        compute_dtype=dtype,  # type: ignore[arg-type]
    )
    first = estimate(model, base, Deployment(instance=instance), calibration=calibration)
    eng = engine_for(engine, first.vendor, instance)
    need = max((input_len, *input_lens)) + output_len + LEN_MARGIN
    max_len = _bucket(need) if first.vendor == "aws" else need
    if first.vendor == "aws":
        base = replace(base, seq_len=max_len)
    # The layout the kit's own engine would get (its calibration, not the vendor default's).
    first = estimate(model, base, Deployment(instance=instance), calibration=calibration, engine=eng.name)
    if not first.feasible or first.tp is None or first.batch is None:
        why = "; ".join(first.reasons) or "no feasible layout"
        raise InputError(
            f"{model} cannot be served on {instance}: {why}.",
            "pick a larger instance (see `silica compare`).",
        )
    steps = concurrency or _steps(first.batch)
    deployed = Deployed(
        model=model,  # as the user named it (an id or a config path), so it can be estimated again
        instance=instance,
        chip=first.chip,
        family=first.family,
        vendor=first.vendor,
        engine=eng.name,
        tp=first.tp,
        max_batch=max(steps),
        max_len=max_len,
        dtype=dtype,
    )
    plan = LoadPlan(
        input_len=input_len,
        output_len=output_len,
        concurrency=tuple(steps),
        requests_per_step=requests_per_step,
        input_lens=tuple(input_lens),
        ttft_slo_ms=ttft_slo_ms,
        tpot_slo_ms=tpot_slo_ms,
        deployed=deployed,
        notes=(
            f"layout from `silica estimate {model} --on {instance}`: tp={first.tp}, best batch {first.batch}",
            f"engine flags: {eng.source} (as of {eng.as_of})",
        ),
    )
    prediction = predict_steps(model, plan, calibration)
    # The engine's batch limit: the largest step the prediction says fits in memory, never more.
    fits = [
        int(p["concurrency"]) for p in prediction["steps"] if p["feasible"] and p["input_len"] == input_len
    ]
    limit = max(fits, default=first.batch)
    if limit != deployed.max_batch:
        deployed = replace(deployed, max_batch=limit)
        plan = replace(
            plan,
            deployed=deployed,
            notes=(
                *plan.notes,
                f"max batch {limit}: steps above it do not fit in memory (prediction.json); they queue",
            ),
        )
    if duration_s:  # timed steps; None or 0: each step runs `requests_per_step` requests
        plan = replace(plan, duration_s=duration_s, warmup_s=_edge(prediction, limit, output_len))
        plan = replace(plan, cooldown_s=plan.warmup_s)
    served = serve_model or hf_model_id(model)
    return Kit(plan=plan, prediction=prediction, files=_files(eng, deployed, served, plan, prediction))


def _edge(prediction: dict[str, Any], limit: int, output_len: int) -> float:
    """Warm-up and cool-down of a timed step: two predicted requests (at least 15 s), so the counted
    requests start and end at full load."""
    e2e = [
        (p["ttft_ms"] or 0.0) + (p["tpot_ms"] or 0.0) * output_len
        for p in prediction["steps"]
        if p["feasible"] and p["concurrency"] <= limit
    ]
    longest = max(e2e, default=0.0) / 1e3
    return float(max(15, math.ceil(2 * longest)))


def hf_model_id(model: str) -> str:
    """What the engine loads: a path or a Hub id as given; a registry id through data/pilot/hf_models.yaml."""
    if "/" in model or Path(model).exists():
        return model
    known = _hf_models()
    if model in known:
        return known[model]
    raise InputError(
        f"{model} is a Silica registry id, not a Hugging Face repository, and Silica knows no repository for it.",
        "pass --hf-model ORG/NAME (the repository the engine should load).",
    )


def _hf_models() -> dict[str, str]:
    from importlib import resources

    raw = yaml.safe_load(resources.files("silica").joinpath("data/pilot/hf_models.yaml").read_text())
    return {str(k): str(v) for k, v in (raw.get("models") or {}).items()}


def _comment(value: object) -> str:
    """A value shown in a `#` comment of a generated file: one line whatever it holds (a newline in a
    model name would otherwise end the comment and inject a command or a YAML key)."""
    text = str(value)
    return text if text.isprintable() else repr(text)[1:-1]


def _server_args(eng: Engine, dep: Deployed, model: str) -> list[str]:
    return eng.launch_args(
        model, tp=dep.tp, batch=dep.max_batch, max_len=dep.max_len, dtype=dep.dtype, port=PORT
    )


def _docker(eng: Engine, dep: Deployed, model: str) -> str:
    server = " ".join(shlex.quote(a) for a in _server_args(eng, dep, model))
    if dep.vendor == "aws":
        devices = '$(for d in /dev/neuron*; do printf -- "--device=%s " "$d"; done)'
    else:
        devices = "--gpus all"
    env = "".join(f"-e {shlex.quote(f'{k}={v}')} " for k, v in eng.env_for(dep.chip).items())
    caps = "".join(f"--cap-add {shlex.quote(c)} " for c in eng.capabilities)
    cache = '-v "$HOME/.cache/huggingface:/root/.cache/huggingface" '
    if dep.vendor == "aws":  # compiled graphs kept across restarts: a rerun skips the 5-10 min compile
        cache += f'-v "$HOME/.cache/neuron:{NEURON_CACHE}" -e NEURON_COMPILED_ARTIFACTS={NEURON_CACHE} '
    return (
        f"docker run --rm --network host --ipc host {devices} {caps}"
        f'-e HF_TOKEN="${{HF_TOKEN:-}}" {env}{cache}'
        f"--entrypoint '' {shlex.quote(eng.image_for(dep.chip))} {server}"
    )


def _skypilot(eng: Engine, dep: Deployed, model: str) -> str:
    task: dict[str, Any] = {
        "name": f"silica-pilot-{dep.model}-{dep.instance}".replace(".", "-"),
        "resources": {"cloud": "aws", "instance_type": dep.instance, "ports": PORT},
        "envs": {"HF_TOKEN": ""},
        "setup": "docker --version",
        "run": _docker(eng, dep, model) + "\n",
    }
    head = (
        f"# SkyPilot task written by `silica pilot plan` for {_comment(dep.model)} on {_comment(dep.instance)} "
        f"({_comment(eng.label)}).\n"
        f"# Launch: sky launch -c silica-pilot sky.yaml --env HF_TOKEN; then\n"
        f"#   silica pilot run --endpoint http://$(sky status --ip silica-pilot):{PORT} "
        f"--model {_comment(shlex.quote(model))} --plan .\n"
        + (
            f"# Neuron: SkyPilot picks its Neuron image for {_comment(dep.instance)}; the server runs in the "
            "Neuron DLC.\n"
            if dep.vendor == "aws"
            else ""
        )
    )
    return head + str(yaml.safe_dump(task, sort_keys=False))


@dataclass(frozen=True)
class _Pod:
    """What one server pod asks of its node: accelerators, CPU, memory and shared memory."""

    resource: str  # the device plugin's resource name
    chips: int
    cpu: int | None  # the node's vCPUs less two for its daemons
    memory_gib: int | None  # 80% of the node's memory
    shm: str


def _pod(dep: Deployed) -> _Pod:
    from silica.catalog import get_instance, load_catalog

    inst = get_instance(load_catalog(), dep.instance)
    return _Pod(
        resource="aws.amazon.com/neuron" if dep.vendor == "aws" else "nvidia.com/gpu",
        chips=int(inst.chips),
        cpu=max(1, inst.vcpus - 2) if inst.vcpus else None,
        memory_gib=max(1, int(inst.memory_gib * 0.8)) if inst.memory_gib else None,
        shm=f"{max(1, min(64, int((inst.memory_gib or 16) // 4)))}Gi",
    )


def _probes(vendor: str, port: int) -> dict[str, dict[str, Any]]:
    """Loading (and on Neuron compiling) takes minutes: the startup probe allows it, then readiness
    keeps traffic off until /health answers, and liveness restarts a hung server."""
    health = {"httpGet": {"path": "/health", "port": port}}
    period = 10
    return {
        "startupProbe": {**health, "periodSeconds": period, "failureThreshold": STARTUP_S[vendor] // period},
        "readinessProbe": {**health, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**health, "periodSeconds": 15, "failureThreshold": 4},
    }


def _k8s(eng: Engine, dep: Deployed, model: str) -> str:
    pod = _pod(dep)
    resource, count, shm = pod.resource, pod.chips, pod.shm
    name = "silica-pilot"
    # Requests equal to limits for the accelerators; CPU and memory leave the node's daemons room.
    limits: dict[str, Any] = {resource: count}
    requests: dict[str, Any] = {resource: count}
    if pod.cpu:
        requests["cpu"] = str(pod.cpu)
    if pod.memory_gib:
        requests["memory"] = f"{pod.memory_gib}Gi"
    env: list[dict[str, Any]] = [
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}},
        }
    ]
    env += [{"name": k, "value": v} for k, v in eng.env_for(dep.chip).items()]
    mounts = [{"name": "shm", "mountPath": "/dev/shm"}, {"name": "hf-cache", "mountPath": HF_CACHE}]
    volumes: list[dict[str, Any]] = [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}},
        # On the node, so a restarted pod reloads the weights from disk, not the Hub.
        {"name": "hf-cache", "hostPath": {"path": "/opt/silica/hf-cache", "type": "DirectoryOrCreate"}},
    ]
    if dep.vendor == "aws":
        env.append({"name": "NEURON_COMPILED_ARTIFACTS", "value": NEURON_CACHE})
        mounts.append({"name": "neuron-cache", "mountPath": NEURON_CACHE})
        volumes.append(
            {
                "name": "neuron-cache",
                "hostPath": {"path": "/opt/silica/neuron-cache", "type": "DirectoryOrCreate"},
            }
        )
    container = {
        "name": "server",
        "image": eng.image_for(dep.chip),
        "command": _server_args(eng, dep, model),
        "ports": [{"containerPort": PORT}],
        "resources": {"limits": limits, "requests": requests},
        "env": env,
        "volumeMounts": mounts,
        **_probes(dep.vendor, PORT),
    }
    if eng.capabilities:  # as the engine's container quickstart runs it (`docker run --cap-add`)
        container["securityContext"] = {"capabilities": {"add": list(eng.capabilities)}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {"node.kubernetes.io/instance-type": dep.instance},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": PORT, "targetPort": PORT}]},
    }
    return str(yaml.safe_dump_all([deployment, service], sort_keys=False))


# The vLLM production stack's Helm chart (github.com/vllm-project/production-stack, helm/, chart
# vllm-stack 0.1.12): values format read from helm/values.yaml and helm/values.schema.json and the
# command its templates/deployment-vllm-multi.yaml builds, at commit
# a6c01db05f65f556235413ba8dbcfb0c01132fff (2026-08-05). Read 2026-12-03.
HELM_CHART = "vllm-project/production-stack helm chart vllm-stack 0.1.12 @ a6c01db05f65 (2026-08-05)"
HELM_REPO = "https://vllm-project.github.io/production-stack"


def _helm_values(eng: Engine, dep: Deployed, model: str) -> str:
    """Values for the vLLM production stack's chart: the same server, resources and probes as k8s.yaml.

    The chart builds `vllm serve MODEL --host 0.0.0.0 --port PORT` plus one flag per `vllmConfig` key,
    so the layout goes there rather than into a command line. It passes `--no-enable-prefix-caching`
    unless told otherwise, so prefix caching is set on, as `vllm serve` (and the kit's own launch)
    has it. Setting `tensorParallelSize` (even 1) is what makes the chart mount /dev/shm of `shmSize`.
    """
    pod = _pod(dep)
    image = eng.image_for(dep.chip)
    repository, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    spec: dict[str, Any] = {
        "name": "silica-pilot",
        "repository": repository,
        "tag": tag,
        "modelURL": model,
        "replicaCount": 1,
        "requestGPU": pod.chips,
        "shmSize": pod.shm,
        "hf_token": {"secretName": "hf-token", "secretKey": "token"},
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [dep.instance]}
                ]
            }
        ],
        # On the node, so a restarted pod reloads the weights from disk, not the Hub (as k8s.yaml).
        "extraVolumes": [
            {"name": "hf-cache", "hostPath": {"path": "/opt/silica/hf-cache", "type": "DirectoryOrCreate"}}
        ],
        "extraVolumeMounts": [{"name": "hf-cache", "mountPath": HF_CACHE}],
        "vllmConfig": {
            "maxModelLen": dep.max_len,
            "maxNumSeqs": dep.max_batch,
            "tensorParallelSize": dep.tp,
            "enablePrefixCaching": True,
        },
    }
    if dep.dtype in eng.dtype_names:
        spec["vllmConfig"]["dtype"] = eng.dtype_names[dep.dtype]
    if pod.cpu:
        spec["requestCPU"] = pod.cpu
    if pod.memory_gib:
        spec["requestMemory"] = f"{pod.memory_gib}Gi"
    env = eng.env_for(dep.chip)
    if env:
        spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
    values = {"servingEngineSpec": {"containerPort": PORT, "modelSpec": [spec], **_probes(dep.vendor, PORT)}}
    head = (
        f"# Helm values written by `silica pilot plan` for {dep.model} on {dep.instance} ({eng.label}):\n"
        f"# the vLLM production stack ({HELM_CHART}).\n"
        f"#   helm repo add vllm {HELM_REPO}\n"
        "#   kubectl create secret generic hf-token --from-literal=token=$HF_TOKEN\n"
        "#   helm install silica-pilot vllm/vllm-stack -f helm-values.yaml\n"
        "# then point `silica pilot run --endpoint` at the chart's router service.\n"
    )
    return head + str(yaml.safe_dump(values, sort_keys=False))


def _devices(dep: Deployed) -> int:
    from silica.catalog import get_instance, load_catalog

    return int(get_instance(load_catalog(), dep.instance).chips)


def _files(
    eng: Engine, dep: Deployed, model: str, plan: LoadPlan, prediction: dict[str, Any]
) -> dict[str, str]:
    script = (
        "#!/usr/bin/env bash\n"
        f"# Start {_comment(eng.label)} for {_comment(dep.model)} on this {_comment(dep.instance)}, as "
        "`silica pilot plan` laid it out.\n"
        f"# Flags: {_comment(eng.source)} (as of {_comment(eng.as_of)}).\n"
        "set -euo pipefail\n" + _docker(eng, dep, model) + "\n"
    )
    return {
        "sky.yaml": _skypilot(eng, dep, model),
        "launch.sh": script,
        "k8s.yaml": _k8s(eng, dep, model),
        **({HELM_VALUES: _helm_values(eng, dep, model)} if eng.name == "vllm" else {}),
        PLAN_FILE: json.dumps(plan.to_dict(), indent=2) + "\n",
        PREDICTION_FILE: json.dumps(prediction, indent=2) + "\n",
    }


def write_kit(kit: Kit, directory: Path) -> list[Path]:
    from silica._files import write_text

    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in kit.files.items():
            path = directory / name
            write_text(path, text)  # atomic: a kit file is whole or absent
            if name.endswith(".sh"):
                path.chmod(0o755)
            written.append(path)
    except OSError as err:
        raise InputError(
            f"Cannot write the kit to {directory}: {err.strerror}.", "choose a writable --out."
        ) from err
    return written
