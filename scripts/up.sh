#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine, as root:
#   sudo scripts/up.sh
# Installs the node's Debian packages if missing (containerd, runc, CNI plugins, a registry,
# skopeo, static busybox, iptables, iproute2), installs Node dependencies if node_modules is
# missing, builds dist/ (`npm run build`), then runs `node bin/kubelet-ts-up.mjs` (same as
# `npm run up`) with the flags given here (`scripts/up.sh --help`: --node-dir, --manifests, ports).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "scripts/up.sh: run as root (containerd, mounts and network namespaces need it): sudo scripts/up.sh" >&2
  exit 1
fi

scripts/install-node-packages.sh

if ! command -v node >/dev/null 2>&1; then
  echo "scripts/up.sh: Node.js >= 20 is required (https://nodejs.org or the NodeSource Debian packages)" >&2
  exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "scripts/up.sh: Node.js >= 20 is required, found $(node --version)" >&2
  exit 1
fi

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
