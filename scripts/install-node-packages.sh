#!/usr/bin/env bash
# Installs the Debian packages a kubelet-ts node and its tests need, when missing:
# containerd, runc, the CNI plugins, a registry, skopeo, static busybox, iptables, iproute2.
#   --test  also what the API tests' control plane (../shared/k8s/control-plane.sh) needs:
#           etcd-server, curl, openssl (and util-linux, gzip, which Debian has anyway), and
#           apache2-utils (htpasswd: the password-protected registry of the credential provider tests)
# Used by scripts/up.sh (without --test: a node needs no control plane) and .ci/run (with it).
# Runs apt-get update once, only when something is missing.
set -euo pipefail
PACKAGES=(containerd runc containernetworking-plugins docker-registry skopeo busybox-static iptables iproute2)
for arg in "$@"; do
  case "$arg" in
    --test) PACKAGES+=(etcd-server curl openssl util-linux gzip apache2-utils) ;;
    *) echo "install-node-packages.sh: unknown argument $arg (allowed: --test)" >&2; exit 2 ;;
  esac
done
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "all of ${PACKAGES[*]} already installed"
  exit 0
fi
echo "installing ${missing[*]}"
# containerd, docker-registry and etcd-server start system-wide services on install; kubelet-ts
# and the control plane run their own private instances, so keep the init scripts from starting theirs.
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
