// Whether a provider machine fits a job (seed 002, "How rrun picks"): one of
// its GPU models (or a family of it) with at least that many GPUs, its
// selector holding on the labels such a GPU gets, at least the CPUs, RAM, disk
// and CUDA version asked, an allowed account, under --max-price, and spot only
// with --spot. An offer and an idle machine (the offer it was launched from)
// are judged alike, by this module alone.
import type { GpuChoice } from './gpu-choices';
import { gpuFamily, gpuLabels } from './gpu-names';
import { type Labels, matchTerms, type SelectorTerm } from './selector';

/** What the fit reads of an offer (protocol/wire.ts OfferView adds the rest; core imports no protocol). */
export interface FitOffer {
  /** The provider and account it comes from: `local`, `runpod/lab-b`. */
  account: string;
  /** Canonical GPU model (core/gpu-names.ts canonicalGpuModel), or null for a CPU-only shape. */
  gpuModel: string | null;
  gpuCount: number;
  /** GiB of memory per GPU; 0 without GPUs. */
  vramGiB: number;
  cpus: number;
  ramGiB: number;
  diskGiB: number;
  /** The highest CUDA version its driver supports (`12.8`), or null when not known. */
  cuda: string | null;
  spot: boolean;
  /** US dollars per hour. */
  pricePerHour: number;
}

/** What offers() is asked: every field optional; an offer must satisfy all that are given. */
export interface OfferQuery {
  gpuModels?: readonly string[];
  minGpus?: number;
  minVramGiB?: number;
  minCpus?: number;
  minRamGiB?: number;
  minDiskGiB?: number;
  spot?: boolean;
  maxPricePerHour?: number;
  minCuda?: string;
}

/** rc run --cpus, --ram, --disk (GiB), --cuda: what a job's machine must have at least (jobs.machine_min). */
export interface MachineMin {
  cpus?: number;
  ramGiB?: number;
  diskGiB?: number;
  cuda?: string;
}

/** What a job asks of a provider machine. */
export interface MachineWants {
  gpus: number;
  /** --gpu's choices; null: `gpus` of any model. */
  choices: readonly GpuChoice[] | null;
  terms: readonly SelectorTerm[];
  /** --cloud: a provider (`local`) or an account (`runpod/lab-b`); null: any configured. */
  cloud: string | null;
  spot: boolean;
  maxPricePerHour: number | null;
  min: MachineMin | null;
}

export function matchesQuery(o: FitOffer, q: OfferQuery): boolean {
  if (q.gpuModels?.length && (o.gpuModel === null || !q.gpuModels.includes(o.gpuModel))) return false;
  if (q.minGpus !== undefined && o.gpuCount < q.minGpus) return false;
  if (q.minVramGiB !== undefined && o.vramGiB < q.minVramGiB) return false;
  if (q.minCpus !== undefined && o.cpus < q.minCpus) return false;
  if (q.minRamGiB !== undefined && o.ramGiB < q.minRamGiB) return false;
  if (q.minDiskGiB !== undefined && o.diskGiB < q.minDiskGiB) return false;
  if (q.spot === false && o.spot) return false;
  if (q.maxPricePerHour !== undefined && o.pricePerHour > q.maxPricePerHour) return false;
  if (q.minCuda !== undefined) {
    if (o.cuda === null) return false;
    const [a, b] = o.cuda.split('.').map(Number);
    const [c, d] = q.minCuda.split('.').map(Number);
    if (a! < c! || (a === c && b! < d!)) return false;
  }
  return true;
}

/** Whether --cloud names this account: the provider (`runpod`) or the account itself (`runpod/lab-b`); null names all. */
export function cloudNames(cloud: string | null, account: string): boolean {
  return cloud === null || account === cloud || account.split('/')[0] === cloud;
}

/** Whether the offer has one of the choices: its model or family, at least that many; no choices: any shape. */
export function fitsGpus(o: Pick<FitOffer, 'gpuModel' | 'gpuCount'>, choices: readonly GpuChoice[]): boolean {
  if (!choices.length) return true;
  if (o.gpuModel === null) return false;
  const model = o.gpuModel;
  return choices.some((c) => (model === c.model || gpuFamily(model) === c.model) && o.gpuCount >= c.count);
}

/** The labels each GPU of the offer's machine will have (what its worker reports from nvidia-smi: core/gpu-names.ts gpuLabels). */
export function offerLabels(o: Pick<FitOffer, 'gpuModel' | 'vramGiB'>): Labels {
  if (o.gpuModel === null) return {};
  return Object.fromEntries(gpuLabels(o.gpuModel, o.vramGiB > 0 ? o.vramGiB * 1024 : null).map((l) => [l.key, l.value]));
}

/** The providers' query for a job: what they can filter on before the whole fit (offerFits) is judged here. */
export function queryOf(w: MachineWants): OfferQuery {
  return {
    ...(w.choices === null ? { minGpus: w.gpus } : {}),
    ...(w.spot ? {} : { spot: false }),
    ...(w.maxPricePerHour !== null ? { maxPricePerHour: w.maxPricePerHour } : {}),
    ...(w.min?.cpus !== undefined ? { minCpus: w.min.cpus } : {}),
    ...(w.min?.ramGiB !== undefined ? { minRamGiB: w.min.ramGiB } : {}),
    ...(w.min?.diskGiB !== undefined ? { minDiskGiB: w.min.diskGiB } : {}),
    ...(w.min?.cuda !== undefined ? { minCuda: w.min.cuda } : {}),
  };
}

/** Whether a machine from this offer (a new one, or an idle one launched from it) fits the job. */
export function offerFits(o: FitOffer, w: MachineWants): boolean {
  if (o.gpuCount < 1 || !cloudNames(w.cloud, o.account) || !matchesQuery(o, queryOf(w))) return false;
  return fitsGpus(o, w.choices ?? []) && matchTerms(w.terms, offerLabels(o));
}
