/**
 * Compares a conformance run of kubelet-ts with upstream's kubelet on the same harness
 * (../shared/conformance/reference-upstream.txt): both are `PASS|FAIL|SKIP <test name>` lines,
 * as the harness's results.py writes them. What matters is a test that passes with upstream's
 * kubelet and fails (or did not run) here; a test that fails with both is the environment's.
 */
import fs from 'node:fs';

export type Outcome = 'PASS' | 'FAIL' | 'SKIP';

/** `PASS|FAIL|SKIP name` lines → name → outcome. A line of another shape names its file and line. */
export function parseResults(text: string, file: string): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const m = /^(PASS|FAIL|SKIP) (.+)$/.exec(line);
    if (!m) throw new Error(`${file}:${i + 1}: not a result line (want 'PASS|FAIL|SKIP <test name>'): ${JSON.stringify(line.slice(0, 120))}`);
    out.set(m[2]!, m[1] as Outcome);
  });
  return out;
}

export interface Comparison {
  selected: number;
  passed: string[];
  failed: string[];
  skipped: string[];
  /** Pass with upstream's kubelet, fail (or were skipped) here: what must be fixed. */
  regressions: string[];
  /** In the reference but not run here, though the run was the whole selection. */
  missing: string[];
  /** Fail here and with upstream's kubelet: the environment's (the reference's README says why). */
  environmental: string[];
  /** Pass here, fail with upstream's kubelet. */
  betterThanUpstream: string[];
  reference: { passed: number; failed: number };
}

/** `focused`: the run was a part of the selection (FOCUS), so reference tests it did not run are not missing. */
export function compareResults(reference: Map<string, Outcome>, here: Map<string, Outcome>, focused: boolean): Comparison {
  const names = [...here.keys()].sort();
  const by = (o: Outcome) => names.filter((n) => here.get(n) === o);
  const failedHere = (n: string) => here.get(n) === 'FAIL' || here.get(n) === 'SKIP';
  const refNames = [...reference.keys()].sort();
  return {
    selected: names.length,
    passed: by('PASS'),
    failed: by('FAIL'),
    skipped: by('SKIP'),
    regressions: names.filter((n) => reference.get(n) === 'PASS' && failedHere(n)),
    missing: focused ? [] : refNames.filter((n) => reference.get(n) === 'PASS' && !here.has(n)),
    environmental: names.filter((n) => reference.get(n) === 'FAIL' && here.get(n) === 'FAIL'),
    betterThanUpstream: names.filter((n) => reference.get(n) === 'FAIL' && here.get(n) === 'PASS'),
    reference: { passed: refNames.filter((n) => reference.get(n) === 'PASS').length, failed: refNames.filter((n) => reference.get(n) === 'FAIL').length },
  };
}

/** The summary a person reads at the end of a run. */
export function formatComparison(c: Comparison, failures: Record<string, { message?: string; location?: string }> = {}): string {
  const lines = [`${c.passed.length} passed, ${c.failed.length} failed${c.skipped.length ? `, ${c.skipped.length} skipped` : ''} of ${c.selected} selected (upstream's kubelet on this harness: ${c.reference.passed} passed, ${c.reference.failed} failed)`];
  const list = (title: string, names: string[], withReason = false) => {
    if (!names.length) return;
    lines.push('', `${title}: ${names.length}`);
    for (const n of names) {
      lines.push(`  ${n}`);
      const f = failures[n];
      if (withReason && f?.message) {
        const first = f.message.split('\n').map((l) => l.trim()).filter(Boolean).slice(0, 2).join(' / ').slice(0, 300);
        lines.push(`      ${first}${f.location ? ` (${f.location})` : ''}`);
      }
    }
  };
  list('pass with upstream\'s kubelet, fail here', c.regressions, true);
  list('pass with upstream\'s kubelet, not run here', c.missing);
  list('fail here and with upstream\'s kubelet (the environment\'s: ../shared/conformance/README.md)', c.environmental);
  list('pass here, fail with upstream\'s kubelet', c.betterThanUpstream);
  return `${lines.join('\n')}\n`;
}

/** CLI: compare.ts REFERENCE RESULTS [--focused] → prints the summary; exit 1 when a test passing upstream fails or is missing here. */
export function main(argv: string[]): number {
  const focused = argv.includes('--focused');
  const [refFile, resultsFile] = argv.filter((a) => !a.startsWith('--'));
  if (!refFile || !resultsFile) {
    process.stderr.write('usage: compare.ts REFERENCE.txt RESULTS.txt [--focused]\n');
    return 2;
  }
  const reference = parseResults(fs.readFileSync(refFile, 'utf8'), refFile);
  const here = parseResults(fs.readFileSync(resultsFile, 'utf8'), resultsFile);
  const failuresFile = resultsFile.replace(/\.txt$/, '-failures.json');
  const failures = fs.existsSync(failuresFile) ? JSON.parse(fs.readFileSync(failuresFile, 'utf8')) : {};
  const c = compareResults(reference, here, focused);
  process.stdout.write(formatComparison(c, failures));
  return c.regressions.length || c.missing.length || c.selected === 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
