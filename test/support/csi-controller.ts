import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadGrpcClientConstructors, unary } from '../../core/sdk/index.ts';
import { LOADER_OPTIONS } from '../../plugins/csi-grpc/protos.ts';

const PROTO = fileURLToPath(new URL('./csi-controller.proto', import.meta.url));

/**
 * A CSI driver's Controller service over its socket, for tests that play the
 * external-provisioner and the external-resizer (none ships here): CreateVolume makes a volume the driver knows, whose
 * id becomes a PersistentVolume's volumeHandle; DeleteVolume removes it.
 */
export class CsiController {
  private readonly client: grpc.Client;

  constructor(socket: string) {
    const { Controller } = loadGrpcClientConstructors(PROTO, ['csi.v1.Controller'], LOADER_OPTIONS);
    this.client = new Controller(`unix:${socket}`, grpc.credentials.createInsecure());
  }

  /** A mount (or with `block`, a raw block) volume of `bytes` named `name` (CreateVolume is idempotent by name); its volume id. */
  async createVolume(name: string, bytes: number, opts: { block?: boolean } = {}): Promise<string> {
    const accessType = opts.block ? { block: {} } : { mount: { fsType: '', mountFlags: [] } };
    const r = await unary<{ volume: { volumeId: string } }>(this.client, 'CreateVolume', {
      name,
      capacityRange: { requiredBytes: String(bytes) },
      volumeCapabilities: [{ ...accessType, accessMode: { mode: 'SINGLE_NODE_WRITER' } }],
    }, 10_000);
    return r.volume.volumeId;
  }

  async deleteVolume(volumeId: string): Promise<void> {
    await unary(this.client, 'DeleteVolume', { volumeId }, 10_000);
  }

  /** ControllerExpandVolume to `bytes`, as the external-resizer calls it: whether the driver needs the node to finish. */
  async expandVolume(volumeId: string, bytes: number): Promise<{ capacityBytes: string; nodeExpansionRequired: boolean }> {
    return unary(this.client, 'ControllerExpandVolume', { volumeId, capacityRange: { requiredBytes: String(bytes) } }, 10_000);
  }

  close(): void {
    this.client.close();
  }
}
