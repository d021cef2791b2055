import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CANONICAL_GPU_MODELS, canonicalGpuModel } from '../../core/gpu-names';
import { matchTerms, parseSelector, type Labels, type SelectorTerm } from '../../core/selector';

const TABLE: readonly (readonly [string, string])[] = [
  ['NVIDIA H100 80GB HBM3', 'H100'],
  ['NVIDIA H100 PCIe', 'H100'],
  ['NVIDIA H100 NVL', 'H100'],
  ['NVIDIA A100-SXM4-80GB', 'A100-80GB'],
  ['NVIDIA A100-PCIE-40GB', 'A100'],
  ['NVIDIA A100-SXM4-40GB', 'A100'],
  ['NVIDIA A100 80GB PCIe', 'A100-80GB'],
  ['A100 80GB', 'A100-80GB'],
  ['A100-80GB', 'A100-80GB'],
  ['a100_80gb', 'A100-80GB'],
  ['A100', 'A100'],
  ['NVIDIA GeForce RTX 5090', 'RTX5090'],
  ['5090', 'RTX5090'],
  ['RTX 5090', 'RTX5090'],
  ['rtx5090', 'RTX5090'],
  ['GeForce RTX 5090', 'RTX5090'],
  ['NVIDIA GeForce RTX 5080', 'RTX5080'],
  ['NVIDIA GeForce RTX 4090', 'RTX4090'],
  ['NVIDIA GeForce RTX 3090', 'RTX3090'],
  ['NVIDIA RTX A6000', 'A6000'],
  ['NVIDIA L4', 'L4'],
  ['Tesla T4', 'T4'],
  ['NVIDIA A10', 'A10'],
  ['NVIDIA A10G', 'A10G'],
  ['NVIDIA L40S', 'L40S'],
  ['Tesla V100-SXM2-16GB', 'V100'],
  ['Tesla V100-PCIE-32GB', 'V100'],
  ['NVIDIA H200', 'H200'],
  ['NVIDIA H200 NVL', 'H200'],
  ['NVIDIA B200', 'B200'],
  ['NVIDIA B300', 'B300'],
];

describe('canonicalGpuModel', () => {
  for (const [name, canonical] of TABLE) {
    test(`${name} → ${canonical}`, () => {
      assert.equal(canonicalGpuModel(name), canonical);
    });
  }

  test('canonical names map to themselves', () => {
    for (const name of CANONICAL_GPU_MODELS) assert.equal(canonicalGpuModel(name), name);
  });

  test('A10 does not swallow A100, and an A100 40GB is never the 80GB model', () => {
    assert.equal(canonicalGpuModel('NVIDIA A100-PCIE-40GB'), 'A100');
    assert.equal(canonicalGpuModel('A100 40GB'), 'A100');
    assert.equal(canonicalGpuModel('NVIDIA A10'), 'A10');
    assert.notEqual(canonicalGpuModel('A1000'), 'A100');
    assert.notEqual(canonicalGpuModel('A1000'), 'A10');
  });

  test('variants that are different cards stay distinct', () => {
    assert.equal(canonicalGpuModel('NVIDIA GeForce RTX 3090 Ti'), 'RTX3090TI');
    assert.equal(canonicalGpuModel('NVIDIA H20'), 'H20');
    assert.equal(canonicalGpuModel('NVIDIA L40'), 'L40');
  });

  test('unknown names fall back to prefixes stripped, spaces removed, upper case', () => {
    assert.equal(canonicalGpuModel('NVIDIA Some Future GPU'), 'SOMEFUTUREGPU');
    assert.equal(canonicalGpuModel('Tesla K80'), 'K80');
    assert.equal(canonicalGpuModel(''), '');
  });

  test('property: never throws and is idempotent', () => {
    const arbitraries = [
      fc.string({ unit: 'binary' }),
      fc.string({ unit: 'grapheme' }),
      // Pieces of real names, so the recognised paths are exercised too.
      fc
        .array(
          fc.constantFrom('NVIDIA', 'GeForce', 'Tesla', 'RTX', 'A100', 'A10', 'H100', '80GB', '40GB', 'SXM4', 'PCIe', '5090', 'L4', '0', 'G', ' ', '-', '_'),
          { maxLength: 6 },
        )
        .map((parts) => parts.join('')),
    ];
    for (const arbitrary of arbitraries) {
      fc.assert(
        fc.property(arbitrary, (name) => {
          const once = canonicalGpuModel(name);
          assert.equal(canonicalGpuModel(once), once);
        }),
        { numRuns: 3000 },
      );
    }
  });

  test('property: no name mentioning 40GB becomes A100-80GB', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, after) => {
        assert.notEqual(canonicalGpuModel(`${before}A100-PCIE-40GB${after}`), 'A100-80GB');
      }),
      { numRuns: 3000 },
    );
  });
});

describe('gpu_model in selectors', () => {
  function terms(selector: string): SelectorTerm[] {
    const parsed = parseSelector(selector);
    assert.ok(parsed.ok, selector);
    return parsed.terms;
  }

  test('5090, RTX5090 and "RTX 5090" select the same devices', () => {
    const devices: Labels[] = [{ gpu_model: 'RTX5090' }, { gpu_model: 'NVIDIA GeForce RTX 5090' }];
    for (const selector of ['gpu_model=5090', 'gpu_model=RTX5090', "gpu_model='RTX 5090'", 'gpu_model="RTX 5090"']) {
      for (const labels of devices) assert.equal(matchTerms(terms(selector), labels), true, `${selector} vs ${labels.gpu_model}`);
      assert.equal(matchTerms(terms(selector), { gpu_model: 'RTX4090' }), false, selector);
    }
  });

  test('an A100 40GB device is never selected by gpu_model=A100-80GB', () => {
    for (const label of ['A100', 'NVIDIA A100-PCIE-40GB', 'NVIDIA A100-SXM4-40GB']) {
      assert.equal(matchTerms(terms('gpu_model=A100-80GB'), { gpu_model: label }), false, label);
      assert.equal(matchTerms(terms("gpu_model='A100 80GB'"), { gpu_model: label }), false, label);
    }
    assert.equal(matchTerms(terms('gpu_model=A100-80GB'), { gpu_model: 'NVIDIA A100-SXM4-80GB' }), true);
  });

  test('gpu_model values are not sizes, even with >= or <=', () => {
    assert.equal(parseSelector('gpu_model>=5090X').ok, true);
  });
});
