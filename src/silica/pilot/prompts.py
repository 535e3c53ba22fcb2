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

With a dataset of real conversations (`--dataset`, ShareGPT-style JSON), each request draws its
prompt and answer lengths from the dataset's (first user turn, first reply) pairs, seeded like the
prompts; the text itself is still a fresh draw, so the lengths are real and the cache still misses.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Protocol, cast

from silica.errors import InputError

__all__ = ["PromptMaker", "Tokenizer", "load_tokenizer", "read_length_pairs"]

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

    def __init__(
        self,
        input_len: int,
        seed: int = 0,
        tokenizer: Tokenizer | None = None,
        lengths: list[tuple[int, int]] | None = None,
    ) -> None:
        self.input_len, self.seed, self.tokenizer = input_len, seed, tokenizer
        self.lengths = lengths or []  # (prompt, answer) pairs to draw from; none: input_len always
        self._pool: list[int] = []
        if tokenizer is not None:
            # Token ids that decode to plain words: a re-encoding of their text stays near the count.
            ids = {t for w in _WORDS for t in tokenizer.encode(" " + w, add_special_tokens=False)}
            self._pool = sorted(ids)

    def pair(self, step: int, i: int) -> tuple[int, int | None]:
        """Request `i` of step `step`: its prompt length, and its answer length (None: the plan's)."""
        if not self.lengths:
            return self.input_len, None
        n, out = random.Random(f"{self.seed}/{step}/{i}/length").choice(self.lengths)
        return n, out

    def __call__(self, step: int, i: int) -> str:
        rng = random.Random(f"{self.seed}/{step}/{i}")
        n = self.pair(step, i)[0]
        if self.tokenizer is None:
            return " ".join(rng.choice(_WORDS) for _ in range(n))
        return self._exact(rng, n)

    def tokens(self, text: str) -> int | None:
        """The prompt's length in tokens when a tokenizer is known (without the engine's specials)."""
        if self.tokenizer is None:
            return None
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def _exact(self, rng: random.Random, n: int) -> str:
        tok = self.tokenizer
        assert tok is not None
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


_USER = {"human", "user"}
_REPLY = {"gpt", "assistant", "chatgpt", "bard", "model"}


def read_length_pairs(
    path: Path, tokenizer: Tokenizer | None = None, max_total: int | None = None
) -> tuple[list[tuple[int, int]], int]:
    """(prompt, answer) lengths of a ShareGPT-style dataset, and how many conversations were skipped.

    The format `vllm bench serve --dataset-name sharegpt` reads: a JSON list of objects whose
    `conversations` are turns `{"from": "human"|"gpt", "value": TEXT}` (`role`/`content` also read).
    Each conversation gives its first user turn and the reply after it, in tokens with a tokenizer,
    else in words; one without both, or longer than `max_total` together (the kit's max model
    length), is skipped, as vLLM's benchmark skips them.
    """
    from silica._files import parse_json, read_text
    from silica.errors import DataFileError

    raw = parse_json(read_text(path, "dataset"), path, "a ShareGPT-style JSON list of conversations")
    if not isinstance(raw, list):
        raise DataFileError(
            f"Dataset {path} is not a JSON list of conversations.",
            'pass a ShareGPT-style file: [{"conversations": [{"from": "human", "value": ...}, ...]}, ...].',
        )

    def size(text: str) -> int:
        if tokenizer is not None:
            return len(tokenizer.encode(text, add_special_tokens=False))
        return len(text.split())

    pairs: list[tuple[int, int]] = []
    skipped = 0
    for item in raw:
        turns = item.get("conversations") or item.get("messages") if isinstance(item, dict) else None
        found: tuple[int, int] | None = None
        if isinstance(turns, list):
            for a, b in itertools.pairwise(turns):
                if not (isinstance(a, dict) and isinstance(b, dict)):
                    break
                who_a, who_b = (str(t.get("from", t.get("role", ""))).lower() for t in (a, b))
                text_a, text_b = (t.get("value", t.get("content")) for t in (a, b))
                if who_a in _USER and who_b in _REPLY and isinstance(text_a, str) and isinstance(text_b, str):
                    found = (size(text_a), size(text_b))
                    break
        if found is None or min(found) < 1 or (max_total is not None and sum(found) > max_total):
            skipped += 1
            continue
        pairs.append(found)
    if not pairs:
        raise DataFileError(
            f"Dataset {path} has no conversation with a user turn and a reply"
            + (f" within {max_total} tokens" if max_total is not None else "")
            + f" ({skipped} skipped).",
            "pass a ShareGPT-style file (conversations of from/value turns).",
        )
    return pairs, skipped
