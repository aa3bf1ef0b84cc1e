import assert from 'node:assert/strict';
import { allocatableReservation, formatResourceList, hugePageResourceName, machineCapacity, nodeAllocatable, thresholdQuantity } from '../../core/node/allocatable.ts';
import { formatQuantity, parseQuantity, quantityOf } from '../../core/node/resource-quantity.ts';

/** A 2-CPU node with 4050864Ki of memory and an 18446032Ki root filesystem (a real node's figures). */
const MACHINE = { numCores: 2, memoryCapacityBytes: 4050864n * 1024n, rootfsCapacityBytes: 18446032n * 1024n, hugePages: [{ pageSizeKiB: 2048, numPages: 0 }] };
const DEFAULTS = { systemReserved: {}, kubeReserved: {}, evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' } };

describe('node capacity and allocatable', function () {
  it('writes quantities in apimachinery\'s canonical form', function () {
    const cases: Array<[string, string]> = [
      ['100Mi', '100Mi'], ['0.5Gi', '512Mi'], ['1.5', '1500m'], ['500m', '500m'], ['2000m', '2'], ['1000', '1k'], ['1e3', '1k'],
      ['110', '110'], ['10G', '10G'], ['0', '0'], ['1024', '1024'], ['1Gi', '1Gi'], ['1.5Gi', '1536Mi'],
    ];
    for (const [input, want] of cases) assert.equal(formatQuantity(parseQuantity(input)), want, input);
    // BinarySI integers: the largest suffix that divides, or plain bytes.
    assert.equal(formatQuantity(quantityOf(4050864n * 1024n, 'BinarySI')), '4050864Ki');
    assert.equal(formatQuantity(quantityOf(16999863064n, 'BinarySI')), '16999863064');
    assert.equal(formatQuantity(quantityOf(512n, 'BinarySI')), '512');
    assert.throws(() => parseQuantity('ten'), /invalid quantity "ten"/);
  });

  it('capacity from the machine: cpu, memory, hugepages, pods, ephemeral-storage', function () {
    assert.deepEqual(formatResourceList(machineCapacity(MACHINE, 110)), { cpu: '2', memory: '4050864Ki', 'hugepages-2Mi': '0', pods: '110', 'ephemeral-storage': '18446032Ki' });
    assert.equal(hugePageResourceName(1048576), 'hugepages-1Gi');
  });

  it('allocatable with the default eviction thresholds matches upstream to the byte', function () {
    const cap = machineCapacity(MACHINE, 110);
    const alloc = nodeAllocatable(cap, allocatableReservation(cap, DEFAULTS));
    // Upstream: memory 4050864Ki − 100Mi; ephemeral-storage − int64(capacity × float32(0.1)).
    assert.deepEqual(formatResourceList(alloc), { cpu: '2', memory: '3948464Ki', 'hugepages-2Mi': '0', pods: '110', 'ephemeral-storage': '16999863064' });
  });

  it('subtracts systemReserved and kubeReserved, floors at 0, and takes huge pages out of memory', function () {
    const cap = machineCapacity({ ...MACHINE, hugePages: [{ pageSizeKiB: 2048, numPages: 512 }] }, 110);
    const reservation = allocatableReservation(cap, {
      systemReserved: { cpu: '500m', memory: '1Gi', pid: '100' },
      kubeReserved: { cpu: '250m', 'ephemeral-storage': '1Gi' },
      evictionHard: { 'memory.available': '200Mi', 'nodefs.available': '5Gi' },
    });
    assert.deepEqual(Object.keys(reservation).sort(), ['cpu', 'ephemeral-storage', 'memory'], 'pid is not in capacity');
    const alloc = formatResourceList(nodeAllocatable(cap, reservation));
    assert.equal(alloc.cpu, '1250m');
    // 4050864Ki − 1Gi − 200Mi − 1Gi of huge pages (512 × 2Mi)
    assert.equal(alloc.memory, `${4050864 - 1048576 - 204800 - 1048576}Ki`);
    assert.equal(alloc['hugepages-2Mi'], '1Gi');
    assert.equal(alloc['ephemeral-storage'], `${18446032 - 1048576 - 5242880}Ki`);
    const tiny = machineCapacity({ ...MACHINE, memoryCapacityBytes: 64n * 1024n * 1024n }, 110);
    assert.equal(formatResourceList(nodeAllocatable(tiny, allocatableReservation(tiny, DEFAULTS))).memory, '0', 'never below 0');
  });

  it('percentage thresholds use a float32 percentage, as upstream parses them', function () {
    const cap = quantityOf(18446032n * 1024n, 'BinarySI');
    assert.equal(thresholdQuantity('10%', cap).milli / 1000n, 1888873704n);
    assert.equal(thresholdQuantity('0%', cap).milli, 0n);
    assert.equal(formatQuantity(thresholdQuantity('100Mi', cap)), '100Mi');
  });
});
