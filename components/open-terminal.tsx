'use client';
// The button that opens a terminal on a device, or on any device a selector matches;
// where none can open (a simulated device: core/terminal-offer.ts), a word on why instead.
import { useRouter } from 'next/navigation';
import { armTerminal, terminalHref } from './terminal-intent';
import { Button } from './ui';

export function OpenTerminalButton({
  device,
  select,
  label,
  disabled,
  none,
}: {
  device?: string;
  select?: string;
  label?: string;
  disabled?: boolean;
  none?: { short: string; why: string } | null;
}) {
  const router = useRouter();
  const href = terminalHref({ device, select });
  if (none)
    return (
      <span data-no-terminal title={none.why} className="inline-block cursor-help text-xs leading-tight text-zinc-500">
        {none.short}
      </span>
    );
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
