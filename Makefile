# Everything this repository needs is installed by these targets from the public registries
# (Go module proxy, npm, PyPI, Maven Central) into the work tree. Each target installs only what
# it uses:
#
#   make synth   needs Go and Node (npm) only: the CDK CLI + a Node 22 for jsii, then synthesizes
#                the app into cdk.out/ (templates + cdk-nag reports)
#   make test    the test command: every contract against the real backends, the templates
#                asserted, the examples built; also needs Java 17 + Maven (DynamoDB Local,
#                ElasticMQ) and Python 3 (the AWS CLI v1 docs/local.md's commands run with)
#   make check   what CI runs: make test, then the long scenarios (e2e with every alarm, the
#                soak, fuzzing, cfn-lint and checkov on every stage, each benchmark once);
#                also needs Python 3 for cfn-lint and checkov
#   make deploy / diff / destroy   against the AWS account of your current credentials
#   make rehearse  the deploy lines on fakecloud, a local AWS emulator (no account): needs fakecloud
#                (FAKECLOUD=path, on PATH, or make fakecloud builds it with cargo once)
#
# A step that can take long on a new machine says so before it starts and prints a line a
# minute while it runs (see `announce`).

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
# Empty: each fuzz target runs its own execution count (see the fuzz target). Set it to run
# every target for one budget instead, as a count (FUZZTIME=50000x) or a duration (30s).
FUZZTIME ?=
BENCHTIME ?= 1x
CDK := $(ROOT)/node_modules/.bin/cdk
FUNCTIONS := consumer dispatcher
# Flags the GoFunction bundling uses (constructs/internal/gofn); `make build` uses them too so
# the binaries measured and tested locally are the ones that are deployed.
GO_LAMBDA_FLAGS := -trimpath -tags lambda.norpc -ldflags "-s -w"

NODE_STAMP := node_modules/.installed
GOMOD_STAMP := .cache/gomod.installed
VENV_STAMP := .venv/.installed
DDB_STAMP := $(DYNAMODB_LOCAL_DIR)/.installed
FAUXQS_STAMP := $(FAUXQS_DIR)/.installed
ELASTICMQ_STAMP := $(ELASTICMQ_DIR)/.installed
MOTO_STAMP := $(MOTO_VENV)/.installed
# The e2e suite deploys this assembly: the stack synthesized with a 3 s consumer timeout, so a
# visibility timeout (6x) is 18 s and a poison message reaches its DLQ in about 1.5 minutes;
# and with queues that take SQS's largest messages (1 MiB), which the consumers then accept.
E2E_ASSEMBLY := $(ROOT)/cdk.out.e2e
# The reference app's hardened stage (-c hardened=true, docs/compliance.md): make lint checks it
# as it checks cdk.out, make review writes its report docs/review-hardened.md. cmd/review's
# header names the assembly cdk.out; HARDENED_REVIEW says which one this report is from.
HARDENED_ASSEMBLY := $(ROOT)/cdk.out.hardened
HARDENED_CONTEXT := -c stage=hardened -c hardened=true
HARDENED_REVIEW := $(GO) run ./cmd/review $(HARDENED_ASSEMBLY) | sed 's|reports in `cdk.out`;|reports in `cdk.out.hardened` (the hardened stage: `$(HARDENED_CONTEXT)`);|'
# Its table is provisioned with auto scaling (tableCapacity, docs/capacity.md): the table a user
# chooses for a steady load, deployed locally as PROVISIONED (DynamoDB Local does not enforce
# capacity; the scenarios inject throttling), while cdk.out keeps the on-demand default; make
# lint checks this assembly too.
E2E_CONTEXT := -c stage=e2e -c consumerTimeout=3s -c maxMessageSize=1048576 -c tableCapacity=5-500@70
# The worked examples (examples/, a module of their own): the orders app's assembly, which the
# e2e suite deploys to run the example's own consumer.
EXAMPLES_ORDERS_ASSEMBLY := $(ROOT)/examples/orders/cdk.out
SOAK_MESSAGES ?= 100000
# Peer benchmark installs: Powertools for AWS Lambda (TypeScript) and (Python).
BENCH_TS := $(ROOT)/.cache/bench-ts
BENCH_TS_STAMP := $(BENCH_TS)/.installed
BENCH_PY_VENV := $(ROOT)/.cache/bench-py-venv
BENCH_PY_STAMP := $(BENCH_PY_VENV)/.installed
# The AWS CLI v1 (pip), which the local-commands test (docs/local.md) runs the printed commands with.
export AWSCLI_VENV := $(ROOT)/.cache/awscli-venv
AWSCLI_STAMP := $(AWSCLI_VENV)/.installed

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# ---------------------------------------------------------------------------- tools

