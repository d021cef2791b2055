import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CANONICAL_GPU_MODELS,
  canonicalGpuModel,
  familyAsModelHint,
  GPU_FAMILIES,
  gpuFamily,
  gpuLabels,
  gpuNameKind,
  nominalVramBytes,
  unknownGpuNameMessage,
} from '../../core/gpu-names';
import { matchTerms, parseSelector, type Labels, type SelectorTerm } from '../../core/selector';

const TABLE: readonly (readonly [string, string])[] = [
  ['NVIDIA H100 80GB HBM3', 'H100'],
  ['NVIDIA H100 PCIe', 'H100'],
  ['NVIDIA H100 NVL', 'H100'],
  ['NVIDIA A100-SXM4-80GB', 'A100-80GB'],
  ['NVIDIA A100-PCIE-40GB', 'A100-40GB'],
  ['NVIDIA A100-SXM4-40GB', 'A100-40GB'],
  ['NVIDIA A100 80GB PCIe', 'A100-80GB'],
  ['A100 80GB', 'A100-80GB'],
  ['A100-80GB', 'A100-80GB'],
  ['a100_80gb', 'A100-80GB'],
  ['A100 40GB', 'A100-40GB'],
  // No size said: family A100, its exact model unknown.
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
    assert.equal(canonicalGpuModel('NVIDIA A100-PCIE-40GB'), 'A100-40GB');
    assert.equal(canonicalGpuModel('A100 40GB'), 'A100-40GB');
    assert.equal(canonicalGpuModel('A100-40GB-80GB'), 'A100', 'a name that says both sizes is neither model');
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

  test('property: no name mentioning 40GB becomes A100-80GB, and none mentioning 80GB becomes A100-40GB', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, after) => {
        assert.notEqual(canonicalGpuModel(`${before}A100-PCIE-40GB${after}`), 'A100-80GB');
        assert.notEqual(canonicalGpuModel(`${before}A100 80GB PCIe${after}`), 'A100-40GB');
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

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
/** nvidia-smi's names and memory.total (MiB) for real cards, with the labels rc derives. */
const REAL: readonly { name: string; mib: number; model: string; family: string; vramGiB: number }[] = [
  { name: 'NVIDIA A100-SXM4-40GB', mib: 40960, model: 'A100-40GB', family: 'A100', vramGiB: 40 },
  { name: 'NVIDIA A100-SXM4-80GB', mib: 81920, model: 'A100-80GB', family: 'A100', vramGiB: 80 },
  { name: 'NVIDIA A100 80GB PCIe', mib: 81920, model: 'A100-80GB', family: 'A100', vramGiB: 80 },
  { name: 'NVIDIA H100 80GB HBM3', mib: 81559, model: 'H100', family: 'H100', vramGiB: 80 },
  { name: 'NVIDIA GeForce RTX 4090', mib: 24564, model: 'RTX4090', family: 'RTX4090', vramGiB: 24 },
  { name: 'NVIDIA L4', mib: 23034, model: 'L4', family: 'L4', vramGiB: 24 },
];

describe('families and nominal memory', () => {
  test('the real cards get their exact model, their family, the nominal vram and the reported total', () => {
    for (const c of REAL) {
      assert.deepEqual(
        gpuLabels(c.name, c.mib),
        [
          { key: 'gpu_model', value: c.model },
          { key: 'gpu_family', value: c.family },
          { key: 'vram', value: String(c.vramGiB * GIB) },
          { key: 'vram_total_bytes', value: String(c.mib * MIB) },
        ],
        c.name,
      );
    }
    assert.deepEqual(gpuLabels('NVIDIA L4', null), [
      { key: 'gpu_model', value: 'L4' },
      { key: 'gpu_family', value: 'L4' },
    ]);
  });

  test('a model rc does not know, or a size its model is not sold with, keeps the reported size', () => {
    assert.equal(nominalVramBytes('SOMEFUTUREGPU', 12345 * MIB), 12345 * MIB);
    // An H100 of 64 GB is not in the table: 80 GB would overstate it.
    assert.equal(nominalVramBytes('H100', 65536 * MIB), 65536 * MIB);
    // The variants of one model: a V100 of 32 GB, an H100 NVL of 94 GB.
    assert.equal(nominalVramBytes('V100', 32510 * MIB), 32 * GIB);
    assert.equal(nominalVramBytes('V100', 16160 * MIB), 16 * GIB);
    assert.equal(nominalVramBytes('H100', 95830 * MIB), 94 * GIB);
  });

  test('every family has its name; a model is in its family, an unknown one is its own', () => {
    assert.equal(gpuFamily('A100-80GB'), 'A100');
    assert.equal(gpuFamily('NVIDIA A100-PCIE-40GB'), 'A100');
    assert.equal(gpuFamily('A100'), 'A100');
    assert.equal(gpuFamily('H100'), 'H100');
    assert.equal(gpuFamily('NVIDIA Some Future GPU'), 'SOMEFUTUREGPU');
    assert.ok(GPU_FAMILIES.includes('A100') && !GPU_FAMILIES.includes('A100-80GB'));
    for (const m of CANONICAL_GPU_MODELS) assert.ok(GPU_FAMILIES.includes(gpuFamily(m)), m);
    assert.deepEqual(['A100', 'a100', 'A100-80GB', 'A100 40GB', 'H100', 'RTX 4090', 'MI300X'].map(gpuNameKind), [
      'family',
      'family',
      'model',
      'model',
      'family',
      'family',
      'family',
    ]);
  });

  test('gpu_model=A100 (a family as a model) gets a hint; exact models and one-model families do not', () => {
    const hint = (selector: string) => {
      const p = parseSelector(selector);
      assert.ok(p.ok);
      return familyAsModelHint(p.terms);
    };
    assert.equal(hint('gpu_model=A100'), 'gpu_model is the exact model (A100-40GB or A100-80GB): did you mean gpu_family=A100 (any A100)?');
    assert.match(hint("vram>=40G,gpu_model='a100'") ?? '', /gpu_family=A100/);
    for (const none of ['gpu_model=A100-80GB', 'gpu_model=H100', 'gpu_family=A100', 'gpu_model!=A100', 'vram>=40G']) assert.equal(hint(none), null, none);
  });

  test('the refusal of an unknown name lists the families and models rc knows', () => {
    const m = unknownGpuNameMessage('Z999:2', 'Z999');
    assert.match(m, /^--gpu Z999:2: no GPU family or model is called Z999; rc knows /);
    assert.match(m, /A100 \(any of A100-40GB, A100-80GB\), A100-40GB, A100-80GB, H100/);
  });
});

describe('gpu_family in selectors', () => {
  const match = (selector: string, labels: Labels) => {
    const p = parseSelector(selector);
    assert.ok(p.ok, selector);
    return matchTerms(p.terms, labels);
  };

  test('gpu_family=A100 takes both A100 models, normalised as gpu_model is; gpu_model=A100-80GB only the 80 GB one', () => {
    const a40 = Object.fromEntries(gpuLabels('NVIDIA A100-SXM4-40GB', 40960).map((l) => [l.key, l.value]));
    const a80 = Object.fromEntries(gpuLabels('NVIDIA A100 80GB PCIe', 81920).map((l) => [l.key, l.value]));
    for (const sel of ['gpu_family=A100', 'gpu_family=a100', "gpu_family='NVIDIA A100'"]) {
      assert.deepEqual([match(sel, a40), match(sel, a80)], [true, true], sel);
    }
    assert.deepEqual([match('gpu_model=A100-80GB', a40), match('gpu_model=A100-80GB', a80)], [false, true]);
    assert.deepEqual([match('gpu_model=A100-40GB', a40), match('gpu_model=A100-40GB', a80)], [true, false]);
    assert.deepEqual([match('gpu_model=A100', a40), match('gpu_model=A100', a80)], [false, false]);
  });

  test('a device without gpu_family (a worker older than the label) has its gpu_model family', () => {
    assert.equal(match('gpu_family=A100', { gpu_model: 'A100-80GB' }), true);
    assert.equal(match('gpu_family=H100', { gpu_model: 'NVIDIA H100 80GB HBM3' }), true);
    assert.equal(match('gpu_family=A100', { gpu_model: 'H100' }), false);
    assert.equal(match('gpu_family=A100', { vram: '1' }), false, 'no gpu_model either: label missing');
    // A device's own gpu_family wins over the derivation.
    assert.equal(match('gpu_family=A100', { gpu_model: 'A100-80GB', gpu_family: 'OTHER' }), false);
  });

  test('vram>=80G takes every 80 GB card, by its nominal size', () => {
    for (const c of REAL) {
      const labels = Object.fromEntries(gpuLabels(c.name, c.mib).map((l) => [l.key, l.value]));
      assert.equal(match('vram>=80G', labels), c.vramGiB >= 80, c.name);
      assert.equal(match('vram_total_bytes>=80G', labels), c.mib >= 80 * 1024, c.name);
    }
  });
});
