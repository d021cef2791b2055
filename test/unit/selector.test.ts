import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { explainTerms, formatSelector, matchTerms, parseSelector, type Labels, type SelectorOp, type SelectorTerm } from '../../core/selector';

const GiB = 1024 ** 3;

function terms(selector: string): SelectorTerm[] {
  const parsed = parseSelector(selector);
  if (!parsed.ok) assert.fail(`${selector}: ${parsed.error.message}`);
  return parsed.terms;
}

function matches(selector: string, labels: Labels): boolean {
  return matchTerms(terms(selector), labels);
}

function reasons(selector: string, labels: Labels): string[] {
  return explainTerms(terms(selector), labels).map((v) => v.reason);
}

/** Key/op/value only: column and text depend on how the selector was written. */
function meaning(list: readonly SelectorTerm[]): [string, string, string][] {
  return list.map((t) => [t.key, t.op, t.value]);
}

describe('parseSelector: well-formed input', () => {
  test('terms carry key, op, value, column and text', () => {
    assert.deepEqual(parseSelector('vram>=40G,rack!=b12'), {
      ok: true,
      terms: [
        { key: 'vram', op: '>=', value: '40G', column: 1, text: 'vram>=40G' },
        { key: 'rack', op: '!=', value: 'b12', column: 11, text: 'rack!=b12' },
      ],
    });
  });

  test('whitespace around keys, operators, values and commas is ignored', () => {
    const parsed = parseSelector('  vram >= 40G ,\tvendor= nvidia  ');
    assert.ok(parsed.ok);
    assert.deepEqual(meaning(parsed.terms), [
      ['vram', '>=', '40G'],
      ['vendor', '=', 'nvidia'],
    ]);
    assert.deepEqual(
      parsed.terms.map((t) => [t.column, t.text]),
      [
        [3, 'vram >= 40G'],
        [17, 'vendor= nvidia'],
      ],
    );
  });

  test('empty or whitespace-only selector has zero terms and matches everything', () => {
    for (const input of ['', '   ', '\t\n']) {
      assert.deepEqual(parseSelector(input), { ok: true, terms: [] });
    }
    assert.equal(matchTerms([], {}), true);
  });

  test('quoted values may hold spaces, commas and the other quote', () => {
    assert.deepEqual(meaning(terms(`note='a, b',x="it's"`)), [
      ['note', '=', 'a, b'],
      ['x', '=', "it's"],
    ]);
  });

  test("rack='' means the empty string", () => {
    assert.deepEqual(meaning(terms("rack=''")), [['rack', '=', '']]);
    assert.equal(matches("rack=''", { rack: '' }), true);
    assert.equal(matches("rack=''", { rack: 'a3' }), false);
  });

  test('keys may contain digits, _ . and -', () => {
    assert.deepEqual(meaning(terms('_a.b-c9=1')), [['_a.b-c9', '=', '1']]);
  });

  test('a digit-led value that is not a size is text under = and !=', () => {
    assert.deepEqual(meaning(terms('driver=535.104.05,tag!=40Q')), [
      ['driver', '=', '535.104.05'],
      ['tag', '!=', '40Q'],
    ]);
  });
});

