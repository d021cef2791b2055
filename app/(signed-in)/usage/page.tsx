import { UsageView } from '../../../components/usage-view';

export default function Page() {
  return <UsageView />;
}
