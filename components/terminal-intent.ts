// A terminal takes a device, so it starts only from a button press, never
// from loading a URL: the press arms it here (in this tab's memory) and the
// terminal page, reached by the client-side navigation that follows, starts
// it at once. Loading /terminal?device=… by hand (or a link, a prefetch, a
// reload) finds nothing armed and asks for the press instead.
let armed: string | null = null;

export function terminalHref(target: { device?: string; select?: string }): string {
  if (target.device) return `/terminal?device=${encodeURIComponent(target.device)}`;
  return `/terminal?select=${encodeURIComponent(target.select ?? '')}`;
}

export function armTerminal(href: string): void {
  armed = href;
}

/** True once for the href a button armed. */
export function takeArmed(href: string): boolean {
  const ok = armed === href;
  armed = null;
  return ok;
}