describe('parseSelector: malformed input gives a structured error with a column', () => {
  const cases: [input: string, column: number, fragment: string][] = [
    ['vram~40G', 1, 'unknown operator "~" in term "vram~40G" at column 1; use =, !=, >= or <='],
    ['a=1,vram>40G', 5, 'unknown operator ">"'],
    ['a<1', 1, 'unknown operator "<"'],
    ['a==1', 1, 'unknown operator "=="'],
    ['a=1,,b=2', 5, 'empty term at column 5 (two commas in a row?)'],
    ['a=1, ,b=2', 6, 'empty term at column 6'],
    ['vram>=8,', 8, 'trailing comma at column 8'],
    ['a=1 , ', 5, 'trailing comma at column 5'],
    [',a=1', 1, 'leading comma at column 1'],
    ['  ,a=1', 3, 'leading comma at column 3'],
    ['vram>=40Q', 1, 'bad size "40Q" in term "vram>=40Q" at column 1; sizes look like 40G (K, M, G, T)'],
    ['a=1,vram<=1.5.3', 5, 'bad size "1.5.3"'],
    ["vram>='40Q'", 1, 'bad size "40Q"'],
    ['my key=1', 1, 'key "my key" at column 1 has a space; keys are letters, digits, _ . -'],
    ['a=1,my key=1', 5, 'key "my key" at column 5 has a space'],
    ['my$key=1', 1, 'key "my$key" at column 1 contains "$"'],
    ['1abc=1', 1, 'bad key "1abc"'],
    ['vram', 1, 'term "vram" at column 1 has no operator'],
    ['a=1, vram 40G', 6, 'has no operator'],
    ['=1', 1, 'missing key before "=" in term "=1" at column 1'],
    ['a=1,>=2', 5, 'missing key before ">="'],
    ['rack=', 1, 'empty value in term "rack=" at column 1; write rack=\'\' to match an empty label'],
    ['a=1,rack= ,b=2', 5, 'empty value'],
    ["a='b", 1, 'unterminated quote \' in term "a=\'b" at column 1'],
    ['a=1,b="c, d', 5, 'unterminated quote "'],
    ["a='b'c", 1, 'unexpected "c" after quoted value'],
    ["a='b' c=1", 1, 'unexpected "c" after quoted value'],
    ['a=b c', 1, 'has a space'],
    ['a=b=c', 1, 'value "b=c" in term "a=b=c" at column 1 contains "="'],
    ["a=b'c'", 1, `contains "'"`],
  ];
  for (const [input, column, fragment] of cases) {
    test(JSON.stringify(input), () => {
      const parsed = parseSelector(input);
      assert.equal(parsed.ok, false);
      if (parsed.ok) return;
      assert.equal(parsed.error.column, column);
      assert.ok(parsed.error.message.includes(fragment), parsed.error.message);
      assert.ok(parsed.error.message.includes(`column ${column}`), parsed.error.message);
    });
  }
});

describe('manual selector table', () => {
  test('vram>=40G: at least 40 GiB', () => {
    assert.equal(matches('vram>=40G', { vram: '85899345920' }), true);
    assert.equal(matches('vram>=40G', { vram: '25769803776' }), false);
    assert.equal(matches('vram>=40G', { vram: String(40 * GiB) }), true);
    assert.equal(matches('vram>=40G', { vram: String(40 * GiB - 1) }), false);
    assert.equal(matches('vram>=40G', { vram: '80G' }), true, 'declared sizes count too');
    assert.equal(matches('vram>=40G', { vram: '40GiB' }), true);
  });

  test('vendor=nvidia,class=train: both must hold', () => {
    const selector = 'vendor=nvidia,class=train';
    assert.equal(matches(selector, { vendor: 'nvidia', class: 'train' }), true);
    assert.equal(matches(selector, { vendor: 'nvidia', class: 'infer' }), false);
    assert.equal(matches(selector, { vendor: 'amd', class: 'train' }), false);
    assert.equal(matches(selector, { vendor: 'nvidia' }), false);
    assert.equal(matches(selector, { class: 'train' }), false);
  });

  test('rack!=b12: has a rack label and it is not b12', () => {
    assert.equal(matches('rack!=b12', { rack: 'a3' }), true);
    assert.equal(matches('rack!=b12', { rack: 'b12' }), false);
    assert.equal(matches('rack!=b12', {}), false);
  });

  test('disk_free_bytes>=500G with sizes', () => {
    assert.equal(matches('disk_free_bytes>=500G', { disk_free_bytes: String(600 * GiB) }), true);
    assert.equal(matches('disk_free_bytes>=500G', { disk_free_bytes: String(500 * GiB) }), true);
    assert.equal(matches('disk_free_bytes>=500G', { disk_free_bytes: String(499 * GiB) }), false);
    assert.equal(matches('disk_free_bytes>=500G', { disk_free_bytes: '1T' }), true);
    assert.equal(matches('disk_free_bytes>=0.5T', { disk_free_bytes: '512G' }), true);
  });
});

