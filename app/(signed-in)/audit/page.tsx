import { AuditView } from '../../../components/audit-view';

export default function Page() {
  return <AuditView />;
}
