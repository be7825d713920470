import type { MetricsSnapshot } from '../observability/metrics.ts';

// What the supervisor and its service processes say to each other over the fork IPC channel.

/** From a service process to the supervisor. */
export type ServiceProcessMessage =
  /** Application.start() finished: the process answers requests. */
  | { type: 'ready' }
  /** A scrape of /metrics reached this process: it asks for the other processes' snapshots. */
  | { type: 'metrics-request'; id: number }
  /** This process's answer to metrics-collect. */
  | { type: 'metrics-snapshot'; id: number; snapshot: MetricsSnapshot };

/** From the supervisor to a service process. */
export type SupervisorMessage =
  | { type: 'metrics-collect'; id: number }
  /** The answer to metrics-request: the snapshots of the other ready processes that answered in time. */
  | { type: 'metrics-peers'; id: number; snapshots: MetricsSnapshot[] };

export function isMessage<T extends { type: string }>(message: unknown): message is T {
  return typeof message === 'object' && message !== null && typeof (message as { type?: unknown }).type === 'string';
}
