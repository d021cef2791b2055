// Whether the dashboard offers a terminal on a device. A simulated host
// (bench/simulator, npm run demo; every one labelled simulated=true) runs no
// shells: a terminal there would only fail (exit 126) and leave a failed job.

/** Why no terminal can open on a device with these labels (`short` for a table cell, `why` in a sentence); null where one can. */
export function noTerminal(labels: Readonly<Record<string, string>>): { short: string; why: string } | null {
  return labels.simulated === 'true'
    ? { short: 'no terminal (simulated)', why: 'A simulated device (simulated=true) runs jobs as local processes, not shells: no terminal opens on it.' }
    : null;
}

/** The same for "any device a selector matches": none can open when every matching device is simulated. */
export function noTerminalOnAny(devices: readonly { labels: Readonly<Record<string, string>> }[]): { short: string; why: string } | null {
  if (devices.length === 0) return null;
  const first = noTerminal(devices[0]!.labels);
  return first && devices.every((d) => noTerminal(d.labels)) ? first : null;
}
