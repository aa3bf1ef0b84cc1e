import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import { abortError, signalOf, type CallOptions } from './cancellation.ts';

/**
 * A unary call on a grpc-js client with a deadline `timeoutMs` from now, as a promise: the
 * answer, or the call's ServiceError (rpcErrorText prints it). A method the client does not
 * have rejects with `no method <name>`. `options.signal` cancels the call (refused at once
 * when already aborted); it then rejects with the signal's reason.
 */
export function unary<T>(client: Grpc.Client, method: string, request: object, timeoutMs: number, options?: CallOptions): Promise<T> {
  const signal = signalOf(options);
  if (signal.aborted) return Promise.reject(abortError(signal, method));
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Function>)[method];
    if (typeof fn !== 'function') return reject(new Error(`no method ${method}`));
    const cancelled = () => call.cancel();
    const call: Grpc.ClientUnaryCall = fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err: Grpc.ServiceError | null, res: T) => {
      signal.removeEventListener('abort', cancelled);
      if (err) reject(signal.aborted ? abortError(signal, method) : err);
      else resolve(res);
    });
    signal.addEventListener('abort', cancelled, { once: true });
  });
}

/** grpc-js's status names in CamelCase by code (DEADLINE_EXCEEDED → DeadlineExceeded); built at the first error, so importing the SDK loads no gRPC code. */
let codeNames: Record<number, string> | undefined;

function codeName(code: number): string | number {
  codeNames ??= Object.fromEntries(
    Object.entries((createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc).status)
      .filter(([, v]) => typeof v === 'number')
      .map(([k, v]) => [v as number, k.split('_').map((w) => w[0] + w.slice(1).toLowerCase()).join('')]),
  );
  return codeNames[code] ?? code;
}

/**
 * `rpc error: code = Internal desc = ...`, as Go's gRPC prints a status (and so upstream's events
 * and messages quote a driver's or device plugin's error); any other thrown value as its message.
 */
export function rpcErrorText(err: unknown): string {
  const e = err as Partial<Grpc.ServiceError>;
  if (typeof e?.code === 'number') return `rpc error: code = ${codeName(e.code)} desc = ${e.details ?? e.message}`;
  return err instanceof Error ? err.message : String(err);
}
