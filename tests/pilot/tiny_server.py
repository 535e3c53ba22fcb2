"""A tiny Llama-style model built on the spot, served by a real `transformers serve` on loopback.

Random weights and a byte-level BPE tokenizer trained in memory on a few sentences: nothing is
downloaded (HF_HUB_OFFLINE=1). The server is the real OpenAI-compatible one that ships with
transformers, started as a subprocess on a free port and stopped by the caller.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

MODEL_NAME = "tiny-llama"
_TEXT = [
    "Silica plans, prices and proves AI workloads on AWS Trainium, Inferentia and NVIDIA GPUs.",
    "The quick brown fox jumps over the lazy dog while the pilot measures time to first token.",
    "A load test sends streaming requests and times every token as its bytes arrive.",
] * 50


def build_tiny_model(directory: Path, *, hidden_size: int = 64, heads: int = 4, kv_heads: int = 2) -> Path:
    """Write config, random weights and a freshly trained tokenizer to `directory`; returns it.

    vLLM's CPU attention takes only some head sizes (0.32 refuses 16, the default here's
    64 / 4 heads), so the vLLM tests build it with `hidden_size=128, heads=2, kv_heads=1` (head 64)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_TEXT, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=fast.vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=512,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    # Never emit a special token, so every request generates exactly max_tokens (a fixed load shape).
    model.generation_config.suppress_tokens = [fast.unk_token_id, fast.bos_token_id, fast.eos_token_id]
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    model_dir: Path, log: Path, timeout_s: float = 90.0, threads: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `transformers serve` on a free loopback port; returns the process and its base URL.
    `threads` caps torch's compute threads (OMP_NUM_THREADS): one keeps step times steady on a
    busy shared machine, where spinning compute threads stall each other."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    exe = Path(sys.executable).with_name("transformers")
    cmd = [str(exe), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise RuntimeError(f"transformers serve did not answer in {timeout_s:.0f}s: {log.read_text()[-2000:]}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
