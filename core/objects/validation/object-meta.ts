/**
 * ObjectMeta rules (upstream ValidateObjectMeta, ValidateLabels, ValidateAnnotations): the
 * name, namespace, labels, annotations and finalizers of a pod.
 */
import { FieldErrors, child, index } from './field-errors.ts';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from './names.ts';
import { get, int, isSet, list, nonEmpty, obj, stringEntries, str } from './values.ts';

/** upstream TotalAnnotationSizeLimitB: keys and values of all annotations together. */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/**
 * A UID the manifest sets names the pod's directories (`<rootDir>/pods/<uid>`, its log
 * directory, its cgroup), so it must be one path element: upstream leaves UIDs to the API
 * server, which writes RFC 4122 UUIDs (kubelet-ts).
 */
const UID = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,126}[A-Za-z0-9])?$/;

/** Label keys must be qualified names, values label values (also for selectors). */
export function validateLabels(labels: unknown, path: string, errs: FieldErrors): void {
  for (const [k, v] of stringEntries(labels)) {
    errs.invalidEach(path, k, isQualifiedName(k));
    errs.invalidEach(path, v, isValidLabelValue(v));
  }
}

export function validateAnnotations(annotations: unknown, path: string, errs: FieldErrors): void {
  let total = 0;
  for (const [k, v] of stringEntries(annotations)) {
    errs.invalidEach(path, k, isQualifiedName(k.toLowerCase()));
    total += Buffer.byteLength(k, 'utf8') + Buffer.byteLength(v, 'utf8');
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errs.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT);
}

/** The metadata of a namespaced object such as a Pod. */
export function validateObjectMeta(metaValue: unknown, path: string, errs: FieldErrors): void {
  if (!isSet(metaValue)) return errs.required(path);
  const meta = obj(metaValue);
  if (!meta) return; // the type check named it

  const name = get(meta, 'name');
  if (!nonEmpty(name)) {
    if (!isSet(name) || name === '') errs.required(child(path, 'name'), 'name or generateName is required');
  } else {
    errs.invalidEach(child(path, 'name'), name, isDNS1123Subdomain(name));
  }
  const namespace = get(meta, 'namespace');
  if (nonEmpty(namespace)) errs.invalidEach(child(path, 'namespace'), namespace, isDNS1123Label(namespace));

  const uid = get(meta, 'uid');
  if (nonEmpty(uid) && !UID.test(uid)) {
    errs.invalid(child(path, 'uid'), uid, "must consist of at most 128 alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character: it names the pod's directories (kubelet-ts)");
  }
  validateLabels(get(meta, 'labels'), child(path, 'labels'), errs);
  validateAnnotations(get(meta, 'annotations'), child(path, 'annotations'), errs);
  list(get(meta, 'finalizers')).forEach((f, i) => {
    const s = str(f);
    if (s !== undefined) errs.invalidEach(index(child(path, 'finalizers'), i), s, isQualifiedName(s));
  });
  const grace = int(get(meta, 'deletionGracePeriodSeconds'));
  if (grace !== undefined && grace < 0) errs.invalid(child(path, 'deletionGracePeriodSeconds'), grace, 'must be greater than or equal to 0');
}
