import assert from 'node:assert/strict';
import { DocumentError, parseYamlDocument, parseYamlDocuments } from '../../core/objects/yaml-decoder.ts';
import { expandedSizeProblem, MAX_DOCUMENT_BYTES } from '../../core/objects/document-limits.ts';

const value = (scalar: string): unknown => (parseYamlDocument(`v: ${scalar}`) as { v: unknown }).v;

function expectDocumentError(text: string, pattern: RegExp): DocumentError {
  let caught: unknown;
  try {
    parseYamlDocuments(text);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof DocumentError, `expected a DocumentError, got ${String(caught)}`);
  assert.match(caught.message, pattern);
  return caught;
}

describe('object decoder: YAML 1.1 scalars as Kubernetes reads them (go-yaml v2)', () => {
  it('reads integers in every base go-yaml reads', () => {
    const cases: Array<[string, unknown]> = [
      ['0400', 256], ['0o400', 256], ['0x1F', 31], ['0b101', 5], ['-0b101', -5], ['+12', 12], ['1_000', 1000],
      ['0', 0], ['00', 0], ['-0', 0], ['08', 8], ['09.5', 9.5], ['9223372036854775807', 9223372036854775807],
    ];
    for (const [text, want] of cases) assert.equal(value(text), want, text);
  });

  it('reads floats, keeps an overflow as text, and knows the special floats', () => {
    assert.equal(value('1e3'), 1000);
    assert.equal(value('.5'), 0.5);
    assert.equal(value('-1.5e-2'), -0.015);
    assert.equal(value('1.'), 1);
    assert.equal(value('1e400'), '1e400');
    assert.equal(value('0xFFFFFFFFFFFFFFFFFF'), '0xFFFFFFFFFFFFFFFFFF');
    assert.ok(Number.isNaN(value('.nan')));
    assert.equal(value('-.inf'), -Infinity);
  });

  it('reads YAML 1.1 booleans and nulls, and quoted ones as text', () => {
    for (const t of ['yes', 'Yes', 'YES', 'y', 'Y', 'on', 'ON', 'true', 'True']) assert.equal(value(t), true, t);
    for (const t of ['no', 'No', 'n', 'N', 'off', 'Off', 'false', 'FALSE']) assert.equal(value(t), false, t);
    for (const t of ['~', 'null', 'Null', 'NULL', '']) assert.equal(value(t), null, t);
    assert.equal(value('"yes"'), 'yes');
    assert.equal(value("'0400'"), '0400');
    assert.deepEqual(parseYamlDocument('yes: 1\n0400: 2'), { true: 1, 256: 2 });
  });

  it('keeps timestamps, sexagesimal numbers and other words as text', () => {
    for (const t of ['2001-12-14', '2001-12-14T21:59:43.10-05:00', '22:22', '190:20:30', 'nan', 'Infinity', '0x', '_1', '.']) {
      assert.equal(value(t), t, t);
    }
  });

  it('reads explicit tags as go-yaml does and ignores unknown ones', () => {
    assert.equal(value('!!binary aGVsbG8='), 'hello');
    assert.equal(value('!!str 0400'), '0400');
    assert.equal(value('!!int "12"'), 12);
    assert.equal(value('!!timestamp 2001-12-14'), '2001-12-14');
    assert.equal(value('!custom 12'), '12');
    assert.deepEqual(value('!!python/object:os.system {a: 1}'), { a: 1 });
    assert.deepEqual(value('!!set {a: null}'), { a: null });
    expectDocumentError('v: !!int "twelve"', /^line 1, column \d+: cannot resolve a node with !!int explicit tag$/);
    expectDocumentError('v: !!binary "%%"', /cannot resolve a node with !!binary explicit tag/);
  });

  it('merges `<<` keys, explicit keys winning', () => {
    assert.deepEqual(parseYamlDocument('base: &b {a: 1, b: 2}\nm: {<<: *b, b: 3}'), { base: { a: 1, b: 2 }, m: { a: 1, b: 3 } });
  });

  it('refuses duplicate keys, as kubectl\'s strict validation does', () => {
    expectDocumentError('a: 1\na: 2\n', /^line 2, column 1: duplicated mapping key$/);
  });

  it('leaves out empty documents and counts the others', () => {
    assert.deepEqual(parseYamlDocuments('# only a comment\n---\n---\n'), []);
    assert.equal(parseYamlDocuments('a: 1\n---\nb: 2\n').length, 2);
    assert.throws(() => parseYamlDocument('a: 1\n---\nb: 2\n'), /expected one document, found 2/);
    assert.equal(parseYamlDocument(''), undefined);
    assert.deepEqual(parseYamlDocument('\ufeffa: 1'), { a: 1 });
  });
});

