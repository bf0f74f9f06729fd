// Lint with eslint-plugin-obsidianmd's recommended config (ESLint core, typescript-eslint type-checked
// rules and the Obsidian plugin guidelines).
import { defineConfig, globalIgnores } from "eslint/config";
import obsidianmd from "eslint-plugin-obsidianmd";

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
  },
]);
