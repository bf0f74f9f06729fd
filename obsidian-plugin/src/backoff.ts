// The one retry schedule of the plugin: busy RPC calls, the event stream's reconnects and sidecar restarts all
// wait backoffDelay(attempt, their schedule) before trying again.

export interface BackoffSchedule {
  /** Wait before the first retry. */
  initialMs: number;
  /** Each retry waits this many times longer than the one before. */
  factor: number;
  /** No wait is longer than this. */
  maxMs: number;
}

/** The wait before retry number `attempt` (1-based): initialMs, times factor per retry, at most maxMs. */
export function backoffDelay(attempt: number, schedule: BackoffSchedule): number {
  return Math.min(schedule.maxMs, schedule.initialMs * Math.pow(schedule.factor, Math.max(0, attempt - 1)));
}
