# Everything this repository needs is installed by these targets from the public registries
# (Go module proxy, npm, PyPI, Maven Central) into the work tree; nothing is expected on the
# machine beyond Go, Node/npm, Python 3, Java 17 and Maven.
#
#   make synth   install the tools, then synthesize the app into cdk.out/ (templates + nag reports)
#   make test    every test and check: unit, DynamoDB Local integration, stack assertions,
#                cdk-nag, fuzz smoke, function dependency check, cfn-lint and checkov
#   make deploy / diff / destroy   against the AWS account of your current credentials

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
# jsii starts `node` from PATH for every Go program that uses CDK (the app and every CDK test
# binary), so the pinned Node 22 from node_modules must come first, for tests too.
export PATH := $(ROOT)/node_modules/.bin:$(ROOT)/.venv/bin:$(PATH)
export DYNAMODB_LOCAL_DIR := $(ROOT)/.cache/dynamodb-local
# SQS-compatible servers (internal/sqslocal): ElasticMQ is the default the e2e suite runs on
# (the most faithful, test/sqsfidelity/README.md); fauxqs and moto only for `make sqs-compare`.
export FAUXQS_DIR := $(ROOT)/.cache/fauxqs
export ELASTICMQ_DIR := $(ROOT)/.cache/elasticmq
export MOTO_VENV := $(ROOT)/.cache/moto-venv
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

GO ?= go
FUZZTIME ?= 10s
BENCHTIME ?= 1x
CDK := $(ROOT)/node_modules/.bin/cdk
FUNCTIONS := consumer dispatcher
# Flags the GoFunction bundling uses (constructs/internal/gofn); `make build` uses them too so
# the binaries measured and tested locally are the ones that are deployed.
GO_LAMBDA_FLAGS := -trimpath -tags lambda.norpc -ldflags "-s -w"

NODE_STAMP := node_modules/.installed
VENV_STAMP := .venv/.installed
DDB_STAMP := $(DYNAMODB_LOCAL_DIR)/.installed
FAUXQS_STAMP := $(FAUXQS_DIR)/.installed
ELASTICMQ_STAMP := $(ELASTICMQ_DIR)/.installed
MOTO_STAMP := $(MOTO_VENV)/.installed
# The e2e suite deploys this assembly: the stack synthesized with a 3 s consumer timeout, so a
# visibility timeout (6x) is 18 s and a poison message reaches its DLQ in about 1.5 minutes.
E2E_ASSEMBLY := $(ROOT)/cdk.out.e2e
E2E_CONTEXT := -c stage=e2e -c consumerTimeout=3s
SOAK_MESSAGES ?= 100000
# Peer benchmark installs: Powertools for AWS Lambda (TypeScript) and (Python).
BENCH_TS := $(ROOT)/.cache/bench-ts
BENCH_TS_STAMP := $(BENCH_TS)/.installed
BENCH_PY_VENV := $(ROOT)/.cache/bench-py-venv
BENCH_PY_STAMP := $(BENCH_PY_VENV)/.installed

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# ---------------------------------------------------------------------------- tools

.PHONY: tools
tools: $(NODE_STAMP) $(VENV_STAMP) $(DDB_STAMP) $(ELASTICMQ_STAMP) gomod ## install every pinned tool into the work tree

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@node --version | grep -q '^v22\.' || { echo "node_modules/.bin/node is not Node 22"; exit 1; }
	@# The CDK CLI ships Go init templates; a go.mod here keeps them out of `go ... ./...`.
	@echo 'module ignore/node_modules' > node_modules/go.mod
	@touch $@

$(VENV_STAMP): requirements-dev.txt
	python3 -m venv .venv
	.venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

$(DDB_STAMP): test/backends/pom.xml
	mvn -q -B -f test/backends/pom.xml dependency:copy-dependencies -DoutputDirectory=$(DYNAMODB_LOCAL_DIR)
	@touch $@

