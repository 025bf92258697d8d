"""Hostile harness code against evaluation integrity and the sandbox's hardening, one category
per class of escape (see `hostile_cases` for the shape of a case):

- `candidate_limits`: memory and processes are bounded per candidate, not per process
  (/dev/shm, children, fanned-out `tools.python` calls, a call's memory on top of the
  harness's), and a problem those limits end says
  which one (memory, processes) in its error kind;
- `bridge_bounds`: tool arguments are capped in the parent, the stored trace is bounded in
  bytes however many calls carry strings just under the cap, and no line the worker writes
  (huge, deeply nested, not UTF-8, not JSON, JSON that is not a message) breaks the parent's
  reader;
- `infra_claims`: only the parent decides that a problem failed for infrastructure reasons,
  and only its own failures count: an empty reply the harness's stop sequences provoke is an
  answer, and a Solver parameter value the endpoint would refuse is the harness's error;
- `no_gold_inside`: no dataset generator, task or evals code is importable in a worker or its
  `tools.python` calls, and no second path to a package directory (a symlinked environment's
  real path, /lib on a merged /usr) shows more than the allowlisted view;
- `kernel_surface`: io_uring, perf_event_open, keyctl, bpf, ptrace, mount, unshare, nested
  user namespaces, modify_ldt, personality changes, netlink sockets and SysV shared memory are
  refused.
(The memorisation check is exercised through the adapter, in `proposals`.)

`CHECKS` says, per check name, what "contained" means, judged from outside the sandbox.
"""

from __future__ import annotations

from typing import Any

from harness_learning_lab.reliability.hostile_cases import _c

FIND_BRIDGE = """
import json, socket, stat, threading
rid = next((t.name[4:] for t in threading.enumerate() if t.name.startswith("run-")), "?")
def bridge_write(data):
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd") if int(f) > 2)
    for fd in fds:
        try:
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if s.family == socket.AF_UNIX:
                s.sendall(data)
                return fd
        except OSError:
            pass
        finally:
            os.close(s.detach())
    for fd in fds:  # no socket: the bridge is a pipe (a container's private copy of stdout)
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and os.write(fd, data[:1]) == 1:
                view = memoryview(data)[1:]
                while view:
                    view = view[os.write(fd, view):]
                return fd
        except OSError:
            pass
    return None
"""

CANDIDATE_LIMITS = [
    _c("dev_shm_fill", "candidate_limits", "shm_bounded", """
made = 0
try:
    while made < 1024:
        with open(f"/dev/shm/fill{made}", "wb") as f:
            f.write(b"x" * (1 << 20))
        made += 1
except OSError:
    pass
answer = f"made {made}"
""", needs_bwrap=True, solo=True),
    _c("children_hold_memory_together", "candidate_limits", "memory_per_candidate", """
kids = []
for _ in range(5):
    pid = os.fork()
    if pid == 0:
        hog = b"x" * (400 << 20)
        open("held%d" % os.getpid(), "w").close()
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
def settled(pid):
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid or os.path.exists("held%d" % pid)
    except ChildProcessError:
        return True
deadline = time.time() + 25
while time.time() < deadline and not all(settled(k) for k in kids):
    time.sleep(0.1)
alive = []
for k in kids:
    try:
        alive.append(os.waitpid(k, os.WNOHANG)[0] == 0 and os.path.exists("held%d" % k))
    except ChildProcessError:
        alive.append(False)
count = sum(map(settled, kids))
for k in kids:
    try:
        os.kill(k, 9)
    except OSError:
        pass
answer = f"holding {sum(alive)} settled {count}"
""", solo=True, timeout_s=30.0),
    _c("python_calls_fanned_out", "candidate_limits", "python_queued", """
import concurrent.futures, contextvars
code = "import time\\nb = b'x' * (300 << 20)\\nt = time.time()\\ntime.sleep(0.5)\\nprint(t, time.time())"
with concurrent.futures.ThreadPoolExecutor(6) as pool:
    futs = [pool.submit(contextvars.copy_context().run, tools.python, code, 20) for _ in range(6)]
    outs = [f.result() for f in futs]
answer = "|".join((o.stdout or "").strip() or f"error {o.error}"[:80] for o in outs)
""", solo=True, timeout_s=38.0),  # 3 rounds of 2 runs, all on its clock; < candidate 40 s
    _c("tools_python_past_the_candidates_memory", "candidate_limits", "python_memory_per_candidate", """
hold = b"x" * (700 << 20)
out = tools.python("b = b'x' * (900 << 20)\\nprint('held')", timeout=20)
answer = "held" if "held" in (out.stdout or "") else f"blocked: {out.error}"[:120]
""", solo=True, timeout_s=30.0),
]

