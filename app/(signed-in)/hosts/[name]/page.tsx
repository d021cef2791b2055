import { HostView } from '../../../../components/host-view';

export default async function HostPage({ params }: { params: Promise<{ name: string }> }) {
  return <HostView name={decodeURIComponent((await params).name)} />;
}
