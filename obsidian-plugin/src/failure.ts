// What to do about an error the plugin shows: one rule, for the panes, the search modal, the failure Notice
// and the settings' Test connection. No Node imports (the views that use it also run in a browser, for the
// pictures), so SidecarStartError is read by its `hint` field rather than by its class.

import { describeError, RpcError } from "./client";
import type { SidecarSnapshot } from "./sidecar";

/** A failure as the user should read it: what happened, and what to do about it (null: nothing to do). */
export interface Failure {
  message: string;
  hint: string | null;
}

/** The fix for a lost or refused connection: a restart, and where its output is. */
const RESTART_HINT = "Restart the sidecar (click the status bar item, or the command \"Restart the sidecar\"); the status bar's details show its output.";

/** Call failures a restart fixes: the connection went away, timed out, or its token is stale. */
const RESTART_FIXES: ReadonlySet<string> = new Set(["transport", "timeout", "unauthorized"]);

/** The one rule for what to do about an error the plugin shows (panes, the search modal, Notices, settings):
 * the fix it carries (a start error's; an RpcError's data.hint, which a failed start's RpcError keeps), else a
 * restart for a lost connection, else the sidecar's own start failure's fix while it is failed or restarting
 * (`sidecar`, the snapshot), else null. */
export function failureOf(err: unknown, sidecar?: Pick<SidecarSnapshot, "phase" | "errorHint">): Failure {
  const startFix = sidecar && (sidecar.phase === "failed" || sidecar.phase === "restarting") ? sidecar.errorHint : null;
  return { message: describeError(err), hint: carriedHint(err) ?? startFix ?? null };
}

/** An RpcError's data.hint (or a restart when the connection is lost); any other error's own `hint`. */
function carriedHint(err: unknown): string | null {
  const given: unknown = err instanceof RpcError ? err.data.hint : err && typeof err === "object" && "hint" in err ? err.hint : null;
  if (typeof given === "string" && given.trim()) return given;
  return err instanceof RpcError && RESTART_FIXES.has(err.kind) ? RESTART_HINT : null;
}
