import assert from 'node:assert/strict';
import { WatchLines } from '../../core/apiserver/watch-lines.ts';

/** The events a WatchLines delivers for `chunks`, and the error it returned, if any. */
function feed(chunks: string[], stopAfter = Infinity): { events: Array<[string, unknown]>; error?: string } {
  const events: Array<[string, unknown]> = [];
  const lines = new WatchLines((type, object) => events.push([type, object]), () => events.length >= stopAfter);
  for (const c of chunks) {
    const err = lines.push(c);
    if (err) return { events, error: err.message };
  }
  return { events };
}

describe('WatchLines: a watch body split into events, whatever the chunks', function () {
  const big = { metadata: { name: 'big' }, spec: { containers: [{ name: 'c', env: Array.from({ length: 3000 }, (_, i) => ({ name: `V_${i}`, value: `é\u{1F600}${i}` })) }] } };
  const body = [
    JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }),
    '',
    JSON.stringify({ type: 'MODIFIED', object: big }),
    JSON.stringify({ type: 'DELETED', object: { metadata: { name: 'a' } } }),
  ].join('\n') + '\n';
  const expected: Array<[string, unknown]> = [['ADDED', { metadata: { name: 'a' } }], ['MODIFIED', big], ['DELETED', { metadata: { name: 'a' } }]];

  it('delivers the same events for one chunk, chunks of every size, and a chunk per character', function () {
    assert.deepEqual(feed([body]).events, expected);
    for (const size of [1, 2, 7, 100, 16_384, body.length - 1]) {
      const chunks = Array.from({ length: Math.ceil(body.length / size) }, (_, i) => body.slice(i * size, (i + 1) * size));
      assert.deepEqual(feed(chunks).events, expected, `chunks of ${size}`);
    }
    // A newline at a chunk's start and end, and several events in one chunk.
    const cut = body.indexOf('\n');
    assert.deepEqual(feed([body.slice(0, cut), body.slice(cut, cut + 1), body.slice(cut + 1)]).events, expected);
  });

  it('keeps an incomplete last line until its newline comes', function () {
    const r = feed([body.slice(0, -1)]);
    assert.deepEqual(r.events, expected.slice(0, 2));
  });

  it('returns an error for a line that is not JSON, after the events before it', function () {
    const r = feed([`${JSON.stringify({ type: 'ADDED', object: {} })}\n{"type":`, '"ADDED", oops}\n']);
    assert.deepEqual(r.events, [['ADDED', {}]]);
    assert.match(r.error ?? '', /the watch stream carried a line that is not JSON/);
  });

  it('delivers nothing once stopped, even from the chunk being read', function () {
    assert.deepEqual(feed([body], 1).events, expected.slice(0, 1));
  });
});