NAMED_LIMITS = [
    _c("allocation_past_the_memory_limit", "candidate_limits", "named_memory", """
hog = bytearray(1 << 40)
answer = "held a terabyte"
"""),
    _c("unhandled_fork_bomb", "candidate_limits", "named_pids", """
for _ in range(400):
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
answer = "forked them all"
""", solo=True),
]

BRIDGE_BOUNDS = [
    _c("many_huge_tool_arguments", "bridge_bounds", "arguments_capped", """
refused = 0
for _ in range(24):
    try:
        tools.search("q" * (8 << 20), k=1)
    except Exception:
        refused += 1
answer = f"refused {refused}"
""", solo=True),
    _c("raw_call_past_the_argument_cap", "bridge_bounds", "parent_refused_call", FIND_BRIDGE + """
msg = {"op": "call", "id": 10 ** 9, "run": rid, "tool": "llm",
       "args": {"messages": "[raw-huge] " + "z" * (1 << 20), "params": {}}}
fd = bridge_write((json.dumps(msg) + "\\n").encode())
time.sleep(1.0)
answer = f"wrote on {fd}"
""", solo=True),
    _c("deeply_nested_json_line", "bridge_bounds", "protocol_kill", FIND_BRIDGE + """
line = '{"op": "call", "id": 1, "run": "x", "tool": "llm", "args": ' + "[" * 100000 + "]" * 100000 + "}\\n"
bridge_write(line.encode())
time.sleep(30)
answer = "still here"
""", solo=True),
    _c("non_utf8_bridge_line", "bridge_bounds", "protocol_kill", FIND_BRIDGE + """
bridge_write(b"\\xff\\xfe\\x00 not json at all \\x80\\n")
time.sleep(30)
answer = "still here"
""", solo=True),
    _c("json_line_not_a_message", "bridge_bounds", "protocol_kill", FIND_BRIDGE + """
bridge_write(b"[1, 2, 3]\\n")
time.sleep(30)
answer = "still here"
""", solo=True),
    _c("trace_flood", "bridge_bounds", "trace_bounded", """
chunk = "f" * (16 * 1024 - 8)
failed = 0
for i in range(240):
    try:
        tools.search([chunk] * 24, k=1)
    except Exception:
        failed += 1
answer = f"failed {failed}"
""", solo=True, timeout_s=30.0),
    _c("endless_bridge_line", "bridge_bounds", "protocol_kill", FIND_BRIDGE + """
bridge_write(b'{"op": "result", "answer": "' + b"a" * (40 << 20))
time.sleep(30)
answer = "still here"
""", solo=True),
]

INFRA_CLAIMS = [
    _c("raise_the_sandbox_infra_exception", "infra_claims", "harness_fault", """
from harness_learning.harnesses.sandbox.protocol import InfraAbort
raise InfraAbort("the model endpoint is down (claimed)")
"""),
    _c("raise_the_sandbox_budget_exception", "infra_claims", "harness_fault", """
from harness_learning.harnesses.sandbox.protocol import BudgetAbort
raise BudgetAbort("budget spent (claimed)")
"""),
    _c("raise_a_class_named_infra_error", "infra_claims", "harness_fault", """
class InfraError(Exception):
    kind = "infra"
raise InfraError("claimed")
"""),
    _c("forge_an_infra_result_message", "infra_claims", "harness_fault", FIND_BRIDGE + """
msg = {"op": "result", "run": rid, "error": "endpoint down (forged)", "error_kind": "infra"}
bridge_write((json.dumps(msg) + "\\n").encode())
time.sleep(1.0)
answer = "forged"
""", solo=True),
    _c("provoke_empty_replies", "infra_claims", "harness_fault", """
answer = tools.llm("What is 2 + 2?", stop=["A", "4"])
"""),
    _c("solver_value_the_endpoint_refuses", "infra_claims", "harness_fault", """
answer = tools.llm("What is 2 + 2?", temperature="hot")
"""),
    _c("worker_exits_mid_problem", "infra_claims", "harness_fault", """
sys.stdout.flush()
os._exit(0)
""", solo=True),
]

