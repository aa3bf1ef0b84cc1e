import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import { unary } from 'kubelet-ts';
import { loadDevicePluginProtos } from '../../plugins/device-plugins/protos.ts';

/**
 * A device plugin speaking the v1beta1 gRPC API, for unit tests of the device-plugins plugin
 * (the proof against a real one is upstream's sample device plugin,
 * test/integration/device-plugins.test.ts). It serves its socket in the device plugin dir,
 * registers with the kubelet's socket there, and, like upstream's stub, registers again when the
 * kubelet's socket is made anew (a kubelet restart). Its answers are fields a test changes to
 * make it hang, lie or go away.
 */
export interface WireDevice { ID: string; health: string; topology?: { nodes: Array<{ ID: string }> } }

export class FakeDevicePlugin {
  devices: WireDevice[];
  options = { preStartRequired: false, getPreferredAllocationAvailable: false };
  /** Answers Allocate; default: a mount of /tmp/<id> per device, one response per container request. */
  allocate: (req: { containerRequests: Array<{ devicesIds: string[] }> }) => Promise<object> | 'hang' = (req) =>
    Promise.resolve({
      containerResponses: req.containerRequests.map((c) => {
        const unknown = c.devicesIds.find((id) => !this.devices.some((d) => d.ID === id));
        if (unknown) throw Object.assign(new Error(`invalid allocation request with non-existing device ${unknown}`), { code: grpc.status.UNKNOWN });
        return { mounts: c.devicesIds.map((id) => ({ containerPath: `/tmp/${id}`, hostPath: `/tmp/${id}` })), envs: { FAKE_DEVICES: c.devicesIds.join(',') } };
      }),
    });
  readonly calls: Array<{ method: string; request: unknown }> = [];
  private server: grpc.Server | undefined;
  private streams = new Set<grpc.ServerWritableStream<object, object>>();
  private watcher: fs.FSWatcher | undefined;
  registrations = 0;

  constructor(
    readonly dir: string,
    readonly resourceName: string,
    readonly endpoint: string,
    ids: string[] = ['Dev-1', 'Dev-2'],
  ) {
    this.devices = ids.map((ID) => ({ ID, health: 'Healthy' }));
  }

  get socket(): string {
    return path.join(this.dir, this.endpoint);
  }

  async start(): Promise<void> {
    await fs.promises.rm(this.socket, { force: true });
    const { DevicePlugin } = loadDevicePluginProtos();
    const server = new grpc.Server();
    const record = (method: string, request: unknown) => this.calls.push({ method, request });
    server.addService(DevicePlugin.service, {
      GetDevicePluginOptions: (call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
        record('GetDevicePluginOptions', call.request);
        cb(null, this.options);
      },
      ListAndWatch: (call: grpc.ServerWritableStream<object, object>) => {
        record('ListAndWatch', call.request);
        this.streams.add(call);
        call.on('cancelled', () => this.streams.delete(call));
        call.write({ devices: this.devices });
      },
      Allocate: (call: grpc.ServerUnaryCall<{ containerRequests: Array<{ devicesIds: string[] }> }, object>, cb: grpc.sendUnaryData<object>) => {
        record('Allocate', call.request);
        let answer;
        try {
          answer = this.allocate(call.request);
        } catch (err) {
          cb(err as grpc.ServiceError);
          return;
        }
        if (answer === 'hang') return;
        answer.then((r) => cb(null, r), (err) => cb(err));
      },
      GetPreferredAllocation: (call: grpc.ServerUnaryCall<{ containerRequests: Array<{ availableDeviceIDs: string[]; mustIncludeDeviceIDs: string[]; allocationSize: number }> }, object>, cb: grpc.sendUnaryData<object>) => {
        record('GetPreferredAllocation', call.request);
        cb(null, { containerResponses: call.request.containerRequests.map((c) => ({ deviceIDs: [...c.mustIncludeDeviceIDs, ...c.availableDeviceIDs.filter((id) => !c.mustIncludeDeviceIDs.includes(id))].slice(0, c.allocationSize) })) });
      },
      PreStartContainer: (call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
        record('PreStartContainer', call.request);
        cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${this.socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    this.server = server;
  }

  /** Registers with the kubelet's socket in the dir; resolves or rejects with the kubelet's answer. */
  async register(opts: { version?: string; resourceName?: string; endpoint?: string } = {}): Promise<void> {
    const { Registration } = loadDevicePluginProtos();
    const client = new Registration(`unix:${path.join(this.dir, 'kubelet.sock')}`, grpc.credentials.createInsecure());
    try {
      await unary(client, 'Register', { version: opts.version ?? 'v1beta1', endpoint: opts.endpoint ?? this.endpoint, resourceName: opts.resourceName ?? this.resourceName, options: this.options }, 10_000);
      this.registrations++;
    } finally {
      client.close();
    }
  }

  /** As upstream's stub: when the kubelet's socket is made anew, restart the server and register again. */
  watchKubeletRestarts(): void {
    this.watcher = fs.watch(this.dir, (event, name) => {
      if (name !== 'kubelet.sock' || event !== 'rename' || !fs.existsSync(path.join(this.dir, 'kubelet.sock'))) return;
      void (async () => {
        // The kubelet removed our socket when it started: serve again, then register.
        await this.stopServer();
        await this.start();
        for (let i = 0; i < 50; i++) {
          try {
            await this.register();
            return;
          } catch {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      })();
    });
  }

  /** Sends a new device list on every open ListAndWatch stream. */
  update(devices: WireDevice[]): void {
    this.devices = devices;
    for (const s of this.streams) s.write({ devices });
  }

  /** Ends the ListAndWatch streams (the plugin going away without stopping its server). */
  endStreams(): void {
    for (const s of this.streams) s.end();
    this.streams.clear();
  }

  private async stopServer(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    this.server?.forceShutdown();
    this.server = undefined;
    await fs.promises.rm(this.socket, { force: true });
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    await this.stopServer();
  }
}
