// Every page but the sign-in: the query cache, the live view and the frame.
import type { ReactNode } from 'react';
import { Providers } from '../../components/providers';
import { Shell } from '../../components/shell';

export default function SignedInLayout({ children }: { children: ReactNode }) {
  return (
    <Providers>
      <Shell>{children}</Shell>
    </Providers>
  );
}
