// Lint with eslint-plugin-obsidianmd's recommended config (ESLint core, typescript-eslint type-checked
// rules and the Obsidian plugin guidelines).
import { defineConfig, globalIgnores } from "eslint/config";
import obsidianmd from "eslint-plugin-obsidianmd";
import { DEFAULT_ACRONYMS } from "eslint-plugin-obsidianmd/dist/lib/rules/ui/acronyms.js";
import { DEFAULT_BRANDS } from "eslint-plugin-obsidianmd/dist/lib/rules/ui/brands.js";

export default defineConfig([
  globalIgnores(["node_modules/", "main.js", "release/", "coverage/"]),
  ...obsidianmd.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ["eslint.config.mjs", "esbuild.config.mjs", "test/fixtures/*.mjs"],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Same as recommended, plus our name and the MCP acronym.
      "obsidianmd/ui/sentence-case": ["warn", {
        enforceCamelCaseLower: true,
        brands: [...DEFAULT_BRANDS, "Vault Sidecar"],
        acronyms: [...DEFAULT_ACRONYMS, "MCP"],
      }],
    },
  },
  {
    // Tests and fixtures run in Node (vitest), not in Obsidian's windows: Node's timers are right there,
    // and the obsidian stub is what implements createEl.
    files: ["test/**"],
    rules: {
      "obsidianmd/prefer-window-timers": "off",
      "obsidianmd/prefer-create-el": "off",
    },
  },
]);
