"""`silica pilot plan`: kits SkyPilot parses, whose engine flags carry the layout `estimate` chose."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from tests.pilot.conftest import DATA, run

from silica.catalog import get_instance, load_catalog
from silica.pilot.engines import load_engines
from silica.plan import estimate
from silica.workload import Deployment, InferenceWorkload

CASES = [
    # instance, engine, flag for tp, flag for batch, flag for max length
    ("inf2.xlarge", None, "--tensor-parallel-size", "--max-num-seqs", "--max-model-len"),
    ("g6e.xlarge", None, "--tensor-parallel-size", "--max-num-seqs", "--max-model-len"),
    ("g6e.xlarge", "sglang", "--tp-size", "--max-running-requests", "--context-length"),
    ("g6e.xlarge", "trtllm", "--tp_size", "--max_batch_size", "--max_seq_len"),
]


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@pytest.mark.parametrize(("instance", "engine", "tp_flag", "batch_flag", "len_flag"), CASES)
def test_kit_carries_the_estimated_layout(
    tmp_path: Path, instance: str, engine: str | None, tp_flag: str, batch_flag: str, len_flag: str
) -> None:
    out = tmp_path / "kit"
    args = [
        "pilot",
        "plan",
        "llama-3.1-8b",
        "--on",
        instance,
        "--out",
        str(out),
        "--hf-model",
        "meta-llama/Llama-3.1-8B-Instruct",
    ]
    code, _stdout, stderr = run(*args, *(["--engine", engine] if engine else []))
    assert code == 0, stderr
    vllm_cuda = instance.startswith("g") and engine in (None, "vllm")  # the chart runs vLLM's CUDA build
    assert {p.name for p in out.iterdir()} == {
        "sky.yaml",
        "launch.sh",
        "k8s.yaml",
        "load_plan.json",
        "prediction.json",
        *(["helm-values.yaml"] if vllm_cuda else []),
    }
    plan = json.loads((out / "load_plan.json").read_text())
    dep = plan["deployed"]
    neuron = instance.startswith("inf")
    wl = InferenceWorkload(input_len=512, output_len=128, seq_len=1024 if neuron else None)
    best = estimate("llama-3.1-8b", wl, Deployment(instance=instance))
    assert dep["tp"] == best.tp
    # 640 tokens asked, 32 of margin (BOS, template); Neuron: the power-of-two bucket above 672
    assert dep["max_len"] == (1024 if neuron else 672)
    assert best.batch in plan["concurrency"]  # the load steps bracket the predicted capacity
    # The shell script, the SkyPilot run and the Kubernetes container start the same server command.
    script = (out / "launch.sh").read_text().splitlines()[-1]
    server = shlex.split(script.split("--entrypoint '' ")[1])[1:]
    assert server[0] in ("vllm", "python3", "trtllm-serve")
    assert _flag(server, tp_flag) == str(best.tp)
    pred = json.loads((out / "prediction.json").read_text())
    fits = [s["concurrency"] for s in pred["steps"] if s["feasible"]]
    assert _flag(server, batch_flag) == str(max(fits)) == str(dep["max_batch"])
    assert _flag(server, len_flag) == str(dep["max_len"])
    assert "meta-llama/Llama-3.1-8B-Instruct" in server
    docs = list(yaml.safe_load_all((out / "k8s.yaml").read_text()))
    container = docs[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == server
    chips = get_instance(load_catalog(), instance).chips
    assert container["resources"]["limits"] == {
        ("aws.amazon.com/neuron" if neuron else "nvidia.com/gpu"): chips
    }
    # Every step has a prediction with its band.
    assert [(s["concurrency"], s["input_len"]) for s in pred["steps"]] == [
        (c, plan["input_len"]) for c in plan["concurrency"]
    ] + [(plan["sweep_concurrency"], n) for n in plan["input_lens"]]  # the prompt sweep after the steps
    first = pred["steps"][0]
    lo, hi = first["bands"]["tpot_ms"]
    assert lo <= first["tpot_ms"] <= hi
    _skypilot_parses(tmp_path, out / "sky.yaml", instance)


def _skypilot_parses(tmp_path: Path, task: Path, instance: str) -> None:
    """SkyPilot's own parser, offline: its AWS catalog is seeded with this instance from Silica's catalog."""
    home = tmp_path / "home"
    cat = home / ".sky" / "catalogs" / "v6" / "aws"
    cat.mkdir(parents=True)
    inst = get_instance(load_catalog(), instance)
    chip = load_catalog().chips[inst.chip]
    name = {"inferentia2": "Inferentia2", "l40s": "L40S"}[chip.id]
    (cat / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone\n"
        f"{instance},{name},{inst.chips},{inst.vcpus},{inst.memory_gib},,,,us-east-1,us-east-1a\n"
    )
    code = (
        "import sys, sky\n"
        "t = sky.Task.from_yaml(sys.argv[1])\n"
        "(r,) = t.resources\n"
        "print(r.instance_type, t.run.split()[0])\n"
    )
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(task)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == [instance, "docker"]


def test_every_engine_names_its_documentation() -> None:
    engines = load_engines()
    assert {"vllm", "sglang", "trtllm", "vllm-neuron", "nxdi"} <= set(engines)
    for e in engines.values():
        assert e.source and e.as_of.startswith("20"), e.name
        assert {"tp", "batch", "max_len"} <= set(e.flags), e.name


def test_wrong_engine_for_the_chip_is_one_line(tmp_path: Path) -> None:
    code, _, err = run(
        "pilot",
        "plan",
        "llama-3.1-8b",
        "--on",
        "inf2.xlarge",
        "--engine",
        "trtllm",
        "--out",
        str(tmp_path / "k"),
    )
    assert code == 2
    assert err.count("\n") == 1 and "does not run on inf2.xlarge" in err and "To fix" in err
    code, _, err = run(
        "pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--engine", "vlm", "--out", str(tmp_path / "k")
    )
    assert code == 2 and "Unknown engine 'vlm'" in err
    assert not (tmp_path / "k").exists()


def _plan(tmp_path: Path, instance: str, *extra: str) -> tuple[Path, list[dict[str, object]]]:
    out = tmp_path / instance
    code, _, err = run("pilot", "plan", "llama-3.1-8b", "--on", instance, "--out", str(out), *extra)
    assert code == 0, err
    return out, list(yaml.safe_load_all((out / "k8s.yaml").read_text()))


def test_kits_never_launch_a_batch_their_prediction_says_does_not_fit(tmp_path: Path) -> None:
    for instance in ("g6e.xlarge", "inf2.xlarge"):
        out, _ = _plan(tmp_path, instance)
        pred = json.loads((out / "prediction.json").read_text())
        too_big = [s["concurrency"] for s in pred["steps"] if not s["feasible"]]
        assert too_big, "the default steps go past capacity, so the limit is exercised"
        server = shlex.split((out / "launch.sh").read_text().splitlines()[-1].split("--entrypoint '' ")[1])
        limit = int(_flag(server, "--max-num-seqs"))
        assert limit < min(too_big)
        assert limit == max(s["concurrency"] for s in pred["steps"] if s["feasible"])
        plan = json.loads((out / "load_plan.json").read_text())
        assert plan["duration_s"] == 60 and plan["warmup_s"] >= 15 and plan["cooldown_s"] >= 15


def test_neuron_kits_pin_the_dlc_of_their_chip_generation(tmp_path: Path) -> None:
    engines = load_engines()["vllm-neuron"]
    for instance, chip, sdk in (
        ("inf2.xlarge", "inferentia2", "sdk2.31.1"),
        ("trn2.3xlarge", "trainium2", "sdk2.32.0"),
    ):
        out, docs = _plan(tmp_path, instance)
        script = (out / "launch.sh").read_text()
        container = docs[0]["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
        assert ":latest" not in script and ":latest" not in container["image"]
        assert container["image"] == engines.image_for(chip) and sdk in container["image"]
        assert shlex.quote(container["image"]) in script
        names = {e["name"]: e.get("value") for e in container["env"]}
        skip = chip == "trainium2"  # the Trn2/Trn3 DLC path needs it (no EFA on trn2.3xlarge)
        assert ("NEURON_SKIP_EFA_AFFINITY=1" in script) is skip
        assert (names.get("NEURON_SKIP_EFA_AFFINITY") == "1") is skip
        assert names["NEURON_COMPILED_ARTIFACTS"] == "/root/.cache/neuron"
        # the DLC quickstart's `docker run`: every Neuron device, SYS_ADMIN and IPC_LOCK
        assert "--device=" in script and "--cap-add SYS_ADMIN --cap-add IPC_LOCK" in script
        assert container["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN", "IPC_LOCK"]


def test_gpu_kits_add_no_capabilities(tmp_path: Path) -> None:
    out, docs = _plan(tmp_path, "g6e.xlarge")
    assert "--cap-add" not in (out / "launch.sh").read_text()
    assert "securityContext" not in docs[0]["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]


def test_k8s_manifest_waits_for_the_compile_and_has_shm_cache_and_requests(tmp_path: Path) -> None:
    for instance, vendor_wait in (("inf2.xlarge", 1800), ("g6e.xlarge", 900)):
        _, docs = _plan(tmp_path, instance)
        pod = docs[0]["spec"]["template"]["spec"]  # type: ignore[index]
        c = pod["containers"][0]
        start = c["startupProbe"]
        assert start["httpGet"]["path"] == "/health"
        assert start["periodSeconds"] * start["failureThreshold"] >= vendor_wait
        assert c["readinessProbe"]["httpGet"]["path"] == "/health"
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert {"/dev/shm", "/root/.cache/huggingface"} <= mounts
        vols = {v["name"]: v for v in pod["volumes"]}
        assert vols["shm"]["emptyDir"]["medium"] == "Memory"
        req = c["resources"]["requests"]
        assert req["cpu"] and req["memory"].endswith("Gi")
        assert set(c["resources"]["limits"]) <= set(req)


def test_the_engine_always_gets_a_hugging_face_id(tmp_path: Path) -> None:
    out, _ = _plan(tmp_path, "g6e.xlarge")
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct " in (out / "launch.sh").read_text()
    code, _, err = run("pilot", "plan", "nemotron-4-15b", "--on", "g6e.xlarge", "--out", str(tmp_path / "n"))
    assert code == 2 and err.count("\n") == 1 and "--hf-model" in err
    code, _, err = run(
        "pilot", "plan", "nemotron-4-15b", "--on", "g6e.xlarge", "--out", str(tmp_path / "n"),
        "--hf-model", "nvidia/Nemotron-4-15B",
    )  # fmt: skip
    assert code == 0, err


def test_helm_values_for_the_vllm_production_stack(tmp_path: Path) -> None:
    out = tmp_path / "kit"
    code, _, err = run(
        "pilot", "plan", "llama-3.1-8b", "--on", "g6e.xlarge", "--out", str(out),
        "--hf-model", "meta-llama/Llama-3.1-8B-Instruct",
    )  # fmt: skip
    assert code == 0, err
    values = yaml.safe_load((out / "helm-values.yaml").read_text())
    schema = json.loads((DATA / "production-stack-values.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(values)  # the chart's own schema
    dep = json.loads((out / "load_plan.json").read_text())["deployed"]
    container = next(yaml.safe_load_all((out / "k8s.yaml").read_text()))["spec"]["template"]["spec"]
    container = container["containers"][0]
    engine = values["servingEngineSpec"]
    (spec,) = engine["modelSpec"]
    assert f"{spec['repository']}:{spec['tag']}" == container["image"]
    assert spec["modelURL"] == "meta-llama/Llama-3.1-8B-Instruct"
    config = spec["vllmConfig"]
    assert config["maxModelLen"] == dep["max_len"] == 672  # 640 asked, with the margin
    assert config["maxNumSeqs"] == dep["max_batch"]  # the largest batch the prediction fits
    assert config["tensorParallelSize"] == dep["tp"] and config["dtype"] == "bfloat16"
    requests = container["resources"]["requests"]
    assert (
        spec["requestGPU"] == requests["nvidia.com/gpu"] == get_instance(load_catalog(), "g6e.xlarge").chips
    )
    assert str(spec["requestCPU"]) == requests["cpu"] and spec["requestMemory"] == requests["memory"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert engine[probe] == container[probe]
    assert engine["containerPort"] == engine["startupProbe"]["httpGet"]["port"]
    assert spec["shmSize"].endswith("Gi")


def test_no_helm_values_where_the_chart_cannot_run_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "kit"
    code, _, err = run(
        "pilot", "plan", "llama-3.1-8b", "--on", "inf2.xlarge", "--out", str(out),
        "--hf-model", "meta-llama/Llama-3.1-8B-Instruct",
    )  # fmt: skip
    assert code == 0, err
    assert not (out / "helm-values.yaml").exists()  # the chart launches vLLM's CUDA image only
