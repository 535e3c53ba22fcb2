"""One generic reader for YAML and JSON configs (issue 30, round 8).

Eight rounds of held-out figures showed configs as the weakest file kind: each round's rules matched a few more
spellings of a key on one line, and the next set spelled it another way. This module reads a config as the data
it is instead: every key path with its scalar value and line. A small table of classes then decides, from the
key path and the value together, whether the setting switches on something CUDA-only: a Ray GPU request (any
count above zero under a Ray scaling, actor or node-type block), a serving engine named after a CUDA-only
library (`type: VLLMEngine`), a CUDA backend switch set true (`tf32: true`), a container granted NVIDIA GPUs
through compose's device reservations, and a container's argv list (`command:`/`args:`), which is a launcher
line. False, zero and CPU values are not findings. The scanner maps each class to its rule in the knowledge base.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import yaml

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class Setting:
    """One scalar in a config: its key path (sequence items as "[]"), its value as written, and its line."""

    path: Path_
    value: str
    line: int


@dataclass(frozen=True)
class ArgvList:
    """A sequence of scalars under a `command`/`args`/`entrypoint` key: one command line, split."""

    words: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class ConfigHit:
    """A setting that switches on a CUDA-only feature: the rule id (knowledge base) and why."""

    rule: str
    line: int
    what: str


_ARGV_KEYS = frozenset({"command", "args", "entrypoint", "cmd"})
_TRUE = frozenset({"true", "yes", "on", "1"})


def read(text: str) -> tuple[list[Setting], list[ArgvList]]:
    """Every scalar setting and argv list of a YAML or JSON document (all documents of a stream); a file that
    does not parse (a Helm template, a Jinja file) gives nothing, and the line rules still read it."""
    settings: list[Setting] = []
    argvs: list[ArgvList] = []
    for node in _documents(text):
        _walk(node, (), settings, argvs)
    return settings, argvs


# Configs are small; a larger YAML/JSON file is data (a tokenizer, a dataset, a lock) and is left to the line
# rules, which keeps a scan's time linear in the bytes it reads (PyYAML's composer is far slower than a regex).
MAX_CONFIG_CHARS = 256_000
# libyaml where installed: the same nodes and marks, several times faster
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _documents(text: str) -> list[yaml.Node]:
    if len(text) > MAX_CONFIG_CHARS:
        return []
    try:
        return [n for n in yaml.compose_all(text, Loader=_LOADER) if n is not None]
    except yaml.YAMLError:
        return []


def disabled_spans(text: str) -> list[tuple[int, int]]:
    """Line ranges (first, last) of named components switched off with `enabled: false` (a Helm chart's vLLM
    sidecar left off): what such a block names does not run, so its images and settings are not findings. A list
    entry switched off (a chart's example model spec) stays: it shows what the user deploys in its place."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[yaml.Node, bool]] = [(n, False) for n in _documents(text)]
    while stack:
        node, keyed = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if (
                    isinstance(key, yaml.ScalarNode)
                    and key.value == "enabled"
                    and isinstance(value, yaml.ScalarNode)
                    and str(value.value).strip().lower() in {"false", "no", "off"}
                    and keyed
                ):
                    spans.append((node.start_mark.line + 1, node.end_mark.line + 1))
                stack.append((value, True))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, False) for item in node.value)
    return spans


_CARGO_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_CARGO_DEP = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_-]*)\s*=")
_CUDA_FEATURE = re.compile(r"""features\s*=\s*\[[^\]]*["']cuda""")
_CUDA_CRATE = re.compile(r"(?:^|-)(?:cu|cuda|cublas\w*|cudnn|nccl|cudarc)(?:$|-)")


