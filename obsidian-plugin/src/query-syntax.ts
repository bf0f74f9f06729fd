// The search box's filter syntax, parsed into the `search` method's `query` and `filters`.
//
//   words             plain words, searched lexically and by meaning
//   "exact phrase"    kept in the query, quoted: the lexical retriever matches it as a phrase
//   path:Projects     only notes under this folder (also folder:, quotes allowed: path:"My notes/2024")
//   tag:#idea         only notes with this tag (the # is optional; nested tags match)
//   [status:done]     frontmatter field filter
//   -word  -"a phrase"  leave out notes containing it
//   -path:Inbox/x.md  leave out this note
//
// Pure: no Obsidian, no DOM, so it is unit-tested directly.

import type { SearchFilters } from "./protocol.gen";

export interface ParsedQuery {
  /** What goes in `query`: the words and "quoted phrases", in order, single-spaced. */
  query: string;
  filters: SearchFilters;
  /** Phrases without quotes, for display. */
  phrases: string[];
  /** Things the parser ignored or overrode, in words. */
  warnings: string[];
}

interface Token {
  negated: boolean;
  /** Lower-case filter key (`path`, `tag`, ...) or null for a plain term. */
  key: string | null;
  value: string;
  quoted: boolean;
  /** A `[field:value]` group. */
  bracket: boolean;
}

const PATH_KEYS = new Set(["path", "folder"]);
const TAG_KEYS = new Set(["tag"]);

/** Split the input into tokens, honouring quotes; an unterminated quote runs to the end. */
export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = input.length;
  const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);
  while (i < n) {
    while (i < n && isSpace(input[i])) i++;
    if (i >= n) break;
    let negated = false;
    if (input[i] === "-" && i + 1 < n && !isSpace(input[i + 1]) && input[i + 1] !== "-") {
      negated = true;
      i++;
    }
    if (input[i] === "[") {
      const close = input.indexOf("]", i + 1);
      const inner = close === -1 ? input.slice(i + 1) : input.slice(i + 1, close);
      i = close === -1 ? n : close + 1;
      const colon = inner.indexOf(":");
      if (colon > 0) {
        tokens.push({
          negated,
          key: inner.slice(0, colon).trim(),
          value: unquote(inner.slice(colon + 1).trim()),
          quoted: false,
          bracket: true,
        });
      } else if (inner.trim()) {
        tokens.push({ negated, key: null, value: inner.trim(), quoted: false, bracket: false });
      }
      continue;
    }
    if (input[i] === '"') {
      const close = input.indexOf('"', i + 1);
      const value = close === -1 ? input.slice(i + 1) : input.slice(i + 1, close);
      i = close === -1 ? n : close + 1;
      if (value.trim()) tokens.push({ negated, key: null, value: value.trim(), quoted: true, bracket: false });
      continue;
    }
    // A bare word, possibly key:value where the value may be quoted.
    let j = i;
    while (j < n && !isSpace(input[j]) && input[j] !== '"') j++;
    let word = input.slice(i, j);
    const colon = word.indexOf(":");
    if (colon > 0 && /^[A-Za-z]+$/.test(word.slice(0, colon))) {
      const key = word.slice(0, colon).toLowerCase();
      if (PATH_KEYS.has(key) || TAG_KEYS.has(key)) {
        let value = word.slice(colon + 1);
        if (value === "" && input[j] === '"') {
          const close = input.indexOf('"', j + 1);
          value = close === -1 ? input.slice(j + 1) : input.slice(j + 1, close);
          j = close === -1 ? n : close + 1;
        }
        i = j;
        tokens.push({ negated, key, value: value.trim(), quoted: false, bracket: false });
        continue;
      }
    }
    // A quote glued to a word ends the word: `foo"bar baz"` is `foo` then the phrase.
    word = word.trim();
    i = j;
    if (word) tokens.push({ negated, key: null, value: word, quoted: false, bracket: false });
  }
  return tokens;
}

function unquote(value: string): string {
  const m = /^"(.*)"$/.exec(value);
  return m ? (m[1] ?? "") : value;
}

function normalizeFolder(value: string): string {
  return value.replace(/\\/g, "/").replace(/^\/+/, "").replace(/\/+$/, "");
}

function quotePhrase(value: string): string {
  return `"${value.replace(/"/g, "")}"`;
}

/** Parse the search box into the `search` method's query and filters. */
export function parseQuery(input: string): ParsedQuery {
  const parts: string[] = [];
  const phrases: string[] = [];
  const warnings: string[] = [];
  const filters: SearchFilters = {};
  const exclude: string[] = [];
  const fields: Record<string, string> = {};

  for (const token of tokenize(input)) {
    if (token.bracket && token.key !== null) {
      if (token.negated) {
        warnings.push(`-[${token.key}:…] is not supported; ignored`);
      } else if (!token.value) {
        warnings.push(`[${token.key}:] needs a value; ignored`);
      } else {
        if (token.key in fields) warnings.push(`[${token.key}:] given twice; the last one wins`);
        fields[token.key] = token.value;
      }
      continue;
    }
    if (token.key !== null && PATH_KEYS.has(token.key)) {
      const folder = normalizeFolder(token.value);
      if (!folder) {
        warnings.push(`${token.key}: needs a folder; ignored`);
      } else if (token.negated) {
        if (filters.exclude_path !== undefined) warnings.push("-path: given twice; the last one wins");
        filters.exclude_path = folder;
      } else {
        if (filters.folder !== undefined) warnings.push("path: given twice; the last one wins");
        filters.folder = folder;
      }
      continue;
    }
    if (token.key !== null && TAG_KEYS.has(token.key)) {
      const tag = token.value.replace(/^#+/, "");
      if (!tag) {
        warnings.push("tag: needs a tag; ignored");
      } else if (token.negated) {
        warnings.push("-tag: is not supported; ignored");
      } else {
        if (filters.tag !== undefined) warnings.push("tag: given twice; the last one wins");
        filters.tag = tag;
      }
      continue;
    }
    if (token.negated) {
      exclude.push(token.value);
      continue;
    }
    if (token.quoted) {
      phrases.push(token.value);
      parts.push(quotePhrase(token.value));
    } else {
      parts.push(token.value);
    }
  }
  if (exclude.length) filters.exclude_terms = exclude;
  if (Object.keys(fields).length) filters.fields = fields;
  return { query: parts.join(" "), filters, phrases, warnings };
}

/** True when the parsed query has something to send (the sidecar needs a non-empty query). */
export function isSearchable(parsed: ParsedQuery): boolean {
  return parsed.query.trim().length > 0;
}
