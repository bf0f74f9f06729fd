// Runs before every test file: when the file uses a DOM environment (happy-dom), give it the DOM helpers
// that Obsidian adds at start-up.
import { installDomHelpers } from "./obsidian-stub";

if (typeof window !== "undefined" && typeof document !== "undefined") {
  installDomHelpers(window);
}
