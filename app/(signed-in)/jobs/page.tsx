import { JobsList } from '../../../components/jobs/jobs-list';

type Search = Promise<Record<string, string | string[] | undefined>>;

export default async function Jobs({ searchParams }: { searchParams: Search }) {
  const q = await searchParams;
  const one = (k: string) => (typeof q[k] === 'string' ? q[k] : '');
  return <JobsList initial={{ state: one('state'), device: one('device'), submitter: one('submitter'), name: one('name') }} />;
}
