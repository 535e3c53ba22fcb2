"""Time `silica scan`: a registry model scan and a code scan of a generated 10,000-file repository.

    python benchmarks/scan_speed.py [--model llama-3.1-8b] [--files 10000] [--keep DIR]

Targets from issue 4: a registry model in at most 20 s and a 10,000-file code scan in at most 10 s, on
2 CPU cores. The model figure is the whole CLI command in a fresh process (imports of torch and
transformers included); the code figure is the library call. Exits non-zero when a target is missed.

The generated repository looks like a real PyTorch project, not like a stub: Python files of 150-250
lines built from model, training, data and utility code (with docstrings and comments in English), about
seven in ten of all files importing torch, and the patterns the scanner looks for at a realistic rate
(`torch.cuda` device code, `.cuda()`, NCCL, autocast, `.item()` in branches, float64, complex RoPE,
`nonzero`, flash-attn, xformers, Triton kernels, C++/CUDA extensions), next to CUDA and C++ sources,
Markdown, JSON, YAML and requirement files, launch scripts (torchrun, NCCL_* variables) and Dockerfiles
on CUDA base images. The code scan runs with --task training, which applies every rule.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from silica.scan import ScanReport

MODEL_LIMIT_S = 20.0
_CLI = "import sys; from silica.cli.app import main; sys.argv[0] = 'silica'; main()"
CODE_LIMIT_S = 10.0
MIN_LINES, MAX_LINES = 150, 250

# Each block is a piece of ordinary project code; "@N@" becomes a number unique in the file.
TORCH_HEADERS = [
    '''"""Model components for experiment @N@.

All layers follow the reference implementation; shapes are (batch, sequence, features) throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
''',
    '''"""Training entry point for run @N@: data loading, the optimisation loop and checkpoints."""

import argparse
import json
import logging
import math
import os
import time
from typing import Optional

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)
''',
    '''"""Helpers shared by the model and the evaluation scripts (@N@)."""

import logging
import math
import os
from typing import Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F

logger = logging.getLogger(__name__)
''',
]

PLAIN_HEADER = '''"""Utilities for job @N@ that do not touch tensors: paths, configuration, logging and schedules."""

import argparse
import json
import logging
import math
import os
import re
from collections import defaultdict
from typing import Any, Dict, List, Optional

