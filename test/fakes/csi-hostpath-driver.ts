/**
 * A small hostpath-style CSI driver for tests, written for kubelet-ts: the CSI Identity and
 * Node services on a unix socket and a node-driver-registrar-style registration socket,
 * speaking the real gRPC protocol (the protos of plugins/csi-grpc). Volumes are directories
 * under `dataDir`, bind-mounted into the staging and target paths. It counts calls, keeps
 * the requests, and fails methods on demand (fault injection), as a test double should.
 */
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadCsiProtos } from '../../plugins/csi-grpc/protos.ts';
import { bindMount, isMountPoint, unmount } from '../../core/volumes/mount-utils.ts';

type Handler = (req: any) => Promise<object>;

export interface FakeDriverOptions {
  /** The driver's name (GetPluginInfo, registration). */
  name: string;
  /** Where the CSI socket, the backing dirs and (unless registryDir is elsewhere) nothing else go. */
  dir: string;
  /** The kubelet's plugins_registry dir: the registration socket `<name>-reg.sock` is made there. */
  registryDir: string;
  /** Advertise STAGE_UNSTAGE_VOLUME. */
  stage?: boolean;
  /** What GetInfo answers as supported_versions. */
  versions?: string[];
  /** What GetInfo answers as the plugin type. */
  type?: string;
}

export class FakeCsiDriver {
  readonly csiSocket: string;
  readonly regSocket: string;
  readonly dataDir: string;
  /** Calls by method. */
  readonly calls = new Map<string, number>();
  /** Every request, in order: [method, request]. */
  readonly requests: Array<[string, any]> = [];
  /** Statuses the kubelet sent with NotifyRegistrationStatus. */
  readonly registrationStatuses: Array<{ pluginRegistered: boolean; error: string }> = [];
  /** Fail the next `times` calls of a method with this gRPC code and message. */
  readonly failures = new Map<string, { code: grpc.status; message: string; times: number }>();
  /** Volumes created by an ephemeral publish (deleted by their unpublish). */
  private readonly ephemeral = new Set<string>();
  private csiServer: grpc.Server | undefined;
  private regServer: grpc.Server | undefined;

  constructor(readonly options: FakeDriverOptions) {
    this.csiSocket = path.join(options.dir, 'csi.sock');
    this.regSocket = path.join(options.registryDir, `${options.name}-reg.sock`);
    this.dataDir = path.join(options.dir, 'volumes');
  }

  count(method: string): number {
    return this.calls.get(method) ?? 0;
  }

  failNext(method: string, times: number, code: grpc.status = grpc.status.INTERNAL, message = `injected ${method} failure`): void {
    this.failures.set(method, { code, message, times });
  }

  /** Starts the CSI service, then (unless told otherwise) the registration socket. */
  async start(opts: { register?: boolean } = {}): Promise<void> {
    await fs.mkdir(this.dataDir, { recursive: true });
    const { Identity, Node } = loadCsiProtos();
    this.csiServer = new grpc.Server();
    this.csiServer.addService(Identity.service, this.wrap({
      GetPluginInfo: async () => ({ name: this.options.name, vendorVersion: '0.1.0' }),
      GetPluginCapabilities: async () => ({ capabilities: [] }),
      Probe: async () => ({ ready: { value: true } }),
    }));
    this.csiServer.addService(Node.service, this.wrap({
      NodeGetInfo: async () => ({ nodeId: 'fake-node-1', maxVolumesPerNode: '0' }),
      NodeGetCapabilities: async () => ({ capabilities: this.options.stage ? [{ rpc: { type: 'STAGE_UNSTAGE_VOLUME' } }] : [] }),
      NodeStageVolume: (r) => this.stage(r),
      NodeUnstageVolume: (r) => this.unstage(r),
      NodePublishVolume: (r) => this.publish(r),
      NodeUnpublishVolume: (r) => this.unpublish(r),
    }));
    await bind(this.csiServer, this.csiSocket);
    if (opts.register !== false) await this.startRegistration();
  }