def cargo_dependencies(text: str, library: Callable[[str], str | None]) -> Iterator[ConfigHit]:
    """A Rust crate list (Cargo.toml): a dependency named after a CUDA-only library in the table, with any
    prefix (`candle-flash-attn` is flash-attn's kernels bound for candle), and crates named for CUDA
    (`candle-cublaslt`, `candle-index-select-cu`, `cudarc`), which are CUDA kernels of their own."""
    section = ""
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if (m := _CARGO_SECTION.match(line)) is not None:
            section = m.group(1).strip()
            continue
        if not section.endswith("dependencies") or (m := _CARGO_DEP.match(line)) is None:
            continue
        crate = m.group(1).lower().replace("_", "-")
        parts = crate.split("-")
        rule = next(
            (r for i in range(1, len(parts)) if (r := library("-".join(parts[i:]))) is not None), None
        )
        if rule is None and (_CUDA_CRATE.search(crate) is not None or _CUDA_FEATURE.search(line) is not None):
            rule = "other-cuda-kernels"
        if rule is not None:
            yield ConfigHit(rule, n, f"crate {m.group(1)}")


def _walk(node: yaml.Node, path: Path_, settings: list[Setting], argvs: list[ArgvList]) -> None:
    if isinstance(node, yaml.ScalarNode):
        settings.append(Setting(path, str(node.value), node.start_mark.line + 1))
    elif isinstance(node, yaml.SequenceNode):
        items = node.value
        if (
            path
            and path[-1].lower() in _ARGV_KEYS
            and items
            and all(isinstance(i, yaml.ScalarNode) for i in items)
        ):
            argvs.append(ArgvList(tuple(str(i.value) for i in items), items[0].start_mark.line + 1))
        for item in items:
            _walk(item, (*path, "[]"), settings, argvs)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
            _walk(value, (*path, name), settings, argvs)


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _positive(value: str) -> bool:
    n = _number(value)
    return n is not None and n > 0


def _truthy(value: str) -> bool:
    return value.strip().lower() in _TRUE


# Ray: the blocks whose counts Ray schedules (Serve's ray_actor_options, Train's scaling_config and
# resources_per_worker, a cluster's node types, Tune's resources_per_trial, RLlib/ray_remote_args).
_RAY_BLOCKS = frozenset(
    {
        "ray_actor_options",
        "scaling_config",
        "resources_per_worker",
        "resources_per_trial",
        "available_node_types",
        "ray_remote_args",
        "placement_group_bundles",
    }
)
_RAY_GPU_KEY = re.compile(r"^(?:num_gpus|gpus?|GPU|accelerator_type_\w+)$", re.IGNORECASE)
_GPUS_PER = re.compile(r"^(?:num_)?gpus?_per_(?:worker|replica|actor|trial|bundle)$", re.IGNORECASE)
# a serving engine chosen by name in a config: `type: VLLMEngine`, `engine: TRTLLMEngine`
_ENGINE_KEYS = frozenset({"type", "engine", "engine_type", "engine_cls", "engine_class", "backend"})
_ENGINE_VALUE = re.compile(r"^([A-Za-z][A-Za-z0-9]*?)(?:Async)?(?:Engine|Backend)$")
# CUDA backend switches (TF32 matmuls and cuDNN), set true
_CUDA_FLAG_KEY = re.compile(r"^(?:use_|allow_|enable_)?tf32$", re.IGNORECASE)
_COMPOSE_DEVICES = ("deploy", "resources", "reservations", "devices")


