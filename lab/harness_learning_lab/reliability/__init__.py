"""The fault and hostile-input suite's scenarios, shared by `tests/reliability` and
`harness-learn bench reliability`.

- `hostile`: hostile harness code (sandbox escapes, resource abuse, reward hacking), each case
  checked from the outside;
- `proposals`: malformed Proposer output through the adapter's `make_candidate`;
- `faults`: a flaky, slow or dying model endpoint during an adaptation run, then `resume`;
- `crashes`: SIGKILL of the adapter process (and of workers) at seeded random moments;
- `baddata`: malformed datasets, indexes and run directories;
- `common`: the tiny task and helpers they share.

Every scenario returns plain figures (dicts), so the bench prints them and the tests assert on
them.
"""
