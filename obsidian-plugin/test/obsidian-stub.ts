// A small stand-in for the `obsidian` module, which exists only inside the app. vitest aliases
// `obsidian` to this file; nothing of ours is replaced. It provides:
//   - requestUrl, over Node's http (so the client really talks HTTP to a test server)
//   - the DOM helpers Obsidian adds to Node/Element (createDiv, empty, addClass, ...), installed on a
//     window by installDomHelpers() (test/setup.ts does it when a DOM environment is active)
//   - a few small classes and values (Events, Notice, Platform, Keymap, Menu, Modal, SuggestModal, ItemView,
//     debounce, normalizePath) for modules that import them, behaving as the app's do where our code relies on it

import * as http from "http";

export interface RequestUrlParam {
  url: string;
  method?: string;
  contentType?: string;
  body?: string | ArrayBuffer;
  headers?: Record<string, string>;
  throw?: boolean;
}

export interface RequestUrlResponse {
  status: number;
  headers: Record<string, string>;
  arrayBuffer: ArrayBuffer;
  json: unknown;
  text: string;
}

export function requestUrl(request: RequestUrlParam | string): Promise<RequestUrlResponse> {
  const req: RequestUrlParam = typeof request === "string" ? { url: request } : request;
  const url = new URL(req.url);
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (req.contentType) headers["Content-Type"] = req.contentType;
  const body = req.body === undefined ? undefined
    : typeof req.body === "string" ? Buffer.from(req.body) : Buffer.from(new Uint8Array(req.body));
  if (body) headers["Content-Length"] = String(body.length);
  return new Promise((resolve, reject) => {
    const r = http.request({
      host: url.hostname, port: url.port, path: url.pathname + url.search, method: req.method ?? "GET", headers,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const buf = Buffer.concat(chunks);
        const text = buf.toString("utf8");
        const status = res.statusCode ?? 0;
        const out: RequestUrlResponse = {
          status,
          headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
          arrayBuffer: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength),
          get json(): unknown {
            return JSON.parse(text) as unknown;
          },
          text,
        };
        if (status >= 400 && req.throw !== false) reject(new Error(`Request failed, status ${status}`));
        else resolve(out);
      });
      res.on("error", reject);
    });
    r.on("error", reject);
    if (body) r.write(body);
    r.end();
  });
}

export interface EventRef {
  name: string;
  fn: (...data: unknown[]) => unknown;
  owner?: Events;
}

export class Events {
  private handlers = new Map<string, EventRef[]>();
  on(name: string, callback: (...data: unknown[]) => unknown): EventRef {
    const ref = { name, fn: callback, owner: this };
    this.handlers.set(name, [...(this.handlers.get(name) ?? []), ref]);
    return ref;
  }
  off(name: string, callback: (...data: unknown[]) => unknown): void {
    this.handlers.set(name, (this.handlers.get(name) ?? []).filter((r) => r.fn !== callback));
  }
  offref(ref: EventRef): void {
    this.off(ref.name, ref.fn);
  }
  trigger(name: string, ...data: unknown[]): void {
    for (const ref of this.handlers.get(name) ?? []) ref.fn(...data);
  }
}

export class Notice {
  static shown: string[] = [];
  constructor(message: string | DocumentFragment) {
    Notice.shown.push(typeof message === "string" ? message : message.textContent ?? "");
  }
  hide(): void {}
}

export const Platform = {
  isDesktop: true, isMobile: false, isDesktopApp: true, isMobileApp: false, isIosApp: false, isAndroidApp: false,
  isPhone: false, isTablet: false, isMacOS: process.platform === "darwin", isWin: process.platform === "win32",
  isLinux: process.platform === "linux", isSafari: false,
};

export const Keymap = {
  isModEvent(evt?: MouseEvent | KeyboardEvent | null): boolean | "tab" {
    if (!evt) return false;
    return (Platform.isMacOS ? evt.metaKey : evt.ctrlKey) ? "tab" : false;
  },
};

export function setIcon(parent: HTMLElement, iconId: string): void {
  parent.setAttribute("data-icon", iconId);
}

