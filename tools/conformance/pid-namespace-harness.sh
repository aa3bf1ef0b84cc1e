#!/usr/bin/env bash
# Makes the conformance harness whose node has its own PID namespace: a copy of
# ../shared/conformance's scripts with pid-namespace.patch applied (stack.sh and node.sh), beside a
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
echo "$OUT/conformance/run.sh"
