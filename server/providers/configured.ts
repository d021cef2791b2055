// The provider accounts the controller's settings configure: the local one
// (RC_LOCAL_PROVIDER) for now; a cloud account's adapter joins the list here.
import type { ControllerConfig } from '../config';
import { LocalProvider } from './local';
import type { Provider } from './provider';

export function configuredProviders(config: Pick<ControllerConfig, 'RC_LOCAL_PROVIDER'>): Provider[] {
  return config.RC_LOCAL_PROVIDER ? [new LocalProvider(config.RC_LOCAL_PROVIDER)] : [];
}
