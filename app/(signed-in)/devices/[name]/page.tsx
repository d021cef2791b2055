import { DeviceView } from '../../../../components/device/device-view';
import { notFoundUnless } from '../../exists';

export default async function DevicePage({ params }: { params: Promise<{ name: string }> }) {
  const name = decodeURIComponent((await params).name);
  await notFoundUnless(`/api/devices/${encodeURIComponent(name)}`);
  return <DeviceView name={name} />;
}
