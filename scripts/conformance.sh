#!/usr/bin/env bash
# `npm run conformance`: upstream's own node conformance tests (Kubernetes v1.28.7 e2e, the
# [Conformance] tests of sig-node and sig-storage) against this checkout, on the harness in
# ../shared/conformance (its selection and images; this script wraps its scripts): build,
# unpack the suite, build and push its images, bring up the one-node cluster (the shared control
# plane and this kubelet on a private containerd), run ginkgo, compare with upstream's kubelet
# on the same harness (reference-upstream.txt), clean everything up.
# Prints "N passed, M failed" and every test that passes with upstream's kubelet but fails
# here; exits 1 when there is one. As root, ~20-30 minutes on 2 cores for the whole suite.
#   FOCUS='Downward API' npm run conformance     # a part (a ginkgo regexp over the test names)
#   npm run conformance:extended                 # (--extended) the extended set, see below
# Env: FOCUS, PROCS (3), TIMEOUT (60m), KEEP=1 (leave the cluster up), CONF_DIR
# (/tmp/kubelet-ts-conformance: binaries, images, reports).
# --extended: the rest of sig-node and sig-storage that one node can run, as
# ../shared/conformance/README.md "The extended set" selects it (114 specs beyond [Conformance];
# not [Serial], [Disruptive], [Flaky], [Slow], [Feature:*], [NodeFeature:*], driver-specific),
# compared with tools/conformance/reference-upstream-extended.txt; ~25 min. FOCUS then narrows
# that selection (FOCUS='PersistentVolumes-local' npm run conformance:extended: ~6 min).
# The extended set runs on the harness with two changes of ours, because upstream's storage tests
# reach the node with `nsenter --mount=/rootfs/proc/1/ns/mnt` from a hostexec pod: the node has
# its own PID namespace, whose PID 1 is in containerd's and the kubelet's mount namespace, as in a
# kind node (tools/conformance/pid-namespace.patch, applied to a copy of the harness's stack.sh and
# node.sh; the machine's own PID 1 refuses to be entered), and agnhost's nsenter runs the node's
# sh and tools (tools/conformance/nsenter.c; busybox-static's keeps its own applets). Its
# reference is the shared one with the PersistentVolumes-local, local block expansion and Mount
# propagation results of upstream's kubelet on that harness.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARED=$ROOT/../shared/conformance
export CONF_DIR=${CONF_DIR:-/tmp/kubelet-ts-conformance}
REFERENCE=$SHARED/reference-upstream.txt
REPORT_NAME=report-kubelet-ts
RUN=$SHARED/run.sh
EXTENDED=
FOCUSED=${FOCUS:+--focused}
if [ "${1:-}" = --extended ]; then
  # The selection exactly as the harness's README gives it: the reference was measured with it.
  export FOCUS=${FOCUS:-'\[sig-node\]|\[sig-storage\]'}
  export SKIP='\[Conformance\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:|\[NodeFeature:|\[Alpha\]|\[Beta\]|\[sig-network\]|\[sig-apps\]|\[sig-auth\]|\[sig-api-machinery\]|\[sig-scheduling\]|\[sig-cli\]|\[Driver: |CSI Mock|NFS|Flexvolume|iSCSI|Gluster|Ceph'
  REFERENCE=$ROOT/tools/conformance/reference-upstream-extended.txt
  REPORT_NAME=report-kubelet-ts-extended
  EXTENDED=1
elif [ -n "${1:-}" ]; then
  echo "conformance: unknown argument '$1' (only --extended)" >&2; exit 2
fi
export REPORT_DIR=$CONF_DIR/$REPORT_NAME

if [ "$(id -u)" != 0 ]; then echo "conformance: run as root (containerd, the bridge, cgroups)" >&2; exit 1; fi
if [ ! -f "$SHARED/run.sh" ]; then echo "conformance: $SHARED not found: ../shared must be beside the project" >&2; exit 1; fi
for bin in kubectl python3 docker-registry skopeo containerd etcd; do
  command -v $bin >/dev/null || { echo "conformance: $bin not found (scripts/install-node-packages.sh --test installs the Debian packages; kubectl comes with the machine image)" >&2; exit 1; }
done

log() { echo "[conformance $(date +%T)] $*" >&2; }
if [ -n "$EXTENDED" ]; then
  command -v gcc >/dev/null || { echo "conformance: gcc not found (the extended set builds tools/conformance/nsenter.c; apt-get install gcc libc6-dev)" >&2; exit 1; }
  RUN=$(bash tools/conformance/pid-namespace-harness.sh "$SHARED" "$CONF_DIR/harness")
fi
cleanup() {
  bash "$RUN" cleanup >/dev/null 2>&1 || true
  # a local-PV test that failed half-way leaves its loop device attached (they are the machine's)
  if [ -n "$EXTENDED" ]; then
    losetup -nO NAME,BACK-FILE 2>/dev/null | awk '$2 ~ /^\/tmp\/local-volume-test-/ {print $1}' | xargs -r -n1 losetup -d 2>/dev/null || true
  fi
}
[ "${KEEP:-}" = 1 ] || trap cleanup EXIT

t0=$(date +%s)
log "build (npm run build)"
node scripts/build.mjs >/dev/null
log "suite binaries -> $CONF_DIR/bin"
bash "$SHARED/unpack.sh" "$CONF_DIR" >/dev/null
log "test images -> 127.0.0.1:27500"
bash "$SHARED/images.sh" "$CONF_DIR/bin" "$SHARED/tree" > "$CONF_DIR/images.log" 2>&1 || { tail -20 "$CONF_DIR/images.log" >&2; exit 1; }
if [ -n "$EXTENDED" ]; then
  log "test images with agnhost's nsenter from tools/conformance/nsenter.c; node in its own PID namespace"
  E2E_REPO=$(bash tools/conformance/node-nsenter-images.sh "$SHARED" 2>> "$CONF_DIR/images.log") || { tail -20 "$CONF_DIR/images.log" >&2; exit 1; }
  export E2E_REPO
fi
log "run (${FOCUS:-the whole selection}; report in $REPORT_DIR)"
# ../shared/k8s/control-plane.sh can start a component twice: it reads the first one's
# /proc/<pid>/cmdline to see it run, and between that process's fork and its exec it takes it
# for exited (seen in CI on 2026-11-29: the second kube-controller-manager found its port taken,
# and the bring-up failed before any test ran). A run that ends in the control plane's start is
# made once more; any other failure is the run's.
harness() {
  set +e
  bash "$RUN" kubelet-ts "$CONF_DIR/bin/e2e.test" "$CONF_DIR/bin/ginkgo" "$ROOT" 2>&1 | tee "$CONF_DIR/harness-output.log"
  local rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}
if ! harness; then
  grep -q '^\[control-plane\] .* exited; last lines' "$CONF_DIR/harness-output.log" || exit 1
  log "the control plane did not come up (a component was started twice; see above): once more"
  harness
fi
RESULTS=$REPORT_DIR/results-kubelet-ts.txt
[ -f "$RESULTS" ] || { echo "conformance: no results ($RESULTS); see $REPORT_DIR/e2e.log" >&2; exit 1; }
log "done in $(( $(date +%s) - t0 )) s; e2e log $REPORT_DIR/e2e.log, kubelet log $REPORT_DIR/kubelet.log"
node --import tsx tools/conformance/compare.ts "$REFERENCE" "$RESULTS" $FOCUSED
