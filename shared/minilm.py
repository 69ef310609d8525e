"""all-MiniLM-L6-v2 in plain torch: its tokenizer, its six BERT layers, mean pooling.

What sentence-transformers runs for the model's files (``modules.json``: a Transformer
reading at most ``max_seq_length`` word pieces, mean pooling over the real word pieces,
normalisation), without importing it. sentence-transformers brings transformers,
scikit-learn and scipy: ~3.3 s of imports in every process that loads the model (each
pool process of a worker, the API, the bench's floor processes), of ~4.8 s a load took in
all; the tokenizer (``tokenizers``, in Rust) and the weights (``safetensors``) import in
~0.01 s. The vectors are sentence-transformers' own to float rounding:
``tests/unit/shared/test_minilm.py`` compares the two on texts of every kind.

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

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class _Layer:
    # (weight, bias) pairs
    qkv_weight: torch.Tensor  # query, key and value stacked: one product instead of three
    qkv_bias: torch.Tensor
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
        # counted), padded to the batch's longest
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        pad_id = int(config.get("pad_token_id", 0))
        pad_token = self._tokenizer.id_to_token(pad_id)
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token or "[PAD]")
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
                    qkv_weight=torch.cat([get(f"{at}attention.self.{p}.weight") for p in parts]),
                    qkv_bias=torch.cat([get(f"{at}attention.self.{p}.bias") for p in parts]),
                    attention_out=pair(f"{at}attention.output.dense"),
                    attention_norm=pair(f"{at}attention.output.LayerNorm"),
                    intermediate=pair(f"{at}intermediate.dense"),
                    out=pair(f"{at}output.dense"),
                    out_norm=pair(f"{at}output.LayerNorm"),
                )
            )

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word-piece ids and attention mask, (len(texts), longest) int64 each."""
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, unit-normalised, the texts run as one batch."""
        import torch

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids, mask = self.tokenize(texts)
        with torch.inference_mode():
            pooled = self._forward(torch.from_numpy(ids), torch.from_numpy(mask))
        vectors: np.ndarray = pooled.numpy()
        return vectors

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        import torch
        from torch.nn import functional as F

        length = ids.shape[1]
        x = self._words[ids]
        x += self._token_type
        x += self._positions[:length]
        x = F.layer_norm(x, (self.dim,), *self._embedding_norm, eps=self._eps)
        keep = mask[:, None, None, :].bool()  # (batch, 1, 1, length): every query sees the real keys
        for layer in self._layers:
            x = self._attention(layer, x, keep)
            x = self._feed_forward(layer, x)
        real = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * real).sum(dim=1) / torch.clamp(real.sum(dim=1), min=1e-9)
        return F.normalize(pooled, p=2.0, dim=1)

    # Each step in a function of its own, so that its intermediate tensors are freed when it
    # returns: a pool process' busiest memory is one batch's largest step, not the sum of a
    # layer's (a batch of 64 texts of 256 word pieces holds ~100 MB per 1,536-wide tensor).

    def _attention(self, layer: _Layer, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        from torch.nn import functional as F

        batch, length, hidden = x.shape
        size = hidden // self._heads
        qkv = F.linear(x, layer.qkv_weight, layer.qkv_bias).view(batch, length, 3, self._heads, size)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (batch, heads, length, head size)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=1.0 / math.sqrt(size))
        del qkv, q, k, v
        out = F.linear(attended.transpose(1, 2).reshape(batch, length, hidden), *layer.attention_out)
        del attended
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
