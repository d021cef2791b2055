import { HoldsView } from '../../../components/holds-view';

export default function Page() {
  return <HoldsView />;
}
