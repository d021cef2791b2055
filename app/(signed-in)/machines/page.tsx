import { MachinesView } from '../../../components/machines-view';

export default function Page() {
  return <MachinesView />;
}
