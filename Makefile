# csi-kubelet-sim: `make demo` shows it, `make test` checks it. Everything
# the tests need (csi-sanity, the Kubernetes e2e CSI mock driver) is built
# into ./bin from the Go module proxy; nothing is installed by hand.

GO          ?= go
BIN         := $(CURDIR)/bin
SANITY_VER  := v5.6.0
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BLD := -ldflags "-X main.version=$(VERSION)"

SIM     := $(BIN)/csi-kubelet-sim
ADMIT   := $(BIN)/csi-kubelet-sim-admission
REFDRV  := $(BIN)/csi-refdriver
SANITY  := $(BIN)/csi-sanity
MOCK    := $(BIN)/csi-mock-driver
WEBHOOK := $(BIN)/csi-demo-webhook
APISRV  := $(BIN)/csi-kubelet-sim-apiserver
SECRETS := $(BIN)/csi-secrets-driver

.PHONY: all build helpers admission-helper refdriver demo-webhook secrets-driver tools demo test unit e2e bench vet race cover clean

all: build

# The CLI alone: what a user needs, quick from a fresh clone. The helpers
# are built where they are used (demo, test, bench, install) or by their
# own targets; the admission helper links the API server's webhook code
# (77 MB, minutes cold) and is needed only for MutatingWebhookConfigurations.
build:
	$(GO) build $(GOFLAGS_BLD) -o $(SIM) ./cmd/csi-kubelet-sim

admission-helper:
	$(GO) build -o $(ADMIT) ./cmd/csi-kubelet-sim-admission

refdriver:
	$(GO) build -o $(REFDRV) ./fixtures/refdriver/cmd/csi-refdriver

demo-webhook:
	$(GO) build -o $(WEBHOOK) ./fixtures/webhook/cmd/csi-demo-webhook

# The test driver that does secrets-store's API work (fixtures/secretsdriver).
secrets-driver:
	$(GO) build -o $(SECRETS) ./fixtures/secretsdriver/cmd/csi-secrets-driver

helpers: admission-helper refdriver demo-webhook secrets-driver

# The control plane helper of --apiserver: kube-apiserver of Kubernetes
# $(APISERVER_KUBE) from the module proxy, in a module of its own
# (cmd/csi-kubelet-sim-apiserver/go.mod, the k8s.io versions of
# e2e/realkubelet, so the two share compiled packages), and etcd from
# Debian's etcd-server. Only runs with --apiserver use them.
APISERVER_KUBE    := v1.37.2
APISERVER_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(APISERVER_KUBE) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
# KUBE_VERSION=v1.X.Y (another release) builds the helper from
# cmd/csi-kubelet-sim-apiserver/go.v1.X.Y.mod (its genmod.sh writes it from
# e2e/realkubelet's, whose compiled packages it shares) into
# $(APISRV)-v1.X.Y; --apiserver uses it through CSI_KUBELET_SIM_APISERVER.
APISERVER_AT      = $(if $(filter-out $(APISERVER_KUBE),$(KUBE_VERSION)),$(KUBE_VERSION))
APISERVER_MODFILE = $(if $(APISERVER_AT),go.$(APISERVER_AT).mod,go.mod)
.PHONY: apiserver-helper apiserver-etcd
apiserver-helper: apiserver-etcd
	@[ -f cmd/csi-kubelet-sim-apiserver/$(APISERVER_MODFILE) ] || \
		{ echo "make apiserver-helper: no module file for Kubernetes $(KUBE_VERSION): run cmd/csi-kubelet-sim-apiserver/genmod.sh $(KUBE_VERSION)"; exit 2; }
	cd cmd/csi-kubelet-sim-apiserver && $(GO) build -modfile=$(APISERVER_MODFILE) \
		-ldflags "$(if $(APISERVER_AT),$(REALKUBELET_LDFLAGS),$(APISERVER_LDFLAGS))" -o $(APISRV)$(if $(APISERVER_AT),-$(APISERVER_AT)) .

