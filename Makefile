# kudo-rs developer entry points. CI runs `.ci/run`, which runs `make test`, then `make chaos`.
SHELL := /bin/bash
CARGO ?= cargo
export CARGO_INCREMENTAL ?= 0
export CARGO_TERM_COLOR ?= never

# Crates that must stay pure: no async runtime, no HTTP, no kube client.
PURE_CRATES := kudo-api kudo-engine kudo-template kudo-package kudo-repo
IMPURE_DEPS := tokio hyper kube-client kube-runtime warp

# The manager image `kubectl kudo init` deploys by default.
IMAGE ?= kudo-rs/kudo-manager:0.1.0

.PHONY: help run test lint fmt fmt-check clippy crds check-crds check-pure check-no-sandbox unit chaos bench fuzz build tools image test-deps

help:
	@echo "make run        start the manager + webhook on the embedded sandbox and run an example plan"
	@echo "make test       fmt check, clippy -D warnings, purity and CRD checks, all tests"
	@echo "make lint       fmt check + clippy"
	@echo "make crds       regenerate crds/ from crates/kudo-api"
	@echo "make chaos      the manager SIGKILLed mid-plan, and 50 Instances under injected API faults (CI runs it)"
	@echo "make bench      criterion benchmarks and the bench harness"
	@echo "make fuzz       the fuzz_* property tests with FUZZ_CASES=$(FUZZ_CASES) cases each (make test runs a few hundred)"
	@echo "make image      build the manager image (IMAGE=$(IMAGE)) with docker"

build:
	$(CARGO) build --workspace --bins

run: build
	@./scripts/run.sh

image:
	docker build -t $(IMAGE) .

test: test-deps fmt-check clippy check-pure check-no-sandbox unit

# The OCI tests run Debian's docker-registry (the distribution registry) on
# loopback; installed here when missing (the only system package the tests need).
DOCKER_REGISTRY ?= /usr/bin/docker-registry
test-deps:
	@if [ ! -x $(DOCKER_REGISTRY) ]; then \
	  echo "installing docker-registry for the OCI tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq docker-registry >/dev/null; \
	fi
	@test -x $(DOCKER_REGISTRY) || { echo "$(DOCKER_REGISTRY) is missing: apt-get install docker-registry"; exit 1; }

lint: fmt-check clippy

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

crds:
	$(CARGO) run -q -p kudo-api --bin crdgen -- crds

# The drift test in crates/kudo-api/tests/crds.rs fails on a stale crds/; this
# target is the same check from the command line.
check-crds:
	@tmp=$$(mktemp -d); $(CARGO) run -q -p kudo-api --bin crdgen -- $$tmp && diff -ru crds $$tmp && rm -rf $$tmp

# Purity: the pure crates depend on no async runtime, HTTP or kube client.
# Layering: kudo-engine's modules import only from their own layer or a lower
# one (model < plan < automatic < decide/admission); the check is the test
# crates/kudo-engine/tests/layers.rs, run here and again by `make unit`.
check-pure:
	$(CARGO) test -q --locked -p kudo-engine --test layers
	@for c in $(PURE_CRATES); do \
	  deps=$$($(CARGO) tree -q -p $$c -e normal --prefix none --locked | awk '{print $$1}' | sort -u); \
	  for bad in $(IMPURE_DEPS); do \
	    if grep -qx "$$bad" <<<"$$deps"; then echo "$$c must stay pure but depends on $$bad"; exit 1; fi; \
	  done; \
	done; echo "pure crates are pure: $(PURE_CRATES)"

# The image's manager (`--no-default-features`, see the Dockerfile) must not
# carry the sandbox API server: it comes only with the `dev` feature.
check-no-sandbox:
	@if $(CARGO) tree -q -p kudo-manager --no-default-features -e normal --prefix none --locked | grep -q '^kudo-sandbox '; then \
	  echo "kudo-manager without default features depends on kudo-sandbox"; exit 1; \
	fi; echo "kudo-manager --no-default-features carries no sandbox"

unit:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
	  $(CARGO) nextest run --workspace --locked --no-fail-fast; \
	else \
	  $(CARGO) test --workspace --locked --no-fail-fast; \
	fi
	$(CARGO) test --workspace --locked --doc

# The chaos tests (ignored by `make unit`): tests/tests/chaos.rs SIGKILLs the
# kudo-manager binary 20 times in a 50-step plan (KUDO_CHAOS_SEED=<n> repeats
# a run); tests/tests/faults.rs runs 50 Instances under 10% injected API
# errors. The first line builds what `make unit` builds (a no-op after it),
# the kudo-manager binary the chaos test runs included, so it is never stale;
# `build --bins` or `-p` would build other feature sets and recompile.
chaos:
	$(CARGO) test --workspace --locked --no-run
	$(CARGO) test --workspace --locked --test chaos --test faults -- --ignored --nocapture

bench:
	$(CARGO) bench --workspace

# Property-based fuzzing (proptest): templates, package archives
# and files, parameter values, AdmissionReview bodies and repository
# indexes. `make test` runs the same harnesses with a few hundred cases
# each; this raises every one to
# FUZZ_CASES through PROPTEST_CASES (the damaged gzip-bomb test 1/100 of them).
# Debug build on purpose: overflow checks are part of what is tested. A
# failing case is saved beside its harness (tests/*.proptest-regressions) and
# replayed first on the next run.
FUZZ_CASES ?= 10000
FUZZ_TESTS := --test fuzz_templates --test fuzz_package --test fuzz_params --test fuzz_admission --test fuzz_index

fuzz:
	PROPTEST_CASES=$(FUZZ_CASES) $(CARGO) test --locked -p kudo-template -p kudo-package -p kudo-manager -p kudo-repo $(FUZZ_TESTS)
