import { errorMessage, type ContainerRuntime, type Limiter } from 'kubelet-ts';
import type { ProbeHandlerSpec } from '../probe-spec.ts';
import { execProbe } from './exec.ts';
import { grpcProbe } from './grpc.ts';
import { httpProbe } from './http.ts';
import { tcpProbe } from './tcp.ts';
import type { ProbeRunResult, ProbeTarget } from './types.ts';

export type { ProbeTarget } from './types.ts';

/** Runs one probe handler once; a handler that throws is an error result, never a crash. */
export async function runHandler(handler: ProbeHandlerSpec, target: ProbeTarget, deps: { runtime: () => ContainerRuntime; execLimiter?: Limiter }): Promise<ProbeRunResult> {
  try {
    switch (handler.kind) {
      case 'exec':
        return await execProbe(deps.runtime(), target, handler.command, deps.execLimiter);
      case 'httpGet':
        return await httpProbe(handler, target);
      case 'tcpSocket':
        return await tcpProbe(handler, target);
      case 'grpc':
        return await grpcProbe(handler, target);
    }
  } catch (err) {
    return { error: errorMessage(err) };
  }
}
