import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { zodMessage } from '../../protocol/zod-message';

const fail = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  assert.equal(r.success, false);
  return r.error!;
};

test('a refused value is told as "where: what", the first issue only; a whole-value issue as just "what"', () => {
  const schema = z.object({ argv: z.array(z.string('a word must be text')), n: z.number('a number') });
  assert.equal(zodMessage(fail(schema, { argv: ['a', 5], n: 'x' })), 'argv.1: a word must be text');
  assert.equal(zodMessage(fail(z.string().min(1, 'submitter is required'), '')), 'submitter is required');
});

test('a caller may word an issue itself, and keeps zod words for the rest', () => {
  const schema = z.strictObject({ a: z.string('text') });
  const say = (issue: z.core.$ZodIssue, where: string) => (issue.code === 'unrecognized_keys' ? `${where}unknown field ${issue.keys.join(', ')}` : undefined);
  assert.equal(zodMessage(fail(schema, { a: 'x', b: 1 }), say), 'unknown field b');
  assert.equal(zodMessage(fail(schema, { a: 1 }), say), 'a: text');
});
