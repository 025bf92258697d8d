"""The execution log (docs/ARCHITECTURE.md, "The store"): versions, evaluations, proposals,
decisions, events and spend of one run, one small protocol per family (`families.py`) composed
into the `LogStore` interface, with a conformance suite any backend can run (`conformance.py`);
SQLite by default, PostgreSQL (`postgres.PostgresLogStore`, imported on first use: psycopg is
an optional extra) for logs that outlive a machine. A third backend, JSON lines, lives with the tests (tests/support/
jsonl_store.py) as the conformance suite's double: no product path opens it."""

from harness_learning.harnesses.store.base import (
    UNFINISHED_KINDS,
    LogStore,
    LogStoreError,
    RunLocked,
    SchemaVersionError,
    StoreUnreachable,
)
from harness_learning.harnesses.store.families import (
    DecisionLog,
    EvaluationLog,
    EventLog,
    ProposalLog,
    SpendLog,
    VersionLog,
    in_thread,
)
from harness_learning.harnesses.store.jsonl import export_run, import_run
from harness_learning.harnesses.store.records import (
    ROLLBACK_POLICY,
    Decision,
    Evaluation,
    Event,
    LineageStep,
    Outcome,
    Proposal,
    ProposalGroup,
    RunMeta,
    Version,
    canonical_json,
    clean_text,
    new_proposal,
    prompt_group_id,
    proposal_id,
    source_sha,
    to_jsonable,
)
from harness_learning.harnesses.store.schema import SCHEMA_VERSION
from harness_learning.harnesses.store.sqlite import SQLiteLogStore

__all__ = [
    "ROLLBACK_POLICY",
    "SCHEMA_VERSION",
    "UNFINISHED_KINDS",
    "Decision",
    "DecisionLog",
    "Evaluation",
    "EvaluationLog",
    "Event",
    "EventLog",
    "LogStore",
    "LineageStep",
    "LogStoreError",
    "Outcome",
    "Proposal",
    "ProposalGroup",
    "ProposalLog",
    "RunLocked",
    "RunMeta",
    "SQLiteLogStore",
    "SchemaVersionError",
    "SpendLog",
    "StoreUnreachable",
    "Version",
    "VersionLog",
    "canonical_json",
    "clean_text",
    "export_run",
    "import_run",
    "in_thread",
    "new_proposal",
    "prompt_group_id",
    "proposal_id",
    "source_sha",
    "to_jsonable",
]
