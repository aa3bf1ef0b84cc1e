/**
 * The operator's table of pod fields in docs/operating/pods.md (what kubelet-ts does with each
 * field of a pod's spec and containers), made from core/objects/pod-field-support.ts so the two
 * cannot drift: test/unit/pod-field-support.test.ts fails when the doc differs, and
 * `npx tsx tools/docs-pod-fields.ts` writes it again.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBlock, writeBlock } from './generated-doc-block.ts';
import { POD_FIELD_SECTIONS, POD_FIELD_SUPPORT, type PodFieldEntry, type RefusalStage } from '../core/objects/pod-field-support.ts';

/** The file that holds the block between the markers. */
export const POD_FIELDS_DOC = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'operating', 'pods.md');
const DOC_NAME = 'docs/operating/pods.md';
export const BEGIN = '<!-- pod-fields: made by tools/docs-pod-fields.ts from core/objects/pod-field-support.ts -->';
export const END = '<!-- /pod-fields -->';

const cell = (text: string) => text.replace(/\|/g, '\\|');

const STAGE: Record<RefusalStage, string> = {
  'static-pod-validation': 'static pod not run',
  admission: 'pod Failed',
  sandbox: 'no sandbox',
  'container-config': 'container not created',
  'volume-setup': 'volume not set up',
};

function refusalText(e: PodFieldEntry): string {
  if (!e.refusal) return '';
  return `${cell(e.refusal.when)} → ${STAGE[e.refusal.stage]}: \`${cell(e.refusal.reason)}\``;
}

/** The markdown between the markers: a table per section, one row per field. */
export function podFieldsMarkdown(): string {
  const out: string[] = [];
  for (const s of POD_FIELD_SECTIONS) {
    const rows = Object.entries(POD_FIELD_SUPPORT).filter(([key]) => key.startsWith(`${s.prefix}.`)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    out.push(`#### ${s.title}`, '', '| field | kubelet-ts | what it does | refused |', '| --- | --- | --- | --- |');
    for (const [key, e] of rows) out.push(`| \`${key.slice(s.prefix.length + 1)}\` | ${e.support} | ${cell(e.what)} | ${refusalText(e)} |`);
    out.push('');
  }
  return out.join('\n').trim();
}

/** The doc's text between the markers, or undefined without them. */
export function podFieldsBlock(doc: string): string | undefined {
  return readBlock(doc, { begin: BEGIN, end: END });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeBlock(POD_FIELDS_DOC, DOC_NAME, { begin: BEGIN, end: END }, podFieldsMarkdown());
  process.stdout.write(`${DOC_NAME}: the pod field table is written\n`);
}
