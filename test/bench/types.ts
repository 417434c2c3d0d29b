// What every benchmark reports: figures measured beside a naive baseline in the same run.

export interface Figure {
  /** What was measured, e.g. "lateness p99". */
  metric: string;
  /** "ms", "RPCs", "bytes", "MB", "×"… */
  unit: string;
  /** The product's figure. */
  value: number;
  /** The naive baseline's figure in the same run, or null where no baseline applies. */
  baseline: number | null;
  /** baseline ÷ value: how many times better the product is (lower-is-better metrics); null when undefined (a zero). */
  ratio: number | null;
  /** The target, in words ("< 10 ms"), if any. */
  target?: string;
  /** Whether the target was met, if there is one. */
  met?: boolean;
}

export interface BenchSection {
  id: string;
  title: string;
  /** The setup, so a reader can rerun it: sizes, counts, durations. */
  params: Record<string, unknown>;
  figures: Figure[];
  /** What the baseline is and anything a reader needs to read the figures honestly. */
  notes: string[];
  /** When this section was measured (set by the runner). */
  measuredAt?: string;
  /** Why this section was not measured on this machine (set by the runner; no figures then). */
  skipped?: string;
}

export interface BenchContext {
  /** A smaller, faster run (`npm run bench -- --quick`): same code paths, smaller sizes. */
  quick: boolean;
  /** A private scratch directory, removed after the run. */
  tmpDir: string;
  log(line: string): void;
}

export interface Bench {
  id: string;
  title: string;
  /** What this machine lacks for the section, in words, or null: asked before `run`; a reason skips it. */
  unavailable?(): string | null;
  run(ctx: BenchContext): Promise<BenchSection>;
}

/** A figure with its ratio computed (baseline ÷ value). */
export function figure(
  metric: string,
  unit: string,
  value: number,
  baseline: number | null,
  target?: { text: string; met: boolean },
): Figure {
  const ratio = baseline === null || value === 0 ? null : baseline / value;
  const f: Figure = {
    metric,
    unit,
    value: round(value),
    baseline: baseline === null ? null : round(baseline),
    ratio: ratio === null ? null : round(ratio),
  };
  if (target) {
    f.target = target.text;
    f.met = target.met;
  }
  return f;
}

export function round(n: number): number {
  if (!Number.isFinite(n)) return n;
  const abs = Math.abs(n);
  const digits = abs >= 100 ? 1 : abs >= 1 ? 2 : 4;
  return Number(n.toFixed(digits));
}

/** p-th percentile (0–100) of a list of numbers, nearest-rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}