apiserver-etcd:
	@[ -x /usr/bin/etcd ] || command -v etcd >/dev/null && exit 0; \
	if ! command -v apt-get >/dev/null; then echo "make apiserver-etcd: no etcd and no apt-get: install etcd 3.4 or later and set CSI_KUBELET_SIM_ETCD" >&2; exit 1; fi; \
	echo "make apiserver-etcd: installing the system package etcd-server with apt-get (about 20 MB) for --apiserver."; \
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server

$(SANITY):
	GOBIN=$(BIN) $(GO) install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$(SANITY_VER)

# The mock driver lives in its own module (it needs CSI spec v1.12.0).
$(MOCK): e2e/mockdriver/main.go e2e/mockdriver/go.mod e2e/mockdriver/go.sum
	cd e2e/mockdriver && $(GO) build -o $(MOCK) .

# Everything the tests and benchmarks run besides the CLI.
tools: $(SANITY) $(MOCK) helpers apiserver-helper

# The reference driver on a temporary socket, the simulator on each sample,
# then everything stopped and removed.
demo: build helpers
	@fixtures/demo.sh $(SIM) $(REFDRV) $(WEBHOOK) $(SECRETS) $(APISRV)

# staticcheck, built into ./bin like csi-sanity; 2026.2.x knows Go 1.26.
STATICCHECK_VER := v0.8.2
STATICCHECK     := $(BIN)/staticcheck

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)

vet: $(STATICCHECK)
	$(GO) vet ./...
	$(STATICCHECK) ./...

# The kubelet runs operations concurrently (the operation executor,
# `load`): its packages' tests run under the race detector too. The same
# run measures their coverage of the whole node/ tree (the tests of the
# CSI plugin and the volume manager live with the Kubelet in node/, so a
# package's own figure says little): issue 14's floor of 80%.
NODE_COVER_MIN := 80
race:
	@mkdir -p $(BIN)
	$(GO) test -race -count=1 -coverpkg=./node/... -coverprofile=$(BIN)/node.cover ./node/...
	@$(GO) tool cover -func=$(BIN)/node.cover | awk -v m=$(NODE_COVER_MIN) '/^total:/ { sub(/%/, "", $$NF); print "coverage node/... " $$NF "% (floor " m "%)"; exit !($$NF + 0 >= m) }'

# Unit tests, csi-sanity against the reference driver, and the end-to-end
# tests of the built binary against both drivers (real bind mounts: root).
# One `go test -cover` run: the coverage floors are read from its output,
# so no package is linked and tested twice. The browser test's line comes
# last, where it is seen.
# The end-to-end tests mostly wait (on the driver's hangs, the pods' holds,
# the kubelet's periods), so more of them run at once than the 2 CPUs
# (go test's default -parallel is GOMAXPROCS).
TEST_PARALLEL ?= 8
TEST_ENV = CSI_SANITY=$(SANITY) CSI_MOCK_DRIVER=$(MOCK) CSI_KUBELET_SIM=$(SIM) CSI_REFDRIVER=$(REFDRV) \
	CSI_KUBELET_SIM_ADMISSION=$(ADMIT) CSI_KUBELET_SIM_APISERVER=$(APISRV) CSI_SECRETS_DRIVER=$(SECRETS)
.PHONY: test-go
test: build tools vet race chromium test-go

test-go: build tools chromium
	@mkdir -p $(BIN); { $(TEST_ENV) $(GO) test -count=1 -cover -parallel $(TEST_PARALLEL) ./... 2>&1; echo $$? > $(BIN)/test.rc; } | tee $(BIN)/test.out; \
		rc=$$(cat $(BIN)/test.rc); hack/coverfloors.sh $(BIN)/test.out $(COVER_MIN) || rc=1; \
		[ -x $(CHROMIUM) ] || echo "make test: report TestHTMLInChromium was skipped: no $(CHROMIUM) (install it with \`make chromium\`)"; \
		exit $$rc

