/**
 * The docs' list of upstream kubelet settings kubelet-ts does not implement (in
 * docs/operating/kubeadm.md, once the README's), made from the same tables as the start warning
 * (core/config/upstream-fields.ts, upstream-flags.ts), so the two cannot drift:
 * test/unit/kubeadm-config.test.ts fails when the docs differ, and
 * `npx tsx tools/readme-upstream-fields.ts` writes it again.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBlock, writeBlock } from './generated-doc-block.ts';
import { UPSTREAM_FIELDS } from '../core/config/upstream-fields.ts';
import { CADVISOR_NEEDS, KUBELET_FLAGS } from '../core/config/upstream-flags.ts';

/** The file that holds the block between the markers. */
export const UPSTREAM_SETTINGS_DOC = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'operating', 'kubeadm.md');
const DOC_NAME = 'docs/operating/kubeadm.md';
export const BEGIN = '<!-- upstream-settings-not-implemented: made by tools/readme-upstream-fields.ts -->';
export const END = '<!-- /upstream-settings-not-implemented -->';

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** The markdown between the markers: one table row per field or flag kubelet-ts ignores. */
export function notImplementedMarkdown(): string {
  const rows: string[] = [];
  for (const [field, spec] of Object.entries(UPSTREAM_FIELDS)) {
    if (spec.implemented === false) rows.push(`| \`${field}\` | ${cell(spec.honouredText)} | ${cell(spec.needs)} |`);
  }
  const cadvisor: string[] = [];
  for (const [flag, spec] of Object.entries(KUBELET_FLAGS)) {
    if (spec.needs === CADVISOR_NEEDS) cadvisor.push(`\`--${flag}\``);
    else if (spec.needs !== undefined) rows.push(`| \`--${flag}\` | ${cell(spec.honouredText ?? 'not given, false or empty')} | ${cell(spec.needs)} |`);
  }
  rows.push(`| ${cadvisor.join(', ')} | never | ${cell(CADVISOR_NEEDS)} |`);
  const info = Object.entries(KUBELET_FLAGS).filter(([, s]) => s.info !== undefined).map(([flag, s]) => `\`--${flag}\` is ${s.info}.`);
  return [
    '| field or flag | no warning when it is | honouring other values would need |',
    '| --- | --- | --- |',
    ...rows,
    '',
    ...info,
  ].join('\n');
}

/** The doc's text between the markers, or undefined without them. */
export function readmeBlock(doc: string): string | undefined {
  return readBlock(doc, { begin: BEGIN, end: END });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeBlock(UPSTREAM_SETTINGS_DOC, DOC_NAME, { begin: BEGIN, end: END }, notImplementedMarkdown());
  process.stdout.write(`${DOC_NAME}: the list of upstream settings not implemented is written\n`);
}
