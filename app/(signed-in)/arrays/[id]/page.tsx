import { ArrayPage } from '../../../../components/jobs/array-page';
import { notFoundUnless } from '../../exists';

export default async function JobArray({ params }: { params: Promise<{ id: string }> }) {
  const id = decodeURIComponent((await params).id);
  await notFoundUnless(`/api/arrays/${encodeURIComponent(id)}`);
  return <ArrayPage id={id} />;
}