# Coverage floors, checked by `make test`: the rules are tested without
# root against csiclient/csifake, and these keep them so (node/... as a
# whole: `make race`; the others a little under what they have, so that a
# drop shows).
COVER_MIN := node:60 node/release:90 node/rootdir:65 manifests:80 csiclient:85 tokens:80 admission:75 cmd/csi-kubelet-sim:85 session:25 printers:20 conformance:55 sidecars:75

# The floors alone, for those packages only (`make test` checks them from
# its own run).
.PHONY: cover
cover: admission-helper
	@mkdir -p $(BIN); { CSI_KUBELET_SIM_ADMISSION=$(ADMIT) $(GO) test -count=1 -cover \
		$(foreach pm,$(COVER_MIN),./$(firstword $(subst :, ,$(pm)))/) 2>&1; echo $$? > $(BIN)/cover.rc; } | tee $(BIN)/cover.out; \
		rc=$$(cat $(BIN)/cover.rc); hack/coverfloors.sh $(BIN)/cover.out $(COVER_MIN) || rc=1; exit $$rc

bench: build tools
	CSI_SANITY=$(SANITY) CSI_MOCK_DRIVER=$(MOCK) CSI_KUBELET_SIM=$(SIM) CSI_REFDRIVER=$(REFDRV) \
		$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

clean:
	rm -rf $(BIN)

# The differential test (e2e/kubeletdiff, its own module): the kubelet's own
# CSI code of Kubernetes $(KUBE_VERSION) and the built simulator, each against
# a recording driver, compared request for request. KUBE_VERSION picks the
# release: its module file (go.mod, or go.<version>.mod made by genmod.sh) and
# the build tags before1_<N> for every minor N above the release's, which pick
# the harness's adapters to that release's kubelet API (adapt_*_test.go). The
# test binary is built once (go test -c, into $(KUBEDIFF_BINDIR)) and run as
# root in a mount namespace of its own (the block cases attach loop devices
# and bind-mount them). Times and cache sizes are in e2e/kubeletdiff/README.md.
# `.ci/run` runs the releases a change can affect (kubeletdiff-ci, below)
# after `make test`; `make test` leaves it out.
# KUBEDIFF_RELEASES are node/release/releases.txt's tags, the one list of the
# releases the project claims (CONTRIBUTING.md, "Adding a release"; a pre-release such
# as v1.38.0-beta.0 among them).
KUBE_VERSION       ?= v1.37.2
KUBEDIFF_RELEASES  := $(shell sed -n 's/^\(v1\.[0-9][^[:space:]#]*\).*/\1/p' node/release/releases.txt)
KUBEDIFF_MODFILE    = $(if $(wildcard e2e/kubeletdiff/go.$(KUBE_VERSION).mod),go.$(KUBE_VERSION).mod,go.mod)
KUBEDIFF_MINOR      = $(word 2,$(subst ., ,$(KUBE_VERSION:v%=%)))
KUBEDIFF_TAGS       = $(shell seq -s, -f 'before1_%g' $$(( $(KUBEDIFF_MINOR) + 1 )) 40)
# A release whose module file wants a newer Go than the main module's (the
# `go` line: k8s.io/kubernetes v1.38 says 1.27) is built with the approved
# toolchain, which the go command fetches from the module proxy (about 76
# MB, once per machine). Only the commands that build that release's
# modules get GOTOOLCHAIN; the main module stays on its own Go.
KUBE_GO127          = go1.27.3
KUBE_TOOLCHAIN      = $(if $(filter 1.27%,$(shell sed -n 's/^go //p' e2e/kubeletdiff/$(KUBEDIFF_MODFILE) 2>/dev/null)),GOTOOLCHAIN=$(KUBE_GO127))
KUBEDIFF_BINDIR    ?= $(CURDIR)/bin/kubeletdiff
KUBEDIFF_TIMEOUT   ?= 30m

