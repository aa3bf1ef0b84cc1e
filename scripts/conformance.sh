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
# compared with reference-upstream-extended.txt; ~25 min. FOCUS then narrows that selection.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARED=$ROOT/../shared/conformance
export CONF_DIR=${CONF_DIR:-/tmp/kubelet-ts-conformance}
REFERENCE=$SHARED/reference-upstream.txt
REPORT_NAME=report-kubelet-ts
FOCUSED=${FOCUS:+--focused}
if [ "${1:-}" = --extended ]; then
  # The selection exactly as the harness's README gives it: the reference was measured with it.
  export FOCUS=${FOCUS:-'\[sig-node\]|\[sig-storage\]'}
  export SKIP='\[Conformance\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:|\[NodeFeature:|\[Alpha\]|\[Beta\]|\[sig-network\]|\[sig-apps\]|\[sig-auth\]|\[sig-api-machinery\]|\[sig-scheduling\]|\[sig-cli\]|\[Driver: |CSI Mock|NFS|Flexvolume|iSCSI|Gluster|Ceph'
  REFERENCE=$SHARED/reference-upstream-extended.txt
  REPORT_NAME=report-kubelet-ts-extended
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
cleanup() { bash "$SHARED/run.sh" cleanup >/dev/null 2>&1 || true; }
[ "${KEEP:-}" = 1 ] || trap cleanup EXIT

t0=$(date +%s)
log "build (npm run build)"
node scripts/build.mjs >/dev/null
log "suite binaries -> $CONF_DIR/bin"
bash "$SHARED/unpack.sh" "$CONF_DIR" >/dev/null
log "test images -> 127.0.0.1:27500"
bash "$SHARED/images.sh" "$CONF_DIR/bin" "$SHARED/tree" > "$CONF_DIR/images.log" 2>&1 || { tail -20 "$CONF_DIR/images.log" >&2; exit 1; }
log "run (${FOCUS:-the whole selection}; report in $REPORT_DIR)"
bash "$SHARED/run.sh" kubelet-ts "$CONF_DIR/bin/e2e.test" "$CONF_DIR/bin/ginkgo" "$ROOT"
RESULTS=$REPORT_DIR/results-kubelet-ts.txt
[ -f "$RESULTS" ] || { echo "conformance: no results ($RESULTS); see $REPORT_DIR/e2e.log" >&2; exit 1; }
log "done in $(( $(date +%s) - t0 )) s; e2e log $REPORT_DIR/e2e.log, kubelet log $REPORT_DIR/kubelet.log"
node --import tsx tools/conformance/compare.ts "$REFERENCE" "$RESULTS" $FOCUSED
