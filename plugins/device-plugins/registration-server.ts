import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, isExtendedResourceName, Limiter, serveHttp2OnUnixSocket, type DeviceManagerView, type Logger, type UnixHttp2Listener } from 'kubelet-ts';
import { PluginClient, type PluginClientLimits } from './plugin-client.ts';
import { SUPPORTED_VERSIONS, handlerError, loadDevicePluginProtos } from './protos.ts';

/** The kubelet's registration socket, in the device plugin dir (upstream's KubeletSocket name). */
export const KUBELET_SOCKET = 'kubelet.sock';
/** The largest RegisterRequest taken (a few names). */
const MAX_REGISTER_BYTES = 64 * 1024;
/** Registrations handled at once (each may wait for its plugin's socket); more are refused. */
const MAX_CONCURRENT_REGISTRATIONS = 8;

export interface RegistrationServerOptions extends PluginClientLimits {
  /** The device plugin dir: the kubelet's socket and the plugins' sockets. */
  dir: string;
  /** The most resources served through this server. */
  maxResources: number;
  devices: () => DeviceManagerView;
  logger: Logger;
}

interface RegisterRequest { version?: string; endpoint?: string; resourceName?: string; options?: { preStartRequired?: boolean; getPreferredAllocationAvailable?: boolean } | null }

/**
 * The device plugin Registration service, as upstream's kubelet serves it: on start the dir's
 * stale sockets are removed (plugins watch for that, or for the kubelet's socket appearing,
 * and register again), then `<dir>/kubelet.sock` is served. A Register call is checked
 * (version, resource name, endpoint), the plugin's socket dialled and its options read before
 * it is answered; then its ListAndWatch stream feeds the device manager. A newer registration
 * of a resource replaces the older one.
 */
export class RegistrationServer {
  private server: grpc.Server | undefined;
  private listener: UnixHttp2Listener | undefined;
  private readonly clients = new Map<string, PluginClient>();
  private readonly pending = new Limiter(MAX_CONCURRENT_REGISTRATIONS);
  private stopped = false;

  constructor(private readonly opts: RegistrationServerOptions) {}

  get socketPath(): string {
    return path.join(this.opts.dir, KUBELET_SOCKET);
  }

  async start(): Promise<void> {
    await fs.mkdir(this.opts.dir, { recursive: true, mode: 0o750 });
    await this.removeStaleSockets();
    const { Registration } = loadDevicePluginProtos();
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REGISTER_BYTES, 'grpc.max_send_message_length': MAX_REGISTER_BYTES });
    server.addService(Registration.service, {
      Register: (call: grpc.ServerUnaryCall<RegisterRequest, object>, callback: grpc.sendUnaryData<object>) => {
        if (this.pending.load.active + this.pending.load.waiting >= MAX_CONCURRENT_REGISTRATIONS) {
          callback(handlerError(`${MAX_CONCURRENT_REGISTRATIONS} registrations are being handled; try again`, grpc.status.RESOURCE_EXHAUSTED));
          return;
        }
        this.pending.run(() => this.register(call.request)).then(
          () => callback(null, {}),
          (err: unknown) => callback(handlerError(errorMessage(err))),
        );
      },
    });
    // Not server.bindAsync: Go clients name the socket path as authority, which Node's HTTP/2
    // refuses; the listener re-encodes it (serveHttp2OnUnixSocket) and injects the connection.
    const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.server = server;
    this.listener = await serveHttp2OnUnixSocket(this.socketPath, (c) => injector.injectConnection(c), { maxConnections: 64 });
    this.opts.logger.info({ socket: this.socketPath }, 'serving the device plugin registration service');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.listener?.close();
    this.listener = undefined;
    this.server?.forceShutdown();
    this.server = undefined;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
    await fs.rm(this.socketPath, { force: true }).catch(() => {});
  }

  /** Sockets left in the dir by an earlier kubelet and its plugins; files and dirs stay (upstream CleanupPluginDirectory). */
  private async removeStaleSockets(): Promise<void> {
    for (const name of await fs.readdir(this.opts.dir)) {
      const p = path.join(this.opts.dir, name);
      const st = await fs.lstat(p).catch(() => undefined);
      if (!st?.isSocket()) continue;
      await fs.rm(p, { force: true }).catch((err) => this.opts.logger.warn({ path: p, err: errorMessage(err) }, 'cannot remove a stale device plugin socket'));
    }
  }

  /** One Register call (upstream server.Register); throws the error the plugin gets. */
  private async register(r: RegisterRequest): Promise<void> {
    const resource = r.resourceName ?? '';
    const version = r.version ?? '';
    const endpoint = r.endpoint ?? '';
    const log = this.opts.logger.child({ resource: resource.slice(0, 300) });
    log.info({ version: version.slice(0, 64), endpoint: endpoint.slice(0, 300) }, 'got registration request from device plugin');
    if (this.stopped) throw new Error('the kubelet is stopping');
    if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) throw this.refused(log, `requested API version ${JSON.stringify(version)} is not supported by kubelet. Supported version is ${JSON.stringify(SUPPORTED_VERSIONS)}`);
    if (!isExtendedResourceName(resource)) throw this.refused(log, `the ResourceName ${JSON.stringify(resource)} is invalid`);
    // Upstream joins the endpoint to the dir as given; a path out of the dir is refused here.
    if (!endpoint || endpoint.length > 255 || endpoint === '.' || endpoint === '..' || endpoint.includes('/') || endpoint.includes('\0')) {
      throw this.refused(log, `the endpoint ${JSON.stringify(endpoint.slice(0, 300))} is not a file name in the device plugin dir ${this.opts.dir}`);
    }
    if (endpoint === KUBELET_SOCKET) throw this.refused(log, `the endpoint ${JSON.stringify(endpoint)} is the kubelet's own socket`);
    if (!this.clients.has(resource) && this.clients.size >= this.opts.maxResources) throw this.refused(log, `${this.opts.maxResources} device plugin resources are registered already (maxResources)`);
    const client = new PluginClient(resource, path.join(this.opts.dir, endpoint), this.opts, log);
    try {
      await client.connect();
    } catch (err) {
      client.close();
      throw this.refused(log, errorMessage(err));
    }
    if (this.stopped) {
      client.close();
      throw new Error('the kubelet is stopping');
    }
    const registration = this.opts.devices().register(client.provider());
    const previous = this.clients.get(resource);
    this.clients.set(resource, client);
    previous?.close();
    client.watch(registration);
    log.info({ socket: client.socket, options: client.options }, 'device plugin registered');
  }

  private refused(log: Logger, message: string): Error {
    log.warn({ err: message }, 'bad registration request from device plugin');
    return new Error(message);
  }
}