describe('matching rules', () => {
  test('a missing label fails every operator', () => {
    for (const op of ['=', '!=', '>=', '<='] as const) {
      const selector = `rack${op}b12`;
      assert.equal(matches(selector, { other: 'b12' }), false, selector);
      assert.deepEqual(reasons(selector, {}), ['rack: label missing']);
    }
  });

  test('inherited object properties are not labels', () => {
    assert.equal(matches('constructor!=x', {}), false);
    assert.equal(matches('toString!=x', {}), false);
  });

  test('numbers compare as numbers, not as text', () => {
    assert.equal(matches('cpus>=8', { cpus: '16' }), true);
    assert.equal(matches('cpus>=8', { cpus: '9' }), true);
    assert.equal(matches('cpus>=8', { cpus: '7' }), false);
    assert.equal(matches('cpus<=8', { cpus: '10' }), false);
    assert.equal(matches('cpus=8', { cpus: '8.0' }), true);
    assert.equal(matches('cpus!=8', { cpus: '08' }), false);
    assert.equal(matches('temp>=-3', { temp: '-2' }), true);
    assert.equal(matches('vram=80G', { vram: '85899345920' }), true);
  });

  test('a character the grammar does not define is refused where it stands, never read as part of a value', () => {
    for (const [input, column, text] of [
      [
        'gpu_model=H100|A100',
        15,
        /"\|" at column 15, in term "gpu_model=H100\|A100", is not part of the selector grammar: selectors have no OR .*--gpu H100,A100/,
      ],
      ['vram>=40G,rack=b*', 17, /"\*" at column 17/],
      ['zone=(a)', 6, /"\(" at column 6/],
      ['a=1;b', 4, /";" at column 4/],
      ['host=x$y', 7, /"\$" at column 7/],
    ] as const) {
      const p = parseSelector(input);
      assert.equal(p.ok, false, input);
      if (!p.ok) {
        assert.equal(p.error.column, column, input);
        assert.match(p.error.message, text, input);
      }
    }
    // What values are made of still parses, and a quoted value may hold anything.
    for (const ok of ['host=gpu-box_1.lab:8080', 'owner=a@b.org', 'path=/data/x+y', 'share=50%', 'gpu_model=A100-80GB', "x='a|b'", 'zone=äö']) {
      assert.equal(parseSelector(ok).ok, true, ok);
    }
    // H100|A100 used to select the H100s (the model's name cut short at the |).
    assert.equal(matches("gpu_model='H100|A100'", { gpu_model: 'A100' }), false);
  });

  test('text compares as text: exact equality and code-point order', () => {
    assert.equal(matches('vendor=nvidia', { vendor: 'NVIDIA' }), false);
    assert.equal(matches('zone>=b', { zone: 'c' }), true);
    assert.equal(matches('zone>=b', { zone: 'a' }), false);
    assert.equal(matches('zone<=b', { zone: 'B' }), true, 'upper case sorts first');
    assert.equal(matches('zone>=b', { zone: '9' }), false, 'a number against text compares as text');
    // U+1F600 is above U+FF61 by code point, though its UTF-16 code units sort below.
    assert.equal(matches("s>='\uFF61'", { s: '\u{1F600}' }), true);
  });
});

describe('explainTerms reasons', () => {
  test('sizes are shown as sizes when the selector used a unit', () => {
    assert.deepEqual(reasons('vram>=40G', { vram: '25769803776' }), ['vram=24G < 40G']);
    assert.deepEqual(reasons('vram>=40G', { vram: '85899345920' }), ['vram=80G >= 40G']);
    assert.deepEqual(reasons('vram>=40G', { vram: String(40 * GiB - 1) }), ['vram=~40G < 40G']);
    assert.deepEqual(reasons('cpus>=8', { cpus: '4' }), ['cpus=4 < 8']);
    assert.deepEqual(reasons('cpus<=8', { cpus: '16' }), ['cpus=16 > 8']);
  });

  test('inequality is written !=', () => {
    assert.deepEqual(reasons('rack!=b12', { rack: 'b12' }), ['rack=b12, wanted != b12']);
    assert.deepEqual(reasons('rack!=b12', { rack: 'a3' }), ['rack=a3 != b12']);
    assert.deepEqual(reasons('gpu_model=A100-80GB', { gpu_model: 'A100' }), ['gpu_model=A100 != A100-80GB']);
    assert.deepEqual(reasons("gpu_model='RTX 5090'", { gpu_model: 'NVIDIA GeForce RTX 5090' }), ['gpu_model=RTX5090 = RTX5090']);
  });

  test('values that need quotes are shown quoted', () => {
    assert.deepEqual(reasons("rack=''", { rack: 'a 3' }), ["rack='a 3' != ''"]);
  });

  test('one verdict per term, in order', () => {
    const verdicts = explainTerms(terms('vendor=nvidia,rack!=b12'), { vendor: 'nvidia' });
    assert.deepEqual(
      verdicts.map((v) => [v.term.key, v.ok]),
      [
        ['vendor', true],
        ['rack', false],
      ],
    );
  });
});

