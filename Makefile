# The CNI plugin suite. `make demo` shows it working; `make test` runs every
# test, the privileged ones inside a private network and mount namespace.

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BIN       := $(CURDIR)/bin
TOOLS     := $(CURDIR)/bin/tools
PREFIX    ?= /opt/cni
DESTDIR   ?=
GO        ?= go
LDFLAGS   := -s -w -X cnisuite/pkg/skel.Suite=$(VERSION)
PLUGINS   := $(wildcard plugins/*/*)
CMDS      := $(wildcard cmd/*)
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
RELEASE_DIR ?= $(CURDIR)/release
ARCHES    ?=

export GOFLAGS := -mod=mod

.PHONY: all build tools install deps test unit privileged lint fmt vet staticcheck demo e2e bench soak release deb clean

all: build

## build: static, version-stamped plugin binaries in bin/
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 GO='$(GO)' BUILDFLAGS=-trimpath LDFLAGS='$(LDFLAGS)' scripts/build.sh $(BIN) $(addprefix ./,$(PLUGINS)) $(addprefix ./,$(CMDS))

## tools: the runtime client the demo and benchmark drive the plugins with
tools:
	@mkdir -p $(TOOLS)
	$(GO) build -o $(TOOLS)/cnitool github.com/containernetworking/cni/cnitool

## install: copy the plugins to $(DESTDIR)$(PREFIX)/bin
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(addprefix $(BIN)/,$(notdir $(PLUGINS))) $(DESTDIR)$(PREFIX)/bin/

## deps: system packages (iptables, nftables, podman, containerd, ...) and Go modules the tests need
deps:
	scripts/install-deps.sh
	if [ -x scripts/install-e2e-deps.sh ]; then scripts/install-e2e-deps.sh; fi
	scripts/install-vm-deps.sh

## test: lint, then every test; privileged tests run inside scripts/sandbox.sh and must not skip.
## Packages run one at a time (-p 1): they share the sandbox's namespace as their "node".
test: deps lint build machine-check
	CNISUITE_BIN=$(BIN) CNISUITE_REQUIRE_PRIVILEGED=1 GOPROXY=off \
		scripts/sandbox.sh $(GO) test -p 1 -count=1 -timeout 45m ./...
	$(MAKE) --no-print-directory vmtest

## machine-check: `make unit` as root in throwaway namespaces, failing when a test wrote a sysctl,
## a link, a rule, a namespace or a state file there (a test must only do so in its sandbox)
.PHONY: machine-check
machine-check:
	GOPROXY=off scripts/machine-check.sh $(GO) test -short -count=1 ./...

## vmtest: boot Debian 12's kernel under qemu and run test/vm/tests.txt inside (VLAN filtering,
## the plugin chain on both firewall backends); see test/vm/README.md
.PHONY: vmtest
vmtest: deps build
	CNISUITE_BIN=$(BIN) GO=$(GO) test/vm/run.sh

## unit: the tests that need no root (privileged ones skip and say why)
unit:
	$(GO) test ./...

## cover: each package's coverage as an unprivileged user sees it (built here, run as nobody)
.PHONY: cover
cover:
	GO=$(GO) scripts/cover-unprivileged.sh ./...

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

## demo: build, then attach two containers and show traffic flowing
demo: deps build tools
	CNISUITE_BIN=$(BIN) CNISUITE_TOOLS=$(TOOLS) scripts/sandbox.sh scripts/demo.sh

## e2e: podman, containerd 1.6 and 2.x and CRI-O drive the plugins, inside the sandbox
e2e: deps build
	@scripts/install-runtimes.sh versions
	CNISUITE_BIN=$(BIN) CNISUITE_REQUIRE_PRIVILEGED=1 GOPROXY=off \
		scripts/sandbox.sh $(GO) test -count=1 -timeout 45m -v ./test/e2e/...

## bench: the cost of a pod's network against the physical floor (see test/bench)
bench: deps build tools
	$(GO) build -o $(TOOLS)/floor ./test/bench/floor
	$(GO) build -o $(TOOLS)/cnibench ./test/bench/cnibench
	scripts/reference-plugins.sh $(TOOLS)/reference
	CNISUITE_BIN=$(BIN) test/bench/cgroup-cpu.sh $(TOOLS)/cnibench -taskstats-exec scripts/sandbox.sh $(TOOLS)/cnibench -bin $(BIN) -tools $(TOOLS) -reference $(TOOLS)/reference $(BENCHFLAGS)

## soak: 1,000 pods through bridge → portmap → tuning, 8 at a time, plugins SIGKILLed at random,
## nft flush ruleset every 5 s, cnisuite watch running; prints what is left of every kind
## (test/soak/soak.sh; CYCLES, PAR, KILL_MS, FLUSH_S, BACKEND). Not part of `make test`.
soak: deps build tools
	CNISUITE_BIN=$(BIN) scripts/sandbox.sh test/soak/soak.sh $(BIN)

## fuzz: the binaries fuzzed with the long budget inside the sandbox (test/fuzz, FUZZ_INPUTS per
## plugin, FUZZ_SEED), then every native Go fuzz target (func Fuzz*) for FUZZTIME each
FUZZ_INPUTS ?= 20000
FUZZ_SEED   ?= 1
FUZZTIME    ?= 3m
FUZZFLAGS   ?= -parallel 2
.PHONY: fuzz
fuzz: build
	CNISUITE_BIN=$(BIN) CNISUITE_REQUIRE_PRIVILEGED=1 CNISUITE_FUZZ_INPUTS=$(FUZZ_INPUTS) CNISUITE_FUZZ_MINIMIZE=1 \
		CNISUITE_FUZZ_SEED=$(FUZZ_SEED) GOPROXY=off \
		scripts/sandbox.sh $(GO) test -count=1 -timeout 0 -v -run '^TestFuzzBinaries$$' ./test/fuzz
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' pkg plugins test); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$t ($$(dirname $$f)), $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./$$(dirname $$f); \
		done; \
	done

## release: reproducible tarballs of the plugins for six architectures, SHA256SUMS and SHA512SUMS, in release/
## (RELEASE_DIR=... elsewhere, ARCHES="amd64 arm64" for fewer; see scripts/release.sh)
release:
	VERSION='$(VERSION)' RELEASE_DIR='$(RELEASE_DIR)' ARCHES='$(ARCHES)' GO='$(GO)' scripts/release.sh tarballs

## deb: Debian packages: the plugins in /usr/lib/cni beside containernetworking-plugins (cnisuite), the tools (cnisuite-tools)
deb:
	VERSION='$(VERSION)' RELEASE_DIR='$(RELEASE_DIR)' ARCHES='$(ARCHES)' GO='$(GO)' scripts/release.sh deb

clean:
	rm -rf $(BIN)
