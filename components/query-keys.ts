// The dashboard's query keys in one place: the live view invalidates by their
// first element (components/live-plan.ts), so every query starts with one of these.
export const keys = {
  whoami: ['whoami'] as const,
  notices: ['notices'] as const,
  fleet: ['fleet'] as const,
  host: (name: string) => ['host', name] as const,
  device: (name: string) => ['device', name] as const,
  samples: (what: string, window: string) => ['samples', what, window] as const,
  jobs: (filter: Record<string, string>) => ['jobs', filter] as const,
  job: (id: string) => ['job', id] as const,
  array: (id: string) => ['array', id] as const,
  queue: ['queue'] as const,
  holds: ['holds'] as const,
  /** The Machines page; no argument: both of its lists. */
  machines: (all?: boolean) => (all === undefined ? (['machines'] as const) : (['machines', all] as const)),
  audit: (filter: Record<string, string>) => ['audit', filter] as const,
  usage: (filter: Record<string, string>) => ['usage', filter] as const,
  usageSeries: (filter: Record<string, string>) => ['usage', 'series', filter] as const,
  /** The Teams page; no argument: every window of it. */
  teams: (days?: string) => (days === undefined ? (['teams'] as const) : (['teams', days] as const)),
};