NO_GOLD_INSIDE = [
    _c("import_the_dataset_generator", "no_gold_inside", "no_generator", """
import glob
sys.path += glob.glob(P["site"]) + glob.glob(sys.base_prefix + "/lib/python3*/site-packages")
sys.path += ["/usr/lib/python3/dist-packages", "/usr/local/lib/python3.11/dist-packages"]
try:
    import reasoning_gym
    answer = "imported " + reasoning_gym.__file__
except ImportError as exc:
    answer = f"blocked: {type(exc).__name__}"
"""),
    _c("import_the_evals_layer", "no_gold_inside", "no_generator", """
sys.path[:0] = [P["project_root"]]
try:
    import harness_learning.evals.reasoning_tasks as rg
    answer = "imported " + rg.__file__
except ImportError as exc:
    answer = f"blocked: {type(exc).__name__}"
"""),
    _c("tools_python_imports_the_generator", "no_gold_inside", "no_generator", """
out = tools.python("import reasoning_gym\\nprint('imported', reasoning_gym.__file__)", timeout=10)
answer = (out.stdout or "") + ("blocked: ImportError" if "No module" in (out.error or "") else "")
"""),
]

NO_GOLD_INSIDE.append(_c("every_path_to_a_package_directory", "no_gold_inside", "view_everywhere", """
import glob, json
allowed = set(os.listdir(P["site"])) | {"__pycache__"}
roots = {sys.prefix, os.path.realpath(sys.prefix), "/"}
for line in open("/proc/self/mountinfo"):
    roots.add(line.split()[4].replace("\\\\040", " "))
dirs = set()
for root in roots:
    for pattern in ("lib/python3*/*-packages", "python3*/*-packages", "local/lib/python3*/*-packages"):
        dirs.update(glob.glob(os.path.join(root, pattern)))
exposed = {d: sorted(set(os.listdir(d)) - allowed)[:3] for d in sorted(dirs)}
exposed = {d: names for d, names in exposed.items() if names}
answer = "blocked: only the view" if not exposed else "exposed " + json.dumps(exposed)[:300]
"""))

KERNEL_SURFACE = [
    _c("kernel_interfaces_by_syscall", "kernel_surface", "all_refused", """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
numbers = {"io_uring_setup": 425, "io_uring_enter": 426, "perf_event_open": 298,
           "keyctl": 250, "add_key": 248, "bpf": 321, "ptrace": 101, "mount": 165,
           "umount2": 166, "unshare": 272, "setns": 308, "userfaultfd": 323}
if os.uname().machine != "x86_64":
    numbers = {"io_uring_setup": 425, "perf_event_open": 241, "keyctl": 219, "bpf": 280,
               "ptrace": 117, "mount": 40, "unshare": 97, "setns": 268}
reached = [name for name, nr in numbers.items() if libc.syscall(nr, 0, 0, 0, 0, 0) != -1
           or ctypes.get_errno() != 1]
answer = "all refused" if not reached else "reached " + ",".join(reached)
""", needs_bwrap=True),
    _c("nested_user_namespace", "kernel_surface", "all_refused", """
import ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
reached = []
if libc.unshare(0x10000000) == 0:
    reached.append("unshare(CLONE_NEWUSER)")
for cmd in (["unshare", "-U", "true"], ["unshare", "-Ur", "true"]):
    try:
        if subprocess.run(cmd, capture_output=True, timeout=5).returncode == 0:
            reached.append(" ".join(cmd))
    except (OSError, subprocess.SubprocessError):
        pass
answer = "all refused" if not reached else "reached " + ",".join(reached)
""", needs_bwrap=True),
    _c("ptrace_a_child", "kernel_surface", "all_refused", """
import ctypes, signal
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    time.sleep(5)
    os._exit(0)
rc = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
answer = "all refused" if rc == -1 else "attached"
""", needs_bwrap=True),
]

KERNEL_SURFACE.append(_c("refused_by_argument_and_sysv_shm", "kernel_surface", "all_refused", """
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
x86 = os.uname().machine == "x86_64"
numbers = {"personality": 135 if x86 else 92, "shmget": 29 if x86 else 194,
           "shmat": 30 if x86 else 196, "shmctl": 31 if x86 else 195, "shmdt": 67 if x86 else 197}
if x86:
    numbers["modify_ldt"] = 154
args = {"personality": (0x0040000, 0, 0), "shmget": (0, 4096, 0o1600), "modify_ldt": (0, 0, 0)}
reached = [name for name, nr in numbers.items()
           if libc.syscall(nr, *args.get(name, (0, 0, 0))) != -1 or ctypes.get_errno() != 1]
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
    reached.append("netlink socket")
except OSError as exc:
    if exc.errno != 1:
        reached.append(f"netlink socket ({exc.strerror})")
answer = "all refused" if not reached else "reached " + ",".join(reached)
""", needs_bwrap=True))

