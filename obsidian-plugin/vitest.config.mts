import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Only the `obsidian` module is replaced (it exists only inside the app); everything of ours runs for real.
export default defineConfig({
  resolve: {
    alias: {
      obsidian: fileURLToPath(new URL("./test/obsidian-stub.ts", import.meta.url)),
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    setupFiles: ["test/setup.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
  },
});
