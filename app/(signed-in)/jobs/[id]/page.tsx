import { JobPage } from '../../../../components/jobs/job-view';

export default async function Job({ params }: { params: Promise<{ id: string }> }) {
  return <JobPage id={decodeURIComponent((await params).id)} />;
}
