# Generated fixture (meta-llama/llama llama/__init__.py).
from .generation import Llama
from .model import ModelArgs, Transformer
