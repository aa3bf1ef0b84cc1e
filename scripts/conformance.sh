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
# --slow: the [Slow] and [Serial] specs of sig-node and sig-storage, with the extended set's other
# exclusions ([Conformance], [Disruptive], [Flaky], [Feature:*], [NodeFeature:*], [Alpha], [Beta],
# driver-specific): 101 specs, 33 of them [Serial]; on the extended set's harness, compared with
# tools/conformance/reference-upstream-slow.txt. e2e v1.28.7 marks [Serial] in the spec's name
# only (no ginkgo Serial decorator: ginkgo would run them beside the others), so they run in a
# second ginkgo run of one proc, on a fresh cluster, after the others ran with PROCS; a phase whose
# selection is empty (ginkgo --dry-run) is not run. FOCUS narrows both phases; PHASE=parallel or
# PHASE=serial runs one; EXCLUDE=<regexp> leaves specs out (EXCLUDE='MaxContainerBackOff': the
# 20-minute one).
# UPSTREAM_KUBELET=/path/to/kubelet runs upstream's kubelet instead of this checkout (how a
# reference is made: ../shared/k8s/kubelet.gz, unpacked); its results are printed, not compared.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARED=$ROOT/../shared/conformance
export CONF_DIR=${CONF_DIR:-/tmp/kubelet-ts-conformance}
REFERENCE=$SHARED/reference-upstream.txt
KIND=kubelet-ts
WHAT=$ROOT
if [ -n "${UPSTREAM_KUBELET:-}" ]; then KIND=upstream; WHAT=$(readlink -f "$UPSTREAM_KUBELET"); fi
REPORT_NAME=report-$KIND
RUN=$SHARED/run.sh
EXTENDED=
SLOW=
FOCUSED=${FOCUS:+--focused}
if [ "${1:-}" = --slow ]; then
  # The extended set's exclusions without [Serial] and [Slow], and every sig but node and storage
  # (FOCUS may name specs of any sig); each phase's FOCUS is made below.
  SLOW_FOCUS=${FOCUS:-'\[sig-(node|storage)\]'}
  SLOW_SKIP='\[Conformance\]|\[Disruptive\]|\[Flaky\]|\[Feature:|\[NodeFeature:|\[Alpha\]|\[Beta\]|\[sig-(network|apps|auth|api-machinery|scheduling|cli|autoscaling|windows|cloud-provider[a-z-]*|instrumentation|cluster-lifecycle|architecture)\]|\[Driver: |CSI Mock|NFS|Flexvolume|iSCSI|Gluster|Ceph'
  # EXCLUDE (a ginkgo regexp) leaves out more specs: a part of the set, compared as one
  if [ -n "${EXCLUDE:-}" ]; then SLOW_SKIP="$SLOW_SKIP|$EXCLUDE"; FOCUSED=--focused; fi
  REFERENCE=$ROOT/tools/conformance/reference-upstream-slow.txt
  REPORT_NAME=$REPORT_NAME-slow
  EXTENDED=1
  SLOW=1
elif [ "${1:-}" = --extended ]; then
  # The selection exactly as the harness's README gives it: the reference was measured with it.
  export FOCUS=${FOCUS:-'\[sig-node\]|\[sig-storage\]'}
  export SKIP='\[Conformance\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:|\[NodeFeature:|\[Alpha\]|\[Beta\]|\[sig-network\]|\[sig-apps\]|\[sig-auth\]|\[sig-api-machinery\]|\[sig-scheduling\]|\[sig-cli\]|\[Driver: |CSI Mock|NFS|Flexvolume|iSCSI|Gluster|Ceph'
  REFERENCE=$ROOT/tools/conformance/reference-upstream-extended.txt
  REPORT_NAME=$REPORT_NAME-extended
  EXTENDED=1
