/**
 * ginkgo's JSON report (`--json-report`) as `PASS|FAIL|SKIP <test name>` results, the form
 * tools/conformance/compare.ts compares with upstream's kubelet. The name is the spec's
 * container texts and its own text joined by spaces, as the harness's results.py writes it,
 * so a name here is a name of the references.
 */
import type { Outcome } from './compare.ts';

interface SpecReport {
  LeafNodeType?: string;
  LeafNodeText?: string;
  ContainerHierarchyTexts?: string[] | null;
  State?: string;
  Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
}

export interface GinkgoResults {
  results: Map<string, Outcome>;
  /** A failed spec's name → the first line of its failure and where it was raised. */
  failures: Map<string, string>;
}

/** The `It` specs of a report (an array of suite reports); a spec not run (skipped, pending) is SKIP. */
export function ginkgoResults(reportJson: string): GinkgoResults {
  const suites = JSON.parse(reportJson) as { SpecReports?: SpecReport[] | null }[];
  const results = new Map<string, Outcome>();
  const failures = new Map<string, string>();
  for (const suite of suites) {
    for (const spec of suite.SpecReports ?? []) {
      if (spec.LeafNodeType !== 'It') continue;
      const name = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText ?? ''].filter((t) => t).join(' ');
      const outcome: Outcome = spec.State === 'passed' ? 'PASS' : spec.State === 'skipped' || spec.State === 'pending' ? 'SKIP' : 'FAIL';
      results.set(name, outcome);
      if (outcome === 'FAIL') {
        const loc = spec.Failure?.Location;
        failures.set(name, `${spec.State}: ${(spec.Failure?.Message ?? '').trim().split('\n')[0]}${loc?.FileName ? ` (${loc.FileName}:${loc.LineNumber})` : ''}`);
      }
    }
  }
  return { results, failures };
}