  /** Serves the registration socket (as node-driver-registrar does once its driver is up). */
  async startRegistration(): Promise<void> {
    const { Registration } = loadCsiProtos();
    this.regServer = new grpc.Server();
    this.regServer.addService(Registration.service, this.wrap({
      GetInfo: async () => ({ type: this.options.type ?? 'CSIPlugin', name: this.options.name, endpoint: this.csiSocket, supportedVersions: this.options.versions ?? ['1.0.0'] }),
      NotifyRegistrationStatus: async (r) => {
        this.registrationStatuses.push({ pluginRegistered: r.pluginRegistered, error: r.error });
        return {};
      },
    }));
    await fs.mkdir(this.options.registryDir, { recursive: true });
    await bind(this.regServer, this.regSocket);
  }

  /** Removes the registration socket: the kubelet should de-register the driver. */
  async stopRegistration(): Promise<void> {
    await shutdown(this.regServer);
    this.regServer = undefined;
    await fs.rm(this.regSocket, { force: true });
  }

  async stop(): Promise<void> {
    await this.stopRegistration();
    await shutdown(this.csiServer);
    this.csiServer = undefined;
    await fs.rm(this.csiSocket, { force: true });
  }

  private wrap(handlers: Record<string, Handler>): grpc.UntypedServiceImplementation {
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [method, fn] of Object.entries(handlers)) {
      impl[method] = (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.calls.set(method, this.count(method) + 1);
        this.requests.push([method, call.request]);
        const f = this.failures.get(method);
        if (f && f.times > 0) {
          f.times--;
          return cb({ code: f.code, details: f.message } as grpc.ServiceError);
        }
        fn(call.request).then((res) => cb(null, res), (err: Error & { code?: grpc.status }) => cb({ code: err.code ?? grpc.status.INTERNAL, details: err.message } as grpc.ServiceError));
      };
    }
    return impl;
  }

  private volumeDir(id: string): string {
    if (!id || id.includes('/')) throw Object.assign(new Error('invalid volume id'), { code: grpc.status.INVALID_ARGUMENT });
    return path.join(this.dataDir, id);
  }

  private async stage(r: any): Promise<object> {
    const src = this.volumeDir(r.volumeId);
    if (!r.stagingTargetPath) throw Object.assign(new Error('staging_target_path missing'), { code: grpc.status.INVALID_ARGUMENT });
    await fs.mkdir(src, { recursive: true });
    if (!(await isMountPoint(r.stagingTargetPath))) await bindMount(src, r.stagingTargetPath);
    return {};
  }

  private async unstage(r: any): Promise<object> {
    await unmount(r.stagingTargetPath);
    return {};
  }

  private async publish(r: any): Promise<object> {
    if (!r.targetPath) throw Object.assign(new Error('target_path missing'), { code: grpc.status.INVALID_ARGUMENT });
    let src = this.volumeDir(r.volumeId);
    // As the upstream hostpath driver: an inline ephemeral volume is created here, never staged.
    const ephemeral = r.volumeContext?.['csi.storage.k8s.io/ephemeral'] === 'true';
    if (ephemeral) this.ephemeral.add(r.volumeId);
    if (this.options.stage && !ephemeral) {
      if (!r.stagingTargetPath || !(await isMountPoint(r.stagingTargetPath))) throw Object.assign(new Error('volume is not staged'), { code: grpc.status.FAILED_PRECONDITION });
      src = r.stagingTargetPath;
    } else {
      await fs.mkdir(src, { recursive: true });
    }
    // Idempotent: a target that is already mounted stays as it is (never mounted twice).
    if (await isMountPoint(r.targetPath)) return {};
    await fs.mkdir(r.targetPath, { recursive: true });
    await bindMount(src, r.targetPath, r.readonly === true);
    return {};
  }

  private async unpublish(r: any): Promise<object> {
    await unmount(r.targetPath);
    await fs.rmdir(r.targetPath).catch(() => {});
    // An ephemeral volume lives as long as its publication: its data goes too.
    if (!this.options.stage || this.ephemeral.delete(r.volumeId)) await fs.rm(this.volumeDir(r.volumeId), { recursive: true, force: true });
    return {};
  }
}

function bind(server: grpc.Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    fs.rm(socket, { force: true }).then(() =>
      server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  });
}

function shutdown(server: grpc.Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.tryShutdown(() => resolve());
    setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 1000).unref();
  });
}