// ---- DOM helpers -------------------------------------------------------------------------------

interface DomElementInfo {
  cls?: string | string[];
  text?: string | DocumentFragment;
  attr?: Record<string, string | number | boolean | null>;
  title?: string;
  parent?: Node;
  value?: string;
  type?: string;
  prepend?: boolean;
  placeholder?: string;
  href?: string;
}

interface HelperWindow {
  Node: { prototype: object };
  Element: { prototype: object };
  HTMLElement: { prototype: object };
  DocumentFragment: { prototype: object };
  document: Document;
}

function applyInfo(el: HTMLElement, o: DomElementInfo | string | undefined): void {
  if (o === undefined) return;
  const info: DomElementInfo = typeof o === "string" ? { text: o } : o;
  if (info.cls !== undefined) {
    const classes = (Array.isArray(info.cls) ? info.cls : info.cls.split(" ")).filter(Boolean);
    el.classList.add(...classes);
  }
  if (info.text !== undefined) {
    if (typeof info.text === "string") el.textContent = info.text;
    else el.appendChild(info.text);
  }
  for (const [k, v] of Object.entries(info.attr ?? {})) {
    if (v === null || v === false) el.removeAttribute(k);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  if (info.title !== undefined) el.title = info.title;
  if (info.value !== undefined) (el as HTMLInputElement).value = info.value;
  if (info.type !== undefined) el.setAttribute("type", info.type);
  if (info.placeholder !== undefined) el.setAttribute("placeholder", info.placeholder);
  if (info.href !== undefined) el.setAttribute("href", info.href);
}

/** Add Obsidian's DOM helpers to a window's prototypes (idempotent). */
export function installDomHelpers(win: HelperWindow): void {
  const nodeProto = win.Node.prototype as Record<string, unknown>;
  if (typeof nodeProto.createEl === "function") return;
  const doc = win.document;

  function createEl(this: Node, tag: string, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void): HTMLElement {
    const el = (this.ownerDocument ?? doc).createElement(tag);
    applyInfo(el, o);
    const info = typeof o === "object" ? o : undefined;
    if (info?.prepend) this.insertBefore(el, this.firstChild);
    else this.appendChild(el);
    cb?.(el);
    return el;
  }
  Object.assign(nodeProto, {
    createEl,
    createDiv(this: Node, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "div", o, cb);
    },
    createSpan(this: Node, o?: DomElementInfo | string, cb?: (el: HTMLElement) => void) {
      return createEl.call(this, "span", o, cb);
    },
    empty(this: Node) {
      while (this.firstChild) this.removeChild(this.firstChild);
    },
    detach(this: Node) {
      this.parentNode?.removeChild(this);
    },
    appendText(this: Node, val: string) {
      this.appendChild((this.ownerDocument ?? doc).createTextNode(val));
    },
  });
  Object.assign(win.Element.prototype as Record<string, unknown>, {
    getText(this: Element) {
      return this.textContent ?? "";
    },
    setText(this: Element, val: string | DocumentFragment) {
      if (typeof val === "string") this.textContent = val;
      else {
        this.textContent = "";
        this.appendChild(val);
      }
    },
    addClass(this: Element, ...classes: string[]) {
      this.classList.add(...classes);
    },
    addClasses(this: Element, classes: string[]) {
      this.classList.add(...classes);
    },
    removeClass(this: Element, ...classes: string[]) {
      this.classList.remove(...classes);
    },
    removeClasses(this: Element, classes: string[]) {
      this.classList.remove(...classes);
    },
    toggleClass(this: Element, classes: string | string[], value: boolean) {
      for (const c of Array.isArray(classes) ? classes : [classes]) this.classList.toggle(c, value);
    },
    hasClass(this: Element, cls: string) {
      return this.classList.contains(cls);
    },
    setAttr(this: Element, name: string, value: string | number | boolean | null) {
      if (value === null) this.removeAttribute(name);
      else this.setAttribute(name, String(value));
    },
    getAttr(this: Element, name: string) {
      return this.getAttribute(name);
    },
  });
  Object.assign(win.HTMLElement.prototype as Record<string, unknown>, {
    show(this: HTMLElement) {
      this.hidden = false;
    },
    hide(this: HTMLElement) {
      this.hidden = true;
    },
    toggle(this: HTMLElement, show: boolean) {
      this.hidden = !show;
    },
    isShown(this: HTMLElement) {
      return !this.hidden;
    },
  });
  // Obsidian's global createFragment (Notices with buttons are built with it).
  (win as unknown as { createFragment: unknown }).createFragment = (cb?: (f: DocumentFragment) => void) => {
    const f = doc.createDocumentFragment();
    cb?.(f);
    return f;
  };
}

