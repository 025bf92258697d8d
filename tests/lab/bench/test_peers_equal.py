"""`bench peers` at equal spend: every search runs until the Solver-call budget is spent, our
experience-library arm (`+lib`: operators off, a fresh copy of the bench's library per run)
and OpenEvolve's whole-program rewrites (`openevolve+rewrite`) are arms, OpenEvolve's
iterations after the budget end at once (the proxy refuses their Proposer calls), and the
table gives the calls spent beside the calls allowed. Control flow on the simulated endpoint
with the real GEPA/OpenEvolve packages, our sandbox and a real library."""

from __future__ import annotations

import itertools
import json
import signal
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from experience_records import entry, outcome
from sim_adapt import EDIT, arithmetic
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.cli.errors import EXIT_UNREACHABLE
from harness_learning.cli.main import main
from harness_learning.harnesses.experience import Library, give_location
from harness_learning.harnesses.llm.simserver import SimServer
from harness_learning.harnesses.seeds import seed_source
from harness_learning_lab.bench import peers_report
from harness_learning_lab.bench.experience import load_settings as load_experience_settings
from harness_learning_lab.bench.peers import Endpoints, base_config, library_path, load_settings
from harness_learning_lab.bench.peers_meter import ProposerProxy
from harness_learning_lab.bench.peers_systems import SYSTEMS, adapter_config, library_for

pytest.importorskip("gepa")
pytest.importorskip("openevolve")

SEED = seed_source("reasoning_direct")
WHOLE = "```python\n" + SEED.replace('PROMPT = """', 'PROMPT = """MARK-A ') + "```"


def test_the_equal_scale_adds_the_library_and_rewrite_arms_and_lets_the_budget_end_searches():
    equal, qwen = load_settings(scale="equal"), load_settings(scale="qwen")
    assert {"best_valid+lib", "openevolve+rewrite"} <= set(equal["systems"]) <= set(SYSTEMS)
    assert set(qwen["systems"]) <= set(equal["systems"])
    same = ("tasks", "seeds", "budget", "n_dev", "n_test", "solver_model", "edit_format")
    assert {k: equal[k] for k in same} == {k: qwen[k] for k in same}
    # the cap sits above what the budget pays for (a proposal evaluated on the dev problems
    # costs n_dev calls), so the budget ends each search
    assert equal["max_proposals"] * equal["n_dev"] > equal["budget"]
    # every seed's library is one `bench experience` trains
    trained = {f"train-seed{seed}" for seed in load_experience_settings()["seeds"]}
    for seed in equal["seeds"]:
        assert Path(equal["experience"].replace("{seed}", str(seed))).name in trained


def test_the_library_arm_is_its_ablation_with_a_library_and_no_operators(tmp_path):
    settings = load_settings(scale="equal")
    ends = Endpoints("http://127.0.0.1:1/v1", "qwen", "http://127.0.0.1:2/v1", "qwen")
    base = base_config(settings, ends, SimpleNamespace(base_url="http://127.0.0.1:3/v1"),
                       "rg:products", 1, {})
    lib, plain = (adapter_config(s, base, tmp_path).model_dump()
                  for s in ("best_valid+lib", "best_valid"))
    assert lib.pop("experience") == str(tmp_path / "library") and plain.pop("experience") == ""
    assert lib == plain and lib["operators"] == "none" and lib["policy"] == "best_valid"
    assert library_path(settings, tmp_path / "out") == str(
        tmp_path / "out" / "../bench-experience/libraries/train-seed0")


def test_each_library_run_gets_a_fresh_copy_of_its_seeds_library(tmp_path):
    trained = tmp_path / "libraries" / "train-seed1"
    with Library(str(trained)) as library:
        library.add([entry([outcome()])])
    base = {"seed": 1, "experience": str(tmp_path / "libraries" / "train-seed{seed}")}
    run_dir = tmp_path / "run"
    library_for(base, run_dir)
    with Library(str(run_dir / "library")) as copy:
        copy.add([entry([outcome(run="r2")], name="verify")])  # the run's own changes ...
        assert len(copy.entries()) == 2
    with Library(str(trained)) as library:
        assert len(library.entries()) == 1  # ... never reach the trained library
    with pytest.raises(ValueError, match="run `harness-learn bench experience` first"):
        library_for({**base, "seed": 0}, tmp_path / "run0")
    assert not (tmp_path / "libraries" / "train-seed0").exists(), "no empty library is made"


