import { JobPage } from '../../../../components/jobs/job-view';
import { notFoundUnless } from '../../exists';

export default async function Job({ params }: { params: Promise<{ id: string }> }) {
  const id = decodeURIComponent((await params).id);
  await notFoundUnless(`/api/jobs/${encodeURIComponent(id)}`);
  return <JobPage id={id} />;
}