# The admission step against code nobody here wrote (e2e/webhookdiff, its own
# module: it imports k8s.io/kubernetes v1.37.2): the Kubernetes e2e webhook
# server (agnhost) called through it, and MutatingWebhookConfiguration
# validation compared with the API server's. No root needed. Cold: about 14
# min (at nice 19 on 2 busy cores) and 1.5 GB of build cache, 3 min when the
# admission helper was built before it (.ci/run: they share the API server's
# packages); warm: about 20 s.
.PHONY: webhookdiff
webhookdiff:
	cd e2e/webhookdiff && $(GO) test -count=1 -timeout 10m ./...

.PHONY: kubeletdiff kubeletdiff-all kubeletdiff-bin kubeletdiff-run
kubeletdiff: build
	@$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-bin KUBE_VERSION=$(KUBE_VERSION)
	@$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-run KUBE_VERSION=$(KUBE_VERSION)

# The test binary of one release (removed first, so that a failed build
# leaves none to run).
kubeletdiff-bin:
	@grep -q 'k8s.io/kubernetes $(KUBE_VERSION)$$' e2e/kubeletdiff/$(KUBEDIFF_MODFILE) || \
		{ echo "no module file for Kubernetes $(KUBE_VERSION): run e2e/kubeletdiff/genmod.sh $(KUBE_VERSION)"; exit 2; }
	@mkdir -p $(KUBEDIFF_BINDIR) && rm -f $(KUBEDIFF_BINDIR)/$(KUBE_VERSION).test
	cd e2e/kubeletdiff && $(KUBE_TOOLCHAIN) $(GO) test -c -tags '$(KUBEDIFF_TAGS)' -modfile=$(KUBEDIFF_MODFILE) -o $(KUBEDIFF_BINDIR)/$(KUBE_VERSION).test .

kubeletdiff-run:
	cd e2e/kubeletdiff && KUBE_VERSION=$(KUBE_VERSION) CSI_KUBELET_SIM=$(SIM) \
		unshare -m --propagation private $(KUBEDIFF_BINDIR)/$(KUBE_VERSION).test -test.count=1 -test.timeout $(KUBEDIFF_TIMEOUT) -test.run TestKubeletDiff $(KUBEDIFF_FLAGS)