def test_a_postgres_library_is_copied_per_seed_and_a_missing_one_is_refused(postgres_url,
                                                                          tmp_path):
    """`experience = "postgresql://.../lib{seed}"` in the bench's settings: each run copies its
    seed's library out of the database; a database holding none is refused, left untouched."""
    import uuid

    import psycopg

    stem = f"hl_peers_{uuid.uuid4().hex[:8]}_"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for seed in (0, 1):
            conn.execute(f"CREATE DATABASE {stem}{seed}")
    template = f"{postgres_url.rsplit('/', 1)[0]}/{stem}{{seed}}"
    trained = template.replace("{seed}", "1")
    with Library(give_location(trained)) as library:
        library.add([entry([outcome()])])
    library_for({"seed": 1, "experience": template}, tmp_path / "run1")
    with Library(str(tmp_path / "run1" / "library")) as copy:
        assert [e.id for e in copy.entries()] == [entry([outcome()]).id]
    with pytest.raises(ValueError, match="holds no experience library.*bench experience"):
        library_for({"seed": 0, "experience": template}, tmp_path / "run0")
    with psycopg.connect(template.replace("{seed}", "0"), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = "
                            "'hl_experience'").fetchone() == (0,)


def test_the_proxy_refuses_once_told_to_stop_and_counts_the_refusals():
    with SimServer(latency_s=0.0, rules=[(r"hi", "hello")]) as url:
        proxy = ProposerProxy(url)
        proxy.label = "t/openevolve/0"
        body = {"model": "sim", "messages": [{"role": "user", "content": "hi"}]}
        try:
            assert _post(proxy.base_url, body)[0] == 200
            proxy.stop_when = lambda: True
            assert _post(proxy.base_url, body)[0] == 400 and _post(proxy.base_url, body)[0] == 400
        finally:
            proxy.close()
    assert proxy.count("t/openevolve/0")[0] == 1 and proxy.refused == {"t/openevolve/0": 2}


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _upstream(status: int, payload: dict) -> ThreadingHTTPServer:
    """A server that answers every POST with `payload` and `status`."""
    raw = json.dumps(payload).encode()

    class Fixed(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _dead_url() -> str:
    """The address of a server that was just closed: connections to it are refused."""
    server = _upstream(200, {})
    port = server.server_address[1]
    server.shutdown(), server.server_close()
    return f"http://127.0.0.1:{port}/v1"


def test_a_dead_proposer_server_is_counted_and_its_own_refusals_are_passed_on():
    refusal = {"error": {"message": "prompt exceeds the context"}}
    server = _upstream(400, refusal)
    ask = {"model": "m", "messages": [{"role": "user", "content": "edit"}]}
    refusing = ProposerProxy(f"http://127.0.0.1:{server.server_address[1]}/v1")
    dead = ProposerProxy(_dead_url())
    refusing.label = dead.label = "t/gepa/0"
    try:
        assert _post(refusing.base_url, ask) == (400, refusal)
        status, reply = _post(dead.base_url, ask)
        assert status == 502 and "did not answer" in reply["error"]["message"]
    finally:
        refusing.close(), dead.close(), server.shutdown(), server.server_close()
    assert refusing.failed == {} and dead.failed == {"t/gepa/0": 1}
    assert dead.count("t/gepa/0") == (0, 0)


def test_answers_cut_at_the_token_cap_are_counted_and_every_answer_is_written_down(tmp_path):
    cut = {"choices": [{"message": {"content": "<<<<<<< SEARCH\nx ="}, "finish_reason": "length"}],
           "usage": {"total_tokens": 700}}
    server = _upstream(200, cut)
    proxy = ProposerProxy(f"http://127.0.0.1:{server.server_address[1]}/v1")
    proxy.label, proxy.transcript = "t/openevolve/0", tmp_path / "proposer.jsonl"
    ask = {"model": "m", "messages": [{"role": "user", "content": "edit"}], "max_tokens": 640}
    try:
        assert _post(proxy.base_url, ask) == (200, cut)
        proxy.label = "t/gepa/0"
        assert _post(proxy.base_url, ask)[0] == 200
    finally:
        proxy.close(), server.shutdown(), server.server_close()
    assert proxy.truncated == {"t/openevolve/0": 1, "t/gepa/0": 1}
    assert proxy.count("t/openevolve/0") == (1, 700)
    lines = [json.loads(line) for line in proxy.transcript.read_text().splitlines()]
    assert [line["label"] for line in lines] == ["t/openevolve/0", "t/gepa/0"]
    assert lines[0]["request"] == ask and lines[0]["response"] == cut


def test_a_run_whose_proposer_stopped_answering_is_not_recorded(tmp_path, capsys):
    # the seed fails every problem (its prompt lacks the mark), so GEPA must reflect
    solver = (r"MARK-A [\s\S]*Problem: Calculate (?P<expr>[-+*/() \d]+)\.",
              lambda m: f"Answer: {arithmetic(m['expr'])}")
    out, dead = tmp_path / "out", _dead_url()
    with SimServer(latency_s=0.0, rules=[solver]) as url, pytest.raises(SystemExit) as exit_info:
        main(["bench", "peers", "--smoke", "--out", str(out), "--solver-url", f"sim@{url}",
              "--proposer-url", f"sim@{dead}", "--system", "gepa"])
    assert exit_info.value.code == EXIT_UNREACHABLE
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"got no answer from {dead}; the run is not recorded" in last
    assert "run the same command again" in last
    assert not list(out.glob("runs/*/*/seed0/result.json"))


def test_a_sampled_request_repeated_word_for_word_gets_a_seed_of_its_own():
    proxy = ProposerProxy("http://127.0.0.1:9/v1")  # never reached: the rule alone
    try:
        ask = {"model": "m", "messages": [{"role": "user", "content": "edit"}], "seed": 0,
               "temperature": 0.7}
        raw = json.dumps(ask).encode()
        sent = [json.loads(proxy.reseeded("t/openevolve/0", raw)) for _ in range(3)]
        assert sent[0] == ask  # the first is sent as it came
        unseeded = {k: v for k, v in ask.items() if k != "seed"}
        assert [{k: v for k, v in s.items() if k != "seed"} for s in sent] == [unseeded] * 3
        assert len({s["seed"] for s in sent}) == 3
        # another run's first ask, a changed prompt, greedy and unseeded requests are left as
        # they are; only the repeats were counted
        assert json.loads(proxy.reseeded("t/gepa/0", raw)) == ask
        other = {**ask, "messages": [{"role": "user", "content": "edit again"}]}
        assert json.loads(proxy.reseeded("t/openevolve/0", json.dumps(other).encode())) == other
        for kept in ({**ask, "temperature": 0}, unseeded):
            for _ in range(2):
                assert json.loads(proxy.reseeded("t/x/0", json.dumps(kept).encode())) == kept
        assert proxy.reseeded("t/x/0", b"not json") == b"not json"
        assert proxy.reseeds == {"t/openevolve/0": 2}
    finally:
        proxy.close()


def test_a_seeded_real_model_repeats_itself_and_the_proxy_makes_the_repeat_a_new_sample(
        local_model_url):
    """The real SmolLM2 server answers a seeded sampled request word for word again (why the
    rule exists); through the proxy the same request three times gives other samples."""
    body = json.dumps({"model": "smollm2", "messages": [
        {"role": "user", "content": "Write one short sentence about any animal you like."}],
        "seed": 7, "temperature": 1.0, "max_tokens": 24}).encode()

    def answer(base: str) -> str:
        request = urllib.request.Request(base.rstrip("/") + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as reply:
            return json.loads(reply.read())["choices"][0]["message"]["content"]

    direct = [answer(local_model_url) for _ in range(2)]
    assert direct[0] == direct[1]
    proxy = ProposerProxy(local_model_url)
    proxy.label = "t/openevolve/0"
    try:
        through = [answer(proxy.base_url) for _ in range(3)]
    finally:
        proxy.close()
    assert through[0] == direct[0]  # the first ask is the server's own answer
    assert len(set(through)) >= 2 and proxy.reseeds == {"t/openevolve/0": 2}


def test_spend_within_ten_percent_is_counted_per_run():
    runs = [{"system": "a", "task": "t", "seed": s, "budget": 40, "solver_calls": calls,
             "final_test": 0.5, "curve": [{"solver_calls": 0, "test": 0.25}],
             "proposer_calls": 3, "proposer_tokens": 10, "wall_s": 1.0}
            for s, calls in enumerate((41, 36, 12))]
    summary = peers_report.summarize(runs)["a"]
    assert summary["spent_within_10pct"] == 2 and summary["budget"] == 40
    assert "29.7 / 40" in peers_report.table({"a": summary}) and "2/3" in peers_report.table(
        {"a": summary})
    assert summary["proposer_truncated"] is None  # these runs predate the count
    counted = [{**r, "proposer_truncated": cut} for r, cut in zip(runs, (3, 0, 0), strict=True)]
    summary = peers_report.summarize(counted)["a"]
    assert summary["proposer_truncated"] == 1.0
    row = peers_report.table({"a": summary}).splitlines()[2]
    assert row.split()[-4] == "1.0"  # cut at cap, before tokens, wall and runs


def test_the_new_arms_run_end_to_end_and_openevolve_stops_at_the_budget(tmp_path):
    solver = (r"MARK-A [\s\S]*Problem: Calculate (?P<expr>[-+*/() \d]+)\.",
              lambda m: f"Answer: {arithmetic(m['expr'])}")
    variants = itertools.count()  # OpenEvolve drops a rewrite identical to its parent

    def rewrite(_match) -> str:
        return WHOLE.removesuffix("```") + f"# variant {next(variants)}\n```"

    rules = [(r"Rewrite the program to improve its FITNESS SCORE", rewrite),
             (r"SEARCH", EDIT.format(old="", new="MARK-A ")), solver]
    out = tmp_path / "out"
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with SimServer(latency_s=0.0, rules=rules) as url:
        result = CliRunner().invoke(app, [
            "bench", "peers", "--smoke", "--out", str(out), "--solver-url", f"sim@{url}",
            "--proposer-url", f"sim@{url}", "--system", "best_valid+lib",
            "--system", "openevolve+rewrite", "--json"])
    assert result.exit_code == 0, result.output
    # OpenEvolve's own SIGINT/SIGTERM handlers leave with its run: the bench still stops
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert "Solver calls / allowed" in result.output
    runs = {s: json.loads((out / "runs" / "rg_basic_arithmetic" / s / "seed0" / "result.json")
                          .read_text()) for s in ("best_valid+lib", "openevolve+rewrite")}
    assert all(r["final_test"] == 1.0 for r in runs.values())
    evolve = runs["openevolve+rewrite"]
    settings = json.loads(result.output.strip().splitlines()[-1])["settings"]
    # every iteration evaluates on all dev problems: the budget ran out before the iterations,
    # and the rest were refused without reaching the model
    assert evolve["solver_calls"] >= settings["budget"] and evolve["proposer_refused"] >= 1
    assert evolve["proposer_calls"] < settings["max_proposals"]  # the budget ended it first
    transcript = out / "runs" / "rg_basic_arithmetic" / "openevolve+rewrite" / "seed0"
    told = (transcript / "proposer.jsonl").read_text().splitlines()
    assert len(told) == evolve["proposer_calls"] and evolve["proposer_truncated"] == 0
    with Library(str(out / "runs" / "rg_basic_arithmetic" / "best_valid+lib" / "seed0"
                     / "library")) as library:
        assert library.entries()  # the library arm wrote its judged changes


def test_the_solvers_replicas_answer_a_systems_problems_two_at_once(tmp_path):
    """`solver_replicas` (2 at the equal scale): a system's problems in flight go to two Solver
    servers, not one after the other to one (which left one of two cores idle)."""
    import asyncio

    from harness_learning_lab.bench.peers import endpoints, solver_client

    assert load_settings(scale="equal")["solver_replicas"] == 2
    servers = [SimServer(latency_s=0.2), SimServer(latency_s=0.2)]
    urls = [server.start() for server in servers]
    try:
        with endpoints(solver=f"s@{urls[0]},{urls[1]}", proposer=f"p@{urls[0]}") as ends:
            client = solver_client(ends, tmp_path / "cache.sqlite", max_tokens=8)

            async def eight() -> None:
                await asyncio.gather(*(client.acomplete(f"Say {i}.") for i in range(8)))

            asyncio.run(eight())
    finally:
        for server in servers:
            server.stop()
    served = [server.stats.served for server in servers]
    assert sum(served) == 8 and min(served) > 0, served
    assert all(server.stats.max_concurrency == 1 for server in servers)  # one at a time each