# A step that can take long on a new machine runs under scripts/step.sh: it says what it does
# and how long it takes first, then prints a line a minute until it ends.
STEP := scripts/step.sh

SYNTH_TOOLS := $(NODE_STAMP) $(GOMOD_STAMP)
TEST_TOOLS := $(SYNTH_TOOLS) $(DDB_STAMP) $(ELASTICMQ_STAMP) $(AWSCLI_STAMP)
CHECK_TOOLS := $(TEST_TOOLS) $(VENV_STAMP) $(BENCH_TS_STAMP) $(BENCH_PY_STAMP)

# The installs do not depend on each other (but for the order-only one below), so they run in
# parallel; -s keeps the sub-make from listing what is already installed. No --output-sync:
# it would hold a step's progress lines back until the step ends.
.PHONY: tools check-tools synth-tools
tools: ## install every pinned tool `make test` needs, the independent installs in parallel
	@$(MAKE) -s --no-print-directory -j4 $(TEST_TOOLS)
check-tools: ## install every pinned tool `make check` needs (make tools, then linters and benchmark peers)
	@$(MAKE) -s --no-print-directory -j4 $(CHECK_TOOLS)
synth-tools:
	@$(MAKE) -s --no-print-directory -j2 $(SYNTH_TOOLS)

$(NODE_STAMP): package.json package-lock.json
	@$(STEP) "installing the CDK CLI and Node 22 for jsii (npm)" "first time about 20 s" -- \
	  npm ci --no-audit --no-fund --loglevel=error
	@node --version | grep -q '^v22\.' || { echo "node_modules/.bin/node is not Node 22"; exit 1; }
	@# The CDK CLI ships Go init templates; a go.mod here keeps them out of `go ... ./...`.
	@echo 'module ignore/node_modules' > node_modules/go.mod
	@touch $@

$(VENV_STAMP): requirements-dev.txt
	@$(STEP) "installing cfn-lint and checkov into .venv (pip)" "first time 1-3 min" -- \
	  sh -c 'python3 -m venv .venv && .venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt'
	@touch $@

# Maven runs quietly into a log (its console prints stray colour codes); the log shows on failure.
# ElasticMQ waits for DynamoDB Local: two Maven runs at once would share ~/.m2 unlocked.
$(DDB_STAMP): local/backends/dynamodb-local.pom.xml
	@$(STEP) --log .cache/logs/mvn-dynamodb-local.log "installing DynamoDB Local (Maven)" "first time about 1 min" -- \
	  mvn -q -B -C -f local/backends/dynamodb-local.pom.xml dependency:copy-dependencies -DoutputDirectory=$(DYNAMODB_LOCAL_DIR)
	@touch $@

$(ELASTICMQ_STAMP): local/backends/elasticmq.pom.xml | $(DDB_STAMP)
	@$(STEP) --log .cache/logs/mvn-elasticmq.log "installing ElasticMQ (Maven)" "first time about 1 min" -- \
	  mvn -q -B -C -f local/backends/elasticmq.pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(ELASTICMQ_DIR)
	@touch $@

