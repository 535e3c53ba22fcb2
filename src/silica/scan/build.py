"""Build the module to trace: a real `transformers` model from its config, or the user's factory.

Registry models and config.json files are built on the meta device with few layers and full widths: no
weights are allocated or downloaded, and the operators are those of the real modeling code. Only a
FILE.py:FACTORY input runs user code. torch and transformers are imported inside the functions.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Built", "ScanFailure", "build_from_config", "load_factory", "shrink_config"]

_LAYER_KEYS = (
    "num_hidden_layers",
    "num_layers",
    "n_layer",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
)
_SUBCONFIGS = ("text_config", "vision_config", "audio_config", "encoder", "decoder")
SEQ_LEN = 32
DECODER_LEN = 8


class ScanFailure(Exception):
    """A step of the scan failed on the user's model or code; it becomes a finding, never a crash."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass
class Built:
    module: Any  # torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    is_llm: bool = False
    assumptions: list[str] = field(default_factory=list)


def _shrink(cfg: dict[str, Any], layers: int) -> None:
    for key in _LAYER_KEYS:
        n = cfg.get(key)
        if isinstance(n, int) and n > layers:
            cfg[key] = layers
            for k, v in list(cfg.items()):  # per-layer lists (layer_types, ...) follow the layer count
                if "layer" in k and isinstance(v, list) and len(v) == n:
                    cfg[k] = v[:layers]
    if isinstance(cfg.get("first_k_dense_replace"), int):  # keep at least one MoE layer (DeepSeek)
        cfg["first_k_dense_replace"] = min(cfg["first_k_dense_replace"], max(layers - 1, 0))
    if isinstance(cfg.get("mlp_only_layers"), list):
        cfg["mlp_only_layers"] = [i for i in cfg["mlp_only_layers"] if isinstance(i, int) and i < layers - 1]
    for sub in _SUBCONFIGS:
        if isinstance(cfg.get(sub), dict):
            _shrink(cfg[sub], layers)


def shrink_config(config: dict[str, Any], layers: int) -> dict[str, Any]:
    """A copy of `config` with at most `layers` layers (per stack), keeping at least one MoE layer."""
    import copy

    cfg = copy.deepcopy(config)
    _shrink(cfg, layers)
    return cfg


def _example_inputs(torch: Any, model: Any, config: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    name = getattr(model, "main_input_name", "input_ids")
    meta = torch.device("meta")
    kwargs: dict[str, Any] = {}
    if name == "input_ids":
        kwargs["input_ids"] = torch.zeros((1, SEQ_LEN), dtype=torch.long, device=meta)
    elif name == "pixel_values":
        size = config.image_size if isinstance(config.image_size, int) else config.image_size[0]
        kwargs["pixel_values"] = torch.zeros((1, config.num_channels, size, size), device=meta)
    elif name == "input_features":
        frames = 2 * int(getattr(config, "max_source_positions", 1500))
        kwargs["input_features"] = torch.zeros((1, config.num_mel_bins, frames), device=meta)
    elif name == "input_values":
        kwargs["input_values"] = torch.zeros((1, 16000), device=meta)
    else:
        raise ScanFailure("unsupported-input", f"Silica cannot make example inputs for main input {name!r}.")
    if getattr(config, "is_encoder_decoder", False):
        kwargs["decoder_input_ids"] = torch.zeros((1, DECODER_LEN), dtype=torch.long, device=meta)
    return (), kwargs


def build_from_config(config: dict[str, Any], layers: int) -> Built:
    """The real transformers model for `config`, on the meta device, with `layers` layers."""
    import torch
    import transformers

    hf_logging: Any = transformers.logging
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # config-validation chatter is not scan output
    try:
        return _build(torch, transformers, config, layers)
    finally:
        hf_logging.set_verbosity(verbosity)


def _build(torch: Any, transformers: Any, config: dict[str, Any], layers: int) -> Built:
    cfg = shrink_config(config, layers)
    model_type = cfg.pop("model_type")
    arch = (cfg.get("architectures") or [""])[0]
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **cfg)
    except Exception as err:  # transformers raises ValueError, KeyError, validation errors...
        raise ScanFailure(
            "config-error", f"transformers {transformers.__version__} rejects this config: {err}"
        ) from err
    hf_config.use_cache = False  # the KV cache object is not a traceable output
    hf_config._experts_implementation = "batched_mm"  # static-shape MoE, as Neuron MoE kernels are
    cls = getattr(transformers, arch, None) if arch else None
    try:
        with torch.device("meta"):
            if cls is not None:
                model = cls(hf_config)
            else:
                try:
                    model = transformers.AutoModelForCausalLM.from_config(hf_config)
                except ValueError:
                    model = transformers.AutoModel.from_config(hf_config)
    except Exception as err:
        raise ScanFailure(
            "build-error", f"cannot build {arch or model_type}: {type(err).__name__}: {err}"
        ) from err
    model.eval()
    args, kwargs = _example_inputs(torch, model, hf_config)
    arch = type(model).__name__
    is_llm = not getattr(hf_config, "is_encoder_decoder", False) and arch.endswith(
        ("ForCausalLM", "LMHeadModel")
    )
    assumptions = [
        f"built {arch} from transformers {transformers.__version__} on the meta device: random weights, "
        f"{layers} layer(s) per stack, full widths, float32, batch 1, sequence {SEQ_LEN}",
        f"attention implementation {getattr(hf_config, '_attn_implementation', None)!s}; MoE experts as "
        "'batched_mm' (static shapes, like Neuron's MoE kernels) where the model supports it",
    ]
    return Built(model, args, kwargs, is_llm, assumptions)


def load_factory(path: Path, name: str) -> Built:
    """Import the user's file and call its factory: this runs user code, which the CLI help says."""
    import torch

    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    mod_name = f"_silica_factory_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ScanFailure("factory-import-error", f"cannot import {path}.")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))
    # A scan reads the user's folder and writes nothing there: no __pycache__ for their file or the
    # modules it imports (the factory may import more when called, so the call is covered too).
    bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as err:
            raise ScanFailure(
                "factory-import-error", f"importing {path} raised {type(err).__name__}: {err}"
            ) from err
        finally:
            sys.path.remove(str(path.parent.resolve()))
        factory = getattr(module, name, None)
        if not callable(factory):
            raise ScanFailure("factory-missing", f"{path} defines no callable {name!r}.")
        try:
            result = factory()
        except (Exception, SystemExit) as err:
            raise ScanFailure("factory-error", f"{name}() raised {type(err).__name__}: {err}") from err
    finally:
        sys.dont_write_bytecode = bytecode
    if not (isinstance(result, tuple | list) and len(result) == 2 and isinstance(result[0], torch.nn.Module)):
        raise ScanFailure(
            "factory-bad-return",
            f"{name}() must return (torch.nn.Module, example_inputs); it returned {type(result).__name__}.",
        )
    module_, inputs = result
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    if isinstance(inputs, torch.Tensor):
        args, kwargs = (inputs,), {}
    elif isinstance(inputs, dict):
        args, kwargs = (), dict(inputs)
    elif isinstance(inputs, tuple | list):
        args, kwargs = tuple(inputs), {}
    else:
        raise ScanFailure(
            "factory-bad-return",
            f"{name}() returned example_inputs of type {type(inputs).__name__}; "
            "use a tuple, a dict or a tensor.",
        )
    module_.eval()
    return Built(module_, args, kwargs, False, [f"ran the user's factory {path}:{name}()"])
