# csi-kubelet-sim: `make demo` shows it, `make test` checks it. Everything
# the tests need (csi-sanity, the Kubernetes e2e CSI mock driver) is built
# into ./bin from the Go module proxy; nothing is installed by hand.

GO          ?= go
BIN         := $(CURDIR)/bin
SANITY_VER  := v5.6.0
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BLD := -ldflags "-X main.version=$(VERSION)"

SIM     := $(BIN)/csi-kubelet-sim
REFDRV  := $(BIN)/csi-refdriver
SANITY  := $(BIN)/csi-sanity
MOCK    := $(BIN)/csi-mock-driver

.PHONY: all build tools demo test unit e2e bench vet clean

all: build

build:
	$(GO) build $(GOFLAGS_BLD) -o $(SIM) ./cmd/csi-kubelet-sim
	$(GO) build -o $(REFDRV) ./fixtures/refdriver/cmd/csi-refdriver

$(SANITY):
	GOBIN=$(BIN) $(GO) install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$(SANITY_VER)

# The mock driver lives in its own module (it needs CSI spec v1.12.0).
$(MOCK): e2e/mockdriver/main.go e2e/mockdriver/go.mod e2e/mockdriver/go.sum
	cd e2e/mockdriver && $(GO) build -o $(MOCK) .

tools: $(SANITY) $(MOCK)

# The reference driver on a temporary socket, the simulator on each sample,
# then everything stopped and removed.
demo: build
	@fixtures/demo.sh $(SIM) $(REFDRV)

vet:
	$(GO) vet ./...

# Unit tests, csi-sanity against the reference driver, and the end-to-end
# tests of the built binary against both drivers (real bind mounts: root).
test: build tools vet
	CSI_SANITY=$(SANITY) CSI_MOCK_DRIVER=$(MOCK) CSI_KUBELET_SIM=$(SIM) CSI_REFDRIVER=$(REFDRV) \
		$(GO) test -count=1 ./...

bench: build tools
	CSI_SANITY=$(SANITY) CSI_MOCK_DRIVER=$(MOCK) CSI_KUBELET_SIM=$(SIM) CSI_REFDRIVER=$(REFDRV) \
		$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

clean:
	rm -rf $(BIN)

# The differential test (e2e/kubeletdiff, its own module): the kubelet's own
# CSI code of Kubernetes $(KUBE_VERSION) and the built simulator, each against
# a recording driver, compared request for request. KUBE_VERSION picks the
# release (its module file: go.mod, or go.<version>.mod made by genmod.sh).
# Needs root. Cold: about 3.5 min and 1.8 GB of module and build caches per
# release; warm: about 2 min for the whole table. `.ci/run` runs both
# releases after `make test`; `make test` leaves it out to stay quick.
KUBE_VERSION       ?= v1.37.1
KUBEDIFF_RELEASES  := v1.37.1 v1.36.3
KUBEDIFF_MODFILE    = $(if $(wildcard e2e/kubeletdiff/go.$(KUBE_VERSION).mod),go.$(KUBE_VERSION).mod,go.mod)

.PHONY: kubeletdiff kubeletdiff-all
kubeletdiff: build
	@grep -q 'k8s.io/kubernetes $(KUBE_VERSION)$$' e2e/kubeletdiff/$(KUBEDIFF_MODFILE) || \
		{ echo "no module file for Kubernetes $(KUBE_VERSION): run e2e/kubeletdiff/genmod.sh $(KUBE_VERSION)"; exit 2; }
	cd e2e/kubeletdiff && KUBE_VERSION=$(KUBE_VERSION) CSI_KUBELET_SIM=$(SIM) \
		$(GO) test -modfile=$(KUBEDIFF_MODFILE) -count=1 -timeout 20m -run TestKubeletDiff .

# Every release, all run even when one fails.
kubeletdiff-all: build
	@rc=0; for v in $(KUBEDIFF_RELEASES); do $(MAKE) -f $(firstword $(MAKEFILE_LIST)) --no-print-directory kubeletdiff KUBE_VERSION=$$v || rc=1; done; exit $$rc
