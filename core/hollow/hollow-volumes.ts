// The one model file, not the package index (which loads client-node's whole generated client).
import { V1Volume } from '@kubernetes/client-node/dist/gen/models/V1Volume.js';
import fs from 'node:fs/promises';
import { STAGE } from '../hooks.ts';
import type { KubeletPlugin } from '../plugins/plugin-api.ts';

/**
 * Volumes of a hollow node that no provider serves (csi, persistentVolumeClaim, ephemeral, nfs,
 * the cloud disks...): a hollow node has no CSI drivers and attaches nothing, and a pod must not
 * stay ContainerCreating for want of one. Each such volume becomes an empty directory under the
 * pod's volume dir, set up last (STAGE.OBSERVE: a provider that serves the type comes first).
 * The built-in types (emptyDir, hostPath, configMap, secret, downwardAPI, projected) keep the
 * core's providers: their content still comes from the API (ConfigMaps, Secrets, service
 * account tokens through TokenRequest), written as plain files (no tmpfs: the kubelet runs
 * without host mounts). Teardown is the volume manager's own (the directory is removed).
 */
export function hollowVolumesPlugin(): KubeletPlugin {
  return {
    name: 'hollow-volumes',
    kind: 'storage',
    apply(ctx) {
      for (const type of volumeTypes()) {
        ctx.hooks.mountVolume.for(type).tapPromise({ name: 'hollow-volumes', stage: STAGE.OBSERVE }, async (r) => {
          await fs.mkdir(r.dir, { recursive: true });
          return { path: r.dir };
        });
      }
    },
  };
}

/** Every volume source of the v1 API as client-node knows it (`csi`, `persistentVolumeClaim`, ...). */
function volumeTypes(): string[] {
  return V1Volume.getAttributeTypeMap().map((a) => a.name).filter((n) => n !== 'name');
}
