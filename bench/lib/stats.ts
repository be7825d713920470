/** Result of one load phase (one target, one workload), as the load client reports it. */
export interface PhaseResult {
  /** Wall seconds from the first request's start to the last answer. */
  seconds: number;
  /** Requests sent (every attempt, refused ones included). */
  attempts: number;
  /** Answers with a 2xx status. */
  ok: number;
  /** File bytes (not wire bytes) of the successful uploads. */
  okBytes: number;
  /** Answers by status code, plus network errors by code (e.g. "ECONNRESET"). */
  statuses: Record<string, number>;
  /** 503 answers that carried no Retry-After header. */
  busyWithoutRetryAfter: number;
  /** Milliseconds from sending to the whole answer, of the successful uploads, in completion order. */
  latencies: number[];
  /** A few error answers' bodies, for the report. */
  errorSamples: string[];
  /** The job's maxBytes stopped it before its time or count was up. */
  stoppedByMaxBytes?: boolean;
}

/** Several phases of the same target and workload (the rounds) as one. */
export function mergePhases(phases: PhaseResult[]): PhaseResult {
  const merged: PhaseResult = { seconds: 0, attempts: 0, ok: 0, okBytes: 0, statuses: {}, busyWithoutRetryAfter: 0, latencies: [], errorSamples: [] };
  for (const phase of phases) {
    merged.seconds += phase.seconds;
    merged.attempts += phase.attempts;
    merged.ok += phase.ok;
    merged.okBytes += phase.okBytes;
    merged.busyWithoutRetryAfter += phase.busyWithoutRetryAfter;
    for (const [status, count] of Object.entries(phase.statuses)) merged.statuses[status] = (merged.statuses[status] ?? 0) + count;
    for (const latency of phase.latencies) merged.latencies.push(latency);
    for (const sample of phase.errorSamples) if (merged.errorSamples.length < 5) merged.errorSamples.push(sample);
  }
  return merged;
}

/** Nearest-rank percentile of ascending `sorted` (p from 0 to 100); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface Summary {
  uploads: number;
  seconds: number;
  uploadsPerSecond: number;
  /** Payload (file) megabytes (10^6 bytes) per second. */
  mbPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
  /** Non-2xx answers and network errors by status or code. */
  errors: Record<string, number>;
  /** Share of attempts answered 503. */
  busyShare: number;
  busyWithoutRetryAfter: number;
}

export function summarize(phase: PhaseResult): Summary {
  const sorted = [...phase.latencies].sort((a, b) => a - b);
  const errors: Record<string, number> = {};
  for (const [status, count] of Object.entries(phase.statuses)) if (!/^2\d\d$/.test(status)) errors[status] = count;
  const seconds = phase.seconds > 0 ? phase.seconds : Number.NaN;
  return {
    uploads: phase.ok,
    seconds: phase.seconds,
    uploadsPerSecond: phase.ok / seconds,
    mbPerSecond: phase.okBytes / 1e6 / seconds,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    errors,
    busyShare: phase.attempts > 0 ? (phase.statuses['503'] ?? 0) / phase.attempts : 0,
    busyWithoutRetryAfter: phase.busyWithoutRetryAfter,
  };
}
