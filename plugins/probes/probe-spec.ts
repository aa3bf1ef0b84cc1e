import type { V1Container, V1Probe } from '@kubernetes/client-node';
import type { ProbeType } from 'kubelet-ts';

/** What one probe does, after defaults: one handler and its timing. */
export interface ProbeSpec {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
  handler: ProbeHandlerSpec;
}

export type ProbeHandlerSpec =
  | { kind: 'exec'; command: string[] }
  | { kind: 'httpGet'; scheme: 'http' | 'https'; host: string | undefined; path: string; port: number | string; headers: Array<{ name: string; value: string }> }
  | { kind: 'tcpSocket'; host: string | undefined; port: number | string }
  | { kind: 'grpc'; port: number; service: string };

/** The container spec field of each probe type. */
export const PROBE_FIELD: Readonly<Record<ProbeType, 'livenessProbe' | 'readinessProbe' | 'startupProbe'>> = {
  liveness: 'livenessProbe',
  readiness: 'readinessProbe',
  startup: 'startupProbe',
};

/** upstream probeType.String(): how logs and messages name a probe type. */
export const PROBE_NAME: Readonly<Record<ProbeType, string>> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

/** upstream SetDefaults_Probe: a zero (or absent) field takes these values. */
const INT32_MAX = 2 ** 31 - 1;

export const PROBE_DEFAULTS = Object.freeze({ timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });

const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * Checks a probe as upstream's API validation does (validateProbe, validateHandler,
 * ValidatePortNumOrName) and applies upstream's defaults. Returns the errors in upstream's
 * `field: Invalid value: v: why` form, or the spec ready to run. `fieldPath` is the probe's
 * path, for example `spec.containers[0].livenessProbe`.
 */
export function normalizeProbe(probe: V1Probe, type: ProbeType, fieldPath: string): { spec: ProbeSpec } | { errors: string[] } {
  const errors: string[] = [];
  const invalid = (field: string, value: unknown, why: string) => errors.push(`${fieldPath}.${field}: Invalid value: ${JSON.stringify(value)}: ${why}`);

  const int = (field: 'initialDelaySeconds' | 'periodSeconds' | 'timeoutSeconds' | 'successThreshold' | 'failureThreshold'): number => {
    const v = probe[field] as unknown;
    if (v === undefined || v === null) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      invalid(field, v, 'must be an integer');
      return 0;
    }
    if (v < 0) invalid(field, v, 'must be greater than or equal to 0');
    // The API's fields are int32: a larger value is refused as the API server refuses it.
    if (v > INT32_MAX) invalid(field, v, `must be less than or equal to ${INT32_MAX}`);
    return v;
  };
  const initialDelaySeconds = int('initialDelaySeconds');
  const periodSeconds = int('periodSeconds') || PROBE_DEFAULTS.periodSeconds;
  const timeoutSeconds = int('timeoutSeconds') || PROBE_DEFAULTS.timeoutSeconds;
  const successThreshold = int('successThreshold') || PROBE_DEFAULTS.successThreshold;
  const failureThreshold = int('failureThreshold') || PROBE_DEFAULTS.failureThreshold;
  if ((type === 'liveness' || type === 'startup') && successThreshold !== 1 && successThreshold > 0) invalid('successThreshold', successThreshold, 'must be 1');

  const handlers = (['exec', 'httpGet', 'tcpSocket', 'grpc'] as const).filter((k) => probe[k] !== undefined && probe[k] !== null);
  if (handlers.length === 0) errors.push(`${fieldPath}: Required value: must specify a handler type`);
  if (handlers.length > 1) errors.push(`${fieldPath}.${handlers[1]}: Forbidden: may not specify more than 1 handler type`);

  let handler: ProbeHandlerSpec | undefined;
  const port = (field: string, p: unknown): number | string => {
    if (typeof p === 'number') {
      if (!Number.isInteger(p) || p < 1 || p > 65535) invalid(field, p, 'must be between 1 and 65535, inclusive');
      return p;
    }
    if (typeof p === 'string' && /^\d+$/.test(p)) return port(field, Number(p));
    if (typeof p !== 'string' || p === '') {
      errors.push(`${fieldPath}.${field}: Required value`);
      return '';
    }
    if (p.length > 15 || !IANA_SVC_NAME.test(p) || !/[a-z]/.test(p) || p.includes('--')) {
      invalid(field, p, 'must be a port number or an IANA_SVC_NAME (at most 15 characters, lowercase letters, digits and "-", at least one letter)');
    }
    return p;
  };
  switch (handlers[0]) {
    case 'exec': {
      const command = probe.exec!.command ?? [];
      if (command.length === 0) errors.push(`${fieldPath}.exec.command: Required value`);
      handler = { kind: 'exec', command: command.map(String) };
      break;
    }
    case 'httpGet': {
      const g = probe.httpGet!;
      const scheme = (g.scheme ?? 'HTTP').toUpperCase();
      if (scheme !== 'HTTP' && scheme !== 'HTTPS') errors.push(`${fieldPath}.httpGet.scheme: Unsupported value: ${JSON.stringify(g.scheme)}: supported values: "HTTP", "HTTPS"`);
      const headers = (g.httpHeaders ?? []).map((h) => ({ name: String(h.name ?? ''), value: String(h.value ?? '') }));
      for (const [i, h] of headers.entries()) {
        if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(h.name)) invalid(`httpGet.httpHeaders[${i}].name`, h.name, 'a valid HTTP header must consist of alphanumeric characters or \'-\'');
      }
      handler = { kind: 'httpGet', scheme: scheme === 'HTTPS' ? 'https' : 'http', host: g.host || undefined, path: g.path || '/', port: port('httpGet.port', g.port), headers };
      break;
    }
    case 'tcpSocket': {
      const t = probe.tcpSocket!;
      handler = { kind: 'tcpSocket', host: t.host || undefined, port: port('tcpSocket.port', t.port) };
      break;
    }
    case 'grpc': {
      const g = probe.grpc!;
      const p = port('grpc.port', g.port);
      if (typeof p !== 'number') invalid('grpc.port', g.port, 'must be a port number between 1 and 65535, inclusive');
      handler = { kind: 'grpc', port: typeof p === 'number' ? p : 0, service: g.service ?? '' };
      break;
    }
  }
  if (errors.length > 0 || !handler) return { errors };
  return { spec: { initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold, failureThreshold, handler } };
}

/** The probes a container declares, by type. */
export function declaredProbes(container: V1Container): Array<[ProbeType, V1Probe]> {
  const out: Array<[ProbeType, V1Probe]> = [];
  for (const type of ['startup', 'liveness', 'readiness'] as const) {
    const p = container[PROBE_FIELD[type]];
    if (p) out.push([type, p]);
  }
  return out;
}
