// Who a token may act as (actsAs), how an actor is written in reasons and the
// audit log (actorText), and the submitter a dashboard terminal takes (webSubmitter).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { actorText, actsAs, webSubmitter, type Identity } from '../../server/auth';
import { CreateToken, Submitter, TokenSubmitter } from '../../protocol/api';
import { RcError } from '../../core/errors';

const client = (submitter: string | null, name = 'agent-a'): Identity => ({ tokenId: 7, kind: 'client', name, hostName: null, submitter });

const refused = (identity: Identity, name: string) => {
  try {
    actsAs(identity, name);
  } catch (err) {
    assert.ok(err instanceof RcError);
    assert.equal(err.code, 'forbidden');
    return err.message;
  }
  assert.fail(`${name} was allowed for ${identity.submitter}`);
};

test('an unbound token acts as any name (the cooperative rule)', () => {
  for (const name of ['alice', 'claude/x', 'web:agent-a', 'zoë 東京']) actsAs(client(null), name);
});

test('a token bound to a name acts only as that name', () => {
  const alice = client('alice');
  actsAs(alice, 'alice');
  for (const name of ['alic', 'alice2', 'alice/x', 'Alice', 'bob']) refused(alice, name);
  assert.equal(refused(alice, 'bob'), 'this token acts only as alice, not bob; set RC_SUBMITTER=alice');
});

test('a token bound to a prefix (ending in /) acts only as names under it', () => {
  const claude = client('claude/');
  for (const name of ['claude/x', 'claude/host/session-1', 'claude/web', 'claude/']) actsAs(claude, name);
  for (const name of ['claude', 'claudex', 'Claude/x', 'bob', 'x/claude/']) refused(claude, name);
  assert.equal(refused(claude, 'bob'), 'this token acts only as claude/…, not bob; set RC_SUBMITTER to a name under claude/ (claude/<anything>)');
});

test('reasons and audit rows name the claimed submitter and the token, an admin token as such', () => {
  assert.equal(actorText(client(null), 'alice'), 'alice (token 7 agent-a)');
  assert.equal(actorText(client('claude/'), 'claude/x'), 'claude/x (token 7 agent-a)');
  assert.equal(actorText({ tokenId: 2, kind: 'admin', name: 'ops', hostName: null, submitter: null }, 'operator'), 'operator (admin token 2 ops)');
});

test('a dashboard terminal is submitted as web:<token name>, the bound name, or <prefix>web', () => {
  assert.equal(webSubmitter(client(null)), 'web:agent-a');
  assert.equal(webSubmitter(client('alice')), 'alice');
  assert.equal(webSubmitter(client('claude/')), 'claude/web');
});

test("whatever a valid binding is, the dashboard terminal's submitter is a valid name the token may act as", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), fc.boolean(), (raw, prefix) => {
      const parsed = CreateToken.safeParse({ name: 'agent-a', submitter: prefix ? `${raw}/` : raw });
      if (!parsed.success) return;
      const identity = client(parsed.data.submitter ?? null);
      const name = webSubmitter(identity);
      assert.ok(Submitter.safeParse(name).success, JSON.stringify(name));
      actsAs(identity, name);
    }),
  );
});

test('a binding follows the submitter rule: not empty, no control, bidi, invisible or line-separator characters; a prefix leaves room for <prefix>web', () => {
  for (const bad of [
    '',
    '   ',
    'a\x1bb',
    'ops\u202e',
    'x\u009b',
    'x'.repeat(201),
    `${'x'.repeat(197)}/`,
    'ali\u200bce',
    'a\u2028b',
    'a\u2029b',
    'a\ufeffb',
    'a\u2060b',
  ]) {
    assert.equal(TokenSubmitter.safeParse(bad).success, false, JSON.stringify(bad));
  }
  assert.equal(TokenSubmitter.parse(' claude/ '), 'claude/');
  assert.equal(TokenSubmitter.parse('alice'), 'alice');
  assert.equal(TokenSubmitter.parse(`${'x'.repeat(196)}/`).length, 197);
});

test('an admin token cannot be bound', () => {
  const r = CreateToken.safeParse({ name: 'ops', kind: 'admin', submitter: 'claude/' });
  assert.equal(r.success, false);
  assert.match(r.error!.issues[0]!.message, /^an admin token acts as anyone/);
  assert.equal(CreateToken.parse({ name: 'ops', kind: 'admin' }).submitter, undefined);
});

test('a submitter is refused with zero-width and line-separator characters, as with the other controls; other text is kept', () => {
  for (const c of ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u2028', '\u2029']) {
    const r = Submitter.safeParse(`ali${c}ce`);
    assert.equal(r.success, false, JSON.stringify(c));
    assert.match(r.error!.issues[0]!.message, /invisible characters \(U\+200B-U\+200D, U\+2060, U\+FEFF\) or line separators \(U\+2028, U\+2029\)/);
  }
  for (const ok of ['alice', 'José', '山田', 'claude/agent-7', 'a b']) assert.equal(Submitter.parse(ok), ok);
});