// ---- minimal classes, so that modules defining views and modals can be imported -----------------

export class Component {
  load(): void {}
  onload(): void {}
  unload(): void {}
  onunload(): void {}
}

/** Obsidian's keyboard scope: what a modal registers (modifiers + key -> handler). */
export class Scope {
  readonly keys: { modifiers: string[]; key: string | null; func: (evt: KeyboardEvent) => unknown }[] = [];
  register(modifiers: string[] | null, key: string | null, func: (evt: KeyboardEvent) => unknown): unknown {
    const handler = { modifiers: modifiers ?? [], key, func };
    this.keys.push(handler);
    return handler;
  }
  /** Test helper: run the handler Obsidian would run for `evt`; false when none matched. */
  handle(evt: KeyboardEvent): boolean {
    const mods = (["Mod", "Shift", "Alt"] as const).filter((m) =>
      m === "Mod" ? (Platform.isMacOS ? evt.metaKey : evt.ctrlKey) : m === "Shift" ? evt.shiftKey : evt.altKey);
    const handler = this.keys.find((k) => k.key === evt.key && k.modifiers.length === mods.length &&
      k.modifiers.every((m) => (mods as readonly string[]).includes(m)));
    if (!handler) return false;
    if (handler.func(evt) === false) evt.preventDefault();
    return true;
  }
}

export class Modal extends Component {
  app: unknown;
  scope = new Scope();
  /** The backdrop Obsidian puts a modal in (.modal-container); attached to the document while open. */
  containerEl: HTMLElement;
  modalEl: HTMLElement;
  titleEl: HTMLElement;
  contentEl: HTMLElement;
  constructor(app: unknown) {
    super();
    this.app = app;
    if (typeof document === "undefined") throw new Error("Modal needs a DOM test environment (happy-dom)");
    const doc = document;
    this.containerEl = doc.createElement("div");
    this.containerEl.className = "modal-container";
    this.modalEl = this.containerEl.appendChild(doc.createElement("div"));
    this.modalEl.className = "modal";
    this.titleEl = this.modalEl.appendChild(doc.createElement("div"));
    this.titleEl.className = "modal-title";
    this.contentEl = this.modalEl.appendChild(doc.createElement("div"));
    this.contentEl.className = "modal-content";
  }
  open(): void {
    document.body.appendChild(this.containerEl);
    this.onOpen();
  }
  close(): void {
    this.containerEl.remove();
    this.onClose();
  }
  onOpen(): void {}
  onClose(): void {}
}

export interface Instruction {
  command: string;
  purpose: string;
}

/**
 * Obsidian's SuggestModal as far as our search window uses it: the prompt's DOM (input, results,
 * instructions), getSuggestions on every input event, the first suggestion selected, arrows move, Enter
 * and click choose (with the event), onNoSuggestion shows emptyStateText. `settled` resolves when the
 * latest input's suggestions are drawn, so tests wait for exactly that.
 */
export abstract class SuggestModal<T> extends Modal {
  limit = 100;
  emptyStateText = "No results found.";
  inputEl: HTMLInputElement;
  resultContainerEl: HTMLElement;
  settled: Promise<void> = Promise.resolve();
  private suggestions: { item: T; el: HTMLElement }[] = [];
  private selected = 0;
  private instructionsEl: HTMLElement;

