// An unknown job, device, host or array (a page's notFound(): status 404), inside the frame.
import { NotFound } from '../../components/not-found';

export default function SignedInNotFound() {
  return <NotFound />;
}