logger = logging.getLogger(__name__)
'''

TORCH_BLOCKS = [
    '''class FeedForward@N@(nn.Module):
    """Position-wise feed-forward layer with a gated activation.

    All projections are bias-free, as in most recent decoder models.
    """

    def __init__(self, dim: int, hidden: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # SwiGLU: silu(gate(x)) * up(x), then back to the model width
        h = F.silu(self.gate(x)) * self.up(x)
        return self.dropout(self.down(h))
''',
    """class RMSNorm@N@(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # normalise in float32 for stability, then cast back to the input dtype
        output = self._norm(x.float()).type_as(x)
        return output * self.weight
""",
    '''class Attention@N@(nn.Module):
    """Multi-head self-attention with grouped key/value heads (any number of KV heads that divides n_heads)."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: Optional[int] = None) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads or n_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if mask is not None and (
            mask.dtype == torch.bool  # True means "attend"; SDPA wants an additive float mask here
        ):
            mask = torch.zeros_like(mask, dtype=q.dtype).masked_fill(~mask, float("-inf"))
        if self.n_kv_heads != self.n_heads:
            # repeat the shared heads so that every query head has a key and a value
            rep = self.n_heads // self.n_kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)
''',
    '''def precompute_rope_@N@(dim: int, end: int, theta: float = 10000.0) -> Tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine tables for rotary position embeddings, one row per position."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return freqs.cos(), freqs.sin()


def apply_rope_@N@(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return rotated.flatten(-2)
''',
    """class TransformerBlock@N@(nn.Module):
    def __init__(self, layer_id: int, dim: int, n_heads: int, hidden: int) -> None:
        super().__init__()
        self.layer_id = layer_id
        self.attention = nn.MultiheadAttention(dim, n_heads, batch_first=True)
        self.feed_forward = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.attention_norm = nn.LayerNorm(dim)
        self.ffn_norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.attention_norm(x)
        h, _ = self.attention(h, h, h, need_weights=False)
        x = x + h
        return x + self.feed_forward(self.ffn_norm(x))
""",
    """@dataclass
class ModelArgs@N@:
    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: Optional[int] = None
    vocab_size: int = 32000
    multiple_of: int = 256  # make the hidden layer size a multiple of a large power of two
    norm_eps: float = 1e-5
    max_batch_size: int = 32
    max_seq_len: int = 2048

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads
""",
    '''def init_weights_@N@(module: nn.Module, std: float = 0.02) -> None:
    """Normal init for all linear and embedding weights; zeros for biases and norms."""
    for name, p in module.named_parameters():
        if p.dim() < 2:
            nn.init.zeros_(p)
        elif "embed" in name:
            nn.init.normal_(p, mean=0.0, std=std)
        else:
            nn.init.trunc_normal_(p, std=std / math.sqrt(2 * max(1, p.shape[0] // 1024)))


def count_parameters_@N@(model: nn.Module, trainable_only: bool = True) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
''',
    '''class TokenDataset@N@(torch.utils.data.Dataset):
    """Fixed-length windows over one long token stream; any item is an (input, target) pair."""

    def __init__(self, tokens: torch.Tensor, block_size: int) -> None:
        self.tokens = tokens
        self.block_size = block_size

    def __len__(self) -> int:
        return max(0, len(self.tokens) - self.block_size - 1)

    def __getitem__(self, idx: int):
        chunk = self.tokens[idx : idx + self.block_size + 1]
        return chunk[:-1].clone(), chunk[1:].clone()


def collate_@N@(batch):
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.stack(ys)
''',
    '''def train_one_epoch_@N@(model, loader, optimizer, scheduler=None, grad_clip: float = 1.0, log_every: int = 50):
    """One pass over the loader; returns the mean loss of all steps."""
    model.train()
    total, steps = 0.0, 0
    for step, (x, y) in enumerate(loader):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        total += loss.item()
        steps += 1
        if (
            step % log_every == 0
            and (not dist.is_initialized() or dist.get_rank() == 0)  # rank 0 logs for all
        ):
            logger.info("step %d loss %.4f", step, total / steps)
    return total / max(steps, 1)
''',
    """@torch.no_grad()
def evaluate_@N@(model, loader, max_batches: Optional[int] = None) -> float:
    model.eval()
    losses = []
    for i, (x, y) in enumerate(loader):
        if max_batches is not None and i >= max_batches:
            break
        logits = model(x)
        losses.append(F.cross_entropy(logits.flatten(0, 1), y.flatten()).item())
    model.train()
    return float(sum(losses) / max(len(losses), 1))
""",
    """def save_checkpoint_@N@(path: str, model: nn.Module, optimizer, step: int) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
    torch.save(state, path)


def load_checkpoint_@N@(path: str, model: nn.Module, optimizer=None) -> int:
    # map to the CPU first so that a checkpoint written on any machine loads here
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    return int(state.get("step", 0))
""",
    """def sample_top_p_@N@(probs: torch.Tensor, p: float) -> torch.Tensor:
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1)
    return torch.gather(probs_idx, -1, next_token)


@torch.inference_mode()
def generate_@N@(model, prompt: torch.Tensor, max_new_tokens: int, temperature: float = 0.8, top_p: float = 0.95):
    tokens = prompt
    for _ in range(max_new_tokens):
        logits = model(tokens)[:, -1, :]
        if temperature > 0:
            probs = torch.softmax(logits / temperature, dim=-1)
            next_token = sample_top_p_@N@(probs, top_p)
        else:
            next_token = torch.argmax(logits, dim=-1, keepdim=True)
        tokens = torch.cat([tokens, next_token], dim=1)
    return tokens
""",
    '''class MoE@N@(nn.Module):
    """Top-k routed mixture of experts; every expert sees the full batch (dense dispatch)."""

    def __init__(self, dim: int, hidden: int, n_experts: int = 8, top_k: int = 2) -> None:
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(), nn.Linear(hidden, dim)) for _ in range(n_experts)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.router(x).softmax(dim=-1)
        weights, chosen = torch.topk(scores, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            gate = (weights * (chosen == e)).sum(dim=-1, keepdim=True)
            out = out + gate * expert(x)
        return out
''',
    '''def build_optimizer_@N@(model: nn.Module, lr: float, weight_decay: float = 0.1):
    """AdamW with no decay on biases, norms and embeddings (all 1-D parameters)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "embed" in name else decay).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)