  constructor(app: unknown) {
    super(app);
    this.modalEl.className = "prompt";
    this.modalEl.empty();
    const doc = document;
    const inputBox = this.modalEl.appendChild(doc.createElement("div"));
    inputBox.className = "prompt-input-container";
    this.inputEl = inputBox.appendChild(doc.createElement("input"));
    this.inputEl.className = "prompt-input";
    this.inputEl.type = "text";
    this.resultContainerEl = this.modalEl.appendChild(doc.createElement("div"));
    this.resultContainerEl.className = "prompt-results";
    this.instructionsEl = this.modalEl.appendChild(doc.createElement("div"));
    this.instructionsEl.className = "prompt-instructions";
    this.inputEl.addEventListener("input", () => {
      this.settled = this.updateSuggestions();
    });
    this.inputEl.addEventListener("keydown", (evt) => {
      if (evt.key === "ArrowDown" || evt.key === "ArrowUp") {
        evt.preventDefault();
        this.select(this.selected + (evt.key === "ArrowDown" ? 1 : -1));
      } else if (this.scope.handle(evt)) {
        return;
      } else if (evt.key === "Enter") {
        evt.preventDefault();
        this.selectActiveSuggestion(evt);
      }
    });
  }

  abstract getSuggestions(query: string): T[] | Promise<T[]>;
  abstract renderSuggestion(value: T, el: HTMLElement): void;
  abstract onChooseSuggestion(item: T, evt: MouseEvent | KeyboardEvent): void;

  setPlaceholder(placeholder: string): void {
    this.inputEl.setAttribute("placeholder", placeholder);
  }

  setInstructions(instructions: Instruction[]): void {
    this.instructionsEl.empty();
    for (const { command, purpose } of instructions) {
      const el = this.instructionsEl.appendChild(document.createElement("div"));
      el.className = "prompt-instruction";
      const cmd = el.appendChild(document.createElement("span"));
      cmd.className = "prompt-instruction-command";
      cmd.textContent = command;
      el.appendChild(document.createElement("span")).textContent = purpose;
    }
  }

  override onOpen(): void {
    this.inputEl.focus();
    this.settled = this.updateSuggestions();
  }

  onNoSuggestion(): void {
    this.resultContainerEl.empty();
    const empty = this.resultContainerEl.appendChild(document.createElement("div"));
    empty.className = "suggestion-empty";
    empty.textContent = this.emptyStateText;
  }

  selectActiveSuggestion(evt: MouseEvent | KeyboardEvent): void {
    const chosen = this.suggestions[this.selected];
    if (!chosen) return;
    this.close();
    this.onChooseSuggestion(chosen.item, evt);
  }

  private async updateSuggestions(): Promise<void> {
    const query = this.inputEl.value;
    const items = await this.getSuggestions(query);
    if (query !== this.inputEl.value) return; // a newer input draws its own
    this.resultContainerEl.empty();
    this.suggestions = [];
    if (!items.length) {
      this.onNoSuggestion();
      return;
    }
    for (const item of items.slice(0, this.limit)) {
      const el = this.resultContainerEl.appendChild(document.createElement("div"));
      el.className = "suggestion-item";
      this.renderSuggestion(item, el);
      const index = this.suggestions.length;
      el.addEventListener("mousemove", () => this.select(index));
      el.addEventListener("click", (evt) => {
        this.select(index);
        this.selectActiveSuggestion(evt);
      });
      this.suggestions.push({ item, el });
    }
    this.select(0);
  }

  private select(index: number): void {
    this.selected = Math.max(0, Math.min(this.suggestions.length - 1, index));
    this.suggestions.forEach((s, i) => s.el.classList.toggle("is-selected", i === this.selected));
  }
}