$(FAUXQS_STAMP): test/backends/fauxqs/package.json test/backends/fauxqs/package-lock.json $(NODE_STAMP)
	mkdir -p $(FAUXQS_DIR)
	cp test/backends/fauxqs/package.json test/backends/fauxqs/package-lock.json $(FAUXQS_DIR)/
	npm ci --prefix $(FAUXQS_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(ELASTICMQ_STAMP): test/backends/elasticmq/pom.xml
	mvn -q -B -f test/backends/elasticmq/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(ELASTICMQ_DIR)
	@touch $@

$(MOTO_STAMP): test/backends/moto/requirements.txt
	python3 -m venv $(MOTO_VENV)
	$(MOTO_VENV)/bin/pip install --quiet --disable-pip-version-check -r test/backends/moto/requirements.txt
	@touch $@

$(BENCH_TS_STAMP): test/bench/peers/ts/package.json test/bench/peers/ts/package-lock.json $(NODE_STAMP)
	mkdir -p $(BENCH_TS)
	cp test/bench/peers/ts/package.json test/bench/peers/ts/package-lock.json $(BENCH_TS)/
	npm ci --prefix $(BENCH_TS) --no-audit --no-fund --loglevel=error
	@touch $@

$(BENCH_PY_STAMP): test/bench/peers/py/requirements.txt
	python3 -m venv $(BENCH_PY_VENV)
	$(BENCH_PY_VENV)/bin/pip install --quiet --disable-pip-version-check -r test/bench/peers/py/requirements.txt
	@touch $@

.PHONY: gomod
gomod:
	$(GO) mod download

# ---------------------------------------------------------------------------- build

.PHONY: build
build: ## build both Lambda binaries as bundling does (linux/arm64) into bin/
	@for f in $(FUNCTIONS); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(GO_LAMBDA_FLAGS) -o bin/arm64/$$f/bootstrap ./functions/$$f; \
	  ls -l bin/arm64/$$f/bootstrap | awk -v f=$$f '{printf "%-10s %6.2f MiB\n", f, $$5/1048576}'; \
	done

.PHONY: check-function-deps
check-function-deps: ## fail if a Lambda binary links any CDK, jsii or constructs package
	@bad=$$($(GO) list -deps ./functions/consumer ./functions/dispatcher | grep -E 'aws-cdk-go|jsii-runtime-go|constructs-go' || true); \
	if [ -n "$$bad" ]; then echo "function binaries must not import CDK packages:"; echo "$$bad"; exit 1; fi; \
	echo "function binaries import no CDK, jsii or constructs package"

# ---------------------------------------------------------------------------- synth

.PHONY: synth
synth: tools ## synthesize the app into cdk.out/ (templates and cdk-nag reports)
	$(CDK) synth --quiet
	@ls cdk.out/*.template.json

# ---------------------------------------------------------------------------- test

.PHONY: test
test: tools vet check-function-deps unit fuzz lint e2e bench-smoke ## every test and check (what CI runs)

.PHONY: vet
vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/

.PHONY: unit
unit: ## go test ./... (unit, DynamoDB Local integration, stack assertions, cdk-nag)
	$(GO) test -count=1 ./...

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 10s) each
	@for pkg in $$($(GO) list ./functions/...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

.PHONY: lint
lint: synth ## cfn-lint and checkov over every synthesized template; the diagram is current
	cfn-lint --non-zero-exit-code informational -- cdk.out/*.template.json
	checkov --quiet --compact --skip-download --framework cloudformation --config-file .checkov.yaml -d cdk.out
	@$(GO) run ./stacks/diagram cdk.out | diff -u docs/architecture.md - \
	  || { echo "docs/architecture.md is stale: run make diagram"; exit 1; }

.PHONY: diagram
diagram: synth ## redraw docs/architecture.md from the synthesized templates
	$(GO) run ./stacks/diagram -out docs/architecture.md cdk.out

# ---------------------------------------------------------------------------- end to end

.PHONY: e2e-synth
e2e-synth: tools
	$(CDK) synth --quiet $(E2E_CONTEXT) -o $(E2E_ASSEMBLY)

.PHONY: e2e
e2e: e2e-synth ## the real binaries on ElasticMQ + DynamoDB Local, configured from the template: every scenario and a short soak
	E2E_ASSEMBLY=$(E2E_ASSEMBLY) $(GO) test -tags e2e -count=1 -v -timeout 20m ./test/e2e/ > .cache/e2e.log 2>&1 \
	  || { grep -v '^=== ' .cache/e2e.log | tail -80; exit 1; }
	@grep -E '^(FIGURE|--- |ok|PASS)' .cache/e2e.log

.PHONY: soak
soak: e2e-synth ## the soak alone with SOAK_MESSAGES (default 100,000) messages
	E2E_ASSEMBLY=$(E2E_ASSEMBLY) $(GO) test -tags e2e -count=1 -v -timeout 90m -run '^TestSoak$$' ./test/e2e/ \
	  -args -soak.messages=$(SOAK_MESSAGES) 2>&1 | grep -E '^(FIGURE|--- |ok|PASS|FAIL)|_test.go'

.PHONY: sqs-compare
sqs-compare: tools $(FAUXQS_STAMP) $(MOTO_STAMP) ## measure each SQS server's fidelity (table in test/sqsfidelity/README.md)
	$(GO) run ./test/sqsfidelity/cmd/compare

.PHONY: bench
bench: tools $(BENCH_TS_STAMP) $(BENCH_PY_STAMP) ## every benchmark with figures, into docs/benchmarks.md (about 15 min; a quiet machine)
	test/bench/report.sh docs/benchmarks.md

.PHONY: bench-smoke
bench-smoke: tools $(BENCH_TS_STAMP) $(BENCH_PY_STAMP) ## each benchmark once at a tiny size: proves they run, checks no figure (make test)
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./functions/... ./test/internal/lambdart/
	$(GO) run ./test/bench/peers -records 200 -rounds 1 > /dev/null
	$(GO) run ./test/bench/coldstart -n 2 > /dev/null
	$(GO) run ./test/bench/cost/measure -batches 2 > .cache/cost-smoke.json
	$(GO) run ./test/bench/cost -in .cache/cost-smoke.json > /dev/null
	RUNS=1 PKGS=./functions/internal/backoff test/bench/devloop.sh > /dev/null
	@echo "bench-smoke: every benchmark ran"

# ---------------------------------------------------------------------------- AWS

.PHONY: diff deploy destroy
diff: tools ## cdk diff against your account
	$(CDK) diff
deploy: tools ## cdk deploy the pipeline stack
	$(CDK) deploy --all --require-approval broadening
destroy: tools ## cdk destroy (the idempotency table is retained by default)
	$(CDK) destroy --all

.PHONY: clean
clean:
	rm -rf cdk.out $(E2E_ASSEMBLY) bin
