// Selectors pick devices by their labels: `vram>=40G, vendor=nvidia, rack!=b12`.
//
// Decisions worth knowing:
// - An empty or whitespace-only selector has zero terms and matches every device.
// - A device without the term's key never matches, whatever the operator.
// - If both sides parse as sizes/numbers they compare numerically (for `=` and
//   `!=` too, so `vram=80G` equals a label of 85899345920); otherwise as text,
//   `=`/`!=` by exact equality and `>=`/`<=` by plain Unicode code-point order.
// - `gpu_model` and `gpu_family` values are normalised with canonicalGpuModel
//   on both sides and always compare as text. A device without `gpu_family`
//   (a worker older than that label) has its gpu_model's family.
// - Quoting never changes a value's type: `'40G'` is still a size.
// - Columns are 1-based UTF-16 positions (what JavaScript string indexes count).
// - Explanations use ASCII `!=` for inequality, never `≠`.

import { canonicalGpuModel, gpuFamily } from './gpu-names';
import { formatSize, parseSize } from './size';

export type SelectorOp = '=' | '!=' | '>=' | '<=';

export interface SelectorTerm {
  key: string;
  op: SelectorOp;
  value: string;
  /** 1-based column where the term starts in the input. */
  column: number;
  /** The term as written, trimmed. */
  text: string;
}

export interface SelectorParseError {
  /** The offending term as written, trimmed; '' for an empty term or stray comma. */
  term: string;
  column: number;
  message: string;
}

export type ParseResult = { ok: true; terms: SelectorTerm[] } | { ok: false; error: SelectorParseError };

export type Labels = Readonly<Record<string, string>>;

export interface TermVerdict {
  term: SelectorTerm;
  ok: boolean;
  reason: string;
}