$(FAUXQS_STAMP): test/backends/fauxqs/package.json test/backends/fauxqs/package-lock.json $(NODE_STAMP)
	mkdir -p $(FAUXQS_DIR)
	cp test/backends/fauxqs/package.json test/backends/fauxqs/package-lock.json $(FAUXQS_DIR)/
	npm ci --prefix $(FAUXQS_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

$(MOTO_STAMP): test/backends/moto/requirements.txt
	python3 -m venv $(MOTO_VENV)
	$(MOTO_VENV)/bin/pip install --quiet --disable-pip-version-check -r test/backends/moto/requirements.txt
	@touch $@

$(BENCH_TS_STAMP): test/bench/peers/ts/package.json test/bench/peers/ts/package-lock.json $(NODE_STAMP)
	mkdir -p $(BENCH_TS)
	cp test/bench/peers/ts/package.json test/bench/peers/ts/package-lock.json $(BENCH_TS)/
	@$(STEP) "installing Powertools for AWS Lambda (TypeScript), a benchmark peer (npm)" "first time about 30 s" -- \
	  npm ci --prefix $(BENCH_TS) --no-audit --no-fund --loglevel=error
	@touch $@

$(BENCH_PY_STAMP): test/bench/peers/py/requirements.txt
	@$(STEP) "installing Powertools for AWS Lambda (Python), a benchmark peer (pip)" "first time about 1 min" -- \
	  sh -c 'python3 -m venv $(BENCH_PY_VENV) && $(BENCH_PY_VENV)/bin/pip install --quiet --disable-pip-version-check -r test/bench/peers/py/requirements.txt'
	@touch $@

$(AWSCLI_STAMP): test/backends/awscli/requirements.txt
	@$(STEP) "installing the AWS CLI v1 for docs/local.md's commands (pip)" "first time about 30 s" -- \
	  sh -c 'python3 -m venv $(AWSCLI_VENV) && $(AWSCLI_VENV)/bin/pip install --quiet --disable-pip-version-check -r test/backends/awscli/requirements.txt'
	@touch $@

$(GOMOD_STAMP): go.mod go.sum
	@$(STEP) "downloading the Go modules" "first time 1-3 min" -- $(GO) mod download
	@mkdir -p $(@D) && touch $@

# ---------------------------------------------------------------------------- build

.PHONY: build
build: ## build both Lambda binaries as bundling does (linux/arm64) into bin/
	@for f in $(FUNCTIONS); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(GO_LAMBDA_FLAGS) -o bin/arm64/$$f/bootstrap ./functions/$$f; \
	  ls -l bin/arm64/$$f/bootstrap | awk -v f=$$f '{printf "%-10s %6.2f MiB\n", f, $$5/1048576}'; \
	done

.PHONY: check-function-deps
check-function-deps: ## fail if a Lambda binary links any CDK, jsii or constructs package, the CDK app the DynamoDB SDK, or a shipped binary package testing
	@bad=$$($(GO) list -deps ./functions/consumer ./functions/dispatcher | grep -E 'aws-cdk-go|jsii-runtime-go|constructs-go' || true); \
	if [ -n "$$bad" ]; then echo "function binaries must not import CDK packages:"; echo "$$bad"; exit 1; fi; \
	echo "function binaries import no CDK, jsii or constructs package"
	@bad=$$($(GO) list -deps ./stacks/app | grep -E 'service/dynamodb$$' || true); \
	if [ -n "$$bad" ]; then echo "the CDK app must not link the DynamoDB SDK (the constructs take the record layout from functions/idempotency/layout):"; echo "$$bad"; exit 1; fi; \
	for p in ./stacks/app ./cmd/pipelinectl ./functions/consumer ./functions/dispatcher; do \
	  if $(GO) list -deps $$p | grep -qx testing; then echo "$$p links package testing: test helpers belong in internal/testmain or _test.go files"; exit 1; fi; \
	done; \
	echo "the CDK app links no DynamoDB SDK; no shipped binary links package testing"

# ---------------------------------------------------------------------------- synth

# cdk.json runs the app with `go run ./stacks/app`. Compiling it the first time (aws-cdk-go is
# large) is the longest step of a first run, and `cdk synth --quiet` prints nothing meanwhile,
# so it is compiled here first, with progress; `go run` then reuses the build cache.
.PHONY: app
app: synth-tools
	@# Two packages: go build compiles and checks them without linking a binary nobody uses.
	@$(STEP) "compiling the CDK app" "first time 2-10 min depending on the machine, afterwards seconds" -- \
	  $(GO) build ./stacks ./stacks/app

# A synth contacts no AWS endpoint. The CDK CLI calls STS GetCallerIdentity on every synth that
# finds credentials, to fill CDK_DEFAULT_ACCOUNT, which this app does not use (pin an account
# with -c account=...): the synths below run it with the credential chain emptied (no keys,
# profiles, container or web-identity credentials, no instance metadata). At a terminal the CLI
# also asks registry.npmjs.org once a day whether a newer CLI exists; this one is pinned in
# package.json, so CDK_DISABLE_VERSION_CHECK turns the question off. The CLI's telemetry is off
# in this repository's cdk.json files, and CDK_DISABLE_CLI_TELEMETRY keeps it off should one
# lose the line. diff, deploy and destroy keep your credentials.
# stacks/app/synth_network_test.go runs the synth recipe against a local stand-in for AWS.
CDK_OFFLINE := env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
  -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI -u AWS_CONTAINER_CREDENTIALS_FULL_URI -u AWS_WEB_IDENTITY_TOKEN_FILE \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true \
  CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true $(CDK)
# The synths of assemblies that only tests read (e2e, examples/orders) skip CDK's template
# validator, 5-10 CPU seconds a synth that only reports: make synth and make lint run it.
CDK_FIXTURE := env CDK_VALIDATION=false $(CDK_OFFLINE)

.PHONY: synth
synth: app ## synthesize the app into cdk.out/ (templates and cdk-nag reports); needs Go and Node only; contacts no AWS endpoint
	@$(STEP) "synthesizing: builds both Go Lambdas for linux/arm64, runs cdk-nag" "first time about 1 min, afterwards about 15 s" -- \
	  $(CDK_OFFLINE) synth --quiet
	@ls cdk.out/*.template.json
	@$(GO) run ./cmd/review -out cdk.out/review.md cdk.out
	@echo "reviewer's report of this synth: cdk.out/review.md (make review updates docs/review.md and shows what changed)"

# ---------------------------------------------------------------------------- test

# make test is the command a contributor runs: every contract of docs/design.md against the
# real backends, the templates asserted (cdk-nag included), the examples built and run. make
# check is what CI runs: make test's steps, with every e2e scenario in place of the core ones,
# and what takes long (docs/development.md, "What make check adds").
.PHONY: test check
TEST_STEPS := vet check-function-deps unit examples
test: tools $(TEST_STEPS) e2e-core ## the test command: every contract against DynamoDB Local, ElasticMQ and the real binaries; the templates asserted; the examples
	@echo "make test: passed (make check adds the long scenarios: e2e with every alarm, the soak, fuzzing, cfn-lint and checkov, benchmarks once)"
check: check-tools $(TEST_STEPS) fuzz lint e2e bench-smoke rehearse rehearse-examples rehearse-test ## what CI runs: make test, then e2e with every alarm and a soak, fuzzing, cfn-lint and checkov on every stage, each benchmark once, the deploy rehearsals on fakecloud

.PHONY: vet
vet: $(GOMOD_STAMP)
	@$(STEP) "go vet" "seconds; about 1 min the first time" -- sh -c '$(GO) vet ./... && $(GO) vet -tags e2e ./test/e2e/'


.PHONY: unit
# -parallel 8: the tests marked parallel wait on servers and processes, not on the CPU (the
# CLI's and the kit's); each has its own queues, tables or kit.
# Not -p 3 (three test packages at a time; go's default here is 2, GOMAXPROCS). With -p 2 the
# CPU was a third idle, and -p 3 once took make test from 5 min 3 s to 4 min 34 s, but CI then
# failed with it: an ElasticMQ call unanswered for 20 s, which was the tests' idle connections
# at ElasticMQ's cap (fixed in internal/sqslocal). After that fix, back to back on one machine
# (make test-times): -p 2 4 min 35 s, -p 3 5 min 21 s and 5 min 52 s. The stalls had been
# the idle time; a third package now only adds contention (linking and the outside apps'
# builds took twice the CPU).
# The longest packages are named first: go test starts packages in the order it is given them,
# so the long ones run beside the many short ones instead of last, alone (./... adds the
# others; a package named twice runs once).
SLOW_TEST_PACKAGES := ./test/outside ./local ./cmd/pipelinectl ./stacks/app ./test/sqsfidelity ./test/stack ./functions/idempotency ./internal/dynamolocal ./constructs/monitoring
# -ldflags=-w: test binaries without DWARF, which only a debugger reads (a panic's stack trace
# comes from the symbol table, which stays). A CDK test binary is over 100 MB, and its link
# takes about a third less CPU without it.
TEST_LDFLAGS := -ldflags=-w
UNIT_TEST := $(GO) test $(TEST_LDFLAGS) -count=1 -parallel 8 $(SLOW_TEST_PACKAGES) ./...
unit: $(NODE_STAMP) $(GOMOD_STAMP) $(DDB_STAMP) $(ELASTICMQ_STAMP) $(AWSCLI_STAMP) ## go test ./... (unit, DynamoDB Local integration, stack assertions, cdk-nag, the local kit on the reference stack)
	@$(STEP) "go test ./...: unit, DynamoDB Local and ElasticMQ integration, stack assertions, cdk-nag, the local kit" "about 4 min on 2 cores, 8 on a slow or busy one" -- \
	  $(UNIT_TEST)

# The examples build as a user's app does: their own module, GOFLAGS=-trimpath (no source
# paths compiled in, so the constructs find the function sources through go list -m).
.PHONY: examples examples-synth
examples: examples-synth $(DDB_STAMP) $(ELASTICMQ_STAMP) ## the worked examples (examples/): vet and test their own module with -trimpath (the orders pipeline end to end on the local kit), synthesize orders with the CDK CLI
	@$(STEP) "examples/: go vet and go test (both stages and the orders stack synthesized with assertions and cdk-nag; the orders pipeline on the local kit)" "about 2 min" -- \
	  sh -c 'cd examples && GOFLAGS=-trimpath $(GO) vet ./... && $(EXAMPLES_TEST)'
EXAMPLES_TEST := GOFLAGS=-trimpath $(GO) test $(TEST_LDFLAGS) -count=1 ./...
examples-synth: app
	@$(STEP) "synthesizing examples/orders with GOFLAGS=-trimpath (bundles its own consumer)" "about 40 s" -- \
	  sh -c 'cd examples/orders && GOFLAGS=-trimpath $(CDK_FIXTURE) synth --quiet -o $(EXAMPLES_ORDERS_ASSEMBLY) >/dev/null'

# Budgets are execution counts, not durations. With a duration, Go before 1.27 can fail a clean
# run with a bare "context deadline exceeded" when the deadline fires: the coordinator checks
# its workers' context before the cancellation has reached it (go.dev/issue/75804). A busy CI
# machine makes that likely, and a count also gives every run the same work however loaded the
# machine is. Each count is about 10 s of that target on an idle 2-core machine (FuzzProcess
# runs a batch through the real handler, FuzzExtract parses JSON); a new target gets the
# default until it is measured: the last "fuzz: elapsed" line prints its rate.
.PHONY: fuzz
fuzz: ## run every fuzz target for its execution count (about 10 s each), or for FUZZTIME
	@set -e; for pkg in $$($(GO) list ./functions/...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    case $$t in FuzzProcess) n=15000x;; FuzzExtract) n=220000x;; *) n=250000x;; esac; \
	    n=$(or $(FUZZTIME),$$n); \
	    echo "fuzz $$pkg $$t for $$n"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$n $$pkg; \
	  done; \
	done

.PHONY: lint
lint: synth synth-hardened e2e-synth $(VENV_STAMP) ## cfn-lint and checkov over every synthesized template (the default, the hardened and the e2e stage with its provisioned table); the diagram and the reviewer's reports are current; Markdown links resolve, to the file and the section
	cfn-lint --non-zero-exit-code informational -- cdk.out/*.template.json
	@# No global skip list: each skip is recorded on its resource with the reason
	@# (constructs/internal/checkov), so checkov counts it as skipped and the line after says why.
	checkov --quiet --compact --skip-download --framework cloudformation -d cdk.out
	@python3 scripts/checkov_skips.py cdk.out
	@python3 scripts/check_links.py
	@$(GO) run ./cmd/diagram cdk.out | diff -u docs/architecture.md - \
	  || { echo "docs/architecture.md is stale: run make diagram"; exit 1; }
	@$(GO) run ./cmd/review -check -diff docs/review.md cdk.out
	@# The hardened stage (docs/compliance.md): its own assembly, the same linters and report.
	cfn-lint --non-zero-exit-code informational -- $(HARDENED_ASSEMBLY)/*.template.json
	checkov --quiet --compact --skip-download --framework cloudformation -d $(HARDENED_ASSEMBLY)
	@python3 scripts/checkov_skips.py $(HARDENED_ASSEMBLY)
	@$(HARDENED_REVIEW) | diff -u docs/review-hardened.md - \
	  || { echo "docs/review-hardened.md is stale: run make review"; exit 1; }
	@$(GO) run ./cmd/review -compliance docs/compliance.md -hardened $(HARDENED_ASSEMBLY) -check cdk.out
	@# The e2e assembly: the provisioned table and its auto scaling (tableCapacity).
	cfn-lint --non-zero-exit-code informational -- $(E2E_ASSEMBLY)/*.template.json
	checkov --quiet --compact --skip-download --framework cloudformation -d $(E2E_ASSEMBLY)
	@python3 scripts/checkov_skips.py $(E2E_ASSEMBLY)

.PHONY: synth-hardened
synth-hardened: app ## synthesize the reference app's hardened stage into cdk.out.hardened/ (docs/compliance.md); contacts no AWS endpoint
	@$(STEP) "synthesizing the hardened stage ($(HARDENED_CONTEXT))" "about 40 s" -- \
	  $(CDK_OFFLINE) synth --quiet $(HARDENED_CONTEXT) -o $(HARDENED_ASSEMBLY)

.PHONY: review
review: synth synth-hardened ## write the reviewer's reports docs/review.md (default stage) and docs/review-hardened.md (hardened stage) and print what they change; take docs/compliance.md's cdk-nag and checkov figures from the reports
	@$(GO) run ./cmd/review -diff docs/review.md -out docs/review.md cdk.out
	@$(HARDENED_REVIEW) > $(HARDENED_ASSEMBLY)/review.md
	@diff -u docs/review-hardened.md $(HARDENED_ASSEMBLY)/review.md || true
	@cp $(HARDENED_ASSEMBLY)/review.md docs/review-hardened.md
	@$(GO) run ./cmd/review -compliance docs/compliance.md -hardened $(HARDENED_ASSEMBLY) cdk.out

.PHONY: diagram
diagram: synth ## redraw docs/architecture.md from the synthesized templates
	$(GO) run ./cmd/diagram -out docs/architecture.md cdk.out

# ---------------------------------------------------------------------------- end to end

.PHONY: e2e-synth
e2e-synth: app
	@$(STEP) "synthesizing the e2e assembly (3 s consumer timeout, provisioned table)" "about 30 s" -- \
	  $(CDK_FIXTURE) synth --quiet $(E2E_CONTEXT) -o $(E2E_ASSEMBLY)

# The scenarios wait on visibility timeouts and the alarm clock, not on the CPU, and each has
# its own queues and table: -parallel 8 runs them side by side (the soak runs alone first).
# Their verdicts come from what SQS and the consumer did, never from how fast.
E2E_TEST := $(GO) test $(TEST_LDFLAGS) -tags e2e -count=1 -p 1 -parallel 8 -v
E2E_CORE_TEST := E2E_ASSEMBLY=$(E2E_ASSEMBLY) $(E2E_TEST) -short -timeout 15m ./test/e2e/

# Not in CI: make test once, timed step by step, its figures written into docs/development.md.
.PHONY: test-times
test-times: ## make test once, each step timed and every process's CPU sampled; writes the figures into docs/development.md (where make test's time goes)
	@bash scripts/test-times.sh

# Not in CI: make test's Go tests N times over, each time with two CPU hogs beside them.
.PHONY: test-stress
N ?= 20
test-stress: tools examples-synth e2e-synth $(DDB_STAMP) $(ELASTICMQ_STAMP) $(AWSCLI_STAMP) ## make test's Go tests N times (default 20) with two CPU hogs beside them, as CI shares its 2 cores; prints each failing test with its count (6-20 min a run, by machine)
	@N=$(N) UNIT='$(UNIT_TEST)' EXAMPLES='cd examples && $(EXAMPLES_TEST)' E2E_CORE='$(E2E_CORE_TEST)' bash scripts/test-stress.sh
.PHONY: e2e e2e-core
e2e: e2e-synth $(DDB_STAMP) $(ELASTICMQ_STAMP) ## the real binaries on ElasticMQ + DynamoDB Local, configured from the template (package local): every scenario with its alarms, a short soak (make check)
	@echo "--> the e2e scenarios with their alarms and a short soak (about 4 min; full output in .cache/e2e.log)"
	@mkdir -p .cache && E2E_ASSEMBLY=$(E2E_ASSEMBLY) $(E2E_TEST) -timeout 25m ./test/e2e/ > .cache/e2e.log 2>&1 \
	  || { grep -v '^=== ' .cache/e2e.log | tail -80; exit 1; }
	@grep -E '^(FIGURE|ALARMTABLE|--- |ok|PASS)' .cache/e2e.log
e2e-core: e2e-synth $(DDB_STAMP) $(ELASTICMQ_STAMP) ## the core e2e scenarios (go test -short: scheduler fired twice, duplicates, a consumer killed holding a lock, FIFO poison, DynamoDB faults, large messages, backfill) (make test)
	@mkdir -p .cache && $(STEP) "the core e2e scenarios (full output in .cache/e2e-core.log)" "about 2 min" -- \
	  sh -c '$(E2E_CORE_TEST) > .cache/e2e-core.log 2>&1 || { grep -v "^=== " .cache/e2e-core.log | tail -80; exit 1; }'
	@grep -E '^(FIGURE|--- (PASS|FAIL)|ok)' .cache/e2e-core.log

.PHONY: soak
soak: e2e-synth $(DDB_STAMP) $(ELASTICMQ_STAMP) ## the soak alone with SOAK_MESSAGES (default 100,000) messages
	E2E_ASSEMBLY=$(E2E_ASSEMBLY) $(GO) test -tags e2e -count=1 -v -timeout 90m -run '^TestSoak$$' ./test/e2e/ \
	  -args -soak.messages=$(SOAK_MESSAGES) 2>&1 | grep -E '^(FIGURE|--- |ok|PASS|FAIL)|_test.go'

.PHONY: sqs-compare
sqs-compare: $(GOMOD_STAMP) $(ELASTICMQ_STAMP) $(FAUXQS_STAMP) $(MOTO_STAMP) ## measure each SQS server's fidelity (table in test/sqsfidelity/README.md)
	$(GO) run ./test/sqsfidelity/cmd/compare

# AWS's Lambda Runtime Interface Emulator, pinned, for rie-compare only (the kit does not use it).
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE_BIN := $(ROOT)/.cache/rie-$(RIE_VERSION)/aws-lambda-rie

$(RIE_BIN):
	GOBIN=$(dir $(RIE_BIN)) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

.PHONY: rie-compare
rie-compare: $(GOMOD_STAMP) $(RIE_BIN) ## run a test function behind AWS's Runtime Interface Emulator and behind internal/lambdart, print what a caller sees of each (docs/design.md, "Why not AWS's Lambda Runtime Interface Emulator")
	AWS_LAMBDA_RIE=$(RIE_BIN) $(GO) test -tags riecompare -count=1 -run '^TestRIECompare$$' -v ./internal/lambdart/ | grep -vE '^(=== RUN|PASS$$)'

.PHONY: bench
bench: app $(DDB_STAMP) $(BENCH_TS_STAMP) $(BENCH_PY_STAMP) ## every benchmark with figures, into docs/benchmarks.md (about 25 min; a quiet machine; root for the CPU-quota cgroups, else a loud unconfined fallback)
	test/bench/report.sh docs/benchmarks.md

.PHONY: bench-smoke
bench-smoke: app $(DDB_STAMP) $(BENCH_TS_STAMP) $(BENCH_PY_STAMP) ## each benchmark once at a tiny size: proves they run, checks no figure (make check); silent unless one fails
	@$(STEP) --log .cache/logs/bench-smoke.log "running each benchmark once at a tiny size (bench-smoke)" "about 2 min" -- \
	  env GO=$(GO) BENCHTIME=$(BENCHTIME) test/bench/smoke.sh
	@echo "bench-smoke: every benchmark ran (figures, not judged, in .cache/logs/bench-smoke.log)"

# ---------------------------------------------------------------------------- AWS

# CDK_APP: what to diff, deploy or destroy instead of cdk.json's app (another app command, or
#   a synthesized cloud assembly, e.g. CDK_APP=cdk.out: what a reviewer read is what deploys).
# REQUIRE_APPROVAL: broadening (default) stops before IAM or security-group changes that widen
#   access and asks at the terminal; without a terminal (CI) it fails. CI approves in review
#   instead and deploys with REQUIRE_APPROVAL=never (docs/review.md, "Before you approve a deploy").
# OUTPUTS_FILE: where deploy writes the stacks' outputs, which pipelinectl --outputs reads.
# FORCE=true on the command line: destroy without asking (the CLI asks at a terminal and,
#   without one, refuses); a FORCE in the environment is ignored.
CDK_APP ?=
REQUIRE_APPROVAL ?= broadening
OUTPUTS_FILE ?= cdk-outputs.json
CDK_APP_FLAG = $(if $(CDK_APP),--app $(CDK_APP))

.PHONY: diff deploy destroy
diff: app ## cdk diff against your account
	$(CDK) diff $(CDK_APP_FLAG)
deploy: app ## cdk deploy the pipeline stack (REQUIRE_APPROVAL=never for CI); its outputs into cdk-outputs.json
	$(CDK) deploy --all --require-approval $(REQUIRE_APPROVAL) --outputs-file $(OUTPUTS_FILE) $(CDK_APP_FLAG)
destroy: app ## cdk destroy after a y at the prompt (FORCE=true: without one); the idempotency table, the DLQs, the log groups and the alarm key are retained
	$(CDK) destroy --all $(CDK_APP_FLAG) $(if $(filter command line,$(origin FORCE)),$(if $(filter true,$(FORCE)),--force))

# ---------------------------------------------------------------------------- rehearsal

# The rehearsal (cmd/rehearse) runs the deploy lines above on fakecloud, a local AWS emulator
# with a CloudFormation engine: no account, nothing leaves this machine. FAKECLOUD names the
# binary; else fakecloud on PATH; else make fakecloud builds it from its crate with cargo
# (40-60 min on 2 cores, once) into .cache/fakecloud.
FAKECLOUD_VERSION := 0.51.0
ifeq ($(origin FAKECLOUD),undefined)
FAKECLOUD := $(or $(shell command -v fakecloud 2>/dev/null),$(ROOT)/.cache/fakecloud/bin/fakecloud)
endif
export FAKECLOUD

.PHONY: fakecloud
fakecloud: ## build fakecloud 0.51.0 from crates.io into .cache/fakecloud unless FAKECLOUD names one (cargo; 40-60 min on 2 cores, once)
	@if [ -x "$(FAKECLOUD)" ]; then echo "fakecloud: $(FAKECLOUD)"; else \
	  $(STEP) --log .cache/logs/fakecloud.log "building fakecloud $(FAKECLOUD_VERSION) with cargo (crates.io)" "40-60 min on 2 cores, once" -- \
	    cargo install fakecloud --version $(FAKECLOUD_VERSION) --locked --root $(ROOT)/.cache/fakecloud; \
	  [ -x "$(FAKECLOUD)" ] || { echo "fakecloud: cargo built no $(FAKECLOUD); set FAKECLOUD=/path/to/fakecloud"; exit 1; }; fi

.PHONY: rehearse rehearse-examples rehearse-test rehearse-times
# REHEARSE_FROM: the commit deployed first, which the update then upgrades to the working tree
# (a change that would replace the table fails here before it is committed); on a branch,
# REHEARSE_FROM=main rehearses the upgrade its merge makes.
REHEARSE_FROM ?= HEAD
# The rehearsal runs as a built binary, not under go run, which passes no SIGTERM on.
REHEARSE := $(ROOT)/.cache/bin/rehearse
rehearse: app fakecloud ## the README's deploy on fakecloud with strict IAM, no account: bootstrap, make diff, make deploy of REHEARSE_FROM (HEAD), the deployed functions run under their roles (verify, a message, a bad one, the dispatchers, a heartbeat), pipelinectl --stack/--outputs, an update to the working tree that must keep the data and runs again, pipelinectl under operator roles, make destroy, what is left (about 2.5 min)
	$(GO) build -o $(REHEARSE) ./cmd/rehearse
	$(REHEARSE) --make --from $(REHEARSE_FROM) --update consumerTimeout=20s
rehearse-times: app fakecloud $(AWSCLI_STAMP) ## the three rehearsals once each, every step's time written into docs/development.md (about 10 min; not in CI)
	@bash scripts/rehearse-times.sh
rehearse-test: app fakecloud ## the rehearsal's own tests on fakecloud: Ctrl-C or SIGTERM in five steps (the run step included) leaves no process; a renamed table fails it; a consumer without dynamodb:UpdateItem fails the run step with the AccessDenied
	$(GO) test -tags rehearse -count=1 ./cmd/rehearse/
# The orders example imports an idempotency table and an alarm topic the account already has:
# --setup creates them on the emulator first, as a user's rehearsal would.
REHEARSE_AWS = $(AWSCLI_VENV)/bin/aws --endpoint-url "$$AWS_ENDPOINT_URL"
rehearse-examples: app fakecloud $(AWSCLI_STAMP) ## the same rehearsal for users' own apps: examples/orders (the table and topic it imports created first), examples/platform (built only from the constructs, every pipelinectl output from their Outputs functions)
	$(GO) build -o $(REHEARSE) ./cmd/rehearse
	$(REHEARSE) --dir examples/orders --work .cache/rehearse-orders \
	  --context idempotencyTable=orders-idempotency --context alarmTopicArn=arn:aws:sns:us-east-1:123456789012:on-call \
	  --setup '$(REHEARSE_AWS) dynamodb create-table --table-name orders-idempotency --billing-mode PAY_PER_REQUEST \
	    --attribute-definitions AttributeName=id,AttributeType=S --key-schema AttributeName=id,KeyType=HASH' \
	  --setup '$(REHEARSE_AWS) dynamodb update-time-to-live --table-name orders-idempotency \
	    --time-to-live-specification Enabled=true,AttributeName=expiration' \
	  --setup '$(REHEARSE_AWS) sns create-topic --name on-call' --setup '$(REHEARSE_AWS) sns create-topic --name on-call-2' \
	  --message 'Orders={"idempotencyKey":"$$KEY","customer":"rehearsal"}' \
  --update alarmTopicArn=arn:aws:sns:us-east-1:123456789012:on-call-2
	$(REHEARSE) --dir examples/platform --work .cache/rehearse-platform

.PHONY: clean
clean:
	rm -rf cdk.out $(E2E_ASSEMBLY) $(HARDENED_ASSEMBLY) $(EXAMPLES_ORDERS_ASSEMBLY) bin
