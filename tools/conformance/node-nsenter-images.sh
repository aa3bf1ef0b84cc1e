#!/usr/bin/env bash
# Publishes the e2e test images once more under $REG/kubelet-ts-e2e, with one change: agnhost's
# nsenter is tools/conformance/nsenter.c (static) instead of busybox's applet. Prints the
# repository to pass as run.sh's E2E_REPO. Run after ../shared/conformance/images.sh, which builds
# the agnhost rootfs ($CONF_DIR/images/agnhost) and starts the registry.
#   bash tools/conformance/node-nsenter-images.sh SHARED_CONFORMANCE_DIR
# Why (nsenter.c says it in full): upstream's storage tests run `nsenter --mount=/rootfs/proc/1/ns/mnt
# -- sh -c '...'` in agnhost and expect the node's sh, losetup and mkfs; busybox-static's nsenter
# keeps running its own applets, whose losetup cannot list devices. The other images are copied
# unchanged (skopeo, registry to registry), so the suite finds all of them under one repository.
set -euo pipefail
SHARED=$(cd "${1:?SHARED_CONFORMANCE_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
REG=${REG:-127.0.0.1:27500}
FROM=$REG/e2e-test-images
TO=$REG/kubelet-ts-e2e
W=${CONF_DIR:-/tmp/conf}/images
[ -d "$W/agnhost" ] || { echo "node-nsenter-images: no $W/agnhost (run images.sh first)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "node-nsenter-images: gcc not found (apt-get install gcc libc6-dev)" >&2; exit 1; }

rm -rf "$W/agnhost-nsenter"; cp -a "$W/agnhost" "$W/agnhost-nsenter"
rm -f "$W/agnhost-nsenter/bin/nsenter"
gcc -static -O2 -Wall -o "$W/agnhost-nsenter/bin/nsenter" "$HERE/nsenter.c"
config=$(skopeo inspect --tls-verify=false --config "docker://$FROM/agnhost:2.45" \
  | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["config"]))')
python3 "$SHARED/mkimage.py" "$W/agnhost-nsenter" "$W/kubelet-ts-e2e_agnhost_2.45.tar" "$TO/agnhost:2.45" "$config"
skopeo copy -q --dest-tls-verify=false "docker-archive:$W/kubelet-ts-e2e_agnhost_2.45.tar" "docker://$TO/agnhost:2.45"

for repo in $(curl -sf "http://$REG/v2/_catalog?n=1000" | python3 -c 'import json,sys; print("\n".join(r for r in json.load(sys.stdin)["repositories"] if r.startswith("e2e-test-images/")))'); do
  name=${repo#e2e-test-images/}
  [ "$name" = agnhost ] && continue
  for tag in $(curl -sf "http://$REG/v2/$repo/tags/list" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["tags"] or []))'); do
    skopeo copy -q --src-tls-verify=false --dest-tls-verify=false "docker://$FROM/$name:$tag" "docker://$TO/$name:$tag"
  done
done
echo "$TO"
