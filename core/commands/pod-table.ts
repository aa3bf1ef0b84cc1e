/**
 * `kubectl get pods` tables: the columns (NAME READY STATUS RESTARTS AGE; `-o wide` adds IP,
 * NODE, NOMINATED NODE, READINESS GATES, and kubelet-ts's EPHEMERAL when a pod has kubectl
 * debug containers: their states; `-A` puts NAMESPACE first), each padded to its widest cell with
 * three spaces between, as kubectl's tabwriter prints them.
 */
import type { PodRow } from './pod-columns.ts';

export interface TableShape {
  wide: boolean;
  allNamespaces: boolean;
  /** With `wide`: the EPHEMERAL column, shown when a listed pod has ephemeral containers (kubectl's own columns otherwise). */
  ephemeral?: boolean;
}

const NONE = '<none>';

function header(shape: TableShape): string[] {
  return [
    ...(shape.allNamespaces ? ['NAMESPACE'] : []),
    'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE',
    ...(shape.wide ? ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES'] : []),
    ...(shape.wide && shape.ephemeral ? ['EPHEMERAL'] : []),
  ];
}

function cells(r: PodRow, shape: TableShape): string[] {
  return [
    ...(shape.allNamespaces ? [r.namespace] : []),
    r.name, r.ready, r.status, r.restarts, r.age,
    ...(shape.wide ? [r.ip, r.node, NONE, NONE] : []),
    ...(shape.wide && shape.ephemeral ? [r.ephemeral] : []),
  ];
}

/** Column widths that fit the header and these rows (at least `min`, for a watch that keeps them). */
export function columnWidths(rows: PodRow[], shape: TableShape, min: number[] = []): number[] {
  const all = [header(shape), ...rows.map((r) => cells(r, shape))];
  return header(shape).map((_, i) => Math.max(min[i] ?? 0, ...all.map((c) => c[i]!.length)));
}

function line(values: string[], widths: number[]): string {
  return values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]! + 3))).join('').trimEnd();
}

/** The header line. */
export function headerLine(shape: TableShape, widths: number[]): string {
  return line(header(shape), widths);
}

/** One pod's line. */
export function rowLine(row: PodRow, shape: TableShape, widths: number[]): string {
  return line(cells(row, shape), widths);
}

/** A whole table, header first, rows in the given order. */
export function podTable(rows: PodRow[], shape: TableShape): string {
  const widths = columnWidths(rows, shape);
  return [headerLine(shape, widths), ...rows.map((r) => rowLine(r, shape, widths))].join('\n') + '\n';
}
