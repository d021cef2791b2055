import type { ReactNode } from 'react';
import { THEME_SCRIPT } from '../components/theme';
import './globals.css';

export const metadata = { title: 'rc', description: 'GPU leases for people and agents' };
export const viewport = { width: 'device-width', initialScale: 1 };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    // suppressHydrationWarning: the theme script sets <html>'s class before React hydrates it.
    <html lang="en" suppressHydrationWarning>
      <head>
        {/* biome-ignore lint/security/noDangerouslySetInnerHtml: a constant of ours, run before the first paint (the CSP allows inline scripts). */}
        <script dangerouslySetInnerHTML={{ __html: THEME_SCRIPT }} />
      </head>
      <body className="antialiased">{children}</body>
    </html>
  );
}
