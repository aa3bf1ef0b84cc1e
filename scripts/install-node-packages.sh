#!/usr/bin/env bash
# Installs the Debian packages a kubelet-ts node and its tests need, when missing:
# containerd, runc, the CNI plugins, a registry, skopeo, static busybox, iptables, iproute2.
#   --test  also what the API tests' control plane (../shared/k8s/control-plane.sh) needs:
#           etcd-server, curl, openssl (and util-linux, gzip, which Debian has anyway),
#           apache2-utils (htpasswd: the password-protected registry of the credential provider tests),
#           and gcc with libc6-dev (the extended conformance harness builds its static nsenter)
#   --vm    also what the node VM suite (npm run test:vm, tools/node-vm) needs on the host:
#           qemu-system-x86 and qemu-utils 10 and debootstrap from bookworm-backports (bookworm's
#           qemu 7.2 with multi-threaded TCG panicked the guest in 1 boot of 13; its debootstrap
#           does not know trixie's layout as well), e2fsprogs (mkfs.ext4 -d), openssh-client
# Used by scripts/up.sh (without --test: a node needs no control plane) and .ci/run (with it).
# Runs apt-get update once, only when something is missing.
set -euo pipefail
PACKAGES=(containerd runc containernetworking-plugins docker-registry skopeo busybox-static iptables iproute2)
# Installed with -t bookworm-backports; each with the least version it must have.
BACKPORTS=()
declare -A MIN_VERSION=()
for arg in "$@"; do
  case "$arg" in
    --test) PACKAGES+=(etcd-server curl openssl util-linux gzip apache2-utils gcc libc6-dev) ;;
    --vm)
      PACKAGES+=(e2fsprogs openssh-client)
      BACKPORTS+=(qemu-system-x86 qemu-utils debootstrap)
      MIN_VERSION=([qemu-system-x86]='1:10' [qemu-utils]='1:10' [debootstrap]='1.0.141~') ;;
    *) echo "install-node-packages.sh: unknown argument $arg (allowed: --test, --vm)" >&2; exit 2 ;;
  esac
done
installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || return 1
  local min="${MIN_VERSION[$1]:-}"
  [ -z "$min" ] || dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$1")" ge "$min"
}
missing=()
for pkg in "${PACKAGES[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done
missing_backports=()
for pkg in "${BACKPORTS[@]}"; do
  installed "$pkg" || missing_backports+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ] && [ "${#missing_backports[@]}" -eq 0 ]; then
  echo "all of ${PACKAGES[*]} ${BACKPORTS[*]} already installed"
  exit 0
fi
if [ "${#missing_backports[@]}" -gt 0 ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "adding the bookworm-backports source"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > /etc/apt/sources.list.d/bookworm-backports.sources
fi
echo "installing ${missing[*]} ${missing_backports[*]}"
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
if [ "${#missing[@]}" -gt 0 ]; then apt-get install -y --no-install-recommends "${missing[@]}"; fi
if [ "${#missing_backports[@]}" -gt 0 ]; then apt-get install -y --no-install-recommends -t bookworm-backports "${missing_backports[@]}"; fi
