import { DeviceView } from '../../../../components/device/device-view';

export default async function DevicePage({ params }: { params: Promise<{ name: string }> }) {
  return <DeviceView name={decodeURIComponent((await params).name)} />;
}
