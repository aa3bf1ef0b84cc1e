#!/usr/bin/env bash
# Installs the Debian packages a kubelet-ts node and its tests need, when missing:
# containerd, runc, the CNI plugins, a registry, skopeo, static busybox, iptables, iproute2.
# Used by scripts/up.sh (the README's first command) and .ci/run. Runs apt-get update once,
# only when something is missing.
set -euo pipefail
PACKAGES=(containerd runc containernetworking-plugins docker-registry skopeo busybox-static iptables iproute2)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "all of ${PACKAGES[*]} already installed"
  exit 0
fi
echo "installing ${missing[*]}"
# containerd and docker-registry start system-wide services on install; kubelet-ts runs its
# own private instances, so keep the init scripts from starting theirs.
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
