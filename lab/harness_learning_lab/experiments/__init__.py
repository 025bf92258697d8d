"""The paper's experiments as one command per track: configs (experiments/*.toml), the runner,
program-structure statistics and a report rebuilt from the run logs alone."""
