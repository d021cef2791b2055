// The provider accounts the controller's settings configure: the local one
// (RC_LOCAL_PROVIDER) and a RunPod one (RC_RUNPOD_*). server/config.ts parses
// and checks the settings; this turns them into providers, and into what the
// audit of account changes compares (server/providers/accounts.ts).
import { createHash } from 'node:crypto';
import type { AccountRecord } from '../../core/account-changes';
import type { ControllerConfig } from '../config';
import { LocalProvider } from './local';
import type { Provider } from './provider';
import { RunpodProvider, runpodAccount } from './runpod';

type ProviderSettings = Pick<
  ControllerConfig,
  'RC_LOCAL_PROVIDER' | 'RC_RUNPOD_API_KEY' | 'RC_RUNPOD_IMAGE' | 'RC_RUNPOD_ACCOUNT' | 'RC_RUNPOD_PREFIX' | 'RC_RUNPOD_REST_URL' | 'RC_RUNPOD_GRAPHQL_URL'
>;

export function configuredProviders(config: ProviderSettings): Provider[] {
  const providers: Provider[] = [];
  if (config.RC_LOCAL_PROVIDER) providers.push(new LocalProvider(config.RC_LOCAL_PROVIDER));
  if (config.RC_RUNPOD_API_KEY && config.RC_RUNPOD_IMAGE)
    providers.push(
      new RunpodProvider({
        apiKey: config.RC_RUNPOD_API_KEY,
        image: config.RC_RUNPOD_IMAGE,
        accountName: config.RC_RUNPOD_ACCOUNT,
        prefix: config.RC_RUNPOD_PREFIX,
        restUrl: config.RC_RUNPOD_REST_URL,
        graphqlUrl: config.RC_RUNPOD_GRAPHQL_URL,
      }),
    );
  return providers;
}

export function configuredAccounts(config: ProviderSettings): AccountRecord[] {
  const out: AccountRecord[] = [];
  const local = config.RC_LOCAL_PROVIDER;
  if (local) out.push({ account: 'local', provider: 'local', prefix: local.prefix, image: local.image, credential: null });
  if (config.RC_RUNPOD_API_KEY && config.RC_RUNPOD_IMAGE)
    out.push({
      account: runpodAccount(config.RC_RUNPOD_ACCOUNT),
      provider: 'runpod',
      prefix: config.RC_RUNPOD_PREFIX,
      image: config.RC_RUNPOD_IMAGE,
      credential: credentialFingerprint(config.RC_RUNPOD_API_KEY),
    });
  return out;
}

/**
 * `sha256:` and the first 12 hex digits of the key's SHA-256: enough to tell a
 * rotated key from the same one in the audit log, too little to stand for it.
 */
export function credentialFingerprint(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
}