describe('object decoder: limits and errors of hostile documents', () => {
  it('refuses an exponential alias bomb in time linear in its text', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) lines.push(`${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]`);
    const t0 = performance.now();
    expectDocumentError(lines.join('\n'), /^excessive aliasing: the document expands to more than 3145728 bytes$/);
    assert.ok(performance.now() - t0 < 500);
  });

  it('refuses many aliases of one long string (JSON counts each copy)', () => {
    const text = `s: &s "${'x'.repeat(100_000)}"\nl: [${Array(40).fill('*s').join(',')}]`;
    expectDocumentError(text, /larger than 3145728 bytes as JSON/);
  });

  it('allows ordinary aliasing within the limits', () => {
    const doc = parseYamlDocument('env: &env [{name: A, value: "1"}]\nc1: {env: *env}\nc2: {env: *env}') as Record<string, { env: unknown }>;
    assert.equal(doc.c1!.env, doc.c2!.env);
  });

  it('refuses nesting deeper than 100 levels in the text, in flow and block style', () => {
    expectDocumentError(`a: ${'['.repeat(1_000_000)}`, /^line 1, column \d+: nesting exceeded maxDepth \(100\)$/);
    expectDocumentError(`${'- '.repeat(200)}x`, /nesting exceeded maxDepth \(100\)/);
    assert.doesNotThrow(() => parseYamlDocument(`a: ${'['.repeat(90)}${']'.repeat(90)}`));
  });

  it('refuses nesting deeper than 100 levels once aliases are expanded', () => {
    const lines = [`a0: &a0 ${'['.repeat(60)}${']'.repeat(60)}`, `a1: &a1 ${'['.repeat(60)}*a0${']'.repeat(60)}`];
    expectDocumentError(lines.join('\n'), /^nesting is deeper than 100 levels once aliases are expanded$/);
  });

  it('stops merge keys that copy too much', () => {
    const big = `a: &a {${Array.from({ length: 3000 }, (_, i) => `k${i}: 1`).join(', ')}}`;
    expectDocumentError(`${big}\n${Array.from({ length: 10 }, (_, i) => `m${i}: {<<: *a}`).join('\n')}`, /merge keys exceeded maxTotalMergeKeys \(10000\)/);
  });

  it('refuses a text larger than the API server takes', () => {
    expectDocumentError(`a: "${'x'.repeat(MAX_DOCUMENT_BYTES)}"`, /^the document is larger than 3145728 bytes$/);
    // Counted in UTF-8 bytes: 1.1 M three-byte characters are 3.3 MB.
    expectDocumentError(`a: "${'€'.repeat(1_100_000)}"`, /^the document is larger than 3145728 bytes$/);
  });

  it('reports a syntax error by line, column and reason, never the text around it', () => {
    const err = expectDocumentError('a: 1\nb: [2, SECRET-VALUE-123\n# SECRET-VALUE-123\n', /^line 4, column 1: unexpected end of the stream within a flow collection$/);
    assert.equal(err.line, 4);
    assert.equal(err.column, 1);
    assert.ok(!err.message.includes('SECRET'));
  });

  it('cuts what a reason would quote of the document', () => {
    const err = expectDocumentError(`a: *${'n'.repeat(100)}`, /unidentified alias "n{16}\.\.\."$/);
    assert.ok(err.message.length < 120);
  });

  it('measures the expanded size of a graph with shared nodes without expanding it', () => {
    const leaf = { s: 'x'.repeat(100) };
    let node: unknown = leaf;
    for (let i = 0; i < 40; i++) node = [node, node]; // 2^40 leaves if expanded
    assert.match(expandedSizeProblem(node)!, /excessive aliasing/);
    assert.equal(expandedSizeProblem({ a: [1, 2, { b: 'c' }] }), undefined);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.match(expandedSizeProblem(cyclic)!, /refers to itself|deeper/);
  });
});
