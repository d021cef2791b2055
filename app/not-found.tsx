// An address no page answers (status 404): the 404 page in the signed-in frame.
import { NotFound } from '../components/not-found';
import { Providers } from '../components/providers';
import { Shell } from '../components/shell';

export default function RootNotFound() {
  return (
    <Providers>
      <Shell>
        <NotFound address />
      </Shell>
    </Providers>
  );
}
