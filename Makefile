# Webhook ingestor: the two everyday commands are `make dev` and `make test`.
#
#   make dev           run locally: DynamoDB Local + moto + table + `cargo lambda watch` (scripts/dev.sh)
#   make soak          the local stack under a team's load for SOAK_MINUTES (default 30), then a verdict (scripts/soak.sh)
#   make test          every test against DynamoDB Local and moto, then template checks (scripts/test.sh)
#   make fuzz          the fuzz targets of every parser of outside bytes, time-boxed (FUZZ_SECONDS, default 600; scripts/fuzz.sh)
#   make lint          rustfmt, clippy (-D warnings), cfn-lint, sam validate --lint, template checks
#   make venv          .venv with the Python tooling pinned in scripts/requirements-dev.txt
#   make build-lambda  release artifact target/lambda/ingest/bootstrap (cargo lambda, x86_64)
#   make bench         benchmarks: every figure with its target, recorded into docs/benchmarks.md
#   make bench-docs    rewrite docs/benchmarks.md's tables and README.md's cost table from docs/bench-figures.jsonl
#   make config-docs   rewrite docs/configuration.md's tables from the variables documented in code
#   make fault-table   run the fault-injection tests and write their counts to docs/faults.md
#   make clean-local   stop emulators started by the scripts, remove .local/ and .aws-sam/

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
REQS   := scripts/requirements-dev.txt
# The stamp's name carries a hash of the requirement list: editing the list re-runs `make venv`.
REQS_HASH := $(shell sha256sum $(REQS) 2>/dev/null | cut -c1-16)
STAMP  := $(VENV)/.stamp-$(REQS_HASH)

# Dummy credentials: `sam validate` wants a region and credentials even though it works offline.
SAM_ENV := AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 \
           AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0

.PHONY: help dev soak test fuzz lint venv build-lambda bench bench-docs config-docs fault-table clean-local

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

dev:
	scripts/dev.sh

# SOAK_MINUTES (default 30), SOAK_BURST (500), SOAK_BURST_EVERY (120 s), SOAK_CARGO, SOAK_DRAIN_SECONDS:
# see scripts/soak.sh and docs/local-stack.md.
soak: venv
	scripts/soak.sh

test:
	scripts/test.sh

fuzz:
	scripts/fuzz.sh

lint: venv
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM_ENV) $(VENV)/bin/sam validate --lint --template-file template.yaml
	$(VENV)/bin/python scripts/check_template.py --template template.yaml

venv: $(STAMP)

$(STAMP): $(REQS)
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet -r $(REQS)
	@rm -f $(VENV)/.stamp-*
	@touch $@

# Activating the venv matters: cargo-lambda finds zig through the `python` first on PATH.
build-lambda: venv
	source $(VENV)/bin/activate && cargo lambda build --release --bin ingest
	@ls -l target/lambda/ingest/bootstrap

# Every figure of docs/benchmarks.md with its target, then recorded: docs/bench-figures.jsonl and
# the benchmark, cost and capacity tables of docs/benchmarks.md (and README.md's cost table) (`make bench-docs` re-renders them from the record).
# (a) CPU per webhook side by side (the peers stripe-node and stripe-python installed into
# bench/.peers first), and the criterion regression guard; (b) cold start against hello-world
# built with the same profile, binary size, the served run (first response, peak RSS after
# 10,000 requests); (c) against its own DynamoDB Local (table, stream) and moto (queues): write
# units per webhook, batch throughput, outbox figures, units by partition key, the console's Events
# page at 1k, 10k and 100k events (printed, not recorded: docs/benchmarks.md, "The console's Events page"); (d) dollars per
# million from the measured counts; (e) the capacity table by key (the rate at which each key caps
# against DynamoDB's per-partition limits); (f) a destination's outage, simulated (printed, not
# recorded: docs/benchmarks.md, "Cost of a destination's outage"). BENCH_NOTE is recorded beside them.
BENCH_NOTE ?=
BENCH_PORT ?= 5066
BENCH_DYNAMODB_PORT ?= 5067
bench: venv
	bench/peers/install.sh
	rm -rf target/bench-figures
	cargo bench -p ingest-function --bench sidebyside
	cargo bench -p ingest-function --bench ingest
	source $(VENV)/bin/activate && cargo lambda build --release --bin ingest --bin hello
	cargo run --release -p bench-tools --bin coldstart -- target/lambda/ingest/bootstrap target/lambda/hello/bootstrap
	scripts/dynamodb_local.sh start $(BENCH_DYNAMODB_PORT)
	scripts/moto.sh start $(BENCH_PORT) || { scripts/dynamodb_local.sh stop $(BENCH_DYNAMODB_PORT); exit 1; }
	AWS_ENDPOINT_URL=http://127.0.0.1:$(BENCH_PORT) AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing \
	  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(BENCH_DYNAMODB_PORT) \
	  AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:$(BENCH_DYNAMODB_PORT) \
	  AWS_SECRET_ACCESS_KEY=testing INBOX_VENV=$(CURDIR)/$(VENV) \
	  bash -c 'cargo run --release -p integration-tests --bin pipeline_figures && cargo run --release -p integration-tests --bin outbox_figures && cargo run --release -p integration-tests --bin events_page'; \
	  rc=$$?; scripts/moto.sh stop $(BENCH_PORT); scripts/dynamodb_local.sh stop $(BENCH_DYNAMODB_PORT); exit $$rc
	cargo run --release -p integration-tests --bin outage_cost
	cargo run --release -p bench-tools --bin cost
	cargo run --release -p bench-tools --bin capacity
	cargo run --release -p bench-tools --bin figures -- --record $(if $(BENCH_NOTE),--note "$(BENCH_NOTE)")

