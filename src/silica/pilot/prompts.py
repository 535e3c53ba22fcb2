"""Prompts for a pilot: unique per request, so a prefix cache cannot serve any of them.

Why: vLLM (and SGLang, TensorRT-LLM) cache the KV of shared prompt prefixes by default. Prompts that
repeat a handful of word rotations are answered largely from that cache, so the time to first token
and the compute efficiency fitted from it would measure cache hits, not prefill. Every prompt here
is an independent draw of common words from a seeded generator: two prompts share their first block
of 16 tokens with probability about 256**-16. The same seed gives the same prompts (repeatable runs).

Without a tokenizer the length is in words: each word below is one token in the Llama, Mistral, Qwen
and GPT BPE vocabularies (a space and a short common word), so the count is close, and the server's
`usage.prompt_tokens` reports the real one. With a tokenizer (`--tokenizer`, the model's own), each
prompt is exactly `input_len` tokens before the engine adds its BOS or chat template.
"""

from __future__ import annotations

import random
from typing import Protocol, cast

from silica.errors import InputError

__all__ = ["PromptMaker", "Tokenizer", "load_tokenizer"]

# 256 short, common English words.
_COMMON = """the of and to in is it that was for on are as with his they at be this have from or one had by
    but not what all were we when your can said there use an each which she do how their if will up
    other about out many then them these so some her would make like him into time has look two more
    write go see number no way could people my than first water been call who oil its now find long
    down day did get come made may part over new sound take only little work know place year live me
    back give most very after thing our just name good man think say great where help through much
    before line right too mean old any same tell boy follow came want show also around form three small
    set put end does another well large must big even such because turn here why ask went men read need
    land different home us move try kind hand picture again change off play spell air away animal house
    point page letter mother answer found study still learn should world high every near add food
    between own below country plant last school father keep tree never start city earth eye light
    thought head under story saw left few while along might close something seem next hard open example
    begin life always those both paper together got group often run important until children side feet
    car mile night walk white sea began grow took river four carry state once book hear stop without
    second later miss idea enough eat face watch far real almost let above girl sometimes mountain cut
    young talk soon list song being leave family"""
_WORDS = tuple(_COMMON.split())[:256]


class Tokenizer(Protocol):
    """What exact-length prompts need from a tokenizer (a Hugging Face tokenizer has all three)."""

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class PromptMaker:
    """Prompt `i` of step `step`: a fresh draw of `input_len` tokens (or words without a tokenizer)."""

    def __init__(self, input_len: int, seed: int = 0, tokenizer: Tokenizer | None = None) -> None:
        self.input_len, self.seed, self.tokenizer = input_len, seed, tokenizer
        self._pool: list[int] = []
        if tokenizer is not None:
            # Token ids that decode to plain words: a re-encoding of their text stays near the count.
            ids = {t for w in _WORDS for t in tokenizer.encode(" " + w, add_special_tokens=False)}
            self._pool = sorted(ids)

    def __call__(self, step: int, i: int) -> str:
        rng = random.Random(f"{self.seed}/{step}/{i}")
        if self.tokenizer is None:
            return " ".join(rng.choice(_WORDS) for _ in range(self.input_len))
        return self._exact(rng)

    def tokens(self, text: str) -> int | None:
        """The prompt's length in tokens when a tokenizer is known (without the engine's specials)."""
        if self.tokenizer is None:
            return None
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def _exact(self, rng: random.Random) -> str:
        tok = self.tokenizer
        assert tok is not None
        n = self.input_len
        ids = [rng.choice(self._pool) for _ in range(n)]
        text = tok.decode(ids)
        for _ in range(20):  # decode/encode may merge or split at the seams: trim or top up
            got = tok.encode(text, add_special_tokens=False)
            if len(got) == n:
                return text
            got = got[:n] if len(got) > n else got + [rng.choice(self._pool) for _ in range(n - len(got))]
            text = tok.decode(got)
        raise InputError(
            f"Cannot build a prompt of exactly {n} tokens with this tokenizer.",
            "run without --tokenizer (the server's usage then reports the length).",
        )


def load_tokenizer(name: str) -> Tokenizer:
    """The model's Hugging Face tokenizer (a local folder or a Hub id already in the cache or online)."""
    try:
        from transformers import AutoTokenizer
    except ImportError as err:
        raise InputError(
            "--tokenizer needs the transformers package.", "pip install transformers, or drop --tokenizer."
        ) from err
    try:
        tok = AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as err:
        first = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise InputError(
            f"Cannot load the tokenizer {name!r}: {first}.",
            "pass a local model folder or a Hugging Face id you can download.",
        ) from err
    return cast(Tokenizer, tok)
