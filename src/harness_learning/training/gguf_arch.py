"""What training needs to know about a GGUF's architecture, in both directions: reading a GGUF
into a trainable transformers model (`models.rebuild_from_gguf`) and writing a trained one back
(`export.write_gguf`).

Only the architectures listed in `SUPPORTED` are handled; they share llama.cpp's tensor names
and differ in two details: qwen2 has biases on the query, key and value projections, and llama
stores the query and key rows with each head's rotary halves interleaved (transformers keeps
them as halves), while qwen2 stores them as transformers does. Any other architecture is refused
by name before anything heavy is loaded, instead of failing deep inside a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch and transformers are imported where they are used
    import torch
    from transformers import LlamaConfig, PretrainedConfig, PreTrainedModel, Qwen2Config

    from harness_learning.training.gguf_read import GGUFFile

SUPPORTED = ("llama", "qwen2")

_LAYER = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_BIASES = {
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
}
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight"}
_ROTARY = {"llama": True, "qwen2": False}
"""Whether llama.cpp stores the architecture's q/k rows rotary-interleaved."""


class UnsupportedArchitecture(ValueError):
    """A GGUF whose architecture training cannot rebuild or export."""


def check_architecture(arch: str, path: Path | str) -> str:
    """`arch` if training supports it; else one line naming it and the supported ones."""
    if arch not in SUPPORTED:
        raise UnsupportedArchitecture(
            f"{path}: GGUF architecture {arch!r} cannot be trained or exported (supported: "
            f"{', '.join(SUPPORTED)}); give a GGUF of one of those")
    return arch


def gguf_architecture(path: Path) -> str:
    """The supported `general.architecture` of the GGUF at `path` (else UnsupportedArchitecture)."""
    from harness_learning.training.gguf_read import read_gguf

    return check_architecture(read_gguf(path).architecture, path)


def gguf_name(hf_name: str, arch: str = "llama") -> str | None:
    """llama.cpp's tensor name for a transformers weight (None: not a weight we write)."""
    if hf_name in _TOP:
        return _TOP[hf_name]
    layer = {**_LAYER, **_BIASES} if arch == "qwen2" else _LAYER
    parts = hf_name.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in layer:
        return f"blk.{parts[2]}.{layer[parts[3]]}"
    return None


def hf_name(gguf_tensor: str, arch: str) -> str | None:
    """The transformers weight stored under llama.cpp's name `gguf_tensor` (None: unknown)."""
    for hf, name in _TOP.items():
        if name == gguf_tensor:
            return hf
    layer = {**_LAYER, **_BIASES} if arch == "qwen2" else _LAYER
    parts = gguf_tensor.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk":
        for hf, name in layer.items():
            if name == parts[2]:
                return f"model.layers.{parts[1]}.{hf}"
    return None


