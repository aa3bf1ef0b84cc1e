import type { Publication } from './publication-cleanup.ts';

/** What the plugin keeps with a PersistentVolume's publication: the undo, plus where it was staged (unstaged once no pod uses it). */
export interface PersistentVolumeData extends Publication {
  persistent: true;
  /** The device mount path it was staged at (a block volume's staging path); absent when the driver does not stage. */
  deviceMountPath?: string;
  /** Where vol_data.json and the staged marker are, when not beside `deviceMountPath` (a block volume: `volumeDevices/<pv>/data`). */
  dataDir?: string;
}
