// @vitest-environment happy-dom
// The search window (SearchModal on the stub's SuggestModal): what it shows when the search fails (the
// error in error colours with its fix, never the empty text), when nothing matches, and what it asked.
import { afterEach, describe, expect, it } from "vitest";

import type { SearchResponse } from "../src/protocol.gen";
import { SearchModal } from "../src/views/search-modal";
import { FakeSidecar, fakeApp, fakeContext, type FakeAnswers } from "./fake-app";

const EMPTY: SearchResponse = {
  query: "q", mode: "hybrid", band: "none", caveat: null, results: [], took_ms: 2, vectors_available: true, index_building: false,
} as unknown as SearchResponse;

async function search(answers: FakeAnswers, query: string, setup: (s: FakeSidecar) => void = () => undefined) {
  const fake = fakeApp([]);
  const sidecar = new FakeSidecar(answers);
  setup(sidecar);
  const modal = new SearchModal(fake.app, fakeContext(fake.app, sidecar), query);
  modal.open();
  await (modal as unknown as { settled: Promise<void> }).settled;
  return { modal, sidecar, results: modal.resultContainerEl };
}

afterEach(() => document.body.empty());

describe("search window: errors and empty states", () => {
  it("shows a failed search's message in error colours with the hint the error carries", async () => {
    const { results } = await search({
      search: { error: { kind: "invalid_params", message: "Unknown filter field 'colour'.", method: "search", data: { hint: "Filters are path:, tag: and [field:value]." } } },
    }, "bread [colour:red]");
    expect(results.querySelector(".vs-error[role=alert] .vs-message-error")?.textContent).toBe("Unknown filter field 'colour'.");
    expect(results.querySelector(".vs-error .vs-message-hint")?.textContent).toBe("Filters are path:, tag: and [field:value].");
    expect(results.querySelector(".suggestion-empty")).toBeNull(); // never the empty text beside the error
  });

  it("shows a failed start with the start error's fix", async () => {
    const { results, sidecar } = await search({}, "bread", (s) => {
      s.startFailure = { kind: "transport", message: "The sidecar command was not found: /x/sidecar", method: "",
        data: { kind: "start_failed", hint: "Check the command in the plugin settings." } };
    });
    expect(results.querySelector(".vs-message-error")?.textContent).toBe("The sidecar is not available: The sidecar command was not found: /x/sidecar");
    expect(results.querySelector(".vs-message-hint")?.textContent).toBe("Check the command in the plugin settings.");
    expect(sidecar.calls).toEqual([]);
  });

  it("forgets the error once a search answers again", async () => {
    const answers: FakeAnswers = { search: { error: { kind: "busy", message: "busy", method: "search" } } };
    const { modal, results } = await search(answers, "bread");
    expect(results.querySelector(".vs-message-error")?.textContent).toBe("The sidecar is busy; try again in a moment.");
    answers.search = { result: EMPTY };
    modal.inputEl.value = "bread loaf";
    modal.inputEl.dispatchEvent(new Event("input"));
    await (modal as unknown as { settled: Promise<void> }).settled;
    expect(results.querySelector(".vs-error")).toBeNull();
    expect(results.querySelector(".suggestion-empty")?.textContent).toBe("No matching notes.");
  });

  it("reads a query in the direction of its first letter (an Arabic or Hebrew query right to left)", async () => {
    const { modal } = await search({ search: { result: EMPTY } }, "גיבוי חיצוני");
    expect(modal.inputEl.getAttribute("dir")).toBe("auto");
  });

  it("asks nothing for filters alone, and says why", async () => {
    const { results, sidecar } = await search({ search: { result: EMPTY } }, "tag:#baking");
    expect(sidecar.calls).toEqual([]);
    expect(results.querySelector(".suggestion-empty")?.textContent).toBe("Add some words: filters alone are not a search.");
  });

  it("shows the sidecar's caveat as sent (meaning not used), then that the index is still building", async () => {
    // What the sidecar answers a hybrid search without vectors: a lexical search, and its caveat says so.
    const caveat = "Nothing in the vault matched. Semantic search is unavailable (no vectors): these are lexical results only.";
    const lexical = { ...EMPTY, mode: "lexical", caveat, vectors_available: false, index_building: true } as SearchResponse;
    const { modal, sidecar } = await search({ search: { result: lexical } }, "bread");
    expect(sidecar.calls.map((c) => [c.method, c.params.query, c.params.mode, c.params.typed])).toEqual([["search", "bread", "hybrid", true]]);
    expect(modal.modalEl.querySelector(".vs-search-info")?.textContent)
      .toBe(`${caveat} · The index is still being built; results may be incomplete.`);
  });
});
