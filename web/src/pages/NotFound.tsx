import { Empty, Link, PageHeader } from '../components/ui';

export function NotFound() {
  return (
    <div class="page">
      <PageHeader title="Page not found" />
      <Empty icon="alert" title="There is no dashboard page at this address" action={<Link href="/" class="btn btn-primary">Go to the overview</Link>} />
    </div>
  );
}