def interleave_rotary(weight: np.ndarray, n_head: int) -> np.ndarray:
    """transformers' rotary layout (halves) -> llama.cpp's (pairs), per head: the inverse of
    the permutation transformers applies when it reads a llama GGUF."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def halve_rotary(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary layout (pairs) -> transformers' (halves): undoes `interleave_rotary`."""
    rows = weight.shape[0]
    return (weight.reshape(n_head, rows // n_head // 2, 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def _heads(config: PretrainedConfig, target: str) -> int | None:
    """The head count a q/k tensor is permuted by (None: not a q/k weight)."""
    if target.endswith("attn_q.weight"):
        return config.num_attention_heads
    if target.endswith("attn_k.weight"):
        return config.num_key_value_heads
    return None


def tensors_to_gguf(model: PreTrainedModel, arch: str) -> Iterator[tuple[str, np.ndarray]]:
    """(llama.cpp name, float32 array) for every weight of a plain (LoRA-merged) model."""
    config = model.config
    tied = bool(getattr(config, "tie_word_embeddings", False))
    for name, tensor in model.state_dict().items():
        target = gguf_name(name, arch)
        if target is None or (tied and target == "output.weight"):
            continue
        array = tensor.detach().float().cpu().numpy()
        heads = _heads(config, target)
        if _ROTARY[arch] and heads:
            array = interleave_rotary(array, heads)
        yield target, array


def tensors_from_gguf(file: GGUFFile, arch: str, config: PretrainedConfig, dtype: torch.dtype
                      ) -> dict[str, torch.Tensor]:
    """A transformers state dict from a `gguf_read.GGUFFile`'s tensors, each dequantised and
    cast to `dtype` one at a time (so the float32 copy of the whole model never exists); a
    tensor with no transformers name is refused by name."""
    import torch

    state, unknown = {}, []
    for info in file.tensors:
        name = hf_name(info.name, arch)
        if name is None:
            unknown.append(info.name)
            continue
        array = file.tensor(info)
        heads = _heads(config, info.name)
        if _ROTARY[arch] and heads:
            array = halve_rotary(array, heads)
        state[name] = torch.from_numpy(np.ascontiguousarray(array)).to(dtype)
    if unknown:
        raise ValueError(f"GGUF ({arch}) holds tensors training does not know: {unknown[:5]}")
    return state


def config_from_gguf(file: GGUFFile, arch: str) -> LlamaConfig | Qwen2Config:
    """The transformers config of a supported GGUF, from its `{arch}.*` and tokenizer keys
    (the inverse of `hyperparameters`)."""
    from transformers import LlamaConfig, Qwen2Config

    def key(name: str, default: object = None) -> Any:  # a metadata value, typed by its key
        return file.get(f"{arch}.{name}", default)

    embed = next(t for t in file.tensors if t.name == "token_embd.weight")
    heads = key("attention.head_count")
    ids = {f"{role}_token_id": file.get(f"tokenizer.ggml.{role}_token_id")
           for role in ("bos", "eos", "padding")}
    ids["pad_token_id"] = ids.pop("padding_token_id")
    config = (Qwen2Config if arch == "qwen2" else LlamaConfig)(
        vocab_size=embed.shape[0], hidden_size=key("embedding_length"),
        intermediate_size=key("feed_forward_length"), num_hidden_layers=key("block_count"),
        num_attention_heads=heads, num_key_value_heads=key("attention.head_count_kv", heads),
        max_position_embeddings=key("context_length", 4096),
        rms_norm_eps=key("attention.layer_norm_rms_epsilon", 1e-6),
        rope_parameters={"rope_type": "default", "rope_theta": float(key("rope.freq_base",
                                                                         10000.0))},
        tie_word_embeddings=all(t.name != "output.weight" for t in file.tensors),
        **{k: v for k, v in ids.items() if v is not None},
    )
    dim = key("rope.dimension_count")
    if dim and dim != config.hidden_size // heads:
        config.head_dim = dim
    return config


def hyperparameters(config: PretrainedConfig, arch: str) -> dict[str, int | float]:
    """The `{arch}.*` metadata llama.cpp builds the graph from, taken from the model's config
    (so a model of another size than the reference still gets its own shape)."""
    rope = getattr(config, "rope_parameters", None) or {}
    theta = rope.get("rope_theta", getattr(config, "rope_theta", None))
    values: dict[str, int | float | None] = {
        "context_length": config.max_position_embeddings,
        "embedding_length": config.hidden_size,
        "block_count": config.num_hidden_layers,
        "feed_forward_length": config.intermediate_size,
        "attention.head_count": config.num_attention_heads,
        "attention.head_count_kv": config.num_key_value_heads,
        "attention.layer_norm_rms_epsilon": float(config.rms_norm_eps),
        "rope.freq_base": float(theta) if theta is not None else None,
        "rope.dimension_count": getattr(config, "head_dim", None)
        or config.hidden_size // config.num_attention_heads,
        "vocab_size": config.vocab_size,
    }
    return {f"{arch}.{key}": value for key, value in values.items() if value is not None}
