"""Offline switches: nothing may fetch from a hub or the internet at run time."""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "ANONYMIZED_TELEMETRY": "False",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def set_offline_switches() -> None:
    """Set every offline switch not already chosen by the user. Call before importing litellm,
    chromadb or transformers (litellm fetches a cost map at import otherwise)."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
