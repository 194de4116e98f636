#!/bin/sh
# genmod.sh VERSION: write go.VERSION.mod / .sum, from which `make
# apiserver-helper KUBE_VERSION=VERSION` builds the helper with that
# release's kube-apiserver. It is e2e/realkubelet's module file of the same
# release (make it there first with its genmod.sh) under this module's name
# and without its tool block: the same versions, so the kube-apiserver
# packages `make realkubelet KUBE_VERSION=VERSION` compiled are reused from
# the build cache.
set -eu
V=${1:?usage: genmod.sh v1.X.Y}
cd "$(dirname "$0")"
SRC=../../e2e/realkubelet/go.$V.mod
[ -f "$SRC" ] || { echo "genmod.sh: no $SRC (run e2e/realkubelet/genmod.sh $V first)" >&2; exit 1; }
MODFILE=go.$V.mod
{
	echo "// The API server helper with kube-apiserver of Kubernetes $V (make apiserver-helper KUBE_VERSION=$V):"
	echo "// written by genmod.sh $V from e2e/realkubelet/go.$V.mod."
	sed -e '1,/^module /{/^module /!d}' \
		-e 's#^module .*#module github.com/csi-kubelet-sim/csi-kubelet-sim/cmd/csi-kubelet-sim-apiserver#' \
		-e '/^tool (/,/^)/d' "$SRC"
} > "$MODFILE"
cp "../../e2e/realkubelet/go.$V.sum" "go.$V.sum"
go list -modfile="$MODFILE" -deps . >/dev/null
echo "genmod.sh: wrote $MODFILE (k8s.io/kubernetes $V)"
