"""`bench store`: both backends measured on the same work, and the bench's PostgreSQL schema
dropped afterwards (against the session's throwaway server)."""

from __future__ import annotations

from harness_learning.harnesses.store.postgres import PostgresLogStore
from harness_learning_lab.bench import store_ops


def test_both_backends_are_measured_and_the_schema_goes(postgres_url, tmp_path):
    probe = PostgresLogStore(tmp_path / "probe", postgres_url)
    before = probe._query("SELECT count(*) AS n FROM information_schema.schemata")[0]["n"]
    figures = store_ops.measure(postgres_url, results=40, batch=10, events=5)
    for backend in ("sqlite", "postgresql"):
        assert set(figures[backend]) == {"put_results_per_s", "get_results_per_s",
                                         "append_event_per_s", "spent_per_s"}
        assert all(rate > 0 for rate in figures[backend].values())
    assert probe._query("SELECT count(*) AS n FROM information_schema.schemata")[0]["n"] == before
    probe.close()
