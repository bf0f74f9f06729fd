// The search modes and their names, one vocabulary everywhere (settings, the search window, the search pane).
// Kept free of Obsidian imports: render.ts and the settings both use it.

import type { SearchMode } from "../protocol.gen";

export const MODES: SearchMode[] = ["hybrid", "lexical", "semantic"];

export const MODE_LABELS: Record<SearchMode, string> = { hybrid: "Hybrid", lexical: "Keywords", semantic: "Meaning" };
