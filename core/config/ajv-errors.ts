import type { ErrorObject } from 'ajv';
import { unknownNameHint } from '../util/nearest-name.ts';

/**
 * Turns ajv errors into lines an operator can act on, each problem once: each names the field
 * path, the bad value and what is allowed (an unknown field: the nearest known name, never the
 * whole list). `source` says where the value came from (a file, a flag, a plugin), or finds it
 * from the value's path when a config was assembled from several.
 */
export function formatAjvErrors(errors: ErrorObject[] | null | undefined, data: unknown, source: string | ((instancePath: string) => string)): string {
  const lines = new Set<string>();
  for (const e of errors ?? []) {
    const at = e.keyword === 'additionalProperties' ? `${e.instancePath}/${String(e.params.additionalProperty)}` : e.instancePath;
    lines.add(`${typeof source === 'string' ? source : source(at)}: ${describe(e, data)}`);
  }
  return [...lines].join('\n');
}

function describe(e: ErrorObject, data: unknown): string {
  const path = e.instancePath ? e.instancePath.replace(/^\//, '').replace(/\//g, '.') : '(root)';
  const value = JSON.stringify(valueAt(data, e.instancePath));
  const allowedText = (e.parentSchema as { 'x-allowed'?: string; description?: string } | undefined)?.['x-allowed'];
  switch (e.keyword) {
    case 'additionalProperties': {
      const extra = String(e.params.additionalProperty);
      const prefix = e.instancePath ? `${path}.` : '';
      return `unknown field '${prefix}${extra}'${unknownNameHint(extra, Object.keys((e.parentSchema as { properties?: object })?.properties ?? {}), prefix)}`;
    }
    case 'required':
      return `${e.instancePath ? path + '.' : ''}${e.params.missingProperty} is required`;
    case 'enum':
      return `${path} is ${value}; allowed: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `${path} is ${value}; allowed: ${allowedText ?? `a value of type ${e.params.type}`}`;
    case 'pattern':
    case 'format':
      return `${path} is ${value}; allowed: ${allowedText ?? `a string matching ${e.params.pattern ?? e.params.format}`}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${path} is ${value}; allowed: ${allowedText ?? `a number ${e.params.comparison} ${e.params.limit}`}`;
    case 'oneOf':
    case 'anyOf':
      return `${path} is ${value}; allowed: ${allowedText ?? 'one of the forms the schema lists'}`;
    default:
      return `${path} is ${value}: ${e.message ?? 'invalid'}${allowedText ? `; allowed: ${allowedText}` : ''}`;
  }
}

function valueAt(data: unknown, pointer: string): unknown {
  if (!pointer) return data;
  let cur: unknown = data;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}
