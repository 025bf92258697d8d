"""TRL's GRPOTrainer with each group's prompt run once (training/shared_prefix.py says why)."""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from harness_learning.training.shared_prefix import shared_prefix_generate, shared_prefix_logps


class SharedPrefixGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose generation prefills a group's prompt once and whose loss forward runs
    each distinct prompt of a micro-batch once. Text-only models without MoE auxiliary losses;
    anything else takes TRL's own path."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # An instance attribute: TRL calls `unwrapped_model.generate(...)`, which is this model.
        self.model.generate = shared_prefix_generate(self.model, self.model.generate)

    def _get_per_token_logps_and_entropies(  # type: ignore[override]
        self, model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
        logits_to_keep: int, batch_size: int | None = None, compute_entropy: bool = False,
        compute_aux_loss: bool = False, **multimodal: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        if compute_aux_loss or any(v is not None for v in multimodal.values()):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **multimodal)
        with self.accelerator.autocast():
            logps, entropies = shared_prefix_logps(model, input_ids, attention_mask,
                                                   logits_to_keep, self.temperature,
                                                   compute_entropy)
        return logps, entropies, None
