"""all-MiniLM-L6-v2 in plain torch: its tokenizer, its six BERT layers, mean pooling.

What sentence-transformers runs for the model's files (``modules.json``: a Transformer
reading at most ``max_seq_length`` word pieces, mean pooling over the real word pieces,
normalisation), without importing it. sentence-transformers brings transformers,
scikit-learn and scipy: ~3.3 s of imports in every process that loads the model (each
pool process of a worker, the API, the bench's floor processes), of ~4.8 s a load took in
all; the tokenizer (``tokenizers``, in Rust) and the weights (``safetensors``) import in
~0.01 s. The vectors are sentence-transformers' own to float rounding:
``tests/unit/shared/test_minilm.py`` compares the two on texts of every kind.

**Packed passes.** A call's texts run in forward passes of at most ``pass_tokens`` real
word pieces (``memq.shared.embedding_batches.token_passes``), without padding: every step
but attention works on each token alone, so the pass' tokens go through it as one matrix,
and only attention sees each text apart (its rows padded to the pass' longest, masked).
Each pass reads the model's ~42 MB of layer weights once: many small padded batches (a
drain's 30 messages cut by length into batches of 8) read them many times over for little
work each. On real dialogue messages, one thread, this ran drain-shaped calls ~20 % faster
than batches of 8 texts padded to their longest.

The layout is checked when the model loads (a BERT encoder, absolute positions, mean
pooling, normalised): files of another layout raise ``ValueError`` instead of giving other
vectors silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memq.shared.embedding_batches import token_passes

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class _Layer:
    # (weight, bias) pairs
    qkv: tuple[torch.Tensor, torch.Tensor]  # query, key and value stacked: one product instead of three
    attention_out: tuple[torch.Tensor, torch.Tensor]
    attention_norm: tuple[torch.Tensor, torch.Tensor]
    intermediate: tuple[torch.Tensor, torch.Tensor]
    out: tuple[torch.Tensor, torch.Tensor]
    out_norm: tuple[torch.Tensor, torch.Tensor]


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _check_layout(path: Path, config: dict[str, Any]) -> None:
    """The files describe what this module runs, or ValueError saying what differs."""
    modules = [m["type"].rsplit(".", 1)[-1] for m in _read(path / "modules.json")]
    pooling = _read(path / "1_Pooling" / "config.json")
    means = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    problems = [
        f"{name} is {got!r}, not {want!r}"
        for name, got, want in (
            ("modules", modules, ["Transformer", "Pooling", "Normalize"]),
            ("pooling", means, ["pooling_mode_mean_tokens"]),
            ("model_type", config.get("model_type"), "bert"),
            ("hidden_act", config.get("hidden_act"), "gelu"),
            ("position_embedding_type", config.get("position_embedding_type", "absolute"), "absolute"),
        )
        if got != want
    ]
    if problems:
        raise ValueError(f"{path} is not a BERT sentence encoder with mean pooling: " + "; ".join(problems))


class MiniLM:
    """The sentence encoder of a sentence-transformers BERT model folder, on the CPU."""

    def __init__(self, path: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = _read(path / "config.json")
        _check_layout(path, config)
        self.max_tokens = int(_read(path / "sentence_bert_config.json")["max_seq_length"])
        self.dim = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # sentence-transformers' call: truncated to max_seq_length (its special tokens
        # counted); no padding, passes are packed
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.no_padding()
        w = load_file(str(path / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> torch.Tensor:
            return w[prefix + name]

        def pair(name: str) -> tuple[torch.Tensor, torch.Tensor]:
            return get(f"{name}.weight"), get(f"{name}.bias")

        self._words = get("embeddings.word_embeddings.weight")
        self._positions = get("embeddings.position_embeddings.weight")
        self._token_type = get("embeddings.token_type_embeddings.weight")[0]  # one segment: type 0
        self._embedding_norm = pair("embeddings.LayerNorm")
        self._layers = []
        for i in range(int(config["num_hidden_layers"])):
            at = f"encoder.layer.{i}."
            parts = ("query", "key", "value")
            self._layers.append(
                _Layer(
                    qkv=(
                        torch.cat([get(f"{at}attention.self.{p}.weight") for p in parts]),
                        torch.cat([get(f"{at}attention.self.{p}.bias") for p in parts]),
                    ),
                    attention_out=pair(f"{at}attention.output.dense"),
                    attention_norm=pair(f"{at}attention.output.LayerNorm"),
                    intermediate=pair(f"{at}intermediate.dense"),
                    out=pair(f"{at}output.dense"),
                    out_norm=pair(f"{at}output.LayerNorm"),
                )
            )

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, its special tokens included, cut at ``max_tokens``."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str], pass_tokens: int = 512, bfloat16: bool = False) -> np.ndarray:
        """(len(texts), dim) float32, unit-normalised: the texts, longest first, in packed
        passes of at most ``pass_tokens`` word pieces (a longer text in a pass of its own).
        ``bfloat16``: the matrix products in bfloat16 (torch's CPU autocast; layer norms,
        softmax and pooling stay float32), for CPUs that multiply bfloat16 natively."""
        import torch

        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        ids = self.tokenize(texts)
        with torch.inference_mode():
            for chosen in token_passes([len(i) for i in ids], pass_tokens):
                if not bfloat16:
                    vectors[chosen] = self._forward([ids[i] for i in chosen]).numpy()
                    continue
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    pooled = self._forward([ids[i] for i in chosen])
                # unit length in float32: bfloat16's 8 bits of mantissa leave norms 0.3 % off
                vectors[chosen] = torch.nn.functional.normalize(pooled.float(), p=2.0, dim=1).numpy()
        return vectors

    def _forward(self, texts: list[list[int]]) -> torch.Tensor:
        """One packed pass: (len(texts), dim), normalised."""
        import torch
        from torch.nn import functional as F

        lengths = np.array([len(t) for t in texts])
        longest = int(lengths.max())
        seq = np.repeat(np.arange(len(texts)), lengths)  # each token's text
        pos = np.arange(len(seq)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # its position there
        tokens = torch.from_numpy(np.concatenate(texts).astype(np.int64))
        x = self._words[tokens]
        x += self._token_type
        x += self._positions[torch.from_numpy(pos)]
        x = F.layer_norm(x, (self.dim,), *self._embedding_norm, eps=self._eps)
        # attention's layout: each text a row padded to the longest, the padding masked
        slots = None if (lengths == longest).all() else torch.from_numpy(seq * longest + pos)
        keep = (torch.arange(longest)[None, :] < torch.from_numpy(lengths)[:, None])[:, None, None, :]
        for layer in self._layers:
            x = self._attention(layer, x, slots, keep)
            x = self._feed_forward(layer, x)
        sums = torch.zeros(len(texts), self.dim, dtype=x.dtype).index_add_(0, torch.from_numpy(seq), x)
        return F.normalize(sums / torch.from_numpy(lengths).to(x.dtype)[:, None], p=2.0, dim=1)

    # Each step in a function of its own, so that its intermediate tensors are freed when it
    # returns: a process' busiest memory is one pass' largest step, not the sum of a layer's.

    def _attention(
        self, layer: _Layer, x: torch.Tensor, slots: torch.Tensor | None, keep: torch.Tensor
    ) -> torch.Tensor:
        from torch.nn import functional as F

        texts, longest = keep.shape[0], keep.shape[-1]
        hidden = self.dim
        size = hidden // self._heads
        qkv = F.linear(x, *layer.qkv)  # (tokens, 3 x hidden)
        if slots is not None:  # into attention's padded layout
            qkv = qkv.new_zeros(texts * longest, 3 * hidden).index_copy_(0, slots, qkv)
        q, k, v = qkv.view(texts, longest, 3, self._heads, size).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=1.0 / math.sqrt(size))
        del qkv, q, k, v
        rows = attended.transpose(1, 2).reshape(texts * longest, hidden)
        del attended
        if slots is not None:  # back to the packed tokens
            rows = rows.index_select(0, slots)
        out = F.linear(rows, *layer.attention_out)
        del rows
        out += x
        return F.layer_norm(out, (hidden,), *layer.attention_norm, eps=self._eps)

    def _feed_forward(self, layer: _Layer, x: torch.Tensor) -> torch.Tensor:
        import torch
        from torch.nn import functional as F

        inner = F.linear(x, *layer.intermediate)
        torch.ops.aten.gelu_(inner)  # in place: the exact (erf) GELU, as F.gelu
        out = F.linear(inner, *layer.out)
        del inner
        out += x
        return F.layer_norm(out, (self.dim,), *layer.out_norm, eps=self._eps)
