import { CNI_ERR, type CniErrorBody } from './types.ts';

/**
 * A CNI failure, carrying the spec's error object (`code`, `msg`, `details`) and, when it
 * came from one plugin of a network, the network and the plugin, which the message names:
 * `network "pods" plugin "host-local" (ADD): invalid CIDR address: nonsense`.
 */
export class CniError extends Error {
  readonly code: number;
  readonly msg: string;
  readonly details: string | undefined;
  readonly network: string | undefined;
  readonly plugin: string | undefined;
  readonly command: string | undefined;

  constructor(body: CniErrorBody, where: { network?: string; plugin?: string; command?: string } = {}, options?: { cause?: unknown }) {
    super(`${prefix(where)}${body.msg}${body.details ? `: ${body.details}` : ''}`, options);
    this.name = 'CniError';
    this.code = body.code;
    this.msg = body.msg;
    this.details = body.details || undefined;
    this.network = where.network;
    this.plugin = where.plugin;
    this.command = where.command;
  }

  /** The error object for a CNI caller: `msg` names the network and plugin, so the runtime's message does too. */
  toJSON(cniVersion: string): CniErrorBody {
    return { cniVersion, code: this.code, msg: `${prefix(this)}${this.msg}`, ...(this.details ? { details: this.details } : {}) };
  }
}

function prefix(where: { network?: string | undefined; plugin?: string | undefined; command?: string | undefined }): string {
  const parts: string[] = [];
  if (where.network !== undefined) parts.push(`network "${where.network}"`);
  if (where.plugin !== undefined) parts.push(`plugin "${where.plugin}"`);
  if (where.command !== undefined) parts.push(`(${where.command})`);
  return parts.length ? `${parts.join(' ')}: ` : '';
}

/** Wraps any error as a CniError; an error of unknown origin becomes an I/O failure (code 5). */
export function asCniError(err: unknown, where: { network?: string; plugin?: string; command?: string } = {}): CniError {
  if (err instanceof CniError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new CniError({ code: CNI_ERR.IO_FAILURE, msg: message }, where, { cause: err });
}
