import { errorMessage, secondsToTimerMs } from 'kubelet-ts';
import net from 'node:net';
import type { ProbeHandlerSpec } from '../probe-spec.ts';
import { resolveProbePort } from './port.ts';
import { joinHostPort, type ProbeRunResult, type ProbeTarget } from './types.ts';

type TcpSocketSpec = Extract<ProbeHandlerSpec, { kind: 'tcpSocket' }>;

/**
 * A TCP probe (upstream pkg/probe/tcp): success when a connection to host:port opens within the
 * timeout (it is closed at once, output empty); otherwise a failure with Go's dial error words.
 * The host defaults to the pod IP; the port is a number or the name of a container port.
 */
export async function tcpProbe(spec: TcpSocketSpec, target: ProbeTarget): Promise<ProbeRunResult> {
  let host: string;
  let port: number;
  try {
    host = spec.host || target.podIP;
    if (!host) throw new Error('the pod has no IP yet');
    port = resolveProbePort(spec.port, target.container);
  } catch (err) {
    return { error: errorMessage(err) };
  }
  const addr = joinHostPort(host, port);
  return new Promise<ProbeRunResult>((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` });
    }, secondsToTimerMs(target.timeoutSeconds));
    timer.unref();
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ result: 'success', output: '' });
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      const why = err.code === 'ECONNREFUSED' ? 'connect: connection refused'
        : err.code === 'EHOSTUNREACH' ? 'connect: no route to host'
          : err.code === 'ENETUNREACH' ? 'connect: network is unreachable'
            : err.message;
      resolve({ result: 'failure', output: `dial tcp ${addr}: ${why}` });
    });
  });
}
