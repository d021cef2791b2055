import { ArrayPage } from '../../../../components/jobs/array-page';

export default async function JobArray({ params }: { params: Promise<{ id: string }> }) {
  return <ArrayPage id={decodeURIComponent((await params).id)} />;
}
