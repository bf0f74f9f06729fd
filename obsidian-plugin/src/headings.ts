// The heading path at a line of a Markdown buffer (the unsaved editor text), e.g. ["Setup", "Install"].
// Pure: skips frontmatter and fenced code, understands ATX headings (# ... ######).

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const ATX = /^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;

/** Heading path (outermost first) in effect at 0-based `line` of `text`. */
export function headingPathAt(text: string, line: number): string[] {
  const lines = text.split(/\r?\n/);
  const stack: { level: number; title: string }[] = [];
  let i = 0;
  if (lines[0]?.trim() === "---") {
    const end = lines.findIndex((l, idx) => idx > 0 && (l.trim() === "---" || l.trim() === "..."));
    if (end > 0) i = end + 1;
  }
  let fence: string | null = null;
  for (; i <= Math.min(line, lines.length - 1); i++) {
    const l = lines[i] ?? "";
    const f = FENCE.exec(l);
    if (fence) {
      if (f?.[1] && f[1][0] === fence[0] && f[1].length >= fence.length && l.trim() === f[1]) fence = null;
      continue;
    }
    if (f?.[1]) {
      fence = f[1];
      continue;
    }
    const h = ATX.exec(l);
    if (!h?.[1]) continue;
    const level = h[1].length;
    const title = (h[2] ?? "").trim();
    while (stack.length && (stack[stack.length - 1]?.level ?? 0) >= level) stack.pop();
    if (title) stack.push({ level, title });
  }
  return stack.map((s) => s.title);
}

/** The heading path joined the way the protocol joins it (" > "), or "" at the top of a note. */
export function headingAt(text: string, line: number): string {
  return headingPathAt(text, line).join(" > ");
}