''',
    '''def causal_mask_@N@(seqlen: int, device=None) -> torch.Tensor:
    mask = torch.full((seqlen, seqlen), float("-inf"), device=device)
    return torch.triu(mask, diagonal=1)


def pad_to_multiple_@N@(x: torch.Tensor, multiple: int, value: int = 0) -> torch.Tensor:
    """Right-pad the last dimension so that its size is a multiple of `multiple`."""
    rem = x.shape[-1] % multiple
    if rem == 0:
        return x
    return F.pad(x, (0, multiple - rem), value=value)
''',
]

PLAIN_BLOCKS = [
    """def parse_args_@N@(argv=None):
    parser = argparse.ArgumentParser(description="Experiment @N@")
    parser.add_argument("--data", default="data/train.bin", help="path to the token file")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--out", default="checkpoints")
    parser.add_argument("--resume", action="store_true", help="resume from the last checkpoint if any")
    return parser.parse_args(argv)
""",
    '''def load_config_@N@(path: str) -> dict:
    """Read a JSON config; keys that are missing fall back to the defaults below."""
    defaults = {"lr": 3e-4, "warmup": 100, "weight_decay": 0.1, "betas": [0.9, 0.95]}
    if not os.path.exists(path):
        return dict(defaults)
    with open(path, encoding="utf-8") as f:
        loaded = json.load(f)
    unknown = sorted(set(loaded) - set(defaults))
    if unknown:
        raise ValueError(f"unknown config keys: {', '.join(unknown)}")
    return {**defaults, **loaded}
''',
    """def cosine_lr_@N@(step: int, warmup: int, total: int, base_lr: float, min_lr: float = 0.0) -> float:
    if step < warmup:
        return base_lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
""",
    '''class AverageMeter@N@:
    """Keeps the running average of a value, e.g. the loss over all steps of an epoch."""

    def __init__(self, name: str, fmt: str = ":f") -> None:
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self) -> None:
        self.val = 0.0
        self.avg = 0.0
        self.sum = 0.0
        self.count = 0

    def update(self, val: float, n: int = 1) -> None:
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self) -> str:
        return f"{self.name} {self.val:.4f} ({self.avg:.4f})"
''',
    """def list_shards_@N@(root: str, suffix: str = ".bin") -> list:
    shards = []
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(suffix) and not name.startswith("."):
                shards.append(os.path.join(folder, name))
    if not shards:
        logger.warning("no %s shards under %s", suffix, root)
    return shards
""",
    """class CharTokenizer@N@:
    def __init__(self, text: str) -> None:
        chars = sorted(set(text))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for ch, i in self.stoi.items()}

    @property
    def vocab_size(self) -> int:
        return len(self.stoi)

    def encode(self, s: str) -> list:
        return [self.stoi[c] for c in s if c in self.stoi]

    def decode(self, ids) -> str:
        return "".join(self.itos.get(int(i), "?") for i in ids)
""",
    '''def summarize_runs_@N@(rows: list) -> dict:
    """Group finished runs by their tag and keep the best score of each group."""
    best: dict = defaultdict(lambda: float("-inf"))
    for row in rows:
        if row.get("status") != "finished":
            continue
        tag = re.sub(r"[^a-z0-9]+", "-", str(row.get("tag", "untagged")).lower()).strip("-")
        best[tag] = max(best[tag], float(row.get("score", 0.0)))
    return dict(sorted(best.items(), key=lambda kv: -kv[1]))