/** One entry of a Menu, with what Obsidian's MenuItem offers that we use. */
export class MenuItem {
  title = "";
  icon: string | null = null;
  section = "";
  checked = false;
  disabled = false;
  callback: ((evt: MouseEvent | KeyboardEvent) => unknown) | null = null;
  setTitle(title: string | DocumentFragment): this {
    this.title = typeof title === "string" ? title : title.textContent ?? "";
    return this;
  }
  setIcon(icon: string | null): this {
    this.icon = icon;
    return this;
  }
  setSection(section: string): this {
    this.section = section;
    return this;
  }
  setChecked(checked: boolean | null): this {
    this.checked = checked === true;
    return this;
  }
  setDisabled(disabled: boolean): this {
    this.disabled = disabled;
    return this;
  }
  onClick(callback: (evt: MouseEvent | KeyboardEvent) => unknown): this {
    this.callback = callback;
    return this;
  }
}

/**
 * Obsidian's Menu: items in the order added, shown at the mouse as a .menu of .menu-item rows (title and
 * icon) where a DOM exists; clicking a row runs its callback and closes the menu. `Menu.shown` is the
 * last menu shown, for tests.
 */
export class Menu {
  static shown: Menu | null = null;
  readonly items: MenuItem[] = [];
  dom: HTMLElement | null = null;
  addItem(cb: (item: MenuItem) => unknown): this {
    const item = new MenuItem();
    cb(item);
    this.items.push(item);
    return this;
  }
  addSeparator(): this {
    return this;
  }
  showAtMouseEvent(evt: MouseEvent): this {
    return this.showAtPosition({ x: evt.clientX, y: evt.clientY });
  }
  showAtPosition(pos: { x: number; y: number }): this {
    Menu.shown = this;
    if (typeof document === "undefined") return this;
    this.hide();
    const dom = document.body.appendChild(document.createElement("div"));
    dom.className = "menu";
    dom.style.left = `${pos.x}px`;
    dom.style.top = `${pos.y}px`;
    let section: string | null = null;
    for (const item of this.items) {
      if (section !== null && item.section !== section) dom.appendChild(document.createElement("div")).className = "menu-separator";
      section = item.section;
      const row = dom.appendChild(document.createElement("div"));
      row.className = "menu-item";
      if (item.icon) {
        const icon = row.appendChild(document.createElement("div"));
        icon.className = "menu-item-icon";
        icon.setAttribute("data-icon", item.icon);
      }
      const title = row.appendChild(document.createElement("div"));
      title.className = "menu-item-title";
      title.textContent = item.title;
      row.addEventListener("click", (evt) => {
        this.hide();
        item.callback?.(evt);
      });
    }
    this.dom = dom;
    return this;
  }
  hide(): this {
    this.dom?.remove();
    this.dom = null;
    return this;
  }
  /** Test helper: run the item titled `title`, as a click on it would. */
  click(title: string): void {
    const item = this.items.find((i) => i.title === title);
    if (!item) throw new Error(`No menu item "${title}" in: ${this.items.map((i) => i.title).join(", ")}`);
    this.hide();
    item.callback?.(new MouseEvent("click"));
  }
}

export interface Debouncer<T extends unknown[], V> {
  (...args: T): this;
  cancel(): this;
  run(): V | void;
}

/** Obsidian's debounce: `resetTimer` restarts the wait on every call; run() calls a pending call now. */
export function debounce<T extends unknown[], V>(cb: (...args: T) => V, timeout = 0, resetTimer = false): Debouncer<T, V> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pending: T | null = null;
  const fire = (): V | void => {
    timer = null;
    const args = pending;
    pending = null;
    return args ? cb(...args) : undefined;
  };
  const debounced = ((...args: T) => {
    pending = args;
    if (timer && resetTimer) {
      clearTimeout(timer);
      timer = null;
    }
    if (!timer) timer = setTimeout(fire, timeout);
    return debounced;
  }) as Debouncer<T, V>;
  debounced.cancel = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    pending = null;
    return debounced;
  };
  debounced.run = () => {
    if (timer) clearTimeout(timer);
    return fire();
  };
  return debounced;
}

/** Obsidian's normalizePath: one "/" between parts, none at either end, "\\" as "/", NFC; "" is "/". */
export function normalizePath(path: string): string {
  const out = path.replace(/[\\/]+/g, "/").replace(/\u00a0|\u202f/g, " ").replace(/^\/+|\/+$/g, "").normalize("NFC");
  return out === "" ? "/" : out;
}

