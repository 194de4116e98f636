#!/bin/sh
# genmod.sh VERSION: write go.VERSION.mod / .sum, from which `make realkubelet
# KUBE_VERSION=VERSION` builds that release's kubelet and kube-apiserver. It
# is e2e/kubeletdiff's module file of the same release (make it there first
# with its genmod.sh) under this module's name, with a tool block naming
# both commands; their further requirements are then added by resolving
# them. The test binary is always built from go.mod (the newest release):
# only the two binaries are of the release.
set -eu
V=${1:?usage: genmod.sh v1.X.Y}
cd "$(dirname "$0")"
SRC=../kubeletdiff/go.$V.mod
[ -f "$SRC" ] || { echo "genmod.sh: no $SRC (run ../kubeletdiff/genmod.sh $V first)" >&2; exit 1; }
MODFILE=go.$V.mod
{
	echo "// The kubelet and kube-apiserver of Kubernetes $V (make realkubelet KUBE_VERSION=$V):"
	echo "// written by genmod.sh $V from e2e/kubeletdiff/go.$V.mod."
	sed -e '1,/^module /{/^module /!d}' \
		-e 's#^module .*#module github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/realkubelet#' \
		-e 's#^go 1\.2[0-3]\(\.[0-9]*\)\{0,1\}$#go 1.24.0#' "$SRC"
	printf '\ntool (\n\tk8s.io/kubernetes/cmd/kube-apiserver\n\tk8s.io/kubernetes/cmd/kubelet\n)\n'
} > "$MODFILE"
cp "../kubeletdiff/go.$V.sum" "go.$V.sum"
# The tool block needs go 1.24 in the module file (the main module's
# language version only); the commands' own requirements:
go list -modfile="$MODFILE" -mod=mod -deps k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-apiserver >/dev/null
echo "genmod.sh: wrote $MODFILE (k8s.io/kubernetes $V)"
