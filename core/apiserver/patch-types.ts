/** Patch content types (upstream's PatchType), apart from the API client so callers need not load it. */
export const PATCH = Object.freeze({
  strategic: 'application/strategic-merge-patch+json',
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
});