/** Obsidian's button component: a real <button> a test can click. */
export class ButtonComponent {
  readonly buttonEl: HTMLButtonElement;
  constructor(containerEl: HTMLElement) {
    this.buttonEl = containerEl.createEl("button");
  }
  setButtonText(text: string): this {
    this.buttonEl.textContent = text;
    return this;
  }
  setCta(): this {
    this.buttonEl.classList.add("mod-cta");
    return this;
  }
  setDisabled(disabled: boolean): this {
    this.buttonEl.disabled = disabled;
    return this;
  }
  onClick(callback: (evt: MouseEvent) => unknown): this {
    this.buttonEl.addEventListener("click", (evt) => void callback(evt));
    return this;
  }
}

/** A settings row as Obsidian builds one (.setting-item: name and description, then the controls), with
 * real buttons; outside a DOM test environment (no document) it builds nothing. */
export class Setting {
  readonly nameEl: HTMLElement | null = null;
  readonly descEl: HTMLElement | null = null;
  readonly controlEl: HTMLElement | null = null;
  constructor(readonly containerEl: HTMLElement) {
    if (typeof document === "undefined") return;
    const row = containerEl.createDiv({ cls: "setting-item" });
    const info = row.createDiv({ cls: "setting-item-info" });
    this.nameEl = info.createDiv({ cls: "setting-item-name" });
    this.descEl = info.createDiv({ cls: "setting-item-description" });
    this.controlEl = row.createDiv({ cls: "setting-item-control" });
  }
  setName(name = ""): this {
    if (this.nameEl) this.nameEl.textContent = name;
    return this;
  }
  setDesc(desc = ""): this {
    if (this.descEl) this.descEl.textContent = desc;
    return this;
  }
  setHeading(): this {
    return this;
  }
  addButton(build?: (button: ButtonComponent) => unknown): this {
    if (build && this.controlEl) build(new ButtonComponent(this.controlEl));
    return this;
  }
}

/** Enough of ItemView for views to be opened and driven in happy-dom tests (leaf: { app }). */
export class ItemView extends Component {
  app: unknown;
  leaf: unknown;
  /** .workspace-leaf-content: the view's header (title) and its content, as in Obsidian. */
  containerEl: HTMLElement;
  contentEl: HTMLElement;
  private cleanups: (() => void)[] = [];
  constructor(leaf: { app?: unknown }) {
    super();
    this.leaf = leaf;
    this.app = leaf.app;
    if (typeof document === "undefined") throw new Error("ItemView needs a DOM test environment (happy-dom)");
    this.containerEl = document.createElement("div");
    this.containerEl.className = "workspace-leaf-content";
    this.containerEl.appendChild(document.createElement("div")).className = "view-header";
    this.contentEl = this.containerEl.appendChild(document.createElement("div"));
    this.contentEl.className = "view-content";
  }
  getViewType(): string {
    return "";
  }
  getDisplayText(): string {
    return "";
  }
  getState(): Record<string, unknown> {
    return {};
  }
  async setState(_state: unknown, _result: unknown): Promise<void> {}
  registerEvent(ref: EventRef & { owner?: Events }): void {
    this.cleanups.push(() => ref.owner?.offref(ref));
  }
  registerDomEvent(el: HTMLElement, type: string, fn: (evt: Event) => void): void {
    el.addEventListener(type, fn);
    this.cleanups.push(() => el.removeEventListener(type, fn));
  }
  async onOpen(): Promise<void> {}
  async onClose(): Promise<void> {}
  /** Test helper: what Obsidian does when the leaf closes. */
  async close(): Promise<void> {
    for (const fn of this.cleanups.splice(0)) fn();
    await this.onClose();
  }
}

export class TFile {
  path = "";
  get basename(): string {
    return (this.path.split("/").pop() ?? this.path).replace(/\.md$/i, "");
  }
}

export class MarkdownView {}
