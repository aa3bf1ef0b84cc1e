#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine, as root:
#   sudo scripts/up.sh
# Installs the node's Debian packages if missing (containerd, runc, CNI plugins, a registry,
# skopeo, static busybox, iptables, iproute2) and Node 24 LTS (scripts/install-node.sh), installs Node dependencies if node_modules is
# missing, builds dist/ (`npm run build`), then runs `node bin/kubelet-ts-up.mjs` (same as
# `npm run up`) with the flags given here (`scripts/up.sh --help`: --node-dir, --manifests, ports).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "scripts/up.sh: run as root (containerd, mounts and network namespaces need it): sudo scripts/up.sh" >&2
  exit 1
fi

scripts/install-node-packages.sh

# Node 24 LTS, the runtime kubelet-ts is supported on (kept when the machine's node is 24.x).
scripts/install-node.sh
hash -r

if [ ! -d node_modules ]; then
  echo "scripts/up.sh: npm ci"
  npm ci --no-audit --no-fund
fi

# The node runs the compiled kubelet, as a node should (bin/kubelet-ts.mjs falls back to the
# sources when they changed since dist/ was built, e.g. after an edit without a rebuild).
if ! node scripts/build.mjs; then
  echo "scripts/up.sh: the build failed (above); the kubelet runs from the TypeScript sources" >&2
fi

exec node bin/kubelet-ts-up.mjs "$@"
