import type { V1PersistentVolume } from '@kubernetes/client-node';

type CsiAccessMode = 'SINGLE_NODE_WRITER' | 'SINGLE_NODE_READER_ONLY' | 'MULTI_NODE_READER_ONLY' | 'MULTI_NODE_MULTI_WRITER' | 'SINGLE_NODE_SINGLE_WRITER' | 'SINGLE_NODE_MULTI_WRITER';

/**
 * The CSI access mode of a PV, as upstream maps its first access mode (ReadWriteOnce when it
 * has none): a driver with SINGLE_NODE_MULTI_WRITER gets the finer modes (RWO → one writer per
 * node, RWOP → one writer), one without gets SINGLE_NODE_WRITER for both.
 */
export function persistentAccessMode(pv: V1PersistentVolume, nodeCapabilities: ReadonlySet<string>): CsiAccessMode {
  const mode = pv.spec?.accessModes?.[0] ?? 'ReadWriteOnce';
  const multi = nodeCapabilities.has('SINGLE_NODE_MULTI_WRITER');
  switch (mode) {
    case 'ReadOnlyMany': return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany': return 'MULTI_NODE_MULTI_WRITER';
    case 'ReadWriteOncePod': return multi ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
    default: return multi ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
  }
}
