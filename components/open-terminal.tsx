'use client';
// The button that opens a terminal on a device, or on any device a selector matches.
import { useRouter } from 'next/navigation';
import { armTerminal, terminalHref } from './terminal-intent';
import { Button } from './ui';

export function OpenTerminalButton({ device, select, label, disabled }: { device?: string; select?: string; label?: string; disabled?: boolean }) {
  const router = useRouter();
  const href = terminalHref({ device, select });
  return (
    <Button
      disabled={disabled}
      aria-label={label ?? (device ? `Open a terminal on ${device}` : 'Open a terminal')}
      onClick={() => {
        armTerminal(href);
        router.push(href);
      }}
    >
      {device ? 'Terminal' : 'Open terminal'}
    </Button>
  );
}