# docs/benchmarks.md's benchmark, cost and capacity tables and README.md's cost table, rendered again
# from docs/bench-figures.jsonl (the last recorded `make bench`); `make test` checks them.
bench-docs:
	cargo run -q -p bench-tools --bin figures -- --render

# docs/configuration.md's sections are rendered from the variables' docs in code
# (shared/core/src/config/catalog.rs, shared/wallet/src/config.rs); `make test` checks them.
config-docs:
	cargo run -q -p integration-tests --bin config_docs

# The fault-injection suite (tests/it/faults/: shared emulators on FAULT_PORT/FAULT_DYNAMODB_PORT,
# and a pair of its own for the tests that pause, kill or load them), its observed counts collected
# as JSON lines and rendered into docs/faults.md with the last `make fuzz` run's row
# (docs/fuzz-counts.jsonl). `make test` runs the same tests; this also writes the table.
FAULT_COUNTS := $(CURDIR)/target/fault-counts.jsonl
FAULT_PORT ?= 5068
FAULT_DYNAMODB_PORT ?= 5069
fault-table: venv
	rm -f $(FAULT_COUNTS)
	scripts/dynamodb_local.sh start $(FAULT_DYNAMODB_PORT)
	scripts/moto.sh start $(FAULT_PORT) || { scripts/dynamodb_local.sh stop $(FAULT_DYNAMODB_PORT); exit 1; }
	AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
	  AWS_ENDPOINT_URL=http://127.0.0.1:$(FAULT_PORT) \
	  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(FAULT_DYNAMODB_PORT) \
	  AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:$(FAULT_DYNAMODB_PORT) \
	  INBOX_VENV=$(CURDIR)/$(VENV) FAULT_COUNTS=$(FAULT_COUNTS) \
	  cargo test -p integration-tests --test it -- faults:: autopay_loop:: wallet_holds::an_expired_hold; \
	  rc=$$?; [ $$rc -ne 0 ] || FAULT_COUNTS=$(FAULT_COUNTS) cargo test -p integration-tests --lib -- \
	    outbox::outage::tests::the_flaky_receiver outbox::outage::tests::a_destination_down_for_a_day; \
	  rc=$$((rc || $$?)); scripts/moto.sh stop $(FAULT_PORT); scripts/dynamodb_local.sh stop $(FAULT_DYNAMODB_PORT); exit $$rc
	cat docs/fuzz-counts.jsonl >> $(FAULT_COUNTS)
	cargo run -q -p integration-tests --bin fault_table -- $(FAULT_COUNTS) docs/faults.md

clean-local:
	@for pidfile in .local/moto-*.pid; do \
	  [ -e "$$pidfile" ] || continue; \
	  port=$${pidfile#.local/moto-}; port=$${port%.pid}; \
	  scripts/moto.sh stop "$$port"; \
	done
	@for pidfile in .local/dynamodb-*.pid; do \
	  [ -e "$$pidfile" ] || continue; \
	  port=$${pidfile#.local/dynamodb-}; port=$${port%.pid}; \
	  scripts/dynamodb_local.sh stop "$$port"; \
	done
	rm -rf .local .aws-sam
