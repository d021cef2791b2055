// The one refusal of an admin command rc does not have.
import { usage } from '../../output';

export function unknownAdmin(group: string | undefined, verb: string | undefined): never {
  usage(`unknown admin command: ${[group, verb].filter(Boolean).join(' ')}; see rc admin --help`);
}
