import { QueueView } from '../../../components/queue-view';

export default function Page() {
  return <QueueView />;
}