''',
]

# The patterns a code scan exists to find, as they appear in real projects.
GPU_BLOCKS = [
    """def get_device_@N@(prefer_gpu: bool = True) -> torch.device:
    if prefer_gpu and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def move_batch_@N@(batch, device):
    return [t.to(device, non_blocking=True) for t in batch]
""",
    """def to_gpu_@N@(model: nn.Module, batch):
    model = model.cuda()
    x, y = (t.cuda(non_blocking=True) for t in batch)
    torch.cuda.synchronize()
    return model, x, y
""",
    """def train_step_amp_@N@(model, x, y, optimizer, scaler):
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()
""",
    """def setup_distributed_@N@() -> int:
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        torch.distributed.init_process_group(backend="nccl", rank=rank, world_size=world)
        torch.cuda.set_device(rank % torch.cuda.device_count())
    return rank
""",
    """def check_finite_@N@(loss: torch.Tensor, step: int) -> None:
    if not torch.isfinite(loss).all():
        raise FloatingPointError(f"non-finite loss at step {step}")
    if loss.item() > 1e3:
        logger.warning("loss spiked to %.1f at step %d", loss.item(), step)
""",
    """def stable_logsumexp_@N@(x: torch.Tensor) -> torch.Tensor:
    # accumulate in float64 for the reference implementation used in tests
    return torch.logsumexp(x.double(), dim=-1).to(x.dtype)
""",
    """def gather_valid_@N@(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    idx = mask.nonzero(as_tuple=True)
    return x[idx]
""",
    """def apply_rotary_complex_@N@(xq: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    return torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
""",
    """def compile_model_@N@(model: nn.Module) -> nn.Module:
    return torch.compile(model, mode="max-autotune")
""",
    """def fast_attention_@N@(q, k, v):
    with torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
""",
]

GPU_HEADERS = [
    "from flash_attn import flash_attn_func, flash_attn_varlen_func\n",
    "import xformers.ops as xops\n",
    "import triton\nimport triton.language as tl\n",
    "from torch.utils.cpp_extension import load\n",
    "import bitsandbytes as bnb\n",
    "import deepspeed\n",
]

TRITON_BLOCK = """@triton.jit
def add_kernel_@N@(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
"""

CUDA_SOURCE = """// Fused kernels for layer @N@.
#include <cuda_runtime.h>
#include <torch/extension.h>

template <typename T>
__global__ void scale_kernel_@N@(T* __restrict__ x, const T alpha, const int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        x[i] = x[i] * alpha;
    }
}

void scale_@N@(torch::Tensor x, double alpha) {
    const int n = x.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    scale_kernel_@N@<float><<<blocks, threads>>>(x.data_ptr<float>(), static_cast<float>(alpha), n);
}
"""

CPP_SOURCE = """// CPU reference for op @N@.
#include <vector>

std::vector<float> scale_cpu_@N@(const std::vector<float>& x, float alpha) {
    std::vector<float> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        out[i] = x[i] * alpha;
    }
    return out;
}
"""


def _fill(header: str, pools: list[tuple[list[str], float]], rng: random.Random, n: int) -> str:
    """A header, then blocks drawn from the weighted pools until the file has 150-250 lines."""
    target = rng.randint(MIN_LINES, MAX_LINES)
    parts = [header.replace("@N@", str(n))]
    lines = parts[0].count("\n")
    blocks, weights = [b for p, _ in pools for b in p], [w / len(p) for p, w in pools for _ in p]
    k = 0
    while lines < target:
        block = rng.choices(blocks, weights)[0]
        if lines + block.count("\n") + 2 > MAX_LINES:
            fits = [b for b in blocks if lines + b.count("\n") + 2 <= MAX_LINES]
            if not fits:
                break
            block = rng.choice(fits)
        block = block.replace("@N@", f"{n}_{k}")
        parts.append(block)
        lines += block.count("\n") + 2
        k += 1
    return "\n\n".join(parts)


def _torch_file(rng: random.Random, n: int) -> str:
    header = rng.choice(TORCH_HEADERS)
    pools = [(TORCH_BLOCKS, 0.8), (PLAIN_BLOCKS, 0.2)]
    if rng.random() < 0.30:  # about three in ten torch files carry some CUDA-specific code
        pools.append((GPU_BLOCKS, 0.06))
    return _fill(header, pools, rng, n)


def _gpu_library_file(rng: random.Random, n: int) -> str:
    extra = rng.choice(GPU_HEADERS)
    header = rng.choice(TORCH_HEADERS).rstrip("\n") + "\n" + extra
    pools = [(TORCH_BLOCKS, 0.7), (GPU_BLOCKS, 0.1)]
    if extra.startswith("import triton"):
        pools.append(([TRITON_BLOCK], 0.2))
    return _fill(header, pools, rng, n)


LAUNCH_SCRIPT = """#!/bin/bash
# Launch run @N@ on one node; see the training guide for the cluster settings.
export NCCL_DEBUG=WARN
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
GPUS=8
torchrun --standalone --nproc_per_node=$GPUS train.py --config configs/run@N@.yaml --bf16
"""
DOCKERFILE = """# Image for service @N@.
FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
RUN apt-get update && apt-get install -y python3-pip && rm -rf /var/lib/apt/lists/*
COPY requirements.txt /app/requirements.txt
RUN pip install -r /app/requirements.txt
WORKDIR /app
"""


def make_repo(root: Path, files: int, seed: int = 0) -> None:
    """A repository of `files` files that looks like a PyTorch project (see the module docstring)."""
    rng = random.Random(seed)
    (root / "requirements.txt").write_text("torch>=2.3\nflash-attn==2.5.8\nnumpy\nsentencepiece\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nkeywords = ["cuda", "triton"]\n'
        'dependencies = ["torch", "xformers", "numpy>=1.24"]\n\n'
        '[tool.ruff]\nextend-exclude = ["apex"]\n'
    )
    made = 2
    i = 0
    while made < files:
        package = root / f"pkg{i // 100:03d}"
        package.mkdir(exist_ok=True)
        roll = rng.random()
        if roll < 0.66:
            (package / f"mod{i}.py").write_text(_torch_file(rng, i))
        elif roll < 0.69:
            (package / f"ext{i}.py").write_text(_gpu_library_file(rng, i))
        elif roll < 0.86:
            (package / f"util{i}.py").write_text(_fill(PLAIN_HEADER, [(PLAIN_BLOCKS, 1.0)], rng, i))
        elif roll < 0.875:
            (package / f"kernel{i}.{rng.choice(['cu', 'cuh'])}").write_text(
                CUDA_SOURCE.replace("@N@", str(i))
            )
        elif roll < 0.89:
            (package / f"ref{i}.cpp").write_text(CPP_SOURCE.replace("@N@", str(i)))
        elif roll < 0.94:
            (package / f"README{i}.md").write_text(
                f"# Component {i}\n\nAll modules here run on any device; see the training guide.\n"
            )
        elif roll < 0.97:
            (package / f"config{i}.json").write_text(f'{{"id": {i}, "lr": 0.0003, "device": "cuda"}}\n')
        elif roll < 0.98:
            (package / f"run{i}.yaml").write_text(f"name: run-{i}\nbatch_size: 32\nsteps: 1000\n")
        elif roll < 0.99:
            (package / f"launch{i}.sh").write_text(LAUNCH_SCRIPT.replace("@N@", str(i)))
        else:
            (package / f"Dockerfile.{i}").write_text(DOCKERFILE.replace("@N@", str(i)))
        made += 1
        i += 1


def time_model(model: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _CLI, "scan", model, "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def time_code(root: Path, files: int) -> tuple[float, float, ScanReport]:
    from silica.scan import scan_code

    start = time.perf_counter()
    make_repo(root, files)
    made = time.perf_counter() - start
    start = time.perf_counter()
    report = scan_code(root, task="training")
    return made, time.perf_counter() - start, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-3.1-8b")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--code-only", action="store_true", help="skip the model scan")
    parser.add_argument("--keep", type=Path, help="generate the repository here and keep it")
    args = parser.parse_args()

    from silica.scan import scan_model

    model_cli = 0.0
    if not args.code_only:
        model_cli = time_model(args.model)
        in_process = scan_model(args.model)
        print(
            f"model scan {args.model}: {model_cli:.2f} s (CLI, fresh process); "
            f"{in_process.seconds:.2f} s in process"
        )
        print(f"  verdicts {in_process.to_dict()['target_verdicts']}, {len(in_process.ops)} operators")

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        made, scanned, report = time_code(root, args.files)
        lines = sum(p.read_text().count("\n") for p in root.rglob("*.py"))
    data = report.to_dict()
    print(
        f"code scan: {data['files_scanned']} files ({lines:,} lines of Python) in {scanned:.2f} s "
        f"(generated in {made:.1f} s)"
    )
    print(f"  {len(data['findings'])} findings, verdicts {data['target_verdicts']}")

    ok = model_cli <= MODEL_LIMIT_S and scanned <= CODE_LIMIT_S
    print(f"targets: model <= {MODEL_LIMIT_S:g} s, code <= {CODE_LIMIT_S:g} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
