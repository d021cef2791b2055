import type { ReactNode } from 'react';
import './globals.css';

export const metadata = { title: 'rc', description: 'GPU leases for people and agents' };
export const viewport = { width: 'device-width', initialScale: 1 };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="antialiased">{children}</body>
    </html>
  );
}
