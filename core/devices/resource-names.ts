/**
 * Names the device manager accepts from providers: extended resource names (upstream
 * v1helper.IsExtendedResourceName) and device IDs.
 */
import { isQualifiedName } from '../objects/validation/names.ts';

/**
 * An extended resource name: `domain/name`, not native (`kubernetes.io/...`), not starting with
 * `requests.`, and a qualified name once `requests.` is put in front (how quota names it).
 */
export function isExtendedResourceName(name: string): boolean {
  if (typeof name !== 'string' || !name.includes('/') || name.includes('kubernetes.io/')) return false;
  if (name.startsWith('requests.')) return false;
  return isQualifiedName(`requests.${name}`).length === 0;
}

/**
 * The longest device ID kept. Upstream's API says 63 characters; real plugins use longer IDs
 * (a MIG device's UUID with its prefix), so the bound is a sanity limit, not the API's.
 */
export const MAX_DEVICE_ID_LENGTH = 256;

/** Why a device ID is refused, or undefined: non-empty, bounded, printable ASCII without spaces. */
export function deviceIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string' || id.length === 0) return 'an empty device ID';
  if (id.length > MAX_DEVICE_ID_LENGTH) return `a device ID of ${id.length} characters (at most ${MAX_DEVICE_ID_LENGTH})`;
  if (!/^[\x21-\x7e]+$/.test(id)) return `device ID ${JSON.stringify(id)} has characters other than printable ASCII`;
  return undefined;
}

/** A resource name for messages: quoted, and cut when absurdly long. */
export function shownName(name: unknown): string {
  const s = String(name);
  return JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}...` : s);
}
