import { CHAP_SESSION_KEYS, type IscsiDisk } from './iscsi-disk.ts';
import { IscsiadmError, iscsiadm } from './iscsiadm.ts';

/** iscsiadm's exit code for "No records found" (ISCSI_ERR_NO_OBJS_FOUND). */
const NO_OBJS_FOUND = 21;

/**
 * A pod is given a LUN the node is already logged in to only with the credentials that login
 * took. The kernel's session is the node's, not the pod's: without this check a pod with a
 * wrong CHAP Secret, or with no CHAP at all, would get the LUN whenever another pod had logged
 * in to its target with the right one (upstream's plugin reuses any live session so).
 */

/** The `key = value` lines of `iscsiadm -m node -o show` (`<empty>` read as ''). */
export function parseNodeRecord(text: string): Map<string, string> {
  const rec = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([a-z][\w.[\]]*)\s+=\s+(.*)$/i.exec(line.trim());
    if (m) rec.set(m[1]!, m[2] === '<empty>' ? '' : m[2]!);
  }
  return rec;
}

/**
 * Why the live session's node record (its login's settings) does not admit the volume, or
 * undefined when it does. No value is named: the record and the Secret hold passwords.
 */
export function sessionAuthMismatch(record: Map<string, string>, disk: IscsiDisk, secret: Map<string, string>): string | undefined {
  const loggedInWithChap = record.get('node.session.auth.authmethod') === 'CHAP';
  if (!loggedInWithChap) return undefined; // the target let the node in without CHAP: no key of the volume's is needed
  if (!disk.chapSession) return 'it was logged in to with CHAP, and this volume has no chapAuthSession';
  const differing = CHAP_SESSION_KEYS.filter((k) => (secret.get(k) ?? '') !== (record.get(k) ?? ''));
  return differing.length ? `it was logged in to with other CHAP credentials than the volume's Secret holds (${differing.join(', ')} differ)` : undefined;
}

/**
 * Throws unless the node's live session with the disk's target through `portal` was logged in
 * to with the volume's CHAP settings. Its node record is read with `-S` (passwords shown) and
 * never logged; no record (an operator deleted it) is a refusal too: nothing to check against.
 */
export async function checkLiveSession(bin: string, disk: IscsiDisk, portal: string, secret: Map<string, string>, call: { timeoutMs: number; signal?: AbortSignal }): Promise<void> {
  const where = `the node is logged in to ${disk.iqn} through ${portal}`;
  const text = await iscsiadm(bin, ['-m', 'node', '-p', portal, '-T', disk.iqn, '-I', disk.iface, '-o', 'show', '-S'], call).catch((err: unknown) => {
    // 21: no record. Any other failure is told without iscsiadm's output, which may hold a password.
    if (err instanceof IscsiadmError && err.exitCode === NO_OBJS_FOUND) return undefined;
    const how = err instanceof IscsiadmError ? (err.timedOut ? 'no answer in time' : `exit ${err.exitCode ?? '?'}`) : String(err);
    throw new Error(`${where}, and its node record could not be read to check this volume's CHAP settings against (${how})`);
  });
  if (text === undefined) throw new Error(`${where} (another volume's session) without a node record to check this volume's CHAP settings against; not used (an operator can log out of it: iscsiadm -m node -T ${disk.iqn} -p ${portal} --logout)`);
  const why = sessionAuthMismatch(parseNodeRecord(text), disk, secret);
  if (why) throw new Error(`${where} for another volume, and ${why}: not given to this pod`);
}
