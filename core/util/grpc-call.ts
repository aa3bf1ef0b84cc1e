import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';

/**
 * A unary call on a grpc-js client with a deadline `timeoutMs` from now, as a promise: the
 * answer, or the call's ServiceError (rpcErrorText prints it). A method the client does not
 * have rejects with `no method <name>`.
 */
export function unary<T>(client: Grpc.Client, method: string, request: object, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Function>)[method];
    if (typeof fn !== 'function') return reject(new Error(`no method ${method}`));
    fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err: Grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
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