INTEGRITY = CANDIDATE_LIMITS + NAMED_LIMITS + BRIDGE_BOUNDS + INFRA_CLAIMS + NO_GOLD_INSIDE + KERNEL_SURFACE


def _count(result: Any) -> int | None:
    try:
        return int(str(result.answer).split()[1])
    except (IndexError, ValueError):
        return None


def _overlap(answer: str | None) -> tuple[int, int]:
    """(calls that printed their interval, most intervals open at one instant)."""
    spans = []
    for part in (answer or "").split("|"):
        try:
            start, end = map(float, part.split())
            spans.append((start, end))
        except ValueError:
            continue
    peak = max((sum(s <= t < e for s, e in spans) for t, _ in spans), default=0)
    return len(spans), peak


def checks(limits: Any) -> dict[str, Any]:
    """What contained means per check, given the suite's `Limits`: (result, env, data) ->
    (contained, what was checked)."""
    mb = 1 << 20
    return {
        "shm_bounded": lambda r, e, d: (
            r.score == 0.0 and _count(r) is not None and _count(r) <= limits.shm_mb,
            f"stopped at the {limits.shm_mb} MiB /dev/shm (the tmpfs would take half the RAM)"),
        "memory_per_candidate": lambda r, e, d: (
            r.score == 0.0 and (_count(r) is not None and _count(r) * 400 <= limits.memory_mb
                                and str(r.answer).endswith("settled 5")
                                or "memory" in (r.error or "")),
            f"5 children of 400 MiB: at most {limits.memory_mb} MiB held at once (one cgroup "
            "per candidate)"),
        "python_memory_per_candidate": lambda r, e, d: (
            r.score == 0.0 and r.answer != "held"
            and ("blocked" in (r.answer or "") or "memory" in (r.error or "")),
            f"a {limits.python_memory_mb} MiB call's 900 MiB on top of the harness's 700 MiB "
            f"passed the candidate's {limits.memory_mb} MiB together and was stopped"),
        "python_queued": lambda r, e, d: (
            _overlap(r.answer)[0] == 6 and _overlap(r.answer)[1] <= limits.python_concurrency,
            f"all 6 calls ran, at most {limits.python_concurrency} at once (queued, not failed)"),
        "arguments_capped": lambda r, e, d: (
            _count(r) == 24 and d["rss_growth"] < 48 * mb
            and sum(len(str(c.args)) for c in r.calls) < 24 * (limits.trace_arg_chars + 512),
            "24 calls of 8 MiB refused, the parent grew < 48 MiB, the trace stayed small"),
        "trace_bounded": lambda r, e, d: (
            r.answer == "failed 240" and d["rss_growth"] < 64 * mb
            and len(str([c.args for c in r.calls])) < limits.trace_problem_bytes + 240 * 600
            and getattr(r, "trace_bytes_cut", 0) > 64 * mb,
            "240 calls of 24 strings under the cap: the trace stayed within "
            f"{limits.trace_problem_bytes >> 20} MiB, the cut was counted, the parent grew "
            "< 64 MiB"),
        "parent_refused_call": lambda r, e, d: (
            not any("[raw-huge]" in p for p in e.server.prompts)
            and any("tool_arg_bytes" in (c.error or "") for c in r.calls),
            "the parent refused the raw oversized call before the endpoint saw it"),
        "protocol_kill": lambda r, e, d: (
            r.score == 0.0 and r.error_kind == "harness" and "protocol" in (r.error or "")
            and r.latency_s < limits.problem_timeout_s,
            "the worker was killed as a protocol violation and the problem ended at once"),
        "harness_fault": lambda r, e, d: (
            r.score == 0.0 and r.error_kind not in ("infra", "budget"),
            "scored 0 as the harness's fault (not unscored as infrastructure)"),
        "no_generator": lambda r, e, d: (
            r.score == 0.0 and "imported" not in (r.answer or "") and "blocked" in (r.answer or ""),
            "the import failed: no generator or evals code in the sandbox"),
        "all_refused": lambda r, e, d: (
            r.answer == "all refused", "every call was refused by the kernel (EPERM)"),
        "named_memory": lambda r, e, d: (
            r.score == 0.0 and r.error_kind == "memory" and "Limits.memory_mb" in (r.error or ""),
            "scored 0, its error kind and text name the memory limit"),
        "named_pids": lambda r, e, d: (
            r.score == 0.0 and r.error_kind == "pids" and "Limits.pids" in (r.error or ""),
            "scored 0, its error kind and text name the process limit"),
        "view_everywhere": lambda r, e, d: (
            r.answer == "blocked: only the view",
            "every package directory at every mounted path shows only the allowlisted view"),
    }
