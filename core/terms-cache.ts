// Stored selectors (and --gpu choices) as the scheduler's parsed terms. The
// same text gives the same array each time: decide() and waitReasons() share
// what one array matches among the jobs that carry it.
import { choiceTerms, formatGpuChoice, type GpuChoice } from './gpu-choices';
import type { Choice, QueuedJob } from './schedule';
import { parseSelector, type SelectorTerm } from './selector';

/** Matches no device: what a stored selector that no longer parses becomes. */
const NOTHING: readonly SelectorTerm[] = Object.freeze([{ key: '\0', op: '=', value: '\0', column: 1, text: '' }]);

export class TermsCache {
  private readonly terms = new Map<string, readonly SelectorTerm[]>();

  /** Past this many entries the cache starts over (selectors are few; a flood of distinct ones must not grow it for ever). */
  constructor(private readonly max = 1000) {}

  selector(text: string): readonly SelectorTerm[] {
    return this.get(text, () => {
      const parsed = parseSelector(text);
      // Stored selectors were validated at submit; one that no longer parses matches nothing.
      return parsed.ok ? parsed.terms : NOTHING;
    });
  }

  /** A job's --gpu choices as the scheduler takes them; undefined when it has none. */
  choices(selector: string, choices: readonly GpuChoice[] | null | undefined): Choice[] | undefined {
    if (!choices?.length) return undefined;
    const base = this.selector(selector);
    return choices.map((c) => ({
      label: formatGpuChoice(c),
      gpus: c.count,
      terms: this.get(`${selector}\0${c.model}`, () => (base === NOTHING ? NOTHING : choiceTerms(base, c))),
    }));
  }

  /** A stored queued job as decide() and waitReasons() take it (its --gpu choices' first stands in its terms and gpus). */
  queued(
    j: {
      id: string;
      priority: number;
      seq: number;
      selector: string;
      deviceName: string | null;
      gpus: number;
      gpuChoices: readonly GpuChoice[] | null;
      createdAt: Date;
      requeuedAt: Date | null;
      /** Its token's fair-share rank, where the queue was read in fair order. */
      fairRank?: number;
    },
    now: number,
  ): QueuedJob {
    const choices = this.choices(j.selector, j.gpuChoices);
    return {
      id: j.id,
      priority: j.priority,
      seq: j.seq,
      terms: choices?.[0]?.terms ?? this.selector(j.selector),
      deviceName: j.deviceName,
      gpus: choices?.[0]?.gpus ?? j.gpus,
      waitedS: (now - j.createdAt.getTime()) / 1000,
      requeuedAt: j.requeuedAt?.getTime() ?? null,
      ...(j.fairRank ? { fairRank: j.fairRank } : {}),
      ...(choices ? { choices } : {}),
    };
  }

  private get(key: string, make: () => readonly SelectorTerm[]): readonly SelectorTerm[] {
    let t = this.terms.get(key);
    if (!t) {
      t = make();
      if (this.terms.size >= this.max) this.terms.clear();
      this.terms.set(key, t);
    }
    return t;
  }
}
