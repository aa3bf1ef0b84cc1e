/**
 * The labels a kubelet may set on its own Node. NodeRestriction refuses a node that sets
 * `kubernetes.io` / `k8s.io` labels outside a fixed set and two namespaces, so upstream's kubelet
 * refuses such `nodeLabels` at start (ValidateKubeletFlags) instead of failing its registration:
 * these are upstream's lists (pkg/kubelet/apis), checked the same way.
 */

/** Label keys of the Kubernetes namespaces a kubelet may set (upstream kubeletapis.KubeletLabels). */
export const KUBELET_LABELS: readonly string[] = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
];

/** Label namespaces (and their subdomains) a kubelet may set freely (upstream kubeletapis.KubeletLabelNamespaces). */
export const KUBELET_LABEL_NAMESPACES: readonly string[] = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

/** The prefix of a label key before '/', or '' for an unprefixed key. */
function labelNamespace(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

const inDomain = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

/** True for keys in the `kubernetes.io` or `k8s.io` namespaces (or their subdomains). */
export function isKubernetesLabel(key: string): boolean {
  const ns = labelNamespace(key);
  return inDomain(ns, 'kubernetes.io') || inDomain(ns, 'k8s.io');
}

/** True if a kubelet may set this label on its Node (upstream IsKubeletLabel, or a label outside the Kubernetes namespaces). */
export function kubeletMaySetLabel(key: string): boolean {
  if (!isKubernetesLabel(key)) return true;
  if (KUBELET_LABELS.includes(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((allowed) => inDomain(ns, allowed));
}

/** Upstream's explanation of the rule, for messages. */
export const KUBELET_LABEL_RULE =
  `labels in the 'kubernetes.io' or 'k8s.io' namespaces must begin with an allowed prefix (${KUBELET_LABEL_NAMESPACES.join(', ')}) ` +
  `or be in the specifically allowed set (${KUBELET_LABELS.join(', ')})`;

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Why a label key is not a valid qualified name, or undefined when it is (upstream validation.IsQualifiedName). */
export function invalidLabelKey(key: string): string | undefined {
  const ns = labelNamespace(key);
  if (ns.length > 253) return 'the prefix must be at most 253 characters';
  if (!QUALIFIED_NAME.test(key)) {
    return "a qualified name: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit";
  }
  return undefined;
}
