import { TeamsView } from '../../../components/teams-view';

export default function Page() {
  return <TeamsView />;
}
