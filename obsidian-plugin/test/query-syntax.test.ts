import { describe, expect, it } from "vitest";

import { isSearchable, parseQuery, tokenize } from "../src/query-syntax";

describe("parseQuery", () => {
  it("keeps plain words", () => {
    expect(parseQuery("  hybrid   search ")).toEqual({ query: "hybrid search", filters: {}, phrases: [], warnings: [] });
  });

  it("keeps quoted phrases quoted", () => {
    const p = parseQuery('setup "reciprocal rank fusion" notes');
    expect(p.query).toBe('setup "reciprocal rank fusion" notes');
    expect(p.phrases).toEqual(["reciprocal rank fusion"]);
  });

  it("runs an unterminated quote to the end", () => {
    const p = parseQuery('find "open ended');
    expect(p.query).toBe('find "open ended"');
    expect(p.phrases).toEqual(["open ended"]);
  });

  it("parses path:, folder: and tag:", () => {
    const p = parseQuery("path:/Projects/Alpha/ tag:#idea plan");
    expect(p.query).toBe("plan");
    expect(p.filters).toEqual({ folder: "Projects/Alpha", tag: "idea" });
    expect(parseQuery("folder:Inbox x").filters).toEqual({ folder: "Inbox" });
    expect(parseQuery("TAG:work x").filters).toEqual({ tag: "work" });
  });

  it("accepts quoted filter values", () => {
    const p = parseQuery('path:"My notes/2024" tag:project/alpha meeting');
    expect(p.filters).toEqual({ folder: "My notes/2024", tag: "project/alpha" });
    expect(p.query).toBe("meeting");
  });

  it("turns -word and -\"phrase\" into exclude_terms", () => {
    const p = parseQuery('python -snake -"monty python" tutorial');
    expect(p.query).toBe("python tutorial");
    expect(p.filters.exclude_terms).toEqual(["snake", "monty python"]);
  });

  it("turns -path: into exclude_path", () => {
    expect(parseQuery("x -path:Inbox/Today.md").filters).toEqual({ exclude_path: "Inbox/Today.md" });
  });

  it("parses [field:value] frontmatter filters", () => {
    const p = parseQuery('[status:done] [owner:"Ada L"] report');
    expect(p.filters.fields).toEqual({ status: "done", owner: "Ada L" });
    expect(p.query).toBe("report");
  });

  it("leaves dashes inside and between words alone", () => {
    expect(parseQuery("state-of-the-art - x -- y").query).toBe("state-of-the-art - x -- y");
    expect(parseQuery("state-of-the-art").filters).toEqual({});
  });

  it("does not treat URLs or times as filters", () => {
    const p = parseQuery("https://example.org 10:30");
    expect(p.query).toBe("https://example.org 10:30");
    expect(p.filters).toEqual({});
  });

  it("warns about repeated or empty filters and unsupported negations", () => {
    const p = parseQuery("tag:a tag:b path: -tag:c -[x:y] q");
    expect(p.filters).toEqual({ tag: "b" });
    expect(p.warnings).toHaveLength(4);
  });

  it("knows when there is nothing to search", () => {
    expect(isSearchable(parseQuery("tag:idea"))).toBe(false);
    expect(isSearchable(parseQuery('""'))).toBe(false);
    expect(isSearchable(parseQuery("tag:idea plan"))).toBe(true);
  });

  it("handles non-ASCII and quotes glued to words", () => {
    const p = parseQuery('café"naïve résumé" 東京');
    expect(p.query).toBe('café "naïve résumé" 東京');
  });

  it("tokenizes negation flags and keys", () => {
    const tokens = tokenize('-path:a "b c" d');
    expect(tokens.map((t) => [t.negated, t.key, t.value, t.quoted])).toEqual([
      [true, "path", "a", false],
      [false, null, "b c", true],
      [false, null, "d", false],
    ]);
  });
});
