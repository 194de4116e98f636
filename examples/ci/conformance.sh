#!/usr/bin/env bash
# conformance.sh: csi-kubelet-sim conformance in a driver's CI. It installs
# the tool (or uses the one given), starts the driver, runs conformance with
# a JUnit file and the HTML report in $OUT_DIR, then stops the driver and
# removes what it made: the driver's process group, its socket, the run's
# root dir. Run it as root (the kubelet's mounts are real bind mounts).
#
# Set by the caller (environment):
#   DRIVER_CMD       the command that starts your node plugin, run with bash -c
#                    in a process group of its own; "$CSI_ENDPOINT" in it is the
#                    socket below (required). Example:
#                    DRIVER_CMD='bin/my-driver --endpoint "$CSI_ENDPOINT" --nodeid ci-node'
#   DRIVER_SOCKET    the socket path the driver listens on (default: a fresh temp dir's csi.sock)
#   CSIDRIVER_FILE   your CSIDriver object (optional; without it the scenarios
#                    come from the driver's capabilities)
#   TESTDRIVER_FILE  your Kubernetes external storage test definition, the file of
#                    e2e.test -storage.testdriver (optional)
#   OUT_DIR          where junit.xml, report.html, conformance.txt and driver.log go
#                    (default ./conformance-results)
#   CSI_KUBELET_SIM  the csi-kubelet-sim binary to use; unset: the one on PATH, else
#                    `go install` of CSI_KUBELET_SIM_VERSION (default latest) into OUT_DIR/bin
#   ROOT_DIR         the kubelet root dir for the scenarios (default: conformance's own
#                    temp dir, removed by it); one you give is left as empty as it was
#   NODE_NAME        the simulated node's name (default ci-node)
#   DRIVER_WAIT      seconds to wait for the driver's socket (default 60)
#   CONFORMANCE_ARGS more arguments for conformance (word-split: --focus, --read-only, ...)
# Exit code: conformance's own (0 passed, 1 the driver failed a scenario, 2 bad
# input, 3 the environment: no tool, a driver that did not start).
set -euo pipefail

module=github.com/csi-kubelet-sim/csi-kubelet-sim
: "${DRIVER_CMD:?set DRIVER_CMD to the command that starts your driver on \$CSI_ENDPOINT}"
OUT_DIR=${OUT_DIR:-conformance-results}
NODE_NAME=${NODE_NAME:-ci-node}
DRIVER_WAIT=${DRIVER_WAIT:-60}

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
sockdir=""
if [ -z "${DRIVER_SOCKET:-}" ]; then
	sockdir=$(mktemp -d /tmp/csi-ci-XXXXXX)
	DRIVER_SOCKET=$sockdir/csi.sock
fi
export CSI_ENDPOINT=unix://$DRIVER_SOCKET

say() { echo "conformance.sh: $*" >&2; }

# 1. The tool: the given binary, the one on PATH, or go install.
sim=${CSI_KUBELET_SIM:-$(command -v csi-kubelet-sim || true)}
if [ -z "$sim" ]; then
	say "installing $module/cmd/csi-kubelet-sim@${CSI_KUBELET_SIM_VERSION:-latest}"
	GOBIN=$OUT_DIR/bin ${GO:-go} install "$module/cmd/csi-kubelet-sim@${CSI_KUBELET_SIM_VERSION:-latest}" || exit 3
	sim=$OUT_DIR/bin/csi-kubelet-sim
fi
"$sim" version >&2 || { say "$sim does not run"; exit 3; }

# 2. The driver, in a process group of its own so that stopping it stops
# whatever it started; a socket already at the path is someone else's.
if [ -e "$DRIVER_SOCKET" ]; then
	say "$DRIVER_SOCKET already exists: another driver's? Not starting over it"
	exit 3
fi
driver_pid=""
# shellcheck disable=SC2317 # reached through the EXIT trap
stop_driver() {
	local rc=$?
	set +e # every step runs, and the exit code stays the run's
	# The whole group: what the driver started (a wrapper script, sidecars)
	# goes with it, even when its leader is gone already.
	if [ -n "$driver_pid" ] && kill -0 -- "-$driver_pid" 2>/dev/null; then
		kill -TERM -- "-$driver_pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 -- "-$driver_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$driver_pid" 2>/dev/null
	fi
	[ -n "$driver_pid" ] && wait "$driver_pid" 2>/dev/null
	# The socket is the driver's, made after the check above: ours to remove.
	[ -S "$DRIVER_SOCKET" ] && rm -f "$DRIVER_SOCKET"
	[ -n "$sockdir" ] && rmdir "$sockdir" 2>/dev/null
	exit "$rc"
}
trap stop_driver EXIT
trap 'exit 130' INT TERM HUP

setsid bash -c "$DRIVER_CMD" >"$OUT_DIR/driver.log" 2>&1 &
driver_pid=$!
for ((i = 0; i < DRIVER_WAIT * 10; i++)); do
	[ -S "$DRIVER_SOCKET" ] && break
	if ! kill -0 "$driver_pid" 2>/dev/null; then
		say "the driver exited before it made $DRIVER_SOCKET; its log ($OUT_DIR/driver.log):"
		tail -n 20 "$OUT_DIR/driver.log" >&2
		exit 3
	fi
	sleep 0.1
done
[ -S "$DRIVER_SOCKET" ] || { say "no socket at $DRIVER_SOCKET after ${DRIVER_WAIT}s"; exit 3; }

# 3. conformance: its text in the CI log (and conformance.txt), the JUnit
# file and the HTML report for the artifacts.
args=(conformance --endpoint "$CSI_ENDPOINT" --node-name "$NODE_NAME"
	--junit "$OUT_DIR/junit.xml" --report "$OUT_DIR/report.html")
[ -n "${CSIDRIVER_FILE:-}" ] && args+=(-f "$CSIDRIVER_FILE")
[ -n "${TESTDRIVER_FILE:-}" ] && args+=(--testdriver "$TESTDRIVER_FILE")
[ -n "${ROOT_DIR:-}" ] && args+=(--root-dir "$ROOT_DIR")
if [ -n "${CONFORMANCE_ARGS:-}" ]; then
	read -ra extra <<<"$CONFORMANCE_ARGS" # split on blanks, no glob: --focus '^a$' stays
	args+=("${extra[@]}")
fi
set +e
"$sim" "${args[@]}" 2>&1 | tee "$OUT_DIR/conformance.txt"
rc=${PIPESTATUS[0]}
set -e
say "conformance exit $rc; in $OUT_DIR: junit.xml report.html conformance.txt driver.log"
exit "$rc"