elif [ -n "${1:-}" ]; then
  echo "conformance: unknown argument '$1' (only --extended or --slow)" >&2; exit 2
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
# ../shared/k8s/control-plane.sh can start a component twice: it reads the first one's
# /proc/<pid>/cmdline to see it run, and between that process's fork and its exec it takes it
# for exited (seen in CI on 2026-11-29: the second kube-controller-manager found its port taken,
# and the bring-up failed before any test ran). A run that ends in the control plane's start is
# made once more; any other failure is the run's.
harness() {
  log "run (${FOCUS:-the whole selection}; report in $REPORT_DIR)"
  set +e
  bash "$RUN" $KIND "$CONF_DIR/bin/e2e.test" "$CONF_DIR/bin/ginkgo" "$WHAT" 2>&1 | tee "$CONF_DIR/harness-output.log"
  local rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    grep -q '^\[control-plane\] .* exited; last lines' "$CONF_DIR/harness-output.log" || return "$rc"
    log "the control plane did not come up (a component was started twice; see above): once more"
    bash "$RUN" $KIND "$CONF_DIR/bin/e2e.test" "$CONF_DIR/bin/ginkgo" "$WHAT" 2>&1 | tee "$CONF_DIR/harness-output.log"
    return "${PIPESTATUS[0]}"
  fi
}
RESULTS=$REPORT_DIR/results-$KIND.txt
if [ -n "$SLOW" ]; then
  # How many specs a FOCUS/SKIP selects (ginkgo --dry-run: no cluster needed).
  selected() {
    "$CONF_DIR/bin/ginkgo" --dry-run --no-color --focus="$1" --skip="$2" "$CONF_DIR/bin/e2e.test" -- --provider=skeleton 2>/dev/null \
      | sed -n 's/^Ran \([0-9]*\) of [0-9]* Specs.*/\1/p'
  }
  SLOW_BASE=$REPORT_DIR
  mkdir -p "$SLOW_BASE"; rm -f "$SLOW_BASE"/results-*
  RAN=() # the phases this invocation ran: only they make the results (PHASE=serial keeps parallel/)
  both() { echo "($SLOW_FOCUS).*\[$1\]|\[$1\].*($SLOW_FOCUS)"; }
  phase() { # NAME FOCUS SKIP PROCS
    local n; n=$(selected "$2" "$3")
    log "phase $1: ${n:-?} specs, $4 procs"
    rm -rf "${SLOW_BASE:?}/$1"
    [ "${n:-0}" -gt 0 ] || return 0
    RAN+=("$1")
    FOCUS=$2 SKIP=$3 PROCS=$4 REPORT_DIR=$SLOW_BASE/$1 harness || exit 1
    [ -f "$SLOW_BASE/$1/results-$KIND.txt" ] || { echo "conformance: no results of phase $1; see $SLOW_BASE/$1/e2e.log" >&2; exit 1; }
  }
  # the [Slow] specs that are not [Serial] side by side, then the [Serial] ones alone
  # PHASE=parallel or PHASE=serial runs one of them (compared as a part, as with FOCUS)
  case ${PHASE:-both} in parallel|both) phase parallel "$(both Slow)" "$SLOW_SKIP|\[Serial\]" "${PROCS:-3}" ;; serial) ;; *) echo "conformance: PHASE is parallel or serial" >&2; exit 2 ;; esac
  case ${PHASE:-both} in serial|both) phase serial "$(both Serial)" "$SLOW_SKIP" 1 ;; esac
  [ -z "${PHASE:-}" ] || FOCUSED=--focused
  # one results file (and its failures) of both phases, for compare.ts
  python3 - "$SLOW_BASE" "$KIND" "${RAN[@]}" <<'EOP'
import json, os, sys
base, kind, ran = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, fails = [], {}
for ph in ran:
    f = os.path.join(base, ph, "results-%s.txt" % kind)
    if os.path.exists(f):
        rows += [l for l in open(f).read().splitlines() if l.strip()]
        fails.update(json.load(open(os.path.join(base, ph, "results-%s-failures.json" % kind))))
rows.sort(key=lambda l: l.split(" ", 1)[1])
open(os.path.join(base, "results-%s.txt" % kind), "w").write("".join(l + "\n" for l in rows))
json.dump(fails, open(os.path.join(base, "results-%s-failures.json" % kind), "w"), indent=1)
EOP
else
  harness || exit 1
fi
[ -f "$RESULTS" ] || { echo "conformance: no results ($RESULTS); see $REPORT_DIR/e2e.log" >&2; exit 1; }
log "done in $(( $(date +%s) - t0 )) s; e2e log(s) and kubelet log(s) under $REPORT_DIR"
if [ "$KIND" = upstream ]; then
  awk '{n[$1]++} END {printf "upstream'"'"'s kubelet: %d passed, %d failed, %d skipped of %d\n", n["PASS"], n["FAIL"], n["SKIP"], NR}' "$RESULTS"
  echo "results: $RESULTS (the reference when the run was the whole selection)"
  exit 0
fi
node --import tsx tools/conformance/compare.ts "$REFERENCE" "$RESULTS" $FOCUSED
