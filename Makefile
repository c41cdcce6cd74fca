# Thin aliases for go commands. `make test` is what the README runs and
# `make ci` (tidy-check, then test) what CI runs.
GO      ?= go
BIN     := bin/runner
PKGS    := ./...
# A static binary with no build paths in it: runner has no cgo code, and
# CGO_ENABLED=0 also keeps the resolver and user lookups in pure Go.
BUILD   := CGO_ENABLED=0 $(GO) build -trimpath
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
FUZZTIME ?= 10s
# go test through gotestsum (pinned; fetched from the module proxy on first
# use): go test's own output, then every skipped test with its reason and a
# closing count, so a target whose tests all skipped never reads as a pass.
GOTEST  ?= $(GO) run gotest.tools/gotestsum@v1.13.0 --format standard-quiet --
FUZZTIME_SHELL ?= $(FUZZTIME)
TEST_TARGETS := fmt vet race e2e
# The process-level tests (crash and chaos, NATS workers and servers,
# Prodigy's files, a full disk, a browser), apart from the packages' own:
# every package but it runs under the race detector.
E2E     := ./internal/e2e
RACE_PKGS = $(shell $(GO) list -e $(PKGS) | grep -v '/internal/e2e$$')

.PHONY: build nats-server release demo test short race e2e prodigy nats unit fmt vet tidy-check binary-check bench fuzz chaos cover ci clean

build:
	$(BUILD) -ldflags "-X github.com/runnerdev/runner/cmd.Version=$(VERSION)" -o $(BIN) .

# A NATS server for trying `runner run --nats` here: the version go.mod
# pins for the tests, built from the module proxy (runner never links it).
nats-server:
	$(BUILD) -o bin/nats-server github.com/nats-io/nats-server/v2

# Static binaries for each platform in bin/release/, stamped with VERSION.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	@for p in $(PLATFORMS); do \
		echo "bin/release/runner-$${p%/*}-$${p#*/}"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(BUILD) -ldflags "-s -w -X github.com/runnerdev/runner/cmd.Version=$(VERSION)" \
			-o bin/release/runner-$${p%/*}-$${p#*/} . || exit 1; \
	done

# Build runner and run a real example workflow (state goes to .runner/).
demo: build
	./$(BIN) run examples/release.yml