const GPU_MODEL_KEY = 'gpu_model';
const GPU_FAMILY_KEY = 'gpu_family';
/** Keys whose values are GPU names (core/gpu-names.ts). */
const GPU_NAME_KEYS: readonly string[] = [GPU_MODEL_KEY, GPU_FAMILY_KEY];
const OPS: readonly string[] = ['=', '!=', '>=', '<='];
const KEY_START = /[A-Za-z_]/;
const KEY_CHAR = /[A-Za-z0-9_.-]/;
// `~` counts as an operator character so `vram~40G` reports an unknown operator.
const OP_CHAR = /[=!<>~]/;
const NOT_IN_BARE_VALUE = /[=!<>'"]/;
// What else a bare value may not hold: anything but letters, digits and _ . + - / : @ % (quoted values may hold anything).
const NOT_GRAMMAR = /[^\p{L}\p{N}_.+\-/:@%]/u;
const SPACE = /\s/;
// Values that formatSelector may write unquoted; stricter than the parser
// (no `~`) so that a value is never read back as part of the operator.
const SAFE_BARE_VALUE = /^[^\s,'"=!<>~]+$/;
const KEY_RULE = 'keys are letters, digits, _ . -';
const OP_RULE = 'use =, !=, >= or <=';

// ---------------------------------------------------------------- parsing

type Failure = { ok: false; error: SelectorParseError };
type TermStep = { ok: true; term: SelectorTerm; end: number } | Failure;
type ValueStep = { ok: true; value: string; end: number } | Failure;

/** Where the term being parsed starts; used to word error messages. */
interface TermContext {
  input: string;
  start: number;
}

/** Parses a selector. Never throws: bad input gives `{ ok: false, error }`. */
export function parseSelector(input: string): ParseResult {
  if (typeof input !== 'string') return fail('', 1, 'selector must be text');
  if (input.trim() === '') return { ok: true, terms: [] };
  const terms: SelectorTerm[] = [];
  let pos = skipSpace(input, 0);
  for (;;) {
    const step = parseTerm(input, pos, terms.length === 0);
    if (!step.ok) return step;
    terms.push(step.term);
    // parseTerm ends at the end of input or at the comma after the term.
    const comma = skipSpace(input, step.end);
    if (comma >= input.length) return { ok: true, terms };
    pos = skipSpace(input, comma + 1);
    if (pos >= input.length) return fail('', comma + 1, `trailing comma at column ${comma + 1}; remove it`);
  }
}

function parseTerm(input: string, start: number, isFirst: boolean): TermStep {
  const ctx: TermContext = { input, start };
  const col = start + 1;
  if (input.charAt(start) === ',') {
    return isFirst ? fail('', col, `leading comma at column ${col}; remove it`) : fail('', col, `empty term at column ${col} (two commas in a row?)`);
  }
  if (!KEY_START.test(input.charAt(start))) return badKeyStart(ctx);
  const keyEnd = scanWhile(input, start + 1, KEY_CHAR);
  const opStart = skipSpace(input, keyEnd);
  if (!OP_CHAR.test(input.charAt(opStart))) return badKeyOrNoOperator(ctx);
  const opEnd = scanWhile(input, opStart, OP_CHAR);
  const op = input.slice(opStart, opEnd);
  if (!isOp(op)) return failTerm(ctx, `unknown operator "${op}" in term "${rawTerm(ctx)}" at column ${col}; ${OP_RULE}`);
  const key = input.slice(start, keyEnd);
  const value = parseValue(ctx, skipSpace(input, opEnd), key, op);
  if (!value.ok) return value;
  const term: SelectorTerm = { key, op, value: value.value, column: col, text: input.slice(start, value.end).trim() };
  return checkSize(ctx, term) ?? { ok: true, term, end: value.end };
}

function parseValue(ctx: TermContext, at: number, key: string, op: SelectorOp): ValueStep {
  const { input } = ctx;
  const first = input.charAt(at);
  if (first === '' || first === ',') {
    const col = ctx.start + 1;
    return failTerm(ctx, `empty value in term "${rawTerm(ctx)}" at column ${col}; write ${key}${op}'' to match an empty label`);
  }
  return first === "'" || first === '"' ? parseQuoted(ctx, at) : parseBare(ctx, at);
}

function parseQuoted(ctx: TermContext, at: number): ValueStep {
  const { input } = ctx;
  const quote = input.charAt(at);
  const close = input.indexOf(quote, at + 1);
  const col = ctx.start + 1;
  if (close < 0) {
    const term = input.slice(ctx.start).trim();
    return fail(term, col, `unterminated quote ${quote} in term "${term}" at column ${col}; close it with ${quote}`);
  }
  const end = close + 1;
  const next = skipSpace(input, end);
  if (next < input.length && input.charAt(next) !== ',') {
    const term = rawTerm(ctx, end);
    const stray = input.charAt(next);
    return fail(term, col, `unexpected "${stray}" after quoted value in term "${term}" at column ${col}; separate terms with a comma`);
  }
  return { ok: true, value: input.slice(at + 1, close), end };
}

function parseBare(ctx: TermContext, at: number): ValueStep {
  const { input } = ctx;
  let end = at;
  while (end < input.length && !SPACE.test(input.charAt(end)) && input.charAt(end) !== ',') end++;
  const value = input.slice(at, end);
  const col = ctx.start + 1;
  const bad = NOT_IN_BARE_VALUE.exec(value);
  if (bad) {
    return failTerm(ctx, `value "${value}" in term "${rawTerm(ctx)}" at column ${col} contains "${bad[0]}"; quote the value, e.g. '${value}'`);
  }
  // A character the grammar gives no meaning (`|`, `*`, `(`...) would otherwise be read as part of the value, and a
  // gpu_model value cut short at it (H100|A100 reads as H100): refused where it stands.
  const stray = NOT_GRAMMAR.exec(value);
  if (stray) {
    const at2 = at + stray.index + 1;
    const hint =
      stray[0] === '|'
        ? 'selectors have no OR (terms are ANDed with commas); for a choice of GPU models use --gpu H100,A100'
        : `values are letters, digits and _ . + - / : @ %`;
    return fail(
      rawTerm(ctx),
      at2,
      `"${stray[0]}" at column ${at2}, in term "${rawTerm(ctx)}", is not part of the selector grammar: ${hint}; quote the value to match it as written`,
    );
  }
  const next = skipSpace(input, end);
  if (next < input.length && input.charAt(next) !== ',') {
    return failTerm(ctx, `value in term "${rawTerm(ctx)}" at column ${col} has a space; quote it or separate terms with a comma`);
  }
  return { ok: true, value, end };
}

// `vram>=40Q` is a typo for a size, not a text comparison; `vendor=40Q` is text.
function checkSize(ctx: TermContext, term: SelectorTerm): Failure | null {
  const ordered = term.op === '>=' || term.op === '<=';
  const looksNumeric = /^-?\d/.test(term.value);
  if (!ordered || !looksNumeric || GPU_NAME_KEYS.includes(term.key) || parseSize(term.value) !== null) return null;
  const col = ctx.start + 1;
  return fail(term.text, col, `bad size "${term.value}" in term "${term.text}" at column ${col}; sizes look like 40G (K, M, G, T)`);
}

function badKeyStart(ctx: TermContext): Failure {
  const raw = rawTerm(ctx);
  const col = ctx.start + 1;
  const opMatch = /^[=!<>~]+/.exec(raw);
  if (opMatch) {
    return failTerm(ctx, `missing key before "${opMatch[0]}" in term "${raw}" at column ${col}; write key${opMatch[0]}value`);
  }
  return failTerm(ctx, `bad key "${keyPart(raw)}" in term "${raw}" at column ${col}; keys start with a letter or _ and contain letters, digits, _ . -`);
}

// The key ran into something that is not an operator: a space inside the key,
// a stray character, or no operator at all.
function badKeyOrNoOperator(ctx: TermContext): Failure {
  const raw = rawTerm(ctx);
  const col = ctx.start + 1;
  if (!OP_CHAR.test(raw)) {
    return failTerm(ctx, `term "${raw}" at column ${col} has no operator; ${OP_RULE}, e.g. vram>=40G`);
  }
  const key = keyPart(raw);
  if (SPACE.test(key)) return failTerm(ctx, `key "${key}" at column ${col} has a space; ${KEY_RULE}`);
  const bad = [...key].find((ch) => !KEY_CHAR.test(ch)) ?? '';
  return failTerm(ctx, `key "${key}" at column ${col} contains "${bad}"; ${KEY_RULE}`);
}

/** The text before the first operator character, trimmed. */
function keyPart(raw: string): string {
  const op = raw.search(OP_CHAR);
  return (op < 0 ? raw : raw.slice(0, op)).trim();
}

/** The term as written, up to the next comma at or after `from`. */
function rawTerm(ctx: TermContext, from = ctx.start): string {
  const comma = ctx.input.indexOf(',', from);
  return ctx.input.slice(ctx.start, comma < 0 ? undefined : comma).trim();
}

function isOp(op: string): op is SelectorOp {
  return OPS.includes(op);
}

function skipSpace(input: string, at: number): number {
  return scanWhile(input, at, SPACE);
}

function scanWhile(input: string, at: number, pattern: RegExp): number {
  let end = at;
  while (end < input.length && pattern.test(input.charAt(end))) end++;
  return end;
}

function failTerm(ctx: TermContext, message: string): Failure {
  return fail(rawTerm(ctx), ctx.start + 1, message);
}

function fail(term: string, column: number, message: string): Failure {
  return { ok: false, error: { term, column, message } };
}

// --------------------------------------------------------------- matching

/** True when the device's labels satisfy every term (zero terms match all). */
export function matchTerms(terms: readonly SelectorTerm[], labels: Labels): boolean {
  return terms.every((term) => judgeTerm(term, labelValue(labels, term.key)).ok);
}

/** One verdict per term, with a reason a person can read. */
export function explainTerms(terms: readonly SelectorTerm[], labels: Labels): TermVerdict[] {
  return terms.map((term) => ({ term, ...judgeTerm(term, labelValue(labels, term.key)) }));
}

// Own properties only: a `constructor` key must not find Object.prototype's.
function labelValue(labels: Labels, key: string): string | undefined {
  if (!Object.hasOwn(labels, key)) {
    if (key !== GPU_FAMILY_KEY) return undefined;
    const model = labelValue(labels, GPU_MODEL_KEY);
    return model === undefined ? undefined : gpuFamily(model);
  }
  const value = labels[key];
  return typeof value === 'string' ? value : undefined;
}

/** Judges one term against one label value; the only place operators are evaluated. */
function judgeTerm(term: SelectorTerm, label: string | undefined): { ok: boolean; reason: string } {
  if (label === undefined) return { ok: false, reason: `${term.key}: label missing` };
  const sides = comparable(term, label);
  const order = compareSides(sides);
  let ok: boolean;
  let failed: string;
  switch (term.op) {
    case '=':
      ok = order === 0;
      failed = '!=';
      break;
    case '!=':
      ok = order !== 0;
      failed = '';
      break;
    case '>=':
      ok = order >= 0;
      failed = '<';
      break;
    case '<=':
      ok = order <= 0;
      failed = '>';
      break;
  }
  const shown = `${term.key}=${sides.labelText}`;
  if (ok) return { ok, reason: `${shown} ${term.op} ${sides.wantedText}` };
  // "rack=b12 = b12" would read as a success; say what was wanted instead.
  const reason = failed ? `${shown} ${failed} ${sides.wantedText}` : `${shown}, wanted != ${sides.wantedText}`;
  return { ok, reason };
}

interface Sides {
  label: string | number;
  wanted: string | number;
  labelText: string;
  wantedText: string;
}

function comparable(term: SelectorTerm, label: string): Sides {
  if (GPU_NAME_KEYS.includes(term.key)) {
    const [l, w] = [canonicalGpuModel(label), canonicalGpuModel(term.value)];
    return { label: l, wanted: w, labelText: quoteValue(l), wantedText: quoteValue(w) };
  }
  const [l, w] = [parseSize(label), parseSize(term.value)];
  const wantedText = quoteValue(term.value);
  if (l === null || w === null) return { label, wanted: term.value, labelText: quoteValue(label), wantedText };
  // Show the label the way the selector was written: as a size if it used a unit.
  const usesUnit = /[KMGT]/i.test(term.value);
  return { label: l, wanted: w, labelText: usesUnit ? showSize(l) : quoteValue(label), wantedText };
}

function compareSides({ label, wanted }: Sides): number {
  if (typeof label === 'number' && typeof wanted === 'number') return Math.sign(label - wanted);
  return compareCodePoints(String(label), String(wanted));
}

// JavaScript's `<` compares UTF-16 code units, which misorders astral characters.
function compareCodePoints(a: string, b: string): number {
  const [ia, ib] = [a[Symbol.iterator](), b[Symbol.iterator]()];
  for (;;) {
    const [ca, cb] = [ia.next(), ib.next()];
    if (ca.done || cb.done) return ca.done && cb.done ? 0 : ca.done ? -1 : 1;
    const diff = (ca.value.codePointAt(0) ?? 0) - (cb.value.codePointAt(0) ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
}

// A rounded size is marked `~` so `vram=~40G < 40G` does not look like a contradiction.
function showSize(bytes: number): string {
  const text = formatSize(bytes);
  return parseSize(text) === bytes ? text : `~${text}`;
}

// ------------------------------------------------------------- formatting

/** Canonical text for terms: `a=1,b>=2`, quoting values that need it. */
export function formatSelector(terms: readonly SelectorTerm[]): string {
  return terms.map((t) => `${t.key}${t.op}${quoteValue(t.value)}`).join(',');
}

// A value holding both quote characters cannot be written; it gets double
// quotes and will not re-parse. The parser never produces such a value.
function quoteValue(value: string): string {
  if (SAFE_BARE_VALUE.test(value)) return value;
  const quote = value.includes("'") ? '"' : "'";
  return `${quote}${value}${quote}`;
}