describe('formatSelector', () => {
  test('canonical text, quoting values that need it', () => {
    assert.equal(formatSelector(terms(' a = 1 , b >= 2G ')), 'a=1,b>=2G');
    assert.equal(formatSelector(terms(`x='a b',y="it's",z='',w='~v'`)), `x='a b',y="it's",z='',w='~v'`);
    assert.equal(formatSelector([]), '');
  });
});

// ------------------------------------------------------------ properties

const SELECTOR_ALPHABET = [...`=!<>,'" abcz019GKMT`, 'vram', 'gpu_model', '40G', '>=', '!=', '<='];
const selectorish = fc.array(fc.constantFrom(...SELECTOR_ALPHABET), { maxLength: 24 }).map((parts) => parts.join(''));
const keyArb = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.-]{0,8}$/);
const opArb = fc.constantFrom<SelectorOp>('=', '!=', '>=', '<=');
// Any text without both quote characters, since such a value cannot be written.
const valueArb = fc
  .oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.constantFrom('40G', '1.5T', '8', '-3', '', ' ', 'a,b', '~x', 'RTX 5090'))
  .filter((v) => !(v.includes("'") && v.includes('"')));
const labelsArb = fc.dictionary(
  fc.constantFrom('vram', 'rack', 'cpus', 'gpu_model', 'a'),
  fc.constantFrom('40G', '85899345920', 'b12', 'a3', '8', '16', 'RTX5090', 'A100', ''),
);

function termArb(): fc.Arbitrary<SelectorTerm> {
  return (
    fc
      .record({ key: keyArb, op: opArb, value: valueArb })
      .map(({ key, op, value }) => ({ key, op, value, column: 0, text: '' }))
      // Ordered comparisons reject digit-led values that are not sizes.
      .filter((t) => parseSelector(formatSelector([t])).ok)
  );
}

describe('selector properties', () => {
  const runs = { numRuns: 3000 };

  test('parseSelector never throws, and errors carry a column inside the input', () => {
    for (const arbitrary of [fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), selectorish]) {
      fc.assert(
        fc.property(arbitrary, (input) => {
          const parsed = parseSelector(input);
          if (parsed.ok) return;
          assert.ok(parsed.error.column >= 1 && parsed.error.column <= input.length + 1, JSON.stringify(parsed));
          assert.ok(parsed.error.message.includes(`column ${parsed.error.column}`));
        }),
        runs,
      );
    }
  });

  test('the selector alphabet reaches both accepted and rejected inputs', () => {
    const samples = fc.sample(selectorish, { numRuns: 3000, seed: 1 });
    const outcomes = new Set(samples.map((s) => parseSelector(s).ok));
    assert.deepEqual([...outcomes].sort(), [false, true]);
  });

  test('a formatted selector re-parses to the same terms', () => {
    fc.assert(
      fc.property(fc.array(termArb(), { maxLength: 5 }), (list) => {
        const again = parseSelector(formatSelector(list));
        assert.ok(again.ok);
        assert.deepEqual(meaning(again.terms), meaning(list));
      }),
      runs,
    );
  });

  test('any accepted input formats and re-parses to the same terms', () => {
    fc.assert(
      fc.property(selectorish, (input) => {
        const parsed = parseSelector(input);
        if (!parsed.ok) return;
        const again = parseSelector(formatSelector(parsed.terms));
        assert.ok(again.ok);
        assert.deepEqual(meaning(again.terms), meaning(parsed.terms));
      }),
      runs,
    );
  });

  test('matchTerms equals every(explainTerms(...).ok)', () => {
    fc.assert(
      fc.property(fc.array(termArb(), { maxLength: 4 }), labelsArb, (list, labels) => {
        const verdicts = explainTerms(list, labels);
        assert.equal(
          matchTerms(list, labels),
          verdicts.every((v) => v.ok),
        );
        assert.equal(verdicts.length, list.length);
      }),
      runs,
    );
  });
});
