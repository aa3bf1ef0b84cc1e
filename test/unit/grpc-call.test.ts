import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { rpcErrorText, unary } from '../../core/util/grpc-call.ts';

describe('gRPC call helpers of the SDK (core/util/grpc-call.ts)', function () {
  it('rpcErrorText prints a status as Go\'s gRPC does, and anything else as its message', function () {
    const err = Object.assign(new Error('4 DEADLINE_EXCEEDED: late'), { code: grpc.status.DEADLINE_EXCEEDED, details: 'late' });
    assert.equal(rpcErrorText(err), 'rpc error: code = DeadlineExceeded desc = late');
    assert.equal(rpcErrorText({ code: grpc.status.UNKNOWN, details: 'driver said no' }), 'rpc error: code = Unknown desc = driver said no');
    assert.equal(rpcErrorText({ code: 99, message: 'odd' }), 'rpc error: code = 99 desc = odd');
    assert.equal(rpcErrorText(new Error('plain')), 'plain');
    assert.equal(rpcErrorText('text'), 'text');
  });

  it('unary: a method the client lacks is refused; a call passes the deadline and settles with the answer or the error', async function () {
    await assert.rejects(unary({} as grpc.Client, 'Missing', {}, 1000), /^Error: no method Missing$/);
    let deadline: unknown;
    const answering = { Call: (_req: object, opts: grpc.CallOptions, cb: (e: null, r: object) => void) => { deadline = opts.deadline; cb(null, { ok: true }); } };
    const before = Date.now();
    assert.deepEqual(await unary(answering as unknown as grpc.Client, 'Call', {}, 5000), { ok: true });
    assert.ok(typeof deadline === 'number' && deadline >= before + 5000 && deadline <= Date.now() + 5000, 'deadline timeoutMs from now');
    const failing = { Call: (_req: object, _opts: grpc.CallOptions, cb: (e: object) => void) => cb({ code: grpc.status.UNAVAILABLE, details: 'gone' }) };
    await assert.rejects(unary(failing as unknown as grpc.Client, 'Call', {}, 5000), (e: unknown) => rpcErrorText(e) === 'rpc error: code = Unavailable desc = gone');
  });
});