def _squash(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


_FALSE = frozenset({"", "false", "no", "off", "0", "none", "null", "~", "disabled", "cpu"})
_ATTN_KEYS = frozenset(
    {"attnimplementation", "attnimpl", "attentionimplementation", "attentionbackend", "attnbackend"}
)
_FLASH_VALUE = re.compile(r"^(?:flash(?:_?attn|_?attention)?(?:_?[23])?|fa[23])$", re.IGNORECASE)
_QUANT_KEYS = frozenset({"quantization", "quantmethod", "quantize", "quantizationmethod"})
_BNB_KEYS = frozenset({"loadin4bit", "loadin8bit", "usebnboptimizer", "bnb4bit"})
_BNB_VALUE = re.compile(
    r"^(?:bnb|bitsandbytes)(?:[._-]\w+)?$|^(?:paged_)?(?:adamw|lion)_(?:bnb_)?(?:8|32)bit$", re.I
)
_GPU_QUANT_VALUE = re.compile(
    r"^(?:awq|gptq|awq_marlin|gptq_marlin|marlin|exl2|exllama(?:v2)?|squeezellm|aqlm|eetq)$", re.I
)
_FSDP_KEYS = frozenset({"fsdp", "usefsdp", "fsdpconfig"})
_STRATEGY_KEYS = frozenset({"strategy", "distributedstrategy", "distributedtype", "parallelism", "sharding"})


def _named(keys: list[str], value: str) -> str:
    return f"{'.'.join(keys[-2:])}: {value}"


def _feature(keys: list[str], value: str) -> str | None:
    """The rule a key and value switch on, by class (any spelling of the key, at any depth), or None: the
    truthy/falsy reading is what keeps `flash_attention: false` and `load_in_8bit: false` out."""
    if not keys:
        return None
    key = _squash(keys[-1])
    v = value.strip()
    on = v.lower() not in _FALSE
    if ("flashattn" in key or "flashattention" in key) and _truthy(v):
        return "flash-attn"
    if key in _ATTN_KEYS and _FLASH_VALUE.match(v):
        return "flash-attn"
    if key in _BNB_KEYS and _truthy(v):
        return "bitsandbytes"
    if (key in _QUANT_KEYS or key == "optim") and _BNB_VALUE.match(v):
        return "bitsandbytes"
    if key in _QUANT_KEYS and _GPU_QUANT_VALUE.match(v):
        return "gpu-quant-kernels"
    if key in _STRATEGY_KEYS and v.lower().startswith("fsdp"):
        return "fsdp"
    if key == "stage" and len(keys) > 1 and _squash(keys[-2]) == "zerooptimization" and _positive(v):
        return "deepspeed-config"
    if key in {"zerostage", "dszerostage"} and _positive(v):
        return "deepspeed-config"
    if key in {"ampbackend", "fp16backend", "halfprecisionbackend"} and v.lower() == "apex":
        return "apex"
    if key.endswith("device") and re.match(r"^cuda(?::\d+)?$", v):
        return "torch-cuda"
    if "nvidia.com/gpu" in keys[-1] and _positive(v):
        return "k8s-gpu"
    del on
    return None


def judge(
    settings: list[Setting], argvs: list[ArgvList], library: Callable[[str], str | None]
) -> Iterator[ConfigHit]:
    """The classes of CUDA-only settings; `library` names the rule of a CUDA-only library given one of its
    names (the knowledge base's one table), or None."""
    for s in settings:
        last = s.path[-1] if s.path else ""
        keys = [k for k in s.path if k != "[]"]
        feature = _feature(keys, s.value)
        if feature is not None:
            yield ConfigHit(feature, s.line, _named(keys, s.value))
        if _GPUS_PER.match(last) and _positive(s.value):
            yield ConfigHit("ray-gpu", s.line, f"{last}: {s.value}")
        elif _RAY_GPU_KEY.match(last) and _positive(s.value) and _RAY_BLOCKS & set(keys):
            yield ConfigHit("ray-gpu", s.line, f"{'.'.join(keys[-2:])}: {s.value}")
        elif last in {"use_gpu", "gpu"} and _truthy(s.value) and _RAY_BLOCKS & set(keys):
            yield ConfigHit("ray-gpu", s.line, f"{last}: {s.value}")
        elif last in _ENGINE_KEYS and (m := _ENGINE_VALUE.match(s.value.strip())) is not None:
            rule = library(m.group(1))
            if rule is not None:
                yield ConfigHit(rule, s.line, f"{last}: {s.value}")
        elif _CUDA_FLAG_KEY.match(last) and _truthy(s.value):
            yield ConfigHit("cuda-backend-flags", s.line, f"{last}: {s.value}")
        elif (
            keys
            and tuple(keys[-5:-1]) == _COMPOSE_DEVICES
            and (
                (keys[-1] == "driver" and s.value.lower() == "nvidia")
                or (keys[-1] == "capabilities" and s.value.lower() == "gpu")
            )
        ):
            yield ConfigHit(
                "cuda-base-image", s.line, f"a container granted NVIDIA GPUs ({keys[-1]}: {s.value})"
            )


def argv_line(argv: ArgvList) -> str:
    """An argv list as the command line a shell would run, with the program's own name first
    (`/usr/local/bin/torchrun` -> `torchrun`), for the launcher rules written for scripts."""
    words = list(argv.words)
    if words:
        words[0] = words[0].rsplit("/", 1)[-1]
    return " ".join(words)
