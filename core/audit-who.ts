// Who did an audited act, as the audit log shows it: the actor as recorded,
// and the token the request came with when the actor does not name it
// already (an admin's `admin:ops` becomes `admin:ops (token 3)`).
export function auditWho(e: { actor: string; tokenId: number | null }): string {
  if (e.tokenId === null || /\(token \d+\b/.test(e.actor)) return e.actor;
  return `${e.actor} (token ${e.tokenId})`;
}
