#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 machine, as root:
#   sudo scripts/up.sh
# Installs the node's Debian packages if missing (containerd, runc, CNI plugins, a registry,
# skopeo, static busybox, iptables, iproute2), installs Node dependencies if node_modules is
# missing, then runs `node bin/kubelet-ts-up.mjs` (same as `npm run up`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "scripts/up.sh: run as root (containerd, mounts and network namespaces need it): sudo scripts/up.sh" >&2
  exit 1
fi

PACKAGES=(containerd runc containernetworking-plugins docker-registry skopeo busybox-static iptables iproute2)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "scripts/up.sh: installing ${missing[*]}"
  # Packages like containerd and docker-registry start a system-wide service on install;
  # we run our own private instances, so keep the init scripts from starting theirs.
  policy_rc_d=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy_rc_d=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' > "$policy_rc_d"
    chmod +x "$policy_rc_d"
    trap 'rm -f "$policy_rc_d"' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
  if [ -n "$policy_rc_d" ]; then rm -f "$policy_rc_d"; trap - EXIT; fi
fi

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

exec node bin/kubelet-ts-up.mjs "$@"
