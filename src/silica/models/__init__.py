"""The model registry: bundled architectures and any local config.json, parsed into `ModelSpec`s."""

from __future__ import annotations

from silica.models.parse import parse_config, supported_model_types
from silica.models.registry import config_path, list_models, load_config, load_model
from silica.models.spec import ModelKind, ModelSpec

__all__ = [
    "ModelKind",
    "ModelSpec",
    "config_path",
    "list_models",
    "load_config",
    "load_model",
    "parse_config",
    "supported_model_types",
]
