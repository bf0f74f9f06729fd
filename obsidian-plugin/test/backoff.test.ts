import { describe, expect, it } from "vitest";

import { backoffDelay } from "../src/backoff";

describe("backoffDelay", () => {
  it("starts at initialMs and multiplies by factor per attempt", () => {
    const schedule = { initialMs: 150, factor: 3, maxMs: 60_000 };
    expect([1, 2, 3, 4].map((a) => backoffDelay(a, schedule))).toEqual([150, 450, 1350, 4050]);
  });

  it("never waits longer than maxMs", () => {
    const schedule = { initialMs: 500, factor: 2, maxMs: 30_000 };
    expect([6, 7, 8, 50].map((a) => backoffDelay(a, schedule))).toEqual([16_000, 30_000, 30_000, 30_000]);
  });

  it("treats attempt 0 and below as the first", () => {
    const schedule = { initialMs: 1000, factor: 2, maxMs: 15_000 };
    expect([-1, 0, 1].map((a) => backoffDelay(a, schedule))).toEqual([1000, 1000, 1000]);
  });
});
