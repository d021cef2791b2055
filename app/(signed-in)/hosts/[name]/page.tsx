import { HostView } from '../../../../components/host-view';
import { notFoundUnless } from '../../exists';

export default async function HostPage({ params }: { params: Promise<{ name: string }> }) {
  const name = decodeURIComponent((await params).name);
  await notFoundUnless(`/api/hosts/${encodeURIComponent(name)}`);
  return <HostView name={name} />;
}