# Every release, all run even when one fails, with a summary line each. The
# next release's binary is built while one runs (a run mostly waits on the
# kubelet's loop periods; a build wants the CPUs); its build log is printed
# if it fails. KUBEDIFF_DEADLINE (seconds since the epoch, .ci/run's budget):
# the first two releases always run; no later one is started past it, and
# the summary names those left out (with empty Go caches every release
# compiles some 1,200 Kubernetes packages of its own, about five minutes).
kubeletdiff-all: build
	@rc=0; sum=""; n=0; left=""; set -- $(KUBEDIFF_RELEASES); \
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-bin KUBE_VERSION=$$1 || true; \
	while [ $$# -gt 0 ]; do \
		v=$$1; shift; n=$$((n + 1)); s=$$(date +%s); \
		if [ $$# -gt 0 ] && [ $$n -ge 2 ] && [ -n "$(KUBEDIFF_DEADLINE)" ] && [ $$s -ge 0$(KUBEDIFF_DEADLINE) ]; then \
			left="$$*"; set --; \
		fi; \
		if [ $$# -gt 0 ]; then \
			$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-bin KUBE_VERSION=$$1 > $(KUBEDIFF_BINDIR)/$$1.build.log 2>&1 & b=$$!; \
		fi; \
		if [ -x $(KUBEDIFF_BINDIR)/$$v.test ] && \
			$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-run KUBE_VERSION=$$v; then r=ok; else r=FAIL; rc=1; fi; \
		sum="$$sum$$v $$r $$(( $$(date +%s) - s ))s\n"; \
		if [ $$# -gt 0 ] && ! wait $$b; then cat $(KUBEDIFF_BINDIR)/$$1.build.log; fi; \
	done; \
	for v in $$left; do sum="$$sum$$v not run: the CI budget's deadline had passed (make kubeletdiff KUBE_VERSION=$$v runs it)\n"; done; \
	printf "kubeletdiff-all:\n$$sum"; exit $$rc

# What CI runs (.ci/run): the newest and the oldest release on every run,
# and every release whose rules, version predicates, adapters, module file
# or differential cases the change touches since KUBEDIFF_BASE; every
# release when that cannot be told. The rules are in hack/kubediffreleases;
# CONTRIBUTING.md says what runs when. KUBEDIFF_BASE: a submission is every
# commit since the previous landing, which a clone cannot name; a session
# lasts at most 3 hours, so the base is the newest commit of the main line
# at least 4 hours older than HEAD (a change landed less than 4 hours
# earlier is counted again: more releases, never fewer).
KUBEDIFF_WINDOW ?= 14400
KUBEDIFF_BASE ?= $(shell t=$$(git log -1 --format=%ct HEAD 2>/dev/null) && \
	git rev-list -1 --first-parent --before=$$((t - $(KUBEDIFF_WINDOW))) HEAD 2>/dev/null)
# What the module proxy serves that node/release/releases.txt does not claim: a
# newer patch of a claimed minor, a newer pre-release, a newer minor (1.38.0
# itself). Asks `go list -m -versions k8s.io/kubernetes` through GOPROXY as
# configured, so it needs the network: run it by hand (CONTRIBUTING.md,
# "Adding a release"), not in CI. Exit 0 whether or not there is news; 3 when the
# proxy cannot be asked.
.PHONY: releases-check
releases-check:
	@$(GO) run ./hack/releasescheck -releases node/release/releases.txt

.PHONY: kubeletdiff-releases kubeletdiff-ci
kubeletdiff-releases:
	@$(GO) run ./hack/kubediffreleases -newest-first -base '$(KUBEDIFF_BASE)' $(KUBEDIFF_RELEASES)

kubeletdiff-ci: build
	@rels=$$($(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-releases) || exit 2; \
	echo "kubeletdiff-ci: $$rels"; \
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff-all KUBEDIFF_RELEASES="$$rels"

# --- report: headless chromium for the HTML report's browser test --------
# report/browser_test.go opens the --report page in Debian's chromium and
# skips when it is missing. `make chromium` (run by `make test`) says what
# it is about to install and why, then installs it with apt-get (root) if
# /usr/bin/chromium is not there; it takes a few minutes. NO_SYSTEM_PACKAGES=1,
# or a machine without apt-get, installs nothing: that one test is skipped
# and `make test` ends with a line saying so. In CI (CI=true) it is never
# skipped: chromium is installed, or `make test` fails here.
CHROMIUM := /usr/bin/chromium
.PHONY: chromium
chromium:
	@[ -x $(CHROMIUM) ] && exit 0; \
	if [ -n "$(NO_SYSTEM_PACKAGES)" ] || ! command -v apt-get >/dev/null; then \
		why=$$([ -n "$(NO_SYSTEM_PACKAGES)" ] && echo NO_SYSTEM_PACKAGES=$(NO_SYSTEM_PACKAGES) || echo "no apt-get on this machine"); \
		if [ "$(CI)" = true ]; then echo "make chromium: CI needs $(CHROMIUM) for the HTML report's browser test, and it cannot be installed ($$why)" >&2; exit 1; fi; \
		echo "make chromium: not installing the system package chromium ($$why): the report's browser test (report TestHTMLInChromium) will be skipped"; exit 0; \
	fi; \
	echo "make chromium: installing the system package chromium with apt-get (a few minutes, about 300 MB): the report's browser test (report TestHTMLInChromium) opens the --report page in it. NO_SYSTEM_PACKAGES=1 skips that test instead."; \
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium

# Fuzzing (Go native fuzzing): each target for FUZZTIME, one after the
# other. Seeds are the samples and testdata/fuzz/<target>/ of each package;
# a crasher found is written there, to be fixed and committed as a seed.
FUZZTIME     ?= 10s
# Minimizing a new input runs the target many times uncounted (Go's default
# allows 60s per input); keep it short so that FUZZTIME bounds the run.
FUZZMINTIME  ?= 2s
# Go before 1.27 can fail a target that found nothing with a bare "context
# deadline exceeded" when -fuzztime ends (a race in its fuzz coordinator,
# go.dev/issue/75804; CI failed on it once): fuzzing runs on the Go that
# has the fix, the toolchain the 1.38 differential test fetches anyway.
FUZZ_GO      ?= GOTOOLCHAIN=$(KUBE_GO127) $(GO)
FUZZ_TARGETS := manifests:FuzzLoad manifests:FuzzNames node:FuzzPaths node:FuzzDefaultPodPaths node:FuzzSELinuxMountOption node/rootdir:FuzzJournal

.PHONY: fuzz
# A target that moved is an error, not a silent "no fuzz tests to fuzz"
# (FuzzJournal went unfuzzed that way when node/rootdir was split out), and
# so is a Fuzz function in the tree that FUZZ_TARGETS does not name.
fuzz:
	@listed=$$(printf '%s\n' $(FUZZ_TARGETS) | sort); \
	found=$$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bin/' | while read -r f; do \
		d=$$(dirname "$${f#./}"); sed -n "s|^func \(Fuzz[A-Za-z0-9_]*\)(.*|$$d:\1|p" "$$f"; done | sort); \
	if [ "$$listed" != "$$found" ]; then printf 'make fuzz: FUZZ_TARGETS names\n%s\nbut the tree has\n%s\n' "$$listed" "$$found" >&2; exit 1; fi
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$fn ./$$pkg ($(FUZZTIME))"; \
		out=$$($(FUZZ_GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./$$pkg 2>&1); rc=$$?; \
		echo "$$out"; [ $$rc = 0 ] || exit 1; \
		if echo "$$out" | grep -q 'no fuzz tests to fuzz'; then echo "make fuzz: $$fn is not in ./$$pkg" >&2; exit 1; fi; \
	done

# Install the simulator and its admission helper (which runs the API
# server's webhook code when an input has MutatingWebhookConfigurations)
# into $(DESTDIR)$(PREFIX)/bin (default /usr/local/bin).
# It is built first when ./bin has none (`make build && sudo make install`
# builds as the user, installs as root).
PREFIX ?= /usr/local

.PHONY: install
install:
	@[ -x $(SIM) ] || $(GO) build $(GOFLAGS_BLD) -o $(SIM) ./cmd/csi-kubelet-sim
	@[ -x $(ADMIT) ] || $(GO) build -o $(ADMIT) ./cmd/csi-kubelet-sim-admission
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(SIM) $(DESTDIR)$(PREFIX)/bin/csi-kubelet-sim
	install -m 0755 $(ADMIT) $(DESTDIR)$(PREFIX)/bin/csi-kubelet-sim-admission
	@[ ! -x $(APISRV) ] || install -m 0755 $(APISRV) $(DESTDIR)$(PREFIX)/bin/csi-kubelet-sim-apiserver

# --- realkubelet: the whole kubelet (e2e/realkubelet, its own module) ------
# An unmodified kubelet of Kubernetes $(KUBE_VERSION), built from the module
# proxy (the tool block of e2e/realkubelet/go.mod, or go.$(KUBE_VERSION).mod
# there for another release), with kube-apiserver (the API server helper's
# at $(APISERVER_KUBE), else built the same way as the kubelet), etcd from
# Debian's etcd-server, Kubernetes' fake container runtime and a recording driver,
# run as root in a mount namespace of its own; every case of the
# differential test the whole kubelet can run is compared with
# `csi-kubelet-sim run` on the same objects. The binaries go to
# bin/realkubelet/<release>/; after kubeletdiff's v1.37.2 packages the
# kubelet takes about 4.5 min at nice 19 on 2 busy cores (12 with an empty
# cache; another release's API server some 2 more; times in
# e2e/realkubelet/README.md).
# TestRealKubeletRepublish holds a pod 25 s on each side (the cadence).
# REALKUBELET_FLAGS=-test.v is passed to the test binary.
REALKUBELET_BINDIR  = $(CURDIR)/bin/realkubelet/$(KUBE_VERSION)
REALKUBELET_ETCD   ?= /usr/bin/etcd
REALKUBELET_TIMEOUT ?= 15m
# The release's version in the binaries (a build from the module proxy says
# v0.0.0-master otherwise); only the link step sees it.
# -s -w: no symbol table or DWARF (smaller binaries, a shorter link).
REALKUBELET_LDFLAGS = -s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(KUBEDIFF_MINOR)

.PHONY: realkubelet realkubelet-bin realkubelet-etcd
# At $(APISERVER_KUBE) the stack's kube-apiserver and etcd are the API server
# helper's (`make apiserver-helper`, as --apiserver runs them); another
# release builds its own kube-apiserver.
REALKUBELET_HELPER = $(if $(filter $(APISERVER_KUBE),$(KUBE_VERSION)),$(APISRV))
# REALKUBELET_PREBUILT=1: the binaries were just built (.ci/run builds them
# while the differential test runs), no relink.
realkubelet: build $(if $(REALKUBELET_PREBUILT),,realkubelet-bin) realkubelet-etcd $(if $(REALKUBELET_HELPER),apiserver-helper)
	cd e2e/realkubelet && CSI_KUBELET_SIM=$(SIM) REALKUBELET_BIN=$(REALKUBELET_BINDIR) REALKUBELET_VERSION=$(KUBE_VERSION) REALKUBELET_ETCD=$(REALKUBELET_ETCD) \
		REALKUBELET_APISERVER_HELPER=$(REALKUBELET_HELPER) \
		$(REALKUBELET_BINDIR)/realkubelet.test -test.count=1 -test.timeout $(REALKUBELET_TIMEOUT) -test.run TestRealKubelet $(REALKUBELET_FLAGS)

# The kubelet and API server of a release other than go.mod's come from
# go.<release>.mod (kubeletdiff's module file of that release with a tool
# block); the test binary is always built from go.mod.
REALKUBELET_MODFILE = $(if $(wildcard e2e/realkubelet/go.$(KUBE_VERSION).mod),go.$(KUBE_VERSION).mod,go.mod)
realkubelet-bin:
	@grep -Eq 'k8s.io/kubernetes $(KUBE_VERSION)( |$$)' e2e/realkubelet/$(REALKUBELET_MODFILE) || \
		{ echo "make realkubelet: no module file for Kubernetes $(KUBE_VERSION) in e2e/realkubelet (go.mod is $$(awk '$$1=="k8s.io/kubernetes"{print $$2}' e2e/realkubelet/go.mod); see its README)"; exit 2; }
	@mkdir -p $(REALKUBELET_BINDIR)
	cd e2e/realkubelet && $(KUBE_TOOLCHAIN) nice -n 19 $(GO) build -modfile=$(REALKUBELET_MODFILE) -ldflags "$(REALKUBELET_LDFLAGS)" -o $(REALKUBELET_BINDIR)/kubelet k8s.io/kubernetes/cmd/kubelet
	$(if $(REALKUBELET_HELPER),,cd e2e/realkubelet && $(KUBE_TOOLCHAIN) nice -n 19 $(GO) build -modfile=$(REALKUBELET_MODFILE) -ldflags "$(REALKUBELET_LDFLAGS)" -o $(REALKUBELET_BINDIR)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver)
	cd e2e/realkubelet && nice -n 19 $(GO) test -c -o $(REALKUBELET_BINDIR)/realkubelet.test .

# etcd for the API server: Debian's etcd-server (3.4), installed when missing.
realkubelet-etcd:
	@[ -x $(REALKUBELET_ETCD) ] && exit 0; \
	if ! command -v apt-get >/dev/null; then echo "make realkubelet: no $(REALKUBELET_ETCD) and no apt-get: install etcd 3.4 or later and set REALKUBELET_ETCD" >&2; exit 1; fi; \
	echo "make realkubelet: installing the system package etcd-server with apt-get (about 20 MB): the API server of the whole-kubelet test stores in it."; \
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server
