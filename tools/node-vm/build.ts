import { ensureNodeVmImage, nodeVmHostUnavailableReason } from './image.ts';

/**
 * `tsx tools/node-vm/build.ts`: builds (or finds in the cache) the node VM image for the
 * archive's current versions and prints its directory and figures. The VM suite does the same
 * on its first use; this is for building ahead (CI's cold build, an operator's look).
 */
const reason = nodeVmHostUnavailableReason();
if (reason) {
  process.stderr.write(`node-vm build: ${reason}\n`);
  process.exit(1);
}
const image = await ensureNodeVmImage((line) => process.stderr.write(`[node-vm] ${line}\n`));
process.stdout.write(`${JSON.stringify({ dir: image.dir, key: image.key, built: image.built, buildSeconds: image.buildSeconds, versions: image.versions })}\n`);
