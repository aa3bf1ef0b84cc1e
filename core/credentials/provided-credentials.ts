/**
 * The registry credentials plugins provide for an image through the `imageCredentials` hook
 * (image credential providers: the built-in exec one, or a vendor's in-process one), made ready
 * for the puller. Upstream's order is kept by the caller: the pod's pull secrets' credentials
 * first, then these, each tried in turn until a pull succeeds.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ImageCredential, ImageCredentials, ImageCredentialsRequest } from '../hooks.ts';
import { errorMessage, isPluginError } from '../errors.ts';
import { imageRepository, repositoryRegistry } from './image-match.ts';

/** Fires the `imageCredentials` hook for one image. */
/** Asks the credential providers (the imageCredentials hook); `signal`: the pod's sync gives up. */
export type CredentialLookup = (request: ImageCredentialsRequest, signal: AbortSignal) => Promise<ImageCredentials>;

/** The fields of a credential, all strings when present. */
const AUTH_FIELDS = ['username', 'password', 'auth', 'serverAddress', 'identityToken', 'registryToken'] as const;

/** A credential a tap returned, checked field by field (a plugin's bug must not reach the runtime as a malformed AuthConfig). */
function wellFormed(c: unknown): c is ImageCredential {
  if (typeof c !== 'object' || c === null) return false;
  const o = c as Record<string, unknown>;
  return typeof o.from === 'string' && AUTH_FIELDS.every((f) => o[f] === undefined || typeof o[f] === 'string');
}

/**
 * The providers' credentials for `image`, each scoped to the image's registry when the provider
 * did not scope it (so that containerd never sends it to another host), and a message for each
 * provider that could not answer (for one Warning event each). Never throws: a tap's throw is
 * one of the messages, and the pull goes on without that lookup's credentials.
 */
export async function providedCredentials(lookup: CredentialLookup | undefined, pod: V1Pod, container: V1Container, image: string, signal: AbortSignal): Promise<{ credentials: ImageCredential[]; problems: string[] }> {
  if (!lookup) return { credentials: [], problems: [] };
  const repository = imageRepository(image);
  const problem = (provider: string, message: string) =>
    `Failed getting credential from external registry credential provider "${provider}": ${message}; attempting to pull the image may not succeed.`;
  let draft: ImageCredentials;
  try {
    draft = await lookup({ pod, container, image, repository }, signal);
  } catch (err) {
    return { credentials: [], problems: [problem(isPluginError(err) ? err.plugin : 'unknown', errorMessage(err))] };
  }
  const credentials = Array.isArray(draft?.credentials) ? draft.credentials : [];
  const failures = Array.isArray(draft?.failures) ? draft.failures : [];
  const problems = failures.map((f) => problem(String(f?.provider ?? 'unknown'), String(f?.message ?? 'failed')));
  if (!Array.isArray(draft?.credentials)) problems.push(problem('unknown', 'the imageCredentials hook returned no list of credentials'));
  const malformed = credentials.filter((c) => !wellFormed(c)).length;
  if (malformed > 0) problems.push(problem('unknown', `the imageCredentials hook returned ${malformed} malformed credential(s), left out`));
  const server = `https://${repositoryRegistry(repository)}`;
  return {
    credentials: credentials.filter(wellFormed).map((c) => ({ ...c, serverAddress: c.serverAddress || server })),
    problems,
  };
}
