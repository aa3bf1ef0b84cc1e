#!/usr/bin/env bash
# Makes the conformance harness whose node has its own PID namespace and listens on the kubelet's
# constant port 10250: a copy of ../shared/conformance's scripts with pid-namespace.patch applied
# (stack.sh and node.sh) and node.sh's main port changed, beside a
# link to ../shared/k8s (run.sh finds the control plane at ../k8s). Prints the copy's run.sh.
#   bash tools/conformance/pid-namespace-harness.sh SHARED_CONFORMANCE_DIR OUT_DIR
# Why: upstream's PersistentVolumes-local tests reach the node through a privileged hostPID pod that
# runs `nsenter --mount=/rootfs/proc/1/ns/mnt`; on this machine PID 1 is the machine's own init,
# which refuses that ("Permission denied"), so all of them failed, with upstream's kubelet too.
# With the patch PID 1 of the node is the harness's own holder, in the mount namespace containerd
# and the kubelet use, as in a kind node. The shared scripts are not ours to edit, so the patch is
# applied to a fresh copy each time; a change upstream of it makes `patch` fail loudly here.
set -euo pipefail
SRC=$(cd "${1:?SHARED_CONFORMANCE_DIR}" && pwd)
OUT=${2:?OUT_DIR}
PATCH=$(cd "$(dirname "$0")" && pwd)/pid-namespace.patch
rm -rf "$OUT"; mkdir -p "$OUT/conformance"
cp "$SRC"/run.sh "$SRC"/node.sh "$SRC"/stack.sh "$SRC"/results.py "$OUT/conformance/"
ln -s "$(cd "$SRC/../k8s" && pwd)" "$OUT/k8s"
patch --quiet --forward -p1 -d "$OUT/conformance" < "$PATCH" \
  || { echo "pid-namespace-harness: $PATCH does not apply to $SRC's stack.sh/node.sh (they changed): redo it" >&2; exit 1; }
# The kubelet's main port is the constant 10250 here, as on every real node: upstream's e2e
# framework reaches the kubelet through the API server's node proxy on ports.KubeletPort (10250),
# whatever the Node says, so PreStop, Delete Grace Period and "delete 10 pods per node" failed on
# the shared harness's 27250 with either kubelet. The port must be free on the machine.
grep -q '^port: 27250$' "$OUT/conformance/node.sh" \
  || { echo "pid-namespace-harness: $SRC/node.sh no longer sets 'port: 27250': redo the port change" >&2; exit 1; }
sed -i 's/^port: 27250$/port: 10250/' "$OUT/conformance/node.sh"
if command -v ss >/dev/null && ss -ltn 'sport = :10250' | grep -q LISTEN; then
  echo "pid-namespace-harness: port 10250 is taken (another kubelet?); the extended set's node needs it" >&2; exit 1
fi
echo "$OUT/conformance/run.sh"
