import { loadGrpcClientConstructors, secondsToTimerMs } from 'kubelet-ts';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import type { ProbeHandlerSpec } from '../probe-spec.ts';
import { PROBE_USER_AGENT, joinHostPort, type ProbeRunResult, type ProbeTarget } from './types.ts';

type GrpcSpec = Extract<ProbeHandlerSpec, { kind: 'grpc' }>;

/** The standard health protocol, shipped with this plugin. */
export const HEALTH_PROTO_PATH: string = fileURLToPath(new URL('../proto/health.proto', import.meta.url));

let healthClient: grpc.ServiceClientConstructor | undefined;

/** grpc.health.v1.Health (client constructor; `.service` is the definition servers add). */
export function loadHealthService(): grpc.ServiceClientConstructor {
  if (healthClient) return healthClient;
  healthClient = loadGrpcClientConstructors(HEALTH_PROTO_PATH, ['grpc.health.v1.Health'], { keepCase: false, enums: String, defaults: true }).Health;
  return healthClient;
}

const seconds = (s: number) => `${s}s`;

/**
 * A gRPC probe (upstream pkg/probe/grpc): connects to the pod IP and port in plain text within
 * the timeout and calls grpc.health.v1.Health/Check with the probe's service ('' = the whole
 * server). SERVING is success (`service healthy`); every other outcome is a failure with
 * upstream's message: not connected in time, the server does not implement the protocol, the
 * call did not complete in time, another RPC error, or a status other than SERVING.
 */
export async function grpcProbe(spec: GrpcSpec, target: ProbeTarget): Promise<ProbeRunResult> {
  if (!target.podIP) return { error: 'the pod has no IP yet' };
  const addr = joinHostPort(target.podIP, spec.port);
  const Health = loadHealthService();
  const client = new Health(addr, grpc.credentials.createInsecure(), {
    'grpc.primary_user_agent': PROBE_USER_AGENT,
    // One connection per probe, like upstream's dial-per-probe.
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as grpc.Client & { Check: (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, r: { status: string }) => void) => void };
  const deadline = Date.now() + secondsToTimerMs(target.timeoutSeconds);
  try {
    const connectErr = await new Promise<Error | undefined>((resolve) => client.waitForReady(deadline, (err) => resolve(err ?? undefined)));
    if (connectErr) return { result: 'failure', output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${seconds(target.timeoutSeconds)}: context deadline exceeded` };
    const resp = await new Promise<{ status: string } | grpc.ServiceError>((resolve) => {
      client.Check({ service: spec.service }, new grpc.Metadata(), { deadline }, (err, r) => resolve(err ?? r));
    });
    if ('code' in resp) {
      if (resp.code === grpc.status.UNIMPLEMENTED) return { result: 'failure', output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${resp.details}` };
      if (resp.code === grpc.status.DEADLINE_EXCEEDED) return { result: 'failure', output: `timeout: health rpc did not complete within ${seconds(target.timeoutSeconds)}` };
      return { result: 'failure', output: `error: health rpc probe failed: rpc error: code = ${grpc.status[resp.code]} desc = ${resp.details}` };
    }
    if (resp.status !== 'SERVING') return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(resp.status)})` };
    return { result: 'success', output: 'service healthy' };
  } finally {
    client.close();
  }
}
