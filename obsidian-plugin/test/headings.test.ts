import { describe, expect, it } from "vitest";

import { headingAt, headingPathAt } from "../src/headings";

const NOTE = [
  "---",
  "title: x",
  "# not a heading: frontmatter",
  "---",
  "intro",
  "# Setup",
  "text",
  "## Install ##",
  "```bash",
  "# a shell comment, not a heading",
  "```",
  "more",
  "### Linux",
  "## Configure",
  "#hashtag is not a heading",
  "# Usage",
].join("\n");

describe("headingPathAt", () => {
  it("is empty before the first heading and inside frontmatter", () => {
    expect(headingPathAt(NOTE, 1)).toEqual([]);
    expect(headingPathAt(NOTE, 4)).toEqual([]);
  });

  it("tracks nesting, closing hashes and code fences", () => {
    expect(headingPathAt(NOTE, 6)).toEqual(["Setup"]);
    expect(headingPathAt(NOTE, 9)).toEqual(["Setup", "Install"]);
    expect(headingPathAt(NOTE, 11)).toEqual(["Setup", "Install"]);
    expect(headingPathAt(NOTE, 12)).toEqual(["Setup", "Install", "Linux"]);
    expect(headingPathAt(NOTE, 14)).toEqual(["Setup", "Configure"]);
    expect(headingAt(NOTE, 15)).toBe("Usage");
    expect(headingAt(NOTE, 999)).toBe("Usage");
  });

  it("copes with an unclosed frontmatter and empty text", () => {
    expect(headingPathAt("---\n# A\nx", 2)).toEqual(["A"]);
    expect(headingPathAt("", 0)).toEqual([]);
  });
});