# The whole suite: formatting, vet, every package's tests with the race
# detector (the scripts of testdata/script among them), then the
# process-level tests of internal/e2e without it (see race and e2e).
# Every target runs even when one fails, so a failure early on hides
# nothing; the last line names those that failed.
test:
	@failed=; for t in $(TEST_TARGETS); do \
		echo "== make $$t"; $(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed (of $(TEST_TARGETS))"; exit 1; fi; \
	echo "make test: passed ($(TEST_TARGETS))"

# Every package but internal/e2e with the race detector: the scripts of
# the root package run the race-built test binary as runner, each process
# without the race runtime's second of sleep at exit (the scripts' setup
# sets GORACE=atexit_sleep_ms=0: that second, not the detector, made
# them slow). -parallel 4: a script mostly waits on its processes.
# -timeout (here and in e2e) only ends a hung run with a dump of its
# goroutines: 45m leaves room for a machine loaded several times over.
race:
	$(GOTEST) -race -count=1 -timeout 45m -parallel 4 $(RACE_PKGS)

# The process-level tests, without the race detector: they kill runner,
# its agents, workers and NATS servers at random moments and wait on
# ack_wait and on processes, which -race would slow and perturb; the race
# run covers the same code through the scripts and each package's tests.
# -parallel 4: the scripts run again on agents and on NATS workers,
# Prodigy's files and the chaos rounds mostly wait.
e2e:
	$(GOTEST) -count=1 -timeout 45m -parallel 4 $(E2E)
	$(PRODIGY_ABSENT)

# The scripts of testdata/prodigy, which run Prodigy's files through
# stand-ins (part of make e2e).
prodigy:
	$(GOTEST) -count=1 -timeout 30m -run '^TestProdigyRealFiles$$' $(E2E)
	$(PRODIGY_ABSENT)
PRODIGY_ABSENT = @[ -n "$$RUNNER_PRODIGY_EXAMPLES" ] || [ -d ../shared/prodigy-examples/real ] || \
	echo "SKIP TestProdigyRealFiles and its $$(ls testdata/prodigy/*.txtar | wc -l) scripts: ../shared/prodigy-examples absent"

# The tests that run jobs on NATS workers as processes (runner, runner
# worker and server processes, kill -9, SIGSTOP) and the worker's service
# tests (part of make e2e).
nats:
	$(GOTEST) -count=1 -timeout 30m -parallel 4 -run '^(TestNATS|TestWorker)' $(E2E)

# The inner loop: every package, without the race detector, the slow
# shell-spawning property tests, most kill -9 rounds and the scripts that
# shortLeavesOut (main_test.go) names, each with its reason (-short).
short:
	$(GO) test -short -count=1 $(PKGS)

unit:
	$(GO) test -count=1 -timeout 30m $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

tidy-check:
	$(GO) mod tidy -diff

# Coverage across packages: every package's tests count toward each
# package they run (-coverpkg), so cmd, which the root package's scripts
# drive, reads as what the suite covers, not as its own unit tests' share.
# Prints each package's share of statements, then the total; the profile
# stays in COVERPROFILE (go tool cover -html=cover.out to browse it). The
# runner binary internal/e2e builds writes its coverage to a directory of
# its own (RUNNER_COVERDIR), which go test does not count: it is added to
# the profile. Not part of make test: coverage slows every test.
# COVERFLAGS=-short for a quick look.
COVERPROFILE ?= cover.out
COVERFLAGS   ?=
cover:
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	RUNNER_COVERDIR=$$dir $(GO) test -count=1 -timeout 30m $(COVERFLAGS) -coverpkg=./... -coverprofile=$(COVERPROFILE) $(PKGS) && \
	$(GO) tool covdata textfmt -i=$$dir -o=$$dir/profile && { [ ! -f $$dir/profile ] || tail -n +2 $$dir/profile >> $(COVERPROFILE); }
	@awk -F'[: ]' 'NR > 1 { b = $$1 ":" $$2; n[b] = $$3; if ($$4 > 0) hit[b] = 1 } \
		END { for (b in n) { split(b, f, ":"); p = f[1]; sub(/\/[^\/]*$$/, "", p); all[p] += n[b]; if (b in hit) cov[p] += n[b] } \
		      for (p in all) if (all[p]) printf "%-60s %5.1f%%\n", p, 100 * cov[p] / all[p] }' $(COVERPROFILE) | sort
	@$(GO) tool cover -func=$(COVERPROFILE) | tail -1

# Go benchmarks, then runner against its peers (scripts/bench.sh; about
# 45 minutes on 2 cores; QUICK=1 make bench for a small run).
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	scripts/bench.sh

# kill -9 running MapReduce jobs and dlq retries at random moments and
# audit the state after every crash, also with the items in `runner agent`
# processes, some of which are killed (the normal test run does 20 rounds
# of each crash test but the last, which does 8); then kill -9 two jobs
# merging into one checkout through slow hooks (1 round in make test);
# then kill -9 runner jobs rm and prune in the middle of removing a job
# that ran in worktrees (6 rounds in make test); then kill -9 the coordinator, workers and server of jobs on NATS (10
# rounds each in make test).
CHAOS_ROUNDS ?= 200
MERGE_CHAOS_ROUNDS ?= 50
NATS_CHAOS_ROUNDS ?= 50
RM_CHAOS_ROUNDS ?= 50
chaos:
	RUNNER_CHAOS_ROUNDS=$(CHAOS_ROUNDS) $(GO) test -count=1 -run '^(TestCrashResume|TestCrashResumeAgents|TestCrashResumeIsolation|TestDLQRetryCrash)$$' -timeout 90m $(E2E)
	RUNNER_CHAOS_ROUNDS=$(MERGE_CHAOS_ROUNDS) $(GO) test -count=1 -run '^TestMergeCrash$$' -timeout 90m $(E2E)
	RUNNER_CHAOS_ROUNDS=$(RM_CHAOS_ROUNDS) $(GO) test -count=1 -run '^TestJobsRmCrash$$' -timeout 90m $(E2E)
	RUNNER_CHAOS_ROUNDS=$(NATS_CHAOS_ROUNDS) $(GO) test -count=1 -run '^(TestNATS(Coordinator|Worker|Server)Chaos|TestNATSClusterLeaderKilled|TestNATSGit(Worker|Coordinator|Server)Crash)$$' -timeout 90m $(E2E)

# Each fuzz target for FUZZTIME; FuzzExpandShell, which starts dozens of
# shells per input (~5 inputs/s), for FUZZTIME_SHELL. CI uses execution
# counts (5000x, 40x): a duration (FUZZTIME=10m) can end in a spurious
# "context deadline exceeded" with no failing input on Go 1.26, a race in
# Go's fuzzing coordinator fixed in Go 1.27 (go.dev/issue/75804).
fuzz:
	$(GO) test ./workflow/ -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -timeout 2h
	$(GO) test ./workflow/condition/ -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -timeout 2h
	$(GO) test ./workflow/interp/ -run '^$$' -fuzz '^FuzzExpandShell$$' -fuzztime $(FUZZTIME_SHELL) -timeout 2h
	$(GO) test ./workflow/interp/ -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -timeout 2h
	$(GO) test ./internal/items/ -run '^$$' -fuzz '^FuzzReadInput$$' -fuzztime $(FUZZTIME) -timeout 2h
	$(GO) test ./internal/items/ -run '^$$' -fuzz '^FuzzDefaultIDs$$' -fuzztime $(FUZZTIME) -timeout 2h

# The shipped binary links the NATS client but not the server, which only
# the tests embed (SPEC §11.1): go version -m lists the modules it has. Nor
# has it the crash points of TestCrashPoints's runner (-tags
# runner_crashpoints), which would read RUNNER_CRASHPOINT.
binary-check: build
	@$(GO) version -m $(BIN) | grep -q 'github.com/nats-io/nats.go' || { echo "$(BIN) lacks the NATS client"; exit 1; }
	@! $(GO) version -m $(BIN) | grep 'github.com/nats-io/nats-server' || { echo "$(BIN) embeds the NATS server"; exit 1; }
	@! grep -q RUNNER_CRASHPOINT $(BIN) || { echo "$(BIN) has crash points (-tags runner_crashpoints)"; exit 1; }
	@echo "$(BIN): NATS client linked, server not; no crash points"

ci: tidy-check binary-check test

clean:
	rm -rf bin .runner
