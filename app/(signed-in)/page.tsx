// The fleet at a glance, live (components/fleet/fleet-view.tsx).
import { FleetView } from '../../components/fleet/fleet-view';

export default function FleetPage() {
  return <FleetView />;
}
