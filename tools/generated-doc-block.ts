/**
 * A block of a doc between two marker comments that a tool writes from the code (the pod field
 * table, the upstream settings kubelet-ts does not implement): read for the tests that check the
 * doc is in sync, written again by the tool.
 */
import { readFile, writeFile } from 'node:fs/promises';

export interface DocBlock { begin: string; end: string }

/** The doc's text between the markers, trimmed; undefined without them. */
export function readBlock(doc: string, { begin, end }: DocBlock): string | undefined {
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) return undefined;
  return doc.slice(a + begin.length, b).trim();
}

/** Replaces the block of the doc at `file` (named `docName` in the error) with `content`. */
export async function writeBlock(file: string, docName: string, { begin, end }: DocBlock, content: string): Promise<void> {
  const doc = await readFile(file, 'utf8');
  const a = doc.indexOf(begin);
  const b = doc.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${docName} has no ${begin} ... ${end} block`);
  await writeFile(file, `${doc.slice(0, a + begin.length)}\n${content}\n${doc.slice(b)}`);
}
