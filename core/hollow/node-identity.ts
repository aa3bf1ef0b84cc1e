import type { ApiClient } from '../apiserver/api-client.ts';

/** What a SelfSubjectAccessReview answers. */
interface ReviewStatus { allowed?: boolean; reason?: string }

/**
 * Whether the client's identity may impersonate node `nodeName` (user system:node:<name>,
 * group system:nodes), asked with SelfSubjectAccessReviews. Undefined when it may; otherwise
 * the reason, in words the hollow command prints.
 */
export async function cannotImpersonateNode(client: ApiClient, nodeName: string): Promise<string | undefined> {
  const refused: string[] = [];
  for (const [resource, name] of [['users', `system:node:${nodeName}`], ['groups', 'system:nodes']] as const) {
    const review = await client.request<{ status?: ReviewStatus }>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb: 'impersonate', resource, name } } },
    });
    if (!review?.status?.allowed) refused.push(`impersonate ${resource} "${name}"${review?.status?.reason ? ` (${review.status.reason})` : ''}`);
  }
  return refused.length ? `${client.describeIdentity()} may not ${refused.join(' or ')}` : undefined;
}
